"""Snapshots: ``clone``/``restore`` of any env of a vector env (and of an ``AtariEnv``), and
``state_dict``/``load_state_dict`` of a whole one, exact: after a restore every action sequence
gives byte-identical observations, rewards, flags and infos to the run that was cloned."""
from __future__ import annotations

import dataclasses
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import warnings
import zlib

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, ResetNeeded

import fastatari
from fastatari.core.snapshot import EnvSnapshot
from fastatari.vector import WorkerError

# Sticky actions on (the default 0.25), and short episodes: autoresets happen in every run.
SHORT = dict(max_num_frames_per_episode=400)
INFO_KEYS = ("lives", "episode_frame_number", "frame_number")


def play(envs, actions, disabled=False):
    """Step ``envs`` through ``actions`` (one row per step); every result, copied. With
    autoreset disabled, ended envs are reset (unseeded) after each step."""
    out = []
    for row in actions:
        obs, reward, terminated, truncated, info = envs.step(row)
        out.append((obs.copy(), reward.copy(), terminated.copy(), truncated.copy(),
                    *(np.asarray(info[k]).copy() for k in INFO_KEYS),
                    *(np.asarray(info["final_obs"][i]) for i in np.flatnonzero(
                        info.get("_final_obs", np.zeros(0, bool))))))
        ended = terminated | truncated
        if disabled and ended.any():
            out.append(envs.reset(options={"reset_mask": ended})[0].copy())
    return out


def assert_same_runs(ours, theirs):
    assert len(ours) == len(theirs)
    for t, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f"reset after step {t}")
            continue
        assert len(a) == len(b), t
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}, field {k}")


def run_until_an_episode_ends(envs, rng, at_least=60):
    """Random steps (at least ``at_least``) until some env's last step ended its episode:
    a clone then holds an ended episode (with a pending autoreset, in next-step mode)."""
    n = envs.num_envs
    for t in range(5000):
        _, _, terminated, truncated, _ = envs.step(rng.integers(0, 4, n))
        if t >= at_least and (terminated | truncated).any():
            return terminated | truncated
    raise AssertionError("no episode ended")


# -- AtariEnv ------------------------------------------------------------------------------------
def test_atari_env_restores_exactly_here_and_in_another_env():
    env = fastatari.AtariEnv("breakout", **SHORT)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(90):
        env.step(int(rng.integers(4)))
    snap = pickle.loads(pickle.dumps(env.clone()))
    actions = rng.integers(0, 4, 300)

    def run(e):
        out = []
        for a in actions:
            obs, reward, terminated, truncated, info = e.step(int(a))
            out.append((obs, reward, terminated, truncated,
                        *(info[k] for k in INFO_KEYS)))
            if terminated or truncated:  # through episode ends: the no-op draws too
                out.append(e.reset()[0])
        return out

    first = run(env)
    assert any(isinstance(x, np.ndarray) for x in first)  # an episode ended in the run
    env.restore(snap)
    assert_same_runs(run(env), first)
    other = fastatari.AtariEnv("breakout", **SHORT)
    other.reset(seed=77)
    other.restore(snap)
    assert_same_runs(run(other), first)
    env.close()
    other.close()


# -- the vector env ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_vector_restore_is_exact_with_pending_autoresets(mode):
    n = 4
    disabled = mode == "disabled"
    with fastatari.make_vec("breakout", n, num_workers=2, autoreset_mode=mode, **SHORT) as envs:
        envs.reset(seed=3)
        rng = np.random.default_rng(1)
        ended = run_until_an_episode_ends(envs, rng)
        snaps = envs.clone()
        if mode != "same_step":  # same-step envs reset within the step: never pending
            assert [s.ended for s in snaps] == ended.tolist()
        pending = [s.state.pending is not None for s in snaps]
        assert pending == (ended.tolist() if mode == "next_step" else [False] * n)
        if disabled:  # ended envs wait for the caller's reset
            envs.reset(options={"reset_mask": ended})
            snaps_after_reset = envs.clone()
        actions = rng.integers(0, 4, (150, n))
        first = play(envs, actions, disabled)
        envs.restore(snaps)
        if disabled:
            envs.reset(options={"reset_mask": ended})
            envs.restore(snaps_after_reset)
        assert_same_runs(play(envs, actions, disabled), first)


