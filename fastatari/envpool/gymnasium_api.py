"""``fastatari.envpool.make(..., env_type="gymnasium")``: EnvPool 1.x's gymnasium API."""

from __future__ import annotations

import gymnasium

from fastatari.envpool.base import EnvPoolMixin

__all__ = ["EnvPoolAtari"]


# ignore[misc]: gymnasium's VectorEnv and Env declare np_random_seed and render() with different
# types, and env.spec is EnvPool's spec (EnvPoolSpec: spec.config, ...), not gymnasium's EnvSpec.
class EnvPoolAtari(EnvPoolMixin, gymnasium.vector.VectorEnv, gymnasium.Env):  # type: ignore[misc]
    """EnvPool's gymnasium API (``env_type="gymnasium"``) over a
    :class:`fastatari.AtariVectorEnv` (see :func:`fastatari.envpool.make`).

    Like EnvPool's class it is both a ``VectorEnv`` and a ``gymnasium.Env``, so CleanRL's
    ``gymnasium.Wrapper`` subclasses accept it. As in EnvPool, :attr:`observation_space` and
    :attr:`action_space` describe one env (``single_observation_space``/``single_action_space``
    are the same objects), and every result is a batch with its env ids in ``info["env_id"]``:
    ``reset()`` gives ``(obs, info)``; ``step()`` and ``recv()`` give ``(obs, reward,
    terminated, truncated, info)``.
    """

    def _step_result(self, batch):
        return self._arrays(batch)

    def _reset_result(self, batch):
        obs, _, _, _, info = self._arrays(batch)
        return obs, info
