/* SPDX-License-Identifier: GPL-2.0-only */
/* Block accounting for off-CPU profiles: switch-outs (with the stack the
 * caller recorded) and switch-ins of threads become blocks weighted by the
 * nanoseconds the thread did not run. Pure: no perf, no clocks; the
 * capture feeds it decoded records in (mostly) time order and takes the
 * finished blocks through a callback.
 *
 * Invariants:
 *  - Time is never invented: a block ends at the thread's own switch-in,
 *    and starts at its switch-out (the switch record when there is one,
 *    else the recorded sample's time, a few microseconds earlier).
 *    A switch-out whose switch-in was lost (a second switch-out came,
 *    records were lost after it, the thread exited, or its tid was
 *    reused) is dropped and counted.
 *  - Blocks still open when the window ends are counted to the end and
 *    marked (fk_block.open).
 *  - Records may arrive out of time order across CPUs: a switch-in seen
 *    before its switch-out closes the block when the switch-out comes.
 *  - Memory is one entry per thread with a block or a switch-in pending
 *    (not per switch), at most max_threads entries; entries of threads
 *    that exited are reclaimed.
 *  - One in N: each recorded switch-out stands for the N it was sampled at
 *    (weight and count scaled by N; the caller samples, and may change N
 *    within the window: fk_bt_out_n).
 *  - Stacks are the caller's tokens (e.g. ids in its stack table): a
 *    token is only stored and handed back. */
#ifndef FK_BLOCKTIME_H
#define FK_BLOCKTIME_H

#include "util/hindex.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Why a thread was off CPU (sched_switch's prev_state). */
enum fk_bt_state {
    FK_BT_SLEEPING,         /* [S] interruptible sleep: waiting for an event */
    FK_BT_DISK,             /* [D] uninterruptible: disk I/O, some locks */
    FK_BT_RUNNABLE,         /* [R] preempted (or yielded) while runnable */
    FK_BT_OTHER,            /* [I] idle kernel waits, [T] stopped, [P] parked... */
    FK_BT_NSTATES
};
/* "[S]", "[D]", "[R]", "[other]"; short: "S", "D", "R", "other" */
const char *fk_bt_state_frame(enum fk_bt_state s);
const char *fk_bt_state_name(enum fk_bt_state s);

#define FK_BT_NO_STACK UINT64_MAX

/* A finished block. */
struct fk_block {
    pid_t tid;
    enum fk_bt_state state;
    uint64_t stack;         /* the switched-out stack's token */
    uint64_t waker;         /* the waker's stack token, FK_BT_NO_STACK: none */
    uint64_t ns;            /* blocked time x N */
    uint64_t switches;      /* N */
    bool open;              /* still blocked at the window's end */
    bool dropped;           /* shorter than min_block_ns: not in the profile (counted
                               in fk_bt_stats.short_*), handed on for its thread's total */
};

typedef void (*fk_bt_sink)(void *ctx, const struct fk_block *b);

struct fk_bt_opts {
    uint64_t min_block_ns;  /* shorter blocks are dropped (counted) */
    uint64_t one_in;        /* N >= 1: each recorded switch-out stands for N
                               (fk_bt_out; fk_bt_out_n gives each its own) */
    size_t max_threads;     /* entries held at most (0: 65536); beyond, new
                               blocks are dropped and counted */
    fk_bt_sink sink;
    void *ctx;
};

struct fk_bt_stats {
    uint64_t outs;              /* switch-outs recorded (with a stack) */
    uint64_t blocks;            /* blocks emitted (open ones included) */
    uint64_t open;              /* ... still blocked at the end */
    uint64_t short_blocks;      /* below min_block_ns, dropped */
    uint64_t short_ns;          /* their time (x N) */
    uint64_t lost_in;           /* switch-ins lost: block dropped, no time given */
    uint64_t unseen_in;         /* switch-ins the kernel did not show (fk_bt_unseen_in):
                                   block dropped, its thread's total bounded */
    uint64_t reordered;         /* switch-ins that arrived before their switch-out */
    uint64_t outs_exact;        /* recorded switch-outs whose block starts at the
                                   switch itself (fk_bt_switched_out), not at the
                                   sample's time */
    uint64_t stale_in;          /* switch-ins older than the pending switch-out */
    uint64_t tid_reused;        /* pending blocks dropped: the tid was reused */
    uint64_t table_full;        /* switch-outs dropped at max_threads */
    uint64_t wakeups;           /* wakeups with a waker stack seen */
    uint64_t wakeups_matched;   /* ... attached to a pending block */
    uint64_t wakeups_early;     /* ... of them timed just before the switch-out
                                   (FK_BT_WAKING_EARLY_NS) */
    uint64_t ns_by_state[FK_BT_NSTATES];    /* emitted time (x N) */
    uint64_t blocks_by_state[FK_BT_NSTATES];
    uint64_t peak_threads;      /* entries held at most */
};

