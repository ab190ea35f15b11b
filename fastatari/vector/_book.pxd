# The compiled API of _book.pyx for the step (_step.pyx): the per-env columns, read and written
# in its loops without Python.
from libc.stdint cimport int64_t, uint8_t


cdef class EnvBook:
    cdef readonly Py_ssize_t num_envs
    cdef uint8_t[::1] phase, ended, restarted  # one byte per env
    cdef object _phase, _ended, _restarted  # the same memory, as NumPy arrays (bool: ended and
    #                                          restarted)
    cdef int64_t[::1] queue  # the answered envs in answer order: a ring (an env is in it once)
    cdef Py_ssize_t head, count

    cdef void answer(self, int64_t i) noexcept nogil
    cdef bint any_restarted(self, const int64_t[::1] ids) noexcept nogil
    cdef Py_ssize_t mark_sent(self, const int64_t[::1] ids, uint8_t[::1] ops) noexcept nogil
    cpdef Py_ssize_t in_flight(self)
