"""N Atari games in worker processes over shared memory: a gymnasium VectorEnv."""
from __future__ import annotations

from typing import Any, Optional

from fastatari.vector.env import AtariVectorEnv, WorkerError

__all__ = ["AtariVectorEnv", "WorkerError", "make_vec"]


def make_vec(game: str, num_envs: int, num_workers: Optional[int] = None,
             batch_size: Optional[int] = None, autoreset_mode: str = "next_step",
             copy: bool = True, **options: Any) -> AtariVectorEnv:
    """Create an :class:`AtariVectorEnv`: ``num_envs`` copies of ``game`` stepped in parallel.

    Parameters are :class:`AtariVectorEnv`'s; ``options`` are :class:`~fastatari.AtariOptions`
    fields (``frame_skip``, ``noop_max``, ``repeat_action_probability``, ...).
    """
    return AtariVectorEnv(game, num_envs, num_workers=num_workers, batch_size=batch_size,
                          autoreset_mode=autoreset_mode, copy=copy, **options)
