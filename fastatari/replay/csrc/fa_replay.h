/* Frames of observation stacks, for the replay memory that stores each frame once.
 *
 * A stack of k frames is viewed as (outer, k, inner) bytes: frame j is `outer` runs of `inner`
 * bytes, `k * inner` apart (channels first: outer = 1, one run; channels last: one run per
 * pixel). A stored frame is its runs back to back, `outer * inner` bytes. A NULL frame is the
 * zero frame (padding), never stored.
 */
#ifndef FA_REPLAY_H
#define FA_REPLAY_H

#include <stdint.h>

typedef struct {
    int64_t outer, k, inner;
} fa_stack_shape;

/* whether frame j of `stack` equals `frame` (NULL: all zeros) */
int fa_frame_equal(const uint8_t *stack, fa_stack_shape s, int64_t j, const uint8_t *frame);

/* frame j of `stack` into `frame` (outer * inner bytes) */
void fa_frame_store(const uint8_t *stack, fa_stack_shape s, int64_t j, uint8_t *frame);

/* `count` whole stacks: stack c from frames[c * k .. c * k + k - 1] (NULL: zeros) into
 * stacks[c] */
void fa_stacks_build(uint8_t *const *stacks, fa_stack_shape s, const uint8_t *const *frames,
                     int64_t count);

/* A sum tree over `leaves` (a power of two) priorities: tree[1] is the total, node i sums
 * tree[2i] and tree[2i+1], leaf j is tree[leaves + j]; tree[0] is unused. */
void fa_sumtree_set(double *tree, int64_t leaves, const int64_t *index, const double *value,
                    int64_t count);

/* for each of `count` masses in [0, total), the leaf where the running sum passes it (never
 * a leaf of priority 0) */
void fa_sumtree_find(const double *tree, int64_t leaves, const double *mass, int64_t *index,
                     int64_t count);

#endif
