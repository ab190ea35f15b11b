"""``fastatari bench``: fastatari side by side with what it replaces, on the user's machine.

The kernels against OpenCV/numpy, ``AtariEnv`` against gymnasium's pipeline and the raw-ALE
ceiling, the vector env against EnvPool, ale_py's ``AtariVectorEnv`` and gymnasium's
``AsyncVectorEnv`` (throughput, scaling, start-up and memory). Modules, each importing only
those above it: ``systems`` (the vector envs under test; start-up in a fresh interpreter),
``harness`` (config, contenders, round-robin rounds, the raw-ALE loop, tables, and
:class:`Section`), ``ceiling`` (the ceiling's loops in parallel processes), ``sections`` (one
module per section, registered once), ``runner`` (runs the chosen sections into the report).
The diagnostics live in the repository's ``benchmarks/``. Needs the ``bench`` extra.
"""
from fastatari.bench.harness import DEFAULT_SECTIONS, QUICK, BenchConfig, Section
from fastatari.bench.runner import Report, markdown_report, run_benchmark
from fastatari.bench.sections import REGISTRY, SECTIONS
from fastatari.bench.sections.vector import write_plot

__all__ = ["DEFAULT_SECTIONS", "QUICK", "REGISTRY", "SECTIONS", "BenchConfig", "Report",
           "Section", "markdown_report", "run_benchmark", "write_plot"]
