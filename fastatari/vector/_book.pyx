"""The per-env bookkeeping of a vector env: one compiled class, the only owner of these rules.

For each env it keeps where its step is (:class:`Phase`: idle, in flight, or answered and
waiting for ``recv``; an env done after the batch a ``recv`` took stays in flight, with the
executor, until the next takes it), the queue of answered envs in answer order, whether its
last result ended an episode (its next op is then a reset: ``_codes.next_op``), and whether
its games were replaced since its last result (reported once, as
``info["worker_restarted"]``). The step (``_step.pyx``) reads and writes these columns in its
loops; the front, its snapshots and a Ray actor's rollout through the methods below (as
ale-py's vectorizer keeps its per-env state in one ``ResultStaging``).
"""

import enum

import numpy as np
from gymnasium.error import AlreadyPendingCallError

from fastatari.vector._codes cimport (
    OP_IDLE,
    PHASE_ANSWERED,
    PHASE_IDLE,
    PHASE_IN_FLIGHT,
    next_op,
)
from fastatari.vector.messages import ReplyKind


class Phase(enum.IntEnum):
    """Where one env's step is (the values are declared once, in ``_codes.pxd``)."""

    IDLE = PHASE_IDLE
    IN_FLIGHT = PHASE_IN_FLIGHT  # sent to what runs it, not answered yet
    ANSWERED = PHASE_ANSWERED  # answered, waiting for recv()


cdef class EnvBook:
    """The bookkeeping of ``num_envs`` envs (all idle, none ended)."""

    def __init__(self, Py_ssize_t num_envs):
        self.num_envs = num_envs
        self._phase = np.zeros(num_envs, np.uint8)
        self._ended = np.zeros(num_envs, bool)
        self._restarted = np.zeros(num_envs, bool)
        self.phase = self._phase
        self.ended = self._ended.view(np.uint8)
        self.restarted = self._restarted.view(np.uint8)
        self.queue = np.zeros(num_envs, np.int64)
        self.head = self.count = 0

    cdef void answer(self, int64_t i) noexcept nogil:
        """Env ``i`` is answered: it joins the queue (once)."""
        if self.phase[i] == PHASE_ANSWERED:
            return
        self.phase[i] = PHASE_ANSWERED
        self.queue[(self.head + self.count) % self.num_envs] = i
        self.count += 1

    cdef bint any_restarted(self, const int64_t[::1] ids) noexcept nogil:
        cdef Py_ssize_t j
        for j in range(ids.shape[0]):
            if self.restarted[ids[j]]:
                return True
        return False

    cdef Py_ssize_t mark_sent(self, const int64_t[::1] ids, uint8_t[::1] ops) noexcept nogil:
        """``ids`` (idle, distinct) are sent: ``ops`` gets each one's op (``next_op``; IDLE
        elsewhere), and the envs to run are in flight. An env whose games were replaced while
        it was idle already holds its result (the restart's truncated one): it is answered at
        once, without running. Returns how many run."""
        cdef Py_ssize_t j, run = 0
        cdef int64_t i
        for j in range(ops.shape[0]):
            ops[j] = OP_IDLE
        for j in range(ids.shape[0]):
            i = ids[j]
            if self.restarted[i]:
                self.answer(i)
            else:
                self.phase[i] = PHASE_IN_FLIGHT
                ops[i] = next_op(self.ended[i])
                run += 1
        return run

    # -- what the executor reports ---------------------------------------------------------
    def apply(self, replies):
        """Take the executor's replies: answered envs join the queue; a restart's envs hold a
        fresh game (not ended) whose truncated result is reported once."""
        cdef const int64_t[::1] envs
        cdef Py_ssize_t j
        for reply in replies:
            if reply.kind is ReplyKind.RESTARTED:
                self._restarted[reply.restarted] = True
                self._ended[reply.restarted] = False
            if reply.envs is not None and reply.envs.size:
                envs = np.ascontiguousarray(reply.envs, np.int64)
                for j in range(envs.shape[0]):
                    self.answer(envs[j])

    # -- sending -------------------------------------------------------------------------------
    def check_idle(self, ids, str call):
        """``AlreadyPendingCallError`` if one of ``ids`` has a step in flight or unreturned."""
        busy = self._phase[ids] != PHASE_IDLE
        if busy.any():
            raise AlreadyPendingCallError(
                f"env {int(ids[np.flatnonzero(busy)[0]])} already has a step in flight: "
                f"recv() it first", call)

    def dispatch(self, ids):
        """Mark ``ids`` (an int64 array of idle, distinct envs) sent; returns ``(ops, run)``:
        the op of every env (IDLE for those not sent) and the envs to run (:meth:`mark_sent`:
        an env with a restart to report is answered at once)."""
        ids = np.ascontiguousarray(ids, np.int64)
        ops = np.empty(self.num_envs, np.uint8)
        self.mark_sent(ids, ops)
        return ops, ids[self._phase[ids] == PHASE_IN_FLIGHT]

    # -- receiving -----------------------------------------------------------------------------
    cpdef Py_ssize_t in_flight(self):
        """Envs sent and not yet returned."""
        cdef Py_ssize_t i, k = 0
        for i in range(self.num_envs):
            k += self.phase[i] != PHASE_IDLE
        return k

    def answered(self):
        """Envs answered and not yet returned."""
        return self.count

    def take_answered(self, Py_ssize_t count):
        """The first ``count`` answered envs, in answer order, now idle."""
        if not 0 <= count <= self.count:
            raise ValueError(f"{count} answered envs asked for, {self.count} answered")
        ids = np.empty(count, np.int64)
        cdef int64_t[::1] out = ids
        cdef Py_ssize_t j
        for j in range(count):
            out[j] = self.queue[(self.head + j) % self.num_envs]
            self.phase[out[j]] = PHASE_IDLE
        self.head = (self.head + count) % self.num_envs
        self.count -= count
        return ids

    def all_idle(self):
        """A synchronous step returned every env."""
        self.head = self.count = 0
        self._phase[:] = PHASE_IDLE

    def report_restarted(self, ids, mask):
        """Which of ``ids`` (where ``mask``) carry a restart to report; reported once."""
        restarted = self._restarted[ids] & mask
        if restarted.any():
            self._restarted[ids[restarted]] = False
        return restarted

    # -- the caller's changes ------------------------------------------------------------------
    def reset(self, ids):
        """``ids`` were reset: a new episode each, nothing to report."""
        self._ended[ids] = False
        self._restarted[ids] = False

    def set(self, ids, ended, restarted=None):
        """Put ``ids`` (idle envs) in a known state: ``ended`` (awaiting an autoreset) and,
        unless None, ``restarted`` (a restart to report): a restored snapshot, a caller's
        episode end, a Ray actor's block after a rollout."""
        self._ended[ids] = ended
        if restarted is not None:
            self._restarted[ids] = restarted
        self._phase[ids] = PHASE_IDLE

    def get(self, ids):
        """``(ended, restarted)`` of ``ids``, copies."""
        return self._ended[ids].copy(), self._restarted[ids].copy()

    def ended_of(self, ids):
        """Whether each of ``ids`` awaits a reset (its last result ended an episode)."""
        return self._ended[ids].copy()
