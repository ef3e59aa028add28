/* SPDX-License-Identifier: GPL-2.0-only */
/* The profile runner (profile.h): check a request, resolve the target,
 * capture, write the result files (result.h names, atomic), summarise,
 * deliver. The output location is checked before the capture starts, and
 * whatever a failed run created (files, directories) is removed. */
#include "profile/kinds.h"
#include "capture/pygate.h"
#include "engine/capture.h"
#include "engine/pyframes.h"
#include "deliver/stream.h"
#include "deliver/upload.h"
#include "render/pprof.h"
#include "render/svg.h"
#include "stacks/folded.h"
#include "stacks/names.h"
#include "symbols/symbols.h"
#include "util/opt.h"
#include "util/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void fk_profile_request_init(struct fk_profile_request *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->stream_fd = -1;
    rq->ready_fd = -1;
}

const char *fk_python_mode_name(int mode)
{
    return mode == FK_PYTHON_OFF ? "off" : mode == FK_PYTHON_LINES ? "lines" : "on";
}

/* The kernel's symbol table and the Python gate's maps and queues count
 * against --max-memory like every table the capture holds; the gate's
 * from the start (its queues at most), the table from the first kernel
 * frame (the gate where the engine runs one: fk_engine_runs_pygate). A
 * limit that cannot hold them and FK_PROFILE_KERNEL_ROOM more would stop
 * the capture at the limit as soon as the command or the host is sampled
 * in the kernel, whatever it captured (before this counted the gate, a
 * command's capture at the least limit named stopped at its first
 * sample: 5.2M from the start, 10.3M after it, at 7M): refused before
 * anything starts, naming each part and the least limit that holds them. */
static bool fixed_tables_fit(const struct fk_profile_request *rq, char *err, size_t errlen)
{
    bool gate = fk_engine_runs_pygate(fk_profile_ops(rq->kind)->evkind, rq->python != FK_PYTHON_OFF);
    if ((rq->no_kernel && !gate) || rq->max_mem_bytes >= FK_PROFILE_KERNEL_CHECK_MEM)
        return true;
    uint64_t table = rq->no_kernel ? 0 : fk_sym_kernel_bytes();
    /* the gate's ring holds what the perf rings hold (fk_pygate_new):
     * a CPU capture's at its frequency, a counted event's at 1000 a
     * second (engine/config.c ring_pages) */
    uint64_t freq = rq->kind == FK_PROFILE_CPU ? (rq->freq ? rq->freq : FK_PROFILE_DEFAULT_FREQ) : 0;
    uint64_t held = fk_engine_ring_samples(freq, (enum fk_callgraph)rq->callgraph,
                                           (uint32_t)rq->stack_size);
    uint64_t maps = gate ? fk_pygate_fixed_bytes(FK_ENGINE_PYGATE_ENTRIES, held, freq) : 0;
    uint64_t need = table + maps + FK_PROFILE_KERNEL_ROOM, mib = 1ull << 20;
    if (rq->max_mem_bytes >= need)
        return true;
    char given[32], parts[160] = "", *p = parts;
    if (rq->max_mem_bytes % mib)
        snprintf(given, sizeof given, "%lluK", (unsigned long long)(rq->max_mem_bytes >> 10));
    else
        snprintf(given, sizeof given, "%lluM", (unsigned long long)(rq->max_mem_bytes / mib));
    if (table)
        p += snprintf(p, sizeof parts, "the kernel's symbol table (%.1fM here)%s ", (double)table / (double)mib,
                      maps ? "," : "");
    if (maps)
        snprintf(p, sizeof parts - (size_t)(p - parts),
                 "the Python gate's ring, maps and queues for %u CPU%s (%.1fM) ", fk_pygate_cpus(),
                 fk_pygate_cpus() == 1 ? "" : "s", (double)maps / (double)mib);
    snprintf(err, errlen, "--max-memory %s cannot hold %sand %lluM for the capture: give at least %lluM%s%s",
             given, parts, (unsigned long long)(FK_PROFILE_KERNEL_ROOM / mib),
             (unsigned long long)((need + mib - 1) / mib), table ? ", or --no-kernel" : "",
             maps ? ", or --python off" : "");
    return false;
}

