"""What runs a vector env's envs, beneath its gymnasium front, and the rules every runner shares.

:class:`~fastatari.vector.env.AtariVectorEnv` keeps gymnasium's contract (call order,
autoreset bookkeeping, batched info, the restart report); an :class:`Executor` runs the envs
and leaves every result in the columns of its :attr:`~Executor.buffers`. Two executors exist:
the local worker processes (:class:`~fastatari.vector.pool.WorkerPool`) and Ray actors, each
running a local one on its node (``fastatari.ray``). Both follow the rules written once here:
which seeds a replacement's games get (:class:`SeedBook`), when a replacement is refused
(:class:`RestartPolicy`) and how a death is told (``Executor._died``).

An executor answers with :class:`~fastatari.vector.messages.Reply` objects: DONE (``envs``
have their results) and RESTARTED (a worker or actor died, hung or raised, and was replaced:
``restarted`` are the envs whose games were reset with :meth:`SeedBook.restart_resets` and now
hold a truncated result, ``envs`` those whose step was lost with it). An exception is handled
as a death because it may leave a game half-stepped: no env goes on from a state that no
uninterrupted run has.
"""

from __future__ import annotations

import abc
import time
import warnings
import weakref
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from fastatari.core.snapshot import GameState
from fastatari.vector._wait import Transport
from fastatari.vector.buffers import SharedBuffers
from fastatari.vector.messages import Reply, ReplyKind, ResetRequest

__all__ = ["Executor", "RestartPolicy", "SeedBook", "WorkerError", "check_command", "deadline",
           "raised_envs", "remaining"]


class WorkerError(RuntimeError):
    """A worker that cannot start (its games cannot be built), that raised on a command
    (reset, render, clone, restore: the message carries its traceback), or whose restart
    replaced the games a ``clone`` was taking. An exception in a step restarts the worker
    instead (a ``RuntimeWarning`` with the traceback, and ``info["worker_restarted"]``)."""


def faults(replies: Sequence[Reply]) -> List[Reply]:
    """The replies other than DONE: what happened besides envs answering (restarts)."""
    return [reply for reply in replies if reply.kind is not ReplyKind.DONE]


def raised_envs(replies: Sequence[Reply]) -> np.ndarray:
    """The envs of the workers that raised on a command (restarted, not asked again): their
    games are new, the command did not happen there."""
    blocks = [reply.restarted for reply in replies if reply.kind is ReplyKind.RESTARTED
              and reply.payload is not None and reply.restarted is not None]
    return np.concatenate(blocks) if blocks else np.empty(0, np.int64)


def check_command(replies: Sequence[Reply], call: str,
                  ids: Optional[np.ndarray] = None) -> None:
    """After a command's replies were taken into the bookkeeping: :class:`WorkerError` when a
    worker raised on ``call`` (it was restarted, not asked again), or, with ``ids``, when a
    restart replaced the games of any of ``ids`` meanwhile (what they held is gone: a
    snapshot must never describe a game the caller did not have). The restarted envs report
    ``info["worker_restarted"]`` at their next step either way."""
    for reply in replies:
        if reply.kind is not ReplyKind.RESTARTED:
            continue
        restarted = reply.restarted if reply.restarted is not None else np.empty(0, np.int64)
        if reply.payload is not None:
            raise WorkerError(f"{reply.source} raised an exception in {call}(); it was "
                              f"restarted (envs {restarted.tolist()} start new games, "
                              f"reported with info['worker_restarted'] at their next step)\n"
                              f"{reply.payload}")
        if ids is not None and np.isin(restarted, ids).any():
            raise WorkerError(f"{reply.source} died during {call}() and was restarted: envs "
                              f"{restarted.tolist()} start new games (reported with "
                              f"info['worker_restarted'] at their next step), so their state "
                              f"could not be taken; {call}() again for the new games")


