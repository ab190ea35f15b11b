"""fastatari.AtariPreprocessing against gymnasium.wrappers.AtariPreprocessing (+ frame stacking)."""
from __future__ import annotations

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
pytest.importorskip("cv2")
import ale_py  # noqa: E402
from gymnasium.wrappers import AtariPreprocessing as GymAtariPreprocessing  # noqa: E402
from gymnasium.wrappers import FrameStackObservation  # noqa: E402

import fastatari  # noqa: E402

gymnasium.register_envs(ale_py)

WRAPPER_ARGS = ("noop_max", "frame_skip", "screen_size", "terminal_on_life_loss", "grayscale_obs",
                "grayscale_newaxis", "scale_obs")


def make_pair(game, stack_size=None, base=None, padding_type="reset", **kwargs):
    base = dict(base or {})
    base.setdefault("frameskip", 1)
    ref = GymAtariPreprocessing(gymnasium.make(f"ALE/{game}-v5", **base), **kwargs)
    if stack_size is not None:
        ref = FrameStackObservation(ref, stack_size, padding_type=padding_type)
    ours = fastatari.AtariPreprocessing(gymnasium.make(f"ALE/{game}-v5", **base),
                                        stack_size=stack_size, padding_type=padding_type,
                                        **kwargs)
    return ref, ours


def run_pair(ref, ours, steps, seed, continue_prob=0.0):
    assert ours.observation_space == ref.observation_space
    rng = np.random.default_rng(seed)
    ale = ref.unwrapped.ale

    def same(a, b, where):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b), where
        assert b in ours.observation_space

    (ro, ri), (fo, fi) = ref.reset(seed=seed), ours.reset(seed=seed)
    same(ro, fo, "reset")
    assert ri == fi
    n = ref.action_space.n
    ends = 0
    for i in range(steps):
        a = int(rng.integers(n))
        r, f = ref.step(a), ours.step(a)
        same(r[0], f[0], i)
        assert r[1:4] == f[1:4], i
        assert r[4] == f[4], i
        if r[2] or r[3]:
            ends += 1
            if not ale.game_over() and rng.random() < continue_prob:
                continue
            (ro, ri), (fo, fi) = ref.reset(), ours.reset()
            same(ro, fo, f"reset after {i}")
            assert ri == fi
    ref.close()
    ours.close()
    return ends


# (game, stack_size, wrapper kwargs, base env kwargs, steps)
CASES = [
    ("Breakout", None, dict(), dict(max_num_frames_per_episode=800), 1000),
    ("SpaceInvaders", 4, dict(), dict(repeat_action_probability=0.0,
                                      max_num_frames_per_episode=2500), 1500),
    ("MsPacman", 3, dict(grayscale_obs=False, frame_skip=2), dict(max_num_frames_per_episode=1000),
     1200),
    ("Asterix", 4, dict(grayscale_newaxis=True, scale_obs=True, screen_size=(64, 48)), dict(),
     1000),
    ("Seaquest", None, dict(grayscale_obs=False, scale_obs=True),
     dict(full_action_space=True, max_num_frames_per_episode=1500), 1000),
    ("Qbert", 2, dict(frame_skip=1, noop_max=0),
     dict(obs_type="grayscale", max_num_frames_per_episode=900), 2500),
    ("Frostbite", None, dict(frame_skip=5, grayscale_newaxis=True),
     dict(max_num_frames_per_episode=2000), 1000),
]


@pytest.mark.parametrize("game,stack_size,kwargs,base,steps", CASES, ids=[c[0] for c in CASES])
def test_wrapper_parity(game, stack_size, kwargs, base, steps):
    ref, ours = make_pair(game, stack_size, base, **kwargs)
    assert run_pair(ref, ours, steps, seed=5) >= 2


