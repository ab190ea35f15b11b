"""The vector envs under test, opened alike; run as a script, one's start-up and memory.

:data:`VECTOR_SYSTEMS`: gymnasium's ``AsyncVectorEnv`` over its reference pipeline,
``fastatari.make_vec``, ale_py's ``AtariVectorEnv`` and EnvPool, all with Breakout-style
settings: sticky actions off, frame skip 4, 84×84 gray, stack 4, noop_max 30, no reward
clipping, no fire reset, no episodic life. The ``vector`` section runs this file by its path
(``-m`` would import fastatari first): each system pays its own imports, from the same bare
start, so only the standard library is imported at the top. It prints one JSON object::

    python fastatari/bench/systems.py SYSTEM NUM_ENVS ROM SEED THREADS
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

if __name__ == "__main__":  # sys.path[0] is fastatari/bench/: the folder above fastatari/ instead
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FRAME_SKIP = 4
TIMEOUT = 120.0  # seconds any one wait may take before the harness gives up
VECTOR_SYSTEMS = ("gymnasium", "fastatari", "ale_py", "envpool")  # gymnasium forks: first


def gymnasium_id(rom: str) -> str:
    """ale_py's gymnasium id of a ROM id: ``space_invaders`` → ``ALE/SpaceInvaders-v5``."""
    return f"ALE/{rom.title().replace('_', '')}-v5"


def gymnasium_reference_env(rom: str):
    """gymnasium's reference pipeline: ale_py's v5 env, no frame skip, no sticky actions,
    under ``AtariPreprocessing``'s defaults (84×84 gray, max-pooling), 4 frames stacked."""
    import ale_py
    import gymnasium
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    gymnasium.register_envs(ale_py)
    base = gymnasium.make(gymnasium_id(rom), frameskip=1, repeat_action_probability=0.0)
    return FrameStackObservation(AtariPreprocessing(base), 4)


@dataclass
class Opened:
    """A vector env, reset, and what the sections need of it."""

    env: Any
    num_envs: int
    num_actions: int
    step: Callable[[Any], Any]
    close: Callable[[], None]
    pids: list[int] = field(default_factory=list)  # its worker processes, if any
    batch_size: int | None = None  # async: envs one ``recv`` returns
    sending: bool = False  # async: every env has a step in flight


def opened(env: Any, num_envs: int, reset: Callable[[], Any], **fields: Any) -> Opened:
    """``env`` after ``reset()``, closed if that raises; ``fields``: more of :class:`Opened`
    (``step`` and ``close`` are the env's unless given)."""
    fields = {"step": env.step, "close": env.close, **fields}
    try:
        reset()
    except BaseException:
        fields["close"]()
        raise
    space = getattr(env, "single_action_space", env.action_space)
    return Opened(env, num_envs, int(space.n), **fields)


# ale_py's and EnvPool's keywords for what fastatari's defaults mean (theirs clip rewards, ...)
SHARED: dict[str, Any] = dict(
    repeat_action_probability=0.0, noop_max=30, stack_num=4, img_height=84, img_width=84,
    use_fire_reset=False, episodic_life=False)


def vector_maker(system: str, rom: str, num_envs: int, threads: int, seed: int,
                 **keywords: Any) -> Callable[[], Opened]:
    """Import what ``system`` needs; return what builds it on ``threads`` threads or worker
    processes and resets it. ``keywords``: more of its own (fastatari: ``batch_size``,
    ``copy``, ``timeout``; EnvPool: ``batch_size``, then ``async_reset``: every env in flight)."""
    if system == "fastatari":
        from fastatari.vector import make_vec

        def make() -> Opened:
            env = make_vec(rom, num_envs, num_workers=threads, repeat_action_probability=0.0,
                           **{"timeout": TIMEOUT, **keywords})
            return opened(env, num_envs, lambda: env.reset(seed=seed),
                          pids=list(env.worker_pids), batch_size=env.batch_size)
    elif system == "gymnasium":
        import functools

        import ale_py  # noqa: F401 - imported here, so that the import is timed
        import cv2  # noqa: F401
        from gymnasium.vector import AsyncVectorEnv

        def make() -> Opened:  # gymnasium's default context (fork on Linux), as users get it
            env = AsyncVectorEnv([functools.partial(gymnasium_reference_env, rom)] * num_envs)
            return opened(env, num_envs, lambda: env.reset(seed=seed),
                          close=lambda: env.close(terminate=True),
                          pids=[p.pid for p in env.processes])
    elif system == "ale_py":
        import ale_py
        from ale_py.vector_env import AtariVectorEnv

        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)

        def make() -> Opened:
            env = AtariVectorEnv(rom, num_envs, num_threads=threads, grayscale=True,
                                 frameskip=FRAME_SKIP, maxpool=True, reward_clipping=False,
                                 **SHARED)
            return opened(env, num_envs, lambda: env.reset(seed=seed))
    elif system == "envpool":
        import envpool

        def make() -> Opened:
            env = envpool.make(gymnasium_id(rom)[4:], env_type="gymnasium", num_envs=num_envs,
                               num_threads=threads, seed=seed, gray_scale=True,
                               frame_skip=FRAME_SKIP, reward_clip=False, **SHARED, **keywords)
            batch = keywords.get("batch_size")
            return opened(env, num_envs, env.reset if batch is None else env.async_reset,
                          batch_size=batch, sending=batch is not None)
    else:
        raise ValueError(f"unknown system {system!r}; one of {VECTOR_SYSTEMS}")
    return make


