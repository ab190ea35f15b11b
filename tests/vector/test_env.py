"""AtariVectorEnv: parity with gymnasium's vector env of the reference pipeline, autoreset modes,
async batches, crash recovery, bad input and cleanup."""
from __future__ import annotations

import dataclasses
import os
import signal
import time

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from ale_py.registration import rom_id_to_name
from gymnasium.error import (
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    NoAsyncCallError,
    ResetNeeded,
)
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

import fastatari  # noqa: F401 - registers fastatari/<Game>-v5
from fastatari import AtariEnv
from fastatari.vector import AtariVectorEnv, make_vec, messages
from fastatari.vector.plan import VectorPlan

from .._processes import alive, blocks_held, linux_only, shm_segments

gym.register_envs(ale_py)

FAST = dict(repeat_action_probability=0.0, max_num_frames_per_episode=1200)


def reference_vec(game_id: str, n: int, mode=AutoresetMode.NEXT_STEP, stack=4, **kw):
    """gymnasium's own vector env over the reference pipeline."""
    frames = kw.pop("max_num_frames_per_episode", 108_000)
    p = kw.pop("repeat_action_probability", 0.25)

    def make():
        base = gym.make(game_id, frameskip=1, repeat_action_probability=p,
                        max_num_frames_per_episode=frames)
        return FrameStackObservation(AtariPreprocessing(base, **kw), stack)

    return SyncVectorEnv([make for _ in range(n)], autoreset_mode=mode)




def clean_run(n, seed, actions, num_workers=1):
    """Results of an undisturbed run: one (obs, reward, terminated, truncated, info) per step."""
    with make_vec("breakout", n, num_workers=num_workers, **FAST) as envs:
        envs.reset(seed=seed)
        return [envs.step(a) for a in actions]


def run_both(ours, ref, steps, seed, rng):
    obs, _ = ours.reset(seed=seed)
    ref_obs, _ = ref.reset(seed=seed)
    assert np.array_equal(obs, ref_obs)
    ends = 0
    for t in range(steps):
        actions = rng.integers(0, ours.single_action_space.n, ours.num_envs)
        obs, rew, term, trunc, info = ours.step(actions)
        r_obs, r_rew, r_term, r_trunc, r_info = ref.step(actions)
        assert np.array_equal(obs, r_obs), f"step {t}"
        assert np.array_equal(rew, r_rew), f"step {t}"
        assert np.array_equal(term, r_term), f"step {t}"
        assert np.array_equal(trunc, r_trunc), f"step {t}"
        assert np.array_equal(info["lives"], r_info["lives"]), f"step {t}"
        ends += int((term | trunc).sum())
    return ends


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_parity_with_gymnasium_vector_env(num_workers):
    n = 3
    rng = np.random.default_rng(num_workers)
    with make_vec("breakout", n, num_workers=num_workers, **FAST) as ours:
        ref = reference_vec("ALE/Breakout-v5", n, **FAST)
        ends = run_both(ours, ref, 420, seed=11, rng=rng)
        # reset() without a seed continues each env's generators
        ends += run_both(ours, ref, 60, seed=None, rng=rng)
        ref.close()
    assert ends >= 3  # several episode ends (truncations at 1,200 frames) crossed


@pytest.mark.parametrize("game,options", [
    ("space_invaders", dict(terminal_on_life_loss=True)),
    ("boxing", dict(frame_skip=3, noop_max=0, screen_size=(64, 48))),
    ("freeway", dict(repeat_action_probability=0.25, grayscale_obs=False, stack=2)),
])
def test_parity_games_and_options(game, options):
    options = dict(options)
    stack = options.pop("stack", 4)
    kw = dict(FAST, **options)
    rng = np.random.default_rng(5)
    name = rom_id_to_name(game)
    with make_vec(game, 2, num_workers=2, stack_size=stack, **kw) as ours:
        ref_kw = {k: v for k, v in kw.items()}
        ref = reference_vec(f"ALE/{name}-v5", 2, stack=stack, **ref_kw)
        run_both(ours, ref, 250, seed=3, rng=rng)
        ref.close()