def test_state_dict_round_trip_in_a_new_process_with_other_workers(tmp_path):
    n, actions = 5, np.random.default_rng(2).integers(0, 4, (120, 5))
    for mode in ("next_step", "same_step"):
        with fastatari.make_vec("breakout", n, num_workers=2, autoreset_mode=mode,
                                **SHORT) as envs:
            envs.reset(seed=4)
            run_until_an_episode_ends(envs, np.random.default_rng(3))
            (tmp_path / f"{mode}.pkl").write_bytes(pickle.dumps(envs.state_dict()))
            expected = play(envs, actions)
        (tmp_path / "actions.npy").write_bytes(pickle.dumps(actions))
        script = textwrap.dedent(f"""
            import pickle, sys
            sys.path.insert(0, {os.path.dirname(__file__)!r})
            import fastatari
            from test_snapshots import play, SHORT
            state = pickle.load(open("{mode}.pkl", "rb"))
            actions = pickle.load(open("actions.npy", "rb"))
            with fastatari.make_vec("breakout", {n}, num_workers=3, autoreset_mode="{mode}",
                                    **SHORT) as envs:
                envs.load_state_dict(state)  # no reset: the state is the start
                pickle.dump(play(envs, actions), open("out.pkl", "wb"))
        """)
        result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert_same_runs(pickle.loads((tmp_path / "out.pkl").read_bytes()), expected)


def test_restore_a_subset_while_other_envs_are_in_flight():
    n = 4
    with fastatari.make_vec("breakout", n, num_workers=2, **SHORT) as envs, \
            fastatari.make_vec("breakout", n, num_workers=2, **SHORT) as twin:
        for e in (envs, twin):
            e.reset(seed=5)
        rng = np.random.default_rng(4)
        for _ in range(40):
            a = rng.integers(0, 4, n)
            envs.step(a)
            twin.step(a)
        snaps = twin.clone([2, 3])
        twin_actions = rng.integers(0, 4, (30, 2))
        expected = [twin.step(np.r_[np.zeros(2, int), a])[0][2:].copy() for a in twin_actions]
        envs.send(np.zeros(2, int), env_ids=[0, 1])  # in flight while 2 and 3 are restored
        envs.restore(snaps, env_ids=[2, 3])
        with pytest.raises(AlreadyPendingCallError):
            envs.restore(snaps, env_ids=[0, 1])  # not idle
        envs.recv()
        got = [envs.step(np.r_[np.zeros(2, int), a])[0][2:].copy() for a in twin_actions]
        assert_same_runs(got, expected)


def test_restore_into_a_restarted_workers_envs_and_with_copy_false():
    with fastatari.make_vec("breakout", 4, num_workers=2, copy=False, **SHORT) as envs:
        envs.reset(seed=6)
        for _ in range(20):
            envs.step(np.ones(4, int))
        snaps = envs.clone()
        actions = np.random.default_rng(5).integers(0, 4, (40, 4))
        expected = play(envs, actions)
        os.kill(envs.worker_pids[0], signal.SIGKILL)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            envs.step(np.zeros(4, int))  # the worker is replaced, its envs reset
        assert envs.worker_restarts == 1
        obs_view = envs.step(np.zeros(4, int))[0]
        envs.restore(snaps)
        np.testing.assert_array_equal(obs_view, np.stack([
            fastatari.core.snapshot.unpack_frames(s.state.frames, (4, 84, 84),
                                                  (210, 160))[0] for s in snaps]))
        assert_same_runs(play(envs, actions), expected)


def test_a_multi_game_pool_restores_each_game_into_its_own_kind():
    games = ["pong", "breakout", "pong"]
    with fastatari.make_vec(games, 3, full_action_space=True, num_workers=2) as envs:
        envs.reset(seed=7)
        for _ in range(30):
            envs.step(np.zeros(3, int))
        snaps = envs.clone()
        with pytest.raises(ValueError, match="snapshot of 'pong' cannot restore a 'breakout'"):
            envs.restore([snaps[0]], env_ids=[1])
        envs.restore([snaps[0], snaps[2]], env_ids=[2, 0])  # the two pongs swap
        obs = envs.step(np.zeros(3, int))[0]
        single = fastatari.AtariEnv("pong", full_action_space=True)
        single.reset(seed=0)
        single.restore(snaps[2])
        np.testing.assert_array_equal(obs[0], single.step(0)[0])
        single.close()


