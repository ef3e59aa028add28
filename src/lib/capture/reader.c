/* SPDX-License-Identifier: GPL-2.0-only */
/* The ring reader's thread and its chunks (see reader.h).
 *
 * The chunk being filled (cur) is also handed on while it fills: its
 * visible length (len) moves on at the end of every pass, and each take
 * hands on [taken, len) of it as a span. The reader only ever appends
 * (at wlen, past len), so what a taker holds never moves. A chunk is
 * reused once the reader left it (full) or drained it (every byte
 * taken and the chunk given back: cur starts again at 0), so a pass
 * with a few records costs no chunk of its own however often the kernel
 * wakes the reader (a wake-up per sample for early Python reads), and
 * chunks stay at limit / FK_READER_CHUNK at most.
 *
 * Chunks are small (FK_READER_CHUNK): what a capture keeps resident is
 * the chunks alive at once, the records waiting for the slack and the
 * next take plus about two chunks (the one being filled, the spare), so
 * every byte of chunk size costs twice at any rate. 1 MiB chunks made a
 * 99 Hz pid capture's peak RSS 17 % larger than before the reader
 * (bench/children.sh part 5). A chunk is filled to its end: when less
 * than a record's largest size is left in cur, a spare is set aside
 * first (room for the next record, whatever its size, before it is read
 * out of its ring), and cur is left only when the record read does not
 * fit. */
#include "capture/reader.h"

#include "util/fk.h"

#include <errno.h>
#include <perf/evlist.h>
#include <perf/event.h>
#include <perf/mmap.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Chunk data bytes; a record is at most 65535 bytes (its size is 16 bits)
 * and is only read out of a ring when that much room is left in cur or
 * in the spare. */
#define FK_READER_CHUNK (128u << 10)
#define MAX_RECORD (65536u)
/* The thread wakes at least this often (to copy what stays below the
 * rings' watermarks, and to see it was stopped). */
#define READER_POLL_MS 50

struct fk_reader {
    struct perf_evlist *evlist;
    struct fk_reader_opts o;
    const struct fk_sample_format *cut;     /* NULL: no stack copies to cut */
    pthread_t thread;
    bool running;
    /* held by a pass over the rings (the thread's, then finish's) */
    pthread_mutex_t rings;
    /* the rest, under lock */
    pthread_mutex_t lock;
    pthread_cond_t woken_cond;
    struct fk_reader_chunk *filled, **filled_tail;  /* chunks with untaken bytes */
    struct fk_reader_chunk *cur;    /* being filled: the reader's from len on */
    size_t wlen;                    /* cur's bytes written (the reader's) */
    struct fk_reader_chunk *spare;  /* the next cur, set aside (the reader's) */
    struct fk_reader_chunk *pool;
    size_t npool;                   /* chunks in the pool */
    struct fk_reader_chunk **all;   /* every chunk allocated and not freed */
    size_t nall, capall;
    struct fk_reader_span *spans;   /* the last take */
    size_t capspans;
    size_t held;                    /* chunk bytes allocated */
    size_t filled_bytes;            /* not taken yet */
    /* how the thread waits for its next pass (wait_rings) */
    enum { WAIT_POLL, WAIT_SLEEP, WAIT_GATE } how;
    int epfd;                       /* the wake fd, edge-triggered (-1: none) */
    uint64_t pass_ns;               /* start of the last pass handed on */
    uint64_t woke_ns;               /* when the taker was last woken */
    bool tap_wants;                 /* a sample tap asked for the taker (this pass) */
    bool tap_soon;                  /* ... within FK_READER_TAP_WAKE_NS (since it woke) */
    bool tap_end;                   /* ... to be asked at the pass's end (sample_end) */
    bool woken, stop, hup;
    struct fk_reader_stats st;
};

