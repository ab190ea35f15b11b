"""Runs the chosen sections of a registry (``fastatari bench``'s by default; ``benchmarks/``
passes its own), in its order, and builds the report (Markdown and JSON). The contenders of
the sections that are flat lists of them (``envs``, ``kernels``) are timed together,
round-robin; then every other chosen section runs its own rounds, under the same progress bar.
"""
from __future__ import annotations

import contextlib
import json
import os
import platform
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from fastatari import kernels
from fastatari._files import write_atomically
from fastatari.bench.harness import (
    FRAME_SKIP,
    BenchConfig,
    Contenders,
    Progress,
    Section,
    measure,
    usable_cores,
)
from fastatari.bench.sections import REGISTRY


@dataclass
class Report:
    """The machine, the config, and the result of each section that ran, by name."""

    environment: dict[str, Any]
    config: dict[str, Any]
    results: dict[str, Any] = field(default_factory=dict)
    sections: Sequence[Section] = REGISTRY  # the sections it was run from

    def to_dict(self) -> dict[str, Any]:
        """The JSON: the machine, the config, each section's result (``None``: not run)."""
        out = {"environment": self.environment, "config": self.config}
        for section in self.sections:
            out.update(section.to_json(self.results.get(section.name)))
        return out


def run_benchmark(config: BenchConfig, progress: Callable[[int], Progress] | None = None,
                  sections: Sequence[Section] = REGISTRY) -> Report:
    """Run the sections of ``sections`` that ``config.sections`` names, and summarise.
    ``progress(total)`` (e.g. ``tqdm``'s constructor) makes the bar every timed unit updates."""
    chosen = [section for section in sections if section.name in config.sections]
    report = Report(environment_info(), asdict(config), sections=sections)
    with contextlib.ExitStack() as closing:
        timed: dict[str, Contenders] = {}
        for section in chosen:
            if section.contenders is not None:
                timed[section.name] = section.contenders(config)
                for contender in timed[section.name].contenders:
                    closing.callback(contender.close)
        plans = {section.name: section.plan(config) for section in chosen
                 if section.plan is not None}
        contenders = [contender for each in timed.values() for contender in each.contenders]
        total = (len(contenders) * (config.rounds + 1)
                 + sum(plan.units for plan in plans.values()))
        bar = progress(total) if progress else None
        try:
            seconds = measure(contenders, config.rounds, bar)
            closing.close()  # the timed contenders' envs, before the other sections start
            for name, each in timed.items():
                report.results[name] = each.summarise(seconds)
            for name, plan in plans.items():
                report.results[name] = plan.run(bar)
        finally:
            if bar is not None:
                bar.close()
    return report


def publish(report: Report, json_path: str | None = None) -> None:
    """Print the Markdown report on stdout and, if ``json_path``, write the report as JSON."""
    print(markdown_report(report))
    if json_path:
        text = json.dumps(report.to_dict(), indent=2) + "\n"
        write_atomically(json_path, lambda out: out.write(text.encode()))


def markdown_report(report: Report) -> str:
    """The whole report: settings, then one part per section that ran."""
    config = report.config
    parts = [f"{config['game']}, random actions, sticky actions off; {config['rounds']} rounds, "
             "round-robin, medians.", environment_line(report)]
    parts += [section.markdown(report.results[section.name], config)
              for section in report.sections if section.name in report.results]
    return "\n\n".join(parts)


def environment_info() -> dict[str, Any]:
    import ale_py
    import cv2
    import gymnasium

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo
                    if line.startswith("model name")), cpu)
    return {"ale_py": ale_py.__version__, "gymnasium": gymnasium.__version__,
            "opencv": cv2.__version__, "opencv_threads": cv2.getNumThreads(),
            "numpy": np.__version__, "python": platform.python_version(), "cpu": cpu,
            "cpu_count": os.cpu_count(), "usable_cpus": usable_cores(),
            "simd_path": kernels.simd_path(), "simd_available": kernels.simd_available(),
            "frame_skip": FRAME_SKIP}


def environment_line(report: Report) -> str:
    env = report.environment
    return (f"ale-py {env['ale_py']}, gymnasium {env['gymnasium']}, OpenCV {env['opencv']} "
            f"({env['opencv_threads']} threads), {env['cpu']}, {env['cpu_count']} CPUs "
            f"({env['usable_cpus']} usable), SIMD {env['simd_path']} "
            f"(available: {', '.join(env['simd_available'])}), frame_skip {env['frame_skip']}")
