"""fastatari.envpool: EnvPool's make() options and gymnasium-style API over AtariVectorEnv.

Runs without envpool; one test compares spaces, info and defaults with the real EnvPool when it
is installed."""
from __future__ import annotations

import ast
import graphlib
import importlib.util
import inspect
import pathlib
import re
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError

import fastatari
from fastatari import envpool as fa_envpool

from .._python import run_code

HAVE_ENVPOOL = importlib.util.find_spec("envpool") is not None

INFO_KEYS = {"env_id", "players", "lives", "reward", "terminated", "elapsed_step", "ram"}


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


def test_rgb_observations_in_envpool_layout():
    # EnvPool's RGB stack is (3 * stack_num, H, W), frame i in channels 3i..3i+2 (CHW); the same
    # games on the vector env give (stack_num, H, W, 3).
    envs = fa_envpool.make("Pong-v5", num_envs=2, img_height=60, img_width=50, stack_num=2,
                           gray_scale=False, seed=4)
    vec = fastatari.make_vec("pong", 2, screen_size=(50, 60), grayscale_obs=False, stack_size=2,
                             repeat_action_probability=0.0, max_num_frames_per_episode=None,
                             fire_reset=True)
    try:
        assert envs.observation_space.shape == (6, 60, 50)
        assert envs.action_space.n == 6
        ours = [envs.reset()[0]]
        theirs = [vec.reset(seed=4)[0]]
        for action in ([2, 3], [3, 2], [0, 1], [2, 2]):
            ours.append(envs.step(np.array(action))[0])
            theirs.append(vec.step(np.array(action))[0])
        for obs, frames in zip(ours, theirs, strict=True):
            assert obs.shape == (2, 6, 60, 50) and frames.shape == (2, 2, 60, 50, 3)
            for i in range(2):
                for c in range(3):
                    np.testing.assert_array_equal(obs[:, 3 * i + c], frames[:, i, :, :, c])
        assert not np.array_equal(ours[-1][:, :3], ours[-1][:, 3:])  # two different frames
    finally:
        envs.close()
        vec.close()


def test_envpool_small_api_len_is_async_spec_config():
    envs = fa_envpool.make("Pong-v5", num_envs=3, seed=[5, 6, 7], max_episode_steps=100)
    batched = fa_envpool.make("Pong-v5", num_envs=4, batch_size=2, num_threads=2)
    try:
        assert len(envs) == 3 and len(batched) == 4
        assert not envs.is_async and batched.is_async
        assert envs.all_env_ids.tolist() == [0, 1, 2] and envs.all_env_ids.dtype == np.int32
        config = envs.spec.config
        assert isinstance(config, fa_envpool.Config) and isinstance(config, tuple)
        assert config.task == "pong" and config.num_envs == 3 and config.batch_size == 3
        assert config.seed == 0 and config.env_seed == [5, 6, 7]  # EnvPool's per-env seeds
        assert config.max_episode_steps == 100 and config.gym_reset_return_info
        assert envs.config == config._asdict()  # EnvPool: env.config is the same, as a dict
        assert envs.spec.observation_space is envs.observation_space
        assert envs.spec.action_space is envs.action_space
        assert repr(envs.spec).startswith("AtariEnvSpec(num_envs=3, batch_size=3")
        assert batched.spec.config.batch_size == 2 and batched.spec.config.num_threads == 2
        # CleanRL assigns these on the env; they stay plain attributes
        envs.num_envs, envs.is_vector_env = 3, True
        envs.single_action_space = envs.action_space
        assert envs.num_envs == 3 and envs.is_vector_env
    finally:
        envs.close()
        batched.close()


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


@pytest.mark.parametrize("batch_size", [0, 1])
def test_elapsed_step_truncation_and_autoreset(batch_size):
    # EnvPool counts max_episode_steps in agent steps, whatever the no-op starts took: with
    # noop_max=30 every env is truncated on exactly its 5th step, synchronously or not.
    envs = fa_envpool.make("Breakout-v5", num_envs=2, batch_size=batch_size,
                           max_episode_steps=5, seed=11)
    try:
        assert envs.vec.options.max_num_frames_per_episode is None
        envs.async_reset()
        seen = {0: [], 1: []}
        for _ in range(64):
            if min(len(v) for v in seen.values()) >= 8:
                break
            _, _, terminated, truncated, info = envs.recv()
            for j, i in enumerate(info["env_id"]):
                seen[int(i)].append((int(info["elapsed_step"][j]), bool(truncated[j])))
            assert not terminated.any() and not info["terminated"].any()
            envs.send(np.zeros(info["env_id"].size, int), info["env_id"])
        for i in (0, 1):
            assert seen[i][:8] == [(0, False), (1, False), (2, False), (3, False), (4, False),
                                   (5, True), (0, False), (1, False)], i  # reset step: 0
    finally:
        envs.close()