class Executor(abc.ABC):
    """Runs envs ``0 .. num_envs - 1`` and writes their results into :attr:`buffers`.

    The front writes actions into ``buffers.action`` before :meth:`run`. Every method that
    waits returns the replies it saw, RESTARTED ones included, for the front to apply.
    """

    buffers: SharedBuffers
    seeds: "SeedBook"
    #: Worker processes per executor (a Ray actor's; None: its node's default).
    num_workers: Optional[int]
    _policy: "RestartPolicy"  # over the executor's units (workers, actors)
    _finalizer: weakref.finalize  # frees everything: alive until closed

    @property
    def restarts(self) -> int:
        """Replacements so far (deaths and hangs)."""
        return self._policy.restarts

    def _died(self, k: int, what: str, detail: str = "", tail: str = "",
              warn: bool = False) -> None:
        """Count the death of unit ``k``, ``what`` saying how it ended (``"worker 2 (pid 9)
        died: ..."``): when the policy refuses a replacement, close and raise
        :class:`RuntimeError` with ``detail`` (a traceback) and ``tail`` (its stderr); else,
        with ``warn`` (it raised or hung: nothing else tells the user), warn that it is
        replaced."""
        why = self._policy.died(k)
        if why is not None:
            if tail:
                detail += f"\n--- the worker's stderr (last lines) ---\n{tail}"
            self.close()
            raise RuntimeError(f"{what}; {why}{detail}")
        if warn:
            warnings.warn(f"fastatari: {what}; restarted: its envs are reset and reported "
                          f"truncated with info['worker_restarted']{detail}", RuntimeWarning,
                          stacklevel=6)

    @abc.abstractmethod
    def start(self) -> None:
        """Start running (the games are built at the first reset)."""

    @abc.abstractmethod
    def run(self, ops: Optional[np.ndarray], output: int = -1) -> None:
        """Start ``ops[i]`` (:class:`~fastatari.vector.messages.Op`) for each env ``i`` whose
        entry is not IDLE; ``ops`` None: every env steps (the common step). ``output``: the
        slot of :attr:`outputs` that also receives each run env's observation (-1: none)."""

    @property
    def outputs(self) -> Tuple[np.ndarray, ...]:
        """Output slots that :meth:`run` writes (none: the front copies the observations)."""
        return ()

    @property
    def transport(self) -> Optional[Transport]:
        """Its starts, waits and takes as compiled code (the local pool's, on Linux), which the
        vector env's compiled step (``_step.VectorStep``) runs itself, calling
        :meth:`after_wait` when a wait ends otherwise than DONE; None: the step calls
        :meth:`run`, :meth:`collect` and :meth:`run_and_collect`."""
        return None

    def after_wait(self, found: int, in_order: bool = False) -> List[Reply]:
        """The replies after a wait of :attr:`transport` that answered ``found`` (a fault):
        the envs done (``in_order``: in the order they finished), then the units replaced;
        call :meth:`collect` for the rest while :meth:`busy`."""
        raise NotImplementedError("this executor has no compiled transport")

    @abc.abstractmethod
    def busy(self) -> bool:
        """Whether replies are owed."""

    @abc.abstractmethod
    def collect(self, at_least: Optional[int] = None) -> List[Reply]:
        """Wait until ``at_least`` envs in flight (None: all) are answered; it may return
        early with what a fault brought (a restart): call again while :meth:`busy`."""

    def run_and_collect(self, ops: Optional[np.ndarray], output: int = -1) -> List[Reply]:
        """The synchronous step's round trip, with nothing in flight before it: :meth:`run`,
        then collect until nothing is owed. Returns what else happened (restarts), without the
        DONE replies: every env run is answered, so they say nothing; an empty list, the common
        case, is a clean step."""
        self.run(ops, output)
        replies = self.collect()
        while self.busy():
            replies += self.collect()
        return faults(replies)

    def command(self, name: str, items: Sequence[Tuple[int, Any]]
                ) -> Tuple[List[Any], List[Reply]]:
        """Run the command ``name`` (``"reset"``, ``"render"``, ``"clone"`` or
        ``"restore"``) on ``items``, ``(env, payload)`` pairs (a seed, None, None, a state):
        each item's value (a screen, a state; None for reset and restore) and the replies seen.
        A reset's seeds are recorded in :attr:`seeds` first.

        The commands share one rule: a worker that dies or hangs is replaced and asked again;
        one that raises is replaced and not asked again (the command would raise again), its
        RESTARTED reply carrying the traceback and its envs' values None. The front turns that
        reply into :class:`WorkerError`."""
        if name == "reset":
            self.seeds.record(items)
        return self._command(name, items)

    @abc.abstractmethod
    def _command(self, name: str, items: Sequence[Tuple[int, Any]]
                 ) -> Tuple[List[Any], List[Reply]]:
        """:meth:`command`, once the seeds are recorded: this executor's way to run it."""

    def reset(self, requests: Sequence[ResetRequest]) -> List[Reply]:
        """Reset envs; an env whose worker dies meanwhile is reset again on the
        replacement."""
        return self.command("reset", requests)[1]

    def render(self, ids: np.ndarray) -> Tuple[List[Optional[np.ndarray]], List[Reply]]:
        """RGB screens of ``ids``, and the replies seen while rendering."""
        return self.command("render", [(i, None) for i in ids.tolist()])

    def clone(self, ids: np.ndarray) -> Tuple[List[Optional[GameState]], List[Reply]]:
        """The game states of ``ids`` (idle envs), and the replies seen meanwhile."""
        return self.command("clone", [(i, None) for i in ids.tolist()])

    def restore(self, items: Sequence[Tuple[int, GameState]]) -> List[Reply]:
        """Put back game states (checked), each into its env (idle); its observation lands in
        the env's row of :attr:`buffers`."""
        return self.command("restore", items)[1]

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    @abc.abstractmethod
    def close(self) -> None:
        """Stop everything and free the memory. Safe to call more than once."""

    @property
    def pids(self) -> List[int]:
        """The processes running the envs on this machine."""
        return []