int fk_profile_check(struct fk_profile_request *rq, char *err, size_t errlen)
{
    char a[32], b[32];
    bool run = rq->target == FK_TARGET_RUN;
    uint64_t max_dur = rq->unsafe_limits ? FK_PROFILE_UNSAFE_DURATION_MS : FK_PROFILE_MAX_DURATION_MS;
    const char *lift = rq->unsafe_limits ? "" : "; add --unsafe-limits to go beyond";
    if (rq->duration_ms > max_dur) {
        fk_opt_fmt_ms(rq->duration_ms, a, sizeof a);
        fk_opt_fmt_ms(max_dur, b, sizeof b);
        snprintf(err, errlen, "duration %s is above the limit of %s%s", a, b, lift);
        return FK_EXIT_USAGE;
    }
    if (!rq->duration_ms)
        rq->duration_ms = run ? max_dur : FK_PROFILE_DEFAULT_DURATION_MS;
    if (rq->stack_size && rq->callgraph == FK_CG_FP) {
        snprintf(err, errlen, "--stack-size applies to --call-graph dwarf or auto, not fp");
        return FK_EXIT_USAGE;
    }
    rq->stack_size &= ~7ull;    /* the kernel wants multiples of 8 */
    uint64_t max_mem = rq->unsafe_limits ? FK_PROFILE_UNSAFE_MEM : FK_PROFILE_MAX_MEM;
    if (rq->max_mem_bytes && rq->max_mem_bytes < FK_PROFILE_MIN_MEM) {
        snprintf(err, errlen, "--max-memory must be at least 1M");
        return FK_EXIT_USAGE;
    }
    if (rq->max_mem_bytes > max_mem) {
        snprintf(err, errlen, "--max-memory is above the limit of %lluM%s",
                 (unsigned long long)(max_mem >> 20), lift);
        return FK_EXIT_USAGE;
    }
    if (!rq->max_mem_bytes)
        rq->max_mem_bytes = FK_PROFILE_DEFAULT_MEM;
    if (!fixed_tables_fit(rq, err, errlen))
        return FK_EXIT_USAGE;
    if (rq->kind == FK_PROFILE_CPU || (rq->kind == FK_PROFILE_OFFCPU && rq->with_cpu)) {
        if (!rq->freq)
            rq->freq = FK_PROFILE_DEFAULT_FREQ;
        uint64_t kmax = fk_perf_max_sample_rate();
        if (rq->freq > FK_PROFILE_MAX_FREQ && !rq->unsafe_limits) {
            snprintf(err, errlen, "frequency %llu Hz is above the safe limit of %d Hz%s",
                     (unsigned long long)rq->freq, FK_PROFILE_MAX_FREQ, lift);
            return FK_EXIT_USAGE;
        }
        if (rq->freq > kmax) {
            snprintf(err, errlen, "frequency %llu Hz is above the kernel's limit "
                     "(/proc/sys/kernel/perf_event_max_sample_rate = %llu)",
                     (unsigned long long)rq->freq, (unsigned long long)kmax);
            return FK_EXIT_USAGE;
        }
    } else if (rq->kind == FK_PROFILE_FAULTS) {
        if (!rq->period)
            rq->period = FK_PROFILE_DEFAULT_PERIOD;
        if (rq->period < FK_PROFILE_MIN_PERIOD && !rq->unsafe_limits) {
            snprintf(err, errlen, "one in %llu samples too often: at least %d keeps the overhead "
                     "bounded (--unsafe-limits allows down to 1)",
                     (unsigned long long)rq->period, FK_PROFILE_MIN_PERIOD);
            return FK_EXIT_USAGE;
        }
    }
    if (rq->upload && strncmp(rq->upload, "s3://", 5) && strncmp(rq->upload, "gs://", 5)) {
        snprintf(err, errlen, "--upload wants s3://BUCKET/PREFIX/ or gs://BUCKET/PREFIX/; for a "
                 "presigned URL use 'flamekit upload FILE URL'");
        return FK_EXIT_USAGE;
    }
    if (rq->debuginfod && rq->no_debuginfod) {
        snprintf(err, errlen, "--debuginfod and --no-debuginfod exclude each other");
        return FK_EXIT_USAGE;
    }
    if (rq->upload && rq->stream_fd >= 0) {
        snprintf(err, errlen, "--stdout and --upload exclude each other");
        return FK_EXIT_USAGE;
    }
    if (rq->outdir && rq->temp_dir) {
        snprintf(err, errlen, "--stdout and --output-dir exclude each other");
        return FK_EXIT_USAGE;
    }
    if (run && (!rq->run_argv || !rq->run_argv[0])) {
        snprintf(err, errlen, "no command to run: give run -- CMD [ARGS]");
        return FK_EXIT_USAGE;
    }
    /* A malformed pid list is the request's mistake; a pid that names no
     * process is found only by fk_profile_run (res->bad_target). */
    if (rq->target == FK_TARGET_PID && !fk_target_pid_list(rq->target_arg, NULL, NULL, err, errlen))
        return FK_EXIT_USAGE;
    struct fk_event ev;
    const char *unit, *countname;
    return fk_profile_ops(rq->kind)->event(rq, &ev, &unit, &countname, err, errlen);
}

