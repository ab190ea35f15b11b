"""The ``vector`` section: whole vector envs side by side, in bounded time.

Five measurements, all with Breakout-style settings (sticky actions off, frame skip 4, 84×84
gray, stack 4, noop_max 30, no reward clipping, no fire reset, no episodic life) and random
actions drawn in advance from a seeded generator:

1. **throughput** at ``VECTOR_ENVS`` envs, sync ``step``: the raw-ALE ceiling, fastatari's
   ``make_vec``, gymnasium's ``AsyncVectorEnv`` over the reference pipeline, ale_py's
   ``AtariVectorEnv`` and EnvPool (when importable);
2. **scaling** over ``num_envs``: one group of interleaved rounds per N, the ceiling measured
   again in each group (gymnasium's async env only up to ``GYM_ASYNC_MAX_ENVS``: it runs one
   process per env);
3. **start-up and memory** at ``STARTUP_ENVS`` envs, each system in a fresh interpreter
   (:mod:`fastatari.bench.fresh`), so that import costs and memory are comparable;
4. **async against sync** with a simulated policy of ``POLICY_SECONDS`` per batch;
5. **async against EnvPool's async**: ``send``/``recv`` of ``ENVPOOL_ASYNC_BATCH`` envs out of
   ``ENVPOOL_ASYNC_ENVS`` (3 batches), fastatari's and EnvPool's (``async_reset``, ``recv``,
   ``send(actions, env_id)``) with as many threads as fastatari has workers, each with no
   policy and with a ``POLICY_SECONDS`` sleep per batch, all four in the same rounds.

The ceiling is measured, not multiplied: one bare ``ale.act`` loop per usable core, each in
its own process, all started together (:class:`fastatari.bench.ceiling.ParallelCeiling`); a
round's rate is all their steps over the wall time of the slowest. One core's loop in the main
process (and that × cores) is reported beside it. Every env, thread pool and process is closed
even when a round raises.
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from fastatari.bench import fresh
from fastatari.bench.ceiling import ParallelCeiling
from fastatari.bench.harness import (
    CEILING_ONE_CORE,
    RATE_HEADER,
    TIMEOUT,
    BenchConfig,
    Contender,
    Plan,
    Progress,
    Section,
    advance,
    describe,
    draw_vector_actions,
    markdown_table,
    measure,
    median_ratio,
    one_core_ceiling,
    rate,
    rate_rows,
)
from fastatari.bench.load import LoadWatch, not_idle_warning
from fastatari.bench.systems import (
    Opened,
    envpool_version,
    gymnasium_env_id,
    open_ale_vector,
    open_envpool,
    open_fastatari,
    open_gymnasium_async,
)
from fastatari.core.games import resolve_game
from fastatari.vector.placement import usable_cores

VECTOR_ENVS = 8
GYM_ASYNC_MAX_ENVS = 16
STARTUP_ENVS = 16
ASYNC_ENVS, ASYNC_BATCH = 16, 8
POLICY_SECONDS = 0.002
ENVPOOL_ASYNC_BATCH = 8
ENVPOOL_ASYNC_ENVS = 3 * ENVPOOL_ASYNC_BATCH

CEILING = "raw ALE ceiling"  # one bare loop per core, in parallel processes
CEILING_TIMES_CORES = "raw ALE, 1 core × cores"
FASTATARI = "fastatari make_vec"
GYM_ASYNC = "gymnasium AsyncVectorEnv"
ALE_VECTOR = "ale_py AtariVectorEnv"
ENVPOOL = "EnvPool"
SYSTEMS = (FASTATARI, ALE_VECTOR, ENVPOOL, GYM_ASYNC)  # the scaling table's columns
# each system's name for fastatari/bench/fresh.py
FRESH_NAMES = {FASTATARI: "fastatari", GYM_ASYNC: "gymnasium", ALE_VECTOR: "ale_py",
               ENVPOOL: "envpool"}


@dataclass
class VectorResult:
    system: str
    num_envs: int
    steps_per_s: float
    frames_per_s: float
    ratio_to_ceiling: float  # per round against the ceiling of the same round, median
    note: str
    rounds_steps_per_s: list[float]


@dataclass
class StartupResult:
    system: str
    num_envs: int
    startup_s: float  # construction + reset(), median over fresh interpreters
    import_s: float
    processes: int  # the main process and every process below it
    main_rss_delta_mb: float  # VmRSS of the main process after reset − before construction
    children_rss_mb: float  # full VmRSS of every process below the main one
    total_rss_mb: float  # the two above
    pss_mb: float  # the same, with shared pages split among processes (no double counting)
    rounds_startup_s: list[float]


@dataclass
class VectorReport:
    usable_cores: int
    envpool: str | None  # version, None if not importable
    throughput: list[VectorResult] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)  # "a / b": per-round median
    scaling: list[VectorResult] = field(default_factory=list)
    startup: list[StartupResult] = field(default_factory=list)
    async_policy: list[VectorResult] = field(default_factory=list)
    async_speedups: dict[str, float] = field(default_factory=dict)
    envpool_async: list[VectorResult] = field(default_factory=list)  # fastatari's and EnvPool's
    envpool_async_ratios: dict[str, float] = field(default_factory=dict)  # policy → ratio
    load: dict[str, dict[str, float]] = field(default_factory=dict)  # group → LoadWatch.stop()
    skipped: dict[str, str] = field(default_factory=dict)
    plot: str | None = None


def busy_policy() -> None:
    """A policy that holds a core, as CPU inference does (a sleep would lend it to the envs)."""
    end = time.perf_counter() + POLICY_SECONDS
    while time.perf_counter() < end:
        pass


def sleep_policy() -> None:
    """A policy that frees the core, as waiting on an accelerator roughly does."""
    time.sleep(POLICY_SECONDS)


def sync_contender(name: str, opened: Opened, config: BenchConfig, note: str,
                   policy: Callable[[], None] | None = None) -> Contender:
    """Random actions through ``step`` (autoreset inside); ``policy`` after each step."""
    num_envs = opened.num_envs
    steps = max(1, config.vector_steps // num_envs)
    rows = draw_vector_actions(config, opened.num_actions, (steps, num_envs))
    step = opened.step

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            step(actions)
            if policy is not None:
                policy()

    return Contender("vector", name, steps * num_envs, run, note=note, close=opened.close)


def async_contender(name: str, opened: Opened, config: BenchConfig, note: str,
                    policy: Callable[[], None] | None) -> Contender:
    """Receive the first batch to finish, run the policy (if any), send its actions back,
    while the other envs keep emulating. Any env with fastatari's ``send``/``recv``
    (``info["env_id"]``): fastatari's, EnvPool's."""
    env = opened.env
    batch = opened.batch_size or opened.num_envs
    recvs = max(1, config.vector_steps // batch)
    rows = draw_vector_actions(config, opened.num_actions, (recvs, batch))
    if not opened.sending:  # the first contender on this env starts every env stepping
        env.send(draw_vector_actions(config, opened.num_actions, (opened.num_envs,))[0])
        opened.sending = True

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            info = env.recv()[4]
            if policy is not None:
                policy()
            env.send(actions, info["env_id"])

    return Contender("vector", name, recvs * batch, run, note=note, close=opened.close)


# --- Groups: contenders timed together, round-robin, then closed ---------------------------------


Builder = Callable[[], Contender]


@dataclass
class Group:
    title: str  # for the progress bar
    num_envs: int
    builders: list[tuple[str, Builder]]
    with_ceiling: bool = True
    role: str = "scaling"  # which part of the report: "scaling", "async" or "envpool async"


def run_group(group: Group, ceiling: ParallelCeiling | None, config: BenchConfig,
              bar: Progress | None,
              skipped: dict[str, str]) -> tuple[list[Contender], dict[str, list[float]]]:
    """Build the group's contenders (a failed build is skipped with its reason), time them
    round-robin with the ceiling, and close them all, whatever happens."""
    describe(bar, group.title)
    contenders = []
    if ceiling is not None and group.with_ceiling:
        contenders.append(Contender(
            "vector", CEILING, ceiling.units, ceiling.run,
            note=f"{len(ceiling)} bare 4× ale.act loops in {len(ceiling)} processes, run "
                 "together; all steps ÷ wall time"))
    with contextlib.ExitStack() as closing:
        for name, build in group.builders:
            try:
                contender = build()
            except Exception as error:  # noqa: BLE001 - an optional system, or a broken one
                skipped[f"{name}, N={group.num_envs}"] = f"{type(error).__name__}: {error}"
                advance(bar, config.rounds + 1)
                continue
            closing.callback(contender.close)
            contenders.append(contender)
        seconds = measure(contenders, config.rounds, bar)
    for contender in contenders:  # drop the envs now: thread pools stop when they are freed
        contender.run = contender.close = _closed
    gc.collect()
    return contenders, seconds


def _closed(*args: Any) -> None:
    raise RuntimeError("this contender's env is closed")


def group_results(contenders: list[Contender], seconds: dict[str, list[float]],
                  num_envs: int) -> list[VectorResult]:
    ceiling = seconds.get(CEILING)
    results = []
    for contender in contenders:
        r = rate(seconds[contender.name], ceiling)
        results.append(VectorResult(contender.name, num_envs, r.steps_per_s, r.frames_per_s,
                                    r.ratio_to_ceiling, contender.note, r.rounds_steps_per_s))
    return results


# --- The plan ------------------------------------------------------------------------------------


def system_builders(config: BenchConfig, num_envs: int, cores: int,
                    envpool: bool) -> list[tuple[str, Builder]]:
    """The systems at ``num_envs``, gymnasium's first: it forks, best before thread pools."""
    workers = min(cores, num_envs)
    builders: list[tuple[str, Builder]] = []
    if num_envs <= GYM_ASYNC_MAX_ENVS:
        builders.append((GYM_ASYNC, lambda: sync_contender(
            GYM_ASYNC, open_gymnasium_async(config, num_envs), config,
            f"reference pipeline, {num_envs} processes")))
    builders.append((FASTATARI, lambda: sync_contender(
        FASTATARI, open_fastatari(config, num_envs, num_workers=workers), config,
        f"sync step, {workers} worker processes")))
    builders.append((ALE_VECTOR, lambda: sync_contender(
        ALE_VECTOR, open_ale_vector(config, num_envs, workers), config,
        f"sync step, {workers} threads")))
    if envpool:
        builders.append((ENVPOOL, lambda: sync_contender(
            ENVPOOL, open_envpool(config, num_envs, workers), config,
            f"sync step, {workers} threads")))
    return builders


