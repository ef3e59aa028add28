/* SPDX-License-Identifier: GPL-2.0-only */
/* The off-CPU event kind: see offcpu.h. The hooks decode what the engine
 * hands them (raw tracepoint fields by the layout tracefs gives, switch
 * records) and feed the block accounting (blocktime.h), whose finished
 * blocks are added to the stacks they were interned as. */
#include "engine/offcpu.h"
#include "engine/capture.h"
#include "engine/evkind.h"
#include "capture/bpf.h"
#include "capture/reader.h"
#include "capture/swtime.h"
#include "capture/target.h"
#include "capture/tracefs.h"
#include "util/hindex.h"
#include "util/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <perf/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Frames of one stack kept here: the blocked stack (with its state frame)
 * and, with wakers, the waker's and the separator. */
#define MAX_FRAMES 512
#define NO_EVENT 0xffffffffu
/* A storm, between decisions (look): the rate since the last one past 4 x
 * N x the budget over at least this many recorded switch-outs (N x as
 * many hits): 9 hits in a look's first millisecond were a "storm" of
 * 9,000 a second, and a shell loop's bursts (22-29 switch-outs in 1 ms,
 * beside bpftrace) raised N to 2-6 for a second at 1,500 a second. 64
 * samples with 16 KiB stack copies are 1 MiB, an eighth of a CPU's 8 MiB
 * ring; a real storm (50,000 a second and more) passes it within the
 * first 1 ms look. */
#define STORM_RECORDS 64
/* Looks kept for the window's first decision (FK_OFFCPU_ADAPT_MS /
 * FK_OFFCPU_PROBE_MS of them at most). */
#define FIRST_LOOKS 64

/* One thread's switch records: its exact off-CPU time in the window
 * (capture/blocktime.h: fk_bt_total). */
struct exact {
    struct fk_bt_total t;
    bool bounded;       /* a switch-in the kernel did not show: its total is
                           exact within the gap's bound (FK_SWTIME_UNSEEN_IN) */
    uint32_t want1;     /* the in-kernel program's path: the thread's recorded
                           switch-outs waiting for their block (index + 1 in
                           want; 0: none yet), so that each of its blocks --
                           hundreds of thousands a second at a storm -- finds
                           them without a hash lookup */
};
#define EXACT_CACHE 64
#define EXACT_MAX 65536

/* The in-kernel program's ring buffer: 40 bytes a picked block or an
 * exit; at N = 1 (a command's first switch-outs, before N rises) two
 * pinned switch storms write ~520,000 blocks a second: 1 MiB holds 50 ms,
 * five of the reader's 10 ms passes. */
#define SWTIME_RING_BYTES (1u << 20)
/* ... halved, down to this, to fit its share of --max-memory (an eighth,
 * with the map: SWTIME_MEM_SHARE); below it, the switch records. 256 KiB
 * hold 15 ms of that storm: a pass and a half. */
#define SWTIME_RING_MIN (256u << 10)
#define SWTIME_MEM_SHARE 8
/* A block handed on to the engine's thread (the reader's pass hook makes
 * it from the program's block that holds a recorded switch-out): header,
 * the switch-out time, then the trailer (tid, time = the switch-in). */
#define RECORD_BLOCK 0x464b0001u
/* The same for a recorded switch-out in a gap (FK_SWTIME_UNSEEN_IN): the
 * switch-out time, then the trailer (time = the next switch-out). */
#define RECORD_UNSEEN 0x464b0002u
/* A process is let go of by the program's filter at most this long after
 * its last thread's EXIT record (its last switch-out's block lost, or none
 * written: no first switch-out in the window), and at most DEFER_MAX wait. */
#define DEFER_NS 1000000000ull
#define DEFER_MAX 4096
/* Threads whose lives (their FORK and EXIT records) are kept, at most. */
#define LIFE_MAX EXACT_MAX
/* Recorded switch-outs of one thread waiting for their block, at most: a
 * thread recorded at N = 1 may switch out thousands of times between two
 * of the reader's passes (and passes may be seconds apart on a loaded
 * host); past it the oldest is dropped, counted. */
#define WANT_MAX 65536

struct offcpu {
    struct fk_offcpu_opts o;
    struct fk_offcpu_stats st;
    struct fk_engine *e;            /* the running capture (the sink adds to it) */
    unsigned ev_switch, ev_wake, ev_cpu, nevents;
    struct fk_tp_format sw, wk;
    const char *waker_event;        /* sched_waking, or sched_wakeup on old kernels */
    const struct fk_tp_field *prev_pid, *prev_state, *woken_pid;
    struct fk_bt_statebits bits;
    uint64_t exit_bits;             /* prev_state's X and Z: the task is exiting */
    struct fk_blocktime bt;
    /* named frames, made once */
    struct fk_loc state_loc[FK_BT_NSTATES], oncpu_loc, sep_loc, open_loc, unrec_loc;
    bool named;
    uint64_t cpu_period_ns;
    /* stacks by id (frames kept here: a block's stack is combined with its
     * waker's, or marked open, only when the block ends), and the engine's
     * reference of each (blocked, open, waker) combination */
    struct fk_stacktab store;       /* pid32 tid32 locs... -> aux = id + 1 */
    struct { uint32_t off, n; pid_t pid, tid; } *ids;
    struct fk_loc *locs;
    size_t nids, capids, nlocs, caplocs;
    struct fk_u64map refs;          /* (blocked id << 33 | open << 32 | waker id + 1)
                                       -> engine ref + 1 */
    /* switch-out records, counted as they leave the rings (the reader's
     * thread: offcpu_early_record) and never handed on: the rate per
     * second by record time, how many, the latest's time */
    uint64_t sec_start, sec_count, peak_rate;
    uint64_t outs_seen, outs_last;
    uint64_t last_time;             /* the latest record's time handed on */
    /* the reader's thread: per CPU, the thread whose switch-out was just
     * recorded there (0: none), whose switch record is handed on; early:
     * the reader counts the switch-outs (set once, before the first
     * switch record it hands on) */
    pid_t *marked;
    uint32_t nmarked;
    bool early;
    /* the reader's thread too: each thread's off-CPU time from all its
     * switch records (struct exact), by tid (with a small cache: at a
     * storm a CPU's records name the same few threads) */
    struct fk_u64map exact_of;      /* tid -> index + 1 */
    struct exact *exact;
    size_t nexact, capexact;
    uint64_t exact_over;            /* records of threads past EXACT_MAX */
    bool records_lost;              /* (the engine's) no exact totals then: a lost
                                       switch-in and switch-out could pair two others
                                       (switch records; with the program: its map or
                                       ring full, or hits it missed) */
    struct { pid_t tid; uint32_t i1; } exact_cache[EXACT_CACHE];
    /* the engine's: the recorded blocks' time by thread and stack, added
     * to the profile at the end, each thread's scaled to its exact total
     * (calibrate) */
    struct fk_u64map acc_of;        /* tid << 32 | engine ref -> index + 1 */
    struct acc { uint64_t switches, ns, short_ns; pid_t tid; uint32_t ref; uint8_t state; } *acc;
    size_t nacc, capacc;
    uint64_t window_start;          /* when it opened (0: not yet) */
    uint64_t window_end;            /* when it closed (0: not yet); both read by
                                       the reader's thread too (exact_switch) */
    uint64_t unsure;                /* samples timed during a change */
    /* N within the window: the rate over each interval of records, the N in
     * force, every change (when it was made, for the samples' weights), and
     * per task events: the N each thread created in the window inherited */
    uint64_t win_start, win_count;  /* the switch event's count at the last decision */
    uint64_t look_start, look_count;    /* and at the last look */
    uint64_t first[FIRST_LOOKS];    /* each look's rate before the first decision */
    unsigned nfirst;
    size_t nfds;
    bool probed, counting;
    uint64_t counting_since;        /* the look that started the count (a command's
                                       first switch-outs) */
    /* the steering thread: chg, nchg, n_now, adapt_off and the N fields of
     * st are shared with it under lock */
    pthread_t steerer;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool steering, steer_stop;
    /* With the in-kernel timing and a budget, the steering thread makes
     * the looks only while they come every ms (FK_OFFCPU_FAST_MS), then
     * hands them to the reader's thread, which makes one at each of its
     * passes (every FK_OFFCPU_PROBE_MS, as the steering thread did) and
     * ends: two threads each waking 100 times a second were most of
     * flamekit's CPU at a switch storm (see look_handover). readers_looks
     * is set by the steering thread as it ends (then the look fields are
     * the reader's); look_lock keeps the reader's looks from the window's
     * end, after which it makes none (looks_closed). */
    bool readers_looks;
    pthread_mutex_t look_lock;
    bool looks_closed;
    uint64_t reader_looked;         /* (the reader's) its last look */
    uint64_t others_counted;        /* (the reader's) other programs last counted */
    uint64_t low_since, low_peak;   /* the rate has been low enough for a smaller N
                                       since, at most */
    bool storm_raised;              /* N was last raised at a look, before a full
                                       interval (look): the next decision may lower it */
    uint64_t n_now;
    uint64_t drawn;                 /* when each fd's period was last drawn */
    struct nchange { uint64_t t_a, t_b, n; } *chg;  /* ioctls between t_a and t_b */
    size_t nchg, capchg;
    bool adapt_off, per_task;
    struct fk_u64map inherited;     /* tid -> N + 1 (0: exited) */
    size_t inherited_live;
    /* each switch-out sample's weight from its counter's count
     * (PERF_SAMPLE_READ): counter (its CPU; per task events: thread and
     * CPU) -> the count at its last sample (0: none yet; COUNT_UNKNOWN:
     * records were lost since) */
    struct fk_u64map counts;
    size_t counts_live;             /* entries not 0 */
    uint32_t cpus_seen;             /* the highest CPU of a sample + 1 */
    bool counts_lost;               /* records were lost: a counter not seen yet may
                                       have lost samples too */
    /* in-kernel switch timing (capture/swtime.h) instead of switch
     * records; NULL: the records (the fallback), bpf_note says why */
    struct fk_swtime *swt;
    char bpf_note[160];
    const char *bpf_filter;
    const struct fk_target *target;
    /* the reader's thread: the blocks of this pass, and per thread the
     * recorded switch-outs (sample times) whose block has not come yet */
    struct fk_swtime_block *pass_blocks;
    size_t npass, cappass;
    struct fk_u64map want_of;       /* tid -> index + 1 */
    struct fk_u64map leaders_gone;  /* (the reader's) tgids filter: pid -> 1, its leader
                                       exited before its other threads */
    struct want { pid_t tid; uint32_t n; size_t cap; uint64_t *t; } *want;
    size_t nwant, capwant;
    uint64_t bpf_blocks, bpf_unmatched, bpf_in_missed;  /* (the reader's) */
    uint64_t bpf_unseen_in, bpf_unseen_ns;  /* (the reader's) gaps bounded by their
                                               next switch-out, and the spans of
                                               those not timed */
    uint64_t bpf_unseen_timed;      /* (the reader's) ... of them timed from the
                                       thread's CPU time */
    size_t want_bytes;
    uint64_t bpf_matched;           /* (the engine's) blocks given to recorded switch-outs */
    struct fk_swtime_stats bpf_st;
    struct fk_swtime_stats bpf_at_stop;     /* its counters at the window's end */
    struct fk_u64map pend;          /* the engine's, at the end: tid -> its pending
                                       switch-out in the program's map + 1 */
    struct fk_u64map oncpu_of;      /* the engine's (--with-cpu): tid -> its on-CPU
                                       samples' ns */
    /* (the reader's, or the engine's without it) each thread's life, from
     * its task records: the first FORK of the tid in the capture and its
     * last EXIT, unless a FORK came after it (time + 1; 0: none). No time
     * is given to a thread outside them (calibrate) */
    struct fk_u64map born_at, exit_at;
    uint64_t lives_over;            /* task records past LIFE_MAX threads */
    /* the program's exact totals (swtime.h): threads that exited in the
     * window (the reader's: tid -> ns + 1, summed over the tid's threads),
     * those alive when it closed (the engine's, read then: tid -> ns + 1),
     * and the threads with samples (the engine's: whose to read) */
    struct fk_u64map exited_ns, live_ns, sampled_tids;
    /* (the reader's) each tid's last EXIT block: the first switch-out its
     * total starts at, its end (the thread's last switch-out), its CPU time
     * between, and until its EXIT record came (open), the total it added
     * to exited_ns: cut then to the record (exit_total) */
    struct fk_u64map exitb_of;      /* tid -> index + 1 */
    struct exitb { uint64_t t0, in, oncpu, added; bool open; } *exitb;
    size_t nexitb, capexitb;
    uint64_t threads_exit_tail, exit_tail_ns;   /* (the reader's) */
    /* (the reader's) processes let go of by the program's filter once the
     * last switch-out of their last thread was seen (its EXIT block), not
     * at its EXIT record: the thread runs on after it (exit_notify, a
     * namespace's first process waiting for the others to die), and a
     * switch-out the program missed left its total unknown and its entry
     * in the map to a thread given the same tid (1-3 of a shell loop's 20
     * children a run). At most DEFER_NS after the record. */
    struct defer { pid_t tid, pid; uint64_t at; } *defer;
    size_t ndefer, capdefer;
    bool exact_ok;                  /* the program keeps exact totals */
    int others;                     /* (the reader's) other programs on sched_switch,
                                       the most at once in the window (-1: unknown) */
    uint64_t live_unread;           /* sampled threads whose CPU time could not be read */
    /* (the engine's) threads with recorded blocks (tid -> 1), and the
     * engine's reference for "comm;[not recorded]" of each thread that
     * exited without one (tid -> ref + 1), made at its EXIT record while
     * its name is known (the symbolizer keeps only the latest exits'):
     * a thread with an exact total but no recorded block keeps it there
     * (unrecorded) */
    struct fk_u64map acc_tids, unrec_ref;
    struct fk_loc scratch[2 * MAX_FRAMES + 4];
};

static void live_totals(struct offcpu *k);
static bool live_total(struct offcpu *k, pid_t tid, uint64_t stop, uint64_t *ns);
static void exit_total(struct offcpu *k, pid_t tid, uint64_t t);

/* ---- the rate before the window ---------------------------------------- */