struct fk_bt_thread;

struct fk_blocktime {
    struct fk_bt_opts o;
    struct fk_bt_thread *v;     /* entries; free ones chained through .tid = 0 */
    size_t n, cap, live;
    struct fk_hindex index;     /* tid -> entry */
    struct fk_bt_stats st;
};

void fk_bt_init(struct fk_blocktime *bt, const struct fk_bt_opts *o);
void fk_bt_free(struct fk_blocktime *bt);

/* The bits of sched_switch's prev_state, as the format file gives them:
 * the state letters' bits (__print_flags "S", "D") and the preemption bit
 * (one above the highest state flag: 0x100 since Linux 4.14). */
struct fk_bt_statebits { uint64_t sleeping, disk, preempt; };
/* prev_state -> state: preempted or no state bit: [R]. */
enum fk_bt_state fk_bt_state_of(int64_t prev_state, const struct fk_bt_statebits *b);

/* A recorded (sampled) switch-out of tid at time with its stack, standing
 * for o.one_in switch-outs (fk_bt_out) or for one_in (fk_bt_out_n: the N it
 * was sampled at, when N changes within the window). */
void fk_bt_out(struct fk_blocktime *bt, pid_t tid, uint64_t time, enum fk_bt_state state,
               uint64_t stack);
void fk_bt_out_n(struct fk_blocktime *bt, pid_t tid, uint64_t time, enum fk_bt_state state,
                 uint64_t stack, uint64_t one_in);
/* tid left its CPU at time (its switch-out record): a block pending from
 * a recorded switch-out starts there, not at the sample's time. The
 * tracepoint's sample is timed before the kernel writes it -- the stack
 * copy, the callchain: 6.7 us (median) on this machine with an 8 KiB copy
 * -- while the thread still runs; at a switch storm the blocks last about
 * as long, so blocks timed from the sample gave a thread nearly twice the
 * wall time off CPU. The first switch-out record after a recorded one
 * counts; later ones, or one older than the sample, are ignored. */
void fk_bt_switched_out(struct fk_blocktime *bt, pid_t tid, uint64_t time);
/* tid was off CPU from out to in, both ends timed where they happened (an
 * in-kernel program on sched_switch paired them): the block pending from a
 * recorded switch-out timed within [out, in] starts at out and ends at in
 * (counted in outs_exact): true. Any other pending block is left as it
 * is. */
bool fk_bt_block(struct fk_blocktime *bt, pid_t tid, uint64_t out, uint64_t in);
/* tid was switched out at out and again at next_out with no switch-in
 * between (the kernel ran it again unseen): the block pending from a
 * recorded switch-out timed within [out, next_out] lasted anywhere from 0
 * to next_out - out; it is dropped (unseen_in), never given a guess, and
 * the caller accounts for its thread's total within that bound: true. */
bool fk_bt_unseen_in(struct fk_blocktime *bt, pid_t tid, uint64_t out, uint64_t next_out);
/* Records were lost before time (PERF_RECORD_LOST): the switch-in of any
 * block pending since before may have been among them; those blocks are
 * dropped (lost_in), never counted to a later switch-in. */
void fk_bt_lost(struct fk_blocktime *bt, uint64_t time);
/* A switch-in of tid at time. */
void fk_bt_in(struct fk_blocktime *bt, pid_t tid, uint64_t time);
/* tid was woken at time by a thread whose stack is waker: the last
 * wakeup between a recorded switch-out and the switch-in is the block's.
 * sched_waking fires in the waker as it starts the wakeup, which may be
 * while the sleeper is still switching out (dequeued, its switch-out not
 * yet traced): a wakeup at most FK_BT_WAKING_EARLY_NS before a sleeping
 * switch-out, and after the thread's last switch-in, is that block's. */
#define FK_BT_WAKING_EARLY_NS 1000000ull
void fk_bt_wake(struct fk_blocktime *bt, pid_t tid, uint64_t time, uint64_t waker);
/* tid was created (FORK): anything pending under that tid was another
 * thread's. */
