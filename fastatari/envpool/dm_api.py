"""``fastatari.envpool.make(..., env_type="dm")`` and ``make_dm``: EnvPool's dm_env API.

The class is built on first use, because it subclasses ``dm_env.Environment`` and dm-env is
optional. As in EnvPool, ``reset()``, ``step()`` and ``recv()`` return one ``dm_env.TimeStep``
of arrays for the batch:

* ``step_type`` (int32): ``FIRST`` on a reset (also the automatic one after an episode's end),
  ``LAST`` when the episode ends (terminated or truncated), else ``MID``;
* ``reward`` (float32, after ``reward_clip``);
* ``discount`` (float32): 0 when the episode ends, and with ``zero_discount_on_life_loss=True``
  also on a step whose lives differ from the last result's; else 1;
* ``observation``: a :data:`~fastatari.envpool.spec.State` namedtuple with EnvPool's fields
  ``env_id``, ``players`` (``players.env_id``), ``obs``, ``lives``, ``reward`` (raw),
  ``terminated`` (the game is over) and ``ram``.

``observation_spec()`` and ``action_spec()`` are EnvPool's dm_env specs.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from fastatari.envpool.base import EnvPoolMixin
from fastatari.envpool.spec import Players, State, import_dm_env

__all__ = ["dm_env_class"]

# dm_env.StepType's values: an episode's first result (a reset), the ones between, its last.
FIRST, MID, LAST = 0, 1, 2


def dm_env_class() -> type:
    """The dm_env-API env class.

    Raises
    ------
    ImportError
        Without dm-env, naming what to install.
    """
    return _dm_class(import_dm_env())


@functools.lru_cache(maxsize=None)
def _dm_class(dm_env: Any) -> type:  # the dm_env module: its Environment is the base class

    class EnvPoolAtariDM(EnvPoolMixin, dm_env.Environment):
        """EnvPool's dm_env API (``env_type="dm"``) over a :class:`fastatari.AtariVectorEnv`;
        see :mod:`fastatari.envpool.dm_api` for the ``TimeStep`` it returns."""

        def observation_spec(self) -> State:
            return self.spec.observation_spec()

        def action_spec(self):
            return self.spec.action_spec()

        def _step_result(self, batch):
            obs, reward, _, _, info = self._arrays(batch)
            observation = State(
                env_id=info["env_id"], players=Players(info["players"]["env_id"]), obs=obs,
                lives=info["lives"], reward=info["reward"], terminated=info["terminated"],
                ram=info["ram"])
            first, cut = batch.columns["first"], batch.columns["cut"]
            done = batch.columns["terminated"] | batch.columns["truncated"]
            step_type = np.where(first, FIRST, np.where(done, LAST, MID)).astype(np.int32)
            discount = np.where(first, 1.0, ~cut).astype(np.float32)
            return dm_env.TimeStep(step_type=step_type, reward=reward, discount=discount,
                                   observation=observation)

        _reset_result = _step_result

    EnvPoolAtariDM.__module__ = __name__
    EnvPoolAtariDM.__qualname__ = "EnvPoolAtariDM"
    return EnvPoolAtariDM
