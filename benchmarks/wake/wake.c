/* One wake's cost to the waiting trainer: epoll{eventfd + P worker sockets/pipes} vs futex.
 * usage: ./wake VARIANT P R [pipe]   VARIANT: A = spin 5us, epoll_wait, read(eventfd) (today)
 *                                             B = spin 5us, FUTEX_WAIT on completed's low word
 *                                             C = A with EPOLLET on the eventfd and no read
 * P extra fds in the epoll set (A, C): AF_UNIX socketpairs like mp.Pipe(), or pipes with "pipe";
 * the worker holds the other ends open and never writes them. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct { /* as fa_control, plus the worker's results */
    uint32_t gen; uint32_t pad0[15];
    uint32_t sleepers; uint32_t pad1[15];
    int64_t issued; int64_t pad2[7];
    int64_t completed; int64_t pad3[7];
    int64_t target; int64_t waiting; int64_t pad4[6];
    double w_wake_ns, w_wake_cpu_ns, w_cpu_ns; int64_t w_wakes;
} ctl;

#define SC __ATOMIC_SEQ_CST
static uint32_t load32(const uint32_t *p) { return __atomic_load_n(p, SC); }
static int64_t load64(const int64_t *p) { return __atomic_load_n(p, SC); }
static void store64(int64_t *p, int64_t v) { __atomic_store_n(p, v, SC); }
static uint32_t add32(uint32_t *p, int32_t v) { return __atomic_fetch_add(p, (uint32_t)v, SC); }
static int64_t add64(int64_t *p, int64_t v) { return __atomic_fetch_add(p, v, SC); }
static uint64_t ns_of(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static uint64_t now_ns(void) { return ns_of(CLOCK_MONOTONIC); }
static uint64_t cpu_ns(void) { return ns_of(CLOCK_THREAD_CPUTIME_ID); }
static long futex(void *w, int op, uint32_t v) { return syscall(SYS_futex, w, op, v, NULL, NULL, 0); }
static uint32_t *lo32(int64_t *p) { return (uint32_t *)p; } /* little-endian low word */

static char variant;
static int evfd = -1, epfd = -1;

/* fa_publish / fa_wait_generation, unchanged in every variant (worker spin 500 us, FANOUT 2) */
static void publish(ctl *c) { add32(&c->gen, 1); if (load32(&c->sleepers)) futex(&c->gen, FUTEX_WAKE, 2); }
static void wait_gen(ctl *c, uint32_t seen)
{
    uint64_t end = now_ns() + 500000;
    while (load32(&c->gen) == seen) {
        if (now_ns() >= end) goto sleep;
        sched_yield();
    }
    return;
sleep:
    add32(&c->sleepers, 1);
    while (load32(&c->gen) == seen) futex(&c->gen, FUTEX_WAIT, seen);
    add32(&c->sleepers, -1);
    if (load32(&c->sleepers)) futex(&c->gen, FUTEX_WAKE, 2);
}

/* the trainer's wait: fa_wait_done's spin, then the variant's sleep (no timeout) */
static int slept;
static void wait_done(ctl *c, int64_t target)
{
    uint64_t spin_end = now_ns() + 5000;
    unsigned looks = 0;
    while (load64(&c->completed) < target) {
        if ((++looks & 63u) == 0 && now_ns() >= spin_end) goto sleep;
        __builtin_ia32_pause();
    }
    return;
sleep:
    slept++;
    store64(&c->target, target);
    store64(&c->waiting, 1);
    if (variant == 'B') {
        for (;;) {
            int64_t v = load64(&c->completed);
            if (v >= target) break;
            futex(lo32(&c->completed), FUTEX_WAIT, (uint32_t)v);
        }
    } else {
        struct epoll_event ev[16];
        for (;;) {
            if (load64(&c->completed) >= target) break;
            int n = epoll_wait(epfd, ev, 16, -1), event = 0;
            if (n < 0 && errno != EINTR) { perror("epoll_wait"); exit(1); }
            for (int i = 0; i < n; i++) {
                if (ev[i].data.fd == evfd) {
                    if (variant == 'A') { uint64_t d; if (read(evfd, &d, 8) < 0) {} }
                } else event = 1;
            }
            if (load64(&c->completed) >= target) break;
            if (event) { fprintf(stderr, "pipe event?\n"); exit(1); }
        }
    }
    store64(&c->waiting, 0);
}

static void busy(uint64_t ns) { uint64_t end = now_ns() + ns; while (now_ns() < end) {} }

/* fa_complete, with the variant's wake; the worker times the wake call itself */
static double cal_ns; /* cost of an empty cpu_ns() pair */
static void complete(ctl *c, double *wake_ns, double *wake_cpu_ns, int64_t *wakes)
{
    int64_t count;
    add64(&c->issued, 1);
    count = add64(&c->completed, 1) + 1;
    if (load64(&c->waiting) && count >= load64(&c->target)) {
        uint64_t c0 = cpu_ns(), t0 = now_ns();
        if (variant == 'B') futex(lo32(&c->completed), FUTEX_WAKE, 1);
        else { uint64_t one = 1; if (write(evfd, &one, 8) < 0) {} }
        *wake_ns += now_ns() - t0;
        *wake_cpu_ns += (double)(cpu_ns() - c0) - cal_ns;
        ++*wakes;
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: %s A|B|C P R [pipe]\n", argv[0]); return 2; }
    variant = argv[1][0];
    int P = atoi(argv[2]), R = atoi(argv[3]), use_pipe = argc > 4 && !strcmp(argv[4], "pipe");
    ctl *c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(c, 0, 4096);
    int ends[64][2];
    evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    for (int i = 0; i < P; i++)
        if ((use_pipe ? pipe(ends[i]) : socketpair(AF_UNIX, SOCK_STREAM, 0, ends[i])) < 0) { perror("pipe"); return 1; }
    pid_t pid = fork();
    if (pid == 0) { /* worker: keeps ends[i][1] open, never writes */
        for (int i = 0; i < P; i++) close(ends[i][0]);
        if (getenv("PIN")) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(1, &s); sched_setaffinity(0, sizeof s, &s); }
        uint64_t k0 = cpu_ns(); for (int i = 0; i < 10000; i++) cpu_ns(); cal_ns = (double)(cpu_ns() - k0) / 10000;
        double wake_ns = 0, wake_cpu_ns = 0; int64_t wakes = 0;
        uint64_t cpu0 = cpu_ns();
        for (int r = 0; r < R; r++) {
            wait_gen(c, (uint32_t)r);
            busy(50000);
            complete(c, &wake_ns, &wake_cpu_ns, &wakes);
        }
        c->w_cpu_ns = (double)(cpu_ns() - cpu0);
        c->w_wake_ns = wake_ns; c->w_wake_cpu_ns = wake_cpu_ns; c->w_wakes = wakes;
        _exit(0);
    }
    for (int i = 0; i < P; i++) close(ends[i][1]);
    if (getenv("PIN")) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(0, &s); sched_setaffinity(0, sizeof s, &s); }
    if (variant != 'B') {
        epfd = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event e = {.events = EPOLLIN | (variant == 'C' ? EPOLLET : 0), .data.fd = evfd};
        epoll_ctl(epfd, EPOLL_CTL_ADD, evfd, &e);
        for (int i = 0; i < P; i++) {
            struct epoll_event p = {.events = EPOLLIN, .data.fd = ends[i][0]};
            epoll_ctl(epfd, EPOLL_CTL_ADD, ends[i][0], &p);
        }
    }
    uint64_t cpu0 = cpu_ns(), t0 = now_ns();
    for (int r = 1; r <= R; r++) {
        publish(c);
        wait_done(c, r);
    }
    double cpu = (double)(cpu_ns() - cpu0) / R / 1e3, wall = (double)(now_ns() - t0) / R / 1e3;
    waitpid(pid, NULL, 0);
    printf("variant=%c P=%d %s R=%d trainer_cpu_us=%.3f wall_us=%.3f slept=%.4f worker_wake_us=%.3f worker_wake_cpu_us=%.3f "
           "worker_cpu_us=%.3f worker_wakes=%lld\n",
           variant, variant == 'B' ? 0 : P, use_pipe ? "pipe" : "sock", R, cpu, wall, (double)slept / R,
           c->w_wakes ? c->w_wake_ns / c->w_wakes / 1e3 : 0, c->w_wakes ? c->w_wake_cpu_ns / c->w_wakes / 1e3 : 0, c->w_cpu_ns / R / 1e3, (long long)c->w_wakes);
    return 0;
}
