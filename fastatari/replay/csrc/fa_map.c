/* Files mapped into memory (fa_map.h): POSIX mmap, or Windows' file mappings. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* mmap and msync under -std=c99 */
#endif

#include "fa_map.h"

#ifdef _WIN32
#include <io.h>
#include <windows.h>

void *fa_map(int fd, int64_t nbytes, int writable) {
    HANDLE file = (HANDLE)_get_osfhandle(fd);
    HANDLE mapping;
    void *address;
    if (file == INVALID_HANDLE_VALUE || nbytes <= 0) {
        return NULL;
    }
    mapping = CreateFileMappingW(file, NULL, writable ? PAGE_READWRITE : PAGE_READONLY,
                                 (DWORD)((uint64_t)nbytes >> 32), (DWORD)(uint64_t)nbytes, NULL);
    if (mapping == NULL) {
        return NULL;
    }
    address = MapViewOfFile(mapping, writable ? FILE_MAP_WRITE : FILE_MAP_READ, 0, 0,
                            (SIZE_T)nbytes);
    CloseHandle(mapping); /* the view keeps the mapping (and the file) */
    return address;
}

int fa_unmap(void *address, int64_t nbytes) {
    (void)nbytes;
    return UnmapViewOfFile(address) ? 0 : -1;
}

int fa_map_flush(void *address, int64_t nbytes) {
    return FlushViewOfFile(address, (SIZE_T)nbytes) ? 0 : -1;
}

#else
#include <stddef.h>
#include <sys/mman.h>

void *fa_map(int fd, int64_t nbytes, int writable) {
    void *address;
    if (nbytes <= 0) {
        return NULL;
    }
    address = mmap(NULL, (size_t)nbytes, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                   MAP_SHARED, fd, 0);
    return address == MAP_FAILED ? NULL : address;
}

int fa_unmap(void *address, int64_t nbytes) {
    return munmap(address, (size_t)nbytes);
}

int fa_map_flush(void *address, int64_t nbytes) {
    return msync(address, (size_t)nbytes, MS_SYNC);
}
#endif
