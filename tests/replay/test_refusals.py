"""Issue #45: every refused call leaves the memory equal to a twin that never saw it, and
nothing that changes meaning is stored (ReplayMemory, PrioritizedReplayBuffer, FrameStore;
the SB3 drop-in's cases are in test_sb3.py)."""

from __future__ import annotations

import numpy as np
import pytest

from fastatari.replay import FrameStore, PrioritizedReplayBuffer, ReplayMemory

from .twins import assert_same

SHAPE = (4, 6, 5)


def fed_memory(capacity: int = 20, steps: int = 12) -> ReplayMemory:
    memory = ReplayMemory(capacity, SHAPE)
    rng = np.random.default_rng(0)
    for t in range(steps):
        obs = rng.integers(0, 255, (1, *SHAPE), dtype=np.uint8)
        memory.add(obs, np.roll(obs, 1, axis=1), [t % 4], [1.0], [False], [t % 5 == 4])
    return memory


def fed_buffer(capacity: int = 16, steps: int = 10, **kw) -> PrioritizedReplayBuffer:
    buffer = PrioritizedReplayBuffer(capacity, SHAPE, None, **kw)
    rng = np.random.default_rng(0)
    for t in range(steps):
        obs = rng.integers(0, 255, (1, *SHAPE), dtype=np.uint8)
        buffer.add(obs, [t % 4], [1.0], np.roll(obs, 1, axis=1), [t % 5 == 4])
    return buffer


OBS = np.zeros((1, *SHAPE), np.uint8)
# (actions, rewards, terminated, truncated), the error, and the argument its message names
BAD_STEPS = [
    (([1.5], [0.0], [False], [False]), ValueError, "actions"),  # stored as 1 before
    (([2.7], [0.0], [False], [False]), ValueError, "actions"),
    ((["1"], [0.0], [False], [False]), TypeError, "actions"),  # stored as 1 before
    ((["x"], [0.0], [False], [False]), TypeError, "actions"),  # "invalid literal for int()"
    (([None], [0.0], [False], [False]), TypeError, "actions"),
    (([0], [1e300], [False], [False]), ValueError, "rewards"),  # stored as inf before
    (([0], [np.nan], [False], [False]), ValueError, "rewards"),
    (([0], ["1.0"], [False], [False]), TypeError, "rewards"),
    (([0], [0.0], [False], ["no"]), TypeError, "truncated"),  # stored as True before
    (([0], [0.0], [2], [False]), ValueError, "terminated"),
    (([0], [0.0], [0.5], [False]), ValueError, "terminated"),
    (([2**63], [0.0], [False], [False]), ValueError, "actions"),
]


@pytest.mark.parametrize("step, error, name", BAD_STEPS)
def test_replay_memory_refuses_a_step_that_changes_meaning(step, error, name):
    memory, twin = fed_memory(), fed_memory()
    with pytest.raises(error, match=name):
        memory.add(OBS, OBS, *step)
    assert_same(memory, twin)


@pytest.mark.parametrize("step, error, name", BAD_STEPS)
def test_prioritized_buffer_refuses_a_step_that_changes_meaning(step, error, name):
    buffer, twin = fed_buffer(n_step=3), fed_buffer(n_step=3)
    name = {"actions": "action", "rewards": "reward", "terminated": "done"}.get(name, name)
    actions, rewards, terminated, truncated = step
    if name == "reward" and rewards == [1e300]:
        rewards, error = [1e309], ValueError  # float64 here: past float64's range is inf
    with pytest.raises(error, match=name):
        buffer.add(OBS, actions, rewards, OBS, terminated, truncated=truncated)
    assert_same(buffer, twin)


def test_lossless_conversions_are_accepted():
    memory = ReplayMemory(10, SHAPE)
    memory.add(OBS, OBS, [3.0], [np.int64(2)], [1], np.array([0.0]))
    memory.add(OBS, OBS, np.array([2], np.uint8), np.array([0.5], np.float64), [True], [False])
    assert memory.actions[:2, 0].tolist() == [3, 2]
    assert memory.rewards[:2, 0].tolist() == [2.0, 0.5]
    assert memory.terminated[:2, 0].tolist() == [True, True]


def test_a_prioritized_step_whose_n_step_return_overflows_float32_is_refused_whole():
    buffer, twin = fed_buffer(n_step=2), fed_buffer(n_step=2)
    for b in (buffer, twin):
        b.add(OBS, [0], [1e38], OBS, [False])
    with pytest.raises(ValueError, match="reward"):
        buffer.add(OBS, [0], [3.4e38], OBS, [False])  # 1e38 + 0.99 * 3.4e38 is past float32
    assert_same(buffer, twin)


def test_sample_takes_a_legacy_random_state_and_names_a_bad_rng():
    memory = fed_memory()
    a = memory.sample(8, np.random.RandomState(0))
    b = memory.sample(8, np.random.RandomState(0))
    np.testing.assert_array_equal(a.slots, b.slots)
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        memory.sample(4, 0)


def test_replay_memory_state_with_a_bad_column_changes_nothing():
    """A wrong-dtype column used to replace the frames first (len 20 -> 10)."""
    memory, twin = fed_memory(steps=20), fed_memory(steps=20)
    state = fed_memory(steps=10).state_dict()
    for name, bad, error in (("actions", state["actions"].astype(str), TypeError),
                             ("actions", state["actions"] + 0.5, TypeError),
                             ("rewards", None, TypeError),
                             ("rewards", "1", TypeError),
                             ("rewards", np.full_like(state["rewards"], np.inf), ValueError),
                             ("terminated", np.full(state["terminated"].shape, 2),
                              TypeError),
                             ("truncated", state["truncated"][:3], ValueError)):
        with pytest.raises(error, match=name):
            memory.load_state_dict(dict(state, **{name: bad}))
        assert_same(memory, twin)
        assert len(memory) == 20


