"""fastatari.envpool: EnvPool's make() options and gymnasium-style API over AtariVectorEnv.

Runs without envpool; one test compares spaces, info and defaults with the real EnvPool when it
is installed."""
from __future__ import annotations

import importlib.util
import inspect

import gymnasium
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError

from fastatari import envpool as fa_envpool

HAVE_ENVPOOL = importlib.util.find_spec("envpool") is not None

INFO_KEYS = {"env_id", "players", "lives", "reward", "terminated", "elapsed_step"}


def test_spaces_shapes_dtypes_and_info():
    envs = fa_envpool.make("Breakout-v5", env_type="gymnasium", num_envs=3, num_threads=2)
    try:
        assert envs.num_envs == 3 and envs.batch_size == 3
        assert envs.observation_space.shape == (4, 84, 84)
        assert envs.observation_space.dtype == np.uint8
        assert envs.action_space.n == 4
        assert envs.single_observation_space is envs.observation_space
        assert envs.single_action_space is envs.action_space
        assert isinstance(gymnasium.Wrapper(envs).unwrapped, fa_envpool.EnvPoolAtari)  # CleanRL
        obs, info = envs.reset()
        assert obs.shape == (3, 4, 84, 84) and obs.dtype == np.uint8
        assert set(info) == INFO_KEYS
        assert info["env_id"].tolist() == [0, 1, 2]
        assert info["players"]["env_id"].tolist() == [0, 1, 2]
        assert info["lives"].tolist() == [5, 5, 5]
        assert info["elapsed_step"].tolist() == [0, 0, 0]
        for key in ("env_id", "lives", "terminated", "elapsed_step"):
            assert info[key].dtype == np.int32, key
        assert info["reward"].dtype == np.float32
        obs, reward, terminated, truncated, info = envs.step(np.array([0, 1, 2]))
        assert obs.shape == (3, 4, 84, 84)
        assert reward.dtype == np.float32 and reward.shape == (3,)
        assert terminated.dtype == bool and truncated.dtype == bool
        assert set(info) == INFO_KEYS
        assert info["elapsed_step"].tolist() == [1, 1, 1]
    finally:
        envs.close()
    envs = fa_envpool.make("Pong-v5", num_envs=2, img_height=60, img_width=50, stack_num=2,
                           gray_scale=False)
    try:
        assert envs.observation_space.shape == (2, 60, 50, 3)  # fastatari's RGB layout
        obs, _ = envs.reset()
        assert obs.shape == (2, 2, 60, 50, 3)
        assert envs.action_space.n == 6
    finally:
        envs.close()


@pytest.mark.parametrize("reward_clip", [True, False])
def test_info_reward_is_raw(reward_clip):
    # Space Invaders pays 5 to 30 points per alien: raw rewards above 1 come within steps.
    envs = fa_envpool.make("SpaceInvaders-v5", num_envs=2, reward_clip=reward_clip, seed=3)
    try:
        envs.reset()
        big = 0
        for _ in range(200):
            _, reward, _, _, info = envs.step(np.ones(2, int))  # FIRE
            raw = info["reward"]
            expected = np.sign(raw) if reward_clip else raw
            np.testing.assert_array_equal(reward, expected)
            big += int((raw > 1).sum())
        assert big > 0
    finally:
        envs.close()


def test_elapsed_step_truncation_and_autoreset():
    # noop_max=0: the limit of 5 steps = 20 frames, minus the one FIRE frame, ends step 5.
    envs = fa_envpool.make("Breakout-v5", num_envs=2, max_episode_steps=5, noop_max=0)
    try:
        _, info = envs.reset()
        assert info["elapsed_step"].tolist() == [0, 0]
        seen = []
        for _ in range(8):
            _, reward, terminated, truncated, info = envs.step(np.zeros(2, int))
            seen.append((info["elapsed_step"].tolist(), truncated.tolist()))
            assert not terminated.any() and not info["terminated"].any()
        assert seen[3] == ([4, 4], [False, False])
        assert seen[4] == ([5, 5], [True, True])
        assert seen[5] == ([0, 0], [False, False])  # the autoreset step: action ignored
        assert seen[7] == ([2, 2], [False, False])
    finally:
        envs.close()


