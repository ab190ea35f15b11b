"""The local executor: the worker processes of one vector env, its shared memory, restarts.

The pool knows processes, pipes and the protocol; it does not know episodes.

A step costs the trainer the same whatever the number of workers. The trainer writes every
env's op into shared memory and publishes it with one store (``_wait.publish``: one futex
wake for all the workers asleep); each worker takes its envs' ops and completes each env
there (a ticket that orders completions across workers, and a count). The trainer waits for
the count in compiled code without the GIL: a brief spin, then sleep on an epoll set holding an
eventfd, written only by the completion it waits for, and every worker's pipe, so that a worker
that dies (its pipe's end of file) or reports an error is seen at once. No per-worker message,
no per-reply decode: the envs done are one numpy selection, in ticket order. Where futex,
eventfd and epoll do not exist (macOS, Windows), the waits nap instead, and the trainer looks
at the pipes between naps: the same protocol, slower to wake.

The pipes carry start-up, resets, renders, closes and errors. A worker that dies, or misses the
call's deadline (then it is killed), is replaced by a new one whose games are reset by the
executors' rules (:class:`~fastatari.vector.executor.SeedBook`); the collect reports
:attr:`ReplyKind.RESTARTED` for it, with the envs whose results died with it.

Restart policy (:class:`~fastatari.vector.executor.RestartPolicy`): a worker that made progress
since its last start (delivered an env's result, or answered a command through its pipe) is
always restarted. Only
``max_crashes_without_progress`` deaths in a row without progress (a broken install, a ROM that
crashes at once) raise ``RuntimeError``, with the cause and the tail of the worker's stderr.
``max_restarts`` optionally caps restarts over the pool's whole life.
"""

from __future__ import annotations

import dataclasses
import math
import os
import select
import time
import weakref
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from fastatari.vector import _wait, messages
from fastatari.vector.assignment import assign_workers
from fastatari.vector.buffers import SharedBuffers
from fastatari.vector.config import WorkerSettings
from fastatari.vector.executor import (
    Executor,
    RestartPolicy,
    SeedBook,
    WorkerError,
    deadline,
    faults,
    remaining,
)
from fastatari.vector.host import HOST
from fastatari.vector.launch import WorkerProcess, launch
from fastatari.vector.messages import (
    GAME_FACTORY,
    Op,
    Reply,
    ReplyKind,
    ResetRequest,
    WorkerConfig,
    encode_clone,
    encode_render,
    encode_reset,
    encode_restore,
)
from fastatari.vector.plan import VectorPlan

__all__ = ["WorkerError", "WorkerPool"]

#: The least time a worker gets to start (a fresh interpreter, its imports and ROM checks),
#: whatever ``timeout`` is: a step's deadline is no measure of a start on a loaded machine,
#: and a start cut short would only be tried again, just as short.
MIN_START_SECONDS = 60.0
#: How long the trainer spins on the completion count before it sleeps, in ``recv``: long
#: enough to catch an async batch that is about to finish, short enough that its CPU time
#: stays its own work. The synchronous round trip does not spin: every env emulates a step
#: (100 µs or more) after the publish, so a spin there never caught one and cost the trainer
#: 4-5 µs a step (measured with 8, 24 and 64 envs). Nor does ``collect`` while its spins miss
#: (:class:`~fastatari.vector._wait.SpinRule`): with emulating workers on every core an async
#: batch is rarely that close, while workers that answer fast (spare cores, a light game) keep
#: it (docs/benchmarks.md has the measurement).
SPIN_SECONDS = 5e-6
#: While its spins miss, the trainer still spins in one ``collect`` of this many, to find out.
SPIN_PROBE = 16
#: Without epoll (portable waits): how long a nap lasts before the trainer looks at the pipes.
NAP_SLICE_SECONDS = 2e-3
#: The portable waits: where the fast ones are not compiled in, or where forced
#: (FASTATARI_PORTABLE_WAITS=1, FASTATARI_PLATFORM_PATHS: :mod:`fastatari.vector.host`).
PORTABLE_WAITS = not _wait.FAST_WAITS or HOST.portable_waits
#: Each command's encoder, and the reply kind that carries its values (None: no values).
_COMMANDS: Dict[str, Tuple[Callable[[list], bytes], Optional[ReplyKind]]] = {
    "reset": (encode_reset, None), "render": (encode_render, ReplyKind.RENDERED),
    "clone": (encode_clone, ReplyKind.CLONED), "restore": (encode_restore, None)}


