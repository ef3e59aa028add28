/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture engine (capture.h): fk_capture_run runs the phases of
 * engine.h in order; this file holds the loop, what happens to each record
 * (side-band to the symbolizer and the target filter, samples decoded once
 * and turned into stacks for the event kind), and the final counts. */
#include "engine/engine.h"
#include "symbols/pins.h"
#include "util/buf.h"
#include "util/procfs.h"

#include <errno.h>
#include <perf/cpumap.h>
#include <perf/event.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/threadmap.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Records newer than this are held back one pass so records from all CPU
 * rings are handled in time order (ring.h). */
#define REORDER_SLACK_NS (20 * 1000000ull)
#define POLL_MS 100     /* a kind's take_ms by default (evkind.h) */
/* files pinned at once as their records leave the rings (symbols/pins.h):
 * a few hundred processes starting between two wake-ups of the engine */
#define PIN_FDS 512
/* symbol loading per wake-up, in the window (the rings hold a second) */
#define PRELOAD_NS (20 * 1000000ull)
/* The capture's threads run this many nice levels above flamekit's own
 * (at most -20) through the window and the drain (engine_priority). */
#define NICE_RAISE 10

static uint64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fk_capture_opts_init(struct fk_capture_opts *o)
{
    memset(o, 0, sizeof *o);
    fk_event_cpu_default(&o->event, 99);
    o->callgraph = FK_CG_AUTO;
    o->stack_size = FK_STACK_SIZE_DEFAULT;
    o->duration_ms = 60000;
    o->max_mem_bytes = 256ull << 20;
    o->sym.kernel = true;
    o->sym.jit = true;
    o->sym.annotate = true;
    o->sym.debuginfod_urls = getenv("DEBUGINFOD_URLS");   /* like gdb, perf: opt-in by the variable */
}

void fk_engine_fail(struct fk_engine *e, const char *fmt, ...)
{
    if (!e->err || !e->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, e->errlen, fmt, ap);
    va_end(ap);
}

void fk_engine_warn(struct fk_engine *e, const char *fmt, ...)
{
    if (!e->o->warn || e->o->quiet)
        return;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    e->o->warn(e->o->warn_ctx, msg);
}

/* ---- what kinds and hooks call (evkind.h) ------------------------------- */

/* A slot of the raw memo: which (frames id + 1, pid, comm) it holds. */
#define FK_ENGINE_RAW_MEMO 4096
struct fk_raw_memo {
    uint32_t fid1;      /* 0: empty */
    int32_t pid;
    uint32_t raw;       /* the index in e->raw */
    char comm[20];      /* NUL-terminated; longer comms are not memoized */
};
_Static_assert(sizeof(struct fk_raw_memo) == 32, "two memo slots a cache line");

/* The key of frames from..n-1 (engine.h's callers): 8 bytes a frame
 * when every one packs (fk_engine_frame_pack), else 12 and a last byte;
 * its length. At least 16 bytes reserved (frames_id writes its key
 * there next). */
static size_t frames_key(struct fk_engine *e, const struct fk_stack_frames *st, unsigned from)
{
    /* one reservation, then plain stores: this runs for every sample */
    fk_buf_reset(&e->key);
    fk_buf_reserve(&e->key, FK_ENGINE_FRAME_WIDE * (size_t)st->n + 1 + 16);
    char *k = e->key.data;
    for (unsigned i = from; i < st->n; i++) {
        uint64_t w;
        if (!fk_engine_frame_pack(st->locs[i], &w))
            goto wide;
        memcpy(k, &w, sizeof w);
        k += sizeof w;
    }
    return (size_t)(k - e->key.data);
wide:
    k = e->key.data;
    for (unsigned i = from; i < st->n; i++) {
        memcpy(k, &st->locs[i].dso, sizeof st->locs[i].dso);
        memcpy(k + sizeof st->locs[i].dso, &st->locs[i].addr, sizeof st->locs[i].addr);
        k += FK_ENGINE_FRAME_WIDE;
    }
    *k++ = 0;
    return (size_t)(k - e->key.data);
}

/* The aggregation key (engine.h): the frames interned, then comm NUL
 * pid32 frames-id32 in e->raw (naming.c reads both); its index there. */
/* The frames' id (engine.h): the callers interned, then (callers' id,
 * leaf). */
static uint32_t frames_id(struct fk_engine *e, const struct fk_stack_frames *st)
{
    const struct fk_stack *c = fk_stacktab_add(&e->callers, e->key.data, frames_key(e, st, 1), 0);
    uint32_t cid = (uint32_t)(c - e->callers.v);
    char *k = e->key.data;      /* 16 bytes at most: frames_key reserved them */
    memcpy(k, &cid, sizeof cid);
    k += sizeof cid;
    if (st->n) {
        uint64_t w;
        if (fk_engine_frame_pack(st->locs[0], &w)) {
            memcpy(k, &w, sizeof w);
            k += sizeof w;
        } else {
            memcpy(k, &st->locs[0].dso, sizeof st->locs[0].dso);
            memcpy(k + sizeof st->locs[0].dso, &st->locs[0].addr, sizeof st->locs[0].addr);
            k += FK_ENGINE_FRAME_WIDE;
        }
    }
    const struct fk_stack *f = fk_stacktab_add(&e->frame_lists, e->key.data, (size_t)(k - e->key.data), 0);
    return (uint32_t)(f - e->frame_lists.v);
}

static uint32_t stack_ref(struct fk_engine *e, const struct fk_stack_frames *st)
{
    uint32_t fid = frames_id(e, st);
    e->r->kernel_frames += st->user < st->n ? st->user : st->n;
    e->r->user_frames += st->user < st->n ? st->n - st->user : 0;
    const char *comm = st->pid == 0 ? "swapper" : fk_sym_comm_of(e->sym, st->pid, st->tid);
    size_t cl = strlen(comm);
    int32_t pid32 = (int32_t)st->pid;
    if (!e->raw_memo)
        e->raw_memo = fk_calloc(FK_ENGINE_RAW_MEMO, sizeof *e->raw_memo);
    struct fk_raw_memo *m = &e->raw_memo[fk_hash_u64((uint64_t)fid << 32 | (uint32_t)pid32) &
                                         (FK_ENGINE_RAW_MEMO - 1)];
    bool memo = cl < sizeof m->comm;
    if (memo && m->fid1 == fid + 1 && m->pid == pid32 && !memcmp(m->comm, comm, cl + 1))
        return m->raw;
    fk_buf_reset(&e->key);
    fk_buf_reserve(&e->key, cl + 1 + sizeof pid32 + sizeof fid);
    char *k = e->key.data;
    memcpy(k, comm, cl + 1);
    k += cl + 1;
    memcpy(k, &pid32, sizeof pid32);
    k += sizeof pid32;
    memcpy(k, &fid, sizeof fid);
    k += sizeof fid;
    const struct fk_stack *s = fk_stacktab_add2(&e->raw, e->key.data, (size_t)(k - e->key.data), 0, 0);
    uint32_t ref = (uint32_t)(s - e->raw.v);
    if (memo) {
        m->fid1 = fid + 1;
        m->pid = pid32;
        m->raw = ref;
        memcpy(m->comm, comm, cl + 1);
    }
    return ref;
}

