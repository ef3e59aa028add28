/* SPDX-License-Identifier: GPL-2.0-only */
/* The metadata of a capture, schema FK_RESULT_SCHEMA (flamekit-metadata(5)): the same
 * keys for every profile; what only one profile has goes into an object
 * named after it ("faults": {...}). Keep the man page in step. */
#include "profile/kinds.h"
#include "util/buf.h"

#include <linux/perf_event.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *type_name(uint32_t type)
{
    switch (type) {
    case PERF_TYPE_HARDWARE: return "hardware";
    case PERF_TYPE_SOFTWARE: return "software";
    case PERF_TYPE_TRACEPOINT: return "tracepoint";
    default: return "other";
    }
}

static const char *target_kinds[] = {
    [FK_TARGET_HOST] = "host", [FK_TARGET_PID] = "pid", [FK_TARGET_USER] = "user",
    [FK_TARGET_CGROUP] = "cgroup", [FK_TARGET_RUN] = "run",
};

/* "python": CPython frames read from the targets (unwind/python.h). */
static json_t *python_json(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    const struct fk_python_stats *p = &res->python;
    json_t *o = json_object();
    json_object_set_new(o, "mode", json_string(fk_python_mode_name(rq->python)));
    if (rq->python == FK_PYTHON_OFF)
        return o;
    json_object_set_new(o, "versions", json_string(p->versions));
    json_object_set_new(o, "processes", json_integer((json_int_t)p->processes));
    json_object_set_new(o, "processes_forgotten", json_integer((json_int_t)p->forgotten));
    json_object_set_new(o, "unknown_versions", json_string(p->unknown_version ? p->versions : ""));
    json_object_set_new(o, "processes_unknown_version", json_integer((json_int_t)p->unknown_version));
    json_object_set_new(o, "samples", json_integer((json_int_t)p->samples));
    json_object_set_new(o, "spliced", json_integer((json_int_t)p->spliced));
    json_object_set_new(o, "consistent", json_integer((json_int_t)p->consistent));
    json_object_set_new(o, "changed", json_integer((json_int_t)p->changed));
    json_object_set_new(o, "native_cut", json_integer((json_int_t)p->native_cut));
    json_object_set_new(o, "consistent_share",
                        json_real(p->spliced ? (double)p->consistent / (double)p->spliced : 0));
    json_object_set_new(o, "anchored", json_integer((json_int_t)p->anchored));
    json_object_set_new(o, "cframe_offsets_learned", json_integer((json_int_t)p->cframe_learned));
    json_object_set_new(o, "snapshots", json_integer((json_int_t)p->snapshots));
    json_object_set_new(o, "snapshot_windows", json_integer((json_int_t)p->snapshot_windows));
    json_object_set_new(o, "snapshots_used", json_integer((json_int_t)p->snapshots_used));
    json_object_set_new(o, "snapshots_shared", json_integer((json_int_t)p->snapshots_shared));
    json_object_set_new(o, "chains", json_integer((json_int_t)p->chains));
    json_object_set_new(o, "chains_refused", json_integer((json_int_t)p->chains_refused));
    json_object_set_new(o, "chain_walks", json_integer((json_int_t)p->chain_walks));
    json_object_set_new(o, "fallbacks", json_integer((json_int_t)p->fallbacks));
    json_object_set_new(o, "fallbacks_spliced", json_integer((json_int_t)p->fallbacks_spliced));
    json_object_set_new(o, "fallbacks_frameless", json_integer((json_int_t)p->fallbacks_frameless));
    json_object_set_new(o, "chains_retaken", json_integer((json_int_t)p->chains_retaken));
    json_object_set_new(o, "snapshot_reads", json_integer((json_int_t)p->snapshot_reads));
    json_object_set_new(o, "snapshot_read_bytes",
                        json_integer((json_int_t)p->snapshot_read_bytes));
    json_t *w = json_object();
    for (int i = 0; i < FK_PY_NSTATUS; i++)
        json_object_set_new(w, fk_py_status_name(i), json_integer((json_int_t)p->status[i]));
    json_object_set_new(o, "walks", w);
    json_object_set_new(o, "frames", json_integer((json_int_t)p->frames));
    json_object_set_new(o, "reads", json_integer((json_int_t)p->reads));
    json_object_set_new(o, "read_bytes", json_integer((json_int_t)p->read_bytes));
    json_object_set_new(o, "thread_table_walks", json_integer((json_int_t)p->tid_refreshes));
    json_object_set_new(o, "median_us", json_real(p->median_us));
    json_object_set_new(o, "mean_us", json_real(p->samples ? (double)(p->ns_total + p->early_ns) /
                                                             1e3 / (double)p->samples : 0));
    json_t *d = json_object();
    json_object_set_new(d, "median_ms", json_real(p->delay_median_ms));
    json_object_set_new(d, "p90_ms", json_real(p->delay_p90_ms));
    json_object_set_new(d, "max_ms", json_real(p->delay_max_ms));
    json_object_set_new(o, "read_delay", d);
    return o;
}

