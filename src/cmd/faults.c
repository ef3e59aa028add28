/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit faults: where a host, process, user, cgroup or command takes page
 * faults (or hits another software event or tracepoint), sampled one in N
 * and verified against the event's own count. */
#include "capture/evsample.h"
#include "capture/minisym.h"
#include "capture/period_check.h"
#include "capture/swevent.h"
#include "deliver/stream.h"
#include "render/svg.h"
#include "stacks/folded.h"
#include "util/buf.h"
#include "util/outfile.h"

#include <errno.h>
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
        "  cgroup PATH           processes in this cgroup v2 subtree, e.g.\n"
        "                        /system.slice/foo.service (host-wide event, filtered)\n"
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

static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

struct progress { bool on; uint64_t duration_ms; const struct fk_evs_result *r; };

static void tick(void *ctx, uint64_t elapsed_ms)
{
    struct progress *p = ctx;
    if (!p->on)
        return;
    if (p->duration_ms)
        fprintf(stderr, "\r%s: %3llu s / %llu s, %llu samples ", fk_progname,
                (unsigned long long)(elapsed_ms / 1000), (unsigned long long)(p->duration_ms / 1000),
                (unsigned long long)p->r->samples);
    else
        fprintf(stderr, "\r%s: %3llu s, %llu samples ", fk_progname,
                (unsigned long long)(elapsed_ms / 1000), (unsigned long long)p->r->samples);
}

/* "pid 12,34" -> array; false on garbage. */
static bool parse_pids(const char *s, pid_t **out, size_t *n)
{
    size_t cap = 0;
    *n = 0;
    *out = NULL;
    char *copy = fk_strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (!fk_parse_u64(tok, &v) || v == 0 || v > 0x3fffffff) {
            free(copy);
            return false;
        }
        *out = fk_grow(*out, &cap, *n + 1, sizeof **out);
        (*out)[(*n)++] = (pid_t)v;
    }
    free(copy);
    return *n > 0;
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

