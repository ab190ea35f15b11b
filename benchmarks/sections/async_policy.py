"""The ``async_policy`` section: fastatari's async ``send``/``recv`` against its sync ``step``,
with a simulated policy of ``POLICY_SECONDS`` per batch.

Six contenders, timed round-robin, random actions drawn in advance: sync at N=``ASYNC_BATCH``
and at N=``ASYNC_ENVS`` (step every env, then the policy), and async at N=``ASYNC_ENVS``, batch
``ASYNC_BATCH`` (receive the first batch to finish, run the policy, send its actions back while
the other envs keep emulating), each under a busy-wait policy (it holds a core, as CPU
inference does) and a sleeping one (it frees the core, as waiting on an accelerator roughly
does); min(cores, N) workers. Reported: steps/s, and async ÷ sync at the same batch size, per
round, median.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from benchmarks.load import LoadWatch, load_line
from fastatari.bench.harness import (
    BenchConfig,
    Contender,
    Progress,
    Rate,
    Section,
    Work,
    describe,
    draw_actions,
    markdown_table,
    measure,
    median_ratio,
    rate,
    usable_cores,
)
from fastatari.bench.systems import Opened, open_vector

__all__ = ["SECTION", "AsyncReport", "async_contender", "async_speedups", "busy_policy",
           "markdown_async", "run_async", "sleep_policy"]

ASYNC_ENVS, ASYNC_BATCH = 16, 8
POLICY_SECONDS = 0.002
MS = f"{POLICY_SECONDS * 1e3:g} ms"


@dataclass
class AsyncReport:
    rates: list[Rate] = field(default_factory=list)
    speedups: dict[str, float] = field(default_factory=dict)  # "<kind> policy" -> async ÷ sync
    load: dict[str, float] = field(default_factory=dict)  # LoadWatch.stop()
    worker_restarts: int = 0


def busy_policy() -> None:
    """A policy that holds a core, as CPU inference does (a sleep would lend it to the envs)."""
    end = time.perf_counter() + POLICY_SECONDS
    while time.perf_counter() < end:
        pass


def sleep_policy() -> None:
    """A policy that frees the core, as waiting on an accelerator roughly does."""
    time.sleep(POLICY_SECONDS)


POLICIES = {"busy-wait": busy_policy, "sleep": sleep_policy}


def sync_contender(name: str, opened: Opened, config: BenchConfig, note: str,
                   policy: Callable[[], None]) -> Contender:
    """Random actions through ``step``, then ``policy``, ``vector_steps`` agent steps."""
    steps = max(1, config.vector_steps // opened.num_envs)
    rows = draw_actions(config.seed, opened.num_actions, config.rounds, steps, opened.num_envs)

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            opened.step(actions)
            policy()

    return Contender(name, steps * opened.num_envs, run, note=note)


def async_contender(name: str, opened: Opened, config: BenchConfig, note: str,
                    policy: Callable[[], None] | None) -> Contender:
    """Receive the first batch to finish, run the policy (if any), send its actions back,
    while the other envs keep emulating. Any env with fastatari's ``send``/``recv``
    (``info["env_id"]``): fastatari's, EnvPool's."""
    env = opened.env
    batch = opened.batch_size or opened.num_envs
    recvs = max(1, config.vector_steps // batch)
    rows = draw_actions(config.seed, opened.num_actions, config.rounds, recvs, batch)
    if not opened.sending:  # the first contender on this env starts every env stepping
        env.send(draw_actions(config.seed, opened.num_actions, 0, opened.num_envs)[0])
        opened.sending = True

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            info = env.recv()[4]
            if policy is not None:
                policy()
            env.send(actions, info["env_id"])

    return Contender(name, recvs * batch, run, note=note)


def name_of(mode: str, kind: str) -> str:
    """``mode``: ``"sync N=8"``, ``"async N=16 batch 8"``."""
    return f"{mode}, {MS} {kind} policy"


def run_async(config: BenchConfig, bar: Progress | None) -> AsyncReport:
    cores = usable_cores()
    envs: dict[tuple[int, int], Opened] = {}
    with contextlib.ExitStack() as closing:
        def shared(num_envs: int, batch_size: int) -> Opened:  # one env per shape
            if (num_envs, batch_size) not in envs:
                env = open_vector("fastatari", config.rom, num_envs, min(cores, num_envs),
                                  config.seed, batch_size=batch_size)
                closing.callback(env.close)
                envs[num_envs, batch_size] = env
            return envs[num_envs, batch_size]

        contenders, sizes = [], {}
        describe(bar, "async against sync")
        for kind, policy in POLICIES.items():
            for n in (ASYNC_BATCH, ASYNC_ENVS):
                name = name_of(f"sync N={n}", kind)
                contenders.append(sync_contender(
                    name, shared(n, n), config,
                    f"step all {n}, then the policy; {min(cores, n)} workers", policy))
                sizes[name] = n
            name = name_of(f"async N={ASYNC_ENVS} batch {ASYNC_BATCH}", kind)
            contenders.append(async_contender(
                name, shared(ASYNC_ENVS, ASYNC_BATCH), config,
                f"recv {ASYNC_BATCH}, policy, send them back; {min(cores, ASYNC_ENVS)} workers",
                policy))
            sizes[name] = ASYNC_ENVS
        watch = LoadWatch()
        seconds = measure(contenders, config.rounds, bar)
        load = watch.stop()
        restarts = sum(env.env.worker_restarts for env in envs.values())
    return AsyncReport([rate(seconds[c.name], None, c.name, c.note, sizes[c.name])
                        for c in contenders], async_speedups(seconds), load, restarts)


def async_speedups(seconds: dict[str, list[float]]) -> dict[str, float]:
    """Async's steps/s over sync's at the same batch size, per round, median."""
    speedups = {}
    for kind in POLICIES:
        sync = seconds.get(name_of(f"sync N={ASYNC_BATCH}", kind))
        async_ = seconds.get(name_of(f"async N={ASYNC_ENVS} batch {ASYNC_BATCH}", kind))
        if sync and async_:
            speedups[f"{kind} policy"] = median_ratio(sync, async_)
    return speedups


def markdown_async(report: AsyncReport, config: dict[str, Any]) -> str:
    table = markdown_table(["mode", "steps/s", "frames/s", "note"],
                           [[r.system, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}",
                             r.note] for r in report.rates])
    speedups = " · ".join(f"{name}: {value:.2f}×" for name, value in report.speedups.items())
    return "\n\n".join([
        f"### Async against sync, fastatari, {MS} policy per batch",
        "busy-wait holds a core, as CPU inference does; sleep frees it, as waiting on an "
        "accelerator roughly does.",
        table + (f"\n\nasync ÷ sync N={ASYNC_BATCH} (same batch size), per round, median: "
                 f"{speedups}" if speedups else ""),
        load_line(report.load, "the section", f"worker restarts: {report.worker_restarts}"),
    ])


SECTION = Section(
    "async_policy", "fastatari's async send/recv against its sync step, with a simulated "
    "policy per batch (busy-wait and sleep)", markdown_async,
    plan=lambda config: Work(3 * len(POLICIES) * (config.rounds + 1),
                             lambda bar: run_async(config, bar)))