def test_a_frame_store_state_with_float_refs_or_a_bad_pos_is_refused():
    memory, twin = fed_memory(), fed_memory()
    state = memory.frames.state_dict()
    for key, bad, error in (("refs", state["refs"].astype(np.float64), TypeError),
                            ("refs", np.where(state["refs"] == 0, np.nan, state["refs"]),
                             TypeError),
                            ("pos", "x", TypeError), ("pos", 2.5, TypeError),
                            ("pos", 99, ValueError), ("full", "no", TypeError),
                            ("first_serial", -1, ValueError),
                            ("frames", state["frames"].astype(np.int16), TypeError)):
        with pytest.raises(error, match=key):
            memory.frames.load_state_dict(dict(state, **{key: bad}))
        assert_same(memory, twin)
    with pytest.raises(TypeError, match="dict"):
        memory.frames.load_state_dict([1, 2])
    with pytest.raises(ValueError, match="'refs'"):
        memory.frames.load_state_dict({k: v for k, v in state.items() if k != "refs"})
    assert_same(memory, twin)
    store = FrameStore(20, 1, SHAPE, 4, 0)
    store.load_state_dict(state)  # the good one still loads
    assert store.size == memory.frames.size


def test_prioritized_state_with_a_bad_column_changes_nothing():
    """A wrong-dtype rewards column used to leave size 10 with 20 priorities in the tree
    (every sample() then raised IndexError)."""
    buffer, twin = fed_buffer(32, 20), fed_buffer(32, 20)
    state = fed_buffer(32, 10).state_dict()
    for name, bad, error in (("rewards", state["rewards"].astype(str), TypeError),
                             ("rewards", state["rewards"].astype(np.float64), TypeError),
                             ("actions", None, TypeError),
                             ("dones", np.zeros(32), TypeError),
                             ("max_priority", "big", TypeError),
                             ("beta", -1.0, ValueError),
                             ("windows", {}, TypeError),
                             ("stores", state["stores"] * 2, ValueError)):
        with pytest.raises(error, match=name):
            buffer.load_state_dict(dict(state, **{name: bad}))
        assert_same(buffer, twin)
        np.random.seed(0)
        buffer.sample(8)


def test_a_priority_on_a_slot_never_stored_is_refused():
    buffer, twin = fed_buffer(64, 12, n_step=3), fed_buffer(64, 12, n_step=3)
    state = buffer.state_dict()
    assert len(state["windows"][0]["terminated"]) == 2
    priorities = state["priorities"].copy()
    priorities[50] = 1.0
    with pytest.raises(ValueError, match="priorit"):
        buffer.load_state_dict(dict(state, priorities=priorities))
    assert_same(buffer, twin)
    windows = [dict(w, terminated=np.ones_like(w["terminated"])) for w in state["windows"]]
    with pytest.raises(ValueError, match="windows"):
        buffer.load_state_dict(dict(state, windows=windows))
    assert_same(buffer, twin)


def test_with_eps_0_a_priority_of_0_can_be_updated_again():
    buffer = fed_buffer(eps=0.0)
    buffer.update_priorities([3], [0.0])
    buffer.update_priorities([3], [1.0])  # "indices must be of stored transitions" before
    assert buffer.tree.get(np.array([3]))[0] > 0
    buffer.update_priorities(np.arange(buffer.size), np.zeros(buffer.size))
    with pytest.raises(ValueError, match="priority is 0"):
        buffer.sample(4)
    with pytest.raises(IndexError):
        buffer.update_priorities([buffer.size], [1.0])  # never stored


def test_priorities_that_would_make_the_tree_non_finite_are_refused():
    """alpha=1: two priorities of 1e308 made the total inf, sample() NaN weights and the same
    index four times."""
    buffer, twin = fed_buffer(alpha=1.0), fed_buffer(alpha=1.0)
    with pytest.raises(ValueError, match="priority_limit"):
        buffer.update_priorities([0, 1], [1e308, 1e308])
    with pytest.raises(TypeError, match="indices"):
        buffer.update_priorities([0.0, 1.0], [1.0, 1.0])
    with pytest.raises(TypeError, match="priorities"):
        buffer.update_priorities([0, 1], ["a", "b"])
    assert_same(buffer, twin)
    limit = buffer.priority_limit
    assert limit == np.finfo(np.float64).max / 16
    buffer.update_priorities(np.arange(10), np.full(10, limit - buffer.eps))  # the largest
    buffer.update_priorities([0], [1e-300])
    assert np.isfinite(buffer.tree.total)
    np.random.seed(0)
    batch = buffer.sample(64)
    assert np.isfinite(batch.weights).all() and batch.weights.max() == 1.0
    assert len(np.unique(batch.indices)) > 4
    assert (batch.weights[batch.indices == 0] == 0).all()  # 1e-300 / limit, as float32: 0


def test_the_documented_npz_round_trip_resumes_exactly(tmp_path):
    memory = fed_memory(steps=25)
    np.savez(tmp_path / "memory.npz", **memory.state_dict())
    resumed = ReplayMemory(20, SHAPE)
    resumed.load_state_dict(np.load(tmp_path / "memory.npz"))
    assert_same(memory, resumed)
    a, b = memory.sample(16, np.random.default_rng(1)), resumed.sample(16, np.random.default_rng(1))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
