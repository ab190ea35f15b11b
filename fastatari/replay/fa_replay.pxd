# C declarations of csrc/fa_replay.h (frames and priorities): cimported by _core.pyx.
from libc.stdint cimport int64_t, uint8_t

cdef extern from "fa_replay.h" nogil:
    ctypedef struct fa_stack_shape:
        int64_t outer
        int64_t k
        int64_t inner

    int fa_frame_equal(const uint8_t *stack, fa_stack_shape s, int64_t j, const uint8_t *frame)
    void fa_frame_store(const uint8_t *stack, fa_stack_shape s, int64_t j, uint8_t *frame)
    void fa_stacks_build(uint8_t *const *stacks, fa_stack_shape s,
                         const uint8_t *const *frames, int64_t count)
    void fa_sumtree_set(double *tree, int64_t leaves, const int64_t *index,
                        const double *value, int64_t count)
    void fa_sumtree_find(const double *tree, int64_t leaves, const double *mass,
                         int64_t *index, int64_t count)

cdef extern from "fa_map.h" nogil:
    void *fa_map(int fd, int64_t nbytes, int writable)
    int fa_unmap(void *address, int64_t nbytes)
    int fa_map_flush(void *address, int64_t nbytes)
