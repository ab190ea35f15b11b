"""The ``vector`` section: whole vector envs side by side, in bounded time.

The systems of :mod:`fastatari.bench.systems`, each with min(cores, N) threads or worker
processes, stepped synchronously with random actions drawn in advance. For ``VECTOR_ENVS``
(the headline table) and every N of ``vector_envs``: a group of interleaved rounds of every
system and the ceiling (gymnasium's env only up to ``GYM_ASYNC_MAX_ENVS``: a process per env).
The ceiling is measured, not multiplied: a bare ``ale.act`` loop per usable core, each in its
own process, all run together (:func:`~fastatari.bench.harness.parallel_ceiling`); a round's
rate is the sum of each loop's own rate (its steps over the time it took, timed in its
process). fastatari's groups add the sync barrier bound (:func:`bound_contender`): what a
synchronous step over the workers' fixed blocks of envs could reach with a free transport.
Then start-up and memory at
``STARTUP_ENVS`` envs, each system in a fresh interpreter (``fastatari/bench/systems.py``), so
that import costs and memory compare. Every env and process is closed even when a round raises.
"""
from __future__ import annotations

import contextlib
import gc
import os
import statistics
from dataclasses import dataclass, field
from typing import Any

from fastatari.bench.harness import (
    RATE_HEADER,
    BenchConfig,
    Contender,
    Progress,
    Rate,
    Section,
    Work,
    advance,
    block_times,
    describe,
    draw_actions,
    markdown_table,
    measure,
    median_ratio,
    parallel_ceiling,
    rate_rows,
    rates,
    usable_cores,
)
from fastatari.bench.systems import (
    VECTOR_SYSTEMS,
    Opened,
    envpool_version,
    open_vector,
    startup_in_fresh_interpreter,
)
from fastatari.core.game import AtariGame
from fastatari.vector.assignment import assign_workers, make_assignment

VECTOR_ENVS = 8
GYM_ASYNC_MAX_ENVS = 16
STARTUP_ENVS = 16

CEILING = "raw ALE ceiling"  # one bare loop per core, in parallel processes
# fastatari's game steps in the workers' fixed blocks, each step its slowest block's time
BOUND = "sync barrier bound"
# each system's name in the tables, in the scaling table's order
NAMES = {"fastatari": "fastatari make_vec", "ale_py": "ale_py AtariVectorEnv",
         "envpool": "EnvPool", "gymnasium": "gymnasium AsyncVectorEnv"}
FASTATARI = NAMES["fastatari"]
SYSTEMS = tuple(NAMES.values())


@dataclass
class VectorReport:
    usable_cores: int
    envpool: str | None  # version, None if not importable
    rates: list[Rate] = field(default_factory=list)  # every group's, by num_envs
    ratios: dict[str, float] = field(default_factory=dict)  # at VECTOR_ENVS: "a / b"
    # system -> its medians over fresh interpreters (measure_startup's), "rounds_startup_s"
    startup: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    plot: str | None = None


