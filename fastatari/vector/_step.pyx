"""The step of a vector env, compiled: the synchronous ``step``, and async ``send`` and
``recv``, each one call from the actions to the returned arrays and batched info (checking and
writing the actions, each env's op from its book, the executor's start and wait, the results),
and the one-caller guard those calls enter.

There is one step. Its rare cases are lanes of it, taken where they arise: actions that are not
an int64 array of valid actions (other dtypes, PufferLib's int32, continuous actions, errors)
are checked and converted by the front, which writes them and calls the ``*_written`` entry;
an env with a restart to report or a reset due (its book) gets its own op; a fault met in a
wait (a worker's death, a timeout) is collected and applied to the book here; a final
observation or a restart adds its entries to the batched info.
"""

from cpython.dict cimport PyDict_Copy
from cpython.pythread cimport PyThread_get_thread_ident
from cpython.ref cimport _Py_REFCNT
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memmove, memset

import numpy as np

cimport numpy as cnp

from fastatari.vector._book cimport EnvBook
from fastatari.vector._codes cimport PHASE_IDLE
from fastatari.vector._wait cimport RowRule, Transport
from fastatari.vector.fa_wait cimport FA_DONE

from fastatari.vector.infos import batched
from fastatari.vector.messages import ReplyKind
from fastatari.vector.serials import FrameSerials, new_source

cnp.import_array()

#: Sets of the arrays a step (or a recv of a whole batch) returns, reused once no caller
#: holds them.
cdef int RESULT_SLOTS = 3


cdef inline char *_data(a):
    return <char *>cnp.PyArray_DATA(<cnp.ndarray>a)


cdef inline void _take_rows(dst_array, src_array, const int64_t *sel, bint whole,
                            Py_ssize_t n):
    """Rows ``sel`` (all ``n`` in order, when ``whole``) of ``src_array`` into ``dst_array``'s
    ``n`` rows; both C-contiguous."""
    cdef Py_ssize_t j, size = cnp.PyArray_NBYTES(<cnp.ndarray>dst_array) // n
    cdef char *dst = _data(dst_array)
    cdef const char *src = _data(src_array)
    if whole:
        memcpy(dst, src, n * size)
    else:
        for j in range(n):
            memcpy(dst + j * size, src + sel[j] * size, size)


cdef class CallGuard:
    """Who is inside a vector env's calls: one thread at a time, as in gymnasium's vector envs;
    the same thread may enter again (a ``close()`` from a signal handler). Entered and left
    with the GIL held, which makes the look and the take one step; compiled, so that the
    step pays nothing for it (``calls.one_caller`` is the Python side)."""

    cdef bint inside
    cdef unsigned long thread
    #: The call inside (its name), while one is.
    cdef readonly str call

    def __init__(self):
        self.inside, self.call = False, ""

    cpdef int enter(self, str call):
        """Enter as the calling thread's ``call``: 1; 0 when this thread is inside already (a
        re-entry, which must not :meth:`leave`); -1 when another thread is (nothing
        changed)."""
        cdef unsigned long me = PyThread_get_thread_ident()
        if not self.inside:
            self.inside, self.thread, self.call = True, me, call
            return 1
        return 0 if self.thread == me else -1

    cpdef void leave(self):
        """The call that entered with 1 is over."""
        self.inside = False


cdef class VectorStep


