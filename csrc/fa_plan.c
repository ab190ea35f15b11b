/* Resize plans: OpenCV's INTER_AREA tap tables, rebuilt with the same double arithmetic
 * (computeResizeAreaTab in modules/imgproc/src/resize.cpp), then laid out for our kernels. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastatari.h"

#define FA_MAX_TAPS_PER_BLOCK 4

/* Count and fill the taps of one axis exactly as computeResizeAreaTab does. `out_index` and
 * `out_weight` may be NULL (counting only). Returns the maximum number of taps of any dst index. */
static int area_taps(int ssize, int dsize, double scale, int taps, int32_t *out_index,
                     float *out_weight, int32_t *idx, float *w)
{
    int max_taps = 0;
    for (int d = 0; d < dsize; d++) {
        double fs1 = d * scale;
        double fs2 = fs1 + scale;
        double cell = fmin(scale, ssize - fs1);
        int s1 = (int)ceil(fs1), s2 = (int)floor(fs2);
        int n = 0;
        if (s2 > ssize - 1) s2 = ssize - 1;
        if (s1 > s2) s1 = s2;
        if (s1 - fs1 > 1e-3) {
            idx[n] = s1 - 1;
            w[n++] = (float)((s1 - fs1) / cell);
        }
        for (int s = s1; s < s2; s++) {
            idx[n] = s;
            w[n++] = (float)(1.0 / cell);
        }
        if (fs2 - s2 > 1e-3) {
            idx[n] = s2;
            w[n++] = (float)(fmin(fmin(fs2 - s2, 1.0), cell) / cell);
        }
        if (n > max_taps) max_taps = n;
        if (out_index) {
            for (int k = 0; k < taps; k++) {
                int j = k < n ? k : n - 1; /* pad: last real index, weight 0 */
                out_index[d * taps + k] = idx[j];
                out_weight[d * taps + k] = k < n ? w[k] : 0.0f;
            }
        }
    }
    return max_taps;
}

static int axis_init(fa_axis *axis, int ssize, int dsize)
{
    /* OpenCV: inv_scale = dsize / ssize, scale = 1 / inv_scale, both double. */
    double scale = 1.0 / ((double)dsize / ssize);
    /* one destination index covers at most ssize + 1 source indices */
    int32_t *idx = malloc(sizeof(int32_t) * (ssize + 2));
    float *w = malloc(sizeof(float) * (ssize + 2));
    if (!idx || !w) {
        free(idx);
        free(w);
        return FA_ENOMEM;
    }
    int taps = area_taps(ssize, dsize, scale, 0, NULL, NULL, idx, w);
    axis->src_len = ssize;
    axis->dst_len = dsize;
    axis->taps = taps;
    axis->index = malloc(sizeof(int32_t) * dsize * taps);
    axis->weight = malloc(sizeof(float) * dsize * taps);
    int err = FA_ENOMEM;
    if (axis->index && axis->weight) {
        area_taps(ssize, dsize, scale, taps, axis->index, axis->weight, idx, w);
        err = FA_OK;
    }
    free(idx);
    free(w);
    return err;
}

/* Lay the horizontal taps out per block of 16 output values (x * cn + c) for byte permutes:
 * possible when a block needs at most 4 taps and its source bytes span at most 64. Tap k of
 * lane j is permuted into byte 4 * j, the low byte of a 32-bit lane, ready for conversion. */
static int blocks_init(fa_plan *p)
{
    int cn = p->cn, taps = p->x.taps, nout = p->dst_w * cn, row_len = p->src_w * cn;
    p->nblocks = (nout + 15) / 16;
    p->blocks_ok = 0;
    if (taps > FA_MAX_TAPS_PER_BLOCK) return FA_OK;
    p->block_base = malloc(sizeof(int32_t) * p->nblocks);
    p->block_mask = malloc(sizeof(uint64_t) * p->nblocks);
    p->block_perm = calloc((size_t)p->nblocks * taps * 64, 1);
    p->block_weight = calloc((size_t)p->nblocks * taps * 16, sizeof(float));
    if (!p->block_base || !p->block_mask || !p->block_perm || !p->block_weight) return FA_ENOMEM;
    for (int b = 0; b < p->nblocks; b++) {
        int first = b * 16, base = p->x.index[(first / cn) * taps] * cn, inside = row_len - base;
        p->block_base[b] = base;
        p->block_mask[b] = inside >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << inside) - 1);
        for (int j = 0; j < 16; j++) {
            int o = first + j;
            if (o >= nout) break; /* spare lanes: byte 0 of the window, weight 0 */
            int x = o / cn, c = o % cn;
            for (int k = 0; k < taps; k++) {
                int byte = p->x.index[x * taps + k] * cn + c - base;
                if (byte < 0 || byte >= 64) return FA_OK; /* does not fit: scalar pass */
                p->block_perm[((size_t)b * taps + k) * 64 + 4 * j] = (uint8_t)byte;
                p->block_weight[((size_t)b * taps + k) * 16 + j] = p->x.weight[x * taps + k];
            }
        }
    }
    p->blocks_ok = 1;
    return FA_OK;
}

