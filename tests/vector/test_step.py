"""The compiled common step (``fastatari/vector/_step.pyx``) gives what the general path gives:
the same observations, rewards, flags and batched info, step for step (each env's own steps,
for send and recv), through episode ends, autoresets, finished games and life losses, in every
autoreset mode, with copies or views.
The general path is the reference: the same env made with FASTATARI_COMPILED_STEP=0, which
leaves every call to it."""
from __future__ import annotations

import copy
import weakref

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError

from fastatari.vector import _step, make_vec

# short games with sticky actions: episodes, games and autoresets within a few hundred steps
SHORT = dict(max_num_frames_per_episode=300, num_workers=2)


def general_path(*args, **kwargs):
    """``make_vec(*args, **kwargs)`` with every call on the general path."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FASTATARI_COMPILED_STEP", "0")
        envs = make_vec(*args, **kwargs)
    assert envs._fast is None
    return envs


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
            general_path(game, 4, **SHORT, **kwargs) as general:  # the reference
        assert compiled._fast is not None
        compiled.reset(seed=5)
        general.reset(seed=5)
        actions = np.random.default_rng(1).integers(0, compiled.single_action_space.n, (400, 4))
        general_steps = []
        checked = compiled._checked_step
        compiled._checked_step = lambda a: general_steps.append(a) or checked(a)
        games = 0
        for t, a in enumerate(actions):
            ours, theirs = compiled.step(a), general.step(a)
            for k, (x, y) in enumerate(zip(ours, theirs, strict=True)):
                same(x, y, f"step {t}, item {k}")
            games += int("game" in theirs[4])
        assert games > 0  # finished games went through the compiled path's statistics
        assert not general_steps  # every step was one compiled call


def test_held_observations_stay_as_returned():
    """copy=True: the common step returns an output slot that the workers filled, never one
    that a caller still holds, itself or through a view; what is held outlives the env."""
    with make_vec("breakout", 4, **SHORT) as envs:
        envs.reset(seed=3)
        held, views, served = [], [], 0
        for t, a in enumerate(np.random.default_rng(2).integers(0, 4, (60, 4))):
            obs = envs.step(a)[0]
            served += any(slot is obs for slot in envs.executor.outputs)  # not a copy
            if t % 7 == 0:  # more than the slots, each held
                held.append((obs, obs.copy()))
            if t % 11 == 3:  # a view alone holds its slot
                views.append((obs[1:3], obs[1:3].copy()))
        assert 0 < served < 60  # slots while one was free, then copies
    for kept, as_returned in held + views:
        np.testing.assert_array_equal(kept, as_returned)


@pytest.mark.parametrize("batch_size", [None, 2], ids=["step", "recv"])
def test_held_results_stay_as_returned(batch_size):
    """The common step (and a recv of a whole batch) writes its arrays into sets it reuses
    once no caller holds any of them: whatever a caller keeps (an array, a view, the info
    dict or its game dict) stays as returned; what it drops comes back, written anew."""
    def check(kept, as_returned):
        if isinstance(kept, dict):
            assert kept.keys() == as_returned.keys()
            for key in as_returned:
                np.testing.assert_equal(kept[key], as_returned[key])
        else:
            np.testing.assert_array_equal(kept, as_returned)

    with make_vec("breakout", 4, life_loss_info=True, batch_size=batch_size, **SHORT) as envs:
        envs.reset(seed=3)
        if batch_size:
            envs.send(np.zeros(4, np.int64))
        held, seen, reused, games = [], {}, 0, 0
        for t, a in enumerate(np.random.default_rng(2).integers(0, 4, (300, 4))):
            if batch_size:
                obs, reward, terminated, truncated, info = envs.recv()
                envs.send(a[:batch_size], info["env_id"])
            else:
                obs, reward, terminated, truncated, info = envs.step(a)
            games += "game" in info
            lives = info["lives"]
            known = seen.get(id(lives))
            reused += known is not None and known() is lives  # an earlier set, written anew
            seen[id(lives)] = weakref.ref(lives)
            if t % 3 == 0:  # held for a few steps, up to every set at once
                held.append((t, [reward, terminated[1:], info, info.get("game", info),
                                 obs][t % 5]))
                held[-1] += (copy.deepcopy(held[-1][1]),)
            while held and held[0][0] < t - 8:
                check(*held.pop(0)[1:])
            del obs, reward, terminated, truncated, info, lives
        assert games and reused > 100
        while batch_size and envs.book.in_flight():
            envs.recv()
    for _, kept, as_returned in held:
        check(kept, as_returned)


def test_uncommon_actions_take_the_general_path_and_its_errors():
    with make_vec("breakout", 2, num_workers=1) as envs:
        envs.reset(seed=0)
        step = envs._fast
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


def env_rows(info, j):
    """Env ``j``'s entries of a batched info (those its ``_key`` mask marks), recursively."""
    rows = {}
    for key, value in info.items():
        if key.startswith("_") or key == "env_id":
            continue
        if isinstance(value, dict):
            if info["_" + key][j]:
                rows[key] = env_rows(value, j)
        elif info["_" + key][j]:
            rows[key] = value[j]
    return rows