static bool resolve_target(const struct fk_profile_request *rq, struct fk_target *t, char *err,
                           size_t errlen)
{
    switch (rq->target) {
    case FK_TARGET_HOST: return fk_target_host(t);
    case FK_TARGET_PID: return fk_target_pids(t, rq->target_arg, err, errlen);
    case FK_TARGET_USER: return fk_target_user(t, rq->target_arg, err, errlen);
    case FK_TARGET_CGROUP: return fk_target_cgroup(t, rq->target_arg, err, errlen);
    case FK_TARGET_RUN: return true;    /* forked once the output is ready */
    }
    snprintf(err, errlen, "unknown target kind %d", (int)rq->target);
    return false;
}

static bool check_writable(const char *dir, char *err, size_t errlen)
{
    char *probe = fk_asprintf("%s/.flamekit-probe.%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int e = errno;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    free(probe);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write into %s: %s; choose a writable directory with -o DIR",
                 dir, strerror(e));
        return false;
    }
    return true;
}

/* A new directory under parent, never an existing one. */
static char *make_new_dir(const char *parent, const char *base, char *err, size_t errlen)
{
    for (int i = 1; i < 100; i++) {
        char *p = i == 1 ? fk_asprintf("%s/%s", parent, base)
                         : fk_asprintf("%s/%s-%d", parent, base, i);
        if (mkdir(p, 0700) == 0)
            return p;
        int e = errno;
        free(p);
        if (e != EEXIST) {
            snprintf(err, errlen, "cannot create an output directory in %s: %s; choose one with "
                     "-o DIR", parent, strerror(e));
            return NULL;
        }
    }
    snprintf(err, errlen, "cannot find a new output directory name in %s; choose one with -o DIR",
             parent);
    return NULL;
}

/* Where the files go, settled before a minute of capturing. */
static bool prepare_dir(const struct fk_profile_request *rq, struct fk_profile_result *res,
                        bool *created)
{
    *created = false;
    if (rq->temp_dir) {
        const char *tmp = getenv("TMPDIR");
        char *tmpl = fk_asprintf("%s/flamekit.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(tmpl)) {
            snprintf(res->error, sizeof res->error, "cannot create a temporary directory in %s: "
                     "%s; set TMPDIR to a writable directory", tmp && *tmp ? tmp : "/tmp",
                     strerror(errno));
            free(tmpl);
            return false;
        }
        res->dir = tmpl;
        res->dir_is_temp = *created = true;
        return true;
    }
    if (rq->outdir) {
        struct stat st;
        if (stat(rq->outdir, &st) < 0 && errno == ENOENT) {
            if (mkdir(rq->outdir, 0700) < 0) {
                snprintf(res->error, sizeof res->error, "cannot create %s: %s; choose a writable "
                         "directory with -o DIR", rq->outdir, strerror(errno));
                return false;
            }
            *created = true;
        }
        if ((!*created && !fk_outdir_check(rq->outdir, true, res->error, sizeof res->error)) ||
            !check_writable(rq->outdir, res->error, sizeof res->error)) {
            if (*created)
                rmdir(rq->outdir);
            *created = false;
            return false;
        }
        res->dir = fk_strdup(rq->outdir);
        return true;
    }
    /* the new directory comes after the capture; in a directory others
     * may rename entries of, it could be swapped for a symlink by then */
    return fk_outdir_check(".", false, res->error, sizeof res->error) &&
           check_writable(".", res->error, sizeof res->error);
}

/* Remove what this run wrote, and its directory if it made it. */
static void undo_files(struct fk_profile_result *res, bool dir_created)
{
    for (int k = 0; k < FK_RESULT_NKINDS; k++)
        if (res->files[k]) {
            unlink(res->files[k]);
            free(res->files[k]);
            res->files[k] = NULL;
        }
    if (res->dir && dir_created)
        rmdir(res->dir);
}

/* ---- writers, one per result kind ---------------------------------- */

static bool write_folded(const struct fk_profile_request *rq, struct fk_profile_result *res,
                         struct fk_outfile *of)
{
    (void)rq;
    return fk_folded_write(of, &res->cap.stacks);
}

