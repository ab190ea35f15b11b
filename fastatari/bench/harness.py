"""What every section shares: the config, contenders timed round-robin, the raw-ALE loop,
Markdown tables, and :class:`Section`, the one interface a section implements.

Every contender runs a fixed amount of work per round; rounds go round-robin over all
contenders (a slow spell of a noisy machine hits each alike); the report keeps medians, and
ratios to the ceiling are taken round by round, against the same round's ceiling.
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from fastatari.bench.systems import FRAME_SKIP, TIMEOUT  # noqa: F401 - shared from here
from fastatari.core.games import resolve_game, rom_path

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


QUICK: dict[str, Any] = {"rounds": 3, "steps": 300, "kernel_calls": 300, "vector_steps": 512,
                         "vector_envs": (1, 8, 32), "startup_repeats": 1, "quick": True}


def usable_cores() -> int:
    """The CPUs this process may run on."""
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
    name: str
    units_per_round: int  # agent steps or kernel calls
    run: Callable[[int], Any]  # runs one round; the argument is the round index (0 = warm-up)
    note: str = ""
    comparison: str = ""  # kernels: which pair of pipelines this belongs to
    implementation: str = ""  # kernels: what it calls
    simd: str | None = None  # kernels: the SIMD path, None for the OpenCV/numpy baseline
    close: Callable[[], None] = lambda: None
    #: the round's seconds from what ``run`` returned (the parallel ceiling: its loops' own
    #: times), instead of the wall time of the call
    timed: Callable[[Any], float] | None = None


@dataclass(frozen=True)
class Work:
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
    """What ``--section NAME`` measures and reports. Exactly one of ``plan`` (it runs its own
    rounds) and ``contenders`` (timed with every other such section's, round-robin, in one
    pass), called only when the section was chosen. ``markdown(result, config as a dict)``;
    in the JSON, the result (a dataclass) as a dict under the section's name."""

    name: str
    help: str  # one line, for ``--help``
    markdown: Callable[[Any, dict[str, Any]], str]
    plan: Callable[[BenchConfig], Work] | None = None
    contenders: Callable[[BenchConfig], Contenders] | None = None

    def __post_init__(self) -> None:
        if (self.plan is None) == (self.contenders is None):
            raise ValueError(f"section {self.name!r}: give one of plan and contenders")

    def to_json(self, result: Any) -> dict[str, Any]:
        return {self.name: None if result is None else asdict(result)}


def open_ale(game: str, seed: int):
    """An ALEInterface on ``game`` with sticky actions off."""
    import ale_py

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # before construction: no banner
    ale = ale_py.ALEInterface()
    ale.setInt("random_seed", seed)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.setInt("max_num_frames_per_episode", MAX_FRAMES_PER_EPISODE)
    ale.loadROM(rom_path(resolve_game(game)))
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


def bare_loop(game: str, seed: int, rounds: int, steps: int) -> Callable[[int], float]:
    """The emulation ceiling: ``run(round)`` plays ``steps`` agent steps of :func:`bare_step`,
    random actions, no preprocessing, and returns the seconds they took."""
    ale = open_ale(game, seed)
    action_set = ale.getMinimalActionSet()
    rows = draw_actions(seed, len(action_set), rounds, steps).tolist()
    actions = [[action_set[index] for index in row] for row in rows]

    def run(round_index: int) -> float:
        start = time.perf_counter()
        for action in actions[round_index % len(actions)]:
            bare_step(ale, action)
        return time.perf_counter() - start

    return run


def block_times(games: Sequence[Any], blocks: Sequence[np.ndarray],
                actions: np.ndarray) -> tuple[np.ndarray, int]:
    """One synchronous step per row of ``actions`` (one per env), each block of envs after the
    other in this process, each env's game step as a worker runs it (``AtariGame.step``; a
    reset after an ended episode timed with the step that ended it, as next-step autoreset
    runs it before the env's next step): the seconds of each block per step (steps x
    blocks), and the resets. A sync step over blocks in parallel lasts as long as its slowest
    block."""
    clock = time.perf_counter
    times = np.zeros((len(actions), len(blocks)))
    resets = 0
    for t, row in enumerate(actions.tolist()):
        for b, block in enumerate(blocks):
            start = clock()
            for i in block:
                game = games[i]  # a game without ALE's 18 (Skiing has 9): modulo its own
                _, terminated, truncated, _ = game.step(row[i] % game.num_actions)
                if terminated or truncated:
                    game.reset()
                    resets += 1
            times[t, b] = clock() - start
    return times, resets


