/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit host|pid|user|cgroup|run: the shared front end (record.h). */
#include "capture/record.h"
#include "deliver/stream.h"
#include "deliver/upload.h"
#include "render/svg.h"
#include "stacks/names.h"
#include "util/buf.h"
#include "util/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct fk_record_files fk_record_written;

static volatile sig_atomic_t stop_flag;
static volatile pid_t forward_pid;

/* run: pass the signal on, unless the terminal sent it (then the command,
 * in the same process group, already has it). */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    stop_flag = sig;
    if (forward_pid > 0 && (!si || si->si_code != SI_KERNEL))
        kill(forward_pid, sig);
}

static void usage(const struct fk_record_spec *s, FILE *out)
{
    fprintf(out,
            "usage: flamekit %s [OPTIONS]%s%s\n"
            "\n"
            "Sample on-CPU stacks (kernel and user) of %s at %d Hz for %s,\n"
            "then write HOST.YYYYMMDD_HHMMSS_UTC.SCOPE.{flamegraph.svg,folded.gz,json}\n"
            "into a new private directory (or -o DIR) and print a summary.\n"
            "\n"
            "Options:\n"
            "  -d, --duration DUR     capture length: 30, 30s, 2m, 500ms (default %s;\n"
            "                         at most 5m)\n"
            "  -F, --freq HZ          samples per second per CPU (default %d, at most %d\n"
            "                         and the kernel's perf_event_max_sample_rate)\n"
            "  -o, --output-dir DIR   write the files into DIR (created 0700 if missing)\n"
            "      --stdout           stream the files to stdout (for ssh / flamekit remote)\n"
            "      --no-svg           skip the SVG (folded.gz and json only)\n"
            "      --no-kernel        user-space stacks only (works with perf_event_paranoid 2\n"
            "                         for your own processes)\n"
            "      --max-memory SIZE  stop cleanly when stacks and symbols use more\n"
            "                         (default 256M, at most 1G)\n"
            "      --unsafe-limits    allow durations up to 24h, frequencies up to the\n"
            "                         kernel's limit and memory up to 16G\n"
            "      --upload URL       then upload the files to s3://BUCKET/PREFIX/, gs://...\n"
            "                         (credentials and endpoint: see flamekit-upload(1))\n"
            "  -q, --quiet            no progress line and no summary\n"
            "  -h, --help             this text\n"
            "\n"
            "Ctrl-C or SIGTERM ends the capture early; the files are still complete.\n"
            "See flamekit-record(1).\n",
            s->name, s->operand ? " " : "", s->operand ? s->operand : "",
            s->kind == FK_TARGET_HOST     ? "every process on every CPU"
            : s->kind == FK_TARGET_PID    ? "the processes (all threads and children)"
            : s->kind == FK_TARGET_USER   ? "the user's processes"
            : s->kind == FK_TARGET_CGROUP ? "the cgroup (and its descendants)"
                                          : "the command (and its children)",
            FK_REC_DEFAULT_FREQ,
            s->kind == FK_TARGET_RUN ? "as long as the command runs" : "60 seconds",
            s->kind == FK_TARGET_RUN ? "until the command exits" : "60s",
            FK_REC_DEFAULT_FREQ, FK_REC_MAX_FREQ);
}

/* Create a new directory name under parent; never reuse one. */
static char *make_new_dir(const char *parent, const char *base)
{
    for (int i = 1; i < 100; i++) {
        char *p = i == 1 ? fk_asprintf("%s/%s", parent, base)
                         : fk_asprintf("%s/%s-%d", parent, base, i);
        if (mkdir(p, 0700) == 0)
            return p;
        int e = errno;
        free(p);
        if (e != EEXIST) {
            fk_error("cannot create an output directory in %s: %s; choose one with -o DIR",
                     parent, strerror(e));
            return NULL;
        }
    }
    fk_error("cannot find a new output directory name in %s", parent);
    return NULL;
}

static bool check_writable(const char *dir)
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
        fk_error("cannot write into %s: %s; choose a writable directory with -o DIR",
                 dir, strerror(e));
        return false;
    }
    return true;
}

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

