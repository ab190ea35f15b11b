/* The vector env's hot path through shared memory (fa_wait.c): the trainer publishes commands
 * and waits for completions, workers wait for commands and complete envs.
 *
 * Not a kernel, and apart from fastatari.h: it is compiled into its own extension module,
 * fastatari.vector._wait, next to the pool and the worker that use it.
 *
 * One step, whatever the number of workers: the trainer writes every env's op and action in
 * place, then one fa_publish (a counter bump, plus one futex wake of two sleeping workers,
 * each of which wakes two more while some sleep); each worker claims its envs' ops (fa_claim), runs them and completes each env
 * (fa_complete: a ticket that orders completions, a counter, and an eventfd write only from
 * the completion the trainer is waiting for); the trainer waits in fa_wait_done, without the
 * GIL: a short spin, then epoll over the completion eventfd and the workers' pipes, so a worker
 * that dies or reports an error is seen at once. Where futex, eventfd and epoll do not exist
 * (macOS, Windows) the waits are a spin followed by short naps: correct, slower to wake.
 */
#ifndef FA_WAIT_H
#define FA_WAIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The control words, each written by one side on its own cache line. */
typedef struct fa_control {
    uint32_t gen;          /* commands published (trainer); workers wait for it to change */
    int32_t output;        /* the output slot of the ops published (-1: none; trainer) */
    uint32_t pad0[14];
    uint32_t sleepers;     /* workers asleep on gen (workers) */
    uint32_t pad1[15];
    int64_t issued;        /* completion tickets handed out (workers) */
    int64_t pad2[7];
    int64_t completed;     /* completions counted, after their ticket is written (workers) */
    int64_t pad3[7];
    int64_t target;        /* the trainer sleeps until completed >= target ... */
    int64_t waiting;       /* ... while this is 1 (trainer) */
    int64_t pad4[6];
} fa_control;

#define FA_CONTROL_BYTES 320

/* fa_wait_done's answers */
#define FA_TIMEOUT 0
#define FA_DONE 1
#define FA_EVENT 2        /* a descriptor of epfd other than evfd is ready: a worker's pipe */
#define FA_INTERRUPTED (-1) /* a signal arrived: let Python run its handlers, then wait again */
#define FA_FAILED (-2)      /* epoll_wait failed (errno) */

/* An env's ticket word: -1 not completed, a ticket >= 0 completed with it, FA_HELD(t) <= -2
 * ticket t taken, its completion under way; FA_HELD is its own inverse. */
#define FA_HELD(t) (-2 - (t))

/* 1 where the waits sleep on futex/eventfd/epoll (Linux); 0 where they nap. */
int fa_fast_waits(void);
/* A monotonic clock, in seconds (how long a wait lasted). */
double fa_seconds(void);

/* trainer */
void fa_release_fence(void);     /* between writing actions and writing the ops that name them */
void fa_publish(fa_control *c);
/* The output slot of the ops about to be written (before the fence): a worker also copies each
 * env's observation into that slot (-1: none). */
void fa_set_output(fa_control *c, int32_t slot);
int64_t fa_completed(const fa_control *c);
uint32_t fa_generation(const fa_control *c);
/* Wait until completed >= target: spin for spin_s, then sleep on epfd (evfd and the workers'
 * pipes; epfd < 0: nap) until timeout_s (< 0: no limit). */
int fa_wait_done(fa_control *c, int64_t target, int epfd, int evfd, double spin_s,
                 double timeout_s);

/* worker */
/* Wait until gen != seen: spin for spin_s, then sleep until timeout_s (< 0: no limit); 1 if it
 * changed, 0 if the time ran out. */
int fa_wait_generation(fa_control *c, uint32_t seen, double spin_s, double timeout_s);
uint8_t fa_claim(uint8_t *op);   /* take an env's op, leaving 0 (no op) */
int32_t fa_output(const fa_control *c); /* after a claim: its op's output slot */
/* An env's results are written: give it the next ticket, count it, wake the trainer if this is
 * the completion it waits for (evfd < 0: the trainer naps, no wake). */
void fa_complete(fa_control *c, int64_t *ticket, int evfd);
/* The same in two parts, for a worker that writes the env's row of a batch in place: take the
 * next ticket first (its place in the batches), write, then complete with it. Meanwhile the
 * env's ticket word holds FA_HELD(taken): a worker that dies there leaves its ticket where the
 * trainer finds it (the gap in the tickets is known, not waited for). */
int64_t fa_take_ticket(fa_control *c, int64_t *ticket);
void fa_complete_as(fa_control *c, int64_t *ticket, int64_t taken, int evfd);

/* either side: a shared 64-bit word, read and written atomically (a batch's range, a row's
 * mark) */
int64_t fa_load64(const int64_t *p);
void fa_store64(int64_t *p, int64_t v);
/* trainer: tickets handed out so far (the next ticket, once no worker is between taking one
 * and completing) */
int64_t fa_issued(const fa_control *c);

#ifdef __cplusplus
}
#endif
#endif
