"""The trainer thread's CPU time per synchronous step, side by side in one process:
fastatari (its compiled common step, and the general path it falls back to), EnvPool and
ale-py's ``AtariVectorEnv``.

    python benchmarks/trainer_side_by_side.py [--envs 8,64,256] [--threads 2] [--rounds 5]

Breakout, sticky actions off, random actions; ``getrusage(RUSAGE_THREAD)`` of the calling
thread (user + sys: its own work, whatever the core count); the systems interleaved round by
round, medians. ``copy=True`` rows compare with EnvPool and ale-py (both return fresh arrays);
``copy=False`` rows are fastatari's views; the last column is fastatari's time over each
row's (below 1: fastatari's trainer pays less); "the observations' copy alone" times that copy
(warm, in a loop: a floor for the copy out of shared memory a ``copy=True`` step makes).
EnvPool and ale-py's vector env are left out when they are not installed.
"""
from __future__ import annotations

import argparse
import resource
import sys
from typing import Any, Callable, Dict, Tuple

import numpy as np

import fastatari

System = Tuple[Callable[[np.ndarray], Any], Callable[[], None]]


def thread_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def open_systems(n: int, threads: int, copy: bool) -> Dict[str, System]:
    systems: Dict[str, System] = {}
    for name, compiled in (("fastatari", True), ("fastatari, general path", False)):
        envs = fastatari.make_vec("breakout", n, num_workers=threads, copy=copy,
                                  repeat_action_probability=0.0)
        envs.reset(seed=0)
        if not compiled:
            envs._sync = None  # every step on the general path: the reference it replaces
        systems[name] = (envs.step, envs.close)
    if not copy:
        return systems
    # the bound copy=True carries: the trainer copies the observations out of the shared memory
    # its worker processes reuse (ale-py's and EnvPool's threads write the returned arrays)
    frames = np.zeros((n, 4, 84, 84), np.uint8)
    systems["the observations' copy alone"] = (lambda _: frames.copy(), lambda: None)
    try:
        import envpool

        pool = envpool.make("Breakout-v5", env_type="gymnasium", num_envs=n,
                            num_threads=threads, repeat_action_probability=0.0,
                            episodic_life=False, reward_clip=False, use_fire_reset=False)
        pool.reset()
        systems[f"EnvPool {envpool.__version__}"] = (pool.step, pool.close)
    except ImportError:
        pass
    try:
        import ale_py
        from ale_py.vector_env import AtariVectorEnv

        ale = AtariVectorEnv("breakout", num_envs=n, num_threads=threads,
                             repeat_action_probability=0.0)
        ale.reset(seed=0)
        systems[f"ale-py {ale_py.__version__} AtariVectorEnv"] = (ale.step, ale.close)
    except ImportError:
        pass
    return systems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="8,64,256")
    parser.add_argument("--threads", type=int, default=2, help="workers or threads")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; workers or threads: {args.threads}")
    print("| N | workers | copy | system | trainer CPU µs per step | fastatari ÷ this |")
    print("|---|---|---|---|---|---|")
    for n in (int(k) for k in args.envs.split(",")):
        steps = max(80, 12_000 // n)
        for copy in (True, False):
            systems = open_systems(n, args.threads, copy)
            actions = np.random.default_rng(0).integers(0, 4, (steps, n))
            times: Dict[str, list] = {name: [] for name in systems}
            try:
                for _ in range(args.rounds):
                    for name, (step, _) in systems.items():
                        for a in actions[:20]:  # warm-up, untimed
                            step(a)
                        start = thread_cpu()
                        for a in actions:
                            step(a)
                        times[name].append((thread_cpu() - start) / steps * 1e6)
            finally:
                for _, close in systems.values():
                    close()
            medians = {name: float(np.median(values)) for name, values in times.items()}
            ours = medians["fastatari"]
            for name, value in medians.items():
                ratio = "" if name == "fastatari" else f"{ours / value:.2f}"
                print(f"| {n} | {args.threads} | {copy} | {name} | {value:.0f} | {ratio} |",
                      flush=True)


if __name__ == "__main__":
    main()
