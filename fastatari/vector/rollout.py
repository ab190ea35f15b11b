"""``T`` steps of a vector env under one policy, as arrays (:meth:`AtariVectorEnv.rollout`);
``fastatari.ray`` joins its actors' rollouts."""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Protocol, Sequence

import numpy as np

from fastatari.vector.infos import concat, stack

__all__ = ["Rollout", "join", "run"]


class Stepping(Protocol):
    """What :func:`run` uses of a vector env (:class:`~fastatari.AtariVectorEnv`): its size,
    its executor's shared buffers and ``step``."""

    num_envs: int
    executor: Any

    def step(self, actions: Any) -> Any: ...


class Rollout(NamedTuple):
    """``T`` steps of all envs under one policy (:meth:`AtariVectorEnv.rollout`).

    ``obs[t]`` is what the policy saw at step ``t``, ``actions[t]`` what it chose,
    ``rewards[t]``, ``terminated[t]`` and ``truncated[t]`` the step's outcome; ``next_obs`` is
    the observation after the last step. ``info`` holds the steps' batched info dicts stacked:
    each entry ``(T, N)`` with its ``_key`` mask ``(T, N)`` (``info["game"]["r"][t, i]`` is
    the return of env ``i``'s game that ended at step ``t``, where ``info["_game"][t, i]``).
    """

    obs: np.ndarray  # (T, N, *obs_shape) uint8
    actions: np.ndarray  # (T, N) int64, or (T, N, 3) float32 continuous actions
    rewards: np.ndarray  # (T, N) float64
    terminated: np.ndarray  # (T, N) bool
    truncated: np.ndarray  # (T, N) bool
    next_obs: np.ndarray  # (N, *obs_shape) uint8
    info: Dict[str, Any]  # entries (T, N)


def run(env: Stepping, policy: Callable[[np.ndarray], Any], num_steps: int,
        obs: np.ndarray) -> Rollout:
    """``num_steps`` synchronous steps of ``env`` (reset, idle, with an autoreset mode), with
    ``actions = policy(obs)`` before each; ``obs`` (``(num_steps, N, *obs_shape)``) receives
    the observations the policy saw."""
    count = env.num_envs
    current = env.executor.buffers.obs  # the latest observations (what step() returns)
    action = env.executor.buffers.action  # the checked actions step() wrote, for the workers
    actions = np.empty((num_steps,) + action.shape, action.dtype)
    rewards = np.empty((num_steps, count), np.float64)
    terminated = np.empty((num_steps, count), bool)
    truncated = np.empty((num_steps, count), bool)
    infos = []
    for t in range(num_steps):
        obs[t] = current
        _, rewards[t], terminated[t], truncated[t], info = env.step(policy(obs[t]))
        actions[t] = action  # as step() checked and converted them, once
        infos.append(info)
    return Rollout(obs, actions, rewards, terminated, truncated, current.copy(), stack(infos))


def join(parts: Sequence[Rollout], sizes: Sequence[int]) -> Rollout:
    """Rollouts of consecutive blocks of envs (``sizes[k]`` envs in ``parts[k]``) as one."""
    def joined(column: int) -> np.ndarray:
        return np.concatenate([part[column] for part in parts], axis=1)

    return Rollout(joined(0), joined(1), joined(2), joined(3), joined(4),
                   np.concatenate([part.next_obs for part in parts]),
                   concat([(part.info, size) for part, size in zip(parts, sizes, strict=True)],
                          axis=1))
