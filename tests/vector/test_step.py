"""The step (``fastatari/vector/_step.pyx``) takes the calls whose actions it can check itself
in one compiled call, and gives what its lane for the front's checks gives: the same
observations, rewards, flags and batched info, step for step (each env's own steps, for send
and recv), through episode ends, autoresets, finished games and life losses, in every autoreset
mode, with copies or views. That lane: the same env made with FASTATARI_CHECKED_CALLS=1, which
sends every call through the front's checks. (gymnasium's own vector envs are the reference of
both: tests/vector/test_env.py, test_gymnasium_contract.py.)"""
from __future__ import annotations

import contextlib
import copy
import weakref
from unittest import mock

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError

from fastatari.vector import make_vec
from fastatari.vector.plan import VectorPlan

# short games with sticky actions: episodes, games and autoresets within a few hundred steps
SHORT = dict(max_num_frames_per_episode=300, num_workers=2)


def checked_lane(*args, **kwargs):
    """``make_vec(*args, **kwargs)`` with every call through the front's checks."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FASTATARI_CHECKED_CALLS", "1")
        return make_vec(*args, **kwargs)


@contextlib.contextmanager
def checks_of(envs):
    """The action counts the front checked for ``envs`` while inside (its checked lane)."""
    seen = []
    check = VectorPlan.check_actions

    def counted(plan, actions, count):
        if plan is envs.plan:
            seen.append(count)
        return check(plan, actions, count)

    with mock.patch.object(VectorPlan, "check_actions", counted):
        yield seen


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
def test_the_compiled_step_gives_the_checked_lanes_results(kwargs):
    kwargs = dict(kwargs)
    game = kwargs.pop("game", "breakout")
    with make_vec(game, 4, **SHORT, **kwargs) as compiled, \
            checked_lane(game, 4, **SHORT, **kwargs) as checked:
        compiled.reset(seed=5)
        checked.reset(seed=5)
        actions = np.random.default_rng(1).integers(0, compiled.single_action_space.n, (400, 4))
        games = 0
        with checks_of(compiled) as compiled_checks, checks_of(checked) as lane_checks:
            for t, a in enumerate(actions):
                # the lane's actions as PufferLib gives them (int32): converted there
                ours, theirs = compiled.step(a), checked.step(a.astype(np.int32))
                for k, (x, y) in enumerate(zip(ours, theirs, strict=True)):
                    same(x, y, f"step {t}, item {k}")
                games += int("game" in theirs[4])
        assert games > 0  # finished games went through the compiled path's statistics
        assert not compiled_checks  # every step was one compiled call
        assert len(lane_checks) == len(actions)


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


def test_other_actions_take_the_checked_lane_and_its_errors():
    with make_vec("breakout", 2, num_workers=1) as envs:
        envs.reset(seed=0)
        with checks_of(envs) as checks:
            envs.step(np.zeros(2, np.int64))
            assert checks == []
            for other in (np.zeros(2, np.int32), [0, 0], np.zeros(3, np.int64),
                          np.array([0, 4]), np.array([-1, 0])):
                with contextlib.suppress(ValueError):
                    envs.step(other)
            assert checks == [2] * 5
        envs.step(np.zeros(2, np.int32))  # converted by the lane
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
def test_the_compiled_send_and_recv_give_the_checked_lanes_results(kwargs):
    kwargs = dict(kwargs)
    game = kwargs.pop("game", "breakout")
    with make_vec(game, 4, batch_size=2, **SHORT, **kwargs) as compiled, \
            checked_lane(game, 4, batch_size=2, **SHORT, **kwargs) as checked:
        compiled.reset(seed=5)
        checked.reset(seed=5)
        actions = np.random.default_rng(2).integers(0, compiled.single_action_space.n, (300, 4))
        with checks_of(compiled) as compiled_checks:
            ours = async_run(compiled, actions, 2)
        theirs = async_run(checked, actions, 2)
        assert not compiled_checks  # every send was one compiled call
        games = 0
        for i in range(4):
            for t, (x, y) in enumerate(zip(ours[i], theirs[i], strict=True)):
                for k, (a, b) in enumerate(zip(x, y, strict=True)):
                    same(a, b, f"env {i}, step {t}, item {k}")
                games += int("game" in y[4])
        assert games > 0


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(episodic_life=True, clip_rewards=True, ram_info=True),
    dict(life_loss_info=True),
    dict(autoreset_mode="same_step"),
    dict(game=["breakout", "pong", "breakout", "pong", "breakout", "pong"],
         full_action_space=True),
], ids=["default", "episodic-clip-ram", "life-loss-info", "same-step", "two-games"])
def test_batches_the_workers_write_in_place_are_each_envs_steps(kwargs):
    """recv batches are written by the workers into shared batch slots (the trainer copies
    only rows whose env took its ticket before the slot opened, and gathers a batch whose
    slot was held): each env's rows are its synchronous steps', and a batch the caller holds
    (every third, kept as returned) is never written over."""
    kwargs = dict(kwargs)
    game = kwargs.pop("game", "breakout")
    n, batch, steps = 6, 2, 150
    with make_vec(game, n, batch_size=batch, **SHORT, **kwargs) as envs, \
            make_vec(game, n, **SHORT, **kwargs) as sync:
        envs.reset(seed=5)
        sync.reset(seed=5)
        actions = np.random.default_rng(3).integers(0, envs.single_action_space.n, (steps, n))
        theirs = [[] for _ in range(n)]
        for a in actions:
            obs, reward, terminated, truncated, info = sync.step(a)
            for i in range(n):
                theirs[i].append((obs[i].copy(), reward[i], terminated[i], truncated[i],
                                  copy.deepcopy(env_rows(info, i))))
        t = np.zeros(n, int)
        ours = [[] for _ in range(n)]
        held = []  # (the batch as returned, its rows as copied then, recvs since)
        envs.send(actions[0])
        recvs = 0
        while envs.book.in_flight():
            result = envs.recv()
            recvs += 1
            obs, reward, terminated, truncated, info = result
            rows = []
            for j, i in enumerate(info["env_id"].tolist()):
                rows.append((obs[j].copy(), reward[j], terminated[j], truncated[j],
                             copy.deepcopy(env_rows(info, j))))
                ours[i].append(rows[-1])
                t[i] += 1
            if recvs % 7 == 0:  # held for five more recvs, then checked unchanged
                held.append((result, copy.deepcopy(rows), recvs))
            ids = info["env_id"][t[info["env_id"]] < steps]
            if ids.size:
                envs.send(actions[t[ids], ids], env_ids=ids)
            del result, obs, reward, terminated, truncated, info
            while held and (held[0][2] + 5 <= recvs or not envs.book.in_flight()):
                (obs, reward, terminated, truncated, info), rows, _ = held.pop(0)
                for j, row in enumerate(rows):
                    now = (obs[j], reward[j], terminated[j], truncated[j], env_rows(info, j))
                    for m, (a, b) in enumerate(zip(now, row, strict=True)):
                        same(a, b, f"held batch, row {j}, item {m}")
                del obs, reward, terminated, truncated, info
        if envs.executor.transport is not None:  # (the portable waits' pool gathers them)
            assert envs._stepper.batches_in_place > recvs // 2  # most batches in place
        for i in range(n):
            for k, (x, y) in enumerate(zip(ours[i], theirs[i], strict=True)):
                for m, (a, b) in enumerate(zip(x, y, strict=True)):
                    same(a, b, f"env {i}, step {k}, item {m}")


def test_other_sends_change_nothing_until_checked():
    """A send the compiled step cannot take as it is goes through the front's checks: refused
    with their errors, having changed nothing (the actions written, the envs' book), or
    converted and sent."""
    with make_vec("breakout", 3, num_workers=1, batch_size=1) as envs:
        envs.reset(seed=0)
        envs.send(np.array([1], np.int64), np.array([0], np.int64))
        action = envs.executor.buffers.action
        before = action.copy(), envs.book.get(slice(None)), envs.book.in_flight()
        for actions, ids, error in [
                (np.zeros(2, np.int64), np.array([1, 1], np.int64), "must not repeat"),
                (np.zeros(1, np.int64), np.array([0], np.int64), "already has a step"),
                (np.zeros(2, np.int64), np.array([1, 0], np.int64), "already has a step"),
                (np.zeros(1, np.int64), np.array([3], np.int64), r"must be in \[0, 3\)"),
                (np.array([2, 4], np.int64), np.array([1, 2], np.int64), r"actions\[1\] = 4"),
                (np.zeros(3, np.int64), np.array([1, 2], np.int64), "shape|2 actions")]:
            with pytest.raises((ValueError, AlreadyPendingCallError), match=error):
                envs.send(actions, ids)
            assert np.array_equal(action, before[0])
            assert all(np.array_equal(a, b)
                       for a, b in zip(envs.book.get(slice(None)), before[1], strict=True))
            assert envs.book.in_flight() == before[2]
        with checks_of(envs) as checks:
            envs.send(np.zeros(2, np.int32), np.array([1, 2], np.int32))  # converted
        assert checks == [2]
        assert sorted(int(envs.recv()[4]["env_id"][0]) for _ in range(3)) == [0, 1, 2]
        envs.send(np.zeros(2, np.int64), [1, 2])  # a list of ids
        assert sorted(int(envs.recv()[4]["env_id"][0]) for _ in range(2)) == [1, 2]
