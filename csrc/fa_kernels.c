/* The fused pass (rows -> horizontal -> vertical -> output) and run-time SIMD dispatch. */
#include <stdlib.h>
#include <string.h>

#include "fa_impl.h"

/* Portable copy: the compiler's baseline ISA only. */
#define FA_NAME(f) f##_scalar
#define FA_TARGET
#include "fa_generic.h"
#undef FA_NAME
#undef FA_TARGET

const fa_impl fa_impl_scalar = {"scalar",        row_palette_scalar, row_rgb_gray_scalar,
                                row_max_scalar,  hpass_scalar,       vpass_scalar,
                                rgb_to_gray_scalar, all_known_scalar};

#if FA_NEON
/* Hand-written NEON (AArch64) for every per-row block; the scalar copy above is already NEON
 * code where compilers vectorise it, and the fallback where a plan's taps do not fit. */
#include "fa_neon.h"

const fa_impl fa_impl_neon = {"neon",         row_palette_neon, row_rgb_gray_neon,
                              row_max_neon,   hpass_neon,       vpass_neon,
                              rgb_to_gray_neon, all_known_neon};
#endif

#if FA_X86_DISPATCH
/* The same C, vectorised by the compiler for AVX2. */
#define FA_NAME(f) f##_avx2
#define FA_TARGET __attribute__((target("avx2"), unused))
#include "fa_generic.h"
#undef FA_NAME
#undef FA_TARGET

/* Hand-written AVX2 where compilers do not vectorise well: LUT, gray, taps, vertical pass. */
#include "fa_avx2.h"

const fa_impl fa_impl_avx2 = {"avx2",         row_palette_avx2_loads,   row_rgb_gray_avx2_shuffle,
                              row_max_avx2,   hpass_avx2_shuffle,       vpass_avx2_vec,
                              rgb_to_gray_avx2_shuffle, all_known_avx2_bitmap};

/* Hand-written AVX-512 VBMI where it pays (LUT, taps, vertical pass); AVX2 C elsewhere. */
#include "fa_avx512.h"

const fa_impl fa_impl_avx512vbmi = {"avx512vbmi",           row_palette_avx512vbmi,
                                    row_rgb_gray_avx512vbmi, row_max_avx2,
                                    hpass_avx512vbmi,       vpass_avx512vbmi,
                                    rgb_to_gray_avx512vbmi, all_known_avx512vbmi};

static int cpu_has(const char *name)
{
    __builtin_cpu_init();
    if (strcmp(name, "avx2") == 0) return __builtin_cpu_supports("avx2");
    if (strcmp(name, "avx512vbmi") == 0)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vbmi");
    return 0;
}
#endif

static const fa_impl *impl_by_name(const char *name)
{
    if (strcmp(name, "scalar") == 0) return &fa_impl_scalar;
#if FA_NEON
    if (strcmp(name, "neon") == 0) return &fa_impl_neon;
#endif
#if FA_X86_DISPATCH
    if (strcmp(name, "avx2") == 0 && cpu_has("avx2")) return &fa_impl_avx2;
    if (strcmp(name, "avx512vbmi") == 0 && cpu_has("avx512vbmi")) return &fa_impl_avx512vbmi;
#endif
    return NULL;
}

static const fa_impl *best_impl(void)
{
#if FA_NEON
    return &fa_impl_neon;
#endif
#if FA_X86_DISPATCH
    if (cpu_has("avx512vbmi")) return &fa_impl_avx512vbmi;
    if (cpu_has("avx2")) return &fa_impl_avx2;
#endif
    return &fa_impl_scalar;
}

static const fa_impl *current = NULL;

static const fa_impl *impl(void)
{
    if (!current) current = best_impl();
    return current;
}

int fa_simd_select(const char *name)
{
    const fa_impl *chosen = strcmp(name, "auto") == 0 ? best_impl() : impl_by_name(name);
    if (!chosen) return -1;
    current = chosen;
    return 0;
}

const char *fa_simd_name(void) { return impl()->name; }

