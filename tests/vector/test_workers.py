"""The vector env's workers in real programs: started from fastatari's own entry point (no main
guard needed, the trainer's script never re-run), restarted after crashes and hangs under the
restart policy, gone when the trainer dies, seeds checked in the trainer, CPU pinning."""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from multiprocessing.process import BaseProcess

import numpy as np
import pytest

from fastatari.vector import AtariVectorEnv, WorkerError, launch, make_vec, plan_vec, pool
from fastatari.vector.host import HOST

from .._processes import alive, blocks_held, linux_only, shm_segments
from .._python import run_code, same_fastatari

FAST = dict(repeat_action_probability=0.0, max_num_frames_per_episode=1200)


def run_script(tmp_path, body: str, timeout: float = 120,
               main_guard: bool = True) -> subprocess.CompletedProcess:
    """Run ``body`` as a trainer's script, ``train.py`` in ``tmp_path``: under a main guard, as
    Windows needs it (its spawn children re-import the script: HOST.spawn), unless
    ``main_guard`` is False."""
    script = tmp_path / "train.py"
    script.write_text(as_script(body, main_guard))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=tmp_path)


def as_script(body: str, main_guard: bool = True) -> str:
    body = textwrap.dedent(body)
    return 'if __name__ == "__main__":\n' + textwrap.indent(body, "    ") if main_guard else body


def clean_run(n, seed, actions, **kwargs):
    with make_vec("breakout", n, **FAST, **kwargs) as envs:
        out = [envs.reset(seed=seed)[0]]
        for a in actions:
            out.append(envs.step(a)[0])
    return out


# -- the entry point ---------------------------------------------------------------------------
@pytest.mark.skipif(HOST.spawn, reason="spawn children re-import __main__ (Windows: a main "
                                       "guard is needed)")
