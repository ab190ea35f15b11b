"""fastatari on Ray: the vector env's envs on Ray actors, one per node.

``fa_ray.make_vec(game, num_envs, num_actors=...)`` (``from fastatari import ray as fa_ray``)
returns a :class:`RayAtariVectorEnv`: :class:`fastatari.AtariVectorEnv`'s contract over a
:class:`~fastatari.ray.executor.RayExecutor`, whose actor ``k`` runs the block of envs
``blocks[k]`` with a local executor on its node. The documentation's "Past one machine" page
has placement, the throughput path (:meth:`RayAtariVectorEnv.rollout`) and faults.
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
