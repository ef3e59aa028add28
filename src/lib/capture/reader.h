/* SPDX-License-Identifier: GPL-2.0-only */
/* The ring reader: a thread of its own that only copies records out of
 * the perf rings and gives their space back at once, so that draining
 * never waits on what the engine's thread does with the records (loading
 * symbols and unwind tables from disk, unwinding). On a host of 200
 * binaries with the page cache cold, the engine's thread spent seconds
 * reading their symbols while the rings it alone drained overflowed: 25 to
 * 53 % of the records lost. The engine's thread takes the copies in
 * spans of chunks (fk_reader_take), hands the records on in time order
 * where they lie (ring.h: no second copy) and gives each chunk back once
 * none of its records waits in the queue any more.
 *
 * Invariants: while the thread runs it is the only one to touch the rings
 * (fk_reader_finish stops it and reads what is left from the caller);
 * a record is copied whole or stays in its ring, 8-byte aligned, a
 * sample's stack copy cut to what the kernel filled; chunks, taken or
 * not, hold at most `limit` bytes (charged to --max-memory by the
 * caller): past it records stay in the rings, where the kernel counts
 * what it then drops (PERF_RECORD_LOST, lost samples), and the pass is
 * counted (fk_reader_stats.full). A chunk's bytes are written once and
 * never moved: a span handed on stays as it is until its chunk is given
 * back, and a chunk is reused only when it is full or drained, given
 * back, and every byte of it was taken. Spans are handed on in the order
 * they were filled. The thread makes no system call but its wait (poll,
 * epoll_wait on the wake fd alone, or clock_nanosleep: fk_reader_opts
 * .poll_ms), the rings' and the hooks' (struct fk_reader_opts.seen,
 * .sample, .pass, .wake). */
#ifndef FK_CAPTURE_READER_H
#define FK_CAPTURE_READER_H

#include "capture/sample.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct perf_evlist;
union perf_event;
struct fk_reader;

/* Records one after another, each 8-byte aligned. */
struct fk_reader_chunk {
    /* the reader's, under its lock */
    struct fk_reader_chunk *next;   /* in the filled list or the pool */
    size_t len, cap;                /* len: bytes handed on so far */
    size_t taken;                   /* [0, taken) was given to the taker */
    size_t slot;                    /* its index in the reader's list of chunks */
    bool listed;                    /* in the filled list */
    bool held;                      /* taken and not given back yet */
    /* the taker's own: the reader never touches them */
    struct fk_reader_chunk *tnext;
    uint32_t pending;               /* records the taker still reads in it */
    bool tlisted;
    _Alignas(8) unsigned char data[];
};

/* Records handed on by one take: data[0, len), in chunk. */
struct fk_reader_span {
    struct fk_reader_chunk *chunk;
    const unsigned char *data;
    size_t len;
};

struct fk_reader_opts {
    const struct fk_sample_format *fmt;     /* stack copies are cut by it */
    /* where threads' stacks end (capture/stackend.h), read as samples are
     * copied, to cut their stack copies there; NULL: none */
    const struct fk_stack_ends *ends;
    size_t limit;           /* bytes of chunks at most (0: 64 MiB) */
    /* Called in the reader's thread on each side-band record (not a
     * sample) as it is copied out, while the process it names may still
     * live; NULL: none. It must not wait on disk. */
    void (*seen)(void *ctx, const union perf_event *ev);
    void *seen_ctx;
    /* Called in the reader's thread on each sample as it is copied out
     * (the copy, its stack cut); NULL: none. With it the kernel's wake-ups
     * (a wake-up per sample) are the tap's: a pass wakes the taker only
     * when the tap asked (FK_READER_TAP_NOW), a ring hung up, the chunks
     * pass a quarter of the limit, or the tap holds something for a
     * sample (FK_READER_TAP_SOON, since the taker last woke) and
     * FK_READER_TAP_WAKE_NS went by since it last did; otherwise the
     * taker takes on its own clock. Returns FK_READER_TAP_* bits. */
    unsigned (*sample)(void *ctx, const union perf_event *ev);
    void *sample_ctx;
    /* Called (with sample_ctx) at the end of a pass in which the tap
     * answered FK_READER_TAP_END, after every ring was read: the
     * FK_READER_TAP_* bits it stands for now (NULL: NOW). A tap's question
     * the pass's later records answered -- a new process's sample read
     * from one ring before its fork record from another -- then wakes no
     * one. */
    unsigned (*sample_end)(void *ctx);
    /* The thread reads the rings at least every poll_ms (0: 50 ms); with
     * a sample tap each such pass counts as a wake-up of the kernel's
     * (for rings that wake no one: struct fk_evkind.poll_ms). Sooner
     * when a pass found a ring more than a quarter full (reader.c,
     * next_timeout): ring_bytes is a ring's data size (0: never sooner).
     * poll_ms > 0 says the rings are read on this clock: the kernel
     * wakes a ring's poller only at each whole ring's bytes written (its
     * watermark), which next_timeout's passes make needless. Without
     * hangups nothing but the wake fd can end the wait early, so the
     * thread waits for the pass's deadline on the wake fd alone
     * (epoll_wait), or sleeps to it (clock_nanosleep) with none, instead
     * of polling every ring's fd: on a 128-CPU host 128 fds and more set
     * up and torn down at each pass, and each watermark wake-up an extra
     * pass that woke the taker too. */
    int poll_ms;
    size_t ring_bytes;
    /* The rings' fds hang up when their tasks are gone (per-task events:
     * fk_reader_hung_up); poll sees it. Per-CPU events never do. */
    bool hangups;
    /* Called in the reader's thread on each record, samples included,
     * before it is copied out (in its ring: read it, do not keep it), in
     * each ring's order; false: it is not copied, only given back to its
     * ring (counted in fk_reader_stats.dropped). NULL: every record is
     * copied. */
    bool (*keep)(void *ctx, const union perf_event *ev);
    void *keep_ctx;
    /* Called in the reader's thread at each pass (then in
     * fk_reader_finish's caller): end false before the rings are read,
     * true after them. For buffers of the caller's own that the reader's
     * thread drains along with the rings (a BPF ring buffer): read them at
     * the start, and hand on records made from them at the end with
     * fk_reader_add. What the kernel wrote to a ring before a record of
     * such a buffer (a sample before the block it begins) is then read in
     * the same pass or an earlier one. NULL: none. */
    void (*pass)(void *ctx, struct fk_reader *r, bool end);
    void *pass_ctx;
    /* With wake: wake_fd (a BPF ring buffer, capture/pygate.h) ends the
     * thread's wait at each of its wake-ups -- edge-triggered, so records
     * written to it without a wake-up wait for the next pass -- and wake,
     * called in the reader's thread before each pass, takes what it
     * holds. NULL: none. */
    void (*wake)(void *ctx);
    void *wake_ctx;
    int wake_fd;
};