def test_reset_after_an_episode_end_equals_gymnasium():
    """A worker resets an ended env in advance (next-step mode) while the trainer thinks; a
    reset() that follows must give exactly gymnasium's: an unseeded one takes the advance reset,
    a seeded one discards it, a reset_mask that names the ended env too."""
    n = 2
    rng = np.random.default_rng(4)
    kw = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400)

    def until_an_end(ours, ref):
        for t in range(400):
            a = rng.integers(0, 4, n)
            obs, _, term, trunc, _ = ours.step(a)
            r_obs, *_ = ref.step(a)
            assert np.array_equal(obs, r_obs), f"step {t}"
            if (term | trunc).any():
                return term | trunc
        raise AssertionError("no episode ended")

    with make_vec("breakout", n, num_workers=2, **kw) as ours:
        ref = reference_vec("ALE/Breakout-v5", n, **kw)
        assert np.array_equal(ours.reset(seed=20)[0], ref.reset(seed=20)[0])
        for seed in (None, 21, "mask"):
            ended = until_an_end(ours, ref)
            options = {"reset_mask": ended} if seed == "mask" else None
            seed = None if seed == "mask" else seed
            obs, _ = ours.reset(seed=seed, options=options)
            r_obs, _ = ref.reset(seed=seed, options=options)
            assert np.array_equal(obs, r_obs)
            for t in range(20):
                a = rng.integers(0, 4, n)
                assert np.array_equal(ours.step(a)[0], ref.step(a)[0]), f"after reset, {t}"
        ref.close()


def test_seed_list_and_reset_mask():
    with make_vec("breakout", 3, num_workers=2, **FAST) as envs:
        obs, _ = envs.reset(seed=[5, None, 7])
        ref = reference_vec("ALE/Breakout-v5", 1, **FAST)
        ref_obs, _ = ref.reset(seed=7)
        assert np.array_equal(obs[2], ref_obs[0])
        for _ in range(10):
            envs.step(np.ones(3, np.int64))
        before, *_ = envs.step(np.zeros(3, np.int64))
        mask = np.array([False, True, False])
        obs, info = envs.reset(seed=[None, 7, None], options={"reset_mask": mask})
        assert np.array_equal(obs[1], ref_obs[0])
        assert np.array_equal(obs[0], before[0]) and np.array_equal(obs[2], before[2])
        assert info["_lives"].tolist() == [False, True, False]
        ref.close()


def test_same_step_autoreset_matches_gymnasium():
    n = 2
    rng = np.random.default_rng(9)
    kw = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400)
    with make_vec("breakout", n, num_workers=2, autoreset_mode="same_step", **kw) as ours:
        assert ours.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        ref = reference_vec("ALE/Breakout-v5", n, mode=AutoresetMode.SAME_STEP, **kw)
        ours.reset(seed=1)
        ref.reset(seed=1)
        finals = 0
        for _ in range(240):
            a = rng.integers(0, 4, n)
            obs, rew, term, trunc, info = ours.step(a)
            r_obs, r_rew, r_term, r_trunc, r_info = ref.step(a)
            assert np.array_equal(obs, r_obs)
            assert np.array_equal(term | trunc, r_term | r_trunc)
            if "final_obs" in r_info:
                assert np.array_equal(info["_final_obs"], r_info["_final_obs"])
                for i in np.flatnonzero(r_info["_final_obs"]):
                    assert np.array_equal(info["final_obs"][i], r_info["final_obs"][i])
                    finals += 1
                # gymnasium 1.x batches final_info like info: arrays with `_key` masks
                ours_final, ref_final = info["final_info"], r_info["final_info"]
                assert np.array_equal(info["_final_info"], r_info["_final_info"])
                for key in ("lives", "episode_frame_number", "frame_number"):
                    assert np.array_equal(ours_final[key], ref_final[key]), key
                    assert ours_final[key].dtype == ref_final[key].dtype, key
                    assert np.array_equal(ours_final["_" + key], ref_final["_" + key]), key
            else:
                assert "final_obs" not in info and "final_info" not in info
        assert finals >= 2
        ref.close()


