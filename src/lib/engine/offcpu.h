/* SPDX-License-Identifier: GPL-2.0-only */
/* The off-CPU event kind (engine/evkind.h): where threads wait, weighted
 * by how long, and optionally who woke them and where they ran.
 *
 * Events, in one evlist:
 *   0  with the in-kernel program (capture/swtime.h): a dummy (the rings'
 *      and the side-band's) and, per CPU, the bpf-output events the
 *      program writes its picks' samples to -- the stacks as below, the
 *      raw part a struct fk_swtime_pick; its blocks give the switch-ins.
 *      Otherwise (--no-bpf):
 *      sched:sched_switch, one hit in N, with the switched-out thread's
 *      stack (kernel callchain + user stack as in CPU mode), its raw
 *      record (prev_pid, prev_state: the layout read from tracefs) and its
 *      counter's count (what the sample weighs: the hits since that
 *      counter's previous sample, whatever N was), plus
 *      context-switch records (PERF_RECORD_SWITCH per task, or
 *      SWITCH_CPU_WIDE per CPU) for every switch: each thread's switch-in
 *      time, whether or not its switch-out was sampled.
 *   1  --wakers: sched:sched_waking (sched_wakeup before Linux 4.3), one
 *      hit in N, with the waker's stack and the woken pid.
 *   2  --with-cpu: the CPU clock at a frequency, as 'flamekit host'.
 * A sampled switch-out becomes a block (capture/blocktime.h) ended by the
 * thread's next switch-in; its stack gets the blocked nanoseconds x its
 * weight under a state frame right above the process name:
 *   comm;[S];main;...;read;...;schedule                         (blocked)
 *   comm;[S];...;pipe_write;...;schedule;--;pipe_read;...;main;waker-comm
 *   comm;[S];main;...;schedule;[open at end]     (still off CPU at the end)
 *   comm;[on-CPU];main;...                                      (--with-cpu)
 *   comm;[not recorded]     (a thread whose exact total is known but none
 *                            of whose switch-outs was picked, N > 1)
 * so a graph splits by state first, and per thread the widths add up to
 * the time captured. */
#ifndef FK_ENGINE_OFFCPU_H
#define FK_ENGINE_OFFCPU_H

#include "capture/blocktime.h"

#include <stdbool.h>
#include <stdint.h>

#define FK_OFFCPU_ONCPU_FRAME "[on-CPU]"
#define FK_OFFCPU_ADAPT_MS 250
#define FK_OFFCPU_PROBE_MS 10
#define FK_OFFCPU_FAST_MS 100
#define FK_OFFCPU_REDRAW_MS 250
#define FK_OFFCPU_OTHERS_MS 100
#define FK_OFFCPU_TIMELINE 64
#define FK_OFFCPU_WAKER_SEP "--"
#define FK_OFFCPU_OPEN_FRAME "[open at end]"
#define FK_OFFCPU_UNRECORDED_FRAME "[not recorded]"

/* Why a thread had no exact total of its own (threads_no_total_by in the
 * metadata): on the switch-record path why its records gave none (enum
 * fk_bt_total_why's, 1 to FK_BT_TOTAL_NWHY - 1) or that none of its were
 * kept (no switch record of it, or its past the thread limit); with the
 * in-kernel program, that it exited and the program wrote no total at
 * its last switch-out, or that it is alive and neither a first
 * switch-out in the window nor its CPU time at the end was there. */
enum fk_offcpu_no_total {
    FK_OFFCPU_NT_NO_RECORDS = FK_BT_TOTAL_NWHY,
    FK_OFFCPU_NT_EXITED,
    FK_OFFCPU_NT_NO_CPU_TIME,
    FK_OFFCPU_NO_TOTAL_N
};
/* Its metadata name ("" for 0 and unknown values). */
const char *fk_offcpu_no_total_name(int why);

