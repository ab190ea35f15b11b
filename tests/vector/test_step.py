"""The compiled common step (``fastatari/vector/_step.pyx``) gives what the general path gives:
the same observations, rewards, flags and batched info, step for step, through episode ends,
autoresets, finished games and life losses, in every autoreset mode, with copies or views.
The general path is the reference: the same env with its compiled path switched off."""
from __future__ import annotations

import numpy as np
import pytest

from fastatari.vector import make_vec
from fastatari.vector import _step

# short games with sticky actions: episodes, games and autoresets within a few hundred steps
SHORT = dict(max_num_frames_per_episode=300, num_workers=2)


def same(ours, theirs, where):
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs), where
        for key in theirs:
            same(ours[key], theirs[key], f"{where}[{key!r}]")
    else:
        assert type(ours) is type(theirs), where
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype, where
        if np.asarray(theirs).dtype == object:  # final_obs: an array per ended env, else None
            for j, (x, y) in enumerate(zip(ours, theirs, strict=True)):
                assert (x is None) == (y is None), f"{where}[{j}]"
                if y is not None:
                    np.testing.assert_array_equal(x, y, err_msg=f"{where}[{j}]")
            return
        if where.endswith("['game']['t']"):  # a game's seconds: wall time, differs by env
            np.testing.assert_array_equal(np.asarray(ours) > 0, np.asarray(theirs) > 0)
            return
        np.testing.assert_array_equal(ours, theirs, err_msg=where)


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(copy=False),
    dict(episodic_life=True, clip_rewards=True, ram_info=True),
    dict(life_loss_info=True),
    dict(autoreset_mode="same_step"),
    dict(game=["breakout", "pong", "breakout", "pong"], full_action_space=True),
], ids=["default", "views", "episodic-clip-ram", "life-loss-info", "same-step", "two-games"])
def test_the_compiled_step_gives_the_general_paths_results(kwargs):
    kwargs = dict(kwargs)
    game = kwargs.pop("game", "breakout")
    with make_vec(game, 4, **SHORT, **kwargs) as compiled, \
            make_vec(game, 4, **SHORT, **kwargs) as general:
        general._sync = None  # the reference: every step on the general path
        assert compiled._sync is not None
        compiled.reset(seed=5)
        general.reset(seed=5)
        actions = np.random.default_rng(1).integers(0, compiled.single_action_space.n, (400, 4))
        games = 0
        for t, a in enumerate(actions):
            ours, theirs = compiled.step(a), general.step(a)
            for k, (x, y) in enumerate(zip(ours, theirs, strict=True)):
                same(x, y, f"step {t}, item {k}")
            games += int("game" in theirs[4])
        assert games > 0  # finished games went through the compiled path's statistics


def test_uncommon_actions_take_the_general_path_and_its_errors():
    with make_vec("breakout", 2, num_workers=1) as envs:
        envs.reset(seed=0)
        step = envs._sync
        assert step.write_actions(np.zeros(2, np.int64)) == _step.ALL_STEP
        for other in (np.zeros(2, np.int32), [0, 0], np.zeros(3, np.int64),
                      np.array([0, 4]), np.array([-1, 0])):
            assert step.write_actions(other) == _step.NOT_COMMON
        envs.step(np.zeros(2, np.int32))  # converted by the general path
        envs.step([1, 1])
        with pytest.raises(ValueError, match=r"actions must be in \[0, 4\)"):
            envs.step(np.array([0, 4]))
        with pytest.raises(TypeError):
            envs.step(np.zeros(2, np.float64))
