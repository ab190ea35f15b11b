"""fastatari.AtariEnv: options, errors, names, registration, render and the fastatari extras."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError

gymnasium = pytest.importorskip("gymnasium")
import ale_py  # noqa: E402

import fastatari  # noqa: E402
from fastatari import AtariEnv, AtariOptions  # noqa: E402
from fastatari.core.game import AtariGame  # noqa: E402
from fastatari.core.games import UNLOADABLE, game_ids, resolve_game  # noqa: E402

from ._python import run_code  # noqa: E402

gymnasium.register_envs(ale_py)


# -- options -----------------------------------------------------------------------------------
def test_options_defaults_match_gymnasium():
    o = AtariOptions()
    assert (o.frame_skip, o.screen_size, o.grayscale_obs, o.noop_max, o.terminal_on_life_loss,
            o.stack_size, o.repeat_action_probability, o.full_action_space,
            o.max_num_frames_per_episode) == (4, 84, True, 30, False, 4, 0.25, False, 108_000)
    assert (o.maxpool, o.channels_last, o.clip_rewards, o.fire_reset, o.episodic_life,
            o.mode, o.difficulty) == (True, False, False, False, False, None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.frame_skip = 2  # type: ignore[misc]


@pytest.mark.parametrize("kwargs,shape", [
    (dict(), (4, 84, 84)),
    (dict(screen_size=(64, 48)), (4, 48, 64)),
    (dict(screen_size=(64, 48), channels_last=True), (48, 64, 4)),
    (dict(grayscale_obs=False), (4, 84, 84, 3)),
    (dict(grayscale_obs=False, channels_last=True, stack_size=2), (84, 84, 6)),
    (dict(stack_size=1), (1, 84, 84)),
])
def test_options_shapes(kwargs, shape):
    o = AtariOptions(**kwargs)
    assert o.observation_shape == shape
    size = kwargs.get("screen_size", 84)
    assert o.width == (size if isinstance(size, int) else size[0])
    assert o.frame_shape == ((o.height, o.width) if o.grayscale_obs else (o.height, o.width, 3))


@pytest.mark.parametrize("kwargs,match", [
    (dict(frame_skip=0), r"frame_skip must be an int >= 1, got 0"),
    (dict(frame_skip=2.0), r"frame_skip must be an int >= 1, got 2.0"),
    (dict(frame_skip=True), r"frame_skip must be an int >= 1"),
    (dict(screen_size=0), r"screen_size must be an int in \[1, 4096\] or a \(width, height\)"),
    (dict(screen_size=(84.9, 84.9)), r"screen_size must be"),
    (dict(screen_size=(True, True)), r"screen_size must be"),
    (dict(screen_size=(2**40, 84)), r"screen_size must be"),
    (dict(screen_size=(84,)), r"screen_size must be"),
    (dict(screen_size=(84, 0)), r"screen_size must be"),
    (dict(screen_size="84"), r"screen_size must be"),
    (dict(noop_max=-1), r"noop_max must be an int >= 0, got -1"),
    (dict(stack_size=0), r"stack_size must be an int >= 1, got 0"),
    (dict(repeat_action_probability=1.5), r"repeat_action_probability must be a float in \[0, 1\]"),
    (dict(repeat_action_probability="x"), r"repeat_action_probability must be a float"),
    (dict(max_num_frames_per_episode=-5), r"max_num_frames_per_episode must be an int >= 0"),
    (dict(grayscale_obs=1), r"grayscale_obs must be a bool, got 1"),
    (dict(channels_last="yes"), r"channels_last must be a bool"),
    (dict(mode=-1), r"mode must be None or an int >= 0"),
    (dict(difficulty=1.5), r"difficulty must be None or an int >= 0"),
    (dict(episodic_life=True, terminal_on_life_loss=True), r"mutually exclusive"),
])
def test_options_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AtariOptions(**kwargs)


def test_options_list_screen_size_normalised():
    assert AtariOptions(screen_size=[64, 48]).screen_size == (64, 48)


# -- names -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,rom", [
    ("breakout", "breakout"), ("Breakout", "breakout"), ("ALE/Breakout-v5", "breakout"),
    ("fastatari/Breakout-v5", "breakout"), ("BreakoutNoFrameskip-v4", "breakout"),
    ("space_invaders", "space_invaders"), ("SpaceInvaders", "space_invaders"),
    ("ALE/MontezumaRevenge-v5", "montezuma_revenge"), ("TicTacToe3D", "tic_tac_toe_3d"),
    ("pitfall2", "pitfall2"),
])
def test_resolve_game(name, rom):
    assert resolve_game(name) == rom


def test_unknown_game_suggests():
    with pytest.raises(ValueError, match=r"unknown Atari game 'breakot'; did you mean 'breakout'"):
        AtariEnv("breakot")
    with pytest.raises(ValueError, match=r"unknown Atari game 'SpaceInvader'.*'space_invaders'"):
        resolve_game("SpaceInvader")
    with pytest.raises(ValueError, match=r"game must be a str"):
        resolve_game(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(UNLOADABLE) + ["ALE/Joust-v5", "Combat"])
def test_unloadable_games(name):
    with pytest.raises(ValueError, match=r"does not load in ale-py"):
        AtariEnv(name)


def test_game_ids():
    from ale_py import roms

    ids = game_ids()
    assert len(ids) == len(roms.get_all_rom_ids()) - 4
    assert not set(ids) & UNLOADABLE


def test_env_names():
    for name in ("Breakout", "ALE/Breakout-v5", "fastatari/Breakout-v5"):
        env = AtariEnv(name)
        assert env.game == "breakout"
        assert env.get_action_meanings() == ["NOOP", "FIRE", "RIGHT", "LEFT"]
        env.close()


# -- registration ------------------------------------------------------------------------------
def test_registration():
    ids = [k for k in gymnasium.registry if k.startswith("fastatari/")]
    assert len(ids) == len(game_ids())
    assert "fastatari/Breakout-v5" in ids and "fastatari/Joust-v5" not in ids
    spec = gymnasium.registry["fastatari/Breakout-v5"]
    assert spec.entry_point == "fastatari.env:AtariEnv"
    assert spec.vector_entry_point == "fastatari.vector:make_vec"
    env = gymnasium.make("fastatari/SpaceInvaders-v5", frame_skip=2, stack_size=3)
    assert isinstance(env.unwrapped, AtariEnv)
    assert env.unwrapped.game == "space_invaders"
    obs, info = env.reset(seed=0)
    assert obs.shape == (3, 84, 84) and info["lives"] == 3
    frames = info["episode_frame_number"]
    obs, reward, terminated, truncated, info = env.step(1)
    assert obs.shape == (3, 84, 84) and isinstance(reward, float) and not (terminated or truncated)
    assert info["episode_frame_number"] == frames + 2  # frame_skip=2 reached the env
    env.close()
    # registering again is harmless
    from fastatari.registration import register_envs

    register_envs()


def test_make_equals_direct():
    a = gymnasium.make("fastatari/Breakout-v5", repeat_action_probability=0.0)
    b = AtariEnv("breakout", repeat_action_probability=0.0)
    oa, _ = a.reset(seed=5)
    ob, _ = b.reset(seed=5)
    assert np.array_equal(oa, ob)
    for i in range(50):
        ra, rb = a.step(i % 4), b.step(i % 4)
        assert np.array_equal(ra[0], rb[0]) and ra[1:4] == rb[1:4]
    a.close()
    b.close()


# -- render, spaces, copies, close -------------------------------------------------------------
def test_render_rgb_array():
    env = gymnasium.make("fastatari/Breakout-v5", render_mode="rgb_array")
    env.reset(seed=1)
    env.step(1)
    frame = env.render()
    assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
    assert np.array_equal(frame, env.unwrapped.ale.getScreenRGB())
    env.close()
    plain = AtariEnv("breakout")
    assert plain.render() is None
    plain.close()
    with pytest.raises(ValueError, match=r"render_mode must be None or 'rgb_array'"):
        AtariEnv("breakout", render_mode="human")


def test_spaces_and_fresh_observations():
    env = AtariEnv("pong", grayscale_obs=False, channels_last=True, stack_size=2,
                   screen_size=(80, 105))
    assert env.observation_space == gymnasium.spaces.Box(0, 255, (105, 80, 6), np.uint8)
    assert env.action_space == gymnasium.spaces.Discrete(6)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space
    obs2, *_ = env.step(0)
    assert obs2 is not obs and not np.shares_memory(obs, obs2)
    obs2[...] = 7
    obs3, *_ = env.step(0)
    assert not (obs3 == 7).all()
    env.close()


def test_caller_stack_is_written_in_place():
    opts = AtariOptions(stack_size=2)
    buf = np.zeros((3,) + opts.observation_shape, np.uint8)
    game = AtariGame("breakout", opts, stack=buf[1])
    game.reset(seed=0)
    env = AtariEnv("breakout", stack_size=2)
    obs, _ = env.reset(seed=0)
    assert np.array_equal(buf[1], obs) and not buf[0].any() and not buf[2].any()
    game.step(1)
    obs, *_ = env.step(1)
    assert np.array_equal(buf[1], obs)
    with pytest.raises(ValueError, match=r"stack must be a writable C-contiguous uint8 array"):
        AtariGame("breakout", opts, stack=np.zeros((2, 84, 84), np.float32))
    with pytest.raises(ValueError, match=r"of shape \(2, 84, 84\)"):
        AtariGame("breakout", opts, stack=np.zeros((4, 84, 84), np.uint8))
    game.close()
    env.close()


@pytest.mark.parametrize("action,error", [
    (4, ValueError), (-1, ValueError), (np.int64(9), ValueError),  # out of range
    (1.0, TypeError), (np.float32(1), TypeError), (True, TypeError), ("1", TypeError),
    ([1], TypeError), (None, TypeError), (np.array([1]), TypeError)])  # not an int: as ale-py
def test_invalid_actions(action, error):
    env = AtariEnv("breakout")
    env.reset(seed=0)
    frame = env.ale.getFrameNumber()
    with pytest.raises(error, match=r"action must be an int in \[0, 4\)"):
        env.step(action)
    assert env.ale.getFrameNumber() == frame  # ALE was not touched
    env.close()


@pytest.mark.parametrize("action", [3, np.int64(2), np.uint8(1), np.array(2)])
def test_valid_action_types(action):
    env = AtariEnv("breakout")
    env.reset(seed=0)
    env.step(action)
    env.close()


def test_closed_env_errors():
    env = AtariEnv("breakout")
    env.reset(seed=0)
    env.close()
    env.close()  # twice is fine
    for call in (lambda: env.step(0), lambda: env.reset(), lambda: env.render()):
        with pytest.raises(ClosedEnvironmentError, match=r"this AtariEnv is closed"):
            call()


def test_construction_errors():
    with pytest.raises(TypeError,
                       match=r"AtariOptions.__init__\(\) got an unexpected keyword argument "
                             r"'frameskip'; valid options: frame_skip"):
        AtariEnv("breakout", frameskip=4)
    with pytest.raises(ValueError, match=r"screen_size \(200, 84\) .* would enlarge breakout's "
                                         r"160x210 screen"):
        AtariEnv("breakout", screen_size=(200, 84))
    with pytest.raises(ValueError, match=r"fire_reset=True needs a game whose action 1 is FIRE; "
                                         r"freeway"):
        AtariEnv("freeway", fire_reset=True)
    with pytest.raises(ValueError, match=r"mode must be one of \[0, 4, 8"):
        AtariEnv("breakout", mode=3)
    with pytest.raises(ValueError, match=r"difficulty must be one of \[0, 1\]"):
        AtariEnv("breakout", difficulty=5)
    with pytest.raises(ValueError, match=r"frame_skip must be an int >= 1, got 0"):
        AtariEnv("breakout", frame_skip=0)
    with pytest.raises(TypeError, match=r"options must be an AtariOptions"):
        AtariEnv("breakout", options={"frame_skip": 2})  # type: ignore[arg-type]
    env = AtariEnv("breakout", options=AtariOptions(frame_skip=2), stack_size=2)
    assert env.options.frame_skip == 2 and env.options.stack_size == 2
    env.close()


def test_worker_imports_only_what_it_runs(tmp_path):
    """A worker process imports fastatari's game layer, numpy and ale_py, never the trainer's
    side (the env front ends, the vector env, OpenCV). Checked in a fresh interpreter, so it can
    fail. (ale_py itself imports gymnasium, its vector env and wrappers, to register its own
    envs: that is ale_py's cost, paid once per worker.)"""
    code = ("import sys; import fastatari.vector.worker; "
            "print(' '.join(sorted(m for m in sys.modules)))")
    loaded = run_code(code, check=True).stdout.split()
    for module in ("fastatari.env", "fastatari.vector.env", "fastatari.vector.pool",
                   "fastatari.envpool", "fastatari.sb3", "fastatari.bench",
                   "fastatari.tools.episodes", "cv2", "torch"):
        assert module not in loaded, f"a worker imports {module}"
    for module in ("numpy", "ale_py", "fastatari.core.game", "fastatari.kernels._kernels"):
        assert module in loaded


def test_package_names_load_on_first_use(tmp_path):
    code = ("import sys, fastatari; before = 'fastatari.vector.env' in sys.modules; "
            "fastatari.AtariVectorEnv; print(before, 'fastatari.vector.env' in sys.modules)")
    out = run_code(code, check=True).stdout.split()
    assert out == ["False", "True"]
    with pytest.raises(AttributeError, match="attribute nope"):
        fastatari.nope  # noqa: B018


# -- references for the extras -----------------------------------------------------------------
from gymnasium.vector.utils import concatenate  # noqa: E402
from gymnasium.wrappers import AtariPreprocessing as GymAtariPreprocessing  # noqa: E402
from gymnasium.wrappers import FrameStackObservation  # noqa: E402

pytest.importorskip("cv2")


class FireResetReference(GymAtariPreprocessing):
    """gymnasium's wrapper plus fastatari's fire_reset: FIRE for one frame after the no-ops."""

    def reset(self, *, seed=None, options=None):
        _, info = self.env.reset(seed=seed, options=options)
        noops = self.env.unwrapped.np_random.integers(1, self.noop_max + 1) if self.noop_max else 0
        for _ in range(noops):
            _, _, terminated, truncated, step_info = self.env.step(0)
            info.update(step_info)
            if terminated or truncated:
                _, info = self.env.reset(seed=seed, options=options)
        _, _, terminated, truncated, step_info = self.env.step(1)
        info.update(step_info)
        if terminated or truncated:
            _, info = self.env.reset(seed=seed, options=options)
        self.lives = self.ale.lives()
        self.ale.getScreenGrayscale(self.obs_buffer[0])
        self.obs_buffer[1].fill(0)
        return self._get_obs(), info


class EpisodicLifeReference(GymAtariPreprocessing):
    """gymnasium's wrapper plus fastatari's documented episodic_life (EnvPool's): a step plays
    all its frames and ends the episode if it lost a life while lives remain; the reset after
    one with the game still running does no ALE reset but plays the no-ops again, drawn as
    gymnasium draws them; see ContinuingStack."""

    def __init__(self, env, **kwargs):
        super().__init__(env, **kwargs)
        self.continue_game = False

    def step(self, action):
        lives = self.ale.lives()
        obs, reward, terminated, truncated, info = super().step(action)
        life_lost = 0 < self.ale.lives() < lives
        self.continue_game = life_lost and not (terminated or truncated)
        return obs, reward, terminated or life_lost, truncated, info

    def reset(self, *, seed=None, options=None):
        if self.continue_game and seed is None:
            self.continue_game = False
            noops = self.env.unwrapped.np_random.integers(1, self.noop_max + 1)
            for _ in range(noops):
                _, _, terminated, truncated, _ = self.env.step(0)
                assert not (terminated or truncated)  # not modelled here
            self.ale.getScreenGrayscale(self.obs_buffer[0])
            self.obs_buffer[1].fill(0)
            return self._get_obs(), {"lives": self.ale.lives()}
        self.continue_game = False
        return super().reset(seed=seed, options=options)


class ContinuingStack(FrameStackObservation):
    """gymnasium's frame stack, except that the reset of a continued game pushes its frame
    onto the stack instead of padding a new one (EnvPool's stack)."""

    def reset(self, *, seed=None, options=None):
        if seed is None and self.env.continue_game:
            obs, info = self.env.reset()
            self.obs_queue.append(obs)
            return concatenate(self.env.observation_space, self.obs_queue,
                               self.stacked_obs).copy(), info
        return super().reset(seed=seed, options=options)


def _base(game, **kwargs):
    return gymnasium.make(f"ALE/{game}-v5", frameskip=1, **kwargs)


def _drive(ref, env, steps, seed, on_step=None):
    """Same random actions on both; byte-equal observations, equal results; reset on ends."""
    rng = np.random.default_rng(seed)
    ro, _ = ref.reset(seed=seed)
    fo, fi = env.reset(seed=seed)
    assert np.array_equal(ro, fo)
    n = env.action_space.n
    for i in range(steps):
        a = int(rng.integers(n))
        r = ref.step(a)
        f = env.step(a)
        assert np.array_equal(r[0], f[0]), i
        assert r[2:4] == f[2:4], i
        assert r[4]["lives"] == f[4]["lives"], i
        if on_step is not None:
            on_step(r, f)
        else:
            assert r[1] == f[1], i
        if r[2] or r[3]:
            ro, _ = ref.reset()
            fo, fi = env.reset()
            assert np.array_equal(ro, fo), i
            assert fi["lives"] == ref.unwrapped.ale.lives()


def test_fire_reset_parity():
    ref = FrameStackObservation(FireResetReference(_base("Breakout")), 4)
    env = AtariEnv("breakout", fire_reset=True)
    _drive(ref, env, 800, seed=4)
    # the FIRE frame really ran: one more frame than the no-ops alone
    plain = AtariEnv("breakout")
    _, info_plain = plain.reset(seed=9)
    _, info_fire = env.reset(seed=9)
    assert info_fire["episode_frame_number"] == info_plain["episode_frame_number"] + 1
    for e in (ref, env, plain):
        e.close()


def test_episodic_life_parity_and_game_over_flag():
    ref = ContinuingStack(EpisodicLifeReference(_base("Breakout")), 4)
    env = AtariEnv("breakout", episodic_life=True)
    seen = {"life_ends": 0, "game_ends": 0}

    def on_step(r, f):
        assert r[1] == f[1]
        info = f[4]
        ale = env.ale
        assert info["game_over"] == ale.game_over()
        if f[2] and not info["game_over"]:
            seen["life_ends"] += 1
            assert "game" not in info
        if info["game_over"]:
            seen["game_ends"] += 1
            assert "game" in info

    _drive(ref, env, 1500, seed=2, on_step=on_step)
    assert seen["life_ends"] >= 5 and seen["game_ends"] >= 1, seen
    # a life-loss reset continues the game as EnvPool's: frame numbers carry on, 1..noop_max
    # no-ops (then FIRE, with fire_reset) are played, the older frames stay in the stack
    env.reset(seed=0)
    while True:
        last, _, term, trunc, info = env.step(1)
        if term or trunc:
            break
    assert not info["game_over"]
    frames = env.ale.getEpisodeFrameNumber()
    obs, rinfo = env.reset()
    played = env.ale.getEpisodeFrameNumber() - frames
    assert 1 <= played <= env.options.noop_max and rinfo["lives"] == info["lives"]
    np.testing.assert_array_equal(obs[:-1], last[1:])
    ref.close()
    env.close()


def test_clip_rewards():
    ref = FrameStackObservation(GymAtariPreprocessing(_base("SpaceInvaders")), 4)
    env = AtariEnv("space_invaders", clip_rewards=True)
    seen = {"big": 0}

    def on_step(r, f):
        assert f[1] == float(np.sign(r[1])) and isinstance(f[1], float)
        assert f[4]["raw_reward"] == r[1]
        seen["big"] += r[1] > 1

    _drive(ref, env, 600, seed=1, on_step=on_step)
    assert seen["big"] >= 3  # rewards of 5..30 really were clipped
    ref.close()
    env.close()


@pytest.mark.parametrize("kwargs", [dict(), dict(terminal_on_life_loss=True),
                                    dict(episodic_life=True),
                                    dict(max_num_frames_per_episode=600, clip_rewards=True)])
def test_episode_statistics(kwargs):
    env = AtariEnv("breakout", **kwargs)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    ret, length, episodes = 0.0, 0, 0
    for _ in range(1200):
        _, reward, term, trunc, info = env.step(int(rng.integers(4)))
        ret += info.get("raw_reward", reward)
        length += 1
        game_restarts = (term or trunc) and (not kwargs.get("episodic_life")
                                             or env.ale.game_over())
        if game_restarts:
            ep = info["game"]
            assert ep["r"] == ret and ep["l"] == length and ep["t"] > 0
            ret, length = 0.0, 0
            episodes += 1
        else:
            assert "game" not in info
        if term or trunc:
            env.reset()
    assert episodes >= 2
    env.close()


def test_info_keys():
    env = AtariEnv("breakout")
    _, info = env.reset(seed=1)
    assert set(info) == {"lives", "episode_frame_number", "frame_number", "seeds"}
    _, info = env.reset()
    assert set(info) == {"lives", "episode_frame_number", "frame_number"}
    _, _, _, _, info = env.step(0)
    assert set(info) == {"lives", "episode_frame_number", "frame_number"}
    assert info["lives"] == 5
    env.close()


def test_mode_and_difficulty_parity():
    ref = FrameStackObservation(GymAtariPreprocessing(_base("Breakout", mode=4, difficulty=1)), 4)
    env = AtariEnv("breakout", mode=4, difficulty=1)
    _drive(ref, env, 300, seed=6)
    ref.close()
    env.close()


def test_maxpool_false_uses_last_frame():
    """maxpool=False: each frame is the resize of the step's last screen alone."""
    import cv2

    env = AtariEnv("breakout", maxpool=False, repeat_action_probability=0.0)
    env.reset(seed=0)
    for i in range(200):
        obs, _, term, trunc, _ = env.step(i % 4)
        if term or trunc:
            break
        gray = env.ale.getScreenGrayscale()
        assert np.array_equal(obs[-1], cv2.resize(gray, (84, 84), interpolation=cv2.INTER_AREA))
    env.close()


def test_gymnasium_env_checker():
    import warnings

    from gymnasium.utils.env_checker import check_env

    env = AtariEnv("breakout")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        check_env(env, skip_render_check=True)
    env.close()


def test_game_built_with_a_seed_equals_a_reseeded_game():
    """AtariGame(seed=s) skips the ROM reload of a first reset(seed=s): same observations."""
    from fastatari.core.game import AtariGame

    fresh = AtariGame("breakout", seed=3)
    reloaded = AtariGame("breakout")
    stepped = AtariGame("breakout", seed=3)
    stepped.step(1)  # no longer as loaded: its reset(3) must reload
    for game in (fresh, reloaded, stepped):
        game.reset(seed=3)
    for t in range(200):
        outs = [game.step(t % 4) for game in (fresh, reloaded, stepped)]
        assert outs[0][:3] == outs[1][:3] == outs[2][:3]
        assert np.array_equal(fresh.stack, reloaded.stack)
        assert np.array_equal(fresh.stack, stepped.stack)