/* What a capture reports (filled at the end of the window). */
struct fk_offcpu_stats {
    struct fk_bt_stats blocks;  /* accounting: lost switch-ins, open blocks, by state */
    uint64_t one_in;            /* N */
    uint64_t switch_outs;       /* switch-outs of every thread seen (switch records) */
    uint64_t switch_ins;
    uint64_t recorded;          /* sampled switch-outs (stacks) of the target */
    uint64_t switches_estimated;    /* the recorded ones, each x the switch-outs it
                                       stands for (its weight) */
    uint64_t raw_mismatch;      /* samples whose raw record did not parse or name
                                   another thread: not counted */
    uint64_t exit_switches;     /* switch-outs of exiting threads (state X or Z:
                                   their last, in do_task_dead): weighed, never a
                                   block (it would stay open to the end); on the
                                   in-kernel path the program counts them and
                                   never picks one */
    uint64_t wakeups_recorded;  /* --wakers: sampled wakeups */
    const char *waker_event;    /* "sched_waking" (or "sched_wakeup", older kernels) */
    uint64_t waker_unmatched;   /* blocks without a recorded wakeup ("--;[no waker
                                   recorded]") */
    uint64_t cpu_samples;       /* --with-cpu */
    uint64_t cpu_ns;
    uint64_t cpu_period_ns;
    uint64_t peak_rate;         /* switch-outs per second, highest one-second window */
    /* N within the window (--switch-budget): the rate of switch-outs is
     * measured every FK_OFFCPU_ADAPT_MS from the switch event's count and
     * N set again when the recorded rate would pass 1.25 x the budget
     * (at once past 4 x) or fall under half of it (for a second; at the
     * window's first decision, from the median of its FK_OFFCPU_PROBE_MS
     * looks, at once: the rate before the window was taken without the
     * events) */
    uint64_t one_in_last, one_in_min, one_in_max;
    uint64_t one_in_changes;
    struct { uint64_t at_ns, n; } timeline[FK_OFFCPU_TIMELINE];   /* the first changes:
                                   ns after the window opened, the new N */
    unsigned ntimeline;
    /* the window's first decision on N: when (ns from the opening; 0:
     * none made), on how many looks and their median rate (switch-outs a
     * second), the rate over its interval, N before and after it, and
     * whether a storm's look made it early -- so that a first decision
     * that kept a storm's N after the storm says why */
    struct {
        uint64_t at_ns, looks, median, rate, n_before, n_after;
        bool early;
    } first_decision;
    uint64_t weighed_by_count;  /* samples weighed by their counter's count: the
                                   switch-outs since its previous sample, exactly */
    uint64_t weighed_by_time;   /* ... by the N in force at their time: no count
                                   (inherited per-task events before Linux 6.12),
                                   or the counter's first after records were lost */
    uint64_t recorded_twice;    /* samples of a switch-out already recorded (the
                                   kernel writes two for the first hit after N
                                   changes from 1): not counted */
    uint64_t one_in_unsure;     /* samples weighed by time that were timed while N
                                   was being changed (given the new N) */
    uint64_t recorded_inherited_n;  /* weighed by time, per-task events only (pid/run outside a
                                   cgroup): samples of threads created in the
                                   window that carried the N of their creation,
                                   not the one in force (the kernel changes only
                                   the events flamekit opened); per-CPU events
                                   in a cgroup have no such copies */
    char adapt_error[160];      /* why N stopped changing ("" : it did not) */
    /* each thread's blocks scaled to its switch records' exact total
     * (offcpu.c calibrate): the recorded blocks' time before, threads
     * scaled and those whose records did not pair (their estimate kept,
     * or cut to the window),
     * records of threads past the table's limit; blocked_ns: the
     * profile's (and blocks.ns_by_state) */
    uint64_t blocked_ns_recorded, blocked_ns;
    uint64_t threads_exact, threads_estimated, exact_over;
    uint64_t threads_exact_bounded;     /* ... exact within an unseen switch-in's bound */
    /* ... estimated, by why (they add up to threads_estimated): records
     * were lost (no totals then); the in-kernel program kept none (no
     * BTF: bpf_note); the
     * thread had no total (its switch records did not pair, or the program
     * saw no first switch-out of it in the window and no exit, or its
     * CPU time could not be read at the end); nothing of it was recorded
     * (no time to scale) */
    uint64_t est_records_lost, est_no_program_totals, est_no_total, est_nothing_recorded;
    /* ... est_no_total by why (they add up to it): enum fk_offcpu_no_total */
    uint64_t no_total_by[FK_OFFCPU_NO_TOTAL_N];
    /* ... and the first such thread's records, so that one failed run
     * says which records a thread's total lacked: tid 0 when none; times
     * in ns from the window's opening (negative: before it; INT64_MIN:
     * none); on the switch-record path its switch-ins and switch-outs
     * (those read before the opening was known, apart), the first and
     * last of each, whether its EXIT was seen */
    struct fk_offcpu_no_total_first {
        int32_t tid;
        int why;
        uint64_t n_in, n_out, early_in, early_out;
        int64_t first_in, first_out, last_in, last_out, born, exit;
        bool exited;
    } no_total_first;
    uint64_t threads_cut;       /* ... estimated above their life in the window
                                   (from their FORK, to their EXIT; less the CPU
                                   their own samples were seen using): cut to it */
    uint64_t threads_exact_cut; /* exact totals above the thread's life in the
                                   window: cut to it */
    uint64_t threads_exit_tail; /* threads whose total ran on past their EXIT
                                   record (the in-kernel path: waits in do_exit
                                   after perf took their per-task events) ... */
    uint64_t exit_tail_ns;      /* ... that time: not in the profile */
    uint64_t threads_unrecorded;    /* threads with an exact total but no recorded
                                   switch-out (none picked at N > 1, or its one
                                   block dropped): their total under
                                   "comm;[not recorded]", no stack, no state */
    uint64_t unrecorded_ns;     /* ... that time (in blocked_ns, in no state's) */
    uint64_t window_ns;
    size_t bytes;               /* accounting memory at the end */
    /* where switch-ins came from: "bpf" (the in-kernel program on
     * sched_switch, capture/swtime.h) or "switch-records" (the kernel's
     * context-switch records: --no-bpf, or BPF unusable here, bpf_note
     * says why) */
    const char *block_source;
    char bpf_note[160];
    const char *bpf_filter;     /* the program's threads: "all", "cgroup", "tgids" */
    const char *bpf_attach;     /* how it runs: "raw_tracepoint" (no record built at
                                   a switch) or "tracepoint" (on perf's record) */
    uint64_t bpf_blocks;        /* blocks the program wrote (every switch-in of a
                                   thread whose switch-out it kept) */
    uint64_t bpf_matched;       /* ... holding a recorded switch-out */
    uint64_t bpf_unmatched;     /* recorded switch-outs whose block never came */
    uint64_t bpf_map_full, bpf_ring_full;   /* switch-outs not kept, blocks not
                                   written: no room in the kernel */
    uint64_t bpf_missed;        /* switches the kernel did not run the program on
                                   (another BPF program was running on that CPU) */
    uint64_t bpf_in_missed;     /* gaps: a switch-in or switch-out the program did
                                   not see */
    uint64_t bpf_unseen_in;     /* ... of them switch-ins (switched out twice): the
                                   thread's total stays exact within the gap */
    uint64_t bpf_unseen_timed;  /* ... of them timed exactly: the span less the
                                   CPU time the thread used in it (the scheduler's) */
    uint64_t bpf_unseen_ns;     /* the others' spans: the bound (counted as 0, not
                                   invented) */
    uint64_t bpf_picked;        /* switch-outs the program picked (one in N) */
    uint64_t bpf_exiting;       /* ... of them of threads on their way out
                                   (PF_EXITING): let go, not recorded */
    uint64_t bpf_unsampled;     /* ... picked, but no sample came (picked less
                                   recorded, when positive): the unwritten
                                   below, or perf dropped it */
    uint64_t bpf_unwritten;     /* ... picked, but the program could not write
                                   its sample (its CPU's ring full): let go,
                                   no block */
    int bpf_others;             /* other programs on sched_switch, the most at
                                   once in the window (-1: unknown) */
    const char *totals_from;    /* each thread's exact total: "scheduler" (the
                                   program's CPU-time reads), "switch-records", or
                                   "none" (estimates only) */
    size_t bpf_bytes;           /* the program's map and ring (kernel memory) */
};

