"""fastatari.envpool's module-level entry points as EnvPool has them: make_gymnasium, make_gym,
make_dm (EnvPool's dm_env API) and make_spec; EnvPool's array specs (``spec.state_array_spec``,
``spec.action_array_spec``) and action forms.

The dm_env tests are marked ``dm`` and skip without dm-env; those against the real EnvPool are
marked ``envpool`` and skip without it."""
from __future__ import annotations

import importlib.util
import inspect
import sys

import gymnasium
import numpy as np
import pytest

from fastatari import envpool as fa_envpool

from .._python import run_code

HAVE_ENVPOOL = importlib.util.find_spec("envpool") is not None
HAVE_DM_ENV = importlib.util.find_spec("dm_env") is not None

STATE_KEYS = ["info:env_id", "info:players.env_id", "elapsed_step", "done", "reward", "discount",
              "step_type", "trunc", "obs", "info:lives", "info:reward", "info:terminated",
              "info:ram"]
FIRST, MID, LAST = 0, 1, 2  # dm_env.StepType


def needs_dm_env(test):
    """A dm_env API test: marked ``dm`` (CI runs them with dm-env installed), skipped
    without dm-env."""
    skip = pytest.mark.skipif(not HAVE_DM_ENV, reason="dm-env is not installed "
                              "(pip install dm-env): the dm_env API needs it")
    return pytest.mark.dm(skip(test))


def needs_envpool(test):
    """A comparison with the real EnvPool: marked ``envpool``, skipped without it."""
    return pytest.mark.envpool(pytest.mark.skipif(not HAVE_ENVPOOL,
                                                  reason="envpool is not installed")(test))


# -- make_gymnasium, make_gym, make_spec -------------------------------------------------------
def test_make_gymnasium_and_make_gym_are_make_with_the_gymnasium_api():
    kw = dict(num_envs=2, seed=3, num_threads=1)
    reference = fa_envpool.make("Pong-v5", env_type="gymnasium", **kw)
    try:
        expected = [reference.reset()[0]] + [reference.step(np.array([2, 3]))[0]]
    finally:
        reference.close()
    for make in (fa_envpool.make_gymnasium, fa_envpool.make_gym):  # EnvPool 1.x: the same
        envs = make("Pong-v5", **kw)
        try:
            assert type(envs) is fa_envpool.EnvPoolAtari
            assert envs.spec.config == fa_envpool.make_spec("Pong-v5", **kw).config
            got = [envs.reset()[0]] + [envs.step(np.array([2, 3]))[0]]
            for ours, theirs in zip(got, expected, strict=True):
                np.testing.assert_array_equal(ours, theirs)
        finally:
            envs.close()


def test_make_spec_checks_the_options_and_starts_no_game(monkeypatch):
    def no_games(*args, **kwargs):
        raise AssertionError("make_spec started games")

    monkeypatch.setattr(fa_envpool, "WorkerPool", no_games)
    spec = fa_envpool.make_spec("Breakout-v5", num_envs=3, batch_size=2, gray_scale=False,
                                stack_num=2, img_height=60, img_width=50)
    assert isinstance(spec, fa_envpool.EnvPoolSpec)
    config = spec.config
    assert isinstance(config, fa_envpool.Config)
    assert (config.task, config.num_envs, config.batch_size, config.seed) == ("breakout", 3, 2, 42)
    assert config.gym_reset_return_info and config.stack_num == 2 and not config.gray_scale
    assert spec.observation_space == gymnasium.spaces.Box(0, 255, (6, 60, 50), np.uint8)
    assert spec.action_space == gymnasium.spaces.Discrete(4)
    assert spec.gymnasium_observation_space is spec.observation_space
    assert spec.gymnasium_action_space is spec.action_space
    assert spec.reward_threshold is None
    assert repr(spec).startswith("AtariEnvSpec(num_envs=3, batch_size=2")
    state = spec.state_array_spec
    assert list(state) == STATE_KEYS
    assert (state["obs"].shape, state["obs"].dtype) == ([6, 60, 50], np.uint8)
    assert (state["info:ram"].shape, state["info:ram"].dtype) == ([128], np.uint8)
    assert (state["info:lives"].shape, state["info:lives"].dtype) == ([-1], np.int32)
    assert (state["reward"].dtype, state["done"].dtype) == (np.float32, np.bool_)
    assert (state["info:terminated"].minimum, state["info:terminated"].maximum) == (0, 1)
    action = spec.action_array_spec
    assert list(action) == ["env_id", "players.env_id", "action"]
    assert (action["action"].dtype, action["action"].minimum, action["action"].maximum) == (
        np.int32, 0, 3)
    assert repr(action["action"]) == "ArraySpec(shape=[-1], dtype=int32, minimum=0, maximum=3)"
    assert fa_envpool.make_spec(["Pong-v5", "Breakout-v5"], num_envs=2,
                                full_action_space=True).config.task == ("pong", "breakout")
    with pytest.raises(TypeError, match="unknown EnvPool option.*bogus"):
        fa_envpool.make_spec("Pong-v5", bogus=1)
    with pytest.raises(ValueError, match=r"batch_size must be an int in \[1, 3\]"):
        fa_envpool.make_spec("Pong-v5", num_envs=3, batch_size=4)
    with pytest.raises(ValueError, match="different action sets.*full_action_space=True"):
        fa_envpool.make_spec(["Pong-v5", "Breakout-v5"], num_envs=2)
    with pytest.raises(ValueError, match="one game per env"):
        fa_envpool.make_spec(["Pong-v5", "Breakout-v5"], num_envs=3, full_action_space=True)


