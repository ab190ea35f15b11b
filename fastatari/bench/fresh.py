"""Start-up and memory of one vector env, measured in a fresh interpreter.

The ``vector`` section (:mod:`fastatari.bench.sections.vector`) runs this file as a script, by
its path, never with ``python -m``: ``-m`` imports the ``fastatari`` package first, which pulls
in gymnasium and ale_py, and the point is that each system pays its own imports, from the same
bare baseline (the standard library only). So this module imports nothing but the standard
library at its top, and imports each system inside the timed window. Prints one JSON object on
stdout.

    python fastatari/bench/fresh.py SYSTEM NUM_ENVS ROM ENV_ID SEED THREADS

The bench imports it too, for :func:`descendants` (:mod:`fastatari.bench.load`) and
:func:`gymnasium_reference_env` (:mod:`fastatari.bench.systems`): they live here so that the
script can use them without importing ``fastatari``.
"""
from __future__ import annotations

import json
import os
import sys
import time

if __name__ == "__main__":
    # run as a script, fastatari/bench/ is sys.path[0]: put the directory above fastatari/ there
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def status_field(pid: int, field: str = "VmRSS") -> int:
    """A numeric field of ``/proc/<pid>/status``, e.g. VmRSS in kB (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kb(pid: int) -> int:
    """Proportional set size: shared pages split among the processes mapping them."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(root: int) -> list[int]:
    """Every live process below ``root``: workers, forkservers, resource trackers."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()  # comm may hold spaces
        except OSError:
            continue
        if fields[0] != "Z":  # zombies hold no memory
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def gymnasium_reference_env(env_id: str):
    """gymnasium's reference pipeline for ale_py's ``env_id`` (e.g. ``ALE/Breakout-v5``): the
    v5 env with no frame skip and sticky actions off, ``AtariPreprocessing``'s defaults (frame
    skip 4, noop_max 30, 84×84 gray, max-pooling), then 4 frames stacked."""
    import ale_py
    import gymnasium
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    gymnasium.register_envs(ale_py)
    base = gymnasium.make(env_id, frameskip=1, repeat_action_probability=0.0)
    return FrameStackObservation(AtariPreprocessing(base), 4)


def open_system(system: str, num_envs: int, rom: str, env_id: str, seed: int, threads: int):
    """Import what ``system`` needs; return (make, reset, listed worker pids, close)."""
    if system == "fastatari":
        from fastatari.vector import make_vec

        return (lambda: make_vec(rom, num_envs, repeat_action_probability=0.0, timeout=120),
                lambda env: env.reset(seed=seed), lambda env: env.worker_pids,
                lambda env: env.close())
    if system == "gymnasium":
        import functools

        import ale_py  # imported here so that the import is timed
        import cv2  # noqa: F401
        import gymnasium
        from gymnasium.vector import AsyncVectorEnv

        fn = functools.partial(gymnasium_reference_env, env_id)
        gymnasium.register_envs(ale_py)
        return (lambda: AsyncVectorEnv([fn] * num_envs), lambda env: env.reset(seed=seed),
                lambda env: [p.pid for p in env.processes],
                lambda env: env.close(terminate=True))
    if system == "ale_py":
        import ale_py
        from ale_py.vector_env import AtariVectorEnv

        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
        return (lambda: AtariVectorEnv(rom, num_envs, num_threads=threads,
                                       repeat_action_probability=0.0, noop_max=30, stack_num=4,
                                       img_height=84, img_width=84, grayscale=True,
                                       frameskip=4, reward_clipping=False,
                                       use_fire_reset=False, episodic_life=False),
                lambda env: env.reset(seed=seed), lambda env: [], lambda env: env.close())
    if system == "envpool":
        import envpool

        return (lambda: envpool.make(env_id.split("/")[-1], env_type="gymnasium",
                                     num_envs=num_envs, num_threads=threads, seed=seed,
                                     repeat_action_probability=0.0, noop_max=30, stack_num=4,
                                     img_height=84, img_width=84, gray_scale=True, frame_skip=4,
                                     reward_clip=False, use_fire_reset=False,
                                     episodic_life=False),
                lambda env: env.reset(), lambda env: [], lambda env: env.close())
    raise ValueError(f"unknown system {system!r}")


def measure_startup(system: str, num_envs: int, rom: str, env_id: str, seed: int,
                    threads: int) -> dict:
    """Import ``system``, then build ``num_envs`` envs and reset them, timed; with the memory
    of this process and every process below it."""
    me = os.getpid()
    start = time.perf_counter()
    make, reset, listed, close = open_system(system, num_envs, rom, env_id, seed, threads)
    import_s = time.perf_counter() - start
    rss_before, pss_before = status_field(me), pss_kb(me)
    start = time.perf_counter()
    env = make()
    try:
        reset(env)
        startup_s = time.perf_counter() - start
        workers = listed(env)
        others = descendants(me)
        missing = sorted(set(workers) - set(others))
        if missing:
            raise RuntimeError(f"worker pids {missing} are not children of {me}")
        main_rss_kb = status_field(me)
        result = {
            "system": system, "num_envs": num_envs,
            "import_s": import_s, "startup_s": startup_s,
            "processes": 1 + len(others), "workers": len(workers),
            "main_rss_mb": main_rss_kb / 1024,
            "main_rss_delta_mb": (main_rss_kb - rss_before) / 1024,
            "children_rss_mb": sum(status_field(pid) for pid in others) / 1024,
            "pss_delta_mb": (pss_kb(me) - pss_before + sum(pss_kb(pid) for pid in others)) / 1024,
            "main_threads": status_field(me, "Threads"),
        }
    finally:
        close(env)
    return result


if __name__ == "__main__":
    system, num_envs, rom, env_id, seed, threads = sys.argv[1:7]
    print(json.dumps(measure_startup(system, int(num_envs), rom, env_id, int(seed), int(threads))))
