"""The sections of ``fastatari bench``, registered once, in the order they run and report.
Each module is one section, named after it, ending with its ``SECTION``
(:class:`~fastatari.bench.harness.Section`); the runner and the command line take every
section from :data:`REGISTRY`. The diagnostics are sections of the same shape in ``benchmarks/``.
"""
from __future__ import annotations

from fastatari.bench.harness import Section
from fastatari.bench.sections import envs, kernels, vector

REGISTRY: tuple[Section, ...] = (envs.SECTION, kernels.SECTION, vector.SECTION)
SECTIONS = tuple(section.name for section in REGISTRY)  # the names ``--section`` takes

__all__ = ["REGISTRY", "SECTIONS"]
