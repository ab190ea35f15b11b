# The vector env's hot path in shared memory (fa_wait.c), apart from the kernels.
# Directives (boundscheck, wraparound, ...) are set in setup.py.
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc, qsort
from libc.string cimport memcpy, memset

import numpy as np

from fastatari.vector._codes cimport OP_IDLE, OP_RESET, OP_STEP
from fastatari.vector.fa_wait cimport (
    FA_CONTROL_BYTES,
    FA_DONE,
    FA_EVENT,
    FA_FAILED,
    FA_INTERRUPTED,
    FA_TIMEOUT,
    fa_claim,
    fa_complete,
    fa_complete_as,
    fa_completed,
    fa_control,
    fa_fast_waits,
    fa_generation,
    fa_issued,
    fa_load64,
    fa_output,
    fa_publish,
    fa_release_fence,
    fa_seconds,
    fa_set_output,
    fa_store64,
    fa_take_ticket,
    fa_wait_done,
    fa_wait_generation,
)

#: Bytes of the control words at the start of the shared memory.
CONTROL_BYTES = FA_CONTROL_BYTES
#: Whether the waits sleep on futex, eventfd and epoll (Linux) rather than nap.
FAST_WAITS = bool(fa_fast_waits())
TIMEOUT = FA_TIMEOUT
DONE = FA_DONE
EVENT = FA_EVENT
#: The ops (``_codes.pxd``), by name: ``messages.Op`` takes them.
OPS = {"IDLE": OP_IDLE, "STEP": OP_STEP, "RESET": OP_RESET}


cdef fa_control *_control(uint8_t[::1] control) except NULL:
    if control.shape[0] < FA_CONTROL_BYTES:
        raise ValueError(f"control must hold {FA_CONTROL_BYTES} bytes, got {control.shape[0]}")
    if <uintptr_t>&control[0] % 64:
        raise ValueError("control must be 64-byte aligned (a cache line)")
    return <fa_control *>&control[0]


cdef double _seconds(object seconds, str name) except? -2.0:
    """None -> -1 (no limit); a number >= 0 (inf: no limit), else ValueError."""
    if seconds is None:
        return -1.0
    cdef double value = seconds
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0 or None, got {seconds}")
    return value


def release_fence():
    """Order the writes before it (actions) before those after it (the ops naming them)."""
    fa_release_fence()


def publish(uint8_t[::1] control):
    """Publish a command: bump the generation, wake every worker asleep on it (one call)."""
    fa_publish(_control(control))


def generation(uint8_t[::1] control):
    """Commands published so far (mod 2**32)."""
    return fa_generation(_control(control))


def completed(uint8_t[::1] control):
    """Env completions counted so far."""
    return fa_completed(_control(control))


def wait_done(uint8_t[::1] control, int64_t target, int epfd, int evfd, double spin,
              timeout):
    """Wait, without the GIL, until ``target`` completions are counted: spin for ``spin``
    seconds, then sleep on the epoll descriptor ``epfd`` (the eventfd ``evfd`` and the
    workers' pipes; -1: nap) until ``timeout`` seconds (None: no limit). Returns DONE,
    EVENT (a worker's pipe is ready) or TIMEOUT; a signal runs Python's handlers (Ctrl-C
    raises KeyboardInterrupt) and the wait goes on."""
    return _wait_done(_control(control), target, epfd, evfd, spin, _seconds(timeout, "timeout"))


cdef int _wait_done(fa_control *c, int64_t target, int epfd, int evfd, double spin,
                    double limit, Transport owner=None) except -1:
    """:func:`wait_done` (``limit`` < 0: none); ``owner``: the pool's :class:`Transport`, which
    a signal's handler may close (a ``close()`` from it): the wait then raises instead of
    going on."""
    cdef int result
    while True:
        with nogil:
            result = fa_wait_done(c, target, epfd, evfd, spin, limit)
        if result == FA_INTERRUPTED:
            PyErr_CheckSignals()  # raises what a handler raised
            if owner is not None:
                owner._check_open()
            spin = 0.0  # the time already spent is not given again: a rare, short overrun
            continue
        if result == FA_FAILED:
            raise OSError("epoll_wait failed in the vector env's wait")
        return result