static bool write_svg(const struct fk_profile_request *rq, struct fk_profile_result *res,
                      struct fk_outfile *of)
{
    const struct fk_profile_ops *ops = fk_profile_ops(rq->kind);
    struct fk_svg_opts so;
    fk_svg_opts_init(&so);
    char *title = ops->title(rq, res), *sub = ops->subtitle(rq, res);
    so.title = rq->title ? rq->title : title;
    so.subtitle = sub;
    so.countname = res->countname;
    so.colors = ops->colors;
    so.metadata = res->meta;
    bool ok = fk_svg_write(of, &res->cap.stacks, &so);
    free(title);
    free(sub);
    return ok;
}

/* The pprof bytes were made on a second thread while the folded file and
 * the SVG were written (write_files starts it); here they are collected. */
static bool write_pprof(const struct fk_profile_request *rq, struct fk_profile_result *res,
                        struct fk_outfile *of)
{
    (void)rq;
    struct fk_buf gz = FK_BUF_INIT;
    uint64_t t = fk_now_ns();
    bool ok = fk_pprof_gz_finish(res->pprof_job, &gz, &res->pprof_cpu_ns);
    res->pprof_job = NULL;
    res->pprof_wait_ns = fk_now_ns() - t;
    if (!ok)
        errno = ENOMEM;
    ok = ok && fk_outfile_write(of, gz.data, gz.len);
    fk_buf_free(&gz);
    return ok;
}

static bool write_json(const struct fk_profile_request *rq, struct fk_profile_result *res,
                       struct fk_outfile *of)
{
    (void)rq;
    char *js = json_dumps(res->meta, JSON_INDENT(2) | JSON_SORT_KEYS);
    bool ok = js && fk_outfile_write(of, js, strlen(js)) && fk_outfile_write(of, "\n", 1);
    free(js);
    return ok;
}

static const struct {
    bool (*write)(const struct fk_profile_request *, struct fk_profile_result *, struct fk_outfile *);
    bool gzip;
} writers[FK_RESULT_NKINDS] = {
    [FK_RESULT_FOLDED] = { write_folded, true },
    [FK_RESULT_SVG] = { write_svg, false },
    [FK_RESULT_PPROF] = { write_pprof, false },     /* gzip'ed on its thread */
    [FK_RESULT_JSON] = { write_json, false },
};

static unsigned wanted_outputs(const struct fk_profile_request *rq)
{
    unsigned w = rq->outputs ? rq->outputs : (1u << FK_RESULT_NKINDS) - 1;
    if (rq->no_svg)
        w &= ~FK_OUTPUT(FK_RESULT_SVG);
    return w;
}

/* A pprof thread still running when a write failed: wait, drop its bytes. */
static void drop_pprof_job(struct fk_profile_result *res)
{
    if (!res->pprof_job)
        return;
    struct fk_buf drop = FK_BUF_INIT;
    fk_pprof_gz_finish(res->pprof_job, &drop, NULL);
    fk_buf_free(&drop);
    res->pprof_job = NULL;
}

/* Where the time after the capture went (bench/pprof.sh reads it): the
 * JSON, written last, gets post_capture_ms. t[k]: when kind k was done. */
static void add_timings(struct fk_profile_result *res, uint64_t t0, const uint64_t *t)
{
    json_t *tj = json_object();
    uint64_t prev = t0;
    static const char *const names[FK_RESULT_NKINDS] = {
        [FK_RESULT_FOLDED] = "folded", [FK_RESULT_SVG] = "svg", [FK_RESULT_PPROF] = "pprof",
    };
    json_object_set_new(tj, "naming", json_real((double)res->cap.naming_ns / 1e6));
    for (int k = 0; k < FK_RESULT_NKINDS; k++)
        if (t[k] && names[k]) {
            json_object_set_new(tj, names[k], json_real((double)(t[k] - prev) / 1e6));
            prev = t[k];
        }
    if (t[FK_RESULT_PPROF]) {
        json_object_set_new(tj, "pprof_wait", json_real((double)res->pprof_wait_ns / 1e6));
        json_object_set_new(tj, "pprof_encode_cpu", json_real((double)res->pprof_cpu_ns / 1e6));
    }
    json_object_set_new(res->meta, "post_capture_ms", tj);
}

