"""The ``kernels`` section: the per-step preprocessing after emulation, fastatari's fused
kernels on every SIMD path this CPU runs against the OpenCV/numpy code they replace, on real
frames of a game in progress.

Two comparisons, each ``kernel_calls`` steps per round: the palette path (what
``fastatari.AtariEnv`` does after emulation: 2× ``getScreen``, one ``step_palette`` call)
against gymnasium's (2× ``getScreenGrayscale``, max, ``cv2.resize`` INTER_AREA, roll the
stack), and ``step_rgb`` against the same on RGB frames. Timed round-robin with the other
sections' contenders (the ``envs`` section's); speedups are per round against the same
round's baseline, median. The pipelines are shared with ``benchmarks/test_bench_kernels.py``.
"""
from __future__ import annotations

import contextlib
import statistics
from dataclasses import asdict, dataclass, field
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
    kernels: list[KernelResult] = field(default_factory=list)


# --- Frames --------------------------------------------------------------------------------------


def play_randomly(ale, frames: int, seed: int) -> None:
    """Advance ``ale`` so that its screen shows a game in progress, not a title screen."""
    actions = ale.getMinimalActionSet()
    rng = np.random.default_rng(seed)
    for index in rng.integers(len(actions), size=frames):
        ale.act(actions[index])
        if ale.game_over():
            ale.reset_game()


def screen_buffers(ale, rgb: bool = False) -> tuple[np.ndarray, np.ndarray]:
    height, width = ale.getScreenDims()
    shape = (height, width, 3) if rgb else (height, width)
    return np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)


def learn_gray_lut(ale) -> np.ndarray:
    """A palette → gray LUT for the indices on screen now.

    Enough to time the kernel, whose cost does not depend on the LUT's contents.
    """
    indices, gray = screen_buffers(ale)
    ale.getScreen(indices)
    ale.getScreenGrayscale(gray)
    lut = np.zeros(256, np.uint8)
    lut[indices.ravel()] = gray.ravel()
    return lut


@dataclass
class Scene:
    """A live game mid-play, and real frames from it."""

    game: str
    ale: Any
    lut: np.ndarray  # palette → gray, for the indices on screen
    gray: np.ndarray  # (h, w), as getScreenGrayscale gives it
    rgb_prev: np.ndarray  # (h, w, 3), two consecutive frames
    rgb_last: np.ndarray


def capture_scene(game: str, seed: int) -> Scene:
    ale = open_ale(game, seed)
    play_randomly(ale, 400, seed)
    rgb_prev, rgb_last = screen_buffers(ale, rgb=True)
    ale.getScreenRGB(rgb_prev)
    play_randomly(ale, 1, seed)
    ale.getScreenRGB(rgb_last)
    gray, _ = screen_buffers(ale)
    ale.getScreenGrayscale(gray)
    return Scene(game, ale, learn_gray_lut(ale), gray, rgb_prev, rgb_last)


@contextlib.contextmanager
def using_simd(path: str) -> Iterator[None]:
    previous = kernels.set_simd_path(path)
    try:
        yield
    finally:
        kernels.set_simd_path(previous)


# --- The per-step pipelines, as zero-argument callables (shared with benchmarks/) ----------------


def empty_stack() -> np.ndarray:
    width, height = SCREEN_SIZE
    return np.zeros((STACK_SIZE, height, width), np.uint8)


def palette_step_fastatari(ale, lut: np.ndarray) -> Callable[[], None]:
    """fastatari's work after emulation: 2× getScreen, then one fused kernel call."""
    prev, last = screen_buffers(ale)
    stack = empty_stack()

    def step() -> None:
        ale.getScreen(prev)
        ale.getScreen(last)
        kernels.step_palette(prev, last, lut, stack)

    return step


def palette_step_gymnasium(ale) -> Callable[[], None]:
    """AtariPreprocessing + FrameStackObservation's work after emulation, without the Python
    wrapper layers: 2× getScreenGrayscale, in-place max, INTER_AREA resize, roll and assign."""
    import cv2

    buffers = screen_buffers(ale)
    stack = empty_stack()

    def step() -> None:
        nonlocal stack
        ale.getScreenGrayscale(buffers[1])
        ale.getScreenGrayscale(buffers[0])
        np.maximum(buffers[0], buffers[1], out=buffers[0])
        small = cv2.resize(buffers[0], SCREEN_SIZE, interpolation=cv2.INTER_AREA)
        stack = np.roll(stack, -1, axis=0)
        stack[-1] = small

    return step


