/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading the perf rings: every record is copied out of every CPU's ring
 * (so the kernel can reuse the space at once), then handed on in time
 * order across CPUs. Records newer than a cutoff wait for the next pass:
 * a record on one CPU may still be in flight when a later one on another
 * CPU was read (an exec's MMAP2 before the samples that follow it).
 *
 * Each ring is written in time order by its CPU, so the queue is a few
 * sorted runs (what a pass read from each ring, what an earlier delivery
 * kept): delivery merges the runs' heads (a small heap) instead of sorting
 * everything, and stops at the cutoff; what it keeps stays where it is
 * (no copy per pass) until the spent space outweighs it. At a switch storm
 * (130,000 records/s, a wake-up per sample) sorting and re-copying the
 * kept records on every pass was a third of flamekit's CPU.
 *
 * Invariants: records are delivered in (time, read order), whatever order
 * they were pushed in (a run that is not sorted is split where it goes
 * back); each exactly once; copies are 8-byte aligned, as in the ring, so
 * the decoder (sample.h) reads them in place. The reader does nothing but
 * copy: no symbol loading or /proc reads between two rings. */
#ifndef FK_CAPTURE_RING_H
#define FK_CAPTURE_RING_H

#include "capture/sample.h"
#include "util/buf.h"

struct perf_evlist;
union perf_event;

struct fk_ring_rec {
    uint64_t time;
    uint64_t seq;       /* read order breaks ties */
    size_t off;         /* in buf */
    uint32_t len;
};

/* A sorted run of pending records: v[at, end). */
struct fk_ring_run {
    size_t at, end;
};

struct fk_ringq {
    struct fk_buf buf, spare;
    struct fk_ring_rec *v;      /* v[0, n): pushed; pending ones are in runs */
    size_t n, cap;
    size_t scanned;             /* v[scanned, n): pushed since the last delivery */
    size_t spent;               /* bytes of buf delivered (not yet reused) */
    struct fk_ring_run *runs;
    size_t nruns, capruns;
    struct fk_ring_rec *tmp;    /* the merged order, when compacting */
    size_t captmp;
    size_t *heap;               /* runs by their head record */
    size_t capheap;
    unsigned char *cutbuf;      /* a sample with its stack copy cut */
    uint64_t seq;
    uint64_t bytes;     /* record bytes read, in total */
    /* Called on each record as it is copied out (benchmarks record the
     * raw ring this way); NULL: none. */
    void (*tap)(void *ctx, const void *rec, size_t len);
    void *tap_ctx;
};

/* Copy every record out of every ring of evlist; f gives their time. */
void fk_ringq_read(struct fk_ringq *q, struct perf_evlist *evlist, const struct fk_sample_format *f);
/* Add one record (replay, tests); f gives its time. */
void fk_ringq_push(struct fk_ringq *q, const void *rec, size_t len, const struct fk_sample_format *f);
/* Hand records with time <= cutoff to fn, oldest first; keep the rest. */
void fk_ringq_deliver(struct fk_ringq *q, uint64_t cutoff,
                      void (*fn)(void *ctx, const union perf_event *ev), void *ctx);
void fk_ringq_free(struct fk_ringq *q);

#endif
