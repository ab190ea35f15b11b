"""The diagnostics' processes: the multigame ceiling's loop, and the stand-in game through a
real worker pool (the transport's env). Cheap: two ROMs; two workers that do not emulate."""
from __future__ import annotations

import numpy as np

from benchmarks.sections import transport
from benchmarks.sections.multigame import mix_loop
from benchmarks.stand_in import STAND_IN, StandInGame
from fastatari.bench.harness import BenchConfig


def test_mix_loop_plays_every_game_then_only_its_share():
    run = mix_loop(("pong", "breakout", "freeway"), index=1, processes=2, seed=0, rounds=1,
                   steps=2)
    seconds, switching = run(1)
    assert len(seconds) == len(switching) == 3
    assert all(s > 0 for s in seconds)
    assert [s > 0 for s in switching] == [False, True, False]  # games 1, 3, ... of process 1


def test_the_transport_env_runs_the_stand_in_in_its_workers():
    """``open_stand_in``: the vector env over ``WorkerPool(plan, game_factory=STAND_IN)``; its
    workers build :class:`StandInGame` (imported there), so nothing is emulated and the
    observations stay the shared memory's zeros, while every step still goes through the
    workers and comes back with each env's results."""
    assert STAND_IN == f"{StandInGame.__module__}:{StandInGame.__qualname__}"
    opened = transport.open_stand_in(BenchConfig(), num_envs=4, num_workers=2, copy=False)
    try:
        assert len(opened.pids) == 2 and opened.num_actions == 4
        for _ in range(3):
            obs, reward, terminated, truncated, _ = opened.step(np.ones(4, np.int64))
        transport.check_stand_in(obs, "stand-in")
        assert not obs.any() and not reward.any() and not (terminated | truncated).any()
    finally:
        opened.close()