static json_t *host_info(void)
{
    json_t *h = json_object();
    struct utsname u;
    if (uname(&u) == 0) {
        json_object_set_new(h, "hostname", json_string(u.nodename));
        json_object_set_new(h, "kernel", json_string(u.release));
        json_object_set_new(h, "kernel_version", json_string(u.version));
        json_object_set_new(h, "machine", json_string(u.machine));
    }
    json_object_set_new(h, "cpus_online", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
                json_object_set_new(h, "mem_total_kb", json_integer((json_int_t)kb));
        fclose(f);
    }
    /* NUMA topology: the nodes and their CPU lists. */
    json_t *nodes = json_array();
    for (int n = 0; n < 1024; n++) {
        char path[96], cpus[512];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
        FILE *nf = fopen(path, "r");
        if (!nf)
            break;
        if (fgets(cpus, sizeof cpus, nf)) {
            cpus[strcspn(cpus, "\n")] = 0;
            json_t *node = json_object();
            json_object_set_new(node, "node", json_integer(n));
            json_object_set_new(node, "cpus", json_string(cpus));
            json_array_append_new(nodes, node);
        }
        fclose(nf);
    }
    json_object_set_new(h, "numa_nodes", nodes);
    return h;
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
        fprintf(stderr, "  %5.1f%%  %s\n",
                t->total ? 100.0 * (double)leaves.v[best].count / (double)t->total : 0.0,
                leaves.v[best].key);
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
    bool period_set = false, duration_set = false, user_only = false, to_stdout = false;
    bool no_svg = false, strict = false, unsafe = false, quiet = false;
    const char *event_spec = NULL, *outdir = NULL, *title = NULL;
    int nevents = 0;
    struct fk_evs_target tg = { 0 };
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
            period_set = true;
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

    char *scope = NULL;
    if (!strcmp(target_word, "host")) {
        tg.kind = FK_EVS_HOST;
        scope = fk_strdup("host");
    } else if (!strcmp(target_word, "pid")) {
        tg.kind = FK_EVS_PIDS;
        if (!parse_pids(target_arg, &tg.pids, &tg.npids))
            fk_usage_error("bad PID list '%s': want e.g. 1234 or 1234,5678", target_arg);
        char *w = file_word(target_arg, 64);
        scope = fk_asprintf("pid-%s", w);
        free(w);
    } else if (!strcmp(target_word, "user")) {
        tg.kind = FK_EVS_USER;
        uint64_t v;
        struct passwd *pw = getpwnam(target_arg);
        if (pw)
            tg.uid = pw->pw_uid;
        else if (fk_parse_u64(target_arg, &v) && v < 0xffffffffu)
            tg.uid = (uid_t)v;
        else
            fk_usage_error("unknown user '%s': give a user name or a numeric UID", target_arg);
        char *w = file_word(target_arg, 64);
        scope = fk_asprintf("user-%s", w);
        free(w);
    } else if (!strcmp(target_word, "cgroup")) {
        tg.kind = FK_EVS_CGROUP;
        const char *cg = target_arg;
        if (!strncmp(cg, "/sys/fs/cgroup", 14))
            cg += 14;
        if (cg[0] != '/')
            fk_usage_error("cgroup '%s': want a cgroup v2 path like /system.slice/foo.service", target_arg);
        char *p = fk_asprintf("/sys/fs/cgroup%s", cg);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fk_error("no cgroup %s (%s): list them with ls /sys/fs/cgroup", p, strerror(errno));
            free(p);
            return FK_EXIT_ERROR;
        }
        free(p);
        tg.cgroup = cg;
        char *w = file_word(cg[1] ? cg + 1 : "root", 64);
        scope = fk_asprintf("cgroup-%s", w);
        free(w);
    } else if (!strcmp(target_word, "run")) {
        tg.kind = FK_EVS_RUN;
        if (optind < argc && !strcmp(argv[optind], "--"))
            optind++;
        if (optind >= argc)
            fk_usage_error("run: no command; say run -- CMD [ARGS]");
        tg.argv = argv + optind;
        const char *base = strrchr(tg.argv[0], '/');
        char *w = file_word(base ? base + 1 : tg.argv[0], 64);
        scope = fk_asprintf("run-%s", w);
        free(w);
    } else {
        fk_usage_error("unknown target '%s': want host, pid, user, cgroup or run", target_word);
    }
    if (tg.kind != FK_EVS_RUN && optind < argc)
        fk_usage_error("unexpected argument '%s'", argv[optind]);
    if (!duration_set && tg.kind != FK_EVS_RUN)
        duration_ms = DEFAULT_DURATION_MS;
    if (!duration_set && tg.kind == FK_EVS_RUN && !unsafe)
        duration_ms = MAX_DURATION_MS;  /* run: until CMD exits, within the cap */
    (void)period_set;

    struct fk_swevent ev;
    char err[512];
    if (!fk_swevent_resolve(event_spec ? event_spec : "page-faults", &ev, err, sizeof err)) {
        fk_error("%s", err);
        free(scope);
        free(tg.pids);
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
    char *base = fk_asprintf("%s.%s.%s.%s", hostw, stamp, scope, evword);
    char *svg_path = fk_asprintf("%s/%s.flamegraph.svg", dir, base);
    char *folded_path = fk_asprintf("%s/%s.folded.gz", dir, base);
    char *json_path = fk_asprintf("%s/%s.json", dir, base);

    /* Capture. */
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct fk_evs_result r;
    struct progress prog = { .on = !quiet && isatty(2), .duration_ms = duration_set || tg.kind != FK_EVS_RUN ? duration_ms : 0, .r = &r };
    struct fk_evs_opts eo = {
        .type = ev.type, .config = ev.config, .period = period,
        .exclude_kernel = user_only,
        .kernel_stacks = !user_only,
        .duration_ms = duration_ms,
        .stop = &stop_flag,
        .tick = tick, .tick_ctx = &prog,
    };
    struct fk_stacktab t;
    fk_stacktab_init(&t);
    struct fk_minisym *sym = fk_minisym_new(!user_only);
    uint64_t t0 = fk_now_ns();
    bool captured = fk_evs_capture(&eo, &tg, sym, &t, &r);
    if (prog.on)
        fputc('\n', stderr);
    int rc = FK_EXIT_ERROR;
    json_t *meta = NULL;
    if (!captured)
        goto out;

    /* Verify one in N. */
    struct fk_period_in pin = {
        .event = ev.name, .unit = ev.unit, .period = period, .samples = r.samples,
        .lost = r.lost, .throttles = r.throttles, .count = r.count, .have_count = r.have_count,
        .instances = r.instances,
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
    json_object_set_new(meta, "host", host_info());
    json_object_set_new(meta, "start", json_string(iso));
    json_object_set_new(meta, "duration_ms", json_integer((json_int_t)r.elapsed_ms));
    json_object_set_new(meta, "stopped_early", json_boolean(r.stopped));
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
    if (tg.argv) {
        json_t *a = json_array();
        for (char **p = tg.argv; *p; p++)
            json_array_append_new(a, json_string(*p));
        json_object_set_new(tj, "argv", a);
        json_object_set_new(tj, "pid", json_integer(r.child_pid));
        if (r.child_exited)
            json_object_set_new(tj, "exit_status", json_integer(WIFEXITED(r.child_status)
                ? WEXITSTATUS(r.child_status) : 128 + WTERMSIG(r.child_status)));
    }
    json_object_set_new(meta, "target", tj);
    json_t *sj = json_object();
    json_object_set_new(sj, "samples", json_integer((json_int_t)r.samples));
    json_object_set_new(sj, "samples_of_target", json_integer((json_int_t)r.kept));
    json_object_set_new(sj, "lost", json_integer((json_int_t)r.lost));
    json_object_set_new(sj, "throttled", json_integer((json_int_t)r.throttles));
    json_object_set_new(sj, "counted", r.have_count ? json_integer((json_int_t)r.count) : json_null());
    json_object_set_new(sj, "estimate", json_integer((json_int_t)pr.estimate));
    json_object_set_new(sj, "estimate_of_target", json_integer((json_int_t)t.total));
    json_object_set_new(sj, "counters", json_integer((json_int_t)r.instances));
    json_object_set_new(sj, "forks", json_integer((json_int_t)r.forks));
    json_object_set_new(sj, "accepted_estimate_range", json_pack("[I, I]", (json_int_t)pr.lo, (json_int_t)pr.hi));
    json_object_set_new(sj, "verdict", json_string(fk_period_verdict_name(pr.verdict)));
    json_object_set_new(sj, "summary", json_string(pr.summary));
    if (pr.warning[0])
        json_object_set_new(sj, "warning", json_string(pr.warning));
    json_object_set_new(sj, "unique_stacks", json_integer((json_int_t)t.n));
    json_object_set_new(sj, "folded_count_unit", json_string("samples x period (estimated events)"));
    json_object_set_new(meta, "sampling", sj);
    struct fk_minisym_stats ss;
    fk_minisym_stats(sym, &ss);
    json_t *symj = json_object();
    json_object_set_new(symj, "dsos", json_integer((json_int_t)ss.dsos));
    json_object_set_new(symj, "processes", json_integer((json_int_t)ss.processes));
    json_object_set_new(symj, "unresolved_frames", json_integer((json_int_t)ss.unresolved));
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
        char *deftitle = fk_asprintf("%s: %s", is_faults ? "Page faults" : ev.name, scope);
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
        if (tg.kind == FK_EVS_USER || tg.kind == FK_EVS_CGROUP)
            fprintf(stderr, "%s: %llu of the samples belong to %s (%llu %s)\n", fk_progname,
                    (unsigned long long)r.kept, scope, (unsigned long long)t.total, ev.unit);
        if (r.lost || r.throttles)
            fprintf(stderr, "%s: %llu records lost, %llu throttled\n", fk_progname,
                    (unsigned long long)r.lost, (unsigned long long)r.throttles);
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
        bool sok = fk_stream_begin(&sw, 1);
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
    fk_minisym_free(sym);
    fk_stacktab_free(&t);
    free(tg.pids);
    free(scope);
    free(evword);
    free(hostw);
    free(dir);
    free(base);
    free(svg_path);
    free(folded_path);
    free(json_path);
    return rc;
}
