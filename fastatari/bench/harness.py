"""What every section shares: the config, contenders timed round-robin, the raw-ALE loop,
Markdown tables, and :class:`Section`, the one interface a section implements.

Every contender runs a fixed amount of work per round; rounds go round-robin over all
contenders (a slow spell of a noisy machine hits each alike); the report keeps medians, and
ratios to the ceiling are taken round by round, against the same round's ceiling.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from fastatari.bench.systems import FRAME_SKIP, TIMEOUT  # noqa: F401 - shared from here
from fastatari.core.games import resolve_game

MAX_FRAMES_PER_EPISODE = 108_000  # the v5 default, so the ceiling truncates like the envs do
DEFAULT_SECTIONS = ("envs", "kernels", "vector")  # what a bare ``fastatari bench`` runs


@dataclass(frozen=True)
class BenchConfig:
    game: str = "breakout"
    rounds: int = 5
    steps: int = 2_000  # agent steps per round, for each env contender
    kernel_calls: int = 2_000  # calls per round, for each kernel contender
    seed: int = 0
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    vector_steps: int = 4_096  # vector envs: agent steps per round, for each system
    vector_envs: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)  # vector section: scaling
    startup_repeats: int = 3  # fresh interpreters per system, for start-up and memory
    quick: bool = False  # a smoke run (``--quick``): sections with a grid cut it to a few rows

    @property
    def rom(self) -> str:
        return resolve_game(self.game)


QUICK = {"rounds": 3, "steps": 300, "kernel_calls": 300, "vector_steps": 512,
         "vector_envs": (1, 8, 32), "startup_repeats": 1, "quick": True}


def usable_cores() -> int:
    """The CPUs this process may run on (what ``make_vec`` gives a worker each by default)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


Progress = Any  # tqdm-like: update(n), close(), optionally set_description_str(text)


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
    run: Callable[[int], Any]  # runs one round; the argument is the round index (0 = warm-up)
    note: str = ""
    comparison: str = ""  # kernels: which pair of pipelines this belongs to
    implementation: str = ""  # kernels: what it calls
    simd: str | None = None  # kernels: the SIMD path, None for the OpenCV/numpy baseline
    close: Callable[[], None] = lambda: None


# --- Sections ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A chosen section's work, planned before anything is timed: progress-bar units, and
    ``run(bar)``, which returns the section's result."""

    units: int
    run: Callable[[Progress | None], Any]


@dataclass(frozen=True)
class Contenders:
    """A chosen section's contenders, built, and ``summarise(seconds by name)``: its result."""

    contenders: list[Contender]
    summarise: Callable[[dict[str, list[float]]], Any]


@dataclass(frozen=True)
class Section:
    """One section: what ``--section NAME`` measures and reports.

    A section gives exactly one of ``plan`` (it runs its own rounds) and ``contenders`` (a
    flat list: the runner times them with every other such section's, round-robin, in one
    pass). Either is called only when the section was chosen. ``markdown`` renders the result,
    given the report's config as a dict. ``json`` gives the report's top-level JSON keys for
    the result, or for ``None`` when the section did not run; by default one key, the
    section's name, holding the result (a dataclass) as a dict, or ``None``.
    """

    name: str
    help: str  # one line, for ``--help``
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
    """An ALEInterface on ``game`` with sticky actions off."""
    import ale_py
    from ale_py import roms

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # before construction: no banner
    ale = ale_py.ALEInterface()
    ale.setInt("random_seed", seed)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.setInt("max_num_frames_per_episode", MAX_FRAMES_PER_EPISODE)
    ale.loadROM(roms.get_rom_path(resolve_game(game)))
    return ale


def draw_actions(seed: int, num_actions: int, rounds: int, *shape: int) -> np.ndarray:
    """Action indices (int32) of ``shape`` per round (row 0 is the warm-up), drawn before any
    timing."""
    rng = np.random.default_rng(seed)
    return rng.integers(num_actions, size=(rounds + 1, *shape), dtype=np.int32)


def bare_step(ale, action) -> None:
    """One agent step of the ceiling: FRAME_SKIP bare ``ale.act`` calls, reset on game over."""
    for _ in range(FRAME_SKIP):
        ale.act(action)
    if ale.game_over():
        ale.reset_game()


def bare_loop(game: str, seed: int, rounds: int, steps: int) -> Callable[[int], None]:
    """The emulation ceiling: ``run(round)`` plays ``steps`` agent steps of :func:`bare_step`,
    random actions, no preprocessing."""
    ale = open_ale(game, seed)
    action_set = ale.getMinimalActionSet()
    rows = draw_actions(seed, len(action_set), rounds, steps).tolist()
    actions = [[action_set[index] for index in row] for row in rows]

    def run(round_index: int) -> None:
        for action in actions[round_index % len(actions)]:
            bare_step(ale, action)

    return run


# --- Measuring -----------------------------------------------------------------------------------


def measure(contenders: list[Contender], rounds: int,
            progress: Progress | None = None) -> dict[str, list[float]]:
    """Seconds per unit of work, one sample per round, contenders interleaved round-robin.
    Round 0 is an untimed warm-up (first-call costs: resize tables, imports, page faults)."""
    seconds: dict[str, list[float]] = {contender.name: [] for contender in contenders}
    for round_index in range(rounds + 1):
        for contender in contenders:
            start = time.perf_counter()
            contender.run(round_index)
            elapsed = time.perf_counter() - start
            if round_index:
                seconds[contender.name].append(elapsed / contender.units_per_round)
            advance(progress, 1)
    return seconds


def median_ratio(numerators: list[float], denominators: list[float]) -> float:
    """The median of the per-round ratios (not the ratio of the medians)."""
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=False))


@dataclass
class Rate:
    """A system's agent steps/s from its seconds per step, one sample per round."""

    system: str
    steps_per_s: float  # median over rounds
    frames_per_s: float
    ratio_to_ceiling: float  # per round against the same round's ceiling, median; NaN without
    note: str
    rounds_steps_per_s: list[float]  # one per round, to judge the noise
    num_envs: int = 1


def rate(samples: list[float], ceiling: list[float] | None, system: str = "", note: str = "",
         num_envs: int = 1) -> Rate:
    steps_per_s = 1.0 / statistics.median(samples)
    return Rate(system, steps_per_s, steps_per_s * FRAME_SKIP,
                median_ratio(ceiling, samples) if ceiling else float("nan"), note,
                [1.0 / sample for sample in samples], num_envs)


def rates(contenders: list[Contender], seconds: dict[str, list[float]], ceiling: str,
          num_envs: int = 1) -> list[Rate]:
    """Each contender's :class:`Rate`, against the contender named ``ceiling``."""
    return [rate(seconds[c.name], seconds.get(ceiling), c.name, c.note, num_envs)
            for c in contenders]


# --- Markdown ------------------------------------------------------------------------------------


RATE_HEADER = ["system", "steps/s", "frames/s", "ratio to ceiling", "note"]


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def rate_rows(results: list[Rate]) -> list[list[str]]:
    """Rows under :data:`RATE_HEADER`."""
    return [[r.system, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
             f"{r.ratio_to_ceiling:.2f}", r.note] for r in results]