/* A chunk from the pool, or a new one within the limit; NULL: none. Under lock. */
static struct fk_reader_chunk *chunk_get(struct fk_reader *r)
{
    struct fk_reader_chunk *c = r->pool;
    if (c) {
        r->pool = c->next;
        r->npool--;
    } else {
        if (r->held + FK_READER_CHUNK > r->o.limit)
            return NULL;
        c = malloc(sizeof *c + FK_READER_CHUNK);
        if (!c)
            return NULL;
        r->all = fk_grow(r->all, &r->capall, r->nall + 1, sizeof *r->all);
        memset(c, 0, sizeof *c);
        c->slot = r->nall;
        r->all[r->nall++] = c;
        c->cap = FK_READER_CHUNK;
        r->held += FK_READER_CHUNK;
        if (r->held > r->st.peak_bytes)
            r->st.peak_bytes = r->held;
    }
    c->next = NULL;
    c->len = c->taken = 0;
    c->listed = c->held = false;
    return c;
}

/* Back to the pool while the pool holds no more chunks than are in use
 * (at least POOL_MIN), else back to malloc. A pool kept whole after a
 * backlog (the engine's thread loading a large binary's symbols and
 * unwind tables early in the window: 14-57 MB of queue at 999 Hz with
 * 32 KB stack copies) held that memory idle for the rest of the capture
 * while the stack tables and the symbolizer grew into pages never
 * touched: each a 2 MB huge page to clear (fk_heap_for_batch), 18 % of
 * flamekit's CPU. Given back, the heap keeps it (no trim: the tables
 * grow into it, faulting nothing); the pool's half keeps a steady rate's
 * chunks from going through malloc at every pass. What is held stays
 * within the limit and is charged as held. Under lock. */
#define POOL_MIN 16
static void chunk_put(struct fk_reader *r, struct fk_reader_chunk *c)
{
    size_t in_use = r->nall - r->npool - 1;
    if (r->npool >= POOL_MIN && r->npool >= in_use) {
        struct fk_reader_chunk *last = r->all[--r->nall];
        last->slot = c->slot;
        r->all[c->slot] = last;
        r->held -= c->cap;
        free(c);
        return;
    }
    c->next = r->pool;
    r->pool = c;
    r->npool++;
}

/* A chunk the reader left: reused once the taker has had all of it and
 * gave it back. Under lock. */
static void chunk_maybe_put(struct fk_reader *r, struct fk_reader_chunk *c)
{
    if (c != r->cur && !c->held && !c->listed && c->taken == c->len)
        chunk_put(r, c);
}

/* Hand on cur up to wlen. Under lock. */
static void cur_list(struct fk_reader *r)
{
    struct fk_reader_chunk *c = r->cur;
    if (!c || r->wlen == c->len)
        return;
    r->filled_bytes += r->wlen - c->len;
    c->len = r->wlen;
    if (!c->listed) {
        c->next = NULL;
        *r->filled_tail = c;
        r->filled_tail = &c->next;
        c->listed = true;
    }
}

/* Leave cur (full: handed on whole, no longer the reader's) for the
 * spare, or a new chunk; cur is NULL when none is left under the limit.
 * Under lock. */
static void cur_next(struct fk_reader *r)
{
    struct fk_reader_chunk *c = r->cur;
    if (c) {
        cur_list(r);
        r->cur = NULL;
        chunk_maybe_put(r, c);
    }
    r->cur = r->spare ? r->spare : chunk_get(r);
    r->spare = NULL;
    r->wlen = 0;
}

/* Make room for the next record, whatever its size: in cur at wlen, or
 * in the spare when cur has less than a record's largest size left.
 * False: no room under the limit. Under lock. */
static bool cur_ready(struct fk_reader *r)
{
    struct fk_reader_chunk *c = r->cur;
    if (c && !c->held && !c->listed && c->taken == r->wlen) {
        /* drained: start again at its front */
        c->len = c->taken = r->wlen = 0;
    }
    if (!c)
        cur_next(r);
    if (!r->cur)
        return false;
    if (r->cur->cap - r->wlen >= MAX_RECORD + 8 || r->spare)
        return true;
    r->spare = chunk_get(r);
    return r->spare != NULL;
}

