"""fastatari.vector.rollout: T steps of a local vector env under one policy, equal to the same
steps taken one by one; infos stacked as (T, N) entries."""
from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from fastatari import make_vec
from fastatari.vector.infos import take
from fastatari.vector.plan import VectorPlan

FAST = dict(noop_max=0, repeat_action_probability=0.0)


def _policy(obs):
    # deterministic in the observation: the same frames give the same actions
    return (obs.reshape(len(obs), -1)[:, ::97].sum(axis=1) % 4).astype(np.int64)


@pytest.mark.parametrize("autoreset_mode", ["next_step", "same_step"])
def test_rollout_equals_steps_one_by_one(autoreset_mode):
    with make_vec("breakout", 3, num_workers=2, autoreset_mode=autoreset_mode,
                  max_num_frames_per_episode=200, **FAST) as envs, \
            make_vec("breakout", 3, num_workers=1, autoreset_mode=autoreset_mode,
                     max_num_frames_per_episode=200, **FAST) as twin:
        envs.reset(seed=1)
        obs, _ = twin.reset(seed=1)
        out = envs.rollout(_policy, 80)
        assert out.obs.shape == (80, 3, 4, 84, 84) and out.actions.shape == (80, 3)
        for t in range(80):
            np.testing.assert_array_equal(out.obs[t], obs)
            actions = _policy(obs)
            np.testing.assert_array_equal(out.actions[t], actions)
            obs, reward, terminated, truncated, info = twin.step(actions)
            np.testing.assert_array_equal(out.rewards[t], reward)
            np.testing.assert_array_equal(out.terminated[t], terminated)
            np.testing.assert_array_equal(out.truncated[t], truncated)
            np.testing.assert_array_equal(take(out.info, t)["lives"], info["lives"])
        assert out.truncated.any()  # episodes ended inside the rollout
        np.testing.assert_array_equal(out.next_obs, obs)
        # the envs stay where the rollout left them
        np.testing.assert_array_equal(envs.step(_policy(obs))[0], twin.step(_policy(obs))[0])


def test_rollout_steps_on_the_compiled_path():
    """rollout() holds the one-caller guard; its steps enter it again and stay one compiled call
    each."""
    with make_vec("breakout", 3, num_workers=2, **FAST) as envs:
        envs.reset(seed=1)
        with mock.patch.object(VectorPlan, "check_actions", side_effect=AssertionError(
                "a step of the rollout went through the front's checks")):
            envs.rollout(_policy, 20)


def test_rollout_refuses_bad_input_before_any_step():
    with make_vec("breakout", 2, num_workers=1, **FAST) as envs:
        with pytest.raises(Exception, match="reset"):
            envs.rollout(_policy, 2)
        envs.reset(seed=0)
        with pytest.raises(TypeError, match="callable"):
            envs.rollout("policy", 2)
        with pytest.raises(ValueError, match="num_steps"):
            envs.rollout(_policy, 0)
        with pytest.raises(ValueError, match="actions must be in"):
            envs.rollout(lambda obs: np.full(len(obs), 7), 2)
    with make_vec("breakout", 2, num_workers=1, autoreset_mode="disabled", **FAST) as envs:
        envs.reset(seed=0)
        with pytest.raises(ValueError, match="needs autoreset"):
            envs.rollout(_policy, 2)
