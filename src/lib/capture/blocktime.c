/* SPDX-License-Identifier: GPL-2.0-only */
/* Block accounting for off-CPU profiles: see blocktime.h. */
#include "capture/blocktime.h"

#include <stdlib.h>
#include <string.h>

struct fk_bt_thread {
    pid_t tid;              /* 0: reclaimed (tids <= 0 are never tracked) */
    uint8_t state;
    bool pending;           /* a recorded switch-out waits for its switch-in */
    bool in_fresh;          /* in_time is a switch-in no block has used */
    bool out_exact;         /* the pending block's out_time is its switch record's */
    uint64_t out_time, in_time;
    uint64_t one_in;        /* the pending block's N */
    uint64_t stack, waker;
    uint64_t early_time, early_waker;   /* a wakeup with no block pending */
};

#define DEFAULT_MAX_THREADS 65536

static const char *const frames[FK_BT_NSTATES] = { "[S]", "[D]", "[R]", "[other]" };
static const char *const names[FK_BT_NSTATES] = { "S", "D", "R", "other" };

const char *fk_bt_state_frame(enum fk_bt_state s) { return frames[s]; }
const char *fk_bt_state_name(enum fk_bt_state s) { return names[s]; }

enum fk_bt_state fk_bt_state_of(int64_t prev_state, const struct fk_bt_statebits *b)
{
    uint64_t st = (uint64_t)prev_state;
    uint64_t states = b->preempt ? b->preempt - 1 : ~0ull;
    if ((b->preempt && (st & b->preempt)) || !(st & states))
        return FK_BT_RUNNABLE;
    if (st & b->disk)
        return FK_BT_DISK;
    if (st & b->sleeping)
        return FK_BT_SLEEPING;
    return FK_BT_OTHER;
}

void fk_bt_init(struct fk_blocktime *bt, const struct fk_bt_opts *o)
{
    memset(bt, 0, sizeof *bt);
    bt->o = *o;
    if (!bt->o.one_in)
        bt->o.one_in = 1;
    if (!bt->o.max_threads)
        bt->o.max_threads = DEFAULT_MAX_THREADS;
}

void fk_bt_free(struct fk_blocktime *bt)
{
    free(bt->v);
    fk_hindex_free(&bt->index);
    memset(bt, 0, sizeof *bt);
}

size_t fk_bt_bytes(const struct fk_blocktime *bt)
{
    return bt->cap * sizeof *bt->v + fk_hindex_bytes(&bt->index);
}

static struct fk_bt_thread *find(struct fk_blocktime *bt, pid_t tid)
{
    if (tid <= 0)
        return NULL;
    struct fk_hiter it = fk_hindex_find(&bt->index, fk_hash_u64((uint64_t)tid));
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (bt->v[i].tid == tid)
            return &bt->v[i];
    return NULL;
}

/* Keep the entries still needed (all live ones, or with evict_idle only
 * those holding a block or a fresh switch-in) and rebuild the index. */
static void compact(struct fk_blocktime *bt, bool evict_idle)
{
    size_t k = 0;
    for (size_t i = 0; i < bt->n; i++) {
        struct fk_bt_thread *e = &bt->v[i];
        if (!e->tid || (evict_idle && !e->pending && !e->in_fresh))
            continue;
        bt->v[k++] = *e;
    }
    bt->n = bt->live = k;
    fk_hindex_free(&bt->index);
    for (size_t i = 0; i < k; i++)
        fk_hindex_add(&bt->index, fk_hash_u64((uint64_t)bt->v[i].tid), (uint32_t)i);
}

