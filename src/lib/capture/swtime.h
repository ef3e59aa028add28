/* SPDX-License-Identifier: GPL-2.0-only */
/* Off-CPU switch sampling and timing in the kernel: a program on
 * sched:sched_switch -- a raw tracepoint program where the kernel's BTF
 * shows the tracepoint's arguments as it reads them (the kernel then
 * builds no tracepoint record at any switch: a tracepoint event's
 * program runs only after perf built one, at every switch of the host),
 * else attached to a tracepoint event of its own -- that picks one in N of the target's switch-outs (bpf_get_prandom_u32: each
 * switch-out alike, with chance 1/N, whatever its thread, its CPU or the
 * rhythm of its switches), writes each pick's sample itself
 * (bpf_perf_event_output to the capture's event on that CPU: perf takes
 * its stacks from the tracepoint's registers, as for a sample of the
 * tracepoint's own), keeps each picked switch-out's time in a map by tid
 * and, when the thread is switched in again, writes its block -- tid,
 * switch-out and switch-in times -- to a BPF ring buffer. The other
 * switches read no clock (on this VM each read traps to the hypervisor:
 * ~190 ns, most of what a timed hit cost) and write nothing.
 *
 * Each thread's exact off-CPU time is kept apart from the sampled blocks,
 * from the scheduler's own accounting: at the thread's first switch-out
 * in the window the program reads the time and the thread's
 * sum_exec_runtime (its CPU time, offset from BTF); from then on, the
 * thread was off CPU for the time elapsed less the CPU time it used --
 * every block, sampled or not, without a clock read per switch
 * (fk_swtime_thread, and an EXIT record at its last switch-out).
 *
 * Invariants:
 *  - Built from instructions at run time (capture/bpf.h); the fields'
 *    offsets and sizes come from the running kernel's format (tracefs.h)
 *    and BTF, never assumed (no BTF: no exact totals, said); the BTF
 *    offset is kept once per boot (util/bootcache.h: DIR/btf-offsets),
 *    as loading the kernel's BTF cost a capture ~8 ms of CPU and ~45 ms
 *    of its start.
 *  - A raw program reads the switched-out thread as the current task, the
 *    switched-in one's tid from its task (BTF's task_struct.pid) only while
 *    a pick waits for its switch-in (a count the program keeps), and
 *    writes a pick's state raw (fk_swtime_pick_state gives the record's).
 *  - The program returns 1 for every hit: it never decides whether a perf
 *    event on sched_switch samples. (The kernel runs all the programs
 *    attached to a tracepoint and samples its perf events only if every
 *    one returned non-zero: a program that filtered the capture's own
 *    tracepoint events by returning 0 took the samples of every other
 *    capture's and tool's events on sched_switch too -- two offcpu
 *    captures at once lost 743 of 1,769 picks' samples. Issue 21.)
 *  - Nothing is picked before the window opens (the capture's events
 *    may not be on yet) or after it ends.
 *  - Times are bpf_ktime_get_ns (CLOCK_MONOTONIC, the records' clock),
 *    taken before perf times the same hit: a picked switch-out's block
 *    starts at or before the sample's time and ends after it.
 *  - A block is written only whole (its switch-in seen): a thread off CPU
 *    when the window ended is pending in the map (fk_swtime_pending). A
 *    picked switch-out followed by another switch-out with no switch-in
 *    seen is said as such (FK_SWTIME_UNSEEN_IN) with the CPU time the
 *    thread used between, from the scheduler's accounting (its
 *    sum_exec_runtime kept at each pick: no clock read): its block's
 *    exact length, never a guess; without BTF only its bound.
 *  - A switch-out picked of a thread on its way out (PF_EXITING, its offset
 *    from BTF) is let go, counted (fk_swtime_stats.exiting): perf takes a
 *    thread's per-task events away in do_exit, and such a pick made no
 *    sample.
 *  - A thread's last switch-out (do_task_dead: prev_state X or Z, not
 *    preempted) writes its exact total (FK_SWTIME_EXIT) and clears its
 *    entry: exited threads hold nothing, a reused tid starts afresh.
 *  - Which threads: all (host, user targets), a cgroup v2 and everything
 *    below it (bpf_current_task_under_cgroup, as perf's cgroup events),
 *    or processes by tgid and their children from their start (per-task
 *    targets: the fork program adds them; the caller may add more).
 *  - What could not be kept (the map full, the ring full) is counted per
 *    CPU and read with fk_swtime_stats. After fk_swtime_stop nothing more
 *    is written. */
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
                               switches; bpftrace sees the same). It used
                               oncpu ns of CPU between (its sum_exec_runtime
                               at in less at out): its one block (switch-outs
                               are all seen) lasted in - out - oncpu, from
                               out. oncpu FK_SWTIME_ONCPU_UNKNOWN (no BTF):
                               off CPU for at most in - out, a bound */
    FK_SWTIME_EXIT,         /* the thread's last switch-out, at in: from its
                               first switch-out in the window (out) it was on
                               CPU for oncpu ns, off CPU for the rest */
};