void fk_engine_add(struct fk_engine *e, const struct fk_stack_frames *st, uint64_t nsamples,
                   uint64_t weight)
{
    fk_stacktab_add_at(&e->raw, stack_ref(e, st), nsamples, weight);
}

uint32_t fk_engine_stack_ref(struct fk_engine *e, const struct fk_stack_frames *st)
{
    return stack_ref(e, st);
}

void fk_engine_add_ref(struct fk_engine *e, uint32_t ref, uint64_t nsamples, uint64_t weight)
{
    if (ref < e->raw.n)
        fk_stacktab_add_at(&e->raw, ref, nsamples, weight);
}

struct fk_loc fk_engine_named_frame(struct fk_engine *e, const char *name)
{
    return fk_sym_special(e->sym, name);
}

struct fk_symbolizer *fk_engine_symbolizer(struct fk_engine *e)
{
    return e->sym;
}

bool fk_engine_owns(struct fk_engine *e, pid_t pid)
{
    if (e->follow_tree && !fk_tree_owns(&e->tree, pid))
        return false;
    switch (e->filter.t->kind) {
    case FK_TARGET_USER:
        return fk_target_keep(&e->filter, pid, 0);
    case FK_TARGET_CGROUP:
        return false;   /* the events see the host; a sample's cgroup decides */
    default:
        return true;
    }
}

struct fk_unwinder *fk_engine_unwinder(struct fk_engine *e)
{
    return e->uw;
}

struct fk_pygate *fk_engine_pygate(struct fk_engine *e)
{
    return e->pygate;
}

const struct fk_evkind_values *fk_engine_values(const struct fk_engine *e)
{
    return &e->values;
}

/* ---- samples ------------------------------------------------------------ */

static void add_loc(struct fk_stack_frames *st, struct fk_loc loc)
{
    if (st->n < st->cap)
        st->locs[st->n++] = loc;
}

/* Frames of the kernel's callchain: kernel ones always, user ones in fp
 * mode (in dwarf mode the unwinder gives those). */
static void callchain_frames(struct fk_engine *e, const struct fk_sample *s,
                             struct fk_stack_frames *st)
{
    bool first = true, skip = false, kctx = s->kernel;
    for (uint64_t i = 0; i < s->nr && st->n < st->cap; i++) {
        uint64_t a = s->ips[i];
        if (a >= (uint64_t)PERF_CONTEXT_MAX) {
            kctx = a == (uint64_t)PERF_CONTEXT_KERNEL;
            skip = a != (uint64_t)PERF_CONTEXT_KERNEL && a != (uint64_t)PERF_CONTEXT_USER;
            first = true;
            continue;
        }
        if (skip || (e->uw && !kctx))
            continue;
#ifdef __x86_64__
        /* a frame-pointer walk through code without frame pointers ends
         * on garbage; a user "address" in the kernel half is one */
        if (!kctx && a >= 0x0000800000000000ull)
            continue;
#endif
        if (!kctx && st->user == st->cap)
            st->user = st->n;
        /* return addresses point after the call: look up the call */
        add_loc(st, fk_sym_locate(e->sym, s->pid, first ? a : a - 1, kctx));
        first = false;
    }
}

/* dwarf mode: user frames from the registers and the stack copy; a user
 * ip that cannot be unwound keeps its leaf. */
static void unwound_frames(struct fk_engine *e, const struct fk_sample *s,
                           struct fk_stack_frames *st)
{
    if (s->regs && s->regs_abi == PERF_SAMPLE_REGS_ABI_64 && s->pid > 0) {
        st->user = st->n;
        st->user_unwound = true;
        if (st->cap - st->n >= FK_UW_DEFAULT_MAX_FRAMES + 1) {
            /* room for any walk: written in place (a copy a frame less) */
            st->n += fk_unwind_sample(e->uw, s->pid, s->regs, s->stack, s->stack_size,
                                      s->stack_dyn, st->locs + st->n);
            return;
        }
        struct fk_loc ulocs[FK_UW_DEFAULT_MAX_FRAMES + 1];
        unsigned n = fk_unwind_sample(e->uw, s->pid, s->regs, s->stack, s->stack_size,
                                      s->stack_dyn, ulocs);
        for (unsigned i = 0; i < n; i++)
            add_loc(st, ulocs[i]);
        return;
    }
    fk_unwind_no_regs(e->uw);
    if (!s->kernel || !st->n) {
        if (!s->kernel)
            st->user = st->n;
        add_loc(st, fk_sym_locate(e->sym, s->pid, s->ip, s->kernel));
    }
}

/* A kept sample's stack: kernel frames, then user frames, leaf first. */
static void build_stack(struct fk_engine *e, const struct fk_sample *s, struct fk_stack_frames *st)
{
    *st = (struct fk_stack_frames){ .pid = s->pid, .tid = s->tid, .locs = e->frames,
                                     .cap = FK_ENGINE_MAX_FRAMES, .user = FK_ENGINE_MAX_FRAMES };
    if (!s->ips && !e->uw) {
        if (!s->kernel)
            st->user = 0;
        add_loc(st, fk_sym_locate(e->sym, s->pid, s->ip, s->kernel));
    } else if (s->ips) {
        callchain_frames(e, s, st);
    }
    if (e->uw)
        unwound_frames(e, s, st);
    if (st->user > st->n)
        st->user = st->n;
}

/* Which event of the kind wrote a sample (several events: by its id). */
static bool event_of(struct fk_engine *e, const union perf_event *ev, unsigned *idx)
{
    *idx = 0;
    if (e->nevents == 1)
        return true;
    /* PERF_SAMPLE_IDENTIFIER is the first word of every event's samples */
    if (ev->header.size < sizeof ev->header + 8)
        return false;
    uint64_t *v = fk_u64map_slot(&e->event_of, ev->sample.array[0], false);
    if (!v || !*v)
        return false;
    *idx = (unsigned)(*v - 1);
    return true;
}

/* A sample's own count (PERF_SAMPLE_READ), by its counter: per-CPU
 * counters of one event, so the CPU tells the counter. */
static void note_count(struct fk_engine *e, const struct fk_sample *s)
{
    if (s->cpu >= 65536)
        return;
    if (s->cpu >= e->read_cap) {
        size_t cap = e->read_cap, cap2 = e->read_cap;
        e->read_last = fk_grow(e->read_last, &cap, (size_t)s->cpu + 1, sizeof *e->read_last);
        e->read_seen = fk_grow(e->read_seen, &cap2, (size_t)s->cpu + 1, sizeof *e->read_seen);
        memset(e->read_last + e->read_cap, 0, (cap - e->read_cap) * sizeof *e->read_last);
        memset(e->read_seen + e->read_cap, 0, (cap - e->read_cap) * sizeof *e->read_seen);
        e->read_cap = cap;
    }
    if (s->count > e->read_last[s->cpu])
        e->read_last[s->cpu] = s->count;
    e->read_seen[s->cpu]++;
}

