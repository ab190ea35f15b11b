"""Stable-Baselines3's ``ReplayBuffer``, storing each frame once: a drop-in for
``DQN(..., replay_buffer_class=fastatari.replay.ReplayBuffer)`` and for CleanRL's
``from stable_baselines3.common.buffers import ReplayBuffer``."""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union, cast

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common import buffers
from stable_baselines3.common.save_util import open_path
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from fastatari.replay._core import FrameStore
from fastatari.replay.layout import (
    as_numbers,
    check_rows,
    flat_state,
    load_flat_state,
    stack_layout,
    to_tensors,
)

if TYPE_CHECKING:
    from fastatari.vector.serials import FrameSerials

__all__ = ["ReplayBuffer", "load_replay_buffer"]


class ReplayBuffer(buffers.ReplayBuffer):
    """SB3's ``ReplayBuffer`` with its observations in a :class:`FrameStore`.

    The constructor, ``add``, ``sample``, ``size``, ``reset`` and the public arrays
    (``actions``, ``rewards``, ``dones``, ``timeouts``, ``pos``, ``full``) are SB3's; with the
    same ``np.random`` seed the samples equal SB3's byte for byte. Differences:

    - memory: each distinct frame once, about a quarter of ``optimize_memory_usage=True``'s;
      there is no ``observations`` array;
    - ``optimize_memory_usage=True`` keeps SB3's index rule (the slot at ``pos`` is never
      drawn) but may be combined with ``handle_timeout_termination=True``, and the next
      observation of an episode's last transition is its true last one, where SB3 returns the
      next episode's first (every loss masks it with ``dones``);
    - observations must be uint8 image stacks (``frame_stack``, ``stack_axis``:
      :func:`~fastatari.replay.layout.stack_layout`; pass them as ``replay_buffer_kwargs``,
      with ``disk=FOLDER`` for frames in a memory-mapped file).
    """

    def __init__(self, buffer_size: int, observation_space: spaces.Space,
                 action_space: spaces.Space, device: Union[th.device, str] = "auto",
                 n_envs: int = 1, optimize_memory_usage: bool = False,
                 handle_timeout_termination: bool = True, frame_stack: Optional[int] = None,
                 stack_axis: Optional[int] = None, disk: Optional[str] = None) -> None:
        if not isinstance(observation_space, spaces.Box) or observation_space.dtype != np.uint8:
            raise TypeError(f"fastatari.replay.ReplayBuffer stores uint8 image stacks, got "
                            f"{observation_space}: use stable_baselines3's ReplayBuffer")
        stack, axis = stack_layout(observation_space.shape, frame_stack, stack_axis)
        # SB3's base only: its ReplayBuffer.__init__ would allocate the observation arrays
        buffers.BaseBuffer.__init__(self, buffer_size, observation_space, action_space, device,
                                    n_envs=n_envs)
        self.buffer_size = max(buffer_size // n_envs, 1)
        self.optimize_memory_usage = optimize_memory_usage
        self.handle_timeout_termination = handle_timeout_termination
        self.frames = FrameStore(self.buffer_size, n_envs, observation_space.shape, stack, axis,
                                 disk)
        shape = (self.buffer_size, self.n_envs)
        self.actions = np.zeros((*shape, self.action_dim),
                                dtype=self._maybe_cast_dtype(action_space.dtype))
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.dones = np.zeros(shape, dtype=np.float32)
        self.timeouts = np.zeros(shape, dtype=np.float32)

    def add(self, obs: np.ndarray, next_obs: np.ndarray, action: np.ndarray,
            reward: np.ndarray, done: np.ndarray, infos: List[Dict[str, Any]], *,
            serials: Optional[FrameSerials] = None) -> None:
        """SB3's ``add``; every argument is checked and converted before anything is stored
        (whole or nothing): the stacks uint8 arrays of shape ``(n_envs, *obs_shape)``;
        ``action`` ``n_envs * action_dim`` numbers, converted to the action space's dtype only
        where nothing changes meaning (whole numbers for a discrete space); ``reward`` and
        ``done`` as SB3 broadcasts them, rewards finite in float32, ``done`` booleans or 0/1;
        ``infos`` a list of ``n_envs`` dicts whose ``"TimeLimit.truncated"`` is a boolean
        (:func:`~fastatari.replay.layout.check_rows`; TypeError or ValueError naming the
        argument). ``serials``: fastatari's vector env's ``frame_serials`` of the step these
        observations come from (:meth:`FrameStore.put`): its continued stacks' frames are
        then taken without being compared."""
        n = self.n_envs
        action = as_numbers("action", action)
        if action.size != n * self.action_dim:
            raise ValueError(f"action must hold n_envs * action_dim = {n * self.action_dim} "
                             f"numbers, got the shape {action.shape}")
        action = check_rows("action", action.reshape((n, self.action_dim)),
                            (n, self.action_dim), self.actions.dtype)
        reward = check_rows("reward", reward, (n,), np.float32, broadcast=True)
        done = check_rows("done", done, (n,), bool, broadcast=True)
        timeouts = None
        if self.handle_timeout_termination:
            if not isinstance(infos, (list, tuple)) or not all(
                    type(info) is dict or isinstance(info, Mapping) for info in infos):
                raise TypeError(f"infos must be a list of {n} dicts (one per env), got "
                                f"{infos!r:.80}")
            if len(infos) != n:
                raise ValueError(f"infos must hold {n} dicts (one per env), got {len(infos)}")
            timeouts = check_rows("infos' TimeLimit.truncated",
                                  [info.get("TimeLimit.truncated", False) for info in infos],
                                  (n,), bool)
        pos: int = self.frames.pos  # SB3's pos, which the store follows
        self.frames.put(obs, next_obs, serials=serials)  # checks them before it stores
        self.actions[pos] = action
        self.rewards[pos] = reward
        self.dones[pos] = done
        if timeouts is not None:
            self.timeouts[pos] = timeouts
        self.pos, self.full = self.frames.pos, self.frames.full

    def sample(self, batch_size: int, env: Optional[VecNormalize] = None
               ) -> ReplayBufferSamples:
        """SB3's ``sample`` (its index rule in either mode)."""
        if not self.size():
            raise ValueError("cannot sample from an empty replay buffer")
        if self.optimize_memory_usage and self.full and self.buffer_size == 1:
            raise ValueError("a buffer of one slot has nothing to draw with "
                             "optimize_memory_usage=True (SB3 never draws the slot at pos)")
        return super().sample(batch_size, env)

    def _get_samples(self, batch_inds: np.ndarray, env: Optional[VecNormalize] = None
                     ) -> ReplayBufferSamples:
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        obs, next_obs = self._stacks(batch_inds, env_indices, env)
        data = (
            self.actions[batch_inds, env_indices, :],
            (self.dones[batch_inds, env_indices]
             * (1 - self.timeouts[batch_inds, env_indices])).reshape(-1, 1),
            self._normalize_reward(self.rewards[batch_inds, env_indices].reshape(-1, 1), env),
        )
        actions, dones, rewards = to_tensors(data, self.device)  # this call's own arrays
        return ReplayBufferSamples(obs, actions, next_obs, dones, rewards)

    def _stacks(self, batch_inds: np.ndarray, env_indices: np.ndarray,
                env: Optional[VecNormalize]) -> tuple:
        """The drawn observations and next observations as tensors; without normalisation,
        the frames a pair shares are written once (overlapping views: ``FrameStore.gather``'s
        ``shared``)."""
        obs, next_obs = self.frames.gather(batch_inds, env_indices, shared=env is None)
        # (SB3's _normalize_obs is annotated for dict observations too; these are arrays)
        return tuple(to_tensors([cast(np.ndarray, self._normalize_obs(obs, env)),
                                 cast(np.ndarray, self._normalize_obs(next_obs, env))],
                                self.device))

    def reset(self) -> None:
        super().reset()
        self.frames.reset()

    def state_dict(self, pieces: bool = False) -> Dict[str, Any]:
        """Everything to resume exactly, as a flat dict of NumPy arrays and numbers (the
        frame store's under ``"frames.<key>"``; ``pos`` and ``full`` are the store's), which
        :mod:`fastatari.checkpoint` saves (incrementally) and ``np.savez`` writes
        (``pieces``: the frames as views of the store's chunks, no copy)."""
        return flat_state(self.frames, self._columns(), pieces)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Take a :meth:`state_dict` of a buffer of the same shape, checked whole before
        anything changes (TypeError, ValueError)."""
        load_flat_state("a ReplayBuffer state", state, self.frames, self._columns())
        self.pos, self.full = self.frames.pos, self.frames.full

    def _columns(self) -> Dict[str, np.ndarray]:
        return {"actions": self.actions, "rewards": self.rewards, "dones": self.dones,
                "timeouts": self.timeouts}

    def __reduce__(self) -> Any:
        """Pickled (SB3's ``model.save_replay_buffer``) as its constructor's arguments and
        :meth:`state_dict`: each frame once, about 7 KB a transition of 84x84 stacks of 4,
        under a format name and version that unpickling checks."""
        kwargs = {"buffer_size": self.buffer_size * self.n_envs,
                  "observation_space": _space_args(self.observation_space),
                  "action_space": _space_args(self.action_space), "device": str(self.device),
                  "n_envs": self.n_envs, "optimize_memory_usage": self.optimize_memory_usage,
                  "handle_timeout_termination": self.handle_timeout_termination,
                  "frame_stack": self.frames.stack, "stack_axis": self.frames.axis,
                  "disk": self.frames.disk}
        return (_unpickled, (PICKLE_FORMAT, PICKLE_VERSION, kwargs, self.state_dict()))


#: The name and version of a pickled :class:`ReplayBuffer`'s contents.
PICKLE_FORMAT = "fastatari.sb3.ReplayBuffer"
PICKLE_VERSION = 1


def _space_args(space: spaces.Space) -> tuple:
    """A space as plain values: its kind and what makes it (not its generator)."""
    if isinstance(space, spaces.Box):
        return ("Box", space.low, space.high, space.shape, space.dtype.str)
    if isinstance(space, spaces.Discrete):
        return ("Discrete", int(space.n), int(space.start))
    if isinstance(space, spaces.MultiDiscrete):
        return ("MultiDiscrete", space.nvec, space.dtype.str)
    if isinstance(space, spaces.MultiBinary):
        return ("MultiBinary", space.n)
    raise TypeError(f"a ReplayBuffer of a {type(space).__name__} cannot be pickled")


def _space(args: tuple) -> spaces.Space:
    kind, *values = args
    if kind == "Box":
        low, high, shape, dtype = values
        return spaces.Box(low, high, tuple(shape), np.dtype(dtype))
    if kind == "Discrete":
        return spaces.Discrete(values[0], start=values[1])
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(values[0], dtype=np.dtype(values[1]))
    if kind == "MultiBinary":
        return spaces.MultiBinary(values[0])
    raise ValueError(f"a pickled ReplayBuffer of an unknown space {kind!r}")


def _unpickled(kind: Any, version: Any, kwargs: Dict[str, Any],
               state: Mapping[str, Any]) -> ReplayBuffer:
    """The buffer a pickle of :meth:`ReplayBuffer.__reduce__` holds, its contents checked
    whole (``ValueError`` for another format or version, a damaged state); its frames on
    disk where they were, when that folder still is one, else in memory."""
    if kind != PICKLE_FORMAT or version != PICKLE_VERSION:
        raise ValueError(f"not a pickled fastatari ReplayBuffer of version {PICKLE_VERSION} "
                         f"(it says {kind!r}, version {version!r})")
    kwargs = dict(kwargs)
    for name in ("observation_space", "action_space"):
        kwargs[name] = _space(kwargs[name])
    if kwargs.get("disk") is not None and not os.path.isdir(kwargs["disk"]):
        kwargs["disk"] = None
    buffer = ReplayBuffer(**kwargs)
    buffer.load_state_dict(state)
    return buffer


#: What a pickled :class:`ReplayBuffer` names: its rebuilder and NumPy's arrays, scalars and
#: dtypes (its spaces are plain values: ``_space_args``).
_SAFE_NAMES = {
    "fastatari.sb3.replay_buffer": {"_unpickled"},
    "numpy": {"dtype", "ndarray"},
    "numpy.dtypes": {name for name in dir(getattr(np, "dtypes", None)) if name.endswith("DType")},
    **{f"numpy.{core}.{module}": names for core in ("core", "_core") for module, names in (
        ("multiarray", {"_reconstruct", "scalar"}), ("numeric", {"_frombuffer"}))},
}


class _Unpickler(pickle.Unpickler):
    """Builds only what :data:`_SAFE_NAMES` names, and only a pickled fastatari
    ``ReplayBuffer``: the first name of another file (SB3's own buffer, anything else) is
    refused before anything of it is built."""

    first = True

    def find_class(self, module: str, name: str) -> Any:
        if self.first and (module, name) != ("fastatari.sb3.replay_buffer", "_unpickled"):
            raise ValueError(f"not a pickled fastatari ReplayBuffer (it begins with "
                             f"{module}.{name})")
        self.first = False
        if name not in _SAFE_NAMES.get(module, ()):
            raise ValueError(f"a pickled fastatari ReplayBuffer names nothing like "
                             f"{module}.{name}")
        return super().find_class(module, name)


def load_replay_buffer(model: Any, path: Any) -> None:
    """SB3's ``model.load_replay_buffer(path)`` for a file ``model.save_replay_buffer`` wrote
    from a :class:`ReplayBuffer`, building nothing the file names but that buffer's parts:
    ``ValueError`` for any other file (SB3's own buffer, a pickle of anything else, another
    version), the model unchanged. (SB3's own loader unpickles whatever the file holds, which
    runs its code.)"""
    with open_path(path, "r", suffix="pkl") as f:
        try:
            buffer = _Unpickler(f).load()
        except (pickle.UnpicklingError, EOFError, TypeError, KeyError, IndexError) as error:
            raise ValueError(f"{path}: not a pickled fastatari ReplayBuffer ({error!r})") \
                from None
    if not isinstance(buffer, ReplayBuffer):
        raise ValueError(f"{path}: holds a {type(buffer).__name__}, not a ReplayBuffer")
    buffer.device = model.device  # (as SB3's loader does)
    model.replay_buffer = buffer
