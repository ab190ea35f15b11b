/* The vector workers' short wait for their next command.
 *
 * Waking a process that sleeps in read(2) costs tens of microseconds on a virtual machine
 * (an inter-processor interrupt through the hypervisor), twice per agent step. A worker that
 * has just answered watches a shared counter for a little while instead, yielding its core to
 * anyone runnable; the trainer bumps the counter after it writes the command to the pipe.
 */
/* clock_gettime under -std=c99 on glibc; macOS declares it only without _POSIX_C_SOURCE */
#if !defined(_WIN32) && !defined(__APPLE__) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 199309L
#endif

#include "fa_wait.h"

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

static uint64_t now_ns(void)
{
    LARGE_INTEGER frequency, count;
    QueryPerformanceFrequency(&frequency);
    QueryPerformanceCounter(&count);
    return (uint64_t)((double)count.QuadPart * (1e9 / (double)frequency.QuadPart));
}

static void yield_core(void) { SwitchToThread(); }
#else
#include <sched.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void yield_core(void) { sched_yield(); }
#endif

int fa_wait_change(const volatile int64_t *word, int64_t seen, uint64_t max_ns)
{
    const uint64_t start = now_ns();
    /* saturate: a wait longer than the clock's range has no deadline rather than a past one */
    const uint64_t deadline = max_ns > UINT64_MAX - start ? UINT64_MAX : start + max_ns;
    while (*word == seen) {
        if (now_ns() >= deadline)
            return 0;
        yield_core();
    }
    return 1;
}