def async_builders(config: BenchConfig, cores: int) -> list[tuple[str, Builder]]:
    """Sync at the async batch size and at the async env count, and async, each under a
    busy-wait and a sleeping policy; the two policies share an env (closing twice is fine)."""
    ms = f"{POLICY_SECONDS * 1e3:g} ms"
    envs: dict[tuple[int, int], Opened] = {}

    def shared(num_envs: int, batch_size: int) -> Opened:
        key = (num_envs, batch_size)
        if key not in envs:
            envs[key] = open_fastatari(config, num_envs, num_workers=min(cores, num_envs),
                                       batch_size=batch_size)
        return envs[key]

    def sync(name: str, num_envs: int, policy: Callable[[], None]) -> Builder:
        note = f"step all {num_envs}, then the policy; {min(cores, num_envs)} workers"
        return lambda: sync_contender(name, shared(num_envs, num_envs), config, note, policy)

    def async_(name: str, policy: Callable[[], None]) -> Builder:
        note = (f"recv {ASYNC_BATCH}, policy, send them back; "
                f"{min(cores, ASYNC_ENVS)} workers")
        return lambda: async_contender(name, shared(ASYNC_ENVS, ASYNC_BATCH), config, note,
                                       policy)

    builders = []
    for kind, policy in (("busy-wait", busy_policy), ("sleep", sleep_policy)):
        for num_envs in (ASYNC_BATCH, ASYNC_ENVS):
            name = f"sync N={num_envs}, {ms} {kind} policy"
            builders.append((name, sync(name, num_envs, policy)))
        name = f"async N={ASYNC_ENVS} batch {ASYNC_BATCH}, {ms} {kind} policy"
        builders.append((name, async_(name, policy)))
    return builders