def deadline(timeout: Optional[float]) -> Optional[float]:
    """The monotonic time ``timeout`` seconds from now (None: none)."""
    return None if timeout is None else time.monotonic() + timeout


def remaining(until: Optional[float]) -> Optional[float]:
    """Seconds left until ``until`` (a :func:`deadline`), at least 0; None: no limit."""
    return None if until is None else max(0.0, until - time.monotonic())


class SeedBook:
    """Each env's last reset seed, and the seeds a replacement's games get.

    A replacement resets each env with a seed derived from its last seed (its id in the whole
    vector env where it never had one) and the restart count, so a run with the same faults
    replays exactly, whatever runs the envs.
    """

    def __init__(self, env_ids: Sequence[int]) -> None:
        self.env_ids = np.asarray(env_ids, np.int64)
        self.last: List[Optional[int]] = [None] * len(self.env_ids)
        self.games_exist = False  # games are built at the first reset

    def take_over(self, last: Sequence[Optional[int]]) -> None:
        """Games that existed elsewhere (a dead actor's), last seeded with ``last``."""
        self.last = list(last)
        self.games_exist = True

    def record(self, requests: Sequence[ResetRequest]) -> None:
        for i, seed in requests:
            if seed is not None:
                self.last[i] = seed
        self.games_exist = True

    def restart_resets(self, envs: Sequence[int], restarts: int) -> List[ResetRequest]:
        """The resets that replace the games of ``envs`` at restart number ``restarts``."""
        if not self.games_exist:
            return []  # the first reset() builds them
        resets: List[ResetRequest] = []
        for i in envs:
            last = self.last[i]
            base = last if last is not None else int(self.env_ids[i])
            resets.append((int(i), int(np.random.SeedSequence([base, restarts])
                                       .generate_state(1)[0])))
        return resets


class RestartPolicy:
    """When a replacement is refused: ``max_crashes_without_progress`` deaths of one unit
    (worker, actor) in a row without an answer in between, or more than ``max_restarts``
    restarts in all."""

    def __init__(self, units: int, max_crashes_without_progress: int,
                 max_restarts: Optional[int]) -> None:
        self.max_crashes_without_progress = max_crashes_without_progress
        self.max_restarts = max_restarts
        self.restarts = 0
        self._crashes = [0] * units  # deaths since the unit last answered

    def progress(self, k: int) -> None:
        self._crashes[k] = 0

    def died(self, k: int) -> Optional[str]:
        """Count a death of unit ``k``; the reason to give up, or None to replace it."""
        self._crashes[k] += 1
        self.restarts += 1
        if self._crashes[k] >= self.max_crashes_without_progress:
            return f"{self._crashes[k]} times in a row without progress"
        if self.max_restarts is not None and self.restarts > self.max_restarts:
            return f"and the restart budget (max_restarts={self.max_restarts}) is spent"
        return None
