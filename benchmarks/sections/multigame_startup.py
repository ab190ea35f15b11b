"""The ``multigame_startup`` section: how long a pool of every Atari-57 game takes to start.

``make_vec(ATARI_57, 57, full_action_space=True, num_workers=usable cores, balance=...)``, then
its first ``reset(seed)`` (every game's ROM loaded, spread over the workers), wall time in this
process (imports already done), with the cost-balanced assignment and with contiguous blocks,
alternately, ``startup_repeats`` times each; medians.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from benchmarks.sections.multigame import open_pool, suite
from fastatari.bench.harness import (
    BenchConfig,
    Progress,
    Section,
    Work,
    advance,
    describe,
    markdown_table,
    usable_cores,
)

__all__ = ["SECTION", "StartupReport", "StartupSample", "run_startup", "summarise"]


@dataclass
class StartupSample:
    balance: bool
    construct_s: list[float] = field(default_factory=list)  # make_vec(...), one per sample
    reset_s: list[float] = field(default_factory=list)  # the first reset(seed=...)

    @property
    def total_s(self) -> list[float]:
        return [c + r for c, r in zip(self.construct_s, self.reset_s, strict=True)]


@dataclass
class StartupReport:
    games: int
    num_workers: int
    samples: list[StartupSample]
    # "balanced" / "contiguous" -> construct_s, reset_s, total_s: medians
    median_s: dict[str, dict[str, float]] = field(default_factory=dict)


def run_startup(config: BenchConfig, bar: Progress | None) -> StartupReport:
    games = suite()
    workers = min(usable_cores(), len(games))
    samples = {balance: StartupSample(balance) for balance in (True, False)}
    describe(bar, f"start-up of a {len(games)}-game pool")
    for _ in range(config.startup_repeats):
        for balance, sample in samples.items():
            env, built, reset = open_pool(games, balance, workers, config.seed)
            env.close()
            sample.construct_s.append(built)
            sample.reset_s.append(reset)
            advance(bar, 1)
    return summarise(StartupReport(len(games), workers, list(samples.values())))


def summarise(report: StartupReport) -> StartupReport:
    report.median_s = {
        "balanced" if s.balance else "contiguous": {
            "construct_s": statistics.median(s.construct_s),
            "reset_s": statistics.median(s.reset_s),
            "total_s": statistics.median(s.total_s)} for s in report.samples}
    return report


def markdown_startup(report: StartupReport, config: dict[str, Any]) -> str:
    rows = [[name, f"{s['construct_s']:.2f}", f"{s['reset_s']:.2f}", f"{s['total_s']:.2f}"]
            for name, s in report.median_s.items()]
    return (f"### Start-up of a {report.games}-game pool, {report.num_workers} workers\n\n"
            f"`make_vec(...)` then the first `reset(seed={config['seed']})`, wall time in this "
            "process (imports already done), median of "
            f"{len(report.samples[0].construct_s)}.\n\n"
            + markdown_table(["assignment", "construction s", "first reset s", "total s"], rows))


SECTION = Section(
    "multigame_startup", "a 57-game pool's construction and first reset, cost-balanced and "
    "contiguous", markdown_startup,
    plan=lambda config: Work(2 * config.startup_repeats, lambda bar: run_startup(config, bar)))