/* What the walk just done tells of where the sampled thread's stack ends
 * (capture/stackend.h): a cut copy the walk ran out of was cut wrong. */
static void learn_stack_end(struct fk_engine *e, const struct fk_sample *s)
{
    e->r->stack_ends.cut += s->stack_cut;
    if (s->stack_cut && fk_unwind_last_ran_out(e->uw))
        fk_stack_ends_wrong(e->ends, s->tid);
    else
        fk_stack_ends_learn(e->ends, s->tid, fk_unwind_last_read_end(e->uw));
}

static void handle_sample(struct fk_engine *e, const union perf_event *ev)
{
    struct fk_sample s;
    unsigned idx;
    e->r->samples++;
    if (!event_of(e, ev, &idx) || !fk_sample_parse(&e->fmt[idx], ev, ev->header.size, &s)) {
        /* the kernel sent it: count it (one-in-N checks count samples) */
        e->r->malformed++;
        return;
    }
    e->r->period_sum += s.period;
    if (e->fmt[idx].read_words && e->nevents == 1)
        note_count(e, &s);
    bool outside = e->follow_tree && !fk_tree_owns(&e->tree, s.pid);
    e->r->samples_outside += outside;   /* the cgroup's, not the target's */
    if (outside || !fk_target_keep(&e->filter, s.pid, s.cgroup)) {
        if (e->kind->outside)
            e->kind->outside(e->kind_state, e, idx, &s);
        return;
    }
    e->r->samples_kept++;
    struct fk_stack_frames st;
    build_stack(e, &s, &st);
    if (e->ends && st.user_unwound)
        learn_stack_end(e, &s);
    for (size_t i = 0; i < e->o->nstack_hooks; i++)
        e->o->stack_hooks[i]->user_frames(e->o->stack_hooks[i]->state, e, &s, &st);
    e->kind->sample(e->kind_state, e, idx, &s, &st);
}

/* ---- side-band ---------------------------------------------------------- */

/* An MMAP2 record's file name, NUL-terminated; false: too short a record. */
static bool mmap2_name(const union perf_event *ev, char name[4096])
{
    if (ev->header.size < offsetof(struct perf_record_mmap2, filename))
        return false;
    size_t max = ev->header.size - offsetof(struct perf_record_mmap2, filename);
    if (max >= 4096)
        max = 4095;
    memcpy(name, ev->mmap2.filename, max);
    name[max] = 0;
    return true;
}

