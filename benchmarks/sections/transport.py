"""The ``transport`` section: what the vector env's transport alone costs the trainer.

**Workers that do not emulate.** For each ``num_workers`` in ``TRANSPORT_WORKERS`` (with
``ENVS_PER_WORKER`` envs each) a vector env is stepped synchronously, and the trainer's wall
time per ``step`` is all transport: publishing the envs' ops, the workers waking, taking them
and completing each env, the trainer's wait and its reading of the result columns
(observations copied out, as ``copy=True`` does). The env is the vector env over a worker pool
whose games are :class:`~benchmarks.stand_in.StandInGame` (:func:`open_stand_in`:
``WorkerPool(plan, game_factory=STAND_IN)``, the pool's own seam): a step of one env returns at
once, and the worker writes its results as it does any env's. Everything else in the worker is
the real one: its start, its command loop, its waits. The first round checks that the
observations are still the shared memory's zeros, i.e. that no worker emulated.

**The emulation ceiling per core** is measured in the same rounds: ``e``, one agent step
(``FRAME_SKIP`` bare ``ale.act`` calls) of one env on one core, in this process.

**The model.** At ``C`` cores with one worker per core and ``k = ENVS_PER_WORKER`` envs per
worker, a sync step costs the trainer ``E + T(C)``: ``E = k·e``, the emulation of the ``k``
envs every core steps (all cores in parallel), plus the transport ``T``, which a sync step does
not overlap with emulation (commands go out before the workers emulate, replies come back
after). ``T(W) = a + b·W`` µs is fitted to the measured medians by least squares on relative
residuals (``T`` spans two orders of magnitude over the counts). The ceiling does ``E`` per step
with no transport, so the expected ratio to it is ``E / (E + T(C))``. Two caveats, both stated
with the table: the additive model is conservative (in a real step the trainer handles the first
replies while later workers still emulate); and where the machine has fewer cores than workers
and the trainer, ``T(W)`` includes them sharing the cores, so ``b`` fitted over every count
overstates what a machine with a core per worker pays: there the line is fitted a second time
over the counts that leave a core per worker and one for the trainer (when there are two or
more). ``C`` above the largest count a line was fitted on is extrapolated.
"""
from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.load import LoadWatch, load_line
from benchmarks.stand_in import STAND_IN
from fastatari.bench.harness import (
    TIMEOUT,
    BenchConfig,
    Contender,
    Progress,
    Section,
    Work,
    bare_loop,
    draw_actions,
    markdown_table,
    measure,
    usable_cores,
)
from fastatari.bench.systems import Opened, opened

__all__ = ["SECTION", "TRANSPORT_WORKERS", "TransportFit", "TransportReport", "TransportResult",
           "markdown_transport", "open_stand_in", "run_transport", "transport_units"]

TRANSPORT_WORKERS = (1, 2, 4, 8, 16, 32)
ENVS_PER_WORKER = 2
MODEL_CORES = (16, 64)
CEILING_ONE_CORE = "raw ALE, 1 core"

@dataclass
class TransportResult:
    num_workers: int
    num_envs: int
    us_per_step: float  # trainer wall time per sync step, median over rounds
    expected_ratio: float  # E / (E + T(W)) with the measured T(W), as if W cores
    rounds_us: list[float]


@dataclass
class TransportFit:
    """T(W) = a + b·W fitted to the medians at ``workers``, and the model's ratios."""

    over: str  # which worker counts, in words
    workers: list[int]
    intercept_us: float  # a
    slope_us: float  # b: µs per worker
    predicted_ratio: dict[int, float]  # cores → E / (E + T(C))


@dataclass
class TransportReport:
    usable_cores: int
    envs_per_worker: int
    steps_per_round: int  # sync steps per round, for every worker count
    emulation_us: float  # e: one env's agent step on one core, median over rounds
    rounds_emulation_us: list[float]
    results: list[TransportResult] = field(default_factory=list)
    fits: list[TransportFit] = field(default_factory=list)
    load: dict[str, float] = field(default_factory=dict)  # LoadWatch.stop()
    worker_restarts: int = 0


