/* AVX2 horizontal pass (x86-64 only; included by fa_kernels.c under FA_X86_DISPATCH): the taps of
 * 8 outputs are in-lane byte shuffles of two 16-byte windows, zero-extended into 32-bit lanes.
 * Every float operation is the same, in the same order, as the scalar code. */
#include <immintrin.h>

#define FA_AVX2 __attribute__((target("avx2")))

FA_AVX2 static void hpass_avx2_shuffle(const fa_plan *p, const uint8_t *row, float *hrow)
{
    if (!p->blocks8_ok) {
        hpass_avx2(p, row, hrow);
        return;
    }
    const int taps = p->x.taps, nblocks = p->nblocks8;
    const int32_t *const base = p->block8_base;
    const uint8_t *perm = p->block8_perm;
    const float *w = p->block8_weight;
    for (int b = 0; b < nblocks; b++, perm += 32 * taps, w += 8 * taps) {
        const __m256i win = _mm256_loadu2_m128i((const __m128i *)(row + base[2 * b + 1]),
                                                (const __m128i *)(row + base[2 * b]));
        __m256 acc = _mm256_mul_ps(
            _mm256_cvtepi32_ps(_mm256_shuffle_epi8(win, _mm256_loadu_si256((const __m256i *)perm))),
            _mm256_loadu_ps(w));
        for (int k = 1; k < taps; k++)
            acc = _mm256_add_ps(
                acc, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(
                                       win, _mm256_loadu_si256((const __m256i *)(perm + 32 * k)))),
                                   _mm256_loadu_ps(w + 8 * k)));
        _mm256_storeu_ps(hrow + 8 * b, acc);
    }
}

/* Gray LUT and max, 8 pixels at a time: byte loads assembled in a register, then one vector max
 * (compilers otherwise emit emulated gathers here, which are slower than plain loads). */
FA_AVX2 static void row_palette_avx2_loads(const uint8_t *a, const uint8_t *b, const uint8_t *lut,
                                           int cn, int n, uint8_t *out)
{
    int x = 0;
    if (cn == 1 && b) {
        for (; x + 8 <= n; x += 8) {
            uint64_t va = 0, vb = 0;
            for (int j = 0; j < 8; j++) {
                va |= (uint64_t)lut[a[x + j]] << (8 * j);
                vb |= (uint64_t)lut[b[x + j]] << (8 * j);
            }
            __m128i m = _mm_max_epu8(_mm_cvtsi64_si128((long long)va), _mm_cvtsi64_si128((long long)vb));
            _mm_storel_epi64((__m128i *)(out + x), m);
        }
    }
    if (x < n) row_palette_avx2(a + x, b ? b + x : NULL, lut, cn, n - x, out + x * cn);
}

FA_AVX2 static void vpass_avx2_vec(const fa_plan *p, int dy, const float *const *hrows, uint8_t *out)
{
    const int n = p->dst_w * p->cn, taps = p->y.taps;
    const float *beta = p->y.weight + dy * taps;
    for (int i = 0; i < n; i += 8) { /* hrows are padded to 16 values */
        __m256 acc = _mm256_mul_ps(_mm256_set1_ps(beta[0]), _mm256_loadu_ps(hrows[0] + i));
        for (int k = 1; k < taps; k++)
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(beta[k]), _mm256_loadu_ps(hrows[k] + i)));
        /* round half to even (the default MXCSR mode), then saturate to [0, 255] */
        __m256i v = _mm256_cvtps_epi32(acc);
        __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        __m128i b8 = _mm_packus_epi16(w16, w16);
        if (n - i >= 8) {
            _mm_storel_epi64((__m128i *)(out + i), b8);
        } else {
            uint8_t tail[16];
            _mm_storeu_si128((__m128i *)tail, b8);
            memcpy(out + i, tail, (size_t)(n - i));
        }
    }
}

/* cvtColor's 15-bit gray of 8 RGB pixels, exactly: pixels 0-3 in the low 128-bit lane, 4-7 in
 * the high one; per 32-bit lane R*9798 + G*19235 and B*3735 + 1*16384 by vpmaddwd. `rgb` must
 * have 28 readable bytes. */
