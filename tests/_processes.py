"""Process and shared-memory probes for the vector env's tests (Linux: /proc, /dev/shm)."""
from __future__ import annotations

import gc
import os
import re
import sys

import pytest

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and /dev/shm")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


#: A fastatari shared memory region as /proc shows it: Linux's memfd, or other POSIX's file,
#: unlinked at once (FASTATARI_PLATFORM_PATHS=macos takes that way here).
_BLOCK = re.compile(r"memfd:fastatari|/fastatari-[a-z0-9_]{8} \(deleted\)$")


def blocks_held(pid: int | str = "self") -> int:
    """fastatari shared memory regions a process maps or holds open (they have no name in /dev/shm:
    each is freed with the last process that holds it). In this process, after a collection: an
    earlier test's garbage may hold observations (a step's output slot maps its memory)."""
    if pid == "self":
        gc.collect()
    fds = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds += bool(_BLOCK.search(os.readlink(f"/proc/{pid}/fd/{fd}")))
        except OSError:
            pass
    with open(f"/proc/{pid}/maps") as maps:
        return fds + sum(bool(_BLOCK.search(line.rstrip("\n"))) for line in maps)


def shm_segments() -> set:
    return {name for name in os.listdir("/dev/shm")
            if name.startswith(("psm_", "fastatari"))}
