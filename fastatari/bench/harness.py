"""What every section of ``fastatari bench`` shares: the config, contenders and their
round-robin measurement, the raw-ALE loop, the Markdown tables, and :class:`Section`, the one
interface a section implements.

Every contender runs a fixed amount of work per round, rounds go round-robin over all
contenders (so a slow spell of a noisy machine hits each of them alike), and the report keeps
medians. Ratios to the ceiling are taken round by round, against the ceiling measured in the
same round.

The sections are the modules of :mod:`fastatari.bench.sections`, each registered there once;
:mod:`fastatari.bench.runner` runs the chosen ones and builds the report. Needs the ``bench``
extra (OpenCV; gymnasium's AtariPreprocessing imports it too).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Protocol

import numpy as np

from fastatari.core.games import resolve_game

FRAME_SKIP = 4
MAX_FRAMES_PER_EPISODE = 108_000  # the v5 default, so the ceiling truncates like the envs do
TIMEOUT = 120.0  # seconds any one wait may take before the harness gives up
CEILING_ONE_CORE = "raw ALE, 1 core"

# what a bare ``fastatari bench`` runs; the other sections are diagnostics, asked for by name
DEFAULT_SECTIONS = ("envs", "kernels", "vector")


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
    quick: bool = False  # a smoke run (``--quick``): sections with a grid cut it to a few rows


QUICK = {"rounds": 3, "steps": 300, "kernel_calls": 300, "vector_steps": 512,
         "vector_envs": (1, 8, 32), "startup_repeats": 1, "quick": True}


class Progress(Protocol):
    def update(self, n: int = 1) -> Any: ...

    def close(self) -> Any: ...


def advance(bar: Progress | None, units: int) -> None:
    if bar is not None:
        bar.update(units)


def describe(bar: Progress | None, text: str) -> None:
    """Name what the bar counts now, where the bar can (tqdm's ``set_description_str``)."""
    set_description = getattr(bar, "set_description_str", None)
    if set_description is not None:
        set_description(text)


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


# --- Sections ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A chosen section's work, planned from the config before anything is timed."""

    units: int  # progress-bar units it will report
    run: Callable[[Progress | None], Any]  # runs the section; returns its result


@dataclass(frozen=True)
class Contenders:
    """A chosen section's contenders, built, and how its result comes from their timings."""

    contenders: list[Contender]
    summarise: Callable[[dict[str, list[float]]], Any]  # seconds by contender name -> result


@dataclass(frozen=True)
class Section:
    """One section of ``fastatari bench``: what ``--section NAME`` measures and reports.

    A section gives exactly one of ``plan`` (it runs its own rounds) and ``contenders`` (a
    flat list of contenders: the runner times them with every other such section's,
    round-robin, in one pass, so that a slow spell of the machine hits them all alike). Either
    is called only when the section was chosen. ``markdown`` renders the section's result,
    given the report's config as a dict. ``json`` gives the report's top-level JSON keys for
    the result, or for ``None`` when the section did not run; by default one key, the
    section's name, holding the result (a dataclass) as a dict, or ``None``.
    """

    name: str
    help: str  # one line, for ``fastatari bench --help``
    markdown: Callable[[Any, dict[str, Any]], str]
    plan: Callable[[BenchConfig], Plan] | None = None
    contenders: Callable[[BenchConfig], Contenders] | None = None
    json: Callable[[Any], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if (self.plan is None) == (self.contenders is None):
            raise ValueError(f"section {self.name!r}: give one of plan and contenders")

    def to_json(self, result: Any) -> dict[str, Any]:
        if self.json is not None:
            return self.json(result)
        return {self.name: None if result is None else asdict(result)}


# --- The raw-ALE loop: the emulation ceiling -----------------------------------------------------


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


def draw_actions(seed: int, num_actions: int, rounds: int, steps: int) -> list[list[int]]:
    """One row of action indices per round (row 0 is the warm-up), drawn before any timing."""
    rng = np.random.default_rng(seed)
    return rng.integers(num_actions, size=(rounds + 1, steps)).tolist()


def draw_vector_actions(config: BenchConfig, num_actions: int,
                        shape: tuple[int, ...]) -> np.ndarray:
    """A vector env's action indices (int32), ``shape`` per round (row 0 is the warm-up),
    drawn before any timing from the config's seed."""
    rng = np.random.default_rng(config.seed)
    return rng.integers(num_actions, size=(config.rounds + 1, *shape), dtype=np.int32)


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


def one_core_ceiling(section: str, config: BenchConfig, steps: int) -> Contender:
    """The ceiling on one core: a bare loop of ``steps`` agent steps per round, in this
    process."""
    return Contender(section, CEILING_ONE_CORE, steps,
                     bare_loop(config.game, config.seed, config.rounds, steps),
                     note="one bare 4× ale.act loop in the main process")


def bare_step(ale, action) -> None:
    """One agent step of the ceiling: FRAME_SKIP bare ``ale.act`` calls, reset on game over."""
    for _ in range(FRAME_SKIP):
        ale.act(action)
    if ale.game_over():
        ale.reset_game()


# --- Measuring -----------------------------------------------------------------------------------


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
    """The median of the per-round ratios (not the ratio of the medians)."""
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=False))


@dataclass(frozen=True)
class Rate:
    """A contender's agent steps/s from its seconds per step, one sample per round."""

    steps_per_s: float  # median over rounds
    frames_per_s: float
    ratio_to_ceiling: float  # per round against the same round's ceiling, median; NaN without
    rounds_steps_per_s: list[float]


def rate(samples: list[float], ceiling: list[float] | None) -> Rate:
    steps_per_s = 1.0 / statistics.median(samples)
    return Rate(steps_per_s, steps_per_s * FRAME_SKIP,
                median_ratio(ceiling, samples) if ceiling else float("nan"),
                [1.0 / sample for sample in samples])


# --- Markdown ------------------------------------------------------------------------------------


RATE_HEADER = ["system", "steps/s", "frames/s", "ratio to ceiling", "note"]


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def rate_rows(results: list[Any]) -> list[list[str]]:
    """Rows under :data:`RATE_HEADER` for results with those fields (system, steps_per_s,
    frames_per_s, ratio_to_ceiling, note)."""
    return [[r.system, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
             f"{r.ratio_to_ceiling:.2f}", r.note] for r in results]
