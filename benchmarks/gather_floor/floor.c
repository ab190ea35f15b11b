/* The memory floor of a prioritized sample(32) (issue 32): what copying its stacks alone costs,
 * whatever computes them. 32 transitions drawn uniformly from a store of 20,000 84x84 frames
 * (the size of the side-by-side run); each copies its observation (frames t-3..t) and its
 * next observation n_step = 3 later (frames t..t+3) with memcpy, as fastatari's frame store
 * lays a stream's frames out (consecutive in memory). "cold": a 64 MiB write between samples
 * evicts the caches (a training step between samples does the like); "warm": back to back,
 * as the side-by-side run samples. Prints the median microseconds of each, over R samples.
 * usage: ./floor [R] */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { FRAME = 84 * 84, FRAMES = 20000, BATCH = 32, STACK = 4, N_STEP = 3, FLUSH = 64 << 20 };

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int r, i, mode, repeats = argc > 1 ? atoi(argv[1]) : 500;
    uint8_t *store = malloc((size_t)FRAMES * FRAME), *flush = malloc(FLUSH);
    uint8_t *obs = malloc((size_t)BATCH * STACK * FRAME), *next = malloc((size_t)BATCH * STACK * FRAME);
    double *times[2];
    if (!store || !flush || !obs || !next || repeats < 1)
        return 1;
    times[0] = malloc(repeats * sizeof(double));
    times[1] = malloc(repeats * sizeof(double));
    memset(store, 7, (size_t)FRAMES * FRAME);
    memset(obs, 1, (size_t)BATCH * STACK * FRAME);
    memset(next, 1, (size_t)BATCH * STACK * FRAME);
    srand(1);
    for (r = 0; r < repeats; r++) {
        for (mode = 0; mode < 2; mode++) {
            int t[BATCH];
            double start;
            if (mode == 0)
                memset(flush, r, FLUSH);
            for (i = 0; i < BATCH; i++)
                t[i] = STACK - 1 + rand() % (FRAMES - STACK - N_STEP);
            start = now_us();
            for (i = 0; i < BATCH; i++) {
                const uint8_t *first = store + (size_t)(t[i] - (STACK - 1)) * FRAME;
                memcpy(obs + (size_t)i * STACK * FRAME, first, STACK * FRAME);
                memcpy(next + (size_t)i * STACK * FRAME, first + N_STEP * FRAME, STACK * FRAME);
            }
            times[mode][r] = now_us() - start;
        }
    }
    for (mode = 0; mode < 2; mode++)
        qsort(times[mode], repeats, sizeof(double), by_value);
    printf("cold_us=%.1f warm_us=%.1f checksum=%d\n", times[0][repeats / 2],
           times[1][repeats / 2], obs[FRAME] + next[FRAME]);
    return 0;
}