def assert_single_envs_agree(env, twin) -> None:
    """``env`` (after a refused restore) goes on as ``twin``, step for step; both closed."""
    for action in np.random.default_rng(7).integers(0, 4, 30).tolist():
        ours, theirs = env.step(action), twin.step(action)
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[1:4] == theirs[1:4]
    env.close()
    twin.close()


def bad_snapshots(snap: EnvSnapshot):
    emulator = bytearray(snap.state.emulator)
    emulator[100] ^= 0xFF
    damaged = dataclasses.replace(snap, state=dataclasses.replace(
        snap.state, emulator=bytes(emulator)), digest=snap.digest)
    def crafted(**changes):
        """Content a worker cannot load, with its digest recomputed: only the content check
        can find it."""
        return dataclasses.replace(snap, state=dataclasses.replace(snap.state, **changes),
                                   digest=b"")

    state = snap.state
    return {
        "frames not zlib": (crafted(frames=b"not zlib"), "frames are damaged"),
        "frames truncated": (crafted(frames=state.frames[:-9]), "frames are damaged"),
        "frames too few": (crafted(frames=zlib.compress(b"\0" * 99)), "frames hold 99 bytes"),
        "emulator truncated": (crafted(emulator=state.emulator[:200]), "ALE can read"),
        "emulator empty": (crafted(emulator=b""), "ALE can read"),
        "np_random": (crafted(np_random={"bit_generator": "PCG64", "state": 1}), "PCG64"),
        "episode": (crafted(episode=(1.0, 2)), "episode"),
        "held": (crafted(held=(99, 1.0), held_frames=1), "held"),
        "lives": (crafted(lives="x"), "lives"),
        "other game": (dataclasses.replace(snap, game="pong", digest=b""), "'pong'"),
        "other options": (dataclasses.replace(snap, options=snap.options.replace(
            frame_skip=3), digest=b""), "other options"),
        "damaged": (damaged, "damaged"),
        "foreign": ({"state": 1}, "not a fastatari snapshot"),
        "other ale-py": (dataclasses.replace(snap, ale_py_version="0.0.1", digest=b""),
                         "ale-py 0.0.1"),
    }


@pytest.mark.parametrize("case", ["other game", "other options", "damaged", "foreign",
                                  "other ale-py", "frames not zlib", "frames truncated",
                                  "frames too few", "emulator truncated", "emulator empty",
                                  "np_random", "episode", "held", "lives"])
def test_bad_snapshots_are_refused_with_every_env_intact(case):
    """Refused whole before any env changes, in the trainer: no worker is asked (none raises,
    none is restarted), and the AtariEnv is not half-restored."""
    with fastatari.make_vec("breakout", 2, num_workers=1, **SHORT) as envs, \
            fastatari.make_vec("breakout", 2, num_workers=1, **SHORT) as twin:
        for e in (envs, twin):
            e.reset(seed=8)
            e.step(np.ones(2, int))
        good = envs.clone()
        bad, match = bad_snapshots(good[1])[case]
        with pytest.raises(ValueError, match=match):
            envs.restore([good[0], bad])  # the good one is not restored either
        assert envs.worker_restarts == 0
        actions = np.random.default_rng(6).integers(0, 4, (30, 2))
        assert_same_runs(play(envs, actions), play(twin, actions))
    env, twin_env = (fastatari.AtariEnv("breakout", **SHORT) for _ in range(2))
    for e in (env, twin_env):
        e.reset(seed=0)
        e.step(1)
    with pytest.raises(ValueError, match=match):
        env.restore(bad)
    assert_single_envs_agree(env, twin_env)


def test_an_emulator_state_ale_cannot_load_is_refused_and_the_env_intact():
    """Emulator bytes ALE parses but cannot load (a part named as another's, its digest
    recomputed) raise ale-py's untranslated SystemError halfway through the load: AtariEnv
    refuses them with ValueError and goes on as its twin. (A vector env's worker refuses them
    the same way, then is replaced, as after any exception in a command: WorkerError.)"""
    env, twin = (fastatari.AtariEnv("breakout", **SHORT) for _ in range(2))
    for e in (env, twin):
        e.reset(seed=0)
        for _ in range(10):
            e.step(1)
    snap = env.clone()
    assert snap.state.emulator.count(b"M6532") == 1
    forged = dataclasses.replace(snap, state=dataclasses.replace(
        snap.state, emulator=snap.state.emulator.replace(b"M6532", b"X6532")), digest=b"")
    with pytest.raises(ValueError, match="not one ALE can load"):
        env.restore(forged)
    assert_single_envs_agree(env, twin)


