/* AVX-512 VBMI row kernels (x86-64 only; included by fa_kernels.c under FA_X86_DISPATCH).
 * A 256-entry byte table is two vpermi2b lookups picked by the index's top bit; the horizontal
 * INTER_AREA taps of 16 outputs are one vpermb over a 64-byte window of the row. Every float
 * operation is the same, in the same order, as the scalar code. */
#include <immintrin.h>

#define FA_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

typedef struct {
    __m512i q0, q1, q2, q3; /* table bytes 0-63, 64-127, 128-191, 192-255 */
} fa_lut512;

FA_AVX512 static inline fa_lut512 fa_lut512_load(const uint8_t *table)
{
    fa_lut512 t;
    t.q0 = _mm512_loadu_si512(table);
    t.q1 = _mm512_loadu_si512(table + 64);
    t.q2 = _mm512_loadu_si512(table + 128);
    t.q3 = _mm512_loadu_si512(table + 192);
    return t;
}

FA_AVX512 static inline __m512i fa_lut512_map(const fa_lut512 *t, __m512i idx)
{
    __m512i lo = _mm512_permutex2var_epi8(t->q0, idx, t->q1);
    __m512i hi = _mm512_permutex2var_epi8(t->q2, idx, t->q3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
}

static inline __mmask64 fa_mask64(int n) { return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1); }

FA_AVX512 static void row_palette_avx512vbmi(const uint8_t *a, const uint8_t *b, const uint8_t *lut,
                                             int cn, int n, uint8_t *out)
{
    if (cn != 1) {
        row_palette_avx2_loads(a, b, lut, cn, n, out);
        return;
    }
    fa_lut512 t = fa_lut512_load(lut);
    for (int x = 0; x < n; x += 64) {
        __mmask64 m = fa_mask64(n - x);
        __m512i g = fa_lut512_map(&t, _mm512_maskz_loadu_epi8(m, a + x));
        if (b) g = _mm512_max_epu8(g, fa_lut512_map(&t, _mm512_maskz_loadu_epi8(m, b + x)));
        _mm512_mask_storeu_epi8(out + x, m, g);
    }
}

/* Tap k of 16 outputs: one byte permute straight into zero-extended 32-bit lanes. */
#define FA_HTAP(k)                                                                             \
    _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_permutexvar_epi8(                           \
                      lane_low_bytes, _mm512_loadu_si512(perm + 64 * (k)), win)),             \
                  _mm512_loadu_ps(w + 16 * (k)))

FA_AVX512 static void hpass_avx512vbmi(const fa_plan *p, const uint8_t *row, float *hrow)
{
    if (!p->blocks_ok) {
        hpass_avx2_shuffle(p, row, hrow);
        return;
    }
    const __mmask64 lane_low_bytes = 0x1111111111111111ull;
    /* locals, so stores to hrow need not reload the plan */
    const int taps = p->x.taps, nblocks = p->nblocks;
    const int32_t *const base = p->block_base;
    const uint64_t *const mask = p->block_mask;
    const uint8_t *perm = p->block_perm;
    const float *w = p->block_weight;
    for (int b = 0; b < nblocks; b++, perm += 64 * taps, w += 16 * taps) {
        /* masked load: never reads past the end of the row */
        const __m512i win = _mm512_maskz_loadu_epi8(mask[b], row + base[b]);
        __m512 acc;
        switch (taps) { /* one branch per block, taken the same way every time */
        case 1:
            acc = FA_HTAP(0);
            break;
        case 2:
            acc = _mm512_add_ps(FA_HTAP(0), FA_HTAP(1));
            break;
        case 3:
            acc = _mm512_add_ps(_mm512_add_ps(FA_HTAP(0), FA_HTAP(1)), FA_HTAP(2));
            break;
        default:
            acc = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(FA_HTAP(0), FA_HTAP(1)), FA_HTAP(2)),
                                FA_HTAP(3));
            break;
        }
        _mm512_storeu_ps(hrow + 16 * b, acc);
    }
}
#undef FA_HTAP