def open_stand_in(config: BenchConfig, num_envs: int, num_workers: int,
                  **keywords: Any) -> Opened:
    """The vector env of ``num_envs`` envs of the config's game on ``num_workers`` workers
    whose games do not emulate (:mod:`benchmarks.stand_in`), reset; ``keywords``:
    ``make_vec``'s (``copy``, ``timeout``: ``TIMEOUT`` unless given)."""
    from fastatari.vector import AtariVectorEnv, plan_vec
    from fastatari.vector.pool import WorkerPool

    plan = plan_vec(config.game, num_envs, num_workers=num_workers,
                    repeat_action_probability=0.0, **{"timeout": TIMEOUT, **keywords})
    env = AtariVectorEnv(plan, WorkerPool(plan, game_factory=STAND_IN))
    return opened(env, num_envs, lambda: env.reset(seed=config.seed),
                  pids=list(env.worker_pids))


def one_core_ceiling(config: BenchConfig, steps: int) -> Contender:
    """The ceiling on one core: a bare loop of ``steps`` agent steps per round, here."""
    return Contender(CEILING_ONE_CORE, steps,
                     bare_loop(config.game, config.seed, config.rounds, steps),
                     note="one bare 4× ale.act loop in the main process")


def check_stand_in(obs: Any, what: str) -> None:
    """The observations of a stand-in env are the shared memory's zeros, or a worker
    emulated (its game factory was not honoured)."""
    if np.asarray(obs).any():
        raise RuntimeError(f"{what}: the observations changed: the workers emulated")


