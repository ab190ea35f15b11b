"""The replay memory's NumPy core: transitions of ``n_envs`` streams in a ring, frames stored
once (:class:`~fastatari.replay._core.FrameStore`), uniform samples as NumPy arrays."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from fastatari.core import validate
from fastatari.replay._core import FrameStore
from fastatari.replay.layout import (
    check_rows,
    draw_integers,
    flat_state,
    load_flat_state,
    stack_layout,
)
from fastatari.replay.saving import Saving

if TYPE_CHECKING:
    from fastatari.vector.serials import FrameSerials

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


class ReplayMemory(Saving):
    """``capacity`` transitions (``capacity // n_envs`` per stream, oldest overwritten first)
    of ``n_envs`` envs stepped together, observations uint8 stacks of shape ``obs_shape``.

    Each distinct frame is stored once; a sampled stack is byte-identical to the one added.
    ``frame_stack`` and ``stack_axis``: :func:`~fastatari.replay.layout.stack_layout`;
    ``disk``: a folder for the frames, memory-mapped (:class:`FrameStore`).
    Torch-free: samples are NumPy arrays (for JAX, or anything else). ``save``, ``load`` and
    ``ReplayMemory.open(folder)``: a checkpoint of it (:class:`~fastatari.replay.saving.
    Saving`).
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

    @property
    def disk(self) -> Optional[str]:
        """The folder the frames live in, or None (in memory)."""
        return self.frames.disk

    def init_args(self) -> Dict[str, Any]:
        return {"capacity": self.frames.capacity * self.n_envs, "obs_shape": self.obs_shape,
                "n_envs": self.n_envs, "frame_stack": self.frames.stack,
                "stack_axis": self.frames.axis, "action_shape": self.actions.shape[2:],
                "action_dtype": self.actions.dtype.str}

    def __len__(self) -> int:
        """Transitions held (all streams)."""
        return self.frames.size * self.n_envs

    @property
    def nbytes(self) -> int:
        """Bytes allocated, frames and the rest."""
        return self.frames.nbytes + sum(a.nbytes for a in (self.actions, self.rewards,
                                                           self.terminated, self.truncated))

    def add(self, obs: np.ndarray, next_obs: np.ndarray, actions: Any, rewards: Any,
            terminated: Any, truncated: Any, *, serials: Optional[FrameSerials] = None
            ) -> None:
        """One step of every stream: arrays with ``n_envs`` rows (``next_obs``: the step's
        true next observation, the final one where an episode ended). Every argument is
        checked and converted before anything is stored (whole or nothing): the stacks
        uint8 arrays of shape ``(n_envs, *obs_shape)``; the rest converted only where nothing
        changes meaning (:func:`~fastatari.replay.layout.convert`: whole-number actions,
        boolean or 0/1 flags, rewards finite in float32). TypeError for what is not numbers,
        ValueError for another shape or such a value, each naming the argument.

        ``serials``: fastatari's vector env's ``frame_serials`` of the step these observations
        come from (``obs`` and ``next_obs`` the arrays it returned, the final observations put
        in where episodes ended): a stream whose observation is its last next one and whose
        next observation that moved on by a frame then stores that frame without comparing
        any (:meth:`FrameStore.put`)."""
        n = self.n_envs
        actions = check_rows("actions", actions, (n, *self.actions.shape[2:]), self.actions.dtype)
        rewards = check_rows("rewards", rewards, (n,), np.float32)
        terminated = check_rows("terminated", terminated, (n,), bool)
        truncated = check_rows("truncated", truncated, (n,), bool)
        pos = self.frames.pos
        self.frames.put(obs, next_obs, serials=serials)  # checks them before it stores
        self.actions[pos], self.rewards[pos] = actions, rewards
        self.terminated[pos], self.truncated[pos] = terminated, truncated

    def sample(self, batch_size: int, rng: Any = None) -> Batch:
        """``batch_size`` transitions drawn uniformly with replacement (``rng``: a NumPy
        ``Generator``, a legacy ``RandomState``, or None for ``default_rng()``)."""
        batch_size = validate.check_int("batch_size", batch_size, 1)
        if not len(self):
            raise ValueError("cannot sample from an empty replay memory")
        slots = draw_integers(rng, self.frames.size, batch_size)
        envs = draw_integers(rng, self.n_envs, batch_size)
        obs, next_obs = self.frames.gather(slots, envs)
        return Batch(obs, self.actions[slots, envs], next_obs, self.rewards[slots, envs],
                     self.terminated[slots, envs], self.truncated[slots, envs], slots, envs)

    def state_dict(self, pieces: bool = False) -> Dict[str, Any]:
        """Everything to resume exactly, as a flat dict of NumPy arrays and numbers (the
        frame store's under ``"frames.<key>"``): ``np.savez(path, **memory.state_dict())``
        writes it and ``memory.load_state_dict(np.load(path))`` takes it back;
        :mod:`fastatari.checkpoint` saves it incrementally (``pieces``: the frames as views of
        the store's chunks, no copy: ``FrameStore.state_dict``)."""
        return flat_state(self.frames, self._columns(), pieces)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Take a :meth:`state_dict` of a memory of the same shape (a dict, or the archive
        ``np.load`` opens; the frames flat, or nested under ``"frames"`` as before), checked
        whole (every key, dtype, shape and range, and that every frame referred to is held)
        before anything changes."""
        load_flat_state("a ReplayMemory state", state, self.frames, self._columns())

    def _columns(self) -> Dict[str, np.ndarray]:
        return {"actions": self.actions, "rewards": self.rewards,
                "terminated": self.terminated, "truncated": self.truncated}