static struct fk_bt_thread *find_or_add(struct fk_blocktime *bt, pid_t tid)
{
    struct fk_bt_thread *e = find(bt, tid);
    if (e || tid <= 0)
        return e;
    if (bt->n >= bt->o.max_threads) {
        compact(bt, bt->live >= bt->o.max_threads);
        if (bt->n >= bt->o.max_threads)
            return NULL;
    }
    bt->v = fk_grow(bt->v, &bt->cap, bt->n + 1, sizeof *bt->v);
    e = &bt->v[bt->n];
    memset(e, 0, sizeof *e);
    e->tid = tid;
    e->waker = e->early_waker = FK_BT_NO_STACK;
    fk_hindex_add(&bt->index, fk_hash_u64((uint64_t)tid), (uint32_t)bt->n);
    bt->n++;
    bt->live++;
    if (bt->live > bt->st.peak_threads)
        bt->st.peak_threads = bt->live;
    return e;
}

static void emit(struct fk_blocktime *bt, const struct fk_bt_thread *e, uint64_t ns, bool open)
{
    uint64_t n = e->one_in;
    struct fk_block b = {
        .tid = e->tid, .state = (enum fk_bt_state)e->state, .stack = e->stack,
        .waker = e->waker, .ns = ns * n, .switches = n, .open = open,
    };
    if (ns < bt->o.min_block_ns) {
        bt->st.short_blocks += n;
        bt->st.short_ns += ns * n;
        b.dropped = true;
        if (bt->o.sink)
            bt->o.sink(bt->o.ctx, &b);
        return;
    }
    bt->st.blocks++;
    bt->st.open += open;
    bt->st.ns_by_state[b.state] += b.ns;
    bt->st.blocks_by_state[b.state] += n;
    if (bt->o.sink)
        bt->o.sink(bt->o.ctx, &b);
}

void fk_bt_out(struct fk_blocktime *bt, pid_t tid, uint64_t time, enum fk_bt_state state,
               uint64_t stack)
{
    fk_bt_out_n(bt, tid, time, state, stack, bt->o.one_in);
}

void fk_bt_out_n(struct fk_blocktime *bt, pid_t tid, uint64_t time, enum fk_bt_state state,
                 uint64_t stack, uint64_t one_in)
{
    if (tid <= 0)
        return;     /* the idle task */
    bt->st.outs++;
    struct fk_bt_thread *e = find_or_add(bt, tid);
    if (!e) {
        bt->st.table_full++;
        return;
    }
    if (e->pending) {
        if (time < e->out_time) {
            /* older than the block already pending: its switch-in was
             * compared with that one and cannot be told apart */
            bt->st.reordered++;
            return;
        }
        bt->st.lost_in++;       /* the pending one never saw its switch-in */
        e->pending = false;
    }
    e->state = (uint8_t)state;
    e->one_in = one_in ? one_in : 1;
    e->stack = stack;
    e->waker = FK_BT_NO_STACK;
    if (e->early_waker != FK_BT_NO_STACK && state != FK_BT_RUNNABLE && e->early_time <= time &&
        time - e->early_time <= FK_BT_WAKING_EARLY_NS && e->early_time >= e->in_time) {
        e->waker = e->early_waker;  /* woken while switching out */
        bt->st.wakeups_matched++;
        bt->st.wakeups_early++;
    }
    e->early_waker = FK_BT_NO_STACK;
    e->out_time = time;
    if (e->in_fresh && e->in_time >= time) {
        /* its switch-in was read first (another CPU's ring) */
        e->in_fresh = false;
        bt->st.reordered++;
        emit(bt, e, e->in_time - time, false);
        return;
    }
    e->in_fresh = false;
    e->out_exact = false;
    e->pending = true;
}

void fk_bt_switched_out(struct fk_blocktime *bt, pid_t tid, uint64_t time)
{
    struct fk_bt_thread *e = find(bt, tid);
    if (!e || !e->pending || e->out_exact || time < e->out_time)
        return;
    e->out_time = time;
    e->out_exact = true;
    bt->st.outs_exact++;
}