static bool write_files(const struct fk_profile_request *rq, struct fk_profile_result *res)
{
    unsigned want = wanted_outputs(rq);
    uint64_t t0 = fk_now_ns(), t[FK_RESULT_NKINDS] = { 0 };
    if (want & FK_OUTPUT(FK_RESULT_PPROF))
        res->pprof_job = fk_pprof_gz_start(&res->cap.prof, res->meta);
    for (int k = 0; k < FK_RESULT_NKINDS; k++) {
        if (!(want & FK_OUTPUT(k)))
            continue;
        if (k == FK_RESULT_JSON)
            add_timings(res, t0, t);
        char *path = fk_result_path(res->dir, res->base, (enum fk_result_kind)k);
        struct fk_outfile of;
        bool ok = writers[k].gzip
                      ? fk_outfile_open_gz(&of, path, 0644, res->error, sizeof res->error)
                      : fk_outfile_open(&of, path, 0644, res->error, sizeof res->error);
        if (ok && !writers[k].write(rq, res, &of)) {
            snprintf(res->error, sizeof res->error, "cannot write %s: %s", path, strerror(errno));
            fk_outfile_abort(&of);
            ok = false;
        } else if (ok) {
            ok = fk_outfile_commit(&of, res->error, sizeof res->error);
        }
        t[k] = fk_now_ns();
        if (!ok) {
            free(path);
            drop_pprof_job(res);
            return false;
        }
        res->files[k] = path;
    }
    return true;
}

static int wait_status_code(int ws)
{
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 0;
}

/* A 'run' target's command forked (it waits before its exec until the
 * engine's events are open: capture/target.h); false with why in
 * res->error. */
static bool start_command(const struct fk_profile_request *rq, struct fk_profile_result *res)
{
    if (!fk_target_run(&res->target, rq->run_argv, rq->stream_fd == STDOUT_FILENO, res->error,
                       sizeof res->error))
        return false;
    if (rq->run_pid)
        *rq->run_pid = res->target.pids[0];
    if (rq->redact_args) {
        /* the description goes into the SVG title, the .json, the summary
         * and the --stdout stream: no arguments in it */
        free(res->target.desc);
        res->target.desc = fk_asprintf("command: %s (arguments redacted)", rq->run_argv[0]);
    }
    return true;
}

/* The capture's options from the request and the kind's event. */
static void capture_opts_from(const struct fk_profile_request *rq, struct fk_profile_result *res,
                              struct fk_capture_opts *co)
{
    fk_capture_opts_init(co);
    co->event = res->event;
    co->target = &res->target;
    co->duration_ms = rq->duration_ms;
    co->max_mem_bytes = rq->max_mem_bytes;
    co->weight_by_period = res->event.freq == 0;
    co->value_name = res->unit;     /* pprof: faults/count, switches/count... */
    co->quiet = rq->quiet;
    co->progress = rq->progress;
    co->progress_ctx = rq->progress_ctx;
    co->warn = rq->warn;
    co->warn_ctx = rq->warn_ctx;
    co->stop = rq->stop;
    co->sym.kernel = !rq->no_kernel;
    co->no_priority = rq->no_priority;
    co->callgraph = (enum fk_callgraph)rq->callgraph;
    if (rq->stack_size)
        co->stack_size = (uint32_t)rq->stack_size;
    if (rq->no_debuginfod)
        co->sym.debuginfod_urls = NULL;
    else if (rq->debuginfod)
        co->sym.debuginfod_urls = rq->debuginfod;
}

/* The duration limit ended the capture of a 'run' target: the command goes
 * on, and its exit status is the result's. */
static void wait_for_command(const struct fk_profile_request *rq, struct fk_profile_result *res)
{
    if (!rq->quiet && rq->warn) {
        char msg[128];
        snprintf(msg, sizeof msg, "capture ended (%s); waiting for the command to exit",
                 res->cap.stop_reason);
        rq->warn(rq->warn_ctx, msg);
    }
    int ws;
    while (waitpid(res->target.pids[0], &ws, 0) < 0 && errno == EINTR)
        ;
    res->cap.child_exited = true;
    res->cap.child_status = ws;
}

