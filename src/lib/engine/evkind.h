/* SPDX-License-Identifier: GPL-2.0-only */
/* Event kinds: what a capture samples and what its samples mean, as a
 * description the engine (capture.c) drives -- never another copy of the
 * loop. A kind says
 *   - which events to open (1..FK_EVKIND_MAX_EVENTS in one evlist) and how
 *     each one's perf_event_attr differs from the engine's defaults (config);
 *   - what the profile's second value is (values: "cpu"/"nanoseconds",
 *     "faults"/"count", "off-cpu"/"nanoseconds") and which value the folded
 *     stacks count;
 *   - what each sample weighs (sample): now (CPU clock, one in N), or later
 *     (off-CPU: the time until the thread runs again), by keeping a
 *     reference to the sample's interned stack and adding to it afterwards;
 *   - optionally, what it does with the other records (record: switch
 *     records, its own side-band) and at the end of the window (flush).
 *
 * The engine calls every hook from its one thread, with records of all
 * CPUs merged in time order (so a switch-out sample on one CPU comes before
 * the switch-in record on another that follows it). Samples outside the
 * target (user/cgroup filters) reach only a kind's outside hook.
 * Per-sample work must be small and bounded: the hooks run inside the
 * capture window.
 *
 * Stack hooks (struct fk_stack_hook) are the other plug-in: they see every
 * kept sample's stack after user-stack unwinding, before the kind, and may
 * rewrite its user frames -- e.g. replace _PyEval_EvalFrameDefault frames
 * by Python functions read from the process (fk_engine_named_frame makes a
 * frame from a name). They apply to every event kind.
 *
 * Built in (evkind.c): fk_evkind_clock (a timer sampled at a frequency:
 * cpu-clock or cycles, weight = the nominal period in ns) and
 * fk_evkind_counted (any software event or tracepoint, one hit in N,
 * weight = N). */
#ifndef FK_ENGINE_EVKIND_H
#define FK_ENGINE_EVKIND_H

#include "capture/sample.h"
#include "symbols/symbols.h"

#include <stdbool.h>
#include <stdint.h>

struct perf_event_attr;
union perf_event;
struct fk_capture_opts;
struct fk_engine;               /* the running capture; kinds use the functions below */
struct fk_reader;
struct fk_pygate;

#define FK_EVKIND_MAX_EVENTS 4

/* A kept sample's stack as the engine built it: kernel frames leaf first,
 * then user frames leaf first (locs[user..n)). Hooks may rewrite
 * locs[user..n) in place, up to cap frames. */
struct fk_stack_frames {
    pid_t pid, tid;
    struct fk_loc *locs;
    unsigned n;                 /* frames in locs */
    unsigned user;              /* first user frame (== n: none) */
    unsigned cap;               /* room in locs */
    bool user_unwound;          /* user frames came from the DWARF unwinder (not
                                   the kernel's frame-pointer chain) */
};

/* The profile's values for a kind: sample types "COUNT_TYPE/count" and
 * (type, unit); fold_weight: the folded stacks count weights (ns, events),
 * else samples. period: pprof's period, in unit. */
struct fk_evkind_values {
    const char *count_type;     /* what nsamples counts ("switches"); NULL: "samples" */
    const char *type, *unit;
    int64_t period;
    bool fold_weight;
};

