/* SPDX-License-Identifier: GPL-2.0-only */
/* Records handed on in time order across CPUs. Records newer than a
 * cutoff wait for the next delivery: a record on one CPU may still be in
 * flight when a later one on another CPU was read (an exec's MMAP2 before
 * the samples that follow it).
 *
 * Records are pushed by reference where the ring reader (reader.h) copied
 * them and handed on where they lie, also when they wait for a later
 * delivery: each holds a count of its owner's (the reader's chunk), one
 * less when it is handed on, and the owner keeps its bytes until that
 * count is 0. Copying every record again, with the page faults of a
 * queue that grew with it, was 40 % of flamekit's CPU live (python3.11
 * stacks, 999 Hz); copying only the ones that wait (about a third of
 * them) still 4 %.
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
 * (sample.h) reads them in place; a record pushed by reference is read
 * where it lies until it is handed on, and its hold count is lowered
 * right after. */
#ifndef FK_CAPTURE_RING_H
#define FK_CAPTURE_RING_H

#include "capture/sample.h"
#include "util/buf.h"

union perf_event;

struct fk_ring_rec {
    uint64_t time;
    uint64_t seq;       /* read order breaks ties */
    const void *ref;    /* where it lies (the reader's copy); NULL: in buf at off */
    uint32_t *hold;     /* by reference: its owner's count, lowered when handed on */
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
    uint64_t seq;
    uint64_t bytes;     /* record bytes pushed, in total */
    /* Called on each record as it is copied out (benchmarks record the
     * raw ring this way); NULL: none. */
    void (*tap)(void *ctx, const void *rec, size_t len);
    void *tap_ctx;
};

/* Add one record, copied (replay, tests); f gives its time. */
void fk_ringq_push(struct fk_ringq *q, const void *rec, size_t len, const struct fk_sample_format *f);
/* Add one record by reference (8-byte aligned): *hold is raised by one
 * and lowered when the record is handed on; rec must stay as it is until
 * then. */
void fk_ringq_push_ref(struct fk_ringq *q, const void *rec, size_t len,
                       const struct fk_sample_format *f, uint32_t *hold);
/* Hand records with time <= cutoff to fn, oldest first; keep the rest. */
void fk_ringq_deliver(struct fk_ringq *q, uint64_t cutoff,
                      void (*fn)(void *ctx, const union perf_event *ev), void *ctx);
void fk_ringq_free(struct fk_ringq *q);

#endif
