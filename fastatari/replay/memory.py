"""The replay memory's NumPy core: transitions of ``n_envs`` streams in a ring, frames stored
once (:class:`~fastatari.replay._core.FrameStore`), uniform samples as NumPy arrays."""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Sequence

import numpy as np

from fastatari.core import validate
from fastatari.replay._core import FrameStore
from fastatari.replay.layout import check_rows, stack_layout

__all__ = ["Batch", "ReplayMemory"]


class Batch(NamedTuple):
    """Sampled transitions: ``obs`` and ``next_obs`` ``(B, *obs_shape)`` uint8, ``actions``
    ``(B, *action_shape)``, ``rewards`` float32, ``terminated`` and ``truncated`` bool, and
    where they lie (``slots``, ``envs``)."""

    obs: np.ndarray
    actions: np.ndarray
    next_obs: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    slots: np.ndarray
    envs: np.ndarray


class ReplayMemory:
    """``capacity`` transitions (``capacity // n_envs`` per stream, oldest overwritten first)
    of ``n_envs`` envs stepped together, observations uint8 stacks of shape ``obs_shape``.

    Each distinct frame is stored once; a sampled stack is byte-identical to the one added.
    ``frame_stack`` and ``stack_axis``: :func:`~fastatari.replay.layout.stack_layout`;
    ``disk``: a folder for the frames, memory-mapped (:class:`FrameStore`).
    Torch-free: samples are NumPy arrays (for JAX, or anything else).
    """

    def __init__(self, capacity: int, obs_shape: Sequence[int], n_envs: int = 1, *,
                 frame_stack: Optional[int] = None, stack_axis: Optional[int] = None,
                 action_shape: Sequence[int] = (), action_dtype: Any = np.int64,
                 disk: Optional[str] = None) -> None:
        capacity = validate.check_int("capacity", capacity, 1)
        n_envs = validate.check_int("n_envs", n_envs, 1, capacity)
        stack, axis = stack_layout(obs_shape, frame_stack, stack_axis)
        per_env = capacity // n_envs
        self.n_envs = n_envs
        self.frames = FrameStore(per_env, n_envs, tuple(obs_shape), stack, axis, disk)
        self.actions = np.zeros((per_env, n_envs, *action_shape), action_dtype)
        self.rewards = np.zeros((per_env, n_envs), np.float32)
        self.terminated = np.zeros((per_env, n_envs), bool)
        self.truncated = np.zeros((per_env, n_envs), bool)

    @property
    def obs_shape(self) -> tuple:
        return self.frames.obs_shape

    def __len__(self) -> int:
        """Transitions held (all streams)."""
        return self.frames.size * self.n_envs

    @property
    def nbytes(self) -> int:
        """Bytes allocated, frames and the rest."""
        return self.frames.nbytes + sum(a.nbytes for a in (self.actions, self.rewards,
                                                           self.terminated, self.truncated))

    def add(self, obs: np.ndarray, next_obs: np.ndarray, actions: Any, rewards: Any,
            terminated: Any, truncated: Any) -> None:
        """One step of every stream: arrays with ``n_envs`` rows (``next_obs``: the step's
        true next observation, the final one where an episode ended). Checked whole before
        anything is stored."""
        n = self.n_envs
        actions = check_rows("actions", actions, (n, *self.actions.shape[2:]), self.actions.dtype)
        rewards = check_rows("rewards", rewards, (n,), np.float32)
        terminated = check_rows("terminated", terminated, (n,), bool)
        truncated = check_rows("truncated", truncated, (n,), bool)
        pos = self.frames.pos
        self.frames.put(obs, next_obs)  # checks the stacks before it stores anything
        self.actions[pos], self.rewards[pos] = actions, rewards
        self.terminated[pos], self.truncated[pos] = terminated, truncated

    def sample(self, batch_size: int, rng: Optional[np.random.Generator] = None) -> Batch:
        """``batch_size`` transitions drawn uniformly with replacement (``rng``: default
        NumPy's ``default_rng()``)."""
        batch_size = validate.check_int("batch_size", batch_size, 1)
        if not len(self):
            raise ValueError("cannot sample from an empty replay memory")
        rng = np.random.default_rng() if rng is None else rng
        slots = rng.integers(0, self.frames.size, batch_size)
        envs = rng.integers(0, self.n_envs, batch_size)
        obs, next_obs = self.frames.gather(slots, envs)
        return Batch(obs, self.actions[slots, envs], next_obs, self.rewards[slots, envs],
                     self.terminated[slots, envs], self.truncated[slots, envs], slots, envs)

    def state_dict(self) -> Dict[str, Any]:
        """Everything to resume exactly (NumPy arrays; ``np.savez`` writes it)."""
        return {"frames": self.frames.state_dict(), "actions": self.actions.copy(),
                "rewards": self.rewards.copy(), "terminated": self.terminated.copy(),
                "truncated": self.truncated.copy()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Take a :meth:`state_dict` of a memory of the same shape, checked before anything
        changes."""
        arrays = {name: np.asarray(state[name]) for name in
                  ("actions", "rewards", "terminated", "truncated")}
        for name, array in arrays.items():
            if array.shape != getattr(self, name).shape:
                raise ValueError(f"the state's {name} has the shape {array.shape}, this memory's "
                                 f"{getattr(self, name).shape}")
        self.frames.load_state_dict(state["frames"])
        for name, array in arrays.items():
            getattr(self, name)[...] = array