static json_t *metadata(const struct fk_record_spec *spec, const struct fk_capture_opts *co,
                        const struct fk_capture_result *r, int argc, char **argv)
{
    json_t *m = json_object();
    json_object_set_new(m, "tool", json_string("flamekit"));
    json_object_set_new(m, "version", json_string(FK_VERSION));
    json_object_set_new(m, "command", json_string(spec->name));
    json_object_set_new(m, "profile", json_string(spec->profile ? spec->profile : "cpu"));
    json_t *inv = json_array();
    struct fk_buf s = FK_BUF_INIT;
    fk_buf_adds(&s, "flamekit");
    for (int i = 0; i < argc; i++) {
        json_array_append_new(inv, json_string(argv[i]));
        fk_buf_printf(&s, " %s", argv[i]);
    }
    json_object_set_new(m, "argv", inv);
    json_object_set_new(m, "invocation", json_string(fk_buf_cstr(&s)));
    fk_buf_free(&s);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd))
        json_object_set_new(m, "cwd", json_string(cwd));
    fk_sysinfo_json(m);

    time_t st = (time_t)(r->start_realtime_ns / 1000000000ull);
    struct tm tm;
    char when[64];
    gmtime_r(&st, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(m, "start_time", json_string(when));
    json_object_set_new(m, "start_unix_ns", json_integer((json_int_t)r->start_realtime_ns));
    json_object_set_new(m, "duration_s", json_real((double)r->duration_ns / 1e9));
    json_object_set_new(m, "duration_limit_s", json_real((double)co->duration_ms / 1e3));
    json_object_set_new(m, "stop_reason", json_string(r->stop_reason ? r->stop_reason : ""));

    json_t *ev = json_object();
    json_object_set_new(ev, "name", json_string(co->event.name));
    json_object_set_new(ev, "type", json_integer(co->event.type));
    json_object_set_new(ev, "config", json_integer((json_int_t)co->event.config));
    if (co->event.freq) {
        json_object_set_new(ev, "mode", json_string("frequency"));
        json_object_set_new(ev, "frequency_hz", json_integer((json_int_t)co->event.freq));
    } else {
        json_object_set_new(ev, "mode", json_string("period"));
        json_object_set_new(ev, "period", json_integer((json_int_t)co->event.period));
    }
    json_object_set_new(ev, "kernel", json_boolean(!co->event.exclude_kernel));
    json_object_set_new(ev, "user", json_boolean(!co->event.exclude_user));
    json_object_set_new(ev, "callchain", json_string(co->event.no_callchain ? "none" : "frame pointers"));
    json_object_set_new(ev, "count", json_integer((json_int_t)r->event_count));
    json_object_set_new(ev, "time_enabled_ns", json_integer((json_int_t)r->time_enabled));
    json_object_set_new(ev, "time_running_ns", json_integer((json_int_t)r->time_running));
    json_object_set_new(m, "event", ev);
    json_object_set_new(m, "frequency_hz", json_integer((json_int_t)co->event.freq));
    if (!co->event.freq)
        json_object_set_new(m, "period", json_integer((json_int_t)co->event.period));

    json_object_set_new(m, "samples", json_integer((json_int_t)r->samples_kept));
    json_object_set_new(m, "samples_read", json_integer((json_int_t)r->samples));
    json_object_set_new(m, "weight_total", json_integer((json_int_t)r->stacks.total));
    json_object_set_new(m, "lost", json_integer((json_int_t)r->lost));
    json_object_set_new(m, "lost_records", json_integer((json_int_t)r->lost_events));
    json_object_set_new(m, "throttled", json_integer((json_int_t)r->throttled));
    json_object_set_new(m, "unthrottled", json_integer((json_int_t)r->unthrottled));
    json_object_set_new(m, "unique_stacks", json_integer((json_int_t)r->stacks.n));
    json_object_set_new(m, "memory_peak_bytes", json_integer((json_int_t)r->mem_bytes));
    json_object_set_new(m, "memory_limited", json_boolean(r->mem_limited));
    json_object_set_new(m, "ring_pages_per_cpu", json_integer(r->ring_pages));

    const struct fk_target *t = co->target;
    json_t *tg = json_object();
    static const char *kinds[] = { "host", "pid", "user", "cgroup", "run" };
    json_object_set_new(tg, "kind", json_string(kinds[t->kind]));
    json_object_set_new(tg, "scope", json_string(t->scope));
    json_object_set_new(tg, "description", json_string(t->desc));
    if (t->kind == FK_TARGET_PID || t->kind == FK_TARGET_RUN) {
        json_t *pids = json_array();
        for (size_t i = 0; i < t->npids; i++)
            json_array_append_new(pids, json_integer(t->pids[i]));
        json_object_set_new(tg, "pids", pids);
    }
    if (t->kind == FK_TARGET_USER) {
        json_object_set_new(tg, "user", json_string(t->user));
        json_object_set_new(tg, "uid", json_integer(t->uid));
    }
    if (t->kind == FK_TARGET_CGROUP) {
        json_object_set_new(tg, "cgroup", json_string(t->cgroup_rel));
        json_object_set_new(tg, "cgroup_dir", json_string(t->cgroup_dir));
    }
    if (t->kind == FK_TARGET_RUN && r->child_exited) {
        int ws = r->child_status;
        if (WIFEXITED(ws))
            json_object_set_new(tg, "exit_status", json_integer(WEXITSTATUS(ws)));
        else if (WIFSIGNALED(ws))
            json_object_set_new(tg, "exit_signal", json_integer(WTERMSIG(ws)));
    }
    json_object_set_new(m, "target", tg);
    json_t *targets = json_array();
    json_array_append_new(targets, json_string(t->desc));
    json_object_set_new(m, "targets", targets);

    json_t *lim = json_object();
    json_object_set_new(lim, "max_memory_bytes", json_integer((json_int_t)co->max_mem_bytes));
    json_object_set_new(lim, "perf_event_paranoid", json_integer(fk_perf_paranoid()));
    json_object_set_new(lim, "perf_event_max_sample_rate", json_integer((json_int_t)fk_perf_max_sample_rate()));
    json_object_set_new(lim, "perf_event_mlock_kb", json_integer((json_int_t)fk_perf_mlock_kb()));
    json_object_set_new(m, "limits", lim);

    json_t *sy = json_object();
    json_object_set_new(sy, "dsos", json_integer((json_int_t)r->sym.dsos));
    json_object_set_new(sy, "processes", json_integer((json_int_t)r->sym.processes));
    json_object_set_new(sy, "locate_unknown", json_integer((json_int_t)r->sym.locate_unknown));
    json_object_set_new(sy, "names_unresolved", json_integer((json_int_t)r->sym.names_unresolved));
    json_object_set_new(sy, "deleted_files_kept", json_integer((json_int_t)r->sym.deleted_files_kept));
    json_object_set_new(m, "symbols", sy);
    return m;
}

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

