"""The harness's ``vector`` section: whole vector envs side by side, in bounded time.

Four measurements, all with Breakout-style settings (sticky actions off, frame skip 4, 84×84
gray, stack 4, noop_max 30, no reward clipping, no fire reset, no episodic life) and random
actions drawn in advance from a seeded generator:

1. **throughput** at ``VECTOR_ENVS`` envs, sync ``step``: the raw-ALE ceiling, fastatari's
   ``make_vec``, gymnasium's ``AsyncVectorEnv`` over the reference pipeline, ale_py's
   ``AtariVectorEnv`` and EnvPool (when importable);
2. **scaling** over ``num_envs``: one group of interleaved rounds per N, the ceiling measured
   again in each group (gymnasium's async env only up to ``GYM_ASYNC_MAX_ENVS``: it runs one
   process per env);
3. **start-up and memory** at ``STARTUP_ENVS`` envs, each system in a fresh interpreter
   (:mod:`fastatari.bench.probe`), so that import costs and memory are comparable;
4. **async against sync** with a simulated policy of ``POLICY_SECONDS`` per batch.

The ceiling is measured, not multiplied: one bare ``ale.act`` loop per usable core, each in
its own process, all started together; a round's rate is all their steps over the wall time
of the slowest. One core's loop in the main process (and that × cores) is reported beside it.
Every env, thread pool and process is closed even when a round raises.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import multiprocessing as mp
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any, Callable

import numpy as np

from fastatari.bench import probe
from fastatari.bench.harness import (
    FRAME_SKIP,
    BenchConfig,
    Contender,
    Progress,
    bare_loop,
    ceiling_contender,
    gymnasium_env_id,
    markdown_table,
    measure,
    median_ratio,
)
from fastatari.games import camel_name, resolve_game
from fastatari.vector.placement import usable_cores

VECTOR_ENVS = 8
GYM_ASYNC_MAX_ENVS = 16
STARTUP_ENVS = 16
ASYNC_ENVS, ASYNC_BATCH = 16, 8
POLICY_SECONDS = 0.002
TIMEOUT = 120.0  # seconds any one wait may take before the harness gives up
OTHER_LOAD_WARNING = 0.1  # cores taken by other processes that make a run suspect

CEILING = "raw ALE ceiling"  # one bare loop per core, in parallel processes
CEILING_ONE_CORE = "raw ALE, 1 core"
CEILING_TIMES_CORES = "raw ALE, 1 core × cores"
FASTATARI = "fastatari make_vec"
GYM_ASYNC = "gymnasium AsyncVectorEnv"
ALE_VECTOR = "ale_py AtariVectorEnv"
ENVPOOL = "EnvPool"
SYSTEMS = (FASTATARI, ALE_VECTOR, ENVPOOL, GYM_ASYNC)  # the scaling table's columns
PROBES = {FASTATARI: "fastatari", GYM_ASYNC: "gymnasium", ALE_VECTOR: "ale_py",
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
    load: dict[str, dict[str, float]] = field(default_factory=dict)  # group → LoadWatch.stop()
    skipped: dict[str, str] = field(default_factory=dict)
    plot: str | None = None


def envpool_version() -> str | None:
    if find_spec("envpool") is None:
        return None
    try:
        import envpool
    except Exception:  # noqa: BLE001 - a broken install is reported as missing
        return None
    return getattr(envpool, "__version__", "unknown")


# --- The ceiling: one bare loop per core, in parallel processes ----------------------------------


def _ceiling_worker(conn, game: str, seed: int, rounds: int, steps: int) -> None:
    """One bare loop: 4× ale.act per agent step, no preprocessing. Runs round ``r`` on command."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    run = bare_loop(game, seed, rounds, steps)
    conn.send("ready")
    while True:
        try:
            round_index = conn.recv()
        except EOFError:
            return
        if round_index is None:
            return
        run(round_index)
        conn.send(round_index)


