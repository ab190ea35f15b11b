"""The trainer thread's CPU time per synchronous step, and per async ``recv`` + ``send`` of a
batch, side by side in one process: fastatari (its compiled step, and the same step with every
call through the front's checks in Python first: FASTATARI_CHECKED_CALLS=1), EnvPool and
ale-py's ``AtariVectorEnv``.

    python benchmarks/trainer_side_by_side.py [--envs 8,64,256] [--threads 2] [--rounds 5]
                                              [--async 24/8,64/16]

Breakout, sticky actions off, random actions; ``time.thread_time()`` of the calling
thread (user + sys: its own work, whatever the core count); the systems interleaved round by
round, medians. ``copy=True`` rows compare with EnvPool and ale-py (both return fresh arrays);
``copy=False`` rows are fastatari's views; the last column is fastatari's time over each
row's (below 1: fastatari's trainer pays less). With ``copy=True`` the step returns an
output slot the workers wrote, while one is free. EnvPool and ale-py's vector env are left out
when they are not installed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Dict, Tuple

import numpy as np

import fastatari

System = Tuple[Callable[[np.ndarray], Any], Callable[[], None]]


def thread_cpu() -> float:
    # the thread's CPU clock reads the time run so far; getrusage(RUSAGE_THREAD) lags by up to
    # a scheduler tick for a thread that does not sleep (as the copy-alone row)
    return time.thread_time()


def fastatari_pair(n: int, threads: int, **keywords: Any) -> Dict[str, Any]:
    """fastatari, and fastatari with every call through the front's checks first (the lane of
    actions it cannot take as they are), reset."""
    pair = {}
    for name, checked in (("fastatari", False), ("fastatari, checked calls", True)):
        os.environ["FASTATARI_CHECKED_CALLS"] = "1" if checked else "0"  # read at make_vec
        envs = fastatari.make_vec("breakout", n, num_workers=threads,
                                  repeat_action_probability=0.0, **keywords)
        envs.reset(seed=0)
        pair[name] = envs
    del os.environ["FASTATARI_CHECKED_CALLS"]
    return pair


def open_systems(n: int, threads: int, copy: bool) -> Dict[str, System]:
    systems: Dict[str, System] = {name: (envs.step, envs.close) for name, envs
                                  in fastatari_pair(n, threads, copy=copy).items()}
    if not copy:
        return systems
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


def open_async_systems(n: int, batch: int, threads: int) -> Dict[str, System]:
    """Per system, one ``recv`` of ``batch`` envs and the ``send`` of their next actions."""
    systems: Dict[str, System] = {}
    for name, envs in fastatari_pair(n, threads, batch_size=batch).items():
        envs.send(np.zeros(n, np.int64))

        def turn(actions: np.ndarray, envs: Any = envs) -> None:
            envs.send(actions, envs.recv()[4]["env_id"])

        def close(envs: Any = envs) -> None:  # what is in flight received first (no warning)
            for _ in range(-(-n // batch)):
                envs.recv()
            envs.close()
        systems[name] = (turn, close)
    try:
        import envpool

        pool = envpool.make("Breakout-v5", env_type="gymnasium", num_envs=n, batch_size=batch,
                            num_threads=threads, repeat_action_probability=0.0,
                            episodic_life=False, reward_clip=False, use_fire_reset=False)
        pool.async_reset()

        def pool_turn(actions: np.ndarray) -> None:
            pool.send(actions, pool.recv()[4]["env_id"])
        systems[f"EnvPool {envpool.__version__}"] = (pool_turn, pool.close)
    except ImportError:
        pass
    try:
        import ale_py
        from ale_py.vector_env import AtariVectorEnv

        ale = AtariVectorEnv("breakout", num_envs=n, batch_size=batch, num_threads=threads,
                             repeat_action_probability=0.0)
        ale.reset(seed=0)
        ale.send(np.zeros(batch, np.int64))

        def ale_turn(actions: np.ndarray) -> None:
            ale.recv()
            ale.send(actions)
        systems[f"ale-py {ale_py.__version__} AtariVectorEnv"] = (ale_turn, ale.close)
    except ImportError:
        pass
    return systems


def measure(systems: Dict[str, System], actions: np.ndarray, rounds: int) -> Dict[str, float]:
    """The median over ``rounds`` of each system's trainer CPU µs per call, interleaved."""
    times: Dict[str, list] = {name: [] for name in systems}
    try:
        for _ in range(rounds):
            for name, (step, _) in systems.items():
                for a in actions[:20]:  # warm-up, untimed
                    step(a)
                start = thread_cpu()
                for a in actions:
                    step(a)
                times[name].append((thread_cpu() - start) / len(actions) * 1e6)
    finally:
        for _, close in systems.values():
            close()
    return {name: float(np.median(values)) for name, values in times.items()}


def print_rows(first: str, medians: Dict[str, float]) -> None:
    ours = medians["fastatari"]
    for name, value in medians.items():
        ratio = "" if name == "fastatari" else f"{ours / value:.2f}"
        print(f"| {first} | {name} | {value:.0f} | {ratio} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="8,64,256", help="N of each sync row ('' for none)")
    parser.add_argument("--threads", type=int, default=2, help="workers or threads")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--async", dest="batches", default="24/8,64/16",
                        help="N/batch pairs for recv + send ('' for none)")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; workers or threads: {args.threads}")
    if args.envs:
        print("| N | workers | copy | system | trainer CPU µs per step | fastatari ÷ this |")
        print("|---|---|---|---|---|---|")
    for n in (int(k) for k in filter(None, args.envs.split(","))):
        actions = np.random.default_rng(0).integers(0, 4, (max(80, 12_000 // n), n))
        for copy in (True, False):
            print_rows(f"{n} | {args.threads} | {copy}",
                       measure(open_systems(n, args.threads, copy), actions, args.rounds))
    if args.batches:
        print("\n| N | batch | workers | system | trainer CPU µs per recv + send | "
              "fastatari ÷ this |")
        print("|---|---|---|---|---|---|")
    for pair in filter(None, args.batches.split(",")):
        n, batch = (int(k) for k in pair.split("/"))
        actions = np.random.default_rng(0).integers(0, 4, (max(80, 24_000 // batch), batch))
        print_rows(f"{n} | {batch} | {args.threads}",
                   measure(open_async_systems(n, batch, args.threads), actions, args.rounds))


if __name__ == "__main__":
    main()
