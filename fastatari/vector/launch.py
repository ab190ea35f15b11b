"""Starting a worker process from fastatari's own entry point.

multiprocessing's ``spawn`` and ``forkserver`` re-import the trainer's ``__main__`` in every
child: a script without ``if __name__ == "__main__":`` dies, and one that imports torch at
its top level loads torch in every worker. So a worker here is a fresh interpreter that runs
:func:`fastatari.vector.worker.main` and nothing else (``python -c``, with the trainer's
``sys.path``): no fork, so threads in the trainer are harmless, and the same on Linux and
macOS. Its end of a socket pair, the shared memory's descriptor and (Linux) the eventfd that
wakes the trainer are inherited (``pass_fds``); it learns the rest from the first message
(``messages.WorkerConfig``).

A fresh interpreter imports numpy and ale_py in ~0.25 s of one core; the workers start in
parallel, so this costs about what forking from a preloaded server did once it was up.

Windows has no descriptor passing for ``subprocess``: there workers are multiprocessing
``spawn`` children (which re-import ``__main__``, so a main guard is needed there), and a
worker's stderr is the trainer's (not captured). Which of the two: :data:`HOST.spawn
<fastatari.vector.host.HOST>`, which ``FASTATARI_PLATFORM_PATHS=windows`` forces on POSIX: there
spawn passes the descriptors at their numbers (multiprocessing's ``DupFd``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
from multiprocessing import reduction, spawn
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import IO, Any, Callable, List, Optional, Tuple, Union

from fastatari.vector.buffers import Handle
from fastatari.vector.host import HOST

__all__ = ["WorkerProcess", "launch", "worker_path"]

# ``python -c`` puts the working directory first on sys.path: nothing is imported before the
# path is set (``sys`` is built in; -P would do it from 3.11 on, this works on 3.10 too).
_BOOT = ("import sys; sys.path[:] = sys.argv[2:]; "
         "from fastatari.vector.worker import main; main(sys.argv[1:2])")
STDERR_TAIL_BYTES = 2000


class WorkerProcess:
    """A launched worker: its pipe, and the process with ``subprocess.Popen``'s interface."""

    def __init__(self, conn: Connection, pid: int,
                 process: Union["subprocess.Popen[bytes]", BaseProcess],
                 stderr: Optional[IO[bytes]]) -> None:
        self.conn = conn
        self.pid = pid
        self._process = process
        self._stderr = stderr

    def exitcode(self) -> Optional[int]:
        """None while it runs; negative: the signal that ended it (as ``Popen.returncode``)."""
        process = self._process
        if isinstance(process, subprocess.Popen):
            return process.poll()
        return process.exitcode

    def wait(self, timeout: float) -> Optional[int]:
        process = self._process
        try:
            if isinstance(process, subprocess.Popen):
                return process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        process.join(timeout)
        return process.exitcode

    def kill(self) -> None:
        if self.exitcode() is None:
            try:
                self._process.kill()
            except OSError:
                pass

    def cause(self) -> str:
        """How it ended, in words: ``killed by SIGKILL``, ``exit code 1``."""
        code = self.exitcode()
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def stderr_tail(self) -> str:
        """The last lines the worker wrote to stderr (captured, since workers print nowhere)."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - STDERR_TAIL_BYTES))
            return self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def release(self) -> None:
        """Close the pipe and the captured stderr (the process must be gone), and a spawn
        child's own descriptors."""
        self.conn.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if isinstance(self._process, BaseProcess):
            try:
                self._process.close()
            except ValueError:  # still running (a kill not yet done): its finalizer closes them
                pass


def launch(memory: Handle, name: str, wake_fd: int = -1) -> WorkerProcess:
    """Start a worker process; ``memory`` is the shared memory's handle it inherits, and
    ``wake_fd`` (unless -1) the eventfd it wakes the trainer with."""
    if HOST.spawn:
        return _launch_spawn(memory, name, wake_fd)
    parent, child = mp.Pipe()
    stderr = tempfile.TemporaryFile(prefix="fastatari-worker-")
    try:
        process = subprocess.Popen(
            [_python(), "-c", _BOOT, str(child.fileno())] + worker_path(),
            pass_fds=(child.fileno(), int(memory)) + ((wake_fd,) if wake_fd >= 0 else ()),
            stdin=subprocess.DEVNULL, stderr=stderr)
    except BaseException:
        parent.close()
        stderr.close()
        raise
    finally:
        child.close()
    del name  # subprocess has no process names; workers show as `python -c ...`
    return WorkerProcess(parent, process.pid, process, stderr)


def worker_path() -> List[str]:
    """A worker's ``sys.path``: the trainer's, with the working directory (its "" entry, which
    ``python -c`` and a notebook put first, or the folder itself, as ``python -m`` does) moved
    last: a json.py or numpy.py in the folder a job starts from never shadows the standard
    library or an installed package in a worker, while a project's own modules there (a game
    factory) are still found. Where fastatari itself was imported from the working directory
    (a clone run from its root), it stays where it is, so both import the same fastatari."""
    here = os.path.realpath(os.getcwd())
    # the folder that holds the fastatari package (this file: fastatari/vector/launch.py)
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    path = [entry or here for entry in sys.path
            if os.path.realpath(entry or here) != here or here == home]
    if len(path) < len(sys.path):
        path.append(here)
    return path


def _python() -> str:
    """The trainer's interpreter (multiprocessing's choice, which handles venvs and pythonw)."""
    return spawn.get_executable() or sys.executable


def _launch_spawn(memory: Handle, name: str, wake_fd: int) -> WorkerProcess:
    """A multiprocessing ``spawn`` child running the worker: Windows' way (the memory's handle
    is its name there), and POSIX's where forced (the memory and the eventfd are descriptors,
    which the child inherits at their numbers)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    fds = [fd for fd in (memory, wake_fd) if isinstance(fd, int) and fd >= 0]
    process = ctx.Process(target=_serve_spawned,
                          args=(child, [_Inherited(fd) for fd in fds], worker_path()),
                          name=name, daemon=True)
    try:
        process.start()
    except BaseException:
        parent.close()
        raise
    finally:
        child.close()
    assert process.pid is not None  # started
    return WorkerProcess(parent, process.pid, process, None)


class _Inherited:
    """A descriptor a spawn child inherits: pickled with the child's arguments, where
    multiprocessing's ``DupFd`` passes it to the child at the same number (POSIX spawn)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> Tuple[Callable[..., int], Tuple[Any, ...]]:
        return _inherited, (self.fd, reduction.DupFd(self.fd))


def _inherited(fd: int, dup: Any) -> int:
    """In the child: the descriptor ``fd`` names in the :class:`WorkerConfig` is there."""
    got = dup.detach()
    if got != fd:  # (not spawn: the worker's config would name the wrong descriptor)
        raise RuntimeError(f"descriptor {fd} reached the worker as {got}")
    return got


def _serve_spawned(conn: Connection, inherited: List[int], path: List[str]) -> None:
    """A spawn child's entry: ``inherited`` holds the descriptors it was passed (already
    checked in place by their unpickling); ``path``, :func:`worker_path` (multiprocessing's
    own start-up ran on the trainer's, working directory included)."""
    sys.path[:] = path
    from fastatari.vector.worker import serve

    del inherited
    serve(conn)