def test_episode_statistics():
    kw = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400)
    with make_vec("breakout", 2, num_workers=1, **kw) as envs:
        envs.reset(seed=0)
        returns = np.zeros(2)
        lengths = np.zeros(2, int)
        seen = 0
        for _ in range(230):
            _, rew, term, trunc, info = envs.step(np.ones(2, np.int64))
            returns += rew
            lengths += 1
            if "game" in info:
                for i in np.flatnonzero(info["_game"]):
                    assert info["game"]["r"][i] == returns[i]
                    assert info["game"]["l"][i] == lengths[i]
                    seen += 1
            done = term | trunc
            # next_step: the following step is the reset step, which counts in no episode
            returns[done] = 0
            lengths[done] = -1
        assert seen >= 2


def test_async_send_recv():
    n = 4
    with make_vec("breakout", n, num_workers=2, batch_size=2, **FAST) as envs:
        envs.reset(seed=0)
        envs.send(np.ones(n, np.int64))
        seen = []
        for _ in range(2):
            obs, rew, term, trunc, info = envs.recv()
            assert obs.shape == (2, 4, 84, 84)
            seen.extend(info["env_id"].tolist())
        assert sorted(seen) == list(range(n))
        # pausing envs: step only env 3 a few times
        for _ in range(3):
            envs.send(np.array([2]), env_ids=[3])
            *_, info = envs.recv()
            assert info["env_id"].tolist() == [3]
        with pytest.raises(NoAsyncCallError, match="recv\\(\\) without send\\(\\)"):
            envs.recv()
        envs.send(np.array([1]), env_ids=[0])
        with pytest.raises(AlreadyPendingCallError, match="already has a step in flight"):
            envs.send(np.array([1]), env_ids=[0])
        envs.recv()


@pytest.mark.parametrize("n,batch_size", [(4, 2), (6, 4)])  # workers answer every 1 or 2 envs
def test_async_results_equal_sync_results(n, batch_size):
    rng = np.random.default_rng(2)
    actions = rng.integers(0, 4, (60, n))
    expected = [result[0] for result in clean_run(n, 4, actions)]
    with make_vec("breakout", n, num_workers=2, batch_size=batch_size, **FAST) as envs:
        envs.reset(seed=4)
        t = np.zeros(n, int)
        envs.send(actions[0])
        done = 0
        while done < 60 * n:
            obs, *_, info = envs.recv()
            assert 1 <= len(info["env_id"]) <= batch_size
            for j, i in enumerate(info["env_id"]):
                assert np.array_equal(obs[j], expected[t[i]][i])
                t[i] += 1
                done += 1
            ids = [i for i in info["env_id"] if t[i] < 60]
            if ids:
                envs.send(np.array([actions[t[i], i] for i in ids]), env_ids=ids)


@pytest.mark.parametrize("autoreset_mode", ["next_step", "same_step"])
def test_frame_serials_say_which_steps_pushed_one_frame(autoreset_mode):
    """frame_serials, per row of a step or a recv: a step that pushed one frame onto the stack
    returned before it goes from that stack's serial to the next; an episode's end (under
    next-step autoreset its reset step; under same-step, the step after it), a reset and a
    restore break the chain; a recv's rows follow its env_id."""
    n = 3
    with make_vec("breakout", n, num_workers=2, batch_size=2, autoreset_mode=autoreset_mode,
                  **dict(FAST, max_num_frames_per_episode=60)) as envs:
        envs.reset(seed=0)
        last_next = envs._buf.obs_serial.copy()  # the stacks reset() returned
        ended = np.zeros(n, bool)
        chains = 0
        for t in range(80):
            if t == 10:
                snapshot = envs.clone([1])
            if t == 30:
                envs.reset()
                ended[:] = False
            if t == 50:
                envs.restore(snapshot, [1])  # its observation is not returned
            *_, terminated, truncated, info = envs.step(np.zeros(n, np.int64))
            serials = envs.frame_serials
            pushed = serials.next_obs == serials.obs + 1
            continued = serials.obs == last_next  # the stack the last step returned
            expected = ~ended if autoreset_mode == "next_step" else np.ones(n, bool)
            expected[1] &= t != 50
            np.testing.assert_array_equal(pushed, expected, err_msg=f"step {t}")
            np.testing.assert_array_equal(continued, ~ended & (t != 30), err_msg=f"step {t}")
            chains += int(pushed.sum())
            ended = terminated | truncated
            last_next = np.where(ended, -10, serials.next_obs)
        assert chains > 150
        envs.send(np.zeros(n, np.int64))
        before = {i: s for i, s in enumerate(envs._buf.obs_serial.copy())}
        got = {}
        while envs.book.in_flight():
            *_, info = envs.recv()
            serials = envs.frame_serials
            for j, i in enumerate(info["env_id"].tolist()):
                got[i] = (serials.obs[j], serials.next_obs[j])
        assert got == {i: (before[i], envs._buf.obs_serial[i]) for i in range(n)}
        assert serials.source == envs.frame_serials.source


