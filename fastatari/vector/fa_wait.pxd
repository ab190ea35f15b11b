# C declarations of csrc/fa_wait.h, the vector env's hot path in shared memory: cimported
# by _wait.pyx. Apart from kernels/_csrc.pxd because it is not a kernel and builds into its own
# module.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

cdef extern from "fa_wait.h" nogil:
    ctypedef struct fa_control:
        pass

    int FA_CONTROL_BYTES
    int FA_TIMEOUT
    int FA_DONE
    int FA_EVENT
    int FA_INTERRUPTED
    int FA_FAILED

    int fa_fast_waits()
    double fa_seconds()
    void fa_release_fence()
    void fa_publish(fa_control *c)
    void fa_set_output(fa_control *c, int32_t slot)
    int32_t fa_output(const fa_control *c)
    int64_t fa_completed(const fa_control *c)
    uint32_t fa_generation(const fa_control *c)
    int fa_wait_done(fa_control *c, int64_t target, int epfd, int evfd, double spin_s,
                     double timeout_s)
    int fa_wait_generation(fa_control *c, uint32_t seen, double spin_s, double timeout_s)
    uint8_t fa_claim(uint8_t *op)
    void fa_complete(fa_control *c, int64_t *ticket, int evfd)
    int64_t fa_take_ticket(fa_control *c, int64_t *ticket)
    void fa_complete_as(fa_control *c, int64_t *ticket, int64_t taken, int evfd)
    int64_t fa_load64(const int64_t *p)
    void fa_store64(int64_t *p, int64_t v)
    int64_t fa_issued(const fa_control *c)