void fk_bt_new_thread(struct fk_blocktime *bt, pid_t tid);
/* tid exited: a block still pending lost its switch-in. */
void fk_bt_exit(struct fk_blocktime *bt, pid_t tid);
/* The window ended at time: pending blocks are counted to it, marked open. */
void fk_bt_finish(struct fk_blocktime *bt, uint64_t time);
/* The same, when whether a thread was still off CPU at the end is known
 * elsewhere (an in-kernel program's pending switch-outs): a pending block
 * whose thread off_cpu says ran again since its switch-out (out_time) lost
 * its switch-in (lost_in), never counted to the end. */
void fk_bt_finish_checked(struct fk_blocktime *bt, uint64_t time,
                          bool (*off_cpu)(void *ctx, pid_t tid, uint64_t out_time), void *ctx);

/* ---- a thread's exact off-CPU time in the window --------------------
 *
 * One thread's switch records (every one, not sampled): its off-CPU time
 * from them, exactly (fk_bt_total_get). Sums, not pairs: a thread's
 * switch-out on one CPU and its switch-in on another are in different
 * rings, read in either order. Times are cut to the window: the events
 * are on before it opens (while /proc is scanned: hundreds of ms on a
 * loaded host) and after it closes, and a thread off CPU all along is
 * off CPU for the window, not more (it is what the profile's duration
 * says). The window is given to each call as it is known then (0: not
 * yet opened / closed): a record added before the opening was known is
 * kept raw apart, and moved to the opening when the total is taken. */
struct fk_bt_total {
    unsigned __int128 sum_in, sum_out;      /* times, cut to the window as known */
    unsigned __int128 early_in, early_out;  /* times added before it opened: raw */
    uint64_t n_in, n_out, nearly_in, nearly_out;   /* n_: all, early too */
    uint64_t min_in, min_out, max_in, max_out;      /* raw times */
    uint64_t early_max, open_max;   /* latest time added before the window
                                       opened / before it closed (as known) */
    bool exited;        /* its EXIT was seen: a last switch-out with no switch-in
                           after it is do_task_dead's (it never runs again:
                           not off-CPU time); it may block on its way out
                           before that */
    bool reused;        /* its tid was given to a new thread: no total */
};

void fk_bt_total_init(struct fk_bt_total *x);
/* A switch-out (out) or switch-in at time; the window [start, stop] as
 * known now (0: unknown). */
void fk_bt_total_add(struct fk_bt_total *x, uint64_t time, bool out, uint64_t start,
                     uint64_t stop);
/* Its off-CPU time in the window [start, stop] (0: none given; stop 0:
 * to end), counted the way its blocks are (from a switch-out to the
 * switch-in after it) over every switch-out: not the time before its
 * first switch-out (off CPU when the records began, or new: no stack was
 * recorded for it), and up to end (the records' end) when it is off CPU
 * then -- unless it exited: that switch-out was its last. false: its
 * records do not pair (lost records, a reused tid), or one added before
 * the window's opening (or closing) was known lies inside it (after it). */
bool fk_bt_total_get(const struct fk_bt_total *x, uint64_t start, uint64_t stop, uint64_t end,
                     uint64_t *ns);
/* Why fk_bt_total_get gives no total (FK_BT_TOTAL_OK: it gives one): its
 * tid was given to a new thread; no switch-out and no exit; a record read
 * before the window's opening was known is timed after it, or one read
 * before its closing was known after that; its switch-ins and switch-outs
 * do not pair (counts); they pair but the switch-ins add up to less. */
enum fk_bt_total_why {
    FK_BT_TOTAL_OK,
    FK_BT_TOTAL_REUSED,
    FK_BT_TOTAL_NO_SWITCH_OUT,
    FK_BT_TOTAL_READ_EARLY,
    FK_BT_TOTAL_READ_LATE,
    FK_BT_TOTAL_UNPAIRED,
    FK_BT_TOTAL_IN_BEFORE_OUT,
    FK_BT_TOTAL_NWHY
};
enum fk_bt_total_why fk_bt_total_why(const struct fk_bt_total *x, uint64_t start, uint64_t stop,
                                     uint64_t end, uint64_t *ns);
/* its metadata name: "reused", "no_switch_out", "read_early", "read_late",
 * "unpaired", "in_before_out" ("" for FK_BT_TOTAL_OK) */
const char *fk_bt_total_why_name(enum fk_bt_total_why why);

/* Bytes held (for --max-memory). */
size_t fk_bt_bytes(const struct fk_blocktime *bt);

#endif