def test_slow_trainer_gets_the_same_results():
    """Workers stop spinning when the trainer thinks for long (they sleep in read(2) then), and
    start again when it speeds up: the results never depend on which way a command is caught."""
    n = 4
    actions = np.random.default_rng(5).integers(0, 4, (40, n))
    expected = clean_run(n, 6, actions, num_workers=2)
    with make_vec("breakout", n, num_workers=2, **FAST) as envs:
        envs.reset(seed=6)
        for t, a in enumerate(actions):
            if 10 <= t < 20:
                time.sleep(0.003)  # longer than a worker's spin: after 3 such, it sleeps
            obs, reward, terminated, truncated, _ = envs.step(a)
            assert np.array_equal(obs, expected[t][0]), f"step {t}"
            assert np.array_equal(reward, expected[t][1]), f"step {t}"
            assert np.array_equal(terminated | truncated, expected[t][2] | expected[t][3])


def test_bad_actions_change_nothing():
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 4, (20, 3))
    expected = clean_run(3, 8, actions, num_workers=2)
    with make_vec("breakout", 3, num_workers=2, **FAST) as envs:
        with pytest.raises(ResetNeeded, match="reset\\(\\) before"):
            envs.step(np.zeros(3, np.int64))
        envs.reset(seed=8)
        bad = [
            (None, TypeError, "got None"),
            (np.zeros(2, np.int64), ValueError, "shape \\(3,\\)"),
            (np.zeros((3, 1), np.int64), ValueError, "shape \\(3,\\)"),
            (np.array([0.0, 1.0, 2.0]), TypeError, "integers"),
            (np.array([True, False, True]), TypeError, "integers"),
            (np.array([0, 4, 1]), ValueError, "actions\\[1\\] = 4"),
            (np.array([-1, 0, 0]), ValueError, "Discrete\\(4\\)"),
        ]
        for t, a in enumerate(actions):
            for value, error, match in bad if t % 5 == 0 else []:
                with pytest.raises(error, match=match):
                    envs.step(value)
            obs, rew, term, trunc, _ = envs.step(a)
            assert np.array_equal(obs, expected[t][0])
            assert np.array_equal(rew, expected[t][1])


@linux_only
def test_worker_killed_is_restarted_and_others_lose_nothing():
    n = 4
    rng = np.random.default_rng(1)
    actions = rng.integers(0, 4, (120, n))
    expected = clean_run(n, 2, actions, num_workers=2)
    with make_vec("breakout", n, num_workers=2, max_restarts=5, **FAST) as envs:
        envs.reset(seed=2)
        victim_envs = [2, 3]  # worker 1's block
        kills = 0
        for t, a in enumerate(actions):
            if t in (10, 40, 70):
                os.kill(envs.worker_pids[1], signal.SIGKILL)
                kills += 1
            obs, rew, term, trunc, info = envs.step(a)
            # worker 0's envs are exactly as in the clean run
            assert np.array_equal(obs[:2], expected[t][0][:2])
            assert np.array_equal(rew[:2], expected[t][1][:2])
            if t in (10, 40, 70):
                assert info["worker_restarted"][victim_envs].all()
                assert trunc[victim_envs].all() and not term[victim_envs].any()
                assert not info["_worker_restarted"][:2].any()
        assert kills == 3
        pids = envs.worker_pids
        assert all(alive(p) for p in pids)


