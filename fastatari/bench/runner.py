"""Runs the chosen sections of the harness and builds the Markdown report.

The ``envs`` and ``kernels`` contenders (:mod:`fastatari.bench.harness`) are timed together,
round-robin; the ``vector`` section (:mod:`fastatari.bench.vector`) then runs its own groups
and the ``transport`` section (:mod:`fastatari.bench.transport`) and the ``multigame`` section
(:mod:`fastatari.bench.multigame`) and the ``ray`` section (:mod:`fastatari.bench.ray_section`)
their own rounds, under the
same progress bar. This module sits above them all, so none imports the other's caller.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Callable

from fastatari.bench.harness import (
    BenchConfig,
    Progress,
    Report,
    build_contenders,
    env_results,
    env_table,
    environment_info,
    environment_line,
    kernel_results,
    kernel_table,
    measure,
)
from fastatari.bench.multigame import markdown_multigame, multigame_units, run_multigame
from fastatari.bench.ray_section import markdown_ray, ray_units, run_ray
from fastatari.bench.transport import markdown_transport, run_transport, transport_units
from fastatari.bench.vector import markdown_vector, plan_vector, run_vector


def run_benchmark(config: BenchConfig,
                  progress: Callable[[int], Progress] | None = None) -> Report:
    """Build every contender, time them round-robin, and summarise.

    ``progress(total)`` is called once with the number of timed units (e.g. ``tqdm``'s
    constructor); the object it returns gets ``update(1)`` after each contender's round (and
    each start-up probe of the vector section).
    """
    report = Report(environment_info(), asdict(config))
    contenders = build_contenders(config, report.skipped)
    vector_plan = plan_vector(config) if "vector" in config.sections else None
    transport = "transport" in config.sections
    multigame = "multigame" in config.sections
    on_ray = "ray" in config.sections
    total = (len(contenders) * (config.rounds + 1) + (vector_plan.units if vector_plan else 0)
             + (transport_units(config) if transport else 0)
             + (multigame_units(config) if multigame else 0)
             + (ray_units(config) if on_ray else 0))
    bar = progress(total) if progress else None
    try:
        try:
            seconds = measure(contenders, config.rounds, bar)
        finally:
            for contender in contenders:
                contender.close()
        report.envs = env_results(contenders, seconds)
        report.kernels = kernel_results(contenders, seconds)
        if vector_plan is not None:
            report.vector = run_vector(vector_plan, bar)
        if transport:
            report.transport = run_transport(config, bar)
        if on_ray:
            report.ray = run_ray(config, bar)
        if multigame:
            report.multigame = run_multigame(config, bar)
    finally:
        if bar is not None:
            bar.close()
    return report


def markdown_report(report: Report) -> str:
    """The whole report: settings, then one part per section that ran."""
    config = report.config
    parts = [f"{config['game']}, random actions, sticky actions off; {config['rounds']} rounds, "
             "round-robin, medians.", environment_line(report)]
    if report.envs or report.skipped:
        parts.append(f"{config['steps']:,} agent steps per round per system; ratios are "
                     "per-round ratios to the ceiling of the same round, median.\n\n"
                     + env_table(report))
    if report.kernels:
        parts.append(f"Preprocessing after emulation, {config['kernel_calls']:,} steps per round; "
                     "speedup = OpenCV/numpy µs ÷ fastatari µs, per round, median.\n\n"
                     + kernel_table(report))
    if report.vector is not None:
        parts.append(markdown_vector(report.vector, config))
    if report.transport is not None:
        parts.append(markdown_transport(report.transport))
    if report.ray is not None:
        parts.append(markdown_ray(report.ray))
    if report.multigame is not None:
        parts.append(markdown_multigame(report.multigame))
    return "\n\n".join(parts)
