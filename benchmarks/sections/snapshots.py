"""The ``snapshots`` section: what ``clone`` and ``restore`` cost against a step.

**The env.** ``fastatari.make_vec`` of the config's game, ``SNAPSHOT_ENVS`` envs, one worker per
usable core, sticky actions at ALE's v5 default (0.25: a snapshot then also finds the action
ALE repeats, see :mod:`fastatari.core.sticky`), reset and played ``WARMUP_STEPS`` random steps
before timing.

**Contenders**, timed round-robin: one sync ``step`` of every env (``STEPS_PER_ROUND`` per
round); ``clone()`` and ``restore()`` of every env, and of one env; a *Go-Explore-style* loop
(restore every env to stored states, ``EXPLORE_STEPS`` random steps, clone every env) against
the plain loop of the same steps. Reported: seconds per call and each call's cost in sync
steps of the whole env (per round, against the same round's step, median); the loop's steps/s
and its ratio to the plain loop; the size of one env's snapshot (pickled, mean over the envs).
"""
from __future__ import annotations

import pickle
import statistics
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastatari.bench.harness import (
    TIMEOUT,
    BenchConfig,
    Contender,
    Contenders,
    Section,
    markdown_table,
    median_ratio,
    usable_cores,
)

__all__ = ["SECTION", "SnapshotReport"]

SNAPSHOT_ENVS = 64
WARMUP_STEPS = 50
STEPS_PER_ROUND = 20
EXPLORE_STEPS = 100
NAME = "snapshots"


@dataclass
class SnapshotReport:
    num_envs: int
    num_workers: int
    snapshot_bytes: float  # one env's snapshot, pickled (mean over the envs)
    seconds: dict[str, float] = field(default_factory=dict)  # per call, median over rounds
    in_steps: dict[str, float] = field(default_factory=dict)  # per call, in sync steps
    loop_steps_per_s: float = 0.0
    plain_steps_per_s: float = 0.0
    loop_ratio: float = 0.0  # the Go-Explore-style loop's steps/s / the plain loop's


def _contenders(config: BenchConfig) -> Contenders:
    import fastatari

    n = SNAPSHOT_ENVS
    workers = min(usable_cores(), n)
    envs = fastatari.make_vec(config.game, n, num_workers=workers, timeout=TIMEOUT)
    envs.reset(seed=config.seed)
    rng = np.random.default_rng(config.seed)
    num_actions = int(envs.single_action_space.n)
    for _ in range(WARMUP_STEPS):
        envs.step(rng.integers(0, num_actions, n))
    stored = envs.clone()
    one = [stored[0]]
    actions = rng.integers(0, num_actions, (EXPLORE_STEPS, n))
    report = SnapshotReport(n, workers, statistics.mean(len(pickle.dumps(s)) for s in stored))

    def steps(count: int) -> None:
        for t in range(count):
            envs.step(actions[t % EXPLORE_STEPS])

    def explore(_: int) -> None:
        envs.restore(stored)
        steps(EXPLORE_STEPS)
        envs.clone()

    def contender(name: str, units: int, run: Any, close: Any = lambda: None) -> Contender:
        return Contender(name, units, run, close=close)

    contenders = [
        contender("step", STEPS_PER_ROUND, lambda _: steps(STEPS_PER_ROUND)),
        contender(f"clone, {n} envs", 1, lambda _: envs.clone()),
        contender(f"restore, {n} envs", 1, lambda _: envs.restore(stored)),
        contender("clone, 1 env", 1, lambda _: envs.clone([0])),
        contender("restore, 1 env", 1, lambda _: envs.restore(one, [0])),
        contender("go-explore loop", EXPLORE_STEPS, explore),
        contender("plain loop", EXPLORE_STEPS, lambda _: steps(EXPLORE_STEPS), envs.close),
    ]

    def summarise(seconds: dict[str, list[float]]) -> SnapshotReport:
        step = seconds["step"]
        for name in (f"clone, {n} envs", f"restore, {n} envs", "clone, 1 env",
                     "restore, 1 env"):
            report.seconds[name] = statistics.median(seconds[name])
            report.in_steps[name] = median_ratio(seconds[name], step)
        report.seconds["step"] = statistics.median(step)
        report.loop_steps_per_s = 1.0 / statistics.median(seconds["go-explore loop"])
        report.plain_steps_per_s = 1.0 / statistics.median(seconds["plain loop"])
        report.loop_ratio = median_ratio(seconds["plain loop"], seconds["go-explore loop"])
        return report

    return Contenders(contenders, summarise)


def markdown_snapshots(report: SnapshotReport, config: dict[str, Any]) -> str:
    rows = [[name, f"{report.seconds[name] * 1e3:.2f}",
             f"{report.in_steps.get(name, 1.0):.2f}"] for name in report.seconds]
    table = markdown_table(["call", "ms per call", "in sync steps of the env"], rows)
    return (f"{report.num_envs} envs of {config['game']}, {report.num_workers} workers, sticky "
            f"actions 0.25; one env's snapshot: {report.snapshot_bytes / 1024:.1f} KiB "
            f"pickled.\n\n{table}\n\nGo-Explore-style loop (restore {report.num_envs} envs, "
            f"{EXPLORE_STEPS} steps, clone): {report.loop_steps_per_s:,.0f} steps/s of the "
            f"vector env, {report.loop_ratio:.2f} of the plain loop's "
            f"{report.plain_steps_per_s:,.0f}.")


SECTION = Section(
    name=NAME,
    help="clone() and restore() of 64 envs and of one, against a sync step; snapshot size; "
         "a Go-Explore-style loop against plain stepping",
    markdown=markdown_snapshots,
    contenders=_contenders,
)
