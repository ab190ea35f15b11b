# C declarations of csrc/fastatari.h, the kernels: the bottom layer, cimported by _kernels.pyx.
# Declarations only (no module of this name exists at run time), so any Cython module can
# cimport them; nothing here holds the GIL.
from libc.stdint cimport uint8_t

cdef extern from "fastatari.h" nogil:
    ctypedef struct fa_plan:
        int src_h, src_w, dst_h, dst_w, cn
    ctypedef struct fa_source:
        int kind
        const uint8_t *a
        const uint8_t *b
        Py_ssize_t stride
        const uint8_t *lut
    int FA_OK, FA_ENOMEM, FA_EUPSCALE, FA_ESIZE
    int FA_SRC_IMAGE, FA_SRC_PALETTE, FA_SRC_RGB_GRAY
    int fa_plan_init(fa_plan *plan, int src_h, int src_w, int dst_h, int dst_w, int cn)
    void fa_plan_free(fa_plan *plan)
    int fa_process(const fa_plan *plan, const fa_source *src, uint8_t *dst,
                   Py_ssize_t row_stride, Py_ssize_t px_stride)
    void fa_stack_shift(uint8_t *stack, int k, size_t frame_bytes, int cn, int channels_last)
    void fa_rgb_to_gray(const uint8_t *rgb, uint8_t *gray, size_t n)
    int fa_all_known(const uint8_t *idx, size_t n, const uint8_t *known)
    int fa_simd_select(const char *name)
    const char *fa_simd_name()
    int fa_simd_available(const char *name)