def rgb_step_fastatari(prev: np.ndarray, last: np.ndarray) -> Callable[[], None]:
    """Two RGB frames → gray, max, resize, stack, in one fused kernel call."""
    stack = empty_stack()
    return lambda: kernels.step_rgb(prev, last, stack)


def rgb_step_opencv(prev: np.ndarray, last: np.ndarray) -> Callable[[], None]:
    """The same with OpenCV and numpy: 2× cvtColor, max, INTER_AREA resize, roll and assign."""
    import cv2

    stack = empty_stack()

    def step() -> None:
        nonlocal stack
        gray = np.maximum(cv2.cvtColor(prev, cv2.COLOR_RGB2GRAY),
                          cv2.cvtColor(last, cv2.COLOR_RGB2GRAY))
        small = cv2.resize(gray, SCREEN_SIZE, interpolation=cv2.INTER_AREA)
        stack = np.roll(stack, -1, axis=0)
        stack[-1] = small

    return step



# --- Contenders ----------------------------------------------------------------------------------


def kernel_contenders(config: BenchConfig) -> Contenders:
    scene = capture_scene(config.game, config.seed)
    palette = "per step: 2 screens → gray, max, resize, stack"
    rgb = "step_rgb: 2 RGB frames → gray, max, resize, stack"
    pairs = [
        (palette, "2× getScreenGrayscale + np.maximum + cv2.resize + np.roll",
         palette_step_gymnasium(scene.ale),
         "2× getScreen + step_palette", lambda: palette_step_fastatari(scene.ale, scene.lut)),
        (rgb, "2× cv2.cvtColor + np.maximum + cv2.resize + np.roll",
         rgb_step_opencv(scene.rgb_prev, scene.rgb_last),
         "step_rgb", lambda: rgb_step_fastatari(scene.rgb_prev, scene.rgb_last)),
    ]
    contenders = []
    # one fastatari pipeline per SIMD path, each with its own stack
    for comparison, baseline_name, baseline, fused_name, make_fused in pairs:
        contenders.append(_kernel_contender(comparison, baseline_name, baseline, None, config))
        for path in kernels.simd_available():
            contenders.append(_kernel_contender(comparison, fused_name, make_fused(), path, config))
    return Contenders(contenders, lambda seconds: kernel_results(contenders, seconds))


def _kernel_contender(comparison: str, implementation: str, step: Callable[[], None],
                      simd: str | None, config: BenchConfig) -> Contender:
    calls = config.kernel_calls

    def run(round_index: int) -> None:
        with using_simd(simd) if simd else contextlib.nullcontext():
            for _ in range(calls):
                step()

    name = f"{comparison} | {implementation} [{simd or 'baseline'}]"
    return Contender("kernels", name, calls, run, comparison=comparison,
                     implementation=implementation, simd=simd)



def kernel_results(contenders: list[Contender],
                   seconds: dict[str, list[float]]) -> KernelsReport:
    baselines = {c.comparison: seconds[c.name] for c in contenders if c.simd is None}
    results = []
    for contender in contenders:
        samples = seconds[contender.name]
        results.append(KernelResult(contender.comparison, contender.implementation, contender.simd,
                                    statistics.median(samples) * 1e6,
                                    median_ratio(baselines[contender.comparison], samples),
                                    [sample * 1e6 for sample in samples]))
    return KernelsReport(results)


# --- Markdown ------------------------------------------------------------------------------------


def kernel_table(report: KernelsReport) -> str:
    rows = [[r.comparison, r.implementation, r.simd or "OpenCV/numpy", f"{r.us_per_step:.1f}",
             f"{r.speedup:.1f}×"] for r in report.kernels]
    return markdown_table(["comparison", "implementation", "path", "µs/step", "speedup"], rows)


def markdown_kernels(report: KernelsReport, config: dict) -> str:
    return (f"Preprocessing after emulation, {config['kernel_calls']:,} steps per round; "
            "speedup = OpenCV/numpy µs ÷ fastatari µs, per round, median.\n\n"
            + kernel_table(report))


SECTION = Section(
    "kernels", "the preprocessing after emulation: fastatari's kernels on every SIMD path "
    "against OpenCV/numpy", markdown_kernels, contenders=kernel_contenders,
    json=lambda report: asdict(report or KernelsReport()))