def test_truncation_after_life_losses_starts_a_new_game():
    # episodic_life: lives lost before the limit continue the game and the count; the limit
    # truncates (not terminates) and the next step starts a new game (all lives, count 0).
    envs = fa_envpool.make("Breakout-v5", num_envs=1, episodic_life=True, seed=5,
                           max_episode_steps=150)
    rng = np.random.default_rng(0)
    try:
        envs.reset()
        losses, lives = 0, 5
        for step in range(1, 200):
            _, _, terminated, truncated, info = envs.step(rng.integers(4, size=1))
            assert not info["terminated"][0]
            if terminated[0]:
                losses += 1
                assert info["lives"][0] < lives
            lives = info["lives"][0]
            if truncated[0]:
                assert not terminated[0] and info["elapsed_step"][0] == 150
                assert step > 150  # the steps that continued the game after a life loss
                break
        else:
            pytest.fail("no truncation")
        assert losses >= 1 and lives < 5  # the continuing resets kept the count
        _, _, terminated, truncated, info = envs.step(np.zeros(1, int))
        assert info["elapsed_step"][0] == 0 and info["lives"][0] == 5
        _, _, _, _, info = envs.step(np.zeros(1, int))
        assert info["elapsed_step"][0] == 1
    finally:
        envs.close()


@pytest.mark.filterwarnings("error::DeprecationWarning")  # ~ on a bool (Python >= 3.12)
def test_reset_after_a_life_loss_continues_unless_reseeded():
    envs = fa_envpool.make("Breakout-v5", num_envs=1, episodic_life=True, seed=2)
    rng = np.random.default_rng(0)

    def play_to_a_life_loss():
        for _ in range(5000):
            _, _, terminated, _, info = envs.step(rng.integers(4, size=1))
            if terminated[0]:
                assert not info["terminated"][0]  # a life, not the game
                return int(info["elapsed_step"][0]), int(info["lives"][0])
        pytest.fail("no life lost")

    try:
        envs.reset()
        elapsed, lives = play_to_a_life_loss()
        _, info = envs.reset()  # continues the game: the count and the lives go on
        assert (info["elapsed_step"][0], info["lives"][0]) == (elapsed, lives)
        play_to_a_life_loss()
        _, info = envs.reset(seed=9)  # a new seed starts a new game
        assert (info["elapsed_step"][0], info["lives"][0]) == (0, 5)
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


def test_episodic_life_ignores_the_last_life_while_play_goes_on():
    # Atlantis goes on at 0 lives: EnvPool (and SB3's EpisodicLifeEnv) end an episode on a
    # life loss only while lives remain, so the game's end is the next episode end.
    envs = fa_envpool.make("Atlantis-v5", num_envs=1, episodic_life=True, seed=3)
    rng = np.random.default_rng(0)
    try:
        envs.reset()
        played_at_zero = 0
        for _ in range(4000):
            _, _, terminated, truncated, info = envs.step(rng.integers(4, size=1))
            if terminated[0] and not info["terminated"][0]:
                assert info["lives"][0] > 0, "a life-loss episode end with no lives left"
            if info["terminated"][0]:
                break
            played_at_zero += info["lives"][0] == 0
        else:
            pytest.fail("the game did not end")
        assert played_at_zero > 0  # the case was exercised
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


