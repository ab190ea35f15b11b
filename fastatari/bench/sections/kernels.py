"""The ``kernels`` section: the preprocessing after emulation, fastatari's fused kernels on
every SIMD path this CPU runs against the OpenCV/numpy code they replace, on real frames.

Two comparisons, ``kernel_calls`` steps per round: the palette path (``AtariEnv``'s: 2×
``getScreen``, one ``step_palette``) against gymnasium's (2× ``getScreenGrayscale``, max,
``cv2.resize`` INTER_AREA, roll the stack), and ``step_rgb`` against the same on RGB frames.
Speedups are per round against the same round's baseline, median. The pipelines are shared
with ``benchmarks/test_bench_kernels.py``.
"""
from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from fastatari import kernels
from fastatari.bench.harness import (
    BenchConfig,
    Contender,
    Contenders,
    Section,
    markdown_table,
    median_ratio,
    open_ale,
)

SCREEN_SIZE = (84, 84)  # (width, height), OpenCV's order
STACK_SIZE = 4


@dataclass
class KernelResult:
    comparison: str
    implementation: str
    simd: str | None
    us_per_step: float
    speedup: float  # baseline µs / this µs, per round, median
    rounds_us: list[float]  # one per round, to judge the noise


@dataclass
class KernelsReport:
    results: list[KernelResult] = field(default_factory=list)


@dataclass
class Scene:
    """A live game mid-play, and real frames from it."""

    game: str
    ale: Any
    lut: np.ndarray  # palette → gray, for the indices on screen (the kernel's cost is the same)
    gray: np.ndarray  # (h, w), as getScreenGrayscale gives it
    rgb_prev: np.ndarray  # (h, w, 3), two consecutive frames
    rgb_last: np.ndarray


def screens(ale, rgb: bool = False) -> tuple[np.ndarray, np.ndarray]:
    shape = (*ale.getScreenDims(), 3) if rgb else tuple(ale.getScreenDims())
    return np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)


def capture_scene(game: str, seed: int) -> Scene:
    ale = open_ale(game, seed)
    actions = ale.getMinimalActionSet()
    rng = np.random.default_rng(seed)
    rgb_prev, rgb_last = screens(ale, rgb=True)
    for frame, index in enumerate(rng.integers(len(actions), size=401)):  # past the title
        if frame == 400:
            ale.getScreenRGB(rgb_prev)
        ale.act(actions[index])
        if ale.game_over():
            ale.reset_game()
    ale.getScreenRGB(rgb_last)
    indices, gray = screens(ale)
    ale.getScreen(indices)
    ale.getScreenGrayscale(gray)
    lut = np.zeros(256, np.uint8)
    lut[indices.ravel()] = gray.ravel()
    return Scene(game, ale, lut, gray, rgb_prev, rgb_last)


@contextlib.contextmanager
def using_simd(path: str) -> Iterator[None]:
    previous = kernels.set_simd_path(path)
    try:
        yield
    finally:
        kernels.set_simd_path(previous)


def empty_stack() -> np.ndarray:
    return np.zeros((STACK_SIZE, SCREEN_SIZE[1], SCREEN_SIZE[0]), np.uint8)


def palette_step_fastatari(ale, lut: np.ndarray) -> Callable[[], None]:
    """fastatari's work after emulation: 2× getScreen, then one fused kernel call."""
    prev, last = screens(ale)
    stack = empty_stack()

    def step() -> None:
        ale.getScreen(prev)
        ale.getScreen(last)
        kernels.step_palette(prev, last, lut, stack)

    return step


def gymnasium_push() -> Callable[[np.ndarray], None]:
    """``push(gray)``: INTER_AREA resize to 84×84, then the stack rolled and the frame
    assigned (a new array each step), as AtariPreprocessing + FrameStackObservation do."""
    import cv2

    stack = empty_stack()

    def push(gray: np.ndarray) -> None:
        nonlocal stack
        small = cv2.resize(gray, SCREEN_SIZE, interpolation=cv2.INTER_AREA)
        stack = np.roll(stack, -1, axis=0)
        stack[-1] = small

    return push


