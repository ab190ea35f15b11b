"""The common step, compiled: the synchronous ``step``, and async ``send`` and ``recv``, each one
call from the actions to the returned arrays and batched info (checking and writing the
actions and each env's op, the executor's start and wait, the results), and the one-caller
guard those calls enter.

The vector env's front takes this path for the common step: every env sent steps or, after an
ended episode under next-step autoreset, resets; no restart awaits its report; the actions are
an int64 array of the right shape and range (and the env ids, for ``send``, an int64 array of
distinct idle envs); and no env returned left a final observation (same-step autoreset).
Anything else returns ``NOT_COMMON``, None or False here, having changed nothing, and the
front's general path, in Python, does that call whole, raising its precise errors; the two give
the same results. A fault met in a wait (a worker's death, a timeout) is handed back as the
executor's replies, for the general path to finish the call.
"""

from cpython.dict cimport PyDict_Copy
from cpython.pythread cimport PyThread_get_thread_ident
from cpython.ref cimport _Py_REFCNT
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcpy, memmove, memset

import numpy as np

cimport numpy as cnp

from fastatari.vector._codes cimport PHASE_ANSWERED, PHASE_IDLE, PHASE_IN_FLIGHT, next_op
from fastatari.vector._wait cimport HotPath
from fastatari.vector.fa_wait cimport FA_DONE

cnp.import_array()

cdef enum:
    _NOT_COMMON = 0
    _ALL_STEP = 1
    _SOME_RESET = 2

