/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture engine: the events of an event kind (evkind.h: CPU clock,
 * one-in-N counted events, ...) opened through libperf on a target
 * (target.h: host, pids, user, cgroup, a command), per-CPU rings read in
 * time order (ring.h), each sample decoded once (sample.h), side-band
 * records fed to the symbolizer, stacks aggregated at sample time into a
 * table keyed by (comm, pid, locations) -- memory grows with unique
 * stacks, not samples -- and named once at the end into a structured
 * profile (locations, mappings, functions: what pprof needs) from which
 * the folded stack table is drawn. The phases are in engine.h.
 *
 * Used by the profile runner (profile/runner.c) for every capture
 * command. */
#ifndef FK_ENGINE_CAPTURE_H
#define FK_ENGINE_CAPTURE_H

#include "capture/pygate.h"
#include "capture/stackend.h"
#include "capture/sysinfo.h"
#include "capture/target.h"
#include "capture/tree.h"
#include "stacks/prof.h"
#include "stacks/stacktab.h"
#include "symbols/pins.h"
#include "symbols/symbols.h"
#include "unwind/unwind.h"
#include "util/fk.h"

#include <signal.h>
#include <sys/types.h>

/* The sampling event. */
struct fk_event {
    uint32_t type;          /* PERF_TYPE_* */
    uint64_t config;        /* PERF_COUNT_* */
    uint64_t freq;          /* samples per second per CPU; 0 = fixed period */
    uint64_t period;        /* one sample every `period` events (freq == 0);
                               PERF_SAMPLE_PERIOD is then left out of
                               sample_type, or software events sample every hit */
    bool exclude_kernel;
    bool exclude_user;
    bool no_callchain;      /* leaf ip only */
    char name[48];          /* "cpu-clock", "cycles", "page-faults" */
};
/* Hardware cycles if this machine has a PMU, else cpu-clock (like perf). */
void fk_event_cpu_default(struct fk_event *ev, uint64_t freq);

/* How user stacks are recorded (--call-graph). */
enum fk_callgraph {
    FK_CG_AUTO,     /* dwarf where the kernel, the architecture and the ring
                       limits allow it, else fp (with a note saying why) */
    FK_CG_DWARF,    /* registers + a copy of the stack, unwound online from
                       .eh_frame/.debug_frame/.gopclntab; fp where no CFI */
    FK_CG_FP,       /* the kernel's frame-pointer walk: cheapest, but code
                       built without frame pointers loses its callers */
};
const char *fk_callgraph_name(enum fk_callgraph m);     /* "auto", "dwarf", "fp" */

/* Stack bytes copied per sample (--stack-size): the default was chosen by
 * measuring complete stacks of python3.11 (bench/unwind.sh); the kernel
 * takes at most 65528 (a record's size is 16 bits). */
#define FK_STACK_SIZE_DEFAULT (32 * 1024)
#define FK_STACK_SIZE_MIN 512
#define FK_STACK_SIZE_MAX 65528
/* Processes the Python gate holds (engine/config.c choose_wakeups): its
 * maps' kernel memory counts against --max-memory from the start
 * (fk_pygate_fixed_bytes). */
#define FK_ENGINE_PYGATE_ENTRIES 16384
struct fk_evkind;
/* Whether a capture of KIND with an early stack hook (Python frames) runs
 * the Python gate (config.c choose_wakeups): only a kind that keeps the
 * kernel's wake-ups for early hooks (evkind.h early_wakeups: the CPU
 * clock; or one with no clock of its own) has wake-ups to gate. The
 * profile runner asks the same for the --max-memory least limit. */
bool fk_engine_runs_pygate(const struct fk_evkind *kind, bool early_hook);
/* The samples a CPU's perf ring holds in a capture at freq samples a
 * second (0: a counted event) in callgraph mode with stack_size bytes of
 * stack copies (0: the default), as fk_engine_configure sizes the rings
 * when the kernel gives the mode asked (auto: dwarf, with root's mlock
 * budget): what the Python gate's ring is sized by (fk_pygate_new), which
 * the profile runner's --max-memory least limit counts. */
uint64_t fk_engine_ring_samples(uint64_t freq, enum fk_callgraph callgraph, uint32_t stack_size);

/* The capture's progress, for a status line: reported when the window
 * opens (elapsed 0: the capture runs), about every second, and at its end. */
struct fk_capture_progress {
    uint64_t elapsed_ns;
    uint64_t duration_ns;           /* the window asked for; 0 = until stopped */
    uint64_t samples_kept, lost;
    bool done;                      /* the window ended: clear the line */
};
typedef void (*fk_capture_progress_fn)(void *ctx, const struct fk_capture_progress *p);

struct fk_evkind;
struct fk_stack_hook;
struct fk_sample_format;

