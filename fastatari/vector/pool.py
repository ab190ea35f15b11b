"""The worker processes of one vector env: start, command, collect replies, restart.

The pool knows processes, pipes and the protocol; it does not know episodes. It waits on the
workers' pipes only: a worker that dies closes its end, so its death is seen at once, as the
end of the file. A worker that dies, or misses the call's deadline (then it is killed), is
replaced by a new one whose games are reset with seeds the env provides; the collect reports
:attr:`ReplyKind.RESTARTED` for it, with the envs whose replies died with it.

Restart policy: a worker that made progress (answered a command) since its last start is always
restarted. Only ``max_crashes_without_progress`` deaths in a row without progress (a broken
install, a ROM that crashes at once) raise ``RuntimeError``, with the cause and the tail of the
worker's stderr. ``max_restarts`` optionally caps restarts over the pool's whole life.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import select
import time
import warnings
import weakref
from multiprocessing.connection import Connection, wait
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np

from fastatari.vector import protocol
from fastatari.vector.buffers import SharedBuffers
from fastatari.vector.launch import WorkerProcess, launch
from fastatari.vector.protocol import Reply, ReplyKind, ResetRequest, WorkerConfig

__all__ = ["WorkerError", "WorkerPool", "raise_errors"]


class WorkerError(RuntimeError):
    """A Python exception inside a worker; the message carries the worker's traceback."""


#: The least time a worker gets to start (a fresh interpreter, its imports and ROM checks),
#: whatever ``timeout`` is: a step's deadline is no measure of a start on a loaded machine,
#: and a start cut short would only be tried again, just as short.
MIN_START_SECONDS = 60.0

# (envs a reply covers, whether it is the last reply of its command)
Owed = Tuple[np.ndarray, bool]
_NO_ENVS = np.zeros(0, np.int64)


class _Resources:
    """What must be released even if the env is garbage-collected or the trainer is
    interrupted: kept apart from the pool so that a weakref finalizer can own it."""

    def __init__(self, buffers: SharedBuffers) -> None:
        self.buffers: Optional[SharedBuffers] = buffers
        self.workers: List[Optional[WorkerProcess]] = []

    def release(self) -> None:
        for worker in self.workers:
            if worker is not None:
                try:
                    worker.conn.send_bytes(protocol.encode_close())
                except (OSError, ValueError):
                    pass
        for worker in self.workers:
            if worker is not None:
                if worker.wait(2.0) is None:
                    worker.kill()
                    worker.wait(2.0)
                worker.release()
        self.workers = []
        if self.buffers is not None:
            self.buffers.close()
            self.buffers = None


