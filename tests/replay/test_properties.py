"""Issue #45's property tests: random sequences of valid and invalid calls (add, sample,
update_priorities, load_state_dict) against a simple reference model. Every refusal leaves
the memory equal to what it was (its state field by field), every accepted call matches the
model, and every sample is byte-identical to what was added. Modest example counts: a few
seconds each."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastatari.replay import PrioritizedReplayBuffer, ReplayMemory

from .twins import assert_same, state_of

SHAPE = (4, 3, 2)
N_ENVS = 2
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
OPS = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "bad_add", "sample", "save",
                                          "load", "bad_load", "priorities",
                                          "bad_priorities"]),
                         st.integers(0, 2**31)), min_size=1, max_size=40)


def stacks(rng: np.random.Generator) -> tuple:
    """A step's (obs, next_obs): few distinct values, so frames repeat, are all zero, shift."""
    kind = rng.integers(0, 4)
    if kind == 0:
        obs = np.zeros((N_ENVS, *SHAPE), np.uint8)
    else:
        obs = rng.integers(0, 2, (N_ENVS, *SHAPE), dtype=np.uint8)
    new = rng.integers(0, 2, (N_ENVS, 1, *SHAPE[1:]), dtype=np.uint8)
    next_obs = np.concatenate([obs[:, 1:], new], 1) if kind != 3 else \
        rng.integers(0, 2, (N_ENVS, *SHAPE), dtype=np.uint8)
    return obs, next_obs


def bad_columns(rng: np.random.Generator) -> tuple:
    """(which argument, a value refused for it)."""
    n = N_ENVS
    choices = [("actions", np.full(n, 1.5)), ("actions", np.array(["1"] * n)),
               ("actions", [None] * n), ("actions", np.zeros(n + 1, int)),
               ("rewards", np.full(n, 1e300)), ("rewards", np.full(n, np.nan)),
               ("terminated", np.array(["no"] * n)), ("terminated", np.full(n, 2)),
               ("truncated", np.full(n, 0.5)), ("obs", np.zeros((n, *SHAPE), np.int16)),
               ("next_obs", np.zeros((n, 3, *SHAPE[1:]), np.uint8))]
    return choices[rng.integers(len(choices))]


def bad_state(state: dict, rng: np.random.Generator) -> dict:
    """A copy of ``state`` with one value broken (wrong dtype, shape or range)."""
    state = dict(state)
    flat_frames = "frames.refs" in state
    keys = [k for k, v in state.items() if isinstance(v, np.ndarray) and v.size]
    key = keys[rng.integers(len(keys))]
    value = state[key]
    how = rng.integers(0, 5)
    if how == 0:
        state[key] = value.astype(str)
    elif how == 1:
        state[key] = value.reshape(-1)[:-1]
    elif how == 2:
        state[key] = None
    elif how == 3 and value.dtype.kind in "iu":
        state[key] = value.astype(np.float64) + 0.5  # not whole: refused, not rounded
    elif key.endswith("lineage"):  # optional (a state without one is taken as new frames)
        state[key] = value[::-1] if len(value) > 1 else value + [[0, 1]]
    else:
        del state[key]
    if flat_frames and rng.integers(0, 2):
        state = dict(state)
        state["frames.pos"] = "x"
    return state


