/* SPDX-License-Identifier: GPL-2.0-only */
/* The ring reader's thread and its chunks (see reader.h).
 *
 * The chunk being filled (cur) is also handed on while it fills: it is
 * the tail of the filled list from its first record, its visible length
 * moved on at the end of every pass. A taker gets [0, len) of it; what
 * the reader wrote past that is moved to the front of a chunk that is the
 * reader's alone (the same one once it is given back). So a pass with a
 * few records costs no chunk of its own however often the kernel wakes
 * the reader (a wake-up per sample for early Python reads), and chunks
 * stay few: limit / FK_READER_CHUNK at most. */
#include "capture/reader.h"

#include "util/fk.h"

#include <errno.h>
#include <perf/evlist.h>
#include <perf/event.h>
#include <perf/mmap.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Chunk data bytes; a record is at most 65535 bytes (its size is 16 bits)
 * and is only read out of a ring when that much room is left. */
#define FK_READER_CHUNK (1u << 20)
#define MAX_RECORD (65536u)
/* The thread wakes at least this often (to copy what stays below the
 * rings' watermarks, and to see it was stopped). */
#define READER_POLL_MS 50
/* Chunks kept for reuse when given back (page faults of fresh ones). */
#define POOL_MAX 4

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
    struct fk_reader_chunk *filled, **filled_tail;
    struct fk_reader_chunk *cur;    /* being filled: the reader's from len on */
    bool cur_listed;                /* cur is the filled list's tail */
    bool cur_taken;                 /* a taker has [0, cur->len) */
    bool cur_given;                 /* ... and gave it back */
    size_t wlen;                    /* cur's bytes written (the reader's) */
    struct fk_reader_chunk *pool;
    size_t npool;
    size_t held;                    /* chunk bytes allocated */
    size_t filled_bytes;            /* not taken yet */
    uint64_t pass_ns;               /* start of the last pass handed on */
    uint64_t woke_ns;               /* when the taker was last woken */
    bool tap_wants;                 /* a sample tap asked for the taker (this pass) */
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
        c->cap = FK_READER_CHUNK;
        r->held += FK_READER_CHUNK;
        if (r->held > r->st.peak_bytes)
            r->st.peak_bytes = r->held;
    }
    c->next = NULL;
    c->len = 0;
    return c;
}

/* Under lock. */
static void chunk_put(struct fk_reader *r, struct fk_reader_chunk *c)
{
    if (r->npool < POOL_MAX) {
        c->next = r->pool;
        r->pool = c;
        r->npool++;
        return;
    }
    r->held -= c->cap;
    free(c);
}

/* A taker has [0, cur->len): move what the reader wrote past it to the
 * front of a chunk of the reader's own (cur itself once given back).
 * False: no room under the limit (those records wait in cur). Under lock. */
static bool cur_untake(struct fk_reader *r)
{
    struct fk_reader_chunk *c = r->cur;
    if (!c || !r->cur_taken)
        return true;
    size_t kept = r->wlen - c->len;
    if (r->cur_given) {
        memmove(c->data, c->data + c->len, kept);
    } else {
        struct fk_reader_chunk *n = chunk_get(r);
        if (!n)
            return false;
        memcpy(n->data, c->data + c->len, kept);
        r->cur = n;     /* c is the taker's, given back as any other */
        c = n;
    }
    c->len = 0;
    r->wlen = kept;
    r->cur_taken = r->cur_given = r->cur_listed = false;
    return true;
}

/* Hand on cur up to wlen. Under lock. */
static void cur_list(struct fk_reader *r)
{
    struct fk_reader_chunk *c = r->cur;
    if (!c || r->cur_taken || r->wlen == c->len)
        return;
    r->filled_bytes += r->wlen - c->len;
    c->len = r->wlen;
    if (!r->cur_listed) {
        *r->filled_tail = c;
        r->filled_tail = &c->next;
        r->cur_listed = true;
    }
}

/* Make cur a chunk the reader may write a record to at wlen. False: no
 * room under the limit. Under lock. */
static bool cur_ready(struct fk_reader *r)
{
    if (!cur_untake(r))
        return false;
    if (r->cur && r->cur->cap - r->wlen >= MAX_RECORD + 8)
        return true;
    if (r->cur) {   /* full: handed on whole, no longer the reader's */
        cur_list(r);
        r->cur = NULL;
    }
    r->cur = chunk_get(r);
    r->wlen = 0;
    r->cur_listed = false;
    return r->cur != NULL;
}

/* Hand on what this pass wrote, and wake the taker when the kernel woke
 * the reader (wake) -- with a sample tap, only when it asked, or after
 * FK_READER_TAP_WAKE_NS. Under lock. */
