"""ReplayMemory, the NumPy core: what is sampled is what was added, row by row."""

from __future__ import annotations

import os
import signal

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


def check_fed(memory: ReplayMemory, fed: list) -> None:
    """Every stored transition gathers back the stacks it was fed (``fed``: (obs, next)
    per add, oldest first)."""
    size = memory.frames.size
    slots = np.repeat(np.arange(size), memory.n_envs)
    envs = np.tile(np.arange(memory.n_envs), size)
    obs, next_obs = memory.frames.gather(slots, envs)
    for i, (slot, env) in enumerate(zip(slots, envs, strict=True)):
        age = (memory.frames.pos - 1 - slot) % memory.frames.capacity
        np.testing.assert_array_equal(obs[i], fed[-1 - age][0][env])
        np.testing.assert_array_equal(next_obs[i], fed[-1 - age][1][env])


@pytest.mark.parametrize("padding_type", ["reset", "zero"])
@pytest.mark.parametrize("autoreset_mode", ["next_step", "same_step"])
def test_fastataris_vector_env_in_each_autoreset_mode(autoreset_mode, padding_type):
    """Real stacks: fastatari's vector env (episodes end often: a short time limit), in both
    autoreset modes and padding types, copy=False views included; the ring wraps."""
    import fastatari

    envs = fastatari.make_vec("breakout", 2, num_workers=1, autoreset_mode=autoreset_mode,
                              max_num_frames_per_episode=100, padding_type=padding_type,
                              copy=False)
    memory = ReplayMemory(120, envs.single_observation_space.shape, n_envs=2)
    fed = []
    try:
        obs = envs.reset(seed=0)[0].copy()
        rng = np.random.default_rng(0)
        for _ in range(150):
            next_obs, reward, terminated, truncated, info = envs.step(rng.integers(0, 4, 2))
            real_next = next_obs.copy()
            for i in np.flatnonzero(info.get("_final_obs", np.zeros(2, bool))):
                real_next[i] = info["final_obs"][i]
            memory.add(obs, real_next, np.zeros(2, int), reward, terminated, truncated)
            fed.append((obs, real_next))
            obs = next_obs.copy()
    finally:
        envs.close()
    check_fed(memory, fed)
    assert memory.frames.frames_stored < 1.5 * len(memory)  # about one frame a transition


@pytest.mark.parametrize("padding_type", ["reset", "zero"])
@pytest.mark.parametrize("autoreset_mode", ["next_step", "same_step"])
def test_the_vector_envs_frame_serials_store_what_comparing_would(autoreset_mode, padding_type):
    """With the vector env's frame serials, a continued stream's frames are taken without
    comparing: every stack gathers back as it was fed, as a twin fed the same arrays without
    serials does, through episode ends, a reset of every env, a restore of two envs (its
    observations not returned: the caller's obs is then stale), a killed worker, a batch fed
    twice and another vector env's serials."""
    import fastatari

    kw = dict(autoreset_mode=autoreset_mode, max_num_frames_per_episode=100,
              padding_type=padding_type, max_restarts=2)
    envs = fastatari.make_vec("breakout", 3, num_workers=2, **kw)
    other = fastatari.make_vec("breakout", 3, num_workers=1, **kw)
    memory = ReplayMemory(300, envs.single_observation_space.shape, n_envs=3)
    twin = ReplayMemory(300, envs.single_observation_space.shape, n_envs=3)
    fed = []
    try:
        obs = envs.reset(seed=0)[0]
        other.reset(seed=1)
        rng = np.random.default_rng(0)
        snapshot = None
        for t in range(160):
            if t == 20:
                snapshot = envs.clone([0, 2])
            if t == 50:
                obs = envs.reset()[0]
            if t == 90:
                envs.restore(snapshot, [0, 2])
            if t == 120 and hasattr(signal, "SIGKILL"):
                os.kill(envs.worker_pids[1], signal.SIGKILL)
            next_obs, reward, terminated, truncated, info = envs.step(rng.integers(0, 4, 3))
            serials = envs.frame_serials
            if t == 140:
                other.step(np.zeros(3, np.int64))
                serials = other.frame_serials  # another env's: nothing known from them
            real_next = next_obs.copy()
            for i in np.flatnonzero(info.get("_final_obs", np.zeros(3, bool))):
                real_next[i] = info["final_obs"][i]
            for _ in range(2 if t == 70 else 1):  # a step added twice: the second compared
                memory.add(obs, real_next, np.zeros(3, int), reward, terminated, truncated,
                           serials=serials)
                twin.add(obs, real_next, np.zeros(3, int), reward, terminated, truncated)
                fed.append((obs, real_next))
            obs = next_obs
    finally:
        envs.close()
        other.close()
    check_fed(memory, fed)
    check_fed(twin, fed)
    assert memory.frames.continued > 0.8 * 3 * len(fed)  # most pairs taken without compares
    assert twin.frames.continued == 0
    assert memory.frames.frames_stored <= twin.frames.frames_stored + 3


def test_frame_serials_are_checked_before_anything_is_stored():
    from fastatari.vector import FrameSerials

    memory = ReplayMemory(10, (4, 6, 5), n_envs=2)
    feed(memory, 2)
    state = memory.state_dict()
    step = feed(ReplayMemory(10, (4, 6, 5), n_envs=2), 1)[0]
    good = np.array([1, 1]), np.array([2, 2])
    for serials, error in ((object(), TypeError), (FrameSerials(True, *good), TypeError),
                           (FrameSerials(0, *good), ValueError),
                           (FrameSerials(1, np.array([1, 1, 1]), good[1]), ValueError),
                           (FrameSerials(1, good[0], good[1].astype(np.int32)), ValueError)):
        with pytest.raises(error, match="serials"):
            memory.add(*step, serials=serials)
        for key, value in memory.state_dict().items():
            np.testing.assert_array_equal(value, state[key])


@pytest.mark.parametrize("padding_type", ["reset", "zero"])
def test_gymnasiums_frame_stack_observation(padding_type):
    """Real stacks: gymnasium's own pipeline (AtariPreprocessing, FrameStackObservation in
    both padding types), episodes cut short."""
    import ale_py
    import gymnasium

    gymnasium.register_envs(ale_py)
    env = gymnasium.make("ALE/Breakout-v5", frameskip=1, max_episode_steps=120)
    env = gymnasium.wrappers.AtariPreprocessing(env, frame_skip=4)
    env = gymnasium.wrappers.FrameStackObservation(env, 4, padding_type=padding_type)
    memory = ReplayMemory(200, env.observation_space.shape)
    fed = []
    obs, _ = env.reset(seed=0)
    for t in range(150):
        next_obs, reward, terminated, truncated, _ = env.step(t % 4)
        memory.add(obs[None], next_obs[None], [0], [reward], [terminated], [truncated])
        fed.append((obs[None], next_obs[None]))
        obs = env.reset()[0] if terminated or truncated else next_obs
    env.close()
    check_fed(memory, fed)