def test_env_results_have_the_specs_dtypes_and_shapes():
    envs = fa_envpool.make("Breakout-v5", num_envs=2, num_threads=1)
    try:
        assert repr(envs.spec.state_array_spec) == repr(
            fa_envpool.make_spec("Breakout-v5", num_envs=2).state_array_spec)
        assert envs.spec.action_array_spec["action"].maximum == envs.action_space.n - 1
        state = envs.spec.state_array_spec
        envs.reset()
        obs, reward, terminated, truncated, info = envs.step(np.ones(2, np.int32))
        given = {"obs": obs, "reward": reward, "done": terminated, "trunc": truncated,
                 "info:env_id": info["env_id"], "info:players.env_id": info["players"]["env_id"],
                 "elapsed_step": info["elapsed_step"], "info:lives": info["lives"],
                 "info:reward": info["reward"], "info:terminated": info["terminated"],
                 "info:ram": info["ram"]}
        for key, value in given.items():
            assert value.dtype == state[key].dtype, key
            assert value.shape[1:] == tuple(s for s in state[key].shape if s != -1), key
    finally:
        envs.close()


def test_envpool_action_forms_dicts_float_arrays_and_seed():
    envs = fa_envpool.make("Pong-v5", num_envs=2, num_threads=1)
    ids = np.arange(2, dtype=np.int32)
    try:
        envs.reset()
        # EnvPool's dict form: int32 arrays, env_id taken from the dict
        *_, info = envs.step({"env_id": ids, "players.env_id": ids,
                              "action": np.ones(2, np.int32)})
        assert info["env_id"].tolist() == [0, 1]
        *_, info = envs.step({"env_id": ids[1:], "action": np.array([2], np.int32)})
        assert info["env_id"].tolist() == [1]
        with pytest.raises(RuntimeError, match='Expected dtype int32 with action "env_id", '
                                               'got int64'):
            envs.step({"env_id": np.arange(2), "action": np.ones(2, np.int32)})
        # floats holding whole numbers pass, as EnvPool casts them; fractions are refused
        *_, info = envs.step(np.ones(2))
        assert info["elapsed_step"].tolist() == [2, 3]
        with pytest.raises(TypeError, match="actions must be integers"):
            envs.step(np.full(2, 0.5))
        with pytest.warns(UserWarning, match="`seed` function in envpool is abandoned"):
            envs.seed(1)
    finally:
        envs.close()


# -- make_dm and env_type="dm" -----------------------------------------------------------------
def test_dm_api_without_dm_env_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "dm_env", None)  # as if dm-env were not installed
    for make in (fa_envpool.make_dm, lambda task: fa_envpool.make(task, env_type="dm")):
        with pytest.raises(ImportError, match="needs the dm-env package: pip install dm-env"):
            make("Pong-v5")
    spec = fa_envpool.make_spec("Pong-v5")
    with pytest.raises(ImportError, match="pip install dm-env"):
        spec.observation_spec()
    with pytest.raises(ImportError, match="pip install dm-env"):
        spec.action_spec()


def test_dm_env_is_imported_only_when_asked_for(tmp_path):
    code = ("import sys; from fastatari import envpool; envpool.make_spec('Pong-v5'); "
            "print('dm_env' in sys.modules)")
    out = run_code(code, check=True).stdout.split()
    assert out == ["False"]


