"""TorchRL over fastatari, written as TorchRL's users write it.

``GymWrapper(fastatari.make_vec(...))``, ``GymWrapper(fastatari.AtariEnv(...))``,
``GymEnv("fastatari/Breakout-v5")`` and ``GymEnv(..., num_envs=4)``: each rollout (a fixed seed,
a fixed action sequence, episodes that end and reset inside it) is byte-identical, key for key,
to the same TorchRL construction over gymnasium's reference pipeline
(``FrameStackObservation(AtariPreprocessing(gymnasium.make("ALE/Breakout-v5", frameskip=1)))``,
as tests/test_env_parity.py builds it).

TorchRL's ``GymEnv`` passes ``frameskip=`` to every env it makes and, when the env refuses it in
Python's own words (``... got an unexpected keyword argument 'frameskip'``), drops it and repeats
each action ``frame_skip`` times itself. fastatari refuses it so (its option is ``frame_skip``),
as does the reference here, so both take the same path: ``GymEnv("fastatari/Breakout-v5")`` keeps
fastatari's 4 frames per step, and ``GymEnv(..., frame_skip=k)`` plays k fastatari steps (4k
frames) per TorchRL step; fastatari's own skip is set with ``options=AtariOptions(frame_skip=k)``.

``GymEnv(..., num_envs=n)`` is not fastatari's vector env: TorchRL makes gymnasium's
``AsyncVectorEnv`` over the id, in spawned processes (which know ``fastatari/...`` ids only if the
trainer's ``__main__`` imports fastatari, or with the id written ``fastatari:fastatari/...``),
in gymnasium's next_step autoreset mode, where TorchRL zero-fills the ``next`` observation of an
ended episode (ale-py's ids alike). ``GymWrapper(make_vec(..., autoreset_mode="same_step"))``
(or ``"disabled"``) is fastatari's own vector env under TorchRL.
"""
from __future__ import annotations

import multiprocessing
from functools import partial

import numpy as np
import pytest

# Importing torchrl sets multiprocessing's global start method to "spawn"; put it back for the
# other test modules of the session. The fixture below sets "spawn" again around these tests,
# as a user's process has it once torchrl is imported.
_START_METHOD = multiprocessing.get_start_method(allow_none=True)
pytest.importorskip("torchrl")
multiprocessing.set_start_method(_START_METHOD, force=True)
pytestmark = pytest.mark.torchrl
pytest.importorskip("cv2")  # gymnasium's AtariPreprocessing needs OpenCV

import ale_py  # noqa: E402
import gymnasium  # noqa: E402
import torch  # noqa: E402
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation  # noqa: E402
from torchrl.envs import GymEnv, GymWrapper  # noqa: E402
from torchrl.envs.libs.gym import ACCEPTED_TYPE_ERRORS  # noqa: E402

from fastatari import AtariEnv, AtariOptions, make_vec  # noqa: E402

gymnasium.register_envs(ale_py)

# Short episodes that end both ways within a rollout: a life loss terminates (after 25-35 agent
# steps here), 150 frames (no-ops included) truncate. Sticky actions stay on (0.25), drawn from
# the seeded generators.
SHORT = dict(terminal_on_life_loss=True, max_num_frames_per_episode=150)
STEPS = 120
SEED = 7
NUM_ENVS = 4

# The reference as a gymnasium id. The "module:id" form makes gymnasium import this module
# first, which registers it: GymEnv(..., num_envs=...) builds its envs in spawned processes.
REF_NAME = "FastatariTorchRLRef/Breakout-v0"
REF_ID = f"{__name__}:{REF_NAME}"
# The same for fastatari's id: a spawned process imports fastatari (and so its ids) only if the
# trainer's __main__ does, which pytest's does not.
FA_ID = "fastatari:fastatari/Breakout-v5"


def make_reference(game="breakout", *, repeat_action_probability=0.25, noop_max=30,
                   frame_skip=4, terminal_on_life_loss=False,
                   max_num_frames_per_episode=108_000, stack_size=4):
    """gymnasium's pipeline with fastatari's defaults. No ``**kwargs``: an unknown keyword
    (TorchRL's ``frameskip``) is refused in Python's own words, as fastatari refuses it."""
    env = gymnasium.make(f"ALE/{game.title()}-v5", frameskip=1,
                         repeat_action_probability=repeat_action_probability,
                         max_num_frames_per_episode=max_num_frames_per_episode)
    env = AtariPreprocessing(env, noop_max=noop_max, frame_skip=frame_skip,
                             terminal_on_life_loss=terminal_on_life_loss)
    return FrameStackObservation(env, stack_size)


