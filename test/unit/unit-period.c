/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for the one-in-N verification arithmetic. */
#include "unit.h"
#include "capture/period_check.h"

#include <linux/perf_event.h>

static struct fk_period_result check(uint64_t k, uint64_t samples, uint64_t count,
                                     uint64_t inst, uint64_t lost, uint64_t throttles)
{
    struct fk_period_in in = {
        .event = "page-faults", .unit = "faults", .period = k, .samples = samples,
        .count = count, .have_count = true, .instances = inst, .lost = lost,
        .throttles = throttles,
    };
    struct fk_period_result r;
    fk_period_verify(&in, &r);
    return r;
}

int main(void)
{
    unit_name = "unit-period";
    struct fk_period_result r;

    r = check(100, 206, 20667, 2, 0, 0);
    UNIT_CHECK("floor(C/K) samples is ok", r.verdict == FK_PERIOD_OK && r.estimate == 20600);
    UNIT_CHECK("summary names samples, estimate, period and count",
               strstr(r.summary, "206 samples ≈ 20600 faults (1 in 100); counted 20667") != NULL);
    UNIT_CHECK("no warning when ok", r.warning[0] == '\0');
    r = check(100, 205, 20667, 2, 0, 0);
    UNIT_CHECK("two instances may each keep 99", r.verdict == FK_PERIOD_OK);
    r = check(100, 203, 20667, 2, 0, 0);
    UNIT_CHECK("more missing than remainders: wrong", r.verdict == FK_PERIOD_WRONG && r.warning[0]);
    r = check(100, 204, 20667, 2, 0, 0);
    UNIT_CHECK("one below the remainders' reach: wrong", r.verdict == FK_PERIOD_WRONG);
    r = check(100, 204, 20667, 2, 1, 0);
    UNIT_CHECK("a lost record explains one sample", r.verdict == FK_PERIOD_OK);
    /* samples the kernel counted but never wrote (seen in the counts the
     * samples carry) are missing like lost ones, and said */
    struct fk_period_in u = {
        .event = "page-faults", .unit = "faults", .period = 100, .samples = 1701,
        .count = 170598, .have_count = true, .instances = 2, .unwritten = 3,
    };
    fk_period_verify(&u, &r);
    UNIT_CHECK("unwritten samples explain a shortfall", r.verdict == FK_PERIOD_OK);
    UNIT_CHECK("unwritten samples are said in the summary",
               strstr(r.summary, "3 samples the kernel counted but never wrote") != NULL);
    u.unwritten = 0;
    fk_period_verify(&u, &r);
    UNIT_CHECK("the same shortfall unexplained: wrong", r.verdict == FK_PERIOD_WRONG &&
               strstr(r.warning, "0 unwritten samples") && !strstr(r.summary, "never wrote"));
    u.unwritten = 2;
    fk_period_verify(&u, &r);
    UNIT_CHECK("fewer unwritten than missing: still wrong", r.verdict == FK_PERIOD_WRONG);
    r = check(100, 100, 20667, 2, 0, 1);
    UNIT_CHECK("throttled: only the upper bound", r.verdict == FK_PERIOD_OK);
    r = check(100, 20667, 20667, 2, 0, 0);
    UNIT_CHECK("one sample per hit is the gotcha", r.verdict == FK_PERIOD_EVERY_HIT);
    UNIT_CHECK("the gotcha warning is loud", strstr(r.warning, "WARNING") && strstr(r.warning, "NOT honoured"));
    r = check(100, 300, 20667, 2, 0, 0);
    UNIT_CHECK("too many but not every hit", r.verdict == FK_PERIOD_TOO_MANY);
    r = check(100, 207, 20667, 2, 0, 0);
    UNIT_CHECK("one sample above floor(C/K) is within the slack", r.verdict == FK_PERIOD_OK);
    r = check(100, 0, 0, 2, 0, 0);
    UNIT_CHECK("nothing counted, nothing sampled", r.verdict == FK_PERIOD_OK);
    r = check(100, 0, 99, 1, 0, 0);
    UNIT_CHECK("fewer hits than one period: too few to verify, said",
               r.verdict == FK_PERIOD_TOO_FEW && strstr(r.warning, "too few to verify 1 in 100") &&
               strcmp(fk_period_verdict_name(r.verdict), "too-few-samples") == 0);
    UNIT_CHECK("fewer hits than one period: no 0.0% share, says why",
               !strstr(r.summary, "%") && strstr(r.summary, "counted 99, below one period per counter"));
    r = check(1, 500, 500, 1, 0, 0);
    UNIT_CHECK("period 1: every hit is right", r.verdict == FK_PERIOD_OK);
    r = check(100, 0, 5000, 1000, 0, 0);
    UNIT_CHECK("many instances: lower bound saturates at 0, too few to verify",
               r.verdict == FK_PERIOD_TOO_FEW && r.lo == 0);
    /* a short task's few faults against a tree's many: the same counters,
     * one can be checked and fail, the other cannot */
    r = check(100, 0, 198, 2, 0, 0);
    UNIT_CHECK("two counters can hold 198 below a period each: too few", r.verdict == FK_PERIOD_TOO_FEW);
    r = check(100, 0, 199, 2, 0, 0);
    UNIT_CHECK("199 on two counters: one sample was due, none came: wrong",
               r.verdict == FK_PERIOD_WRONG && strcmp(fk_period_verdict_name(r.verdict), "wrong") == 0);
    r = check(100, 12, 45841, 2, 0, 0);
    UNIT_CHECK("a tree's 45,841 faults for 12 samples: wrong", r.verdict == FK_PERIOD_WRONG);
    r = check(100, 1, 150, 2, 0, 0);
    UNIT_CHECK("a sample within a too-few range: still too few", r.verdict == FK_PERIOD_TOO_FEW);
    r = check(100, 0, 150, 2, 0, 1);
    UNIT_CHECK("throttled: checked from above only, not too few", r.verdict == FK_PERIOD_OK);
    r = check(100, 0, 150, 2, 3, 0);
    UNIT_CHECK("too few, lost records or not", r.verdict == FK_PERIOD_TOO_FEW);
    r = check(100, 0, 500, 2, 4, 0);
    UNIT_CHECK("a count losses explain away: ok, with its share", r.verdict == FK_PERIOD_OK &&
               strstr(r.summary, "(0.0%)"));
    r = check(UINT64_MAX, 3, 10, 1, 0, 0);
    UNIT_CHECK("huge products saturate", r.estimate == UINT64_MAX && r.verdict != FK_PERIOD_OK);

    struct fk_period_in in = { .period = 100, .samples = 5 };
    fk_period_verify(&in, &r);
    UNIT_CHECK("no count: unchecked, with a warning", r.verdict == FK_PERIOD_UNCHECKED && r.warning[0]);

    struct perf_event_attr a = { .sample_period = 100, .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD };
    UNIT_CHECK("PERIOD removed for fixed periods", fk_period_fix_attr(&a) && a.sample_type == PERF_SAMPLE_IP);
    UNIT_CHECK("second fix is a no-op", !fk_period_fix_attr(&a));
    struct perf_event_attr f = { .freq = 1, .sample_freq = 99, .sample_type = PERF_SAMPLE_PERIOD };
    UNIT_CHECK("frequency mode keeps PERIOD", !fk_period_fix_attr(&f) && (f.sample_type & PERF_SAMPLE_PERIOD));
    return UNIT_END();
}