def test_sync_pool_returns_envs_in_the_order_sent():
    # batch_size == num_envs: EnvPool writes each result to its env's place in the send, so
    # send(a); recv() (and the XLA step built on them) gives the envs in the order sent.
    envs = fa_envpool.make("Pong-v5", num_envs=4, num_threads=2)
    try:
        envs.async_reset()
        assert envs.recv()[4]["env_id"].tolist() == [0, 1, 2, 3]
        for _ in range(5):
            envs.send(np.zeros(4, int), np.array([3, 1, 0, 2]))
            assert envs.recv()[4]["env_id"].tolist() == [3, 1, 0, 2]
            envs.send(np.zeros(4, int))
            assert envs.recv()[4]["env_id"].tolist() == [0, 1, 2, 3]
        _, info = envs.reset(np.array([2, 0]))
        assert info["env_id"].tolist() == [2, 0]
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
        # EnvPool 1.x's gymnasium reset(options={"reset_mask": ...})
        envs.send(np.zeros(2, int), np.array([0, 2]))
        envs.recv()
        obs, info = envs.reset(options={"reset_mask": np.array([False, True, False, False])})
        assert obs.shape == (1, 4, 84, 84) and info["env_id"].tolist() == [1]
        assert info["elapsed_step"].tolist() == [0]
        with pytest.raises(ValueError, match="reset_mask must be"):
            envs.reset(options={"reset_mask": np.zeros(4, bool)})
        with pytest.raises(ValueError, match="unsupported reset options"):
            envs.reset(options={"seed": 1})
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
        assert breakout.vec.options.repeat_action_probability == 0.0
        freeway.reset()
        freeway.step(np.zeros(1, int))
    finally:
        breakout.close()
        freeway.close()


@pytest.mark.parametrize("task_id, actions", [("Backgammon-v5", 3), ("VideoCheckers-v5", 5)])
def test_games_whose_action_0_is_fire_run_with_default_options(task_id, actions):
    # EnvPool's defaults (noop_max=30, use_fire_reset=True) work on every game; these two
    # have FIRE as action 0 and no NOOP in their action set.
    envs = fa_envpool.make(task_id, num_envs=2)
    try:
        assert envs.action_space.n == actions
        assert envs.vec.options.noop_max == 0 and not envs.vec.options.fire_reset  # see README
        assert envs.spec.config.noop_max == 30 and envs.spec.config.use_fire_reset
        obs, _ = envs.reset()
        assert obs.shape == (2, 4, 84, 84)
        for a in range(actions):
            envs.step(np.full(2, a))
    finally:
        envs.close()


def test_messages_name_envpools_options():
    """A bad value is named as the user wrote it (EnvPool's option), not by the fastatari
    option it maps to (num_threads named num_workers; img_width named screen_size)."""
    for kw, words in [(dict(num_threads=-1), "num_threads must be an int >= 0, got -1"),
                      (dict(img_width=1000), "img_width=1000, img_height=84 would enlarge "
                                             "breakout's 160x210 screen")]:
        with pytest.raises(ValueError, match=re.escape(words)):
            fa_envpool.make("Breakout-v5", num_envs=2, **kw)


@pytest.mark.parametrize("option, value", [
    ("repeat_action_probability", "0.25"), ("episodic_life", "yes"), ("gray_scale", 2),
    ("reward_clip", "no"), ("use_fire_reset", 3), ("full_action_space", "x"),
    ("zero_discount_on_life_loss", "no"),  # not read for its truthiness (that was "on")
    ("gym_reset_return_info", "x"), ("thread_affinity_offset", "abc"), ("num_threads", "2"),
    ("mode", 1.0), ("stack_num", 4.0),
])
def test_a_value_of_the_wrong_type_is_a_type_error_in_envpools_words(option, value):
    with pytest.raises(TypeError, match=f"EnvPool option {option} must be"):
        fa_envpool.make_spec("Breakout-v5", num_envs=2, **{option: value})


def test_a_mode_or_difficulty_the_game_lacks_is_envpools_runtime_error():
    for option in ("mode", "difficulty"):
        with pytest.raises(RuntimeError, match=f"{option} must be one of") as raised:
            fa_envpool.make_spec("Breakout-v5", num_envs=2, **{option: 999})
        assert isinstance(raised.value, ValueError)  # and fastatari's fronts' type


def test_errors(monkeypatch):
    with pytest.raises(ValueError, match="env_type must be 'gymnasium', 'gym' or 'dm'"):
        fa_envpool.make("Pong-v5", env_type="dmx")
    with pytest.raises(ValueError, match="gym_reset_return_info=False is for env_type='gym'"):
        fa_envpool.make("Pong-v5", gym_reset_return_info=False)
    with pytest.raises(ValueError, match="max_num_players=1"):
        fa_envpool.make("Pong-v5", max_num_players=2)
    monkeypatch.setitem(sys.modules, "gym", None)  # as if gym were not installed
    with pytest.raises(ImportError, match=r"needs the gym package.*pip install 'gym==0\.23\.1'"):
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
    monkeypatch.setitem(sys.modules, "jax", None)  # as if jax were not installed
    with pytest.raises(ImportError, match="env.xla.. needs JAX: pip install jax"):
        envs.xla()
    envs.close()
    envs.close()
    with pytest.raises(ClosedEnvironmentError, match="closed"):
        envs.reset()


