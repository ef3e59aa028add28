/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading the perf rings in time order (see ring.h). */
#include "capture/ring.h"

#include <linux/perf_event.h>
#include <perf/evlist.h>
#include <perf/event.h>
#include <perf/mmap.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t zero_pad;

void fk_ringq_push(struct fk_ringq *q, const void *rec, size_t len, const struct fk_sample_format *f)
{
    q->v = fk_grow(q->v, &q->cap, q->n + 1, sizeof *q->v);
    struct fk_ring_rec *r = &q->v[q->n++];
    r->time = fk_record_time(f, rec, len);
    r->seq = q->seq++;
    r->off = q->buf.len;
    r->len = (uint32_t)len;
    q->bytes += len;
    fk_buf_add(&q->buf, rec, len);
    if (len % 8)
        fk_buf_add(&q->buf, &zero_pad, 8 - len % 8);   /* the next copy stays aligned */
    if (q->tap)     /* the aligned copy: decoders read it in place */
        q->tap(q->tap_ctx, q->buf.data + r->off, len);
}

void fk_ringq_read(struct fk_ringq *q, struct perf_evlist *evlist, const struct fk_sample_format *f)
{
    struct perf_mmap *map;
    perf_evlist__for_each_mmap(evlist, map, false) {
        if (perf_mmap__read_init(map) < 0)
            continue;
        union perf_event *ev;
        while ((ev = perf_mmap__read_event(map)) != NULL) {
            fk_ringq_push(q, ev, ev->header.size, f);
            perf_mmap__consume(map);
        }
        /* No perf_mmap__read_done: it sets the read position to the head
         * as it is now, past any record the kernel wrote since the last
         * perf_mmap__read_event saw the ring empty; those were skipped,
         * counted by the event but lost without a trace (a few samples a
         * capture when the reader is slow, failing the one-in-N check).
         * It is for overwrite rings; ours already stand where they read. */
    }
}

static int cmp_rec(const void *a, const void *b)
{
    const struct fk_ring_rec *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void fk_ringq_deliver(struct fk_ringq *q, uint64_t cutoff,
                      void (*fn)(void *ctx, const union perf_event *ev), void *ctx)
{
    if (!q->n)
        return;
    qsort(q->v, q->n, sizeof *q->v, cmp_rec);
    size_t i = 0;
    for (; i < q->n && q->v[i].time <= cutoff; i++)
        fn(ctx, (const union perf_event *)(q->buf.data + q->v[i].off));
    /* the rest moves to the front of the spare buffer, which becomes buf */
    fk_buf_reset(&q->spare);
    size_t keep = 0;
    for (; i < q->n; i++) {
        struct fk_ring_rec r = q->v[i];
        size_t off = q->spare.len;
        size_t padded = (r.len + 7u) & ~(size_t)7;
        fk_buf_add(&q->spare, q->buf.data + r.off, padded);
        r.off = off;
        q->v[keep++] = r;
    }
    q->n = keep;
    struct fk_buf swap = q->buf;
    q->buf = q->spare;
    q->spare = swap;
}

void fk_ringq_free(struct fk_ringq *q)
{
    fk_buf_free(&q->buf);
    fk_buf_free(&q->spare);
    free(q->v);
    memset(q, 0, sizeof *q);
}