@pytest.mark.parametrize("capacity", [6, 11])
@SETTINGS
@given(ops=OPS)
def test_replay_memory_against_a_reference_ring(capacity, ops):
    memory = ReplayMemory(capacity, SHAPE, n_envs=N_ENVS)
    per_env = capacity // N_ENVS
    model: dict = {}  # slot -> the step added there
    pos, saved = 0, None
    for op, seed in ops:
        rng = np.random.default_rng(seed)
        before = state_of(memory)
        if op == "add":
            obs, next_obs = stacks(rng)
            step = (obs, next_obs, rng.integers(0, 6, N_ENVS), rng.normal(size=N_ENVS),
                    rng.integers(0, 2, N_ENVS).astype(bool), rng.integers(0, 2, N_ENVS))
            memory.add(*step)
            model[pos] = step
            pos = (pos + 1) % per_env
        elif op == "bad_add":
            obs, next_obs = stacks(rng)
            args = dict(obs=obs, next_obs=next_obs, actions=np.zeros(N_ENVS, int),
                        rewards=np.zeros(N_ENVS), terminated=np.zeros(N_ENVS, bool),
                        truncated=np.zeros(N_ENVS, bool))
            name, bad = bad_columns(rng)
            args[name] = bad
            with pytest.raises((TypeError, ValueError)):
                memory.add(**args)
            assert_same(state_of(memory), before)
        elif op == "sample" and model:
            batch = memory.sample(16, np.random.default_rng(seed))
            for i, (slot, env) in enumerate(zip(batch.slots, batch.envs, strict=True)):
                obs, next_obs, action, reward, term, trunc = model[int(slot)]
                np.testing.assert_array_equal(batch.obs[i], obs[env])
                np.testing.assert_array_equal(batch.next_obs[i], next_obs[env])
                assert batch.actions[i] == action[env]
                assert batch.rewards[i] == np.float32(reward[env])
                assert batch.terminated[i] == term[env] and batch.truncated[i] == trunc[env]
        elif op == "save":
            saved = (memory.state_dict(), dict(model), pos)
        elif op == "load" and saved is not None:
            memory.load_state_dict(saved[0])
            model, pos = dict(saved[1]), saved[2]
            assert_same(state_of(memory), saved[0])
        elif op == "bad_load":
            with pytest.raises((TypeError, ValueError)):
                memory.load_state_dict(bad_state(memory.state_dict(), rng))
            assert_same(state_of(memory), before)
        assert len(memory) == len(model) * N_ENVS


@SETTINGS
@given(ops=OPS, eps=st.sampled_from([0.0, 1e-6]), alpha=st.sampled_from([0.5, 1.0]))
def test_prioritized_buffer_against_a_reference_ring(ops, eps, alpha):
    capacity = 8
    buffer = PrioritizedReplayBuffer(capacity, SHAPE, None, 1, 0.9, alpha, 0.4, eps,
                                     n_envs=N_ENVS)
    per_env = capacity // N_ENVS
    model: dict = {}  # index -> (obs, next_obs, action, reward, done)
    priorities = np.zeros(capacity)
    largest, pos, saved = 1.0, 0, None
    for op, seed in ops:
        rng = np.random.default_rng(seed)
        before = state_of(buffer)
        if op == "add":
            obs, next_obs = stacks(rng)
            action, reward = rng.integers(0, 6, N_ENVS), rng.normal(size=N_ENVS)
            done = rng.integers(0, 2, N_ENVS).astype(bool)
            buffer.add(obs, action, reward, next_obs, done)
            for e in range(N_ENVS):
                index = e * per_env + pos
                model[index] = (obs[e], next_obs[e], action[e], reward[e], done[e])
                priorities[index] = largest ** alpha
            pos = (pos + 1) % per_env
        elif op == "bad_add":
            obs, next_obs = stacks(rng)
            args = dict(obs=obs, action=np.zeros(N_ENVS, int), reward=np.zeros(N_ENVS),
                        next_obs=next_obs, done=np.zeros(N_ENVS, bool),
                        truncated=np.zeros(N_ENVS, bool))
            name, bad = bad_columns(rng)
            name = {"actions": "action", "rewards": "reward", "terminated": "done"}.get(name,
                                                                                       name)
            args[name] = bad
            with pytest.raises((TypeError, ValueError)):
                buffer.add(**args)
            assert_same(state_of(buffer), before)
        elif op == "sample" and model:
            if not priorities.sum() > 0:
                with pytest.raises(ValueError, match="priority is 0"):
                    buffer.sample(8)
                continue
            np.random.seed(seed)
            batch = buffer.sample(8)
            assert np.isfinite(batch.weights).all() and batch.weights.max() == 1.0
            for i, index in enumerate(batch.indices):
                assert int(index) in model and priorities[index] > 0
                obs, next_obs, action, reward, done = model[int(index)]
                np.testing.assert_array_equal(batch.observations[i], obs)
                np.testing.assert_array_equal(batch.next_observations[i], next_obs)
                assert batch.actions[i, 0] == action and batch.dones[i, 0] == done
                assert batch.rewards[i, 0] == np.float32(reward)
        elif op == "priorities" and model:
            indices = rng.choice(sorted(model), rng.integers(1, len(model) + 1))
            values = rng.choice([0.0, 0.5, 3.0, 1e100], len(indices))
            buffer.update_priorities(indices, values)
            for index, value in zip(indices, values, strict=True):
                priorities[index] = (value + eps) ** alpha
            largest = max(largest, float((values + eps).max()))
        elif op == "bad_priorities":
            index = int(rng.choice(sorted(model))) if model else 0
            past_limit = 1e308 if alpha == 1.0 else np.inf  # 1e308 ** 0.5 is within it
            choices = [([index], [np.nan]), ([index], [-1.0]), ([index], [past_limit]),
                       ([capacity + 3], [1.0]), ([index + 0.5], [1.0]), ([index], ["x"]),
                       ([index, index], [1.0])]
            if len(model) < capacity:
                free = sorted(set(range(capacity)) - set(model))
                choices.append(([free[0]], [1.0]))  # never stored
            indices, values = choices[rng.integers(len(choices))]
            with pytest.raises((TypeError, ValueError, IndexError)):
                buffer.update_priorities(indices, values)
            assert_same(state_of(buffer), before)
        elif op == "save":
            saved = (pickle.loads(pickle.dumps(buffer.state_dict())), dict(model),
                     priorities.copy(), largest, pos)
        elif op == "load" and saved is not None:
            buffer.load_state_dict(saved[0])
            model, priorities, largest, pos = (dict(saved[1]), saved[2].copy(), saved[3],
                                               saved[4])
            assert_same(state_of(buffer), saved[0])
        elif op == "bad_load":
            state = buffer.state_dict()
            if rng.integers(0, 2) and len(model) < capacity:
                free = sorted(set(range(capacity)) - set(model))
                state["priorities"] = state["priorities"].copy()
                state["priorities"][free[0]] = 1.0  # a priority on a slot never stored
            else:
                state = bad_state(state, rng)
            with pytest.raises((TypeError, ValueError)):
                buffer.load_state_dict(state)
            assert_same(state_of(buffer), before)
        np.testing.assert_allclose(buffer.tree.get(np.arange(capacity)), priorities,
                                   rtol=1e-12)
        assert buffer.size == len(model)