def test_script_without_main_guard_runs_its_top_level_once(tmp_path):
    result = run_script(tmp_path, main_guard=False, body="""
        import numpy as np
        from fastatari import make_vec
        with open("runs.txt", "a") as f:
            f.write("top level\\n")
        envs = make_vec("breakout", 4, num_workers=2, repeat_action_probability=0.0)
        envs.reset(seed=0)
        for _ in range(5):
            envs.step(np.ones(4, np.int64))
        envs.close()
        print("OK")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "OK"
    assert (tmp_path / "runs.txt").read_text() == "top level\n"


@pytest.mark.skipif(HOST.spawn, reason="spawn children re-import __main__, and so its imports "
                                       "(Windows)")
def test_workers_never_import_the_trainers_modules(tmp_path):
    # a stand-in for torch: records every process that imports it
    (tmp_path / "heavy.py").write_text(
        "import os\nwith open('heavy-imports.txt', 'a') as f:\n    f.write(f'{os.getpid()}\\n')\n")
    result = run_script(tmp_path, main_guard=False, body="""
        import os
        import heavy
        import numpy as np
        from fastatari import make_vec
        if __name__ == "__main__":
            with make_vec("breakout", 4, num_workers=2, repeat_action_probability=0.0) as envs:
                envs.reset(seed=0)
                envs.step(np.ones(4, np.int64))
                print(os.getpid())
    """)
    assert result.returncode == 0, result.stderr
    trainer = result.stdout.strip()
    assert (tmp_path / "heavy-imports.txt").read_text().splitlines() == [trainer]


@pytest.mark.skipif(HOST.spawn, reason="a spawn child starts as `python -c` in the working "
                    "directory: multiprocessing's own imports (pickle) find a planted one first")
def test_workers_import_nothing_from_the_working_directory(tmp_path):
    """``cd /shared/folder && python /path/train.py``: a json.py (or numpy.py) planted in the
    folder the job starts from must not run in the workers (nor in the trainer)."""
    job, shared = tmp_path / "job", tmp_path / "shared"
    job.mkdir()
    shared.mkdir()
    marker = tmp_path / "planted-ran.txt"
    for name in ("json", "numpy", "pickle", "fastatari"):
        (shared / f"{name}.py").write_text(
            f"import os\nopen({str(marker)!r}, 'a').write('{name} ' + str(os.getpid()))\n")
    (job / "train.py").write_text(as_script("""
        import numpy as np
        from fastatari import make_vec
        with make_vec("breakout", 2, num_workers=2, repeat_action_probability=0.0) as envs:
            envs.reset(seed=0)
            envs.step(np.ones(2, np.int64))
            print("OK", envs.worker_pids)
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run([sys.executable, str(job / "train.py")], capture_output=True,
                            text=True, env=env, timeout=120, cwd=shared)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("OK")
    assert not marker.exists(), marker.read_text()


@pytest.mark.skipif(HOST.spawn, reason="a spawn child starts as `python -c` in the working "
                    "directory: multiprocessing's own imports find a planted one first")
def test_a_planted_module_under_python_dash_c_runs_in_the_trainer_only(tmp_path):
    """``python -c`` puts the working directory ("") first on the trainer's sys.path, as
    Python does; a worker's path moves it last, so a json.py planted there runs in the trainer
    (Python's rule) and in no worker (the standard library's comes first)."""
    marker = tmp_path / "planted-ran.txt"
    (tmp_path / "json.py").write_text(
        "import os\n"
        f"open({str(marker)!r}, 'a').write(str(os.getpid()) + ' ')\n"
        "from importlib.machinery import PathFinder\n"  # then the real json, for the trainer
        "import importlib.util, sys\n"
        "spec = PathFinder.find_spec('json', [p for p in sys.path if p])\n"
        "module = importlib.util.module_from_spec(spec); sys.modules['json'] = module\n"
        "spec.loader.exec_module(module)\n")
    code = ("import os, json, numpy as np, fastatari; "
            "e = fastatari.make_vec('breakout', 2, num_workers=2); e.reset(seed=0); "
            "e.step(np.zeros(2, np.int64)); print(os.getpid(), *e.worker_pids); e.close()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, env=same_fastatari(), timeout=120)
    assert result.returncode == 0, result.stderr
    trainer, *workers = result.stdout.split()
    assert marker.read_text().split() == [trainer]  # the trainer's, once; no worker's


@pytest.mark.skipif(HOST.spawn, reason="a spawn child starts as `python -c` in the working "
                    "directory: multiprocessing's own imports find a planted one first")
def test_a_game_factory_in_the_working_directory_is_found_by_the_workers(tmp_path):
    """The working directory is last on a worker's path, not gone: a project's own module
    there (a game factory) still loads in the workers."""
    (tmp_path / "project_games.py").write_text(
        "from fastatari.core.game import AtariGame\n\n\nclass Game(AtariGame):\n    pass\n")
    code = ("import numpy as np; from fastatari.vector import AtariVectorEnv, plan_vec; "
            "from fastatari.vector.pool import WorkerPool; "
            "plan = plan_vec('breakout', 2, num_workers=2); "
            "e = AtariVectorEnv(plan, WorkerPool(plan, 'project_games:Game')); e.reset(seed=0); "
            "e.step(np.zeros(2, np.int64)); e.close(); print('OK')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, env=same_fastatari(), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "OK"


def test_python_dash_c_works(tmp_path):
    code = ("import numpy as np, fastatari; e = fastatari.make_vec('breakout', 2, num_workers=2);"
            " e.reset(seed=0); e.step(np.zeros(2, np.int64)); e.close(); print('OK')")
    result = run_code(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "OK"


@pytest.mark.skipif(HOST.spawn, reason="patches the subprocess launch's boot line")
def test_a_worker_that_never_starts_fails_fast_with_its_cause_and_stderr(monkeypatch):
    monkeypatch.setattr(launch, "_BOOT",
                        "import sys; sys.stderr.write('boom: cannot start\\n'); sys.exit(3)")
    before = shm_segments()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="(?s)worker 0 .*exit code 3; 3 times in a row "
                                           "without progress.*boom: cannot start"):
        make_vec("breakout", 2, num_workers=1, **FAST)
    assert time.monotonic() - start < 30
    assert shm_segments() <= before and not blocks_held()


def test_a_worker_that_exits_as_it_starts_fails_fast_on_either_launch(tmp_path, monkeypatch):
    """A worker that exits while it starts (its game factory's module exits when imported),
    launched either way (HOST.spawn): three deaths without progress raise with the exit code,
    and, where its stderr is captured (not spawn's: a spawn child's is the trainer's), its
    tail."""
    (tmp_path / "exiting_games.py").write_text(
        "import sys\nsys.stderr.write('boom: cannot start\\n')\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # a worker gets the trainer's sys.path
    plan = plan_vec("breakout", 2, num_workers=1, **FAST)
    tail = "" if HOST.spawn else ".*boom: cannot start"
    with pytest.raises(RuntimeError, match="(?s)worker 0 .*exit code 3; 3 times in a row "
                                           "without progress" + tail):
        AtariVectorEnv(plan, pool.WorkerPool(plan, "exiting_games:Game"))
    assert not blocks_held()


@linux_only
def test_spawn_children_run_the_workers_as_the_launched_ones(monkeypatch):
    """Windows' launch (multiprocessing spawn children), forced here (HOST.spawn) with this
    platform's waits: the descriptors (the memory; on Linux the eventfd too) reach the
    children at their numbers; the same steps as the default launch; a killed child is
    replaced, and every child is gone with the env."""
    actions = np.random.default_rng(7).integers(0, 4, (8, 4))
    expected = clean_run(4, 2, actions, num_workers=2)
    monkeypatch.setattr(launch, "HOST", dataclasses.replace(HOST, spawn=True))
    with make_vec("breakout", 4, num_workers=2, **FAST) as envs:
        assert all(isinstance(w._process, BaseProcess) for w in envs.executor._res.workers)
        got = [envs.reset(seed=2)[0]] + [envs.step(a)[0] for a in actions[:-1]]
        killed = envs.worker_pids[1]
        os.kill(killed, signal.SIGKILL)
        obs, *_, info = envs.step(actions[-1])
        assert info["worker_restarted"].tolist() == [False, False, True, True]
        assert envs.worker_restarts == 1 and killed not in envs.worker_pids
        pids = envs.worker_pids
    for t, have in enumerate(got):
        assert np.array_equal(expected[t], have), t
    assert np.array_equal(obs[:2], expected[-1][:2])  # worker 0 lost nothing
    assert not any(alive(p) for p in pids + [killed])


def test_a_kill_during_start_up_is_absorbed(monkeypatch):
    real = pool.launch
    launched = []

    def launch_and_kill_the_first(*args, **kwargs):
        worker = real(*args, **kwargs)
        if not launched:
            os.kill(worker.pid, signal.SIGKILL)
        launched.append(worker.pid)
        return worker

    monkeypatch.setattr(pool, "launch", launch_and_kill_the_first)
    with make_vec("breakout", 4, num_workers=2, **FAST) as envs:
        assert envs.worker_restarts == 1 and len(launched) == 3
        assert launched[0] not in envs.worker_pids
        envs.reset(seed=0)
        obs, *_ = envs.step(np.ones(4, np.int64))
        assert obs.shape == (4, 4, 84, 84)


# -- restarts ----------------------------------------------------------------------------------
@linux_only
def test_many_kills_with_default_settings_are_survived_and_each_reported_once():
    n = 4
    rng = np.random.default_rng(5)
    actions = rng.integers(0, 4, (150, n))
    expected = clean_run(n, 1, actions, num_workers=2)
    kill_steps = set(range(3, 150, 6))  # 25 kills
    with make_vec("breakout", n, num_workers=2, **FAST) as envs:
        envs.reset(seed=1)
        flagged = 0
        for t, a in enumerate(actions):
            if t in kill_steps:
                os.kill(envs.worker_pids[1], signal.SIGKILL)
            obs, _, term, trunc, info = envs.step(a)
            assert np.array_equal(obs[:2], expected[t + 1][:2])  # worker 0 never notices
            restarted = info.get("worker_restarted", np.zeros(n, bool))
            assert restarted.tolist() == ([False, False, True, True] if t in kill_steps
                                          else [False] * n)
            flagged += int(restarted.sum())
        assert flagged == 2 * len(kill_steps) and envs.worker_restarts == len(kill_steps)


@linux_only
def test_a_stopped_worker_is_killed_and_replaced_after_the_deadline():
    with make_vec("breakout", 4, num_workers=2, timeout=2.0, **FAST) as envs:
        envs.reset(seed=0)
        stopped = envs.worker_pids[1]
        os.kill(stopped, signal.SIGSTOP)
        start = time.monotonic()
        with pytest.warns(RuntimeWarning, match="worker 1 .*did not answer within the timeout "
                                                "of 2.0 s"):
            _, _, term, trunc, info = envs.step(np.ones(4, np.int64))
        assert 2.0 <= time.monotonic() - start < 15
        assert info["worker_restarted"].tolist() == [False, False, True, True]
        assert trunc.tolist() == [False, False, True, True]
        time.sleep(0.2)
        assert not alive(stopped) and stopped not in envs.worker_pids
        envs.step(np.ones(4, np.int64))


def test_timeout_is_validated():
    for bad in (0, -1, 1e-6, float("nan"), float("inf"), "5", True, 10**400):
        with pytest.raises(ValueError, match=r"timeout must be None \(wait forever\) or a "
                                             r"finite number of seconds >= 1"):
            make_vec("breakout", 2, timeout=bad)


_LOOPS = {
    "step": "while True:\n    envs.step(np.ones(4, np.int64))",
    "send/recv": "envs.send(np.ones(4, np.int64))\nwhile True:\n"
                 "    envs.send(np.ones(2, np.int64), envs.recv()[4]['env_id'])"}


@linux_only
@pytest.mark.parametrize("loop", list(_LOOPS))
def test_a_killed_or_interrupted_trainer_leaves_no_worker_and_no_shared_memory(tmp_path, loop):
    """Ctrl-C: the trainer closes its workers; SIGKILL and SIGTERM (no cleanup in the trainer):
    the workers see their pipes close and exit within 1 s. The shared memory is an unnamed memfd
    (nothing in /dev/shm; elsewhere on POSIX a file unlinked at once: HOST.memory), which the
    kernel frees with the last process holding it. A trainer
    stepping, or sending and receiving (each its compiled call)."""
    script = tmp_path / "train.py"
    script.write_text(as_script(textwrap.dedent("""
        import signal
        import numpy as np
        from fastatari import make_vec
        # Ctrl-C as a terminal delivers it, also when pytest runs as a background job (whose
        # children inherit SIGINT ignored)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        envs = make_vec("breakout", 4, num_workers=2, batch_size=2,
                        repeat_action_probability=0.0)
        envs.reset(seed=0)
        print("PIDS", *envs.worker_pids, flush=True)
    """) + _LOOPS[loop] + "\n"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for sig in (signal.SIGINT, signal.SIGKILL, signal.SIGTERM):
        proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        pids: list = []
        try:
            pids = [int(p) for p in proc.stdout.readline().split()[1:]]
            assert len(pids) == 2 and all(alive(p) for p in pids)
            with open(f"/proc/{proc.pid}/maps") as maps:  # (other POSIX: a file, unlinked)
                assert not [m for m in maps if "/dev/shm/" in m and "(deleted)" not in m]
            assert blocks_held(proc.pid) and all(blocks_held(p) for p in pids)
            time.sleep(0.3)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
            if sig == signal.SIGINT:
                assert "KeyboardInterrupt" in err
            deadline = time.monotonic() + 1.0
            while any(alive(p) for p in pids) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not any(alive(p) for p in pids), f"workers outlived the trainer ({sig.name})"
        finally:  # a failed check leaves nothing running
            for pid in [proc.pid] + pids:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            proc.communicate()


# -- seeds -------------------------------------------------------------------------------------
def test_bad_seeds_are_refused_before_any_env_changes():
    rng = np.random.default_rng(2)
    actions = rng.integers(0, 4, (20, 4))
    expected = clean_run(4, 3, actions, num_workers=2)
    with make_vec("breakout", 4, num_workers=2, **FAST) as envs:
        envs.reset(seed=3)
        for bad, error, match in (([0, 1, 2, -1], ValueError, r"seed\[3\] must be a non-neg"),
                                  ([0, 1, 2], ValueError, "one entry per env"),
                                  (-5, ValueError, "seed must be a non-negative int"),
                                  ([0, 1, 2, 1.5], TypeError, r"seed\[3\]"),
                                  ("7", TypeError, "seed must be None, an int")):
            with pytest.raises(error, match=match):
                envs.reset(seed=bad)
        for t, a in enumerate(actions):  # nothing was reset: the clean trajectory goes on
            assert np.array_equal(envs.step(a)[0], expected[t + 1])


# -- placement ---------------------------------------------------------------------------------
@pytest.mark.skipif(not HOST.affinity, reason="needs Linux")
def test_cpus_pin_workers_and_bad_ids_are_refused():
    allowed = sorted(os.sched_getaffinity(0))
    with make_vec("breakout", 2, num_workers=2, cpus="auto", **FAST) as envs:
        assert [os.sched_getaffinity(p) for p in envs.worker_pids] == [
            {allowed[k % len(allowed)]} for k in range(2)]
    for bad in ([max(allowed) + 1000], [], "some", [0.5], 3):
        with pytest.raises(ValueError, match="cpus must"):
            make_vec("breakout", 2, num_workers=2, cpus=bad)


# -- the game factory --------------------------------------------------------------------------
def test_workers_build_their_games_with_the_game_factory_they_are_given(tmp_path, monkeypatch):
    """``WorkerPool(plan, game_factory="module:qualname")``: each worker imports the factory
    and builds its games with it (here a game that rewards every step with its worker's pid);
    a factory that cannot be imported fails the start with the worker's traceback."""
    (tmp_path / "stand_in_games.py").write_text(textwrap.dedent("""
        import os

        from fastatari.core.game import AtariGame


        class PidRewards(AtariGame):
            def step(self, action):
                _, terminated, truncated, info = super().step(action)
                return float(os.getpid()), terminated, truncated, info
    """))
    monkeypatch.syspath_prepend(str(tmp_path))  # a worker gets the trainer's sys.path
    plan = plan_vec("breakout", 4, num_workers=2, **FAST)
    with AtariVectorEnv(plan, pool.WorkerPool(plan, "stand_in_games:PidRewards")) as envs:
        envs.reset(seed=0)
        rewards = envs.step(np.ones(4, np.int64))[1]
        assert sorted(set(rewards.tolist())) == sorted(map(float, envs.worker_pids))
    with pytest.raises(WorkerError, match="(?s)failed to start.*No module named 'no_such_games'"):
        AtariVectorEnv(plan, pool.WorkerPool(plan, game_factory="no_such_games:Game"))
    for bad in ("AtariGame", "fastatari.core.game:", ":AtariGame", None):
        with pytest.raises(ValueError, match="game_factory must be 'module:qualname'"):
            pool.WorkerPool(plan, game_factory=bad)
