"""fastatari on Ray: the vector env's envs on Ray actors, one per node.

``from fastatari import ray as fa_ray``; ``fa_ray.make_vec(game, num_envs, num_actors=...)``
returns a :class:`RayAtariVectorEnv`: :class:`fastatari.AtariVectorEnv`'s gymnasium contract
over a :class:`~fastatari.ray.executor.RayExecutor`. Actor ``k`` owns the contiguous block of
envs ``blocks[k]`` and runs them with a local executor (its worker processes and shared memory
stay on the actor's node); the driver scatters actions and gathers the rows of results through
Ray's object store. A Ray call costs an order of magnitude more than the local step's
transport, so the unit of work is a node, never an env: throughput comes from whole blocks per
call, batches in flight (``send`` / ``recv``) and :meth:`RayAtariVectorEnv.rollout`, which runs
``T`` steps of a policy next to the envs in one call.

Contract: the local env's, by construction. Sub-env ``i`` after ``reset(seed=s)`` is
byte-identical to the local env's sub-env ``i`` (seed ``s + i``), whatever the number of
actors; a dead actor or node is recovered like a dead local worker (its envs re-seeded and
reported truncated with ``info["worker_restarted"]``, the others untouched). The modules:
``env`` (the vector env, ``rollout``, :func:`make_vec`), ``executor`` (actors, calls,
recovery), ``actor`` (one actor: a local executor).
"""
from __future__ import annotations

try:  # absolute import: this package is fastatari.ray, the package it needs is ray
    import ray  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the install
    raise ImportError("fastatari.ray needs Ray: pip install 'fastatari[ray]'") from error

from fastatari.ray.actor import ActorRestarted
from fastatari.ray.env import RayAtariVectorEnv, Rollout, make_vec
from fastatari.ray.executor import DEFAULT_ACTOR_TIMEOUT

__all__ = ["ActorRestarted", "DEFAULT_ACTOR_TIMEOUT", "RayAtariVectorEnv", "Rollout",
           "make_vec"]