@pytest.mark.envpool
@pytest.mark.skipif(not HAVE_ENVPOOL, reason="envpool is not installed")
def test_matches_real_envpool_spaces_info_and_defaults():
    import envpool

    ours_defaults = {name: p.default for name, p in
                     inspect.signature(fa_envpool.make_spec).parameters.items()
                     if p.default is not inspect.Parameter.empty}
    for kw in ({}, {"img_height": 60, "img_width": 50, "stack_num": 2}, {"gray_scale": False},
               {"batch_size": 1, "num_threads": 1}):
        theirs = envpool.make("Breakout-v5", env_type="gymnasium", num_envs=2, **kw)
        ours = fa_envpool.make("Breakout-v5", env_type="gymnasium", num_envs=2, **kw)
        try:
            assert ours.observation_space == theirs.observation_space
            assert ours.action_space == theirs.action_space
            assert ours.num_envs == theirs.num_envs and len(ours) == len(theirs)
            assert ours.is_async == theirs.is_async
            np.testing.assert_array_equal(ours.all_env_ids, theirs.all_env_ids)
            assert type(ours.spec.config).__name__ == type(theirs.spec.config).__name__
            assert ours.spec.config._fields == theirs.spec.config._fields
            assert set(ours.config) == set(theirs.config)
            for name, value in ours.spec.config._asdict().items():
                if name != "base_path":  # where the ROMs are
                    assert value == getattr(theirs.spec.config, name), name
            if not kw:  # EnvPool's defaults are ours (those three: the config compared above)
                for name, value in ours_defaults.items():
                    if name in theirs.spec.config._fields and name not in (
                            "num_envs", "batch_size", "gym_reset_return_info"):
                        assert value == getattr(theirs.spec.config, name), name
            if ours.is_async:
                continue
            their_obs, their_info = theirs.reset()
            our_obs, our_info = ours.reset()
            assert our_obs.shape == their_obs.shape and our_obs.dtype == their_obs.dtype
            assert set(our_info) == set(their_info)
            for result in (theirs.step(np.ones(2, int)), ours.step(np.ones(2, int))):
                assert [r.dtype for r in result[1:4]] == [np.float32, bool, bool]
            their_info, our_info = theirs.step(np.ones(2, int))[-1], ours.step(np.ones(2, int))[-1]
            for key in INFO_KEYS - {"players"}:
                assert our_info[key].dtype == their_info[key].dtype, key
        finally:
            theirs.close()
            ours.close()
    for task_id in ("Backgammon-v5", "VideoCheckers-v5"):  # EnvPool runs them by default
        theirs = envpool.make(task_id, env_type="gymnasium", num_envs=1)
        ours = fa_envpool.make(task_id, num_envs=1)
        try:
            assert ours.action_space == theirs.action_space
        finally:
            theirs.close()
            ours.close()


@pytest.mark.envpool
@pytest.mark.skipif(not HAVE_ENVPOOL, reason="envpool is not installed")
@pytest.mark.parametrize("task_id, episodic_life", [("Pong-v5", False), ("Breakout-v5", True)])
def test_truncates_on_the_same_agent_step_as_real_envpool(task_id, episodic_life):
    # Different random streams give different games, but the limit is the same step count.
    import envpool

    records = []
    for make in (envpool.make, fa_envpool.make):
        envs = make(task_id, env_type="gymnasium", num_envs=2, max_episode_steps=40,
                    episodic_life=episodic_life, use_fire_reset=False, seed=1)
        try:
            envs.reset()
            record = []
            for _ in range(45):
                _, _, terminated, truncated, info = envs.step(np.zeros(2, int))
                assert not terminated.any()  # no FIRE: the ball never comes
                record.append((info["elapsed_step"].tolist(), truncated.tolist()))
            records.append(record)
        finally:
            envs.close()
    theirs, ours = records
    assert ours == theirs
    assert ours[39] == ([40, 40], [True, True]) and ours[40] == ([0, 0], [False, False])


