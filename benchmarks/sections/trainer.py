"""The ``trainer`` section: what a sync ``step`` costs the trainer's own thread.

**What is measured.** The trainer thread's CPU time per ``step`` (``getrusage(RUSAGE_THREAD)``,
user + sys) and its context switches (voluntary + involuntary), around a loop of ``step`` calls
in the main thread; wall time beside them. CPU time, not wall time: while the trainer sleeps
waiting for the workers it spends nothing, so the figure is its own work (writing the actions,
publishing the step, the wait's spin and wake-up, reading the results, the copies of
``copy=True``), whatever the core count.

**The grid.** Transport only (:func:`~benchmarks.sections.transport.open_stand_in`: workers
whose games do not emulate) at N = 2·W and N = ``SHARED_ENVS`` for W in ``TRANSPORT_WORKERS``,
and N in ``SWEEP_ENVS`` at W = ``SWEEP_WORKERS``, each with ``copy=False`` and ``copy=True``;
real emulation at ``EMULATION_POINTS``, ``copy=False``. ``--quick`` keeps ``QUICK_TRANSPORT``
and ``QUICK_EMULATION``.

**The fit.** Over the transport-only rows of each ``copy``, by least squares on the medians:
µs = a + b·W + c·N, the fixed cost, the cost per worker and per env, with the largest residual.

**How.** The grid's worker processes do not fit in memory at once: rows are timed in groups of
envs open together (at most ``MAX_LIVE_WORKERS`` workers, a (W, N) point's rows always in one
group), round-robin within the group. Each env is opened and reset before its group's rounds
and round 0 is an untimed warm-up, so start-up is out of the timing. Medians over rounds.
Linux only (``RUSAGE_THREAD``).
"""
from __future__ import annotations

import contextlib
import math
import os
import resource
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from benchmarks.load import LoadWatch, load_line
from benchmarks.sections.transport import check_stand_in, open_stand_in
from fastatari.bench.harness import (
    TIMEOUT,
    BenchConfig,
    Progress,
    Section,
    Work,
    advance,
    describe,
    draw_actions,
    markdown_table,
    usable_cores,
)
from fastatari.bench.systems import Opened, open_vector

__all__ = ["SECTION", "Row", "TrainerFit", "TrainerReport", "TrainerResult", "fit_costs",
           "grid", "groups", "markdown_trainer", "run_trainer", "summarise"]

TRANSPORT_WORKERS = (1, 2, 4, 8, 16, 32, 64)
SHARED_ENVS = 64  # N at every W, beside N = 2·W
SWEEP_WORKERS, SWEEP_ENVS = 2, (8, 64, 256, 1024)
EMULATION_POINTS = ((8, 1), (8, 2), (64, 2), (64, 16), (256, 2))  # (N, W), copy=False
QUICK_TRANSPORT = ((2, 1), (8, 2), (64, 2), (16, 8))  # (N, W)
QUICK_EMULATION = ((8, 2),)
MAX_LIVE_WORKERS = 136  # worker processes open at once
ENVS_PER_WORKER_IN_TIMEOUT = 64  # a worker's start gets TIMEOUT per this many envs


@dataclass(frozen=True)
class Row:
    """One row of the grid: an env of ``num_envs`` envs on ``num_workers`` workers."""

    num_workers: int
    num_envs: int
    copy: bool
    emulate: bool

    @property
    def kind(self) -> str:
        return "emulation" if self.emulate else "transport"

    @property
    def name(self) -> str:
        return f"{self.kind}, W={self.num_workers}, N={self.num_envs}, copy={self.copy}"


@dataclass
class TrainerResult:
    num_workers: int
    num_envs: int
    copy: bool
    emulate: bool
    steps_per_round: int
    cpu_us: float  # the trainer thread's user + sys µs per step, median over rounds
    switches: float  # context switches per step, voluntary + involuntary, median
    wall_us: float  # wall µs per step, median
    rounds_cpu_us: list[float]

    @property
    def kind(self) -> str:
        return "emulation" if self.emulate else "transport"


