"""``fastatari.envpool.make(..., env_type="gym")``: EnvPool's gym API, for scripts such as
CleanRL's EnvPool ones (``ppo_atari_envpool.py`` and the XLA/JAX variants).

The class is built on first use, because it subclasses ``gym.Env`` and gym is optional. As in
EnvPool 0.x, the result shapes follow the installed gym:

* gym < 0.26 (CleanRL pins 0.23.1): ``reset()`` returns the observations only (``(obs,
  info)`` with ``gym_reset_return_info=True``); ``step()``, ``recv()`` and the XLA ``step``
  return ``(obs, reward, done, info)`` with ``done = terminated | truncated`` and
  ``info["TimeLimit.truncated"]``.
* gym >= 0.26: ``reset()`` returns ``(obs, info)`` and ``step()`` ``(obs, reward, terminated,
  truncated, info)``.

Spaces are ``gym.spaces`` (CleanRL checks ``isinstance(envs.action_space,
gym.spaces.Discrete)``).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Tuple

import numpy as np

from fastatari.envpool.base import EnvPoolMixin

__all__ = ["gym_env_class"]

_INSTALL = ("env_type='gym' needs the gym package (OpenAI Gym, the API of EnvPool's gym envs "
            "and of CleanRL's EnvPool scripts): pip install 'gym==0.23.1'; or use "
            "env_type='gymnasium'")


def gym_env_class() -> type:
    """The gym-API env class for the installed gym.

    Raises
    ------
    ImportError
        Without gym, naming what to install.
    """
    try:
        import gym
    except ImportError as error:
        raise ImportError(_INSTALL) from error
    return _gym_class(gym)


def _version(text: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


@functools.lru_cache(maxsize=None)
def _gym_class(gym: Any) -> type:  # the gym module (untyped): its Env is the base class
    new_api = _version(gym.__version__) >= (0, 26)

    class EnvPoolAtariGym(EnvPoolMixin, gym.Env):
        """EnvPool's gym API (``env_type="gym"``) over a :class:`fastatari.AtariVectorEnv`;
        see :mod:`fastatari.envpool.gym_api` for the result shapes."""

        _spaces = gym.spaces

        def _step_result(self, batch):
            obs, reward, terminated, truncated, info = self._arrays(batch)
            if new_api:
                return obs, reward, terminated, truncated, info
            info["TimeLimit.truncated"] = truncated
            return obs, reward, terminated | truncated, info

        def _reset_result(self, batch):
            obs, _, _, _, info = self._arrays(batch)
            if new_api or self.spec.config.gym_reset_return_info:
                if not new_api:
                    info["TimeLimit.truncated"] = np.zeros(obs.shape[0], bool)
                return obs, info
            return obs

    EnvPoolAtariGym.__module__ = __name__
    EnvPoolAtariGym.__qualname__ = "EnvPoolAtariGym"
    return EnvPoolAtariGym