int fk_profile_run(const struct fk_profile_request *rq, struct fk_profile_result *res)
{
    memset(res, 0, sizeof *res);
    const struct fk_profile_ops *ops = fk_profile_ops(rq->kind);
    bool run = rq->target == FK_TARGET_RUN;
    int fail = run ? 125 : FK_EXIT_ERROR;
    res->status = fail;
    res->host = fk_result_hostname();
    if (ops->event(rq, &res->event, &res->unit, &res->countname, res->error, sizeof res->error))
        return res->status = FK_EXIT_USAGE;
    if (rq->no_kernel)
        res->event.exclude_kernel = true;
    if (!resolve_target(rq, &res->target, res->error, sizeof res->error)) {
        res->bad_target = true;
        return res->status;
    }
    bool dir_created;
    if (!prepare_dir(rq, res, &dir_created))
        return res->status;
    if (run && !start_command(rq, res)) {
        undo_files(res, dir_created);
        return res->status;
    }
    struct fk_capture_opts co;
    capture_opts_from(rq, res, &co);
    co.kind = ops->evkind;
    if (ops->prepare && ops->prepare(rq, res, &co) != 0) {
        undo_files(res, dir_created);
        return res->status;
    }
    /* CPython frames: a stack hook with its share of --max-memory, after
     * any the profile kind set */
    struct fk_pyframes pyf;
    const struct fk_stack_hook *hooks[8];
    bool python = false;
    if (rq->python != FK_PYTHON_OFF && co.nstack_hooks < 8) {
        python = true;
        for (size_t i = 0; i < co.nstack_hooks; i++)
            hooks[i] = co.stack_hooks[i];
        fk_pyframes_init(&pyf, rq->python == FK_PYTHON_LINES, rq->max_mem_bytes / 8);
        hooks[co.nstack_hooks] = &pyf.hook;
        co.stack_hooks = hooks;
        co.nstack_hooks++;
    }
    int rc = fk_capture_run(&co, &res->cap, res->error, sizeof res->error);
    if (python)
        fk_pyframes_finish(&pyf, &res->python);
    if (rc != FK_EXIT_OK) {
        if (rq->run_pid)
            *rq->run_pid = 0;
        fk_target_remove_cgroup(&res->target, rq->warn, rq->warn_ctx);
        if (run && res->cap.child_exited && (rc == 126 || rc == 127))
            res->status = rc;       /* the command could not be started */
        undo_files(res, dir_created);
        return res->status;
    }
    res->captured = true;
    if (run && !res->cap.child_exited)
        wait_for_command(rq, res);
    if (rq->run_pid)
        *rq->run_pid = 0;
    fk_target_remove_cgroup(&res->target, rq->warn, rq->warn_ctx);
    if (ops->after)
        ops->after(rq, res);

    res->base = fk_result_base(res->host, res->cap.start_realtime_ns, res->target.scope,
                               ops->name);
    if (!res->dir) {
        res->dir = make_new_dir(".", res->base, res->error, sizeof res->error);
        if (!res->dir)
            return res->status;
        dir_created = true;
    }
    res->meta = fk_profile_metadata(rq, res);
    if (!write_files(rq, res)) {
        undo_files(res, dir_created);
        return res->status;
    }
    if (ops->ok && !ops->ok(rq, res))
        return res->status;     /* the files stay: they show what went wrong */
    res->status = run ? wait_status_code(res->cap.child_status) : FK_EXIT_OK;
    return res->status;
}

/* ---- summary -------------------------------------------------------- */

struct leaf { const char *name; size_t len; uint64_t count; };

static int cmp_leaf_name(const void *a, const void *b)
{
    const struct leaf *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int cmp_leaf_count(const void *a, const void *b)
{
    const struct leaf *x = a, *y = b;
    return (x->count < y->count) - (x->count > y->count);
}

/* The leaf frames (where the time or the events went), by share. */
static void print_top(FILE *out, const struct fk_profile_ops *ops, const struct fk_stacktab *t,
                      int n)
{
    if (!t->total)
        return;
    struct leaf *v = fk_calloc(t->n ? t->n : 1, sizeof *v);
    for (size_t i = 0; i < t->n; i++) {
        const char *k = t->v[i].key;
        size_t len = ops->top_end ? ops->top_end(k, t->v[i].len) : t->v[i].len;
        const char *semi = memrchr(k, ';', len);
        v[i].name = semi ? semi + 1 : k;
        v[i].len = len - (size_t)(v[i].name - k);
        v[i].count = t->v[i].count;
    }
    qsort(v, t->n, sizeof *v, cmp_leaf_name);
    size_t m = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (m && v[m - 1].len == v[i].len && !memcmp(v[m - 1].name, v[i].name, v[i].len))
            v[m - 1].count += v[i].count;
        else
            v[m++] = v[i];
    }
    qsort(v, m, sizeof *v, cmp_leaf_count);
    fprintf(out, "  top frames (self):\n");
    struct fk_buf nb = FK_BUF_INIT;
    for (size_t i = 0; i < m && (int)i < n; i++) {
        fk_buf_reset(&nb);
        fk_name_display(v[i].name, v[i].len, &nb);     /* "do_idle (kernel)" */
        /* the profiled process named it: no escapes to our terminal */
        size_t len = fk_text_sanitize_n(nb.data, nb.len > 100 ? 100 : nb.len);
        fprintf(out, "    %5.1f%%  %.*s\n", 100.0 * (double)v[i].count / (double)t->total,
                (int)len, nb.data);
    }
    fk_buf_free(&nb);
    free(v);
}

