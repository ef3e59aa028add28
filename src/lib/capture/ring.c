/* SPDX-License-Identifier: GPL-2.0-only */
/* Records in time order across CPUs (see ring.h). */
#include "capture/ring.h"

#include <linux/perf_event.h>
#include <perf/event.h>
#include <stdlib.h>
#include <string.h>

/* A new entry for a record of len bytes (its place set by the caller). */
static struct fk_ring_rec *new_rec(struct fk_ringq *q, const void *rec, size_t len,
                                   const struct fk_sample_format *f)
{
    q->v = fk_grow(q->v, &q->cap, q->n + 1, sizeof *q->v);
    struct fk_ring_rec *r = &q->v[q->n++];
    r->time = fk_record_time(f, rec, len);
    r->seq = q->seq++;
    r->ref = NULL;
    r->hold = NULL;
    r->off = 0;
    r->len = (uint32_t)len;
    q->bytes += len;
    return r;
}

/* Copy a record into buf, 8-byte aligned (the next copy stays aligned);
 * r's place set. */
static void copy_in(struct fk_ringq *q, struct fk_ring_rec *r, const void *rec, size_t len)
{
    fk_buf_reserve(&q->buf, len + 8);
    unsigned char *dst = (unsigned char *)q->buf.data + q->buf.len;
    memcpy(dst, rec, len);
    size_t padded = (len + 7) & ~(size_t)7;
    memset(dst + len, 0, padded - len);
    r->off = q->buf.len;
    q->buf.len += padded;
}

void fk_ringq_push(struct fk_ringq *q, const void *rec, size_t len, const struct fk_sample_format *f)
{
    struct fk_ring_rec *r = new_rec(q, rec, len, f);
    copy_in(q, r, rec, len);
    if (q->tap)     /* the aligned copy: decoders read it in place */
        q->tap(q->tap_ctx, q->buf.data + r->off, r->len);
}

void fk_ringq_push_ref(struct fk_ringq *q, const void *rec, size_t len,
                       const struct fk_sample_format *f, uint32_t *hold)
{
    struct fk_ring_rec *r = new_rec(q, rec, len, f);
    r->ref = rec;
    r->hold = hold;
    ++*hold;
    if (q->tap)
        q->tap(q->tap_ctx, rec, len);
}

/* (time, read order): the order records are handed on in */
static inline bool rec_before(const struct fk_ring_rec *x, const struct fk_ring_rec *y)
{
    return x->time != y->time ? x->time < y->time : x->seq < y->seq;
}

/* What was pushed since the last delivery, as sorted runs: a pass over
 * the rings gives one run per ring (or more, where a ring's records go
 * back in time). */
static void split_runs(struct fk_ringq *q)
{
    size_t i = q->scanned;
    while (i < q->n) {
        size_t at = i++;
        while (i < q->n && !rec_before(&q->v[i], &q->v[i - 1]))
            i++;
        q->runs = fk_grow(q->runs, &q->capruns, q->nruns + 1, sizeof *q->runs);
        q->runs[q->nruns++] = (struct fk_ring_run){ at, i };
    }
    q->scanned = q->n;
}

/* The min-heap of runs (q->heap holds run indexes), by head record. */
static inline bool run_before(const struct fk_ringq *q, size_t a, size_t b)
{
    return rec_before(&q->v[q->runs[a].at], &q->v[q->runs[b].at]);
}