struct fk_evkind {
    const char *name;
    /* Start: make the kind's state for this capture (*state, may stay
     * NULL) and say how many events it opens. false with one phrase in
     * err (e.g. a tracepoint not found: name the fix). */
    bool (*start)(const struct fk_capture_opts *o, void **state, unsigned *nevents,
                  char *err, size_t errlen);
    /* Event i's attr. The engine filled it first: type/config/sample
     * rate from o->event, sample_type (TID, TIME, CPU, IP, CALLCHAIN and,
     * in DWARF mode, REGS_USER + STACK_USER; IDENTIFIER when there are
     * several events), the side-band bits (mmap2, comm, task) on event 0
     * only, exclude_*, clock, disabled, watermark. A kind changes what
     * differs: type/config (a tracepoint's id), PERIOD vs fixed period,
     * PERF_SAMPLE_RAW, context_switch, or no callchain for an event whose
     * stacks it does not need. The engine reads the layout back after
     * this hook (fk_sample_format), so any decodable sample_type works. */
    bool (*config)(void *state, const struct fk_capture_opts *o, unsigned i,
                   struct perf_event_attr *attr, char *err, size_t errlen);
    /* The profile's second value. */
    void (*values)(void *state, const struct fk_capture_opts *o, struct fk_evkind_values *v);
    /* A kept sample of event i and its stack (the leaf alone for an event
     * opened without PERF_SAMPLE_CALLCHAIN). Aggregate with fk_engine_add
     * now, or fk_engine_stack_ref + fk_engine_add_ref later. */
    void (*sample)(void *state, struct fk_engine *e, unsigned event, const struct fk_sample *s,
                   const struct fk_stack_frames *st);
    /* Optional: a sample of event i that the target's filters (user,
     * cgroup, a pid's tree in its cgroup) kept from sample, not to be
     * weighed: for a kind that weighs each sample by its counter's count
     * since that counter's previous sample (PERF_SAMPLE_READ), which must
     * see every one of them. */
    void (*outside)(void *state, struct fk_engine *e, unsigned event, const struct fk_sample *s);
    /* Every other record (MMAP2, COMM, FORK, EXIT, SWITCH, SWITCH_CPU_WIDE,
     * LOST...) after the engine handled it; id is its sample_id_all
     * trailer (time, cpu, pid/tid). May be NULL. */
    void (*record)(void *state, struct fk_engine *e, const union perf_event *ev,
                   const struct fk_sample_id *id);
    /* Optional: each side-band record as it leaves its ring, in the ring
     * reader's thread (then, after it stopped, the engine's), before any
     * ordering; f lays out its trailer (fk_sample_id_parse). false: the
     * kind is done with it (it counted it, say), and the record is
     * neither copied, ordered nor handed to record -- at a switch storm
     * half of the records are switch-outs off-CPU needs only to count.
     * It must be cheap and touch only state of its own until flush. May
     * be NULL. */
    bool (*early_record)(void *state, const union perf_event *ev, const struct fk_sample_format *f);
    /* Optional: each sample of event i as it leaves its ring, in the ring
     * reader's thread like early_record (and in each ring's order with
     * it), before any filter: a kind whose early_record keeps the
     * side-band records that follow some samples (off-CPU: the switch
     * record right after a recorded switch-out). Same rules as
     * early_record; the sample is always handed on. May be NULL. */
    void (*early_sample)(void *state, unsigned event, const struct fk_sample *s);
    /* The window ended and every record was delivered: weigh what is
     * pending (e.g. threads still off-CPU, up to end_time: when the events
     * were disabled, in the records' clock, CLOCK_MONOTONIC ns). May be
     * NULL. */
    void (*flush)(void *state, struct fk_engine *e, uint64_t end_time);
    void (*stop)(void *state);      /* free the state; may be NULL */
    /* The window opened (open: the events are on) or ended (before they
     * are closed), from the engine's thread: a kind that steers its events
     * while they run, from their counts (fk_engine_event_count,
     * fk_engine_set_period), does it on a thread of its own started here
     * and joined at the end -- the records reach the kind tens of
     * milliseconds after they happen, seconds while symbols load. Also
     * called with open false when the window failed. May be NULL. */
    void (*window)(void *state, struct fk_engine *e, bool open);
    /* Optional: the events are open and mapped, not yet enabled (from the
     * engine's thread): a kind that attaches programs of its own
     * (their events handed to fk_engine_keep_fd). false with one phrase in err: the capture
     * fails. */
    bool (*opened)(void *state, struct fk_engine *e, char *err, size_t errlen);
    /* Optional: the ring reader's pass hook (struct fk_reader_opts.pass),
     * in its thread: a buffer of the kind's own (a BPF ring buffer)
     * drained with the rings, records made from it handed on in time
     * order with theirs (fk_reader_add; f lays out their trailer). Same
     * rules as early_record. */
    void (*reader_pass)(void *state, struct fk_reader *r, const struct fk_sample_format *f,
                        bool end);
    /* Optional: bytes the kind holds now, charged to --max-memory with the
     * engine's own (called in the engine's thread: what that thread owns,
     * and what the kind made in the kernel for the capture, BPF maps). */
    size_t (*bytes)(void *state);
    /* > 0: the ring reader reads the rings every poll_ms on its own clock
     * (sooner when a pass found a ring more than a quarter full: reader.c,
     * next_timeout) and the kernel wakes no one (the watermark at a full
     * ring), for a kind whose samples a wake-up would disturb, or that needs its
     * records no sooner; 0: the engine's watermark and wake-ups. The
     * engine keeps the watermark's wake-ups instead where the rings hold
     * less than 4 polls of a frequency's largest samples (config.c
     * choose_reads). */
    unsigned poll_ms;
    /* With poll_ms: an early stack hook (struct fk_stack_hook.early) is
     * woken for the samples it reads (the CPU kind: a Python generator
     * moves on within a millisecond) -- by the Python gate's program,
     * the rings still read on the clock (config.c choose_wakeups), or,
     * without the gate, by the kernel at every sample. false: the
     * kind's clock holds with early hooks too (the counted kind: a reader
     * woken on the sampled CPU would add its own page faults to the
     * count). */
    bool early_wakeups;
    /* > 0: the engine's thread takes the reader's copies at least every
     * take_ms when nothing wakes it sooner (the reader wakes it at the
     * kernel's wake-ups, a sample tap's asking, chunks a quarter of the
     * limit); 0, or a followed tree ('run', 'pid' in a cgroup: its end
     * is seen at a take), every 100 ms (capture.c POLL_MS). Each take begins with
     * the engine's tables and the unwinder's per-address cache out of
     * every cache (the sampled tasks ran in between): fewer, larger
     * batches pay that less often, for copies held longer (their bytes
     * charged to --max-memory as ever) and limits and Ctrl-C seen up to
     * take_ms later. */
    unsigned take_ms;
};

