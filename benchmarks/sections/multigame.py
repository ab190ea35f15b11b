"""The ``multigame`` section: several games in one vector env, against their ceiling.

**Contenders.** Pools of :data:`fastatari.suites.ATARI_57` at N=57 (each game once) and N=114
(the suite twice), and of :data:`fastatari.suites.ATARI_5` with 4 envs per game, each game's
envs in a row (N=20: how per-task env groups are often listed, and where contiguous blocks put
the expensive games together); ``full_action_space=True``, sticky actions off, otherwise
the vector section's settings, ``num_workers`` = usable cores (at most N), stepped
synchronously with random actions (ALE's 18) drawn in advance from a seeded generator; each
with the cost-balanced assignment of envs to workers (``balance=True``: longest first, by
``fastatari/game_costs.json``, each game's envs kept together) and with contiguous blocks
(``balance=False``).

**The mix's ceiling.** Each game's bare loop: ``FRAME_SKIP`` ``ale.act`` calls per agent step,
random actions from the game's full (legal) action set, sticky actions off, no
preprocessing, reset on game over. Its seconds per agent step ``s_g`` are measured in the same
rounds as the contenders, and the ceiling of a mix on ``W`` cores is ``W / Σ_i s_{g(i)} / N``
agent steps/s: ``W`` cores each emulating, with no transport and a perfect split of the work,
envs whose games cost the mean of the mix. The loops run in ``C`` processes in parallel (one
per usable core, like the vector section's ceiling), each playing every game for a short loop
per round, round-robin over the games, starting at a different game; ``s_g`` is the time all
processes spent in game ``g`` over the steps they played of it. In parallel rather than in one
process, because the vector env emulates on every core at once: the ceiling then pays what the
workers pay for it (a shared L3 cache and memory bus, all-core clock speeds, and on a shared
machine the same neighbours), where one process on otherwise idle cores would run faster and
overstate it. Each round the processes also split the suite, every ``C``-th game to each, and
play their share changing game after every agent step, as the workers of a pool of one env per
game do, but bare: the suite's rate in that loop ÷ its ceiling is the *switching ratio*, what
playing many games at once costs the emulator itself (caches and branch predictors that each
game's code fills its own way).

**What is reported.** steps/s, the ratio to the ceiling (per round, against the ceiling of the
same round, median), balanced ÷ contiguous (per round, median), and the *assignment bound*:
with the measured ``s_g``, the mean worker load over the largest, the ratio a sync step could
reach with free transport and constant per-step costs; the bound is also modelled for more
workers (``MODEL_WORKERS``), where the assignment matters more, and for an assignment balanced
by the measured costs instead of the table (how much a table true to this machine would give).
The per-game costs' spread and their rank correlation with the table are reported with them.
(A 57-game pool's start-up: the ``multigame_startup`` section.)
"""
from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks.load import LoadWatch, load_line
from fastatari.bench.harness import (
    TIMEOUT,
    BenchConfig,
    Contender,
    LoopProcesses,
    Progress,
    Section,
    Work,
    bare_step,
    describe,
    draw_actions,
    markdown_table,
    measure,
    median_ratio,
    open_ale,
    rate,
    usable_cores,
)

__all__ = ["MODEL_WORKERS", "SECTION", "GameCost", "MultigameReport", "MultigameResult",
           "markdown_multigame", "multigame_units", "open_pool", "pools", "run_multigame",
           "suite"]

MODEL_WORKERS = (8, 16, 32, 64)  # the assignment bound, modelled for more workers
MIN_SYNC_STEPS = 8  # sync steps per round per contender, at least
MIN_GAME_STEPS = 24  # agent steps per game per ceiling process per round, at least
CEILING = "raw ALE ceiling of the mix"


def suite() -> tuple[str, ...]:
    from fastatari.evaluation.suites import ATARI_57

    return ATARI_57


def pools() -> dict[str, tuple[str, ...]]:
    """The pools timed, by label: each a game per env, all of them games of :func:`suite`."""
    from fastatari.evaluation.suites import ATARI_5

    games = suite()
    return {"Atari-57, N=57": games, "Atari-57 twice, N=114": games * 2,
            "Atari-5 in groups of 4, N=20": tuple(g for g in ATARI_5 for _ in range(4))}


