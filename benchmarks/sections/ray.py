"""The ``ray`` section: :mod:`fastatari.ray` against the local vector env.

**Systems.** ``local``: ``fastatari.make_vec`` in this process. ``ray, 1 actor`` and ``ray, 2
nodes``: ``fastatari.ray.make_vec`` with one actor, and with one actor on each of two simulated
nodes (``ray.cluster_utils.Cluster``: a head with no CPU and two 2-CPU nodes, all on this
machine, traffic on 127.0.0.1). Every system runs ``RAY_ENVS`` envs with its default workers
(each actor's local env as many as the node has cores). On one machine the two "nodes" share its
cores with each other and with Ray's daemons: the 2-node figures measure what the extra actor
and calls cost, not what a second machine would add.

**Modes**, each a fixed number of agent steps per round, random actions: ``sync``, ``step`` of
every env; ``async``, two batches in flight per actor (local: two batches in flight), each batch
sent back as soon as ``recv`` returns it; ``rollout``, ``ROLLOUT_STEPS`` steps of a picklable
random policy (:class:`RandomPolicy`) per call, run by the actors on their nodes, and by a plain
loop over ``step`` for ``local`` that fills the same ``(T, N, ...)`` arrays (allocated once,
as a training loop does). Rounds go
round-robin over every system and mode; the ratio to ``local`` is taken per round, against the
same mode's local time in that round, and the median is reported.

**Model of a real cluster.** The per-call cost ``c`` is what one call adds to the same work done
locally: ``c = t(ray, 1 actor) - t(local)`` per ``step`` call (sync) and per ``rollout`` call,
medians of the per-round differences. One env step costs ``e`` of CPU (``local`` sync time per
step × the cores its workers used ÷ envs). A node with ``C`` cores steps ``n`` envs in
``n·e/C`` per step, so the call's share ``c / (c + n·e/C)`` stays under 5% from
``n >= 19·c·C/e`` envs per node (sync), and ``n >= 19·c·C/(T·e)`` with ``rollout``'s one call
per ``T`` steps. ``c`` was measured with ``RAY_ENVS`` envs' observations per call; the part
that grows with ``n`` (observations through the object store) is the model's caveat.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from benchmarks.load import LoadWatch, load_line
from fastatari.bench.harness import (
    BenchConfig,
    Contender,
    Progress,
    Section,
    Work,
    advance,
    markdown_table,
    measure,
    usable_cores,
)

__all__ = ["RAY_ENVS", "ROLLOUT_STEPS", "SECTION", "RandomPolicy", "RayReport", "RayResult",
           "markdown_ray", "ray_units", "run_ray"]

RAY_ENVS = 16
ROLLOUT_STEPS = 128
LOCAL, ONE_ACTOR, TWO_NODES = "local", "ray, 1 actor", "ray, 2 nodes"
SYSTEMS = (LOCAL, ONE_ACTOR, TWO_NODES)
MODES = ("sync", "async", "rollout")
MAX_OVERHEAD = 0.05
MODEL_CORES = (16, 64)


class RandomPolicy:
    """Uniform random actions; picklable, so that it can run on the actors."""

    def __init__(self, num_actions: int, seed: int) -> None:
        self.num_actions = num_actions
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.integers(self.num_actions, size=len(obs))


@dataclass
class RayResult:
    system: str
    mode: str
    steps_per_s: float  # agent steps per second, median over rounds
    ratio_to_local: float  # per-round ratio of steps/s to local's (same mode), median
    rounds_steps_per_s: list[float]


@dataclass
class RayReport:
    num_envs: int
    rollout_steps: int
    usable_cores: int
    results: list[RayResult] = field(default_factory=list)
    call_us: dict[str, float] = field(default_factory=dict)  # c per mode: "sync", "rollout"
    env_step_us: float = 0.0  # e: CPU time of one env step
    envs_per_node: dict[str, dict[int, float]] = field(default_factory=dict)  # mode → C → n
    load: dict[str, float] = field(default_factory=dict)
    restarts: int = 0
    skipped: str = ""


def ray_units(config: BenchConfig) -> int:
    """Progress-bar units: one per contender round."""
    return len(SYSTEMS) * len(MODES) * (config.rounds + 1)


@contextlib.contextmanager
def simulated_cluster() -> Iterator[Any]:
    """A head with no CPU and two 2-CPU nodes (room for the 1-actor env's actor beside the
    2-node env's) on this machine; Ray connected to it."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        if not cluster.address.startswith("127.0.0.1:"):
            raise RuntimeError(f"the simulated cluster is not on loopback ({cluster.address}): "
                               "ray was imported before RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 "
                               "was set")
        for _ in range(2):
            cluster.add_node(num_cpus=2)
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _open(system: str, config: BenchConfig) -> tuple[Any, dict[str, np.ndarray]]:
    """The system's env, reset, and its current observations (for the local rollout loop)."""
    options = dict(repeat_action_probability=0.0)
    if system == LOCAL:
        from fastatari.vector import make_vec

        env = make_vec(config.game, RAY_ENVS, batch_size=RAY_ENVS // 2, **options)
    else:
        from fastatari import ray as fa_ray

        actors = 1 if system == ONE_ACTOR else 2
        env = fa_ray.make_vec(config.game, RAY_ENVS, num_actors=actors,
                              batch_size=RAY_ENVS // (2 * actors), actor_timeout=120, **options)
    try:
        return env, {"obs": env.reset(seed=config.seed)[0]}
    except BaseException:
        env.close()
        raise


def _contender(system: str, mode: str, opened: tuple[Any, dict[str, np.ndarray]],
               config: BenchConfig) -> Contender:
    env, current = opened
    num_envs, num_actions = env.num_envs, int(env.single_action_space.n)
    rng = np.random.default_rng(config.seed)
    name = f"{system}, {mode}"
    if mode == "sync":
        steps = max(1, config.vector_steps // num_envs)
        rows = rng.integers(num_actions, size=(config.rounds + 1, steps, num_envs))

        def run(round_index: int) -> None:
            for actions in rows[round_index]:
                env.step(actions)

        return Contender(name, steps * num_envs, run)
    if mode == "async":
        batch = env.batch_size
        batches = [np.arange(start, start + batch) for start in range(0, num_envs, batch)]
        recvs = max(len(batches), config.vector_steps // batch)
        rows = rng.integers(num_actions, size=(config.rounds + 1, recvs, batch))

        def run(round_index: int) -> None:  # fill, keep every batch in flight, drain
            actions = rows[round_index]
            for j, ids in enumerate(batches):
                env.send(actions[j], ids)
            for j in range(recvs):
                ids = env.recv()[4]["env_id"]
                if j < recvs - len(batches):
                    env.send(actions[j + len(batches)], ids)

        return Contender(name, recvs * batch, run)
    calls = max(1, config.vector_steps // (ROLLOUT_STEPS * num_envs))
    policy = RandomPolicy(num_actions, config.seed)
    if system == LOCAL:
        storage = _storage(env, current["obs"], ROLLOUT_STEPS)

        def run(round_index: int) -> None:
            for _ in range(calls):
                _local_rollout(env, current, policy, storage)
    else:
        def run(round_index: int) -> None:
            for _ in range(calls):
                env.rollout(policy, ROLLOUT_STEPS)

    return Contender(name, calls * ROLLOUT_STEPS * num_envs, run)


def _storage(env: Any, obs: np.ndarray, steps: int) -> dict[str, np.ndarray]:
    """A training loop's rollout storage, allocated once (as CleanRL's scripts do)."""
    count = env.num_envs
    return {"obs": np.zeros((steps,) + obs.shape, obs.dtype),
            "actions": np.zeros((steps, count), np.int64),
            "rewards": np.zeros((steps, count)), "terminated": np.zeros((steps, count), bool),
            "truncated": np.zeros((steps, count), bool)}


def _local_rollout(env: Any, current: dict[str, np.ndarray],
                   policy: Callable[[np.ndarray], np.ndarray],
                   storage: dict[str, np.ndarray]) -> None:
    """What ``rollout`` does on an actor, as a loop in this process, into ``storage``.
    ``current["obs"]``: the envs' observations now (updated)."""
    obs, actions, rewards = storage["obs"], storage["actions"], storage["rewards"]
    terminated, truncated = storage["terminated"], storage["truncated"]
    infos = []
    for t in range(len(obs)):
        obs[t] = current["obs"]
        actions[t] = policy(obs[t])
        current["obs"], rewards[t], terminated[t], truncated[t], info = env.step(actions[t])
        infos.append(info)


def run_ray(config: BenchConfig, bar: Progress | None) -> RayReport:
    """Time every system and mode round-robin on a simulated two-node cluster; model."""
    report = RayReport(RAY_ENVS, ROLLOUT_STEPS, usable_cores())
    # before ray is imported: the simulated cluster on 127.0.0.1 only
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_AUTH_MODE"] = "disabled"
    if importlib.util.find_spec("ray") is None:
        report.skipped = "Ray is not installed (pip install 'fastatari[ray]')"
        advance(bar, ray_units(config))
        return report
    with simulated_cluster(), contextlib.ExitStack() as closing:
        opened = {}
        for system in SYSTEMS:
            opened[system] = _open(system, config)
            closing.callback(opened[system][0].close)
        envs = {system: env for system, (env, _) in opened.items()}
        contenders = [_contender(system, mode, opened[system], config)
                      for mode in MODES for system in SYSTEMS]
        watch = LoadWatch()
        seconds = measure(contenders, config.rounds, bar)
        report.load = watch.stop()
        report.restarts = sum(envs[s].restarts for s in SYSTEMS if s != LOCAL)
        local_workers = envs[LOCAL].num_workers
    summarise(report, seconds, local_workers)
    return report


def summarise(report: RayReport, seconds: dict[str, list[float]], local_workers: int) -> None:
    """The results, per-call costs and the model, from every contender's seconds per agent
    step (``"system, mode"``, one per round) and the local env's worker count."""
    for mode in MODES:
        local = seconds[f"{LOCAL}, {mode}"]
        for system in SYSTEMS:
            mine = seconds[f"{system}, {mode}"]
            rates = [1.0 / s for s in mine]
            ratio = statistics.median(a / b for a, b in zip(local, mine, strict=True))
            report.results.append(RayResult(system, mode, statistics.median(rates), ratio,
                                            rates))
    # per-call cost and the model
    per_call = {"sync": RAY_ENVS, "rollout": RAY_ENVS * ROLLOUT_STEPS}
    for mode, units in per_call.items():
        differences = [(remote - local) * units
                       for remote, local in zip(seconds[f"{ONE_ACTOR}, {mode}"],
                                                seconds[f"{LOCAL}, {mode}"], strict=True)]
        report.call_us[mode] = statistics.median(differences) * 1e6
    cores = min(local_workers, report.usable_cores)
    report.env_step_us = statistics.median(seconds[f"{LOCAL}, sync"]) * cores * 1e6
    factor = (1 - MAX_OVERHEAD) / MAX_OVERHEAD
    for mode, steps in (("sync", 1), ("rollout", ROLLOUT_STEPS)):
        c = max(0.0, report.call_us[mode])
        report.envs_per_node[mode] = {C: factor * c * C / (steps * report.env_step_us)
                                      for C in MODEL_CORES}


def markdown_ray(report: RayReport, config: dict[str, Any]) -> str:
    if report.skipped:
        return f"### Ray\n\nSkipped: {report.skipped}."
    rows = [[r.system, r.mode, f"{r.steps_per_s:,.0f}", f"{r.ratio_to_local:.2f}"]
            for r in report.results]
    table = markdown_table(["system", "mode", "agent steps/s", "ratio to local"], rows)
    e = report.env_step_us
    model = []
    for mode, label in (("sync", "sync `step` (one call per step)"),
                        ("rollout", f"`rollout` (one call per {report.rollout_steps} steps)")):
        need = " · ".join(f"{C} cores: {n:,.0f}" for C, n in report.envs_per_node[mode].items())
        model.append(f"- {label}: c = {report.call_us[mode]:,.0f} µs per call; envs per node "
                     f"for < {MAX_OVERHEAD:.0%} overhead: {need}")
    return "\n\n".join([
        "### Ray",
        f"{report.num_envs} envs per system, random actions; `ray, 2 nodes` is two simulated "
        f"nodes on this machine ({report.usable_cores} cores shared with Ray's daemons). "
        "Async: two batches in flight per actor; rollout: "
        f"T = {report.rollout_steps}, the policy on the actors (local: the same loop over "
        "`step`). Medians over rounds; ratios per round against local's same mode.",
        table,
        f"Model of a real cluster: c is the per-call cost (ray with 1 actor minus local, same "
        f"work), e = {e:,.0f} µs of CPU per env step; a node with C cores needs "
        f"n >= 19·c·C/(T·e) envs for the calls to cost under {MAX_OVERHEAD:.0%} "
        "(T = 1 for sync).\n\n" + "\n".join(model),
        load_line(report.load, "the section", f"actor restarts: {report.restarts}"),
    ])


SECTION = Section(
    "ray", "fastatari.ray against the local vector env (sync, async, rollout) on a simulated "
    "two-node cluster, and a model of a real cluster; needs Ray", markdown_ray,
    plan=lambda config: Work(ray_units(config), lambda bar: run_ray(config, bar)))