cdef class _ResultSlot:
    """One set of the arrays ``step`` returns for ``rows`` envs (rewards, flags, the info's
    arrays and masks; ``with_obs`` for a ``recv`` batch: the observations too): reused, written
    in place of fresh copies, while no caller holds any of them, so a step that allocates
    nothing builds nothing but its dicts; a fresh set when each is held. ``shared``: a batch
    slot of the shared memory (``SharedBuffers.batches``), whose rows the workers write. Its
    rows are written as the step's :class:`~fastatari.vector._wait.RowRule` says."""
    cdef Py_ssize_t rows
    cdef RowRule rule
    cdef char **dst  # the rule's arrays here
    cdef object obs, reward, terminated, truncated, done, game_index, index_mask
    cdef object game_key, game_mask_key, env_id, mark, index_column
    cdef dict info, game  # templates: the field arrays and masks; the game columns and masks
    cdef tuple masks
    cdef tuple arrays
    cdef object idle_refs

    def __cinit__(self):
        self.dst = NULL

    def __init__(self, VectorStep step, Py_ssize_t rows, bint with_obs, dict shared=None):
        self.rows = rows
        self.rule = step.batch_rule if with_obs else step.step_rule
        self.game_key, self.game_mask_key = step.game_key, step.game_mask_key
        by_name = self.rule.empty(rows) if shared is None \
            else {name: shared[name] for name in self.rule.names}
        self.dst = <char **>malloc((self.rule.count + 1) * sizeof(char *))
        if self.dst == NULL:
            raise MemoryError()
        self.rule.targets(by_name, rows, self.dst)
        self.obs = by_name["obs"] if with_obs else None
        self.reward, self.terminated = by_name["reward"], by_name["terminated"]
        self.truncated, self.done = by_name["truncated"], by_name["game_done"]
        masks = []
        self.info = {}
        for field in step.info_fields:
            mask = np.empty(rows, np.bool_)
            self.info[field.name], self.info["_" + field.name] = by_name[field.name], mask
            masks.append(mask)
        self.game_index = self.index_mask = None
        self.index_column = step.game_index
        if step.game_index is not None:  # the trainer's own column: copied here in every case
            self.game_index, self.index_mask = np.empty(rows, step.game_index.dtype), \
                np.empty(rows, np.bool_)
            masks.append(self.index_mask)
        self.game = {}
        for name in step.game_fields:
            self.game[name], self.game["_" + name] = by_name["game_" + name], self.done
        self.env_id = self.mark = None
        ids = ()
        if shared is not None:
            self.env_id, self.mark = shared["env_id"], shared["mark"]
            ids = (self.env_id,)
        self.masks = tuple(masks)
        self.arrays = tuple(by_name.values()) + self.masks + ids \
            + (() if self.game_index is None else (self.game_index,))
        self.idle_refs = None  # counted at the first look, once this constructor's names are gone

    def __dealloc__(self):
        free(self.dst)

    cdef bint idle(self):
        """Whether no caller holds any of the arrays (or a view of one)."""
        cdef Py_ssize_t j, n = len(self.arrays)
        if self.idle_refs is None:
            self.idle_refs = [_Py_REFCNT(PyTuple_GET_ITEM(self.arrays, j)) for j in range(n)]
        for j in range(n):
            if _Py_REFCNT(PyTuple_GET_ITEM(self.arrays, j)) != <Py_ssize_t>self.idle_refs[j]:
                return False
        return True

    cdef tuple fill(self, const int64_t[::1] sel, bint whole, obs, bint games):
        """Write the results of the envs ``sel`` (every env, in order, when ``whole``) into
        the arrays; the step's return value (``obs``: the observations, unless this set has
        its own)."""
        with nogil:
            self.rule.write_rows(self.dst, &sel[0], whole, self.rows)
        return self._finish(sel, whole, obs, games)

    cdef tuple fill_in_place(self, Transport transport, const int64_t[::1] sel, int64_t first,
                             bint games):
        """The return value of a ``recv`` whose rows the workers wrote into this (shared)
        set, row ``j`` for ticket ``first + j`` (env ``sel[j]``), and how many rows were
        copied here: those not marked with their ticket (the env took it before the set was
        opened for it)."""
        cdef Py_ssize_t j
        cdef int64_t *mark = <int64_t *>_data(self.mark)
        cdef int64_t *env_id = <int64_t *>_data(self.env_id)
        cdef Py_ssize_t copied = 0
        for j in range(self.rows):
            if transport.load(&mark[j]) != first + j:
                self.rule.write_row(self.dst, j, sel[j])  # as its worker would have
                env_id[j] = sel[j]
                copied += 1
        return self._finish(sel, False, None, games), copied

    cdef tuple _finish(self, const int64_t[::1] sel, bint whole, obs, bint games):
        """The masks, the info dict (a finished game's statistics only where a game ended)
        and each env's game: the return value."""
        cdef Py_ssize_t n = self.rows
        for mask in self.masks:
            memset(_data(mask), 1, n)
        info = PyDict_Copy(self.info)
        if games:
            info[self.game_key], info[self.game_mask_key] = PyDict_Copy(self.game), self.done
        if self.game_index is not None:
            _take_rows(self.game_index, self.index_column, &sel[0], whole, n)
            info["game_index"], info["_game_index"] = self.game_index, self.index_mask
        if self.env_id is not None:
            info["env_id"] = self.env_id
        return (obs if self.obs is None else self.obs), self.reward, self.terminated, \
            self.truncated, info


