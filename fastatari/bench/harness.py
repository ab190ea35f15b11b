"""The harness: fastatari against the raw-ALE ceiling and gymnasium's reference pipeline.

Every contender runs a fixed amount of work per round, rounds go round-robin over all contenders
(so a slow spell of a noisy machine hits each of them alike), and the report keeps medians.
Ratios to the ceiling are taken round by round, against the ceiling measured in the same round.

Sections (``SECTIONS``): ``envs`` times whole agent steps, ``kernels`` times the per-step
preprocessing after emulation, fastatari's kernels on every SIMD path against OpenCV/numpy,
``vector`` times vector envs against gymnasium's AsyncVectorEnv, ale_py's AtariVectorEnv and
EnvPool, plus scaling, start-up, memory and async (:mod:`fastatari.bench.vector`);
``transport`` times the vector env's transport alone, with workers that do not emulate, and
models its cost at more cores (:mod:`fastatari.bench.transport`; only when asked for);
``ray`` times :mod:`fastatari.ray` against the local vector env on a simulated two-node cluster
(:mod:`fastatari.bench.ray_section`; only when asked for).
``multigame`` times pools of the Atari-57 games against their mix's ceiling
(:mod:`fastatari.bench.multigame`; only when asked for).
This module holds what every section shares (config, contenders, round-robin measurement,
Markdown tables) and the ``envs`` and ``kernels`` sections; :mod:`fastatari.bench.runner` runs
the chosen sections and builds the report. Needs the ``bench`` extra (OpenCV; gymnasium's
AtariPreprocessing imports it too).
"""
from __future__ import annotations

import contextlib
import os
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from fastatari import kernels
from fastatari.bench.probe import gymnasium_reference_env
from fastatari.games import camel_name, resolve_game
from fastatari.vector.placement import usable_cores

FRAME_SKIP = 4
SCREEN_SIZE = (84, 84)  # (width, height), OpenCV's order
STACK_SIZE = 4
MAX_FRAMES_PER_EPISODE = 108_000  # the v5 default, so the ceiling truncates like the envs do

SECTIONS = ("envs", "kernels", "vector", "transport", "multigame", "ray")
DEFAULT_SECTIONS = ("envs", "kernels", "vector")  # transport is a diagnostic: asked for by name
CEILING = "raw ALE (4× ale.act)"


@dataclass(frozen=True)
class BenchConfig:
    game: str = "breakout"
    rounds: int = 5
    steps: int = 2_000  # agent steps per round, for each env contender
    kernel_calls: int = 2_000  # calls per round, for each kernel contender
    seed: int = 0
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    vector_steps: int = 4_096  # vector section: agent steps per round, for each system
    vector_envs: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)  # vector section: scaling
    startup_repeats: int = 3  # vector section: fresh interpreters per system, for start-up


QUICK = {"rounds": 3, "steps": 300, "kernel_calls": 300, "vector_steps": 512,
         "vector_envs": (1, 8, 32), "startup_repeats": 1}


class Progress(Protocol):
    def update(self, n: int = 1) -> Any: ...

    def close(self) -> Any: ...


@dataclass
class Contender:
    section: str
    name: str
    units_per_round: int  # agent steps or kernel calls
    run: Callable[[int], None]  # runs one round; the argument is the round index (0 = warm-up)
    note: str = ""
    comparison: str = ""  # kernels: which pair of pipelines this belongs to
    implementation: str = ""  # kernels: what it calls
    simd: str | None = None  # kernels: the SIMD path, None for the OpenCV/numpy baseline
    close: Callable[[], None] = lambda: None


@dataclass
class EnvResult:
    system: str
    steps_per_s: float
    frames_per_s: float
    ratio_to_ceiling: float
    note: str
    rounds_steps_per_s: list[float]  # one per round, to judge the noise


@dataclass
class KernelResult:
    comparison: str
    implementation: str
    simd: str | None
    us_per_step: float
    speedup: float  # baseline µs / this µs, per round, median
    rounds_us: list[float]  # one per round, to judge the noise


