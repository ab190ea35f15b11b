"""The bench's own processes: the ceiling's loop processes, the multigame loop, and the process
tree that start-up and load are measured over. Cheap: at most two processes, two ROMs."""
from __future__ import annotations

import os
import subprocess
import sys

from fastatari.bench import fresh
from fastatari.bench.ceiling import ParallelCeiling
from fastatari.bench.harness import BenchConfig
from fastatari.bench.sections.multigame import mix_loop


def test_parallel_ceiling_runs_rounds_in_every_process_and_closes():
    ceiling = ParallelCeiling(BenchConfig(game="pong", rounds=1, vector_steps=5), processes=2)
    processes = list(ceiling.loops.processes)
    try:
        assert len(ceiling) == 2 and ceiling.units == 4  # 5 // 2 steps each
        assert ceiling.loops.run(0) == [None, None]
        ceiling.run(1)
    finally:
        ceiling.close()
    assert not any(process.is_alive() for process in processes)
    assert len(ceiling) == 0
    ceiling.close()  # twice is harmless


def test_mix_loop_plays_every_game_then_only_its_share():
    run = mix_loop(("pong", "breakout", "freeway"), index=1, processes=2, seed=0, rounds=1,
                   steps=2)
    seconds, switching = run(1)
    assert len(seconds) == len(switching) == 3
    assert all(s > 0 for s in seconds)
    assert [s > 0 for s in switching] == [False, True, False]  # games 1, 3, ... of process 1


def test_descendants_and_status_fields():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in fresh.descendants(os.getpid())
        assert fresh.status_field(child.pid) > 0  # VmRSS, kB
        assert fresh.status_field(child.pid, "NoSuchField") == 0
    finally:
        child.kill()
        child.wait()
    assert child.pid not in fresh.descendants(os.getpid())
    assert fresh.status_field(child.pid) == 0  # gone
