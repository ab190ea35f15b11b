"""The replay memory's compiled core: observation stacks with each distinct frame stored once
(:class:`FrameStore`), and priorities on a sum tree (:class:`SumTree`).

Every transition keeps the serial numbers of its stacks' frames (``-1``: the zero frame of
padding, never stored). A new stack is matched frame by frame against what its stream stored
last, byte for byte: an observation that is the previous next observation reuses its frames,
a next observation that shifts the observation by some frames reuses those, a frame that
repeats the one before it (reset padding) or is all zeros is not stored again. Only what
matches nothing is stored, so a sampled stack is always the stack that was added, whatever
made it. A caller that knows which stacks continue (a vector env's frame serials, passed to
:meth:`FrameStore.put`) skips the matching for those: their frames are the stream's last
ones moved on by one, on the caller's word. Frames live in chunks, in serial order; a chunk
goes back to the spares once every transition that refers to it is overwritten, so memory
follows the frames alive.
"""

from cpython.buffer cimport PyBUF_FORMAT, PyBUF_WRITABLE
from libc.errno cimport errno
from libc.stdint cimport int64_t, uint8_t, uintptr_t
from libc.math cimport pow
from libc.stdlib cimport free, malloc

cimport numpy as cnp

import os
import secrets

import numpy as np

from fastatari.replay.disk import LiveFolder
from fastatari.replay.layout import check_stacks, state_array, state_keys, state_number

from fastatari.replay.fa_replay cimport (fa_frame_equal, fa_frame_store, fa_map, fa_map_flush,
                                         fa_stacks_build, fa_stack_shape, fa_sumtree_find,
                                         fa_sumtree_set, fa_unmap)

cnp.import_array()

cdef enum:
    _CHUNK = 1024
    _UNALIGNED = -1000000  # a candidate's shift not looked for yet
    _NO_SHIFT = -1000001  # none found

#: Frames per chunk of storage.
CHUNK = _CHUNK
#: Spare chunks kept for reuse (the rest are freed).
SPARES = 2


cdef class _Pointers:
    """Where a batch's stacks go and the frames they are built from (freed with the object)."""
    cdef uint8_t **stacks
    cdef const uint8_t **frames

    def __cinit__(self, Py_ssize_t stacks, Py_ssize_t frames):
        self.stacks = <uint8_t **>malloc(max(stacks, 1) * sizeof(void *))
        self.frames = <const uint8_t **>malloc(max(frames, 1) * sizeof(void *))
        if self.stacks == NULL or self.frames == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.stacks)
        free(self.frames)


cdef class MappedFile:
    """The first ``nbytes`` of the file ``path`` mapped into memory, shared with the file
    (writable or read-only), unmapped when the last array over it goes:
    ``np.frombuffer(mapped, np.uint8)`` is its bytes. The file is not kept open."""
    cdef void *address
    cdef Py_ssize_t length
    cdef readonly object path
    cdef readonly bint writable

    def __cinit__(self, path, int64_t nbytes, bint writable=False):
        if nbytes <= 0:
            raise ValueError(f"a mapping needs at least one byte, got {nbytes}")
        self.path, self.length, self.writable = os.fspath(path), nbytes, writable
        fd = os.open(path, (os.O_RDWR if writable else os.O_RDONLY) | getattr(os, "O_BINARY", 0))
        try:
            if os.fstat(fd).st_size < nbytes:  # (a page past the end would fault on access)
                raise ValueError(f"{self.path}: {os.fstat(fd).st_size} bytes, {nbytes} mapped")
            self.address = fa_map(fd, nbytes, writable)
            if self.address == NULL:
                raise OSError(errno, f"cannot map {self.path}: {os.strerror(errno)}")
        finally:
            os.close(fd)

    def __dealloc__(self):
        if self.address != NULL:
            fa_unmap(self.address, self.length)

    def __getbuffer__(self, Py_buffer *buffer, int flags):
        if flags & PyBUF_WRITABLE and not self.writable:
            raise BufferError(f"{self.path} is mapped read-only")
        buffer.buf = self.address
        buffer.obj = self
        buffer.len = self.length
        buffer.readonly = not self.writable
        buffer.itemsize = 1
        buffer.format = NULL
        if flags & PyBUF_FORMAT:
            buffer.format = b"B"
        buffer.ndim = 1
        buffer.shape = &self.length
        buffer.strides = NULL
        buffer.suboffsets = NULL
        buffer.internal = NULL

    def __releasebuffer__(self, Py_buffer *buffer):
        pass

    @property
    def nbytes(self):
        return self.length

    def flush(self):
        """Write what was changed through the mapping to the file."""
        if fa_map_flush(self.address, self.length) != 0:
            raise OSError(f"cannot write {self.path}'s mapping back")


def mapping_of(array):
    """The :class:`MappedFile` whose bytes ``array`` is, all of them in order; None when it is
    anything else (a part of one, a copy, memory)."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    if (isinstance(base, MappedFile) and isinstance(array, np.ndarray)
            and array.flags.c_contiguous and array.nbytes == base.nbytes
            and array.ctypes.data == <uintptr_t>(<MappedFile>base).address):
        return base
    return None


def map_array(path, dtype, shape, bint writable=False):
    """An array of ``dtype`` and ``shape`` over the start of the file ``path``, mapped
    (:class:`MappedFile`)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return np.frombuffer(MappedFile(path, nbytes, writable), dtype).reshape(shape)