void fk_profile_summary(FILE *out, const struct fk_profile_request *rq,
                        const struct fk_profile_result *res)
{
    if (!res->captured)
        return;
    const struct fk_capture_result *r = &res->cap;
    const struct fk_event *ev = &res->event;
    const char *ended = r->stop_reason ? r->stop_reason : "";
    char *desc = fk_strdup(res->target.desc);     /* names a command, a cgroup */
    fk_text_sanitize(desc);
    fprintf(out, "%s: %s\n", fk_progname, desc);
    free(desc);
    if (ev->freq)
        fprintf(out, "  event %s at %llu Hz per CPU, %.1f s (ended: %s), %llu samples\n",
                ev->name, (unsigned long long)ev->freq, (double)r->duration_ns / 1e9, ended,
                (unsigned long long)r->samples_kept);
    else
        fprintf(out, "  event %s, 1 in %llu, %.1f s (ended: %s), %llu samples\n", ev->name,
                (unsigned long long)ev->period, (double)r->duration_ns / 1e9, ended,
                (unsigned long long)r->samples_kept);
    fprintf(out, "  lost %llu records, throttled %llu times, %zu unique stacks, %.1f MB peak\n",
            (unsigned long long)r->lost, (unsigned long long)r->throttled, r->stacks.n,
            (double)r->mem_bytes / 1048576.0);
    if (r->tree_followed && !r->tree_cgroup) {
        fprintf(out, "  tree: per-CPU events over the host, other processes' samples dropped in "
                "the kernel (BPF; %s), the target's processes kept by their fork/exit records: "
                "%llu processes (%llu forked, %llu exited), %llu samples dropped after\n",
                r->tree_note, (unsigned long long)r->tree.processes,
                (unsigned long long)r->tree.forks, (unsigned long long)r->tree.exits,
                (unsigned long long)r->samples_outside);
        if (r->tree.not_followed)
            fprintf(out, "  tree: INCOMPLETE: %llu processes or threads not followed (the "
                    "in-kernel tree map was full): their samples were dropped\n",
                    (unsigned long long)r->tree.not_followed);
    } else if (r->tree_followed)
        fprintf(out, "  tree: per-CPU events in the cgroup %s, the target's processes kept by "
                "their fork/exit records: %llu processes (%llu forked, %llu exited), %llu "
                "samples of the cgroup's others dropped\n", r->tree_cgroup,
                (unsigned long long)r->tree.processes, (unsigned long long)r->tree.forks,
                (unsigned long long)r->tree.exits, (unsigned long long)r->samples_outside);
    else if (r->tree_cgroup)
        fprintf(out, "  tree: per-CPU events in the cgroup %s, every process from its start; "
                "%llu forks, %llu exits\n", r->tree_cgroup, (unsigned long long)r->forks,
                (unsigned long long)r->exits);
    else if (r->tree_mode)
        fprintf(out, "  tree: inherited per-task events (%s): %llu forks, %llu exits; a child "
                "that runs less than one period is not sampled\n", r->tree_note,
                (unsigned long long)r->forks, (unsigned long long)r->exits);
    const struct fk_profile_ops *ops = fk_profile_ops(rq->kind);
    if (ops->summary)
        ops->summary(out, rq, res);
    if (r->callgraph == FK_CG_DWARF) {
        const struct fk_unwind_stats *u = &r->unwind;
        double n = u->samples ? (double)u->samples : 1;
        fprintf(out, "  user stacks: dwarf, %u-byte copies: %.1f%% complete, %.1f%% [truncated], "
                "%.1f%% stopped early; %.1f us median per stack\n", r->stack_size,
                100.0 * (double)u->complete / n, 100.0 * (double)u->truncated / n,
                100.0 * (double)u->failed / n, u->median_us);
    } else if (r->callgraph_note[0]) {
        fprintf(out, "  user stacks by %s\n", r->callgraph_note);
    }
    const struct fk_python_stats *py = &res->python;
    if (py->processes) {
        double sp = py->spliced ? (double)py->spliced : 1;
        fprintf(out, "  python %s in %llu process%s: %llu of %llu samples with Python frames, "
                "%.1f%% consistent (%llu [python: changed], %llu on cut native stacks); "
                "%.1f us median per sample, read %.1f ms after it (median; p90 %.1f ms)\n",
                py->versions, (unsigned long long)py->processes, py->processes == 1 ? "" : "es",
                (unsigned long long)py->spliced, (unsigned long long)py->samples,
                100.0 * (double)py->consistent / sp, (unsigned long long)py->changed,
                (unsigned long long)py->native_cut, py->median_us, py->delay_median_ms,
                py->delay_p90_ms);
    }
    if (py->unknown_version)
        fprintf(out, "  python: %llu process%s of a version without a layout (%s): native "
                "stacks only\n", (unsigned long long)py->unknown_version,
                py->unknown_version == 1 ? "" : "es", py->versions);
    if (r->lost)
        fprintf(out, "  WARNING: the kernel dropped %llu records (ring full); shares may be skewed\n",
                (unsigned long long)r->lost);
    if (r->mem_limited)
        fprintf(out, "  WARNING: stopped early at the memory limit (%llu MB); see --max-memory\n",
                (unsigned long long)(rq->max_mem_bytes >> 20));
    if (r->stop_reason && !strcmp(r->stop_reason, "signal"))
        fprintf(out, "  stopped early by a signal; the files cover the time captured\n");
    print_top(out, ops, &r->stacks, 10);
    if (rq->target == FK_TARGET_RUN && r->child_exited && wait_status_code(r->child_status))
        fprintf(out, "  the command exited with status %d\n", wait_status_code(r->child_status));
    if (rq->stream_fd < 0)
        for (int k = 0; k < FK_RESULT_NKINDS; k++)
            if (res->files[k])
                fprintf(out, "  %s\n", res->files[k]);
}

