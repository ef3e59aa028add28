/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture engine's state and its phases, shared by the files of the
 * engine only (capture.c runs them; config.c, open.c, naming.c are
 * phases). The shape is perf's: configure the events (evsel__config),
 * open them (record__open), map the rings (record__mmap), read records
 * and decode each sample once (evsel__parse_sample, here sample.h), then
 * read the counts and name the stacks.
 *
 * Phases in order, each a function of its own:
 *   fk_engine_configure  call-graph mode, ring size, one attr per event
 *   fk_engine_open       cpu/thread maps, the evlist, retries (no
 *                        PERF_FORMAT_LOST on old kernels), sample ids
 *   fk_engine_mmap       the rings, halved while locked memory is short
 *   fk_engine_start      symbolizer, unwinder, the ring reader's thread
 *                        (reader.h), enable, /proc scan
 *   (loop)               take the reader's copies, hand records on in time order
 *   fk_engine_read_counts  the events' own counts after disabling
 *   fk_engine_name       unique stacks -> the structured profile */
#ifndef FK_ENGINE_ENGINE_H
#define FK_ENGINE_ENGINE_H

#include "engine/capture.h"
#include "engine/evkind.h"
#include "capture/reader.h"
#include "capture/ring.h"
#include "capture/sample.h"
#include "capture/target.h"
#include "capture/tree.h"
#include "capture/bpftree.h"
#include "capture/pygate.h"
#include "capture/stackend.h"

#include <linux/perf_event.h>
#include <sched.h>

/* Frames kept per stack (kernel + user). */
#define FK_ENGINE_MAX_FRAMES 512

struct perf_cpu_map;
struct perf_thread_map;
struct perf_evlist;
struct perf_evsel;

/* A frame in 8 bytes: the DSO index in the top 16 bits, the address's low
 * 48 in the rest -- when the index is below 0xffff and the address is
 * canonical (user addresses and file offsets below 2^47, kernel ones
 * sign-extended from bit 47). */
#define FK_ENGINE_FRAME_WIDE 12     /* dso u32, addr u64 */
static inline bool fk_engine_frame_pack(struct fk_loc l, uint64_t *w)
{
    uint64_t top = l.addr >> 47;
    if (l.dso >= 0xffff || (top != 0 && top != 0x1ffff))
        return false;
    *w = (uint64_t)l.dso << 48 | (l.addr & 0xffffffffffffull);
    return true;
}
static inline struct fk_loc fk_engine_frame_unpack(uint64_t w)
{
    uint64_t low = w & 0xffffffffffffull;
    return (struct fk_loc){ (uint32_t)(w >> 48), low >> 47 ? low | 0xffff000000000000ull : low };
}