cdef class FrameStore:
    """``capacity`` slots of one ``(obs, next_obs)`` pair of stacks for each of ``n_envs``
    streams, written in ring order; stacks of shape ``obs_shape`` (uint8) hold ``stack``
    frames along ``axis``. ``disk``: a folder where the frames live in files instead of
    memory, memory-mapped (for memories larger than RAM: the system pages them in and out),
    a file per chunk in a folder of the store's own there (:class:`~fastatari.replay.disk.
    LiveFolder`: removed with the store, or by the next store there after a kill). A complete
    chunk is never written again: a checkpoint links its file instead of copying it, and a
    store on disk loading a checkpoint maps the checkpoint's files of complete chunks (read
    only) instead of copying them."""

    cdef readonly int64_t capacity, n_envs, stack, pos, next_serial
    cdef readonly bint full
    cdef readonly tuple obs_shape
    cdef tuple stack_strides
    cdef readonly int axis
    cdef fa_stack_shape shape
    cdef int64_t frame_bytes, stack_bytes, table_size
    cdef int64_t[:, :, :, ::1] refs
    cdef int64_t[:, :, ::1] last
    cdef uint8_t[::1] has_last
    # per stream, the source and serial of its last next observation (source 0: none known):
    # a vector env's frame serials (fastatari.vector.FrameSerials)
    cdef int64_t[::1] last_source, last_serial
    cdef object last_source_array, last_serial_array
    #: Pairs put without comparing frames (their serials said what they are)
    cdef readonly int64_t continued
    cdef uintptr_t[::1] table
    cdef object refs_array, last_array, has_last_array, table_array
    cdef dict chunks
    cdef list spares
    cdef readonly object disk
    #: Where the content of each frame serial comes from: ``(k, 2)`` int64 rows ``(token,
    #: from_serial)``, ascending; serial ``s`` holds what the last row with ``from_serial <=
    #: s`` wrote. Two stores (or checkpoints) whose rows name the same token for a serial hold
    #: the same frame there: what an incremental checkpoint relies on to skip what it wrote.
    cdef readonly object lineage
    cdef object live  # the LiveFolder of the store's chunk files (disk only)
    # the stored slots' oldest frames, as a monotone queue over the ring: (slot, its oldest
    # serial) from the oldest slot on, each entry's serial above the one before (a slot
    # with no older frame after it is dropped), so the first is the oldest frame any slot
    # refers to; a slot that refers to no frame has no entry
    cdef int64_t[:, ::1] window
    cdef object window_array
    cdef int64_t window_head, window_len

    def __init__(self, int64_t capacity, int64_t n_envs, obs_shape, int64_t stack, int axis,
                 disk=None):
        obs_shape = tuple(int(d) for d in obs_shape)
        if capacity < 1 or n_envs < 1:
            raise ValueError(f"capacity and n_envs must be >= 1, got {capacity}, {n_envs}")
        if not obs_shape or not -len(obs_shape) <= axis < len(obs_shape):
            raise ValueError(f"axis {axis} is not an axis of the shape {obs_shape}")
        if axis < 0:  # (cdivision: C's % keeps the sign)
            axis += len(obs_shape)
        if stack < 1 or obs_shape[axis] % stack:
            raise ValueError(f"a stack of {stack} frames does not divide the {obs_shape[axis]} "
                             f"entries of axis {axis} of the shape {obs_shape}")
        self.capacity, self.n_envs, self.stack = capacity, n_envs, stack
        self.obs_shape, self.axis = obs_shape, axis
        self.stack_strides = np.empty(obs_shape, np.uint8).strides  # a stack's own layout
        self.shape.outer = int(np.prod(obs_shape[:axis], dtype=np.int64))
        self.shape.k = stack
        self.shape.inner = ((obs_shape[axis] // stack)
                            * int(np.prod(obs_shape[axis + 1:], dtype=np.int64)))
        self.frame_bytes = self.shape.outer * self.shape.inner
        self.stack_bytes = self.frame_bytes * stack
        self.refs_array = np.full((capacity, n_envs, 2, stack), -1, np.int64)
        self.refs = self.refs_array
        self.last_array = np.full((n_envs, 2, stack), -1, np.int64)  # obs, next
        self.last = self.last_array
        self.has_last_array = np.zeros(n_envs, np.uint8)
        self.has_last = self.has_last_array
        self.last_source_array = np.zeros(n_envs, np.int64)
        self.last_source = self.last_source_array
        self.last_serial_array = np.full(n_envs, -1, np.int64)
        self.last_serial = self.last_serial_array
        self.window_array = np.zeros((capacity, 2), np.int64)
        self.window = self.window_array
        self.window_head = self.window_len = 0
        self.chunks, self.spares = {}, []
        self.disk, self.live = None, None
        if disk is not None:
            self.live = LiveFolder(disk)
            self.disk = os.fspath(disk)
        self._new_table(4)
        self.pos, self.full, self.next_serial = 0, False, 0
        self.lineage = _lineage(None, 0)

    # -- frames --------------------------------------------------------------------------------
    cdef inline const uint8_t *frame(self, int64_t serial) noexcept nogil:
        if serial < 0:
            return NULL
        return (<const uint8_t *>self.table[(serial // _CHUNK) % self.table_size]
                + (serial % _CHUNK) * self.frame_bytes)

    cdef object _new_chunk(self, int64_t number):
        if self.live is None:
            if self.spares:
                return self.spares.pop()
            return np.empty((CHUNK, self.frame_bytes), np.uint8)
        path = self.live.new_chunk(number, CHUNK * self.frame_bytes)
        return map_array(path, np.uint8, (CHUNK, self.frame_bytes), True)

    cdef _spare(self, int64_t number, chunk):
        """Chunk ``number``, which no transition needs any more: kept for reuse in memory; on
        disk its file is unlinked (a new chunk is a new file: a checkpoint may link this one)."""
        if self.live is not None:
            self.live.drop(number)  # (none for a checkpoint's chunk it maps)
        elif len(self.spares) < SPARES:
            self.spares.append(chunk)

    cdef _new_table(self, int64_t size):
        self.table_size = size
        self.table_array = np.zeros(size, np.uintp)
        self.table = self.table_array
        for number, chunk in self.chunks.items():
            self.table[number % size] = chunk.ctypes.data

    cdef _add_chunk(self, int64_t number, chunk=None):
        if chunk is None:
            chunk = self._new_chunk(number)
        self.chunks[number] = chunk
        if number - min(self.chunks) >= self.table_size:
            self._new_table(2 * self.table_size)
        else:
            self.table[number % self.table_size] = chunk.ctypes.data

    cdef int64_t _store(self, const uint8_t *stack, int64_t j) except -1:
        """Frame ``j`` of ``stack`` as a new frame; its serial."""
        cdef int64_t serial = self.next_serial
        if serial % _CHUNK == 0:
            self._add_chunk(serial // _CHUNK)
        fa_frame_store(stack, self.shape, j, <uint8_t *>self.frame(serial))
        self.next_serial += 1
        return serial

    cdef inline bint _same(self, const uint8_t *stack, int64_t j, int64_t serial):
        return fa_frame_equal(stack, self.shape, j, self.frame(serial))

    cpdef int64_t oldest_needed(self, bint next_put=False):
        """The oldest frame a transition refers to (the next serial when none); with
        ``next_put``, leaving out the transition the next :meth:`put` overwrites."""
        cdef int64_t lowest = self.next_serial, skip = 0, e, w, j
        if (next_put and self.full and self.window_len
                and self.window[self.window_head, 0] == self.pos):
            skip = 1  # the queue without its first entry: the same queue for the slots left
        if skip < self.window_len:
            lowest = self.window[(self.window_head + skip) % self.capacity, 1]
        for e in range(self.n_envs):
            if self.has_last[e]:
                for w in range(2):
                    for j in range(self.stack):
                        if 0 <= self.last[e, w, j] < lowest:
                            lowest = self.last[e, w, j]
        return lowest

    cdef void _window_put(self, int64_t slot) noexcept nogil:
        """Slot ``slot``, just written, joins the queue as its newest (replacing what the
        slot held, the oldest, where the ring is full): O(1) amortised."""
        cdef int64_t lowest = -1, e, w, j, serial, i
        if self.window_len and self.window[self.window_head, 0] == slot:
            self.window_head = (self.window_head + 1) % self.capacity
            self.window_len -= 1
        for e in range(self.n_envs):
            for w in range(2):
                for j in range(self.stack):
                    serial = self.refs[slot, e, w, j]
                    if serial >= 0 and (lowest < 0 or serial < lowest):
                        lowest = serial
        if lowest < 0:
            return  # no frame (zeros): nothing to keep
        while (self.window_len and self.window[(self.window_head + self.window_len - 1)
                                               % self.capacity, 1] >= lowest):
            self.window_len -= 1
        i = (self.window_head + self.window_len) % self.capacity
        self.window[i, 0], self.window[i, 1] = slot, lowest
        self.window_len += 1

    cdef _release(self):
        """Chunks no transition refers to any more go back to the spares."""
        cdef int64_t below = self.oldest_needed(True) // CHUNK
        for number in [n for n in self.chunks if n < below]:
            self._spare(number, self.chunks.pop(number))

    # -- writing -------------------------------------------------------------------------------
    def put(self, obs, next_obs, int64_t lookback=0, serials=None):
        """Write one ``(obs, next_obs)`` pair per stream (arrays ``(n_envs, *obs_shape)``
        uint8) at :attr:`pos`, then advance it. ``lookback`` > 1 (an n-step memory's n): an
        observation is also looked for in the next observation put ``lookback`` puts before
        (within an episode, the same stack), which the last pair no longer overlaps once n
        passes the stack size.

        ``serials``: the vector env's :class:`~fastatari.vector.FrameSerials` of the step
        these observations come from (``obs`` and ``next_obs`` the arrays it returned, the
        final observations put in where episodes ended, unmodified). A stream whose
        observation is the stack its last next observation was (the same source and serial)
        and whose next observation is that stack moved on by one frame takes those frames
        without comparing them: one frame stored (where it is not the frame before it
        again). Every other stream's frames are compared, as without ``serials``."""
        obs, next_obs = self._stacks(obs, "obs"), self._stacks(next_obs, "next_obs")
        cdef const uint8_t *o = <const uint8_t *>cnp.PyArray_DATA(obs)
        cdef const uint8_t *n = <const uint8_t *>cnp.PyArray_DATA(next_obs)
        cdef const int64_t *from_serial = NULL
        cdef const int64_t *to_serial = NULL
        cdef int64_t e, back = -1, source = 0, size = self.stack_bytes
        if serials is not None:
            source, from_array, to_array = self._serials(serials)
            from_serial = <const int64_t *>cnp.PyArray_DATA(from_array)
            to_serial = <const int64_t *>cnp.PyArray_DATA(to_array)
        if 1 < lookback < self.capacity and (self.full or self.pos >= lookback):
            back = (self.pos - lookback) % self.capacity
        self._release()
        for e in range(self.n_envs):
            if source and self.has_last[e] and self.last_source[e] == source \
                    and self.last_serial[e] == from_serial[e] \
                    and to_serial[e] == from_serial[e] + 1:
                self._put_moved_on(e, n + e * size)
                self.continued += 1
            else:
                self._put_one(e, o + e * size, n + e * size, back)
            self.last_source[e] = source
            self.last_serial[e] = to_serial[e] if source else -1
        self._window_put(self.pos)
        self.pos += 1
        if self.pos == self.capacity:
            self.pos, self.full = 0, True

    def _serials(self, serials):
        """``serials`` (a ``FrameSerials``) checked: its source, and its two int64 columns of
        ``n_envs`` serials."""
        source = getattr(serials, "source", None)
        if not isinstance(source, int) or isinstance(source, bool):
            raise TypeError(f"serials must be a vector env's frame_serials (FrameSerials: "
                            f"source, obs, next_obs), got {serials!r:.80}")
        if source < 1:
            raise ValueError(f"serials.source must be a positive int, got {source}")
        columns = []
        for name in ("obs", "next_obs"):
            column = getattr(serials, name, None)
            if not (isinstance(column, np.ndarray) and column.dtype == np.int64
                    and column.shape == (self.n_envs,)):
                raise ValueError(f"serials.{name} must be an int64 array of shape "
                                 f"({self.n_envs},), got {column!r}")
            columns.append(np.ascontiguousarray(column))
        return source, columns[0], columns[1]

    cdef _put_moved_on(self, int64_t e, const uint8_t *nxt):
        """Stream ``e``'s pair when its observation is its last next one and the next
        observation that moved on by a frame: the observation's serials are the last next
        one's, the next one's are them moved on, and the new frame stored (the frame before
        it, where it is that again)."""
        cdef int64_t *o = &self.refs[self.pos, e, 0, 0]
        cdef int64_t *n = &self.refs[self.pos, e, 1, 0]
        cdef int64_t *last = &self.last[e, 0, 0]  # obs, then next
        cdef int64_t j, k = self.stack, before
        for j in range(k):
            o[j] = last[k + j]
        for j in range(k - 1):
            n[j] = o[j + 1]
        before = n[k - 2] if k > 1 else -2
        if before >= -1 and self._same(nxt, k - 1, before):
            n[k - 1] = before
        else:
            n[k - 1] = self._store(nxt, k - 1)
        for j in range(k):
            last[j], last[k + j] = o[j], n[j]
        self.has_last[e] = 1

    def _stacks(self, array, str name):
        """``array`` checked (``n_envs`` stacks), C-contiguous."""
        check_stacks(name, array, (self.n_envs,) + self.obs_shape)
        return np.ascontiguousarray(array)

    cdef _put_one(self, int64_t e, const uint8_t *obs, const uint8_t *nxt, int64_t back):
        cdef int64_t[::1] o = self.refs[self.pos, e, 0], n = self.refs[self.pos, e, 1]
        cdef int64_t[::1] last_obs = self.last[e, 0], last_next = self.last[e, 1]
        cdef bint seen = self.has_last[e]
        # the usual shifts first: an observation is the last next one (0) and the last
        # observation moved on a frame (1) (or the next one ``back``, as it is); a next
        # observation is its observation moved on a frame (1), and the last next one moved
        # on a frame (1)
        self._match(obs, o, last_next if seen else None, 0, last_obs if seen else None, 1,
                    self.refs[back, e, 1] if back >= 0 else None, 0)
        self._match(nxt, n, o, 1, last_next if seen else None, 1, None, 0)
        self.last[e, 0, :] = o
        self.last[e, 1, :] = n
        self.has_last[e] = 1

    cdef _match(self, const uint8_t *stack, int64_t[::1] out, int64_t[::1] first,
                int64_t first_shift, int64_t[::1] second, int64_t second_shift,
                int64_t[::1] third, int64_t third_shift):
        """The serials of ``stack``'s frames into ``out``: a frame of the candidate stacks
        ``first``, ``second`` or ``third`` (None: no candidate; each with the shift to try
        first) where it equals one, the zero frame, the frame before it repeated, else a new
        frame."""
        cdef int64_t j, i, k = self.stack
        cdef int64_t shift[3]
        cdef int64_t usual[3]
        cdef int64_t[::1] candidate
        shift[0] = shift[1] = shift[2] = _UNALIGNED
        usual[0], usual[1], usual[2] = first_shift, second_shift, third_shift
        for j in range(k):
            out[j] = -2
            for i in range(3):
                candidate = first if i == 0 else second if i == 1 else third
                if candidate is None:
                    continue
                if shift[i] == _UNALIGNED:
                    shift[i] = self._shift(stack, candidate, usual[i])
                if shift[i] != _NO_SHIFT and 0 <= j + shift[i] < k \
                        and candidate[j + shift[i]] >= 0 \
                        and self._same(stack, j, candidate[j + shift[i]]):
                    out[j] = candidate[j + shift[i]]
                    break
            if out[j] != -2:
                continue
            if self._same(stack, j, -1):
                out[j] = -1
            elif j > 0 and self._same(stack, j, out[j - 1]):
                out[j] = out[j - 1]
            else:
                out[j] = self._store(stack, j)

    cdef int64_t _shift(self, const uint8_t *stack, int64_t[::1] candidate, int64_t usual):
        """``d`` such that frame ``j`` of ``stack`` is likely frame ``j + d`` of
        ``candidate``: where the candidate's newest (else its oldest) stored frame lies in
        ``stack``, ``usual`` first (a screen that stood still matches at several shifts),
        then nearest to no shift."""
        cdef int64_t k = self.stack, q, m, step, end, side
        for end in range(2):  # anchor: the newest stored frame, then the oldest
            q = -1
            for m in range(k):
                if candidate[k - 1 - m if end == 0 else m] >= 0:
                    q = k - 1 - m if end == 0 else m
                    break
            if q < 0:
                return _NO_SHIFT
            if 0 <= q - usual < k and self._same(stack, q - usual, candidate[q]):
                return usual
            for step in range(k):  # m = q, q - 1, q + 1, q - 2, ...
                for side in range(2 if step else 1):
                    m = q - step if side == 0 else q + step
                    if 0 <= m < k and self._same(stack, m, candidate[q]):
                        return q - m
        return _NO_SHIFT

    def reset(self):
        """Forget every transition (the memory stays allocated)."""
        self.refs_array.fill(-1)
        self.has_last_array.fill(0)
        self.last_source_array.fill(0)
        self.window_head = self.window_len = 0
        for number in list(self.chunks):
            self._spare(number, self.chunks.pop(number))
        self.pos, self.full = 0, False

    # -- reading -------------------------------------------------------------------------------
    @property
    def size(self):
        """Slots written (per stream)."""
        return self.capacity if self.full else self.pos

    cdef inline void _frames_of(self, const uint8_t **frames, int64_t slot, int64_t env,
                                int64_t which) noexcept nogil:
        """The frames of the observation (``which`` 0) or next observation (1) of a slot."""
        cdef int64_t j
        for j in range(self.stack):
            frames[j] = self.frame(self.refs[slot, env, which, j])

    def gather(self, slots, envs, out_obs=None, out_next=None, rows=None, shared=False):
        """The stacks of transitions ``(slots[b], envs[b])``, written into ``out_obs`` and
        ``out_next`` (new arrays when None) at row ``b``, or ``rows[b]``; returns both.

        ``shared`` (new arrays only): when the stacks lie channels first and every drawn next
        observation is its observation moved on a frame (almost always), the frames a pair
        shares are written once and the two come back as overlapping views of one array (do
        not write into them)."""
        slots, envs = self._checked(slots, envs)
        if shared and out_obs is None and out_next is None and rows is None:
            views = self._shared(slots, envs)
            if views is not None:
                return views
        batch = (slots.size,) + self.obs_shape
        if rows is not None:
            if out_obs is None or out_next is None:
                raise ValueError("rows needs out_obs and out_next")
            rows = np.asarray(rows)
            if rows.shape != slots.shape or rows.dtype.kind not in "iu" or (
                    rows.size and (rows.min() < 0 or rows.max() >= len(out_obs))):
                raise IndexError("rows must be one index per slot, within the outputs")
            batch = (len(out_obs),) + self.obs_shape
        if out_obs is None and out_next is None:
            # one allocation for both: two large ones alive together make malloc give their
            # pages back at every free, and a page fault per page at every sample
            out_obs, out_next = np.empty((2,) + batch, np.uint8)
        out_obs = self._out(out_obs, batch, "out_obs")
        out_next = self._out(out_next, batch, "out_next")
        cdef int64_t[::1] s = slots
        cdef int64_t[::1] v = envs
        cdef uint8_t[:, ::1] a = out_obs.reshape(batch[0], self.stack_bytes)
        cdef uint8_t[:, ::1] b = out_next.reshape(batch[0], self.stack_bytes)
        cdef int64_t[::1] r = (np.arange(slots.size) if rows is None else rows).astype(
            np.int64, copy=False)
        cdef Py_ssize_t i, count = s.shape[0]
        cdef int64_t k = self.stack
        cdef _Pointers p = _Pointers(2 * count, 2 * count * k)
        with nogil:
            for i in range(count):  # stacks in drawing order: obs, next obs, obs, ...
                p.stacks[2 * i], p.stacks[2 * i + 1] = &a[r[i], 0], &b[r[i], 0]
                self._frames_of(&p.frames[2 * i * k], s[i], v[i], 0)
                self._frames_of(&p.frames[(2 * i + 1) * k], s[i], v[i], 1)
            fa_stacks_build(p.stacks, self.shape, p.frames, 2 * count)
        return out_obs, out_next

    def _shared(self, slots, envs):
        """:meth:`gather`'s overlapping views, or None where they cannot be."""
        if self.shape.outer != 1 or not slots.size:
            return None
        cdef int64_t[::1] s = slots
        cdef int64_t[::1] v = envs
        cdef Py_ssize_t i, count = s.shape[0]
        cdef int64_t j, k = self.stack
        cdef bint shifted = True
        with nogil:
            for i in range(count):
                for j in range(k - 1):
                    if self.refs[s[i], v[i], 1, j] != self.refs[s[i], v[i], 0, j + 1]:
                        shifted = False
        if not shifted:
            return None
        strip = np.empty((count, k + 1, self.frame_bytes), np.uint8)  # frames 0..k of a pair
        cdef uint8_t[:, :, ::1] out = strip
        cdef fa_stack_shape shape = self.shape
        shape.k = k + 1
        cdef _Pointers p = _Pointers(count, count * (k + 1))
        with nogil:
            for i in range(count):
                p.stacks[i] = &out[i, 0, 0]
                self._frames_of(&p.frames[i * (k + 1)], s[i], v[i], 0)
                p.frames[i * (k + 1) + k] = self.frame(self.refs[s[i], v[i], 1, k - 1])
            fa_stacks_build(p.stacks, shape, p.frames, count)
        shape_ = (count,) + self.obs_shape
        strides = (strip.strides[0],) + self.stack_strides
        return (np.ndarray(shape_, np.uint8, strip, 0, strides),
                np.ndarray(shape_, np.uint8, strip, self.frame_bytes, strides))

    def _checked(self, slots, envs):
        slots = np.asarray(slots)
        envs = np.asarray(envs)
        if slots.dtype.kind not in "iu" or envs.dtype.kind not in "iu":
            raise TypeError("slots and envs must be integer arrays")
        if slots.ndim != 1 or envs.shape != slots.shape:
            raise ValueError(f"slots and envs must be 1-D of one length, got {slots.shape} "
                             f"and {envs.shape}")
        slots, envs = np.ascontiguousarray(slots, np.int64), np.ascontiguousarray(envs, np.int64)
        cdef int64_t[::1] s = slots
        cdef int64_t[::1] v = envs
        cdef int64_t size = self.size, i
        cdef bint slot_out = False, env_out = False
        for i in range(s.shape[0]):  # (one compiled pass: four NumPy reductions cost more)
            slot_out |= not 0 <= s[i] < size
            env_out |= not 0 <= v[i] < self.n_envs
        if slot_out:
            raise IndexError(f"slots must be in [0, {size}): {size} are written")
        if env_out:
            raise IndexError(f"envs must be in [0, {self.n_envs})")
        return slots, envs

    def _out(self, out, shape, str name):
        if out is None:
            return np.empty(shape, np.uint8)
        if (not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.shape != shape
                or not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError(f"{name} must be a writable C-contiguous uint8 array of shape "
                             f"{shape}")
        return out

    # -- accounting and persistence ------------------------------------------------------------
    @property
    def frames_stored(self):
        """Frames kept for the transitions alive (chunks hold up to :data:`CHUNK` each)."""
        return self.next_serial - self.oldest_needed()

    @property
    def nbytes(self):
        """Bytes allocated: frames (live chunks and spares), frame references, bookkeeping."""
        chunks = (len(self.chunks) + len(self.spares)) * CHUNK * self.frame_bytes
        return chunks + self.refs_array.nbytes + self.last_array.nbytes

    def state_dict(self, bint pieces=False):
        """Everything needed to rebuild this store exactly: arrays and numbers. ``frames``
        holds the frames of serials ``first_serial`` onwards, one row each: one array, or with
        ``pieces`` a tuple of read-only views of the chunks, in order (no copy: valid until the
        store changes; what a checkpoint writes from)."""
        first = self.oldest_needed()
        parts = []
        for number in sorted(self.chunks):
            lo, hi = max(first, number * CHUNK), min(self.next_serial, (number + 1) * CHUNK)
            if lo < hi:
                view = self.chunks[number][lo - number * CHUNK:hi - number * CHUNK]
                if pieces:
                    view = view.view()
                    view.flags.writeable = False
                parts.append(view)
        if pieces:
            frames = tuple(parts)
        else:
            frames = np.empty((self.next_serial - first, self.frame_bytes), np.uint8)
            if parts:
                np.concatenate(parts, out=frames)
        return {"refs": self.refs_array.copy(), "last": self.last_array.copy(),
                "has_last": self.has_last_array.astype(bool), "pos": int(self.pos),
                "full": bool(self.full), "first_serial": int(first), "frames": frames,
                "lineage": self.lineage.copy()}

    def checked_state(self, state):
        """:meth:`state_dict`'s contents checked whole against this store (every key, dtype,
        shape and range, and that every frame referred to is held), as new arrays and
        numbers that :meth:`load_state_dict` takes; nothing changes here. TypeError for a
        value of the wrong type (float ``refs``, a string ``pos``), ValueError for one out of
        range or of another shape."""
        state_keys("a FrameStore state", state,
                   ("refs", "last", "has_last", "pos", "full", "first_serial", "frames"))
        refs = state_array("refs", state["refs"], self.refs_array.shape, np.int64)
        last = state_array("last", state["last"], self.last_array.shape, np.int64)
        has_last = state_array("has_last", state["has_last"], (self.n_envs,), bool)
        parts = state["frames"]
        parts = tuple(parts) if isinstance(parts, (list, tuple)) else (parts,)
        for part in parts:
            part = np.asarray(part)
            if part.dtype != np.uint8:
                raise TypeError(f"the state's frames must be uint8, got {part.dtype}")
            if part.ndim != 2 or part.shape[1] != self.frame_bytes:
                raise ValueError(f"the state's frames must have the shape (frames, "
                                 f"{self.frame_bytes}), got {part.shape}")
        count = sum(len(part) for part in parts)
        pos = state_number("pos", state["pos"], "i")
        full = state_number("full", state["full"], "b")
        first = state_number("first_serial", state["first_serial"], "i")
        if not 0 <= pos < self.capacity:
            raise ValueError(f"the state's pos must be in [0, {self.capacity}), got {pos}")
        if not 0 <= first < 2 ** 62:
            raise ValueError(f"the state's first_serial must be in [0, 2**62), got {first}")
        end = first + count
        lineage = None
        if "lineage" in state:  # (states before it have none: their frames get a new token)
            lineage = np.asarray(state["lineage"])
            if lineage.dtype != np.int64:
                raise TypeError(f"the state's lineage must be int64, got {lineage.dtype}")
            if (lineage.ndim != 2 or lineage.shape[1] != 2 or not len(lineage)
                    or lineage[0, 1] != 0 or (np.diff(lineage[:, 1]) <= 0).any()):
                raise ValueError("the state's lineage must be rows (token, from_serial), the "
                                 "first from serial 0, ascending")
        written = refs if full else refs[:pos]
        for name, used in (("refs", written), ("last", last[has_last])):
            live = used[used >= 0]
            if ((used < -1).any() or (live.size and (live.min() < first or live.max() >= end))):
                raise ValueError(f"the state's {name} refer to frames it does not hold "
                                 f"(serials [{first}, {end}) held, -1 the zero frame)")
        return {"refs": refs, "last": last, "has_last": has_last, "pos": pos, "full": full,
                "first_serial": first, "frames": tuple(np.asarray(part) for part in parts),
                "lineage": lineage}

    def load_state_dict(self, state):
        """Take :meth:`state_dict`'s contents (of a store of the same shape), checked whole
        (:meth:`checked_state`) before anything changes."""
        self.load_checked(self.checked_state(state))

    def load_checked(self, state):
        """Take a state :meth:`checked_state` gave back (nothing here can fail): the second
        half of :meth:`load_state_dict`, for an owner that checks several states (its own
        columns, other stores) before it changes any."""
        refs, last, has_last, frames = (state["refs"], state["last"], state["has_last"],
                                        state["frames"])
        pos, full, first = state["pos"], state["full"], state["first_serial"]
        end = first + sum(len(part) for part in frames)
        self.reset()  # every chunk a spare, reused below
        self.refs_array[...] = refs
        self.last_array[...] = last
        self.has_last_array[...] = has_last.astype(np.uint8)
        self.pos, self.full, self.next_serial = pos, full, end
        # the state's serials hold its frames; what this store writes from here on is its own
        self.lineage = _lineage(state["lineage"], end)
        for slot in range(pos, pos + self.capacity) if full else range(pos):
            self._window_put(slot % self.capacity)
        serial = first
        for part in frames:  # in serial order, into chunks taken in order
            done = 0
            while done < len(part):
                number, offset = serial // CHUNK, serial % CHUNK
                if (self.live is not None and done == 0 and offset == 0
                        and number not in self.chunks and self._adoptable(part)):
                    self._add_chunk(number, part)  # a checkpoint's file, mapped: not copied
                    serial += CHUNK
                    done += CHUNK
                    continue
                if number not in self.chunks:
                    self._add_chunk(number)
                take = min(CHUNK - offset, len(part) - done)
                self.chunks[number][offset:offset + take] = part[done:done + take]
                serial += take
                done += take

    cdef bint _adoptable(self, part):
        """Whether ``part`` is a whole chunk's frames mapped read-only from a file (a
        checkpoint's, which nothing writes: the store can use it as it is)."""
        mapping = mapping_of(part)
        return (mapping is not None and not mapping.writable
                and part.shape == (CHUNK, self.frame_bytes))

    def __reduce__(self):  # pickling (SB3's save_replay_buffer pickles the whole buffer)
        return (_rebuilt, (self.capacity, self.n_envs, self.obs_shape, self.stack, self.axis,
                           self.state_dict(), self.disk))


def _lineage(kept, int64_t start):
    """A lineage: the rows of ``kept`` (None: none) for serials below ``start``, then a new
    token (63 random bits) from ``start`` on."""
    rows = [] if kept is None else [row for row in np.asarray(kept).tolist() if row[1] < start]
    if not rows and start:
        rows.append([secrets.randbits(63), 0])  # serials below start of unknown origin
    rows.append([secrets.randbits(63), start])
    return np.array(rows, np.int64).reshape(-1, 2)


def _rebuilt(capacity, n_envs, obs_shape, stack, axis, state, disk=None):
    store = FrameStore(capacity, n_envs, obs_shape, stack, axis, disk)
    store.load_state_dict(state)
    return store


cdef class SumTree:
    """Non-negative priorities of ``capacity`` items on a sum tree (float64): set any of them,
    and find the items where running sums pass given masses, in ``O(log capacity)`` each."""

    cdef readonly int64_t capacity, leaves
    cdef object tree_array
    cdef double[::1] tree

    def __init__(self, int64_t capacity):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.leaves = 1
        while self.leaves < capacity:
            self.leaves *= 2
        self.tree_array = np.zeros(2 * self.leaves, np.float64)
        self.tree = self.tree_array

    @property
    def total(self):
        return float(self.tree[1])

    def get(self, indices):
        """The priorities of ``indices``."""
        return self.tree_array[self.leaves + self._indices(indices)]

    def set(self, indices, values):
        """Set the priorities of ``indices`` (the last value wins for a repeated index)."""
        cdef int64_t[::1] index = self._indices(indices)
        values = np.ascontiguousarray(values, np.float64)
        if values.shape != (index.shape[0],):
            raise ValueError(f"{index.shape[0]} indices but values of shape {values.shape}")
        if not np.isfinite(values).all() or (values < 0).any():
            raise ValueError("priorities must be finite and >= 0")
        cdef double[::1] value = values
        with nogil:
            fa_sumtree_set(&self.tree[0], self.leaves, &index[0] if index.shape[0] else NULL,
                           &value[0] if value.shape[0] else NULL, index.shape[0])

    def find(self, masses):
        """For each mass in ``[0, total)``, the item where the running sum of priorities
        passes it: item ``i`` is found for a share ``priority[i] / total`` of the range."""
        masses = np.ascontiguousarray(masses, np.float64)
        if masses.ndim != 1:
            raise ValueError("masses must be 1-D")
        if not self.tree[1] > 0:
            raise ValueError("every priority is 0: nothing to find")
        out = np.empty(masses.shape[0], np.int64)
        cdef double[::1] mass = masses
        cdef int64_t[::1] found = out
        if mass.shape[0]:
            with nogil:
                fa_sumtree_find(&self.tree[0], self.leaves, &mass[0], &found[0], mass.shape[0])
        return out

    def draw(self, uniforms, double beta, int64_t size):
        """Prioritized replay's draw, in one pass: item ``i`` of the batch from the ``i``-th of
        ``len(uniforms)`` equal slices of the total, at ``uniforms[i]`` (in ``[0, 1)``) across
        it; and its importance weight ``(size * priority / total) ** -beta``, over the batch's
        largest. Returns the items and the weights (float32).

        The weights are computed as ``(smallest / priority) ** beta``, ``smallest`` the
        batch's smallest priority (``size`` and ``total`` cancel): the same numbers, never
        an overflow (``1e308`` next to ``1e-300`` gives 0 and 1, not inf / inf)."""
        cdef double[::1] u = np.ascontiguousarray(uniforms, np.float64)
        cdef Py_ssize_t i, count = u.shape[0]
        cdef double total = self.tree[1], slice_, smallest = 0.0, p
        if count == 0 or not total > 0:
            raise ValueError("no uniforms, or every priority is 0")
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if not 0 <= beta < float("inf"):
            raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
        items = np.empty(count, np.int64)
        weights = np.empty(count, np.float32)
        cdef int64_t[::1] item = items
        cdef float[::1] weight = weights
        cdef double[::1] mass = np.empty(count, np.float64)
        slice_ = total / count
        with nogil:
            for i in range(count):  # (a mass rounded past the total finds the last item)
                mass[i] = (i + u[i]) * slice_
            fa_sumtree_find(&self.tree[0], self.leaves, &mass[0], &item[0], count)
            for i in range(count):  # (a found item's priority is > 0: see the find)
                p = self.tree[self.leaves + item[i]]
                if i == 0 or p < smallest:
                    smallest = p
            for i in range(count):
                weight[i] = <float>pow(smallest / self.tree[self.leaves + item[i]], beta)
        return items, weights

    def _indices(self, indices):
        index = np.ascontiguousarray(indices)
        if index.dtype.kind not in "iu" or index.ndim != 1:
            raise TypeError("indices must be a 1-D integer array")
        if index.size and (index.min() < 0 or index.max() >= self.capacity):
            raise IndexError(f"indices must be in [0, {self.capacity})")
        return index.astype(np.int64, copy=False)

    def __reduce__(self):
        leaves = self.tree_array[self.leaves:self.leaves + self.capacity]
        return (_tree_rebuilt, (self.capacity, leaves))


def _tree_rebuilt(capacity, priorities):
    tree = SumTree(capacity)
    tree.set(np.arange(capacity), priorities)
    return tree