def test_episodic_life_terminated_is_game_over():
    envs = fa_envpool.make("Breakout-v5", num_envs=1, episodic_life=True, seed=1)
    rng = np.random.default_rng(0)
    try:
        envs.reset()
        life_losses = 0
        elapsed_at_end = None
        for _ in range(5000):
            _, _, terminated, truncated, info = envs.step(rng.integers(4, size=1))
            if elapsed_at_end is not None:  # the reset step after a life loss
                assert info["elapsed_step"][0] == elapsed_at_end
                elapsed_at_end = None
            if terminated[0] and not info["terminated"][0]:
                life_losses += 1
                assert info["lives"][0] > 0
                elapsed_at_end = int(info["elapsed_step"][0])
            if info["terminated"][0]:
                assert terminated[0] and info["lives"][0] == 0
                break
        else:
            pytest.fail("the game did not end")
        assert life_losses == 4
        _, _, terminated, _, info = envs.step(np.zeros(1, int))
        assert info["elapsed_step"][0] == 0 and info["lives"][0] == 5
        assert not terminated[0]
    finally:
        envs.close()


def test_async_send_recv_with_smaller_batches():
    envs = fa_envpool.make("Pong-v5", num_envs=5, batch_size=2, num_threads=2)
    try:
        with pytest.raises(NoAsyncCallError, match="nothing pending"):
            envs.recv()
        envs.async_reset()
        expected = np.zeros(5, int)  # the elapsed_step each env must report next
        returned = []
        for _ in range(12):
            obs, reward, terminated, truncated, info = envs.recv()
            ids = info["env_id"]
            assert obs.shape == (2, 4, 84, 84) and reward.shape == (2,)
            assert len(set(ids.tolist())) == 2
            np.testing.assert_array_equal(info["elapsed_step"], expected[ids])
            np.testing.assert_array_equal(info["players"]["env_id"], ids)
            expected[ids] += 1
            returned.extend(ids.tolist())
            if len(returned) == 2:
                with pytest.raises(AlreadyPendingCallError, match="has a result"):
                    envs.send(np.zeros(1, int), [2])  # still queued from async_reset
            envs.send(np.zeros(2, int), ids)
        assert returned[:5] == [0, 1, 2, 3, 4]  # the async_reset results, in env order
        assert set(returned) == set(range(5))
    finally:
        envs.close()


def test_reset_returns_batch_size_envs_and_step_with_env_id():
    envs = fa_envpool.make("Pong-v5", num_envs=4, batch_size=2)
    try:
        obs, info = envs.reset()
        assert obs.shape == (2, 4, 84, 84) and info["env_id"].tolist() == [0, 1]
        _, _, _, _, info = envs.recv()  # the rest of the reset, as in EnvPool
        assert info["env_id"].tolist() == [2, 3] and info["elapsed_step"].tolist() == [0, 0]
        _, _, _, _, info = envs.step(np.zeros(2, int), env_id=np.array([3, 1]))
        assert sorted(info["env_id"].tolist()) == [1, 3]
        assert info["elapsed_step"].tolist() == [1, 1]
        # reset a subset: env 3 starts again, env 1 keeps its count
        envs.send(np.zeros(2, int), np.array([0, 2]))
        envs.recv()
        obs, info = envs.reset(np.array([3]))
        assert obs.shape == (1, 4, 84, 84) and info["env_id"].tolist() == [3]
        _, _, _, _, info = envs.step(np.zeros(2, int), env_id=np.array([1, 3]))
        elapsed = dict(zip(info["env_id"].tolist(), info["elapsed_step"].tolist(), strict=True))
        assert elapsed == {1: 2, 3: 1}
    finally:
        envs.close()


def run_obs(seed, steps=30, **kw):
    envs = fa_envpool.make("Breakout-v5", num_envs=2, seed=seed, **kw)
    try:
        frames = [envs.reset()[0]]
        actions = np.random.default_rng(0).integers(4, size=(steps, 2))
        frames += [envs.step(a)[0] for a in actions]
        return np.stack(frames)
    finally:
        envs.close()


def test_same_seed_same_games():
    first = run_obs(7)
    np.testing.assert_array_equal(first, run_obs(7))
    np.testing.assert_array_equal(first, run_obs([7, 8]))  # env i gets seed + i
    assert not np.array_equal(first, run_obs(1000))


