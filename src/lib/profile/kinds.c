/* SPDX-License-Identifier: GPL-2.0-only */
/* The profiles' hooks (kinds.h): CPU samples at a frequency; faults (any
 * software event or tracepoint) one hit in N, weighted by N and verified
 * against the event's own count (period_check.h). */
#include "profile/kinds.h"
#include "capture/swevent.h"
#include "engine/evkind.h"

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

/* One in N, checked on the whole target: each counter opened (one per
 * CPU, or per task and CPU) keeps a remainder below N. Inherited per-task
 * counters also make a copy per child, each starting from zero: what
 * those copies never reached is samples the capture missed (a tree of
 * short children is never sampled), not slack, and the check says so. */
static void faults_after(const struct fk_profile_request *rq, struct fk_profile_result *res)
{
    (void)rq;
    const struct fk_capture_result *r = &res->cap;
    uint64_t instances = r->counters;
    struct fk_period_in in = {
        .event = res->event.name, .unit = res->unit, .period = res->event.period,
        .samples = r->samples, .lost = r->lost > r->lost_samples ? r->lost : r->lost_samples,
        .throttles = r->throttled, .unwritten = r->samples_unwritten,
        .count = r->event_count, .have_count = true, .instances = instances,
    };
    fk_period_verify(&in, &res->check);
    res->checked = true;
    struct fk_period_result *pr = &res->check;
    if (pr->verdict == FK_PERIOD_WRONG && r->tree_mode && !r->tree_cgroup && r->forks) {
        size_t len = strlen(pr->warning);
        snprintf(pr->warning + len, sizeof pr->warning - len,
                 "; on inherited per-task events (%s) each of the %llu children counted from "
                 "zero: those that ran less than %llu %s were never sampled",
                 r->tree_note, (unsigned long long)r->forks, (unsigned long long)in.period,
                 in.unit ? in.unit : "events");
    }
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
    json_t *f = json_object();
    json_object_set_new(f, "verdict", json_string(fk_period_verdict_name(pr->verdict)));
    json_object_set_new(f, "summary", json_string(pr->summary));
    if (pr->warning[0])
        json_object_set_new(f, "warning", json_string(pr->warning));
    json_object_set_new(f, "period", json_integer((json_int_t)res->event.period));
    json_object_set_new(f, "counted", json_integer((json_int_t)r->event_count));
    json_object_set_new(f, "estimate", json_integer((json_int_t)pr->estimate));
    json_object_set_new(f, "estimate_of_target", json_integer((json_int_t)r->stacks.total));
    json_object_set_new(f, "counters", json_integer((json_int_t)r->counters));
    if (r->unwritten_checked)
        json_object_set_new(f, "unwritten_samples", json_integer((json_int_t)r->samples_unwritten));
    json_object_set_new(f, "forks", json_integer((json_int_t)r->forks));
    json_object_set_new(f, "accepted_estimate_range",
                        json_pack("[I, I]", (json_int_t)pr->lo, (json_int_t)pr->hi));
    bool host_wide = rq->target == FK_TARGET_USER || rq->target == FK_TARGET_CGROUP;
    /* a pid followed in its cgroup: the counters count the whole cgroup */
    json_object_set_new(f, "checked_on", json_string(host_wide ? "host"
                                                     : r->tree_followed ? "cgroup" : "target"));
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
    else if (r->tree_followed)
        fprintf(out, "  %llu of the samples belong to the target's processes (%llu %s); the "
                "check covers its cgroup\n", (unsigned long long)r->samples_kept,
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

/* ---- offcpu ------------------------------------------------------- */

static int offcpu_event(const struct fk_profile_request *rq, struct fk_event *ev,
                        const char **unit, const char **countname, char *err, size_t errlen)
{
    const char *lift = rq->unsafe_limits ? "" : "; add --unsafe-limits to go beyond";
    if (rq->switch_budget > FK_OFFCPU_MAX_BUDGET && !rq->unsafe_limits) {
        snprintf(err, errlen, "--switch-budget %llu is above the limit of %d switch-outs "
                 "per second%s", (unsigned long long)rq->switch_budget, FK_OFFCPU_MAX_BUDGET, lift);
        return FK_EXIT_USAGE;
    }
    if (rq->one_in && rq->switch_budget) {
        snprintf(err, errlen, "--every and --switch-budget exclude each other (--every fixes N)");
        return FK_EXIT_USAGE;
    }
    struct fk_swevent sw;
    if (!fk_swevent_resolve("sched:sched_switch", &sw, err, errlen))
        return FK_EXIT_ERROR;
    memset(ev, 0, sizeof *ev);
    ev->type = sw.type;
    ev->config = sw.config;
    ev->period = rq->one_in ? rq->one_in : 1;     /* settled by offcpu_prepare */
    snprintf(ev->name, sizeof ev->name, "sched:sched_switch");
    *unit = "ns";
    *countname = "ns";
    return 0;
}

/* N from the rate measured before the window (then within it: the kind
 * measures the rate with its events on and sets N again as the budget
 * asks, its first decision FK_OFFCPU_ADAPT_MS in either way; a run
 * command starts at 1), and the
 * stack copy for blocked stacks
 * (FK_OFFCPU_STACK_SIZE unless asked). */
static int offcpu_prepare(const struct fk_profile_request *rq, struct fk_profile_result *res,
                          struct fk_capture_opts *co)
{
    const struct fk_target *t = &res->target;
    uint64_t budget = rq->switch_budget ? rq->switch_budget : FK_OFFCPU_DEFAULT_BUDGET;
    int64_t rate = -1;
    if (t->kind == FK_TARGET_PID)
        rate = fk_offcpu_switch_rate(t->pids, t->npids, FK_OFFCPU_RATE_PROBE_MS);
    else if (t->kind != FK_TARGET_RUN)     /* host-wide: an upper bound for user, cgroup */
        rate = fk_offcpu_switch_rate(NULL, 0, FK_OFFCPU_RATE_PROBE_MS);
    /* a command to run has no rate yet (the host's says nothing about it):
     * every switch-out, unless --every says otherwise; ring overflow is
     * counted and its blocks dropped */
    res->offcpu_rate_before = rate;
    uint64_t n = rq->one_in;
    if (!n)
        n = rate > (int64_t)budget ? ((uint64_t)rate + budget - 1) / budget : 1;
    res->event.period = n;
    co->event.period = n;
    struct fk_offcpu_opts *oo = &res->offcpu_opts;
    memset(oo, 0, sizeof *oo);
    oo->one_in = n;
    oo->budget = rq->one_in ? 0 : budget;       /* N follows the rate within the window */
    oo->rate_known = rate >= 0;
    oo->min_block_ns = rq->min_block_ns;
    oo->wakers = rq->wakers;
    oo->with_cpu = rq->with_cpu;
    oo->no_bpf = rq->no_bpf;
    oo->cpu_freq = rq->freq;
    oo->stats = &res->offcpu;
    co->kind_opts = oo;
    co->weight_by_period = false;
    if (!rq->stack_size)
        co->stack_size = FK_OFFCPU_STACK_SIZE;
    return 0;
}

static char *offcpu_title(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    return fk_asprintf("%s: %s", rq->with_cpu ? "On- and off-CPU time" : rq->wakers
                       ? "Off-CPU time with wakers" : "Off-CPU time", res->target.scope);
}

static char *offcpu_subtitle(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    (void)rq;
    const struct fk_offcpu_stats *o = &res->offcpu;
    const struct fk_bt_stats *b = &o->blocks;
    char n[48];
    if (o->one_in_min == o->one_in_max)
        snprintf(n, sizeof n, "%llu", (unsigned long long)o->one_in);
    else
        snprintf(n, sizeof n, "%llu-%llu", (unsigned long long)o->one_in_min,
                 (unsigned long long)o->one_in_max);
    return fk_asprintf("%s, %.1f s, %.2f s blocked (S %.2f, D %.2f, R %.2f), "
                       "1 in %s switch-outs recorded%s%s",
                       res->host, (double)res->cap.duration_ns / 1e9,
                       (double)(b->ns_by_state[0] + b->ns_by_state[1] + b->ns_by_state[2] +
                                b->ns_by_state[3] + o->unrecorded_ns) / 1e9,
                       (double)b->ns_by_state[FK_BT_SLEEPING] / 1e9,
                       (double)b->ns_by_state[FK_BT_DISK] / 1e9,
                       (double)b->ns_by_state[FK_BT_RUNNABLE] / 1e9,
                       n, res->cap.lost ? ", SOME LOST" : "",
                       b->lost_in ? ", switch-ins lost" : "");
}

static json_t *offcpu_meta(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    const struct fk_offcpu_stats *o = &res->offcpu;
    const struct fk_bt_stats *b = &o->blocks;
    json_t *f = json_object();
    json_object_set_new(f, "one_in", json_integer((json_int_t)o->one_in));
    /* what timed the blocks: the in-kernel program, or the switch records
     * (and why) */
    json_object_set_new(f, "block_source", json_string(o->block_source ? o->block_source : ""));
    if (o->block_source && !strcmp(o->block_source, "bpf")) {
        json_object_set_new(f, "bpf_filter", json_string(o->bpf_filter ? o->bpf_filter : ""));
        json_object_set_new(f, "bpf_attach", json_string(o->bpf_attach ? o->bpf_attach : ""));
        json_object_set_new(f, "bpf_blocks", json_integer((json_int_t)o->bpf_blocks));
        json_object_set_new(f, "bpf_blocks_recorded", json_integer((json_int_t)o->bpf_matched));
        json_object_set_new(f, "bpf_recorded_without_block",
                            json_integer((json_int_t)o->bpf_unmatched));
        json_object_set_new(f, "bpf_map_full", json_integer((json_int_t)o->bpf_map_full));
        json_object_set_new(f, "bpf_ring_full", json_integer((json_int_t)o->bpf_ring_full));
        json_object_set_new(f, "bpf_missed", json_integer((json_int_t)o->bpf_missed));
        json_object_set_new(f, "bpf_switches_unseen", json_integer((json_int_t)o->bpf_in_missed));
        json_object_set_new(f, "bpf_switch_ins_unseen", json_integer((json_int_t)o->bpf_unseen_in));
        json_object_set_new(f, "bpf_switch_ins_unseen_timed",
                            json_integer((json_int_t)o->bpf_unseen_timed));
        json_object_set_new(f, "bpf_unseen_bound_ns", json_integer((json_int_t)o->bpf_unseen_ns));
        json_object_set_new(f, "bpf_switches_picked", json_integer((json_int_t)o->bpf_picked));
        json_object_set_new(f, "bpf_switches_exiting", json_integer((json_int_t)o->bpf_exiting));
        json_object_set_new(f, "bpf_picks_without_sample", json_integer((json_int_t)o->bpf_unsampled));
        json_object_set_new(f, "bpf_picks_unwritten", json_integer((json_int_t)o->bpf_unwritten));
        json_object_set_new(f, "bpf_other_programs", json_integer((json_int_t)o->bpf_others));
        json_object_set_new(f, "threads_exit_tail", json_integer((json_int_t)o->threads_exit_tail));
        json_object_set_new(f, "exit_tail_ns", json_integer((json_int_t)o->exit_tail_ns));
        json_object_set_new(f, "bpf_kernel_bytes", json_integer((json_int_t)o->bpf_bytes));
    } else {
        json_object_set_new(f, "bpf_note", json_string(o->bpf_note));
    }
    json_object_set_new(f, "switch_budget", json_integer((json_int_t)(rq->switch_budget ?
                        rq->switch_budget : rq->one_in ? 0 : FK_OFFCPU_DEFAULT_BUDGET)));
    json_object_set_new(f, "switch_rate_before", json_integer((json_int_t)res->offcpu_rate_before));
    json_object_set_new(f, "switch_rate_peak", json_integer((json_int_t)o->peak_rate));
    json_object_set_new(f, "switches_seen", json_integer((json_int_t)o->switch_outs));
    json_object_set_new(f, "switch_ins_seen", json_integer((json_int_t)o->switch_ins));
    json_object_set_new(f, "switches_recorded", json_integer((json_int_t)o->recorded));
    json_object_set_new(f, "switches_sampled_one_in", json_integer((json_int_t)o->one_in));
    json_object_set_new(f, "switches_estimated", json_integer((json_int_t)o->switches_estimated));
    json_object_set_new(f, "totals_from", json_string(o->totals_from ? o->totals_from : "none"));
    /* N within the window: where it went, when, and the samples whose N
     * was not the one in force (see fk_offcpu_stats) */
    json_object_set_new(f, "one_in_last", json_integer((json_int_t)o->one_in_last));
    json_object_set_new(f, "one_in_min", json_integer((json_int_t)o->one_in_min));
    json_object_set_new(f, "one_in_max", json_integer((json_int_t)o->one_in_max));
    json_object_set_new(f, "one_in_changes", json_integer((json_int_t)o->one_in_changes));
    json_t *tl = json_array();
    for (unsigned i = 0; i < o->ntimeline; i++) {
        json_t *p = json_array();
        json_array_append_new(p, json_real((double)o->timeline[i].at_ns / 1e9));
        json_array_append_new(p, json_integer((json_int_t)o->timeline[i].n));
        json_array_append_new(tl, p);
    }
    json_object_set_new(f, "one_in_timeline", tl);
    json_t *fd = json_object();
    json_object_set_new(fd, "at_ns", json_integer((json_int_t)o->first_decision.at_ns));
    json_object_set_new(fd, "looks", json_integer((json_int_t)o->first_decision.looks));
    json_object_set_new(fd, "looks_median_per_s", json_integer((json_int_t)o->first_decision.median));
    json_object_set_new(fd, "rate_per_s", json_integer((json_int_t)o->first_decision.rate));
    json_object_set_new(fd, "one_in_before", json_integer((json_int_t)o->first_decision.n_before));
    json_object_set_new(fd, "one_in_after", json_integer((json_int_t)o->first_decision.n_after));
    json_object_set_new(fd, "early", json_boolean(o->first_decision.early));
    json_object_set_new(f, "one_in_first_decision", fd);
    json_object_set_new(f, "switches_weighed_by_count", json_integer((json_int_t)o->weighed_by_count));
    json_object_set_new(f, "switches_weighed_by_time", json_integer((json_int_t)o->weighed_by_time));
    json_object_set_new(f, "switches_recorded_twice", json_integer((json_int_t)o->recorded_twice));
    json_object_set_new(f, "one_in_unsure", json_integer((json_int_t)o->one_in_unsure));
    json_object_set_new(f, "switches_recorded_at_inherited_n",
                        json_integer((json_int_t)o->recorded_inherited_n));
    json_object_set_new(f, "one_in_error", json_string(o->adapt_error));
    /* above the budget still: a rate that rose faster than N followed, or
     * threads that kept the N of their creation */
    double secs = res->cap.duration_ns ? (double)res->cap.duration_ns / 1e9 : 0;
    uint64_t budget = rq->switch_budget ? rq->switch_budget : rq->one_in ? 0 : FK_OFFCPU_DEFAULT_BUDGET;
    double per_s = secs > 0 ? (double)o->recorded / secs : 0;
    json_object_set_new(f, "switches_recorded_per_s", json_real(per_s));
    json_object_set_new(f, "over_budget", json_boolean(budget && per_s > 1.25 * (double)budget));
    json_object_set_new(f, "min_block_ns", json_integer((json_int_t)rq->min_block_ns));
    json_object_set_new(f, "blocks", json_integer((json_int_t)b->blocks));
    json_object_set_new(f, "blocks_open_at_end", json_integer((json_int_t)b->open));
    json_object_set_new(f, "blocks_short", json_integer((json_int_t)b->short_blocks));
    json_object_set_new(f, "blocks_short_ns", json_integer((json_int_t)b->short_ns));
    json_object_set_new(f, "switch_ins_lost", json_integer((json_int_t)b->lost_in));
    json_object_set_new(f, "switch_ins_unseen", json_integer((json_int_t)b->unseen_in));
    json_object_set_new(f, "blocks_from_switch_record", json_integer((json_int_t)b->outs_exact));
    json_object_set_new(f, "blocked_ns_recorded", json_integer((json_int_t)o->blocked_ns_recorded));
    json_object_set_new(f, "blocked_ns", json_integer((json_int_t)o->blocked_ns));
    json_object_set_new(f, "threads_exact", json_integer((json_int_t)o->threads_exact));
    json_object_set_new(f, "threads_exact_within_bound",
                        json_integer((json_int_t)o->threads_exact_bounded));
    json_object_set_new(f, "threads_estimated", json_integer((json_int_t)o->threads_estimated));
    json_object_set_new(f, "threads_not_recorded", json_integer((json_int_t)o->threads_unrecorded));
    json_object_set_new(f, "not_recorded_ns", json_integer((json_int_t)o->unrecorded_ns));
    json_t *why = json_object();
    json_object_set_new(why, "records_lost", json_integer((json_int_t)o->est_records_lost));
    json_object_set_new(why, "no_program_totals", json_integer((json_int_t)o->est_no_program_totals));
    json_object_set_new(why, "no_total", json_integer((json_int_t)o->est_no_total));
    json_object_set_new(why, "nothing_recorded",
                        json_integer((json_int_t)o->est_nothing_recorded));
    json_object_set_new(f, "threads_estimated_by", why);
    /* no_total by why, and the first such thread's records: what a
     * run that lost a total once says about it */
    json_t *nt = json_object();
    for (int w = 1; w < FK_OFFCPU_NO_TOTAL_N; w++)
        json_object_set_new(nt, fk_offcpu_no_total_name(w),
                            json_integer((json_int_t)o->no_total_by[w]));
    json_object_set_new(f, "threads_no_total_by", nt);
    const struct fk_offcpu_no_total_first *nf = &o->no_total_first;
    json_t *first = json_null();
    if (nf->tid) {
        first = json_object();
        json_object_set_new(first, "tid", json_integer(nf->tid));
        json_object_set_new(first, "why", json_string(fk_offcpu_no_total_name(nf->why)));
        json_object_set_new(first, "switch_ins", json_integer((json_int_t)nf->n_in));
        json_object_set_new(first, "switch_outs", json_integer((json_int_t)nf->n_out));
        json_object_set_new(first, "switch_ins_before_opening", json_integer((json_int_t)nf->early_in));
        json_object_set_new(first, "switch_outs_before_opening",
                            json_integer((json_int_t)nf->early_out));
        json_object_set_new(first, "exited", json_boolean(nf->exited));
        const struct { const char *key; int64_t v; } at[] = {
            { "first_in_ns", nf->first_in }, { "first_out_ns", nf->first_out },
            { "last_in_ns", nf->last_in }, { "last_out_ns", nf->last_out },
            { "fork_ns", nf->born }, { "exit_ns", nf->exit },
        };
        for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
            json_object_set_new(first, at[i].key, at[i].v == INT64_MIN ? json_null()
                                                                       : json_integer(at[i].v));
    }
    json_object_set_new(f, "threads_no_total_first", first);
    json_object_set_new(f, "threads_cut_to_window", json_integer((json_int_t)o->threads_cut));
    json_object_set_new(f, "threads_exact_cut_to_life",
                        json_integer((json_int_t)o->threads_exact_cut));
    json_object_set_new(f, "records_past_thread_limit", json_integer((json_int_t)o->exact_over));
    json_object_set_new(f, "reordered", json_integer((json_int_t)b->reordered));
    json_object_set_new(f, "stale_switch_ins", json_integer((json_int_t)b->stale_in));
    json_object_set_new(f, "tid_reused", json_integer((json_int_t)b->tid_reused));
    json_object_set_new(f, "threads_over_limit", json_integer((json_int_t)b->table_full));
    json_object_set_new(f, "threads_peak", json_integer((json_int_t)b->peak_threads));
    json_object_set_new(f, "raw_mismatch", json_integer((json_int_t)o->raw_mismatch));
    json_object_set_new(f, "exit_switches", json_integer((json_int_t)o->exit_switches));
    json_t *ns = json_object(), *cnt = json_object();
    for (int s = 0; s < FK_BT_NSTATES; s++) {
        json_object_set_new(ns, fk_bt_state_name((enum fk_bt_state)s),
                            json_integer((json_int_t)b->ns_by_state[s]));
        json_object_set_new(cnt, fk_bt_state_name((enum fk_bt_state)s),
                            json_integer((json_int_t)b->blocks_by_state[s]));
    }
    json_object_set_new(f, "blocked_ns_by_state", ns);
    json_object_set_new(f, "blocks_by_state", cnt);
    if (rq->wakers) {
        json_object_set_new(f, "wakeups_recorded", json_integer((json_int_t)o->wakeups_recorded));
        json_object_set_new(f, "wakeups_matched", json_integer((json_int_t)b->wakeups_matched));
        json_object_set_new(f, "wakeups_while_switching_out", json_integer((json_int_t)b->wakeups_early));
        json_object_set_new(f, "waker_event", json_string(o->waker_event ? o->waker_event : ""));
        json_object_set_new(f, "blocks_without_waker", json_integer((json_int_t)o->waker_unmatched));
    }
    if (rq->with_cpu) {
        json_object_set_new(f, "cpu_samples", json_integer((json_int_t)o->cpu_samples));
        json_object_set_new(f, "cpu_ns", json_integer((json_int_t)o->cpu_ns));
        json_object_set_new(f, "cpu_frequency_hz", json_integer((json_int_t)rq->freq));
    }
    json_object_set_new(f, "accounting_bytes", json_integer((json_int_t)o->bytes));
    return f;
}

static void offcpu_summary(FILE *out, const struct fk_profile_request *rq,
                           const struct fk_profile_result *res)
{
    const struct fk_offcpu_stats *o = &res->offcpu;
    const struct fk_bt_stats *b = &o->blocks;
    double secs = res->cap.duration_ns ? (double)res->cap.duration_ns / 1e9 : 1;
    char before[48] = "unknown for a command";
    if (res->offcpu_rate_before >= 0)
        snprintf(before, sizeof before, "%lld/s%s", (long long)res->offcpu_rate_before,
                 rq->target == FK_TARGET_PID ? "" : " host-wide");
    fprintf(out, "  switch-outs: %llu seen (%.0f/s; before the window: %s), %llu recorded "
            "(1 in %llu", (unsigned long long)o->switch_outs, (double)o->switch_outs / secs,
            before, (unsigned long long)o->recorded, (unsigned long long)o->one_in);
    if (o->one_in_changes)
        fprintf(out, "; N changed %llu times with the rate, %llu to %llu, %llu at the end",
                (unsigned long long)o->one_in_changes, (unsigned long long)o->one_in_min,
                (unsigned long long)o->one_in_max, (unsigned long long)o->one_in_last);
    fprintf(out, ")\n");
    if (o->block_source && strcmp(o->block_source, "bpf"))
        fprintf(out, "  switch-ins from the kernel's switch records (in-kernel program not used: %s)\n",
                o->bpf_note);
    if (o->bpf_map_full || o->bpf_ring_full)
        fprintf(out, "  WARNING: the in-kernel program had no room for %llu switch-outs and %llu "
                "blocks (threads' exact totals not used)\n", (unsigned long long)o->bpf_map_full,
                (unsigned long long)o->bpf_ring_full);
    if (o->adapt_error[0])
        fprintf(out, "  NOTE: N stopped following the rate: %s\n", o->adapt_error);
    uint64_t budget = rq->switch_budget ? rq->switch_budget : rq->one_in ? 0 : FK_OFFCPU_DEFAULT_BUDGET;
    if (budget && (double)o->recorded / secs > 1.25 * (double)budget)
        fprintf(out, "  NOTE: %.0f switch-outs recorded per second, above the budget of %llu%s%s%s\n",
                (double)o->recorded / secs, (unsigned long long)budget,
                o->recorded_inherited_n ? ": threads created before N rose keep the N they "
                "started with on per-task events (the kernel changes it only on the events "
                "flamekit opened; not in a cgroup: " : "",
                o->recorded_inherited_n ? res->cap.tree_note : "", o->recorded_inherited_n ? ")" : "");
    fprintf(out, "  blocked: S %.3f s, D %.3f s, R %.3f s, other %.3f s; %llu blocks still open "
            "at the end (counted to it)\n",
            (double)b->ns_by_state[FK_BT_SLEEPING] / 1e9, (double)b->ns_by_state[FK_BT_DISK] / 1e9,
            (double)b->ns_by_state[FK_BT_RUNNABLE] / 1e9, (double)b->ns_by_state[FK_BT_OTHER] / 1e9,
            (unsigned long long)b->open);
    if (o->bpf_unsampled)
        fprintf(out, "  NOTE: %llu of %llu picked switch-outs made no sample (%llu not written: "
                "no room in the ring; totals stay exact)\n",
                (unsigned long long)o->bpf_unsampled, (unsigned long long)o->bpf_picked,
                (unsigned long long)o->bpf_unwritten);
    if (o->threads_unrecorded)
        fprintf(out, "  not recorded: %llu threads with none of their switch-outs recorded "
                "(1 in N), their exact total under [not recorded] (%.3f s)\n",
                (unsigned long long)o->threads_unrecorded, (double)o->unrecorded_ns / 1e9);
    if (b->short_blocks)
        fprintf(out, "  %llu blocks under --min-block dropped (%.3f s)\n",
                (unsigned long long)b->short_blocks, (double)b->short_ns / 1e9);
    if (b->lost_in || b->table_full)
        fprintf(out, "  WARNING: %llu blocks dropped, their switch-in lost; %llu over the "
                "thread limit (no time was guessed for them)\n",
                (unsigned long long)b->lost_in, (unsigned long long)b->table_full);
    if (rq->wakers)
        fprintf(out, "  wakers: %llu wakeups recorded, %llu matched to a block, %llu blocks "
                "without a recorded waker\n", (unsigned long long)o->wakeups_recorded,
                (unsigned long long)b->wakeups_matched, (unsigned long long)o->waker_unmatched);
    if (rq->with_cpu)
        fprintf(out, "  on CPU: %llu samples at %llu Hz (%.3f s)\n",
                (unsigned long long)o->cpu_samples, (unsigned long long)rq->freq,
                (double)o->cpu_ns / 1e9);
}

/* Where a thread waits: the blocked part (not the waker's), without the
 * open-at-end mark and the scheduler's own frames (schedule, __schedule,
 * io_schedule, schedule_timeout...: every block ends in them). */
static size_t offcpu_top_end(const char *stack, size_t len)
{
    const char *sep = memmem(stack, len, ";" FK_OFFCPU_WAKER_SEP ";", 4);
    if (sep)
        len = (size_t)(sep - stack);
    for (;;) {
        const char *semi = memrchr(stack, ';', len);
        if (!semi)
            return len;
        const char *f = semi + 1;
        size_t fl = len - (size_t)(f - stack);
        bool kernel = fl > 4 && !memcmp(f + fl - 4, "_[k]", 4);
        bool sched = kernel && (memmem(f, fl, "schedule", 8) || memmem(f, fl, "cond_resched", 12));
        bool open = fl == sizeof FK_OFFCPU_OPEN_FRAME - 1 &&
                    !memcmp(f, FK_OFFCPU_OPEN_FRAME, fl);
        if (!sched && !open)
            return len;
        len = (size_t)(semi - stack);
    }
}

/* ---- table -------------------------------------------------------- */

static const struct fk_profile_ops ops[] = {
    [FK_PROFILE_CPU] = {
        .name = "cpu", .colors = "hot", .evkind = &fk_evkind_clock, .event = cpu_event,
        .title = cpu_title, .subtitle = cpu_subtitle,
    },
    [FK_PROFILE_FAULTS] = {
        .name = "faults", .colors = "mem", .evkind = &fk_evkind_counted,
        .event = faults_event, .after = faults_after, .ok = faults_ok, .title = faults_title,
        .subtitle = faults_subtitle, .meta = faults_meta, .summary = faults_summary,
    },
    [FK_PROFILE_OFFCPU] = {
        .name = "offcpu", .colors = "cold", .evkind = &fk_evkind_offcpu,
        .event = offcpu_event, .prepare = offcpu_prepare,
        .title = offcpu_title, .subtitle = offcpu_subtitle, .meta = offcpu_meta,
        .top_end = offcpu_top_end, .summary = offcpu_summary,
    },
};

const struct fk_profile_ops *fk_profile_ops(enum fk_profile_kind kind)
{
    return &ops[kind];
}
