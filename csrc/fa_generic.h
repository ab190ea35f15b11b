/* Portable row kernels, written so compilers can vectorise them. fa_kernels.c includes this file
 * once per target: FA_NAME(x) names the copy and FA_TARGET carries its ISA attribute, so ISA
 * flags only reach code selected at run time. */
#include <math.h>

#include "fa_impl.h"

/* The gray weights of cv::cvtColor(COLOR_RGB2GRAY) for uint8 since OpenCV 4.0: 15-bit fixed point
 * (modules/imgproc/src/color_rgb.simd.hpp). */
#define FA_GRAY(r, g, b) ((uint8_t)((9798u * (r) + 19235u * (g) + 3735u * (b) + 16384u) >> 15))

FA_TARGET static void FA_NAME(row_palette)(const uint8_t *a, const uint8_t *b, const uint8_t *lut,
                                           int cn, int n, uint8_t *out)
{
    if (cn == 1) {
        /* byte loads: a gather would be slower than two loads per pixel */
        if (b) {
            for (int x = 0; x < n; x++) {
                uint8_t va = lut[a[x]], vb = lut[b[x]];
                out[x] = va > vb ? va : vb;
            }
        } else {
            for (int x = 0; x < n; x++) out[x] = lut[a[x]];
        }
        return;
    }
    for (int x = 0; x < n; x++) {
        const uint8_t *pa = lut + a[x] * cn;
        const uint8_t *pb = b ? lut + b[x] * cn : pa;
        for (int c = 0; c < cn; c++) out[x * cn + c] = pa[c] > pb[c] ? pa[c] : pb[c];
    }
}

FA_TARGET static void FA_NAME(row_rgb_gray)(const uint8_t *a, const uint8_t *b, int n, uint8_t *out)
{
    if (b) {
        for (int x = 0; x < n; x++) {
            uint8_t ga = FA_GRAY(a[3 * x], a[3 * x + 1], a[3 * x + 2]);
            uint8_t gb = FA_GRAY(b[3 * x], b[3 * x + 1], b[3 * x + 2]);
            out[x] = ga > gb ? ga : gb;
        }
    } else {
        for (int x = 0; x < n; x++) out[x] = FA_GRAY(a[3 * x], a[3 * x + 1], a[3 * x + 2]);
    }
}

FA_TARGET static void FA_NAME(row_max)(const uint8_t *a, const uint8_t *b, int n, uint8_t *out)
{
    for (int i = 0; i < n; i++) out[i] = a[i] > b[i] ? a[i] : b[i];
}

/* OpenCV's horizontal accumulation, ResizeArea_Invoker: buf[d] += S[s] * alpha, tap by tap. */
FA_TARGET static void FA_NAME(hpass)(const fa_plan *p, const uint8_t *row, float *hrow)
{
    const int cn = p->cn, taps = p->x.taps, w = p->dst_w;
    const int32_t *index = p->x.index;
    const float *weight = p->x.weight;
    for (int d = 0; d < w; d++) {
        for (int c = 0; c < cn; c++) {
            float acc = 0.0f;
            for (int k = 0; k < taps; k++)
                acc += (float)row[index[d * taps + k] * cn + c] * weight[d * taps + k];
            hrow[d * cn + c] = acc;
        }
    }
}

/* OpenCV's vertical accumulation: sum = beta * buf for the first tap, then sum += beta * buf;
 * saturate_cast<uchar> rounds half to even. */
FA_TARGET static void FA_NAME(vpass)(const fa_plan *p, int dy, const float *const *hrows,
                                     uint8_t *out)
{
    const int n = p->dst_w * p->cn, taps = p->y.taps;
    const float *beta = p->y.weight + dy * taps;
    for (int i = 0; i < n; i++) {
        float acc = beta[0] * hrows[0][i];
        for (int k = 1; k < taps; k++) acc += beta[k] * hrows[k][i];
        long v = lrintf(acc);
        out[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

FA_TARGET static void FA_NAME(rgb_to_gray)(const uint8_t *rgb, uint8_t *gray, size_t n)
{
    for (size_t i = 0; i < n; i++) gray[i] = FA_GRAY(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
}

FA_TARGET static int FA_NAME(all_known)(const uint8_t *idx, size_t n, const uint8_t *known)
{
    /* byte loads, 8 pixels per test: a gather would be slower */
    uint8_t known01[256];
    for (int i = 0; i < 256; i++) known01[i] = known[i] != 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        unsigned all = known01[idx[i]] & known01[idx[i + 1]] & known01[idx[i + 2]] &
                       known01[idx[i + 3]] & known01[idx[i + 4]] & known01[idx[i + 5]] &
                       known01[idx[i + 6]] & known01[idx[i + 7]];
        if (!all) return 0;
    }
    for (; i < n; i++)
        if (!known01[idx[i]]) return 0;
    return 1;
}
