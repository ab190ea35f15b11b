"""fastatari.vector.plan: the whole vector env decided and checked before any process starts,
and read by every front end (the local pool, Ray, fastatari.envpool, evaluate)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import fastatari
from fastatari.vector import VectorPlan, plan_vec
from fastatari.vector.pool import WorkerPool


def test_plan_is_pure_and_complete():
    plan = plan_vec("breakout", 6, num_workers=2, frame_skip=3, copy=False)
    assert isinstance(plan, VectorPlan)
    assert plan.num_envs == 6 and plan.env_ids == tuple(range(6))
    assert plan.assignment.games == ("breakout",) * 6
    assert plan.options.frame_skip == 3 and not plan.config.copy
    assert plan.action_meanings == ("NOOP", "FIRE", "RIGHT", "LEFT") and plan.num_actions == 4
    assert plan.workers == {"num_workers": 2}  # as given: the pool checks them
    assert plan.layout.num_envs == 6
    assert pickle.loads(pickle.dumps(plan)) == plan  # a Ray actor receives its block


def test_plan_applies_a_protocol_and_the_keywords_beside_it():
    plan = plan_vec("pong", 2, protocol="machado2018", noop_max=5)
    assert plan.options.repeat_action_probability == 0.25 and plan.options.noop_max == 5


def test_several_games_need_the_full_action_space_and_then_share_ale_actions():
    with pytest.raises(ValueError, match="different action sets .*full_action_space=True"):
        plan_vec(["pong", "breakout"], 2)
    plan = plan_vec(["pong", "breakout"], 2, full_action_space=True)
    assert plan.ale_actions and plan.num_actions == 18 and plan.assignment.multi


@pytest.mark.parametrize("bad, error, match", [
    (dict(frame_skip=0), ValueError, "frame_skip"),
    (dict(batch_size=7), ValueError, "batch_size"),
    (dict(screen_size=(200, 84)), ValueError, "would enlarge"),
    (dict(frame_skipp=4), TypeError, "frame_skipp"),
])
def test_bad_keywords_fail_in_the_plan(bad, error, match):
    with pytest.raises(error, match=match):
        plan_vec("breakout", 4, **bad)


def test_worker_settings_are_checked_by_the_pool_before_any_process():
    plan = plan_vec("breakout", 2, num_workers=3)  # more workers than envs: the pool's rule
    with pytest.raises(ValueError, match="num_workers"):
        WorkerPool(plan)
    with pytest.raises(ValueError, match="num_workers"):
        fastatari.make_vec("breakout", 2, num_workers=3)


def test_block_is_an_actors_share():
    plan = plan_vec(["pong", "pong", "breakout", "breakout"], 4, full_action_space=True,
                    mode={"breakout": 4})
    block = plan.block(2, 4)
    assert block.env_ids == (2, 3) and block.assignment.games == ("breakout", "breakout")
    assert block.assignment.names == ("pong", "breakout")  # numbered as the whole env's games
    assert block.assignment.game_index().tolist() == [1, 1] and block.layout.num_envs == 2
    assert block.config.batch_size == 2 and block.action_meanings == plan.action_meanings
    assert plan.config.copy and not block.config.copy  # the driver copies
    assert plan.layout.outputs == 3 and block.layout.outputs == 0  # the driver's return


def test_check_actions_is_the_plans():
    plan = plan_vec("breakout", 2)
    assert plan.check_actions(np.array([0, 3]), 2).dtype == np.int64
    with pytest.raises(ValueError, match="actions must be in"):
        plan.check_actions(np.array([0, 4]), 2)
    with pytest.raises(TypeError):
        plan.check_actions(np.array([0.5, 1.0]), 2)


def test_the_vector_env_takes_a_plan_and_an_executor():
    plan = plan_vec("breakout", 2, num_workers=1)
    with fastatari.AtariVectorEnv(plan, WorkerPool(plan)) as envs:
        assert envs.plan is plan and envs.num_workers == 1
        obs, _ = envs.reset(seed=3)
        with fastatari.make_vec("breakout", 2, num_workers=2) as other:
            np.testing.assert_array_equal(other.reset(seed=3)[0], obs)
