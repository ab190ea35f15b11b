"""The throughput harness behind ``fastatari bench``: fastatari against the raw-ALE ceiling,
gymnasium's reference pipeline, OpenCV/numpy, and other vector envs.

Modules, each importing only those above it:

``probe``
    start-up and memory of one vector env, run as a script in a fresh interpreter (standard
    library imports only), and gymnasium's reference pipeline;
``harness``
    config, contenders, round-robin measurement, the ``envs`` and ``kernels`` sections, tables;
``vector``
    the ``vector`` section: throughput, scaling, start-up, memory, async, the scaling plot;
``transport``
    the ``transport`` section: the vector env's transport alone (workers that do not emulate),
    against the number of workers, and a model of its cost at more cores;
``multigame``
    the ``multigame`` section: pools of the Atari-57 games (cost-balanced and contiguous)
    against the ceiling of their mix, and a 57-game pool's start-up;
``ray_section``
    the ``ray`` section: :mod:`fastatari.ray` against the local vector env (sync, async,
    rollout) on a simulated two-node cluster, and a model of a real cluster; needs Ray;
``runner``
    runs the chosen sections and builds the Markdown report.

Needs the ``bench`` extra.
"""
from fastatari.bench.harness import DEFAULT_SECTIONS, QUICK, SECTIONS, BenchConfig, Report
from fastatari.bench.runner import markdown_report, run_benchmark
from fastatari.bench.vector import write_plot

__all__ = ["DEFAULT_SECTIONS", "QUICK", "SECTIONS", "BenchConfig", "Report", "markdown_report",
           "run_benchmark", "write_plot"]
