# C declaration of csrc/fa_wait.h, the vector workers' wait: cimported by vector/_wait.pyx.
# Apart from _csrc.pxd because it is not a kernel and builds into its own module.
from libc.stdint cimport int64_t, uint64_t

cdef extern from "fa_wait.h" nogil:
    # the header's pointer is `const volatile int64_t *`; C converts a `const int64_t *` to it
    int fa_wait_change(const int64_t *word, int64_t seen, uint64_t max_ns)
