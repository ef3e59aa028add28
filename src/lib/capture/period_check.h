/* SPDX-License-Identifier: GPL-2.0-only */
/* One-in-N sampling, verified.
 *
 * With a fixed sample_period K (attr.freq = 0) a software or tracepoint
 * event takes a sample each time its counter crosses a multiple of K, so a
 * sample stands for K events and the folded weight of a sample is K.  The
 * kernel's trap (the talk's "one in N did not work"): if PERF_SAMPLE_PERIOD
 * is in sample_type, perf_swevent_event() makes *every* hit a sample.  So
 * fixed-period captures leave PERIOD out, and after the capture compare the
 * estimate samples x K with the event's own count C, read after disabling.
 *
 * The arithmetic is deterministic, not statistical: each counter instance i
 * (one per fd, plus one per inherited child copy) takes floor(C_i / K)
 * samples, so with I instances
 *     C - I*(K-1)  <=  samples * K  <=  C
 * minus K per sample the ring dropped (PERF_RECORD_LOST) and per sample the
 * kernel counted but never wrote, without a trace (seen in the counts the
 * samples carry: capture.h, samples_unwritten).  Throttling drops
 * samples without a count, so a throttled capture is only checked from
 * above.  We accept one period of slack above C (an event in flight while
 * the counter was read). */
#ifndef FK_PERIOD_CHECK_H
#define FK_PERIOD_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct perf_event_attr;

struct fk_period_in {
    const char *event;      /* name for messages, e.g. "page-faults" */
    const char *unit;       /* what one hit is, plural: "faults", "events" */
    uint64_t period;        /* the fixed sample_period K (>= 1) */
    uint64_t samples;       /* sample records of this event read from the rings */
    uint64_t lost;          /* records the kernel dropped (all kinds: conservative) */
    uint64_t throttles;     /* PERF_RECORD_THROTTLE records seen */
    uint64_t unwritten;     /* samples counted but never written, seen in the samples' counts */
    uint64_t count;         /* the event's own counted total */
    bool have_count;        /* false: the count could not be read */
    uint64_t instances;     /* counters, each keeping a remainder < K; 0 = 1 */
};

/* Whether a check could fail is part of the answer: a count the
 * counters' remainders can hold whole (a short task: 40 faults at 1 in
 * 100) is consistent with any estimate from 0 up, so it is not "ok" but
 * "too-few-samples" -- nothing to compare -- while an estimate below what
 * the remainders and losses explain is "wrong": samples went missing. */
enum fk_period_verdict {
    FK_PERIOD_OK,           /* estimate within [lo, hi], lo > 0 (or throttled) */
    FK_PERIOD_EVERY_HIT,    /* about one sample per event: period ignored */
    FK_PERIOD_TOO_MANY,     /* more samples than the count allows */
    FK_PERIOD_WRONG,        /* fewer than the remainders and losses explain */
    FK_PERIOD_TOO_FEW,      /* count <= instances x (K-1): nothing to compare */
    FK_PERIOD_UNCHECKED,    /* no count to check against */
};

struct fk_period_result {
    enum fk_period_verdict verdict;
    uint64_t estimate;      /* samples * K: the folded total */
    uint64_t lo, hi;        /* accepted range for the estimate */
    double one_in;          /* observed: count / samples (0 without samples) */
    char summary[256];      /* "206 samples ≈ 20600 faults (1 in 100); counted 20667 (99.7%)" */
    char warning[768];      /* empty when the verdict is OK */
};

void fk_period_verify(const struct fk_period_in *in, struct fk_period_result *out);
const char *fk_period_verdict_name(enum fk_period_verdict v);

/* For fixed-period sampling (freq = 0, period > 1) remove PERF_SAMPLE_PERIOD
 * from sample_type; returns true if it was there.  A no-op otherwise. */
bool fk_period_fix_attr(struct perf_event_attr *attr);

#endif