static void handle_mmap2(struct fk_engine *e, const union perf_event *ev)
{
    const struct perf_record_mmap2 *m = &ev->mmap2;
    char name[4096];
    if (!mmap2_name(ev, name))
        return;
    if (ev->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
        fk_sym_mmap(e->sym, (pid_t)m->pid, m->start, m->len, m->pgoff, 0, 0, 0, m->prot,
                    m->flags, name, m->build_id, m->build_id_size <= 20 ? m->build_id_size : 20);
    else
        fk_sym_mmap(e->sym, (pid_t)m->pid, m->start, m->len, m->pgoff, m->maj, m->min, m->ino,
                    m->prot, m->flags, name, NULL, 0);
    if (e->pins)    /* the symbolizer took the file it pinned, or did not need it */
        fk_pins_drop_file(e->pins, (pid_t)m->pid, m->start, m->start + m->len);
}

/* The reader's side-band hook (its thread, as records leave the rings,
 * while their processes may still live): pin what the symbolizer will
 * open when it handles them (symbols/pins.h). */
static void pin_seen(void *ctx, const union perf_event *ev)
{
    struct fk_engine *e = ctx;
    /* bpf mode: the host's other processes pin nothing (the map is the
     * tree's superset as the records leave the rings: a child is in it
     * from its fork on, an exited member until its EXIT is handled).
     * One look-up (a system call) per process per pass of the reader,
     * not one per record: an exec writes a dozen MMAP2s. */
    if (e->bpftree && (ev->header.type == PERF_RECORD_MMAP2 || ev->header.type == PERF_RECORD_COMM)) {
        pid_t pid = ev->header.type == PERF_RECORD_MMAP2 ? (pid_t)ev->mmap2.pid
                                                         : (pid_t)ev->comm.pid;
        if (!fk_bpftree_has_memo(e->bpftree, &e->pin_memo, pid,
                                 fk_record_time(&e->fmt[0], ev, ev->header.size)))
            return;
    }
    if (ev->header.type == PERF_RECORD_COMM && (ev->header.misc & PERF_RECORD_MISC_COMM_EXEC)) {
        fk_pins_exec(e->pins, (pid_t)ev->comm.pid);
        return;
    }
    if (ev->header.type == PERF_RECORD_FORK) {
        fk_pins_fork(e->pins, (pid_t)ev->fork.pid, (pid_t)ev->fork.ppid, ev->fork.time);
        if (ev->fork.pid != ev->fork.ppid)
            for (size_t i = 0; i < e->o->nstack_hooks; i++)
                if (e->o->stack_hooks[i]->early && e->o->stack_hooks[i]->forked)
                    e->o->stack_hooks[i]->forked(e->o->stack_hooks[i]->state,
                                                 (pid_t)ev->fork.pid, (pid_t)ev->fork.ppid,
                                                 ev->fork.time);
        return;
    }
    char name[4096];
    if (ev->header.type != PERF_RECORD_MMAP2 || !mmap2_name(ev, name))
        return;
    const struct perf_record_mmap2 *m = &ev->mmap2;
    uint64_t t = fk_record_time(&e->fmt[0], ev, ev->header.size);
    if (ev->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
        fk_pins_mmap(e->pins, (pid_t)m->pid, m->start, m->len, m->prot, 0, 0, 0, m->build_id,
                     m->build_id_size <= 20 ? m->build_id_size : 20, name, t);
    else
        fk_pins_mmap(e->pins, (pid_t)m->pid, m->start, m->len, m->prot, m->maj, m->min, m->ino,
                     NULL, 0, name, t);
    if (m->prot & PROT_EXEC)
        for (size_t i = 0; i < e->o->nstack_hooks; i++)
            if (e->o->stack_hooks[i]->early && e->o->stack_hooks[i]->mapped)
                e->o->stack_hooks[i]->mapped(e->o->stack_hooks[i]->state, (pid_t)m->pid, name, t);
}

static void handle_comm(struct fk_engine *e, const union perf_event *ev)
{
    char comm[17];
    memcpy(comm, ev->comm.comm, 16);
    comm[16] = 0;
    bool exec = ev->header.misc & PERF_RECORD_MISC_COMM_EXEC;
    if (exec)   /* a new stack */
        fk_stack_ends_forget(e->ends, (pid_t)ev->comm.tid);
    fk_sym_comm(e->sym, (pid_t)ev->comm.pid, (pid_t)ev->comm.tid, comm, exec);
    if (exec)
        fk_target_filter_exec(&e->filter, (pid_t)ev->comm.pid);
    if (exec && e->follow_tree)
        fk_tree_exec(&e->tree, (pid_t)ev->comm.pid, (pid_t)ev->comm.tid);
}

/* PID with the tree filtered in the kernel (tree_bpf): the side-band
 * records come from the whole host; those of processes outside the tree
 * never reach the symbolizer (the tree's FORK and EXIT still decide). */
static bool outside_tree(const struct fk_engine *e, pid_t pid)
{
    return e->tree_bpf && !fk_tree_owns(&e->tree, pid);
}

/* A member's EXIT, in bpf mode: out of the kernel's map (a thread's tid;
 * a process's pid once its last thread is gone) unless a FORK since gave
 * the number to another member (its entry is newer than the exit). */
static void bpftree_exit(struct fk_engine *e, const union perf_event *ev)
{
    pid_t pid = (pid_t)ev->fork.pid, tid = (pid_t)ev->fork.tid;
    if (tid != pid)
        fk_bpftree_exit(e->bpftree, tid, ev->fork.time);
    else if (!fk_tree_has(&e->tree, pid))
        fk_bpftree_exit(e->bpftree, pid, ev->fork.time);
}

static void handle_side_band(struct fk_engine *e, const union perf_event *ev)
{
    bool member;
    switch (ev->header.type) {
    case PERF_RECORD_MMAP2:
        if (!outside_tree(e, (pid_t)ev->mmap2.pid))
            handle_mmap2(e, ev);
        break;
    case PERF_RECORD_COMM:
        if (!outside_tree(e, (pid_t)ev->comm.pid))
            handle_comm(e, ev);
        break;
    case PERF_RECORD_FORK:
        member = !e->follow_tree ||
                 fk_tree_fork(&e->tree, (pid_t)ev->fork.pid, (pid_t)ev->fork.ppid,
                              (pid_t)ev->fork.tid, (pid_t)ev->fork.ptid);
        if (e->tree_bpf && !member)
            break;
        e->r->forks++;
        fk_sym_fork(e->sym, (pid_t)ev->fork.pid, (pid_t)ev->fork.ppid, (pid_t)ev->fork.tid,
                    (pid_t)ev->fork.ptid);
        fk_target_filter_fork(&e->filter, (pid_t)ev->fork.pid, (pid_t)ev->fork.ppid);
        break;
    case PERF_RECORD_EXIT:
        fk_stack_ends_forget(e->ends, (pid_t)ev->fork.tid);   /* its number may come back */
        member = !e->follow_tree || fk_tree_exit(&e->tree, (pid_t)ev->fork.pid, (pid_t)ev->fork.tid);
        if (e->tree_bpf && !member)
            break;
        if (e->bpftree)
            bpftree_exit(e, ev);
        e->r->exits += ev->fork.pid == ev->fork.tid;
        if (e->pins && ev->fork.pid == ev->fork.tid)
            fk_pins_drop_exit(e->pins, (pid_t)ev->fork.pid, ev->fork.time);
        fk_sym_exit(e->sym, (pid_t)ev->fork.pid, (pid_t)ev->fork.tid);
        break;
    case PERF_RECORD_LOST:
        e->r->lost += ev->lost.lost;
        e->r->lost_events++;
        e->tree_resync = e->follow_tree;    /* a FORK or EXIT may be among them */
        break;
    case PERF_RECORD_THROTTLE:
        e->r->throttled++;
        break;
    case PERF_RECORD_UNTHROTTLE:
        e->r->unthrottled++;
        break;
    default:
        break;
    }
    if (e->kind->record) {
        struct fk_sample_id id;
        if (!fk_sample_id_parse(&e->fmt[0], ev, ev->header.size, &id))
            memset(&id, 0, sizeof id);
        e->kind->record(e->kind_state, e, ev, &id);
    }
}

static void handle_record(void *ctx, const union perf_event *ev)
{
    struct fk_engine *e = ctx;
    if (e->o->record_tap)
        e->o->record_tap(e->o->record_tap_ctx, &e->fmt[0], ev, ev->header.size);
    if (ev->header.type == PERF_RECORD_SAMPLE)
        handle_sample(e, ev);
    else
        handle_side_band(e, ev);
}

/* The reader's sample hook (its thread, as samples leave the rings): to
 * the stack hooks that read the target early (struct fk_stack_hook.early).
 * Reads only what stays fixed while the reader runs (formats, the event
 * table). Returns FK_READER_TAP_* bits: NOW, a hook wants the engine's
 * thread (its catch_up); SOON, a hook holds something for the sample. */
/* Bind the reader's thread to cpu, where a sample an early hook read the
 * target for ran (FK_EARLY_FOLLOW). The kernel wakes the reader for each
 * such sample: on the sample's own CPU, at the raised priority, it
 * preempts the sampled thread, whose frames then stay as they were until
 * they are read. Woken on another, idle CPU, it came 0.1-0.5 ms later on
 * this VM (a halted vCPU), while the sampled thread ran on: a Python
 * generator's frames change within a millisecond (bench/python.sh's
 * consistency). Only with the raised priority (engine_priority): at the
 * thread's own, the reader would wait behind it. Bounds: a CPU outside
 * the thread's own mask is not followed; a move (a system call and a
 * migration, ~40 us of CPU) at most every FOLLOW_EVERY_NS, so threads
 * that take turns on two CPUs do not make it hop at every sample; a
 * sample read FOLLOW_LATE_NS after it was taken means the bound CPU gives
 * the reader too little time (real-time tasks): it is let go of, for
 * FOLLOW_BACKOFF_NS, so the rings are not left to fill. Called in the
 * reader's thread alone. */
#define FOLLOW_EVERY_NS (100 * 1000000ull)
#define FOLLOW_LATE_NS (50 * 1000000ull)
#define FOLLOW_BACKOFF_NS (1000 * 1000000ull)
static void follow_cpu(struct fk_engine *e, uint32_t cpu, uint64_t time)
{
    if (!e->nice_raised)
        return;
    if (e->reader_mask_known < 0)
        e->reader_mask_known =
            sched_getaffinity(0, sizeof e->reader_mask, &e->reader_mask) == 0;
    if (!e->reader_mask_known)
        return;
    uint64_t now = fk_now_ns();
    if (e->reader_cpu >= 0 && now > time && now - time > FOLLOW_LATE_NS) {
        if (sched_setaffinity(0, sizeof e->reader_mask, &e->reader_mask) == 0) {
            e->reader_cpu = -1;
            e->r->reader_released++;
        }
        e->reader_follow_at = now + FOLLOW_BACKOFF_NS;
        return;
    }
    if ((int)cpu == e->reader_cpu || now < e->reader_follow_at || cpu >= CPU_SETSIZE ||
        !CPU_ISSET(cpu, &e->reader_mask))
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
        e->reader_cpu = (int)cpu;
        e->r->reader_moves++;
    }
    e->reader_follow_at = now + FOLLOW_EVERY_NS;
}

static unsigned early_seen(void *ctx, const union perf_event *ev)
{
    struct fk_engine *e = ctx;
    struct fk_sample s;
    unsigned idx, got = 0;
    if (!event_of(e, ev, &idx) || !fk_sample_parse(&e->fmt[idx], ev, ev->header.size, &s) ||
        s.pid <= 0)
        return 0;
    for (size_t i = 0; i < e->o->nstack_hooks; i++)
        if (e->o->stack_hooks[i]->early)
            got |= e->o->stack_hooks[i]->early(e->o->stack_hooks[i]->state, &s);
    if ((got & FK_EARLY_FOLLOW) && (e->fmt[idx].sample_type & PERF_SAMPLE_CPU))
        follow_cpu(e, s.cpu, s.time);
    return (got & FK_EARLY_CATCH_UP ? FK_READER_TAP_END : 0u) |
           (got & FK_EARLY_HELD ? FK_READER_TAP_SOON : 0u);
}

/* The reader's word at the end of a pass in which a hook asked for the
 * engine's thread: NOW unless every early hook says its catch-up is no
 * longer due (struct fk_stack_hook.catch_up_due). */
static unsigned early_end(void *ctx)
{
    struct fk_engine *e = ctx;
    for (size_t i = 0; i < e->o->nstack_hooks; i++) {
        const struct fk_stack_hook *h = e->o->stack_hooks[i];
        if (h->early && (!h->catch_up_due || h->catch_up_due(h->state)))
            return FK_READER_TAP_NOW;
    }
    return 0;
}

/* The early stack hooks' work that needs the engine's thread. */
static void early_catch_up(struct fk_engine *e)
{
    for (size_t i = 0; i < e->o->nstack_hooks; i++)
        if (e->o->stack_hooks[i]->early && e->o->stack_hooks[i]->catch_up)
            e->o->stack_hooks[i]->catch_up(e->o->stack_hooks[i]->state, e);
}

/* Take what the reader copied out (waiting up to timeout_ms for it) and
 * hand on what is older than the slack (all: final), in time order, where
 * it lies; a chunk goes back to the reader once none of its records
 * waits in the queue. */
static void read_rings(struct fk_engine *e, int timeout_ms, bool final)
{
    uint64_t upto;
    size_t nspans;
    const struct fk_reader_span *spans = fk_reader_take(e->reader, timeout_ms, &upto, &nspans);
    early_catch_up(e);  /* before the samples it reads for are handled */
    for (size_t i = 0; i < nspans; i++) {
        struct fk_reader_chunk *c = spans[i].chunk;
        if (!c->tlisted) {
            c->tnext = e->chunks;
            e->chunks = c;
            c->tlisted = true;
        }
        for (size_t off = 0; off + sizeof(struct perf_event_header) <= spans[i].len;) {
            const union perf_event *ev = (const void *)(spans[i].data + off);
            fk_ringq_push_ref(&e->ring, ev, ev->header.size, &e->fmt[0], &c->pending);
            off += (ev->header.size + 7u) & ~(size_t)7;
        }
    }
    uint64_t cutoff = final ? UINT64_MAX : upto > REORDER_SLACK_NS ? upto - REORDER_SLACK_NS : 0;
    fk_ringq_deliver(&e->ring, cutoff, handle_record, e);
    for (struct fk_reader_chunk **p = &e->chunks; *p;) {
        struct fk_reader_chunk *c = *p;
        if (c->pending) {
            p = &c->tnext;
            continue;
        }
        *p = c->tnext;
        c->tlisted = false;
        fk_reader_give_back(e->reader, c);
    }
    struct fk_reader_stats st;
    fk_reader_stats(e->reader, &st);
    e->r->ring_bytes = st.bytes;
    e->r->reader_peak_bytes = st.peak_bytes;
    e->r->reader_full = st.full;
    e->r->reader_ring_peak = st.ring_peak_bytes;
    e->r->reader_soon = st.soon;
    e->r->reader_passes = st.passes;
    e->r->reader_gap_peak_ns = st.gap_peak_ns;
    e->r->reader_records = st.records;
    e->r->reader_dropped = st.dropped;
    fk_pins_stats(e->pins, &e->r->pins);
    if (e->tree_resync) {
        fk_tree_resync(&e->tree);
        e->tree_resync = false;
    }
}

/* ---- the run ------------------------------------------------------------ */

static void report_progress(struct fk_engine *e, uint64_t start, uint64_t now, bool done)
{
    if (!e->o->progress)
        return;
    struct fk_capture_progress p = {
        .elapsed_ns = now - start, .duration_ns = e->o->duration_ms * 1000000ull,
        .samples_kept = e->r->samples_kept, .lost = e->r->lost, .done = done,
    };
    e->o->progress(e->o->progress_ctx, &p);
}

/* Table, symbolizer and stack-hook bytes, the peak kept in r->mem_bytes. */
static uint64_t track_memory(struct fk_engine *e)
{
    uint64_t hooks = 0;
    for (size_t i = 0; i < e->o->nstack_hooks; i++)
        if (e->o->stack_hooks[i]->bytes)
            hooks += e->o->stack_hooks[i]->bytes(e->o->stack_hooks[i]->state);
    hooks += fk_tree_bytes(&e->tree);
    if (e->bpftree)
        hooks += fk_bpftree_bytes(e->bpftree);     /* kernel memory, made for this capture */
    hooks += fk_pygate_bytes(e->pygate);
    if (e->reader)
        hooks += fk_reader_bytes(e->reader) + e->ring.buf.cap;
    if (e->pins)
        hooks += fk_pins_bytes(e->pins);
    hooks += fk_stack_ends_bytes(e->ends);
    if (e->kind->bytes)
        hooks += e->kind->bytes(e->kind_state);
    uint64_t tables = fk_stacktab_bytes(&e->raw) + fk_stacktab_bytes(&e->frame_lists) +
                      fk_stacktab_bytes(&e->callers) +
                      (e->raw_memo ? FK_ENGINE_RAW_MEMO * sizeof *e->raw_memo : 0);
    fk_sym_set_other_bytes(e->sym, tables + hooks);
    uint64_t mem = tables + fk_sym_bytes(e->sym) + hooks;
    if (mem > e->r->mem_bytes)
        e->r->mem_bytes = mem;
    return mem;
}

static void engine_symbolizer(struct fk_engine *e)
{
    struct fk_sym_opts so = e->o->sym;
    so.max_bytes = e->o->max_mem_bytes;
    /* What the symbolizer skips is said even with -q, which hides only the
     * progress and degraded-mode lines. */
    so.warn = e->o->warn;
    so.warn_ctx = e->o->warn_ctx;
    e->pins = fk_pins_new(PIN_FDS, so.jit);
    so.pins = e->pins;
    e->sym = fk_sym_new(&so);
    if (e->mode == FK_CG_DWARF)
        e->uw = fk_unwinder_new(e->sym);
}

/* PID in cgroup mode, once the events are on: the target's processes,
 * all their threads, and their descendants running now, from /proc (a
 * process that forks meanwhile is seen twice, which is harmless, rather
 * than never); each read for the symbolizer. */
static void seed_tree(struct fk_engine *e)
{
    const struct fk_target *t = e->o->target;
    for (size_t i = 0; i < t->npids; i++)
        fk_tree_add_process(&e->tree, t->pids[i]);
    fk_tree_add_descendants(&e->tree);
    for (size_t i = 0; i < e->tree.procs.n; i++)
        if (e->tree.procs.v[i].val) {
            /* the fork program is attached already (fk_engine_open): a
             * child forked since is in the kernel's map by now */
            if (e->bpftree)
                fk_bpftree_add(e->bpftree, (pid_t)e->tree.procs.v[i].key);
            fk_sym_scan_pid(e->sym, (pid_t)e->tree.procs.v[i].key);
        }
    e->r->tree_followed = true;
}

/* The reader's keep hook: the kind's early_sample and early_record. */
static bool kind_keeps(void *ctx, const union perf_event *ev)
{
    struct fk_engine *e = ctx;
    if (ev->header.type == PERF_RECORD_SAMPLE) {
        struct fk_sample s;
        unsigned idx;
        if (e->kind->early_sample && event_of(e, ev, &idx) &&
            fk_sample_parse(&e->fmt[idx], ev, ev->header.size, &s))
            e->kind->early_sample(e->kind_state, idx, &s);
        return true;
    }
    return !e->kind->early_record || e->kind->early_record(e->kind_state, ev, &e->fmt[0]);
}

/* The reader's pass hook: the kind's. */
static void kind_pass(void *ctx, struct fk_reader *r, bool end)
{
    struct fk_engine *e = ctx;
    e->kind->reader_pass(e->kind_state, r, &e->fmt[0], end);
}

/* The reader's wake hook: the Python gate's notifications taken. */
static void gate_wake(void *ctx)
{
    (void)fk_pygate_drain(ctx);
}

/* The reader's queue may hold a quarter of --max-memory: the stack
 * table and the symbolizer (at most half) keep the rest. */
static bool engine_reader(struct fk_engine *e)
{
    struct fk_reader_opts ro = { .fmt = &e->fmt[0], .seen = pin_seen, .seen_ctx = e };
    if (e->kind->early_record || e->kind->early_sample) {
        ro.keep = kind_keeps;
        ro.keep_ctx = e;
    }
    if (e->kind->reader_pass) {
        ro.pass = kind_pass;
        ro.pass_ctx = e;
    }
    for (size_t i = 0; i < e->o->nstack_hooks; i++)
        if (e->o->stack_hooks[i]->early) {
            ro.sample = early_seen;
            ro.sample_end = early_end;
            ro.sample_ctx = e;
        }
    if (e->uw && e->arch && fk_sample_cut_format(&e->fmt[0])) {
        /* the sampled sp's word: perf lays the registers out in bit order */
        uint64_t below = (1ull << e->arch->perf_reg[FK_UW_SP]) - 1;
        e->ends = fk_stack_ends_new((unsigned)__builtin_popcountll(fk_uw_perf_mask(e->arch) & below));
        ro.ends = e->ends;
    }
    if (e->pygate) {
        ro.wake = gate_wake;
        ro.wake_ctx = e->pygate;
        ro.wake_fd = fk_pygate_fd(e->pygate);
    }
    ro.poll_ms = (int)e->poll_ms;
    ro.hangups = fk_engine_inherits(e);     /* per-task events */
    e->r->reader_poll_ms = e->poll_ms;
    ro.ring_bytes = (size_t)e->pages * (size_t)sysconf(_SC_PAGESIZE);
    early_catch_up(e);  /* the hooks' state made before the thread reads it */
    ro.limit = e->o->max_mem_bytes ? (size_t)(e->o->max_mem_bytes / 4) : (256u << 20);
    int err = 0;
    e->reader = fk_reader_start(e->evlist, &ro, &err);
    if (!e->reader)
        fk_engine_fail(e, "cannot start the ring reader's thread: %s", strerror(err));
    return e->reader != NULL;
}

/* Raise (raise true) or give back this thread's priority for the window
 * and the drain; the threads it starts meanwhile (the ring reader, the
 * kernel symbol loader) inherit it; a run target was forked before, with
 * flamekit's own. On a host whose CPUs are all busy a thread gets its fair
 * share, about 1% of a CPU with 170 runnable tasks on 2, and the engine
 * needs several at 999 Hz with stack copies: its queue filled and the
 * kernel dropped 36-68% of the records (bench/children.sh, 200 busy
 * binaries); 0 at nice -5 or -10. Its CPU time is what it costs the host,
 * bounded by the rate. Unprivileged (no CAP_SYS_NICE), or refused
 * (--no-priority: never above production), it stays as it was, and the
 * metadata says so. */
static void engine_priority(struct fk_engine *e, bool raise)
{
    id_t self = (id_t)gettid();
    if (!raise) {
        if (e->nice_raised)
            (void)setpriority(PRIO_PROCESS, self, e->nice_before);  /* lower: always allowed */
        e->nice_raised = false;
        return;
    }
    errno = 0;
    int now = getpriority(PRIO_PROCESS, self);
    if (now == -1 && errno)
        return;
    int want = now - NICE_RAISE < -20 ? -20 : now - NICE_RAISE;
    e->nice_before = now;
    e->r->nice = now;
    e->r->nice_refused = e->o->no_priority;
    if (e->o->no_priority)
        return;
    if (want < now && setpriority(PRIO_PROCESS, self, want) == 0) {
        e->nice_raised = e->r->nice_raised = true;
        e->r->nice = want;
    }
}

/* A run target's per-task events (no cgroup to follow it in) are
 * switched on by its exec (enable_on_exec); every other target's, before
 * the window opens. */
static bool events_on_at_exec(const struct fk_engine *e)
{
    return e->o->target->kind == FK_TARGET_RUN && !e->tree_cgroup;
}

/* Symbolizer and unwinder ready, the ring reader started, events on,
 * processes that exist now read from /proc (side-band first: nothing
 * between them is missed). */
static bool engine_start(struct fk_engine *e)
{
    const struct fk_target *t = e->o->target;
    engine_priority(e, true);
    engine_symbolizer(e);
    if (!engine_reader(e))
        return false;
    if (!events_on_at_exec(e))
        perf_evlist__enable(e->evlist);
    fk_engine_cgroup_counters(e, PERF_EVENT_IOC_ENABLE);
    if (e->follow_tree)
        seed_tree(e);
    else if (t->kind == FK_TARGET_PID)
        for (size_t i = 0; i < t->npids; i++)
            fk_sym_scan_pid(e->sym, t->pids[i]);
    else if (t->kind == FK_TARGET_RUN)
        fk_sym_scan_pid(e->sym, t->pids[0]);
    else
        fk_sym_scan_all(e->sym);    /* the reader keeps the rings drained */
    return true;
}

/* The window opens: its start, the kind told (the off-CPU program times
 * the target from then on; --ready-fd is told by the loop, once a run
 * target's command was released). Returns the start. */
static uint64_t engine_open_window(struct fk_engine *e)
{
    uint64_t start = fk_now_ns();
    e->r->start_realtime_ns = real_ns();
    if (e->kind->window)
        e->kind->window(e->kind_state, e, true);
    return start;
}

/* A run target's command released to its exec. Returns FK_EXIT_OK or the
 * exit status (127: no such command, 126: not executable). */
static int engine_release_run(struct fk_engine *e)
{
    const struct fk_target *t = e->o->target;
    int xe;
    if (t->kind != FK_TARGET_RUN || fk_target_run_exec((struct fk_target *)t, &xe, e->err, e->errlen))
        return FK_EXIT_OK;
    int st;
    waitpid(t->pids[0], &st, 0);
    e->r->child_exited = true;
    e->r->child_status = st;
    return xe == ENOENT ? 127 : 126;
}

/* Why the window should end now (NULL: go on), after a wake-up. */
static const char *stop_reason(struct fk_engine *e)
{
    const struct fk_target *t = e->o->target;
    if (t->kind == FK_TARGET_RUN) {
        int st;
        if (waitpid(t->pids[0], &st, WNOHANG) == t->pids[0]) {
            e->r->child_exited = true;
            e->r->child_status = st;
            return "command exited";
        }
    }
    if (e->follow_tree && fk_tree_empty(&e->tree))
        return "target exited";
    if (t->kind == FK_TARGET_PID && !e->follow_tree && fk_reader_hung_up(e->reader))
        return "target exited";
    return NULL;
}

/* The window: wake up when the reader was woken (a ring a quarter full) or
 * every take_ms (the kind's, else POLL_MS), hand on its copies, load
 * symbols for what was sampled, enforce the limits. */
static void engine_loop(struct fk_engine *e, uint64_t start)
{
    const struct fk_capture_opts *o = e->o;
    struct fk_capture_result *r = e->r;
    bool preloaded = o->event.exclude_kernel;
    uint64_t deadline = o->duration_ms ? start + o->duration_ms * 1000000ull : UINT64_MAX;
    report_progress(e, start, start, false);    /* the window is open (--ready-fd) */
    uint64_t last_progress = start;
    /* a followed tree's end is seen in its records (exits), at a take:
     * the window of a 'run' or 'pid' capture ends within POLL_MS of it */
    const uint64_t take_ms = e->kind->take_ms && !e->follow_tree ? e->kind->take_ms : POLL_MS;
    for (;;) {
        uint64_t now = fk_now_ns();
        if (o->stop && *o->stop) {
            r->stop_reason = "signal";
            break;
        }
        if (now >= deadline) {
            r->stop_reason = "duration";
            break;
        }
        uint64_t wait = (deadline - now) / 1000000ull;
        read_rings(e, wait < take_ms ? (int)wait + 1 : (int)take_ms, false);
        now = fk_now_ns();
        if (!preloaded) {
            /* in the window, not after it; once the rings were drained
             * (and after a run target's exec, which it must not delay) */
            fk_sym_preload_kernel(e->sym);
            preloaded = true;
        }
        fk_sym_preload(e->sym, PRELOAD_NS);
        uint64_t mem = track_memory(e);
        if (o->max_mem_bytes && mem > o->max_mem_bytes) {
            r->stop_reason = "memory limit";
            r->mem_limited = true;
            break;
        }
        if (now - last_progress >= 1000000000ull) {
            report_progress(e, start, now, false);
            last_progress = now;
        }
        if ((r->stop_reason = stop_reason(e)))
            break;
    }
    r->duration_ns = fk_now_ns() - start;
    report_progress(e, start, fk_now_ns(), true);
}

uint64_t fk_engine_event_count(struct fk_engine *e, unsigned event, size_t *nfds)
{
    uint64_t sum = 0;
    int ncpu = perf_cpu_map__nr(e->cpus), nthr = perf_thread_map__nr(e->threads);
    *nfds = (size_t)ncpu * (size_t)nthr;
    for (int c = 0; event < e->nevents && c < ncpu; c++)
        for (int th = 0; th < nthr; th++) {
            struct perf_counts_values cv;
            if (perf_evsel__read(e->evsel[event], c, th, &cv) == 0)
                sum += cv.val;
        }
    return sum;
}

/* Samples counted but not written (struct fk_capture_result): on each
 * CPU's counter, the periods its last sample's count had crossed, less the
 * samples seen and those the kernel said it lost (PERF_FORMAT_LOST, per
 * counter; without it, the LOST records' total). A sample lost after a
 * counter's last one is not in its gap: the verdict counts it as lost. */
static void unwritten_samples(struct fk_engine *e)
{
    struct fk_capture_result *r = e->r;
    const struct perf_event_attr *a = perf_evsel__attr(e->evsel[0]);
    uint64_t k = a->sample_period;
    if (!(a->sample_type & PERF_SAMPLE_READ) || a->freq || !k ||
        e->nevents != 1 || perf_thread_map__nr(e->threads) != 1)
        return;
    bool per_counter_lost = a->read_format & PERF_FORMAT_LOST;
    uint64_t gaps = 0;
    for (int c = 0; c < perf_cpu_map__nr(e->cpus); c++) {
        int cpu = perf_cpu_map__cpu(e->cpus, c).cpu;
        if (cpu < 0 || (size_t)cpu >= e->read_cap)
            continue;
        uint64_t periods = e->read_last[cpu] / k, seen = e->read_seen[cpu];
        uint64_t gap = periods > seen ? periods - seen : 0;
        struct perf_counts_values cv;
        if (per_counter_lost && perf_evsel__read(e->evsel[0], c, 0, &cv) == 0)
            gap = gap > cv.lost ? gap - cv.lost : 0;
        gaps += gap;
    }
    if (!per_counter_lost)
        gaps = gaps > r->lost ? gaps - r->lost : 0;
    r->samples_unwritten = gaps;
    r->unwritten_checked = true;
}

/* The events' own counts, summed over every CPU and thread, and the
 * cgroup target's. */
static void engine_read_counts(struct fk_engine *e)
{
    struct fk_capture_result *r = e->r;
    int ncpu = perf_cpu_map__nr(e->cpus), nthr = perf_thread_map__nr(e->threads);
    r->counters = (uint64_t)ncpu * (uint64_t)nthr;
    for (int c = 0; c < ncpu; c++)
        for (int th = 0; th < nthr; th++) {
            struct perf_counts_values cv;
            if (perf_evsel__read(e->evsel[0], c, th, &cv) == 0) {
                r->event_count += cv.val;
                r->lost_samples += cv.lost;
                r->time_enabled += cv.ena;
                r->time_running += cv.run;
            }
        }
    bool counting = e->cg_counting;
    for (int c = 0; counting && c < r->ncpus; c++) {
        uint64_t v;
        counting = read(e->cgfds[c], &v, sizeof v) == (ssize_t)sizeof v;
        r->target_count += counting ? v : 0;
    }
    r->have_target_count = counting;
}

/* After the window: name the unique stacks, collect the statistics. */
static void engine_finish(struct fk_engine *e)
{
    struct fk_capture_result *r = e->r;
    r->unique_stacks = e->raw.n;
    track_memory(e);
    uint64_t t_name = fk_now_ns();
    fk_engine_name(e);
    r->naming_ns = fk_now_ns() - t_name;
    track_memory(e);    /* with maps read again */
    fk_sym_stats(e->sym, &r->sym);
    r->tree = e->tree.st;
    if (e->bpftree)
        r->tree.not_followed = fk_bpftree_not_followed(e->bpftree);
    if (e->pygate)
        fk_pygate_stats(e->pygate, &r->gate);
    if (e->uw)
        fk_unwinder_stats(e->uw, &r->unwind);
    if (e->ends) {
        uint64_t cut = r->stack_ends.cut;
        fk_stack_ends_stats(e->ends, &r->stack_ends);
        r->stack_ends.cut = cut;
    }
}

/* The set-up both entry points share, before configuration: an empty
 * result, the caller's options and error buffer, the empty tables. */
static void engine_init(struct fk_engine *e, const struct fk_capture_opts *o,
                        struct fk_capture_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    fk_stacktab_init(&r->stacks);
    e->o = o;
    e->r = r;
    e->err = err;
    e->errlen = errlen;
    if (err && errlen)
        err[0] = 0;
    fk_stacktab_init(&e->callers);
    fk_stacktab_init(&e->frame_lists);
    fk_stacktab_init(&e->raw);
    fk_target_filter_init(&e->filter, o->target);
    e->reader_cpu = e->reader_mask_known = -1;
}

/* hold: the events go to the result, closed after its files are written
 * (fk_capture_result_free); else closed now. */
static void engine_free(struct fk_engine *e, bool hold)
{
    engine_priority(e, false);      /* a capture that failed */
    fk_reader_free(e->reader);      /* its thread reads the rings */
    e->reader = NULL;
    if (hold)
        e->r->held = fk_engine_hold_events(e);
    fk_engine_close(e);
    if (e->kind && e->kind->stop)
        e->kind->stop(e->kind_state);
    fk_unwinder_free(e->uw);
    fk_stack_ends_free(e->ends);    /* the reader that read it is gone */
    e->ends = NULL;
    if (e->sym)
        fk_sym_free(e->sym);
    fk_pins_free(e->pins);
    fk_ringq_free(&e->ring);
    fk_stacktab_free(&e->raw);
    fk_stacktab_free(&e->frame_lists);
    fk_stacktab_free(&e->callers);
    free(e->raw_memo);
    fk_buf_free(&e->key);
    fk_target_filter_free(&e->filter);
    fk_tree_free(&e->tree);
    fk_bpftree_free(e->bpftree);
    fk_pygate_free(e->pygate);
    free(e->pid_cgroup);
    free(e->read_last);
    free(e->read_seen);
}

int fk_capture_run(const struct fk_capture_opts *o, struct fk_capture_result *r, char *err,
                   size_t errlen)
{
    struct fk_engine *e = fk_calloc(1, sizeof *e);
    engine_init(e, o, r, err, errlen);
    int rc = FK_EXIT_ERROR;
    if (!fk_engine_configure(e) || !fk_engine_open(e) || !fk_engine_mmap(e))
        goto out;
    if (e->kind->opened) {
        char kerr[256] = "";
        if (!e->kind->opened(e->kind_state, e, kerr, sizeof kerr)) {
            fk_engine_fail(e, "%s", kerr);
            goto out;
        }
    }
    if (e->tree_cgroup)
        r->tree_cgroup = fk_strdup(e->tree_cgroup);
    if (!engine_start(e))
        goto out;
    /* A command whose events are on already is released inside the
     * window: what it does from its first instruction is the window's
     * (released before it, a command that blocks at once -- a nap -- was
     * switched out before the off-CPU program timed it, and its one block
     * was missed: t-offcpu's "open" capture, 1 of 6 runs beside a build).
     * One whose events its exec switches on is released before: the
     * program would time its wake-up on the way to the exec, where no
     * event samples (t-offcpu's per-task "exits": a pick without its
     * sample, 28 vs 27). */
    bool at_exec = events_on_at_exec(e);
    if (at_exec && (rc = engine_release_run(e)) != FK_EXIT_OK)
        goto out;
    uint64_t start = engine_open_window(e);
    if (!at_exec && (rc = engine_release_run(e)) != FK_EXIT_OK) {
        if (e->kind->window)
            e->kind->window(e->kind_state, e, false);
        goto out;
    }
    rc = FK_EXIT_ERROR;
    engine_loop(e, start);
    if (e->kind->window)
        e->kind->window(e->kind_state, e, false);
    perf_evlist__disable(e->evlist);
    uint64_t end_ns = fk_now_ns();    /* the records' clock (CLOCK_MONOTONIC) */
    fk_engine_cgroup_counters(e, PERF_EVENT_IOC_DISABLE);
    engine_read_counts(e);
    /* Drain the rings after the counts: a sample being written when the
     * disable IPI arrived is in the count and must be read too. */
    fk_reader_finish(e->reader);
    read_rings(e, 0, true);
    unwritten_samples(e);       /* every sample handled */
    if (e->kind->flush)
        e->kind->flush(e->kind_state, e, end_ns);
    /* Every record handled: the reader's chunks go back to the heap, and
     * naming's tables grow into them instead of into pages never touched
     * (each a 2 MB huge page to clear: 8 of them for 20,000 deep Python
     * stacks at 999 Hz). */
    fk_reader_free(e->reader);
    e->reader = NULL;
    engine_priority(e, false);  /* naming and what follows: flamekit's own */
    engine_finish(e);
    rc = FK_EXIT_OK;
out:
    engine_free(e, rc == FK_EXIT_OK);
    free(e);
    if (rc != FK_EXIT_OK)
        fk_capture_result_free(r);
    return rc;
}

void fk_capture_result_free(struct fk_capture_result *r)
{
    fk_held_events_close(r->held);
    r->held = NULL;
    fk_stacktab_free(&r->stacks);
    fk_prof_free(&r->prof);
    free(r->tree_cgroup);
    r->tree_cgroup = NULL;
}

/* ---- replay (benchmarks) ------------------------------------------------ */

struct fk_replay {
    struct fk_engine e;
    bool preloaded;
};

struct fk_replay *fk_replay_new(const struct fk_capture_opts *o, struct fk_capture_result *r,
                                char *err, size_t errlen)
{
    struct fk_replay *p = fk_calloc(1, sizeof *p);
    struct fk_engine *e = &p->e;
    engine_init(e, o, r, err, errlen);
    if (!fk_engine_configure(e)) {
        engine_free(e, false);
        free(p);
        return NULL;
    }
    engine_symbolizer(e);
    if (o->target->kind == FK_TARGET_PID)
        for (size_t i = 0; i < o->target->npids; i++)
            fk_sym_scan_pid(e->sym, o->target->pids[i]);
    else
        fk_sym_scan_all(e->sym);
    return p;
}

const struct fk_sample_format *fk_replay_format(const struct fk_replay *p)
{
    return &p->e.fmt[0];
}

void fk_replay_record(struct fk_replay *p, const void *rec, size_t len)
{
    if (len >= sizeof(struct perf_event_header) && ((const struct perf_event_header *)rec)->size == len)
        handle_record(&p->e, rec);
}

void fk_replay_wakeup(struct fk_replay *p)
{
    if (!p->preloaded && !p->e.o->event.exclude_kernel)
        fk_sym_preload_kernel(p->e.sym);
    p->preloaded = true;
    fk_sym_preload(p->e.sym, PRELOAD_NS);
    track_memory(&p->e);
}

void fk_replay_finish(struct fk_replay *p)
{
    engine_finish(&p->e);
    engine_free(&p->e, false);
    free(p);
}