cdef class SpinRule:
    """How long a wait spins before it sleeps. A spin pays when what it waits for comes within
    it (no wake-up on either side) and costs its whole length when it does not; so after
    ``patience`` waits in a row that outlasted it, waits sleep at once, until a short one
    again. A wait that sleeps at once cannot show that a spin would have caught it: with
    ``probe``, every ``probe``-th of those spins anyway (0: never; where the caller measures
    from elsewhere, as a worker from its last answer, it needs none)."""

    def __init__(self, double seconds, int patience=3, int probe=0):
        if not seconds >= 0 or patience < 1 or probe < 0:
            raise ValueError(f"SpinRule needs seconds >= 0, patience >= 1 and probe >= 0, got "
                             f"{seconds}, {patience}, {probe}")
        self.seconds, self.patience, self.probe = seconds, patience, probe
        self.long_waits = self.since_probe = 0

    cpdef double spin(self):
        """The spin of the next wait: :attr:`seconds`, or 0 (sleep at once)."""
        if self.long_waits < self.patience:
            return self.seconds
        self.since_probe += 1
        if self.probe and self.since_probe >= self.probe:
            self.since_probe = 0
            return self.seconds
        return 0.0

    cpdef void waited(self, double seconds):
        """A wait lasted ``seconds``. One under a microsecond found its result at once and
        tells nothing."""
        if seconds < 1e-6:
            return
        self.long_waits = self.long_waits + 1 if seconds > self.seconds else 0


def wait_generation(uint8_t[::1] control, uint32_t seen, double spin, timeout):
    """A worker's wait, without the GIL, until the generation is no longer ``seen``: spin for
    ``spin`` seconds, then sleep until ``timeout`` (None: no limit). True if it changed."""
    cdef fa_control *c = _control(control)
    cdef double limit = _seconds(timeout, "timeout")
    cdef int changed
    with nogil:
        changed = fa_wait_generation(c, seen, spin, limit)
    return bool(changed)


def claim(uint8_t[::1] ops, Py_ssize_t i):
    """Take env ``i``'s op (0 if none), leaving 0."""
    if not 0 <= i < ops.shape[0]:
        raise IndexError(f"env {i} out of range for {ops.shape[0]} ops")
    return fa_claim(&ops[i])


def output(uint8_t[::1] control):
    """After a claim: the output slot its op's observation is also copied into (-1: none)."""
    return fa_output(_control(control))


def complete(uint8_t[::1] control, int64_t[::1] tickets, Py_ssize_t i, int evfd):
    """Env ``i``'s results are written: its ticket, the count, the trainer's wake."""
    if not 0 <= i < tickets.shape[0]:
        raise IndexError(f"env {i} out of range for {tickets.shape[0]} tickets")
    fa_complete(_control(control), &tickets[i], evfd)


cdef enum:
    _PLAIN = 0
    _GAME = 1
    _TERMINATED = 2
_KINDS = {"plain": _PLAIN, "game": _GAME, "terminated": _TERMINATED}


cdef inline char *_address(array):
    return <char *><uintptr_t>array.ctypes.data