def _serve(conn, make_loop: Callable[..., Callable[[int], Any]], args: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    run = make_loop(*args)
    conn.send("ready")
    with contextlib.suppress(EOFError):
        while (round_index := conn.recv()) is not None:
            conn.send((round_index, run(round_index)))


class LoopProcesses:
    """Loops in parallel, until :meth:`close`: process ``k`` (``spawn``: fork is unsafe once
    thread pools exist) builds ``make_loop(*args[k])`` (module-level, so that it pickles), then
    runs round ``r`` on command and sends back ``(r, what the round returned)``."""

    def __init__(self, make_loop: Callable[..., Callable[[int], Any]],
                 args: Sequence[tuple], name: str) -> None:
        context = mp.get_context("spawn")
        self.processes: list[Any] = []
        self.conns: list[Any] = []
        try:
            for k, loop_args in enumerate(args):
                parent, child = context.Pipe()
                process = context.Process(target=_serve, args=(child, make_loop, loop_args),
                                          daemon=True, name=f"{name}-{k}")
                process.start()
                child.close()
                self.processes.append(process)
                self.conns.append(parent)
            if any(self._reply(conn) != "ready" for conn in self.conns):
                raise RuntimeError("a ceiling process did not start")
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _reply(conn) -> Any:
        if not conn.poll(TIMEOUT):
            raise TimeoutError(f"a ceiling process did not answer within {TIMEOUT} s")
        return conn.recv()

    def run(self, round_index: int) -> list[Any]:
        """Round ``round_index`` in every process at once; what each returned, in order."""
        for conn in self.conns:
            conn.send(round_index)
        replies = [self._reply(conn) for conn in self.conns]
        if any(index != round_index for index, _ in replies):
            raise RuntimeError(f"a ceiling process answered another round than {round_index}")
        return [value for _, value in replies]

    def close(self) -> None:
        """Ask every process to stop, then make sure it is gone. Safe to call again."""
        for conn in self.conns:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
        for process in self.processes:
            process.join(timeout=5.0)
            if process.is_alive():
                process.kill()
                process.join(timeout=5.0)
        for conn in self.conns:
            conn.close()
        self.processes, self.conns = [], []


def parallel_ceiling(config: BenchConfig, processes: int, name: str) -> Contender:
    """The ceiling on ``processes`` cores: as many :func:`bare_loop` processes, run together,
    ``vector_steps`` agent steps in all per round; a round's rate is the sum of each loop's
    own rate, its steps over the time it took (timed in its process: neither the slowest
    loop's tail nor the messages to the processes count). Its ``close`` ends the
    processes."""
    steps = max(1, config.vector_steps // processes)
    loops = LoopProcesses(bare_loop, [(config.game, config.seed + k, config.rounds, steps)
                                      for k in range(processes)], "fastatari-bench-ceiling")

    def timed(seconds: list[float]) -> float:  # all the steps at the summed rate
        return steps * processes / sum(steps / s for s in seconds)

    return Contender(name, steps * processes, loops.run, close=loops.close, timed=timed,
                     note=f"{processes} bare 4× ale.act loops in as many processes, run "
                          "together; the sum of each loop's steps ÷ its own time")


def measure(contenders: list[Contender], rounds: int,
            progress: Progress | None = None) -> dict[str, list[float]]:
    """Seconds per unit of work, one sample per round, contenders interleaved round-robin.
    Round 0 is an untimed warm-up (first-call costs: resize tables, imports, page faults)."""
    seconds: dict[str, list[float]] = {contender.name: [] for contender in contenders}
    for round_index in range(rounds + 1):
        for contender in contenders:
            start = time.perf_counter()
            returned = contender.run(round_index)
            elapsed = time.perf_counter() - start
            if contender.timed is not None:
                elapsed = contender.timed(returned)
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


RATE_HEADER = ["system", "steps/s", "frames/s", "ratio to ceiling", "note"]


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def rate_rows(results: list[Rate]) -> list[list[str]]:
    """Rows under :data:`RATE_HEADER`."""
    return [[r.system, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
             f"{r.ratio_to_ceiling:.2f}", r.note] for r in results]
