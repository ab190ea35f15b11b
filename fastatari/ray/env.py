"""RayAtariVectorEnv: the vector env over Ray actors, and ``rollout`` next to the envs."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import ray

from fastatari.ray.executor import DEFAULT_ACTOR_TIMEOUT, RayExecutor, Recovered
from fastatari.vector.calls import one_caller
from fastatari.vector.env import AtariVectorEnv
from fastatari.vector.executor import check_command
from fastatari.vector.messages import Reply
from fastatari.vector.plan import plan_vec
from fastatari.vector.rollout import Rollout, join

__all__ = ["DEFAULT_ACTOR_TIMEOUT", "RayAtariVectorEnv", "Rollout", "make_vec"]


class RayAtariVectorEnv(AtariVectorEnv):
    """``num_envs`` Atari games on ``num_actors`` Ray actors, each running a local executor.

    The vector env's contract, errors and results are :class:`~fastatari.AtariVectorEnv`'s;
    only what runs the envs differs (a :class:`~fastatari.ray.executor.RayExecutor`). Made by
    :func:`make_vec`; see there for the parameters.
    """

    executor: RayExecutor

    # -- the actors ------------------------------------------------------------------------------
    @property
    def num_actors(self) -> int:
        return self.executor.num_actors

    @property
    def blocks(self) -> List[range]:
        """The envs of each actor: actor ``k`` owns ``blocks[k]``."""
        return self.executor.blocks

    @property
    def actors(self) -> List[Any]:
        """The Ray actor handles, in env order: actor ``k`` owns the envs ``blocks[k]``."""
        return self.executor.actors

    @property
    def nodes(self) -> List[str]:
        """The node id of each actor."""
        return self.executor.nodes

    @property
    def restarts(self) -> int:
        """Actor recoveries so far (deaths, nodes lost)."""
        return self.executor.restarts

    @one_caller
    def actor_info(self) -> List[Dict[str, Any]]:
        """Per actor: its node id, process id and its local workers' process ids."""
        self._check_open()
        seen: List[Reply] = []
        described = self.executor.call_all("describe", range(self.num_actors), lambda k: (),
                                           seen.append)
        self.book.apply(seen)
        check_command(seen, "actor_info")  # an actor that raised: no description
        return [described[k] for k in range(self.num_actors)]

    # -- rollout ---------------------------------------------------------------------------------
    @one_caller
    def rollout(self, policy: Any, num_steps: int) -> Rollout:
        """``num_steps`` steps of every env with ``actions = policy(obs)``, run on the actors.

        ``policy`` is any picklable callable taking one actor's observations ``(n, *shape)``
        and returning its ``n`` actions (or an ``ObjectRef`` of one): it goes through the
        object store once per call (``ray.put``), is fetched once per node and runs next to
        the envs; each actor makes one remote call for the whole rollout, stepping its envs
        by this env's own rules. The envs continue from where they are, and stay there
        afterwards for the next rollout or step. Needs an autoreset mode (``next_step`` or
        ``same_step``).
        """
        num_steps = self._check_rollout(num_steps)
        if not callable(policy) and not isinstance(policy, ray.ObjectRef):
            raise TypeError(f"policy must be callable (obs -> actions), got {policy!r}")
        policy_ref = policy if isinstance(policy, ray.ObjectRef) else ray.put(policy)
        # an actor lost meanwhile is recovered, then asked again; one whose policy (or step)
        # raised is not: its envs were reset with the recovery, the others' steps are taken
        blocks = [slice(block.start, block.stop) for block in self.blocks]
        answers = self.executor.call_all(
            "rollout", range(self.num_actors),
            lambda k: (policy_ref, num_steps, *self.book.get(blocks[k])),
            lambda reply: self.book.apply([reply]))
        parts = []
        raised: Optional[BaseException] = None
        for k, answer in answers.items():
            if isinstance(answer, Recovered):
                raised = raised or answer.cause
                continue
            steps, (ended, restarted), rows = answer
            self.book.set(blocks[k], ended, restarted)
            self.executor.buffers.put_rows(np.arange(blocks[k].start, blocks[k].stop), rows)
            parts.append(steps)
        if raised is not None:
            raise raised
        return join(parts, [len(block) for block in self.blocks])


def make_vec(game: str | Sequence[str], num_envs: int, num_actors: Optional[int] = None,
             placement: Any = "node", actor_options: Optional[Dict[str, Any]] = None,
             actor_timeout: Optional[float] = DEFAULT_ACTOR_TIMEOUT,
             **kwargs: Any) -> RayAtariVectorEnv:
    """``num_envs`` copies of ``game`` on Ray actors: a gymnasium ``VectorEnv``.

    Uses the Ray this process is connected to (``ray.init(address=...)`` first), or the cluster
    ``RAY_ADDRESS`` names; else starts a private one on this machine, on loopback (127.0.0.1)
    only, stopped when its last env closes.

    Parameters
    ----------
    game, num_envs
        As :func:`fastatari.make_vec` (``game``: one name, or one per env; ``mode`` and
        ``difficulty`` may be ``{game: value}``).
    num_actors : int, optional
        Default: one per alive node that can host one (``placement="node"``), else 1. Actor
        ``k`` owns a contiguous block of envs, as even as possible.
    placement : {"node", "spread", "default"} or a Ray scheduling strategy
        ``"node"``: actor ``k`` prefers node ``k mod nodes`` (soft affinity: when that node is
        gone, a restart lands elsewhere); ``"spread"``: Ray's ``SPREAD``; ``"default"``: Ray's
        choice; a strategy object (e.g. a ``PlacementGroupSchedulingStrategy``) is used as is.
    actor_options : dict, optional
        Ray actor options (``num_cpus`` default 1, ``memory``, ``resources``,
        ``runtime_env``, ...). ``max_restarts=-1`` and ``max_task_retries=0`` are fastatari's.
    actor_timeout : float or None
        Seconds creating or restarting an actor may take (default 300; None: forever).
    **kwargs
        :func:`fastatari.make_vec`'s keywords (:class:`~fastatari.vector.config.VectorConfig`:
        ``num_workers`` and ``cpus`` are per actor, on its node; ``batch_size`` is what
        :meth:`~RayAtariVectorEnv.recv` returns across actors; ``max_crashes_without_progress``
        and ``max_restarts`` also govern actor restarts) and :class:`~fastatari.AtariOptions`
        fields.
    """
    plan = plan_vec(game, num_envs, **kwargs)
    return RayAtariVectorEnv(plan, RayExecutor(plan, num_actors, placement, actor_options,
                                               actor_timeout))