ENVPOOL_ASYNC_POLICIES = ("no policy", f"{POLICY_SECONDS * 1e3:g} ms sleep policy")


def envpool_async_name(system: str, policy: str) -> str:
    return f"{system} async N={ENVPOOL_ASYNC_ENVS} batch {ENVPOOL_ASYNC_BATCH}, {policy}"


def envpool_async_builders(config: BenchConfig, cores: int,
                           envpool: bool) -> list[tuple[str, Builder]]:
    """fastatari's async and EnvPool's (when importable) at the same envs, batch and worker or
    thread count, each with no policy and with the sleeping one; one env per system, shared by
    its two policies."""
    workers = min(cores, ENVPOOL_ASYNC_ENVS)
    opens = {FASTATARI: lambda: open_fastatari(config, ENVPOOL_ASYNC_ENVS, num_workers=workers,
                                               batch_size=ENVPOOL_ASYNC_BATCH),
             ENVPOOL: lambda: open_envpool(config, ENVPOOL_ASYNC_ENVS, workers,
                                           batch_size=ENVPOOL_ASYNC_BATCH)}
    envs: dict[str, Opened] = {}
    notes = {FASTATARI: f"send/recv, {workers} worker processes",
             ENVPOOL: f"async_reset, recv, send(actions, env_id); {workers} threads"}

    def build(system: str, policy: str) -> Builder:
        def contender() -> Contender:
            if system not in envs:
                envs[system] = opens[system]()
            return async_contender(envpool_async_name(system, policy), envs[system], config,
                                   notes[system], None if policy == "no policy"
                                   else sleep_policy)
        return contender

    systems = (FASTATARI, ENVPOOL) if envpool else (FASTATARI,)
    return [(envpool_async_name(system, policy), build(system, policy))
            for policy in ENVPOOL_ASYNC_POLICIES for system in systems]


