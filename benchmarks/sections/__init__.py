"""The diagnostics, one section each, registered once, in the order they run and report.

Each module is one section, named after it, ending with its ``SECTION``
(:class:`fastatari.bench.harness.Section`, the shape of ``fastatari bench``'s); its docstring
says what it measures. ``python -m benchmarks`` takes every section from :data:`REGISTRY`.
"""
from __future__ import annotations

from benchmarks.sections import (
    async_policy,
    envpool_async,
    multigame,
    multigame_startup,
    ray,
    snapshots,
    trainer,
    transport,
)
from fastatari.bench.harness import Section

REGISTRY: tuple[Section, ...] = (
    transport.SECTION,  # the vector env's transport alone, and a model of it at more cores
    trainer.SECTION,  # the trainer thread's CPU per step, and its fit: fixed + per W + per N
    async_policy.SECTION,  # async send/recv against sync step under a simulated policy
    envpool_async.SECTION,  # async against EnvPool's async
    multigame.SECTION,  # pools of the Atari-57 games against the ceiling of their mix
    multigame_startup.SECTION,  # a 57-game pool's start-up
    ray.SECTION,  # fastatari.ray against the local vector env
    snapshots.SECTION,  # clone/restore against a step
)
SECTIONS = tuple(section.name for section in REGISTRY)  # the names ``--section`` takes

__all__ = ["REGISTRY", "SECTIONS"]
