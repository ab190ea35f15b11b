/* The vector env's hot path through shared memory: see fa_wait.h. Hand-written C (the source,
 * not Cython's output: that is fastatari/vector/_wait.c, generated at build time and never
 * committed).
 *
 * Ordering. Every shared word is read and written with atomics. Sleeping and waking follow
 * the store-then-load pattern on both sides (sequentially consistent): a worker counts itself
 * in `sleepers` before it re-reads `gen`, the trainer bumps `gen` before it reads `sleepers`;
 * the trainer sets `target` and `waiting` before it re-reads `completed`, a worker bumps
 * `completed` before it reads `waiting` and `target`. Either side then sees the other, so no
 * wake is lost. A ticket is stored (release) before its completion is counted, so every env
 * counted has its ticket visible.
 */
/* clock_gettime and nanosleep under -std=c99 on glibc; macOS declares them only without
 * _POSIX_C_SOURCE */
#if !defined(_WIN32) && !defined(__APPLE__) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif

#include "fa_wait.h"

#include <limits.h>

/* Windows, under every compiler (MSVC, mingw-w64, clang): the clock, the yield and the sleep
 * below are Win32 calls (QueryPerformanceCounter, SwitchToThread, Sleep); MSVC's atomics are its
 * Interlocked* functions, the others use the GCC builtins. */
#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#endif

#if defined(_MSC_VER)
#include <intrin.h>