@dataclass
class TrainerFit:
    """µs = a + b·W + c·N, least squares over the medians of ``rows`` rows."""

    over: str  # which rows, in words
    copy: bool
    rows: int
    fixed_us: float  # a
    per_worker_us: float  # b
    per_env_us: float  # c
    max_residual_us: float  # the largest |measured − fitted|

    def predict(self, num_workers: int, num_envs: int) -> float:
        return self.fixed_us + self.per_worker_us * num_workers + self.per_env_us * num_envs


@dataclass
class TrainerReport:
    usable_cores: int
    cpu_count: int
    groups: int  # groups of envs open together
    results: list[TrainerResult] = field(default_factory=list)
    fits: list[TrainerFit] = field(default_factory=list)
    load: dict[str, float] = field(default_factory=dict)  # the busiest group's LoadWatch.stop()
    load_group: str = ""  # which group that was
    worker_restarts: int = 0


# --- The grid ------------------------------------------------------------------------------------


def transport_points() -> list[tuple[int, int]]:
    """The full grid's transport (N, W) points, by W then N, each once."""
    points = [(n, w) for w in TRANSPORT_WORKERS for n in (2 * w, SHARED_ENVS)]
    points += [(n, SWEEP_WORKERS) for n in SWEEP_ENVS]
    return sorted(dict.fromkeys(points), key=lambda point: (point[1], point[0]))


def grid(quick: bool) -> list[Row]:
    """Every row: transport points with copy False and True, then the emulation points."""
    transport = QUICK_TRANSPORT if quick else transport_points()
    emulation = QUICK_EMULATION if quick else EMULATION_POINTS
    rows = [Row(w, n, copy, False) for n, w in transport for copy in (False, True)]
    return rows + [Row(w, n, False, True) for n, w in emulation]


def groups(rows: list[Row], max_workers: int = MAX_LIVE_WORKERS) -> list[list[Row]]:
    """Consecutive rows in groups of at most ``max_workers`` workers (more only for a point
    that alone has more); the rows of one (W, N, kind) point stay together."""
    points: dict[tuple[int, int, bool], list[Row]] = {}
    for row in rows:
        points.setdefault((row.num_workers, row.num_envs, row.emulate), []).append(row)
    out: list[list[Row]] = []
    live = 0
    for point in points.values():
        workers = sum(row.num_workers for row in point)
        if not out or live + workers > max_workers:
            out.append([])
            live = 0
        out[-1].extend(point)
        live += workers
    return out