/* Hand on what this pass wrote, and wake the taker when the kernel woke
 * the reader (wake) -- with a sample tap, only when it asked now, or
 * when it holds something for a sample and FK_READER_TAP_WAKE_NS went
 * by. Under lock. */
static void publish(struct fk_reader *r, uint64_t pass_ns, bool wake)
{
    cur_list(r);
    r->pass_ns = pass_ns;
    if (wake && r->o.sample && !r->tap_wants &&
        (!r->tap_soon || pass_ns - r->woke_ns < FK_READER_TAP_WAKE_NS))
        wake = false;
    r->tap_wants = false;
    if (wake || r->filled_bytes > r->o.limit / 4) {
        r->tap_soon = false;
        r->woke_ns = pass_ns;
        r->woken = true;
        pthread_cond_signal(&r->woken_cond);
    }
}

/* Copy one record to cur at wlen, its stack copy cut. */
static void copy_record(struct fk_reader *r, const union perf_event *ev)
{
    unsigned char *dst = r->cur->data + r->wlen;
    size_t len = ev->header.size;
    size_t n = r->cut && ev->header.type == PERF_RECORD_SAMPLE
               ? fk_sample_cut_stack(r->cut, ev, len, dst, r->o.ends) : 0;
    if (!n) {
        memcpy(dst, ev, len);
        n = len;
    }
    size_t padded = (n + 7) & ~(size_t)7;
    memset(dst + n, 0, padded - n);
    r->wlen += padded;
    r->st.bytes += len;
    r->st.records++;
    if (ev->header.type != PERF_RECORD_SAMPLE && r->o.seen)
        r->o.seen(r->o.seen_ctx, (const union perf_event *)dst);
    else if (ev->header.type == PERF_RECORD_SAMPLE && r->o.sample) {
        unsigned tap = r->o.sample(r->o.sample_ctx, (const union perf_event *)dst);
        r->tap_wants |= (tap & FK_READER_TAP_NOW) != 0;
        r->tap_soon |= (tap & FK_READER_TAP_SOON) != 0;
        r->tap_end |= (tap & FK_READER_TAP_END) != 0;
    }
}

/* The tap's questions left for the pass's end, answered. */
static void tap_end(struct fk_reader *r)
{
    if (!r->tap_end)
        return;
    r->tap_end = false;
    unsigned tap = r->o.sample_end ? r->o.sample_end(r->o.sample_ctx) : FK_READER_TAP_NOW;
    r->tap_wants |= (tap & FK_READER_TAP_NOW) != 0;
    r->tap_soon |= (tap & FK_READER_TAP_SOON) != 0;
}

/* One pass over every ring: copy out, release. Holds r->rings. Returns
 * the most bytes read out of one ring: how full the fullest ring was as
 * the pass began (a ring is read up to its head as it was then). */
static size_t read_pass(struct fk_reader *r, bool wake)
{
    uint64_t start = fk_now_ns();
    bool full = false;
    size_t most = 0;
    struct perf_mmap *map;
    if (r->o.wake)
        r->o.wake(r->o.wake_ctx);
    if (r->o.pass)
        r->o.pass(r->o.pass_ctx, r, false);
    perf_evlist__for_each_mmap(r->evlist, map, false) {
        if (perf_mmap__read_init(map) < 0)
            continue;
        size_t ring = 0;
        bool check = true;  /* cur may be drained (given back) or none yet */
        for (;;) {
            /* room first: a record read is released at the consume */
            if (check || (!r->spare && r->cur->cap - r->wlen < MAX_RECORD + 8)) {
                check = false;
                pthread_mutex_lock(&r->lock);
                bool ok = cur_ready(r);
                pthread_mutex_unlock(&r->lock);
                if (!ok) {
                    full = true;
                    break;
                }
            }
            union perf_event *ev = perf_mmap__read_event(map);
            if (!ev)
                break;
            ring += ev->header.size;
            if (r->o.keep && !r->o.keep(r->o.keep_ctx, ev)) {
                r->st.dropped++;
                continue;
            }
            if (r->cur->cap - r->wlen < ((ev->header.size + 7u) & ~(size_t)7)) {
                pthread_mutex_lock(&r->lock);
                cur_next(r);    /* the spare: set aside above */
                pthread_mutex_unlock(&r->lock);
            }
            copy_record(r, ev);
        }
        /* No perf_mmap__read_done: it sets the read position to the head
         * as it is now, past any record the kernel wrote since the last
         * perf_mmap__read_event saw the ring empty; those were skipped,
         * counted by the event but lost without a trace. It is for
         * overwrite rings; ours already stand where they read. */
        perf_mmap__consume(map);
        if (ring > most)
            most = ring;
        if (full)
            break;
    }
    if (r->o.pass)
        r->o.pass(r->o.pass_ctx, r, true);
    tap_end(r);
    pthread_mutex_lock(&r->lock);
    r->st.passes++;
    r->st.full += full;
    if (most > r->st.ring_peak_bytes)
        r->st.ring_peak_bytes = most;
    publish(r, start, wake);
    pthread_mutex_unlock(&r->lock);
    return most;
}

