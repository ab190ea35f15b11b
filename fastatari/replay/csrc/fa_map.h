/* Files mapped into memory for the replay memory's frames on disk.
 *
 * A mapping does not keep the file descriptor it was made from (the caller closes it at
 * once): a memory of millions of frames maps thousands of chunk files, far more than a
 * process may hold open (256 by default on macOS, 1,024 on most Linux systems), where
 * Python's mmap would hold a descriptor for each.
 */
#ifndef FA_MAP_H
#define FA_MAP_H

#include <stdint.h>

/* the first `nbytes` of the open file `fd` (at least that long), shared with the file,
 * writable or read-only; NULL on failure (errno set on POSIX) */
void *fa_map(int fd, int64_t nbytes, int writable);

/* 0, or -1 on failure */
int fa_unmap(void *address, int64_t nbytes);

/* writes what was changed through the mapping to the file; 0, or -1 on failure */
int fa_map_flush(void *address, int64_t nbytes);

#endif