cdef class RowRule:
    """The one rule of an env's row in a batch of results, whoever writes it: a worker into a
    ``recv`` batch in place (:class:`Deliverer`), the trainer copying a row a worker did not
    write, or the trainer gathering a step's or a batch's rows. ``columns``: ``(name, column,
    kind)`` per column of the envs' results (``SharedBuffers.result_columns``: ``name`` the
    batch's array of it, ``kind`` how its row is written: ``"plain"``, as it is;
    ``"game"``, a finished game's statistics, zeros where the env's step ended no game
    (``game_done``); ``"terminated"``, or'ed with the life lost (``life_loss``; None: not
    or'ed, ale-py's terminated at a life loss otherwise))."""

    def __cinit__(self):
        self.src, self.size, self.kind = NULL, NULL, NULL

    def __init__(self, columns, game_done, life_loss):
        cdef Py_ssize_t k
        self.columns = list(columns)
        self.count = len(self.columns)
        self.n = len(game_done)
        self.names = tuple(name for name, _, _ in self.columns)
        self.arrays = (game_done, life_loss)
        self.game_done = <const uint8_t *>_address(game_done)
        self.life_loss = NULL if life_loss is None else <const uint8_t *>_address(life_loss)
        self.src = <char **>calloc(self.count + 1, sizeof(char *))
        self.size = <Py_ssize_t *>calloc(self.count + 1, sizeof(Py_ssize_t))
        self.kind = <uint8_t *>calloc(self.count + 1, 1)
        if not (self.src and self.size and self.kind):
            raise MemoryError()
        for k, (name, column, kind) in enumerate(self.columns):
            if column.shape[0] != self.n or not column.flags.c_contiguous:
                raise ValueError(f"column {name} must be C-contiguous with {self.n} rows")
            if kind not in _KINDS:
                raise ValueError(f"column {name}: kind must be one of {list(_KINDS)}, "
                                 f"got {kind!r}")
            self.src[k], self.size[k] = _address(column), column.nbytes // self.n
            self.kind[k] = _KINDS[kind]

    def __dealloc__(self):
        free(self.src)
        free(self.size)
        free(self.kind)

    def empty(self, Py_ssize_t rows):
        """Fresh arrays of ``rows`` rows for each column, by name (a batch of results)."""
        return {name: np.empty((rows,) + column.shape[1:], column.dtype)
                for name, column, _ in self.columns}

    cdef int targets(self, arrays, Py_ssize_t rows, char **out) except -1:
        """Each column's array of ``rows`` rows in ``arrays`` (by name) into ``out``, checked:
        C-contiguous, one column's row per row."""
        cdef Py_ssize_t k
        for k, name in enumerate(self.names):
            array = arrays[name]
            if array.shape[0] != rows or not array.flags.c_contiguous \
                    or array.nbytes != rows * self.size[k]:
                raise ValueError(f"{name} must be C-contiguous with {rows} rows of "
                                 f"{self.size[k]} bytes")
            out[k] = _address(array)
        return 0

    cdef void write_row(self, char **dst, Py_ssize_t row, Py_ssize_t i) noexcept nogil:
        """Env ``i``'s results into row ``row`` of the arrays ``dst`` (:meth:`targets`)."""
        cdef Py_ssize_t k, size
        cdef char *to
        for k in range(self.count):
            size = self.size[k]
            to = dst[k] + row * size
            if self.kind[k] == _GAME and not self.game_done[i]:
                memset(to, 0, size)
            else:
                memcpy(to, self.src[k] + i * size, size)
            if self.kind[k] == _TERMINATED and self.life_loss != NULL:
                to[0] = to[0] | <char>self.life_loss[i]

    cdef void write_rows(self, char **dst, const int64_t *sel, bint whole,
                         Py_ssize_t rows) noexcept nogil:
        """The results of the envs ``sel`` (every env, in order, when ``whole``) into rows 0 ..
        ``rows - 1``: :meth:`write_row`'s rule, column by column (a whole column in one
        copy)."""
        cdef Py_ssize_t j, k, size
        cdef char *to
        cdef const char *src
        for k in range(self.count):
            size, to, src = self.size[k], dst[k], self.src[k]
            if self.kind[k] == _GAME:
                for j in range(rows):
                    if self.game_done[sel[j]]:
                        memcpy(to + j * size, src + sel[j] * size, size)
                    else:
                        memset(to + j * size, 0, size)
                continue
            if whole:
                memcpy(to, src, rows * size)
            else:
                for j in range(rows):
                    memcpy(to + j * size, src + sel[j] * size, size)
            if self.kind[k] == _TERMINATED and self.life_loss != NULL:
                for j in range(rows):
                    to[j * size] = to[j * size] | <char>self.life_loss[sel[j]]


