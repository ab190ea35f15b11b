"""fastatari.core.schema: the info keys per option combination, the shared-memory columns
derived from the tables, and the keys a real game reports."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastatari.core.options import AtariOptions
from fastatari.core.schema import GAME_FIELDS, INFO_FIELDS, STEP_FIELDS, When, info_fields
from fastatari.vector.buffers import Layout

ALWAYS = ("lives", "episode_frame_number", "frame_number")
FLAGS = list(itertools.product([False, True], repeat=3))  # clip_rewards, episodic_life, ram_info


def expected_keys(clip_rewards: bool, episodic_life: bool, ram_info: bool) -> tuple:
    return (ALWAYS + (("raw_reward",) if clip_rewards else ())
            + (("game_over",) if episodic_life else ()) + (("ram",) if ram_info else ()))


# -- the tables ----------------------------------------------------------------------------------
def test_field_names_are_unique_within_and_across_tables():
    names = [f.name for f in STEP_FIELDS + INFO_FIELDS]
    assert len(names) == len(set(names))
    assert len({f.name for f in GAME_FIELDS}) == len(GAME_FIELDS)


def test_every_dtype_is_a_numpy_dtype():
    for field in STEP_FIELDS + INFO_FIELDS + GAME_FIELDS:
        assert np.dtype(field.dtype).name == field.dtype


def test_episode_fields_are_record_episode_statistics_keys():
    assert [f.name for f in GAME_FIELDS] == ["r", "l", "t"]


@pytest.mark.parametrize("clip_rewards, episodic_life, ram_info", FLAGS)
def test_info_fields_per_option_combination(clip_rewards, episodic_life, ram_info):
    options = AtariOptions(clip_rewards=clip_rewards, episodic_life=episodic_life,
                           ram_info=ram_info)
    fields = info_fields(options)
    assert tuple(f.name for f in fields) == expected_keys(clip_rewards, episodic_life, ram_info)
    assert all(f.present(options) for f in fields)
    assert all(not f.present(options) for f in INFO_FIELDS if f not in fields)


def test_when_names_the_option_it_depends_on():
    option_names = AtariOptions.field_names()
    for when in When:
        assert when is When.ALWAYS or when.value in option_names
    assert {f.name: f.when for f in INFO_FIELDS if f.when is not When.ALWAYS} == {
        "raw_reward": When.CLIP_REWARDS, "game_over": When.EPISODIC_LIFE,
        "ram": When.RAM_INFO}


def test_other_options_do_not_change_the_info_fields():
    options = AtariOptions(terminal_on_life_loss=True, fire_reset=True, grayscale_obs=False)
    assert tuple(f.name for f in info_fields(options)) == ALWAYS


# -- the layout derived from the tables ----------------------------------------------------------
@pytest.mark.parametrize("obs_shape", [(4, 84, 84), (84, 84, 12)])
def test_every_field_has_a_column_of_its_dtype(obs_shape):
    num_envs = 3
    offsets = Layout(num_envs, obs_shape).offsets()
    columns = [(f.name, f) for f in STEP_FIELDS + INFO_FIELDS]
    columns += [("final_" + f.name, f) for f in INFO_FIELDS]
    columns += [("game_" + f.name, f) for f in GAME_FIELDS]
    for name, field in columns:
        assert name in offsets, name
        _, dtype, shape = offsets[name]
        assert dtype == np.dtype(field.dtype), name
        assert shape == (num_envs,) + field.shape, name
    assert offsets["obs"][1:] == (np.dtype(np.uint8), (num_envs,) + obs_shape)
    assert offsets["final_obs"][1:] == (np.dtype(np.uint8), (num_envs,) + obs_shape)


# -- what a real game reports --------------------------------------------------------------------
@pytest.mark.parametrize("clip_rewards, episodic_life, ram_info", FLAGS)
def test_atari_env_step_info_keys_are_the_schema_info_fields(clip_rewards, episodic_life,
                                                             ram_info):
    import fastatari

    options = AtariOptions(clip_rewards=clip_rewards, episodic_life=episodic_life,
                           ram_info=ram_info, repeat_action_probability=0.0,
                           max_num_frames_per_episode=160)
    keys = {f.name for f in info_fields(options)}
    env = fastatari.AtariEnv("breakout", options)
    try:
        env.reset(seed=0)
        ended = False
        for step in range(200):
            _, reward, terminated, truncated, info = env.step(step % env.action_space.n)
            game_ended = "game" in info
            assert set(info) == keys | ({"game"} if game_ended else set()), step
            if game_ended:
                assert set(info["game"]) == {f.name for f in GAME_FIELDS}
                assert terminated or truncated
            if clip_rewards:
                assert reward == np.sign(info["raw_reward"])
            if ram_info:
                assert info["ram"].shape == (128,) and info["ram"].dtype == np.uint8
                np.testing.assert_array_equal(info["ram"], env.ale.getRAM())
            if terminated or truncated:
                ended = game_ended
                if ended:
                    break
                env.reset()
        assert ended, "the frame limit ends the game within 200 steps"
    finally:
        env.close()


@pytest.mark.rl
def test_sb3_per_env_keys_come_from_the_schema():
    pytest.importorskip("stable_baselines3")
    from fastatari.sb3 import vec_env

    assert vec_env._PER_ENV_KEYS[:len(INFO_FIELDS)] == tuple(f.name for f in INFO_FIELDS)
    assert set(vec_env._PER_ENV_KEYS) - {f.name for f in INFO_FIELDS} == {"worker_restarted",
                                                                          "game_index"}
