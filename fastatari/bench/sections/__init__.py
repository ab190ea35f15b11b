"""The sections of ``fastatari bench``, registered once, in the order they run and report.

Each module here is one section, named after it, and ends with its ``SECTION``
(:class:`fastatari.bench.harness.Section`): its name for ``--section``, a line of help (what
``fastatari bench --help`` lists), how it runs and how it reports; its docstring says what it
measures. A new section is a module here and its entry in :data:`REGISTRY`; the runner and the
command line take every section from this registry.
"""
from __future__ import annotations

from fastatari.bench.harness import Section
from fastatari.bench.sections import (envs, kernels, multigame, ray, snapshots, trainer,
                                      transport, vector)

REGISTRY: tuple[Section, ...] = (envs.SECTION, kernels.SECTION, vector.SECTION,
                                 transport.SECTION, trainer.SECTION, multigame.SECTION,
                                 ray.SECTION, snapshots.SECTION)
SECTIONS = tuple(section.name for section in REGISTRY)  # the names ``--section`` takes

__all__ = ["REGISTRY", "SECTIONS"]