@linux_only
def test_batches_written_in_place_with_kills():
    """A steady async loop whose batches the workers write in place, one worker killed at
    random moments (mid-emulation, mid-row, asleep: a kill between a worker's ticket and its
    completion leaves the ticket held, known lost). The surviving worker's envs stay on their
    clean-run trajectories, and batches come in place again after each fault, with envs in
    flight all along (Transport.first_untaken)."""
    n, batch, steps = 12, 4, 200
    rng = np.random.default_rng(4)
    actions = rng.integers(0, 4, (steps, n))
    expected = clean_run(n, 5, actions, num_workers=2)
    with make_vec("breakout", n, num_workers=2, batch_size=batch, max_restarts=100,
                  **FAST) as envs:
        envs.reset(seed=5)
        t = np.zeros(n, int)
        kills = recvs = 0
        envs.send(actions[0])
        while envs.book.in_flight():
            recvs += 1
            if recvs % 40 == 20:  # (the victim progresses between kills: it is restarted)
                time.sleep(rng.random() * 1e-3)  # at some moment of its work
                os.kill(envs.worker_pids[1], signal.SIGKILL)  # envs 6..11
                kills += 1
            obs, reward, *_, info = envs.recv()
            for j, i in enumerate(info["env_id"].tolist()):
                if i < n // 2:  # worker 0's envs never notice
                    assert np.array_equal(obs[j], expected[t[i]][0][i]), f"env {i} step {t[i]}"
                    assert reward[j] == expected[t[i]][1][i], f"env {i} step {t[i]}"
                t[i] += 1
            ids = info["env_id"][t[info["env_id"]] < steps]
            if ids.size:
                envs.send(actions[t[ids], ids], env_ids=ids)
        assert kills >= 10
        if envs.executor.transport is not None:  # (the portable waits' pool gathers them)
            assert envs._stepper.batches_in_place > steps * n // batch // 2


@pytest.mark.slow
@linux_only
def test_soak_async_and_sync_with_kills():
    """Soak (run with -m slow): async batches that span workers and sync steps, alternating,
    with workers killed at random moments (while stepping, spinning or asleep). The envs of
    the surviving worker stay exactly on their clean-run trajectory throughout, every kill is
    reported, and nothing is left behind."""
    n, rounds = 6, 1000
    rng = np.random.default_rng(9)
    actions = rng.integers(0, 4, (rounds, n))
    expected = clean_run(n, 3, actions, num_workers=2)
    before = shm_segments()
    with make_vec("breakout", n, num_workers=2, batch_size=4, max_restarts=100,
                  **FAST) as envs:
        envs.reset(seed=3)
        kills = restarted = 0  # restarted: env results flagged worker_restarted
        for t in range(rounds):
            if rng.random() < 0.03:
                if rng.random() < 0.5:
                    time.sleep(0.005)  # let the victim finish and fall asleep first
                os.kill(envs.worker_pids[1], signal.SIGKILL)
                kills += 1
            if t % 2:
                obs, rew, term, trunc, info = envs.step(actions[t])
                got = {i: (obs[i], rew[i]) for i in range(n)}
                restarted += int(info.get("_worker_restarted", np.zeros(n, bool))[3:].sum())
            else:
                envs.send(actions[t])
                got = {}
                while len(got) < n:
                    obs, rew, term, trunc, info = envs.recv()
                    assert len(info["env_id"]) <= 4
                    for j, i in enumerate(info["env_id"]):
                        got[int(i)] = (obs[j], rew[j])
                    flags = info.get("_worker_restarted", np.zeros(len(obs), bool))
                    restarted += int(flags[info["env_id"] >= 3].sum())
            for i in range(3):  # worker 0's block never notices
                assert np.array_equal(got[i][0], expected[t][0][i]), f"step {t} env {i}"
                assert got[i][1] == expected[t][1][i], f"step {t} env {i}"
        assert kills >= 5 and restarted == 3 * kills  # each of the victim's envs, once per kill
        pids = envs.worker_pids
    assert not any(alive(p) for p in pids)
    # held observations (output slots: this run's last, the clean run's first) keep it mapped
    assert blocks_held()
    del obs, got, expected
    assert not blocks_held() and shm_segments() <= before