bool fk_bt_block(struct fk_blocktime *bt, pid_t tid, uint64_t out, uint64_t in)
{
    struct fk_bt_thread *e = find(bt, tid);
    if (!e || !e->pending || e->out_time < out || e->out_time > in)
        return false;
    e->out_time = out;
    e->out_exact = true;
    bt->st.outs_exact++;
    fk_bt_in(bt, tid, in);
    return true;
}

bool fk_bt_unseen_in(struct fk_blocktime *bt, pid_t tid, uint64_t out, uint64_t next_out)
{
    struct fk_bt_thread *e = find(bt, tid);
    if (!e || !e->pending || e->out_time < out || e->out_time > next_out)
        return false;
    e->pending = false;
    bt->st.unseen_in++;
    return true;
}

void fk_bt_lost(struct fk_blocktime *bt, uint64_t time)
{
    for (size_t i = 0; i < bt->n; i++) {
        struct fk_bt_thread *e = &bt->v[i];
        if (e->tid && e->pending && e->out_time <= time) {
            bt->st.lost_in++;
            e->pending = false;
        }
        e->in_fresh = false;    /* a later switch-in may be among them too */
    }
}

void fk_bt_in(struct fk_blocktime *bt, pid_t tid, uint64_t time)
{
    struct fk_bt_thread *e = find(bt, tid);
    if (!e)
        return;
    if (e->pending) {
        if (time < e->out_time) {
            bt->st.stale_in++;  /* an earlier block's, read late */
            return;
        }
        e->pending = false;
        e->in_time = time;
        e->in_fresh = false;
        emit(bt, e, time - e->out_time, false);
    } else if (time > e->in_time) {
        e->in_time = time;
        e->in_fresh = true;
    }
}

void fk_bt_wake(struct fk_blocktime *bt, pid_t tid, uint64_t time, uint64_t waker)
{
    bt->st.wakeups++;
    struct fk_bt_thread *e = find(bt, tid);
    if (e && e->pending && time >= e->out_time) {
        e->waker = waker;       /* the last wakeup before the switch-in */
        bt->st.wakeups_matched++;
    } else if (e && !e->pending) {
        e->early_time = time;   /* perhaps the next switch-out's (see .h) */
        e->early_waker = waker;
    }
}

void fk_bt_new_thread(struct fk_blocktime *bt, pid_t tid)
{
    struct fk_bt_thread *e = find(bt, tid);
    if (!e)
        return;
    if (e->pending)
        bt->st.tid_reused++;
    e->pending = e->in_fresh = false;
    e->early_waker = FK_BT_NO_STACK;
}

void fk_bt_exit(struct fk_blocktime *bt, pid_t tid)
{
    struct fk_bt_thread *e = find(bt, tid);
    if (!e)
        return;
    if (e->pending)
        bt->st.lost_in++;
    e->tid = 0;
    bt->live--;
    if (bt->n >= 1024 && bt->live < bt->n / 2)
        compact(bt, false);
}

void fk_bt_finish_checked(struct fk_blocktime *bt, uint64_t time,
                          bool (*off_cpu)(void *ctx, pid_t tid, uint64_t out_time), void *ctx)
{
    for (size_t i = 0; i < bt->n; i++) {
        struct fk_bt_thread *e = &bt->v[i];
        if (!e->tid || !e->pending)
            continue;
        e->pending = false;
        if (off_cpu && !off_cpu(ctx, e->tid, e->out_time)) {
            bt->st.lost_in++;
            continue;
        }
        emit(bt, e, time > e->out_time ? time - e->out_time : 0, true);
    }
}

void fk_bt_finish(struct fk_blocktime *bt, uint64_t time)
{
    fk_bt_finish_checked(bt, time, NULL, NULL);
}

/* ---- a thread's exact off-CPU time in the window ------------------------ */

void fk_bt_total_init(struct fk_bt_total *x)
{
    memset(x, 0, sizeof *x);
    x->min_in = x->min_out = UINT64_MAX;
}

