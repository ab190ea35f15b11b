"""The throughput harness behind ``fastatari bench``: fastatari against the raw-ALE ceiling,
gymnasium's reference pipeline, OpenCV/numpy, and other vector envs.

Modules, each importing only those above it:

``fresh``
    start-up and memory of one vector env, run as a script in a fresh interpreter (standard
    library imports only), and gymnasium's reference pipeline;
``harness``
    what every section shares: config, contenders, round-robin measurement, the raw-ALE loop,
    Markdown tables, and :class:`~fastatari.bench.harness.Section`, the interface of a section;
``load``
    how many cores other processes took meanwhile, and the warning when the machine was busy;
``ceiling``
    the emulation ceiling in parallel: bare loops in processes of their own, run together;
``systems``
    the systems under test, opened alike for every section (fastatari, gymnasium, ale_py,
    EnvPool);
``sections``
    the sections, one module each, and their registry (``envs``, ``kernels``, ``vector``,
    ``transport``, ``trainer``, ``multigame``, ``ray``);
``runner``
    runs the chosen sections and builds the report (Markdown and JSON).

``calibrate`` (``python -m fastatari.bench.calibrate``) measures each game's emulation cost
for the vector env's worker assignment; it is not a section. Needs the ``bench`` extra.
"""
from fastatari.bench.harness import DEFAULT_SECTIONS, QUICK, BenchConfig, Section
from fastatari.bench.runner import Report, markdown_report, run_benchmark
from fastatari.bench.sections import REGISTRY, SECTIONS
from fastatari.bench.sections.vector import write_plot

__all__ = ["DEFAULT_SECTIONS", "QUICK", "REGISTRY", "SECTIONS", "BenchConfig", "Report",
           "Section", "markdown_report", "run_benchmark", "write_plot"]