@linux_only
def test_restart_budget_then_clear_error():
    envs = make_vec("breakout", 2, num_workers=2, max_restarts=1, **FAST)
    envs.reset(seed=0)
    os.kill(envs.worker_pids[0], signal.SIGKILL)
    envs.step(np.zeros(2, np.int64))  # recovered once
    pids = envs.worker_pids
    os.kill(pids[0], signal.SIGKILL)
    with pytest.raises(RuntimeError, match="worker 0 .*killed by SIGKILL.*restart budget"):
        envs.step(np.zeros(2, np.int64))
    time.sleep(0.2)
    assert not any(alive(p) for p in pids)
    with pytest.raises(ClosedEnvironmentError, match="closed"):
        envs.step(np.zeros(2, np.int64))


DIES_AT_ITS_SECOND_STEP = """
import os

from fastatari.core.game import AtariGame

STEPS = [0]


class Game(AtariGame):
    # every worker process dies at the second step it takes: after one env's result of each
    # command was delivered
    def step(self, *args, **kwargs):
        STEPS[0] += 1
        if STEPS[0] == 2:
            os._exit(3)
        return super().step(*args, **kwargs)
"""


def test_a_worker_that_delivered_results_made_progress(tmp_path, monkeypatch):
    """A result delivered is progress: a worker killed mid-command after one of its envs
    answered is restarted however often that happens (max_crashes_without_progress counts
    deaths with nothing delivered in between)."""
    from fastatari.vector import AtariVectorEnv, plan_vec
    from fastatari.vector.pool import WorkerPool

    (tmp_path / "dying_games.py").write_text(DIES_AT_ITS_SECOND_STEP)
    monkeypatch.syspath_prepend(str(tmp_path))  # a worker gets the trainer's sys.path
    # same-step autoreset: no step of resets alone between two deaths
    plan = plan_vec("breakout", 2, num_workers=1, max_crashes_without_progress=2,
                    autoreset_mode="same_step", **FAST)
    with AtariVectorEnv(plan, WorkerPool(plan, "dying_games:Game")) as envs:
        envs.reset(seed=0)
        for t in range(4):  # each step: env 0's result delivered, then the worker dies
            info = envs.step(np.zeros(2, np.int64))[4]
            assert info["worker_restarted"].tolist() == [True, True], t
        assert envs.worker_restarts == 4


@linux_only
def test_bad_options_fail_at_construction_without_leaks():
    before = shm_segments()
    with pytest.raises(ValueError, match="mode must be one of"):
        make_vec("breakout", 2, num_workers=1, mode=999)
    assert not shm_segments() - before  # nothing new (others' segments may go meanwhile)


class _UncheckedPlan(VectorPlan):
    def check_actions(self, actions, count):
        return np.asarray(actions)


def _unchecked(envs):
    """Let an out-of-range action through the trainer's check: the game's step raises in its
    worker (IndexError), a stand-in for any exception there."""
    envs.plan = _UncheckedPlan(**{f.name: getattr(envs.plan, f.name)
                                  for f in dataclasses.fields(envs.plan)})


def _restart_seed(last_seed: int, restarts: int) -> int:
    return int(np.random.SeedSequence([last_seed, restarts]).generate_state(1)[0])