cdef class Deliverer:
    """A worker's completion of an env (:func:`complete`), writing its results of an async
    step into the ``recv`` batch they belong to on the way: the env's ticket is taken first;
    where a batch slot is open for it (``batch_first[s] <= ticket < batch_first[s] +
    batch_size``), the env's row goes into row ``ticket - batch_first[s]`` of that slot, as
    ``rule`` (:class:`RowRule`) says, with its ``env_id`` and, last, its ``mark`` (the ticket);
    then the completion is counted. The trainer then returns the slot instead of gathering the
    rows (a row whose mark is not its ticket, the trainer copies: the slot opened after the env
    took its ticket)."""

    cdef fa_control *c
    cdef int64_t *tickets
    cdef int64_t *first
    cdef Py_ssize_t n, slots, rows
    cdef RowRule rule
    cdef char **dst  # the rule's arrays per slot, slot by slot
    cdef int64_t **env_id
    cdef int64_t **mark
    cdef object arrays

    def __cinit__(self):
        self.dst, self.env_id, self.mark = NULL, NULL, NULL

    def __init__(self, uint8_t[::1] control, int64_t[::1] tickets, batch_first, batches,
                 RowRule rule):
        cdef Py_ssize_t s
        self.c = _control(control)
        self.n, self.tickets = tickets.shape[0], &tickets[0]
        if rule.n != self.n:
            raise ValueError(f"the rule's columns must have the {self.n} envs of tickets")
        self.rule = rule
        self.slots = len(batches)
        self.rows = len(batches[0]["mark"]) if self.slots else 0
        self.arrays = (control, tickets, batch_first, batches)
        self.first = <int64_t *>_address(batch_first) if self.slots else NULL
        self.dst = <char **>calloc(rule.count * self.slots + 1, sizeof(char *))
        self.env_id = <int64_t **>calloc(self.slots + 1, sizeof(int64_t *))
        self.mark = <int64_t **>calloc(self.slots + 1, sizeof(int64_t *))
        if not (self.dst and self.env_id and self.mark):
            raise MemoryError()
        for s in range(self.slots):
            rule.targets(batches[s], self.rows, self.dst + s * rule.count)
            self.env_id[s] = <int64_t *>_address(batches[s]["env_id"])
            self.mark[s] = <int64_t *>_address(batches[s]["mark"])

    def __dealloc__(self):
        free(self.dst)
        free(self.env_id)
        free(self.mark)

    def complete(self, Py_ssize_t i, int evfd):
        """Env ``i``'s results are written: its ticket, its row of the batch that ticket
        belongs to (where one is open), the count, the trainer's wake."""
        if not 0 <= i < self.n:
            raise IndexError(f"env {i} out of range for {self.n} tickets")
        with nogil:
            self._complete(i, evfd)

    cdef void _complete(self, Py_ssize_t i, int evfd) noexcept nogil:
        cdef int64_t taken = fa_take_ticket(self.c, &self.tickets[i]), first
        cdef Py_ssize_t s, row
        for s in range(self.slots):
            first = fa_load64(&self.first[s])
            if first < 0 or not first <= taken < first + self.rows:
                continue
            row = taken - first
            self.rule.write_row(self.dst + s * self.rule.count, row, i)
            self.env_id[s][row] = i
            fa_store64(&self.mark[s][row], taken)  # after the row: a mark says it is written
            break
        fa_complete_as(self.c, &self.tickets[i], taken, evfd)


cdef const uint8_t *_chosen(ops, Py_ssize_t n) except? NULL:
    """``ops`` (one per env, 0 where none) as a pointer, valid while the caller holds ``ops``;
    NULL for None (every env steps)."""
    if ops is None:
        return NULL
    cdef const uint8_t[::1] chosen = ops
    if chosen.shape[0] != n:
        raise ValueError(f"ops has {chosen.shape[0]} envs, op has {n}")
    return &chosen[0]


ctypedef struct _Done:
    int64_t ticket
    int64_t env


cdef int _by_ticket(const void *a, const void *b) noexcept nogil:
    cdef int64_t x = (<const _Done *>a).ticket, y = (<const _Done *>b).ticket
    return (x > y) - (x < y)


