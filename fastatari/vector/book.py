"""The per-env bookkeeping of a vector env: one object, a small API, the only writer.

For each env it keeps where its step is (:class:`Phase`: idle, in
flight, or answered and waiting for ``recv``; an env done after the batch a compiled ``recv``
took stays in flight, with the executor, until the next takes it), the queue of answered envs
in answer order,
whether its last result ended an episode (its next step is then a reset, under next-step
autoreset), and whether its games were replaced since its last result (reported once, as
``info["worker_restarted"]``). The vector env's front, its snapshots and a Ray actor's rollout
read and change this state through these methods only (as ale-py's vectorizer does through its
``ResultStaging``).
"""

from __future__ import annotations

import collections
import enum
from typing import Any, Deque, Iterable, Tuple

import numpy as np
from gymnasium.error import AlreadyPendingCallError

from fastatari.vector._wait import PHASES, next_ops
from fastatari.vector.messages import Reply, ReplyKind

__all__ = ["EnvBook", "Phase"]


class Phase(enum.IntEnum):
    """Where one env's step is (the book keeps one per env; the values are declared once, in
    ``_codes.pxd``)."""

    IDLE = PHASES["IDLE"]
    IN_FLIGHT = PHASES["IN_FLIGHT"]  # sent to what runs it, not answered yet
    ANSWERED = PHASES["ANSWERED"]  # answered, waiting for recv()


class EnvBook:
    """The bookkeeping of ``num_envs`` envs (all idle, none ended)."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs
        self._phase = np.zeros(num_envs, np.uint8)
        self._answered: Deque[int] = collections.deque()
        self._ended = np.zeros(num_envs, bool)
        self._restarted = np.zeros(num_envs, bool)

    # -- what the executor reports ---------------------------------------------------------
    def apply(self, replies: Iterable[Reply]) -> None:
        """Take the executor's replies: answered envs join the queue; a restart's envs hold a
        fresh game (not ended) whose truncated result is reported once."""
        for reply in replies:
            if reply.kind is ReplyKind.RESTARTED:
                self._restarted[reply.restarted] = True
                self._ended[reply.restarted] = False
            envs = reply.envs
            if envs is not None and envs.size:
                self._phase[envs] = Phase.ANSWERED
                self._answered.extend(envs.tolist())

    # -- sending -------------------------------------------------------------------------------
    def check_idle(self, ids: np.ndarray, call: str) -> None:
        """``AlreadyPendingCallError`` if one of ``ids`` has a step in flight or unreturned."""
        busy = self._phase[ids] != Phase.IDLE
        if busy.any():
            raise AlreadyPendingCallError(
                f"env {int(ids[np.flatnonzero(busy)[0]])} already has a step in flight: "
                f"recv() it first", call)

    def all_plain(self) -> bool:
        """Whether every env simply steps next (none ended, none restarted): the common step,
        which needs no per-env ops."""
        return not (self._ended.any() or self._restarted.any())

    def dispatch(self, ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Mark ``ids`` sent; returns ``(ops, run)``: the op of every env (reset for an ended
        episode under autoreset, else step) and the envs to run. An env whose games were
        replaced while it was idle already holds its result (the restart's truncated one): it
        is answered at once, without running."""
        notice = self._restarted[ids]
        if notice.any():
            self._phase[ids[notice]] = Phase.ANSWERED
            self._answered.extend(ids[notice].tolist())
            ids = ids[~notice]
        self._phase[ids] = Phase.IN_FLIGHT
        ops = np.zeros(self.num_envs, np.uint8)
        ops[ids] = next_ops(self._ended[ids].view(np.uint8))
        return ops, ids

    # -- receiving -----------------------------------------------------------------------------
    def in_flight(self) -> int:
        """Envs sent and not yet returned."""
        return int(np.count_nonzero(self._phase))

    def answered(self) -> int:
        """Envs answered and not yet returned."""
        return len(self._answered)

    def take_answered(self, count: int) -> np.ndarray:
        """The first ``count`` answered envs, in answer order, now idle."""
        ids = np.array([self._answered.popleft() for _ in range(count)], np.int64)
        self._phase[ids] = Phase.IDLE
        return ids

    def all_idle(self) -> None:
        """A synchronous step returned every env."""
        self._answered.clear()
        self._phase[:] = Phase.IDLE

    def ended_now(self, sel: Any, ended: np.ndarray) -> None:
        """The results of ``sel`` (ids or a slice) were returned: ``ended`` says whose episode
        ended (their next step resets, under next-step autoreset)."""
        self._ended[sel] = ended

    def report_restarted(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Which of ``ids`` (where ``mask``) carry a restart to report; reported once."""
        restarted = self._restarted[ids] & mask
        if restarted.any():
            self._restarted[ids[restarted]] = False
        return restarted

    def step_columns(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The per-env ``ended``, ``restarted`` and phase arrays themselves, for the compiled
        common step (:class:`fastatari.vector._step.CommonStep`), which reads them, writes
        ``ended`` as :meth:`ended_now` would, marks the envs a common ``send`` runs in flight
        as :meth:`dispatch` would and those a common ``recv`` returns idle."""
        return self._ended, self._restarted, self._phase

    # -- the caller's changes ------------------------------------------------------------------
    def reset(self, ids: np.ndarray) -> None:
        """``ids`` were reset: a new episode each, nothing to report."""
        self._ended[ids] = False
        self._restarted[ids] = False

    def set(self, ids: Any, ended: Any, restarted: Any = None) -> None:
        """Put ``ids`` (idle envs) in a known state: ``ended`` (awaiting an autoreset) and,
        unless None, ``restarted`` (a restart to report): a restored snapshot, a caller's
        episode end, a Ray actor's block after a rollout."""
        self._ended[ids] = ended
        if restarted is not None:
            self._restarted[ids] = restarted
        self._phase[ids] = Phase.IDLE

    def get(self, ids: Any) -> Tuple[np.ndarray, np.ndarray]:
        """``(ended, restarted)`` of ``ids``, copies."""
        return self._ended[ids].copy(), self._restarted[ids].copy()

    def ended(self, ids: Any) -> np.ndarray:
        """Whether each of ``ids`` awaits a reset (its last result ended an episode)."""
        return self._ended[ids]