struct fk_capture_opts {
    struct fk_event event;
    enum fk_callgraph callgraph;    /* default FK_CG_AUTO */
    uint32_t stack_size;            /* dwarf: bytes per sample, FK_STACK_SIZE_DEFAULT */
    struct fk_target *target;
    uint64_t duration_ms;           /* 0 = until stopped / the targets exit */
    uint64_t max_mem_bytes;         /* stack table + symbolizer; stop cleanly beyond */
    unsigned ring_pages;            /* data pages per CPU ring, power of two; 0 = auto */
    bool weight_by_period;          /* fixed period: count += period per sample */
    const char *value_name;         /* fixed period: what one event is, in the
                                       structured profile ("faults"); NULL = the
                                       event's name */
    bool quiet;                     /* no warnings about degraded modes */
    bool no_priority;               /* threads at flamekit's own nice (--no-priority) */
    /* Called once as the window opens, about once a second during it and
     * once with done set after it (the library never writes to the
     * terminal: the command draws). NULL: none. */
    fk_capture_progress_fn progress;
    void *progress_ctx;
    fk_warn_fn warn;                /* degraded modes the line names (unless quiet);
                                       NULL: none */
    void *warn_ctx;
    /* The event kind (engine/evkind.h); NULL: fk_evkind_clock when
     * event.freq is set, else fk_evkind_counted. */
    const struct fk_evkind *kind;
    const void *kind_opts;          /* the kind's own options (struct fk_offcpu_opts
                                       for fk_evkind_offcpu); NULL: none */
    /* Stack rewriters run on every kept sample after unwinding, in order. */
    const struct fk_stack_hook *const *stack_hooks;
    size_t nstack_hooks;
    volatile sig_atomic_t *stop;    /* non-zero: end the capture (signal handlers) */
    struct fk_sym_opts sym;         /* symbolizer options */
    /* Benchmarks (bench/replay): every record as it is handed on, in time
     * order, with its event's layout. NULL: none. */
    void (*record_tap)(void *ctx, const struct fk_sample_format *f, const void *rec, size_t len);
    void *record_tap_ctx;
};
void fk_capture_opts_init(struct fk_capture_opts *o);

struct fk_held_events;