/* "callgraph": the user-stack mode asked and used, why auto chose frame
 * pointers, ring traffic, and the unwinder's counts. */
static json_t *callgraph_json(const struct fk_profile_request *rq,
                              const struct fk_profile_result *res)
{
    const struct fk_capture_result *r = &res->cap;
    json_t *cg = json_object();
    json_object_set_new(cg, "mode", json_string(fk_callgraph_name((enum fk_callgraph)rq->callgraph)));
    json_object_set_new(cg, "used", json_string(res->event.no_callchain ? "none"
                                                : fk_callgraph_name(r->callgraph)));
    if (r->callgraph_note[0])
        json_object_set_new(cg, "note", json_string(r->callgraph_note));
    json_object_set_new(cg, "ring_bytes", json_integer((json_int_t)r->ring_bytes));
    if (r->duration_ns)
        json_object_set_new(cg, "ring_bytes_per_s",
                            json_integer((json_int_t)((double)r->ring_bytes * 1e9 / (double)r->duration_ns)));
    if (r->callgraph != FK_CG_DWARF)
        return cg;
    const struct fk_unwind_stats *u = &r->unwind;
    json_object_set_new(cg, "stack_size", json_integer(r->stack_size));
    json_t *uw = json_object();
    json_object_set_new(uw, "stacks", json_integer((json_int_t)u->samples));
    json_object_set_new(uw, "complete", json_integer((json_int_t)u->complete));
    json_object_set_new(uw, "truncated", json_integer((json_int_t)u->truncated));
    json_object_set_new(uw, "failed", json_integer((json_int_t)u->failed));
    json_object_set_new(uw, "no_user_registers", json_integer((json_int_t)u->no_regs));
    json_object_set_new(uw, "frames", json_integer((json_int_t)u->frames));
    json_object_set_new(uw, "cfi_steps", json_integer((json_int_t)u->cfi_frames));
    json_object_set_new(uw, "frame_pointer_steps", json_integer((json_int_t)u->fp_frames));
    json_object_set_new(uw, "stack_bytes_copied", json_integer((json_int_t)u->stack_bytes));
    json_t *ends = json_object();
    json_object_set_new(ends, "cut", json_integer((json_int_t)r->stack_ends.cut));
    json_object_set_new(ends, "learned", json_integer((json_int_t)r->stack_ends.learned));
    json_object_set_new(ends, "varying", json_integer((json_int_t)r->stack_ends.varying));
    json_object_set_new(ends, "cut_too_short", json_integer((json_int_t)r->stack_ends.wrong));
    json_object_set_new(uw, "stack_ends", ends);
    json_t *walked = json_object();
    json_object_set_new(walked, "median", json_integer((json_int_t)u->walked_median));
    json_object_set_new(walked, "p99", json_integer((json_int_t)u->walked_p99));
    json_object_set_new(walked, "max", json_integer((json_int_t)u->walked_max));
    json_t *within = json_object();
    for (unsigned i = 0; i < FK_UW_WALKED_SIZES; i++) {
        char key[16];
        snprintf(key, sizeof key, "%llu", (unsigned long long)fk_uw_walked_size(i));
        json_object_set_new(within, key, json_integer((json_int_t)u->complete_within[i]));
    }
    json_object_set_new(walked, "complete_within", within);
    json_object_set_new(uw, "stack_bytes_walked", walked);
    json_object_set_new(uw, "pc_cache_hits", json_integer((json_int_t)u->pc_cache_hits));
    json_object_set_new(uw, "pc_cache_misses", json_integer((json_int_t)u->pc_cache_misses));
    json_object_set_new(uw, "pc_cache2_hits", json_integer((json_int_t)u->pc_cache2_hits));
    json_object_set_new(uw, "median_us", json_real(u->median_us));
    json_object_set_new(uw, "mean_us", json_real(u->samples ? (double)u->ns_total / 1e3 / (double)u->samples : 0));
    json_t *why = json_object();
    for (int i = 0; i < FK_UW_R_N; i++)
        if (u->reasons[i])
            json_object_set_new(why, fk_uw_reason_name(i), json_integer((json_int_t)u->reasons[i]));
    json_object_set_new(uw, "ended", why);
    json_object_set_new(cg, "unwind", uw);
    return cg;
}

