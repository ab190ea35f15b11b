"""N Atari games run in parallel behind one gymnasium VectorEnv.

The submodules, from the API down: ``env`` (:class:`AtariVectorEnv`: gymnasium's contract),
``snapshots`` (clone, restore, checkpoints), ``_step`` and ``_book`` (the step, compiled, and
the per-env bookkeeping it reads), ``plan``
(:func:`plan_vec`: games, options, actions and memory, checked before anything starts),
``config`` (the vector keywords, declared once), ``calls`` (the call order, one caller at a
time), ``resets`` (autoreset names, reset masks), ``spaces`` (the batched observation space),
``infos`` (batched info dicts), ``rollout`` (T steps as arrays), ``executor`` (what runs the
envs, and the rules every runner shares), then the local executor: ``pool`` (worker processes,
replies, restarts), ``messages`` (the pipe messages), ``launch`` (how a worker process starts),
``worker`` (the worker's loop), ``buffers`` (the shared memory), ``assignment`` (games, options,
which worker runs which env; ``game_costs``, run with ``python -m``, measures the cost table it
balances by), ``placement`` (cores and pinning), ``host`` (what the platforms do differently,
decided once; forced by ``FASTATARI_PLATFORM_PATHS`` to test other platforms' ways). Importing
this package imports none of them until a name below is used, so a worker process never loads
the trainer-side modules.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastatari.vector.env import AtariVectorEnv
    from fastatari.vector.executor import WorkerError
    from fastatari.vector.plan import VectorPlan, plan_vec
    from fastatari.vector.serials import FrameSerials

__all__ = ["AtariVectorEnv", "FrameSerials", "VectorPlan", "WorkerError", "make_vec",
           "plan_vec"]

# public name -> the module that defines it
_LAZY = {"AtariVectorEnv": "fastatari.vector.env", "WorkerError": "fastatari.vector.executor",
         "VectorPlan": "fastatari.vector.plan", "plan_vec": "fastatari.vector.plan",
         "FrameSerials": "fastatari.vector.serials"}


def make_vec(game: Any, num_envs: int, **kwargs: Any) -> "AtariVectorEnv":
    """Create an :class:`AtariVectorEnv`: ``num_envs`` copies of ``game`` (or one game per
    env) stepped in parallel by local worker processes.

    Keywords are :class:`AtariVectorEnv`'s (``num_workers``, ``batch_size``,
    ``autoreset_mode``, ``copy``, ``timeout``, ``max_restarts``, ``cpus``, ...: declared in
    :mod:`fastatari.vector.config`) and :class:`~fastatari.AtariOptions` fields
    (``frame_skip``, ``noop_max``, ``repeat_action_probability``, ...). The same as
    ``AtariVectorEnv(plan, WorkerPool(plan))`` with ``plan = plan_vec(game, num_envs,
    **kwargs)``.
    """
    from fastatari.vector.env import AtariVectorEnv
    from fastatari.vector.plan import plan_vec
    from fastatari.vector.pool import WorkerPool

    plan = plan_vec(game, num_envs, **kwargs)
    return AtariVectorEnv(plan, WorkerPool(plan))


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fastatari.vector' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
