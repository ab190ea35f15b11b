"""The benchmarks page's tables, written from the bench's own JSON (``docs/benchmarks.json``,
as ``fastatari bench --json docs/benchmarks.json`` writes it) when the site is built, so the
page shows the figures of the last run and nothing typed by hand."""
from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List

SOURCE = "benchmarks.json"
TARGET = os.path.join("_generated", "benchmark-tables.md")


def table(header: List[str], rows: List[List[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def number(value: Any, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:,.{digits}f}"


def render(report: Dict[str, Any]) -> str:
    env, config = report["environment"], report["config"]
    parts = [
        f"Measured on {env['cpu']} with {env['cpu_count']} CPUs ({env['usable_cpus']} usable), "
        f"Python {env['python']}, ale-py {env['ale_py']}, gymnasium {env['gymnasium']}, "
        f"NumPy {env['numpy']}, OpenCV {env['opencv']}, SIMD path {env['simd_path']}. "
        f"{config['game'].capitalize()}, random actions, sticky actions off, frame skip "
        f"{env['frame_skip']}; {config['rounds']} rounds, round-robin, medians."]
    envs = (report.get("envs") or {}).get("rates")
    if envs:
        parts += ["## One env, one core", table(
            ["system", "steps/s", "of the emulation ceiling"],
            [[r["system"], number(r["steps_per_s"]), number(r["ratio_to_ceiling"], 2)]
             for r in envs])]
    kernels = (report.get("kernels") or {}).get("results")
    if kernels:
        parts += ["## Kernels: one step's preprocessing", table(
            ["work", "implementation", "µs per step", "speed-up"],
            [[r["comparison"], r["implementation"] + (f" ({r['simd']})" if r["simd"] else ""),
              number(r["us_per_step"], 1), number(r["speedup"], 1) + "x"] for r in kernels])]
    vector = report.get("vector")
    if vector and vector.get("rates"):
        rates, cores = vector["rates"], vector["usable_cores"]
        parts += [f"## Vector envs on {cores} cores",
                  f"Every vector env on all {cores} usable cores (worker processes or threads); "
                  f"EnvPool {vector.get('envpool') or 'not installed'}.",
                  "### Throughput, 8 envs, synchronous step", table(
                      ["system", "steps/s", "of the ceiling"],
                      [[r["system"], number(r["steps_per_s"]), number(r["ratio_to_ceiling"], 2)]
                       for r in rates if r["num_envs"] == 8]),
                  table(["ratio", "median of the rounds"],
                        [[name, number(value, 2) + "x"]
                         for name, value in vector["ratios"].items()])]
        sizes = sorted({r["num_envs"] for r in rates})
        systems = list(dict.fromkeys(r["system"] for r in rates))
        cell = {(r["system"], r["num_envs"]): r["steps_per_s"] for r in rates}
        parts += ["### Scaling: steps/s against the number of envs", table(
            ["system"] + [f"N={k}" for k in sizes],
            [[name] + [number(cell.get((name, k))) for k in sizes] for name in systems])]
        startup = vector.get("startup") or {}
        if startup:
            parts += ["### Start-up and memory, each in a fresh interpreter", table(
                ["system", "envs", "start-up (s)", "processes", "memory of its processes (MB)"],
                [[name, str(r["num_envs"]), number(r["startup_s"], 2), str(r["processes"]),
                  number(r["main_rss_delta_mb"] + r["children_rss_mb"])]
                 for name, r in startup.items()])]
    return "\n\n".join(parts) + "\n"


def write_tables(app: Any) -> None:
    with open(os.path.join(app.srcdir, SOURCE)) as f:
        text = render(json.load(f))
    path = os.path.join(app.srcdir, TARGET)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = open(path).read() if os.path.exists(path) else None
    if text != old:  # an unchanged file keeps Sphinx's cache of the page
        with open(path, "w") as f:
            f.write(text)


def setup(app: Any) -> Dict[str, Any]:
    app.connect("builder-inited", write_tables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
