"""fastatari.vector.host: each platform's ways decided once (HOST), FASTATARI_PLATFORM_PATHS and
FASTATARI_PORTABLE_WAITS forcing other platforms' ways where this one can run them, every module
reading the same HOST, and the pipe waits of each way. (The launch, the memory and the pinning
of each way are tested with their modules, forced: test_workers, test_buffers, test_placement;
the whole vector suite runs under each forced platform in CI: .ci/run.)"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import select
import sys

import pytest

from fastatari.vector import pool
from fastatari.vector.host import HOST, Host, detect

from .._python import run_code, same_fastatari


def native() -> Host:
    return detect(environ={})


def test_this_platforms_ways():
    ways = native()
    windows = sys.platform == "win32"
    assert ways == Host(
        platform=sys.platform, portable_waits=False, spawn=windows,
        memory="named" if windows else "memfd" if hasattr(os, "memfd_create") else "file",
        poll=not windows and hasattr(select, "poll"),
        affinity=not windows and hasattr(os, "sched_setaffinity"))


def test_portable_waits_alone():
    assert detect(environ={"FASTATARI_PORTABLE_WAITS": "1"}) == dataclasses.replace(
        native(), portable_waits=True)
    assert detect(environ={"FASTATARI_PORTABLE_WAITS": "0"}) == native()


@pytest.mark.skipif(sys.platform == "win32", reason="forces other platforms' ways on POSIX")
def test_forced_platforms_take_the_ways_this_one_can_run():
    ways = native()
    macos = detect(environ={"FASTATARI_PLATFORM_PATHS": "macos"})
    assert macos == dataclasses.replace(ways, platform="darwin", portable_waits=True,
                                        memory="file", affinity=False)
    windows = detect(environ={"FASTATARI_PLATFORM_PATHS": "windows"})
    # (a named mapping needs Windows: the memory stays a descriptor, which spawn passes)
    assert windows == dataclasses.replace(ways, platform="win32", portable_waits=True,
                                          spawn=True, poll=False, affinity=False)
    assert detect(environ={"FASTATARI_PLATFORM_PATHS": ""}) == ways


@pytest.mark.parametrize("value", ["linux", "Windows", "win32", "darwin", "1"])
def test_an_unknown_platform_is_refused(value):
    with pytest.raises(ValueError, match="FASTATARI_PLATFORM_PATHS must be one of macos, "
                                         "windows or empty, got"):
        detect(environ={"FASTATARI_PLATFORM_PATHS": value})


def test_host_is_read_once_and_every_module_reads_the_same():
    assert HOST == detect()
    assert pool.PORTABLE_WAITS == (not pool._wait.FAST_WAITS or HOST.portable_waits)
    code = ("from fastatari.vector import buffers, host, launch, placement, pool; "
            "print(all(m.HOST is host.HOST for m in (buffers, launch, placement, pool)), "
            "host.HOST.spawn, host.HOST.memory, pool.PORTABLE_WAITS)")
    result = run_code(code, env=same_fastatari(FASTATARI_PLATFORM_PATHS="windows"), timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", native().memory, "True"]


@pytest.mark.parametrize("poll", [True, False], ids=["poll", "multiprocessing-wait"])
def test_the_pipe_waits_of_each_way(monkeypatch, poll):
    """The pool's look at the workers' pipes: ``poll(2)``, or Windows'
    ``multiprocessing.connection.wait`` (HOST.poll, forced)."""
    if poll and not hasattr(select, "poll"):
        pytest.skip("no poll(2) here")
    monkeypatch.setattr(pool, "HOST", dataclasses.replace(HOST, poll=poll))
    pairs = [mp.Pipe() for _ in range(3)]
    try:
        ours = [a for a, _ in pairs]
        assert pool._wait_pipes(ours, 0.01) == []
        pairs[1][1].send_bytes(b"x")
        assert pool._wait_pipes(ours, 1.0) == [ours[1]]
        pairs[2][1].close()  # a worker gone: end of file
        assert sorted(map(id, pool._wait_pipes(ours, 1.0))) == sorted(map(id, ours[1:]))
    finally:
        for a, b in pairs:
            a.close()
            b.close()
