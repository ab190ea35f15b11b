"""One Ray actor: a local executor on its node. Every call carries the driver's *epoch* for
this actor, bumped at every recovery, and one of another epoch is refused: no call runs on an
instance the driver has not started."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import ray

from fastatari.vector import rollout
from fastatari.vector.env import AtariVectorEnv
from fastatari.vector.messages import Reply, ResetRequest
from fastatari.vector.plan import VectorPlan
from fastatari.vector.pool import WorkerPool

__all__ = ["ActorRestarted", "EnvActor"]

# (replies, the envs whose rows follow, the rows of the result columns)
Answer = Tuple[List[Reply], np.ndarray, Dict[str, np.ndarray]]


class ActorRestarted(RuntimeError):
    """A call reached an actor instance of another epoch: Ray restarted the actor and the
    driver has not recovered it yet, or the call was sent before the last recovery."""


class EnvActor:
    """The envs of ``plan`` (a block of the driver's), run by a local :class:`WorkerPool`,
    which checks the plan's worker settings on this node (its cores are the default). Env ids
    in calls are the block's own (``0 .. plan.num_envs - 1``)."""

    def __init__(self, plan: VectorPlan) -> None:
        self.plan = plan
        self.epoch: Optional[int] = None  # set by start(); None on a fresh instance
        self.pool: Optional[WorkerPool] = None
        self.front: Optional[AtariVectorEnv] = None  # for rollouts, made at the first
        self.rollout_obs: Optional[np.ndarray] = None

    def _check(self, epoch: int) -> WorkerPool:
        if epoch != self.epoch or self.pool is None:
            raise ActorRestarted(f"call of epoch {epoch} reached an actor of epoch {self.epoch}")
        return self.pool

    def describe(self, epoch: int) -> Dict[str, Any]:
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "worker_pids": self._check(epoch).pids}

    def start(self, epoch: int, seeds: List[Optional[int]], resets: Sequence[ResetRequest],
              rows: Optional[Dict[str, np.ndarray]]) -> Tuple[Dict[str, Any],
                                                              Optional[Dict[str, np.ndarray]]]:
        """Adopt ``epoch`` and start the workers. ``seeds``: each env's last seed on the driver.
        ``resets`` (a recovery): the envs' replacement games, reported truncated, with
        ``rows`` (the driver's last results) as the ended episodes' last step. Returns the
        description and the rows after the resets."""
        self.close()
        pool = WorkerPool(self.plan)
        if resets:
            pool.seeds.take_over(seeds)
        if rows is not None:
            pool.buffers.put_rows(np.arange(self.plan.num_envs), rows)
        pool.start(resets, restarted=bool(resets))
        self.pool, self.epoch = pool, epoch
        after = self._rows(np.arange(self.plan.num_envs)) if resets else None
        return self.describe(epoch), after

    def _rows(self, ids: np.ndarray) -> Dict[str, np.ndarray]:
        assert self.pool is not None
        return self.pool.buffers.rows(ids, finals=self.plan.config.same_step)

    def _answer(self, replies: List[Reply], reset: Sequence[int] = ()) -> Answer:
        """The replies, and the rows of every env they answered or restarted (or ``reset``)."""
        touched = [np.asarray(reset, np.int64)]
        touched += [r.envs for r in replies if r.envs is not None]
        touched += [r.restarted for r in replies if r.restarted is not None]
        ids = np.unique(np.concatenate(touched))
        return replies, ids, self._rows(ids)

    def run(self, epoch: int, ops: np.ndarray, actions: np.ndarray) -> Answer:
        """Run ``ops`` with ``actions`` (one of each per env of the block); wait for all."""
        pool = self._check(epoch)
        pool.buffers.action[:] = actions
        pool.run(ops)
        replies: List[Reply] = []  # the DONE ones too: the driver's recv takes its envs from them
        while pool.busy():
            replies += pool.collect()
        return self._answer(replies)

    def command(self, epoch: int, name: str, items: Sequence[Tuple[int, Any]]
                ) -> Tuple[List[Any], Answer]:
        """The pool's command ``name`` on ``items``, ``(env, payload)`` pairs: its values and
        the answer, with the rows of the envs reset or restored (their observations)."""
        values, replies = self._check(epoch).command(name, items)
        return values, self._answer(replies, [i for i, _ in items]
                                    if name in ("reset", "restore") else ())

    def rollout(self, epoch: int, policy: Any, num_steps: int, ended: np.ndarray,
                restarted: np.ndarray) -> Tuple[rollout.Rollout, Tuple[np.ndarray, np.ndarray],
                                                Dict[str, np.ndarray]]:
        """``num_steps`` steps of every env by the vector env's own rules, this actor's envs
        under the driver's per-env state (``ended``, ``restarted``). Returns the steps, the
        state after them and the rows of every env."""
        pool = self._check(epoch)
        if self.front is None:  # (start() drops the last pool's)
            self.front = AtariVectorEnv(self.plan, pool, started=True)
        self.front.adopt(ended, restarted)
        # kept between calls (a result is copied into the object store as it is returned):
        # the observations' pages are touched once, not at every rollout
        shape = (num_steps,) + pool.buffers.obs.shape
        if self.rollout_obs is None or self.rollout_obs.shape != shape:
            self.rollout_obs = np.empty(shape, np.uint8)
        steps = rollout.run(self.front, policy, num_steps, self.rollout_obs)
        return steps, self.front.book.get(slice(None)), self._rows(np.arange(self.plan.num_envs))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        self.pool = self.front = None