#: :meth:`CommonStep.write_actions`' answers: not the common step; every env steps; some reset.
NOT_COMMON, ALL_STEP, SOME_RESET = _NOT_COMMON, _ALL_STEP, _SOME_RESET

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
    common step pays nothing for it (``calls.one_caller`` is the Python side)."""

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


cdef class CommonStep


cdef class _ResultSlot:
    """One set of the arrays ``step`` returns for ``rows`` envs (rewards, flags, the info's
    arrays and masks; ``with_obs`` for a ``recv`` batch: the observations too): reused, written
    in place of fresh copies, while no caller holds any of them, so a step that allocates
    nothing builds nothing but its dicts; a fresh set when each is held."""
    cdef Py_ssize_t rows
    cdef object obs, reward, terminated, truncated, done, game_index, index_mask, life_loss
    cdef object game_done, game_key, game_mask_key
    cdef dict info, game  # templates: the field arrays and masks; the game columns and masks
    cdef tuple copies, masks, wheres  # (array, column) pairs; mask arrays; pairs
    cdef tuple arrays
    cdef object idle_refs

    def __init__(self, CommonStep step, Py_ssize_t rows, bint with_obs):
        def like(column):
            return np.empty((rows,) + column.shape[1:], column.dtype)

        self.rows = rows
        self.life_loss = step.life_loss if step.life_loss_info else None
        self.game_done, self.game_key = step.game_done_array, step.game_key
        self.game_mask_key = step.game_mask_key
        self.obs = like(step.obs) if with_obs else None
        self.reward, self.terminated, self.truncated = like(step.reward), \
            like(step.terminated), like(step.truncated)
        copies = [(self.reward, step.reward), (self.terminated, step.terminated),
                  (self.truncated, step.truncated)]
        if with_obs:
            copies.append((self.obs, step.obs))
        masks = []
        self.info = {}
        for name, column in step.fields:
            array, mask = like(column), np.empty(rows, np.bool_)
            self.info[name], self.info["_" + name] = array, mask
            copies.append((array, column))
            masks.append(mask)
        self.game_index = self.index_mask = None
        if step.game_index is not None:
            self.game_index, self.index_mask = like(step.game_index), np.empty(rows, np.bool_)
            copies.append((self.game_index, step.game_index))
            masks.append(self.index_mask)
        self.done = like(step.game_done_array)
        self.game = {}
        wheres = []
        for name, column in step.game_columns:
            array = like(column)
            self.game[name], self.game["_" + name] = array, self.done
            wheres.append((array, column))
        self.copies, self.masks, self.wheres = tuple(copies), tuple(masks), tuple(wheres)
        self.arrays = tuple(a for a, _ in copies + wheres) + tuple(masks) + (self.done,)
        self.idle_refs = None  # counted at the first look, once this constructor's names are gone

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
        cdef Py_ssize_t j, size, n = self.rows
        cdef tuple pair
        cdef uint8_t *flag
        cdef const uint8_t *lost
        cdef const uint8_t *done
        cdef char *dst
        cdef const char *src
        for pair in self.copies:
            _take_rows(pair[0], pair[1], &sel[0], whole, n)
        for mask in self.masks:
            memset(_data(mask), 1, n)
        if self.life_loss is not None:  # ale-py's: terminated at a life loss, episode goes on
            flag, lost = <uint8_t *>_data(self.terminated), <uint8_t *>_data(self.life_loss)
            for j in range(n):
                flag[j] |= lost[sel[j]]
        info = PyDict_Copy(self.info)
        if games:  # a finished game's statistics, zeros for the other envs
            _take_rows(self.done, self.game_done, &sel[0], whole, n)
            done = <uint8_t *>_data(self.done)
            for pair in self.wheres:
                dst, src = _data(pair[0]), _data(pair[1])
                size = cnp.PyArray_NBYTES(<cnp.ndarray>pair[0]) // n
                for j in range(n):
                    if done[j]:
                        memcpy(dst + j * size, src + sel[j] * size, size)
                    else:
                        memset(dst + j * size, 0, size)
            info[self.game_key], info[self.game_mask_key] = PyDict_Copy(self.game), self.done
        if self.game_index is not None:
            info["game_index"], info["_game_index"] = self.game_index, self.index_mask
        return (obs if self.obs is None else self.obs), self.reward, self.terminated, \
            self.truncated, info


cdef class CommonStep:
    """The common step of ``num_envs`` envs over the shared ``buffers`` columns, with the
    book's ``ended``, ``restarted`` and ``phase`` arrays (``EnvBook.step_columns``).

    ``same_step``, ``next_step``: the autoreset mode (``VectorConfig``'s): an ended env resets
    in the step that ends it, or at its next step; neither (disabled): the caller resets it (the
    general path raises).
    ``game_fields``: the names of a finished game's statistics (``info["game"]``);
    ``game_index``: each env's game (``info["game_index"]``), None for one game.

    ``executor`` runs the envs (through its ``hot_path`` where it has one). With ``copy``, the
    common step returns one of its output slots (``Executor.outputs``) that the workers filled
    instead of a copy of the observations: :meth:`write_actions` chooses one that no caller
    holds any more (:attr:`output`; -1 when each is held: a copy), which :meth:`step` starts
    the envs with. The other arrays of a step, and of a ``recv`` of ``batch_size`` envs its
    observations too, come the same way from sets of its own (fresh copies when each is
    held)."""

    cdef Py_ssize_t n
    cdef int64_t num_actions
    cdef int64_t[::1] action
    cdef uint8_t[::1] ended, restarted, phase, game_done, has_final, terminated_v, truncated_v
    cdef uint8_t[::1] ops_v
    cdef int64_t[::1] every, sent_actions
    cdef readonly object ops
    cdef object all_ids
    cdef object obs, reward, terminated, truncated, life_loss, game_key, game_done_array
    cdef object game_index
    cdef tuple fields, game_columns, outputs, step_slots, batch_slots
    cdef object executor
    cdef HotPath hot
    cdef Py_ssize_t batch_size
    #: After a compiled ``recv``: the envs sent and not yet returned.
    cdef readonly Py_ssize_t in_flight
    cdef object game_mask_key
    cdef Py_ssize_t idle_refs
    cdef readonly int output
    cdef bint copy, life_loss_info, track_ended, reset_ended

    def __init__(self, buffers, ended, restarted, phase, field_names, game_key, game_fields,
                 game_index, int64_t num_actions, bint copy, bint life_loss_info,
                 bint same_step, bint next_step, executor, Py_ssize_t batch_size=0):
        self.n = ended.shape[0]
        self.num_actions = num_actions
        self.action = buffers.action
        self.ended = ended.view(np.uint8)
        self.restarted = restarted.view(np.uint8)
        self.phase = phase
        self.all_ids = np.arange(self.n, dtype=np.int64)
        self.every = self.all_ids
        self.sent_actions = np.zeros(self.n, np.int64)
        self.game_done_array = buffers.game_done
        self.game_done = buffers.game_done.view(np.uint8)
        self.has_final = buffers.has_final.view(np.uint8)
        self.obs, self.reward = buffers.obs, buffers.reward
        self.terminated, self.truncated = buffers.terminated, buffers.truncated
        self.terminated_v = buffers.terminated.view(np.uint8)
        self.truncated_v = buffers.truncated.view(np.uint8)
        self.life_loss = buffers.life_loss
        self.fields = tuple((name, buffers.info[name]) for name in field_names)
        self.game_key, self.game_mask_key = game_key, "_" + game_key
        self.game_columns = tuple((name, buffers.game[name]) for name in game_fields)
        self.game_index = game_index
        self.ops = np.zeros(self.n, np.uint8)
        self.ops_v = self.ops
        self.copy, self.life_loss_info = copy, life_loss_info
        self.track_ended = not same_step  # ended envs matter at the next step
        self.reset_ended = next_step
        self.executor, self.hot = executor, executor.hot_path
        self.batch_size, self.in_flight = batch_size, 0
        outputs = executor.outputs
        self.outputs = outputs if copy else ()
        self.output = -1
        # a slot's references while no caller holds it (or any view of it: views are based on
        # the slot's array, itself on its own memoryview)
        self.idle_refs = _Py_REFCNT(PyTuple_GET_ITEM(outputs, 0)) if self.outputs else 0
        if not all(a.flags.c_contiguous for a in (
                self.obs, self.reward, self.terminated, self.truncated, self.life_loss,
                self.game_done_array, *(c for _, c in self.fields + self.game_columns),
                *(() if game_index is None else (game_index,)))):
            raise ValueError("the result columns must be C-contiguous")  # copied row by row
        self.step_slots = tuple(_ResultSlot(self, self.n, False) for _ in range(RESULT_SLOTS))
        self.batch_slots = tuple(_ResultSlot(self, batch_size, True)
                                 for _ in range(RESULT_SLOTS if batch_size else 0))

    cdef int _free_output(self):
        cdef Py_ssize_t k
        for k in range(len(self.outputs)):
            if _Py_REFCNT(PyTuple_GET_ITEM(self.outputs, k)) == self.idle_refs:
                return <int>k
        return -1

    cdef bint _closed(self) except -1:
        return self.executor.closed if self.hot is None else self.hot.closed

    def step(self, actions):
        """The synchronous common step, whole: :meth:`write_actions`, the executor's round
        trip (compiled: its ``hot_path``) and :meth:`results`. Returns the step's results; a
        list of replies when the round trip ran but only the general path gives the results
        (a fault: the replies seen, the envs still owed not yet collected; none: a final
        observation); None, having run nothing, when it is not the common step or the
        executor is closed."""
        cdef int common, found
        if self._closed():
            return None
        common = self._write_actions(actions)
        if common == _NOT_COMMON:
            return None
        if self.hot is not None:
            found = self.hot.round_trip(NULL if common == _ALL_STEP else &self.ops_v[0],
                                        self.output)
            if found != FA_DONE:
                return self.executor.after_wait(found)
        else:
            replies = self.executor.run_and_collect(None if common == _ALL_STEP else self.ops,
                                                    self.output)
            if replies:
                return replies
        results = self._results(None)
        return [] if results is None else results

    def send(self, actions, env_ids):
        """The async common send, whole: :meth:`write_send`, then the executor starts the
        envs. True when sent; False, having changed nothing, when it is not the common send
        or the executor is closed."""
        if self._closed() or self._write_send(actions, env_ids) is None:
            return False
        if self.hot is not None:
            self.hot.start(&self.ops_v[0], -1, True)
        else:
            self.executor.run(self.ops)
        return True

    def recv(self):
        """The async common recv, whole: wait for the first ``batch_size`` envs to finish
        (fewer if fewer are in flight), take them and :meth:`results` with
        ``info["env_id"]``, the envs idle again. Returns the results (:attr:`in_flight`: the
        envs still sent and not returned); a list of replies when it waited and a fault came
        (to apply: the general path goes on); None, having returned nothing, when the general
        path must: no compiled wait (``hot_path``), a closed executor, envs answered and not
        yet returned (its queue), or after the wait results that only it gives (a final
        observation, a restart to report: the envs taken are put back)."""
        cdef Py_ssize_t i, want, sent = 0
        cdef int found
        if self.hot is None or self.hot.closed or self.batch_size == 0:
            return None
        for i in range(self.n):
            if self.phase[i] == PHASE_ANSWERED:
                return None
            sent += self.phase[i] != PHASE_IDLE
        want = min(self.batch_size, sent)
        if want == 0:
            return None
        found = self.hot.wait(self.hot.collected + want, self.hot.timeout)
        if found != FA_DONE:
            return self.executor.after_wait(found, True)
        ids = self.hot.take(True, want)
        cdef const int64_t[::1] taken = ids
        results = self._results(ids) if taken.shape[0] == want else None
        if results is None:
            self.hot.untake(ids)
            return None
        for i in range(want):
            self.phase[taken[i]] = PHASE_IDLE
        self.in_flight = sent - want
        (<dict>results[4])["env_id"] = ids
        return results

    def write_actions(self, actions):
        """Check ``actions`` and, for the common step, write them and each env's op
        (:attr:`ops`): ``ALL_STEP`` when every env steps, ``SOME_RESET`` when some reset
        after an ended episode. ``NOT_COMMON`` for anything else (another dtype or shape, an
        action out of range, a restart to report, an ended episode without next-step
        autoreset): the general path then checks and writes the actions itself."""
        return self._write_actions(actions)

    cdef int _write_actions(self, actions) except -1:
        cdef Py_ssize_t i, n = self.n
        cdef int64_t a, limit = self.num_actions
        cdef const int64_t[::1] given
        cdef int answer = _ALL_STEP
        self.output = -1
        if not (isinstance(actions, np.ndarray) and actions.dtype == np.int64
                and actions.ndim == 1 and actions.shape[0] == n):
            return _NOT_COMMON
        given = np.ascontiguousarray(actions)
        with nogil:
            # copied first, then checked: what is checked is what the workers read (another
            # thread may change the caller's array); the general path rewrites it otherwise
            memmove(&self.action[0], &given[0], n * sizeof(int64_t))
            for i in range(n):
                a = self.action[i]
                if a < 0 or a >= limit or self.restarted[i]:
                    answer = _NOT_COMMON
                    break
                if self.ended[i]:
                    if not self.reset_ended:
                        answer = _NOT_COMMON
                        break
                    answer = _SOME_RESET
            if answer == _SOME_RESET:
                for i in range(n):
                    self.ops_v[i] = next_op(self.ended[i])
        if answer != _NOT_COMMON:
            self.output = self._free_output()
        return answer

    def write_send(self, actions, env_ids):
        """Check ``actions`` for ``env_ids`` (None: every env) and, for the common send,
        write them, each env's op (:attr:`ops`) and its phase (in flight); returns the ids to
        run. None for anything else (another dtype or shape, an id out of range, repeated,
        busy or with a restart to report, an action out of range, an ended episode without
        next-step autoreset), with nothing written: the general path then raises or sends."""
        return self._write_send(actions, env_ids)

    cdef _write_send(self, actions, env_ids):
        cdef Py_ssize_t i, j, k
        cdef int64_t a, limit = self.num_actions
        cdef const int64_t[::1] given, sel
        cdef bint common = True
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
            # the ops of this send, IDLE for the envs not sent (Executor.run): a repeated id
            # finds its op already set
            memset(&self.ops_v[0], 0, self.n)
            for j in range(k):
                i = sel[j]
                if i < 0 or i >= self.n or self.ops_v[i] or self.phase[i] != PHASE_IDLE \
                        or self.restarted[i] or (self.ended[i] and not self.reset_ended):
                    common = False
                    break
                a = given[j]  # read once: what is checked is what is written
                if a < 0 or a >= limit:
                    common = False
                    break
                self.ops_v[i] = next_op(self.ended[i])
                self.sent_actions[i] = a
            if common:
                for j in range(k):
                    i = sel[j]
                    self.action[i] = self.sent_actions[i]
                    self.phase[i] = PHASE_IN_FLIGHT
        return ids if common else None

    def results(self, ids=None):
        """The ``(obs, reward, terminated, truncated, info)`` of every env (``ids`` None: a
        synchronous step) or of ``ids`` (an int64 array: a ``recv``), as the general path
        gives them, or None when only it can (a final observation, a restart to report),
        with nothing changed. Records which envs' episodes ended."""
        return self._results(ids)

    cdef _results(self, ids):
        cdef Py_ssize_t i, j, k
        cdef const int64_t[::1] sel = self.every if ids is None else ids
        cdef bint common = True, games = False, whole = ids is None
        k = sel.shape[0]
        with nogil:
            for j in range(k):
                i = sel[j]
                if self.has_final[i] or self.restarted[i]:
                    common = False
                    break
                if self.game_done[i]:
                    games = True
            if common and self.track_ended:
                for j in range(k):
                    i = sel[j]
                    self.ended[i] = self.terminated_v[i] | self.truncated_v[i]
        if not common or k == 0:
            return None
        obs = None
        if whole:  # copies: views of the whole columns would change at the next step
            if self.output >= 0:  # the workers' copy
                obs = self.outputs[self.output]
            else:
                obs = self.obs.copy() if self.copy else self.obs
        for slot in (self.step_slots if whole else self.batch_slots):
            if (<_ResultSlot>slot).rows == k and (<_ResultSlot>slot).idle():
                return (<_ResultSlot>slot).fill(sel, whole, obs, games)
        # each set held (or a batch of another size): fresh arrays
        return _ResultSlot(self, k, not whole).fill(sel, whole, obs, games)