@dataclass
class VectorPlan:
    config: BenchConfig
    cores: int
    envpool: str | None
    groups: list[Group]
    startup_systems: list[str]  # systems whose start-up is measured
    units: int  # progress-bar units: contender rounds and start-up measurements

    @property
    def throughput(self) -> Group:
        return self.groups[0]


def plan_vector(config: BenchConfig) -> VectorPlan:
    cores = usable_cores()
    envpool = envpool_version()
    headline = [(CEILING_ONE_CORE, lambda: one_core_ceiling("vector", config,
                                                           config.vector_steps)),
                *system_builders(config, VECTOR_ENVS, cores, envpool is not None)]
    groups = [Group(f"throughput, N={VECTOR_ENVS}", VECTOR_ENVS, headline)]
    for num_envs in config.vector_envs:
        if num_envs != VECTOR_ENVS:  # the headline group gives the N=8 row
            groups.append(Group(f"scaling, N={num_envs}", num_envs,
                                system_builders(config, num_envs, cores, envpool is not None)))
    groups.append(Group(f"async vs sync, N={ASYNC_ENVS}", ASYNC_ENVS,
                        async_builders(config, cores), with_ceiling=False, role="async"))
    groups.append(Group(f"async vs EnvPool, N={ENVPOOL_ASYNC_ENVS}", ENVPOOL_ASYNC_ENVS,
                        envpool_async_builders(config, cores, envpool is not None),
                        with_ceiling=False, role="envpool async"))
    startup_systems = [system for system in (FASTATARI, GYM_ASYNC, ALE_VECTOR, ENVPOOL)
                       if system != ENVPOOL or envpool is not None]
    units = sum((len(g.builders) + g.with_ceiling) * (config.rounds + 1) for g in groups)
    units += len(startup_systems) * config.startup_repeats
    return VectorPlan(config, cores, envpool, groups, startup_systems, units)


# --- Start-up and memory, in fresh interpreters --------------------------------------------------


def startup_in_fresh_interpreter(system: str, config: BenchConfig, cores: int) -> dict[str, Any]:
    """One start-up measurement in a fresh interpreter; its whole process group is killed if it
    outlives the timeout."""
    script = os.path.abspath(fresh.__file__)  # a file path: ``-m`` would import fastatari first
    root = os.path.dirname(os.path.dirname(os.path.dirname(script)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    command = [sys.executable, script, FRESH_NAMES[system], str(STARTUP_ENVS),
               resolve_game(config.game), gymnasium_env_id(config.game), str(config.seed),
               str(min(cores, STARTUP_ENVS))]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env, start_new_session=True)
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None or process.returncode:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the interpreter and anything it started
            process.communicate()
    if process.returncode:
        lines = (err or "").strip().splitlines()
        raise RuntimeError(f"the fresh interpreter exited with {process.returncode}: "
                           f"{lines[-1] if lines else 'no output'}")
    return json.loads(out.strip().splitlines()[-1])


def startup_results(plan: VectorPlan, bar: Progress | None,
                    skipped: dict[str, str]) -> list[StartupResult]:
    """Every system's start-up in fresh interpreters, ``startup_repeats`` times round-robin;
    medians."""
    config = plan.config
    describe(bar, f"start-up, N={STARTUP_ENVS}")
    samples: dict[str, list[dict[str, Any]]] = {system: [] for system in plan.startup_systems}
    for _ in range(config.startup_repeats):
        for system in plan.startup_systems:
            key = f"{system} start-up, N={STARTUP_ENVS}"
            if key not in skipped:
                try:
                    samples[system].append(startup_in_fresh_interpreter(system, config,
                                                                        plan.cores))
                except Exception as error:  # noqa: BLE001 - reported, the others go on
                    skipped[key] = f"{type(error).__name__}: {error}"
            advance(bar, 1)
    return startup_summary(samples)


def startup_summary(samples: dict[str, list[dict[str, Any]]]) -> list[StartupResult]:
    """Each system's medians over its fresh interpreters' results (systems with none left
    out); RSS total = the main process's growth + its children's."""
    results = []
    for system, runs in samples.items():
        if not runs:
            continue
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]
                  if key != "system"}
        delta, children = median["main_rss_delta_mb"], median["children_rss_mb"]
        results.append(StartupResult(
            system, STARTUP_ENVS, median["startup_s"], median["import_s"],
            int(median["processes"]), delta, children, delta + children, median["pss_delta_mb"],
            [run["startup_s"] for run in runs]))
    return results


