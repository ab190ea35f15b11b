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

/* a whole stack from its k frames (NULL: zeros) */
void fa_stack_build(uint8_t *stack, fa_stack_shape s, const uint8_t *const *frames);

#endif