@dataclass
class MultigameResult:
    system: str
    pool: str  # a label of pools()
    num_envs: int
    balance: bool | None  # None for the ceiling
    num_workers: int
    steps_per_s: float  # median over rounds
    frames_per_s: float
    ratio_to_ceiling: float  # per round against the same round's ceiling, median
    assignment_bound: float  # mean worker load / largest, with the measured per-game costs
    note: str
    rounds_steps_per_s: list[float]


@dataclass
class GameCost:
    game: str
    us_per_step: float  # the ceiling's loop, median over rounds
    table_us: float | None  # fastatari/game_costs.json, what the balanced assignment uses


@dataclass
class MultigameReport:
    usable_cores: int
    ceiling_processes: int
    games: int
    sync_steps_per_round: dict[str, int]  # pool -> sync steps per round per contender
    game_steps_per_round: int  # agent steps per game per ceiling process per round
    results: list[MultigameResult] = field(default_factory=list)
    balanced_over_contiguous: dict[str, float] = field(default_factory=dict)  # per round, median
    # pool (or model) -> workers -> assignment bound, at this machine's workers and more
    modelled_bound: dict[str, dict[int, float]] = field(default_factory=dict)
    costs: list[GameCost] = field(default_factory=list)
    cost_spread_us: dict[str, float] = field(default_factory=dict)  # min, median, max, mean
    cost_rank_correlation: float = float("nan")  # Spearman: measured against the table
    # the suite's ceiling ÷ its rate split over the processes, each changing game every agent
    # step over its share, round by round: what many games at once cost the emulator itself
    switching_ratio: list[float] = field(default_factory=list)
    load: dict[str, float] = field(default_factory=dict)  # LoadWatch.stop()
    worker_restarts: int = 0


# --- The mix's ceiling: every game's bare loop, in one process per core ---------------------------


def mix_loop(games: Sequence[str], index: int, processes: int, seed: int, rounds: int,
             steps: int) -> Callable[[int], tuple[list[float], list[float]]]:
    """The loop of process ``index`` of ``processes``. Each round: plays every game for
    ``steps`` agent steps, starting at its own place in ``games``; then its share of the games
    (every ``processes``-th, from ``index``) for ``steps * processes`` agent steps each,
    changing game every agent step, as a worker of a pool does. Returns each game's seconds in
    both loops (in ``games`` order; 0 for the games of other shares)."""
    ales, actions = [], []
    for g, game in enumerate(games):
        ale = open_ale(game, seed + g)
        action_set = ale.getLegalActionSet()  # the full action set (Skiing has 9)
        rows = draw_actions(seed + g, len(action_set), rounds, steps).tolist()
        ales.append(ale)
        actions.append([[action_set[i] for i in row] for row in rows])
    first = index * len(games) // processes
    order = [(first + k) % len(games) for k in range(len(games))]
    share = range(index, len(games), processes)

    def run(round_index: int) -> tuple[list[float], list[float]]:
        rows = [actions[g][round_index % len(actions[g])] for g in range(len(games))]
        seconds = [0.0] * len(games)
        for g in order:  # each game's loop
            start = time.perf_counter()
            for action in rows[g]:
                bare_step(ales[g], action)
            seconds[g] = time.perf_counter() - start
        switching = [0.0] * len(games)
        for k in range(steps * processes):  # the share, changing game every agent step
            for g in share:
                start = time.perf_counter()
                bare_step(ales[g], rows[g][k % steps])
                switching[g] += time.perf_counter() - start
        return seconds, switching

    return run