struct fk_capture_result {
    struct fk_stacktab stacks;      /* folded "comm;root;...;leaf" -> count */
    struct fk_prof prof;            /* the same stacks with locations, mappings,
                                       comm/pid labels; sample types: frequency
                                       mode samples/count + cpu/nanoseconds,
                                       fixed period samples/count + NAME/count */
    uint64_t samples;               /* samples read */
    uint64_t samples_kept;          /* ... that belonged to the target */
    uint64_t malformed;             /* sample records too short for their sample_type */
    uint64_t lost;                  /* records the kernel dropped (ring full) */
    uint64_t lost_events;           /* PERF_RECORD_LOST records */
    uint64_t lost_samples;          /* samples of the event the kernel dropped, read
                                       with the count (PERF_FORMAT_LOST; 0 before
                                       Linux 6.0): also those no LOST record reported */
    uint64_t throttled, unthrottled;/* PERF_RECORD_THROTTLE / UNTHROTTLE */
    uint64_t period_sum;            /* sum of sample periods (frequency mode) */
    uint64_t event_count;           /* the event's own total (read()) */
    uint64_t time_enabled, time_running;
    uint64_t start_realtime_ns;     /* wall clock at enable */
    uint64_t duration_ns;           /* enable .. disable */
    uint64_t unique_stacks;         /* raw (location) stacks */
    uint64_t mem_bytes;             /* peak table + symbolizer bytes */
    uint64_t kernel_frames, user_frames;
    uint64_t naming_ns;             /* after the capture: naming the unique
                                       locations and folding (benchmarks) */
    const char *stop_reason;        /* "duration", "signal", "target exited", "memory limit" */
    bool mem_limited;
    bool child_exited;              /* RUN */
    int child_status;               /* RUN: wait status */
    unsigned ring_pages;
    uint64_t ring_bytes;            /* bytes of records read from the rings */
    /* the ring reader's queue (capture/reader.h): its peak bytes, and the
     * passes that found it full (records left in a ring, the kernel's to
     * drop and count in lost) */
    uint64_t reader_peak_bytes, reader_full;
    /* the most bytes one pass found in one ring, and the passes that came
     * sooner than the reader's period because a ring was found more than a
     * quarter full (reader.c, next_timeout) */
    uint64_t reader_ring_peak, reader_soon;
    uint64_t reader_passes;         /* passes over the rings */
    uint64_t reader_gap_peak_ns;    /* the longest time between two passes */
    /* records it read, and side-band records a kind counted as they left
     * the rings and had it drop there (off-CPU's switch-outs) */
    uint64_t reader_records, reader_dropped;
    /* the nice value the capture's threads ran at (raised: above
     * flamekit's own, capture.c engine_priority) */
    int nice;
    bool nice_raised;
    bool nice_refused;              /* not raised: --no-priority */
    /* the reader read the rings every reader_poll_ms on its own clock, the
     * kernel waking no one (struct fk_evkind.poll_ms); 0: at the kernel's
     * wake-ups (a quarter ring, every sample for an early stack hook) */
    unsigned reader_poll_ms;
    uint64_t reader_moves;          /* the reader's thread bound to a sampled
                                       thread's CPU (capture.c follow_cpu) */
    uint64_t reader_released;       /* ... let go of, a sample read late */
    /* what wakes the reader (config.c choose_wakeups): "watermark" (a
     * quarter ring), "clock" (reader_poll_ms), "python gate" (a Python
     * sample, capture/pygate.h) or "every sample"; the note says why
     * not the gate where an early hook wanted it */
    const char *reader_wakeups;
    char reader_wakeups_note[192];
    struct fk_pygate_stats gate;    /* the Python gate (zero without it) */
    /* files and JIT /tmp directories pinned by the reader (symbols/pins.h) */
    struct fk_pins_stats pins;
    int ncpus;
    struct fk_sym_stats sym;
    /* user stacks: the mode used (auto resolved), why auto chose fp, the
     * unwinder's statistics (dwarf) */
    enum fk_callgraph callgraph;
    uint32_t stack_size;
    char callgraph_note[256];
    struct fk_unwind_stats unwind;
    struct fk_stack_ends_stats stack_ends;  /* stack copies cut where threads' stacks end */
    /* For one-in-N verification (capture/period_check.h): counters opened
     * (CPUs x threads) and tasks forked under inherited counters, each of
     * which keeps its own remainder below the period. */
    uint64_t counters;
    /* Samples the kernel counted but never wrote, without a LOST record
     * or PERF_FORMAT_LOST: each sample carries its counter's own count
     * (PERF_SAMPLE_READ, one counter per CPU), so a count that moved on
     * by more than one period between two samples of a counter shows a
     * sample that is not there. Linux drops a few this way, with user
     * registers and stacks sampled, in bursts (seen on 6.18). checked:
     * the counts were read (per-CPU counters of one event). */
    uint64_t samples_unwritten;
    bool unwritten_checked;
    uint64_t forks;
    uint64_t exits;                 /* PERF_RECORD_EXIT of processes (not threads) */
    /* PID, RUN: how the target's processes were followed: "cgroup" (per-CPU
     * events the kernel limits to a cgroup: every process is sampled from
     * its first instruction, CPU-wide periods do not restart per child) or
     * "per-task" (inherited per-task events: each child starts its period
     * from zero, so a child that runs less than one is never sampled), or
     * "bpf" (PID, CPU clock, the target in the root or a large cgroup:
     * per-CPU events over the host, other processes' samples dropped in
     * the kernel by a map of the tree, capture/bpftree.h); tree_note says
     * why not "cgroup". NULL for the other targets. */
    const char *tree_mode;
    char *tree_cgroup;              /* "cgroup": its directory */
    char tree_note[320];
    /* PID in cgroup mode: the target's processes followed from the
     * records (capture/tree.h); samples of the cgroup's other processes
     * are dropped before unwinding and counted */
    bool tree_followed;
    struct fk_tree_stats tree;
    uint64_t samples_outside;
    /* CGROUP: the event counted in the cgroup alone (per-CPU cgroup
     * counters), when they could be opened. */
    uint64_t target_count;
    bool have_target_count;
    /* The capture's events, disabled, their rings unmapped: closed by
     * fk_capture_result_free, after the files are written. Closing the
     * last event on a tracepoint (off-CPU's sched_switch) waits for RCU
     * grace periods (synchronize_rcu_tasks_trace), which on a host whose
     * CPUs are all busy took 10-60 s: the files come first. */
    struct fk_held_events *held;
};

/* Run the capture. Returns FK_EXIT_OK, or FK_EXIT_ERROR (126/127: a RUN
 * command could not be started) with one line saying why in err (e.g.
 * perf_event_paranoid; no program name, nothing printed). r->stacks and
 * r->prof are valid on success; release the result with
 * fk_capture_result_free. */
int fk_capture_run(const struct fk_capture_opts *o, struct fk_capture_result *r, char *err,
                   size_t errlen);
void fk_capture_result_free(struct fk_capture_result *r);
/* Close r's events now (fk_capture_result_free does it too). */
void fk_held_events_close(struct fk_held_events *h);

/* Replay (benchmarks): records saved by record_tap handled as a capture
 * handles them -- decode, unwind, locate, aggregate -- without perf, then
 * named into r. The engine is configured from o as a capture would be;
 * the symbolizer scans /proc when made, so the recorded processes should
 * still run. fk_replay_new returns NULL with the reason in err. */
struct fk_replay;
struct fk_replay *fk_replay_new(const struct fk_capture_opts *o, struct fk_capture_result *r,
                                char *err, size_t errlen);
/* The sample layout the replay decodes (that of event 0). */
const struct fk_sample_format *fk_replay_format(const struct fk_replay *p);
/* One record (8-byte aligned, len = its header's size), in time order. */
void fk_replay_record(struct fk_replay *p, const void *rec, size_t len);
/* What the live loop does per wake-up besides records: symbol loading. */
void fk_replay_wakeup(struct fk_replay *p);
/* Name the stacks into r and free the engine; r as fk_capture_run's. */
void fk_replay_finish(struct fk_replay *p);

#endif