cdef class Transport:
    """One pool's step through shared memory, as compiled code: start envs, wait for their
    completions, take the envs done. The compiled step (``_step.pyx``) runs it with no Python
    between the publish and its results; the pool runs it from Python.

    ``control``, ``tickets`` and ``op`` are the shared columns, ``in_flight`` the pool's (one
    byte per env: started, not taken), ``epfd`` and ``evfd`` its epoll set and eventfd
    (:func:`wait_done`), ``timeout`` a wait's limit in seconds (None: none), ``spins`` the rule
    of the waits' spins. :attr:`collected` counts the completions taken, the count every wait
    waits past; :attr:`lost` the tickets taken by envs lost with their worker (:meth:`drop`).
    After :meth:`close` (the pool's memory and descriptors are gone) nothing may run it:
    callers look at :attr:`closed` first."""

    def __init__(self, uint8_t[::1] control, int64_t[::1] tickets, uint8_t[::1] op,
                 uint8_t[::1] in_flight, int epfd, int evfd, timeout, SpinRule spins):
        self.n = op.shape[0]
        if tickets.shape[0] != self.n or in_flight.shape[0] != self.n:
            raise ValueError(f"tickets and in_flight must have the {self.n} envs of op")
        self.c = _control(control)
        self.tickets, self.op, self.in_flight = &tickets[0], &op[0], &in_flight[0]
        self.arrays = (control, tickets, op, in_flight)
        self.epfd, self.evfd = epfd, evfd
        self.timeout = _seconds(timeout, "timeout")
        self.spins = spins
        self.collected = self.lost = 0
        self.closed = False

    def close(self):
        """The pool is closed: its memory and descriptors are no longer to be used. (A wait
        under way holds the memory until it returns: a signal's handler may close the pool
        during one.)"""
        self.closed = True
        self.arrays = None

    cdef int64_t start(self, const uint8_t *ops, int32_t output, bint mark) noexcept nogil:
        """Start the envs whose ``ops`` entry is not 0 (that op; ``ops`` NULL: every env
        steps), their observations also copied into output slot ``output`` (-1: none): no
        ticket yet and the slot, then (after the fence) the ops, and with ``mark`` in flight;
        one publish for all. Returns how many were started."""
        cdef Py_ssize_t i
        cdef int64_t started = 0
        for i in range(self.n):
            if ops == NULL or ops[i]:
                self.tickets[i] = -1
        fa_set_output(self.c, output)
        fa_release_fence()  # the actions and tickets before the ops that name them
        for i in range(self.n):
            if ops == NULL or ops[i]:
                self.op[i] = OP_STEP if ops == NULL else ops[i]
                if mark:
                    self.in_flight[i] = 1
                started += 1
        fa_publish(self.c)
        return started

    def run(self, ops, int32_t output=-1):
        """:meth:`start` from Python, marking the envs in flight: ``ops`` None or a uint8
        array, one per env."""
        cdef const uint8_t *chosen = _chosen(ops, self.n)
        self._check_open()
        with nogil:
            self.start(chosen, output, True)

    cdef int _check_open(self) except -1:
        if self.closed:
            raise RuntimeError("the vector env's workers were closed")
        return 0

    cdef int wait(self, int64_t target, double limit) except -1:
        """Wait until ``target`` completions, for at most ``limit`` seconds (< 0: no limit),
        spinning first as :attr:`spins` says, and telling it how long it took."""
        cdef double began = fa_seconds()
        cdef int found
        _held = self.arrays  # mapped until this returns, even if a handler closes the pool
        self._check_open()
        found = _wait_done(self.c, target, self.epfd, self.evfd, self.spins.spin(), limit, self)
        self.spins.waited(fa_seconds() - began)
        return found

    def wait_done(self, int64_t target, timeout):
        """:meth:`wait` from Python (``timeout`` None: no limit)."""
        return self.wait(target, _seconds(timeout, "timeout"))

    cdef take(self, bint in_order, Py_ssize_t limit):
        """The envs in flight whose ticket is set (their results are written), no longer in
        flight and counted in :attr:`collected`: in env order, or with ``in_order`` in the
        order they finished; with ``limit`` >= 0 only the first ``limit`` to finish (the others
        stay in flight, for the next take)."""
        cdef Py_ssize_t i, k = 0
        self._check_open()
        done = np.empty(self.n, np.int64)
        cdef int64_t[::1] out = done
        cdef _Done *pairs
        for i in range(self.n):
            if self.in_flight[i] and self.tickets[i] >= 0:
                out[k] = i
                k += 1
        if (in_order or 0 <= limit < k) and k > 1:
            pairs = <_Done *>malloc(k * sizeof(_Done))  # (a structured NumPy array: 2 us more)
            if pairs == NULL:
                raise MemoryError()
            for i in range(k):
                pairs[i].ticket, pairs[i].env = self.tickets[out[i]], out[i]
            qsort(pairs, k, sizeof(_Done), _by_ticket)
            for i in range(k):
                out[i] = pairs[i].env
            free(pairs)
        if 0 <= limit < k:
            k = limit
        for i in range(k):
            self.in_flight[out[i]] = 0
        self.collected += k
        return done[:k]

    cdef take_range(self, int64_t base, Py_ssize_t want):
        """The envs in flight with tickets ``base`` .. ``base + want - 1``, in ticket order,
        no longer in flight and counted in :attr:`collected`; None, changing nothing, while one
        of those tickets is not completed yet."""
        cdef Py_ssize_t i, found = 0
        cdef int64_t ticket
        self._check_open()
        done = np.empty(want, np.int64)
        cdef int64_t[::1] out = done
        for i in range(self.n):
            if self.in_flight[i]:
                ticket = fa_load64(&self.tickets[i])
                if base <= ticket < base + want:
                    out[ticket - base] = i
                    found += 1
        if found < want:
            return None
        for i in range(want):
            self.in_flight[out[i]] = 0
        self.collected += want
        return done

    cdef int64_t first_untaken(self) noexcept nogil:
        """The lowest ticket not taken yet, where it is known: -1 unless every ticket below
        it was taken (no worker is writing one, none was lost with a worker) and every
        ticket from it to the last handed out belongs to an env in flight that completed.
        From there on the tickets run on without a gap: a ``recv`` batch is the next
        ``batch_size`` of them."""
        cdef Py_ssize_t i, found = 0
        cdef int64_t issued = fa_issued(self.c), ticket, lowest = issued
        # (a ticket a worker holds, FA_HELD, is below 0: not counted, so it is a gap)
        for i in range(self.n):
            if self.in_flight[i]:
                ticket = fa_load64(&self.tickets[i])
                if 0 <= ticket < issued:
                    found += 1
                    if ticket < lowest:
                        lowest = ticket
        # every ticket from the lowest on is an env's (no gap above it), and those below it
        # were taken or lost with a worker, as many as there are: no gap anywhere
        if found == issued - lowest and self.collected + self.lost == lowest:
            return lowest
        return -1

    cdef int64_t issued(self) noexcept nogil:
        """Tickets handed out so far: the next one, while no env is in flight."""
        return fa_issued(self.c)

    cdef int64_t completed(self) noexcept nogil:
        """Completions counted so far."""
        return fa_completed(self.c)

    cdef int64_t load(self, const int64_t *word) noexcept nogil:
        """A shared word (a batch row's mark), read as the workers write it: atomically."""
        return fa_load64(word)

    cdef void store(self, int64_t *word, int64_t value) noexcept nogil:
        """A shared word (a batch slot's first ticket), written atomically."""
        fa_store64(word, value)

    def drop(self, ids):
        """The envs ``ids`` in flight were lost with their worker, their results never
        written: no longer in flight, and a ticket one of them held (taken, its completion
        under way) counted in :attr:`lost`."""
        cdef const int64_t[::1] sel = np.ascontiguousarray(ids, np.int64)
        cdef Py_ssize_t j
        self._check_open()
        for j in range(sel.shape[0]):
            if not 0 <= sel[j] < self.n:
                raise IndexError(f"env {sel[j]} out of range for {self.n} envs")
        for j in range(sel.shape[0]):
            if fa_load64(&self.tickets[sel[j]]) <= -2:  # FA_HELD(ticket)
                self.lost += 1
                fa_store64(&self.tickets[sel[j]], -1)
            self.in_flight[sel[j]] = 0

    def take_done(self, bint in_order, Py_ssize_t limit=-1):
        """:meth:`take` from Python."""
        return self.take(in_order, limit)

    cdef void untake(self, const int64_t[::1] ids):
        """Put back what :meth:`take` returned (``ids``): in flight, done, not collected."""
        cdef Py_ssize_t j
        for j in range(ids.shape[0]):
            self.in_flight[ids[j]] = 1
        self.collected -= ids.shape[0]

    cdef int round_trip(self, const uint8_t *ops, int32_t output) except -1:
        """The synchronous step's round trip: :meth:`start` (``ops``, ``output``) and wait
        until all of the envs started are counted, without a spin (every env emulates a step
        after the publish, 100 us or more). Returns DONE (counted in :attr:`collected`), or
        EVENT or TIMEOUT with the envs started marked in flight, for the pool to sort out."""
        cdef int64_t started
        cdef int found
        _held = self.arrays  # (as in wait)
        self._check_open()
        with nogil:
            started = self.start(ops, output, True)
        found = _wait_done(self.c, self.collected + started, self.epfd, self.evfd, 0.0,
                           self.timeout, self)
        if found == FA_DONE:  # all taken: nothing was in flight before a step
            self.collected += started
            memset(self.in_flight, 0, self.n)
        return found

    def run_and_wait(self, ops, int32_t output=-1):
        """:meth:`round_trip` from Python: ``ops`` None or a uint8 array, one per env."""
        return self.round_trip(_chosen(ops, self.n), output)
