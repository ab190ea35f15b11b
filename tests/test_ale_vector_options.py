"""ale-py's options that fastatari takes as ale-py defines them: ``continuous`` actions (the
paddle strength included) and the vector env's ``life_loss_info``.

References: gymnasium's pipeline over ale-py's ``AtariEnv(continuous=True)``, and ale-py's own
``AtariVectorEnv`` (sticky actions and no-ops off, where its seeding and reset order differ)."""
from __future__ import annotations

import ale_py
import gymnasium
import numpy as np
import pytest
from ale_py.vector_env import AtariVectorEnv as AleVectorEnv
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

import fastatari

gymnasium.register_envs(ale_py)

# Breakout plays with a paddle (the strength matters); Skiing's legal set lacks FIRE, which a
# continuous action still presses; Seaquest is a joystick game.
GAMES = {"breakout": "Breakout", "skiing": "Skiing", "seaquest": "Seaquest"}


def reference(game: str):
    """gymnasium's pipeline with ale-py's continuous actions (no-ops off: gymnasium's
    AtariPreprocessing steps the integer 0 as its no-op, which a continuous env refuses)."""
    env = gymnasium.make(f"ALE/{GAMES[game]}-v5", frameskip=1, continuous=True)
    return FrameStackObservation(AtariPreprocessing(env, noop_max=0), 4)


