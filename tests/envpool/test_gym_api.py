"""fastatari.envpool.make(..., env_type="gym"): EnvPool's gym API (needs gym; the cleanrl extra).

Under gym < 0.26 (CleanRL pins 0.23.1) EnvPool's gym envs return observations only from
reset() and (obs, reward, done, info) with info["TimeLimit.truncated"] from step(); under gym
>= 0.26 they follow gymnasium's shapes."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from fastatari import envpool as fa_envpool

pytestmark = pytest.mark.cleanrl
gym = pytest.importorskip("gym")

OLD_API = tuple(int(p) for p in gym.__version__.split(".")[:2]) < (0, 26)
INFO_KEYS = {"env_id", "players", "lives", "reward", "terminated", "elapsed_step", "ram"}


@pytest.mark.skipif(not OLD_API, reason="gym >= 0.26 gives gymnasium's shapes")
def test_old_gym_api_shapes_and_spaces():
    envs = fa_envpool.make("Breakout-v5", env_type="gym", num_envs=3, episodic_life=True,
                           reward_clip=True, seed=2)
    try:
        assert isinstance(envs, gym.Env)
        assert isinstance(envs.action_space, gym.spaces.Discrete) and envs.action_space.n == 4
        assert isinstance(envs.observation_space, gym.spaces.Box)
        assert envs.observation_space.shape == (4, 84, 84)
        assert envs.observation_space.dtype == np.uint8
        assert envs.spec.config.gym_reset_return_info is False  # EnvPool 0.x's gym default
        obs = envs.reset()
        assert isinstance(obs, np.ndarray) and obs.shape == (3, 4, 84, 84)
        result = envs.step(np.ones(3, int))
        assert len(result) == 4
        obs, reward, done, info = result
        assert obs.shape == (3, 4, 84, 84) and reward.dtype == np.float32
        assert done.dtype == bool and done.shape == (3,)
        assert set(info) == INFO_KEYS | {"TimeLimit.truncated"}
        assert info["TimeLimit.truncated"].dtype == bool
        assert info["elapsed_step"].tolist() == [1, 1, 1]
        # a gym.Wrapper passes the old API through (CleanRL wraps the env in one)
        wrapped = gym.Wrapper(envs)
        assert wrapped.reset().shape == (3, 4, 84, 84) and len(wrapped.step(np.ones(3, int))) == 4
        assert str(wrapped)  # gym's __str__ reads the env's
    finally:
        envs.close()


@pytest.mark.skipif(not OLD_API, reason="gym >= 0.26 gives gymnasium's shapes")
def test_gym_and_gymnasium_types_give_the_same_games():
    kw = dict(num_envs=2, episodic_life=True, reward_clip=True, seed=9, max_episode_steps=60)
    old = fa_envpool.make("Breakout-v5", env_type="gym", **kw)
    new = fa_envpool.make("Breakout-v5", env_type="gymnasium", **kw)
    rng = np.random.default_rng(1)
    try:
        np.testing.assert_array_equal(old.reset(), new.reset()[0])
        ends = 0
        for _ in range(80):
            action = rng.integers(4, size=2)
            obs, reward, done, info = old.step(action)
            obs2, reward2, terminated, truncated, info2 = new.step(action)
            np.testing.assert_array_equal(obs, obs2)
            np.testing.assert_array_equal(reward, reward2)
            np.testing.assert_array_equal(done, terminated | truncated)
            np.testing.assert_array_equal(info.pop("TimeLimit.truncated"), truncated)
            for key in INFO_KEYS - {"players"}:
                np.testing.assert_array_equal(info[key], info2[key])
            ends += int(truncated.sum())
        assert ends == 2  # both envs reached the 60-step limit: done with TimeLimit.truncated
    finally:
        old.close()
        new.close()


def test_reset_return_info():
    envs = fa_envpool.make("Pong-v5", env_type="gym", num_envs=2, gym_reset_return_info=True)
    try:
        assert envs.spec.config.gym_reset_return_info is True
        obs, info = envs.reset()
        assert obs.shape == (2, 4, 84, 84) and info["env_id"].tolist() == [0, 1]
        if OLD_API:
            assert info["TimeLimit.truncated"].tolist() == [False, False]
    finally:
        envs.close()


def test_gym_026_gives_gymnasium_shapes(monkeypatch):
    # EnvPool picks the result shapes from gym's version; a gym 0.26 stand-in (gym's own Env
    # and spaces, a newer version string) gets reset() -> (obs, info), step() -> 5 values.
    newer = types.ModuleType("gym")
    newer.__version__ = "0.26.2"
    newer.Env, newer.spaces = gym.Env, gym.spaces
    monkeypatch.setitem(sys.modules, "gym", newer)
    envs = fa_envpool.make("Pong-v5", env_type="gym", num_envs=2)
    try:
        obs, info = envs.reset()
        assert obs.shape == (2, 4, 84, 84) and "TimeLimit.truncated" not in info
        result = envs.step(np.zeros(2, int))
        assert len(result) == 5 and "TimeLimit.truncated" not in result[-1]
    finally:
        envs.close()