/* A stack rewriter run on every kept sample after user-stack unwinding. */
enum { FK_EARLY_CATCH_UP = 1u, FK_EARLY_FOLLOW = 2u, FK_EARLY_HELD = 4u };
struct fk_stack_hook {
    const char *name;
    void *state;
    void (*user_frames)(void *state, struct fk_engine *e, const struct fk_sample *s,
                        struct fk_stack_frames *st);
    /* Optional: each sample as it is copied out of its ring, before it
     * waits (REORDER_SLACK) to be handled in time order and before any
     * filter: for state of the target that must be read as soon after the
     * sample as possible (a Python thread's frames). Called in the ring
     * reader's thread, concurrently with the engine's thread: it must be
     * cheap, touch nothing of the engine and lock its own state.
     * Returns FK_EARLY_* bits: CATCH_UP, the sample needs the engine's
     * thread (catch_up), which is woken for it (otherwise the kernel's
     * per-sample wake-ups stay the reader's); FOLLOW, the hook read the
     * sampled thread for it, and the reader's thread moves to the CPU it
     * ran on (capture.c follow_cpu); HELD, the hook keeps something for
     * the sample until it is handled (a read), and the engine's thread
     * takes within FK_READER_TAP_WAKE_NS (without it, on its own clock). */
    unsigned (*early)(void *state, const struct fk_sample *s);
    /* With early: from the engine's thread, once before the reader
     * starts and then before each batch of samples is handled. */
    void (*catch_up)(void *state, struct fk_engine *e);
    /* Optional, with early: at the end of a reader's pass in which early
     * asked for CATCH_UP (the reader's thread, as early), after the
     * pass's every record was seen (forked, mapped): whether that is still
     * due -- false, the engine's thread catches up on its own clock, not
     * woken for it. Without it: due. */
    bool (*catch_up_due)(void *state);
    /* Optional, with early: each executable file mapping as its record
     * leaves the ring (the reader's thread, as early), while the
     * symbolizer learns of it only REORDER_SLACK later: a process that
     * just exec'd a program the hook reads, whose samples early can ask
     * the engine's thread for. time: the record's. */
    void (*mapped)(void *state, pid_t pid, const char *path, uint64_t time);
    /* Optional, with early: each new process's fork record (ppid forked
     * pid; not a thread's) as it leaves the ring (the reader's thread, as
     * early). time: the record's. */
    void (*forked)(void *state, pid_t pid, pid_t ppid, uint64_t time);
    /* Optional: bytes the hook holds, counted toward --max-memory. */
    size_t (*bytes)(void *state);
};

/* ---- what kinds and hooks may call ---- */

/* Aggregate one stack: samples += nsamples, weight += weight. */
void fk_engine_add(struct fk_engine *e, const struct fk_stack_frames *st, uint64_t nsamples,
                   uint64_t weight);
/* Intern a stack now (it counts nothing yet) and return a reference that
 * stays valid for the whole capture, for fk_engine_add_ref later: a kind
 * that weighs a sample after the fact keeps 4 bytes, not the stack.
 * Stacks interned and never weighted are left out of the profile. */
uint32_t fk_engine_stack_ref(struct fk_engine *e, const struct fk_stack_frames *st);
void fk_engine_add_ref(struct fk_engine *e, uint32_t ref, uint64_t nsamples, uint64_t weight);
/* A frame named as given ("[python] run_tasks (app.py)"), for hooks that
 * splice frames the symbolizer cannot know. */