/* ---- delivery ------------------------------------------------------- */

int fk_profile_deliver(const struct fk_profile_request *rq, struct fk_profile_result *res)
{
    const char *paths[FK_RESULT_NKINDS];
    size_t n = 0;
    for (int k = 0; k < FK_RESULT_NKINDS; k++)
        if (res->files[k])
            paths[n++] = res->files[k];
    if (!n)
        return res->status;
    /* --upload: any file that did not arrive makes the status 1 and stays */
    if (rq->upload) {
        struct fk_upload_opts uo = { .quiet = rq->quiet, .report = rq->upload_report,
                                     .report_ctx = rq->upload_report_ctx, .warn = rq->warn,
                                     .warn_ctx = rq->warn_ctx };
        if (fk_upload_paths(rq->upload, paths, n, NULL, &uo) != 0 && res->status == FK_EXIT_OK)
            res->status = FK_EXIT_ERROR;
    }
    if (rq->stream_fd >= 0) {
        struct fk_stream_writer w;
        const struct fk_capture_result *r = &res->cap;
        char *msg = fk_asprintf("%s: %llu samples, %llu lost, %.1f s (%s)%s%s", res->target.desc,
                                (unsigned long long)r->samples_kept, (unsigned long long)r->lost,
                                (double)r->duration_ns / 1e9, r->stop_reason ? r->stop_reason : "",
                                res->checked ? "; " : "", res->checked ? res->check.summary : "");
        bool ok = fk_stream_begin(&w, rq->stream_fd);
        for (size_t i = 0; ok && i < n; i++)
            ok = fk_stream_file_path(&w, strrchr(paths[i], '/') + 1, paths[i]);
        if (ok)
            ok = fk_stream_end(&w, res->status, msg);
        free(msg);
        if (!ok) {
            snprintf(res->error, sizeof res->error, "%s", w.error);
            res->status = rq->target == FK_TARGET_RUN ? 125 : FK_EXIT_ERROR;
        }
    }
    return res->status;
}

/* Remove a temporary result directory (flat: only our files in it). */
static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                char *p = fk_asprintf("%s/%s", dir, de->d_name);
                unlink(p);
                free(p);
            }
        closedir(d);
    }
    rmdir(dir);
}

void fk_profile_result_free(struct fk_profile_result *res)
{
    drop_pprof_job(res);
    if (res->dir && res->dir_is_temp)
        rm_tree(res->dir);
    for (int k = 0; k < FK_RESULT_NKINDS; k++)
        free(res->files[k]);
    free(res->dir);
    free(res->base);
    free(res->host);
    json_decref(res->meta);
    if (res->captured)
        fk_capture_result_free(&res->cap);
    fk_target_free(&res->target);
    memset(res, 0, sizeof *res);
}