def test_fire_reset_only_where_fire_is_action_1():
    breakout = fa_envpool.make("Breakout-v5")
    freeway = fa_envpool.make("Freeway-v5")  # NOOP, UP, DOWN: skipped silently, as EnvPool
    try:
        assert breakout.vec.options.fire_reset
        assert not freeway.vec.options.fire_reset
        assert breakout.vec.options.max_num_frames_per_episode == 27000 * 4
        assert breakout.vec.options.repeat_action_probability == 0.0
        freeway.reset()
        freeway.step(np.zeros(1, int))
    finally:
        breakout.close()
        freeway.close()


def test_errors():
    with pytest.raises(ValueError, match="env_type must be 'gymnasium'"):
        fa_envpool.make("Pong-v5", env_type="gym")
    with pytest.raises(TypeError, match="unknown EnvPool option.*bogus, foo"):
        fa_envpool.make("Pong-v5", foo=1, bogus=2)
    with pytest.raises(ValueError, match="use_inter_area_resize=True"):
        fa_envpool.make("Pong-v5", use_inter_area_resize=False)
    with pytest.raises(ValueError, match="max_episode_steps must be an int >= 1"):
        fa_envpool.make("Pong-v5", max_episode_steps=0)
    with pytest.raises(ValueError, match="unknown Atari game"):
        fa_envpool.make("NotAGame-v5")
    with pytest.raises(ValueError, match="img_height must be an int in"):
        fa_envpool.make("Pong-v5", img_height=0)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        fa_envpool.make("Pong-v5", seed=-1)
    envs = fa_envpool.make("Pong-v5", num_envs=2, thread_affinity_offset=0,
                           zero_discount_on_life_loss=True)
    envs.reset()
    for bad, error in (([0.7], TypeError), ([2], ValueError), ([1, 1], ValueError)):
        # floats, out of range, repeats: refused, not rounded
        with pytest.raises(error, match="env_ids must"):
            envs.step(np.zeros(len(bad), int), env_id=bad)
    _, _, _, _, info = envs.step(np.zeros(1, int), env_id=1)  # one int, as EnvPool allows
    assert info["env_id"].tolist() == [1]
    envs.close()
    envs.close()
    with pytest.raises(ClosedEnvironmentError, match="closed"):
        envs.reset()


@pytest.mark.skipif(not HAVE_ENVPOOL, reason="envpool is not installed")
def test_matches_real_envpool_spaces_info_and_defaults():
    import envpool

    ours_defaults = {name: p.default for name, p in
                     inspect.signature(fa_envpool.make).parameters.items()
                     if p.default is not inspect.Parameter.empty}
    for kw in ({}, {"img_height": 60, "img_width": 50, "stack_num": 2}):
        theirs = envpool.make("Breakout-v5", env_type="gymnasium", num_envs=2, **kw)
        ours = fa_envpool.make("Breakout-v5", env_type="gymnasium", num_envs=2, **kw)
        try:
            assert ours.observation_space == theirs.observation_space
            assert ours.action_space == theirs.action_space
            assert ours.num_envs == theirs.num_envs
            if not kw:  # EnvPool's defaults are ours
                config = theirs.spec.config
                for name in ("seed", "episodic_life", "reward_clip", "noop_max", "stack_num",
                             "img_height", "img_width", "gray_scale", "frame_skip",
                             "repeat_action_probability", "use_fire_reset",
                             "max_episode_steps", "full_action_space", "mode", "difficulty"):
                    assert ours_defaults[name] == getattr(config, name), name
            their_obs, their_info = theirs.reset()
            our_obs, our_info = ours.reset()
            assert our_obs.shape == their_obs.shape and our_obs.dtype == their_obs.dtype
            assert set(our_info) == set(their_info) - {"ram"}
            for result in (theirs.step(np.ones(2, int)), ours.step(np.ones(2, int))):
                assert [r.dtype for r in result[1:4]] == [np.float32, bool, bool]
            their_info, our_info = theirs.step(np.ones(2, int))[-1], ours.step(np.ones(2, int))[-1]
            for key in INFO_KEYS - {"players"}:
                assert our_info[key].dtype == their_info[key].dtype, key
        finally:
            theirs.close()
            ours.close()
    theirs = envpool.make("Breakout-v5", env_type="gymnasium", num_envs=1, gray_scale=False)
    ours = fa_envpool.make("Breakout-v5", num_envs=1, gray_scale=False)
    try:  # the documented RGB layout difference: (3k, H, W) vs (k, H, W, 3)
        assert theirs.observation_space.shape == (12, 84, 84)
        assert ours.observation_space.shape == (4, 84, 84, 3)
    finally:
        theirs.close()
        ours.close()