if REF_NAME not in gymnasium.registry:
    gymnasium.register(REF_NAME, entry_point=make_reference)


@pytest.fixture(autouse=True, scope="module")
def torchrl_start_method():
    """multiprocessing as torchrl leaves it in a user's process: "spawn"."""
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    yield
    multiprocessing.set_start_method(before, force=True)


class FixedActions:
    """A TorchRL policy playing a fixed sequence of discrete actions, one-hot encoded as
    TorchRL's default ``OneHot`` action spec wants them."""

    def __init__(self, actions: np.ndarray, n: int) -> None:
        self.actions = torch.as_tensor(actions)
        self.n = n
        self.t = 0

    def __call__(self, td):
        action = torch.nn.functional.one_hot(self.actions[self.t], self.n)
        self.t += 1
        td.set("action", action)
        return td


def rollout(env, num_envs=None):
    """``STEPS`` steps from ``reset(seed=SEED)`` with a fixed action sequence, resetting ended
    envs as TorchRL's rollout does (``break_when_any_done=False``)."""
    n = 4  # breakout's minimal action set
    shape = (STEPS,) if num_envs is None else (STEPS, num_envs)
    actions = np.random.default_rng(SEED).integers(n, size=shape)
    try:
        start = env.reset(seed=SEED)
        return env.rollout(STEPS, FixedActions(actions, n), auto_reset=False, tensordict=start,
                           break_when_any_done=False)
    finally:
        env.close()


def assert_same_rollout(fa, ref):
    """Every entry of the reference's rollout is in fastatari's, byte for byte; and episodes
    ended (and reset) inside it."""
    assert fa.batch_size == ref.batch_size
    ref_keys = set(ref.keys(True, True))
    fa_keys = set(fa.keys(True, True))
    assert ref_keys <= fa_keys, f"missing from fastatari's rollout: {ref_keys - fa_keys}"
    for key in sorted(ref_keys, key=str):
        a, b = fa.get(key), ref.get(key)
        assert a.dtype == b.dtype and a.shape == b.shape, key
        assert torch.equal(a, b), f"{key} differs"
    assert ref["next", "terminated"].any() and ref["next", "truncated"].any()
    assert fa["next", "observation"].dtype == torch.uint8
    return fa_keys - ref_keys


def vector_reference(autoreset_mode):
    fns = [partial(make_reference, **SHORT)] * NUM_ENVS
    return gymnasium.vector.SyncVectorEnv(
        fns, autoreset_mode=gymnasium.vector.AutoresetMode[autoreset_mode.upper()])


@pytest.mark.parametrize("autoreset_mode", ["disabled", "same_step"])
def test_gymwrapper_over_make_vec(autoreset_mode):
    fa = GymWrapper(make_vec("breakout", NUM_ENVS, num_workers=2,
                             autoreset_mode=autoreset_mode, **SHORT))
    ref = GymWrapper(vector_reference(autoreset_mode))
    assert fa.batch_size == ref.batch_size == torch.Size([NUM_ENVS])
    assert fa.observation_spec == ref.observation_spec
    assert fa.action_spec == ref.action_spec
    extra = assert_same_rollout(rollout(fa, NUM_ENVS), rollout(ref, NUM_ENVS))
    assert not extra


def test_gymwrapper_refuses_next_step_as_for_gymnasium():
    """TorchRL takes a gymnasium vector env only in autoreset modes disabled and same_step;
    make_vec's default, next_step (gymnasium's default too), is refused in the same words."""
    match = "auto-reset mode must be one of SAME_STEP or DISABLED"
    envs = make_vec("breakout", 2, num_workers=1)
    try:
        with pytest.raises(RuntimeError, match=match):
            GymWrapper(envs)
    finally:
        envs.close()
    ref = gymnasium.vector.SyncVectorEnv([make_reference] * 2)
    with pytest.raises(RuntimeError, match=match):
        GymWrapper(ref)
    ref.close()


