"""CleanRL's EnvPool scripts on fastatari.envpool: miniatures of how they use the env.

Not CleanRL's code: each test makes the same API calls as one family of scripts, written here
from scratch, with random actions instead of a network, and checks the results against the
same games stepped through the plain API.

* ``ppo_atari_envpool.py`` (and ``ppo_rnd_envpool.py``, ``pqn_atari_envpool*.py``): gym API
  (``env_type="gym"``), attributes assigned on the env, a ``gym.Wrapper`` that records game
  returns from ``info["reward"]``/``info["terminated"]``, torch tensors from the arrays.
* ``ppo_atari_envpool_xla_jax_scan.py`` (and ``..._xla_jax.py``): ``envs.xla()``, the handle
  carried through ``jax.lax.scan`` with the observations and a bool ``done``, episode
  statistics from ``info["terminated"]`` and ``info["TimeLimit.truncated"]`` inside the scan.

Run with ``pytest -m cleanrl`` (needs the cleanrl extra, and torch for the first test).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from fastatari import envpool

pytestmark = pytest.mark.cleanrl
gym = pytest.importorskip("gym")

NUM_ENVS = 4


def make_envs(**kw):
    """The scripts' env setup: EnvPool's gym API, then the attributes they assign."""
    envs = envpool.make("Breakout-v5", env_type="gym", num_envs=NUM_ENVS, episodic_life=True,
                        reward_clip=True, seed=1, **kw)
    envs.num_envs = NUM_ENVS
    envs.single_action_space = envs.action_space
    envs.single_observation_space = envs.observation_space
    envs.is_vector_env = True
    return envs


class GameStatistics(gym.Wrapper):
    """Each game's raw return and length in steps, reported in ``info["r"]``/``info["l"]`` on
    every step and restarted when ``info["terminated"]`` says the game is over."""

    def __init__(self, env):
        super().__init__(env)
        self.num_envs = getattr(env, "num_envs", 1)

    def reset(self, **kwargs):
        obs = super().reset(**kwargs)
        self.game_return = np.zeros(self.num_envs, np.float32)
        self.game_length = np.zeros(self.num_envs, np.int32)
        return obs

    def step(self, action):
        obs, reward, done, info = super().step(action)
        self.game_return += info["reward"]
        self.game_length += 1
        info["r"], info["l"] = self.game_return.copy(), self.game_length.copy()
        over = info["terminated"].astype(bool)
        self.game_return[over] = 0
        self.game_length[over] = 0
        return obs, reward, done, info


def test_pytorch_script_env_usage():
    torch = pytest.importorskip("torch")
    envs = GameStatistics(make_envs())
    assert isinstance(envs.action_space, gym.spaces.Discrete), "only discrete action space"
    num_steps = 64
    obs = torch.zeros((num_steps, NUM_ENVS) + envs.single_observation_space.shape)
    actions = torch.zeros((num_steps, NUM_ENVS) + envs.single_action_space.shape)
    rewards = torch.zeros((num_steps, NUM_ENVS))
    dones = torch.zeros((num_steps, NUM_ENVS))
    generator = torch.Generator().manual_seed(0)
    try:
        next_obs = torch.Tensor(envs.reset())
        next_done = torch.zeros(NUM_ENVS)
        assert next_obs.shape == (NUM_ENVS, 4, 84, 84)
        games, life_losses = [], np.zeros(NUM_ENVS, int)
        raw_sum = np.zeros(NUM_ENVS)
        for _ in range(40):  # iterations
            for step in range(num_steps):
                obs[step], dones[step] = next_obs, next_done
                action = torch.randint(0, envs.single_action_space.n, (NUM_ENVS,),
                                       generator=generator)
                actions[step] = action
                next_obs, reward, next_done, info = envs.step(action.cpu().numpy())
                rewards[step] = torch.tensor(reward).view(-1)
                next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(next_done)
                np.testing.assert_array_equal(reward, np.sign(info["reward"]))
                raw_sum += info["reward"]
                for idx, d in enumerate(next_done):
                    if d and info["lives"][idx] == 0:  # the scripts' test for a game's end
                        games.append((idx, float(info["r"][idx]), int(info["l"][idx])))
                        assert life_losses[idx] == 4  # 5 lives: 4 life-loss episode ends
                        assert info["r"][idx] == raw_sum[idx]
                        life_losses[idx], raw_sum[idx] = 0, 0
                    elif d:
                        life_losses[idx] += 1
            if len({g[0] for g in games}) == NUM_ENVS:
                break
        assert {g[0] for g in games} == set(range(NUM_ENVS)), "every env finishes a game"
        assert all(r >= 0 and length > 0 for _, r, length in games)
        assert obs.shape == (num_steps, NUM_ENVS, 4, 84, 84) and obs.max() > 0
        assert actions.shape == (num_steps, NUM_ENVS) and rewards.sum() > 0
        assert (dones.sum(0) >= 0).all()
    finally:
        envs.close()


class EpisodeStats(NamedTuple):
    returns: object
    lengths: object
    last_returns: object
    last_lengths: object


def test_xla_scan_script_env_usage():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    envs = make_envs(max_episode_steps=90)
    reference = make_envs(max_episode_steps=90)
    assert isinstance(envs.single_action_space, gym.spaces.Discrete)
    assert np.array([envs.single_observation_space.sample()]).shape == (1, 4, 84, 84)
    handle, recv, send, step_env = envs.xla()
    num_actions = envs.single_action_space.n

    def step_with_stats(stats, handle, action):
        handle, (next_obs, reward, next_done, info) = step_env(handle, action)
        ended = info["terminated"] + info["TimeLimit.truncated"]
        returns = stats.returns + info["reward"]
        lengths = stats.lengths + 1
        keep = (1 - info["terminated"]) * (1 - info["TimeLimit.truncated"])
        stats = EpisodeStats(returns * keep, lengths * keep,
                             jnp.where(ended, returns, stats.last_returns),
                             jnp.where(ended, lengths, stats.last_lengths))
        return stats, handle, (next_obs, reward, next_done, info)

    def step_once(carry, key):
        stats, obs, done, handle = carry
        action = jax.random.randint(key, (NUM_ENVS,), 0, num_actions)
        stats, handle, (next_obs, reward, next_done, _) = step_with_stats(stats, handle, action)
        return (stats, next_obs, next_done, handle), (obs, action, done, reward)

    def rollout(carry, keys):  # not jitted, as in the scan script
        return jax.lax.scan(step_once, carry, keys)

    try:
        stats = EpisodeStats(jnp.zeros(NUM_ENVS, jnp.float32), jnp.zeros(NUM_ENVS, jnp.int32),
                             jnp.zeros(NUM_ENVS, jnp.float32), jnp.zeros(NUM_ENVS, jnp.int32))
        carry = (stats, envs.reset(), jnp.zeros(NUM_ENVS, dtype=jnp.bool_), handle)
        ref_obs = reference.reset()
        ref_returns = np.zeros(NUM_ENVS)
        key = jax.random.PRNGKey(0)
        ended_games = 0
        for _ in range(4):  # iterations: the handle and the carry go from one to the next
            key, *keys = jax.random.split(key, 33)
            carry, (obs, actions, dones, rewards) = rollout(carry, jnp.stack(keys))
            assert obs.shape == (32, NUM_ENVS, 4, 84, 84) and obs.dtype == jnp.uint8
            assert dones.dtype == jnp.bool_ and rewards.dtype == jnp.float32
            for t in range(32):  # the same steps on the plain API
                np.testing.assert_array_equal(np.asarray(obs[t]), ref_obs)
                ref_obs, reward, done, info = reference.step(np.asarray(actions[t]))
                np.testing.assert_array_equal(np.asarray(rewards[t]), reward)
                ref_returns += info["reward"]
                ended = info["terminated"].astype(bool) | info["TimeLimit.truncated"]
                ended_games += int(ended.sum())
                ref_returns[ended] = 0
            np.testing.assert_array_equal(np.asarray(carry[1]), ref_obs)
            np.testing.assert_array_equal(np.asarray(carry[0].returns), ref_returns)
        assert ended_games >= NUM_ENVS  # 128 steps: every env reached the 90-step limit
        assert (np.asarray(carry[0].last_lengths) > 0).all()
    finally:
        envs.close()
        reference.close()
