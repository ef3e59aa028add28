/* SPDX-License-Identifier: GPL-2.0-only */
/* One-in-N sampling, verified: see period_check.h for the arithmetic. */
#include "capture/period_check.h"

#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

const char *fk_period_verdict_name(enum fk_period_verdict v)
{
    switch (v) {
    case FK_PERIOD_OK: return "ok";
    case FK_PERIOD_EVERY_HIT: return "every-hit";
    case FK_PERIOD_TOO_MANY: return "too-many-samples";
    case FK_PERIOD_WRONG: return "wrong";
    case FK_PERIOD_TOO_FEW: return "too-few-samples";
    case FK_PERIOD_UNCHECKED: return "unchecked";
    }
    return "?";
}

void fk_period_verify(const struct fk_period_in *in, struct fk_period_result *out)
{
    uint64_t k = in->period ? in->period : 1;
    uint64_t inst = in->instances ? in->instances : 1;
    const char *ev = in->event ? in->event : "event";
    const char *unit = in->unit ? in->unit : "events";

    memset(out, 0, sizeof *out);
    out->estimate = sat_mul(in->samples, k);
    out->one_in = in->samples ? (double)in->count / (double)in->samples : 0;
    if (!in->have_count) {
        out->verdict = FK_PERIOD_UNCHECKED;
        snprintf(out->summary, sizeof out->summary,
                 "%" PRIu64 " samples ≈ %" PRIu64 " %s (1 in %" PRIu64 "); count not read",
                 in->samples, out->estimate, unit, k);
        snprintf(out->warning, sizeof out->warning,
                 "%s: could not read the event's own count; 1 in %" PRIu64 " is not verified", ev, k);
        return;
    }
    out->hi = in->count + k;
    out->lo = in->throttles ? 0
            : sat_sub(sat_sub(in->count, sat_mul(inst, k - 1)),
                      sat_mul(in->lost > UINT64_MAX - in->unwritten ? UINT64_MAX
                              : in->lost + in->unwritten, k));
    /* A share of a count the remainders can swallow whole ("48 (0.0%)")
     * reads like a failure: say why there is nothing to compare. */
    bool remainders_hold_all = in->count && !in->throttles && in->count <= sat_mul(inst, k - 1);
    char pct[96] = "";
    if (remainders_hold_all)
        snprintf(pct, sizeof pct, ", below one period per counter: too few to compare");
    else if (in->count)
        snprintf(pct, sizeof pct, " (%.1f%%)", 100.0 * (double)out->estimate / (double)in->count);
    char unwritten[96] = "";
    if (in->unwritten)
        snprintf(unwritten, sizeof unwritten, "; %" PRIu64 " sample%s the kernel counted but "
                 "never wrote", in->unwritten, in->unwritten == 1 ? "" : "s");
    snprintf(out->summary, sizeof out->summary,
             "%" PRIu64 " samples ≈ %" PRIu64 " %s (1 in %" PRIu64 "); counted %" PRIu64 "%s%s",
             in->samples, out->estimate, unit, k, in->count, pct, unwritten);

    if (out->estimate >= out->lo && out->estimate <= out->hi) {
        /* within range, but a range from 0 that the remainders alone
         * make proves nothing */
        out->verdict = remainders_hold_all ? FK_PERIOD_TOO_FEW : FK_PERIOD_OK;
        if (remainders_hold_all)
            snprintf(out->warning, sizeof out->warning,
                     "%s: %" PRIu64 " %s counted, which %" PRIu64 " counter%s can hold "
                     "below one period each: too few to verify 1 in %" PRIu64
                     " (verdict too-few-samples)",
                     ev, in->count, unit, inst, inst == 1 ? "" : "s", k);
        return;
    }
    if (out->estimate > out->hi) {
        /* Near one sample per hit: the kernel ignored the period. */
        bool every = k > 1 && in->samples * 2 > in->count;
        out->verdict = every ? FK_PERIOD_EVERY_HIT : FK_PERIOD_TOO_MANY;
        if (every)
            snprintf(out->warning, sizeof out->warning,
                     "WARNING: %s: %" PRIu64 " samples for %" PRIu64 " counted %s: the period of %"
                     PRIu64 " was NOT honoured, every hit became a sample (PERF_SAMPLE_PERIOD "
                     "in sample_type?); the graph overstates counts %" PRIu64 "-fold",
                     ev, in->samples, in->count, unit, k, k);
        else
            snprintf(out->warning, sizeof out->warning,
                     "WARNING: %s: %" PRIu64 " samples x %" PRIu64 " = %" PRIu64
                     " exceeds the counted %" PRIu64 " %s: sampling is not 1 in %" PRIu64
                     " (observed 1 in %.1f)",
                     ev, in->samples, k, out->estimate, in->count, unit, k, out->one_in);
        return;
    }
    out->verdict = FK_PERIOD_WRONG;
    snprintf(out->warning, sizeof out->warning,
             "WARNING: %s: %" PRIu64 " samples x %" PRIu64 " = %" PRIu64 " is below %" PRIu64
             " (counted %" PRIu64 " less remainders of %" PRIu64 " counters, %" PRIu64
             " lost and %" PRIu64 " unwritten samples): samples went missing",
             ev, in->samples, k, out->estimate, out->lo, in->count, inst, in->lost, in->unwritten);
}

bool fk_period_fix_attr(struct perf_event_attr *attr)
{
    if (attr->freq || attr->sample_period <= 1 || !(attr->sample_type & PERF_SAMPLE_PERIOD))
        return false;
    attr->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
    return true;
}