static void heap_down(struct fk_ringq *q, size_t n, size_t i)
{
    size_t *h = q->heap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && run_before(q, h[l], h[m]))
            m = l;
        if (l + 1 < n && run_before(q, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Every pending run in the heap; returns how many. */
static size_t heap_build(struct fk_ringq *q)
{
    q->heap = fk_grow(q->heap, &q->capheap, q->nruns, sizeof *q->heap);
    size_t n = 0;
    for (size_t r = 0; r < q->nruns; r++)
        if (q->runs[r].at < q->runs[r].end)
            q->heap[n++] = r;
    for (size_t i = n / 2; i-- > 0;)
        heap_down(q, n, i);
    return n;
}

/* The oldest pending record (the heap's top run's head), its run moved on. */
static const struct fk_ring_rec *heap_pop(struct fk_ringq *q, size_t *n)
{
    struct fk_ring_run *r = &q->runs[q->heap[0]];
    const struct fk_ring_rec *rec = &q->v[r->at++];
    if (r->at == r->end)
        q->heap[0] = q->heap[--*n];
    heap_down(q, *n, 0);
    return rec;
}

/* Rewrite the pending records as one run at the front of v, and the
 * copied ones at the front of a fresh buffer, in delivery order; the spent
 * space is dropped (records by reference stay where they lie). */
static void compact(struct fk_ringq *q, size_t pending)
{
    q->tmp = fk_grow(q->tmp, &q->captmp, pending, sizeof *q->tmp);
    fk_buf_reset(&q->spare);
    size_t hn = heap_build(q), k = 0;
    while (hn) {
        struct fk_ring_rec r = *heap_pop(q, &hn);
        if (!r.ref) {
            size_t padded = (r.len + 7u) & ~(size_t)7;
            size_t off = q->spare.len;
            fk_buf_add(&q->spare, q->buf.data + r.off, padded);
            r.off = off;
        }
        q->tmp[k++] = r;
    }
    struct fk_ring_rec *v = q->v;
    size_t cap = q->cap;
    q->v = q->tmp;
    q->cap = q->captmp;
    q->tmp = v;
    q->captmp = cap;
    q->n = q->scanned = k;
    q->spent = 0;
    q->nruns = 0;
    if (k) {
        q->runs[0] = (struct fk_ring_run){ 0, k };
        q->nruns = 1;
    }
    struct fk_buf swap = q->buf;
    q->buf = q->spare;
    q->spare = swap;
}

/* A record's bytes on their way into the cache, up to PREFETCH_MAX. */
#define PREFETCH_MAX (16u << 10)
static inline void prefetch_rec(const struct fk_ringq *q, const struct fk_ring_rec *r)
{
    const char *p = r->ref ? (const char *)r->ref : q->buf.data + r->off;
    size_t n = r->len < PREFETCH_MAX ? r->len : PREFETCH_MAX;
    for (size_t off = 0; off < n; off += 64)
        __builtin_prefetch(p + off);
}

void fk_ringq_deliver(struct fk_ringq *q, uint64_t cutoff,
                      void (*fn)(void *ctx, const union perf_event *ev), void *ctx)
{
    split_runs(q);
    size_t hn = heap_build(q);
    while (hn) {
        struct fk_ring_run *run = &q->runs[q->heap[0]];
        if (q->v[run->at].time > cutoff)
            break;
        /* the top run goes on while it stays ahead of the next run's head
         * (records of one CPU come in stretches) */
        const struct fk_ring_rec *next = NULL;
        if (hn > 1)
            next = &q->v[q->runs[q->heap[hn > 2 && run_before(q, q->heap[2], q->heap[1]) ? 2 : 1]].at];
        do {
            const struct fk_ring_rec *r = &q->v[run->at++];
            /* the record most likely handed on after this one is fetched
             * while this one is handled: a sample is read nearly whole
             * (decode, the unwinder's walk over its stack copy), and live
             * it is tens of ms old, out of every cache */
            const struct fk_ring_rec *after = run->at < run->end ? &q->v[run->at] : next;
            if (after)
                prefetch_rec(q, after);
            if (r->ref) {
                fn(ctx, r->ref);
                --*r->hold;
            } else {
                q->spent += (r->len + 7u) & ~(size_t)7;
                fn(ctx, (const union perf_event *)(q->buf.data + r->off));
            }
        } while (run->at < run->end && q->v[run->at].time <= cutoff &&
                 (!next || rec_before(&q->v[run->at], next)));
        if (run->at == run->end)
            q->heap[0] = q->heap[--hn];
        heap_down(q, hn, 0);
    }
    /* drop spent runs, keeping their order in v */
    size_t keep = 0, pending = 0;
    for (size_t r = 0; r < q->nruns; r++)
        if (q->runs[r].at < q->runs[r].end) {
            pending += q->runs[r].end - q->runs[r].at;
            q->runs[keep++] = q->runs[r];
        }
    q->nruns = keep;
    if (!pending) {
        q->n = q->scanned = 0;
        q->spent = 0;
        fk_buf_reset(&q->buf);
        return;
    }
    /* the kept records stay in place until the spent ones outweigh them
     * (each record is then copied about once more; the buffer stays under
     * twice what is pending, plus a MiB) or the runs pile up (the heap
     * stays small) */
    if (q->spent > q->buf.len - q->spent + (1u << 20) || q->n - pending > pending + 4096 ||
        q->nruns > 256)
        compact(q, pending);
}

void fk_ringq_free(struct fk_ringq *q)
{
    fk_buf_free(&q->buf);
    fk_buf_free(&q->spare);
    free(q->v);
    free(q->runs);
    free(q->tmp);
    free(q->heap);
    memset(q, 0, sizeof *q);
}