# --- The section ---------------------------------------------------------------------------------


def run_vector(plan: VectorPlan, bar: Progress | None) -> VectorReport:
    config = plan.config
    report = VectorReport(plan.cores, plan.envpool)
    if plan.envpool is None:
        report.skipped[ENVPOOL] = "not importable (pip install envpool)"
    scaling: dict[int, list[VectorResult]] = {}
    ceiling = ParallelCeiling(config, plan.cores)
    try:
        for index, group in enumerate(plan.groups):
            watch = LoadWatch()
            contenders, seconds = run_group(group, ceiling, config, bar, report.skipped)
            report.load[group.title] = watch.stop()
            results = group_results(contenders, seconds, group.num_envs)
            if index == 0:
                report.throughput = with_cores_row(results, seconds, plan.cores)
                report.ratios = headline_ratios(seconds)
            if group.role == "scaling":
                scaling[group.num_envs] = [r for r in results if r.system != CEILING_ONE_CORE]
            elif group.role == "async":
                report.async_policy = results
                report.async_speedups = async_speedups(seconds)
            else:
                report.envpool_async = results
                report.envpool_async_ratios = envpool_async_ratios(seconds)
    finally:
        ceiling.close()
    report.scaling = [r for n in sorted(scaling) if n in config.vector_envs for r in scaling[n]]
    report.startup = startup_results(plan, bar, report.skipped)
    return report


def with_cores_row(results: list[VectorResult], seconds: dict[str, list[float]],
                    cores: int) -> list[VectorResult]:
    one_core = seconds.get(CEILING_ONE_CORE)
    if not one_core:
        return results
    r = rate([s / cores for s in one_core], seconds.get(CEILING))
    row = VectorResult(CEILING_TIMES_CORES, results[0].num_envs, r.steps_per_s, r.frames_per_s,
                       r.ratio_to_ceiling, f"one core's loop × {cores}, computed round by round",
                       r.rounds_steps_per_s)
    position = next(i for i, r in enumerate(results) if r.system == CEILING_ONE_CORE) + 1
    return results[:position] + [row] + results[position:]


def headline_ratios(seconds: dict[str, list[float]]) -> dict[str, float]:
    """fastatari's steps/s over each other system's, per round, median."""
    ours = seconds.get(FASTATARI)
    if not ours:
        return {}
    return {f"{FASTATARI} / {other}": median_ratio(seconds[other], ours)
            for other in (ENVPOOL, ALE_VECTOR, GYM_ASYNC) if seconds.get(other)}


def async_speedups(seconds: dict[str, list[float]]) -> dict[str, float]:
    """Async's steps/s over sync's at the same batch size, per round, median."""
    speedups = {}
    for kind in ("busy-wait", "sleep"):
        sync = [n for n in seconds if n.startswith(f"sync N={ASYNC_BATCH},") and kind in n]
        async_ = [n for n in seconds if n.startswith("async") and kind in n]
        if sync and async_ and seconds[sync[0]] and seconds[async_[0]]:
            speedups[f"{kind} policy"] = median_ratio(seconds[sync[0]], seconds[async_[0]])
    return speedups