static uint32_t load32(const uint32_t *p) { return (uint32_t)InterlockedOr((volatile LONG *)p, 0); }
static int64_t load64(const int64_t *p) { return InterlockedOr64((volatile LONG64 *)p, 0); }
static void store64(int64_t *p, int64_t v) { InterlockedExchange64((volatile LONG64 *)p, v); }
static uint32_t add32(uint32_t *p, int32_t v) { return (uint32_t)InterlockedExchangeAdd((volatile LONG *)p, v); }
static int64_t add64(int64_t *p, int64_t v) { return InterlockedExchangeAdd64((volatile LONG64 *)p, v); }
static uint8_t exchange8(uint8_t *p, uint8_t v) { return (uint8_t)InterlockedExchange8((volatile char *)p, (char)v); }
void fa_release_fence(void) { MemoryBarrier(); }
static void relax(void) { YieldProcessor(); }
#else
#define SC __ATOMIC_SEQ_CST
static uint32_t load32(const uint32_t *p) { return __atomic_load_n(p, SC); }
static int64_t load64(const int64_t *p) { return __atomic_load_n(p, SC); }
static void store64(int64_t *p, int64_t v) { __atomic_store_n(p, v, SC); }
static uint32_t add32(uint32_t *p, int32_t v) { return __atomic_fetch_add(p, (uint32_t)v, SC); }
static int64_t add64(int64_t *p, int64_t v) { return __atomic_fetch_add(p, v, SC); }
static uint8_t exchange8(uint8_t *p, uint8_t v) { return __atomic_exchange_n(p, v, __ATOMIC_ACQUIRE); }
void fa_release_fence(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
#if defined(__x86_64__) || defined(__i386__)
static void relax(void) { __builtin_ia32_pause(); }
#elif defined(__aarch64__)
static void relax(void) { __asm__ __volatile__("yield"); }
#else
static void relax(void) { }
#endif
#endif

#if defined(_WIN32)
static uint64_t now_ns(void)
{
    LARGE_INTEGER frequency, count;
    QueryPerformanceFrequency(&frequency);
    QueryPerformanceCounter(&count);
    return (uint64_t)((double)count.QuadPart * (1e9 / (double)frequency.QuadPart));
}

static void yield_core(void) { SwitchToThread(); }
static void nap(void) { Sleep(0); }
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

static void nap(void)
{
    struct timespec ts = {0, 50000}; /* 50 µs */
    nanosleep(&ts, NULL);
}
#endif

double fa_seconds(void) { return (double)now_ns() * 1e-9; }

#if defined(__linux__)
#include <errno.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

int fa_fast_waits(void) { return 1; }

static void futex_wait(uint32_t *word, uint32_t seen, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    /* shared (not FUTEX_PRIVATE_FLAG): the word lives in memory mapped by several processes */
    syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* Waking a sleeping task costs its waker about a microsecond of kernel time: the trainer
 * wakes FANOUT workers, and each woken worker wakes FANOUT more while some sleep, so the
 * trainer pays the same at 2 workers and at 256, and the last worker is woken after
 * log2(sleepers) hops. */
#define FANOUT 2

static void futex_wake_some(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, FANOUT, NULL, NULL, 0);
}
#else
int fa_fast_waits(void) { return 0; }
#endif

/* a deadline in ns from `start`, saturated: a wait past the clock's range has none */
static uint64_t deadline_of(uint64_t start, double seconds)
{
    double ns = seconds * 1e9;
    if (seconds < 0 || ns >= (double)(UINT64_MAX - start))
        return UINT64_MAX;
    return start + (uint64_t)ns;
}

/* -- trainer ------------------------------------------------------------------------------- */
void fa_publish(fa_control *c)
{
    add32(&c->gen, 1);
#if defined(__linux__)
    if (load32(&c->sleepers))
        futex_wake_some(&c->gen);
#endif
}

void fa_set_output(fa_control *c, int32_t slot) { *(volatile int32_t *)&c->output = slot; }

int32_t fa_output(const fa_control *c) { return *(const volatile int32_t *)&c->output; }

int64_t fa_completed(const fa_control *c) { return load64(&c->completed); }

uint32_t fa_generation(const fa_control *c) { return load32(&c->gen); }

int fa_wait_done(fa_control *c, int64_t target, int epfd, int evfd, double spin_s,
                 double timeout_s)
{
    const uint64_t start = now_ns();
    const uint64_t spin_end = deadline_of(start, spin_s);
    const uint64_t deadline = deadline_of(start, timeout_s);
    unsigned looks = 0;
    while (load64(&c->completed) < target) {
        if ((++looks & 63u) == 0 && now_ns() >= spin_end)
            goto sleep;
        relax();
    }
    return FA_DONE;
sleep:
#if defined(__linux__)
    if (epfd >= 0) {
        struct epoll_event events[16];
        store64(&c->target, target);
        store64(&c->waiting, 1);
        for (;;) {
            int i, n, ms, event = 0;
            uint64_t now;
            if (load64(&c->completed) >= target) {
                store64(&c->waiting, 0);
                return FA_DONE;
            }
            now = now_ns();
            if (deadline == UINT64_MAX)
                ms = -1;
            else if (now >= deadline)
                ms = 0;
            else
                ms = (deadline - now) / 1000000u >= INT_MAX ? INT_MAX
                     : (int)((deadline - now + 999999u) / 1000000u);
            n = epoll_wait(epfd, events, 16, ms);
            if (n < 0) {
                store64(&c->waiting, 0);
                return errno == EINTR ? FA_INTERRUPTED : FA_FAILED;
            }
            for (i = 0; i < n; i++) {
                if (events[i].data.fd == evfd) {
                    uint64_t drained;
                    if (read(evfd, &drained, sizeof drained) < 0) { /* already drained */ }
                } else {
                    event = 1;
                }
            }
            if (load64(&c->completed) >= target) {
                store64(&c->waiting, 0);
                return FA_DONE;
            }
            if (event) {
                store64(&c->waiting, 0);
                return FA_EVENT;
            }
            if (n == 0 && now_ns() >= deadline) {
                store64(&c->waiting, 0);
                return FA_TIMEOUT;
            }
        }
    }
#else
    (void)epfd;
    (void)evfd;
#endif
    while (load64(&c->completed) < target) {
        if (now_ns() >= deadline)
            return FA_TIMEOUT;
        nap();
    }
    return FA_DONE;
}

/* -- worker -------------------------------------------------------------------------------- */
int fa_wait_generation(fa_control *c, uint32_t seen, double spin_s, double timeout_s)
{
    const uint64_t start = now_ns();
    const uint64_t spin_end = deadline_of(start, spin_s);
    const uint64_t deadline = deadline_of(start, timeout_s);
    int changed = 0;
    while (load32(&c->gen) == seen) {
        if (now_ns() >= spin_end)
            goto sleep;
        yield_core(); /* a worker spins on a core the trainer or another worker may need */
    }
    return 1;
sleep:
#if defined(__linux__)
    add32(&c->sleepers, 1);
    for (;;) {
        uint64_t now;
        if (load32(&c->gen) != seen) {
            changed = 1;
            break;
        }
        now = now_ns();
        if (now >= deadline)
            break;
        futex_wait(&c->gen, seen, deadline - now);
    }
    add32(&c->sleepers, -1);
    if (changed && load32(&c->sleepers))
        futex_wake_some(&c->gen); /* pass the wake on */
#else
    for (;;) {
        if (load32(&c->gen) != seen) {
            changed = 1;
            break;
        }
        if (now_ns() >= deadline)
            break;
        nap();
    }
#endif
    return changed;
}

uint8_t fa_claim(uint8_t *op) { return exchange8(op, 0); }

int64_t fa_take_ticket(fa_control *c, int64_t *ticket)
{
    /* (a death between the two leaves a gap unseen: one instruction's window, against the
     * row's write between take and completion) */
    int64_t taken = add64(&c->issued, 1);
    store64(ticket, FA_HELD(taken));
    return taken;
}

int64_t fa_issued(const fa_control *c) { return load64(&c->issued); }

int64_t fa_load64(const int64_t *p) { return load64(p); }

void fa_store64(int64_t *p, int64_t v) { store64(p, v); }

void fa_complete(fa_control *c, int64_t *ticket, int evfd)
{
    /* nothing written between take and completion: no ticket to hold */
    fa_complete_as(c, ticket, add64(&c->issued, 1), evfd);
}

void fa_complete_as(fa_control *c, int64_t *ticket, int64_t taken, int evfd)
{
    int64_t count;
    store64(ticket, taken);
    count = add64(&c->completed, 1) + 1;
#if defined(__linux__)
    if (evfd >= 0 && load64(&c->waiting) && count >= load64(&c->target)) {
        uint64_t one = 1;
        if (write(evfd, &one, sizeof one) < 0) { /* the counter is full: already woken */ }
    }
#else
    (void)evfd;
    (void)count;
#endif
}