class WorkerPool:
    """``len(blocks)`` workers, worker ``k`` owning the envs ``blocks[k]``, which it steps in
    that order.

    Parameters
    ----------
    config : WorkerConfig
        The template every worker's config is made from: ``games`` holds every env's
        ``(ROM, options)``; index, envs, their games, resets and CPU are filled in per worker.
    buffers : SharedBuffers
        The shared block; owned from here on (released by :meth:`close`).
    blocks : sequence of ndarray
    restart_resets : callable
        ``restart_resets(k)`` -> the ``(env, seed)`` resets a replacement of worker ``k`` runs.
    timeout : float or None
        Seconds one call may wait for the workers; a worker that has not answered by then is
        killed and restarted. None waits forever.
    cpus : sequence of int, optional
        Worker ``k`` is pinned to ``cpus[k % len(cpus)]``.
    """

    def __init__(self, config: WorkerConfig, buffers: SharedBuffers,
                 blocks: Sequence[np.ndarray], restart_resets: Callable[[int], List[ResetRequest]],
                 timeout: Optional[float], max_crashes_without_progress: int,
                 max_restarts: Optional[int], cpus: Optional[Sequence[int]] = None) -> None:
        self.blocks = list(blocks)
        self.num_workers = len(self.blocks)
        self.timeout = timeout
        self.max_crashes_without_progress = max_crashes_without_progress
        self.max_restarts = max_restarts
        self.restarts = 0
        self._config = config
        self._cpus = list(cpus) if cpus else None
        self._restart_resets = restart_resets
        self._res = _Resources(buffers)
        self._finalizer = weakref.finalize(self, self._res.release)
        self._buf = buffers
        self._crashes = [0] * self.num_workers  # deaths since the worker last made progress
        self._owed: List[Deque[Owed]] = [collections.deque() for _ in range(self.num_workers)]
        self._step_all = [protocol.encode_step(0, bytes([protocol.Op.STEP]) * len(block))
                          for block in self.blocks]
        self._res.workers = [None] * self.num_workers
        self._owner = np.empty(sum(len(b) for b in self.blocks), np.int64)
        self._place = np.empty_like(self._owner)  # each env's place in its worker's order
        for k, block in enumerate(self.blocks):
            self._owner[block] = k
            self._place[block] = np.arange(len(block))

    # -- life ---------------------------------------------------------------------------------
    def start(self, resets: Callable[[int], List[ResetRequest]]) -> Dict[int, Reply]:
        """Start every worker (in parallel) with its first resets; wait until all are READY
        and return their READY replies. A worker that dies while starting is restarted like
        any other."""
        try:
            for k in range(self.num_workers):
                self._launch(k, resets(k), restarted=False)
            return self.collect(list(range(self.num_workers)), expect=ReplyKind.READY)
        except BaseException:
            self.close()
            raise

    def _launch(self, k: int, resets: List[ResetRequest], restarted: bool) -> None:
        worker = launch(self._buf.handle, f"fastatari-worker-{k}")
        self._res.workers[k] = worker
        cpu = self._cpus[k % len(self._cpus)] if self._cpus else None
        config = dataclasses.replace(
            self._config, index=k, env_ids=tuple(self.blocks[k].tolist()),
            games=tuple(self._config.games[i] for i in self.blocks[k]), resets=tuple(resets),
            restarted=restarted, cpu=cpu, block=self._buf.handle)
        try:
            worker.conn.send(config)
        except (BrokenPipeError, ConnectionResetError):
            pass  # died at once: the collect that follows sees it

    @property
    def pids(self) -> List[int]:
        return [w.pid for w in self._res.workers if w is not None]

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Stop the workers and free the shared block. Safe to call more than once."""
        self._finalizer()

    # -- commands -----------------------------------------------------------------------------
    def send(self, k: int, data: bytes) -> None:
        """Send a command; a worker that died meanwhile is found by the collect that follows."""
        try:
            self._res.workers[k].conn.send_bytes(data)  # type: ignore[union-attr]
        except (BrokenPipeError, ConnectionResetError):
            pass
        # After the write: a worker that sees the bump finds its command already in the pipe.
        self._buf.wake[self.blocks[k][0]] += 1

    def step_all(self) -> None:
        """The common step: every env of every worker steps; one reply per worker."""
        for k in range(self.num_workers):
            self.send(k, self._step_all[k])
            self._owed[k].append((self.blocks[k], True))

    def step(self, ops: np.ndarray, ids: np.ndarray, chunk: int) -> List[int]:
        """Send each worker owning some of ``ids`` its slice of ``ops`` (one
        :class:`~.protocol.Op` per env, IDLE for the others); workers answer after every
        ``chunk`` envs (0: once). Returns the workers sent a command."""
        owners = self.owner(ids)
        workers = [int(k) for k in np.unique(owners)]
        for k in workers:
            self.send(k, protocol.encode_step(chunk, ops[self.blocks[k]].tobytes()))
            mine = ids[owners == k]
            mine = mine[np.argsort(self._place[mine])]  # the order the worker runs them in
            size = chunk or mine.size
            for start in range(0, mine.size, size):
                self._owed[k].append((mine[start:start + size], start + size >= mine.size))
        return workers

    def owner(self, ids: np.ndarray) -> np.ndarray:
        """The worker of each env."""
        return self._owner[ids]

    def busy(self) -> List[int]:
        """Workers that owe replies."""
        return [k for k in range(self.num_workers) if self._owed[k]]

    # -- replies ------------------------------------------------------------------------------
    def collect(self, workers: List[int], first: bool = False,
                expect: ReplyKind = ReplyKind.DONE) -> Dict[int, Reply]:
        """One reply from each of ``workers`` (``first``: from whichever answer first, at
        least one); see :class:`~.protocol.Reply` for what each carries. Every reply is
        collected even if some are errors (so the protocol stays in step): pass the result
        to :func:`raise_errors`. Ctrl-C or any other exception here closes the pool."""
        replies: Dict[int, Reply] = {}
        waiting = {self._res.workers[k].conn: k for k in workers}  # type: ignore[union-attr]
        timeout = self.timeout
        if timeout is not None and expect is ReplyKind.READY:
            timeout = max(timeout, MIN_START_SECONDS)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while waiting and not (first and replies):
                ready = _wait(list(waiting), _remaining(deadline))
                if not ready:
                    for k in sorted(waiting.values()):
                        replies[k] = self._replace(k, hung=True)
                    break
                for conn in ready:
                    k = waiting.pop(conn)
                    restarts = self.restarts
                    replies[k] = self._receive(k, expect)
                    if self.restarts != restarts and timeout is not None:
                        # a replacement's start is not the others' time to answer
                        deadline = time.monotonic() + timeout
        except BaseException:
            self.close()
            raise
        return replies

    def _receive(self, k: int, expect: ReplyKind) -> Reply:
        worker = self._res.workers[k]
        try:
            reply = protocol.decode_reply(worker.conn.recv_bytes())  # type: ignore[union-attr]
        except (EOFError, OSError):
            return self._replace(k, hung=False)
        if reply.kind is ReplyKind.ERROR:
            if expect is ReplyKind.READY:  # a worker that cannot start will never start
                self.close()
                raise WorkerError(f"worker {k} failed to start:\n{reply.payload}")
            return Reply(ReplyKind.ERROR, reply.payload, self._settle(k, failed=True))
        if expect is not ReplyKind.READY:
            self._crashes[k] = 0  # it answered a command: progress
        if reply.kind is ReplyKind.DONE and self._owed[k]:
            return Reply(ReplyKind.DONE, envs=self._settle(k, failed=False))
        return reply

    def _settle(self, k: int, failed: bool) -> np.ndarray:
        """The envs the reply covers. An error ends its whole command: the envs it had not
        answered for get no result."""
        owed = self._owed[k]
        covered = []
        while owed:
            ids, last = owed.popleft()
            covered.append(ids)
            if last or not failed:
                break
        return np.concatenate(covered) if covered else _NO_ENVS

    def _replace(self, k: int, hung: bool) -> Reply:
        """Worker ``k`` died (or hung: kill it); start another with its envs' restart resets."""
        worker = self._res.workers[k]
        assert worker is not None
        if hung:
            worker.kill()
        code = worker.wait(5.0)
        if code is None:  # its pipe closed but it lives on: make sure it is gone
            worker.kill()
            worker.wait(5.0)
        cause = ("did not answer within the timeout of "
                 f"{self.timeout} s and was killed" if hung else worker.cause())
        tail = worker.stderr_tail()
        worker.release()
        self._res.workers[k] = None
        self._crashes[k] += 1
        self.restarts += 1
        limit = self.max_crashes_without_progress
        if self._crashes[k] >= limit or (self.max_restarts is not None
                                         and self.restarts > self.max_restarts):
            why = (f"{self._crashes[k]} times in a row without progress"
                   if self._crashes[k] >= limit
                   else f"and the restart budget (max_restarts={self.max_restarts}) is spent")
            message = f"worker {k} (pid {worker.pid}) died: {cause}; {why}"
            if tail:
                message += f"\n--- the worker's stderr (last lines) ---\n{tail}"
            self.close()
            raise RuntimeError(message)
        if hung:
            warnings.warn(f"fastatari: worker {k} (pid {worker.pid}) {cause}; restarted, its "
                          f"envs are reported truncated with info['worker_restarted']",
                          RuntimeWarning, stacklevel=4)
        lost = [ids for ids, _ in self._owed[k]]
        self._owed[k].clear()
        self._launch(k, self._restart_resets(k), restarted=True)
        self.collect([k], expect=ReplyKind.READY)
        return Reply(ReplyKind.RESTARTED, envs=np.concatenate(lost) if lost else _NO_ENVS)


def raise_errors(replies: Dict[int, Reply]) -> None:
    """Raise the first worker exception among ``replies`` as :class:`WorkerError`."""
    for k, reply in sorted(replies.items()):
        if reply.kind is ReplyKind.ERROR:
            raise WorkerError(f"worker {k} raised an exception:\n{reply.payload}")


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _wait(conns: List[Connection], timeout: Optional[float]) -> List[Connection]:
    """``multiprocessing.connection.wait`` without the Python selector it builds per call
    where ``poll(2)`` is at hand: this runs every step."""
    if not hasattr(select, "poll"):  # Windows
        return wait(conns, timeout=timeout)  # type: ignore[return-value]
    poller = select.poll()
    by_fd = {}
    for conn in conns:
        fd = conn.fileno()
        by_fd[fd] = conn
        poller.register(fd, select.POLLIN)
    ms = None if timeout is None else math.ceil(timeout * 1000)
    return [by_fd[fd] for fd, _ in poller.poll(ms)]