def random_actions(space, steps: int, shape=(), seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(space.low, space.high, size=(steps,) + shape + space.shape
                       ).astype(np.float32)


def assert_same_step(ours, theirs, where):
    np.testing.assert_array_equal(ours[0], theirs[0], err_msg=f"obs at {where}")
    assert ours[1:4] == theirs[1:4], where
    assert ours[4]["lives"] == theirs[4]["lives"], where


# -- continuous actions ------------------------------------------------------------------------
@pytest.mark.parametrize("game", sorted(GAMES))
def test_continuous_atari_env_equals_gymnasium_over_ale_py(game):
    ref, ours = reference(game), fastatari.AtariEnv(game, continuous=True, noop_max=0)
    assert ours.action_space == ref.action_space
    assert ours.action_space.dtype == np.float32 and ours.action_space.shape == (3,)
    np.testing.assert_array_equal(ours.reset(seed=3)[0], ref.reset(seed=3)[0])
    for t, action in enumerate(random_actions(ref.action_space, 500)):
        step = ours.step(action)
        assert_same_step(step, ref.step(action), t)
        if step[2] or step[3]:
            np.testing.assert_array_equal(ours.reset()[0], ref.reset()[0])
    ours.close()
    ref.close()


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_continuous_vector_env_equals_gymnasium_per_env(mode):
    n = 3
    envs = fastatari.make_vec("breakout", n, continuous=True, noop_max=0, num_workers=2,
                              autoreset_mode=mode)
    refs = [reference("breakout") for _ in range(n)]
    try:
        assert envs.single_action_space == refs[0].action_space
        assert envs.action_space.shape == (n, 3)
        obs, _ = envs.reset(seed=5)
        for i, ref in enumerate(refs):
            np.testing.assert_array_equal(obs[i], ref.reset(seed=5 + i)[0])
        ended = np.zeros(n, bool)
        for t, actions in enumerate(random_actions(envs.single_action_space, 300, (n,))):
            obs, reward, terminated, truncated, info = envs.step(actions)
            for i, ref in enumerate(refs):
                if ended[i]:  # next-step autoreset: this step reset env i
                    np.testing.assert_array_equal(obs[i], ref.reset()[0])
                    continue
                got = (obs[i], reward[i], terminated[i], truncated[i], {"lives": info["lives"][i]})
                theirs = ref.step(actions[i])
                if mode == "same_step" and (theirs[2] or theirs[3]):  # reset at once
                    got = (info["final_obs"][i],) + got[1:4] + (
                        {"lives": info["final_info"]["lives"][i]},)
                    np.testing.assert_array_equal(obs[i], ref.reset()[0])
                assert_same_step(got, theirs, (t, i))
            ended = (terminated | truncated) if mode == "next_step" else ended
    finally:
        envs.close()
        for ref in refs:
            ref.close()


def test_continuous_vector_env_equals_ale_py_vector_env():
    n = 4
    theirs = AleVectorEnv("breakout", n, continuous=True, noop_max=0, use_fire_reset=False,
                          reward_clipping=False)
    ours = fastatari.make_vec("breakout", n, continuous=True, noop_max=0, num_workers=2,
                              repeat_action_probability=0.0, padding_type="zero")
    try:
        assert ours.single_action_space == theirs.single_action_space
        np.testing.assert_array_equal(ours.reset(seed=0)[0], theirs.reset(seed=0)[0])
        for t, actions in enumerate(random_actions(ours.single_action_space, 400, (n,))):
            mine, other = ours.step(actions), theirs.step(actions)
            for k in range(4):
                np.testing.assert_array_equal(mine[k], other[k], err_msg=f"{k} at {t}")
            np.testing.assert_array_equal(mine[4]["lives"], other[4]["lives"])
    finally:
        ours.close()
        theirs.close()


def test_the_radius_is_the_paddle_strength():
    """Breakout's paddle moves by the strength: the same direction at two radii diverges
    (until the paddle reaches the wall, after about 10 steps)."""
    runs = []
    for radius in (0.6, 1.0):
        env = fastatari.AtariEnv("breakout", continuous=True, noop_max=0,
                                 repeat_action_probability=0.0)
        env.reset(seed=0)
        # theta pi: left, past the 0.5 threshold at both radii
        runs.append([env.step(np.array([radius, np.pi, 0.0], np.float32))[0] for _ in range(3)])
        env.close()
    assert all(not np.array_equal(slow, fast) for slow, fast in zip(*runs, strict=True))


@pytest.mark.parametrize("actions, error, match", [
    (np.zeros((2, 2), np.float32), ValueError, r"shape \(2, 3\)"),
    (np.zeros(2, np.int64), ValueError, r"shape \(2, 3\)"),
    (np.full((2, 3), np.nan, np.float32), ValueError, "finite"),
    (np.zeros((2, 3), bool), TypeError, "real numbers"),
    ([["a", "b", "c"]] * 2, TypeError, "real numbers"),
])
def test_bad_continuous_actions_are_refused_before_any_step(actions, error, match):
    envs = fastatari.make_vec("breakout", 2, continuous=True, num_workers=1)
    try:
        envs.reset(seed=0)
        with pytest.raises(error, match=match):
            envs.step(actions)
        envs.step(np.zeros((2, 3), np.float32))  # nothing was sent: the env steps on
    finally:
        envs.close()


def test_continuous_options_are_checked():
    with pytest.raises(ValueError, match="continuous_action_threshold"):
        fastatari.AtariOptions(continuous=True, continuous_action_threshold=float("nan"))
    with pytest.raises(ValueError, match="continuous_action_threshold"):
        fastatari.AtariOptions(continuous_action_threshold=-0.1)
    assert fastatari.AtariOptions(continuous=True).full_action_set
    env = fastatari.AtariEnv("breakout", continuous=True)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        env.step(np.zeros(2, np.float32))
    env.close()


# -- life_loss_info ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_life_loss_info_equals_ale_py_vector_env(mode):
    n = 3
    theirs = AleVectorEnv("breakout", n, noop_max=0, use_fire_reset=False,
                          reward_clipping=False, life_loss_info=True, autoreset_mode=mode)
    ours = fastatari.make_vec("breakout", n, noop_max=0, repeat_action_probability=0.0,
                              life_loss_info=True, padding_type="zero", autoreset_mode=mode,
                              num_workers=2)
    try:
        np.testing.assert_array_equal(ours.reset(seed=0)[0], theirs.reset(seed=0)[0])
        rng = np.random.default_rng(0)
        life_losses = game_overs = 0
        for t in range(1200):
            actions = rng.integers(0, ours.single_action_space.n, n)
            mine, other = ours.step(actions), theirs.step(actions)
            for k in range(4):
                np.testing.assert_array_equal(mine[k], other[k], err_msg=f"{k} at {t}")
            np.testing.assert_array_equal(mine[4]["lives"], other[4]["lives"])
            game_over = mine[4]["lives"] == 0 if mode == AutoresetMode.NEXT_STEP else None
            if game_over is not None:
                life_losses += int((mine[2] & ~game_over).sum())
                game_overs += int((mine[2] & game_over).sum())
        if mode == AutoresetMode.NEXT_STEP:
            assert life_losses >= n and game_overs >= 1  # both kinds of terminated were seen
    finally:
        ours.close()
        theirs.close()


def test_life_loss_info_terminates_without_ending_the_episode():
    envs = fastatari.make_vec("breakout", 1, life_loss_info=True, num_workers=1)
    try:
        envs.reset(seed=1)
        rng = np.random.default_rng(1)
        for _ in range(2000):
            obs, _, terminated, _, info = envs.step(rng.integers(0, 4, 1))
            if terminated[0]:
                break
        assert terminated[0] and info["lives"][0] > 0
        frame = info["episode_frame_number"][0]
        obs, _, terminated, _, info = envs.step(np.array([0]))
        assert info["episode_frame_number"][0] > frame  # no reset: the same game went on
        assert not terminated[0]
    finally:
        envs.close()


def test_life_loss_info_is_a_vector_env_option():
    with pytest.raises(ValueError, match="vector-env option"):
        fastatari.AtariEnv("breakout", life_loss_info=True)
