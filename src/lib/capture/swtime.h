/* SPDX-License-Identifier: GPL-2.0-only */
/* Off-CPU switch timing in the kernel: a program on sched:sched_switch
 * (attached to a tracepoint event of its own) that keeps each
 * switched-out thread's switch-out time in a map by tid and, when the
 * thread is switched in again, writes its block -- tid, switch-out and
 * switch-in times -- to a BPF ring buffer. It replaces the kernel's two
 * context-switch records per switch (PERF_RECORD_SWITCH_CPU_WIDE: ~0.39 us
 * per switch-out on this machine, ~10 of the 16 points a switch storm
 * lost) with one map access each way and one 32-byte record per block.
 *
 * Invariants:
 *  - Built from instructions at run time (capture/bpf.h); the fields'
 *    offsets and sizes come from the running kernel's format (tracefs.h),
 *    never assumed.
 *  - The program only reads the tracepoint's record and always returns 1:
 *    it never filters what perf (flamekit's sampled event, or anyone
 *    else's on the same tracepoint) records.
 *  - Times are bpf_ktime_get_ns (CLOCK_MONOTONIC, the records' clock),
 *    taken before perf times the same hit: a sampled switch-out's block
 *    starts at or before the sample's time and ends after it.
 *  - A block is written only whole (its switch-in seen): a thread off CPU
 *    when timing began (fk_swtime_filter) gives no block for that wait; one off
 *    CPU when it stopped is pending in the map (fk_swtime_pending). A
 *    switch-out or switch-in the program did not see is said (a gap:
 *    enum fk_swtime_kind), never hidden in a thread's total.
 *  - A thread's last switch-out (do_task_dead: prev_state X or Z, not
 *    preempted) clears its entry: exited threads hold nothing.
 *  - Which threads: all (host, user targets), a cgroup v2 and everything
 *    below it (bpf_current_task_under_cgroup, as perf's cgroup events),
 *    or processes by tgid and their children from their start (per-task
 *    targets: the fork program adds them; the caller may add more).
 *  - What could not be kept (the map full, the ring full) is counted per
 *    CPU and read with fk_swtime_stats: those threads' times are then
 *    incomplete. After fk_swtime_stop nothing more is written. */
#ifndef FK_CAPTURE_SWTIME_H
#define FK_CAPTURE_SWTIME_H

#include "capture/tracefs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fk_swtime;

/* What a block of the program's says. */
enum fk_swtime_kind {
    FK_SWTIME_BLOCK,        /* off CPU from out to in */
    FK_SWTIME_UNSEEN_IN,    /* switched out at out, and again at in with no
                               switch-in seen between: the kernel ran the
                               thread again without a sched_switch hit (Linux
                               6.18 does, about once in thousands of
                               switches; bpftrace sees the same). Off CPU for
                               at most in - out: a bound, not a block */
    FK_SWTIME_UNSEEN_OUT,   /* switched in at in with no switch-out seen since
                               its last switch-in (out is FK_SWTIME_RUNNING:
                               the thread left the filter and came back, or
                               the kernel skipped a hit): unbounded */
};

/* One block as the program writes it (the ring buffer's record). */
struct fk_swtime_block {
    uint32_t tid;
    uint32_t kind;          /* enum fk_swtime_kind */
    uint64_t out, in;       /* CLOCK_MONOTONIC ns */
};
/* The map's value of a thread seen switched in (0: never seen). */
#define FK_SWTIME_RUNNING 1

struct fk_swtime_stats {
    uint64_t map_full;      /* switch-outs not kept: no room in the map */
    uint64_t ring_full;     /* blocks not written: the ring buffer was full */
    uint64_t exits;         /* last switch-outs of exiting threads (no block) */
    uint64_t missed;        /* tracepoint hits the kernel did not run the program
                               on: another BPF program was running on that CPU
                               (its recursion guard; perf then drops the sample too) */
};

enum fk_swtime_filter { FK_SWTIME_ALL, FK_SWTIME_CGROUP, FK_SWTIME_TGIDS };

/* Maps made, the program loaded and run on every hit of sched_switch
 * through an event of its own (fk_bpf_attach_tracepoint: never the
 * capture's events, which per-task targets inherit, and the first
 * inherited copy freed would take the program off the tracepoint for
 * good), timing nothing until fk_swtime_filter. sw: sched_switch's
 * format; exit_bits: prev_state's X and Z bits, preempt_bit: the
 * preemption bit; ring_bytes: the ring buffer's size (a power of 2, at
 * least a page). false with one line in err (the verifier's reason when
 * it refused). Its event's close waits for an RCU tasks-trace grace
 * period (seconds on a busy host): the caller keeps a copy
 * (fk_swtime_events) open until its results are written. */
bool fk_swtime_new(const struct fk_tp_format *sw, uint64_t exit_bits, uint64_t preempt_bit,
                   size_t ring_bytes, struct fk_swtime **out, char *err, size_t errlen);
/* Which threads' switches are timed, from now. cgroup_dir: for
 * FK_SWTIME_CGROUP; FK_SWTIME_TGIDS starts with none (fk_swtime_add_tgid). */
bool fk_swtime_filter(struct fk_swtime *t, enum fk_swtime_filter f, const char *cgroup_dir,
                      char *err, size_t errlen);
/* Time the switches of process tgid's threads too (FK_SWTIME_TGIDS), or no
 * more (it exited). */
bool fk_swtime_add_tgid(struct fk_swtime *t, pid_t tgid);
void fk_swtime_forget_tgid(struct fk_swtime *t, pid_t tgid);
/* With FK_SWTIME_TGIDS (after fk_swtime_filter), a second program on
 * sched:sched_process_fork adds the children of the processes timed,
 * before they first run; nothing otherwise. Once only. */
bool fk_swtime_follow_forks(struct fk_swtime *t, char *err, size_t errlen);
/* The programs' own events, at most 2, to fds; how
 * many. fk_swtime_free closes them; a copy (dup) the caller holds keeps
 * the event, and the tracepoint, until it closes that too. */
size_t fk_swtime_events(const struct fk_swtime *t, int fds[2]);
/* Switches at or after at_ns are no longer timed (the window's end). */
void fk_swtime_stop(struct fk_swtime *t, uint64_t at_ns);
/* Blocks written since the last call, each to fn; returns how many. Any
 * thread may call it, one at a time. */
size_t fk_swtime_drain(struct fk_swtime *t, void (*fn)(void *ctx, const struct fk_swtime_block *b),
                       void *ctx);
/* tid's switch-out with no switch-in yet (off CPU since *out): true. */
bool fk_swtime_pending(struct fk_swtime *t, pid_t tid, uint64_t *out);
void fk_swtime_stats(struct fk_swtime *t, struct fk_swtime_stats *st);
/* Bytes of the maps and ring (the kernel's memory, mapped in part). */
size_t fk_swtime_bytes(const struct fk_swtime *t);
/* The same before making them, for a ring of ring_bytes on this host. */
size_t fk_swtime_bytes_for(size_t ring_bytes);
void fk_swtime_free(struct fk_swtime *t);

#endif
