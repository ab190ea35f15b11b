"""The sections of ``fastatari bench``, registered once, in the order they run and report.

Each module here is one section and ends with its ``SECTION``
(:class:`fastatari.bench.harness.Section`): its name for ``--section``, a line of help, how
it runs and how it reports. A new section is a module here and its line in :data:`REGISTRY`;
the runner and the command line take every section from this registry.

``envs``
    one env's agent steps/s against the raw-ALE ceiling and gymnasium's reference pipeline;
``kernels``
    the preprocessing after emulation, fastatari's kernels against OpenCV/numpy;
``vector``
    vector envs side by side: throughput, scaling, start-up, memory, async, the scaling plot;
``transport``
    the vector env's transport alone (workers that do not emulate), against the number of
    workers, and a model of its cost at more cores;
``multigame``
    pools of the Atari-57 games (cost-balanced and contiguous) against the ceiling of their
    mix, and a 57-game pool's start-up;
``ray``
    :mod:`fastatari.ray` against the local vector env (sync, async, rollout) on a simulated
    two-node cluster, and a model of a real cluster; needs Ray.
"""
from __future__ import annotations

from fastatari.bench.harness import Section
from fastatari.bench.sections import envs, kernels, multigame, ray, transport, vector

REGISTRY: tuple[Section, ...] = (envs.SECTION, kernels.SECTION, vector.SECTION,
                                 transport.SECTION, multigame.SECTION, ray.SECTION)
SECTIONS = tuple(section.name for section in REGISTRY)  # the names ``--section`` takes

__all__ = ["REGISTRY", "SECTIONS"]