class MixCeiling:
    """``processes`` processes, each with every game of ``games`` (:func:`mix_loop`);
    ``run(round)`` plays a round in all of them at once and keeps each game's seconds per
    agent step (rounds 1 on), in its own loop (``per_round``) and in a share of the suite per
    process, changing game every agent step (``switching``)."""

    def __init__(self, games: Sequence[str], processes: int, config: BenchConfig,
                 steps: int) -> None:
        self.games = tuple(games)
        self.steps = steps
        self.per_round: list[np.ndarray] = []  # seconds per agent step, one per game
        self.switching: list[np.ndarray] = []  # the same, changing game every agent step
        self.loops = LoopProcesses(
            mix_loop, [(self.games, k, processes, config.seed + 1000 * k, config.rounds, steps)
                       for k in range(processes)], "fastatari-bench-mix-ceiling")

    def run(self, round_index: int) -> None:
        replies = self.loops.run(round_index)
        if round_index:
            steps = self.steps * len(replies)
            self.per_round.append(sum(np.array(own) for own, _ in replies) / steps)
            self.switching.append(sum(np.array(switched) for _, switched in replies) / steps)

    def contender(self) -> Contender:
        # measure()'s wall time for it is not used: the per-game seconds are
        return Contender(CEILING, self.steps * len(self.games) * len(self.loops.processes),
                         self.run)

    def close(self) -> None:
        self.loops.close()


# --- The contenders -------------------------------------------------------------------------------


def name_of(pool: str, balance: bool) -> str:
    return f"make_vec, {'balanced' if balance else 'contiguous'}, {pool}"