FAULTY_GAMES = """
import os

from fastatari.core.game import AtariGame


class DiesOnceInSnapshot(AtariGame):
    # the first snapshot taken in any process kills that process
    def snapshot(self):
        try:
            os.close(os.open(os.environ["FAULT_MARK"], os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return super().snapshot()
        os._exit(3)


class RaisesInRestore(AtariGame):
    def restore(self, state):
        raise RuntimeError("this game cannot restore")


class RaisesOnceInRestore(AtariGame):
    # the first restore in any process raises; every other restores
    def restore(self, state):
        try:
            os.close(os.open(os.environ["FAULT_MARK"], os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return super().restore(state)
        raise RuntimeError("this game cannot restore")
"""


def faulty_pool(tmp_path, monkeypatch, factory):
    from fastatari.vector import AtariVectorEnv, plan_vec
    from fastatari.vector.pool import WorkerPool

    (tmp_path / "faulty_games.py").write_text(FAULTY_GAMES)
    monkeypatch.syspath_prepend(str(tmp_path))  # a worker gets the trainer's sys.path
    monkeypatch.setenv("FAULT_MARK", str(tmp_path / "fault.mark"))
    plan = plan_vec("breakout", 4, num_workers=2, **SHORT)
    return AtariVectorEnv(plan, WorkerPool(plan, f"faulty_games:{factory}"))


def test_clone_while_a_worker_dies_raises_and_reports_the_restart(tmp_path, monkeypatch):
    """No snapshot of a game the caller never had: ``clone`` raises WorkerError, the dead
    worker's envs report their restart at the next step, the other worker's go on intact."""
    with faulty_pool(tmp_path, monkeypatch, "DiesOnceInSnapshot") as envs, \
            fastatari.make_vec("breakout", 4, num_workers=2, **SHORT) as twin:
        for e in (envs, twin):
            e.reset(seed=3)
            e.step(np.ones(4, int))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(WorkerError, match="died during clone"):
                envs.clone()
        assert envs.worker_restarts == 1
        _, _, _, truncated, info = envs.step(np.ones(4, int))
        twin.step(np.ones(4, int))
        dead = info["worker_restarted"]  # whichever worker took the first snapshot
        assert dead.tolist() in ([True, True, False, False], [False, False, True, True])
        assert truncated[dead].all()
        # the other worker's envs went on as the twin's
        np.testing.assert_array_equal(envs.step(np.ones(4, int))[0][~dead],
                                      twin.step(np.ones(4, int))[0][~dead])
        assert len(envs.state_dict()["envs"]) == 4  # the fault was once: snapshots work


def test_a_restore_a_worker_raises_on_is_not_retried(tmp_path, monkeypatch):
    """A deterministic failure is met once: WorkerError with the worker's traceback, one
    restart, the vector env still open and the other worker's envs untouched."""
    with faulty_pool(tmp_path, monkeypatch, "RaisesInRestore") as envs:
        envs.reset(seed=3)
        snaps = envs.clone()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(WorkerError,
                               match="(?s)raised an exception in restore.*cannot restore"):
                envs.restore(snaps[:1], env_ids=[0])
        assert envs.worker_restarts == 1 and not envs.closed
        _, _, _, truncated, info = envs.step(np.ones(4, int))
        np.testing.assert_array_equal(info["worker_restarted"], [True, True, False, False])


def test_misuse_gets_clear_errors():
    with fastatari.make_vec("breakout", 2, num_workers=1, autoreset_mode="same_step") as envs:
        with pytest.raises(ResetNeeded):
            envs.clone()
        envs.reset(seed=0)
        snaps = envs.clone()
        with pytest.raises(ValueError, match="1 snapshots for 2 envs"):
            envs.restore(snaps[:1])
        with pytest.raises(ValueError, match="list of 2 EnvSnapshot"):
            envs.restore(snaps[0])
        ended = dataclasses.replace(snaps[0], ended=True, digest=b"")
        with pytest.raises(ValueError, match="same-step"):
            envs.restore([ended], env_ids=[0])
        with pytest.raises(ValueError, match="state_dict of 3 envs"):
            envs.load_state_dict({"format": 1, "num_envs": 3, "envs": snaps})
    with fastatari.make_vec("breakout", 2, num_workers=1) as envs:
        with pytest.raises(ResetNeeded):
            envs.restore(snaps[:1], env_ids=[0])  # before the first reset: all or none
        envs.restore(snaps)  # all: no reset needed
        envs.step(np.zeros(2, int))


