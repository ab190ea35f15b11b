/* NEON variants (AArch64, where NEON is baseline: no target attribute, no run-time check; included
 * by fa_kernels.c under FA_NEON). Every float operation is the scalar code's, in the same order:
 * separate vmulq/vaddq, never vmlaq/vfmaq (which fuse on AArch64); vcvtnq rounds half to even as
 * lrintf does; the saturating narrows clamp to [0, 255]. Integer work (LUTs, gray, max) is exact
 * whatever the order. */
#include <arm_neon.h>
#include <string.h>

/* A 256-entry byte table in 16 registers: vqtbl4q looks up indices 0-63; each vqtbx4q looks up
 * the next 64 on the index minus 64 and keeps the lanes whose index falls outside them. */
typedef struct {
    uint8x16x4_t q[4];
} fa_table256;

static inline void table256_load(fa_table256 *t, const uint8_t *table)
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) t->q[i].val[j] = vld1q_u8(table + 64 * i + 16 * j);
}

static inline uint8x16_t table256_lookup(const fa_table256 *t, uint8x16_t idx)
{
    const uint8x16_t step = vdupq_n_u8(64);
    uint8x16_t r = vqtbl4q_u8(t->q[0], idx);
    idx = vsubq_u8(idx, step);
    r = vqtbx4q_u8(r, t->q[1], idx);
    idx = vsubq_u8(idx, step);
    r = vqtbx4q_u8(r, t->q[2], idx);
    idx = vsubq_u8(idx, step);
    return vqtbx4q_u8(r, t->q[3], idx);
}

/* Gray LUT and max, 16 pixels at a time by table lookups; RGB LUTs take the scalar loop. */
static void row_palette_neon(const uint8_t *a, const uint8_t *b, const uint8_t *lut, int cn, int n,
                             uint8_t *out)
{
    int x = 0;
    if (cn == 1) {
        fa_table256 t;
        table256_load(&t, lut);
        for (; x + 16 <= n; x += 16) {
            uint8x16_t v = table256_lookup(&t, vld1q_u8(a + x));
            if (b) v = vmaxq_u8(v, table256_lookup(&t, vld1q_u8(b + x)));
            vst1q_u8(out + x, v);
        }
    }
    if (x < n) row_palette_scalar(a + x, b ? b + x : NULL, lut, cn, n - x, out + x * cn);
}

/* cvtColor's 15-bit gray of 4 pixels: widening multiply-accumulates, then the rounding narrow
 * shift adds 1 << 14 (OpenCV's 16384) before >> 15. */
static inline uint16x4_t gray4_neon(uint16x4_t r, uint16x4_t g, uint16x4_t b)
{
    uint32x4_t sum = vmull_n_u16(r, 9798);
    sum = vmlal_n_u16(sum, g, 19235);
    sum = vmlal_n_u16(sum, b, 3735);
    return vrshrn_n_u32(sum, 15);
}

static inline uint8x16_t gray16_neon(const uint8_t *rgb)
{
    const uint8x16x3_t px = vld3q_u8(rgb);
    const uint16x8_t r0 = vmovl_u8(vget_low_u8(px.val[0])), r1 = vmovl_u8(vget_high_u8(px.val[0]));
    const uint16x8_t g0 = vmovl_u8(vget_low_u8(px.val[1])), g1 = vmovl_u8(vget_high_u8(px.val[1]));
    const uint16x8_t b0 = vmovl_u8(vget_low_u8(px.val[2])), b1 = vmovl_u8(vget_high_u8(px.val[2]));
    const uint16x8_t lo = vcombine_u16(
        gray4_neon(vget_low_u16(r0), vget_low_u16(g0), vget_low_u16(b0)),
        gray4_neon(vget_high_u16(r0), vget_high_u16(g0), vget_high_u16(b0)));
    const uint16x8_t hi = vcombine_u16(
        gray4_neon(vget_low_u16(r1), vget_low_u16(g1), vget_low_u16(b1)),
        gray4_neon(vget_high_u16(r1), vget_high_u16(g1), vget_high_u16(b1)));
    return vcombine_u8(vmovn_u16(lo), vmovn_u16(hi));
}

static void row_rgb_gray_neon(const uint8_t *a, const uint8_t *b, int n, uint8_t *out)
{
    int x = 0;
    for (; x + 16 <= n; x += 16) {
        uint8x16_t g = gray16_neon(a + 3 * x);
        if (b) g = vmaxq_u8(g, gray16_neon(b + 3 * x));
        vst1q_u8(out + x, g);
    }
    if (x < n) row_rgb_gray_scalar(a + 3 * x, b ? b + 3 * x : NULL, n - x, out + x);
}

