"""The step through shared memory (pool.py, worker.py, fa_wait.c): a death seen while the
trainer sleeps, Ctrl-C during the wait, first-ready order across workers of unequal speed, and
more workers than cores, the trainer's spin given up on slow batches. Timing is never asserted
beyond "not at the deadline"."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
import warnings

import numpy as np
import pytest

from fastatari.vector import WorkerError, make_vec

from .._processes import alive, linux_only
from .test_workers import FAST, clean_run, run_script


@linux_only
def test_a_worker_killed_while_the_trainer_sleeps_is_seen_at_once():
    """A step long enough that the trainer sleeps in its wait: the kill lands mid-step, the
    death is seen through the worker's pipe (not at the 60 s deadline), the others are exact."""
    n = 96
    actions = np.ones((4, n), np.int64)
    expected = clean_run(n, 5, actions, num_workers=2)
    with make_vec("breakout", n, num_workers=2, timeout=60.0, **FAST) as envs:
        envs.reset(seed=5)
        envs.step(actions[0])
        victim = envs.worker_pids[1]
        killer = threading.Timer(0.005, os.kill, (victim, signal.SIGKILL))
        start = time.monotonic()
        killer.start()
        obs, _, _, trunc, info = envs.step(actions[1])
        elapsed = time.monotonic() - start
        killer.join()
        assert elapsed < 30  # seen at once: the replacement's start, not the deadline
        assert not alive(victim)
        lost = info["worker_restarted"]
        assert lost[n // 2:].all() and not lost[:n // 2].any() and trunc[n // 2:].all()
        assert np.array_equal(obs[:n // 2], expected[2][:n // 2])  # worker 0 lost nothing


@linux_only
def test_ctrl_c_during_the_wait_closes_everything(tmp_path):
    result = run_script(tmp_path, """
        import os, signal, threading, time
        import numpy as np
        from fastatari import make_vec

        envs = make_vec("breakout", 96, num_workers=2, repeat_action_probability=0.0)
        envs.reset(seed=0)
        pids = envs.worker_pids
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal delivers it
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        sent = None
        try:
            while True:
                sent = time.monotonic()
                envs.step(np.zeros(96, np.int64))
        except KeyboardInterrupt:
            print("interrupted after", time.monotonic() - sent, "closed", envs.closed)
        time.sleep(0.5)
        print("alive", sum(os.path.exists(f"/proc/{p}") for p in pids))
    """)
    assert result.returncode == 0, result.stderr
    words = result.stdout.split()
    assert words[0] == "interrupted" and float(words[2]) < 5.0, result.stdout
    assert words[4] == "True" and words[-1] == "0", result.stdout


@linux_only
def test_first_ready_order_across_workers_of_unequal_speed():
    """Worker 1 stopped: a batch is the first envs to finish, all from worker 0, in the order
    it stepped them; worker 1's come in the next batch once it runs again. Every env's
    trajectory is the sync one."""
    n = 8
    actions = np.arange(n) % 4
    expected = clean_run(n, 3, actions[None], num_workers=2)
    with make_vec("breakout", n, num_workers=2, batch_size=4, timeout=60.0, **FAST) as envs:
        envs.reset(seed=3)
        slow = envs.worker_pids[1]
        os.kill(slow, signal.SIGSTOP)
        try:
            envs.send(actions)
            obs, _, _, _, info = envs.recv()
            assert info["env_id"].tolist() == [0, 1, 2, 3]
        finally:
            os.kill(slow, signal.SIGCONT)
        assert np.array_equal(obs, expected[1][:4])
        obs, _, _, _, info = envs.recv()
        assert info["env_id"].tolist() == [4, 5, 6, 7]
        assert np.array_equal(obs, expected[1][4:])


@linux_only
def test_a_restart_notice_comes_after_the_envs_done_before_it():
    """An env whose games a restart replaced while it was idle answers when sent, after the
    envs that finished before (those a recv left with the pool), as in the order they
    finished."""
    with make_vec("breakout", 4, num_workers=2, batch_size=1, timeout=20.0, **FAST) as envs:
        envs.reset(seed=0)
        os.kill(envs.worker_pids[0], signal.SIGKILL)  # worker 0 owns envs 0 and 1
        time.sleep(0.3)
        envs.send(np.ones(2, np.int64), np.array([2, 3]))
        time.sleep(0.3)  # both finish
        assert envs.recv()[4]["env_id"].tolist() in ([2], [3])
        with pytest.raises(WorkerError):
            envs.clone([0])  # finds worker 0 dead: its games are replaced
        envs.send(np.ones(1, np.int64), np.array([0]))  # answered at once: the restart
        order = []
        while envs.book.in_flight():
            info = envs.recv()[4]
            order.append((int(info["env_id"][0]), bool(info.get("worker_restarted", [0])[0])))
        assert len(order) == 2 and order[0][0] in (2, 3) and order[1] == (0, True)


@linux_only
@pytest.mark.parametrize("call", ["step", "recv"])
def test_a_signal_handler_that_closes_the_env_ends_its_wait(call):
    """close() from a signal handler while the trainer waits (Ctrl-C handlers do this): the
    wait raises at once instead of going on over freed memory and closed descriptors. With
    continuous actions nothing but the pool holds the shared memory."""
    with make_vec("breakout", 2, num_workers=1, batch_size=2, continuous=True, timeout=20.0,
                  **FAST) as envs:
        envs.reset(seed=0)
        actions = envs.action_space.sample()
        worker = envs.worker_pids[0]

        def close(signum, frame):
            os.kill(worker, signal.SIGCONT)  # (free to end when told)
            envs.close()

        previous = signal.signal(signal.SIGALRM, close)
        os.kill(worker, signal.SIGSTOP)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            with pytest.raises(RuntimeError, match="workers were closed"), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")  # gymnasium's: close() with steps pending
                if call == "step":
                    envs.step(actions)
                else:
                    envs.send(actions)
                    envs.recv()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if alive(worker):
                os.kill(worker, signal.SIGCONT)
        assert envs.closed


def test_more_workers_than_cores_still_exact():
    """64 workers on whatever this machine has (two cores in CI): slower, the same bytes."""
    n = 64
    actions = np.random.default_rng(4).integers(0, 4, (8, n))
    expected = clean_run(n, 9, actions, num_workers=2)
    with make_vec("breakout", n, num_workers=64, batch_size=16, **FAST) as envs:
        assert envs.num_workers == 64
        got = [envs.reset(seed=9)[0]]
        for a in actions[:4]:
            got.append(envs.step(a)[0])
        for a in actions[4:]:  # async batches across all 64 workers
            envs.send(a)
            obs = np.empty_like(got[0])
            for _ in range(n // 16):
                batch, *_, info = envs.recv()
                obs[info["env_id"]] = batch
            got.append(obs)
    for t, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert np.array_equal(want, have), t


@pytest.mark.skipif(sys.platform != "linux", reason="forces other platforms' paths on Linux")
@pytest.mark.parametrize("forced, ways", [
    ("FASTATARI_PORTABLE_WAITS=1", "True False memfd"),
    ("FASTATARI_PLATFORM_PATHS=macos", "True False file"),
    ("FASTATARI_PLATFORM_PATHS=windows", "True True memfd"),
])
def test_portable_paths_give_the_same_steps(tmp_path, monkeypatch, forced, ways):
    """The waits of macOS and Windows (spin, then naps; the pipes looked at between naps),
    forced here with FASTATARI_PORTABLE_WAITS=1, and with them the rest of those platforms'
    paths that Linux can run (FASTATARI_PLATFORM_PATHS: macOS's unlinked file for the memory;
    Windows' spawn children and multiprocessing's pipe waits): the same bytes as Linux's own
    paths, sync and async, and a killed worker still seen through its pipe."""
    body = """
        import hashlib, os, signal, sys
        import numpy as np
        from fastatari import make_vec
        from fastatari.vector import pool
        from fastatari.vector.host import HOST

        digest = hashlib.sha256()
        with make_vec("breakout", 6, num_workers=2, batch_size=2,
                      repeat_action_probability=0.0) as envs:
            digest.update(envs.reset(seed=1)[0].tobytes())
            for t in range(30):
                digest.update(envs.step(np.full(6, t % 4))[0].tobytes())
            envs.send(np.ones(6, np.int64))
            after = np.zeros((6, 4, 84, 84), np.uint8)
            for _ in range(3):  # which envs come first depends on timing; their bytes do not
                obs, *_, info = envs.recv()
                after[info["env_id"]] = obs
            digest.update(after.tobytes())
            os.kill(envs.worker_pids[0], signal.SIGKILL)
            *_, info = envs.step(np.zeros(6, np.int64))
            print(pool.PORTABLE_WAITS, HOST.spawn, HOST.memory,
                  info["worker_restarted"].tolist(), digest.hexdigest())
    """
    for name in ("FASTATARI_PORTABLE_WAITS", "FASTATARI_PLATFORM_PATHS"):
        monkeypatch.delenv(name, raising=False)  # (as a forced run of the suite sets them)
    native = run_script(tmp_path, body)
    monkeypatch.setenv(*forced.split("="))
    portable = run_script(tmp_path, body)
    assert native.returncode == 0 and portable.returncode == 0, native.stderr + portable.stderr
    assert native.stdout.startswith("False False memfd")
    assert portable.stdout.startswith(ways + " [True, True, True, False, False, False]")
    assert portable.stdout.split()[-1] == native.stdout.split()[-1]


def test_the_trainer_stops_spinning_on_slow_batches():
    """An async run whose workers take far longer than the spin: the waits of the trainer's
    recv tell its rule so, which then sleeps at once, probing once in SPIN_PROBE waits."""
    from fastatari.vector.pool import SPIN_PROBE

    with make_vec("breakout", 4, num_workers=1, batch_size=2,
                  repeat_action_probability=0.0) as envs:
        envs.reset(seed=0)
        rule = envs.executor._spins
        assert rule.spin() > 0  # a fresh rule spins
        envs.send(np.zeros(4, np.int64))
        for _ in range(40):
            envs.send(np.zeros(2, np.int64), envs.recv()[4]["env_id"])
        envs.recv()
        envs.recv()
        spins = [rule.spin() for _ in range(SPIN_PROBE)]
    assert spins.count(0.0) == SPIN_PROBE - 1
