/* SPDX-License-Identifier: GPL-2.0-only */
/* The profiles' hooks (kinds.h): CPU samples at a frequency; faults (any
 * software event or tracepoint) one hit in N, weighted by N and verified
 * against the event's own count (period_check.h). */
#include "profile/kinds.h"
#include "capture/swevent.h"

#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

/* ---- cpu ---------------------------------------------------------- */

static int cpu_event(const struct fk_profile_request *rq, struct fk_event *ev, const char **unit,
                     const char **countname, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    fk_event_cpu_default(ev, rq->freq);
    *unit = "samples";
    *countname = "samples";
    return 0;
}

static char *cpu_title(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    (void)rq;
    (void)res;
    return fk_strdup("CPU Flame Graph");
}

static char *cpu_subtitle(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    (void)rq;
    const struct fk_capture_result *r = &res->cap;
    return fk_asprintf("%s, %s, %s %llu Hz, %.1f s, %llu samples%s", res->host, res->target.desc,
                       res->event.name, (unsigned long long)res->event.freq,
                       (double)r->duration_ns / 1e9, (unsigned long long)r->samples_kept,
                       r->lost ? ", SOME LOST" : "");
}

/* ---- faults ------------------------------------------------------- */

static bool is_page_faults(const struct fk_event *ev)
{
    return ev->type == PERF_TYPE_SOFTWARE &&
           (ev->config == PERF_COUNT_SW_PAGE_FAULTS || ev->config == PERF_COUNT_SW_PAGE_FAULTS_MIN ||
            ev->config == PERF_COUNT_SW_PAGE_FAULTS_MAJ);
}

static int faults_event(const struct fk_profile_request *rq, struct fk_event *ev,
                        const char **unit, const char **countname, char *err, size_t errlen)
{
    struct fk_swevent sw;
    if (!fk_swevent_resolve(rq->event ? rq->event : "page-faults", &sw, err, errlen))
        return FK_EXIT_USAGE;
    memset(ev, 0, sizeof *ev);
    ev->type = sw.type;
    ev->config = sw.config;
    ev->period = rq->period;
    snprintf(ev->name, sizeof ev->name, "%.*s", (int)sizeof ev->name - 1, sw.name);
    *unit = sw.unit;
    *countname = sw.countname;
    return 0;
}

/* One in N, checked: each counter instance (one per fd, one more per
 * child forked under an inherited counter) keeps a remainder below N. */
static void faults_after(const struct fk_profile_request *rq, struct fk_profile_result *res)
{
    const struct fk_capture_result *r = &res->cap;
    bool inherited = rq->target == FK_TARGET_PID || rq->target == FK_TARGET_RUN;
    uint64_t instances = r->counters + (inherited ? r->forks * (uint64_t)r->ncpus : 0);
    struct fk_period_in in = {
        .event = res->event.name, .unit = res->unit, .period = res->event.period,
        .samples = r->samples, .lost = r->lost > r->lost_samples ? r->lost : r->lost_samples,
        .throttles = r->throttled,
        .count = r->event_count, .have_count = true, .instances = instances,
    };
    fk_period_verify(&in, &res->check);
    res->checked = true;
}

static bool faults_ok(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    return !rq->strict || !res->checked || res->check.verdict == FK_PERIOD_OK;
}

static char *faults_title(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    (void)rq;
    return fk_asprintf("%s: %s", is_page_faults(&res->event) ? "Page faults" : res->event.name,
                       res->target.scope);
}

static char *faults_subtitle(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    (void)rq;
    return fk_strdup(res->check.summary);
}

/* CGROUP: samples lost host-wide may have been the cgroup's: its estimate
 * is the folded total, at most that plus every lost sample. */
static uint64_t target_estimate_max(const struct fk_profile_result *res)
{
    const struct fk_capture_result *r = &res->cap;
    uint64_t lost = r->lost > r->lost_samples ? r->lost : r->lost_samples;
    uint64_t k = res->event.period ? res->event.period : 1;
    return r->stacks.total + (lost > (UINT64_MAX - r->stacks.total) / k
                              ? UINT64_MAX - r->stacks.total : lost * k);
}