class _Resources:
    """What must be released even if the env is garbage-collected or the trainer is
    interrupted: kept apart from the pool so that a weakref finalizer can own it."""

    def __init__(self, buffers: SharedBuffers, first_envs: np.ndarray) -> None:
        self.buffers: Optional[SharedBuffers] = buffers
        self.first_envs = first_envs  # each worker's first env: where its pending word lives
        self.workers: List[Optional[WorkerProcess]] = []
        self.transport: Optional[_wait.Transport] = None
        self.wake_fd = -1
        self.epoll: Optional[select.epoll] = None
        if not PORTABLE_WAITS:
            self.wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self.epoll = select.epoll()
            self.epoll.register(self.wake_fd, select.EPOLLIN)

    def release(self) -> None:
        if self.transport is not None:
            self.transport.close()  # before its memory and descriptors go
        buffers = self.buffers
        for k, worker in enumerate(self.workers):
            if worker is not None:
                try:
                    worker.conn.send_bytes(messages.encode_close())
                    if buffers is not None:
                        buffers.pending[self.first_envs[k]] = 1
                except (OSError, ValueError):
                    pass
        if buffers is not None:
            _wait.publish(buffers.control)
        for worker in self.workers:
            if worker is not None:
                if worker.wait(2.0) is None:
                    worker.kill()
                    worker.wait(2.0)
                worker.release()
        self.workers = []
        if self.epoll is not None:
            self.epoll.close()
            os.close(self.wake_fd)
            self.epoll = None
        if buffers is not None:
            buffers.close()
            self.buffers = None