def envpool_async_ratios(seconds: dict[str, list[float]]) -> dict[str, float]:
    """fastatari's async steps/s over EnvPool's, per policy, per round, median."""
    ratios = {}
    for policy in ENVPOOL_ASYNC_POLICIES:
        ours = seconds.get(envpool_async_name(FASTATARI, policy))
        theirs = seconds.get(envpool_async_name(ENVPOOL, policy))
        if ours and theirs:
            ratios[policy] = median_ratio(theirs, ours)
    return ratios


# --- Plot ----------------------------------------------------------------------------------------


def write_plot(report: VectorReport, path: str, title: str) -> str | None:
    """steps/s against num_envs per system, log2 x axis, the ceiling as a horizontal line.
    Returns why it was not written, or None."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib)"
    if not report.scaling:
        return "no scaling results"
    figure, axes = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    try:
        for system in SYSTEMS:
            points = sorted((r.num_envs, r.steps_per_s) for r in report.scaling
                            if r.system == system)
            if points:
                axes.plot(*zip(*points, strict=True), marker="o", label=system)
        ceilings = sorted((r.num_envs, r.steps_per_s) for r in report.scaling
                          if r.system == CEILING)
        if ceilings:
            axes.axhline(statistics.median(c for _, c in ceilings), color="black",
                         linestyle="--",
                         label=f"{CEILING} ({report.usable_cores} cores, median of groups)")
            # the ceiling of each group: where it dips, something else had the machine
            axes.plot(*zip(*ceilings, strict=True), color="black", linestyle=":", marker="x",
                      linewidth=0.8, label=f"{CEILING}, same group")
        axes.set_xscale("log", base=2)
        sizes = sorted({r.num_envs for r in report.scaling})
        axes.set_xticks(sizes, [str(n) for n in sizes])
        axes.set_xlabel("num_envs")
        axes.set_ylabel("agent steps/s (sync step)")
        axes.set_ylim(bottom=0)
        axes.set_title(title, fontsize=10)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=8)
        figure.tight_layout()
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        figure.savefig(path)
    finally:
        plt.close(figure)
    report.plot = path
    return None


# --- Markdown ------------------------------------------------------------------------------------


def throughput_table(report: VectorReport) -> str:
    table = markdown_table(RATE_HEADER, rate_rows(report.throughput))
    ratios = " · ".join(f"{name}: {value:.2f}×" for name, value in report.ratios.items())
    return table + (f"\n\n{ratios} (per round, median)" if ratios else "")


def scaling_table(report: VectorReport) -> str:
    sizes = sorted({r.num_envs for r in report.scaling})
    by = {(r.system, r.num_envs): r for r in report.scaling}
    columns = [s for s in (CEILING, *SYSTEMS) if any((s, n) in by for n in sizes)]
    header = ["num_envs", *columns, f"{FASTATARI} ÷ ceiling"]
    rows = []
    for n in sizes:
        row = [str(n)] + [f"{by[(s, n)].steps_per_s:,.0f}" if (s, n) in by else "—"
                          for s in columns]
        ours = by.get((FASTATARI, n))
        row.append(f"{ours.ratio_to_ceiling:.2f}" if ours else "—")
        rows.append(row)
    return markdown_table(header, rows)


def startup_table(report: VectorReport) -> str:
    rows = [[r.system, f"{r.startup_s:.2f}", f"{r.import_s:.2f}", str(r.processes),
             f"{r.main_rss_delta_mb:,.0f}", f"{r.children_rss_mb:,.0f}",
             f"{r.total_rss_mb:,.0f}", f"{r.pss_mb:,.0f}"] for r in report.startup]
    return markdown_table(["system", "make + reset s", "import s", "processes",
                           "main RSS Δ MB", "children RSS MB", "RSS total MB", "PSS total MB"],
                          rows)


def async_table(report: VectorReport) -> str:
    table = markdown_table(["mode", "steps/s", "frames/s", "note"],
                           [[r.system, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
                             r.note] for r in report.async_policy])
    speedups = " · ".join(f"{name}: {value:.2f}×"
                          for name, value in report.async_speedups.items())
    return table + (f"\n\nasync ÷ sync N={ASYNC_BATCH} (same batch size), per round, median: "
                    f"{speedups}" if speedups else "")


def envpool_async_table(report: VectorReport) -> str:
    """Every system and policy of the comparison: measured, or skipped with the reason."""
    by = {r.system: r for r in report.envpool_async}
    rows = []
    for policy in ENVPOOL_ASYNC_POLICIES:
        for system in (FASTATARI, ENVPOOL):
            name = envpool_async_name(system, policy)
            r = by.get(name)
            if r is not None:
                rows.append([system, policy, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
                             r.note])
                continue
            why = report.skipped.get(f"{name}, N={ENVPOOL_ASYNC_ENVS}",
                                     report.skipped.get(system, "not measured"))
            rows.append([system, policy, "skipped", "—", why])
    table = markdown_table(["system", "policy", "steps/s", "frames/s", "note"], rows)
    ratios = " · ".join(f"{policy}: {value:.2f}×"
                        for policy, value in report.envpool_async_ratios.items())
    return table + (f"\n\n{FASTATARI} / {ENVPOOL}, async, per round, median: {ratios}"
                    if ratios else "")


def groups_load_line(report: VectorReport) -> str:
    """The other processes' load in the group where it was highest, and the most steal."""
    if not report.load:
        return ""
    title, worst = max(report.load.items(), key=lambda item: item[1]["other_cores"])
    return (f"{not_idle_warning(worst['other_cores'], 'ratios to the ceiling and the scaling')}"
            f"Other load: processes outside the harness took up to {worst['other_cores']:.2f} "
            f"cores on average during a group ({title}); hypervisor steal up to "
            f"{max(load['steal_cores'] for load in report.load.values()):.2f} cores.")