def sync_steps(config: BenchConfig, num_envs: int) -> int:
    return max(MIN_SYNC_STEPS, config.vector_steps // num_envs)


def game_steps(config: BenchConfig, games: int, processes: int) -> int:
    """Agent steps per game per ceiling process per round: about the contenders' work."""
    return max(MIN_GAME_STEPS, round(config.vector_steps / (games * processes)))


def open_pool(games: Sequence[str], balance: bool, num_workers: int,
              seed: int) -> tuple[Any, float, float]:
    """A pool of ``games`` (one per env), reset; and its construction and reset seconds."""
    from fastatari.vector import make_vec

    start = time.perf_counter()
    env = make_vec(list(games), len(games), num_workers=num_workers, balance=balance,
                   full_action_space=True, repeat_action_probability=0.0, timeout=TIMEOUT)
    built = time.perf_counter()
    try:
        env.reset(seed=seed)
    except BaseException:
        env.close()
        raise
    return env, built - start, time.perf_counter() - built


def pool_contender(env: Any, pool: str, config: BenchConfig, num_workers: int,
                   balance: bool) -> Contender:
    num_envs = env.num_envs
    steps = sync_steps(config, num_envs)
    rows = draw_actions(config.seed, int(env.single_action_space.n), config.rounds, steps,
                        num_envs)

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            env.step(actions)

    how = "cost-balanced" if balance else "contiguous blocks"
    return Contender(name_of(pool, balance), steps * num_envs, run,
                     note=f"sync step, {num_workers} workers, {how}", close=env.close)


# --- Assignment bound ----------------------------------------------------------------------------


def assignment_bound(games: Sequence[str], num_workers: int, balance: bool,
                     us: dict[str, float], table: dict[str, float] | None = None) -> float:
    """Mean worker load ÷ the largest, loads from ``us`` (µs per agent step of each game), for
    the assignment ``make_vec`` makes; balanced by ``table`` (default the shipped one; ``us``
    itself: what a table true to this machine would give)."""
    from fastatari.vector.assignment import assign_workers, make_assignment

    assignment, _ = make_assignment(list(games), len(games), {"full_action_space": True})
    blocks = assign_workers(assignment, num_workers, balance=balance, costs=table)
    loads = np.array([sum(us[games[i]] for i in block) for block in blocks])
    return float(loads.mean() / loads.max())


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ranks = [np.argsort(np.argsort(x)).astype(float) for x in (a, b)]
    return float(np.corrcoef(*ranks)[0, 1])


# --- The section ---------------------------------------------------------------------------------


def multigame_units(config: BenchConfig) -> int:
    """Progress-bar units: one per contender round."""
    return (1 + 2 * len(pools())) * (config.rounds + 1)


def run_multigame(config: BenchConfig, bar: Progress | None) -> MultigameReport:
    """The pools and the mix's ceiling round-robin; every env and process closed whatever
    happens."""
    games = suite()
    cores = usable_cores()
    steps = game_steps(config, len(games), cores)
    assignments = pools()
    report = MultigameReport(cores, cores, len(games),
                             {p: sync_steps(config, len(g)) for p, g in assignments.items()}, steps)
    workers = {p: min(cores, len(g)) for p, g in assignments.items()}
    contenders: list[Contender] = []
    envs: list[Any] = []
    with contextlib.ExitStack() as closing:
        describe(bar, "multigame: pools")
        for pool, assignment in assignments.items():
            for balance in (True, False):
                env = open_pool(assignment, balance, workers[pool], config.seed)[0]
                closing.callback(env.close)
                envs.append(env)
                contenders.append(pool_contender(env, pool, config, workers[pool], balance))
        ceiling = MixCeiling(games, cores, config, steps)
        closing.callback(ceiling.close)
        describe(bar, "multigame: rounds")
        watch = LoadWatch()
        seconds = measure([ceiling.contender(), *contenders], config.rounds, bar)
        report.load = watch.stop()
        report.worker_restarts = sum(env.worker_restarts for env in envs)
    report.switching_ratio = [float(own.sum() / switched.sum())
                              for own, switched in zip(ceiling.per_round, ceiling.switching,
                                                       strict=True)]
    summarise(report, games, assignments, workers, ceiling.per_round, seconds)
    return report


def summarise(report: MultigameReport, games: tuple[str, ...], assignments: dict[str, tuple],
               workers: dict[str, int], per_round: list[np.ndarray],
               seconds: dict[str, list[float]]) -> None:
    from fastatari.vector.assignment import game_costs

    table = game_costs()
    median_s = np.median(np.array(per_round), axis=0)
    us = {g: float(s * 1e6) for g, s in zip(games, median_s, strict=True)}
    report.costs = [GameCost(g, us[g], table.get(g)) for g in games]
    values = np.array(list(us.values()))
    report.cost_spread_us = {"min": float(values.min()), "median": float(np.median(values)),
                             "max": float(values.max()), "mean": float(values.mean())}
    if all(g in table for g in games):
        report.cost_rank_correlation = spearman(values, np.array([table[g] for g in games]))
    index = {g: k for k, g in enumerate(games)}
    for pool, assignment in assignments.items():
        n, w = len(assignment), workers[pool]
        counts = np.bincount([index[g] for g in assignment], minlength=len(games))
        weights = counts / counts.sum()
        sizes = sorted({w, *(m for m in MODEL_WORKERS if m <= n)})
        # the ceiling's seconds per agent step on w cores, round by round
        ceiling = [float(weights @ s) / w for s in per_round]
        mix = rate(ceiling, None)
        report.results.append(MultigameResult(
            CEILING, pool, n, None, w, mix.steps_per_s, mix.frames_per_s, 1.0, 1.0,
            f"{report.ceiling_processes} processes, every game's bare 4× ale.act loop, "
            f"weighted by its share of envs; {w} cores", mix.rounds_steps_per_s))
        for balance in (True, False):
            pooled = rate(seconds[name_of(pool, balance)], ceiling)
            how = "cost-balanced" if balance else "contiguous blocks"
            report.results.append(MultigameResult(
                name_of(pool, balance), pool, n, balance, w, pooled.steps_per_s,
                pooled.frames_per_s, pooled.ratio_to_ceiling,
                assignment_bound(assignment, w, balance, us), f"sync step, {w} workers, {how}",
                pooled.rounds_steps_per_s))
            report.modelled_bound[name_of(pool, balance)] = {
                m: assignment_bound(assignment, m, balance, us) for m in sizes}
        report.modelled_bound[f"balanced by the measured costs, {pool} (model)"] = {
            m: assignment_bound(assignment, m, True, us, table=us) for m in sizes}
        report.balanced_over_contiguous[pool] = median_ratio(seconds[name_of(pool, False)],
                                                             seconds[name_of(pool, True)])


# --- Markdown ------------------------------------------------------------------------------------


def markdown_multigame(report: MultigameReport, config: dict[str, Any]) -> str:
    rows = [[r.pool, r.system, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
             f"{r.ratio_to_ceiling:.2f}" if r.balance is not None else "—",
             f"{r.assignment_bound:.2f}" if r.balance is not None else "—", r.note]
            for r in report.results]
    table = markdown_table(["pool", "system", "steps/s", "frames/s", "ratio to ceiling",
                            "assignment bound", "note"], rows)
    balanced = " · ".join(f"{pool}: **{value:.2f}×**"
                          for pool, value in report.balanced_over_contiguous.items())
    model_sizes = sorted({m for bounds in report.modelled_bound.values() for m in bounds})
    model = markdown_table(
        ["pool", *[f"W={m}" for m in model_sizes]],
        [[name, *[f"{bounds[m]:.2f}" if m in bounds else "—" for m in model_sizes]]
         for name, bounds in report.modelled_bound.items()])
    spread = report.cost_spread_us
    by_cost = sorted(report.costs, key=lambda c: c.us_per_step)
    costs = (f"Per-game cost (the ceiling's loops, median over rounds): min "
             f"{spread['min']:,.0f} µs ({by_cost[0].game}), median {spread['median']:,.0f} µs, "
             f"mean {spread['mean']:,.0f} µs, max {spread['max']:,.0f} µs "
             f"({by_cost[-1].game}) per agent step, max ÷ min "
             f"{spread['max'] / spread['min']:.1f}×; Spearman rank correlation with "
             f"`game_costs.json` (what the balanced assignment uses): "
             f"{report.cost_rank_correlation:.2f}.")
    switching = ""
    if report.switching_ratio:
        rounds = ", ".join(f"{r:.2f}" for r in report.switching_ratio)
        switching = (
            "Many games at once, bare: the ceiling's processes also split the suite (game g to "
            f"process g mod {report.ceiling_processes}) and play their share going to the next "
            "game after every agent step, as the workers of the N=57 pool do, without "
            "preprocessing or transport; that runs at "
            f"**{statistics.median(report.switching_ratio):.2f}** of the suite's ceiling "
            f"(per round: {rounds}): what the emulator itself pays for playing many games at "
            "once (caches and branch predictors that each game's code fills its own way), which "
            "no assignment of one env per game avoids. The balanced "
            "assignment steps each game's envs in a row, where a worker has several.")
    steps = ", ".join(f"{pool}: {s}" for pool, s in report.sync_steps_per_round.items())
    return "\n\n".join([
        f"### Several games in one vector env (Atari-{report.games})",
        f"`fastatari.suites.ATARI_{report.games}` once (N=57) and twice (N=114), and "
        "`fastatari.suites.ATARI_5` with each game's 4 envs in a row (N=20); "
        "`full_action_space=True`, sticky actions off, random actions, sync `step` "
        f"(sync steps per round: {steps}); balanced = `balance=True` (by "
        "`game_costs.json`, longest first, each game's envs kept together), contiguous = "
        "`balance=False`. The ceiling: every "
        "game's bare 4× `ale.act` loop (random actions from its full action set, no "
        f"preprocessing), in {report.ceiling_processes} processes in parallel, "
        f"{report.game_steps_per_round} agent steps per game per process per round, "
        "round-robin over the games; a mix's ceiling on W cores is W ÷ (mean over envs of "
        "their game's seconds per step). Ratios are per round against the same round's "
        "ceiling, median. Assignment bound: mean worker load ÷ the largest, with the "
        "measured per-game costs (what a sync step could reach with free transport).",
        table,
        f"Balanced ÷ contiguous, per round, median: {balanced}",
        "Assignment bound at W workers, with the measured per-game costs: the pools' "
        "assignments (balanced by `game_costs.json`, contiguous), and a model that balances "
        "by the measured costs themselves (what a table true to this machine would "
        "give):\n\n" + model,
        costs,
        *([switching] if switching else []),
        load_line(report.load, "the rounds", f"worker restarts: {report.worker_restarts}"),
    ])


SECTION = Section(
    "multigame", "pools of the Atari-57 games (cost-balanced and contiguous) against the "
    "ceiling of their mix, and the assignment bound", markdown_multigame,
    plan=lambda config: Work(multigame_units(config), lambda bar: run_multigame(config, bar)))
