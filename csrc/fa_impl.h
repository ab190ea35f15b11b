/* The per-row building blocks that a SIMD variant may replace, and the table that holds one set. */
#ifndef FA_IMPL_H
#define FA_IMPL_H

#include "fastatari.h"

/* x86 SIMD variants need GCC/clang target attributes and __builtin_cpu_supports; decided by the
 * compiler's target, not the build machine (cross builds, MSVC get the portable path only). */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define FA_X86_DISPATCH 1
#else
#define FA_X86_DISPATCH 0
#endif

/* NEON is baseline on AArch64 (every core has it): its variant needs neither attributes nor a
 * run-time check. Little-endian only: the tap layout reads bytes as the low bytes of lanes. */
#if (defined(__aarch64__) || defined(_M_ARM64)) && !defined(__ARM_BIG_ENDIAN)
#define FA_NEON 1
#else
#define FA_NEON 0
#endif

typedef struct {
    const char *name;
    /* out[x*cn + c] = max(lut[a[x]*cn + c], lut[b[x]*cn + c]) (just lut[a[x]] when b is NULL) */
    void (*row_palette)(const uint8_t *a, const uint8_t *b, const uint8_t *lut, int cn, int n,
                        uint8_t *out);
    /* out[x] = max(gray(a[x]), gray(b[x])) over RGB pixels (gray(a[x]) when b is NULL) */
    void (*row_rgb_gray)(const uint8_t *a, const uint8_t *b, int n, uint8_t *out);
    /* out[i] = max(a[i], b[i]) over n bytes */
    void (*row_max)(const uint8_t *a, const uint8_t *b, int n, uint8_t *out);
    /* horizontal INTER_AREA pass of one source row: hrow[x*cn + c], float32 */
    void (*hpass)(const fa_plan *p, const uint8_t *row, float *hrow);
    /* vertical pass of destination row dy from the hrows of its taps, rounded into out[0..nout) */
    void (*vpass)(const fa_plan *p, int dy, const float *const *hrows, uint8_t *out);
    void (*rgb_to_gray)(const uint8_t *rgb, uint8_t *gray, size_t n);
    int (*all_known)(const uint8_t *idx, size_t n, const uint8_t *known);
} fa_impl;

extern const fa_impl fa_impl_scalar;
#if FA_X86_DISPATCH
extern const fa_impl fa_impl_avx2;
extern const fa_impl fa_impl_avx512vbmi;
#endif
#if FA_NEON
extern const fa_impl fa_impl_neon;
#endif

/* Width of hrow buffers: the AVX-512 passes work on whole blocks of 16 values. */
static inline int fa_hrow_len(const fa_plan *p) { return ((p->dst_w * p->cn + 15) / 16) * 16; }

#endif
