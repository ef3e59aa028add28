/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit faults: where a host, process, user, cgroup or command takes page
 * faults (or hits another software event or tracepoint), sampled one in N
 * and verified against the event's own count. */
#include "capture/capture.h"
#include "capture/period_check.h"
#include "capture/record.h"
#include "capture/swevent.h"
#include "deliver/stream.h"
#include "render/svg.h"
#include "stacks/folded.h"
#include "stacks/names.h"
#include "util/buf.h"
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <linux/perf_event.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

enum {
    DEFAULT_PERIOD = 100,
    MIN_PERIOD = 10,                /* below: only with --unsafe */
    DEFAULT_DURATION_MS = 60000,
    MAX_DURATION_MS = 300000,       /* above: only with --unsafe */
};

static void usage(FILE *out)
{
    fprintf(out,
        "usage: flamekit faults [OPTIONS] TARGET\n"
        "\n"
        "Page-fault flame graph: sample one page fault in N (default 100) with user\n"
        "and kernel stacks, weight each sample by N, and check the estimate against\n"
        "the event's own count.\n"
        "\n"
        "Targets:\n"
        "  host                  every process on every CPU\n"
        "  pid PID[,PID...]      these processes (all threads, children included)\n"
        "  user USER|UID         processes of this user (host-wide event, filtered)\n"
        "  cgroup PATH|ID        processes in this cgroup v2 subtree (e.g.\n"
        "                        /system.slice/foo.service) or container (host-wide\n"
        "                        event, filtered)\n"
        "  run [--] CMD [ARGS]   run CMD and profile it (children included) until it\n"
        "                        exits\n"
        "\n"
        "Options:\n"
        "  -c, --every N         sample one hit in N (default %d; at least %d)\n"
        "      --minor           minor faults only (PERF_COUNT_SW_PAGE_FAULTS_MIN)\n"
        "      --major           major faults only (PERF_COUNT_SW_PAGE_FAULTS_MAJ)\n"
        "  -e, --event EVENT     another software event or a tracepoint:\n"
        "                        %s\n"
        "      --user-only       only faults taken in user mode (not those the kernel\n"
        "                        takes copying to user memory)\n"
        "  -d, --duration TIME   capture length (default 60s, run: until CMD exits;\n"
        "                        at most 300s)\n"
        "  -o, --output-dir DIR  write the results into DIR (default: a new private\n"
        "                        directory flamekit-HOST.TIME in the current one)\n"
        "      --stdout          stream the results to stdout (for flamekit remote)\n"
        "      --no-svg          folded stacks and metadata only\n"
        "      --title TEXT      SVG title\n"
        "      --strict          exit 1 if samples x N disagrees with the count\n"
        "      --unsafe          allow -c below %d and -d above 300s\n"
        "  -q, --quiet           no progress line, summary or paths\n"
        "  -h, --help            print this help and exit\n"
        "\n"
        "Writes HOST.YYYYMMDD_HHMMSS_UTC.SCOPE.EVENT.{flamegraph.svg,folded.gz,json};\n"
        "folded counts are samples x N (estimated faults). See flamekit-faults(1).\n",
        DEFAULT_PERIOD, MIN_PERIOD, fk_swevent_list(), MIN_PERIOD);
}

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* Name pieces for files: letters, digits, '-', '_', '.'; the rest '_'. */
static char *file_word(const char *s, size_t max)
{
    struct fk_buf b = FK_BUF_INIT;
    for (size_t i = 0; s[i] && b.len < max; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '-' || ch == '_' || ch == '.';
        fk_buf_addc(&b, ok ? ch : '_');
    }
    if (!b.len)
        fk_buf_adds(&b, "x");
    char *r = fk_strdup(fk_buf_cstr(&b));
    fk_buf_free(&b);
    return r;
}