/* One block as the program writes it (the ring buffer's record). */
struct fk_swtime_block {
    uint32_t tid;
    uint32_t kind;          /* enum fk_swtime_kind */
    uint64_t out, in;       /* CLOCK_MONOTONIC ns */
    uint64_t oncpu;         /* FK_SWTIME_EXIT, FK_SWTIME_UNSEEN_IN: CPU time
                               since out; else 0 */
};
#define FK_SWTIME_ONCPU_UNKNOWN UINT64_MAX

struct fk_swtime_stats {
    uint64_t map_full;      /* switch-outs not kept: no room in the map */
    uint64_t ring_full;     /* blocks not written: the ring buffer was full */
    uint64_t exits;         /* last switch-outs of exiting threads (no block) */
    uint64_t missed;        /* tracepoint hits the kernel did not run the program
                               on: another BPF program was running on that CPU
                               (its recursion guard; perf then drops the sample too) */
    uint64_t outs;          /* the target's switch-outs seen (exits too) */
    uint64_t picked;        /* ... of them picked (perf records their stacks) */
    uint64_t unwritten;     /* picks whose sample the program could not write
                               (no event for the CPU, its ring full: perf counts
                               those lost too): let go, no block */
    uint64_t exiting;       /* ... picked, but of a thread on its way out
                               (PF_EXITING): let go, not recorded (its per-task
                               events may be gone: no sample) */
};

/* A pick's sample's raw part (PERF_SAMPLE_RAW of the sample the program
 * writes for it, fk_swtime_sample_event). */
struct fk_swtime_pick {
    uint32_t tid;
    uint32_t zero;
    uint64_t state;         /* sched_switch's prev_state (the preemption bit with it) */
    uint64_t out;           /* the switch-out's time, as its block's (CLOCK_MONOTONIC ns) */
};

/* task_struct.flags' bit for a thread in do_exit (include/linux/sched.h,
 * the same since Linux 2.6) */
#define FK_SWTIME_PF_EXITING 0x4

enum fk_swtime_filter { FK_SWTIME_ALL, FK_SWTIME_CGROUP, FK_SWTIME_TGIDS };

/* Maps made, the program loaded and run on every hit of sched_switch, on
 * the raw tracepoint (fk_bpf_attach_raw_tracepoint: a BPF link) where it
 * can, else through an event of its own (fk_bpf_attach_tracepoint: never the
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
/* Whether the program is a raw tracepoint's (no tracepoint record built
 * at any switch; else it runs on a tracepoint event's record). */
bool fk_swtime_is_raw(const struct fk_swtime *t);
/* A pick's state (struct fk_swtime_pick.state) as sched_switch's record
 * says prev_state: the same, or from a raw program's (the task's state,
 * the preemption flag in bit 32) the record's bit for it -- its letter's
 * in the tracefs format, the preemption bit 0x100 above them. */
uint64_t fk_swtime_pick_state(const struct fk_swtime *t, uint64_t state);
/* The record's prev_state for a raw program's (fk_swtime_pick_state's
 * core: the kernel's __trace_sched_switch_state). */
uint64_t fk_swtime_raw_state(uint64_t state);
/* A raw program's picks' kernel stacks start in the program and the
 * tracepoint's glue (bpf_trace_run4, __bpf_trace_sched_switch...): true
 * with the scheduler's text [*lo, *hi) (__sched_text_start..end), whose
 * first frame is where the sampled thread's stack begins; false when
 * there is nothing to cut (a tracepoint program's stacks start in
 * __schedule) or the text is not known (kallsyms hidden). */
bool fk_swtime_sched_text(const struct fk_swtime *t, uint64_t *lo, uint64_t *hi);
/* Which threads' switches are sampled, one in n, once the window opens
 * (fk_swtime_start).
 * cgroup_dir: for FK_SWTIME_CGROUP; FK_SWTIME_TGIDS starts with none
 * (fk_swtime_add_tgid). */
bool fk_swtime_filter(struct fk_swtime *t, enum fk_swtime_filter f, const char *cgroup_dir,
                      uint64_t n, char *err, size_t errlen);