/* The host's switches so far: /proc/stat's "ctxt N" line. */
static bool host_switches(uint64_t *sum)
{
    char buf[8192];
    if (fk_read_small("/proc/stat", buf, sizeof buf) <= 0)
        return false;
    for (char *p = buf; (p = strstr(p, "ctxt ")); p += 5)
        if (p == buf || p[-1] == '\n') {
            *sum = strtoull(p + 5, NULL, 10);
            return true;
        }
    return false;
}

struct task_switches {
    pid_t pid;
    unsigned tasks;
    bool any;
    uint64_t *sum;
};

/* fk_proc_for_each_tid's step: add thread tid's voluntary and involuntary
 * switches; at most 16,384 threads in all (a bound on the walk). */
static bool add_task_switches(pid_t tid, void *ctx)
{
    struct task_switches *ts = ctx;
    unsigned long long n;
    if (fk_proc_task_switches(ts->pid, tid, &n)) {
        ts->any = true;     /* the thread was there to be read */
        *ts->sum += n;
    }
    return ++ts->tasks < 16384;
}

/* Switches so far: the host's (/proc/stat ctxt) or the threads' of pids. */
static bool switches_now(const pid_t *pids, size_t npids, uint64_t *sum)
{
    *sum = 0;
    if (!pids)
        return host_switches(sum);
    struct task_switches ts = { 0, 0, false, sum };
    for (size_t i = 0; i < npids && ts.tasks < 16384; i++) {
        ts.pid = pids[i];
        fk_proc_for_each_tid(pids[i], add_task_switches, &ts);
    }
    return ts.any;
}

int64_t fk_offcpu_switch_rate(const pid_t *pids, size_t npids, unsigned ms)
{
    uint64_t a, b;
    struct timespec t0, t1, d = { ms / 1000, (long)(ms % 1000) * 1000000L };
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!switches_now(pids, npids, &a))
        return -1;
    while (nanosleep(&d, &d) < 0 && errno == EINTR)
        ;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!switches_now(pids, npids, &b))
        return -1;
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    /* threads that exited in between take their counts with them */
    return b > a && secs > 0 ? (int64_t)((double)(b - a) / secs) : 0;
}

/* ---- N within the window ----------------------------------------------- */

/* Changes kept for the samples' weights; past this, N stays as it is. */
#define MAX_CHANGES 4096

/* The N a sample taken at time t on an event flamekit opened was drawn at:
 * the last change made before t. A sample timed while the ioctls ran may
 * have been drawn at either (an event running at the change samples its
 * next hit): it gets the new N, counted. */
static uint64_t n_at_locked(struct offcpu *k, uint64_t t)
{
    size_t lo = 0, hi = k->nchg;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->chg[mid].t_a <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return k->o.one_in;
    if (t < k->chg[lo - 1].t_b)
        k->unsure++;
    return k->chg[lo - 1].n;
}

static uint64_t n_at(struct offcpu *k, uint64_t t)
{
    pthread_mutex_lock(&k->lock);
    uint64_t n = n_at_locked(k, t);
    pthread_mutex_unlock(&k->lock);
    return n;
}

/* The N a switch-out of tid at time stands for: per task events a thread
 * created in the window inherited from its creator's (the kernel gives an
 * inherited event the period in force then, and PERF_EVENT_IOC_PERIOD
 * does not reach it); every other sample: n_at. */
static uint64_t sample_n(struct offcpu *k, pid_t tid, uint64_t time)
{
    uint64_t *v = k->per_task && k->inherited.n ? fk_u64map_slot(&k->inherited, (uint64_t)tid, false)
                                                 : NULL;
    if (!v || !*v)
        return n_at(k, time);
    if (*v - 1 != n_at(k, time))
        k->st.recorded_inherited_n++;
    return *v - 1;
}

/* A map whose values are mostly 0 (exited threads') again with only the
 * others: memory follows the live threads, not all there were. live: the
 * entries not 0. */
static void compact(struct fk_u64map *map, size_t live)
{
    if (map->n < 1024 || live * 2 > map->n)
        return;
    struct fk_u64map m = { 0 };
    for (size_t i = 0; i < map->n; i++)
        if (map->v[i].val)
            *fk_u64map_slot(&m, map->v[i].key, true) = map->v[i].val;
    fk_u64map_free(map);
    *map = m;
}

static void inherited_forget(struct offcpu *k, pid_t tid)
{
    uint64_t *v = k->per_task && k->inherited.n ? fk_u64map_slot(&k->inherited, (uint64_t)tid, false)
                                                 : NULL;
    if (!v || !*v)
        return;
    *v = 0;
    k->inherited_live--;
    compact(&k->inherited, k->inherited_live);
}

/* ---- what a sample weighs ----------------------------------------------- */

#define COUNT_UNKNOWN UINT64_MAX

/* The counter a sample of the switch event came from: one per CPU, or
 * per task events one per thread and CPU (each inherited copy counts its
 * own thread's hits, from 0). */
static uint64_t *counter_of(struct offcpu *k, const struct fk_sample *s)
{
    uint64_t key = k->per_task ? (uint64_t)(uint32_t)s->tid << 32 | s->cpu : s->cpu;
    return fk_u64map_slot(&k->counts, key, true);
}

/* The switch-outs a sample of the switch event stands for: the hits its
 * counter counted since its previous sample, exactly, whatever N was and
 * however and whenever it changed. The kernel's sampling around a change
 * is not one in the new N: an event running when PERF_EVENT_IOC_PERIOD
 * reaches it samples its very next hit, the next one an old N later, and
 * one whose old N was 1 writes two samples of that one hit; each CPU's
 * event takes the change at its own moment, and thousands of samples a
 * second at a small N may be timed while the change is being made (283
 * of 2,584 in one capture, each counted at the new N: 118.8 % of the
 * switch-outs seen). 0: a second sample of a switch-out already
 * weighed. Without counts (inherited per-task events before Linux 6.12),
 * or for a counter's first sample after records were lost (its gap holds
 * the lost ones'), the N in force at the sample's time. Every sample of
 * the event comes here, the target's or not (offcpu_outside), so each
 * gap is one sample's. */
static uint64_t sample_weight(struct offcpu *k, const struct fk_sample *s, bool *by_count)
{
    *by_count = false;
    if (k->swt)     /* picked by the program at the N in force then */
        return n_at(k, s->time);
    if (!s->count)
        return sample_n(k, s->tid, s->time);
    uint64_t *last = counter_of(k, s), was = *last;
    *last = s->count;
    k->counts_live += !was;
    if (s->cpu >= k->cpus_seen && s->cpu < 65536)
        k->cpus_seen = s->cpu + 1;
    if (was == COUNT_UNKNOWN || (!was && k->counts_lost))
        return sample_n(k, s->tid, s->time);
    if (s->count < was)
        was = 0;        /* a new thread's copy under a tid whose EXIT was lost */
    *by_count = true;
    return s->count - was;
}

/* Records were lost: their samples' hits are in the next gap of some
 * counter, but which is unknown. */
static void counts_lost(struct offcpu *k)
{
    k->counts_lost = true;
    for (size_t i = 0; i < k->counts.n; i++)
        if (k->counts.v[i].val)
            k->counts.v[i].val = COUNT_UNKNOWN;
}

/* tid exited: its per task counters with it (a new thread under the tid
 * counts from 0). */
static void counts_forget(struct offcpu *k, pid_t tid)
{
    if (!k->per_task || !k->counts.n)
        return;
    for (uint32_t c = 0; c < k->cpus_seen; c++) {
        uint64_t *v = fk_u64map_slot(&k->counts, (uint64_t)(uint32_t)tid << 32 | c, false);
        if (v && *v) {
            *v = 0;
            k->counts_live--;
        }
    }
    compact(&k->counts, k->counts_live);
}

/* Sample one in n from now on: each fd its own period, drawn from n +- n/2
 * (fk_engine_set_period's spread). With one period for all, counters
 * that tick in step are sampled in step, and sampling is not blind to
 * what it measures: at a switch storm each thread's counter counts its
 * own switch-outs, one per round trip, so a thread's samples fell at a
 * fixed distance from its partner's -- whose sample, written while the
 * partner still runs, holds the thread up by microseconds. In one
 * capture 59 % of one thread's recorded blocks held its partner's sample
 * (against 9 % for the other thread), those lasting 14.7 us against 6.0
 * us (median), and the threads were given 1.6-2.5 x the wall time off
 * CPU. Drawn again every FK_OFFCPU_REDRAW_MS: neither a fixed distance
 * nor an even period (a thread whose switch-outs alternate [R] and [S]
 * has only one of them sampled) lasts. From the steering thread. */
static bool draw(struct offcpu *k, uint64_t n, char *err, size_t errlen)
{
    k->drawn = fk_now_ns();
    if (k->swt && !fk_swtime_set_n(k->swt, n)) {
        snprintf(err, errlen, "setting the switch program's N: %s", strerror(errno));
        return false;
    }
    return (k->swt || fk_engine_set_period(k->e, k->ev_switch, n, n / 2, err, errlen)) &&
           (k->ev_wake == NO_EVENT || fk_engine_set_period(k->e, k->ev_wake, n, n / 2, err, errlen));
}

/* From the steering thread. The change is listed before the ioctls, its
 * end open until they are done: a sample timed meanwhile, whenever the
 * engine handles it, is counted unsure. */
static void set_n(struct offcpu *k, uint64_t n)
{
    pthread_mutex_lock(&k->lock);
    if (k->nchg >= MAX_CHANGES) {
        snprintf(k->st.adapt_error, sizeof k->st.adapt_error,
                 "%d changes: N kept for the rest of the window", MAX_CHANGES);
        k->adapt_off = true;
        pthread_mutex_unlock(&k->lock);
        return;
    }
    uint64_t t_a = fk_now_ns(), old = k->n_now;
    k->chg = fk_grow(k->chg, &k->capchg, k->nchg + 1, sizeof *k->chg);
    struct nchange *c = &k->chg[k->nchg++];
    *c = (struct nchange){ t_a, UINT64_MAX, n };
    pthread_mutex_unlock(&k->lock);
    char err[128] = "", err2[128];
    bool ok = draw(k, n, err, sizeof err);
    if (!ok)    /* some events may have taken it: all back to the N in force */
        draw(k, old, err2, sizeof err2);
    pthread_mutex_lock(&k->lock);
    c = &k->chg[k->nchg - 1];
    c->t_b = fk_now_ns();
    if (!ok) {
        c->n = old;
        snprintf(k->st.adapt_error, sizeof k->st.adapt_error, "%s", err);
        k->adapt_off = true;
    } else {
        k->n_now = n;
        k->st.one_in_changes++;
        if (n < k->st.one_in_min)
            k->st.one_in_min = n;
        if (n > k->st.one_in_max)
            k->st.one_in_max = n;
        if (k->st.ntimeline < FK_OFFCPU_TIMELINE) {
            k->st.timeline[k->st.ntimeline].at_ns = t_a - k->window_start;
            k->st.timeline[k->st.ntimeline++].n = n;
        }
    }
    pthread_mutex_unlock(&k->lock);
}

/* Each fd's period drawn again (see draw), every FK_OFFCPU_REDRAW_MS -- or
 * every ms per event fd when there are more (each is a system call). */
static void redraw(struct offcpu *k, uint64_t now)
{
    uint64_t every = FK_OFFCPU_REDRAW_MS * 1000000ull;
    if ((uint64_t)k->nfds * 1000000ull > every)
        every = (uint64_t)k->nfds * 1000000ull;
    if (now - k->drawn < every)
        return;
    pthread_mutex_lock(&k->lock);
    uint64_t n = k->n_now;
    bool off = k->adapt_off;
    pthread_mutex_unlock(&k->lock);
    char err[128];
    if (n < 2 || off || (k->swt && k->ev_wake == NO_EVENT) || draw(k, n, err, sizeof err))
        return;
    pthread_mutex_lock(&k->lock);
    snprintf(k->st.adapt_error, sizeof k->st.adapt_error, "%s", err);
    k->adapt_off = true;
    pthread_mutex_unlock(&k->lock);
}

static uint64_t n_for(uint64_t rate, uint64_t budget)
{
    return rate > budget ? (rate + budget - 1) / budget : 1;
}

/* rate: hits of the switch event per second over the interval up to now.
 * N as the budget asks when the recorded rate passes 1.25 x the budget
 * (at once), or has stayed under half of it for a second (a target that
 * pauses, or is held up by others, is not sampled up at once), not at
 * every wobble: each change is an ioctl per event fd. The window's first
 * decision (first: the median rate of its looks; NULL: none) lowers N at once: it is
 * the first rate taken with the events on, and the rate before the
 * window, without them, may be far off (a pipe storm that switched
 * 231,000 times a second unprofiled did 84,000 a second profiled: how
 * often a ping-pong blocks depends on its timing) -- an N too high would
 * stay for a second. The median, not the mean: neither a lull (flamekit's
 * own start on a loaded host) nor the tail of a burst decides N. storm:
 * decided at a look, on the rate since the last decision (look), not at
 * the end of a full interval: a raise then is provisional. */
static void adapt(struct offcpu *k, uint64_t now, uint64_t rate, const uint64_t *first, bool storm)
{
    uint64_t b = k->o.budget, n = k->n_now;
    bool provisional = k->storm_raised;
    if (!storm)
        k->storm_raised = false;    /* (this decision stands) */
    if (!b || k->adapt_off)
        return;
    if (n_for(rate, b) > n && rate > n * b + n * b / 4) {
        k->low_since = 0;
        set_n(k, n_for(rate, b));
        k->storm_raised = storm;
        return;
    }
    /* a raise at a look, on a few milliseconds' rate, stands only if the
     * full interval after it bears it out: a light target's burst (120
     * switch-outs in 3 ms from one at 1,500 a second) is no storm, and N
     * stays as the interval's rate asks, not for a second more */
    if (provisional && !storm && n > 1 && n_for(rate, b) < n) {
        k->low_since = 0;
        set_n(k, n_for(rate, b));
        return;
    }
    if (first && n > 1 && *first * 2 < n * b) {
        k->low_since = 0;
        set_n(k, n_for(*first, b));
        return;
    }
    if (n == 1 || rate * 2 >= n * b) {
        k->low_since = 0;
        return;
    }
    if (!k->low_since) {
        k->low_since = now;
        k->low_peak = rate;
        return;
    }
    if (rate > k->low_peak)
        k->low_peak = rate;
    if (now - k->low_since >= 1000000000ull) {
        k->low_since = 0;
        set_n(k, n_for(k->low_peak, b));
    }
}