FA_AVX512 static void vpass_avx512vbmi(const fa_plan *p, int dy, const float *const *hrows,
                                       uint8_t *out)
{
    const int n = p->dst_w * p->cn, taps = p->y.taps;
    const float *beta = p->y.weight + dy * taps;
    for (int i = 0; i < n; i += 16) {
        __m512 acc = _mm512_mul_ps(_mm512_set1_ps(beta[0]), _mm512_loadu_ps(hrows[0] + i));
        for (int k = 1; k < taps; k++)
            acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(beta[k]), _mm512_loadu_ps(hrows[k] + i)));
        /* round half to even (the default MXCSR mode), then clamp to [0, 255] */
        __m512i v = _mm512_max_epi32(_mm512_cvtps_epi32(acc), _mm512_setzero_si512());
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm_mask_storeu_epi8(out + i, m, _mm512_cvtusepi32_epi8(v));
    }
}

/* cvtColor's 15-bit gray of 16 RGB pixels (48 bytes at rgb), exactly: each 32-bit lane is
 * R*9798 + G*19235 (one vpmaddwd over the words R, G) plus B*3735 + 1*16384 (words B, 1). */
FA_AVX512 static inline __m512i fa_gray16(const uint8_t *rgb, __mmask64 m, __m512i perm_rg,
                                          __m512i perm_b)
{
    const __mmask64 words_0_1 = 0x5555555555555555ull; /* bytes 0 and 2 of every lane */
    const __m512i src = _mm512_maskz_loadu_epi8(m, rgb);
    const __m512i rg = _mm512_maskz_permutexvar_epi8(words_0_1, perm_rg, src);
    const __m512i b1 = _mm512_or_si512(_mm512_maskz_permutexvar_epi8(0x1111111111111111ull, perm_b, src),
                                       _mm512_set1_epi32(1 << 16));
    const __m512i sum = _mm512_add_epi32(_mm512_madd_epi16(rg, _mm512_set1_epi32(9798 | (19235 << 16))),
                                         _mm512_madd_epi16(b1, _mm512_set1_epi32(3735 | (16384 << 16))));
    return _mm512_srli_epi32(sum, 15);
}

FA_AVX512 static void row_rgb_gray_avx512vbmi(const uint8_t *a, const uint8_t *b, int n, uint8_t *out)
{
    uint8_t prg[64] = {0}, pb[64] = {0};
    for (int j = 0; j < 16; j++) {
        prg[4 * j] = (uint8_t)(3 * j);
        prg[4 * j + 2] = (uint8_t)(3 * j + 1);
        pb[4 * j] = (uint8_t)(3 * j + 2);
    }
    const __m512i perm_rg = _mm512_loadu_si512(prg), perm_b = _mm512_loadu_si512(pb);
    for (int x = 0; x < n; x += 16) {
        const int left = n - x < 16 ? n - x : 16;
        const __mmask64 m = fa_mask64(3 * left);
        __m512i g = fa_gray16(a + 3 * x, m, perm_rg, perm_b);
        if (b) g = _mm512_max_epu32(g, fa_gray16(b + 3 * x, m, perm_rg, perm_b));
        _mm_mask_storeu_epi8(out + x, (__mmask16)((1u << left) - 1), _mm512_cvtepi32_epi8(g));
    }
}

FA_AVX512 static void rgb_to_gray_avx512vbmi(const uint8_t *rgb, uint8_t *gray, size_t n)
{
    const size_t chunk = (size_t)1 << 20;
    for (size_t i = 0; i < n; i += chunk)
        row_rgb_gray_avx512vbmi(rgb + 3 * i, NULL, (int)(n - i < chunk ? n - i : chunk), gray + i);
}

FA_AVX512 static int all_known_avx512vbmi(const uint8_t *idx, size_t n, const uint8_t *known)
{
    uint8_t known01[256];
    for (int i = 0; i < 256; i++) known01[i] = known[i] != 0;
    fa_lut512 t = fa_lut512_load(known01);
    __m512i acc = _mm512_set1_epi8(1);
    for (size_t i = 0; i < n; i += 64) {
        __mmask64 m = fa_mask64((int)(n - i < 64 ? n - i : 64));
        /* masked-off lanes read index 0 through maskz; keep them at 1 instead */
        __m512i k = _mm512_mask_blend_epi8(m, _mm512_set1_epi8(1),
                                           fa_lut512_map(&t, _mm512_maskz_loadu_epi8(m, idx + i)));
        acc = _mm512_min_epu8(acc, k);
    }
    return _mm512_cmpeq_epi8_mask(acc, _mm512_setzero_si512()) == 0;
}
