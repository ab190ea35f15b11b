"""fastatari.sb3: Stable-Baselines3's VecEnv contract, and a short PPO run on it."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest

pytestmark = pytest.mark.rl
pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.base_class import BaseAlgorithm  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.preprocessing import (  # noqa: E402
    is_image_space,
    is_image_space_channels_first,
)
from stable_baselines3.common.vec_env import VecEnv  # noqa: E402

import fastatari  # noqa: E402
from fastatari import make_vec  # noqa: E402
from fastatari.sb3 import SB3AtariVecEnv, make_vec_env  # noqa: E402

# Short games (400 frames = at most 100 agent steps) so episodes end within a test.
SHORT = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400)
# subprocesses import the same fastatari as these tests (an in-place build or the wheel)
FASTATARI_HOME = str(Path(fastatari.__file__).resolve().parents[1])


def test_spaces_are_channel_first_images_and_need_no_transpose():
    venv = make_vec_env("breakout", 2, num_workers=1)
    try:
        assert isinstance(venv, VecEnv)
        assert venv.num_envs == 2
        space = venv.observation_space
        assert space.shape == (4, 84, 84) and space.dtype == np.uint8
        assert is_image_space(space) and is_image_space_channels_first(space)
        assert venv.action_space == gymnasium.spaces.Discrete(4)
        # what SB3's algorithms do to an env they are given: nothing here
        assert BaseAlgorithm._wrap_env(venv) is venv
        assert venv.env_is_wrapped(Monitor) == [True, True]
        assert venv.env_is_wrapped(gymnasium.Wrapper) == [False, False]
    finally:
        venv.close()


def test_reset_seeds_follow_sb3_convention():
    a = make_vec_env("breakout", 3, seed=5, num_workers=1)
    b = make_vec_env("breakout", 3, num_workers=1)
    try:
        assert b.seed(5) == [5, 6, 7]
        obs_a, obs_b = a.reset(), b.reset()
        assert obs_a.shape == (3, 4, 84, 84) and obs_a.dtype == np.uint8
        assert np.array_equal(obs_a, obs_b)
        with make_vec("breakout", 3, num_workers=1, autoreset_mode="same_step") as ref:
            ref_obs, _ = ref.reset(seed=5)
        assert np.array_equal(obs_a, ref_obs)
        assert a.reset_infos[0]["lives"] == 5 and "frame_number" in a.reset_infos[0]
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("options", [{}, {"episodic_life": True, "clip_rewards": True}],
                         ids=["plain", "episodic_life"])
def test_step_matches_the_vector_env_and_sb3_info_format(options):
    n, seed = 3, 11
    rng = np.random.default_rng(0)
    venv = make_vec_env("breakout", n, seed=seed, num_workers=2, **SHORT, **options)
    ref = make_vec("breakout", n, num_workers=1, autoreset_mode="same_step", **SHORT, **options)
    try:
        obs = venv.reset()
        ref_obs, _ = ref.reset(seed=seed)
        assert np.array_equal(obs, ref_obs)
        returns = np.zeros(n)
        lengths = np.zeros(n, int)
        dones_seen = games_seen = differs = 0
        for _ in range(230):
            actions = rng.integers(0, 4, n)
            obs, rewards, dones, infos = venv.step(actions)
            r_obs, r_rew, r_term, r_trunc, r_info = ref.step(actions)
            assert obs.shape == (n, 4, 84, 84) and obs.dtype == np.uint8
            assert rewards.dtype == np.float32 and rewards.shape == (n,)
            assert dones.dtype == bool and dones.shape == (n,)
            assert isinstance(infos, list) and len(infos) == n
            assert np.array_equal(obs, r_obs)
            assert np.array_equal(rewards, r_rew.astype(np.float32))
            assert np.array_equal(dones, r_term | r_trunc)
            returns += r_info["raw_reward"] if "raw_reward" in r_info else r_rew
            lengths += 1
            for i, info in enumerate(infos):
                assert info["TimeLimit.truncated"] == bool(r_trunc[i] and not r_term[i])
                if not dones[i]:
                    assert "terminal_observation" not in info and "episode" not in info
                    continue
                dones_seen += 1
                terminal = info["terminal_observation"]
                assert terminal.shape == (4, 84, 84) and terminal.dtype == np.uint8
                assert np.array_equal(terminal, r_info["final_obs"][i])
                # obs[i] starts the next episode (a continued game can repeat the screen)
                differs += not np.array_equal(terminal, obs[i])
                assert info["lives"] == r_info["final_info"]["lives"][i]
                assert venv.reset_infos[i]["lives"] == r_info["lives"][i]
                game_over = r_info["game_over"][i] if options else True
                assert ("episode" in info) == bool(game_over)
                if "episode" in info:
                    games_seen += 1
                    episode = info["episode"]
                    assert set(episode) == {"r", "l", "t"}
                    assert isinstance(episode["r"], float) and isinstance(episode["l"], int)
                    assert isinstance(episode["t"], float) and episode["t"] > 0
                    assert episode["r"] == returns[i] and episode["l"] == lengths[i]
                    returns[i], lengths[i] = 0, 0
        assert differs > 0
        assert games_seen >= n  # 230 steps hold at least two 100-step games per env
        if options:
            assert dones_seen > games_seen  # life losses end episodes, not games
    finally:
        venv.close()
        ref.close()


def test_attributes_methods_and_images():
    venv = make_vec_env("pong", 2, num_workers=1, render_mode="rgb_array")
    try:
        assert venv.render_mode == "rgb_array"
        assert venv.get_attr("render_mode") == ["rgb_array", "rgb_array"]
        assert venv.get_attr("frame_skip", indices=[1]) == [4]
        assert venv.get_attr("action_space", indices=0) == [gymnasium.spaces.Discrete(6)]
        assert venv.has_attr("stack_size") and not venv.has_attr("ale")
        with pytest.raises(AttributeError, match="get_attr"):
            venv.get_attr("ale")
        with pytest.raises(NotImplementedError, match="make_vec_env"):
            venv.set_attr("frame_skip", 2)
        with pytest.raises(NotImplementedError, match="render"):
            venv.env_method("get_action_meanings")
        venv.reset()
        images = venv.get_images()
        assert len(images) == 2 and images[0].shape == (210, 160, 3)
        assert venv.env_method("render", indices=[1])[0].shape == (210, 160, 3)
        assert venv.render(mode="rgb_array").ndim == 3  # SB3 tiles the two screens
        with pytest.raises(NotImplementedError, match="reset options"):
            venv.set_options({"foo": 1})
            venv.reset()
    finally:
        venv.close()
    venv = make_vec_env("pong", 2, num_workers=1)
    try:
        with pytest.warns(UserWarning, match="rgb_array"):
            assert venv.get_images() == [None, None]
    finally:
        venv.close()


def test_bad_arguments():
    with pytest.raises(TypeError, match="same_step"):
        make_vec_env("breakout", 2, autoreset_mode="next_step")
    with make_vec("breakout", 1) as vec:
        with pytest.raises(ValueError, match="same_step"):
            SB3AtariVecEnv(vec)


def test_missing_sb3_names_the_extra():
    code = ("import sys; sys.modules['stable_baselines3'] = None\n"
            "try:\n    import fastatari.sb3\n"
            "except ImportError as e:\n    print(e)\n")
    path = os.pathsep.join([FASTATARI_HOME, os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    # cwd: `python -c` puts the working directory first on sys.path
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60, cwd=FASTATARI_HOME)
    assert 'pip install "fastatari[rl]"' in out.stdout, out.stderr


def test_ppo_trains_and_sees_games_end():
    venv = make_vec_env("breakout", 4, num_workers=2, **SHORT)
    try:
        model = PPO("CnnPolicy", venv, n_steps=128, batch_size=256, n_epochs=1, seed=0,
                    device="cpu", verbose=0)
        assert model.get_env() is venv  # no VecTransposeImage
        model.learn(total_timesteps=2048)
        assert model.num_timesteps >= 2048
        assert len(model.ep_info_buffer) > 0  # every game lasts at most 100 steps
        for episode in model.ep_info_buffer:
            assert set(episode) == {"r", "l", "t"} and 1 <= episode["l"] <= 100
        # evaluate_policy sees Monitor-style episodes: no warning, whole games counted
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            rewards, lengths = evaluate_policy(model, venv, n_eval_episodes=4,
                                               return_episode_rewards=True)
        assert len(rewards) == 4 and all(1 <= n <= 100 for n in lengths)
    finally:
        venv.close()