class WorkerPool(Executor):
    """The envs of ``plan`` on ``num_workers`` worker processes: worker ``k`` owns
    the envs ``blocks[k]`` (by :func:`~fastatari.vector.assignment.assign_workers`), which it
    steps in that order, and writes their results into the shared memory :attr:`buffers`.

    ``game_factory`` names what the workers build their games with, ``"module:qualname"``,
    imported in each worker (default :data:`~fastatari.vector.messages.GAME_FACTORY`, the real
    game): a stand-in game measures the transport alone, or injects a fault.
    """

    def __init__(self, plan: VectorPlan, game_factory: str = GAME_FACTORY) -> None:
        if not isinstance(game_factory, str) or not all(game_factory.partition(":")[::2]):
            raise ValueError(f"game_factory must be 'module:qualname', got {game_factory!r}")
        config = plan.config
        # the local-worker keywords are checked here, where they are used (on a Ray actor's
        # node, its cores are the default)
        workers = WorkerSettings.checked(plan.num_envs, **plan.workers)
        assert workers.num_workers is not None  # checked() resolved the default
        self.blocks = assign_workers(plan.assignment, workers.num_workers, balance=workers.balance)
        self.num_workers: int = len(self.blocks)
        self.timeout = config.timeout
        self.seeds = SeedBook(plan.env_ids)
        self._policy = RestartPolicy(self.num_workers, config.max_crashes_without_progress,
                                     config.max_restarts)
        self._cpus = workers.cpus
        buffers = SharedBuffers(plan.layout)
        self.buffers = buffers
        self._first_envs = np.array([block[0] for block in self.blocks], np.int64)
        self._res = _Resources(buffers, self._first_envs)
        self._finalizer = weakref.finalize(self, self._res.release)
        self._config = WorkerConfig(
            index=-1, env_ids=(), games=plan.assignment.env_games(), layout=plan.layout,
            same_step=config.same_step, reset_ahead=config.next_step,
            ale_actions=plan.ale_actions, resets=(), game_factory=game_factory,
            wake_fd=self._res.wake_fd, memory=buffers.handle)
        self._names = [f"worker {k}" for k in range(self.num_workers)]
        self._res.workers = [None] * self.num_workers
        self._owner = np.empty(plan.num_envs, np.int64)
        for k, block in enumerate(self.blocks):
            self._owner[block] = k
        self._in_flight = np.zeros(plan.num_envs, bool)  # sent, not collected (nor dropped)
        self._spins = _wait.SpinRule(SPIN_SECONDS, probe=SPIN_PROBE)
        self._epfd = self._res.epoll.fileno() if self._res.epoll is not None else -1
        # starts, waits, takes; and the count of completions taken (what every wait waits past)
        self._transport = self._res.transport = _wait.Transport(
            buffers.control, buffers.ticket, buffers.op, self._in_flight.view(np.uint8),
            self._epfd, self._res.wake_fd, self.timeout, self._spins)

    # -- life ---------------------------------------------------------------------------------
    def start(self, resets: Sequence[ResetRequest] = (), restarted: bool = False) -> None:
        """Start every worker (in parallel) with its share of ``resets`` (``restarted``: they
        replace games that died elsewhere, reported truncated); wait until all are READY. A
        worker that dies while starting is restarted like any other."""
        try:
            for k in range(self.num_workers):
                mine = [r for r in resets if self._owner[r[0]] == k]
                self._launch(k, mine, restarted=restarted)
            self._pipe_replies(list(range(self.num_workers)), expect=ReplyKind.READY)
        except BaseException:
            self.close()
            raise

    def _launch(self, k: int, resets: List[ResetRequest], restarted: bool) -> None:
        self.buffers.progress[self._first_envs[k]] = 0  # what it completes from now on
        worker = launch(self.buffers.handle, f"fastatari-worker-{k}", self._res.wake_fd)
        self._res.workers[k] = worker
        if self._res.epoll is not None:  # its pipe wakes the trainer's wait: death, error
            self._res.epoll.register(worker.conn.fileno(), select.EPOLLIN)
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

    def close(self) -> None:
        """Stop the workers and free the shared memory. Safe to call more than once."""
        self._finalizer()

    # -- steps: through shared memory ---------------------------------------------------------
    @property
    def outputs(self) -> Tuple[np.ndarray, ...]:
        return self.buffers.outputs

    @property
    def transport(self) -> Optional[_wait.Transport]:
        return None if PORTABLE_WAITS else self._transport  # (the portable waits look at pipes)

    def run(self, ops: Optional[np.ndarray], output: int = -1) -> None:
        self._transport.run(ops, output)  # the ops name the envs (IDLE for the others)

    def busy(self) -> bool:
        return bool(self._in_flight.any())

    def collect(self, at_least: Optional[int] = None) -> List[Reply]:
        """Wait until ``at_least`` envs in flight (None: all) are done, or a worker's pipe
        speaks (a death, an error), or the deadline passes (the workers that still owe a result
        hung: replaced). The done envs come first; with ``at_least``, in the order they
        finished."""
        in_flight = int(np.count_nonzero(self._in_flight))
        want = in_flight if at_least is None else min(at_least, in_flight)
        try:
            found = self._wait_done(self._transport.collected + want, deadline(self.timeout))
        except BaseException:
            self.close()
            raise
        return self.after_wait(found, at_least is not None)

    def run_and_collect(self, ops: Optional[np.ndarray], output: int = -1) -> List[Reply]:
        """The synchronous step's round trip, one compiled call when nothing goes wrong: run
        every env (``ops`` None: all step; else ``ops[i]`` where not IDLE) and wait for all."""
        if PORTABLE_WAITS:
            return super().run_and_collect(ops, output)
        try:
            found = self._transport.run_and_wait(ops, output)
        except BaseException:
            self.close()
            raise
        if found == _wait.DONE:  # (no reply built: the trainer has just woken, its caches cold)
            return []
        replies = self.after_wait(found)
        while self.busy():
            replies += self.collect()
        return faults(replies)

    def after_wait(self, found: int, in_order: bool = False) -> List[Reply]:
        """The replies after a wait that answered ``found``: the done envs, then the workers
        replaced (their pipe spoke, or they hung)."""
        replies: List[Reply] = []
        try:
            if found == _wait.EVENT:
                replies = self._pipe_events()
            elif found == _wait.TIMEOUT:
                owing = self._in_flight & (self.buffers.ticket < 0)
                replies = [self._replace(k, hung=True)
                           for k in np.unique(self._owner[owing]).tolist()]
        except BaseException:
            self.close()
            raise
        # in_order: a batch of the first to finish, in that order
        done = self._transport.take_done(in_order)
        return [Reply(ReplyKind.DONE, envs=done, source="workers")] + replies

    def _wait_done(self, target: int, until: Optional[float]) -> int:
        """DONE when ``target`` completions are counted; EVENT when a worker's pipe is ready;
        TIMEOUT at the deadline. It spins first as its :class:`~fastatari.vector._wait.SpinRule`
        says, and tells the rule how long it waited."""
        if not PORTABLE_WAITS:  # on the eventfd and the pipes
            return self._transport.wait_done(target, remaining(until))
        start = time.perf_counter()
        found = self._nap_until(target, until, self._spins.spin())
        self._spins.waited(time.perf_counter() - start)
        return found

    def _nap_until(self, target: int, until: Optional[float], spin: float) -> int:
        """The portable waits: after a spin of ``spin`` seconds, naps between looks at the
        pipes. A signal's handler may close the pool during a nap (a ``close()`` from it):
        the memory stays mapped until this returns, and the wait raises instead of going on."""
        control = self.buffers.control  # (held: mapped while this waits, as Transport's waits)
        while True:
            left = remaining(until)
            nap = NAP_SLICE_SECONDS if left is None else min(NAP_SLICE_SECONDS, left)
            found = _wait.wait_done(control, target, -1, -1, spin, nap)
            if self._transport.closed:
                raise RuntimeError("the vector env's workers were closed")
            if found == _wait.DONE:
                return _wait.DONE
            spin = 0.0
            if _wait_pipes(self._conns(), 0.0):
                return _wait.EVENT
            if left is not None and left <= nap:
                return _wait.TIMEOUT

    def _conns(self) -> List[Connection]:
        return [w.conn for w in self._res.workers if w is not None]

    def _pipe_events(self) -> List[Reply]:
        """What the workers' pipes say during a step: a death (end of file) or an exception
        (ERROR, and the worker ends): either way the worker is replaced."""
        replies = []
        by_conn = {w.conn: k for k, w in enumerate(self._res.workers) if w is not None}
        for conn in _wait_pipes(list(by_conn), 0.0):
            k = by_conn[conn]
            try:
                reply = messages.decode_reply(conn.recv_bytes())
            except (EOFError, OSError):
                replies.append(self._replace(k))
                continue
            if reply.kind is not ReplyKind.ERROR:
                raise RuntimeError(f"worker {k} sent {reply.kind.name} during a step")
            replies.append(self._replace(k, error=reply.payload))
        return replies

    # -- rare commands: through the pipes -----------------------------------------------------
    def _send(self, commands: Dict[int, bytes]) -> None:
        """Mark each worker's command pending, publish once for all, then write the commands:
        a command larger than the pipe (a restore's snapshots) blocks its write until the
        worker reads it, which it does once woken. A worker that died meanwhile is found by
        the collect that follows."""
        pending = self.buffers.pending
        for k in commands:
            pending[self._first_envs[k]] = 1
        _wait.publish(self.buffers.control)
        for k, data in commands.items():
            try:
                self._res.workers[k].conn.send_bytes(data)  # type: ignore[union-attr]
            except (BrokenPipeError, ConnectionResetError):
                pass

    def _command(self, name: str, items: Sequence[Tuple[int, Any]]
                 ) -> Tuple[List[Any], List[Reply]]:
        encode, kind = _COMMANDS[name]
        envs = [i for i, _ in items]
        # reset and restore send their items; render and clone, the env ids
        commands = self._by_worker(envs, list(items) if kind is None else envs)
        seen, last = self._ask(commands, encode)
        values: Dict[int, Any] = {}
        for k, reply in last.items():
            if kind is not None and reply.kind is kind:
                values.update(zip(commands[k], reply.payload, strict=True))
        return [values.get(i) for i in envs], seen

    def _ask(self, commands: Dict[int, list],
             encode: Callable[[list], bytes]) -> Tuple[List[Reply], Dict[int, Reply]]:
        """Send each worker its command and collect the replies; a worker that died or hung
        meanwhile is restarted (its games fresh) and asked again, one that raised is restarted
        and not asked again (the same command would raise again: its RESTARTED reply carries
        the traceback). Returns every reply seen and each worker's last."""
        seen: List[Reply] = []
        last: Dict[int, Reply] = {}
        while commands:
            self._send({k: encode(mine) for k, mine in commands.items()})
            replies = self._pipe_replies(list(commands))
            seen.extend(replies.values())
            last.update(replies)
            commands = {k: commands[k] for k, r in replies.items()
                        if r.kind is ReplyKind.RESTARTED and r.payload is None}
        return seen, last

    def _by_worker(self, envs: List[int], items: list) -> Dict[int, list]:
        """``items`` (one per env of ``envs``) grouped by the envs' workers."""
        commands: Dict[int, list] = {}
        for i, item in zip(envs, items, strict=True):
            commands.setdefault(int(self._owner[i]), []).append(item)
        return commands

    def _pipe_replies(self, workers: List[int],
                 expect: ReplyKind = ReplyKind.DONE) -> Dict[int, Reply]:
        """One pipe reply from each of ``workers``. Every reply is collected even if some are
        errors (so the protocol stays in step). Ctrl-C or any other exception here closes the
        pool."""
        replies: Dict[int, Reply] = {}
        waiting = {self._res.workers[k].conn: k for k in workers}  # type: ignore[union-attr]
        timeout = self.timeout
        if timeout is not None and expect is ReplyKind.READY:
            timeout = max(timeout, MIN_START_SECONDS)
        until = deadline(timeout)
        try:
            while waiting:
                ready = _wait_pipes(list(waiting), remaining(until))
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
                        until = deadline(timeout)
        except BaseException:
            self.close()
            raise
        return replies

    def _receive(self, k: int, expect: ReplyKind) -> Reply:
        worker = self._res.workers[k]
        try:
            reply = messages.decode_reply(worker.conn.recv_bytes())  # type: ignore[union-attr]
        except (EOFError, OSError):
            return self._replace(k)
        if reply.kind is ReplyKind.ERROR:
            if expect is ReplyKind.READY:  # a worker that cannot start will never start
                self.close()
                raise WorkerError(f"worker {k} failed to start:\n{reply.payload}")
            return self._replace(k, error=reply.payload)
        if expect is not ReplyKind.READY:
            self._policy.progress(k)  # it answered a command: progress
        return reply

    def _replace(self, k: int, hung: bool = False, error: Optional[str] = None) -> Reply:
        """Worker ``k`` died, hung (killed here) or raised ``error`` (a traceback; it ends
        itself): start another with its envs' restart resets. Its envs in flight without a
        result are lost: reported with the restart."""
        worker = self._res.workers[k]
        assert worker is not None
        if hung or error is not None:
            worker.kill()
        code = worker.wait(5.0)
        if code is None:  # its pipe closed but it lives on: make sure it is gone
            worker.kill()
            worker.wait(5.0)
        detail = ""
        if hung:
            what = f"did not answer within the timeout of {self.timeout} s and was killed"
        elif error is not None:
            what, detail = "raised an exception", "\n" + error.rstrip()
        else:
            what = f"died: {worker.cause()}"
        tail = worker.stderr_tail()
        if self._res.epoll is not None:
            self._res.epoll.unregister(worker.conn.fileno())
        worker.release()
        self._res.workers[k] = None
        block = self.blocks[k]
        if self.buffers.progress[self._first_envs[k]]:
            self._policy.progress(k)  # it completed an env since it started
        self._died(k, f"worker {k} (pid {worker.pid}) {what}", detail, tail,
                   warn=hung or error is not None)
        lost = block[self._in_flight[block] & (self.buffers.ticket[block] < 0)]
        self._transport.drop(lost)  # (a ticket one held is known lost: no gap waited for)
        self.buffers.op[block] = Op.IDLE  # ops it never took: the replacement must not run them
        self.buffers.pending[self._first_envs[k]] = 0
        self._launch(k, self.seeds.restart_resets(block.tolist(), self.restarts),
                     restarted=True)
        self._pipe_replies([k], expect=ReplyKind.READY)
        return Reply(ReplyKind.RESTARTED, payload=error, envs=lost, restarted=block,
                     source=self._names[k])


def _wait_pipes(conns: List[Connection], timeout: Optional[float]) -> List[Connection]:
    """``multiprocessing.connection.wait`` without the Python selector it builds per call
    where ``poll(2)`` is at hand."""
    if not HOST.poll:  # Windows
        # ignore: typeshed's wait() returns any waitable; it returns the Connections given
        return wait(conns, timeout=timeout)  # type: ignore[return-value]
    poller = select.poll()
    by_fd = {}
    for conn in conns:
        fd = conn.fileno()
        by_fd[fd] = conn
        poller.register(fd, select.POLLIN)
    ms = None if timeout is None else math.ceil(timeout * 1000)
    return [by_fd[fd] for fd, _ in poller.poll(ms)]