@needs_dm_env
def test_make_dm_gives_timesteps_in_envpools_structure():
    import dm_env

    envs = fa_envpool.make_dm("Pong-v5", num_envs=3, num_threads=1)
    try:
        assert isinstance(envs, dm_env.Environment)
        assert type(envs).__name__ == "EnvPoolAtariDM"
        obs_spec, action_spec = envs.observation_spec(), envs.action_spec()
        assert type(obs_spec).__name__ == "State"
        assert isinstance(obs_spec.obs, dm_env.specs.BoundedArray)
        assert (obs_spec.obs.shape, obs_spec.obs.dtype, obs_spec.obs.maximum) == (
            (4, 84, 84), np.uint8, 255)
        assert isinstance(obs_spec.terminated, dm_env.specs.DiscreteArray)
        assert isinstance(action_spec, dm_env.specs.DiscreteArray)
        assert action_spec.num_values == 6
        for ts in (envs.reset(), envs.step(np.ones(3, np.int32))):
            assert isinstance(ts, dm_env.TimeStep)
            assert (ts.step_type.dtype, ts.reward.dtype, ts.discount.dtype) == (
                np.int32, np.float32, np.float32)
            assert ts.step_type.shape == ts.reward.shape == ts.discount.shape == (3,)
            observation = ts.observation
            assert observation._fields == ("env_id", "players", "obs", "lives", "reward",
                                           "terminated", "ram")
            assert observation.env_id.tolist() == [0, 1, 2]
            assert observation.players.env_id.tolist() == [0, 1, 2]
            assert observation.obs.shape == (3, 4, 84, 84) and observation.obs.dtype == np.uint8
            assert observation.ram.shape == (3, 128)
            for key in ("env_id", "lives", "terminated"):
                assert getattr(observation, key).dtype == np.int32, key
        assert np.all(envs.reset().first())
        ts = envs.step(np.ones(3, np.int32))
        assert np.all(ts.mid()) and ts.discount.tolist() == [1, 1, 1]
        envs.async_reset()  # EnvPool's low-level API, as its dm tests drive it
        assert np.all(envs.recv().first())
        envs.send(np.ones(3, np.int32))
        assert np.all(envs.recv().mid())
        other = fa_envpool.make("Pong-v5", env_type="dm", num_envs=1)
        assert type(other) is type(envs)
        other.close()
    finally:
        envs.close()


@needs_dm_env
@pytest.mark.parametrize("episodic_life, zero_discount_on_life_loss", [(True, False),
                                                                        (False, True)])
def test_dm_step_types_and_discounts_follow_the_episodes(episodic_life,
                                                         zero_discount_on_life_loss):
    # The same games on the gymnasium API say where the episodes and lives end.
    kw = dict(num_envs=2, seed=2, num_threads=1, episodic_life=episodic_life,
              zero_discount_on_life_loss=zero_discount_on_life_loss, max_episode_steps=150)
    dm = fa_envpool.make_dm("Breakout-v5", **kw)
    gym = fa_envpool.make_gymnasium("Breakout-v5", **kw)
    rng = np.random.default_rng(0)
    life_losses = ends = 0
    try:
        ts = dm.reset()
        obs, info = gym.reset()
        np.testing.assert_array_equal(ts.observation.obs, obs)
        lives, reset = info["lives"], np.zeros(2, bool)  # reset: this step resets the env
        for _ in range(400):
            action = rng.integers(0, 4, 2)
            ts = dm.step(action)
            obs, reward, terminated, truncated, info = gym.step(action)
            np.testing.assert_array_equal(ts.observation.obs, obs)
            np.testing.assert_array_equal(ts.reward, reward)
            np.testing.assert_array_equal(ts.observation.lives, info["lives"])
            done = terminated | truncated
            lost = ~reset & (info["lives"] != lives)
            np.testing.assert_array_equal(ts.step_type,
                                          np.where(reset, FIRST, np.where(done, LAST, MID)))
            zero = done | (lost & zero_discount_on_life_loss)
            np.testing.assert_array_equal(ts.discount, np.where(reset, 1.0, ~zero))
            life_losses += int((lost & ~done).sum() if zero_discount_on_life_loss
                               else lost.sum())
            ends += int(done.sum())
            lives, reset = info["lives"], done
    finally:
        dm.close()
        gym.close()
    # lives were lost (within an episode where the discount alone says so) and episodes ended
    assert life_losses >= 2 and ends >= 2