class ParallelCeiling:
    """``processes`` bare loops started together each round; lives for the whole section."""

    def __init__(self, config: BenchConfig, processes: int) -> None:
        context = mp.get_context("spawn")  # fork is unsafe once thread pools exist
        steps = max(1, config.vector_steps // processes)
        self.units = steps * processes
        self.processes: list[Any] = []
        self.conns: list[Any] = []
        try:
            for k in range(processes):
                parent, child = context.Pipe()
                process = context.Process(target=_ceiling_worker, daemon=True,
                                          args=(child, config.game, config.seed + k,
                                                config.rounds, steps),
                                          name=f"fastatari-bench-ceiling-{k}")
                process.start()
                child.close()
                self.processes.append(process)
                self.conns.append(parent)
            for conn in self.conns:
                self._expect(conn, "ready")
        except BaseException:
            self.close()
            raise

    def _expect(self, conn, value: Any) -> None:
        if not conn.poll(TIMEOUT):
            raise TimeoutError(f"a ceiling process did not answer within {TIMEOUT} s")
        reply = conn.recv()
        if reply != value:
            raise RuntimeError(f"a ceiling process answered {reply!r}, expected {value!r}")

    def run(self, round_index: int) -> None:
        for conn in self.conns:
            conn.send(round_index)
        for conn in self.conns:
            self._expect(conn, round_index)

    def contender(self) -> Contender:
        cores = len(self.processes)
        return Contender("vector", CEILING, self.units, self.run,
                         note=f"{cores} bare 4× ale.act loops in {cores} processes, run "
                              "together; all steps ÷ wall time")

    def close(self) -> None:
        stop_loops(self.conns, self.processes)
        self.processes, self.conns = [], []


def stop_loops(conns: list, processes: list) -> None:
    """Ask loop processes to stop (``None`` on their pipe), then make sure they are gone."""
    for conn in conns:
        with contextlib.suppress(OSError, ValueError):
            conn.send(None)
    for process in processes:
        process.join(timeout=5.0)
        if process.is_alive():
            process.kill()
            process.join(timeout=5.0)
    for conn in conns:
        conn.close()


# --- The systems ---------------------------------------------------------------------------------


@dataclass
class Opened:
    """A vector env, reset, and how to close it."""

    env: Any
    num_envs: int
    num_actions: int
    step: Callable[[np.ndarray], Any]
    close: Callable[[], None]
    sending: bool = False  # async: every env has a step in flight


def _opened(env: Any, num_envs: int, num_actions: int, reset: Callable[[], Any],
            step: Callable[[np.ndarray], Any], close: Callable[[], None]) -> Opened:
    try:
        reset()
    except BaseException:
        close()
        raise
    return Opened(env, num_envs, num_actions, step, close)


def open_fastatari(config: BenchConfig, num_envs: int, num_workers: int | None = None,
                   batch_size: int | None = None) -> Opened:
    from fastatari.vector import make_vec

    env = make_vec(config.game, num_envs, num_workers=num_workers, batch_size=batch_size,
                   repeat_action_probability=0.0, timeout=TIMEOUT)
    return _opened(env, num_envs, int(env.single_action_space.n),
                   lambda: env.reset(seed=config.seed), env.step, env.close)


def open_gymnasium_async(config: BenchConfig, num_envs: int) -> Opened:
    import functools

    from gymnasium.vector import AsyncVectorEnv

    # gymnasium's default context (fork on Linux), as its users get it
    make = functools.partial(probe.gymnasium_reference_env, gymnasium_env_id(config.game))
    env = AsyncVectorEnv([make] * num_envs)

    def step(actions: np.ndarray) -> Any:
        env.step_async(actions)
        return env.step_wait(timeout=TIMEOUT)

    def close() -> None:
        try:
            env.close(timeout=TIMEOUT)
        except Exception:  # noqa: BLE001 - e.g. workers gone after a Ctrl-C to the group
            env.close(terminate=True)

    return _opened(env, num_envs, int(env.single_action_space.n),
                   lambda: env.reset(seed=config.seed), step, close)


def open_ale_vector(config: BenchConfig, num_envs: int, num_threads: int) -> Opened:
    import ale_py
    from ale_py.vector_env import AtariVectorEnv

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    # the options fastatari's defaults mean; ale_py's own defaults clip rewards and press FIRE
    env = AtariVectorEnv(resolve_game(config.game), num_envs, num_threads=num_threads,
                         repeat_action_probability=0.0, noop_max=30, stack_num=4,
                         img_height=84, img_width=84, grayscale=True, frameskip=FRAME_SKIP,
                         maxpool=True, reward_clipping=False, use_fire_reset=False,
                         episodic_life=False)
    return _opened(env, num_envs, int(env.single_action_space.n),
                   lambda: env.reset(seed=config.seed), env.step, env.close)


def open_envpool(config: BenchConfig, num_envs: int, num_threads: int) -> Opened:
    import envpool

    env = envpool.make(f"{camel_name(resolve_game(config.game))}-v5", env_type="gymnasium",
                       num_envs=num_envs, num_threads=num_threads, seed=config.seed,
                       repeat_action_probability=0.0, noop_max=30, stack_num=4,
                       img_height=84, img_width=84, gray_scale=True, frame_skip=FRAME_SKIP,
                       reward_clip=False, use_fire_reset=False, episodic_life=False)
    return _opened(env, num_envs, int(env.action_space.n), env.reset, env.step, env.close)


def _actions(config: BenchConfig, num_actions: int, shape: tuple[int, ...]) -> np.ndarray:
    """Action indices for every round (row 0 is the warm-up), drawn before any timing."""
    rng = np.random.default_rng(config.seed)
    return rng.integers(num_actions, size=(config.rounds + 1, *shape), dtype=np.int32)


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
    rows = _actions(config, opened.num_actions, (steps, num_envs))
    step = opened.step

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            step(actions)
            if policy is not None:
                policy()

    return Contender("vector", name, steps * num_envs, run, note=note, close=opened.close)


def async_contender(name: str, opened: Opened, config: BenchConfig, note: str,
                    policy: Callable[[], None]) -> Contender:
    """Receive the first batch to finish, run the policy, send its actions back, while the
    other envs keep emulating."""
    env = opened.env
    batch = env.batch_size
    recvs = max(1, config.vector_steps // batch)
    rows = _actions(config, opened.num_actions, (recvs, batch))
    if not opened.sending:  # the first contender on this env starts every env stepping
        env.send(_actions(config, opened.num_actions, (opened.num_envs,))[0])
        opened.sending = True

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            info = env.recv()[4]
            policy()
            env.send(actions, info["env_id"])

    return Contender("vector", name, recvs * batch, run, note=note, close=opened.close)


# --- Load from outside the harness ---------------------------------------------------------------


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, steal) jiffies of the whole machine since boot, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return user + nice + system + irq + softirq, steal


def _tree_jiffies() -> int:
    """CPU jiffies of this process, its live descendants and the dead ones they reaped."""
    total = 0
    for pid in [os.getpid(), *probe.descendants(os.getpid())]:
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total


class LoadWatch:
    """How many cores other processes on the machine (and the hypervisor) took meanwhile: the
    ceiling and every system share the machine with them, so the figures mean little when this
    is not near 0. Linux only; elsewhere it reports NaN."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, int, int, int] | None:
        try:
            busy, steal = _cpu_jiffies()
            return time.perf_counter(), busy, steal, _tree_jiffies()
        except OSError:
            return None

    def stop(self) -> dict[str, float]:
        end = self._sample()
        if self.start is None or end is None:
            return {"other_cores": float("nan"), "steal_cores": float("nan")}
        wall = max(end[0] - self.start[0], 1e-9)
        ticks = os.sysconf("SC_CLK_TCK")
        busy, steal, ours = (end[i] - self.start[i] for i in (1, 2, 3))
        return {"other_cores": max(0.0, busy - ours) / ticks / wall,
                "steal_cores": steal / ticks / wall}


# --- Groups: contenders timed together, round-robin, then closed ---------------------------------


Builder = Callable[[], Contender]


@dataclass
class Group:
    title: str  # for the progress bar
    num_envs: int
    builders: list[tuple[str, Builder]]
    with_ceiling: bool = True


def _advance(bar: Progress | None, units: int) -> None:
    if bar is not None:
        bar.update(units)


def _describe(bar: Progress | None, text: str) -> None:
    describe = getattr(bar, "set_description_str", None)
    if describe is not None:
        describe(text)


def run_group(group: Group, ceiling: ParallelCeiling | None, config: BenchConfig,
              bar: Progress | None,
              skipped: dict[str, str]) -> tuple[list[Contender], dict[str, list[float]]]:
    """Build the group's contenders (a failed build is skipped with its reason), time them
    round-robin with the ceiling, and close them all, whatever happens."""
    _describe(bar, group.title)
    contenders = [ceiling.contender()] if ceiling is not None and group.with_ceiling else []
    with contextlib.ExitStack() as closing:
        for name, build in group.builders:
            try:
                contender = build()
            except Exception as error:  # noqa: BLE001 - an optional system, or a broken one
                skipped[f"{name}, N={group.num_envs}"] = f"{type(error).__name__}: {error}"
                _advance(bar, config.rounds + 1)
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
        samples = seconds[contender.name]
        steps_per_s = 1.0 / statistics.median(samples)
        ratio = median_ratio(ceiling, samples) if ceiling else float("nan")
        results.append(VectorResult(contender.name, num_envs, steps_per_s,
                                    steps_per_s * FRAME_SKIP, ratio, contender.note,
                                    [1.0 / sample for sample in samples]))
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


@dataclass
class VectorPlan:
    config: BenchConfig
    cores: int
    envpool: str | None
    groups: list[Group]
    probes: list[str]  # systems whose start-up is measured
    units: int  # progress-bar units: contender rounds and probes

    @property
    def throughput(self) -> Group:
        return self.groups[0]


def plan_vector(config: BenchConfig) -> VectorPlan:
    cores = usable_cores()
    envpool = envpool_version()
    one_core = dataclasses.replace(config, steps=config.vector_steps)

    def ceiling_one_core() -> Contender:
        contender = ceiling_contender(one_core)
        return dataclasses.replace(contender, section="vector", name=CEILING_ONE_CORE,
                                   note="one bare 4× ale.act loop in the main process")

    headline = [(CEILING_ONE_CORE, ceiling_one_core),
                *system_builders(config, VECTOR_ENVS, cores, envpool is not None)]
    groups = [Group(f"throughput, N={VECTOR_ENVS}", VECTOR_ENVS, headline)]
    for num_envs in config.vector_envs:
        if num_envs != VECTOR_ENVS:  # the headline group gives the N=8 row
            groups.append(Group(f"scaling, N={num_envs}", num_envs,
                                system_builders(config, num_envs, cores, envpool is not None)))
    groups.append(Group(f"async vs sync, N={ASYNC_ENVS}", ASYNC_ENVS,
                        async_builders(config, cores), with_ceiling=False))
    probes = [system for system in (FASTATARI, GYM_ASYNC, ALE_VECTOR, ENVPOOL)
              if system != ENVPOOL or envpool is not None]
    units = sum((len(g.builders) + g.with_ceiling) * (config.rounds + 1) for g in groups)
    units += len(probes) * config.startup_repeats
    return VectorPlan(config, cores, envpool, groups, probes, units)


# --- Start-up and memory, in fresh interpreters --------------------------------------------------


def run_probe(system: str, config: BenchConfig, cores: int) -> dict[str, Any]:
    """One start-up measurement in a fresh interpreter; its whole process group is killed if it
    outlives the timeout."""
    script = os.path.abspath(probe.__file__)  # a file path: ``-m`` would import fastatari first
    root = os.path.dirname(os.path.dirname(os.path.dirname(script)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    command = [sys.executable, script, PROBES[system], str(STARTUP_ENVS),
               resolve_game(config.game), gymnasium_env_id(config.game), str(config.seed),
               str(min(cores, STARTUP_ENVS))]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env, start_new_session=True)
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None or process.returncode:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the probe and anything it started
            process.communicate()
    if process.returncode:
        lines = (err or "").strip().splitlines()
        raise RuntimeError(f"probe exited with {process.returncode}: "
                           f"{lines[-1] if lines else 'no output'}")
    return json.loads(out.strip().splitlines()[-1])


def startup_results(plan: VectorPlan, bar: Progress | None,
                    skipped: dict[str, str]) -> list[StartupResult]:
    """Every system's probe, ``startup_repeats`` times round-robin; medians."""
    config = plan.config
    _describe(bar, f"start-up, N={STARTUP_ENVS}")
    samples: dict[str, list[dict[str, Any]]] = {system: [] for system in plan.probes}
    for _ in range(config.startup_repeats):
        for system in plan.probes:
            key = f"{system} start-up, N={STARTUP_ENVS}"
            if key not in skipped:
                try:
                    samples[system].append(run_probe(system, config, plan.cores))
                except Exception as error:  # noqa: BLE001 - reported, the others go on
                    skipped[key] = f"{type(error).__name__}: {error}"
            _advance(bar, 1)
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
                report.throughput = _with_cores_row(results, seconds, plan.cores)
                report.ratios = _headline_ratios(seconds)
            if group.with_ceiling:
                scaling[group.num_envs] = [r for r in results if r.system != CEILING_ONE_CORE]
            else:
                report.async_policy = results
                report.async_speedups = _async_speedups(seconds)
    finally:
        ceiling.close()
    report.scaling = [r for n in sorted(scaling) if n in config.vector_envs for r in scaling[n]]
    report.startup = startup_results(plan, bar, report.skipped)
    return report


def _with_cores_row(results: list[VectorResult], seconds: dict[str, list[float]],
                    cores: int) -> list[VectorResult]:
    one_core = seconds.get(CEILING_ONE_CORE)
    if not one_core:
        return results
    ceiling = seconds.get(CEILING)
    samples = [s / cores for s in one_core]
    steps_per_s = 1.0 / statistics.median(samples)
    row = VectorResult(CEILING_TIMES_CORES, results[0].num_envs, steps_per_s,
                       steps_per_s * FRAME_SKIP,
                       median_ratio(ceiling, samples) if ceiling else float("nan"),
                       f"one core's loop × {cores}, computed round by round",
                       [1.0 / s for s in samples])
    position = next(i for i, r in enumerate(results) if r.system == CEILING_ONE_CORE) + 1
    return results[:position] + [row] + results[position:]


def _headline_ratios(seconds: dict[str, list[float]]) -> dict[str, float]:
    """fastatari's steps/s over each other system's, per round, median."""
    ours = seconds.get(FASTATARI)
    if not ours:
        return {}
    return {f"{FASTATARI} / {other}": median_ratio(seconds[other], ours)
            for other in (ENVPOOL, ALE_VECTOR, GYM_ASYNC) if seconds.get(other)}


def _async_speedups(seconds: dict[str, list[float]]) -> dict[str, float]:
    """Async's steps/s over sync's at the same batch size, per round, median."""
    speedups = {}
    for kind in ("busy-wait", "sleep"):
        sync = [n for n in seconds if n.startswith(f"sync N={ASYNC_BATCH},") and kind in n]
        async_ = [n for n in seconds if n.startswith("async") and kind in n]
        if sync and async_ and seconds[sync[0]] and seconds[async_[0]]:
            speedups[f"{kind} policy"] = median_ratio(seconds[sync[0]], seconds[async_[0]])
    return speedups


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


def _rate_rows(results: list[VectorResult]) -> list[list[str]]:
    return [[r.system, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
             f"{r.ratio_to_ceiling:.2f}", r.note] for r in results]


def throughput_table(report: VectorReport) -> str:
    table = markdown_table(["system", "steps/s", "frames/s", "ratio to ceiling", "note"],
                           _rate_rows(report.throughput))
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


def load_line(report: VectorReport) -> str:
    if not report.load:
        return ""
    title, worst = max(report.load.items(), key=lambda item: item[1]["other_cores"])
    line = (f"Other load: processes outside the harness took up to {worst['other_cores']:.2f} "
            f"cores on average during a group ({title}); hypervisor steal up to "
            f"{max(load['steal_cores'] for load in report.load.values()):.2f} cores.")
    if worst["other_cores"] > OTHER_LOAD_WARNING:
        line = ("**Warning: the machine was not idle; ratios to the ceiling and the scaling "
                "are not to be trusted.** " + line)
    return line


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
    parts.append(load_line(report))
    if report.skipped:
        parts.append("Skipped: " + "; ".join(f"{name}: {why}"
                                              for name, why in report.skipped.items()))
    return "\n\n".join(parts)
