# The compiled API of _wait.pyx for other compiled modules: the pool's step through shared
# memory, which the compiled step (_step.pyx) runs without Python between its calls.
from libc.stdint cimport int32_t, int64_t, uint8_t

from fastatari.vector.fa_wait cimport fa_control


cdef class SpinRule:
    cdef readonly double seconds
    cdef int patience, probe, long_waits, since_probe

    cpdef double spin(self)
    cpdef void waited(self, double seconds)


cdef class RowRule:
    cdef Py_ssize_t n, count
    cdef char **src
    cdef Py_ssize_t *size
    cdef uint8_t *kind
    cdef const uint8_t *game_done
    cdef const uint8_t *life_loss
    cdef readonly tuple names
    cdef list columns  # (name, column, kind)
    cdef object arrays

    cdef int targets(self, arrays, Py_ssize_t rows, char **out) except -1
    cdef void write_row(self, char **dst, Py_ssize_t row, Py_ssize_t i) noexcept nogil
    cdef void write_rows(self, char **dst, const int64_t *sel, bint whole,
                         Py_ssize_t rows) noexcept nogil


cdef class Transport:
    cdef fa_control *c
    cdef int64_t *tickets
    cdef uint8_t *op
    cdef uint8_t *in_flight
    cdef Py_ssize_t n
    cdef int epfd, evfd
    cdef double timeout
    cdef SpinRule spins
    cdef object arrays  # what the pointers point into, kept alive
    cdef public int64_t collected
    cdef readonly int64_t lost
    cdef readonly bint closed

    cdef int64_t start(self, const uint8_t *ops, int32_t output, bint mark) noexcept nogil
    cdef int _check_open(self) except -1
    cdef int wait(self, int64_t target, double limit) except -1
    cdef take(self, bint in_order, Py_ssize_t limit)
    cdef take_range(self, int64_t base, Py_ssize_t want)
    cdef int64_t first_untaken(self) noexcept nogil
    cdef int64_t issued(self) noexcept nogil
    cdef int64_t completed(self) noexcept nogil
    cdef int64_t load(self, const int64_t *word) noexcept nogil
    cdef void store(self, int64_t *word, int64_t value) noexcept nogil
    cdef void untake(self, const int64_t[::1] ids)
    cdef int round_trip(self, const uint8_t *ops, int32_t output) except -1