def markdown_vector(report: VectorReport, config: dict[str, Any]) -> str:
    cores = report.usable_cores
    envpool = f"EnvPool {report.envpool}" if report.envpool else "EnvPool not installed"
    settings = (f"{envpool}; {cores} usable cores; every system at frame skip 4, 84×84 gray, "
                "stack 4, noop_max 30, sticky actions off, no reward clipping, no fire reset, "
                f"no episodic life; {config['vector_steps']:,} agent steps per round per "
                "system; ratios to the ceiling are per round against the same round's ceiling, "
                f"median. Threads or worker processes = min({cores}, num_envs).")
    parts = ["### Vector envs\n\n" + settings,
             f"#### Throughput, N={VECTOR_ENVS}, sync step\n\n" + throughput_table(report)]
    if report.scaling:
        parts.append("#### Scaling: agent steps/s against num_envs, sync step (gymnasium "
                     f"AsyncVectorEnv up to {GYM_ASYNC_MAX_ENVS}: one process per env)\n\n"
                     + scaling_table(report)
                     + (f"\n\nPlot: `{report.plot}`" if report.plot else ""))
    if report.startup:
        parts.append(f"#### Start-up and memory, N={STARTUP_ENVS}, each in a fresh interpreter "
                     f"(median of {config['startup_repeats']})\n\n"
                     "make + reset: construction and the first `reset()`, imports excluded. "
                     "RSS total = the main process's VmRSS growth from before construction to "
                     "after reset + the full VmRSS of every process below it (workers, "
                     "forkserver, resource tracker); PSS total: the same with shared pages "
                     "split among processes, so fork's copy-on-write pages count once.\n\n"
                     + startup_table(report))
    if report.async_policy:
        parts.append(f"#### Async against sync, fastatari, {POLICY_SECONDS * 1e3:g} ms policy "
                     "per batch\n\nbusy-wait holds a core, as CPU inference does; sleep frees "
                     "it, as waiting on an accelerator roughly does.\n\n" + async_table(report))
    if report.envpool_async:
        parts.append(f"#### Async, fastatari against EnvPool, N={ENVPOOL_ASYNC_ENVS}, batch "
                     f"{ENVPOOL_ASYNC_BATCH}\n\nrecv the first {ENVPOOL_ASYNC_BATCH} envs to "
                     "finish, then the policy (none, or a sleep per batch), send their actions "
                     "back; the same envs, batch and worker processes or threads, all four in "
                     "the same rounds.\n\n" + envpool_async_table(report))
    parts.append(groups_load_line(report))
    if report.skipped:
        parts.append("Skipped: " + "; ".join(f"{name}: {why}"
                                              for name, why in report.skipped.items()))
    return "\n\n".join(parts)


def plan(config: BenchConfig) -> Plan:
    vector_plan = plan_vector(config)
    return Plan(vector_plan.units, lambda bar: run_vector(vector_plan, bar))


SECTION = Section(
    "vector", "vector envs side by side (fastatari, gymnasium's AsyncVectorEnv, ale_py, "
    "EnvPool): throughput, scaling, start-up and memory, async", markdown_vector, plan=plan)
