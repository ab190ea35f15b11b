"""The sections of ``fastatari bench``, registered once, in the order they run and report.

Each module here is one section, named after it, and ends with its ``SECTION``
(:class:`fastatari.bench.harness.Section`); its docstring says what it measures. A new section
is a module here and its entry in :data:`REGISTRY`; the runner and the command line take every
section from it. The diagnostics (transport, trainer, multigame, ...) are sections of the same
shape in the repository's ``benchmarks/``, run from a checkout: ``python -m benchmarks``.
"""
from __future__ import annotations

from fastatari.bench.harness import Section
from fastatari.bench.sections import envs, kernels, vector

REGISTRY: tuple[Section, ...] = (envs.SECTION, kernels.SECTION, vector.SECTION)
SECTIONS = tuple(section.name for section in REGISTRY)  # the names ``--section`` takes

__all__ = ["REGISTRY", "SECTIONS"]
