"""ReplayMemory, the NumPy core: what is sampled is what was added, row by row."""

from __future__ import annotations

import numpy as np
import pytest

from fastatari.replay import ReplayMemory

from .streams import frame_stacks


def feed(memory: ReplayMemory, steps: int, seed: int = 0) -> list:
    n = memory.n_envs
    streams = [frame_stacks(np.random.default_rng(seed + e), steps) for e in range(n)]
    rng = np.random.default_rng(seed)
    added = []
    for _ in range(steps):
        items = [next(s) for s in streams]
        step = (np.stack([i[0] for i in items]), np.stack([i[1] for i in items]),
                rng.integers(0, 6, n), rng.normal(size=n).astype(np.float32),
                np.array([i[2] for i in items]), np.array([i[3] for i in items]))
        memory.add(*step)
        added.append(step)
    return added


def test_a_sample_is_what_was_added():
    memory = ReplayMemory(60, (4, 6, 5), n_envs=3)
    added = feed(memory, 95)
    assert len(memory) == 60
    batch = memory.sample(200, np.random.default_rng(1))
    for i, (slot, env) in enumerate(zip(batch.slots, batch.envs, strict=True)):
        step = added[95 - 1 - (95 - 1 - slot) % 20]
        for got, want in zip((batch.obs, batch.next_obs, batch.actions, batch.rewards,
                              batch.terminated, batch.truncated),
                             (step[0], step[1], step[2], step[3], step[4], step[5]),
                             strict=True):
            np.testing.assert_array_equal(got[i], want[env])


def test_the_same_generator_draws_the_same_batch_and_state_resumes_exactly():
    memory = ReplayMemory(50, (4, 6, 5), n_envs=2)
    feed(memory, 70)
    copy = ReplayMemory(50, (4, 6, 5), n_envs=2)
    copy.load_state_dict(memory.state_dict())
    a, b = memory.sample(64, np.random.default_rng(3)), copy.sample(64, np.random.default_rng(3))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    feed(memory, 30, seed=9), feed(copy, 30, seed=9)
    a, b = memory.sample(64, np.random.default_rng(4)), copy.sample(64, np.random.default_rng(4))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_bad_input_is_refused_whole():
    memory = ReplayMemory(10, (4, 6, 5), n_envs=2)
    with pytest.raises(ValueError, match="empty"):
        memory.sample(1)
    feed(memory, 2)
    obs = np.zeros((2, 4, 6, 5), np.uint8)
    good = (obs, obs, np.zeros(2, int), np.zeros(2), np.zeros(2, bool), np.zeros(2, bool))
    for i, bad in ((2, np.zeros(3, int)), (3, np.zeros((2, 1))), (4, np.zeros(1, bool)),
                   (0, obs[:, :3]), (1, obs.astype(np.int8))):
        with pytest.raises((ValueError, TypeError)):
            memory.add(*good[:i], bad, *good[i + 1:])
    assert len(memory) == 4
    for bad in (0, -1, 2.5, None):
        with pytest.raises(ValueError, match="batch_size"):
            memory.sample(bad)
    with pytest.raises(ValueError, match="n_envs"):
        ReplayMemory(4, (4, 6, 5), n_envs=5)
    with pytest.raises(ValueError, match="image stacks"):
        ReplayMemory(4, (8,))