def async_run(envs, actions, batch_size):
    """Each env's own sequence of results when env ``i``'s ``t``-th step takes
    ``actions[t, i]``, through send/recv batches (which envs come back together is timing)."""
    n = envs.num_envs
    t = np.zeros(n, int)
    runs = [[] for _ in range(n)]
    envs.send(actions[0])
    while t.min() < len(actions):
        obs, reward, terminated, truncated, info = envs.recv()
        assert 1 <= info["env_id"].size <= batch_size
        for j, i in enumerate(info["env_id"]):
            runs[i].append((obs[j], reward[j], terminated[j], truncated[j], env_rows(info, j)))
            t[i] += 1
        ids = info["env_id"][t[info["env_id"]] < len(actions)]
        if ids.size:
            envs.send(actions[t[ids], ids], env_ids=ids)
    while envs.book.in_flight():
        envs.recv()
    return runs


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(episodic_life=True, clip_rewards=True, ram_info=True),
    dict(life_loss_info=True),
    dict(autoreset_mode="same_step"),
    dict(game=["breakout", "pong", "breakout", "pong"], full_action_space=True),
], ids=["default", "episodic-clip-ram", "life-loss-info", "same-step", "two-games"])
def test_the_compiled_send_and_recv_give_the_general_paths_results(kwargs):
    kwargs = dict(kwargs)
    game = kwargs.pop("game", "breakout")
    with make_vec(game, 4, batch_size=2, **SHORT, **kwargs) as compiled, \
            general_path(game, 4, batch_size=2, **SHORT, **kwargs) as general:
        compiled.reset(seed=5)
        general.reset(seed=5)
        general_calls, general_recvs = [], []
        results, checked = compiled._results, compiled._checked_recv
        compiled._results = lambda sel: general_calls.append(sel) or results(sel)
        compiled._checked_recv = lambda: general_recvs.append(1) or checked()
        actions = np.random.default_rng(2).integers(0, compiled.single_action_space.n, (300, 4))
        ours, theirs = async_run(compiled, actions, 2), async_run(general, actions, 2)
        # the compiled recv answered most batches whole (the general one: final observations);
        # without a compiled wait (the portable waits: no hot_path) the general recv waits,
        # and the compiled results still answer
        batches = sum(map(len, ours)) / 2
        assert len(general_calls) < 0.2 * batches, len(general_calls)
        if compiled.executor.hot_path is not None:
            assert len(general_recvs) < 0.2 * batches, len(general_recvs)
        games = 0
        for i in range(4):
            for t, (x, y) in enumerate(zip(ours[i], theirs[i], strict=True)):
                for k, (a, b) in enumerate(zip(x, y, strict=True)):
                    same(a, b, f"env {i}, step {t}, item {k}")
                games += int("game" in y[4])
        assert games > 0


def test_uncommon_sends_change_nothing_and_take_the_general_path():
    with make_vec("breakout", 3, num_workers=1, batch_size=1) as envs:
        envs.reset(seed=0)
        fast = envs._fast
        envs.send(np.array([1], np.int64), np.array([0], np.int64))
        before = envs._buf.action.copy(), envs.book.get(slice(None)), envs.book.in_flight()
        for actions, ids in [
                (np.zeros(2, np.int64), np.array([1, 1], np.int64)),  # repeated
                (np.zeros(1, np.int64), np.array([0], np.int64)),  # in flight
                (np.zeros(2, np.int64), np.array([1, 0], np.int64)),  # one in flight
                (np.zeros(1, np.int64), np.array([3], np.int64)),  # out of range
                (np.array([2, 4], np.int64), np.array([1, 2], np.int64)),  # action out of range
                (np.zeros(2, np.int64), np.array([1, 2], np.int32)),  # another dtype
                (np.zeros(2, np.int32), np.array([1, 2], np.int64)),
                (np.zeros(3, np.int64), np.array([1, 2], np.int64)),  # lengths differ
                (np.zeros(2, np.int64), [1, 2])]:
            assert fast.write_send(actions, ids) is None
            assert np.array_equal(envs._buf.action, before[0])
            assert all(np.array_equal(a, b)
                       for a, b in zip(envs.book.get(slice(None)), before[1], strict=True))
            assert envs.book.in_flight() == before[2]
        with pytest.raises(ValueError, match="must not repeat"):
            envs.send(np.zeros(2, np.int64), np.array([1, 1], np.int64))
        with pytest.raises(AlreadyPendingCallError):
            envs.send(np.zeros(2, np.int64), np.array([1, 0], np.int64))
        with pytest.raises(ValueError, match=r"actions\[1\] = 4"):
            envs.send(np.array([2, 4], np.int64), np.array([1, 2], np.int64))
        envs.send(np.zeros(2, np.int64), [1, 2])  # converted by the general path
        assert sorted(int(envs.recv()[4]["env_id"][0]) for _ in range(3)) == [0, 1, 2]