@pytest.mark.parametrize("frame_skip", [2, 3, 4])
def test_wrapper_terminal_on_life_loss(frame_skip):
    ref, ours = make_pair("Breakout", 4, dict(repeat_action_probability=0.0),
                          terminal_on_life_loss=True, frame_skip=frame_skip)
    assert run_pair(ref, ours, 800, seed=frame_skip, continue_prob=0.6) >= 5


def test_wrapper_attributes():
    ref, ours = make_pair("Breakout", None, None, frame_skip=3, screen_size=(64, 48))
    for name in WRAPPER_ARGS + ("lives", "game_over"):
        assert getattr(ours, name) == getattr(ref, name), name
    ref.reset(seed=0)
    ours.reset(seed=0)
    assert ours.lives == ref.lives == 5
    assert ours.ale is ours.unwrapped.ale


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - we compare whatever gymnasium raises
        return type(e), str(e)
    return None


@pytest.mark.parametrize("base,kwargs", [
    (dict(frameskip=1), dict(frame_skip=0)),
    (dict(frameskip=1), dict(frame_skip=-2)),
    (dict(frameskip=1), dict(screen_size=0)),
    (dict(frameskip=1), dict(screen_size=(84,))),
    (dict(frameskip=1), dict(screen_size=(84, 0))),
    (dict(frameskip=1), dict(screen_size=84.0)),
    (dict(frameskip=4), dict(frame_skip=4)),
    (dict(frameskip=1), dict(noop_max=-1)),
])
def test_wrapper_errors_match_gymnasium(base, kwargs):
    ref = _error(lambda: GymAtariPreprocessing(gymnasium.make("ALE/Breakout-v5", **base), **kwargs))
    ours = _error(lambda: fastatari.AtariPreprocessing(gymnasium.make("ALE/Breakout-v5", **base),
                                                       **kwargs))
    assert ref is not None and ours == ref
    with pytest.raises(ref[0], match=r"^Expect the|^Disable frame-skipping"):
        fastatari.AtariPreprocessing(gymnasium.make("ALE/Breakout-v5", **base), **kwargs)


def test_wrapper_first_action_not_noop():
    class NotNoop(gymnasium.Wrapper):
        def get_action_meanings(self):
            return ["FIRE", "NOOP"]

        @property
        def unwrapped(self):
            return self

        @property
        def _frameskip(self):
            return 1

        @property
        def ale(self):
            return self.env.unwrapped.ale

    for cls in (GymAtariPreprocessing, fastatari.AtariPreprocessing):
        with pytest.raises(ValueError,
                           match=r"When noop_max > 0, the first action meaning must be 'NOOP'"):
            cls(NotNoop(gymnasium.make("ALE/Breakout-v5", frameskip=1)))


@pytest.mark.parametrize("grayscale_obs", [True, False])
def test_wrapper_zero_padding_as_frame_stack_observation(grayscale_obs):
    ref, ours = make_pair("Breakout", 4, dict(repeat_action_probability=0.0,
                                              max_num_frames_per_episode=400),
                          padding_type="zero", grayscale_obs=grayscale_obs)
    assert run_pair(ref, ours, 700, seed=3) >= 1


def test_wrapper_stack_size_errors():
    base = gymnasium.make("ALE/Breakout-v5", frameskip=1)
    with pytest.raises(ValueError, match=r"The stack_size needs to be greater than zero"):
        fastatari.AtariPreprocessing(base, stack_size=0)
    with pytest.raises(TypeError, match=r"The stack_size is expected to be an integer"):
        fastatari.AtariPreprocessing(base, stack_size=2.0)
    with pytest.raises(ValueError, match=r"padding_type must be 'reset' or 'zero', got 'edge'"):
        fastatari.AtariPreprocessing(base, stack_size=2, padding_type="edge")


def test_wrapper_enlarging_is_rejected():
    with pytest.raises(ValueError, match=r"would enlarge the 160x210 screen"):
        fastatari.AtariPreprocessing(gymnasium.make("ALE/Breakout-v5", frameskip=1),
                                     screen_size=(320, 84))
