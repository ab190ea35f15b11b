# The compiled API of _wait.pyx for other compiled modules: the pool's step through shared
# memory, which the common step (_step.pyx) runs without Python between its calls.
from libc.stdint cimport int32_t, int64_t, uint8_t

from fastatari.vector.fa_wait cimport fa_control


cdef class HotPath:
    cdef fa_control *c
    cdef int64_t *tickets
    cdef uint8_t *op
    cdef uint8_t *in_flight
    cdef Py_ssize_t n
    cdef int epfd, evfd
    cdef double timeout
    cdef object arrays  # what the pointers point into, kept alive
    cdef public int64_t collected
    cdef readonly bint closed

    cdef int round_trip(self, const uint8_t *ops, int32_t output) except -1