@dataclass
class Report:
    environment: dict[str, Any]
    config: dict[str, Any]
    envs: list[EnvResult] = field(default_factory=list)
    kernels: list[KernelResult] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    vector: Any = None  # vector.VectorReport when the section ran
    transport: Any = None  # transport.TransportReport when the section ran
    ray: Any = None  # ray_section.RayReport when the section ran
    multigame: Any = None  # multigame.MultigameReport when the section ran

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- ALE and frames ------------------------------------------------------------------------------


def open_ale(game: str, seed: int):
    """An ALEInterface on ``game`` with sticky actions off, as the benchmarks need it."""
    import ale_py
    from ale_py import roms

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # before construction: no banner
    ale = ale_py.ALEInterface()
    ale.setInt("random_seed", seed)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.setInt("max_num_frames_per_episode", MAX_FRAMES_PER_EPISODE)
    ale.loadROM(roms.get_rom_path(resolve_game(game)))
    return ale


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


def draw_actions(seed: int, num_actions: int, rounds: int, steps: int) -> list[list[int]]:
    """One row of action indices per round (row 0 is the warm-up), drawn before any timing."""
    rng = np.random.default_rng(seed)
    return rng.integers(num_actions, size=(rounds + 1, steps)).tolist()


def bare_loop(game: str, seed: int, rounds: int, steps: int) -> Callable[[int], None]:
    """The emulation ceiling: ``run(round)`` plays ``steps`` agent steps of FRAME_SKIP bare
    ``ale.act`` calls each, no preprocessing, resetting on game over."""
    ale = open_ale(game, seed)
    action_set = ale.getMinimalActionSet()
    rows = draw_actions(seed, len(action_set), rounds, steps)
    actions = [[action_set[index] for index in row] for row in rows]

    def run(round_index: int) -> None:
        for action in actions[round_index % len(actions)]:
            bare_step(ale, action)

    return run


def bare_step(ale, action) -> None:
    """One agent step of the ceiling: FRAME_SKIP bare ``ale.act`` calls, reset on game over."""
    for _ in range(FRAME_SKIP):
        ale.act(action)
    if ale.game_over():
        ale.reset_game()


def ceiling_contender(config: BenchConfig) -> Contender:
    run = bare_loop(config.game, config.seed, config.rounds, config.steps)
    return Contender("envs", CEILING, config.steps, run,
                     note="the emulation ceiling, one core, no preprocessing")


def env_contender(name: str, env, config: BenchConfig, note: str) -> Contender:
    """Random actions through a gymnasium.Env, resetting when an episode ends."""
    rows = draw_actions(config.seed, int(env.action_space.n), config.rounds, config.steps)
    env.reset(seed=config.seed)

    def run(round_index: int) -> None:
        for action in rows[round_index]:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()

    return Contender("envs", name, config.steps, run, note=note, close=env.close)


def fastatari_env(config: BenchConfig):
    import fastatari

    return fastatari.AtariEnv(config.game, repeat_action_probability=0.0)


def gymnasium_env_id(game: str) -> str:
    """ale_py's gymnasium id for ``game``, e.g. ``ALE/Breakout-v5``."""
    return f"ALE/{camel_name(resolve_game(game))}-v5"


def env_contenders(config: BenchConfig, skipped: dict[str, str]) -> list[Contender]:
    contenders = [ceiling_contender(config)]
    makers = [
        ("fastatari AtariEnv", fastatari_env, "fastatari.AtariEnv, fused kernels"),
        ("gymnasium AtariPreprocessing + FrameStack",
         lambda config: gymnasium_reference_env(gymnasium_env_id(config.game)),
         "the reference pipeline, 1 env"),
    ]
    for name, make, note in makers:
        try:
            env = make(config)
        except (ImportError, AttributeError) as error:  # fastatari.AtariEnv may not exist yet
            skipped[name] = f"{type(error).__name__}: {error}"
            continue
        contenders.append(env_contender(name, env, config, note))
    return contenders


def kernel_contenders(config: BenchConfig) -> list[Contender]:
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
    return contenders


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