def steps_per_round(config: BenchConfig, row: Row) -> int:
    """Transport: ``vector_steps // 8`` steps; emulation: ``vector_steps`` agent steps of
    emulation (at least 4 sync steps)."""
    if row.emulate:
        return max(4, config.vector_steps // row.num_envs)
    return max(8, config.vector_steps // 8)


# --- Measuring -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One round of one row, per step."""

    cpu_us: float
    switches: float
    wall_us: float


def thread_usage() -> tuple[float, float, int]:
    """The calling thread's (user s, sys s, context switches) so far."""
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime, usage.ru_stime, usage.ru_nvcsw + usage.ru_nivcsw


def open_row(config: BenchConfig, row: Row) -> Opened:
    """The row's env, reset; a worker's start gets more time when it owns many envs."""
    per_worker = math.ceil(row.num_envs / row.num_workers)
    timeout = TIMEOUT * max(1, math.ceil(per_worker / ENVS_PER_WORKER_IN_TIMEOUT))
    if row.emulate:
        return open_vector("fastatari", config.rom, row.num_envs, row.num_workers, config.seed,
                           copy=row.copy, timeout=timeout)
    return open_stand_in(config, row.num_envs, row.num_workers, copy=row.copy, timeout=timeout)


def stepper(config: BenchConfig, row: Row, opened: Opened) -> Callable[[int], Sample]:
    """``run(round)``: the round's sync steps, timed by the trainer thread's usage. Round 0
    also checks that a transport-only env's observations are still zeros (no worker
    emulated)."""
    steps = steps_per_round(config, row)
    rows = draw_actions(config.seed, opened.num_actions, config.rounds, steps, row.num_envs)
    step = opened.step

    def run(round_index: int) -> Sample:
        obs = None
        user, system, switches = thread_usage()
        start = time.perf_counter()
        for actions in rows[round_index]:
            obs = step(actions)[0]
        wall = time.perf_counter() - start
        user_end, system_end, switches_end = thread_usage()
        if round_index == 0 and not row.emulate:
            check_stand_in(obs, row.name)
        # user + sys: exact together (the scheduler's clock); split by tick samples, so apart
        # they mean little over a short round
        cpu = (user_end - user) + (system_end - system)
        return Sample(cpu * 1e6 / steps, (switches_end - switches) / steps, wall * 1e6 / steps)

    return run


def run_group(config: BenchConfig, rows: list[Row], bar: Progress | None,
              samples: dict[Row, list[Sample]]) -> tuple[dict[str, float], int]:
    """Open the group's envs, time their rounds round-robin into ``samples``, close them;
    returns the other processes' load meanwhile and the worker restarts."""
    with contextlib.ExitStack() as closing:
        runs, envs = [], []
        for row in rows:
            describe(bar, f"trainer: opening {row.name}")
            opened = open_row(config, row)
            closing.callback(opened.close)
            runs.append(stepper(config, row, opened))
            envs.append(opened.env)
        describe(bar, f"trainer: {len(rows)} rows, {sum(r.num_workers for r in rows)} workers")
        watch = LoadWatch()
        for round_index in range(config.rounds + 1):
            for row, run in zip(rows, runs, strict=True):
                sample = run(round_index)
                if round_index:
                    samples.setdefault(row, []).append(sample)
                advance(bar, 1)
        load = watch.stop()
        return load, sum(env.worker_restarts for env in envs)


def run_trainer(config: BenchConfig, bar: Progress | None) -> TrainerReport:
    if not hasattr(resource, "RUSAGE_THREAD"):
        raise RuntimeError("the trainer section needs RUSAGE_THREAD (Linux)")
    planned = groups(grid(config.quick))
    samples: dict[Row, list[Sample]] = {}
    loads: dict[str, dict[str, float]] = {}
    restarts = 0
    for rows in planned:
        title = f"{rows[0].name} … {rows[-1].name}" if len(rows) > 1 else rows[0].name
        loads[title], group_restarts = run_group(config, rows, bar, samples)
        restarts += group_restarts
    report = summarise(config, samples)
    report.groups = len(planned)
    report.load_group, report.load = max(loads.items(),
                                         key=lambda item: item[1]["other_cores"])
    report.worker_restarts = restarts
    return report


# --- Summary -------------------------------------------------------------------------------------


def summarise(config: BenchConfig, samples: dict[Row, list[Sample]]) -> TrainerReport:
    """Medians per row, in the grid's order, and a fit per ``copy`` over the transport rows."""
    report = TrainerReport(usable_cores(), os.cpu_count() or 0, groups=0)
    for row, rounds in samples.items():
        def median(name: str, rounds: list[Sample] = rounds) -> float:
            return statistics.median(getattr(sample, name) for sample in rounds)

        report.results.append(TrainerResult(
            row.num_workers, row.num_envs, row.copy, row.emulate,
            steps_per_round(config, row), median("cpu_us"), median("switches"),
            median("wall_us"), [sample.cpu_us for sample in rounds]))
    for copy in (False, True):
        fit = fit_costs([r for r in report.results if not r.emulate and r.copy == copy],
                        f"transport only, copy={copy}", copy)
        if fit is not None:
            report.fits.append(fit)
    return report


def fit_costs(results: list[TrainerResult], over: str, copy: bool) -> TrainerFit | None:
    """µs = a + b·W + c·N by least squares (``numpy.linalg.lstsq``) over the results' medians;
    None where they do not determine the three (fewer than 3 rows, or W and N in line)."""
    if len(results) < 3:
        return None
    design = np.array([[1.0, r.num_workers, r.num_envs] for r in results])
    us = np.array([r.cpu_us for r in results])
    coefficients, _, rank, _ = np.linalg.lstsq(design, us, rcond=None)
    if rank < 3:
        return None
    residuals = us - design @ coefficients
    a, b, c = (float(value) for value in coefficients)
    return TrainerFit(over, copy, len(results), a, b, c, float(np.abs(residuals).max()))


# --- Markdown ------------------------------------------------------------------------------------


def trainer_table(report: TrainerReport) -> str:
    fits = {fit.copy: fit for fit in report.fits}
    rows = []
    for r in report.results:
        fit = None if r.emulate else fits.get(r.copy)
        rows.append([r.kind, str(r.copy), str(r.num_workers), str(r.num_envs),
                     f"{r.steps_per_round:,}", f"{r.cpu_us:,.1f}",
                     f"{r.switches:.2f}", f"{r.wall_us:,.0f}",
                     f"{r.cpu_us / r.wall_us:.2f}" if r.wall_us else "—",
                     f"{fit.predict(r.num_workers, r.num_envs):,.1f}" if fit else "—"])
    return markdown_table(["workers", "copy", "W", "N", "steps/round", "trainer CPU µs/step",
                           "ctx switches/step", "wall µs/step",
                           "CPU ÷ wall", "fit µs"], rows)


def fit_lines(report: TrainerReport) -> str:
    if not report.fits:
        return "No fit: fewer than 3 transport rows with W and N not in line."
    return "\n".join(
        f"- {fit.over} ({fit.rows} rows): trainer CPU µs/step = {fit.fixed_us:,.2f} "
        f"{signed(fit.per_worker_us, 3)}·W {signed(fit.per_env_us, 4)}·N (fixed + per worker "
        f"+ per env); residuals: max |r| = {fit.max_residual_us:,.2f} µs"
        for fit in report.fits)


def signed(value: float, digits: int) -> str:
    """``+ 1.500`` or ``− 1.500``: a term of a sum."""
    return f"{'−' if value < 0 else '+'} {abs(value):,.{digits}f}"


def markdown_trainer(report: TrainerReport, config: dict[str, Any]) -> str:
    shared = sorted({r.num_workers for r in report.results
                     if r.num_workers >= report.usable_cores})
    caveat = (f" At W ≥ {report.usable_cores} the workers and the trainer share the cores: "
              "the trainer is preempted and woken more, which shows in its context switches."
              if shared else "")
    return "\n\n".join([
        "### Trainer CPU per sync step",
        "The trainer thread's CPU time (`getrusage(RUSAGE_THREAD)`, user + sys) and context "
        "switches (voluntary + involuntary) per sync `step`, around a loop of `step` calls in "
        "the main thread; wall time beside. transport: workers whose games do not emulate "
        "(`WorkerPool(plan, game_factory=STAND_IN)`); emulation: the real game. Machine: "
        f"{report.usable_cores} usable cores (of {report.cpu_count}). Medians over "
        f"{config['rounds']} rounds, round-robin within {report.groups} group(s) of envs open "
        f"together (at most {MAX_LIVE_WORKERS} workers); each env opened and reset before its "
        "group's rounds and round 0 untimed, so start-up is out of the timing." + caveat,
        trainer_table(report),
        "Least squares over the medians (`numpy.linalg.lstsq`):\n\n" + fit_lines(report),
        load_line(report.load, f"the busiest group ({report.load_group})",
                  f"worker restarts: {report.worker_restarts}"),
    ])


def trainer_units(config: BenchConfig) -> int:
    """Progress-bar units: one per row's round."""
    return len(grid(config.quick)) * (config.rounds + 1)


SECTION = Section(
    "trainer", "the trainer thread's CPU time and context switches per sync step against "
    "workers and envs (transport only and emulating, copy or views), and a fit: fixed + per "
    "worker + per env", markdown_trainer,
    plan=lambda config: Work(trainer_units(config), lambda bar: run_trainer(config, bar)))