def test_info_ram_is_the_consoles_ram_after_each_step():
    envs = fa_envpool.make("Breakout-v5", num_envs=2, seed=5)
    # make's defaults in fastatari's names: EnvPool's sticky actions (none) and fire reset
    single = fastatari.AtariEnv("Breakout", ram_info=True, repeat_action_probability=0.0,
                                fire_reset=True, max_num_frames_per_episode=None)
    try:
        _, info = envs.reset()
        _, single_info = single.reset(seed=5)
        assert info["ram"].shape == (2, 128) and info["ram"].dtype == np.uint8
        np.testing.assert_array_equal(info["ram"][0], single_info["ram"])
        first = info["ram"].copy()
        for _ in range(5):
            _, _, _, _, info = envs.step(np.ones(2, int))
            _, _, _, _, single_info = single.step(1)
            np.testing.assert_array_equal(info["ram"][0], single_info["ram"])
        assert not np.array_equal(first, info["ram"])
        assert np.array_equal(single_info["ram"], single.ale.getRAM())
    finally:
        envs.close()
        single.close()


@pytest.mark.envpool
@pytest.mark.skipif(not HAVE_ENVPOOL, reason="envpool is not installed")
def test_byte_identical_to_real_envpool_without_noop_draws():
    # EnvPool plays a uniform draw from 0..noop_max-1 no-ops, plus one unless it fires; with
    # FIRE and noop_max=1 that is none, as fastatari's noop_max=0: then the two run the same
    # emulator from the same state (their no-op generators differ, nothing else).
    import envpool

    runs = []
    for make, noop_max in ((envpool.make, 1), (fa_envpool.make, 0)):
        envs = make("Breakout-v5", env_type="gymnasium", num_envs=2, seed=3, noop_max=noop_max,
                    episodic_life=True, reward_clip=True)
        rng = np.random.default_rng(0)
        try:
            obs, info = envs.reset()
            run = [(obs, info["ram"], info["lives"])]
            for _ in range(300):
                obs, reward, terminated, truncated, info = envs.step(rng.integers(0, 4, 2))
                run.append((obs, info["ram"], info["lives"], reward, terminated, truncated,
                            info["reward"], info["terminated"], info["elapsed_step"]))
            runs.append(run)
        finally:
            envs.close()
    theirs, ours = runs
    assert any(step[4].any() for step in ours[1:])  # a life was lost: episodic life ran
    game_overs = 0
    for t, (their_step, our_step) in enumerate(zip(theirs, ours, strict=True)):
        # A game-over step's observation is gymnasium's here (frames after the end are not
        # captured: the README's table of differences); everything else is EnvPool's.
        game_over = our_step[7].astype(bool) if t else np.zeros(2, bool)
        game_overs += game_over.sum()
        np.testing.assert_array_equal(our_step[0][~game_over], their_step[0][~game_over],
                                      err_msg=f"step {t}")
        for their_value, our_value in zip(their_step[1:], our_step[1:], strict=True):
            np.testing.assert_array_equal(our_value, their_value, err_msg=f"step {t}")
    assert game_overs >= 1  # and the reset after it


def test_a_list_of_task_ids_plays_one_game_per_env():
    # fastatari's extension: env i plays task_id[i], as the same game made alone with seed s + i
    tasks = ["Pong-v5", "Breakout-v5", "Seaquest-v5"]
    kw = dict(full_action_space=True, episodic_life=True, reward_clip=True,
              max_episode_steps=60)
    envs = fa_envpool.make(tasks, num_envs=3, seed=7, **kw)
    alone = [fa_envpool.make(t, num_envs=1, seed=7 + i, **kw) for i, t in enumerate(tasks)]
    rng = np.random.default_rng(1)
    try:
        assert envs.games == ("pong", "breakout", "seaquest")
        assert envs.spec.config.task == ("pong", "breakout", "seaquest")
        assert envs.action_space == gymnasium.spaces.Discrete(18)
        results = [envs.reset()] + [envs.step(a) for a in rng.integers(0, 18, (80, 3))]
        for i, env in enumerate(alone):
            rng = np.random.default_rng(1)
            actions = rng.integers(0, 18, (80, 3))[:, i]
            own = [env.reset()] + [env.step(actions[t:t + 1]) for t in range(80)]
            for t, (got, expected) in enumerate(zip(results, own, strict=True)):
                for j in range(len(got) - 1):  # obs (reward, terminated, truncated)
                    np.testing.assert_array_equal(got[j][i], expected[j][0], f"{t}, {i}")
                for key in ("ram", "lives", "reward", "terminated", "elapsed_step"):
                    np.testing.assert_array_equal(got[-1][key][i], expected[-1][key][0],
                                                  f"{t}, {i}, {key}")
        assert any(r[3].any() for r in results[1:])  # the 60-step limit truncated games
    finally:
        envs.close()
        for env in alone:
            env.close()
    with pytest.raises(ValueError, match="full_action_space=True"):
        fa_envpool.make(["Pong-v5", "Breakout-v5"], num_envs=2)
    with pytest.raises(ValueError, match="one game per env"):
        fa_envpool.make(["Pong-v5", "Breakout-v5"], num_envs=3, full_action_space=True)
    with pytest.raises(TypeError, match="sequence of num_envs names"):
        fa_envpool.make(3, num_envs=2)