struct fk_engine {
    const struct fk_capture_opts *o;
    struct fk_capture_result *r;
    char *err;                      /* why it failed, one line (fk_engine_fail) */
    size_t errlen;
    /* configure */
    const struct fk_uw_arch *arch;  /* NULL: no DWARF unwinding on this architecture */
    enum fk_callgraph mode;         /* resolved: FK_CG_DWARF or FK_CG_FP */
    uint32_t stack_size;
    unsigned pages;                 /* data pages per ring */
    bool ring_limited;              /* pages were cut to the mlock budget */
    uint64_t sample_bytes;          /* the largest sample the mode records */
    unsigned poll_ms;               /* the reader's clock (config.c choose_reads);
                                       0: the kernel's wake-ups */
    const struct fk_evkind *kind;
    void *kind_state;
    unsigned nevents;
    struct perf_event_attr attr[FK_EVKIND_MAX_EVENTS];
    struct fk_sample_format fmt[FK_EVKIND_MAX_EVENTS];
    struct fk_evkind_values values;
    /* PID, RUN: per-CPU events the kernel limits to a cgroup
     * (PERF_FLAG_PID_CGROUP) instead of inherited per-task events */
    const char *tree_cgroup;        /* its directory; NULL: per-task */
    char *pid_cgroup;               /* PID: the target's cgroup (tree_cgroup), owned */
    /* PID in cgroup mode: the cgroup holds others too; samples are kept
     * by the target's process tree, followed from the records */
    bool follow_tree;
    /* PID in the root (or a large) cgroup, CPU clock, BPF usable: per-CPU
     * events over the host, the samples of processes outside the tree
     * dropped in the kernel (capture/bpftree.h), then the tree as above */
    bool tree_bpf;
    struct fk_bpftree *bpftree;
    struct fk_bpftree_memo pin_memo;    /* the reader's: bpftree's last answer */
    /* an early stack hook's wake-ups: the reader woken only for Python
     * samples (config.c choose_wakeups); NULL: at every sample */
    struct fk_pygate *pygate;
    bool tree_resync;               /* records were lost: check against /proc */
    struct fk_tree tree;
    /* open */
    struct perf_cpu_map *cpus;
    struct perf_thread_map *threads;
    struct perf_evlist *evlist;
    struct perf_evsel *evsel[FK_EVKIND_MAX_EVENTS];
    struct fk_u64map event_of;      /* sample id -> event index + 1 (several events) */
    int *cgfds;                     /* CGROUP: the target's own counters per CPU */
    int *kept_fds;                  /* fk_engine_keep_fd's */
    size_t nkept_fds, capkept_fds;
    int *period_fds[FK_EVKIND_MAX_EVENTS];  /* fk_engine_set_period: each event's fds,
                                               found at the first call */
    size_t nperiod_fds[FK_EVKIND_MAX_EVENTS];
    uint64_t period_draws;          /* ... its spread periods drawn so far */
    bool cg_counting;
    /* reading: the reader's thread copies the rings out, this one hands
     * the copies on in time order */
    struct fk_reader *reader;
    struct fk_pins *pins;           /* made by the reader's thread, taken by sym */
    int nice_before;                /* this thread's nice before the window */
    bool nice_raised;               /* ... raised for it (engine_priority) */
    /* the reader's thread alone (follow_cpu): the CPU it is bound to
     * (-1: none), the CPUs it may run on (-1: not read yet, 0: none),
     * when it may move next */
    int reader_cpu, reader_mask_known;
    cpu_set_t reader_mask;
    uint64_t reader_follow_at;
    struct fk_ringq ring;
    struct fk_reader_chunk *chunks; /* taken, not given back (linked by tnext) */
    /* PERF_SAMPLE_READ (one event, per-CPU counters): by CPU number, the
     * last count a sample carried and the samples seen */
    uint64_t *read_last, *read_seen;
    size_t read_cap;
    struct fk_symbolizer *sym;
    struct fk_unwinder *uw;         /* dwarf mode */
    /* dwarf mode with stack copies cut by the reader: where threads'
     * stacks end, learnt here from complete walks, read by the reader */
    struct fk_stack_ends *ends;
    struct fk_target_filter filter;
    /* aggregation, three levels: a stack's callers (its frames but the
     * leaf, from the leaf's caller outwards) interned once, its index the
     * callers' id; the stack's frames, callers-id32 then the leaf (none
     * without frames), interned, its index the frames' id; and comm NUL
     * pid32 frames-id32 -> samples, weight. Most samples' frames are new
     * only in the leaf's exact address (python3.11: two samples of three
     * a new frame list, four of five of those under callers seen before):
     * such a sample now keeps a 12-byte key, not a copy of every frame
     * (440 bytes), new memory touched and kept for the capture's length.
     * A frame is 8 bytes (fk_engine_frame_pack) when all of a list's
     * pack, else every frame is dso u32, addr u64 and the callers' key
     * ends in one more byte (its length, 12n + 1, then no multiple of
     * 8); a leaf is 8 or 12 bytes likewise. A tree of short children
     * repeats the same few stacks in every pid: each (pid, stack) costs
     * an entry and 9 bytes past its comm, not a copy of its frames. */
    struct fk_stacktab callers;
    struct fk_stacktab frame_lists;
    struct fk_stacktab raw;
    /* (frames id, pid, comm) -> raw's index, direct-mapped
     * (FK_ENGINE_RAW_MEMO slots; NULL until the first sample): a stack
     * seen again in the same thread's process costs the frames' look-up
     * and one slot, not raw's hash, slot, entry and key */
    struct fk_raw_memo *raw_memo;
    struct fk_buf key;
    struct fk_loc frames[FK_ENGINE_MAX_FRAMES];
};

/* capture.c: the reason the capture fails, into err (the library's
 * convention: one line, no program name; the caller prints it) */
void fk_engine_fail(struct fk_engine *e, const char *fmt, ...) FK_PRINTF(2, 3);
/* a warning to the caller's hook (capture opts warn; none when quiet) */
void fk_engine_warn(struct fk_engine *e, const char *fmt, ...) FK_PRINTF(2, 3);
/* config.c */
bool fk_engine_configure(struct fk_engine *e);
/* open.c */
bool fk_engine_open(struct fk_engine *e);
bool fk_engine_mmap(struct fk_engine *e);
void fk_engine_cgroup_counters(struct fk_engine *e, unsigned long ioctl_req);
void fk_engine_close(struct fk_engine *e);
/* The events, disabled, their rings unmapped, taken from the engine to
 * be closed later (fk_held_events_close; NULL: none). */
struct fk_held_events *fk_engine_hold_events(struct fk_engine *e);
/* naming.c */
void fk_engine_name(struct fk_engine *e);

#endif