bool fk_reader_add(struct fk_reader *r, const union perf_event *ev)
{
    size_t need = (ev->header.size + 7u) & ~(size_t)7;
    pthread_mutex_lock(&r->lock);
    bool ok = ev->header.size >= sizeof ev->header && need <= MAX_RECORD && cur_ready(r);
    if (ok && r->cur->cap - r->wlen < need)
        cur_next(r);    /* the spare cur_ready set aside */
    ok = ok && r->cur;
    r->st.full += !ok;
    pthread_mutex_unlock(&r->lock);
    if (ok)
        copy_record(r, ev);
    return ok;
}

/* How long the thread may sleep before its next pass (ms; 0: at once).
 * Its own period (poll_ms, else READER_POLL_MS) when the fullest ring held
 * at most a quarter of its size as the last pass began; sooner in
 * proportion when it held more, so that at the rate it filled since the
 * pass before (most bytes in since_ns) it holds about a quarter again at
 * the next pass and is never more than half full as long as the thread
 * gets a CPU when it asks. Rings read on the reader's own clock
 * (fk_evkind.poll_ms) wake no one until a whole ring's bytes were
 * written: this is what keeps them from overflowing at high rates (faults
 * -c 1 on two labs: 14 % of the records lost instead of 25 %), at no cost
 * at ordinary ones. A kernel wake-up at every half ring's bytes on top
 * lost no fewer (faults -c 10, two labs, load 8-16): the losses left came
 * with passes 0.1-4.5 s apart where 10 ms was asked, the thread given no
 * CPU (gap_peak_ns). */
static int next_timeout(const struct fk_reader *r, int period, size_t most, uint64_t since_ns)
{
    size_t quarter = r->o.ring_bytes / 4;
    if (!quarter || most <= quarter)
        return period;
    uint64_t ms = since_ns * quarter / most / 1000000u;
    return ms < (uint64_t)period ? (int)ms : period;
}