static json_t *event_json(const struct fk_event *e, const struct fk_capture_result *r)
{
    json_t *ev = json_object();
    json_object_set_new(ev, "name", json_string(e->name));
    json_object_set_new(ev, "type", json_string(type_name(e->type)));
    json_object_set_new(ev, "config", json_integer((json_int_t)e->config));
    if (e->freq) {
        json_object_set_new(ev, "mode", json_string("frequency"));
        json_object_set_new(ev, "frequency_hz", json_integer((json_int_t)e->freq));
    } else {
        json_object_set_new(ev, "mode", json_string("period"));
        json_object_set_new(ev, "period", json_integer((json_int_t)e->period));
    }
    json_object_set_new(ev, "kernel", json_boolean(!e->exclude_kernel));
    json_object_set_new(ev, "user", json_boolean(!e->exclude_user));
    json_object_set_new(ev, "callchain", json_string(e->no_callchain ? "none"
                                                     : r->callgraph == FK_CG_DWARF ? "dwarf"
                                                                                   : "frame pointers"));
    json_object_set_new(ev, "count", json_integer((json_int_t)r->event_count));
    if (r->have_target_count)
        json_object_set_new(ev, "target_count", json_integer((json_int_t)r->target_count));
    json_object_set_new(ev, "time_enabled_ns", json_integer((json_int_t)r->time_enabled));
    json_object_set_new(ev, "time_running_ns", json_integer((json_int_t)r->time_running));
    return ev;
}

static json_t *target_json(const struct fk_profile_request *rq, const struct fk_profile_result *res)
{
    const struct fk_target *t = &res->target;
    const struct fk_capture_result *r = &res->cap;
    json_t *tg = json_object();
    json_object_set_new(tg, "kind", json_string(target_kinds[t->kind]));
    json_object_set_new(tg, "scope", json_string(t->scope));
    json_object_set_new(tg, "description", json_string(t->desc));
    if (t->kind == FK_TARGET_PID || t->kind == FK_TARGET_RUN) {
        json_t *pids = json_array();
        for (size_t i = 0; i < t->npids; i++)
            json_array_append_new(pids, json_integer(t->pids[i]));
        json_object_set_new(tg, "pids", pids);
    }
    if (r->tree_mode) {
        json_t *tr = json_object();
        json_object_set_new(tr, "mode", json_string(r->tree_mode));
        if (r->tree_cgroup)
            json_object_set_new(tr, "cgroup_dir", json_string(r->tree_cgroup));
        if (r->tree_note[0])
            json_object_set_new(tr, "why_not_cgroup", json_string(r->tree_note));
        bool per_task = !strcmp(r->tree_mode, "per-task");
        json_object_set_new(tr, "short_children_may_be_missed", json_boolean(per_task));
        if (r->tree_followed) {
            /* the target's own processes in its cgroup, or over the host
             * with the others' samples dropped in the kernel ("bpf") */
            const struct fk_tree_stats *ts = &r->tree;
            json_object_set_new(tr, "followed_by",
                                json_string(r->tree_cgroup ? "fork/exit records"
                                                           : "fork/exit records and a BPF map"));
            json_object_set_new(tr, "processes", json_integer((json_int_t)ts->processes));
            json_object_set_new(tr, "forks", json_integer((json_int_t)ts->forks));
            json_object_set_new(tr, "threads", json_integer((json_int_t)ts->threads));
            json_object_set_new(tr, "exits", json_integer((json_int_t)ts->exits));
            json_object_set_new(tr, "live", json_integer((json_int_t)ts->live));
            json_object_set_new(tr, "peak_live", json_integer((json_int_t)ts->peak_live));
            json_object_set_new(tr, "resyncs", json_integer((json_int_t)ts->resyncs));
            json_object_set_new(tr, "samples_outside", json_integer((json_int_t)r->samples_outside));
            if (!r->tree_cgroup)    /* the BPF map full: tasks left out */
                json_object_set_new(tr, "not_followed",
                                    json_integer((json_int_t)ts->not_followed));
        } else {
            json_object_set_new(tr, "forks", json_integer((json_int_t)r->forks));
            json_object_set_new(tr, "exits", json_integer((json_int_t)r->exits));
        }
        json_object_set_new(tg, "tree", tr);
    }
    if (t->kind == FK_TARGET_USER) {
        json_object_set_new(tg, "user", json_string(t->user));
        json_object_set_new(tg, "uid", json_integer(t->uid));
    }
    if (t->kind == FK_TARGET_CGROUP) {
        json_object_set_new(tg, "cgroup", json_string(t->cgroup_rel));
        json_object_set_new(tg, "cgroup_dir", json_string(t->cgroup_dir));
    }
    if (t->kind == FK_TARGET_RUN) {
        json_t *a = json_array();
        for (char **p = rq->run_argv; p && *p && (!rq->redact_args || p == rq->run_argv); p++)
            json_array_append_new(a, json_string(*p));
        json_object_set_new(tg, "argv", a);
        if (r->child_exited && WIFEXITED(r->child_status))
            json_object_set_new(tg, "exit_status", json_integer(WEXITSTATUS(r->child_status)));
        else if (r->child_exited && WIFSIGNALED(r->child_status))
            json_object_set_new(tg, "exit_signal", json_integer(WTERMSIG(r->child_status)));
    }
    return tg;
}

