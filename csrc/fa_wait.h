/* The vector workers' short wait for their next command (fa_wait.c).
 *
 * Not a kernel, and apart from fastatari.h: it is compiled into its own extension module,
 * fastatari.vector._wait, next to the worker that uses it.
 */
#ifndef FA_WAIT_H
#define FA_WAIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Watch *word until it differs from `seen` (1) or `max_ns` nanoseconds pass (0), yielding the
 * core between looks. UINT64_MAX (or any wait past the clock's range) waits without a limit. */
int fa_wait_change(const volatile int64_t *word, int64_t seen, uint64_t max_ns);

#ifdef __cplusplus
}
#endif
#endif
