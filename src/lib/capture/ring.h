/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading the perf rings: records are handed on in time order across
 * CPUs. Records newer than a cutoff wait for the next pass: a record on
 * one CPU may still be in flight when a later one on another CPU was read
 * (an exec's MMAP2 before the samples that follow it).
 *
 * A pass reads every ring without releasing it, hands on what is older
 * than the cutoff where it lies in the ring (most records: no copy), then
 * copies out only what waits for the next pass, and only then gives the
 * space back to the kernel. Copying every record out first was 40 % of
 * flamekit's CPU live (python3.11 stacks, 999 Hz): a memcpy of each
 * stack copy and the page faults of a queue that grew with it. While
 * records cannot be handed on (the start-up /proc scan) the rings are
 * copied out whole, as before, so they do not overflow.
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
 * the decoder (sample.h) reads them in place, as it reads the ring; a
 * record left in a ring is copied before its space is released. The
 * reader does nothing but read: no symbol loading or /proc reads between
 * two rings. */
#ifndef FK_CAPTURE_RING_H
#define FK_CAPTURE_RING_H

#include "capture/sample.h"
#include "util/buf.h"

struct perf_evlist;
struct perf_mmap;
union perf_event;

struct fk_ring_rec {
    uint64_t time;
    uint64_t seq;       /* read order breaks ties */
    const void *ref;    /* where it lies (a ring), until the delivery that
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
    struct perf_mmap **maps;    /* the rings a pass read from */
    size_t capmaps;
    uint64_t seq;
    uint64_t bytes;     /* record bytes read, in total */
    /* Called on each record as it is copied out (benchmarks record the
     * raw ring this way); NULL: none. */
    void (*tap)(void *ctx, const void *rec, size_t len);
    void *tap_ctx;
};

/* Copy every record out of every ring of evlist (their space released at
 * once); f gives their time. For when nothing can be handed on yet. */
void fk_ringq_read(struct fk_ringq *q, struct perf_evlist *evlist, const struct fk_sample_format *f);
/* One pass: read every ring of evlist in place, hand records with time <=
 * cutoff to fn (oldest first, in the ring where they lie), copy out the
 * rest, then release the rings' space. A ring more than half full (of
 * ring_bytes; 0: no such rule) is copied out and released at once. */
void fk_ringq_read_deliver(struct fk_ringq *q, struct perf_evlist *evlist,
                           const struct fk_sample_format *f, size_t ring_bytes, uint64_t cutoff,
                           void (*fn)(void *ctx, const union perf_event *ev), void *ctx);
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