def steps_per_round(config: BenchConfig) -> int:
    """Sync steps per round, the same for every worker count (so each gets enough samples)."""
    return max(1, config.vector_steps // 4)


def transport_units(config: BenchConfig) -> int:
    """Progress-bar units: one per contender round."""
    return (len(TRANSPORT_WORKERS) + 1) * (config.rounds + 1)


def name_of(num_workers: int) -> str:
    return f"transport, {num_workers} workers"


def transport_contender(config: BenchConfig, num_workers: int) -> tuple[Contender, Any]:
    """A stand-in env of ``num_workers`` workers (:func:`open_stand_in`), reset, and the
    contender that steps it; and the env."""
    num_envs = ENVS_PER_WORKER * num_workers
    env = open_stand_in(config, num_envs, num_workers)
    calls = steps_per_round(config)
    rows = draw_actions(config.seed, env.num_actions, config.rounds, calls, num_envs)

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            obs = env.step(actions)[0]
        if round_index == 0:
            check_stand_in(obs, name_of(num_workers))

    contender = Contender(name_of(num_workers), calls, run, note=f"{num_envs} envs, sync step",
                          close=env.close)
    return contender, env.env


def run_transport(config: BenchConfig, bar: Progress | None) -> TransportReport:
    """Time every worker count and the one-core emulation loop round-robin; fit and model."""
    contenders = [one_core_ceiling(config, steps_per_round(config))]
    envs = []
    with contextlib.ExitStack() as closing:
        for num_workers in TRANSPORT_WORKERS:
            contender, env = transport_contender(config, num_workers)
            closing.callback(contender.close)
            contenders.append(contender)
            envs.append(env)
        watch = LoadWatch()
        seconds = measure(contenders, config.rounds, bar)
        load = watch.stop()
        restarts = sum(env.worker_restarts for env in envs)
    return transport_report(config, seconds, load, restarts)


def transport_report(config: BenchConfig, seconds: dict[str, list[float]],
                     load: dict[str, float], restarts: int) -> TransportReport:
    emulation_rounds = [s * 1e6 for s in seconds[CEILING_ONE_CORE]]
    e = statistics.median(emulation_rounds)
    big_e = ENVS_PER_WORKER * e
    medians = {w: statistics.median(s * 1e6 for s in seconds[name_of(w)])
               for w in TRANSPORT_WORKERS}
    cores = usable_cores()
    report = TransportReport(cores, ENVS_PER_WORKER, steps_per_round(config), e,
                             emulation_rounds, load=load, worker_restarts=restarts)
    for w, us in medians.items():
        report.results.append(TransportResult(w, ENVS_PER_WORKER * w, us, big_e / (big_e + us),
                                              [s * 1e6 for s in seconds[name_of(w)]]))
    report.fits.append(fit_line("all worker counts", medians, big_e))
    # a core for every worker and one for the trainer: no sharing
    own_core = {w: us for w, us in medians.items() if w < cores}
    if len(own_core) < len(medians) and len(own_core) >= 2:
        report.fits.append(fit_line(f"a core per worker and the trainer (W < {cores})",
                                    own_core, big_e))
    return report


def fit_line(over: str, medians: dict[int, float], big_e: float) -> TransportFit:
    workers, us = np.array(list(medians), float), np.array(list(medians.values()))
    # relative residuals: T spans two orders of magnitude, and the small counts matter as much
    slope, intercept = np.polyfit(workers, us, 1, w=1.0 / us)
    predicted = {c: big_e / (big_e + max(0.0, float(intercept + slope * c)))
                 for c in MODEL_CORES}
    return TransportFit(over, list(medians), float(intercept), float(slope), predicted)


def markdown_transport(report: TransportReport, config: dict[str, Any]) -> str:
    k, e = report.envs_per_worker, report.emulation_us
    big_e = k * e
    rows = [[str(r.num_workers), str(r.num_envs), f"{r.us_per_step:,.0f}",
             f"{r.us_per_step / r.num_workers:,.1f}", f"{r.expected_ratio:.2f}"]
            for r in report.results]
    table = markdown_table(["num_workers W", "num_envs", "µs/step T(W)", "µs/step per worker",
                            "E/(E+T(W))"], rows)
    lines = []
    for fit in report.fits:
        largest = max(fit.workers)
        predicted = " · ".join(f"{c} cores: **{ratio:.2f}**"
                               + (" (extrapolated)" if c > largest else "")
                               for c, ratio in fit.predicted_ratio.items())
        lines.append(f"- fit over {fit.over}: T(W) = {fit.intercept_us:,.1f} + "
                     f"{fit.slope_us:,.2f}·W µs; expected ratio {predicted}")
    oversubscribed = [r.num_workers for r in report.results
                      if r.num_workers >= report.usable_cores]
    caveat = (f" This machine has {report.usable_cores} usable cores: at "
              f"{', '.join(map(str, oversubscribed))} workers T(W) includes the workers and "
              "the trainer sharing them, so the fit over all counts overstates what a machine "
              "with a core per worker pays." if oversubscribed else "")
    return "\n\n".join([
        "### Transport (workers that do not emulate)",
        f"Sync `step` of {k} envs per worker, {report.steps_per_round:,} steps per round; the "
        "workers run fastatari's real boot, command loop and waits, over games that do not "
        "emulate (`WorkerPool(plan, game_factory=STAND_IN)`: a step returns at once), so the "
        "trainer's wall time per step is the transport's cost T(W). Medians over rounds, "
        "round-robin with a "
        f"bare 4× `ale.act` loop on one core: e = {e:,.0f} µs per env step.",
        table,
        f"Model: at C cores, one worker per core and {k} envs each, a sync step costs "
        f"E + T(C), with E = {k}·e = {big_e:,.0f} µs of emulation (all cores in parallel) and "
        "T(C) the transport, which a sync step does not overlap with emulation; the ceiling "
        "costs E, so the expected ratio to it is E / (E + T(C)), T fitted as a + b·W. "
        "Conservative: a real step handles the first replies while later workers still "
        "emulate." + caveat + "\n\n" + "\n".join(lines),
        load_line(report.load, "the section", f"worker restarts: {report.worker_restarts}"),
    ])


SECTION = Section(
    "transport", "the vector env's transport alone (workers that do not emulate) against the "
    "number of workers, and a model of its cost at more cores", markdown_transport,
    plan=lambda config: Work(transport_units(config), lambda bar: run_transport(config, bar)))