/* Blocks of 8 outputs for AVX2: each half (4 outputs) reads a 16-byte window inside the row. */
static int blocks8_init(fa_plan *p)
{
    int cn = p->cn, taps = p->x.taps, nout = p->dst_w * cn, row_len = p->src_w * cn;
    p->nblocks8 = (nout + 7) / 8;
    p->blocks8_ok = 0;
    if (row_len < 16) return FA_OK;
    p->block8_base = malloc(sizeof(int32_t) * 2 * p->nblocks8);
    p->block8_perm = malloc((size_t)p->nblocks8 * taps * 32);
    p->block8_weight = calloc((size_t)p->nblocks8 * taps * 8, sizeof(float));
    if (!p->block8_base || !p->block8_perm || !p->block8_weight) return FA_ENOMEM;
    memset(p->block8_perm, 0x80, (size_t)p->nblocks8 * taps * 32);
    for (int h = 0; h < 2 * p->nblocks8; h++) {
        int first = 4 * h;
        if (first >= nout) {
            p->block8_base[h] = 0;
            continue;
        }
        int base = p->x.index[(first / cn) * taps] * cn;
        if (base > row_len - 16) base = row_len - 16; /* keep the 16-byte load inside the row */
        p->block8_base[h] = base;
        for (int j = 0; j < 4 && first + j < nout; j++) {
            int o = first + j, x = o / cn, c = o % cn, lane = 4 * (h % 2) + j, b = h / 2;
            for (int k = 0; k < taps; k++) {
                int byte = p->x.index[x * taps + k] * cn + c - base;
                if (byte < 0 || byte >= 16) return FA_OK; /* does not fit: scalar pass */
                p->block8_perm[((size_t)b * taps + k) * 32 + 16 * (h % 2) + 4 * j] = (uint8_t)byte;
                p->block8_weight[((size_t)b * taps + k) * 8 + lane] = p->x.weight[x * taps + k];
            }
        }
    }
    p->blocks8_ok = 1;
    return FA_OK;
}

int fa_plan_init(fa_plan *p, int src_h, int src_w, int dst_h, int dst_w, int cn)
{
    memset(p, 0, sizeof(*p));
    if (src_h <= 0 || src_w <= 0 || dst_h <= 0 || dst_w <= 0 || cn <= 0) return FA_ESIZE;
    if (dst_h > src_h || dst_w > src_w) return FA_EUPSCALE;
    p->src_h = src_h;
    p->src_w = src_w;
    p->dst_h = dst_h;
    p->dst_w = dst_w;
    p->cn = cn;
    if (src_h == dst_h && src_w == dst_w) {
        p->kind = FA_RESIZE_COPY;
        return FA_OK;
    }
    /* OpenCV takes its integer "area fast" path when both scales are integers. */
    double sx = 1.0 / ((double)dst_w / src_w), sy = 1.0 / ((double)dst_h / src_h);
    int ix = (int)lrint(sx), iy = (int)lrint(sy);
    if (fabs(sx - ix) < DBL_EPSILON && fabs(sy - iy) < DBL_EPSILON) {
        p->kind = FA_RESIZE_AREA_INT;
        p->kx = ix;
        p->ky = iy;
        return FA_OK;
    }
    p->kind = FA_RESIZE_AREA;
    int err = axis_init(&p->x, src_w, dst_w);
    if (err == FA_OK) err = axis_init(&p->y, src_h, dst_h);
    if (err == FA_OK) err = blocks_init(p);
    if (err == FA_OK) err = blocks8_init(p);
    if (err != FA_OK) fa_plan_free(p);
    return err;
}

void fa_plan_free(fa_plan *p)
{
    free(p->x.index);
    free(p->x.weight);
    free(p->y.index);
    free(p->y.weight);
    free(p->block_base);
    free(p->block_mask);
    free(p->block_perm);
    free(p->block_weight);
    free(p->block8_base);
    free(p->block8_perm);
    free(p->block8_weight);
    memset(p, 0, sizeof(*p));
}