void fk_bt_total_add(struct fk_bt_total *x, uint64_t time, bool out, uint64_t start,
                     uint64_t stop)
{
    if (out) {
        x->n_out++;
        x->min_out = time < x->min_out ? time : x->min_out;
        x->max_out = time > x->max_out ? time : x->max_out;
    } else {
        x->n_in++;
        x->min_in = time < x->min_in ? time : x->min_in;
        x->max_in = time > x->max_in ? time : x->max_in;
    }
    if (!start) {
        /* (in practice timed before the opening: it was read before the
         * opening was known; fk_bt_total_get checks) */
        *(out ? &x->early_out : &x->early_in) += time;
        *(out ? &x->nearly_out : &x->nearly_in) += 1;
        x->early_max = time > x->early_max ? time : x->early_max;
        return;
    }
    uint64_t t = time < start ? start : time;
    if (stop)
        t = t > stop ? stop : t;
    else
        x->open_max = time > x->open_max ? time : x->open_max;
    *(out ? &x->sum_out : &x->sum_in) += t;
}

/* time as fk_bt_total_add counted it, once the window is known */
static uint64_t in_window(uint64_t time, uint64_t start, uint64_t stop)
{
    if (start && time < start)
        time = start;
    if (stop && time > stop)
        time = stop;
    return time;
}

enum fk_bt_total_why fk_bt_total_why(const struct fk_bt_total *x, uint64_t start, uint64_t stop,
                                     uint64_t end, uint64_t *ns)
{
    if (x->reused)
        return FK_BT_TOTAL_REUSED;
    if (!x->n_out && !x->exited)
        return FK_BT_TOTAL_NO_SWITCH_OUT;
    /* read before the opening (closing) was known, timed after it */
    if (start && x->early_max > start)
        return FK_BT_TOTAL_READ_EARLY;
    if (stop && x->open_max > stop)
        return FK_BT_TOTAL_READ_LATE;
    unsigned __int128 in = x->sum_in, out = x->sum_out;
    in += start ? (unsigned __int128)start * x->nearly_in : x->early_in;
    out += start ? (unsigned __int128)start * x->nearly_out : x->early_out;
    uint64_t n_in = x->n_in;
    if (n_in && x->min_in < x->min_out) {
        in -= in_window(x->min_in, start, stop);   /* a switch-in without a switch-out before */
        n_in--;
    }
    uint64_t n_out = x->n_out;
    if (n_out && (x->max_out > x->max_in || !x->n_in)) {
        if (x->exited) {
            out -= in_window(x->max_out, start, stop);     /* do_task_dead's */
            n_out--;
        } else {
            /* off CPU at the end */
            in += in_window(end > x->max_out ? end : x->max_out, start, stop);
            n_in++;
        }
    }
    if (n_in != n_out)
        return FK_BT_TOTAL_UNPAIRED;
    if (in < out)
        return FK_BT_TOTAL_IN_BEFORE_OUT;
    *ns = (uint64_t)(in - out);
    return FK_BT_TOTAL_OK;
}

bool fk_bt_total_get(const struct fk_bt_total *x, uint64_t start, uint64_t stop, uint64_t end,
                     uint64_t *ns)
{
    return fk_bt_total_why(x, start, stop, end, ns) == FK_BT_TOTAL_OK;
}

const char *fk_bt_total_why_name(enum fk_bt_total_why why)
{
    static const char *const name[FK_BT_TOTAL_NWHY] = {
        [FK_BT_TOTAL_OK] = "",
        [FK_BT_TOTAL_REUSED] = "reused",
        [FK_BT_TOTAL_NO_SWITCH_OUT] = "no_switch_out",
        [FK_BT_TOTAL_READ_EARLY] = "read_early",
        [FK_BT_TOTAL_READ_LATE] = "read_late",
        [FK_BT_TOTAL_UNPAIRED] = "unpaired",
        [FK_BT_TOTAL_IN_BEFORE_OUT] = "in_before_out",
    };
    return (unsigned)why < FK_BT_TOTAL_NWHY ? name[why] : "";
}
