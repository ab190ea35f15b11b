"""The bench's own processes: the ceiling's loop processes, and the process tree that start-up
is measured over. Cheap: at most two processes, one ROM."""
from __future__ import annotations

import os
import subprocess
import sys

from fastatari.bench import systems
from fastatari.bench.harness import BenchConfig, parallel_ceiling


def test_parallel_ceiling_runs_rounds_in_every_process_and_closes():
    ceiling = parallel_ceiling(BenchConfig(game="pong", rounds=1, vector_steps=5), 2, "ceiling")
    loops = ceiling.run.__self__
    processes = list(loops.processes)
    try:
        assert len(processes) == 2 and ceiling.units_per_round == 4  # 5 // 2 steps each
        times = loops.run(0)  # each loop's own seconds
        assert len(times) == 2 and all(t > 0 for t in times)
        # the ceiling's round: all steps at the sum of the loops' own rates
        assert ceiling.timed(times) == 4 / (2 / times[0] + 2 / times[1])
        ceiling.run(1)
    finally:
        ceiling.close()
    assert not any(process.is_alive() for process in processes)
    assert loops.processes == []
    ceiling.close()  # twice is harmless


def test_descendants_and_proc_fields():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in systems.descendants(os.getpid())
        assert systems.proc_kb(child.pid) > 0  # VmRSS, kB
        assert systems.proc_kb(child.pid, "Pss", "smaps_rollup") > 0
        assert systems.proc_kb(child.pid, "NoSuchField") == 0
    finally:
        child.kill()
        child.wait()
    assert child.pid not in systems.descendants(os.getpid())
    assert systems.proc_kb(child.pid) == 0  # gone


def test_the_sync_barrier_bound_counts_each_step_at_its_slowest_block():
    """block_times plays each block of envs in turn, a reset timed with the step that ended
    the episode; the bound's round is the sum over steps of the slowest block's time."""
    import numpy as np

    from fastatari.bench.harness import block_times
    from fastatari.bench.sections.vector import BOUND, bound_contender

    config = BenchConfig(game="pong", rounds=1, vector_steps=12)
    bound = bound_contender(config, 3, 2)
    try:
        assert bound.name == BOUND and bound.units_per_round == 12  # 4 steps of 3 envs
        seconds = bound.run(1)
        assert bound.timed(seconds) == seconds > 0
    finally:
        bound.close()

    class Game:  # a stand-in: step i costs nothing, its episode ends at every 2nd step
        num_actions = 4

        def __init__(self):
            self.steps = self.resets = 0

        def step(self, action):
            self.steps += 1
            return 0.0, self.steps % 2 == 0, False, {}

        def reset(self):
            self.resets += 1

    games = [Game() for _ in range(3)]
    times, resets = block_times(games, [np.array([0, 1]), np.array([2])], np.zeros((4, 3), int))
    assert times.shape == (4, 2) and (times >= 0).all()
    assert resets == 6 and [g.resets for g in games] == [2, 2, 2]