def build_contenders(config: BenchConfig, skipped: dict[str, str]) -> list[Contender]:
    """The ``envs`` and ``kernels`` contenders; the vector section plans its own groups."""
    builders = {"envs": lambda: env_contenders(config, skipped),
                "kernels": lambda: kernel_contenders(config)}
    return [contender for section in config.sections if section in builders
            for contender in builders[section]()]


# --- Measuring and reporting ---------------------------------------------------------------------


def measure(contenders: list[Contender], rounds: int,
            progress: Progress | None = None) -> dict[str, list[float]]:
    """Seconds per unit of work, one sample per round, contenders interleaved round-robin.

    Round 0 is an untimed warm-up (first-call costs: resize tables, imports, page faults).
    """
    seconds: dict[str, list[float]] = {contender.name: [] for contender in contenders}
    for round_index in range(rounds + 1):
        for contender in contenders:
            start = time.perf_counter()
            contender.run(round_index)
            elapsed = time.perf_counter() - start
            if round_index:
                seconds[contender.name].append(elapsed / contender.units_per_round)
            if progress is not None:
                progress.update(1)
    return seconds


def median_ratio(numerators: list[float], denominators: list[float]) -> float:
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=False))


def env_results(contenders: list[Contender], seconds: dict[str, list[float]]) -> list[EnvResult]:
    ceiling = seconds.get(CEILING)
    results = []
    for contender in contenders:
        if contender.section != "envs":
            continue
        samples = seconds[contender.name]
        steps_per_s = 1.0 / statistics.median(samples)
        ratio = median_ratio(ceiling, samples) if ceiling else float("nan")
        results.append(EnvResult(contender.name, steps_per_s, steps_per_s * FRAME_SKIP, ratio,
                                 contender.note, [1.0 / sample for sample in samples]))
    return results


def kernel_results(contenders: list[Contender],
                   seconds: dict[str, list[float]]) -> list[KernelResult]:
    baselines = {c.comparison: seconds[c.name] for c in contenders
                 if c.section == "kernels" and c.simd is None}
    results = []
    for contender in contenders:
        if contender.section != "kernels":
            continue
        samples = seconds[contender.name]
        results.append(KernelResult(contender.comparison, contender.implementation, contender.simd,
                                    statistics.median(samples) * 1e6,
                                    median_ratio(baselines[contender.comparison], samples),
                                    [sample * 1e6 for sample in samples]))
    return results


def environment_info() -> dict[str, Any]:
    import ale_py
    import cv2
    import gymnasium

    return {
        "ale_py": ale_py.__version__,
        "gymnasium": gymnasium.__version__,
        "opencv": cv2.__version__,
        "opencv_threads": cv2.getNumThreads(),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable_cores(),
        "simd_path": kernels.simd_path(),
        "simd_available": kernels.simd_available(),
        "frame_skip": FRAME_SKIP,
        "mode": "sync, 1 env, 1 process",
    }


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


# --- Markdown ------------------------------------------------------------------------------------


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def env_table(report: Report) -> str:
    rows = [[r.system, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
             f"{r.ratio_to_ceiling:.2f}", r.note] for r in report.envs]
    rows += [[name, "—", "—", "—", f"skipped: {reason}"] for name, reason in report.skipped.items()]
    return markdown_table(["system", "steps/s", "frames/s", "ratio to ceiling", "note"], rows)


def kernel_table(report: Report) -> str:
    rows = [[r.comparison, r.implementation, r.simd or "OpenCV/numpy", f"{r.us_per_step:.1f}",
             f"{r.speedup:.1f}×"] for r in report.kernels]
    return markdown_table(["comparison", "implementation", "path", "µs/step", "speedup"], rows)


def environment_line(report: Report) -> str:
    env = report.environment
    return (f"ale-py {env['ale_py']}, gymnasium {env['gymnasium']}, OpenCV {env['opencv']} "
            f"({env['opencv_threads']} threads), {env['cpu']}, {env['cpu_count']} CPUs "
            f"({env['usable_cpus']} usable), SIMD {env['simd_path']} "
            f"(available: {', '.join(env['simd_available'])}), {env['mode']}, "
            f"frame_skip {env['frame_skip']}")