/* Sleep to until (CLOCK_MONOTONIC ns); an error of the clock's. */
static int sleep_until(uint64_t until)
{
    struct timespec ts = { (time_t)(until / 1000000000u), (long)(until % 1000000000u) };
    int err;
    while ((err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
        ;
    return err;
}

/* Take the wake fd's edge, if one came (the pass about to be made reads
 * what it woke for). */
static void wake_edge_take(struct fk_reader *r)
{
    struct epoll_event ev;
    if (r->epfd >= 0)
        (void)epoll_wait(r->epfd, &ev, 1, 0);
}

/* Wait up to timeout_ms after the pass that began at pass_ns, as r->how
 * says (fk_reader_start):
 *  - WAIT_POLL: poll over the rings' fds (a watermark, a sample's
 *    wake-up, a hang-up) and the wake fd's edges; its result;
 *  - WAIT_SLEEP: no fd can wake the thread: sleep to the deadline and
 *    return 0 -- a pass over rings read on the clock then costs no
 *    system call per ring, only the sleep;
 *  - WAIT_GATE: rings read on the clock, and only the wake fd's edges
 *    (the gate's forced wake-ups) end the wait early: 1 when one did.
 * The deadline counts from the pass's start, so the period holds however
 * long the pass took. */
static int wait_rings(struct fk_reader *r, int timeout_ms, uint64_t pass_ns)
{
    uint64_t until = pass_ns + (uint64_t)timeout_ms * 1000000u;
    if (r->how == WAIT_GATE) {
        struct epoll_event ev;
        for (;;) {
            uint64_t now = fk_now_ns();
            /* whole ms, rounded up: the pass comes at the deadline, not before */
            int ms = until > now ? (int)((until - now + 999999u) / 1000000u) : 0;
            int n = epoll_wait(r->epfd, &ev, 1, ms);
            if (n >= 0)
                return n;
            if (errno != EINTR)
                break;
        }
        /* (cannot happen with a valid epoll fd) on the clock alone */
        return sleep_until(until) ? perf_evlist__poll(r->evlist, timeout_ms) : 0;
    }
    if (r->how == WAIT_SLEEP && !sleep_until(until))
        return 0;
    int n = perf_evlist__poll(r->evlist, timeout_ms);
    if (n > 0)
        wake_edge_take(r);
    return n;
}

static void *reader_main(void *arg)
{
    struct fk_reader *r = arg;
    const int period = r->o.poll_ms > 0 ? r->o.poll_ms : READER_POLL_MS;
    int timeout = period;
    uint64_t last = fk_now_ns();
    for (;;) {
        int n = wait_rings(r, timeout, last);
        pthread_mutex_lock(&r->rings);
        pthread_mutex_lock(&r->lock);
        bool stop = r->stop;
        pthread_mutex_unlock(&r->lock);
        if (stop) {
            pthread_mutex_unlock(&r->rings);
            return NULL;
        }
        bool hup = false;
        /* hung-up fds (a per-task target's tasks gone) would make poll
         * return at once forever */
        if (n > 0 && r->how == WAIT_POLL &&
            perf_evlist__filter_pollfd(r->evlist, POLLHUP | POLLERR) == 0)
            hup = true;
        uint64_t now = fk_now_ns();
        size_t most = read_pass(r, n > 0 || (n == 0 && r->o.sample && r->o.poll_ms > 0));
        pthread_mutex_unlock(&r->rings);
        timeout = next_timeout(r, period, most, now - last);
        pthread_mutex_lock(&r->lock);
        r->st.soon += timeout < period;
        if (now - last > r->st.gap_peak_ns)
            r->st.gap_peak_ns = now - last;
        pthread_mutex_unlock(&r->lock);
        last = now;
        if (hup) {
            pthread_mutex_lock(&r->lock);
            r->hup = true;
            r->woken = true;
            pthread_cond_signal(&r->woken_cond);
            pthread_mutex_unlock(&r->lock);
        }
    }
}

/* libperf's (internal/evlist.h, not installed); flags 1 is
 * fdarray_flag__nonfilterable: not counted by perf_evlist__filter_pollfd,
 * so the rings' hang-up is still seen. */
int perf_evlist__add_pollfd(struct perf_evlist *evlist, int fd, void *ptr, short revent,
                            int flags);

struct fk_reader *fk_reader_start(struct perf_evlist *evlist, const struct fk_reader_opts *o,
                                  int *err)
{
    struct fk_reader *r = fk_calloc(1, sizeof *r);
    r->evlist = evlist;
    r->o = *o;
    r->epfd = -1;
    if (!r->o.limit)
        r->o.limit = 64u << 20;
    if (r->o.limit < 4 * FK_READER_CHUNK)
        r->o.limit = 4 * FK_READER_CHUNK;
    r->cut = fk_sample_cut_format(o->fmt);
    r->how = o->poll_ms <= 0 || o->hangups ? WAIT_POLL : o->wake ? WAIT_GATE : WAIT_SLEEP;
    if (o->wake) {
        /* edge-triggered: a BPF ring buffer's fd polls readable while it
         * holds anything, records written without a wake-up too (the
         * gate's chains, two a millisecond on two CPUs at 999 Hz):
         * level-triggered, a chain written after the pass's drain would
         * end the next wait as it began; edges come only from the
         * buffer's wake-ups */
        struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
        errno = 0;
        r->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (r->epfd < 0 || epoll_ctl(r->epfd, EPOLL_CTL_ADD, o->wake_fd, &ev) < 0 ||
            (r->how == WAIT_POLL &&
             perf_evlist__add_pollfd(evlist, r->epfd, NULL, POLLIN, 1) < 0)) {
            *err = errno ? errno : ENOMEM;
            if (r->epfd >= 0)
                close(r->epfd);
            free(r);
            return NULL;
        }
    }
    r->filled_tail = &r->filled;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->woken_cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->rings, NULL);
    *err = pthread_create(&r->thread, NULL, reader_main, r);
    if (*err) {
        fk_reader_free(r);
        return NULL;
    }
    /* its own name (top -H, /proc/PID/task/TID/comm: bench/engine.sh
     * tells its CPU from the engine's by it); a refusal changes nothing */
    (void)pthread_setname_np(r->thread, "flamekit-reader");
    r->running = true;
    return r;
}

const struct fk_reader_span *fk_reader_take(struct fk_reader *r, int timeout_ms,
                                            uint64_t *upto_ns, size_t *n)
{
    pthread_mutex_lock(&r->lock);
    if (timeout_ms > 0 && !r->woken) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!r->woken && pthread_cond_timedwait(&r->woken_cond, &r->lock, &until) != ETIMEDOUT)
            ;
    }
    r->woken = false;
    size_t k = 0;
    for (struct fk_reader_chunk *c = r->filled; c; c = c->next) {
        r->spans = fk_grow(r->spans, &r->capspans, k + 1, sizeof *r->spans);
        r->spans[k++] = (struct fk_reader_span){ c, c->data + c->taken, c->len - c->taken };
        c->taken = c->len;
        c->held = true;
        c->listed = false;
    }
    r->filled = NULL;
    r->filled_tail = &r->filled;
    r->filled_bytes = 0;
    *upto_ns = r->pass_ns;
    *n = k;
    pthread_mutex_unlock(&r->lock);
    return r->spans;
}

