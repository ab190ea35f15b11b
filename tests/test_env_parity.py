"""fastatari.AtariEnv vs gymnasium's reference pipeline, step by step, byte for byte.

Reference: FrameStackObservation(AtariPreprocessing(gymnasium.make("ALE/<Game>-v5",
frameskip=1, ...), ...), stack_size), padding "reset".
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
pytest.importorskip("cv2")  # gymnasium's AtariPreprocessing needs OpenCV
import ale_py  # noqa: E402
from gymnasium.wrappers import AtariPreprocessing as GymAtariPreprocessing  # noqa: E402
from gymnasium.wrappers import FrameStackObservation  # noqa: E402

import fastatari  # noqa: E402
from fastatari.core.game import make_np_random  # noqa: E402
from fastatari.core.games import camel_name  # noqa: E402

gymnasium.register_envs(ale_py)


def make_reference(game, *, repeat_action_probability=0.25, full_action_space=False,
                   max_num_frames_per_episode=108_000, noop_max=30, frame_skip=4,
                   screen_size=84, terminal_on_life_loss=False, grayscale_obs=True, stack_size=4,
                   **_):
    env = gymnasium.make(f"ALE/{camel_name(game)}-v5", frameskip=1,
                         repeat_action_probability=repeat_action_probability,
                         full_action_space=full_action_space,
                         max_num_frames_per_episode=max_num_frames_per_episode)
    env = GymAtariPreprocessing(env, noop_max=noop_max, frame_skip=frame_skip,
                                screen_size=screen_size,
                                terminal_on_life_loss=terminal_on_life_loss,
                                grayscale_obs=grayscale_obs)
    return FrameStackObservation(env, stack_size)


def to_layout(obs, channels_last, grayscale):
    """The reference's (k, H, W[, 3]) stack in fastatari's layout."""
    if not channels_last:
        return obs
    if grayscale:
        return np.ascontiguousarray(obs.transpose(1, 2, 0))
    k, h, w, _ = obs.shape
    return np.ascontiguousarray(obs.transpose(1, 2, 0, 3).reshape(h, w, 3 * k))


@dataclasses.dataclass
class Counts:
    steps: int = 0
    life_losses: int = 0
    game_overs: int = 0      # terminated with the ALE game over
    truncations: int = 0
    life_terminations: int = 0  # terminal_on_life_loss terminations with lives left
    early_before_prev: int = 0  # step stopped before the t == skip-2 grab
    early_between: int = 0      # stopped between the two grabs (3-frame max)
    resets: int = 0


def assert_same_info(ref_info, fa_info, where):
    for key in ("lives", "episode_frame_number", "frame_number"):
        assert ref_info[key] == fa_info[key], \
            f"{where}: info[{key!r}] {ref_info[key]} != {fa_info[key]}"


def run_parity(game, steps, seed, *, continue_prob=0.0, reseed_at=None, **options):
    """Drive both pipelines with the same random actions; assert equality at every step."""
    channels_last = options.get("channels_last", False)
    grayscale = options.get("grayscale_obs", True)
    skip = options.get("frame_skip", 4)
    ref = make_reference(game, **options)
    env = fastatari.AtariEnv(game, **options)
    rng = np.random.default_rng(seed)
    counts = Counts()
    try:
        assert env.action_space == ref.action_space
        assert env.observation_space.shape == to_layout(
            np.zeros(ref.observation_space.shape, np.uint8), channels_last, grayscale).shape

        def check_reset(ref_out, fa_out, where):
            (ro, ri), (fo, fi) = ref_out, fa_out
            assert fo.dtype == np.uint8 and fo.shape == env.observation_space.shape
            assert np.array_equal(to_layout(ro, channels_last, grayscale), fo), where
            assert_same_info(ri, fi, where)
            counts.resets += 1

        check_reset(ref.reset(seed=seed), env.reset(seed=seed), "first reset")
        n = env.action_space.n
        ale = ref.unwrapped.ale
        lives = ale.lives()
        for i in range(steps):
            if reseed_at is not None and i == reseed_at:
                check_reset(ref.reset(seed=seed + 1), env.reset(seed=seed + 1), "reseed")
                lives = ale.lives()
            a = int(rng.integers(n))
            frame_before = ale.getEpisodeFrameNumber()
            ro, rr, rt, rtr, ri = ref.step(a)
            fo, fr, ft, ftr, fi = env.step(a)
            where = f"{game} step {i} {options}"
            assert np.array_equal(to_layout(ro, channels_last, grayscale), fo), where
            assert (rr, rt, rtr) == (fr, ft, ftr), where
            assert isinstance(fr, float)
            assert_same_info(ri, fi, where)
            counts.steps += 1
            frames_run = ale.getEpisodeFrameNumber() - frame_before
            if rt or rtr:
                # the loop broke at t = frames_run - 1, before that frame's grab
                if frames_run < skip or skip == 1:
                    counts.early_before_prev += 1
                else:
                    counts.early_between += 1
            if ri["lives"] < lives:
                counts.life_losses += 1
            lives = ri["lives"]
            if rt and ale.game_over(with_truncation=False):
                counts.game_overs += 1
            if rtr:
                counts.truncations += 1
            if rt or rtr:
                game_continues = not ale.game_over()
                if rt and game_continues:
                    counts.life_terminations += 1
                if game_continues and rng.random() < continue_prob:
                    continue  # keep stepping without a reset (gymnasium allows it)
                check_reset(ref.reset(), env.reset(), f"{where} reset")
                lives = ale.lives()
    finally:
        ref.close()
        env.close()
    return counts


# Each case: (game, steps, options). Together they cover sticky actions on/off, the full action
# space, terminal_on_life_loss, frame_skip 1..5, noop_max 0, RGB, a non-square size, stack
# sizes 1 and 4, channels_last, truncations (short max_num_frames_per_episode), NTSC screens of
# 210/214 lines and a PAL game (pacman, 250 lines).
CASES = [
    ("breakout", 1500, dict(max_num_frames_per_episode=700)),
    ("space_invaders", 3000, dict(repeat_action_probability=0.0, full_action_space=True,
                                  max_num_frames_per_episode=2500)),
    ("asterix", 8000, dict(frame_skip=1, stack_size=1, max_num_frames_per_episode=1300,
                           repeat_action_probability=0.0)),
    ("seaquest", 1500, dict(terminal_on_life_loss=True, frame_skip=5, noop_max=0)),
    ("ms_pacman", 3000, dict(frame_skip=2, grayscale_obs=False, max_num_frames_per_episode=2500)),
    ("qbert", 2000, dict(frame_skip=3, screen_size=(64, 48), noop_max=0,
                         max_num_frames_per_episode=1800, channels_last=True)),
    ("pacman", 1500, dict(grayscale_obs=False, channels_last=True, stack_size=3,
                          max_num_frames_per_episode=2000)),
    ("frostbite", 1500, dict(frame_skip=2, terminal_on_life_loss=True, grayscale_obs=False,
                             screen_size=(64, 48), repeat_action_probability=0.0)),
    ("carnival", 2000, dict(screen_size=(80, 105), stack_size=1, max_num_frames_per_episode=2500,
                            frame_skip=5)),
]


# cases whose short frame limit is reached within the run (the others set one that may be)
TRUNCATING = {"breakout", "space_invaders", "asterix"}


@pytest.mark.parametrize("game,steps,options", CASES, ids=[c[0] for c in CASES])
def test_parity(game, steps, options):
    counts = run_parity(game, steps, seed=7, reseed_at=steps // 2, **options)
    # the run really covered episode ends: game overs or life-loss terminations, truncations
    # where the frame limit is short, and several lost lives where the game has lives
    assert counts.resets >= 4, counts
    if options.get("terminal_on_life_loss"):
        assert counts.life_terminations >= 3, counts
    else:
        assert counts.game_overs >= 1, counts
    if game in TRUNCATING:
        assert counts.truncations >= 1, counts
    if game != "carnival":  # carnival has no lives
        assert counts.life_losses >= 3, counts


def test_parity_terminal_on_life_loss_without_reset():
    """Stepping on after a life-loss termination keeps gymnasium's carried-over buffers."""
    counts = run_parity("breakout", 1500, seed=3, continue_prob=0.8, terminal_on_life_loss=True,
                        frame_skip=2, max_num_frames_per_episode=6000)
    assert counts.life_terminations >= 5, counts
    assert counts.early_between >= 1, counts