def palette_step_gymnasium(ale) -> Callable[[], None]:
    """gymnasium's work after emulation, without its Python layers: 2× getScreenGrayscale,
    max, then :func:`gymnasium_push`."""
    buffers, push = screens(ale), gymnasium_push()

    def step() -> None:
        ale.getScreenGrayscale(buffers[1])
        ale.getScreenGrayscale(buffers[0])
        push(np.maximum(buffers[0], buffers[1], out=buffers[0]))

    return step


def rgb_step_fastatari(prev: np.ndarray, last: np.ndarray) -> Callable[[], None]:
    """Two RGB frames → gray, max, resize, stack, in one fused kernel call."""
    stack = empty_stack()
    return lambda: kernels.step_rgb(prev, last, stack)


def rgb_step_opencv(prev: np.ndarray, last: np.ndarray) -> Callable[[], None]:
    """The same with OpenCV and numpy: 2× cvtColor, max, then :func:`gymnasium_push`."""
    import cv2

    push = gymnasium_push()
    return lambda: push(np.maximum(cv2.cvtColor(prev, cv2.COLOR_RGB2GRAY),
                                   cv2.cvtColor(last, cv2.COLOR_RGB2GRAY)))


def kernel_contenders(config: BenchConfig) -> Contenders:
    """Each comparison's baseline, then its fastatari pipeline once per SIMD path."""
    scene = capture_scene(config.game, config.seed)
    pairs = [
        ("per step: 2 screens → gray, max, resize, stack",
         "2× getScreenGrayscale + np.maximum + cv2.resize + np.roll",
         palette_step_gymnasium(scene.ale),
         "2× getScreen + step_palette", lambda: palette_step_fastatari(scene.ale, scene.lut)),
        ("step_rgb: 2 RGB frames → gray, max, resize, stack",
         "2× cv2.cvtColor + np.maximum + cv2.resize + np.roll",
         rgb_step_opencv(scene.rgb_prev, scene.rgb_last),
         "step_rgb", lambda: rgb_step_fastatari(scene.rgb_prev, scene.rgb_last)),
    ]
    calls = config.kernel_calls

    def contender(comparison: str, implementation: str, step: Callable[[], None],
                  simd: str | None) -> Contender:
        def run(round_index: int) -> None:
            with using_simd(simd) if simd else contextlib.nullcontext():
                for _ in range(calls):
                    step()

        return Contender(f"{comparison} | {implementation} [{simd or 'baseline'}]",
                         calls, run, comparison=comparison, implementation=implementation,
                         simd=simd)

    contenders = []
    for comparison, baseline_name, baseline, fused_name, make_fused in pairs:
        contenders.append(contender(comparison, baseline_name, baseline, None))
        contenders += [contender(comparison, fused_name, make_fused(), path)  # own stack each
                       for path in kernels.simd_available()]
    return Contenders(contenders, lambda seconds: kernel_results(contenders, seconds))


def kernel_results(contenders: list[Contender],
                   seconds: dict[str, list[float]]) -> KernelsReport:
    baselines = {c.comparison: seconds[c.name] for c in contenders if c.simd is None}
    return KernelsReport([
        KernelResult(c.comparison, c.implementation, c.simd,
                     statistics.median(seconds[c.name]) * 1e6,
                     median_ratio(baselines[c.comparison], seconds[c.name]),
                     [sample * 1e6 for sample in seconds[c.name]]) for c in contenders])


def markdown_kernels(report: KernelsReport, config: dict) -> str:
    rows = [[r.comparison, r.implementation, r.simd or "OpenCV/numpy", f"{r.us_per_step:.1f}",
             f"{r.speedup:.1f}×"] for r in report.results]
    return (f"Preprocessing after emulation, {config['kernel_calls']:,} steps per round; "
            "speedup = OpenCV/numpy µs ÷ fastatari µs, per round, median.\n\n"
            + markdown_table(["comparison", "implementation", "path", "µs/step", "speedup"], rows))


SECTION = Section(
    "kernels", "the preprocessing after emulation: fastatari's kernels on every SIMD path "
    "against OpenCV/numpy", markdown_kernels, contenders=kernel_contenders)