void fk_reader_give_back(struct fk_reader *r, struct fk_reader_chunk *chunk)
{
    pthread_mutex_lock(&r->lock);
    chunk->held = false;
    chunk_maybe_put(r, chunk);  /* cur: the reader starts it again when drained */
    pthread_mutex_unlock(&r->lock);
}

bool fk_reader_hung_up(struct fk_reader *r)
{
    pthread_mutex_lock(&r->lock);
    bool hup = r->hup;
    pthread_mutex_unlock(&r->lock);
    return hup;
}

void fk_reader_finish(struct fk_reader *r)
{
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_mutex_unlock(&r->lock);
    /* the thread sees stop before its next pass; it is joined when freed
     * (it may sleep in poll until then) */
    pthread_mutex_lock(&r->rings);
    read_pass(r, true);
    pthread_mutex_unlock(&r->rings);
}

size_t fk_reader_bytes(struct fk_reader *r)
{
    pthread_mutex_lock(&r->lock);
    size_t held = r->held;
    pthread_mutex_unlock(&r->lock);
    return held;
}

void fk_reader_stats(struct fk_reader *r, struct fk_reader_stats *out)
{
    pthread_mutex_lock(&r->lock);
    *out = r->st;
    pthread_mutex_unlock(&r->lock);
}

void fk_reader_free(struct fk_reader *r)
{
    if (!r)
        return;
    if (r->running) {
        pthread_mutex_lock(&r->lock);
        r->stop = true;
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
    }
    for (size_t i = 0; i < r->nall; i++)
        free(r->all[i]);
    free(r->all);
    free(r->spans);
    if (r->epfd >= 0)
        close(r->epfd);
    pthread_cond_destroy(&r->woken_cond);
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->rings);
    free(r);
}
