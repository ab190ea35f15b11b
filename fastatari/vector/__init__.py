"""N Atari games run in parallel behind one gymnasium VectorEnv.

The submodules, from the API down: ``env`` (:class:`AtariVectorEnv`: gymnasium's contract),
``config`` (the vector keywords, declared once), ``contract`` (call order, autoreset names),
``executor`` (what runs the envs, and the rules every runner shares), then the local
executor: ``pool`` (worker processes, replies, restarts), ``protocol`` (the messages),
``launch`` (how a worker process starts), ``worker`` (the worker's loop), ``buffers`` (the
shared memory), ``lineup`` (games, options, which worker runs which env), ``placement`` (cores
and pinning). Importing this package imports none of them until a name below is used, so a
worker process never loads the trainer-side modules.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastatari.vector.env import AtariVectorEnv
    from fastatari.vector.executor import WorkerError

__all__ = ["AtariVectorEnv", "WorkerError", "make_vec"]


def make_vec(game: Any, num_envs: int, **kwargs: Any) -> "AtariVectorEnv":
    """Create an :class:`AtariVectorEnv`: ``num_envs`` copies of ``game`` (or one game per
    env) stepped in parallel.

    Keywords are :class:`AtariVectorEnv`'s (``num_workers``, ``batch_size``,
    ``autoreset_mode``, ``copy``, ``timeout``, ``max_restarts``, ``cpus``, ...: declared in
    :class:`~fastatari.vector.config.VectorConfig`) and :class:`~fastatari.AtariOptions`
    fields (``frame_skip``, ``noop_max``, ``repeat_action_probability``, ...).
    """
    from fastatari.vector.env import AtariVectorEnv

    return AtariVectorEnv(game, num_envs, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "AtariVectorEnv":
        from fastatari.vector.env import AtariVectorEnv

        return AtariVectorEnv
    if name == "WorkerError":
        from fastatari.vector.executor import WorkerError

        return WorkerError
    raise AttributeError(f"module 'fastatari.vector' has no attribute {name!r}")