def test_worker_exception_restarts_the_worker_and_no_env_lags():
    """An exception in a worker may leave a game half-stepped: the worker is replaced like a
    dead one (a warning carries the traceback), its envs are reset and reported truncated,
    and from then on every env equals a reference: none is silently a step behind."""
    rng = np.random.default_rng(0)
    with make_vec("breakout", 2, num_workers=2, **FAST) as envs, \
            make_vec("breakout", 2, num_workers=2, **FAST) as twin:
        envs.reset(seed=0)
        twin.reset(seed=0)
        for _ in range(5):
            actions = rng.integers(0, 4, 2)
            np.testing.assert_array_equal(envs.step(actions)[0], twin.step(actions)[0])
        _unchecked(envs)
        with pytest.warns(RuntimeWarning,
                          match="(?s)worker 1 .*raised an exception; restarted.*IndexError"):
            obs, _, terminated, truncated, info = envs.step(np.array([0, 99]))
        assert truncated.tolist() == [False, True] and not terminated.any()
        assert info["worker_restarted"].tolist() == [False, True]
        assert envs.worker_restarts == 1
        # env 0 stepped; env 1 is a fresh game with the restart's seed
        np.testing.assert_array_equal(obs[0], twin.step(np.array([0, 0]))[0][0])
        reference = AtariEnv("breakout", **FAST)
        np.testing.assert_array_equal(obs[1], reference.reset(seed=_restart_seed(1, 1))[0])
        for t in range(20):
            actions = rng.integers(0, 4, 2)
            obs = envs.step(actions)[0]
            np.testing.assert_array_equal(obs[0], twin.step(actions)[0][0])
            # next-step autoreset: the step after the truncated result resets the env
            expected = reference.reset()[0] if t == 0 else reference.step(int(actions[1]))[0]
            np.testing.assert_array_equal(obs[1], expected)
        reference.close()


def test_worker_exception_mid_async_command():
    """Async workers answer env by env (batch_size < num_envs); an exception part-way through a
    command: the envs answered before it keep their results, the others come back truncated
    with the restart, and every env is usable at once."""
    with make_vec("breakout", 4, num_workers=1, batch_size=1, **FAST) as envs:
        envs.reset(seed=0)
        _unchecked(envs)
        envs.send(np.array([0, 1, 99, 1]))
        assert envs.recv()[4]["env_id"].tolist() == [0]
        assert envs.recv()[4]["env_id"].tolist() == [1]
        with pytest.warns(RuntimeWarning, match="(?s)worker 0 .*raised an exception.*IndexError"):
            _, _, _, truncated, info = envs.recv()
        assert info["env_id"].tolist() == [2] and truncated.tolist() == [True]
        assert info["worker_restarted"].tolist() == [True]
        _, _, _, truncated, info = envs.recv()
        assert info["env_id"].tolist() == [3] and truncated.tolist() == [True]
        with pytest.raises(NoAsyncCallError, match="recv\\(\\) without send"):
            envs.recv()  # nothing is in flight any more
        # envs 0 and 1 were idle when their games were replaced: their next result says so
        envs.send(np.ones(4, np.int64))
        ids, flags = [], []
        for _ in range(4):
            _, _, _, truncated, info = envs.recv()
            ids += info["env_id"].tolist()
            flags += truncated.tolist()
        assert dict(zip(ids, flags, strict=True)) == {0: True, 1: True, 2: False, 3: False}


def test_a_command_a_worker_raises_on_is_not_asked_again():
    """A command that raises in a worker would raise again in its replacement: the worker is
    replaced once, the command is not repeated, and its RESTARTED reply carries the
    traceback (the front raises WorkerError with it); the vector env stays open."""
    with make_vec("breakout", 2, num_workers=1, **FAST) as envs:
        envs.reset(seed=0)
        with pytest.warns(RuntimeWarning, match="raised an exception"):
            seen, last = envs.executor._ask({0: [99]}, messages.encode_render)  # no env 99
        assert [r.kind for r in seen] == [messages.ReplyKind.RESTARTED]
        assert "KeyError: 99" in seen[0].payload
        assert envs.worker_restarts == 1 and not envs.closed
        envs.step(np.zeros(2, np.int64))


