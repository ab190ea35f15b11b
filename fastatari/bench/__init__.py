"""``fastatari bench``: fastatari side by side with what it replaces, on the user's machine:
the kernels against OpenCV/numpy, ``AtariEnv`` against gymnasium's pipeline and the raw-ALE
ceiling, the vector env against EnvPool, ale_py's and gymnasium's (throughput, scaling,
start-up, memory). ``systems`` (the vector envs under test), ``harness`` (config, contenders,
round-robin rounds, the ceiling, tables, :class:`Section`), ``sections`` (one module each),
``runner`` (the report). The diagnostics live in the repository's ``benchmarks/``.
"""
from fastatari.bench.harness import DEFAULT_SECTIONS, QUICK, BenchConfig, Section
from fastatari.bench.runner import Report, markdown_report, publish, run_benchmark
from fastatari.bench.sections import REGISTRY, SECTIONS
from fastatari.bench.sections.vector import write_plot

__all__ = ["DEFAULT_SECTIONS", "QUICK", "REGISTRY", "SECTIONS", "BenchConfig", "Report",
           "Section", "markdown_report", "publish", "run_benchmark", "write_plot"]
