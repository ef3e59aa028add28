/* SPDX-License-Identifier: GPL-2.0-only */
/* Records handed on in time order across CPUs. Records newer than a
 * cutoff wait for the next delivery: a record on one CPU may still be in
 * flight when a later one on another CPU was read (an exec's MMAP2 before
 * the samples that follow it).
 *
 * Records are pushed by reference where the ring reader (reader.h) copied
 * them, handed on where they lie, and only what waits for the next
 * delivery is copied into the queue (copying every record again, with the
 * page faults of a queue that grew with it, was 40 % of flamekit's CPU
 * live: python3.11 stacks, 999 Hz).
 *
 * What a delivery reads is a few sorted runs (what the reader copied from
 * each ring, what an earlier delivery kept): delivery merges the runs'
 * heads (a small heap) instead of sorting everything, and stops at the
 * cutoff; what it keeps stays where it is (no copy per pass) until the
 * spent space outweighs it. At a switch storm (130,000 records/s, a
 * wake-up per sample) sorting and re-copying the kept records on every
 * pass was a third of flamekit's CPU.
 *
 * Invariants: records are delivered in (time, read order), whatever order
 * they were pushed in (a run that is not sorted is split where it goes
 * back); each exactly once; copies are 8-byte aligned, so the decoder
 * (sample.h) reads them in place; a record pushed by reference is copied
 * before the delivery that read it returns, if it is kept. */
#ifndef FK_CAPTURE_RING_H
#define FK_CAPTURE_RING_H

#include "capture/sample.h"
#include "util/buf.h"

union perf_event;

struct fk_ring_rec {
    uint64_t time;
    uint64_t seq;       /* read order breaks ties */
    const void *ref;    /* where it lies (the reader's copy), until the delivery that
                           read it returns; NULL: in buf at off */
    size_t off;
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
    const struct fk_sample_format *cut_fmt; /* records pushed by reference: cut as kept */
    uint64_t seq;
    uint64_t bytes;     /* record bytes pushed, in total */
    /* Called on each record as it is copied out (benchmarks record the
     * raw ring this way); NULL: none. */
    void (*tap)(void *ctx, const void *rec, size_t len);
    void *tap_ctx;
};

/* Add one record, copied (replay, tests); f gives its time. */
void fk_ringq_push(struct fk_ringq *q, const void *rec, size_t len, const struct fk_sample_format *f);
/* Add one record by reference: rec must stay as it is until the next
 * fk_ringq_deliver returns (which copies it if it keeps it; a sample's
 * stack copy cut to what the kernel filled, by f). */
void fk_ringq_push_ref(struct fk_ringq *q, const void *rec, size_t len,
                       const struct fk_sample_format *f);
/* Hand records with time <= cutoff to fn, oldest first; keep the rest. */
void fk_ringq_deliver(struct fk_ringq *q, uint64_t cutoff,
                      void (*fn)(void *ctx, const union perf_event *ev), void *ctx);
void fk_ringq_free(struct fk_ringq *q);

#endif