@pytest.mark.parametrize("frame_skip", [2, 3, 4])
def test_parity_early_stops(frame_skip):
    """Life losses end steps at every frame offset: covers the 3-frame max and repeats."""
    counts = run_parity("breakout", 700, seed=11, continue_prob=0.5, terminal_on_life_loss=True,
                        frame_skip=frame_skip, repeat_action_probability=0.0, noop_max=5)
    assert counts.life_terminations >= 3, counts
    assert counts.early_between + counts.early_before_prev >= 1, counts


def test_parity_truncation_during_noops():
    """max_num_frames_per_episode shorter than the no-ops: re-resets inside reset (seeded too)."""
    ref = make_reference("breakout", max_num_frames_per_episode=8, noop_max=30)
    env = fastatari.AtariEnv("breakout", max_num_frames_per_episode=8, noop_max=30)
    rng = np.random.default_rng(0)
    try:
        for i in range(16):
            seed = int(rng.integers(1000)) if i % 2 == 0 else None  # the first one is seeded
            (ro, ri), (fo, fi) = ref.reset(seed=seed), env.reset(seed=seed)
            assert np.array_equal(ro, fo), i
            assert_same_info(ri, fi, f"reset {i}")
            for _ in range(3):
                a = int(rng.integers(4))
                r1, r2 = ref.step(a), env.step(a)
                assert np.array_equal(r1[0], r2[0]) and r1[1:4] == r2[1:4], i
    finally:
        ref.close()
        env.close()