# -- against the real EnvPool --------------------------------------------------------------------
@needs_envpool
def test_specs_and_make_spec_defaults_match_real_envpool():
    import envpool

    for kw in ({}, {"gray_scale": False, "stack_num": 2, "img_height": 60, "img_width": 50},
               {"full_action_space": True, "num_envs": 3, "batch_size": 2}):
        for task_id in ("Breakout-v5", "Pong-v5"):
            theirs, ours = envpool.make_spec(task_id, **kw), fa_envpool.make_spec(task_id, **kw)
            for name in ("state_array_spec", "action_array_spec"):
                their_specs, our_specs = getattr(theirs, name), getattr(ours, name)
                assert list(our_specs) == list(their_specs), name
                for key, their in their_specs.items():
                    our = our_specs[key]
                    for field in ("dtype", "shape", "minimum", "maximum", "is_discrete"):
                        assert getattr(our, field) == getattr(their, field), (key, field)
                        assert type(getattr(our, field)) is type(getattr(their, field))
                    assert repr(our) == repr(their)
            # the dm_env specs (envpool needs dm-env, so it is here)
            assert repr(ours.observation_spec()) == repr(theirs.observation_spec())
            assert repr(ours.action_spec()) == repr(theirs.action_spec())
            assert ours.observation_space == theirs.observation_space
            assert ours.action_space == theirs.action_space
            assert ours.gymnasium_observation_space == theirs.gymnasium_observation_space
            assert ours.gymnasium_action_space == theirs.gymnasium_action_space
            assert ours.reward_threshold == theirs.reward_threshold
            assert ours.config._fields == theirs.config._fields
            for name, value in theirs.config._asdict().items():
                if name != "base_path":  # where the ROMs are
                    assert getattr(ours.config, name) == value, name
    # make_spec's (so make's) defaults are EnvPool's
    defaults = envpool.make_spec("Breakout-v5").config
    for name, parameter in inspect.signature(fa_envpool.make_spec).parameters.items():
        if name in defaults._fields and name not in ("batch_size", "gym_reset_return_info"):
            assert parameter.default == getattr(defaults, name), name


@needs_envpool
@pytest.mark.parametrize("episodic_life, zero_discount_on_life_loss", [(False, True),
                                                                        (True, False)])
def test_dm_byte_identical_to_real_envpool_without_noop_draws(episodic_life,
                                                              zero_discount_on_life_loss):
    # As test_api's gymnasium comparison: EnvPool's noop_max=1 is fastatari's 0 on a
    # game with FIRE; then both play the same games, and the TimeSteps are the same but for
    # the observation of a step on which the game ends (the README's table of differences).
    import envpool

    runs = []
    for make_dm, noop_max in ((envpool.make_dm, 1), (fa_envpool.make_dm, 0)):
        envs = make_dm("Breakout-v5", num_envs=2, seed=3, noop_max=noop_max, reward_clip=True,
                       episodic_life=episodic_life,
                       zero_discount_on_life_loss=zero_discount_on_life_loss)
        rng = np.random.default_rng(0)
        try:
            runs.append([envs.reset()] + [envs.step(rng.integers(0, 4, 2)) for _ in range(300)])
        finally:
            envs.close()
    theirs, ours = runs
    zero_discounts = 0
    for t, (their, our) in enumerate(zip(theirs, ours, strict=True)):
        for field in ("step_type", "reward", "discount"):
            their_value, our_value = getattr(their, field), getattr(our, field)
            assert our_value.dtype == their_value.dtype, (t, field)
            np.testing.assert_array_equal(our_value, their_value, f"step {t}: {field}")
        game_over = our.observation.terminated.astype(bool) if t else np.zeros(2, bool)
        for field in their.observation._fields:
            their_value, our_value = getattr(their.observation, field), getattr(our.observation,
                                                                                field)
            if field == "players":
                their_value, our_value = their_value.env_id, our_value.env_id
            if field == "obs":
                their_value, our_value = their_value[~game_over], our_value[~game_over]
            assert our_value.dtype == their_value.dtype, (t, field)
            np.testing.assert_array_equal(our_value, their_value, f"step {t}: {field}")
        zero_discounts += int((our.discount == 0).sum())
    assert zero_discounts >= 2