struct fk_offcpu_opts {
    uint64_t one_in;            /* N >= 1: sample one switch-out (and wakeup) in N */
    uint64_t budget;            /* > 0: keep the recorded rate near this many per
                                   second by changing N within the window; 0: N fixed */
    bool rate_known;            /* one_in came from a rate measured before the window */
    uint64_t min_block_ns;      /* shorter blocks dropped (counted) */
    bool wakers;
    bool with_cpu;
    uint64_t cpu_freq;          /* --with-cpu: Hz */
    bool no_bpf;                /* switch records even where the in-kernel program
                                   would load (--no-bpf) */
    struct fk_offcpu_stats *stats;  /* filled when the capture ends; may be NULL */
};

struct fk_evkind;
/* The kind; its options come through fk_capture_opts.kind_opts (a struct
 * fk_offcpu_opts). */
extern const struct fk_evkind fk_evkind_offcpu;

/* Switches per second of a target before the window, for choosing N: the
 * kernel's own counters (/proc/PID/task/TID/status voluntary and
 * nonvoluntary switches for pids, /proc/stat ctxt for the host), sampled
 * over ms milliseconds. pids NULL: the host. -1 when unreadable. */
int64_t fk_offcpu_switch_rate(const pid_t *pids, size_t npids, unsigned ms);

#endif