cdef class VectorStep:
    """The step of ``num_envs`` envs over the shared ``buffers`` columns and their ``book``
    (:class:`~fastatari.vector._book.EnvBook`).

    ``same_step``, ``next_step``: the autoreset mode (``VectorConfig``'s): an ended env resets
    in the step that ends it, or at its next step; neither (disabled): the caller resets it
    (the front raises ``ResetNeeded``). ``fields``: the info fields (``.name``, ``.shape``);
    ``game_key``, ``game_fields``: a finished game's statistics (``info["game"]``);
    ``game_index``: each env's game (``info["game_index"]``), None for one game.
    ``num_actions``: the discrete actions (0: continuous ones, which the front always checks).

    ``executor`` runs the envs (through its ``transport`` where it has one). With ``copy``, a
    step returns one of its output slots (``Executor.outputs``) that the workers filled
    instead of a copy of the observations: the step chooses one that no caller holds any more
    (-1 when each is held: a copy). The other arrays of a step, and of a ``recv`` of
    ``batch_size`` envs its observations too, come the same way from sets of its own (fresh
    copies when each is held)."""

    cdef Py_ssize_t n
    cdef int64_t num_actions
    cdef int64_t[::1] action
    cdef EnvBook book
    cdef uint8_t[::1] game_done, has_final, terminated_v, truncated_v
    cdef uint8_t[::1] ops_v
    cdef int64_t[::1] every, sent_actions
    cdef object ops, all_ids, buffers
    cdef object obs, game_key, game_index, info_fields
    cdef tuple game_fields, outputs, step_slots, batch_slots
    cdef RowRule step_rule, batch_rule  # the rule of a step's rows, a recv batch's (with obs)
    cdef object executor
    cdef Transport transport
    cdef Py_ssize_t batch_size
    cdef object game_mask_key
    cdef Py_ssize_t idle_refs
    cdef int output
    cdef bint copy, life_loss_info, same_step, track_ended, disabled
    # the batch slots the workers write in place (recv): each slot's first ticket (shared:
    # the workers read it; -1 closed) and the trainer's copy of it (``opened``); ``base``, the
    # ticket of the next batch's first row; ``ahead``, the first ticket of no open slot;
    # ``synced``: ``base`` is known (from a send with nothing in flight until a batch other
    # than the next ``batch_size`` tickets)
    cdef tuple shared_slots
    cdef object first_array
    cdef int64_t *first
    cdef int64_t[::1] opened
    cdef int64_t base, ahead
    cdef bint synced
    #: ``recv`` batches returned in the slot the workers wrote, and the rows of those the
    #: trainer copied itself (their envs took their tickets before the slot opened)
    cdef readonly int64_t batches_in_place, rows_copied
    # the frame serials (serials.py): the stacks' (shared), those last returned, and those of
    # the last results' rows (from, to)
    cdef int64_t[::1] obs_serial, final_serial, returned_serial, from_serial, to_serial
    cdef Py_ssize_t serial_rows
    cdef readonly int64_t source

    def __init__(self, buffers, EnvBook book, fields, game_key, game_fields, game_index,
                 int64_t num_actions, bint copy, bint life_loss_info, bint same_step,
                 bint next_step, executor, Py_ssize_t batch_size):
        self.n = book.num_envs
        self.book = book
        self.buffers = buffers
        self.num_actions = num_actions
        if num_actions:
            self.action = buffers.action
        self.all_ids = np.arange(self.n, dtype=np.int64)
        self.every = self.all_ids
        self.sent_actions = np.zeros(self.n, np.int64)
        self.game_done = buffers.game_done.view(np.uint8)
        self.has_final = buffers.has_final.view(np.uint8)
        self.obs = buffers.obs
        self.terminated_v = buffers.terminated.view(np.uint8)
        self.truncated_v = buffers.truncated.view(np.uint8)
        self.info_fields = tuple(fields)
        self.game_key, self.game_mask_key = game_key, "_" + game_key
        self.game_fields = tuple(game_fields)
        self.game_index = game_index
        self.ops = np.zeros(self.n, np.uint8)
        self.ops_v = self.ops
        self.copy, self.life_loss_info, self.same_step = copy, life_loss_info, same_step
        self.track_ended = not same_step  # same-step: an ended env reset in the step
        self.disabled = not (same_step or next_step)  # an ended env waits for the caller
        self.executor, self.transport = executor, executor.transport
        self.batch_size = batch_size
        outputs = executor.outputs
        self.outputs = outputs if copy else ()
        self.output = -1
        # a slot's references while no caller holds it (or any view of it: views are based on
        # the slot's array, itself on its own memoryview)
        self.idle_refs = _Py_REFCNT(PyTuple_GET_ITEM(outputs, 0)) if self.outputs else 0
        if game_index is not None and not game_index.flags.c_contiguous:
            raise ValueError("game_index must be C-contiguous")  # copied row by row
        life_loss = buffers.life_loss if life_loss_info else None  # (the rules check theirs)
        self.step_rule = RowRule(buffers.result_columns(self.info_fields, False),
                                 buffers.game_done, life_loss)
        self.batch_rule = RowRule(buffers.result_columns(self.info_fields, True),
                                  buffers.game_done, life_loss)
        self.step_slots = tuple(_ResultSlot(self, self.n, False) for _ in range(RESULT_SLOTS))
        self.batch_slots = tuple(_ResultSlot(self, batch_size, True)
                                 for _ in range(RESULT_SLOTS if batch_size else 0))
        batches = buffers.batches if self.transport is not None else ()
        if batches and len(batches[0]["mark"]) != batch_size:
            raise ValueError("the batch slots must have batch_size rows")
        self.shared_slots = tuple(_ResultSlot(self, batch_size, True, dict(b)) for b in batches)
        self.first_array = buffers.batch_first
        self.first = <int64_t *>_data(self.first_array) if batches else NULL
        self.opened = np.full(len(batches), -1, np.int64)
        self.obs_serial, self.final_serial = buffers.obs_serial, buffers.final_serial
        self.returned_serial = np.full(self.n, -1, np.int64)
        self.from_serial, self.to_serial = np.zeros(self.n, np.int64), np.zeros(self.n, np.int64)
        self.serial_rows = 0
        self.source = new_source()
        self.base = self.ahead = 0
        self.synced = False

    @property
    def closed(self):
        """Whether the executor is closed (nothing may run)."""
        return self.executor.closed if self.transport is None else self.transport.closed

    cdef int _free_output(self):
        cdef Py_ssize_t k
        for k in range(len(self.outputs)):
            if _Py_REFCNT(PyTuple_GET_ITEM(self.outputs, k)) == self.idle_refs:
                return <int>k
        return -1

    # -- step ----------------------------------------------------------------------------------
    def step(self, actions):
        """The synchronous step of every env with ``actions``: its results. None, having
        changed nothing, when the actions are not an int64 array of ``num_envs`` valid actions
        or an ended env waits for the caller's reset (autoreset disabled): the front then
        checks them (raising its precise errors), writes them and calls
        :meth:`step_written`."""
        if self.num_actions == 0 or self.closed or not self._write_actions(actions):
            return None
        return self._step()

    def step_written(self):
        """The synchronous step of the actions the front checked and wrote into the shared
        action column: its results."""
        return self._step()

    cdef bint _write_actions(self, actions) except -1:
        """Copy ``actions`` into the shared column and check them there (what is checked is
        what the workers read: another thread may change the caller's array); False when the
        front must check them (the column is then its to rewrite)."""
        cdef Py_ssize_t i, n = self.n
        cdef int64_t a, limit = self.num_actions
        cdef const int64_t[::1] given
        cdef bint ok = True
        if not (isinstance(actions, np.ndarray) and actions.dtype == np.int64
                and actions.ndim == 1 and actions.shape[0] == n):
            return False
        given = np.ascontiguousarray(actions)
        with nogil:
            memmove(&self.action[0], &given[0], n * sizeof(int64_t))
            for i in range(n):
                a = self.action[i]
                if a < 0 or a >= limit or (self.disabled and self.book.ended[i]):
                    ok = False
                    break
        return ok

    cdef _step(self):
        """Run every env (its op from the book: a reset after an ended episode, none for one
        whose restart is to be reported, whose result is already there) and wait for all; a
        fault met meanwhile is collected and applied here. The results."""
        cdef Py_ssize_t i
        cdef bint plain = True
        cdef int found
        cdef uint8_t *ops = NULL
        if self.synced:
            self._unsync()  # a step's completions are no batch
        for i in range(self.n):
            if self.book.ended[i] or self.book.restarted[i]:
                plain = False
                break
        if not plain:
            self.book.mark_sent(self.every, self.ops_v)
            ops = &self.ops_v[0]
        # the workers' copy of the observations, unless an env does not run (its row would be
        # stale there)
        self.output = self._free_output() if plain or not self.book.any_restarted(self.every) \
            else -1
        replies = None
        if self.transport is not None:
            found = self.transport.round_trip(ops, self.output)
            if found != FA_DONE:
                replies = self.executor.after_wait(found)
        else:
            replies = self.executor.run_and_collect(None if plain else self.ops, self.output)
        if replies:
            self._apply_faults(replies)
            self.output = -1  # a restarted env's observation is not in the workers' copy
        if not plain or replies:
            self.book.all_idle()
        return self._results(None)

    cdef _apply_faults(self, list replies):
        """A fault answered the wait early: collect the rest, then the book takes what
        happened besides envs answering (restarts)."""
        while self.executor.busy():
            replies += self.executor.collect()
        self.book.apply([r for r in replies if r.kind is not ReplyKind.DONE])

    # -- send, recv ----------------------------------------------------------------------------
    def send(self, actions, env_ids):
        """Start ``env_ids`` (None: every env) with ``actions``: True. False, having changed
        nothing, when they are not int64 arrays of distinct idle envs and valid actions (or
        an ended env waits for the caller's reset): the front then checks them, writes the
        actions and calls :meth:`send_written`."""
        if self.num_actions == 0 or self.closed:
            return False
        ids = self._write_send(actions, env_ids)
        if ids is None:
            return False
        self._send(ids)
        return True

    def send_written(self, ids):
        """Start ``ids`` (an int64 array of distinct idle envs, checked by the front), whose
        actions it wrote into the shared column."""
        self._send(ids)

    cdef _write_send(self, actions, env_ids):
        cdef Py_ssize_t i, j, k
        cdef int64_t a, limit = self.num_actions
        cdef const int64_t[::1] given, sel
        cdef bint ok = True
        if env_ids is None:
            ids = self.all_ids
        elif (isinstance(env_ids, np.ndarray) and env_ids.dtype == np.int64
              and env_ids.ndim == 1):
            ids = np.array(env_ids)  # a copy: what is checked is what runs
        else:
            return None
        k = ids.shape[0]
        if not (k and isinstance(actions, np.ndarray) and actions.dtype == np.int64
                and actions.ndim == 1 and actions.shape[0] == k):
            return None
        sel = ids
        given = np.ascontiguousarray(actions)
        with nogil:
            # ops_v marks the envs seen (a repeated id finds its mark); mark_sent rewrites it
            memset(&self.ops_v[0], 0, self.n)
            for j in range(k):
                i = sel[j]
                if i < 0 or i >= self.n or self.ops_v[i] or self.book.phase[i] != PHASE_IDLE \
                        or (self.disabled and self.book.ended[i]):
                    ok = False
                    break
                a = given[j]  # read once: what is checked is what is written
                if a < 0 or a >= limit:
                    ok = False
                    break
                self.ops_v[i] = 1
                self.sent_actions[i] = a
            if ok:
                for j in range(k):
                    i = sel[j]
                    self.action[i] = self.sent_actions[i]
        return ids if ok else None

    cdef _send(self, ids):
        cdef Py_ssize_t run
        if self.book.any_restarted(ids):  # answered at once: after the envs done before them
            self.book.apply(self.executor.collect(0))
        if not self.synced and self.shared_slots and self.book.in_flight() == 0:
            self._resync()
        run = self.book.mark_sent(ids, self.ops_v)
        if run == 0:
            return
        if self.transport is not None:
            self.transport.start(&self.ops_v[0], -1, True)
        else:
            self.executor.run(self.ops)

    def recv(self):
        """The first ``batch_size`` envs to finish (fewer if fewer are in flight): their
        results with ``info["env_id"]``, in the order they finished, the envs idle again.
        Envs the book holds answered (a restart's, a fault's) come first."""
        cdef Py_ssize_t i, want
        cdef int found
        cdef const int64_t[::1] taken
        book = self.book
        want = min(self.batch_size, book.in_flight())
        if want == 0:
            raise ValueError("recv() with no env in flight")  # the front checks first
        if self.synced and (want < self.batch_size or book.count):
            self._unsync()  # this batch is not the next batch_size tickets
        elif not self.synced and self.shared_slots and want == self.batch_size \
                and book.count == 0:
            self._resync_in_flight()
        if self.synced:
            results = self._recv_in_place(want)
            if results is not None:
                return results
        elif self.transport is not None and book.count == 0:
            found = self.transport.wait(self.transport.collected + want, self.transport.timeout)
            if found == FA_DONE:
                ids = self.transport.take(True, want)
                taken = ids
                if taken.shape[0] == want:
                    for i in range(want):
                        book.phase[taken[i]] = PHASE_IDLE
                    return self._batch(ids)
                self.transport.untake(ids)  # fewer (a recv from a signal's handler took some)
            else:
                book.apply(self.executor.after_wait(found, True))
        while book.count < want:
            book.apply(self.executor.collect(want - book.count))
        return self._batch(book.take_answered(want))

    cdef _batch(self, ids):
        results = self._results(ids)
        (<dict>results[4])["env_id"] = ids
        return results

    # -- batches written in place --------------------------------------------------------------
    cdef _recv_in_place(self, Py_ssize_t want):
        """The batch of the next ``want`` (``batch_size``) tickets, the envs idle again: the
        shared slot the workers wrote it into (where one was open for it), else gathered.
        None when a fault answered a wait (applied to the book: the caller collects)."""
        cdef Py_ssize_t i, s
        cdef int64_t base = self.base
        cdef int found
        cdef const int64_t[::1] taken
        cdef Transport transport = self.transport
        cdef int64_t seen
        found = transport.wait(transport.collected + want, transport.timeout)
        while found == FA_DONE and self.synced and self.base == base:
            seen = transport.completed()  # before the look: a completion after it ends the wait
            ids = transport.take_range(base, want)
            if ids is None:  # a worker took one of these tickets and is writing its row
                found = transport.wait(seen + 1, transport.timeout)
                continue
            taken = ids
            for i in range(want):
                self.book.phase[taken[i]] = PHASE_IDLE
            self.base += want
            for s in range(len(self.shared_slots)):
                if self.opened[s] == base:
                    results = self._results(ids, self.shared_slots[s], base)
                    break
            else:  # no slot was free when these tickets began: gathered
                results = self._batch(ids)
            self._open_ahead()
            return results
        self._unsync()
        if found != FA_DONE:
            self.book.apply(self.executor.after_wait(found, True))
        return None

    cdef void _open_ahead(self):
        """Open each free slot whose batch is over for the next batch not yet open. (A slot
        whose tickets are all below ``base`` has no worker writing into it any more.)"""
        cdef Py_ssize_t s
        for s in range(len(self.shared_slots)):
            if self.opened[s] < self.base and (<_ResultSlot>self.shared_slots[s]).idle():
                self.opened[s] = self.ahead
                self.transport.store(&self.first[s], self.ahead)
                self.ahead += self.batch_size

    cdef void _resync(self):
        """Nothing in flight: no worker holds a ticket, the next batch starts at the next."""
        self.base = self.ahead = self.transport.issued()
        self.synced = True
        self._open_ahead()

    cdef void _resync_in_flight(self):
        """With envs in flight (a steady loop after a fault or a partial batch): where the
        tickets run on from the lowest not taken (``Transport.first_untaken``), the next batch
        starts there (its rows completed already the trainer copies)."""
        cdef int64_t first = self.transport.first_untaken()
        if first >= 0:
            self.base = self.ahead = first
            self.synced = True
            self._open_ahead()

    cdef void _unsync(self):
        """Close every slot (a worker that read one open may still write a row there, never
        one the trainer returns: a slot opens again only at the next :meth:`_resync`)."""
        cdef Py_ssize_t s
        self.synced = False
        for s in range(len(self.shared_slots)):
            if self.opened[s] >= 0:
                self.opened[s] = -1
                self.transport.store(&self.first[s], -1)

    # -- results -------------------------------------------------------------------------------
    cdef _results(self, ids, _ResultSlot in_place=None, int64_t first=0):
        """The ``(obs, reward, terminated, truncated, info)`` of every env (``ids`` None: a
        synchronous step) or of ``ids`` (an int64 array: a ``recv``; ``in_place``: the shared
        slot the workers wrote them into, from ticket ``first``); records which envs'
        episodes ended."""
        cdef Py_ssize_t i, j, k
        cdef const int64_t[::1] sel = self.every if ids is None else ids
        cdef bint rare = False, games = False, whole = ids is None
        k = sel.shape[0]
        with nogil:
            for j in range(k):
                i = sel[j]
                if (self.same_step and self.has_final[i]) or self.book.restarted[i]:
                    rare = True
                if self.game_done[i]:
                    games = True
                # an ended episode's env resets at its next step (next-step autoreset) or
                # waits for the caller's reset (disabled); same-step reset it already
                self.book.ended[i] = (self.terminated_v[i] | self.truncated_v[i]) \
                    if self.track_ended else 0
                self.from_serial[j] = self.returned_serial[i]
                self.to_serial[j] = self.final_serial[i] if self.same_step and self.has_final[i] \
                    else self.obs_serial[i]
                self.returned_serial[i] = self.obs_serial[i]
            self.serial_rows = k
        obs = None
        if whole:  # copies: views of the whole columns would change at the next step
            if self.output >= 0:  # the workers' copy
                obs = self.outputs[self.output]
            else:
                obs = self.obs.copy() if self.copy else self.obs
        results = None
        if in_place is not None:
            results, copied = in_place.fill_in_place(self.transport, sel, first, games)
            self.batches_in_place += 1
            self.rows_copied += copied
        for slot in (() if in_place is not None else self.step_slots if whole
                     else self.batch_slots):
            if (<_ResultSlot>slot).rows == k and (<_ResultSlot>slot).idle():
                results = (<_ResultSlot>slot).fill(sel, whole, obs, games)
                break
        if results is None:  # each set held (or a batch of another size): fresh arrays
            results = _ResultSlot(self, k, not whole).fill(sel, whole, obs, games)
        if rare:
            self._rare_entries(results[4], self.all_ids if whole else ids,
                               np.ones(k, np.bool_))
        return results

    cdef _rare_entries(self, dict info, full, mask):
        """The info's entries for the envs ``full`` (where ``mask``) that few steps have: a
        restart to report (once), and under same-step autoreset the ended episodes' final
        observations and infos."""
        buf = self.buffers
        restarted = self.book.report_restarted(full, mask)
        if restarted.any():
            info["worker_restarted"], info["_worker_restarted"] = restarted, restarted.copy()
        if self.same_step:
            has_final = buf.has_final[full] & mask
            if has_final.any():
                final_obs = np.empty(full.size, object)
                for j in np.flatnonzero(has_final):
                    final_obs[j] = buf.final_obs[full[j]].copy()
                info["final_obs"], info["_final_obs"] = final_obs, has_final
                info["final_info"] = batched(buf.final_info, self.info_fields, buf.game_done,
                                             buf.game, self.game_key, full, has_final)
                info["_final_info"] = has_final.copy()

    def serials(self):
        """The :class:`~fastatari.vector.serials.FrameSerials` of the last results' rows."""
        k = self.serial_rows
        return FrameSerials(self.source, np.array(self.from_serial[:k]),
                            np.array(self.to_serial[:k]))

    def info(self, mask):
        """gymnasium's batched info of every env where ``mask`` (a reset's), zeros
        elsewhere. (The observations returned with it are every env's.)"""
        self.returned_serial[:] = self.obs_serial
        buf = self.buffers
        info = batched(buf.info, self.info_fields, buf.game_done, buf.game, self.game_key,
                       slice(None), mask)
        if self.game_index is not None:
            info["game_index"], info["_game_index"] = self.game_index.copy(), mask.copy()
        self._rare_entries(info, self.all_ids, mask)
        return info