/* Top leaf frames (where the time was spent), by share of the total. */
static void print_top(FILE *out, const struct fk_stacktab *t, int n)
{
    if (!t->total)
        return;
    struct leaf *v = fk_calloc(t->n ? t->n : 1, sizeof *v);
    for (size_t i = 0; i < t->n; i++) {
        const char *k = t->v[i].key, *semi = memrchr(k, ';', t->v[i].len);
        v[i].name = semi ? semi + 1 : k;
        v[i].len = t->v[i].len - (size_t)(v[i].name - k);
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
        fprintf(out, "    %5.1f%%  %.*s\n", 100.0 * (double)v[i].count / (double)t->total,
                (int)(nb.len > 100 ? 100 : nb.len), nb.data);
    }
    fk_buf_free(&nb);
    free(v);
}

int fk_record_main(const struct fk_record_spec *spec, int argc, char **argv)
{
    enum { O_STDOUT = 256, O_NOSVG, O_UNSAFE, O_MAXMEM, O_NOKERNEL, O_UPLOAD };
    static const struct option longopts[] = {
        { "duration", required_argument, NULL, 'd' },
        { "freq", required_argument, NULL, 'F' },
        { "output-dir", required_argument, NULL, 'o' },
        { "stdout", no_argument, NULL, O_STDOUT },
        { "no-svg", no_argument, NULL, O_NOSVG },
        { "no-kernel", no_argument, NULL, O_NOKERNEL },
        { "max-memory", required_argument, NULL, O_MAXMEM },
        { "unsafe-limits", no_argument, NULL, O_UNSAFE },
        { "upload", required_argument, NULL, O_UPLOAD },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *dur_arg = NULL, *freq_arg = NULL, *outdir = NULL, *mem_arg = NULL, *upload_url = NULL;
    bool to_stdout = false, no_svg = false, unsafe = false, quiet = false, no_kernel = false;
    opterr = 0;
    optind = 1;
    int c;
    /* run: "+" stops at the first operand so the command keeps its options;
     * the others accept options after the operand too (pid 1234 --stdout) */
    const char *shortopts = spec->kind == FK_TARGET_RUN ? "+d:F:o:qh" : "d:F:o:qh";
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dur_arg = optarg; break;
        case 'F': freq_arg = optarg; break;
        case 'o': outdir = optarg; break;
        case 'q': quiet = true; break;
        case O_STDOUT: to_stdout = true; break;
        case O_NOSVG: no_svg = true; break;
        case O_NOKERNEL: no_kernel = true; break;
        case O_MAXMEM: mem_arg = optarg; break;
        case O_UNSAFE: unsafe = true; break;
        case O_UPLOAD: upload_url = optarg; break;
        case 'h': usage(spec, stdout); return FK_EXIT_OK;
        default:
            if (optopt && strchr("dFo", optopt))
                fk_usage_error("option -%c needs an argument", optopt);
            else if (optopt)
                fk_usage_error("unknown option -%c", optopt);
            else
                fk_usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (to_stdout && outdir)
        fk_usage_error("--stdout and --output-dir exclude each other");
    if (to_stdout && isatty(STDOUT_FILENO))
        fk_usage_error("--stdout writes a binary result stream: redirect it to a file or "
                       "read it with 'flamekit remote'");
    if (to_stdout && upload_url)
        fk_usage_error("--stdout and --upload exclude each other");
    /* A presigned URL names one object, and argv goes into the JSON. */
    if (upload_url && strncmp(upload_url, "s3://", 5) && strncmp(upload_url, "gs://", 5))
        fk_usage_error("--upload wants s3://BUCKET/PREFIX/ or gs://BUCKET/PREFIX/; for a presigned URL use 'flamekit upload FILE URL'");

    struct fk_capture_opts co;
    fk_capture_opts_init(&co);
    uint64_t freq = FK_REC_DEFAULT_FREQ;
    if (freq_arg) {
        if (spec->event && !spec->event->freq)
            fk_usage_error("-F does not apply to this profile (it samples one in N events)");
        if (!fk_parse_u64(freq_arg, &freq) || freq == 0)
            fk_usage_error("bad frequency '%s': give samples per second, e.g. -F 99", freq_arg);
        uint64_t kmax = fk_perf_max_sample_rate();
        if (freq > FK_REC_MAX_FREQ && !unsafe)
            fk_usage_error("frequency %llu Hz is above the safe limit of %d Hz; "
                           "add --unsafe-limits to go beyond", (unsigned long long)freq,
                           FK_REC_MAX_FREQ);
        if (freq > kmax)
            fk_usage_error("frequency %llu Hz is above the kernel's limit "
                           "(/proc/sys/kernel/perf_event_max_sample_rate = %llu)",
                           (unsigned long long)freq, (unsigned long long)kmax);
    }
    uint64_t dur = spec->kind == FK_TARGET_RUN ? 0 : FK_REC_DEFAULT_DURATION_MS;
    uint64_t max_dur = unsafe ? 24 * 3600 * 1000ull : FK_REC_MAX_DURATION_MS;
    if (dur_arg) {
        if (!fk_parse_duration_ms(dur_arg, &dur) || dur == 0)
            fk_usage_error("bad duration '%s': give e.g. 30, 30s, 2m or 500ms", dur_arg);
        if (dur > max_dur)
            fk_usage_error("duration %s is above the limit of %llu s%s", dur_arg,
                           (unsigned long long)(max_dur / 1000),
                           unsafe ? "" : "; add --unsafe-limits to go beyond");
    }
    if (spec->kind == FK_TARGET_RUN && !dur)
        dur = max_dur;
    co.duration_ms = dur;
    co.max_mem_bytes = FK_REC_DEFAULT_MEM;
    if (mem_arg) {
        uint64_t lim = unsafe ? 16ull << 30 : FK_REC_MAX_MEM;
        if (!fk_parse_size(mem_arg, &co.max_mem_bytes) || co.max_mem_bytes < (1 << 20))
            fk_usage_error("bad memory size '%s': give e.g. 256M (at least 1M)", mem_arg);
        if (co.max_mem_bytes > lim)
            fk_usage_error("--max-memory %s is above the limit of %llu MB%s", mem_arg,
                           (unsigned long long)(lim >> 20),
                           unsafe ? "" : "; add --unsafe-limits to go beyond");
    }
    if (spec->event)
        co.event = *spec->event;
    else
        fk_event_cpu_default(&co.event, freq);
    if (no_kernel) {
        co.event.exclude_kernel = true;
        co.sym.kernel = false;
    }
    co.weight_by_period = spec->weight_by_period;
    co.quiet = quiet;
    co.progress = !quiet;
    co.progress_label = fk_progname;
    co.stop = &stop_flag;

    /* operands */
    int nops = argc - optind;
    struct fk_target tgt;
    bool ok;
    switch (spec->kind) {
    case FK_TARGET_HOST:
        if (nops)
            fk_usage_error("unexpected argument '%s' (host takes none)", argv[optind]);
        ok = fk_target_host(&tgt);
        break;
    case FK_TARGET_RUN:
        if (optind < argc && !strcmp(argv[optind], "--"))
            optind++;
        if (optind >= argc)
            fk_usage_error("give the command to run: flamekit run [OPTIONS] -- CMD [ARGS]");
        ok = true;
        break;
    default:
        if (nops != 1)
            fk_usage_error("give exactly one %s", spec->operand);
        ok = spec->kind == FK_TARGET_PID    ? fk_target_pids(&tgt, argv[optind])
             : spec->kind == FK_TARGET_USER ? fk_target_user(&tgt, argv[optind])
                                            : fk_target_cgroup(&tgt, argv[optind]);
    }
    int fail_rc = spec->kind == FK_TARGET_RUN ? 125 : FK_EXIT_ERROR;
    if (!ok)
        return fail_rc;

    /* output location, checked before capturing for a minute */
    char host[256] = "host";
    if (gethostname(host, sizeof host - 1) < 0)
        strcpy(host, "host");
    host[sizeof host - 1] = 0;
    for (char *p = host; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
    char *dir = NULL;
    bool dir_is_tmp = false;
    if (to_stdout) {
        const char *tmp = getenv("TMPDIR");
        char *tmpl = fk_asprintf("%s/flamekit.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        dir = mkdtemp(tmpl);
        if (!dir) {
            fk_error("cannot create a temporary directory: %s", strerror(errno));
            free(tmpl);
            return fail_rc;
        }
        dir_is_tmp = true;
    } else if (outdir) {
        struct stat st;
        if (stat(outdir, &st) < 0 && errno == ENOENT && mkdir(outdir, 0700) < 0) {
            fk_error("cannot create %s: %s; choose a writable directory with -o DIR", outdir,
                     strerror(errno));
            return fail_rc;
        }
        if (!check_writable(outdir))
            return fail_rc;
        dir = fk_strdup(outdir);
    } else if (!check_writable(".")) {
        return fail_rc;
    }

    if (spec->kind == FK_TARGET_RUN) {
        fk_target_run_stdout_to_stderr(to_stdout);
        if (!fk_target_run(&tgt, argv + optind)) {
            free(dir);
            return fail_rc;
        }
        forward_pid = tgt.pids[0];
    }
    co.target = &tgt;

    struct sigaction sa = { 0 };
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    struct fk_capture_result r;
    int rc = fk_capture_run(&co, &r);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    if (rc != FK_EXIT_OK) {
        if (spec->kind == FK_TARGET_RUN && r.child_exited)
            rc = rc == FK_EXIT_ERROR ? fail_rc : rc;
        else if (spec->kind == FK_TARGET_RUN)
            rc = fail_rc;
        forward_pid = 0;
        fk_target_free(&tgt);
        if (dir_is_tmp)
            rm_tree(dir);
        free(dir);
        return rc;
    }
    /* run: wait for the command if the duration cap ended the capture */
    if (spec->kind == FK_TARGET_RUN && !r.child_exited) {
        if (!quiet)
            fk_warn("capture ended (%s); waiting for the command to exit", r.stop_reason);
        int ws;
        while (waitpid(tgt.pids[0], &ws, 0) < 0 && errno == EINTR)
            ;
        r.child_exited = true;
        r.child_status = ws;
    }
    forward_pid = 0;

    /* file names from the capture's start (UTC) */
    time_t st = (time_t)(r.start_realtime_ns / 1000000000ull);
    struct tm tm;
    char stamp[32];
    gmtime_r(&st, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S_UTC", &tm);
    char *scope = spec->profile && strcmp(spec->profile, "cpu")
                      ? fk_asprintf("%s-%s", spec->profile, tgt.scope) : fk_strdup(tgt.scope);
    char *base = fk_asprintf("%s.%s.%s", host, stamp, scope);
    if (!dir) {
        dir = make_new_dir(".", base);
        if (!dir) {
            rc = fail_rc;
            goto done;
        }
    }
    json_t *meta = metadata(spec, &co, &r, argc, argv);
    char *p_folded = fk_asprintf("%s/%s.folded.gz", dir, base);
    char *p_svg = fk_asprintf("%s/%s.flamegraph.svg", dir, base);
    char *p_json = fk_asprintf("%s/%s.json", dir, base);
    memset(&fk_record_written, 0, sizeof fk_record_written);
    bool wrote = true;
    {
        struct fk_outfile of;
        struct fk_stack **sorted = fk_stacktab_sorted(&r.stacks);
        if (fk_outfile_open_gz(&of, p_folded, 0644)) {
            bool w = true;
            for (size_t i = 0; i < r.stacks.n && w; i++)
                w = fk_outfile_printf(&of, "%.*s %llu\n", (int)sorted[i]->len, sorted[i]->key,
                                      (unsigned long long)sorted[i]->count);
            if (w && fk_outfile_commit(&of))
                fk_record_written.paths[fk_record_written.n++] = p_folded;
            else {
                fk_outfile_abort(&of);
                wrote = false;
            }
        } else
            wrote = false;
        free(sorted);
    }
    if (wrote && !no_svg) {
        struct fk_svg_opts so;
        fk_svg_opts_init(&so);
        char rate[48];
        if (co.event.freq)
            snprintf(rate, sizeof rate, "%llu Hz", (unsigned long long)co.event.freq);
        else
            snprintf(rate, sizeof rate, "1 in %llu", (unsigned long long)co.event.period);
        char *sub = fk_asprintf("%s, %s, %s %s, %.1f s, %llu samples%s", host, tgt.desc,
                                co.event.name, rate,
                                (double)r.duration_ns / 1e9, (unsigned long long)r.samples_kept,
                                r.lost ? ", SOME LOST" : "");
        so.title = spec->title ? spec->title : "CPU Flame Graph";
        so.subtitle = sub;
        if (spec->countname)
            so.countname = spec->countname;
        if (spec->colors)
            so.colors = spec->colors;
        so.metadata = meta;
        struct fk_outfile of;
        if (fk_outfile_open(&of, p_svg, 0644) && fk_svg_write(&of, &r.stacks, &so) &&
            fk_outfile_commit(&of))
            fk_record_written.paths[fk_record_written.n++] = p_svg;
        else {
            fk_outfile_abort(&of);
            wrote = false;
        }
        free(sub);
    }
    if (wrote) {
        struct fk_outfile of;
        char *js = json_dumps(meta, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (js && fk_outfile_open(&of, p_json, 0644) && fk_outfile_write(&of, js, strlen(js)) &&
            fk_outfile_write(&of, "\n", 1) && fk_outfile_commit(&of))
            fk_record_written.paths[fk_record_written.n++] = p_json;
        else {
            fk_outfile_abort(&of);
            wrote = false;
        }
        free(js);
    }
    if (!wrote)
        rc = fail_rc;

    /* summary: stderr with --stdout (stdout carries only the stream) */
    FILE *out = to_stdout ? stderr : stdout;
    if (!quiet) {
        fprintf(out, "%s: %s\n", fk_progname, tgt.desc);
        if (co.event.freq)
            fprintf(out, "  event %s at %llu Hz per CPU, %.1f s (ended: %s), %llu samples",
                    co.event.name, (unsigned long long)co.event.freq,
                    (double)r.duration_ns / 1e9, r.stop_reason ? r.stop_reason : "",
                    (unsigned long long)r.samples_kept);
        else
            fprintf(out, "  event %s, 1 in %llu, %.1f s (ended: %s), %llu samples (event count %llu)",
                    co.event.name, (unsigned long long)co.event.period,
                    (double)r.duration_ns / 1e9, r.stop_reason ? r.stop_reason : "",
                    (unsigned long long)r.samples_kept, (unsigned long long)r.event_count);
        fprintf(out, "\n  lost %llu records, throttled %llu times, %zu unique stacks, %.1f MB peak\n",
                (unsigned long long)r.lost, (unsigned long long)r.throttled, r.stacks.n,
                (double)r.mem_bytes / 1048576.0);
        if (r.lost)
            fprintf(out, "  WARNING: the kernel dropped %llu records (ring full); shares may be skewed\n",
                    (unsigned long long)r.lost);
        if (r.mem_limited)
            fprintf(out, "  WARNING: stopped early at the memory limit (%llu MB); see --max-memory\n",
                    (unsigned long long)(co.max_mem_bytes >> 20));
        if (r.stop_reason && !strcmp(r.stop_reason, "signal"))
            fprintf(out, "  stopped early by a signal; the files cover the time captured\n");
        print_top(out, &r.stacks, 10);
        if (!to_stdout)
            for (size_t i = 0; i < fk_record_written.n; i++)
                fprintf(out, "  %s\n", fk_record_written.paths[i]);
    }
    /* --upload: the committed files go to object storage (flamekit-upload(1));
     * any that did not arrive make the exit status 1 and stay in dir. */
    if (upload_url && fk_record_written.n) {
        struct fk_upload_opts uo = { .quiet = quiet };
        if (fk_upload_paths(upload_url, (const char *const *)fk_record_written.paths, fk_record_written.n,
                            NULL, &uo) != 0)
            rc = FK_EXIT_ERROR;
    }
    if (to_stdout) {
        struct fk_stream_writer w;
        int status = rc;
        if (spec->kind == FK_TARGET_RUN && rc == FK_EXIT_OK && WIFEXITED(r.child_status))
            status = WEXITSTATUS(r.child_status);
        char *msg = fk_asprintf("%s: %llu samples, %llu lost, %.1f s (%s)", tgt.desc,
                                (unsigned long long)r.samples_kept, (unsigned long long)r.lost,
                                (double)r.duration_ns / 1e9, r.stop_reason ? r.stop_reason : "");
        bool sok = fk_stream_begin(&w, STDOUT_FILENO);
        for (size_t i = 0; sok && i < fk_record_written.n; i++) {
            const char *name = strrchr(fk_record_written.paths[i], '/') + 1;
            sok = fk_stream_file_path(&w, name, fk_record_written.paths[i]);
        }
        if (sok)
            sok = fk_stream_end(&w, status, wrote ? msg : "flamekit: writing the results failed");
        free(msg);
        if (!sok)
            rc = fail_rc;
    }
    json_decref(meta);
    if (dir_is_tmp)
        rm_tree(dir);
    free(p_folded);
    free(p_svg);
    free(p_json);
    memset(&fk_record_written, 0, sizeof fk_record_written);
done:
    free(base);
    free(scope);
    free(dir);
    if (spec->kind == FK_TARGET_RUN && rc == FK_EXIT_OK) {
        int ws = r.child_status;
        rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 0;
    }
    fk_capture_result_free(&r);
    fk_target_free(&tgt);
    return rc;
}