int fa_simd_available(const char *name) { return impl_by_name(name) != NULL; }

void fa_rgb_to_gray(const uint8_t *rgb, uint8_t *gray, size_t n) { impl()->rgb_to_gray(rgb, gray, n); }

int fa_all_known(const uint8_t *idx, size_t n, const uint8_t *known)
{
    return impl()->all_known(idx, n, known);
}

/* Source row sy as (w * cn) bytes: either a pointer into the frame or built into `scratch`. */
static const uint8_t *source_row(const fa_impl *f, const fa_plan *p, const fa_source *s, int sy,
                                 uint8_t *scratch)
{
    const uint8_t *a = s->a + sy * s->stride, *b = s->b ? s->b + sy * s->stride : NULL;
    switch (s->kind) {
    case FA_SRC_PALETTE:
        f->row_palette(a, b, s->lut, p->cn, p->src_w, scratch);
        return scratch;
    case FA_SRC_RGB_GRAY:
        f->row_rgb_gray(a, b, p->src_w, scratch);
        return scratch;
    default:
        if (!b) return a;
        f->row_max(a, b, p->src_w * p->cn, scratch);
        return scratch;
    }
}

/* Whether source row y is byte-identical to row y - 1 in every frame it is built from. */
static int same_row(const fa_source *s, int y, size_t bytes)
{
    const uint8_t *a = s->a + y * s->stride;
    if (memcmp(a, a - s->stride, bytes) != 0) return 0;
    if (!s->b) return 1;
    const uint8_t *b = s->b + y * s->stride;
    return memcmp(b, b - s->stride, bytes) == 0;
}

static void store_row(const uint8_t *row, int w, int cn, uint8_t *dst, ptrdiff_t px_stride)
{
    if (px_stride == cn) {
        memcpy(dst, row, (size_t)w * cn);
        return;
    }
    for (int x = 0; x < w; x++)
        for (int c = 0; c < cn; c++) dst[x * px_stride + c] = row[x * cn + c];
}

/* OpenCV's area-fast path for integer factors (resizeAreaFast_): a 2x2 box is (sum + 2) >> 2,
 * other boxes round sum * (1.f / area) half to even. */
static void area_int(const fa_impl *f, const fa_plan *p, const fa_source *s, uint8_t *rows,
                     int32_t *sums, uint8_t *out, uint8_t *dst, ptrdiff_t row_stride,
                     ptrdiff_t px_stride)
{
    const int cn = p->cn, w = p->dst_w, kx = p->kx, ky = p->ky;
    const float scale = 1.f / (float)(kx * ky);
    for (int dy = 0; dy < p->dst_h; dy++) {
        memset(sums, 0, sizeof(int32_t) * w * cn);
        for (int j = 0; j < ky; j++) {
            const uint8_t *row = source_row(f, p, s, dy * ky + j, rows);
            for (int x = 0; x < w; x++)
                for (int i = 0; i < kx; i++)
                    for (int c = 0; c < cn; c++) sums[x * cn + c] += row[(x * kx + i) * cn + c];
        }
        for (int i = 0; i < w * cn; i++) {
            long v = (kx == 2 && ky == 2) ? (sums[i] + 2) >> 2 : lrintf((float)sums[i] * scale);
            out[i] = (uint8_t)(v > 255 ? 255 : v);
        }
        store_row(out, w, cn, dst + dy * row_stride, px_stride);
    }
}

