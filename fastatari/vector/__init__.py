"""N Atari games in worker processes over shared memory: a gymnasium VectorEnv.

The submodules, from the API down: ``env`` (:class:`AtariVectorEnv`: gymnasium's contract),
``pool`` (worker processes, replies, restarts), ``protocol`` (the messages), ``launch`` (how a
worker process starts), ``worker`` (the worker's loop), ``buffers`` (the shared block),
``placement`` (cores and pinning). Importing this package imports none of them until a name
below is used, so a worker process never loads the trainer-side modules.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from fastatari.vector.env import AtariVectorEnv
    from fastatari.vector.pool import WorkerError

__all__ = ["AtariVectorEnv", "WorkerError", "make_vec"]


def make_vec(game: str, num_envs: int, num_workers: Optional[int] = None,
             batch_size: Optional[int] = None, autoreset_mode: str = "next_step",
             copy: bool = True, **kwargs: Any) -> "AtariVectorEnv":
    """Create an :class:`AtariVectorEnv`: ``num_envs`` copies of ``game`` stepped in parallel.

    Parameters are :class:`AtariVectorEnv`'s (``timeout``, ``max_restarts``, ``cpus``, ...);
    the other keywords are :class:`~fastatari.AtariOptions` fields (``frame_skip``,
    ``noop_max``, ``repeat_action_probability``, ...).
    """
    from fastatari.vector.env import AtariVectorEnv

    return AtariVectorEnv(game, num_envs, num_workers=num_workers, batch_size=batch_size,
                          autoreset_mode=autoreset_mode, copy=copy, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "AtariVectorEnv":
        from fastatari.vector.env import AtariVectorEnv

        return AtariVectorEnv
    if name == "WorkerError":
        from fastatari.vector.pool import WorkerError

        return WorkerError
    raise AttributeError(f"module 'fastatari.vector' has no attribute {name!r}")