static void row_max_neon(const uint8_t *a, const uint8_t *b, int n, uint8_t *out)
{
    int i = 0;
    for (; i + 16 <= n; i += 16) vst1q_u8(out + i, vmaxq_u8(vld1q_u8(a + i), vld1q_u8(b + i)));
    if (i < n) row_max_scalar(a + i, b + i, n - i, out + i);
}

/* The horizontal pass on the AVX2 layout (plan's blocks of 8 outputs): each half of a block reads
 * a 16-byte window, and tap k's bytes are one vqtbl1q away from the low bytes of four 32-bit lanes
 * (index 0x80 is out of range: the other bytes read 0). */
static inline float32x4_t taps4_neon(uint8x16_t window, const uint8_t *perm, const float *weight)
{
    return vmulq_f32(vcvtq_f32_u32(vreinterpretq_u32_u8(vqtbl1q_u8(window, vld1q_u8(perm)))),
                     vld1q_f32(weight));
}

static void hpass_neon(const fa_plan *p, const uint8_t *row, float *hrow)
{
    if (!p->blocks8_ok) {
        hpass_scalar(p, row, hrow);
        return;
    }
    const int taps = p->x.taps, nblocks = p->nblocks8;
    const int32_t *const base = p->block8_base;
    const uint8_t *perm = p->block8_perm;
    const float *w = p->block8_weight;
    for (int b = 0; b < nblocks; b++, perm += 32 * taps, w += 8 * taps) {
        const uint8x16_t lo = vld1q_u8(row + base[2 * b]), hi = vld1q_u8(row + base[2 * b + 1]);
        float32x4_t acc_lo = taps4_neon(lo, perm, w), acc_hi = taps4_neon(hi, perm + 16, w + 4);
        for (int k = 1; k < taps; k++) {
            acc_lo = vaddq_f32(acc_lo, taps4_neon(lo, perm + 32 * k, w + 8 * k));
            acc_hi = vaddq_f32(acc_hi, taps4_neon(hi, perm + 32 * k + 16, w + 8 * k + 4));
        }
        vst1q_f32(hrow + 8 * b, acc_lo);
        vst1q_f32(hrow + 8 * b + 4, acc_hi);
    }
}

static inline float32x4_t vsum4_neon(const float *beta, const float *const *hrows, int taps, int i)
{
    float32x4_t acc = vmulq_n_f32(vld1q_f32(hrows[0] + i), beta[0]);
    for (int k = 1; k < taps; k++) acc = vaddq_f32(acc, vmulq_n_f32(vld1q_f32(hrows[k] + i), beta[k]));
    return acc;
}

static void vpass_neon(const fa_plan *p, int dy, const float *const *hrows, uint8_t *out)
{
    const int n = p->dst_w * p->cn, taps = p->y.taps;
    const float *beta = p->y.weight + dy * taps;
    for (int i = 0; i < n; i += 8) { /* hrows are padded to 16 values */
        const int32x4_t lo = vcvtnq_s32_f32(vsum4_neon(beta, hrows, taps, i));
        const int32x4_t hi = vcvtnq_s32_f32(vsum4_neon(beta, hrows, taps, i + 4));
        const uint8x8_t v = vqmovn_u16(vcombine_u16(vqmovun_s32(lo), vqmovun_s32(hi)));
        if (n - i >= 8) {
            vst1_u8(out + i, v);
        } else {
            uint8_t tail[8];
            vst1_u8(tail, v);
            memcpy(out + i, tail, (size_t)(n - i));
        }
    }
}

static void rgb_to_gray_neon(const uint8_t *rgb, uint8_t *gray, size_t n)
{
    const size_t chunk = (size_t)1 << 20;
    for (size_t i = 0; i < n; i += chunk)
        row_rgb_gray_neon(rgb + 3 * i, NULL, (int)(n - i < chunk ? n - i : chunk), gray + i);
}

/* 16 indices per lookup of the 0/1 table; any 0 lane ends the scan. */
static int all_known_neon(const uint8_t *idx, size_t n, const uint8_t *known)
{
    uint8_t known01[256];
    for (int i = 0; i < 256; i++) known01[i] = known[i] != 0;
    fa_table256 t;
    table256_load(&t, known01);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint8x16_t all = table256_lookup(&t, vld1q_u8(idx + i));
        all = vandq_u8(all, table256_lookup(&t, vld1q_u8(idx + i + 16)));
        all = vandq_u8(all, table256_lookup(&t, vld1q_u8(idx + i + 32)));
        all = vandq_u8(all, table256_lookup(&t, vld1q_u8(idx + i + 48)));
        if (vminvq_u8(all) == 0) return 0;
    }
    for (; i < n; i++)
        if (!known01[idx[i]]) return 0;
    return 1;
}