# -- every game -----------------------------------------------------------------------------------
SUITE_SCRIPT = """
import pickle, sys, warnings
sys.path.insert(0, {tests!r})
import fastatari
from test_snapshots import play
games, state, actions = pickle.load(open("state.pkl", "rb"))
with fastatari.make_vec(games, len(games), full_action_space=True, num_workers=3) as envs:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the games INEXACT_RESTORE lists: checked apart
        envs.load_state_dict(state)
    pickle.dump(play(envs, actions), open("out.pkl", "wb"))
"""


def games_that_differ(games, ours, theirs):
    """The games whose env's results differ anywhere between two runs of ``play``."""
    assert len(ours) == len(theirs)
    n = len(games)
    return sorted({games[i] for i in range(n)
                   if not all(np.array_equal(a[k][i], b[k][i])
                              for a, b in zip(ours, theirs, strict=True)
                              for k in range(len(a)) if np.ndim(a[k]) and len(a[k]) == n)})


def check_suite_restores_exactly(games, tmp_path):
    """Each game cloned at a random point of a random run (sticky actions on), K steps, restored,
    the same K steps: identical, but for the games ALE does not restore exactly (which warn);
    and restored in a fresh process with another num_workers."""
    from fastatari.core.snapshot import INEXACT_RESTORE

    n = len(games)
    rng = np.random.default_rng(n)
    with fastatari.make_vec(games, n, full_action_space=True, num_workers=2) as envs:
        envs.reset(seed=n)
        for _ in range(int(rng.integers(20, 80))):
            envs.step(rng.integers(0, 18, n))
        state = envs.state_dict()
        actions = rng.integers(0, 18, (40, n))
        first = play(envs, actions)
        inexact = sorted(set(games) & set(INEXACT_RESTORE))
        if inexact:
            with pytest.warns(UserWarning, match="restore is not exact") as caught:
                envs.load_state_dict(state)
            assert sorted({g for g in inexact if any(g in str(w.message) for w in caught)}) \
                == inexact
        else:
            envs.load_state_dict(state)
        assert set(games_that_differ(games, play(envs, actions), first)) <= set(inexact)
    (tmp_path / "state.pkl").write_bytes(pickle.dumps((games, state, actions)))
    result = subprocess.run([sys.executable, "-c", SUITE_SCRIPT.format(
        tests=os.path.dirname(__file__))], cwd=tmp_path, capture_output=True, text=True,
        timeout=900)
    assert result.returncode == 0, result.stderr
    again = pickle.loads((tmp_path / "out.pkl").read_bytes())
    assert set(games_that_differ(games, again, first)) <= set(inexact)
    return games_that_differ(games, again, first)


def test_every_atari_57_game_restores_exactly_here_and_in_a_new_process(tmp_path):
    from fastatari.evaluation.suites import ATARI_57

    differ = check_suite_restores_exactly(list(ATARI_57), tmp_path)
    assert differ == ["qbert"]  # ALE #732: not exact restored into a fresh emulator


@pytest.mark.slow
def test_every_rom_ale_py_ships_restores_exactly_or_is_listed(tmp_path):
    from fastatari.core.games import game_ids

    check_suite_restores_exactly(game_ids(), tmp_path)


def test_a_restore_one_worker_raises_on_still_restores_the_others(tmp_path, monkeypatch):
    """The envs of the worker that did not raise hold their snapshots and go on exactly as
    the cloned envs would; the raising worker's envs start new games, reported once."""
    with faulty_pool(tmp_path, monkeypatch, "RaisesOnceInRestore") as envs:
        envs.reset(seed=4)
        for _ in range(10):
            envs.step(np.ones(4, int))
        snaps = envs.clone()
        actions = np.random.default_rng(3).integers(0, 4, (30, 4))
        expected = [envs.step(a)[0].copy() for a in actions]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(WorkerError, match="raised an exception in restore"):
                envs.restore(snaps)
        first = envs.step(actions[0])
        dead = first[4]["worker_restarted"]
        assert dead.tolist() in ([True, True, False, False], [False, False, True, True])
        got = [first[0]] + [envs.step(a)[0] for a in actions[1:]]
        for t, (ours, theirs) in enumerate(zip(got, expected, strict=True)):
            np.testing.assert_array_equal(ours[~dead], theirs[~dead], err_msg=f"step {t}")