struct fk_loc fk_engine_named_frame(struct fk_engine *e, const char *name);
/* The symbolizer (comm of a thread, locations), for kinds that need it. */
struct fk_symbolizer *fk_engine_symbolizer(struct fk_engine *e);
/* Whether process pid is the target's now, as its samples would be judged
 * (the tree followed, a user's processes; the events themselves limit the
 * rest): for kinds that account for threads with no sample. False for a
 * cgroup target, whose events see the whole host: only a sample's cgroup
 * tells. From the engine's thread, in record order (a member stays the
 * tree's just after its EXIT record). */
bool fk_engine_owns(struct fk_engine *e, pid_t pid);
/* The DWARF unwinder (NULL in frame-pointer mode): for stack hooks that
 * read the last sample's frame stack pointers (fk_unwind_last_sps). */
struct fk_unwinder *fk_engine_unwinder(struct fk_engine *e);
/* The Python wake-up gate (capture/pygate.h) when the reader is woken
 * through it, else NULL: for the Python stack hook, which marks the
 * processes it found running CPython (or not). */
struct fk_pygate *fk_engine_pygate(struct fk_engine *e);
/* The kind's values as its values hook set them (period: the weight of one
 * sample of a fixed-rate kind). */
const struct fk_evkind_values *fk_engine_values(const struct fk_engine *e);

/* Event i's count so far (every hit, sampled or not; inherited events'
 * included) summed over its fds, and how many fds were read (each a
 * system call). This and fk_engine_set_period may be called from a kind's
 * own thread in the window (struct fk_evkind.window). */
uint64_t fk_engine_event_count(struct fk_engine *e, unsigned event, size_t *nfds);
/* Sample one hit in period from now on, on every fd of event i (opened
 * with a fixed period and PERF_FORMAT_ID in its read_format):
 * PERF_EVENT_IOC_PERIOD. The kernel applies it to the events flamekit
 * opened (per CPU, or per thread listed at the start), not to the ones a
 * thread inherited when it was created (they keep the period in force at
 * its creation), and an event running at that moment samples its next
 * hit (fk_engine_inherits says whether there are such copies). spread >
 * 0: each fd its own period, drawn uniformly from period +- spread (less
 * than period), so that counters that tick in step (two threads
 * ping-ponging, each with its own) are not sampled in step. period 0:
 * only find the fds (the first call looks for them). false
 * with one phrase in err when an fd refused (some may have taken it). */
bool fk_engine_set_period(struct fk_engine *e, unsigned event, uint64_t period, uint64_t spread,
                          char *err, size_t errlen);
/* Whether the events follow the target's tasks through inherited
 * per-task copies (PID, RUN where no cgroup could be had: the threads
 * created in the window keep the period of their creation), rather than
 * per CPU (host, user, cgroup targets, and PID/RUN trees in a cgroup:
 * fk_engine_set_period reaches every task). Valid from the window's
 * opening. */
bool fk_engine_inherits(const struct fk_engine *e);

/* fd (a kind's own perf event, e.g. a BPF program's: the engine's from
 * now on) closed with the capture's events, after the result's files are
 * written when they are held: closing a tracepoint's last event waits for
 * RCU grace periods, seconds on a busy host. */
void fk_engine_keep_fd(struct fk_engine *e, int fd);
/* One more event per online CPU for event i (pid -1: every task; enabled,
 * not inherited), with event i's attr (its sample_type, read_format,
 * clock) but type and config as given and no side-band records: its
 * samples go to that CPU's ring (PERF_EVENT_IOC_SET_OUTPUT) and count as
 * event i's. For a kind whose BPF program writes event i's samples
 * (bpf_perf_event_output needs an event per CPU, whatever the target's
 * events are). fds[k] on CPU cpus[k], *n of them (at most cap); the
 * engine's (fk_engine_keep_fd). From the opened hook; event i's attr must
 * have PERF_FORMAT_ID. false with one phrase in err. */
bool fk_engine_cpu_events(struct fk_engine *e, unsigned event, uint32_t type, uint64_t config,
                          int *fds, int *cpus, size_t cap, size_t *n, char *err, size_t errlen);
/* PID, RUN in cgroup mode: the cgroup v2 directory the events are limited
 * to (its tasks and those below); NULL otherwise. From the opened hook on. */
const char *fk_engine_tree_cgroup(const struct fk_engine *e);

/* Built-in kinds. */
extern const struct fk_evkind fk_evkind_clock;      /* o->event at o->event.freq Hz */
extern const struct fk_evkind fk_evkind_counted;    /* o->event, one in o->event.period */

#endif
