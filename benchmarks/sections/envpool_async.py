"""The ``envpool_async`` section: fastatari's async against EnvPool's, like for like.

``send``/``recv`` of ``BATCH`` envs out of ``ENVS`` (3 batches), fastatari's
(``make_vec(batch_size=BATCH)``) and EnvPool's (``async_reset``, ``recv``,
``send(actions, env_id)``) with as many threads as fastatari has workers, each with no policy
and with a sleep of ``POLICY_SECONDS`` per batch; all four in the same rounds, one env per
system shared by its two policies. Reported: steps/s, and fastatari's ÷ EnvPool's per policy,
per round, median; EnvPool's rows say why they were skipped where it is not installed.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from benchmarks.load import LoadWatch, load_line
from benchmarks.sections.async_policy import POLICY_SECONDS, async_contender, sleep_policy
from fastatari.bench.harness import (
    BenchConfig,
    Progress,
    Rate,
    Section,
    Work,
    advance,
    describe,
    markdown_table,
    measure,
    median_ratio,
    rate,
    usable_cores,
)
from fastatari.bench.systems import open_vector

__all__ = ["SECTION", "EnvPoolAsyncReport", "markdown_envpool_async", "name_of", "ratios",
           "run_envpool_async"]

BATCH = 8
ENVS = 3 * BATCH
POLICIES = ("no policy", f"{POLICY_SECONDS * 1e3:g} ms sleep policy")
SYSTEMS = {"fastatari": "fastatari make_vec", "envpool": "EnvPool"}


@dataclass
class EnvPoolAsyncReport:
    rates: list[Rate] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)  # policy -> fastatari ÷ EnvPool
    skipped: dict[str, str] = field(default_factory=dict)  # system -> why
    load: dict[str, float] = field(default_factory=dict)  # LoadWatch.stop()
    worker_restarts: int = 0  # fastatari's


def name_of(system: str, policy: str) -> str:
    return f"{SYSTEMS[system]} async N={ENVS} batch {BATCH}, {policy}"


def run_envpool_async(config: BenchConfig, bar: Progress | None) -> EnvPoolAsyncReport:
    workers = min(usable_cores(), ENVS)
    notes = {"fastatari": f"send/recv, {workers} worker processes",
             "envpool": f"async_reset, recv, send(actions, env_id); {workers} threads"}
    report = EnvPoolAsyncReport()
    describe(bar, "async, fastatari against EnvPool")
    with contextlib.ExitStack() as closing:
        contenders = []
        for system in SYSTEMS:
            try:
                env = open_vector(system, config.rom, ENVS, workers, config.seed,
                                  batch_size=BATCH)
            except Exception as error:  # noqa: BLE001 - EnvPool is optional
                report.skipped[system] = f"{type(error).__name__}: {error}"
                advance(bar, len(POLICIES) * (config.rounds + 1))
                continue
            closing.callback(env.close)
            if system == "fastatari":
                fastatari_env = env.env
            contenders += [async_contender(name_of(system, policy), env, config, notes[system],
                                           None if policy == POLICIES[0] else sleep_policy)
                           for policy in POLICIES]
        watch = LoadWatch()
        seconds = measure(contenders, config.rounds, bar)
        report.load = watch.stop()
        if "fastatari" not in report.skipped:
            report.worker_restarts = fastatari_env.worker_restarts
    report.rates = [rate(seconds[c.name], None, c.name, c.note, ENVS) for c in contenders]
    report.ratios = ratios(seconds)
    return report


def ratios(seconds: dict[str, list[float]]) -> dict[str, float]:
    """fastatari's async steps/s over EnvPool's, per policy, per round, median."""
    out = {}
    for policy in POLICIES:
        ours, theirs = (seconds.get(name_of(system, policy)) for system in SYSTEMS)
        if ours and theirs:
            out[policy] = median_ratio(theirs, ours)
    return out


def markdown_envpool_async(report: EnvPoolAsyncReport, config: dict[str, Any]) -> str:
    """Every system and policy: measured, or skipped with the reason."""
    by = {r.system: r for r in report.rates}
    rows = []
    for policy in POLICIES:
        for system, label in SYSTEMS.items():
            r = by.get(name_of(system, policy))
            rows.append([label, policy, f"{r.steps_per_s:,.0f}", f"{r.frames_per_s:,.0f}", r.note]
                        if r else [label, policy, "skipped", "—",
                                   report.skipped.get(system, "not measured")])
    table = markdown_table(["system", "policy", "steps/s", "frames/s", "note"], rows)
    line = " · ".join(f"{policy}: {value:.2f}×" for policy, value in report.ratios.items())
    return "\n\n".join([
        f"### Async, fastatari against EnvPool, N={ENVS}, batch {BATCH}",
        f"recv the first {BATCH} envs to finish, then the policy (none, or a sleep per batch), "
        "send their actions back; the same envs, batch and worker processes or threads, all "
        "four in the same rounds.",
        table + (f"\n\n{SYSTEMS['fastatari']} / EnvPool, async, per round, median: {line}"
                 if line else ""),
        load_line(report.load, "the section",
                  f"fastatari's worker restarts: {report.worker_restarts}"),
    ])


SECTION = Section(
    "envpool_async", "fastatari's async send/recv against EnvPool's, with no policy and with "
    "a sleep per batch; needs EnvPool", markdown_envpool_async,
    plan=lambda config: Work(len(SYSTEMS) * len(POLICIES) * (config.rounds + 1),
                             lambda bar: run_envpool_async(config, bar)))