def test_np_random_matches_gymnasium_seeding():
    from gymnasium.utils import seeding

    for seed in (0, 1, 12345, 2**31 + 5):
        ours, theirs = make_np_random(seed), seeding.np_random(seed)[0]
        assert ours.bit_generator.state == theirs.bit_generator.state
        assert np.array_equal(ours.integers(0, 1000, 50), theirs.integers(0, 1000, 50))


def test_env_np_random_follows_seed():
    ref = gymnasium.make("ALE/Breakout-v5", frameskip=1)
    env = fastatari.AtariEnv("breakout")
    ref.reset(seed=42)
    env.reset(seed=42)
    # fastatari drew the no-op count; draw it on the reference too, then states must agree
    ref.unwrapped.np_random.integers(1, 31)
    assert (env.np_random.bit_generator.state == ref.unwrapped.np_random.bit_generator.state)
    ref.close()
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize("game", ["breakout", "space_invaders", "asterix", "seaquest",
                                  "ms_pacman", "alien", "kangaroo", "riverraid", "air_raid",
                                  "journey_escape", "pooyan", "king_kong"])
def test_parity_long(game):
    counts = run_parity(game, 6000, seed=1, max_num_frames_per_episode=20_000)
    assert counts.resets >= 2


class ScriptedALE:
    """Just enough of ALEInterface for FramePipeline: a new random screen every frame."""

    def __init__(self, rng, h=210, w=160):
        self.rng = rng
        self.gray = rng.integers(0, 256, 256, dtype=np.uint8)
        self.rgb = rng.integers(0, 256, (256, 3), dtype=np.uint8)
        self.shape = (h, w)
        self.advance()

    def advance(self):
        # few distinct indices per screen, like real frames; new ones keep appearing
        colors = self.rng.integers(0, 256, 6, dtype=np.uint8)
        self.screen = colors[self.rng.integers(0, 6, self.shape)]

    def getScreenDims(self):  # noqa: N802 - ALE's names
        return self.shape

    def getScreen(self, buf):  # noqa: N802
        buf[...] = self.screen

    def getScreenGrayscale(self):  # noqa: N802
        return self.gray[self.screen]

    def getScreenRGB(self):  # noqa: N802
        return self.rgb[self.screen]


@pytest.mark.parametrize("frame_skip", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("grayscale,channels_last", [(True, False), (False, False),
                                                      (True, True), (False, True)])
def test_frame_pipeline_matches_gymnasium_buffers(frame_skip, grayscale, channels_last):
    """Random step outcomes, including consecutive early stops, against a literal model of
    gymnasium's two in-place buffers + cv2.resize + stacking."""
    import cv2

    from fastatari.core.game import FramePipeline
    from fastatari.core.palette import Palette

    rng = np.random.default_rng(frame_skip)
    ale = ScriptedALE(rng)
    k, size = 3, (64, 48)
    opts = fastatari.AtariOptions(frame_skip=frame_skip, grayscale_obs=grayscale, stack_size=k,
                                  screen_size=size, channels_last=channels_last)
    stack = np.zeros(opts.observation_shape, np.uint8)
    pipe = FramePipeline(ale, Palette(), grayscale, stack, channels_last, frame_skip > 1)
    table = ale.gray if grayscale else ale.rgb
    buf = [np.zeros(ale.shape + (() if grayscale else (3,)), np.uint8) for _ in range(2)]
    queue = []

    def model_obs():
        if frame_skip > 1:
            np.maximum(buf[0], buf[1], out=buf[0])
        return cv2.resize(buf[0], size, interpolation=cv2.INTER_AREA)

    kinds = {"normal": 0, "early": 0, "between": 0, "between_twice": 0}
    last_between = False
    for step in range(400):
        if step % 60 == 0:  # reset
            ale.advance()
            buf[0][...] = table[ale.screen]
            buf[1].fill(0)
            queue = [model_obs()] * k
            pipe.push_reset()
        else:
            stop = rng.integers(0, frame_skip + 1) if rng.random() < 0.5 else None
            for t in range(frame_skip):
                ale.advance()
                if t == stop:
                    pipe.push_early(t == frame_skip - 1 and frame_skip > 1)
                    break
                if t == frame_skip - 2:
                    buf[1][...] = table[ale.screen]
                    pipe.grab_prev()
                elif t == frame_skip - 1:
                    buf[0][...] = table[ale.screen]
                    pipe.grab_last()
            else:
                pipe.push_step()
            between = stop == frame_skip - 1 and frame_skip > 1
            kinds["normal" if stop is None or stop == frame_skip else
                  "between" if between else "early"] += 1
            kinds["between_twice"] += between and last_between
            last_between = between
            queue = queue[1:] + [model_obs()]
        ref = np.stack(queue)
        assert np.array_equal(to_layout(ref, channels_last, grayscale), stack), step
    if frame_skip > 1:
        assert kinds["between_twice"] >= 3, kinds
