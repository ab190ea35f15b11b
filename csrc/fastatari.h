/* fastatari kernels: exact re-implementations of the OpenCV/numpy Atari pipeline.
 *
 *   palette LUT (or RGB->gray) -> max of two frames -> INTER_AREA resize -> frame-stack slot
 *
 * Plain C99. Every kernel is byte-identical to OpenCV (cvtColor RGB2GRAY, resize INTER_AREA,
 * uint8). SIMD variants are selected at run time (fa_simd_select); all of them give the same
 * bytes as the portable scalar code. Build with -ffp-contract=off: a fused multiply-add changes
 * OpenCV's float32 rounding.
 */
#ifndef FASTATARI_H
#define FASTATARI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a destination axis samples its source axis: `taps` source indices and float32 weights per
 * destination index, in OpenCV's accumulation order. Short entries are padded with weight 0 on
 * their last real index, which adds an exact +0.0f. */
typedef struct {
    int src_len, dst_len, taps;
    int32_t *index;  /* [dst_len * taps] */
    float *weight;   /* [dst_len * taps] */
} fa_axis;

enum fa_resize_kind {
    FA_RESIZE_COPY = 0,     /* same size: OpenCV copies */
    FA_RESIZE_AREA_INT = 1, /* integer factors on both axes: OpenCV's "area fast" path */
    FA_RESIZE_AREA = 2      /* general INTER_AREA with float32 tap tables */
};

/* A resize plan for one (src_h, src_w) -> (dst_h, dst_w) with `cn` interleaved channels. */
typedef struct {
    int src_h, src_w, dst_h, dst_w, cn;
    int kind;
    int kx, ky;   /* integer factors, FA_RESIZE_AREA_INT only */
    fa_axis x, y; /* FA_RESIZE_AREA only */
    /* The horizontal pass in blocks of 16 output values (x * cn + c), each reading a 64-byte
     * window of the source row: used by the AVX-512 VBMI path when every window fits. */
    int nblocks, blocks_ok;
    int32_t *block_base;  /* [nblocks] first source byte of the window */
    uint64_t *block_mask; /* [nblocks] the window's bytes that lie inside the row */
    uint8_t *block_perm;  /* [nblocks * taps * 64] byte of tap k for lane j at 4 * j */
    float *block_weight;  /* [nblocks * taps * 16] */
    /* The same in blocks of 8 outputs for AVX2's in-lane byte shuffles: outputs 0-3 and 4-7 each
     * read a 16-byte window. */
    int nblocks8, blocks8_ok;
    int32_t *block8_base; /* [nblocks8 * 2] */
    uint8_t *block8_perm; /* [nblocks8 * taps * 32] byte of tap k for lane j at 4 * j, 0x80 = zero */
    float *block8_weight; /* [nblocks8 * taps * 8] */
} fa_plan;

enum { FA_OK = 0, FA_ENOMEM = -1, FA_EUPSCALE = -2, FA_ESIZE = -3 };

int fa_plan_init(fa_plan *plan, int src_h, int src_w, int dst_h, int dst_w, int cn);
void fa_plan_free(fa_plan *plan);

/* Where the rows of the image to resize come from. */
enum fa_source_kind {
    FA_SRC_IMAGE = 0,   /* uint8 (h, w, cn) rows taken as they are */
    FA_SRC_PALETTE = 1, /* palette indices (h, w) mapped through lut (256, cn) */
    FA_SRC_RGB_GRAY = 2 /* RGB (h, w, 3) converted to gray as cvtColor(COLOR_RGB2GRAY) */
};

typedef struct {
    int kind;
    const uint8_t *a; /* the frame; with b, the older of the two frames to max */
    const uint8_t *b; /* NULL: no max */
    ptrdiff_t stride; /* bytes between rows of a and b */
    const uint8_t *lut; /* FA_SRC_PALETTE: 256 * plan->cn bytes */
} fa_source;

/* Build the source image row by row and resize it into dst: element (y, x, c) of the result goes
 * to dst[y * row_stride + x * px_stride + c]. Returns FA_OK or FA_ENOMEM. */
int fa_process(const fa_plan *plan, const fa_source *src, uint8_t *dst, ptrdiff_t row_stride,
               ptrdiff_t px_stride);

/* Drop the oldest of k frames of `frame_bytes` bytes (cn bytes per pixel) and make room for the
 * newest, which goes last: channels-first (k, ...) or channels-last (..., k * cn). */
void fa_stack_shift(uint8_t *stack, int k, size_t frame_bytes, int cn, int channels_last);

/* cvtColor(COLOR_RGB2GRAY) on n pixels. */
void fa_rgb_to_gray(const uint8_t *rgb, uint8_t *gray, size_t n);

/* 1 if every index in idx[0..n) has known[index] != 0. */
int fa_all_known(const uint8_t *idx, size_t n, const uint8_t *known);

/* Run-time SIMD selection: "scalar", "neon" (AArch64), "avx2", "avx512vbmi" (x86-64). "auto" picks the best this CPU runs.
 * Returns 0, or -1 if that path is not available here (the current one is kept). */
int fa_simd_select(const char *name);
const char *fa_simd_name(void);
int fa_simd_available(const char *name);

#ifdef __cplusplus
}
#endif
#endif