FA_AVX2 static inline __m128i fa_gray8_avx2(const uint8_t *rgb)
{
    const __m256i src = _mm256_loadu2_m128i((const __m128i *)(rgb + 12), (const __m128i *)rgb);
    const __m256i rg = _mm256_shuffle_epi8(
        src, _mm256_setr_epi8(0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1,
                              0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1));
    const __m256i b1 = _mm256_or_si256(
        _mm256_shuffle_epi8(src, _mm256_setr_epi8(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1,
                                                  11, -1, -1, -1, 2, -1, -1, -1, 5, -1, -1, -1,
                                                  8, -1, -1, -1, 11, -1, -1, -1)),
        _mm256_set1_epi32(1 << 16));
    const __m256i sum = _mm256_add_epi32(_mm256_madd_epi16(rg, _mm256_set1_epi32(9798 | (19235 << 16))),
                                         _mm256_madd_epi16(b1, _mm256_set1_epi32(3735 | (16384 << 16))));
    const __m256i w = _mm256_packus_epi32(_mm256_srli_epi32(sum, 15), _mm256_setzero_si256());
    const __m256i b = _mm256_packus_epi16(w, _mm256_setzero_si256());
    /* bytes 0-3 of each lane hold the grays of its four pixels */
    return _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
}

FA_AVX2 static void row_rgb_gray_avx2_shuffle(const uint8_t *a, const uint8_t *b, int n, uint8_t *out)
{
    int x = 0;
    for (; x + 10 <= n; x += 8) { /* 8 pixels use 24 bytes; the loads read 28, inside the row */
        __m128i g = fa_gray8_avx2(a + 3 * x);
        if (b) g = _mm_max_epu8(g, fa_gray8_avx2(b + 3 * x));
        _mm_storel_epi64((__m128i *)(out + x), g);
    }
    if (x < n) row_rgb_gray_avx2(a + 3 * x, b ? b + 3 * x : NULL, n - x, out + x);
}

FA_AVX2 static void rgb_to_gray_avx2_shuffle(const uint8_t *rgb, uint8_t *gray, size_t n)
{
    const size_t chunk = (size_t)1 << 20;
    for (size_t i = 0; i < n; i += chunk)
        row_rgb_gray_avx2_shuffle(rgb + 3 * i, NULL, (int)(n - i < chunk ? n - i : chunk), gray + i);
}

/* Palette check over a 256-bit bitmap: byte idx >> 3 by two in-lane shuffles, bit idx & 7 by a
 * third; 32 indices per iteration. */
FA_AVX2 static int all_known_avx2_bitmap(const uint8_t *idx, size_t n, const uint8_t *known)
{
    uint8_t bitmap[32] = {0};
    for (int i = 0; i < 256; i++)
        if (known[i]) bitmap[i >> 3] |= (uint8_t)(1u << (i & 7));
    const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)bitmap));
    const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(bitmap + 16)));
    const __m256i bits = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64,
                                          -128, 1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16,
                                          32, 64, -128);
    const __m256i low5 = _mm256_set1_epi8(0x1F), low3 = _mm256_set1_epi8(7);
    __m256i missing = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(idx + i));
        const __m256i byte_at = _mm256_and_si256(_mm256_srli_epi16(v, 3), low5);
        const __m256i byte = _mm256_blendv_epi8(_mm256_shuffle_epi8(lo, byte_at),
                                                _mm256_shuffle_epi8(hi, byte_at),
                                                _mm256_cmpgt_epi8(byte_at, _mm256_set1_epi8(15)));
        const __m256i bit = _mm256_shuffle_epi8(bits, _mm256_and_si256(v, low3));
        missing = _mm256_or_si256(missing, _mm256_cmpeq_epi8(_mm256_and_si256(byte, bit),
                                                            _mm256_setzero_si256()));
    }
    if (!_mm256_testz_si256(missing, missing)) return 0;
    for (; i < n; i++)
        if (!(bitmap[idx[i] >> 3] & (1u << (idx[i] & 7)))) return 0;
    return 1;
}
