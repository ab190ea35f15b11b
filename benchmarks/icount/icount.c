/* Instructions per fused step on AArch64, counted under qemu (issue 43): STEPS steps of the
 * Atari pipeline (two 210x160 palette frames -> gray LUT -> max -> 84x84 INTER_AREA) on the SIMD
 * path named by argv[1]. Random frames share no rows: the worst case (real screens repeat rows,
 * which the pass computes once). */
#include <stdio.h>
#include <stdlib.h>

#include "fastatari.h"

int main(int argc, char **argv)
{
    if (argc != 3 || fa_simd_select(argv[1]) != 0) {
        fprintf(stderr, "usage: icount PATH STEPS (PATH available here)\n");
        return 2;
    }
    const int steps = atoi(argv[2]);
    static uint8_t a[210 * 160], b[210 * 160], lut[256], out[84 * 84];
    unsigned s = 1;
    for (int i = 0; i < 210 * 160; i++) {
        s = s * 1103515245u + 12345u;
        a[i] = (uint8_t)(s >> 24);
        b[i] = (uint8_t)(s >> 16);
    }
    for (int i = 0; i < 256; i++) lut[i] = (uint8_t)(i * 7);
    fa_plan plan;
    if (fa_plan_init(&plan, 210, 160, 84, 84, 1) != FA_OK) return 1;
    const fa_source src = {FA_SRC_PALETTE, a, b, 160, lut};
    for (int t = 0; t < steps; t++) fa_process(&plan, &src, out, 84, 1);
    fa_plan_free(&plan);
    return out[0] == 255 && out[1] == 255; /* keeps the work observable */
}