int fa_process(const fa_plan *p, const fa_source *s, uint8_t *dst, ptrdiff_t row_stride,
               ptrdiff_t px_stride)
{
    const fa_impl *f = impl();
    const int cn = p->cn, src_len = p->src_w * cn, hlen = fa_hrow_len(p);
    int ring = 0; /* hrows kept: a power of two >= the vertical taps */
    if (p->kind == FA_RESIZE_AREA)
        for (ring = 1; ring < p->y.taps; ring *= 2) {
        }
    /* scratch: hrow ring, one source row (+64 for whole-vector access), one output row, sums,
     * the hrows of one destination row's taps */
    size_t need = 64 + sizeof(float) * (size_t)hlen * ring + (size_t)src_len + 64 + (size_t)hlen +
                  8 + sizeof(int32_t) * (size_t)p->dst_w * cn + 8 +
                  sizeof(float *) * ((size_t)ring + (size_t)p->src_h);
    unsigned char stack_buf[16384];
    unsigned char *mem = need <= sizeof(stack_buf) ? stack_buf : malloc(need);
    if (!mem) return FA_ENOMEM;
    float *hbuf = (float *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    uint8_t *rowbuf = (uint8_t *)(hbuf + (size_t)hlen * ring);
    uint8_t *outbuf = rowbuf + src_len + 64;
    int32_t *sums = (int32_t *)(((uintptr_t)(outbuf + hlen) + 7) & ~(uintptr_t)7);
    const float **tap_rows = (const float **)(((uintptr_t)(sums + p->dst_w * cn) + 7) & ~(uintptr_t)7);
    const float **hrow_of = tap_rows + ring; /* the hrow of each source row */

    if (p->kind == FA_RESIZE_COPY) {
        for (int y = 0; y < p->src_h; y++)
            store_row(source_row(f, p, s, y, rowbuf), p->dst_w, cn, dst + y * row_stride, px_stride);
    } else if (p->kind == FA_RESIZE_AREA_INT) {
        area_int(f, p, s, rowbuf, sums, outbuf, dst, row_stride, px_stride);
    } else {
        /* Source rows are consumed in increasing order. A row whose source bytes equal the row
         * above's (Atari screens are full of them) shares that row's hrow instead of being
         * computed again. Only computed rows take a ring slot, so a destination row's taps,
         * at most y.taps consecutive source rows, reference at most y.taps of the most
         * recently computed hrows: a ring of y.taps slots holds them all. */
        const size_t src_bytes = (size_t)p->src_w * (s->kind == FA_SRC_RGB_GRAY ? 3 : s->kind == FA_SRC_PALETTE ? 1 : cn);
        int done = -1, computed = 0;
        memset(hbuf, 0, sizeof(float) * (size_t)hlen * ring);
        for (int dy = 0; dy < p->dst_h; dy++) {
            const int32_t *ys = p->y.index + dy * p->y.taps;
            int last = ys[p->y.taps - 1];
            while (done < last) {
                done++;
                if (done > 0 && same_row(s, done, src_bytes)) {
                    hrow_of[done] = hrow_of[done - 1];
                    continue;
                }
                float *hrow = hbuf + (size_t)(computed++ & (ring - 1)) * hlen;
                f->hpass(p, source_row(f, p, s, done, rowbuf), hrow);
                hrow_of[done] = hrow;
            }
            for (int k = 0; k < p->y.taps; k++) tap_rows[k] = hrow_of[ys[k]];
            if (px_stride == cn) {
                f->vpass(p, dy, tap_rows, dst + dy * row_stride);
            } else {
                f->vpass(p, dy, tap_rows, outbuf);
                store_row(outbuf, p->dst_w, cn, dst + dy * row_stride, px_stride);
            }
        }
    }
    if (mem != stack_buf) free(mem);
    return FA_OK;
}

void fa_stack_shift(uint8_t *stack, int k, size_t frame_bytes, int cn, int channels_last)
{
    if (k <= 1) return;
    if (!channels_last) {
        memmove(stack, stack + frame_bytes, frame_bytes * (k - 1));
        return;
    }
    const size_t pixels = frame_bytes / cn, px = (size_t)k * cn, keep = px - cn;
    if (px == 4 && cn == 1) { /* the common (H, W, 4) gray stack, in a loop compilers vectorise */
        for (size_t i = 0; i < pixels; i++) {
            uint8_t *q = stack + 4 * i;
            q[0] = q[1];
            q[1] = q[2];
            q[2] = q[3];
        }
        return;
    }
    for (size_t i = 0; i < pixels; i++) memmove(stack + i * px, stack + i * px + cn, keep);
}