/* The leaf frames with the most weight, for the summary. */
static void print_top(const struct fk_stacktab *t, unsigned n)
{
    struct fk_stacktab leaves;
    fk_stacktab_init(&leaves);
    for (size_t i = 0; i < t->n; i++) {
        const char *k = t->v[i].key, *semi = strrchr(k, ';');
        const char *leaf = semi ? semi + 1 : k;
        fk_stacktab_add(&leaves, leaf, strlen(leaf), t->v[i].count);
    }
    for (unsigned j = 0; j < n && j < leaves.n; j++) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < leaves.n; i++)
            if (leaves.v[i].aux == 0 && (best == SIZE_MAX || leaves.v[i].count > leaves.v[best].count))
                best = i;
        if (best == SIZE_MAX)
            break;
        leaves.v[best].aux = 1;
        struct fk_buf nb = FK_BUF_INIT;
        fk_name_display(leaves.v[best].key, leaves.v[best].len, &nb);   /* no _[k] tags */
        fprintf(stderr, "  %5.1f%%  %s\n",
                t->total ? 100.0 * (double)leaves.v[best].count / (double)t->total : 0.0,
                fk_buf_cstr(&nb));
        fk_buf_free(&nb);
    }
    fk_stacktab_free(&leaves);
}

int cmd_faults(int argc, char **argv)
{
    enum { OPT_MINOR = 256, OPT_MAJOR, OPT_USER_ONLY, OPT_STDOUT, OPT_NO_SVG, OPT_TITLE,
           OPT_STRICT, OPT_UNSAFE };
    static const struct option longopts[] = {
        { "every", required_argument, NULL, 'c' },
        { "minor", no_argument, NULL, OPT_MINOR },
        { "major", no_argument, NULL, OPT_MAJOR },
        { "event", required_argument, NULL, 'e' },
        { "user-only", no_argument, NULL, OPT_USER_ONLY },
        { "duration", required_argument, NULL, 'd' },
        { "output-dir", required_argument, NULL, 'o' },
        { "stdout", no_argument, NULL, OPT_STDOUT },
        { "no-svg", no_argument, NULL, OPT_NO_SVG },
        { "title", required_argument, NULL, OPT_TITLE },
        { "strict", no_argument, NULL, OPT_STRICT },
        { "unsafe", no_argument, NULL, OPT_UNSAFE },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    uint64_t period = DEFAULT_PERIOD, duration_ms = 0;
    bool duration_set = false, user_only = false, to_stdout = false;
    bool no_svg = false, strict = false, unsafe = false, quiet = false;
    const char *event_spec = NULL, *outdir = NULL, *title = NULL;
    int nevents = 0;
    struct fk_target tg = { 0 };
    char **run_argv = NULL;
    const char *target_word = NULL, *target_arg = NULL;

    /* Options may come before or after the target (not after run's CMD). */
    opterr = 0;
    optind = 1;
    for (;;) {
        int c = getopt_long(argc, argv, "+:c:e:d:o:qh", longopts, NULL);
        if (c == -1) {
            if (optind >= argc || target_word)
                break;
            target_word = argv[optind++];
            if (!strcmp(target_word, "run"))
                break;          /* the rest is the command */
            if (strcmp(target_word, "host")) {
                if (optind >= argc)
                    fk_usage_error("'%s' needs an argument", target_word);
                target_arg = argv[optind++];
            }
            continue;
        }
        switch (c) {
        case 'c':
            if (!fk_parse_u64(optarg, &period) || period == 0)
                fk_usage_error("bad -c/--every '%s': want a positive integer (one hit in N)", optarg);
            break;
        case OPT_MINOR: event_spec = "minor-faults"; nevents++; break;
        case OPT_MAJOR: event_spec = "major-faults"; nevents++; break;
        case 'e': event_spec = optarg; nevents++; break;
        case OPT_USER_ONLY: user_only = true; break;
        case 'd':
            if (!fk_parse_duration_ms(optarg, &duration_ms) || duration_ms == 0)
                fk_usage_error("bad -d/--duration '%s': want e.g. 30, 30s, 2m", optarg);
            duration_set = true;
            break;
        case 'o': outdir = optarg; break;
        case OPT_STDOUT: to_stdout = true; break;
        case OPT_NO_SVG: no_svg = true; break;
        case OPT_TITLE: title = optarg; break;
        case OPT_STRICT: strict = true; break;
        case OPT_UNSAFE: unsafe = true; break;
        case 'q': quiet = true; break;
        case 'h': usage(stdout); return FK_EXIT_OK;
        case ':': fk_usage_error("option '%s' needs an argument", argv[optind - 1]);
        default: fk_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!target_word)
        fk_usage_error("no target: say host, pid PID, user USER, cgroup PATH or run -- CMD");
    if (nevents > 1)
        fk_usage_error("one event per capture: --minor, --major and -e exclude each other");
    if (period < MIN_PERIOD && !unsafe)
        fk_usage_error("-c %llu samples too often: at least %d keeps the overhead bounded "
                       "(--unsafe allows down to 1)", (unsigned long long)period, MIN_PERIOD);
    if (duration_set && duration_ms > MAX_DURATION_MS && !unsafe)
        fk_usage_error("-d: at most 300s (--unsafe allows more)");
    if (to_stdout && outdir)
        fk_usage_error("--stdout and -o exclude each other");

    bool ok_target;
    if (!strcmp(target_word, "host")) {
        ok_target = fk_target_host(&tg);
    } else if (!strcmp(target_word, "pid")) {
        ok_target = fk_target_pids(&tg, target_arg);
    } else if (!strcmp(target_word, "user")) {
        ok_target = fk_target_user(&tg, target_arg);
    } else if (!strcmp(target_word, "cgroup")) {
        ok_target = fk_target_cgroup(&tg, target_arg);
    } else if (!strcmp(target_word, "run")) {
        if (optind < argc && !strcmp(argv[optind], "--"))
            optind++;
        if (optind >= argc)
            fk_usage_error("run: no command; say run -- CMD [ARGS]");
        run_argv = argv + optind;
        ok_target = true;       /* forked below, once the rest is checked */
        tg.kind = FK_TARGET_RUN;
    } else {
        fk_usage_error("unknown target '%s': want host, pid, user, cgroup or run", target_word);
    }
    if (!ok_target)
        return FK_EXIT_ERROR;
    if (tg.kind != FK_TARGET_RUN && optind < argc)
        fk_usage_error("unexpected argument '%s'", argv[optind]);
    if (!duration_set && tg.kind != FK_TARGET_RUN)
        duration_ms = DEFAULT_DURATION_MS;
    if (!duration_set && tg.kind == FK_TARGET_RUN && !unsafe)
        duration_ms = MAX_DURATION_MS;  /* run: until CMD exits, within the cap */

    struct fk_swevent ev;
    char err[512];
    if (!fk_swevent_resolve(event_spec ? event_spec : "page-faults", &ev, err, sizeof err)) {
        fk_error("%s", err);
        fk_target_free(&tg);
        return FK_EXIT_USAGE;
    }
    bool is_faults = ev.type == PERF_TYPE_SOFTWARE && (ev.config == PERF_COUNT_SW_PAGE_FAULTS ||
                     ev.config == PERF_COUNT_SW_PAGE_FAULTS_MIN || ev.config == PERF_COUNT_SW_PAGE_FAULTS_MAJ);
    char *evword = file_word(is_faults && ev.config == PERF_COUNT_SW_PAGE_FAULTS ? "faults" : ev.name, 64);
    for (char *p = evword; *p; p++)
        if (*p == ':')
            *p = '-';

    /* Names and places for the results. */
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "localhost");
    char *hostw = file_word(host, 64);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32], iso[32];
    strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S_UTC", &tm);
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char *dir = NULL;
    bool made_dir = false;
    if (to_stdout) {
        char tmpl[] = "/tmp/flamekit-faults.XXXXXX";
        if (!mkdtemp(tmpl)) {
            fk_error("cannot create a temporary directory in /tmp: %s", strerror(errno));
            return FK_EXIT_ERROR;
        }
        dir = fk_strdup(tmpl);
        made_dir = true;
    } else if (outdir) {
        dir = fk_strdup(outdir);
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            fk_error("cannot create output directory %s: %s", dir, strerror(errno));
            return FK_EXIT_ERROR;
        }
    } else {
        dir = fk_asprintf("flamekit-%s.%s", hostw, stamp);
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            fk_error("cannot create output directory %s: %s (use -o DIR)", dir, strerror(errno));
            return FK_EXIT_ERROR;
        }
    }
    if (access(dir, W_OK) != 0) {
        fk_error("output directory %s is not writable: %s (use -o DIR)", dir, strerror(errno));
        return FK_EXIT_ERROR;
    }
    /* --stdout: the stream gets the real stdout; everything else written to
     * fd 1 (the command's own output, stray prints) goes to stderr. */
    int stream_fd = 1;
    if (to_stdout) {
        stream_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
        if (stream_fd < 0 || dup2(2, 1) < 0) {
            fk_error("cannot set up the result stream: %s", strerror(errno));
            return FK_EXIT_ERROR;
        }
    }
    /* The command is forked stopped now that nothing else can fail first. */
    if (tg.kind == FK_TARGET_RUN && !fk_target_run(&tg, run_argv)) {
        free(dir);
        return FK_EXIT_ERROR;
    }
    char *base = fk_asprintf("%s.%s.%s.%s", hostw, stamp, tg.scope, evword);
    char *svg_path = fk_asprintf("%s/%s.flamegraph.svg", dir, base);
    char *folded_path = fk_asprintf("%s/%s.folded.gz", dir, base);
    char *json_path = fk_asprintf("%s/%s.json", dir, base);

    /* Capture: the engine with our event, a fixed period, weight = period. */
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct fk_capture_opts co;
    fk_capture_opts_init(&co);
    memset(&co.event, 0, sizeof co.event);
    co.event.type = ev.type;
    co.event.config = ev.config;
    co.event.freq = 0;
    co.event.period = period;
    co.event.exclude_kernel = user_only;
    snprintf(co.event.name, sizeof co.event.name, "%.*s", (int)sizeof co.event.name - 1, ev.name);
    co.target = &tg;
    co.duration_ms = duration_ms;
    co.weight_by_period = true;
    co.progress = !quiet;
    co.quiet = quiet;
    co.progress_label = fk_progname;
    co.stop = &stop_flag;
    co.sym.kernel = !user_only;
    struct fk_capture_result r;
    uint64_t t0 = fk_now_ns();
    int crc = fk_capture_run(&co, &r);
    int rc = FK_EXIT_ERROR;
    json_t *meta = NULL;
    bool captured = crc == FK_EXIT_OK;
    if (!captured)
        goto out;
    struct fk_stacktab t = r.stacks;   /* a view; freed with r */
    /* Each inherited copy of a counter keeps its own remainder too. */
    bool inherited = tg.kind == FK_TARGET_PID || tg.kind == FK_TARGET_RUN;
    uint64_t instances = r.counters + (inherited ? r.forks * (uint64_t)r.ncpus : 0);

    /* Verify one in N. */
    struct fk_period_in pin = {
        .event = ev.name, .unit = ev.unit, .period = period, .samples = r.samples,
        .lost = r.lost, .throttles = r.throttled, .count = r.event_count, .have_count = true,
        .instances = instances,
    };
    struct fk_period_result pr;
    fk_period_verify(&pin, &pr);

    /* Metadata. */
    meta = json_object();
    struct fk_buf inv = FK_BUF_INIT;
    fk_buf_adds(&inv, "flamekit");
    for (int i = 0; i < argc; i++) {
        fk_buf_addc(&inv, ' ');
        fk_buf_adds(&inv, argv[i]);
    }
    json_object_set_new(meta, "invocation", json_string(fk_buf_cstr(&inv)));
    fk_buf_free(&inv);
    json_object_set_new(meta, "tool", json_string("flamekit " FK_VERSION));
    json_object_set_new(meta, "profile", json_string("faults"));
    json_t *hj = json_object();
    fk_sysinfo_json(hj);
    json_object_set_new(meta, "host", hj);
    json_object_set_new(meta, "start", json_string(iso));
    json_object_set_new(meta, "duration_ms", json_integer((json_int_t)(r.duration_ns / 1000000u)));
    json_object_set_new(meta, "stop_reason", json_string(r.stop_reason ? r.stop_reason : "duration"));
    json_t *evj = json_object();
    json_object_set_new(evj, "name", json_string(ev.name));
    json_object_set_new(evj, "type", json_string(ev.type == PERF_TYPE_TRACEPOINT ? "tracepoint" : "software"));
    json_object_set_new(evj, "config", json_integer((json_int_t)ev.config));
    json_object_set_new(evj, "user_only", json_boolean(user_only));
    json_object_set_new(evj, "period", json_integer((json_int_t)period));
    json_object_set_new(evj, "sample_period_in_sample_type", json_false());
    json_object_set_new(meta, "event", evj);
    json_t *tj = json_object();
    json_object_set_new(tj, "kind", json_string(target_word));
    if (target_arg)
        json_object_set_new(tj, "arg", json_string(target_arg));
    json_object_set_new(tj, "scope", json_string(tg.scope));
    if (tg.desc)
        json_object_set_new(tj, "description", json_string(tg.desc));
    if (run_argv) {
        json_t *a = json_array();
        for (char **p = run_argv; *p; p++)
            json_array_append_new(a, json_string(*p));
        json_object_set_new(tj, "argv", a);
        json_object_set_new(tj, "pid", json_integer(tg.npids ? tg.pids[0] : 0));
        if (r.child_exited)
            json_object_set_new(tj, "exit_status", json_integer(WIFEXITED(r.child_status)
                ? WEXITSTATUS(r.child_status) : 128 + WTERMSIG(r.child_status)));
    }
    json_object_set_new(meta, "target", tj);
    json_t *sj = json_object();
    json_object_set_new(sj, "samples", json_integer((json_int_t)r.samples));
    json_object_set_new(sj, "samples_of_target", json_integer((json_int_t)r.samples_kept));
    json_object_set_new(sj, "lost", json_integer((json_int_t)r.lost));
    json_object_set_new(sj, "throttled", json_integer((json_int_t)r.throttled));
    json_object_set_new(sj, "counted", json_integer((json_int_t)r.event_count));
    json_object_set_new(sj, "estimate", json_integer((json_int_t)pr.estimate));
    json_object_set_new(sj, "estimate_of_target", json_integer((json_int_t)t.total));
    json_object_set_new(sj, "counters", json_integer((json_int_t)instances));
    json_object_set_new(sj, "forks", json_integer((json_int_t)r.forks));
    json_object_set_new(sj, "accepted_estimate_range", json_pack("[I, I]", (json_int_t)pr.lo, (json_int_t)pr.hi));
    json_object_set_new(sj, "verdict", json_string(fk_period_verdict_name(pr.verdict)));
    json_object_set_new(sj, "summary", json_string(pr.summary));
    if (pr.warning[0])
        json_object_set_new(sj, "warning", json_string(pr.warning));
    json_object_set_new(sj, "unique_stacks", json_integer((json_int_t)t.n));
    json_object_set_new(sj, "folded_count_unit", json_string("samples x period (estimated events)"));
    json_object_set_new(meta, "sampling", sj);
    json_t *symj = json_object();
    json_object_set_new(symj, "dsos", json_integer((json_int_t)r.sym.dsos));
    json_object_set_new(symj, "processes", json_integer((json_int_t)r.sym.processes));
    json_object_set_new(symj, "locate_unknown", json_integer((json_int_t)r.sym.locate_unknown));
    json_object_set_new(symj, "names_unresolved", json_integer((json_int_t)r.sym.names_unresolved));
    json_object_set_new(meta, "symbols", symj);
    json_object_set_new(meta, "profiler_wall_ms", json_integer((json_int_t)((fk_now_ns() - t0) / 1000000u)));

    /* Results: complete files or none. */
    struct fk_outfile of;
    if (!fk_outfile_open_gz(&of, folded_path, 0644))
        goto out;
    if (!fk_folded_write(&of, &t) || !fk_outfile_commit(&of)) {
        fk_outfile_abort(&of);
        fk_error("cannot write %s", folded_path);
        goto out;
    }
    if (!no_svg) {
        struct fk_svg_opts so;
        fk_svg_opts_init(&so);
        char *deftitle = fk_asprintf("%s: %s", is_faults ? "Page faults" : ev.name, tg.scope);
        so.title = title ? title : deftitle;
        so.subtitle = pr.summary;
        so.countname = ev.countname;
        so.colors = "mem";
        so.metadata = meta;
        bool w = fk_outfile_open(&of, svg_path, 0644);
        if (w && (!fk_svg_write(&of, &t, &so) || !fk_outfile_commit(&of))) {
            fk_outfile_abort(&of);
            fk_error("cannot write %s", svg_path);
            w = false;
        }
        free(deftitle);
        if (!w)
            goto out;
    }
    char *js = json_dumps(meta, JSON_INDENT(2) | JSON_SORT_KEYS);
    bool jw = js && fk_outfile_open(&of, json_path, 0644);
    if (jw && (!fk_outfile_printf(&of, "%s\n", js) || !fk_outfile_commit(&of))) {
        fk_outfile_abort(&of);
        jw = false;
    }
    free(js);
    if (!jw) {
        fk_error("cannot write %s", json_path);
        goto out;
    }

    /* The verdict goes to stderr even with -q: a wrong period must be seen. */
    if (pr.warning[0])
        fk_warn("%s", pr.warning);
    if (!quiet) {
        fprintf(stderr, "%s: %s: %s\n", fk_progname, ev.name, pr.summary);
        if (tg.kind == FK_TARGET_USER || tg.kind == FK_TARGET_CGROUP)
            fprintf(stderr, "%s: %llu of the samples belong to %s (%llu %s)\n", fk_progname,
                    (unsigned long long)r.samples_kept, tg.scope, (unsigned long long)t.total, ev.unit);
        if (r.lost || r.throttled)
            fprintf(stderr, "%s: %llu records lost, %llu throttled\n", fk_progname,
                    (unsigned long long)r.lost, (unsigned long long)r.throttled);
        if (t.n) {
            fprintf(stderr, "%s: top frames:\n", fk_progname);
            print_top(&t, 5);
        }
        if (r.child_exited && !(WIFEXITED(r.child_status) && WEXITSTATUS(r.child_status) == 0))
            fprintf(stderr, "%s: the command exited with status %d\n", fk_progname,
                    WIFEXITED(r.child_status) ? WEXITSTATUS(r.child_status) : 128 + WTERMSIG(r.child_status));
    }
    if (to_stdout) {
        struct fk_stream_writer sw;
        char *names[3] = { fk_asprintf("%s.folded.gz", base), fk_asprintf("%s.json", base),
                           fk_asprintf("%s.flamegraph.svg", base) };
        const char *paths[3] = { folded_path, json_path, svg_path };
        bool sok = fk_stream_begin(&sw, stream_fd);
        for (int i = 0; i < (no_svg ? 2 : 3) && sok; i++)
            sok = fk_stream_file_path(&sw, names[i], paths[i]);
        sok = sok && fk_stream_end(&sw, 0, pr.summary);
        for (int i = 0; i < 3; i++) {
            unlink(paths[i]);
            free(names[i]);
        }
        if (!sok) {
            fk_error("cannot write the result stream to stdout");
            goto out;
        }
    } else if (!quiet) {
        if (!no_svg)
            printf("%s\n", svg_path);
        printf("%s\n%s\n", folded_path, json_path);
    }
    rc = strict && pr.verdict != FK_PERIOD_OK ? FK_EXIT_ERROR : FK_EXIT_OK;

out:
    if (made_dir && rmdir(dir) != 0 && !to_stdout)
        fk_warn("cannot remove %s: %s", dir, strerror(errno));
    json_decref(meta);
    if (captured)
        fk_capture_result_free(&r);
    fk_target_free(&tg);
    free(evword);
    free(hostw);
    free(dir);
    free(base);
    free(svg_path);
    free(folded_path);
    free(json_path);
    return rc;
}
