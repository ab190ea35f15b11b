"""The local executor: the worker processes of one vector env, its shared memory, restarts.

The pool knows processes, pipes and the protocol; it does not know episodes. It waits on the
workers' pipes only: a worker that dies closes its end, so its death is seen at once, as the
end of the file. A worker that dies, or misses the call's deadline (then it is killed), is
replaced by a new one whose games are reset by the executors' rules
(:class:`~fastatari.vector.executor.SeedBook`); the collect reports
:attr:`ReplyKind.RESTARTED` for it, with the envs whose replies died with it.

Restart policy (:class:`~fastatari.vector.executor.RestartPolicy`): a worker that made progress
(answered a command) since its last start is always restarted. Only
``max_crashes_without_progress`` deaths in a row without progress (a broken install, a ROM that
crashes at once) raise ``RuntimeError``, with the cause and the tail of the worker's stderr.
``max_restarts`` optionally caps restarts over the pool's whole life.
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
from typing import Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np

from fastatari.vector import protocol
from fastatari.vector.buffers import SharedBuffers
from fastatari.vector.executor import Executor, Plan, RestartPolicy, SeedBook, WorkerError
from fastatari.vector.launch import WorkerProcess, launch
from fastatari.vector.lineup import assign_workers
from fastatari.vector.protocol import (Op, Reply, ReplyKind, ResetRequest, WorkerConfig,
                                       encode_render, encode_reset)

__all__ = ["WorkerError", "WorkerPool"]


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


class WorkerPool(Executor):
    """The envs of ``plan`` on ``plan.config.num_workers`` worker processes: worker ``k`` owns
    the envs ``blocks[k]`` (by :func:`~fastatari.vector.lineup.assign_workers`), which it
    steps in that order, and writes their results into the shared memory :attr:`buffers`.

    ``emulate=False`` starts workers that skip the emulator and the preprocessing (a step
    writes its reward only): the transport alone, for the benchmarks.
    """

    def __init__(self, plan: Plan, emulate: bool = True) -> None:
        config = plan.config
        self.blocks = assign_workers(plan.lineup, config.num_workers, balance=config.balance)
        self.num_workers = len(self.blocks)
        self.timeout = config.timeout
        self.seeds = SeedBook(plan.env_ids)
        self._policy = RestartPolicy(self.num_workers, config.max_crashes_without_progress,
                                     config.max_restarts)
        self._cpus = config.cpus
        buffers = SharedBuffers(plan.layout)
        self.buffers = buffers
        self._config = WorkerConfig(
            index=-1, env_ids=(), games=plan.lineup.env_games(), layout=plan.layout,
            same_step=config.same_step, prereset=config.next_step,
            ale_actions=plan.ale_actions, resets=(), emulate=emulate, memory=buffers.handle)
        self._res = _Resources(buffers)
        self._finalizer = weakref.finalize(self, self._res.release)
        self._names = [f"worker {k}" for k in range(self.num_workers)]
        self._owed: List[Deque[Owed]] = [collections.deque() for _ in range(self.num_workers)]
        self._step_all = [protocol.encode_step(0, bytes([Op.STEP]) * len(block))
                          for block in self.blocks]
        self._res.workers = [None] * self.num_workers
        self._owner = np.empty(plan.num_envs, np.int64)
        self._place = np.empty_like(self._owner)  # each env's place in its worker's order
        for k, block in enumerate(self.blocks):
            self._owner[block] = k
            self._place[block] = np.arange(len(block))

    @property
    def restarts(self) -> int:
        return self._policy.restarts

    # -- life ---------------------------------------------------------------------------------
    def start(self, resets: Sequence[ResetRequest] = (), restarted: bool = False) -> None:
        """Start every worker (in parallel) with its share of ``resets`` (``restarted``: they
        replace games that died elsewhere, reported truncated); wait until all are READY. A
        worker that dies while starting is restarted like any other."""
        try:
            for k in range(self.num_workers):
                mine = [r for r in resets if self._owner[r[0]] == k]
                self._launch(k, mine, restarted=restarted)
            self._collect(list(range(self.num_workers)), expect=ReplyKind.READY)
        except BaseException:
            self.close()
            raise

    def _launch(self, k: int, resets: List[ResetRequest], restarted: bool) -> None:
        worker = launch(self.buffers.handle, f"fastatari-worker-{k}")
        self._res.workers[k] = worker
        cpu = self._cpus[k % len(self._cpus)] if self._cpus else None
        config = dataclasses.replace(
            self._config, index=k, env_ids=tuple(self.blocks[k].tolist()),
            games=tuple(self._config.games[i] for i in self.blocks[k]), resets=tuple(resets),
            restarted=restarted, cpu=cpu)
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
        """Stop the workers and free the shared memory. Safe to call more than once."""
        self._finalizer()

    # -- commands -----------------------------------------------------------------------------
    def _send(self, k: int, data: bytes) -> None:
        """Send a command; a worker that died meanwhile is found by the collect that follows."""
        try:
            self._res.workers[k].conn.send_bytes(data)  # type: ignore[union-attr]
        except (BrokenPipeError, ConnectionResetError):
            pass
        # After the write: a worker that sees the bump finds its command already in the pipe.
        self.buffers.wake[self.blocks[k][0]] += 1

    def run_all(self) -> None:
        for k in range(self.num_workers):
            self._send(k, self._step_all[k])
            self._owed[k].append((self.blocks[k], True))

    def run(self, ops: np.ndarray, ids: np.ndarray, chunk: int) -> None:
        """Send each worker owning some of ``ids`` its slice of ``ops`` (IDLE for the
        others); workers answer after every ``chunk`` envs (0: once)."""
        owners = self._owner[ids]
        for k in np.unique(owners).tolist():
            self._send(k, protocol.encode_step(chunk, ops[self.blocks[k]].tobytes()))
            mine = ids[owners == k]
            mine = mine[np.argsort(self._place[mine])]  # the order the worker runs them in
            size = chunk or mine.size
            for start in range(0, mine.size, size):
                self._owed[k].append((mine[start:start + size], start + size >= mine.size))

    def busy(self) -> bool:
        return any(self._owed)

    def reset(self, requests: Sequence[ResetRequest]) -> List[Reply]:
        self.seeds.record(requests)
        commands = self._by_worker([i for i, _ in requests], list(requests))
        seen: List[Reply] = []
        while commands:  # a worker that died meanwhile is restarted, then asked again
            for k, mine in commands.items():
                self._send(k, encode_reset(mine))
            replies = self._collect(list(commands))
            seen.extend(replies.values())
            commands = {k: commands[k] for k, r in replies.items()
                        if r.kind is ReplyKind.RESTARTED}
        return seen

    def render(self, ids: np.ndarray) -> Tuple[np.ndarray, List[Reply]]:
        commands = self._by_worker(ids.tolist(), ids.tolist())
        screens: Dict[int, np.ndarray] = {}
        seen: List[Reply] = []
        while commands:  # a restarted worker renders its fresh games when asked again
            for k, mine in commands.items():
                self._send(k, encode_render(mine))
            replies = self._collect(list(commands))
            seen.extend(replies.values())
            for k, reply in replies.items():
                if reply.kind is ReplyKind.RENDERED:
                    screens.update(zip(commands[k], reply.payload, strict=True))
            commands = {k: commands[k] for k, r in replies.items()
                        if r.kind is ReplyKind.RESTARTED}
        return np.stack([screens[i] for i in ids.tolist()]), seen

    def _by_worker(self, envs: List[int], items: list) -> Dict[int, list]:
        """``items`` (one per env of ``envs``) grouped by the envs' workers."""
        commands: Dict[int, list] = {}
        for i, item in zip(envs, items, strict=True):
            commands.setdefault(int(self._owner[i]), []).append(item)
        return commands

    # -- replies ------------------------------------------------------------------------------
    def collect(self, first: bool = False) -> List[Reply]:
        owed = self._owed
        workers = [k for k in range(self.num_workers) if owed[k]]
        return list(self._collect(workers, first=first).values())

    def _collect(self, workers: List[int], first: bool = False,
                 expect: ReplyKind = ReplyKind.DONE) -> Dict[int, Reply]:
        """One reply from each of ``workers`` (``first``: from whichever answer first, at
        least one). Every reply is collected even if some are errors (so the protocol stays
        in step). Ctrl-C or any other exception here closes the pool."""
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
                policy = self._policy
                for conn in ready:
                    k = waiting.pop(conn)
                    restarts = policy.restarts
                    replies[k] = self._receive(k, expect)
                    if policy.restarts != restarts and timeout is not None:
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
            return Reply(ReplyKind.ERROR, reply.payload, self._settle(k, failed=True),
                         source=self._names[k])
        if expect is not ReplyKind.READY:
            self._policy.progress(k)  # it answered a command: progress
        if reply.kind is ReplyKind.DONE and self._owed[k]:
            return Reply(ReplyKind.DONE, envs=self._settle(k, failed=False),
                         source=self._names[k])
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
        why = self._policy.died(k)
        if why is not None:
            message = f"worker {k} (pid {worker.pid}) died: {cause}; {why}"
            if tail:
                message += f"\n--- the worker's stderr (last lines) ---\n{tail}"
            self.close()
            raise RuntimeError(message)
        if hung:
            warnings.warn(f"fastatari: worker {k} (pid {worker.pid}) {cause}; restarted, its "
                          f"envs are reported truncated with info['worker_restarted']",
                          RuntimeWarning, stacklevel=5)
        lost = [ids for ids, _ in self._owed[k]]
        self._owed[k].clear()
        block = self.blocks[k]
        self._launch(k, self.seeds.restart_resets(block.tolist(), self.restarts),
                     restarted=True)
        self._collect([k], expect=ReplyKind.READY)
        return Reply(ReplyKind.RESTARTED, envs=np.concatenate(lost) if lost else _NO_ENVS,
                     restarted=block, source=self._names[k])


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
