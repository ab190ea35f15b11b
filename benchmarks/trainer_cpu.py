"""The trainer thread's CPU time per sync step of one vector env, for comparing two installs.

    python benchmarks/trainer_cpu.py N WORKERS STEPS [--copy] [--batch B]

Breakout, sticky actions off, random actions, ``copy=False`` (``--copy``: True), real
emulation; prints the trainer thread's CPU µs per step (``getrusage(RUSAGE_THREAD)``, user +
sys: its own work, whatever the core count), the wall µs per step and the agent steps/s.
``--batch B``: async instead, a step being a ``recv`` of ``B`` envs and the ``send`` of their
next actions.
Run it alternately with each install (the README's before/after tables: commit 56f64a6, the
pipe per worker, and the step through shared memory); ``python -m benchmarks --section trainer``
is the full grid, with transport-only rows.
"""
from __future__ import annotations

import resource
import sys
import time

import numpy as np

import fastatari


def main() -> None:
    n, workers, steps = (int(arg) for arg in sys.argv[1:4])
    flags = sys.argv[4:]
    batch = int(flags[flags.index("--batch") + 1]) if "--batch" in flags else None
    envs = fastatari.make_vec("breakout", n, num_workers=workers, batch_size=batch,
                              repeat_action_probability=0.0, copy="--copy" in flags)
    envs.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 4, (steps, batch or n))
    def step(a: np.ndarray) -> None:
        if batch is None:
            envs.step(a)
        else:
            envs.send(a, envs.recv()[4]["env_id"])
    if batch is not None:
        envs.send(np.zeros(n, np.int64))
    for a in actions[:min(100, steps)]:  # warm-up
        step(a)
    before, start = resource.getrusage(resource.RUSAGE_THREAD), time.perf_counter()
    for a in actions:
        step(a)
    after, wall = resource.getrusage(resource.RUSAGE_THREAD), time.perf_counter() - start
    if batch is not None:
        for _ in range(-(-n // batch)):  # what is still in flight, before closing
            envs.recv()
    envs.close()
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"N={n} W={workers} batch={batch or n} trainer_cpu_us {cpu / steps * 1e6:.1f} "
          f"wall_us {wall / steps * 1e6:.0f} steps_per_s {len(actions[0]) * steps / wall:.0f}")


if __name__ == "__main__":
    main()
