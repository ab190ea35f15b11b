"""``T`` steps of a vector env under one policy, as arrays (:meth:`AtariVectorEnv.rollout`),
and the batched info dicts (gymnasium's vector layout: arrays with ``_key`` masks) cut and
joined: a rollout stacks its steps' infos; ``fastatari.ray`` joins its actors' rollouts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, NamedTuple, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:
    from fastatari.vector.env import AtariVectorEnv

__all__ = ["Rollout", "concat", "join", "run", "stack", "take"]


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


def run(env: "AtariVectorEnv", policy: Callable[[np.ndarray], Any], num_steps: int,
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


def take(info: Dict[str, Any], rows: Any) -> Dict[str, Any]:
    """The rows ``rows`` of a batched info dict (nested dicts too)."""
    return {key: take(value, rows) if isinstance(value, dict) else value[rows]
            for key, value in info.items()}


def _blank(like: np.ndarray, count: int, axis: int = 0) -> np.ndarray:
    """``count`` rows (along ``axis``) of 'no entry' shaped like ``like``: zeros (False for
    masks), None for object arrays."""
    shape = like.shape[:axis] + (count,) + like.shape[axis + 1:]
    if like.dtype == object:
        return np.full(shape, None, object)
    return np.zeros(shape, like.dtype)


def concat(pieces: Sequence[Tuple[Dict[str, Any], int]], axis: int = 0) -> Dict[str, Any]:
    """One batched info dict from ``(info, rows)`` pieces, joined along ``axis`` (the envs'
    axis). A key some pieces lack is 'no entry' for their rows (zeros, its ``_key`` mask
    False), as gymnasium batches infos."""
    keys: Dict[str, None] = {}
    for info, _ in pieces:
        keys.update(dict.fromkeys(info))
    out: Dict[str, Any] = {}
    for key in keys:
        values = [info.get(key) for info, _ in pieces]
        if any(isinstance(value, dict) for value in values):
            out[key] = concat([(value or {}, rows)
                               for value, (_, rows) in zip(values, pieces, strict=True)], axis)
            continue
        like = next(value for value in values if value is not None)
        out[key] = np.concatenate([value if value is not None else _blank(like, rows, axis)
                                   for value, (_, rows) in zip(values, pieces, strict=True)],
                                  axis=axis)
    return out


def stack(infos: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Batched info dicts, one per step, as one dict of ``(T, N)`` entries ('no entry' where a
    step lacks a key): each step one row of a :func:`concat`."""
    return concat([(take(info, np.newaxis), 1) for info in infos])