def open_vector(system: str, rom: str, num_envs: int, threads: int, seed: int,
                **keywords: Any) -> Opened:
    """``system`` built and reset (see :func:`vector_maker`)."""
    return vector_maker(system, rom, num_envs, threads, seed, **keywords)()


def envpool_version() -> str | None:
    """EnvPool's version, None if it is not installed or does not import."""
    try:
        import envpool
    except Exception:  # noqa: BLE001 - a broken install is reported as missing
        return None
    return getattr(envpool, "__version__", "unknown")


def proc_kb(pid: int, name: str = "VmRSS", file: str = "status") -> int:
    """A field in kB of ``/proc/<pid>/<file>``: VmRSS of ``status``, Pss of ``smaps_rollup``
    (shared pages split among the processes mapping them); 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/{file}") as lines:
            for line in lines:
                if line.startswith(name + ":"):
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


def measure_startup(system: str, num_envs: int, rom: str, seed: int, threads: int) -> dict:
    """Import ``system``, then build ``num_envs`` envs and reset them, timed; with the memory
    of this process and of every process below it."""
    me = os.getpid()
    start = time.perf_counter()
    make = vector_maker(system, rom, num_envs, threads, seed)
    import_s = time.perf_counter() - start
    rss_before, pss_before = proc_kb(me), proc_kb(me, "Pss", "smaps_rollup")
    start = time.perf_counter()
    opened = make()
    try:
        startup_s = time.perf_counter() - start
        others = descendants(me)
        missing = sorted(set(opened.pids) - set(others))
        if missing:
            raise RuntimeError(f"worker pids {missing} are not children of {me}")
        pss = sum(proc_kb(pid, "Pss", "smaps_rollup") for pid in [me, *others])
        return {"system": system, "num_envs": num_envs, "import_s": import_s,
                "startup_s": startup_s, "processes": 1 + len(others),
                "main_rss_delta_mb": (proc_kb(me) - rss_before) / 1024,
                "children_rss_mb": sum(proc_kb(pid) for pid in others) / 1024,
                "pss_delta_mb": (pss - pss_before) / 1024}
    finally:
        opened.close()


def startup_in_fresh_interpreter(system: str, num_envs: int, rom: str, seed: int,
                                 threads: int) -> dict[str, Any]:
    """:func:`measure_startup` in a fresh interpreter running this file; its whole process group
    is killed if it fails or outlives the timeout."""
    script = os.path.abspath(__file__)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [
        os.path.dirname(os.path.dirname(os.path.dirname(script))), env.get("PYTHONPATH")]))
    process = subprocess.Popen([sys.executable, script, system, str(num_envs), rom, str(seed),
                                str(threads)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env, start_new_session=True)
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None or process.returncode:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the interpreter and anything it started
            process.communicate()
    if process.returncode:
        lines = (err or "").strip().splitlines()
        raise RuntimeError(f"the fresh interpreter exited with {process.returncode}: "
                           f"{lines[-1] if lines else 'no output'}")
    return json.loads(out.strip().splitlines()[-1])


if __name__ == "__main__":
    name, envs, rom_id, seed_text, thread_count = sys.argv[1:6]
    print(json.dumps(measure_startup(name, int(envs), rom_id, int(seed_text), int(thread_count))))