/* task_struct.se.sum_exec_runtime's offset in the running kernel (what
 * fk_swtime_new reads the threads' CPU time with), and task_struct.flags'
 * in *flags_off (may be NULL; 0: unknown), kept for the boot in
 * DIR/btf-offsets and taken from there when its boot id, its check hash
 * and the offsets' bounds hold, else from the kernel's BTF (and the file
 * written anew); 0 with the reason in *note when there is none. */
int32_t fk_swtime_cpu_offset(const char **note, int32_t *flags_off);
/* Pick one switch-out in n (>= 1) from now on (one map update). */
bool fk_swtime_set_n(struct fk_swtime *t, uint64_t n);
/* The window opened (the capture's events on): the target's switch-outs
 * are counted and picked from now, and each thread's exact total counts
 * from its first switch-out from now (fk_swtime_thread). */
bool fk_swtime_start(struct fk_swtime *t);
/* Whether exact totals are kept (the kernel's BTF gave the CPU time's
 * place in task_struct); why not in note otherwise. */
bool fk_swtime_exact(const struct fk_swtime *t, const char **note);
/* tid's first switch-out in the window (*t0) and its CPU time then (*cpu0):
 * true when it has one. Its off-CPU time until a later moment is that
 * moment - t0 less the CPU time it used since (fk_proc_task_cpu_ns). */
bool fk_swtime_thread(struct fk_swtime *t, pid_t tid, uint64_t *t0, uint64_t *cpu0);
/* Programs on sched_switch now besides this one (another capture's of
 * this kind, a tool's), -1 when the kernel does not say. (They no longer
 * matter to this one's samples, which the program writes itself: said in
 * the result for what else ran.) */
int fk_swtime_others(const struct fk_swtime *t);
/* Each thread with a first switch-out in the window (fk_swtime_thread
 * gives it), to fn until it returns false: how many. The threads alive;
 * an exited one's entry is cleared at its last switch-out. */
size_t fk_swtime_threads(struct fk_swtime *t, bool (*fn)(void *ctx, pid_t tid), void *ctx);
/* Time the switches of process tgid's threads too (FK_SWTIME_TGIDS), or no
 * more (it exited). */
bool fk_swtime_add_tgid(struct fk_swtime *t, pid_t tgid);
/* fd: the perf event of CPU cpu (PERF_COUNT_SW_BPF_OUTPUT, on that CPU,
 * every task's) the program writes its picks' samples to -- each with the
 * stacks perf takes at sched_switch and a struct fk_swtime_pick as its raw
 * part. A CPU without one writes none (its picks counted unwritten). */
bool fk_swtime_sample_event(struct fk_swtime *t, int cpu, int fd);
void fk_swtime_forget_tgid(struct fk_swtime *t, pid_t tgid);
/* With FK_SWTIME_TGIDS (after fk_swtime_filter), a second program on
 * sched:sched_process_fork adds the children of the processes timed,
 * before they first run; nothing otherwise. Once only. */
bool fk_swtime_follow_forks(struct fk_swtime *t, char *err, size_t errlen);
/* The programs' own events (the switch program's: its raw tracepoint's
 * link, or its tracepoint event), at most 2, to fds; how many. fk_swtime_free closes them; a copy (dup) the caller holds keeps
 * the event, and the tracepoint, until it closes that too. */
size_t fk_swtime_events(const struct fk_swtime *t, int fds[2]);
/* Switches at or after at_ns are no longer timed, and none is picked
 * from now (the window's end). */
void fk_swtime_stop(struct fk_swtime *t, uint64_t at_ns);
/* Blocks written since the last call, each to fn; returns how many. Any
 * thread may call it, one at a time. */
size_t fk_swtime_drain(struct fk_swtime *t, void (*fn)(void *ctx, const struct fk_swtime_block *b),
                       void *ctx);
/* tid's picked switch-out with no switch-in yet (off CPU since *out): true. */
bool fk_swtime_pending(struct fk_swtime *t, pid_t tid, uint64_t *out);
void fk_swtime_stats(struct fk_swtime *t, struct fk_swtime_stats *st);
/* fk_swtime_stats's outs alone (no system call: the counters are mapped):
 * what the rate is followed by, every few milliseconds. */
uint64_t fk_swtime_outs(struct fk_swtime *t);
/* Bytes of the maps and ring (the kernel's memory, mapped in part). */
size_t fk_swtime_bytes(const struct fk_swtime *t);
/* The same before making them, for a ring of ring_bytes on this host. */
size_t fk_swtime_bytes_for(size_t ring_bytes);
void fk_swtime_free(struct fk_swtime *t);

#endif