# -- the package ---------------------------------------------------------------------------------
def test_package_modules_import_each_other_without_a_circle():
    """No module of fastatari.envpool imports, at its top or inside a function, one that imports
    it back; the package's __init__ imports the submodules, so none of them imports it."""
    package = pathlib.Path(fa_envpool.__file__).parent
    names = {path: "fastatari.envpool" + ("" if path.stem == "__init__" else f".{path.stem}")
             for path in package.glob("*.py")}
    graph = {}
    for path, name in names.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:  # relative: from the package (these are its direct modules)
                    module = ".".join(filter(None, ["fastatari.envpool", module]))
                imported |= {module} | {f"{module}.{alias.name}" for alias in node.names}
        graph[name] = imported & set(names.values()) - {name}
    assert graph["fastatari.envpool"]  # the check sees the package's own imports
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f"import circle in fastatari.envpool: {error.args[1]}")


def test_gym_and_jax_are_imported_only_when_asked_for(tmp_path):
    """Importing fastatari.envpool and making a gymnasium-API env loads neither gym
    (env_type="gym") nor jax (env.xla()). Checked in a fresh interpreter, so it can fail."""
    code = ("import sys; from fastatari import envpool; envpool.make('Pong-v5').close(); "
            "print('gym' in sys.modules, 'jax' in sys.modules)")
    out = run_code(code, check=True).stdout.split()
    assert out == ["False", "False"]


def test_a_checkpoint_of_a_pool_continues_exactly(tmp_path):
    """fastatari.checkpoint of a pool (its vector env and its own counts: elapsed steps,
    lives, ended episodes, send order): a new pool loaded from it returns what the saved one
    returns, step for step, through time limits, life losses and autoresets; a state of
    another kind changes nothing; a pool with results waiting is refused."""
    from fastatari import checkpoint

    def make(**kw):
        return fa_envpool.make("Breakout-v5", env_type="gymnasium", num_envs=2, seed=3,
                               episodic_life=True, max_episode_steps=40, **kw)

    saved, loaded, pending = make(), make(), make(batch_size=1)
    try:
        rng = np.random.default_rng(0)

        def step(pool, actions):
            obs, reward, terminated, truncated, info = pool.step(actions)
            return [obs, reward, terminated, truncated, info["env_id"], info["elapsed_step"],
                    info["lives"]]

        saved.reset()
        for _ in range(57):
            step(saved, rng.integers(0, 4, 2))
        checkpoint.save(tmp_path, envs=saved)
        loaded.reset()
        before = loaded.state_dict()
        with pytest.raises(ValueError, match="not a fastatari EnvPool state_dict"):
            loaded.load_state_dict({"vec": None})
        with pytest.raises(TypeError, match="elapsed must be int64"):
            loaded.load_state_dict({**saved.state_dict(), "elapsed": np.zeros(2, np.int32)})
        np.testing.assert_array_equal(loaded.state_dict()["elapsed"], before["elapsed"])
        checkpoint.load(tmp_path, envs=loaded)
        for _ in range(150):  # past time limits (40) and autoresets
            actions = rng.integers(0, 4, 2)
            for a, b in zip(step(saved, actions), step(loaded, actions), strict=True):
                np.testing.assert_array_equal(a, b)
        pending.reset()  # one env's reset waits for recv()
        with pytest.raises(AlreadyPendingCallError):
            pending.state_dict()
    finally:
        for pool in (saved, loaded, pending):
            pool.close()