def test_gymwrapper_over_atari_env():
    fa = GymWrapper(AtariEnv("breakout", **SHORT))
    ref = GymWrapper(make_reference(**SHORT))
    assert fa.observation_spec == ref.observation_spec
    extra = assert_same_rollout(rollout(fa), rollout(ref))
    assert not extra


def test_gymenv_keeps_fastatari_frame_skip():
    """``GymEnv`` passes ``frameskip=1``; fastatari refuses it and keeps its 4 frames a step."""
    for env_id in ("fastatari/Breakout-v5", FA_ID):
        fa = GymEnv(env_id, **SHORT)
        assert fa.wrapper_frame_skip == 1
        assert fa._env.unwrapped.options.frame_skip == 4
        fa.close()
    fa = GymEnv("fastatari/Breakout-v5", **SHORT)
    ref = GymEnv(REF_ID, **SHORT)
    assert ref.wrapper_frame_skip == 1
    assert fa.observation_spec == ref.observation_spec
    extra = assert_same_rollout(rollout(fa), rollout(ref))
    assert not extra


def test_gymenv_frame_skip_repeats_fastatari_steps():
    """``GymEnv(..., frame_skip=2)``: TorchRL repeats each action over 2 fastatari steps (8
    frames); fastatari's own skip comes from ``options``."""
    fa = GymEnv("fastatari/Breakout-v5", frame_skip=2, **SHORT)
    ref = GymEnv(REF_ID, frame_skip=2, **SHORT)
    assert fa.wrapper_frame_skip == ref.wrapper_frame_skip == 2
    assert fa._env.unwrapped.options.frame_skip == 4
    extra = assert_same_rollout(rollout(fa), rollout(ref))
    assert not extra


def test_gymenv_own_frame_skip_through_options():
    """fastatari's own frame skip (max-pooled, one TorchRL step) under GymEnv."""
    short = dict(SHORT, max_num_frames_per_episode=120)  # both endings in 120 steps of 2 frames
    fa = GymEnv("fastatari/Breakout-v5", options=AtariOptions(frame_skip=2, **short))
    ref = GymWrapper(make_reference(frame_skip=2, **short))
    assert fa.wrapper_frame_skip == 1 and fa._env.unwrapped.options.frame_skip == 2
    extra = assert_same_rollout(rollout(fa), rollout(ref))
    assert not extra


def test_gymenv_num_envs():
    """``GymEnv(..., num_envs=4)``: TorchRL's gymnasium AsyncVectorEnv over the id (spawned
    processes, gymnasium's next_step autoreset), the same for both."""
    fa = GymEnv(FA_ID, num_envs=NUM_ENVS, **SHORT)
    ref = GymEnv(REF_ID, num_envs=NUM_ENVS, **SHORT)
    assert fa.batch_size == ref.batch_size == torch.Size([NUM_ENVS])
    extra = assert_same_rollout(rollout(fa, NUM_ENVS), rollout(ref, NUM_ENVS))
    assert not extra


@pytest.mark.parametrize("make", [
    lambda: AtariEnv("breakout", frameskip=4),
    lambda: gymnasium.make("fastatari/Breakout-v5", frameskip=4),
    lambda: make_vec("breakout", 2, frameskip=4),
    lambda: gymnasium.make_vec("fastatari/Breakout-v5", 2, frameskip=4),
], ids=["AtariEnv", "gymnasium.make", "make_vec", "gymnasium.make_vec"])
def test_unknown_keyword_in_pythons_words(make):
    """The error TorchRL's GymEnv recognises to drop ``frameskip`` (Python's own wording)."""
    with pytest.raises(TypeError) as err:
        make()
    message = str(err.value)
    assert ACCEPTED_TYPE_ERRORS["frame_skip"] in message
    assert "got an unexpected keyword argument 'frameskip'; valid options: frame_skip," in message


def test_gymenv_reports_a_real_typo():
    """TorchRL drops ``frameskip`` and retries; a misspelt option is then reported alone."""
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'noop'; valid "
                                        r"options: frame_skip,"):
        GymEnv("fastatari/Breakout-v5", noop=3)