@pytest.mark.rl
@SETTINGS
@given(ops=OPS)
def test_sb3_replay_buffer_against_sb3s_own(ops):
    """The reference is SB3's own ReplayBuffer, given only the valid calls: under one NumPy
    seed the samples are equal byte for byte; a pickled copy ("save"/"load") goes on the same."""
    pytest.importorskip("stable_baselines3")
    import torch
    from gymnasium import spaces
    from stable_baselines3.common import buffers

    from fastatari.replay import ReplayBuffer

    space = spaces.Box(0, 255, SHAPE, np.uint8)
    kw = dict(device="cpu", n_envs=N_ENVS, handle_timeout_termination=True)
    ours = ReplayBuffer(10, space, spaces.Discrete(6), **kw)
    theirs = buffers.ReplayBuffer(10, space, spaces.Discrete(6), **kw)
    saved = None
    for op, seed in ops:
        rng = np.random.default_rng(seed)
        before = state_of(ours)
        infos = [{"TimeLimit.truncated": bool(t)} for t in rng.integers(0, 2, N_ENVS)]
        if op == "add":
            obs, next_obs = stacks(rng)
            step = (obs, next_obs, rng.integers(0, 6, N_ENVS),
                    rng.normal(size=N_ENVS).astype(np.float32), rng.integers(0, 2, N_ENVS),
                    infos)
            ours.add(*step)
            theirs.add(*step)
        elif op in ("bad_add", "bad_priorities", "bad_load"):
            obs, next_obs = stacks(rng)
            args = dict(obs=obs, next_obs=next_obs, action=np.zeros(N_ENVS, int),
                        reward=np.zeros(N_ENVS), done=np.zeros(N_ENVS), infos=infos)
            name, bad = bad_columns(rng)
            name = {"actions": "action", "rewards": "reward", "terminated": "done",
                    "truncated": "infos"}.get(name, name)
            args[name] = [{"TimeLimit.truncated": v} for v in bad] if name == "infos" else bad
            with pytest.raises((TypeError, ValueError)):
                ours.add(**args)
            assert_same(state_of(ours), before)
        elif op == "sample" and theirs.size():
            np.random.seed(seed)
            a = ours.sample(8)
            np.random.seed(seed)
            b = theirs.sample(8)
            for x, y in zip(a, b, strict=True):
                assert (x is None and y is None) or torch.equal(x, y)
        elif op == "save":
            saved = (pickle.dumps(ours), pickle.dumps(theirs))
        elif op == "load" and saved is not None:
            ours, theirs = pickle.loads(saved[0]), pickle.loads(saved[1])
        assert (ours.pos, ours.full, ours.size()) == (theirs.pos, theirs.full, theirs.size())