def sync_contender(name: str, opened: Opened, config: BenchConfig, note: str) -> Contender:
    """Random actions through ``step`` (autoreset inside), ``vector_steps`` agent steps."""
    steps = max(1, config.vector_steps // opened.num_envs)
    rows = draw_actions(config.seed, opened.num_actions, config.rounds, steps,
                        opened.num_envs)

    def run(round_index: int) -> None:
        for actions in rows[round_index]:
            opened.step(actions)

    return Contender(name, steps * opened.num_envs, run, note=note, close=opened.close)


def bound_contender(config: BenchConfig, num_envs: int, workers: int) -> Contender:
    """What a synchronous step over ``workers`` fixed blocks of envs (``make_vec``'s) could
    reach with a free transport and trainer: fastatari's game steps, the blocks played one
    after another in this process (:func:`~fastatari.bench.harness.block_times`), each step
    counted at its slowest block's time. The emulation ceiling runs every core's loop on its
    own; a sync step waits for its slowest block (a reset is ~4.5 ms of emulation in one
    piece), which the envs' fixed places in the workers cannot spread."""
    assignment, options = make_assignment(config.rom, num_envs,
                                          {"repeat_action_probability": 0.0})
    games = [AtariGame(rom, options, seed=config.seed + i)
             for i, rom in enumerate(assignment.games)]
    for i, game in enumerate(games):
        game.reset(config.seed + i)
    blocks = assign_workers(assignment, workers)
    steps = max(1, config.vector_steps // num_envs)
    rows = draw_actions(config.seed, games[0].num_actions, config.rounds, steps, num_envs)

    def run(round_index: int) -> float:
        times, _ = block_times(games, blocks, rows[round_index])
        return float(times.max(axis=1).sum())

    def close() -> None:
        for game in games:
            game.close()

    return Contender(BOUND, steps * num_envs, run, close=close, timed=lambda seconds: seconds,
                     note=f"fastatari's game steps in {workers} blocks, played in turn in one "
                          "process; each step its slowest block's time")


def group_systems(present: tuple[str, ...], num_envs: int) -> list[str]:
    return [s for s in present if s != "gymnasium" or num_envs <= GYM_ASYNC_MAX_ENVS]


def run_group(config: BenchConfig, present: tuple[str, ...], num_envs: int,
              ceiling: Contender, bar: Progress | None,
              skipped: dict[str, str]) -> tuple[list[Rate], dict[str, list[float]]]:
    """Open the group's systems (a failed one is skipped with its reason), time them
    round-robin with the ceiling, close them all."""
    workers = min(usable_cores(), num_envs)
    describe(bar, f"vector envs, N={num_envs}")
    contenders = [ceiling]
    with contextlib.ExitStack() as closing:
        if "fastatari" in present:
            bound = bound_contender(config, num_envs, workers)
            closing.callback(bound.close)
            contenders.append(bound)
        for system in group_systems(present, num_envs):
            try:
                opened = open_vector(system, config.rom, num_envs, workers, config.seed)
            except Exception as error:  # noqa: BLE001 - an optional system, or a broken one
                skipped[f"{NAMES[system]}, N={num_envs}"] = f"{type(error).__name__}: {error}"
                advance(bar, config.rounds + 1)
                continue
            closing.callback(opened.close)
            how = "worker processes" if system == "fastatari" else "threads"
            note = (f"reference pipeline, {num_envs} processes" if system == "gymnasium"
                    else f"sync step, {workers} {how}")
            contenders.append(sync_contender(NAMES[system], opened, config, note))
        seconds = measure(contenders, config.rounds, bar)
    return rates(contenders, seconds, CEILING, num_envs), seconds


def run_vector(config: BenchConfig, present: tuple[str, ...], envpool: str | None,
               bar: Progress | None) -> VectorReport:
    """Every group, ``VECTOR_ENVS`` first, under one parallel ceiling; then start-up."""
    report = VectorReport(usable_cores(), envpool)
    if envpool is None:
        report.skipped[NAMES["envpool"]] = "not importable (pip install envpool)"
    ceiling = parallel_ceiling(config, report.usable_cores, CEILING)
    try:
        for num_envs in sorted(set(config.vector_envs) | {VECTOR_ENVS},
                               key=lambda n: n != VECTOR_ENVS):
            results, seconds = run_group(config, present, num_envs, ceiling, bar,
                                         report.skipped)
            gc.collect()  # the group's envs: thread pools stop when they are freed
            report.rates += results
            if num_envs == VECTOR_ENVS:  # fastatari's rate over each other system's
                ours = seconds.get(FASTATARI)
                report.ratios = {f"{FASTATARI} / {other}": median_ratio(seconds[other], ours)
                                 for other in SYSTEMS[1:] if ours and seconds.get(other)}
    finally:
        ceiling.close()
    report.rates.sort(key=lambda r: r.num_envs)
    report.startup = startup_results(config, present, bar, report.skipped)
    return report


def startup_results(config: BenchConfig, present: tuple[str, ...], bar: Progress | None,
                    skipped: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every system's start-up in fresh interpreters, ``startup_repeats`` times round-robin."""
    describe(bar, f"start-up, N={STARTUP_ENVS}")
    samples: dict[str, list[dict[str, Any]]] = {NAMES[s]: [] for s in present}
    for _ in range(config.startup_repeats):
        for system in present:
            key = f"{NAMES[system]} start-up, N={STARTUP_ENVS}"
            if key not in skipped:
                try:
                    samples[NAMES[system]].append(startup_in_fresh_interpreter(
                        system, STARTUP_ENVS, config.rom, config.seed,
                        min(usable_cores(), STARTUP_ENVS)))
                except Exception as error:  # noqa: BLE001 - reported, the others go on
                    skipped[key] = f"{type(error).__name__}: {error}"
            advance(bar, 1)
    return startup_summary(samples)


def startup_summary(samples: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each system's medians over its fresh interpreters (systems with none left out)."""
    return {system: {**{key: statistics.median(run[key] for run in runs) for key in runs[0]
                        if key != "system"}, "rounds_startup_s": [r["startup_s"] for r in runs]}
            for system, runs in samples.items() if runs}


# --- Plot and Markdown ---------------------------------------------------------------------------


def write_plot(report: VectorReport, path: str, title: str) -> str | None:
    """steps/s against num_envs per system, log2 x axis, the ceiling dashed. Returns why it was
    not written, or None."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib)"
    if not report.rates:
        return "no results"
    figure, axes = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    try:
        for system in (*SYSTEMS, CEILING, BOUND):
            points = sorted((r.num_envs, r.steps_per_s) for r in report.rates
                            if r.system == system)
            if system == CEILING:
                axes.plot(*zip(*points, strict=True), color="black", linestyle="--",
                          marker="x", label=f"{CEILING} ({report.usable_cores} cores)")
            elif system == BOUND and points:
                axes.plot(*zip(*points, strict=True), color="gray", linestyle=":",
                          marker="+", label=f"{BOUND} (fixed blocks, free transport)")
            elif points:
                axes.plot(*zip(*points, strict=True), marker="o", label=system)
        sizes = sorted({r.num_envs for r in report.rates})
        axes.set_xscale("log", base=2)
        axes.set_xticks(sizes, [str(n) for n in sizes])
        axes.set(xlabel="num_envs", ylabel="agent steps/s (sync step)", ylim=(0, None))
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


def scaling_table(report: VectorReport) -> str:
    sizes = sorted({r.num_envs for r in report.rates})
    by = {(r.system, r.num_envs): r for r in report.rates}
    columns = [s for s in (CEILING, BOUND, *SYSTEMS) if any((s, n) in by for n in sizes)]
    bounded = BOUND in columns
    rows = []
    for n in sizes:
        ours, bound = by.get((FASTATARI, n)), by.get((BOUND, n))
        rows.append([str(n)] + [f"{by[(s, n)].steps_per_s:,.0f}" if (s, n) in by else "—"
                                for s in columns]
                    + [f"{ours.ratio_to_ceiling:.2f}" if ours else "—"]
                    + ([f"{ours.steps_per_s / bound.steps_per_s:.2f}" if ours and bound
                        else "—"] if bounded else []))
    return markdown_table(["num_envs", *columns, f"{FASTATARI} ÷ ceiling"]
                          + ([f"{FASTATARI} ÷ bound"] if bounded else []), rows)


def startup_table(report: VectorReport) -> str:
    rows = [[system, f"{r['startup_s']:.2f}", f"{r['import_s']:.2f}", f"{r['processes']:.0f}",
             f"{r['main_rss_delta_mb']:,.0f}", f"{r['children_rss_mb']:,.0f}",
             f"{r['main_rss_delta_mb'] + r['children_rss_mb']:,.0f}", f"{r['pss_delta_mb']:,.0f}"]
            for system, r in report.startup.items()]
    return markdown_table(["system", "make + reset s", "import s", "processes",
                           "main RSS Δ MB", "children RSS MB", "RSS total MB", "PSS total MB"],
                          rows)


def markdown_vector(report: VectorReport, config: dict[str, Any]) -> str:
    cores = report.usable_cores
    envpool = f"EnvPool {report.envpool}" if report.envpool else "EnvPool not installed"
    ratios = " · ".join(f"{name}: {value:.2f}×" for name, value in report.ratios.items())
    headline = [r for r in report.rates if r.num_envs == VECTOR_ENVS]
    parts = [
        "### Vector envs\n\n"
        f"{envpool}; {cores} usable cores; every system at frame skip 4, 84×84 gray, stack 4, "
        "noop_max 30, sticky actions off, no reward clipping, no fire reset, no episodic life; "
        f"{config['vector_steps']:,} agent steps per round per system; ratios to the ceiling "
        "are per round against the same round's ceiling, median. Threads or worker processes "
        f"= min({cores}, num_envs).",
        f"#### Throughput, N={VECTOR_ENVS}, sync step\n\n"
        + markdown_table(RATE_HEADER, rate_rows(headline))
        + (f"\n\n{ratios} (per round, median)" if ratios else ""),
        "#### Scaling: agent steps/s against num_envs, sync step (gymnasium AsyncVectorEnv up "
        f"to {GYM_ASYNC_MAX_ENVS}: one process per env)\n\n" + scaling_table(report)
        + (f"\n\nPlot: `{report.plot}`" if report.plot else "")]
    if report.startup:
        parts.append(f"#### Start-up and memory, N={STARTUP_ENVS}, each in a fresh interpreter "
                     f"(median of {config['startup_repeats']})\n\n"
                     "make + reset: construction and the first `reset()`, imports excluded. "
                     "RSS total = the main process's VmRSS growth from before construction to "
                     "after reset + the full VmRSS of every process below it; PSS total: the "
                     "same with shared pages split among processes, so fork's copy-on-write "
                     "pages count once.\n\n" + startup_table(report))
    if report.skipped:
        parts.append("Skipped: " + "; ".join(f"{name}: {why}"
                                              for name, why in report.skipped.items()))
    return "\n\n".join(parts)


def plan(config: BenchConfig) -> Work:
    envpool = envpool_version()
    present = tuple(s for s in VECTOR_SYSTEMS if s != "envpool" or envpool is not None)
    contenders = sum(1 + ("fastatari" in present) + len(group_systems(present, n))
                     for n in set(config.vector_envs) | {VECTOR_ENVS})  # ceiling, bound
    units = contenders * (config.rounds + 1) + len(present) * config.startup_repeats
    return Work(units, lambda bar: run_vector(config, present, envpool, bar))


SECTION = Section(
    "vector", "vector envs side by side (fastatari, gymnasium's AsyncVectorEnv, ale_py, "
    "EnvPool): throughput, scaling against num_envs, start-up and memory", markdown_vector,
    plan=plan)