json_t *fk_profile_metadata(const struct fk_profile_request *rq,
                            const struct fk_profile_result *res)
{
    const struct fk_profile_ops *ops = fk_profile_ops(rq->kind);
    const struct fk_capture_result *r = &res->cap;
    json_t *m = json_object();
    json_object_set_new(m, "schema", json_integer(FK_RESULT_SCHEMA));
    json_object_set_new(m, "tool", json_string("flamekit"));
    json_object_set_new(m, "version", json_string(FK_VERSION));
    json_object_set_new(m, "profile", json_string(ops->name));
    json_object_set_new(m, "command", json_string(rq->command ? rq->command : ops->name));
    json_t *argv = json_array();
    struct fk_buf s = FK_BUF_INIT;
    fk_buf_adds(&s, "flamekit");
    /* --redact-args: the subcommand only (passwords on command lines) */
    for (int i = 0; i < rq->argc && (!rq->redact_args || i == 0); i++) {
        json_array_append_new(argv, json_string(rq->argv[i]));
        fk_buf_printf(&s, " %s", rq->argv[i]);
    }
    json_object_set_new(m, "argv", argv);
    json_object_set_new(m, "invocation", json_string(fk_buf_cstr(&s)));
    fk_buf_free(&s);
    char cwd[4096];
    if (!rq->redact_args && getcwd(cwd, sizeof cwd))
        json_object_set_new(m, "cwd", json_string(cwd));
    if (rq->redact_args)
        json_object_set_new(m, "args_redacted", json_true());
    fk_sysinfo_json(m);     /* host, kernel, os, cpu, memory, numa */

    time_t st = (time_t)(r->start_realtime_ns / 1000000000ull);
    struct tm tm;
    char when[64];
    gmtime_r(&st, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(m, "start_time", json_string(when));
    json_object_set_new(m, "start_unix_ns", json_integer((json_int_t)r->start_realtime_ns));
    json_object_set_new(m, "duration_s", json_real((double)r->duration_ns / 1e9));
    json_object_set_new(m, "stop_reason", json_string(r->stop_reason ? r->stop_reason : ""));
    json_object_set_new(m, "event", event_json(&res->event, r));
    json_object_set_new(m, "samples", json_integer((json_int_t)r->samples_kept));
    json_object_set_new(m, "samples_read", json_integer((json_int_t)r->samples));
    json_object_set_new(m, "samples_malformed", json_integer((json_int_t)r->malformed));
    json_object_set_new(m, "weight_total", json_integer((json_int_t)r->stacks.total));
    json_object_set_new(m, "weight_unit", json_string(res->unit));
    json_object_set_new(m, "lost", json_integer((json_int_t)r->lost));
    json_object_set_new(m, "lost_records", json_integer((json_int_t)r->lost_events));
    json_object_set_new(m, "lost_samples", json_integer((json_int_t)r->lost_samples));
    json_object_set_new(m, "throttled", json_integer((json_int_t)r->throttled));
    json_object_set_new(m, "unthrottled", json_integer((json_int_t)r->unthrottled));
    json_object_set_new(m, "unique_stacks", json_integer((json_int_t)r->stacks.n));
    json_object_set_new(m, "memory_peak_bytes", json_integer((json_int_t)r->mem_bytes));
    json_object_set_new(m, "memory_limited", json_boolean(r->mem_limited));
    json_object_set_new(m, "ring_pages_per_cpu", json_integer(r->ring_pages));
    json_t *rd = json_object();
    json_object_set_new(rd, "queue_peak_bytes", json_integer((json_int_t)r->reader_peak_bytes));
    json_object_set_new(rd, "full_passes", json_integer((json_int_t)r->reader_full));
    json_object_set_new(rd, "ring_peak_bytes", json_integer((json_int_t)r->reader_ring_peak));
    json_object_set_new(rd, "passes", json_integer((json_int_t)r->reader_passes));
    json_object_set_new(rd, "soon_passes", json_integer((json_int_t)r->reader_soon));
    json_object_set_new(rd, "pass_gap_peak_ms", json_real((double)r->reader_gap_peak_ns / 1e6));
    json_object_set_new(rd, "records", json_integer((json_int_t)r->reader_records));
    json_object_set_new(rd, "records_dropped", json_integer((json_int_t)r->reader_dropped));
    json_object_set_new(rd, "nice", json_integer(r->nice));
    json_object_set_new(rd, "nice_raised", json_boolean(r->nice_raised));
    json_object_set_new(rd, "nice_refused", json_boolean(r->nice_refused));
    json_object_set_new(rd, "poll_ms", json_integer(r->reader_poll_ms));
    json_object_set_new(rd, "cpu_moves", json_integer((json_int_t)r->reader_moves));
    json_object_set_new(rd, "cpu_released", json_integer((json_int_t)r->reader_released));
    json_object_set_new(rd, "wakeups", json_string(r->reader_wakeups ? r->reader_wakeups
                                                                      : "watermark"));
    if (r->reader_wakeups_note[0])
        json_object_set_new(rd, "wakeups_note", json_string(r->reader_wakeups_note));
    const struct fk_pygate_stats *g = &r->gate;
    json_object_set_new(rd, "python_wakeups", json_integer((json_int_t)g->wakeups));
    json_object_set_new(rd, "python_gate_marked", json_integer((json_int_t)g->marked));
    json_object_set_new(rd, "python_gate_full", json_integer((json_int_t)g->full));
    json_t *pc = json_object();
    json_object_set_new(pc, "program_reads", json_boolean(g->reads));
    json_object_set_new(pc, "threads", json_integer((json_int_t)g->threads));
    json_object_set_new(pc, "read", json_integer((json_int_t)g->chains));
    json_object_set_new(pc, "code_wakeups", json_integer((json_int_t)g->code_wakeups));
    json_object_set_new(pc, "program_reads_codes", json_boolean(g->reads_codes));
    json_object_set_new(pc, "code_headers", json_integer((json_int_t)g->code_headers));
    json_object_set_new(pc, "code_headers_failed",
                        json_integer((json_int_t)g->code_headers_failed));
    json_object_set_new(pc, "joined", json_integer((json_int_t)g->joined));
    json_object_set_new(pc, "unjoined", json_integer((json_int_t)g->unjoined));
    json_object_set_new(pc, "unjoined_at_end", json_integer((json_int_t)g->unjoined_at_end));
    json_object_set_new(pc, "queue_peak", json_integer((json_int_t)g->queue_peak));
    json_object_set_new(pc, "queue_bytes", json_integer((json_int_t)g->queue_bytes));
    json_object_set_new(pc, "queue_dropped", json_integer((json_int_t)g->queue_dropped));
    json_object_set_new(pc, "ring_bytes", json_integer((json_int_t)g->ring_bytes));
    json_object_set_new(pc, "ring_peak_bytes", json_integer((json_int_t)g->ring_peak));
    json_object_set_new(pc, "no_thread", json_integer((json_int_t)g->no_thread));
    json_object_set_new(pc, "missed", json_integer((json_int_t)g->missed));
    json_object_set_new(pc, "ring_full", json_integer((json_int_t)g->ring_full));
    json_object_set_new(pc, "ring_lost", json_integer((json_int_t)g->ring_lost));
    json_object_set_new(pc, "join_max_us", json_real((double)g->join_max_ns / 1e3));
    json_object_set_new(pc, "expired_early", json_integer((json_int_t)g->expired_early));
    json_object_set_new(pc, "out_of_window", json_integer((json_int_t)g->out_of_window));
    json_object_set_new(pc, "out_of_window_max_us",
                        json_real((double)g->out_of_window_max_ns / 1e3));
    json_object_set_new(rd, "python_chains", pc);
    json_object_set_new(rd, "pinned_files", json_integer((json_int_t)r->pins.files));
    json_object_set_new(rd, "pinned_jits", json_integer((json_int_t)r->pins.jits));
    json_object_set_new(rd, "pins_used", json_integer((json_int_t)r->pins.used));
    json_object_set_new(rd, "pins_refused", json_integer((json_int_t)r->pins.refused));
    json_object_set_new(m, "reader", rd);
    json_object_set_new(m, "callgraph", callgraph_json(rq, res));
    json_object_set_new(m, "python", python_json(rq, res));
    json_object_set_new(m, "target", target_json(rq, res));

    json_t *lim = json_object();
    json_object_set_new(lim, "duration_s", json_real((double)rq->duration_ms / 1e3));
    json_object_set_new(lim, "max_memory_bytes", json_integer((json_int_t)rq->max_mem_bytes));
    json_object_set_new(lim, "unsafe_limits", json_boolean(rq->unsafe_limits));
    json_object_set_new(lim, "perf_event_paranoid", json_integer(fk_perf_paranoid()));
    json_object_set_new(lim, "perf_event_max_sample_rate",
                        json_integer((json_int_t)fk_perf_max_sample_rate()));
    json_object_set_new(lim, "perf_event_mlock_kb", json_integer((json_int_t)fk_perf_mlock_kb()));
    json_object_set_new(m, "limits", lim);

    json_t *sy = json_object();
    json_object_set_new(sy, "dsos", json_integer((json_int_t)r->sym.dsos));
    json_object_set_new(sy, "processes", json_integer((json_int_t)r->sym.processes));
    json_object_set_new(sy, "locate_unknown", json_integer((json_int_t)r->sym.locate_unknown));
    json_object_set_new(sy, "names_unresolved", json_integer((json_int_t)r->sym.names_unresolved));
    json_object_set_new(sy, "names_function_start", json_integer((json_int_t)r->sym.names_function_start));
    json_object_set_new(sy, "deleted_files_kept", json_integer((json_int_t)r->sym.deleted_files_kept));
    json_object_set_new(sy, "files_shrunk", json_integer((json_int_t)r->sym.files_shrunk));
    json_object_set_new(sy, "files_over_budget", json_integer((json_int_t)r->sym.files_over_budget));
    if (r->sym.kernel_table)
        json_object_set_new(sy, "kernel_table", json_string(r->sym.kernel_table));
    if (r->sym.debuginfod) {
        json_t *di = json_object();
        json_object_set_new(di, "found", json_integer((json_int_t)r->sym.debuginfod_found));
        json_object_set_new(di, "failed", json_integer((json_int_t)r->sym.debuginfod_failed));
        json_object_set_new(di, "timed_out", json_integer((json_int_t)r->sym.debuginfod_timed_out));
        json_object_set_new(di, "skipped", json_integer((json_int_t)r->sym.debuginfod_skipped));
        json_object_set_new(di, "ms", json_integer((json_int_t)r->sym.debuginfod_ms));
        json_object_set_new(sy, "debuginfod", di);
    }
    json_object_set_new(m, "symbols", sy);

    json_t *own = ops->meta ? ops->meta(rq, res) : NULL;
    if (own)
        json_object_set_new(m, ops->name, own);
    return m;
}