/* A sample tap's answers: NOW, wake the taker at this pass's end; END,
 * ask the tap again at the pass's end (sample_end), once the pass's
 * later records were seen; SOON,
 * the tap keeps something for this sample that the taker must see within
 * FK_READER_TAP_WAKE_NS (it hands samples on in time order after ring.h's
 * slack). With neither, a host with no sample the tap reads for (Python
 * on, no Python process) is taken on the taker's own clock, as without
 * the tap: its every pass (50 ms) woke the taker, 20 takes a second for
 * 3.3, each with its fixed cost. */
enum { FK_READER_TAP_NOW = 1u, FK_READER_TAP_SOON = 2u, FK_READER_TAP_END = 4u };
#define FK_READER_TAP_WAKE_NS (50 * 1000000ull)

struct fk_reader_stats {
    uint64_t bytes;         /* record bytes read from the rings */
    uint64_t records;
    uint64_t dropped;       /* records keep turned down */
    uint64_t full;          /* passes that left records in a ring: no room */
    uint64_t peak_bytes;    /* chunk bytes held at most */
    uint64_t ring_peak_bytes;   /* the most bytes one pass read from one ring */
    uint64_t passes;        /* passes over the rings (the thread's, finish's) */
    uint64_t soon;          /* passes that came sooner than poll_ms (a ring
                             * was found more than a quarter full) */
    uint64_t gap_peak_ns;   /* the longest time from one pass's start to the
                             * next's (the thread starved: losses follow) */
};

struct fk_reader;

/* Start the thread on the rings of evlist (mapped; enabled or not).
 * NULL with *err (an errno) when no thread can be made. */
struct fk_reader *fk_reader_start(struct perf_evlist *evlist, const struct fk_reader_opts *o,
                                  int *err);
/* The records copied since the last take, as *n spans oldest first (an
 * array of the reader's, valid until the next take), after waiting up to
 * timeout_ms for the kernel to wake the reader (a ring's watermark, a
 * sample's wake-up) or for the untaken bytes to pass a quarter of the
 * limit. *upto_ns: when the last pass they hold began (CLOCK_MONOTONIC,
 * the records' clock): a record older than that by the ring.h slack is in
 * them or in an earlier take. Every chunk a span lies in is the taker's
 * until it gives it back (a chunk may come again in a later take: give
 * it back once). */
const struct fk_reader_span *fk_reader_take(struct fk_reader *r, int timeout_ms,
                                            uint64_t *upto_ns, size_t *n);
/* The taker reads nothing more in chunk (until a later take hands on
 * more of it). */
void fk_reader_give_back(struct fk_reader *r, struct fk_reader_chunk *chunk);
/* Every ring's fd hung up (a per-task target's tasks are gone). */
bool fk_reader_hung_up(struct fk_reader *r);
/* From the pass hook only (end true): a record of the caller's making
 * (8-byte aligned, header.size bytes, a trailer laid out as the rings'
 * records are: fk_sample_id_write) handed on with the rings' records, in
 * time order with them. false: no room under the limit (counted in
 * fk_reader_stats.full). */
bool fk_reader_add(struct fk_reader *r, const union perf_event *ev);
/* Stop the thread, then read what is left in the rings from the caller
 * (the events disabled first); fk_reader_take then returns it all. */
void fk_reader_finish(struct fk_reader *r);
/* Chunk bytes held now (taken or not). */
size_t fk_reader_bytes(struct fk_reader *r);
void fk_reader_stats(struct fk_reader *r, struct fk_reader_stats *out);
/* Stops the thread if it runs; frees every chunk (taken ones given back). */
void fk_reader_free(struct fk_reader *r);

#endif