static json_t *faults_meta(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    (void)rq;
    const struct fk_capture_result *r = &res->cap;
    const struct fk_period_result *pr = &res->check;
    bool inherited = rq->target == FK_TARGET_PID || rq->target == FK_TARGET_RUN;
    json_t *f = json_object();
    json_object_set_new(f, "verdict", json_string(fk_period_verdict_name(pr->verdict)));
    json_object_set_new(f, "summary", json_string(pr->summary));
    if (pr->warning[0])
        json_object_set_new(f, "warning", json_string(pr->warning));
    json_object_set_new(f, "period", json_integer((json_int_t)res->event.period));
    json_object_set_new(f, "counted", json_integer((json_int_t)r->event_count));
    json_object_set_new(f, "estimate", json_integer((json_int_t)pr->estimate));
    json_object_set_new(f, "estimate_of_target", json_integer((json_int_t)r->stacks.total));
    json_object_set_new(f, "counters", json_integer((json_int_t)(r->counters +
                        (inherited ? r->forks * (uint64_t)r->ncpus : 0))));
    json_object_set_new(f, "forks", json_integer((json_int_t)r->forks));
    json_object_set_new(f, "accepted_estimate_range",
                        json_pack("[I, I]", (json_int_t)pr->lo, (json_int_t)pr->hi));
    bool host_wide = rq->target == FK_TARGET_USER || rq->target == FK_TARGET_CGROUP;
    json_object_set_new(f, "checked_on", json_string(host_wide ? "host" : "target"));
    if (r->have_target_count) {
        json_object_set_new(f, "target_count", json_integer((json_int_t)r->target_count));
        json_object_set_new(f, "estimate_of_target_max",
                            json_integer((json_int_t)target_estimate_max(res)));
    }
    json_object_set_new(f, "sample_period_in_sample_type", json_false());
    json_object_set_new(f, "unit", json_string(res->unit));
    return f;
}

static void faults_summary(FILE *out, const struct fk_profile_request *rq,
                           const struct fk_profile_result *res)
{
    const struct fk_capture_result *r = &res->cap;
    fprintf(out, "  one in N checked: %s\n", res->check.summary);
    if (rq->target == FK_TARGET_USER || rq->target == FK_TARGET_CGROUP)
        fprintf(out, "  %llu of the samples belong to %s (%llu %s); the check covers the host\n",
                (unsigned long long)r->samples_kept, res->target.scope,
                (unsigned long long)r->stacks.total, res->unit);
    if (r->have_target_count) {
        double c = r->target_count ? (double)r->target_count : 1.0;
        uint64_t max = target_estimate_max(res);
        fprintf(out, "  the cgroup's own count: %llu %s (its samples estimate %.1f%% of it",
                (unsigned long long)r->target_count, res->unit, 100.0 * (double)r->stacks.total / c);
        if (max > r->stacks.total)
            fprintf(out, "; up to %.1f%% with the samples lost host-wide", 100.0 * (double)max / c);
        fprintf(out, ")\n");
    }
}

/* ---- table -------------------------------------------------------- */

static const struct fk_profile_ops ops[] = {
    [FK_PROFILE_CPU] = {
        .name = "cpu", .colors = "hot", .event = cpu_event, .title = cpu_title,
        .subtitle = cpu_subtitle,
    },
    [FK_PROFILE_FAULTS] = {
        .name = "faults", .colors = "mem", .event = faults_event, .after = faults_after,
        .ok = faults_ok, .title = faults_title, .subtitle = faults_subtitle,
        .meta = faults_meta, .summary = faults_summary,
    },
};

const struct fk_profile_ops *fk_profile_ops(enum fk_profile_kind kind)
{
    return &ops[kind];
}
