/* The replay memory's frame operations and sum tree: see fa_replay.h. Hand-written C (the
 * source, not Cython's output: that is fastatari/replay/_core.c, generated at build time and
 * never committed), built into fastatari.replay._core with its one Cython user. */
#include "fa_replay.h"

#include <string.h>

static int all_zero(const uint8_t *p, int64_t n)
{
    /* n bytes of zeros: the first byte is 0 and the rest equals the bytes before it */
    return n == 0 || (p[0] == 0 && (n == 1 || memcmp(p, p + 1, (size_t)(n - 1)) == 0));
}

int fa_frame_equal(const uint8_t *stack, fa_stack_shape s, int64_t j, const uint8_t *frame)
{
    const uint8_t *run = stack + j * s.inner;
    int64_t o;
    if (s.outer == 1)
        return frame ? memcmp(run, frame, (size_t)s.inner) == 0 : all_zero(run, s.inner);
    for (o = 0; o < s.outer; o++, run += s.k * s.inner) {
        if (frame ? memcmp(run, frame + o * s.inner, (size_t)s.inner) != 0
                  : !all_zero(run, s.inner))
            return 0;
    }
    return 1;
}

void fa_frame_store(const uint8_t *stack, fa_stack_shape s, int64_t j, uint8_t *frame)
{
    const uint8_t *run = stack + j * s.inner;
    int64_t o;
    if (s.inner == 1) { /* channels last, one channel a frame: a strided gather */
        for (o = 0; o < s.outer; o++)
            frame[o] = run[o * s.k];
        return;
    }
    for (o = 0; o < s.outer; o++, run += s.k * s.inner)
        memcpy(frame + o * s.inner, run, (size_t)s.inner);
}

/* A hint to start fetching the line at p (nothing where the compiler offers none). */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch((p), 0, 0)
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#include <xmmintrin.h>
#define PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_NTA)
#else
#define PREFETCH(p) ((void)(p))
#endif

enum { LINE = 64, HEAD = 16 * LINE, BODY = 256 * LINE, HEAD_AHEAD = 4 };

/* Sampled frames lie scattered over the memory, so a frame's first lines are a wait on memory
 * each, and copied one after another those waits add up (a third of a batch's gather). Before
 * frame f of `total` is copied, the rest of frame f + 1 is fetched (up to `body` bytes: past
 * BODY the hardware's own prefetch runs) and the head of frame f + HEAD_AHEAD, so several
 * frames are on their way at once. A macro, not a function: GCC takes a function of prefetches
 * alone for one without effects and drops its calls. */
#define PREFETCH_AHEAD(frames, total, f, body)                                                  \
    do {                                                                                        \
        int64_t at_;                                                                            \
        if ((f) + 1 < (total) && (frames)[(f) + 1])                                             \
            for (at_ = HEAD; at_ < (body); at_ += LINE)                                         \
                PREFETCH((frames)[(f) + 1] + at_);                                              \
        if ((f) + HEAD_AHEAD < (total) && (frames)[(f) + HEAD_AHEAD])                           \
            for (at_ = 0; at_ < HEAD && at_ < (body); at_ += LINE)                              \
                PREFETCH((frames)[(f) + HEAD_AHEAD] + at_);                                     \
    } while (0)

void fa_stacks_build(uint8_t *const *stacks, fa_stack_shape s, const uint8_t *const *frames,
                     int64_t count)
{
    int64_t c, j, o, at, total = count * s.k, size = s.outer * s.inner;
    int64_t body = size < BODY ? size : BODY;
    if (total > 0 && frames[0])
        for (at = 0; at < body; at += LINE)
            PREFETCH(frames[0] + at);
    for (c = 0; c < count; c++, frames += s.k, total -= s.k) {
        uint8_t *stack = stacks[c];
        if (s.outer == 1) { /* channels first: one copy per frame */
            for (j = 0; j < s.k; j++) {
                PREFETCH_AHEAD(frames, total, j, body);
                if (frames[j])
                    memcpy(stack + j * s.inner, frames[j], (size_t)s.inner);
                else
                    memset(stack + j * s.inner, 0, (size_t)s.inner);
            }
            continue;
        }
        for (j = 0; j < s.k; j++) /* channels last: the stack's frames are read together */
            PREFETCH_AHEAD(frames, total, j, body);
        for (o = 0; o < s.outer; o++) {
            uint8_t *run = stack + o * s.k * s.inner;
            for (j = 0; j < s.k; j++, run += s.inner) {
                if (!frames[j])
                    memset(run, 0, (size_t)s.inner);
                else if (s.inner == 1)
                    *run = frames[j][o];
                else
                    memcpy(run, frames[j] + o * s.inner, (size_t)s.inner);
            }
        }
    }
}

void fa_sumtree_set(double *tree, int64_t leaves, const int64_t *index, const double *value,
                    int64_t count)
{
    int64_t c, i;
    for (c = 0; c < count; c++) {
        i = leaves + index[c];
        tree[i] = value[c];
        for (i >>= 1; i >= 1; i >>= 1)
            tree[i] = tree[2 * i] + tree[2 * i + 1];
    }
}

void fa_sumtree_find(const double *tree, int64_t leaves, const double *mass, int64_t *index,
                     int64_t count)
{
    int64_t c, i;
    for (c = 0; c < count; c++) {
        double m = mass[c];
        i = 1;
        while (i < leaves) {
            /* left while the mass lies in it; right only into a subtree holding some */
            if (m < tree[2 * i] || tree[2 * i + 1] <= 0.0) {
                i = 2 * i;
            } else {
                m -= tree[2 * i];
                i = 2 * i + 1;
            }
        }
        index[c] = i - leaves;
    }
}