@linux_only
def test_close_cleans_up_and_rejects_calls():
    envs = make_vec("breakout", 4, num_workers=2, **FAST)
    envs.reset(seed=0)
    pids = envs.worker_pids
    assert blocks_held() and all(blocks_held(p) for p in pids)
    envs.close()
    envs.close()  # idempotent
    assert envs.closed
    assert not any(alive(p) for p in pids)
    assert not blocks_held()
    for call in (lambda: envs.step(np.zeros(4, np.int64)), lambda: envs.reset(),
                 lambda: envs.send(np.zeros(4, np.int64)), lambda: envs.recv()):
        with pytest.raises(ClosedEnvironmentError, match="closed"):
            call()


@linux_only
def test_garbage_collection_cleans_up():
    envs = make_vec("breakout", 2, num_workers=2, **FAST)
    pids = envs.worker_pids
    del envs
    import gc
    gc.collect()
    time.sleep(0.2)
    assert not any(alive(p) for p in pids)
    assert not blocks_held()


def test_spaces_render_and_gymnasium_make_vec():
    envs = gym.make_vec("fastatari/Breakout-v5", num_envs=2, num_workers=1,
                        render_mode="rgb_array", **FAST)
    try:
        assert isinstance(envs, AtariVectorEnv)
        assert envs.single_observation_space.shape == (4, 84, 84)
        assert envs.observation_space.shape == (2, 4, 84, 84)
        assert envs.single_action_space.n == 4
        envs.reset(seed=0)
        frames = envs.render()
        assert frames.shape == (2, 210, 160, 3) and frames.dtype == np.uint8
        assert envs.render(env_ids=[1]).shape == (1, 210, 160, 3)
    finally:
        envs.close()


def test_constructor_errors():
    with pytest.raises(ValueError, match="num_workers must be an int in \\[1, 2\\], got 3"):
        make_vec("breakout", 2, num_workers=3)
    with pytest.raises(ValueError, match="autoreset_mode"):
        make_vec("breakout", 2, autoreset_mode="sometimes")
    with pytest.raises(ValueError, match="frame_skip"):
        make_vec("breakout", 2, frame_skip=0)
    with pytest.raises(ValueError, match="breakout"):
        make_vec("breakoutt", 2)


@linux_only
def test_restart_of_a_paused_env_is_reported_on_its_next_result():
    with make_vec("breakout", 4, num_workers=2, batch_size=1, **FAST) as envs:
        envs.reset(seed=0)
        envs.send(np.array([1]), env_ids=[2])
        envs.recv()
        os.kill(envs.worker_pids[1], signal.SIGKILL)  # owns envs 2 and 3; 3 is paused
        envs.send(np.array([1]), env_ids=[2])
        _, _, term, trunc, info = envs.recv()
        assert info["env_id"].tolist() == [2] and trunc[0] and not term[0]
        assert info["worker_restarted"][0]
        envs.send(np.array([1]), env_ids=[3])
        obs, rew, term, trunc, info = envs.recv()
        assert info["env_id"].tolist() == [3] and trunc[0] and rew[0] == 0
        assert info["worker_restarted"][0]
        envs.send(np.array([1]), env_ids=[3])  # the autoreset step that follows a truncation
        _, _, term, trunc, info = envs.recv()
        assert not (term[0] or trunc[0]) and "worker_restarted" not in info
        # and the synchronous API still works after all that
        _, _, term, trunc, info = envs.step(np.ones(4, np.int64))
        assert "worker_restarted" not in info


@pytest.mark.parametrize("options", [[1], "reset_mask"])
def test_reset_options_must_be_a_dict_and_change_nothing(options):
    with make_vec("breakout", 2, num_workers=1, **FAST) as envs, \
            make_vec("breakout", 2, num_workers=1, **FAST) as twin:
        envs.reset(seed=1)
        twin.reset(seed=1)
        actions = np.ones(2, np.int64)
        envs.step(actions)
        twin.step(actions)
        with pytest.raises(TypeError, match="options must be a dict"):
            envs.reset(options=options)
        for _ in range(3):  # nothing was reset: the envs go on as their twins
            ours, theirs = envs.step(actions), twin.step(actions)
            assert np.array_equal(ours[0], theirs[0]) and np.array_equal(ours[1], theirs[1])