/* A switch-out of any thread at time: counted, and the peak rate. */
static void count_out(struct offcpu *k, uint64_t time)
{
    k->outs_seen++;
    if (time > k->outs_last)
        k->outs_last = time;
    if (!k->sec_start)
        k->sec_start = time;
    k->sec_count++;
    /* (records of other CPUs, or blocks ended in another order, may be
     * older than the second's start) */
    if (time > k->sec_start && time - k->sec_start >= 1000000000ull) {
        uint64_t rate = k->sec_count * 1000000000ull / (time - k->sec_start);
        if (rate > k->peak_rate)
            k->peak_rate = rate;
        k->sec_start = time;
        k->sec_count = 0;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The median rate of the looks before the first decision (0: none). */
static uint64_t first_median(struct offcpu *k)
{
    if (!k->nfirst)
        return 0;
    qsort(k->first, k->nfirst, sizeof *k->first, cmp_u64);
    return k->first[k->nfirst / 2];
}

/* The target's switch-outs so far: the program's counter (its event's
 * perf count sees only the picked ones), else the switch event's count. */
static uint64_t switch_count(struct offcpu *k)
{
    if (!k->swt)
        return fk_engine_event_count(k->e, k->ev_switch, &k->nfds);
    k->nfds = 1;
    return fk_swtime_outs(k->swt);
}

/* The steering thread: the rate from the switch event's own count (every
 * hit of the target's, as it happens), a look every FK_OFFCPU_PROBE_MS --
 * or every ms per event fd when there are more (each is a read). N is set
 * again every FK_OFFCPU_ADAPT_MS, or at once when the target records more
 * than 4 x the budget (a storm starting: its rings would overflow before
 * the next decision). The count starts at the window's first look, or
 * for a run command (no rate before; its events count from the start)
 * at the first look that saw hits; the first decision (adapt's first)
 * comes FK_OFFCPU_ADAPT_MS later. While N is 1 in the window's first
 * FK_OFFCPU_FAST_MS (a command, whose rate is unknown: every switch-out
 * recorded) the looks come every ms: a storm of 100,000 switch-outs a
 * second writes 900 MB/s of 8 KiB stack copies at N = 1, and in the 20
 * ms two looks 10 ms apart took, its rings overflowed (318-1,519 records
 * lost in a 3 s capture, and some in most captures of a command that
 * starts busy). Also in the FK_OFFCPU_FAST_MS after the count started (a
 * command's first switch-outs): on a loaded host a command's start (exec,
 * the loader, its threads) outlasted the window's first 100 ms, its storm
 * began at 10 ms looks, and a 3 s capture lost 63-68 records (1,251-2,883
 * samples) in 2 of 3 runs, N first raised 111-237 ms in. At most 200
 * looks more per capture. */
static void look(struct offcpu *k, uint64_t now)
{
    uint64_t count = switch_count(k);
    if (!k->counting) {
        k->counting = count > 0 || k->o.rate_known;
        k->counting_since = now;
        k->win_start = k->look_start = now;
        k->win_count = k->look_count = count;
        return;
    }
    /* Before the first decision each rate kept spans FK_OFFCPU_PROBE_MS
     * at least: looks come sooner while N is 1 (every ms) or while the
     * reader's passes do (its rings filling; under ASan at load 64 looks
     * in the first quarter second), and the median of 1-4 ms looks at a
     * target's ~500 switch-outs a second after a storm was 0 -- which the
     * first decision took for no looks at all, keeping the storm's N
     * until the rule of a second low (1.27-1.35 s in, t-offcpu's lull) */
    if (k->probed || now - k->look_start >= FK_OFFCPU_PROBE_MS * 1000000ull) {
        if (!k->probed && k->nfirst < FIRST_LOOKS)
            k->first[k->nfirst++] = (count > k->look_count ? count - k->look_count : 0) *
                                    1000000000ull / (now - k->look_start);
        k->look_start = now;
        k->look_count = count;
    }
    uint64_t hits = count > k->win_count ? count - k->win_count : 0, el = now - k->win_start;
    if (!el)
        return;
    uint64_t rate = hits * 1000000000ull / el;
    if (k->swt && el >= 250000000ull && rate > k->peak_rate)
        k->peak_rate = rate;    /* (no per-switch record to time it by) */
    pthread_mutex_lock(&k->lock);
    uint64_t n = k->n_now;
    pthread_mutex_unlock(&k->lock);
    bool full = el >= FK_OFFCPU_ADAPT_MS * 1000000ull;
    if (!full && (rate <= 4 * n * k->o.budget || hits < STORM_RECORDS * n))
        return;
    uint64_t med = k->probed ? 0 : first_median(k);
    adapt(k, now, rate, !k->probed && k->nfirst ? &med : NULL, !full);
    if (!k->probed) {
        uint64_t opened = __atomic_load_n(&k->window_start, __ATOMIC_SEQ_CST);
        pthread_mutex_lock(&k->lock);
        k->st.first_decision.at_ns = opened && now > opened ? now - opened : 0;
        k->st.first_decision.looks = k->nfirst;
        k->st.first_decision.median = med;
        k->st.first_decision.rate = rate;
        k->st.first_decision.n_before = n;
        k->st.first_decision.n_after = k->n_now;
        k->st.first_decision.early = !full;
        pthread_mutex_unlock(&k->lock);
    }
    k->probed = true;
    k->win_start = now;
    k->win_count = count;
}

/* From the steering thread, when its looks would come every
 * FK_OFFCPU_PROBE_MS: with the in-kernel timing and a budget, hand them to
 * the reader's thread and end (true). The reader passes on its own clock,
 * also every FK_OFFCPU_PROBE_MS (fk_evkind.poll_ms; sooner while its rings
 * fill), and the program's counters are mapped (no system call to read
 * them): at a pinned switch storm the steering thread's 100 wake-ups a
 * second (each a futex wait, then two bpf system calls) took 7-10 ms of
 * CPU a second, the reader 10-13, the engine 2-3 (builds 446b5e8 to
 * 1a16f0b alike, on a loaded host): the looks were a third of flamekit's
 * CPU. Not before the count has started (a command not yet running)
 * and its fast looks are over; never on the switch-record path (its count
 * is a read per event fd, and its N an ioctl per fd). */
static bool look_handover(struct offcpu *k, uint64_t now)
{
    if (!k->swt || !k->o.budget || !k->counting)
        return false;
    k->reader_looked = now;
    __atomic_store_n(&k->readers_looks, true, __ATOMIC_RELEASE);
    return true;
}

/* The reader's look at its pass (see look_handover), at most one a ms
 * (passes come sooner while the rings fill), none after the window's end. */
static void reader_look(struct offcpu *k)
{
    if (!__atomic_load_n(&k->readers_looks, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&k->look_lock);
    uint64_t now = fk_now_ns();
    if (!k->looks_closed && now - k->reader_looked >= 1000000ull) {
        k->reader_looked = now;
        pthread_mutex_lock(&k->lock);
        bool off = k->adapt_off;
        pthread_mutex_unlock(&k->lock);
        if (!off) {
            look(k, now);
            redraw(k, now);
        }
    }
    pthread_mutex_unlock(&k->look_lock);
}

static void *steer(void *arg)
{
    struct offcpu *k = arg;
    char err[128];
    /* the fds now, not in the first change's time, and each its own
     * period at once */
    if (!k->o.budget)
        switch_count(k);
    if ((!k->swt && !fk_engine_set_period(k->e, k->ev_switch, 0, 0, err, sizeof err)) ||
        (k->ev_wake != NO_EVENT && !fk_engine_set_period(k->e, k->ev_wake, 0, 0, err, sizeof err)) ||
        (k->n_now > 1 && !draw(k, k->n_now, err, sizeof err))) {
        pthread_mutex_lock(&k->lock);
        snprintf(k->st.adapt_error, sizeof k->st.adapt_error, "%s", err);
        k->adapt_off = true;
        pthread_mutex_unlock(&k->lock);
        return NULL;
    }
    for (;;) {
        uint64_t every = (k->o.budget ? FK_OFFCPU_PROBE_MS : FK_OFFCPU_REDRAW_MS) * 1000000ull;
        uint64_t now0 = fk_now_ns(), fast = FK_OFFCPU_FAST_MS * 1000000ull;
        if (k->o.budget && k->n_now == 1 &&
            (now0 - k->window_start < fast || (k->counting && now0 - k->counting_since < fast)))
            every = 1000000ull;     /* (n_now, counting: this thread's own) */
        else if (look_handover(k, now0))
            return NULL;
        if ((uint64_t)k->nfds * 1000000ull > every)
            every = (uint64_t)k->nfds * 1000000ull;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        uint64_t t = (uint64_t)until.tv_sec * 1000000000ull + (uint64_t)until.tv_nsec + every;
        until.tv_sec = (time_t)(t / 1000000000ull);
        until.tv_nsec = (long)(t % 1000000000ull);
        pthread_mutex_lock(&k->lock);
        while (!k->steer_stop &&
               pthread_cond_timedwait(&k->wake, &k->lock, &until) != ETIMEDOUT)
            ;
        bool stop = k->steer_stop || k->adapt_off;
        pthread_mutex_unlock(&k->lock);
        if (stop)
            return NULL;
        uint64_t now = fk_now_ns();
        if (k->o.budget)
            look(k, now);
        redraw(k, now);
    }
}

static void offcpu_window(void *state, struct fk_engine *e, bool open)
{
    struct offcpu *k = state;
    k->e = e;
    if (!open)  /* (the engine's loop ended just before: its duration) */
        __atomic_store_n(&k->window_end, fk_now_ns(), __ATOMIC_SEQ_CST);
    if (open) {
        __atomic_store_n(&k->window_start, fk_now_ns(), __ATOMIC_SEQ_CST);
        /* threads created in the window inherit the N of their creation */
        k->per_task = fk_engine_inherits(e);
        if (k->swt && !fk_swtime_start(k->swt))
            k->exact_ok = false;
    }
    if (open && (k->o.budget || k->o.one_in > 1) && !k->steering) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&k->wake, &ca);
        pthread_condattr_destroy(&ca);
        k->steering = pthread_create(&k->steerer, NULL, steer, k) == 0;
        if (!k->steering) {
            pthread_cond_destroy(&k->wake);
            snprintf(k->st.adapt_error, sizeof k->st.adapt_error, "no thread to follow the rate");
        }
    }
    if (!open) {
        pthread_mutex_lock(&k->look_lock);    /* (a look of the reader's is done) */
        k->looks_closed = true;
        pthread_mutex_unlock(&k->look_lock);
    }
    if (!open && k->steering) {
        pthread_mutex_lock(&k->lock);
        k->steer_stop = true;
        pthread_cond_signal(&k->wake);
        pthread_mutex_unlock(&k->lock);
        pthread_join(k->steerer, NULL);
        pthread_cond_destroy(&k->wake);
        k->steering = false;
    }
    if (!open && k->swt) {
        fk_swtime_stop(k->swt, fk_now_ns());    /* the window's end: nothing more */
        fk_swtime_stats(k->swt, &k->bpf_at_stop);   /* (its counters go on counting) */
        live_totals(k);
    }
}

/* ---- stacks ------------------------------------------------------------- */

static void name_frames(struct offcpu *k)
{
    if (k->named)
        return;
    for (int s = 0; s < FK_BT_NSTATES; s++)
        k->state_loc[s] = fk_engine_named_frame(k->e, fk_bt_state_frame((enum fk_bt_state)s));
    k->oncpu_loc = fk_engine_named_frame(k->e, FK_OFFCPU_ONCPU_FRAME);
    k->sep_loc = fk_engine_named_frame(k->e, FK_OFFCPU_WAKER_SEP);
    k->open_loc = fk_engine_named_frame(k->e, FK_OFFCPU_OPEN_FRAME);
    k->unrec_loc = fk_engine_named_frame(k->e, FK_OFFCPU_UNRECORDED_FRAME);
    k->named = true;
}

/* st's frames and one more at the root end (a state frame, [on-CPU], the
 * waker's process name) in k->scratch. */
static struct fk_stack_frames with_root(struct offcpu *k, const struct fk_stack_frames *st,
                                        struct fk_loc root)
{
    unsigned n = st->n < MAX_FRAMES ? st->n : MAX_FRAMES;
    memcpy(k->scratch, st->locs, n * sizeof *k->scratch);
    k->scratch[n] = root;
    struct fk_stack_frames f = {
        .pid = st->pid, .tid = st->tid, .locs = k->scratch, .n = n + 1,
        .user = st->user < n ? st->user : n + 1, .cap = n + 1, .user_unwound = st->user_unwound,
    };
    return f;
}

/* A pick's stack from the scheduler's first frame (__schedule) on: a raw
 * tracepoint program's samples begin with its own frame and the
 * tracepoint's glue (fk_swtime_sched_text), cut off here; st itself
 * otherwise, and when no kernel frame is in the scheduler's text (a
 * callchain cut short: kept whole rather than emptied). */
static struct fk_stack_frames from_scheduler(const struct offcpu *k,
                                             const struct fk_stack_frames *st)
{
    uint64_t lo, hi;
    if (!k->swt || !fk_swtime_sched_text(k->swt, &lo, &hi))
        return *st;
    for (unsigned i = 0; i < st->user && i < st->n; i++) {
        if (st->locs[i].addr >= lo && st->locs[i].addr < hi) {
            struct fk_stack_frames f = *st;
            f.locs += i;
            f.n -= i;
            f.user -= i;
            f.cap -= i;
            return f;
        }
    }
    return *st;
}

/* Keep f's frames under an id (the same frames, the same id). */
static uint32_t store_stack(struct offcpu *k, const struct fk_stack_frames *f)
{
    /* the key: pid, tid, then each frame's dso and address (no padding) */
    char buf[8 + (MAX_FRAMES + 1) * 12];
    int32_t ids[2] = { f->pid, f->tid };
    memcpy(buf, ids, 8);
    size_t len = 8;
    for (unsigned i = 0; i < f->n && i < MAX_FRAMES + 1; i++) {
        memcpy(buf + len, &f->locs[i].dso, 4);
        memcpy(buf + len + 4, &f->locs[i].addr, 8);
        len += 12;
    }
    struct fk_stack *s = fk_stacktab_add(&k->store, buf, len, 0);
    if (s->aux)
        return (uint32_t)(s->aux - 1);
    k->ids = fk_grow(k->ids, &k->capids, k->nids + 1, sizeof *k->ids);
    k->locs = fk_grow(k->locs, &k->caplocs, k->nlocs + f->n, sizeof *k->locs);
    memcpy(k->locs + k->nlocs, f->locs, f->n * sizeof *f->locs);
    k->ids[k->nids].off = (uint32_t)k->nlocs;
    k->ids[k->nids].n = f->n;
    k->ids[k->nids].pid = f->pid;
    k->ids[k->nids].tid = f->tid;
    k->nlocs += f->n;
    s->aux = ++k->nids;
    return (uint32_t)(k->nids - 1);
}

/* The engine's reference for a block's stack: blocked alone, or
 * blocked;--;waker (waker frames leaf-first above the "--"), with an
 * "[open at end]" leaf when the thread was still off CPU at the end. */
static uint32_t block_ref(struct offcpu *k, uint32_t blocked, uint64_t waker, bool open)
{
    uint64_t key = (uint64_t)blocked << 33 | (uint64_t)open << 32 |
                   (waker == FK_BT_NO_STACK ? 0 : waker + 1);
    uint64_t *slot = fk_u64map_slot(&k->refs, key, true);
    if (*slot)
        return (uint32_t)(*slot - 1);
    unsigned n = 0;
    if (waker != FK_BT_NO_STACK) {
        const struct fk_loc *w = k->locs + k->ids[waker].off;
        for (unsigned i = k->ids[waker].n; i-- > 0 && n < MAX_FRAMES + 1;)
            k->scratch[n++] = w[i];
        k->scratch[n++] = k->sep_loc;
    }
    if (open)
        k->scratch[n++] = k->open_loc;
    const struct fk_loc *b = k->locs + k->ids[blocked].off;
    for (unsigned i = 0; i < k->ids[blocked].n && n < 2 * MAX_FRAMES + 4; i++)
        k->scratch[n++] = b[i];
    struct fk_stack_frames f = {
        .pid = k->ids[blocked].pid, .tid = k->ids[blocked].tid, .locs = k->scratch, .n = n,
        .user = n, .cap = n,
    };
    uint32_t ref = fk_engine_stack_ref(k->e, &f);
    slot = fk_u64map_slot(&k->refs, key, true);
    *slot = (uint64_t)ref + 1;
    return ref;
}

/* A finished block: its time goes to its stack. */
static void block_done(void *ctx, const struct fk_block *b)
{
    struct offcpu *k = ctx;
    if (k->o.wakers && !b->dropped && b->waker == FK_BT_NO_STACK && b->state != FK_BT_RUNNABLE)
        k->st.waker_unmatched++;
    /* kept by thread and stack until the end (calibrate); a short block
     * only counts toward its thread's recorded time */
    uint32_t ref = b->dropped ? UINT32_MAX : block_ref(k, (uint32_t)b->stack, b->waker, b->open);
    uint64_t *v = fk_u64map_slot(&k->acc_of, (uint64_t)(uint32_t)b->tid << 32 | ref, true);
    if (!*v) {
        k->acc = fk_grow(k->acc, &k->capacc, k->nacc + 1, sizeof *k->acc);
        k->acc[k->nacc] = (struct acc){ .tid = b->tid, .ref = ref, .state = (uint8_t)b->state };
        *v = ++k->nacc;
        *fk_u64map_slot(&k->acc_tids, (uint64_t)(uint32_t)b->tid, true) = 1;
    }
    struct acc *a = &k->acc[*v - 1];
    if (b->dropped) {
        a->short_ns += b->ns;
    } else {
        a->switches += b->switches;
        a->ns += b->ns;
    }
}

/* ---- hooks -------------------------------------------------------------- */

static bool offcpu_start(const struct fk_capture_opts *o, void **state, unsigned *nevents,
                         char *err, size_t errlen)
{
    const struct fk_offcpu_opts *oo = o->kind_opts;
    if (!oo) {
        snprintf(err, errlen, "off-CPU capture without its options");
        return false;
    }
    struct offcpu *k = fk_calloc(1, sizeof *k);
    k->o = *oo;
    if (!k->o.one_in)
        k->o.one_in = 1;
    k->n_now = k->st.one_in_min = k->st.one_in_max = k->o.one_in;
    k->others = -1;
    pthread_mutex_init(&k->lock, NULL);
    pthread_mutex_init(&k->look_lock, NULL);
    if (!fk_tp_format_load("sched", "sched_switch", &k->sw, err, errlen))
        goto fail;
    k->prev_pid = fk_tp_field(&k->sw, "prev_pid");
    k->prev_state = fk_tp_field(&k->sw, "prev_state");
    if (!k->prev_pid || !k->prev_state) {
        snprintf(err, errlen, "sched:sched_switch has no prev_pid/prev_state field in its "
                 "tracefs format: this kernel's layout is not one flamekit knows");
        goto fail;
    }
    /* the state letters' bits and the preemption bit above them */
    uint64_t top = 0;
    for (unsigned i = 0; i < k->sw.nflags; i++) {
        if (!strcmp(k->sw.flags[i].letter, "S"))
            k->bits.sleeping = k->sw.flags[i].bit;
        if (!strcmp(k->sw.flags[i].letter, "D"))
            k->bits.disk = k->sw.flags[i].bit;
        if (!strcmp(k->sw.flags[i].letter, "X") || !strcmp(k->sw.flags[i].letter, "Z"))
            k->exit_bits |= k->sw.flags[i].bit;
        if (k->sw.flags[i].bit > top)
            top = k->sw.flags[i].bit;
    }
    if (!k->bits.sleeping)
        k->bits.sleeping = 1;       /* TASK_INTERRUPTIBLE since Linux 2.6 */
    if (!k->bits.disk)
        k->bits.disk = 2;
    k->bits.preempt = top ? top << 1 : 0x100;
    if (k->o.wakers) {
        /* sched_waking fires in the waker, always. sched_wakeup fires
         * where the woken thread is activated: for a wakeup queued to
         * another CPU (that CPU idle, or no cache shared with it -- a VM
         * that shows no L3 is such a host) that is the other CPU's
         * interrupt, in whatever thread runs there: an unrelated stack,
         * or, for pid and run targets, no record at all (measured: a pipe
         * producer's wait 59 % "woken by the consumer's read" in one run,
         * 99-100 % in others). sched_waking came in Linux 4.3. */
        k->waker_event = "sched_waking";
        if (!fk_tp_format_load("sched", "sched_waking", &k->wk, err, errlen)) {
            k->waker_event = "sched_wakeup";
            if (!fk_tp_format_load("sched", "sched_wakeup", &k->wk, err, errlen))
                goto fail;
        }
        k->woken_pid = fk_tp_field(&k->wk, "pid");
        if (!k->woken_pid) {
            snprintf(err, errlen, "sched:%s has no pid field in its tracefs format", k->waker_event);
            goto fail;
        }
    }
    unsigned n = 0;
    k->ev_switch = n++;
    k->ev_wake = k->o.wakers ? n++ : NO_EVENT;
    k->ev_cpu = k->o.with_cpu ? n++ : NO_EVENT;
    k->nevents = n;
    if (k->o.with_cpu)
        k->cpu_period_ns = 1000000000ull / (k->o.cpu_freq ? k->o.cpu_freq : 99);
    struct fk_bt_opts bo = {
        .min_block_ns = k->o.min_block_ns, .one_in = k->o.one_in, .sink = block_done, .ctx = k,
    };
    fk_bt_init(&k->bt, &bo);
    fk_stacktab_init(&k->store);
    k->target = o->target;
    /* switch-ins from the in-kernel program where it loads, else from the
     * kernel's switch records */
    if (k->o.no_bpf) {
        snprintf(k->bpf_note, sizeof k->bpf_note, "--no-bpf");
    } else {
        /* the program's map and ring are the kernel's memory, made for
         * this capture: charged to --max-memory (offcpu_bytes), at most
         * its share */
        char why[256] = "";
        size_t ring = SWTIME_RING_BYTES;
        uint64_t share = o->max_mem_bytes ? o->max_mem_bytes / SWTIME_MEM_SHARE : UINT64_MAX;
        while (ring > SWTIME_RING_MIN && fk_swtime_bytes_for(ring) > share)
            ring /= 2;
        if (fk_swtime_bytes_for(ring) > share)
            snprintf(why, sizeof why, "its map and ring buffer (%zu KiB) do not fit in an eighth of "
                     "--max-memory (%llu KiB): raise it to use it",
                     fk_swtime_bytes_for(ring) >> 10, (unsigned long long)(o->max_mem_bytes >> 10));
        /* a host that refuses BPF on perf events (a seccomp filter on
         * PERF_EVENT_IOC_SET_BPF) is told by the cached probe, whose event
         * closes at once: fk_swtime_new would open sched_switch's event
         * first, and closing a tracepoint's last perf event, bare, waits
         * for an RCU tasks-trace grace period before the window */
        if (why[0] || !fk_bpf_usable(why, sizeof why) ||
            !fk_swtime_new(&k->sw, k->exit_bits, k->bits.preempt, ring, &k->swt, why, sizeof why))
            snprintf(k->bpf_note, sizeof k->bpf_note, "%s", why);
        const char *note = NULL;
        if (k->swt && !(k->exact_ok = fk_swtime_exact(k->swt, &note)))
            snprintf(k->bpf_note, sizeof k->bpf_note, "no exact totals: %s", note);
    }
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    k->nmarked = cpus > 0 && cpus < 65536 ? (uint32_t)cpus : 1024;
    k->marked = fk_calloc(k->nmarked, sizeof *k->marked);
    *state = k;
    *nevents = n;
    return true;
fail:
    pthread_mutex_destroy(&k->lock);
    pthread_mutex_destroy(&k->look_lock);
    free(k);
    return false;
}

static bool offcpu_config(void *state, const struct fk_capture_opts *o, unsigned i,
                          struct perf_event_attr *attr, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct offcpu *k = state;
    if (i == k->ev_cpu) {
        struct fk_event cpu;
        fk_event_cpu_default(&cpu, k->o.cpu_freq ? k->o.cpu_freq : 99);
        attr->type = PERF_TYPE_SOFTWARE;    /* a timer: its period is time */
        attr->config = PERF_COUNT_SW_CPU_CLOCK;
        attr->freq = 1;
        attr->sample_freq = cpu.freq;
        attr->sample_type |= PERF_SAMPLE_PERIOD;
        return true;
    }
    /* tracepoints: one hit in N, never PERF_SAMPLE_PERIOD (it would make
     * every hit a sample); kernel stacks as asked (the event itself is
     * the kernel's) */
    attr->type = PERF_TYPE_TRACEPOINT;
    attr->config = i == k->ev_switch ? k->sw.id : k->wk.id;
    attr->freq = 0;
    attr->sample_period = k->o.one_in;
    if (i == k->ev_switch && k->swt) {
        /* the program picks (fk_swtime_set_n) and writes each pick's
         * sample to an event of each CPU's (offcpu_opened), in this
         * event's layout; this one, the rings' and the side-band's, never
         * samples. Not the tracepoint's own events, filtered by the
         * program's return: the kernel ANDs the returns of every program
         * on a tracepoint for all of its perf events, and another capture's
         * 0 took this one's samples (and this one's the other's) */
        attr->type = PERF_TYPE_SOFTWARE;
        attr->config = PERF_COUNT_SW_DUMMY;
        attr->sample_period = 1;
    }
    attr->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
    attr->sample_type |= PERF_SAMPLE_RAW;
    attr->read_format |= PERF_FORMAT_ID;    /* fk_engine_set_period finds the fds by it */
    attr->exclude_callchain_kernel = o->event.exclude_kernel;
    attr->exclude_kernel = 0;
    if (i == k->ev_switch) {
        /* every switch-in, sampled or not: the in-kernel program's
         * blocks, else the kernel's switch records */
        attr->context_switch = !k->swt;
        /* each sample's weight: its counter's count (sample_weight);
         * refused on inherited per-task events before Linux 6.12, where
         * the engine takes it off again. Not with the program: its
         * counter counts only the hits the program lets through */
        if (!k->swt)
            attr->sample_type |= PERF_SAMPLE_READ;
    }
    return true;
}

static void offcpu_values(void *state, const struct fk_capture_opts *o, struct fk_evkind_values *v)
{
    struct offcpu *k = state;
    (void)o;
    /* blocks count switches (each recorded one standing for N); with
     * --with-cpu the CPU samples count too */
    v->count_type = k->o.with_cpu ? "events" : "switches";
    v->type = "off_cpu";
    v->unit = "nanoseconds";
    v->period = 1;
    v->fold_weight = true;
}

/* A switch-out sample's thread and state: from the program's raw part
 * (struct fk_swtime_pick) with the in-kernel program, else from
 * sched_switch's record. false when it does not parse. */
static bool switch_raw(const struct offcpu *k, const struct fk_sample *s, int64_t *prev,
                       int64_t *pstate)
{
    if (!s->raw)
        return false;
    if (k->swt) {
        struct fk_swtime_pick p;
        if (s->raw_size < sizeof p)
            return false;
        memcpy(&p, s->raw, sizeof p);
        *prev = (int64_t)p.tid;
        *pstate = (int64_t)fk_swtime_pick_state(k->swt, p.state);
        return true;
    }
    return fk_tp_get(k->prev_pid, s->raw, s->raw_size, prev) &&
           fk_tp_get(k->prev_state, s->raw, s->raw_size, pstate);
}

static void offcpu_sample(void *state, struct fk_engine *e, unsigned event,
                          const struct fk_sample *s, const struct fk_stack_frames *st)
{
    struct offcpu *k = state;
    k->e = e;
    name_frames(k);
    if (!st)
        return;
    if (event == k->ev_cpu) {
        /* weighed by its own period (cpu-clock: ns of the target's CPU
         * time), not the nominal 1/99 s: the kernel moves a frequency-
         * driven event's period as it follows the rate */
        uint64_t ns = s->period > 1 ? s->period : k->cpu_period_ns;
        struct fk_stack_frames f = with_root(k, st, k->oncpu_loc);
        fk_engine_add(e, &f, 1, ns);
        *fk_u64map_slot(&k->oncpu_of, (uint64_t)(uint32_t)s->tid, true) += ns;
        k->st.cpu_samples++;
        k->st.cpu_ns += ns;
        return;
    }
    if (event == k->ev_wake) {
        int64_t woken;
        if (!s->raw || !fk_tp_get(k->woken_pid, s->raw, s->raw_size, &woken) || woken <= 0) {
            k->st.raw_mismatch++;
            return;
        }
        k->st.wakeups_recorded++;
        const char *comm = fk_sym_comm_of(fk_engine_symbolizer(e), st->pid, st->tid);
        struct fk_stack_frames f = with_root(k, st, fk_engine_named_frame(e, comm ? comm : "?"));
        fk_bt_wake(&k->bt, (pid_t)woken, s->time, store_stack(k, &f));
        return;
    }
    /* (weighed first: every sample closes its counter's gap) */
    bool by_count;
    uint64_t n = sample_weight(k, s, &by_count);
    if (!n) {
        k->st.recorded_twice++;
        return;
    }
    int64_t prev, pstate;
    if (!switch_raw(k, s, &prev, &pstate) || prev != s->tid) {
        k->st.raw_mismatch++;
        return;
    }
    if (prev <= 0)
        return;     /* the idle task */
    k->st.recorded++;
    k->st.weighed_by_count += by_count;
    k->st.weighed_by_time += !by_count;
    enum fk_bt_state state_ = fk_bt_state_of(pstate, &k->bits);
    struct fk_stack_frames from_sched = from_scheduler(k, st);
    struct fk_stack_frames f = with_root(k, &from_sched, k->state_loc[state_]);
    k->st.switches_estimated += n;
    if (k->exit_bits && (pstate & (int64_t)k->exit_bits) && !(pstate & (int64_t)k->bits.preempt)) {
        /* the thread's last switch-out (do_task_dead), after its EXIT
         * record: no switch-in ends it */
        k->st.exit_switches++;
        return;
    }
    if (k->swt)
        *fk_u64map_slot(&k->sampled_tids, (uint64_t)(uint32_t)s->tid, true) = 1;
    fk_bt_out_n(&k->bt, s->tid, s->time, state_, store_stack(k, &f), n);
}

/* A sample of another thread than the target's: not weighed, but its
 * counter's gap ends there. */
static void offcpu_outside(void *state, struct fk_engine *e, unsigned event,
                           const struct fk_sample *s)
{
    struct offcpu *k = state;
    k->e = e;
    bool by_count;
    if (event == k->ev_switch && s->count)
        sample_weight(k, s, &by_count);
}

/* ---- each thread's exact off-CPU time ----------------------------------- */

/* tid's entry (the reader's thread); NULL past EXACT_MAX threads. */
static struct exact *exact_of(struct offcpu *k, pid_t tid, bool add)
{
    unsigned c = (unsigned)tid % EXACT_CACHE;
    if (k->exact_cache[c].tid == tid && k->exact_cache[c].i1)
        return &k->exact[k->exact_cache[c].i1 - 1];
    uint64_t *v = fk_u64map_slot(&k->exact_of, (uint64_t)tid, false);
    if (!v && !add)
        return NULL;
    if (!v) {
        if (k->nexact >= EXACT_MAX) {
            k->exact_over++;
            return NULL;
        }
        k->exact = fk_grow(k->exact, &k->capexact, k->nexact + 1, sizeof *k->exact);
        struct exact *x = &k->exact[k->nexact];
        fk_bt_total_init(&x->t);
        x->bounded = false;
        x->want1 = 0;
        v = fk_u64map_slot(&k->exact_of, (uint64_t)tid, true);
        *v = ++k->nexact;
    }
    k->exact_cache[c].tid = tid;
    k->exact_cache[c].i1 = (uint32_t)*v;
    return &k->exact[*v - 1];
}

/* (the reader's thread, or the engine's at the end) */
static void exact_switch(struct offcpu *k, pid_t tid, uint64_t time, bool out)
{
    struct exact *x = exact_of(k, tid, true);
    if (x)
        fk_bt_total_add(&x->t, time, out, __atomic_load_n(&k->window_start, __ATOMIC_SEQ_CST),
                        __atomic_load_n(&k->window_end, __ATOMIC_SEQ_CST));
}

/* FORK of a thread whose tid has records from before: another thread's
 * (no exact total for that tid; the new thread's own first switch-in may
 * be read first, from another CPU's ring); EXIT: its last switch-out is
 * no block. */
static void exact_task(struct offcpu *k, const union perf_event *ev)
{
    struct exact *x = exact_of(k, (pid_t)ev->fork.tid, false);
    if (!x)
        return;
    if (ev->header.type == PERF_RECORD_EXIT)
        x->t.exited = true;
    else if (ev->fork.tid != ev->fork.ptid &&
             (x->t.min_in < ev->fork.time || x->t.min_out < ev->fork.time))
        x->t.reused = true;
}

/* A FORK or EXIT record: the thread's life (born_at, exit_at). */
static void life_task(struct offcpu *k, const union perf_event *ev)
{
    uint64_t tid = (uint64_t)(uint32_t)ev->fork.tid, t = ev->fork.time + 1;
    if (!ev->fork.tid)
        return;
    bool fork = ev->header.type == PERF_RECORD_FORK;
    uint64_t *b = fk_u64map_slot(&k->born_at, tid, false), *x;
    if (!b && (k->born_at.n >= LIFE_MAX || k->exit_at.n >= LIFE_MAX)) {
        k->lives_over++;
        return;
    }
    if (fork) {
        b = fk_u64map_slot(&k->born_at, tid, true);
        if (!*b)
            *b = t;
        if ((x = fk_u64map_slot(&k->exit_at, tid, false)))
            *x = 0;     /* alive again: a new thread under the tid */
    } else {
        if (!b)
            *fk_u64map_slot(&k->born_at, tid, true) = 0;  /* (counted toward LIFE_MAX) */
        *fk_u64map_slot(&k->exit_at, tid, true) = t;
        if (k->swt)
            exit_total(k, (pid_t)ev->fork.tid, t - 1);  /* (its EXIT block came first) */
    }
}

/* tid's life in the window [start, stop]: from its first FORK (else the
 * opening) to its last EXIT (else the closing); 0 when outside. */
static uint64_t life_in_window(struct offcpu *k, pid_t tid, uint64_t start, uint64_t stop)
{
    uint64_t key = (uint64_t)(uint32_t)tid;
    uint64_t *b = k->born_at.n ? fk_u64map_slot(&k->born_at, key, false) : NULL;
    uint64_t *x = k->exit_at.n ? fk_u64map_slot(&k->exit_at, key, false) : NULL;
    if (b && *b && *b - 1 > start)
        start = *b - 1;
    if (x && *x && *x - 1 < stop)
        stop = *x - 1;
    return stop > start ? stop - start : 0;
}

/* tid's life in the window ending at stop (all of it, window, when the
 * window has no start). */
static uint64_t life_of(struct offcpu *k, pid_t tid, uint64_t stop, uint64_t window)
{
    return window && k->window_start ? life_in_window(k, tid, k->window_start, stop) : window;
}

/* An exact total ns cut to the thread's life (counted: threads_exact_cut):
 * no time before its FORK nor after its EXIT. */
static uint64_t exact_within_life(struct offcpu *k, uint64_t ns, uint64_t life, uint64_t window)
{
    if (!window || !k->window_start || ns <= life)
        return ns;
    k->st.threads_exact_cut++;
    return life;
}

/* tid's EXIT record's time (true), when it exited and was not given again. */
static bool exited_at(struct offcpu *k, pid_t tid, uint64_t *t)
{
    uint64_t *x = k->exit_at.n ? fk_u64map_slot(&k->exit_at, (uint64_t)(uint32_t)tid, false) : NULL;
    if (!x || !*x)
        return false;
    *t = *x - 1;
    return true;
}

/* tid's EXIT record, timed at t, and its last EXIT block (either first):
 * the block's total is cut to the record when it lies within the block's
 * span. perf takes a thread's per-task events at its EXIT record: nothing
 * of it after is sampled, and the waits after it (a pid namespace's first
 * process waits there for the others to die, a thread preempted on its
 * way out) would go to its other stacks; they are counted apart
 * (exit_tail_ns). Off CPU before the record: the time from the first
 * switch-out to it less the CPU used -- all of it, up to the thread's
 * last microseconds after the record, so at most that much too little. */
static void exit_total(struct offcpu *k, pid_t tid, uint64_t t)
{
    uint64_t key = (uint64_t)(uint32_t)tid;
    uint64_t *xi = k->exitb_of.n ? fk_u64map_slot(&k->exitb_of, key, false) : NULL;
    struct exitb *xb = xi && *xi ? &k->exitb[*xi - 1] : NULL;
    if (!xb || !xb->open || t < xb->t0 || t > xb->in)
        return;
    xb->open = false;
    uint64_t before = t - xb->t0 > xb->oncpu ? t - xb->t0 - xb->oncpu : 0;
    uint64_t *v = fk_u64map_slot(&k->exited_ns, key, false);
    if (before >= xb->added || !v || !*v)
        return;
    k->threads_exit_tail++;
    k->exit_tail_ns += xb->added - before;
    *v -= xb->added - before;
}

/* tid's exact total from the program (its threads that exited in the
 * window, and the one alive at its end). */
static bool program_total(struct offcpu *k, pid_t tid, uint64_t *ns)
{
    if (!k->exact_ok)
        return false;
    uint64_t key = (uint64_t)(uint32_t)tid, live;
    uint64_t *e = k->exited_ns.n ? fk_u64map_slot(&k->exited_ns, key, false) : NULL;
    uint64_t *l = k->live_ns.n ? fk_u64map_slot(&k->live_ns, key, false) : NULL;
    uint64_t exit_t;
    if (exited_at(k, tid, &exit_t)) {
        /* gone: what /proc shows under its tid now is a zombie's clock or
         * another thread's (a tid given again), not its time; its total
         * is its EXIT block's, up to its EXIT record: perf took its
         * per-task events then (nothing of it after is sampled), and what
         * it waited for after (a pid namespace's first process waits there
         * for the others to die) is no block of the profile's */
        if (!(e && *e))
            return false;
        *ns = *e - 1;
        return true;
    }
    bool have_live = l && *l;
    if (!have_live && live_total(k, tid, k->window_end, &live)) {
        have_live = true;       /* (first sampled after the window closed) */
        *fk_u64map_slot(&k->live_ns, key, true) = live + 1;
        l = fk_u64map_slot(&k->live_ns, key, false);
    }
    if (!have_live && !(e && *e))
        return false;
    *ns = (have_live ? *l - 1 : 0) + (e && *e ? *e - 1 : 0);
    return true;
}

/* ---- threads with an exact total and no recorded block ----------------- */

/* The engine's reference for "comm;[not recorded]" of thread tid of
 * process pid. */
static uint32_t unrec_stack(struct offcpu *k, pid_t pid, pid_t tid)
{
    name_frames(k);
    struct fk_loc loc = k->unrec_loc;
    struct fk_stack_frames f = { .pid = pid, .tid = tid, .locs = &loc, .n = 1, .user = 1, .cap = 1 };
    return fk_engine_stack_ref(k->e, &f);
}

/* Whether a thread of process pid with no sample is the target's: as its
 * samples would be judged (fk_engine_owns), or, for a cgroup target on the
 * in-kernel path, by the program's own filter (it times only the cgroup's
 * threads; the engine cannot tell without a sample's cgroup). On the
 * switch-record path a cgroup target's threads with no sample are not
 * told from the host's others: none is given "[not recorded]". */
static bool unrec_owned(struct offcpu *k, pid_t pid)
{
    if (k->swt && k->target && k->target->kind == FK_TARGET_CGROUP && k->bpf_filter &&
        !strcmp(k->bpf_filter, "cgroup"))
        return true;
    return fk_engine_owns(k->e, pid);
}

/* tid's EXIT record (the engine's thread, in time order): with no
 * recorded block so far, its "[not recorded]" reference is made now, its
 * name known (used only if no block comes and its total is known); a
 * thread not the target's (another process in a pid target's cgroup,
 * which the program times too) is marked so (UNREC_OUTSIDE). */
#define UNREC_OUTSIDE UINT64_MAX
static void unrec_exit(struct offcpu *k, pid_t pid, pid_t tid)
{
    uint64_t key = (uint64_t)(uint32_t)tid, *v;
    if (tid <= 0 || (k->acc_tids.n && (v = fk_u64map_slot(&k->acc_tids, key, false)) && *v))
        return;
    *fk_u64map_slot(&k->unrec_ref, key, true) =
        unrec_owned(k, pid) ? (uint64_t)unrec_stack(k, pid, tid) + 1 : UNREC_OUTSIDE;
}

/* tid's total ns (exact, cut to its life in the window) to its
 * "[not recorded]" frame, if it is the target's. A thread alive at the
 * end is judged and named now: its process from /proc (gone: tid), its
 * name from the symbolizer (read from /proc if it has none). */
static void unrec_add(struct offcpu *k, pid_t tid, uint64_t ns, uint64_t stop, uint64_t window)
{
    uint64_t key = (uint64_t)(uint32_t)tid;
    uint64_t *r = k->unrec_ref.n ? fk_u64map_slot(&k->unrec_ref, key, false) : NULL;
    if (r && *r == UNREC_OUTSIDE)
        return;
    ns = exact_within_life(k, ns, life_of(k, tid, stop, window), window);
    if (!ns)
        return;
    uint32_t ref;
    if (r && *r) {
        ref = (uint32_t)(*r - 1);
    } else {
        char path[48];
        snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
        unsigned long long tgid = fk_proc_status_last(path, "Tgid");
        pid_t pid = tgid > 0 && tgid <= INT32_MAX ? (pid_t)tgid : tid;
        if (!unrec_owned(k, pid))
            return;
        struct fk_symbolizer *sym = fk_engine_symbolizer(k->e);
        if (!strcmp(fk_sym_comm_of(sym, pid, tid), "[unknown]"))
            fk_sym_scan_pid(sym, pid);
        ref = unrec_stack(k, pid, tid);
    }
    fk_engine_add_ref(k->e, ref, 0, ns);
    k->st.threads_unrecorded++;
    k->st.unrecorded_ns += ns;
    k->st.blocked_ns += ns;
}

struct unrec_ctx {
    struct offcpu *k;
    struct fk_u64map *est;
    uint64_t stop, window;
};

/* A thread the program timed (alive at the end): without recorded blocks,
 * its exact total to "[not recorded]". */
static bool unrec_live(void *ctx, pid_t tid)
{
    struct unrec_ctx *c = ctx;
    uint64_t key = (uint64_t)(uint32_t)tid, ns, t;
    if (c->est->n && fk_u64map_slot(c->est, key, false))
        return true;
    if (exited_at(c->k, tid, &t) || !program_total(c->k, tid, &ns))
        return true;
    unrec_add(c->k, tid, ns, c->stop, c->window);
    return true;
}

/* The threads whose exact total is known but none of whose switch-outs
 * was recorded (N > 1: a short thread's one or two picked by none; a
 * thread whose only block was dropped): without this they would be
 * nowhere in the graph, and per thread the widths would not add up to
 * the time captured. Their time, no stack nor state known, goes under
 * "comm;[not recorded]" (counted: threads_unrecorded, unrecorded_ns).
 * The program's totals: threads that exited (exited_ns), those alive at
 * the end (its map); the switch records': every thread they paired for.
 * None when records were lost (no exact totals then). est: tid -> the
 * recorded ns of the threads with recorded blocks. */
static void unrecorded(struct offcpu *k, uint64_t end, uint64_t stop, uint64_t window,
                       struct fk_u64map *est)
{
    if (k->records_lost)
        return;
    struct unrec_ctx c = { k, est, stop, window };
    uint64_t ns;
    if (k->swt) {
        if (!k->exact_ok)
            return;
        for (size_t i = 0; i < k->exited_ns.n; i++) {
            pid_t tid = (pid_t)k->exited_ns.v[i].key;
            uint64_t t;
            if (!k->exited_ns.v[i].val || (est->n && fk_u64map_slot(est, k->exited_ns.v[i].key, false)))
                continue;
            if (exited_at(k, tid, &t) && program_total(k, tid, &ns))
                unrec_add(k, tid, ns, stop, window);
        }
        fk_swtime_threads(k->swt, unrec_live, &c);
        return;
    }
    for (size_t i = 0; i < k->exact_of.n; i++) {
        uint64_t key = k->exact_of.v[i].key, idx = k->exact_of.v[i].val;
        if (!idx || (est->n && fk_u64map_slot(est, key, false)))
            continue;
        if (fk_bt_total_get(&k->exact[idx - 1].t, k->window_start, k->window_end, end, &ns))
            unrec_add(k, (pid_t)key, ns, stop, window);
    }
}

const char *fk_offcpu_no_total_name(int why)
{
    switch (why) {
    case FK_OFFCPU_NT_NO_RECORDS: return "no_switch_records";
    case FK_OFFCPU_NT_EXITED: return "exited_without_total";
    case FK_OFFCPU_NT_NO_CPU_TIME: return "no_cpu_time";
    default:
        return why > 0 && why < FK_BT_TOTAL_NWHY ? fk_bt_total_why_name((enum fk_bt_total_why)why)
                                                 : "";
    }
}

/* ns from the window's opening (INT64_MIN: no time) */
static int64_t from_opening(const struct offcpu *k, uint64_t t)
{
    if (!t || t == UINT64_MAX)
        return INT64_MIN;
    return t >= k->window_start ? (int64_t)(t - k->window_start)
                                : -(int64_t)(k->window_start - t);
}

/* A thread with recorded blocks and no total of its own (x: its switch
 * records, NULL on the program's path or when none were kept): counted by
 * why, and the first one's records kept for the metadata. */
static void no_total(struct offcpu *k, pid_t tid, const struct exact *x, uint64_t end)
{
    uint64_t t, ns;
    int why;
    if (k->swt)
        why = exited_at(k, tid, &t) ? FK_OFFCPU_NT_EXITED : FK_OFFCPU_NT_NO_CPU_TIME;
    else if (!x)
        why = FK_OFFCPU_NT_NO_RECORDS;
    else
        why = (int)fk_bt_total_why(&x->t, k->window_start, k->window_end, end, &ns);
    if (why <= 0 || why >= FK_OFFCPU_NO_TOTAL_N)
        why = FK_OFFCPU_NT_NO_RECORDS;      /* (cannot be: calibrate found none) */
    k->st.est_no_total++;
    k->st.no_total_by[why]++;
    struct fk_offcpu_no_total_first *f = &k->st.no_total_first;
    if (f->tid)
        return;
    uint64_t key = (uint64_t)(uint32_t)tid;
    uint64_t *b = k->born_at.n ? fk_u64map_slot(&k->born_at, key, false) : NULL;
    uint64_t *e = k->exit_at.n ? fk_u64map_slot(&k->exit_at, key, false) : NULL;
    *f = (struct fk_offcpu_no_total_first){
        .tid = tid, .why = why,
        .first_in = INT64_MIN, .first_out = INT64_MIN, .last_in = INT64_MIN,
        .last_out = INT64_MIN,
        .born = b && *b ? from_opening(k, *b - 1) : INT64_MIN,
        .exit = e && *e ? from_opening(k, *e - 1) : INT64_MIN,
        .exited = e && *e,
    };
    if (x) {
        f->n_in = x->t.n_in;
        f->n_out = x->t.n_out;
        f->early_in = x->t.nearly_in;
        f->early_out = x->t.nearly_out;
        f->first_in = from_opening(k, x->t.min_in);
        f->first_out = from_opening(k, x->t.min_out);
        f->last_in = x->t.n_in ? from_opening(k, x->t.max_in) : INT64_MIN;
        f->last_out = x->t.n_out ? from_opening(k, x->t.max_out) : INT64_MIN;
        f->exited = f->exited || x->t.exited;
    }
}

/* The recorded blocks are one switch-out in N, each standing for N, and
 * sampling is not blind to what it measures: a recorded switch-out is
 * slower (its stack is copied) and wakes flamekit's own threads; and
 * blocks are heavy-tailed (on a loaded host 1 % of a storm's blocks held
 * 40-76 % of its off-CPU time), so one recorded block of 4 ms weighs 0.4 s
 * at N = 100. Measured on a switch storm, fixed to the causes above, a
 * thread's recorded total was 90-318 % of its switch records' own.
 * Every switch record is read anyway, so each thread's total is known
 * exactly: its recorded blocks (short ones too) are scaled to add up to
 * it, and the samples only share it out among its stacks and states (a
 * switch-in the kernel did not show counts nothing, its bound reported:
 * the total is then exact within it). A thread whose records do not pair
 * (or any, when records were lost) keeps its estimate, cut to the window
 * less the CPU its own samples were seen using (--with-cpu) if it is
 * longer (counted): with records lost, one sample after the loss weighs
 * every hit its counter counted meanwhile, and a storm thread's estimate
 * alone passed the window (ASan: ping off + on 122.6 % of it).
 * Both are the window's: from its opening to its closing, as the
 * profile's duration is (the engine's loop), not from the events' enable
 * (before /proc is scanned: a napping python3.11 blocked 108-117 % of its
 * window, CI under load) nor to the records' end (end, after the disable). */
static void calibrate(struct offcpu *k, uint64_t end)
{
    uint64_t stop = k->window_end && k->window_end < end ? k->window_end : end;
    uint64_t window = stop > k->window_start ? stop - k->window_start : 0;
    struct fk_u64map est = { 0 };       /* tid -> its recorded ns (short ones too) */
    for (size_t i = 0; i < k->nacc; i++)
        *fk_u64map_slot(&est, (uint64_t)(uint32_t)k->acc[i].tid, true) +=
            k->acc[i].ns + k->acc[i].short_ns;
    struct fk_u64map scale = { 0 };     /* tid -> exact ns + 1 (0: keep the estimate) */
    for (size_t i = 0; i < est.n; i++) {
        pid_t tid = (pid_t)est.v[i].key;
        struct exact *x = k->swt ? NULL : exact_of(k, tid, false);
        uint64_t ns;
        k->st.blocked_ns_recorded += est.v[i].val;
        bool known = x && fk_bt_total_get(&x->t, k->window_start, k->window_end, end, &ns);
        if (k->swt)
            known = program_total(k, tid, &ns);
        /* its life in the window: a thread is given no time before its
         * FORK nor after its EXIT (a total or an estimate past it is
         * another thread's, or waits perf could not sample) */
        uint64_t life = life_of(k, tid, stop, window);
        if (est.v[i].val && !k->records_lost && known) {
            ns = exact_within_life(k, ns, life, window);
            *fk_u64map_slot(&scale, (uint64_t)(uint32_t)tid, true) = ns + 1;
            k->st.threads_exact++;
            k->st.threads_exact_bounded += x && x->bounded;
        } else {
            k->st.threads_estimated++;
            if (!est.v[i].val)
                k->st.est_nothing_recorded++;
            else if (k->records_lost)
                k->st.est_records_lost++;
            else if (k->swt && !k->exact_ok)
                k->st.est_no_program_totals++;
            else
                no_total(k, tid, x, end);
            uint64_t *on = k->oncpu_of.n ? fk_u64map_slot(&k->oncpu_of, (uint64_t)(uint32_t)tid,
                                                          false) : NULL;
            uint64_t room = on && *on < life ? life - *on : on ? 0 : life;
            if (window && k->window_start && est.v[i].val > room) {
                *fk_u64map_slot(&scale, (uint64_t)(uint32_t)tid, true) = room + 1;
                k->st.threads_cut++;
            }
        }
    }
    memset(k->st.blocks.ns_by_state, 0, sizeof k->st.blocks.ns_by_state);
    k->st.blocks.short_ns = 0;
    for (size_t i = 0; i < k->nacc; i++) {
        struct acc *a = &k->acc[i];
        uint64_t ns = a->ns, short_ns = a->short_ns;
        uint64_t *s = fk_u64map_slot(&scale, (uint64_t)(uint32_t)a->tid, false);
        if (s && *s) {
            long double f = (long double)(*s - 1) /
                            (long double)*fk_u64map_slot(&est, (uint64_t)(uint32_t)a->tid, false);
            ns = (uint64_t)((long double)a->ns * f + 0.5L);
            short_ns = (uint64_t)((long double)a->short_ns * f + 0.5L);
        }
        k->st.blocks.short_ns += short_ns;      /* (--min-block's share, as scaled) */
        k->st.blocks.ns_by_state[a->state] += ns;
        k->st.blocked_ns += ns;
        if (a->switches)
            fk_engine_add_ref(k->e, a->ref, a->switches, ns);
    }
    unrecorded(k, end, stop, window, &est);
    fk_u64map_free(&est);
    fk_u64map_free(&scale);
}

/* ---- switch-ins from the in-kernel program ----------------------------- */

/* The program (capture/swtime.h) times every switch-out and switch-in of
 * the target's threads in the kernel and writes each block (tid, out,
 * in) to its ring buffer, which the reader's thread drains at each pass:
 * the blocks give each thread's exact off-CPU time (exact_switch), and
 * the block holding a recorded switch-out -- the sample is timed inside
 * it, just after its start -- is handed on to the engine's thread in time
 * order (RECORD_BLOCK, fk_bt_block). The ring buffer is read before the
 * rings in a pass and matched after them: a block is written when its
 * thread runs again, after its switch-out's sample, so that sample has
 * been read by then (in this pass or an earlier one). */

/* tid's recorded switch-outs waiting for their block (the reader's). */
static struct want *want_of(struct offcpu *k, pid_t tid, bool add)
{
    uint64_t *v = fk_u64map_slot(&k->want_of, (uint64_t)(uint32_t)tid, add);
    if (!v || (!*v && !add))
        return NULL;
    if (!*v) {
        k->want = fk_grow(k->want, &k->capwant, k->nwant + 1, sizeof *k->want);
        k->want[k->nwant] = (struct want){ .tid = tid };
        *v = ++k->nwant;
    }
    return &k->want[*v - 1];
}

/* A recorded switch-out of tid at time (its sample's, as it leaves its
 * ring): its block is handed on when it comes. */
static void want_block(struct offcpu *k, pid_t tid, uint64_t time)
{
    struct want *w = want_of(k, tid, true);
    struct exact *x = exact_of(k, tid, true);
    if (x)
        x->want1 = (uint32_t)(w - k->want) + 1;
    if (w->n && w->t[w->n - 1] == time)
        return;     /* a second sample of the same switch-out */
    if (w->n == WANT_MAX) {     /* the oldest never found its block */
        memmove(w->t, w->t + 1, (WANT_MAX - 1) * sizeof *w->t);
        w->n--;
        k->bpf_unmatched++;
    }
    w->t = fk_grow(w->t, &w->cap, w->n + 1, sizeof *w->t);
    w->t[w->n++] = time;
}

/* Has tid's last switch-out after time been seen (its EXIT block)? */
static bool exit_block_after(struct offcpu *k, pid_t tid, uint64_t time)
{
    uint64_t *v = k->exitb_of.n ? fk_u64map_slot(&k->exitb_of, (uint64_t)(uint32_t)tid, false)
                                : NULL;
    return v && *v && k->exitb[*v - 1].in >= time;
}

/* Process pid is gone, its last thread tid's EXIT record timed at time:
 * let go of it once that thread's last switch-out was seen (see struct
 * offcpu's defer). */
static void forget_after(struct offcpu *k, pid_t tid, pid_t pid, uint64_t time)
{
    if (exit_block_after(k, tid, time) || k->ndefer >= DEFER_MAX) {
        fk_swtime_forget_tgid(k->swt, pid);
        return;
    }
    k->defer = fk_grow(k->defer, &k->capdefer, k->ndefer + 1, sizeof *k->defer);
    k->defer[k->ndefer++] = (struct defer){ tid, pid, time };
}

/* (the reader's, after each pass) the processes due to be let go of. */
static void forget_due(struct offcpu *k, uint64_t now)
{
    size_t kept = 0;
    for (size_t i = 0; i < k->ndefer; i++) {
        struct defer *d = &k->defer[i];
        if (exit_block_after(k, d->tid, d->at) || now > d->at + DEFER_NS)
            fk_swtime_forget_tgid(k->swt, d->pid);
        else
            k->defer[kept++] = *d;
    }
    k->ndefer = kept;
}

/* Does process pid still have threads that run (not only its leader, a
 * zombie, or nothing: gone)? */
static bool threads_live(pid_t pid)
{
    char path[40];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    return fk_proc_status_last(path, "Threads") > 1;
}

/* FORK and EXIT as they leave the rings: per-task targets' new processes
 * are timed (the program's tgid filter; the kernel's fork program put
 * them there first, and a new thread's tid too: forgotten at its EXIT).
 * A process is forgotten when its last thread exits, not at its leader's
 * EXIT: a leader that ends with pthread_exit leaves its other threads
 * running, and the filter would stop timing them (each of their next
 * switch-ins a gap that voids the thread's total). Such a process is
 * looked at again at each of its threads' EXIT (leaders_gone). */
static void swtime_task(struct offcpu *k, const union perf_event *ev)
{
    pid_t pid = (pid_t)ev->fork.pid, tid = (pid_t)ev->fork.tid;
    bool proc = pid == tid;
    bool tgids = k->bpf_filter && !strcmp(k->bpf_filter, "tgids");
    if (ev->header.type == PERF_RECORD_FORK) {
        if (proc && tgids)
            fk_swtime_add_tgid(k->swt, pid);
        return;
    }
    if (!tgids)
        return;
    uint64_t *gone = k->leaders_gone.n ? fk_u64map_slot(&k->leaders_gone, (uint64_t)(uint32_t)pid,
                                                        false) : NULL;
    if (!proc) {
        fk_swtime_forget_tgid(k->swt, tid);     /* the fork program's entry for it */
        if (gone && *gone && !threads_live(pid)) {
            forget_after(k, tid, pid, ev->fork.time);
            *gone = 0;
        }
    } else if (threads_live(pid)) {
        *fk_u64map_slot(&k->leaders_gone, (uint64_t)(uint32_t)pid, true) = 1;
    } else {
        forget_after(k, tid, pid, ev->fork.time);
        if (gone)
            *gone = 0;
    }
    /* (its wants are kept: a block may still come for each, written as
     * the thread ran on its way out, before its EXIT record, but drained
     * in a later pass than the record was read) */
}

static void keep_block(void *ctx, const struct fk_swtime_block *b)
{
    struct offcpu *k = ctx;
    k->pass_blocks = fk_grow(k->pass_blocks, &k->cappass, k->npass + 1, sizeof *k->pass_blocks);
    k->pass_blocks[k->npass++] = *b;
}

/* The block b, holding a recorded switch-out, to the engine's thread
 * (type: RECORD_BLOCK, or RECORD_UNSEEN for a gap). */
static void hand_on(struct offcpu *k, struct fk_reader *r, const struct fk_sample_format *f,
                    const struct fk_swtime_block *b, uint32_t type)
{
    struct {
        struct perf_event_header h;
        uint64_t out;
        uint64_t trailer[8];
    } rec;
    struct fk_sample_id id = { .pid = (pid_t)b->tid, .tid = (pid_t)b->tid, .time = b->in };
    size_t n = fk_sample_id_write(f, &id, rec.trailer);
    if (!n) {
        k->bpf_unmatched++;
        return;
    }
    memset(&rec.h, 0, sizeof rec.h);
    rec.h.type = type;
    rec.h.size = (uint16_t)(sizeof rec.h + 8 + n);
    rec.out = b->out;
    if (!fk_reader_add(r, (const union perf_event *)(const void *)&rec))
        k->bpf_unmatched++;
}

static void offcpu_reader_pass(void *state, struct fk_reader *r, const struct fk_sample_format *f,
                               bool end)
{
    struct offcpu *k = state;
    if (!k->swt)
        return;
    if (!end) {
        k->npass = 0;
        fk_swtime_drain(k->swt, keep_block, k);
        reader_look(k);
        /* (one ioctl every FK_OFFCPU_OTHERS_MS: what else ran, said in
         * the result; it no longer matters to this capture's samples) */
        uint64_t now = fk_now_ns();
        if (__atomic_load_n(&k->window_start, __ATOMIC_SEQ_CST) &&
            !__atomic_load_n(&k->window_end, __ATOMIC_SEQ_CST) &&
            now - k->others_counted >= FK_OFFCPU_OTHERS_MS * 1000000ull) {
            k->others_counted = now;
            int o = fk_swtime_others(k->swt);
            if (o > k->others || k->others < 0)
                k->others = o;
        }
        return;
    }
    for (size_t i = 0; i < k->npass; i++) {
        const struct fk_swtime_block *b = &k->pass_blocks[i];
        struct fk_swtime_block timed;
        pid_t tid = (pid_t)b->tid;
        bool gap = b->kind == FK_SWTIME_UNSEEN_IN;
        if (b->kind == FK_SWTIME_EXIT) {
            /* a thread's last switch-out: its exact total, from its first
             * switch-out in the window (the program's) */
            uint64_t span = b->in > b->out ? b->in - b->out : 0;
            uint64_t *v = fk_u64map_slot(&k->exitb_of, (uint64_t)(uint32_t)tid, true);
            if (!*v) {
                k->exitb = fk_grow(k->exitb, &k->capexitb, k->nexitb + 1, sizeof *k->exitb);
                *v = ++k->nexitb;
            }
            struct exitb *xb = &k->exitb[*v - 1];
            *xb = (struct exitb){ b->out, b->in, b->oncpu, span > b->oncpu ? span - b->oncpu : 0,
                                  true };
            v = fk_u64map_slot(&k->exited_ns, (uint64_t)(uint32_t)tid, true);
            *v = (*v ? *v : 1) + xb->added;
            uint64_t t;
            if (exited_at(k, tid, &t))
                exit_total(k, tid, t);  /* (its EXIT record was read first) */
            continue;
        }
        if ((b->kind != FK_SWTIME_BLOCK && !gap) || b->in < b->out || !b->out) {
            k->bpf_in_missed++;
            continue;
        }
        if (gap) {
            /* switched out at out and again at in, run again unseen in
             * between. Every switch-out is seen, so it was off CPU once
             * there, from out, for the time elapsed less the CPU time it
             * used (the scheduler's, read at both switch-outs): a block of
             * that length, its switch-in at its end -- before anything the
             * thread did as it ran again (its EXIT record: a child's last
             * sleep lost to it in t-children). Without that CPU time: off
             * CPU for 0 to in - out, its recorded block dropped (no time
             * invented), the bound reported; the thread's exact total does
             * not depend on it */
            k->bpf_in_missed++;
            k->bpf_unseen_in++;
            if (b->oncpu != FK_SWTIME_ONCPU_UNKNOWN && b->oncpu <= b->in - b->out) {
                timed = *b;
                timed.kind = FK_SWTIME_BLOCK;
                timed.in = b->in - b->oncpu;
                timed.oncpu = 0;
                b = &timed;
                gap = false;
                k->bpf_unseen_timed++;
                k->bpf_blocks++;
            } else {
                k->bpf_unseen_ns += b->in - b->out;
            }
        } else {
            k->bpf_blocks++;
        }
        struct exact *x = exact_of(k, tid, true);
        struct want *w = x ? (x->want1 ? &k->want[x->want1 - 1] : NULL)
                           : k->want_of.n ? want_of(k, tid, false) : NULL;
        if (!w || !w->n)
            continue;
        uint32_t kept = 0;
        for (uint32_t j = 0; j < w->n; j++) {
            uint64_t t = w->t[j];
            if (t < b->out)
                k->bpf_unmatched++;     /* its block never came */
            else if (t < b->in)
                hand_on(k, r, f, b, gap ? RECORD_UNSEEN : RECORD_BLOCK);
            else
                w->t[kept++] = t;
        }
        w->n = kept;
    }
    k->npass = 0;
    forget_due(k, fk_now_ns());
}

/* The events are open, not enabled: the program (on sched_switch since
 * offcpu_start, through an event of its own: fk_swtime_new) starts timing
 * the target's threads -- all of them (host, user: the events see every
 * thread), a cgroup and those below it (cgroup targets, pid and run trees
 * in one), or per-task targets' processes by tgid and their children from
 * their fork (fk_swtime_follow_forks). */
static bool offcpu_opened(void *state, struct fk_engine *e, char *err, size_t errlen)
{
    struct offcpu *k = state;
    if (!k->swt)
        return true;
    const struct fk_target *t = k->target;
    const char *cg = fk_engine_tree_cgroup(e);
    enum fk_swtime_filter f = FK_SWTIME_ALL;
    k->bpf_filter = "all";
    if (cg) {
        f = FK_SWTIME_CGROUP;
        k->bpf_filter = "cgroup";
    } else if (fk_engine_inherits(e)) {
        f = FK_SWTIME_TGIDS;
        k->bpf_filter = "tgids";
    } else if (t && t->kind == FK_TARGET_CGROUP) {
        f = FK_SWTIME_CGROUP;
        cg = t->cgroup_dir;
        k->bpf_filter = "cgroup";
    }
    char why[256];
    bool ok = fk_swtime_filter(k->swt, f, cg, k->n_now, why, sizeof why);
    for (size_t i = 0; ok && f == FK_SWTIME_TGIDS && t && i < t->npids; i++)
        ok = fk_swtime_add_tgid(k->swt, t->pids[i]);
    if (ok && !fk_swtime_follow_forks(k->swt, why, sizeof why))
        ok = false;
    /* each CPU's event for the picks' samples, whatever the target's
     * events are (bpf_perf_event_output writes to the CPU's own): the
     * target's are per task for 'pid' and 'run' outside a cgroup, and the
     * program's filter is what tells the target there */
    if (ok) {
        size_t cap = k->nmarked, n = 0;
        int *fds = fk_calloc(cap, sizeof *fds), *cpus = fk_calloc(cap, sizeof *cpus);
        ok = fk_engine_cpu_events(e, k->ev_switch, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT,
                                  fds, cpus, cap, &n, why, sizeof why);
        for (size_t i = 0; ok && i < n; i++)
            if (!fk_swtime_sample_event(k->swt, cpus[i], fds[i])) {
                snprintf(why, sizeof why, "CPU %d's sample event for the program: %s", cpus[i],
                         strerror(errno));
                ok = false;
            }
        free(fds);
        free(cpus);
    }
    /* their events are closed with the capture's, after the files are
     * written (each close waits for an RCU tasks-trace grace period:
     * fk_swtime_new), failed or not */
    int fds[2];
    for (size_t i = 0, n = fk_swtime_events(k->swt, fds); i < n; i++) {
        int d = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
        if (d >= 0)
            fk_engine_keep_fd(e, d);
    }
    if (!ok)
        snprintf(err, errlen, "off-CPU switch timing in the kernel: %s (--no-bpf times blocks "
                 "from the kernel's switch records instead)", why);
    return ok;
}

/* At the end: a thread with a recorded block pending is still off CPU if
 * the program holds a switch-out for it no later than the sample's (and
 * that switch-out counts toward its exact total); otherwise the block's
 * switch-in was lost. */
static bool still_off(void *ctx, pid_t tid, uint64_t out_time)
{
    struct offcpu *k = ctx;
    uint64_t *v = fk_u64map_slot(&k->pend, (uint64_t)(uint32_t)tid, false), out;
    if (v && *v) {
        out = *v - 1;
    } else {
        if (!fk_swtime_pending(k->swt, tid, &out))
            return false;
        *fk_u64map_slot(&k->pend, (uint64_t)(uint32_t)tid, true) = out + 1;
    }
    return out <= out_time;
}

/* The counters, and the recorded blocks still off CPU at the end (their
 * switch-out pending in the program's map). An exit total lost in the
 * kernel (no room in its ring) or a thread it could not keep (its map)
 * leaves totals unknown: none is used. (Hits it missed do not matter to
 * the totals: they come from the scheduler's CPU time.) */
static void swtime_finish(struct offcpu *k, uint64_t end)
{
    fk_swtime_stats(k->swt, &k->bpf_st);
    if (k->bpf_st.map_full || k->bpf_st.ring_full)
        k->records_lost = true;
    if (k->bpf_at_stop.outs) {  /* the window's, not the hits after its end */
        k->bpf_st.outs = k->bpf_at_stop.outs;
        k->bpf_st.exits = k->bpf_at_stop.exits;
        k->bpf_st.picked = k->bpf_at_stop.picked;
        k->bpf_st.exiting = k->bpf_at_stop.exiting;
    }
    k->outs_seen = k->bpf_st.outs;
    fk_bt_finish_checked(&k->bt, end, still_off, k);
}

/* tid's off-CPU time from its first switch-out in the window to the
 * window's end (stop), from the scheduler's CPU time: true when known. Read
 * now, just after the end: the part since is taken off (all of it for a
 * thread still off CPU from a recorded switch-out, else its share). */
static bool live_total(struct offcpu *k, pid_t tid, uint64_t stop, uint64_t *ns)
{
    uint64_t t0, cpu0, out;
    unsigned long long cpu;
    if (!fk_swtime_thread(k->swt, tid, &t0, &cpu0) || !fk_proc_task_cpu_ns(tid, &cpu))
        return false;
    uint64_t now = fk_now_ns();
    if (now <= t0 || cpu < cpu0)
        return false;
    uint64_t span = now - t0, used = cpu - cpu0;
    uint64_t off = span > used ? span - used : 0;
    if (stop && stop < now) {
        uint64_t after = now - (stop > t0 ? stop : t0);
        if (fk_swtime_pending(k->swt, tid, &out) && out <= stop)
            off = off > after ? off - after : 0;
        else
            off -= (uint64_t)((long double)off * (long double)after / (long double)span);
    }
    *ns = off;
    return true;
}

/* The window closed: the exact totals of the threads with samples so far,
 * read at once (those sampled later are read at the end: calibrate). */
static void live_totals(struct offcpu *k)
{
    if (!k->exact_ok)
        return;
    uint64_t stop = __atomic_load_n(&k->window_end, __ATOMIC_SEQ_CST), ns;
    for (size_t i = 0; i < k->sampled_tids.n; i++)
        if (k->sampled_tids.v[i].val && live_total(k, (pid_t)k->sampled_tids.v[i].key, stop, &ns))
            *fk_u64map_slot(&k->live_ns, k->sampled_tids.v[i].key, true) = ns + 1;
}

/* A switch-out record, as it leaves its ring (in the ring reader's
 * thread): counted, and never ordered nor handed on -- half of the
 * records at a switch storm, a third of flamekit's CPU ordering them --
 * but for the one right after a recorded switch-out, where its block
 * starts. A recorded block ends at its thread's switch-in record; a
 * switch-in lost among records the kernel could not write is known by
 * the LOST record (offcpu_record). */
static bool offcpu_early_record(void *state, const union perf_event *ev,
                                const struct fk_sample_format *f)
{
    struct offcpu *k = state;
    if (!k->early)
        k->early = true;    /* (before the first record it hands on) */
    if (ev->header.type == PERF_RECORD_FORK || ev->header.type == PERF_RECORD_EXIT) {
        life_task(k, ev);
        exact_task(k, ev);
        if (k->swt)
            swtime_task(k, ev);
        return true;
    }
    if (ev->header.type != PERF_RECORD_SWITCH && ev->header.type != PERF_RECORD_SWITCH_CPU_WIDE)
        return true;
    bool out = ev->header.misc & PERF_RECORD_MISC_SWITCH_OUT;
    struct fk_sample_id id;
    if (!out) {
        if (fk_sample_id_parse(f, ev, ev->header.size, &id) && id.tid > 0)
            exact_switch(k, id.tid, id.time, false);
        return true;
    }
    if (!fk_sample_id_parse(f, ev, ev->header.size, &id) || id.tid <= 0)
        return false;       /* (the idle task's) */
    count_out(k, id.time);
    exact_switch(k, id.tid, id.time, true);
    if (id.cpu >= k->nmarked)
        return false;
    /* the switch itself, right after its recorded switch-out on this CPU
     * (offcpu_early_sample): the block starts here (fk_bt_switched_out);
     * any other switch-out there means that one's record is gone */
    bool keep = k->marked[id.cpu] == id.tid;
    k->marked[id.cpu] = 0;
    return keep;
}

/* A sample as it leaves its ring (the reader's thread): a recorded
 * switch-out marks its CPU, so that the switch record the kernel writes
 * right after it there is handed on (offcpu_early_record). */
static void offcpu_early_sample(void *state, unsigned event, const struct fk_sample *s)
{
    struct offcpu *k = state;
    if (k->swt) {
        /* (not a thread's last switch-out, do_task_dead's: no block ends it) */
        int64_t prev, pstate;
        if (event == k->ev_switch && s->tid > 0 &&
            !(k->exit_bits && switch_raw(k, s, &prev, &pstate) &&
              (pstate & (int64_t)k->exit_bits) && !(pstate & (int64_t)k->bits.preempt)))
            want_block(k, s->tid, s->time);
        return;
    }
    if (event == k->ev_switch && s->tid > 0 && s->cpu < k->nmarked)
        k->marked[s->cpu] = s->tid;
}

static void offcpu_record(void *state, struct fk_engine *e, const union perf_event *ev,
                          const struct fk_sample_id *id)
{
    struct offcpu *k = state;
    k->e = e;
    switch (ev->header.type) {
    case PERF_RECORD_SWITCH:
    case PERF_RECORD_SWITCH_CPU_WIDE:
        if (!id || id->tid <= 0)
            return;         /* the idle task */
        if (!k->early)      /* (records replayed without the reader) */
            exact_switch(k, id->tid, id->time, ev->header.misc & PERF_RECORD_MISC_SWITCH_OUT);
        if (ev->header.misc & PERF_RECORD_MISC_SWITCH_OUT) {
            if (!k->early)
                count_out(k, id->time);
            fk_bt_switched_out(&k->bt, id->tid, id->time);
        } else {
            k->st.switch_ins++;
            if (id->time > k->last_time)
                k->last_time = id->time;
            name_frames(k);
            fk_bt_in(&k->bt, id->tid, id->time);
        }
        break;
    case PERF_RECORD_FORK:
        if (!k->early) {
            exact_task(k, ev);
            life_task(k, ev);
        }
        if (ev->fork.tid != ev->fork.ptid)
            fk_bt_new_thread(&k->bt, (pid_t)ev->fork.tid);
        if (k->per_task && ev->fork.tid > 0) {
            uint64_t *v = fk_u64map_slot(&k->inherited, (uint64_t)ev->fork.tid, true);
            k->inherited_live += !*v;
            *v = n_at(k, ev->fork.time) + 1;
        }
        break;
    case PERF_RECORD_EXIT:
        if (!k->early) {
            exact_task(k, ev);
            life_task(k, ev);
        }
        fk_bt_exit(&k->bt, (pid_t)ev->fork.tid);
        unrec_exit(k, (pid_t)ev->fork.pid, (pid_t)ev->fork.tid);
        inherited_forget(k, (pid_t)ev->fork.tid);
        counts_forget(k, (pid_t)ev->fork.tid);
        break;
    case RECORD_BLOCK: {
        uint64_t out;
        if (!id || id->tid <= 0 || ev->header.size < sizeof ev->header + 8)
            return;
        memcpy(&out, (const char *)ev + sizeof ev->header, 8);
        if (id->time > k->last_time)
            k->last_time = id->time;
        name_frames(k);
        k->bpf_matched += fk_bt_block(&k->bt, id->tid, out, id->time);
        break;
    }
    case RECORD_UNSEEN: {
        uint64_t out;
        if (!id || id->tid <= 0 || ev->header.size < sizeof ev->header + 8)
            return;
        memcpy(&out, (const char *)ev + sizeof ev->header, 8);
        fk_bt_unseen_in(&k->bt, id->tid, out, id->time);
        break;
    }
    case PERF_RECORD_LOST:
        counts_lost(k);
        if (k->swt)
            break;  /* only samples (and task records) were lost: the program's
                       blocks still time every switch, so each thread's total
                       stays exact and every recorded block still comes
                       (CI: at a loaded host's stall, a napping python3.11
                       kept 74 % of its window when these voided its total) */
        k->records_lost = true;
        fk_bt_lost(&k->bt, id && id->time ? id->time : UINT64_MAX);
        break;
    default:
        break;
    }
}

static void offcpu_flush(void *state, struct fk_engine *e, uint64_t end_time)
{
    struct offcpu *k = state;
    k->e = e;
    if (end_time == UINT64_MAX)     /* no window end given: the last record's time */
        end_time = k->last_time > k->outs_last ? k->last_time : k->outs_last;
    name_frames(k);
    if (k->swt) {
        swtime_finish(k, end_time);
        k->st.switch_ins = k->bpf_blocks;
    } else {
        fk_bt_finish(&k->bt, end_time);
    }
    k->st.switch_outs = k->outs_seen;
    if (k->swt && !k->peak_rate && end_time > k->window_start && k->window_start)
        k->peak_rate = (uint64_t)((long double)k->outs_seen * 1e9L /
                                  (long double)(end_time - k->window_start));   /* (no looks: N fixed) */
    k->st.peak_rate = k->peak_rate;
    k->st.blocks = k->bt.st;
    k->st.block_source = k->swt ? "bpf" : "switch-records";
    snprintf(k->st.bpf_note, sizeof k->st.bpf_note, "%s", k->bpf_note);
    k->st.bpf_filter = k->bpf_filter;
    k->st.bpf_attach = k->swt ? (fk_swtime_is_raw(k->swt) ? "raw_tracepoint" : "tracepoint") : NULL;
    k->st.bpf_blocks = k->bpf_blocks;
    k->st.bpf_matched = k->bpf_matched;
    k->st.bpf_unmatched = k->bpf_unmatched;
    k->st.bpf_map_full = k->bpf_st.map_full;
    k->st.bpf_ring_full = k->bpf_st.ring_full;
    k->st.bpf_missed = k->bpf_st.missed;
    k->st.bpf_in_missed = k->bpf_in_missed;
    k->st.bpf_unseen_in = k->bpf_unseen_in;
    k->st.bpf_unseen_ns = k->bpf_unseen_ns;
    k->st.bpf_unseen_timed = k->bpf_unseen_timed;
    k->st.bpf_bytes = k->swt ? fk_swtime_bytes(k->swt) : 0;
    k->st.bpf_picked = k->bpf_st.picked;
    k->st.bpf_exiting = k->bpf_st.exiting;
    k->st.bpf_unwritten = k->bpf_st.unwritten;
    k->st.bpf_others = k->others;
    k->st.bpf_unsampled = k->bpf_st.picked > k->st.recorded + k->st.recorded_twice ?
                          k->bpf_st.picked - k->st.recorded - k->st.recorded_twice : 0;
    k->st.threads_exit_tail = k->threads_exit_tail;
    k->st.exit_tail_ns = k->exit_tail_ns;
    k->st.totals_from = k->swt ? (k->exact_ok ? "scheduler" : "none") : "switch-records";
    /* (exits are never picked -- no block follows -- and counted each) */
    k->st.switches_estimated += k->swt ? k->bpf_st.exits : 0;
    /* (a pick let go, its thread exiting, stands for N too: the N now --
     * exits come with a shell's children, at N = 1) */
    k->st.switches_estimated += k->swt ? k->bpf_st.exiting * k->n_now : 0;
    k->st.exit_switches += k->swt ? k->bpf_st.exits : 0;
    calibrate(k, end_time);
    k->st.exact_over = k->exact_over + k->lives_over;
    k->st.one_in = k->o.one_in;
    k->st.one_in_last = k->n_now;
    k->st.one_in_unsure = k->unsure;
    k->st.cpu_period_ns = k->cpu_period_ns;
    k->st.waker_event = k->waker_event;
    k->want_bytes = 0;
    for (size_t i = 0; i < k->nwant; i++)
        k->want_bytes += k->want[i].cap * sizeof *k->want[i].t;
    k->st.bytes = fk_bt_bytes(&k->bt) + fk_stacktab_bytes(&k->store) +
                  k->capids * sizeof *k->ids + k->caplocs * sizeof *k->locs +
                  fk_u64map_bytes(&k->refs) + fk_u64map_bytes(&k->inherited) +
                  fk_u64map_bytes(&k->counts) +
                  k->capchg * sizeof *k->chg + k->nmarked * sizeof *k->marked +
                  fk_u64map_bytes(&k->exact_of) + k->capexact * sizeof *k->exact +
                  fk_u64map_bytes(&k->acc_of) + k->capacc * sizeof *k->acc +
                  k->cappass * sizeof *k->pass_blocks + fk_u64map_bytes(&k->want_of) +
                  k->capwant * sizeof *k->want + fk_u64map_bytes(&k->pend) + k->want_bytes +
                  fk_u64map_bytes(&k->leaders_gone) +
                  fk_u64map_bytes(&k->oncpu_of) + fk_u64map_bytes(&k->exited_ns) +
                  fk_u64map_bytes(&k->exitb_of) + k->capexitb * sizeof *k->exitb +
                  k->capdefer * sizeof *k->defer + fk_u64map_bytes(&k->born_at) +
                  fk_u64map_bytes(&k->exit_at) +
                  fk_u64map_bytes(&k->live_ns) + fk_u64map_bytes(&k->sampled_tids) +
                  fk_u64map_bytes(&k->acc_tids) + fk_u64map_bytes(&k->unrec_ref);
    if (k->o.stats)
        *k->o.stats = k->st;
}

/* What the engine's thread holds (the reader's thread's tables are
 * counted at the end: offcpu_flush), and the program's map and ring. */
static size_t offcpu_bytes(void *state)
{
    struct offcpu *k = state;
    return (k->swt ? fk_swtime_bytes(k->swt) : 0) + fk_bt_bytes(&k->bt) +
           fk_stacktab_bytes(&k->store) + k->capids * sizeof *k->ids +
           k->caplocs * sizeof *k->locs + fk_u64map_bytes(&k->refs) +
           fk_u64map_bytes(&k->acc_of) + k->capacc * sizeof *k->acc +
           fk_u64map_bytes(&k->oncpu_of) + fk_u64map_bytes(&k->live_ns) +
           fk_u64map_bytes(&k->sampled_tids) + fk_u64map_bytes(&k->acc_tids) +
           fk_u64map_bytes(&k->unrec_ref);
}

static void offcpu_stop(void *state)
{
    struct offcpu *k = state;
    if (!k)
        return;
    fk_bt_free(&k->bt);
    fk_stacktab_free(&k->store);
    fk_u64map_free(&k->refs);
    fk_u64map_free(&k->inherited);
    fk_u64map_free(&k->counts);
    pthread_mutex_destroy(&k->lock);
    pthread_mutex_destroy(&k->look_lock);
    free(k->chg);
    free(k->marked);
    fk_u64map_free(&k->exact_of);
    free(k->exact);
    fk_u64map_free(&k->acc_of);
    free(k->acc);
    fk_swtime_free(k->swt);
    free(k->pass_blocks);
    fk_u64map_free(&k->want_of);
    fk_u64map_free(&k->leaders_gone);
    for (size_t i = 0; i < k->nwant; i++)
        free(k->want[i].t);
    free(k->want);
    fk_u64map_free(&k->pend);
    fk_u64map_free(&k->oncpu_of);
    fk_u64map_free(&k->exited_ns);
    fk_u64map_free(&k->exitb_of);
    free(k->exitb);
    free(k->defer);
    fk_u64map_free(&k->born_at);
    fk_u64map_free(&k->exit_at);
    fk_u64map_free(&k->live_ns);
    fk_u64map_free(&k->sampled_tids);
    fk_u64map_free(&k->acc_tids);
    fk_u64map_free(&k->unrec_ref);
    free(k->ids);
    free(k->locs);
    free(k);
}

const struct fk_evkind fk_evkind_offcpu = {
    .name = "offcpu",
    .start = offcpu_start,
    .config = offcpu_config,
    .values = offcpu_values,
    .sample = offcpu_sample,
    .outside = offcpu_outside,
    .record = offcpu_record,
    .early_record = offcpu_early_record,
    .early_sample = offcpu_early_sample,
    .flush = offcpu_flush,
    .stop = offcpu_stop,
    .window = offcpu_window,
    .opened = offcpu_opened,
    .reader_pass = offcpu_reader_pass,
    .bytes = offcpu_bytes,
    /* No wake-ups from the kernel: one comes at a sample (at the sample
     * count a stack hook asks for, or at the byte watermark, which is
     * nearly always crossed by an 8 KiB stack copy, not a switch record),
     * on its CPU, and the reader's thread running there holds up the very
     * thread whose block is being timed -- a delay then weighed N times.
     * At a switch storm (one in 57) recorded blocks lasted 23 us (median)
     * with a wake-up at every sample, against 5.6 us for all blocks; with
     * one every 10 samples, or at a half ring, recorded blocks over 100 us
     * held 1.1-1.6 x their share of all blocks' time, and the storm's
     * threads were given up to twice the wall time off CPU. A blocked
     * thread's frames (the Python hook's early reads) stay as they are
     * until it runs again, so 10 ms is early enough for the blocks that
     * weigh. */
    .poll_ms = 10,
};