static void publish(struct fk_reader *r, uint64_t pass_ns, bool wake)
{
    if (cur_untake(r))
        cur_list(r);
    r->pass_ns = pass_ns;
    if (wake && r->o.sample && !r->tap_wants && pass_ns - r->woke_ns < FK_READER_TAP_WAKE_NS)
        wake = false;
    r->tap_wants = false;
    if (wake || r->filled_bytes > r->o.limit / 4) {
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
               ? fk_sample_cut_stack(r->cut, ev, len, dst) : 0;
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
    else if (ev->header.type == PERF_RECORD_SAMPLE && r->o.sample &&
             r->o.sample(r->o.sample_ctx, (const union perf_event *)dst))
        r->tap_wants = true;
}

/* One pass over every ring: copy out, release. Holds r->rings. */
static void read_pass(struct fk_reader *r, bool wake)
{
    uint64_t start = fk_now_ns();
    bool full = false;
    struct perf_mmap *map;
    perf_evlist__for_each_mmap(r->evlist, map, false) {
        if (perf_mmap__read_init(map) < 0)
            continue;
        bool check = true;  /* cur_taken is the taker's to set */
        for (;;) {
            /* room first: a record read is released at the consume */
            if (check || r->cur->cap - r->wlen < MAX_RECORD + 8) {
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
            if (r->o.keep && ev->header.type != PERF_RECORD_SAMPLE && !r->o.keep(r->o.keep_ctx, ev)) {
                r->st.dropped++;
                continue;
            }
            copy_record(r, ev);
        }
        /* No perf_mmap__read_done: it sets the read position to the head
         * as it is now, past any record the kernel wrote since the last
         * perf_mmap__read_event saw the ring empty; those were skipped,
         * counted by the event but lost without a trace. It is for
         * overwrite rings; ours already stand where they read. */
        perf_mmap__consume(map);
        if (full)
            break;
    }
    pthread_mutex_lock(&r->lock);
    r->st.full += full;
    publish(r, start, wake);
    pthread_mutex_unlock(&r->lock);
}

static void *reader_main(void *arg)
{
    struct fk_reader *r = arg;
    for (;;) {
        int n = perf_evlist__poll(r->evlist, READER_POLL_MS);
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
        if (n > 0 && perf_evlist__filter_pollfd(r->evlist, POLLHUP | POLLERR) == 0)
            hup = true;
        read_pass(r, n > 0);
        pthread_mutex_unlock(&r->rings);
        if (hup) {
            pthread_mutex_lock(&r->lock);
            r->hup = true;
            r->woken = true;
            pthread_cond_signal(&r->woken_cond);
            pthread_mutex_unlock(&r->lock);
        }
    }
}

struct fk_reader *fk_reader_start(struct perf_evlist *evlist, const struct fk_reader_opts *o,
                                  int *err)
{
    struct fk_reader *r = fk_calloc(1, sizeof *r);
    r->evlist = evlist;
    r->o = *o;
    if (!r->o.limit)
        r->o.limit = 64u << 20;
    if (r->o.limit < 4 * FK_READER_CHUNK)
        r->o.limit = 4 * FK_READER_CHUNK;
    r->cut = fk_sample_cut_format(o->fmt);
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
    r->running = true;
    return r;
}

struct fk_reader_chunk *fk_reader_take(struct fk_reader *r, int timeout_ms, uint64_t *upto_ns)
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
    struct fk_reader_chunk *list = r->filled;
    if (r->cur_listed) {
        r->cur_taken = true;    /* the taker has [0, len); the rest is the reader's */
        r->cur_listed = false;
    }
    r->filled = NULL;
    r->filled_tail = &r->filled;
    r->filled_bytes = 0;
    *upto_ns = r->pass_ns;
    pthread_mutex_unlock(&r->lock);
    return list;
}

void fk_reader_give_back(struct fk_reader *r, struct fk_reader_chunk *list)
{
    pthread_mutex_lock(&r->lock);
    while (list) {
        struct fk_reader_chunk *next = list->next;
        if (list == r->cur)
            r->cur_given = true;    /* the reader still writes past len */
        else
            chunk_put(r, list);
        list = next;
    }
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
    struct fk_reader_chunk *c = r->filled;
    while (c) {
        struct fk_reader_chunk *next = c->next;
        if (c == r->cur)
            r->cur = NULL;
        free(c);
        c = next;
    }
    free(r->cur);
    while ((c = r->pool)) {
        r->pool = c->next;
        free(c);
    }
    pthread_cond_destroy(&r->woken_cond);
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->rings);
    free(r);
}
