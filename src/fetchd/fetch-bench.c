/* SPDX-License-Identifier: GPL-2.0-only */
/* fetch-bench: the talk's experiment on one machine, as fixed work.
 * fetchd-grpc and fetchd-sock, each without and with the pack cache, serve
 * generated repositories of two sizes to 1, 2, 4, 8 clients; gRPC either
 * with one connection per client or with all clients' calls multiplexed on
 * one shared connection. Every run: each client makes one warm-up fetch,
 * then all start together and make a set number of fetches. Rounds repeat
 * every setting, interleaved, so a change in the machine's load meets every
 * setting alike; figures are medians and ranges over the rounds, ratios
 * are taken within a round.
 *
 * Clients are forked processes (this program never initialises gRPC
 * itself, so the children may). CPU is counted apart for the server's own
 * threads, its git children and the clients: task-clock counters opened on
 * every server thread with inherit_thread (the server) and with inherit
 * (server and git; git is the difference, or the server's cgroup's CPU
 * time less its threads' where that is more), each client's getrusage around
 * its timed fetches. Allocations are counted in the server by
 * fetchd-malloc.so; peak RSS per run after clearing VmHWM. The report is
 * bench-report.c's (the model both share: bench.h). */
#include "fetchd/bench.h"
#include "capture/target.h"
#include "util/opt.h"
#include "util/stopsig.h"
#include "util/procfs.h"
#include "util/crypto-dyn.h"
#include "cmd/term.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- options ---- */

struct bench_opts opt = { .out = "fetch-bench.out", .sizes = { 4ull << 20, 32ull << 20 }, .nsizes = 2,
                          .clients = { 1, 2, 4, 8 }, .nclients = 4, .modes = { true, true, true },
                          .cache_modes = { true, true }, .work = 16ull << 20, .chunk = 32 << 10,
                          .profile_ms = 10000, .rounds = 5, .min_run_ms = 700, .tcp_cc = "reno" };
int ncpus;

#define BO(field) offsetof(struct bench_opts, field)

/* A comma-separated option value, item by item: false when an item is bad
 * (item() says so) or there is none; the caller says what the option wants. */
static bool each_item(const char *val, struct bench_opts *o, bool (*item)(struct bench_opts *, const char *))
{
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", val) >= (int)sizeof buf)
        return false;
    bool any = false;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), any = true)
        if (!item(o, t))
            return false;
    return any;
}

static bool size_item(struct bench_opts *o, const char *t)
{
    uint64_t v;
    if (o->nsizes == MAX_SIZES || !fk_parse_size(t, &v) || v < (1 << 20))
        return false;
    o->sizes[o->nsizes++] = v;
    return true;
}

static bool parse_sizes(void *base, const char *val, char *err, size_t n)
{
    struct bench_opts *o = base;
    o->nsizes = 0;
    if (each_item(val, o, size_item))
        return true;
    snprintf(err, n, "SIZE,SIZE (up to %d sizes of at least 1M, e.g. 4M,32M)", MAX_SIZES);
    return false;
}

static bool clients_item(struct bench_opts *o, const char *t)
{
    char *end;
    long v = strtol(t, &end, 10);
    if (o->nclients == MAX_NCLIENTS || *end || v < 1 || v > 64)
        return false;
    o->clients[o->nclients++] = (int)v;
    return true;
}

static bool parse_clients(void *base, const char *val, char *err, size_t n)
{
    struct bench_opts *o = base;
    o->nclients = 0;
    if (each_item(val, o, clients_item))
        return true;
    snprintf(err, n, "N,N,... (up to %d counts from 1 to 64, e.g. 1,2,4,8)", MAX_NCLIENTS);
    return false;
}

static bool servers_item(struct bench_opts *o, const char *t)
{
    if (strcmp(t, "grpc") == 0)
        return o->modes[M_GRPC_CONN] = o->modes[M_GRPC_SHARED] = true;
    for (int m = 0; m < NMODES; m++)
        if (strcmp(t, mode_name[m]) == 0)
            return o->modes[m] = true;
    return false;
}

static bool parse_servers(void *base, const char *val, char *err, size_t n)
{
    struct bench_opts *o = base;
    memset(o->modes, 0, sizeof o->modes);
    if (each_item(val, o, servers_item))
        return true;
    snprintf(err, n, "a list of sock, grpc-conn, grpc-shared (grpc: both gRPC modes)");
    return false;
}

static bool parse_cache(void *base, const char *val, char *err, size_t n)
{
    struct bench_opts *o = base;
    bool off = strcmp(val, "off") == 0 || strcmp(val, "both") == 0;
    bool on = strcmp(val, "on") == 0 || strcmp(val, "both") == 0;
    if (!off && !on) {
        snprintf(err, n, "off, on or both");
        return false;
    }
    o->cache_modes[0] = off;
    o->cache_modes[1] = on;
    return true;
}

static const struct fk_opt bench_optset[] = {
    { "repo", 'r', FK_OPT_STR, BO(repo), "GITDIR", "serve this repository (one fetch size) instead of generated ones",
      "repo.git" },
    { "repo-size", 'S', FK_OPT_CALL, 0, "SIZE,...",
      "content sizes of the generated repositories, one fetch size each (default 4M,32M)", "4M,32M",
      .call = parse_sizes },
    { "clients", 'n', FK_OPT_CALL, 0, "N,...", "client counts to sweep (default 1,2,4,8)", "1,2,4,8",
      .call = parse_clients },
    { "servers", 's', FK_OPT_CALL, 0, "LIST",
      "sock, grpc-conn (a connection per client), grpc-shared (one connection for all clients), grpc (both); "
      "default all", "sock,grpc", .call = parse_servers },
    { "cache", 'c', FK_OPT_CALL, 0, "WHICH", "runs without (off), with (on) the pack cache, or both (default)",
      "both", .call = parse_cache },
    { "work", 'w', FK_OPT_SIZE, BO(work), "SIZE",
      "bytes to fetch per run, split over the clients (default 16M); each client makes at least one fetch; "
      "more where a run would be shorter than --min-run-time",
      "16M", .min = 1 << 20 },
    { "min-run-time", 0, FK_OPT_DURATION, BO(min_run_ms), "DUR",
      "with --work: a setting whose first run is shorter gets the fetches to last about this long, fixed for "
      "every round (default 700ms)", "700ms", .min = 1, .max = 600000 },
    { "fetches", 'f', FK_OPT_INT, BO(fetches), "N", "fetches per client per run, instead of --work", "4",
      .min = 1, .max = 100000 },
    { "rounds", 'R', FK_OPT_INT, BO(rounds), "N", "repetitions of every setting (default 5)", "5", .min = 1,
      .max = 1000 },
    { "no-pin", 0, FK_OPT_FLAG, BO(no_pin), NULL,
      "let servers and clients run on any CPU (default: the servers and git on the first half of the CPUs, "
      "the clients on the other half)" },
    { "loopback", 0, FK_OPT_FLAG, BO(loopback), NULL,
      "clients connect over 127.0.0.1 (default, when pinned and root: over a veth pair between two network "
      "namespaces, each end receiving on its own side's CPUs)" },
    { "tcp-congestion", 0, FK_OPT_STR, BO(tcp_cc), "NAME",
      "TCP congestion control on the veth pair (default reno, whatever the host's default: with bbr every "
      "connection is paced by a timer, whose interrupts the socket server pays per fetch; a namespace may take "
      "only those in net.ipv4.tcp_allowed_congestion_control)", "reno" },
    { "delayed-acks", 0, FK_OPT_FLAG, BO(delayed_acks), NULL,
      "on the veth pair, the clients delay their ACKs as TCP does by default (default: their route has "
      "quickack, an ACK for every segment: delayed, the ACKs per fetch, and the socket server's CPU with "
      "them, follow how fast the clients read)" },
    { "no-probes", 0, FK_OPT_FLAG, BO(no_probes), NULL,
      "no machine probes around the runs (about 80 ms of CPU each): no run is called slow or taken again; "
      "for checks that need no figures" },
    { "chunk-size", 'k', FK_OPT_SIZE, BO(chunk), "SIZE", "fetchd-grpc message size (default 32K)", "32K",
      .min = 1024, .max = 4 << 20 },
    { "grpc-window", 0, FK_OPT_SIZE, BO(grpc_window), "SIZE",
      "gRPC clients: no BDP probing and an HTTP/2 window of SIZE (default 64K; Debian 12's gRPC 1.51 keeps 64K "
      "whatever SIZE)", "4M", .min = 64 << 10, .max = 1 << 30 },
    { "grpc-bdp", 0, FK_OPT_FLAG, BO(grpc_bdp), NULL,
      "gRPC clients: gRPC's own window, grown by BDP probing (its window-update rate, and with it the gRPC "
      "server's CPU per GiB, then changes from run to run)" },
    { "output", 'o', FK_OPT_STR, BO(out), "DIR",
      "report.md, report.json, logs, flame graphs (default fetch-bench.out)", "fetch-bench.out" },
    { "profile", 'p', FK_OPT_FLAG, BO(profile), NULL,
      "after the rounds, a flame graph of each server (flamekit pid) under load, linked from report.md" },
    { "profile-time", 0, FK_OPT_DURATION, BO(profile_ms), "DUR", "length of each --profile capture (default 10s)",
      "10s", .min = 1000, .max = 300000 },
    { "malloc-shim", 0, FK_OPT_STR, BO(shim), "PATH", "fetchd-malloc.so to preload into the servers",
      "fetchd-malloc.so" },
    { "version", 'V', FK_OPT_VERSION, 0, NULL, "print the version" },
    { NULL },
};

static const struct fk_cmdline cmdline = {
    "fetch-bench [OPTIONS]",
    "Benchmark fetchd-grpc against fetchd-sock serving git fetches: fixed work,\n"
    "swept over client counts, gRPC connection modes and fetch sizes.",
    "See fetch-bench(1).",
    NULL,
};

static char exedir[PATH_MAX];

/* ---- the generated repositories ---- */

static uint64_t rng;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static const char *cache_base(char *dir, size_t n)
{
    const char *base = getenv("FLAMEKIT_CACHE");
    if (base && *base)
        snprintf(dir, n, "%s/fetch-bench", base);
    else
        snprintf(dir, n, "%s/.cache/flamekit/fetch-bench", getenv("HOME") ? getenv("HOME") : "/tmp");
    return dir;
}

/* The generator: SIZE bytes of word-like text (compressible like source)
 * in one commit, as a git fast-import stream handed to out() piece by
 * piece. Deterministic: the same size gives the same bytes. */
static void repo_stream(uint64_t size, void (*out)(void *ctx, const void *p, size_t n), void *ctx)
{
    rng = 0x2545F4914F6CDD1DULL;
    char words[1024][12];
    for (int i = 0; i < 1024; i++) {
        int l = 2 + (int)(next() % 9);
        for (int j = 0; j < l; j++)
            words[i][j] = (char)('a' + next() % 26);
        words[i][l] = 0;
    }
    const size_t blob = 256 << 10;
    size_t nblobs = (size_t)(size / blob) + 1;
    char *b = fk_malloc(blob + 64), line[128];
    for (size_t k = 0; k < nblobs; k++) {
        size_t n = 0;
        while (n < blob) {
            const char *w = words[next() % 1024];
            size_t l = strlen(w);
            memcpy(b + n, w, l);
            n += l;
            b[n++] = next() % 12 == 0 ? '\n' : ' ';
        }
        out(ctx, line, (size_t)snprintf(line, sizeof line, "blob\nmark :%zu\ndata %zu\n", k + 1, n));
        b[n++] = '\n';
        out(ctx, b, n);
    }
    free(b);
    static const char commit[] = "commit refs/heads/main\ncommitter bench <bench@example.org> 1700000000 +0000\n"
                                 "data 6\nbench\n";
    out(ctx, commit, sizeof commit - 1);
    for (size_t k = 0; k < nblobs; k++)
        out(ctx, line, (size_t)snprintf(line, sizeof line, "M 100644 :%zu d%02zu/f%05zu.txt\n", k + 1, k % 64, k));
    out(ctx, "\n", 1);
}

static void stream_hash(void *ctx, const void *p, size_t n) { fk_sha256_update(ctx, p, n); }

static void stream_pipe(void *ctx, const void *p, size_t n)
{
    if (fwrite(p, 1, n, ctx) != n)
        fk_die("git fast-import: %s", strerror(errno));
}

/* How a generated repository is packed: with a bitmap, the way a server's
 * housekeeping leaves a repository (git then reuses the pack instead of
 * searching for deltas per fetch). */
#define REPO_REPACK "repack -a -d -q --write-bitmap-index"

/* The generated repository of SIZE in dir, made unless there: its name
 * carries a SHA-256 of everything that makes it (the generator's stream,
 * the repack command, git's version), so a repository kept from another
 * generator or git is never taken for this one, and any number of
 * invocations (or test suites) share it. Made under a temporary name and
 * renamed whole: a repository under its final name is complete; of two
 * invocations making it at once, the second to finish uses the first's. */
static char *generate_repo(const char *dir, uint64_t size)
{
    char err[256], gitver[128] = "";
    if (!fk_crypto_load(err, sizeof err))
        fk_die("cannot name the generated repositories by their content: %s", err);
    FILE *v = popen("git --version", "r");
    if (!v || !fgets(gitver, sizeof gitver, v) || pclose(v) != 0)
        fk_die("cannot run git --version (is git installed?)");
    struct fk_sha256_ctx c;
    unsigned char md[32];
    char key[17];
    fk_sha256_begin(&c);
    fk_sha256_update(&c, REPO_REPACK "\n", sizeof REPO_REPACK);
    fk_sha256_update(&c, gitver, strlen(gitver));
    repo_stream(size, stream_hash, &c);
    fk_sha256_end(&c, md);
    for (unsigned i = 0; i < 8; i++)
        snprintf(key + 2 * i, 3, "%02x", md[i]);
    char *path = fk_asprintf("%s/packed-%lluM-%s.git", dir, (unsigned long long)(size >> 20), key);
    struct stat st;
    if (stat(path, &st) == 0)
        return path;
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0)
        fk_die("cannot create %s", dir);
    char *tmp = fk_asprintf("%s.tmp.%d", path, (int)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && git init -q --bare '%s' && git -C '%s' fast-import --quiet", tmp, tmp, tmp);
    fprintf(stderr, "fetch-bench: generating a %lluM test repository in %s\n", (unsigned long long)(size >> 20), path);
    FILE *fi = popen(cmd, "w");
    if (!fi)
        fk_die("cannot run git fast-import: %s", strerror(errno));
    repo_stream(size, stream_pipe, fi);
    if (pclose(fi) != 0)
        fk_die("git fast-import failed");
    snprintf(cmd, sizeof cmd, "git -C '%s' " REPO_REPACK, tmp);
    if (system(cmd) != 0)
        fk_die("git repack failed in %s", tmp);
    if (rename(tmp, path) != 0) {
        if ((errno != EEXIST && errno != ENOTEMPTY) || stat(path, &st) != 0)
            fk_die("cannot rename %s: %s", tmp, strerror(errno));
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);     /* another invocation made it first */
        if (system(cmd) != 0)
            fk_warn("cannot remove %s", tmp);
    }
    free(tmp);
    return path;
}

/* The want-all request for gitdir, from git's own advertisement. */
static void build_request(const char *gitdir, struct fk_buf *req)
{
    struct fetchd_child ch;
    if (!fetchd_child_start(&ch, FETCHD_OP_ADVERTISE, gitdir, "", 0))
        fk_die("cannot run git upload-pack --advertise-refs %s", gitdir);
    struct fk_buf adv = FK_BUF_INIT;
    char b[65536];
    ssize_t n;
    while ((n = read(ch.out, b, sizeof b)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            fk_buf_add(&adv, b, (size_t)n);
    if (!fetchd_child_finish(&ch))
        fk_die("git upload-pack --advertise-refs %s failed", gitdir);
    struct fetchd_refs refs = { 0 };
    char err[512];
    if (!fetchd_parse_advertisement(adv.data ? adv.data : "", adv.len, &refs, err, sizeof err) ||
        !fetchd_build_request(&refs, NULL, 0, req, err, sizeof err))
        fk_die("%s: %s", gitdir, err);
    fetchd_refs_free(&refs);
    fk_buf_free(&adv);
}

/* ---- processes ---- */

static char *find_prog(const char *name)
{
    char *p = fk_asprintf("%s/%s", exedir, name);
    if (access(p, X_OK) == 0)
        return p;
    free(p);
    return fk_strdup(name);     /* from PATH */
}

/* argv[0] with its stdout and stderr into log (if given), and fd3 (>= 0,
 * not 3 itself) as its file descriptor 3. */
static pid_t spawn(const char *const *argv, char **envp, const char *log, int fd3)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (log) {
        posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 2, 1);
    }
    if (fd3 >= 0)
        posix_spawn_file_actions_adddup2(&fa, fd3, 3);
    pid_t pid;
    /* exec's argv type predates const; it writes nothing */
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fk_die("cannot run %s: %s", argv[0], strerror(rc));
    return pid;
}

/* A stop signal to us is passed on once: flamekit then ends its capture
 * early, as on its own Ctrl-C. */
static int wait_exit(pid_t pid)
{
    int st;
    bool passed = false;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        if (fk_stop_signal && !passed) {
            kill(pid, SIGINT);
            passed = true;
        }
    return st;
}

/* A preloaded malloc cannot go in front of AddressSanitizer's runtime. */
static bool uses_asan(const char *prog)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "ldd \"$(command -v '%s')\" 2>/dev/null | grep -q libasan", prog);
    return system(cmd) == 0;
}

static bool flamekit_has_pid(const char *fk)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "'%s' pid --help >/dev/null 2>&1", fk);
    return system(cmd) == 0;
}

/* ---- CPUs ---- */

/* Unless --no-pin: the servers and their git children on the first half of
 * the CPUs this program may use, the client processes on the other half,
 * so that neither takes the other's CPU and the caches stay warm. */
static cpu_set_t all_cpus, server_cpus, client_cpus;
static bool pinning;
char pin_desc[192] = "none (--no-pin, or a single CPU)";
char net_desc[512] = "loopback (127.0.0.1)";

static void cpus_list(const cpu_set_t *set, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (int c = 0; c < CPU_SETSIZE && k < n; c++)
        if (CPU_ISSET(c, set))
            k += (size_t)snprintf(buf + k, n - k, "%s%d", k ? "," : "", c);
}

static void pin_setup(void)
{
    if (opt.no_pin || sched_getaffinity(0, sizeof all_cpus, &all_cpus) != 0 || CPU_COUNT(&all_cpus) < 2)
        return;
    int n = CPU_COUNT(&all_cpus), k = 0;
    CPU_ZERO(&server_cpus);
    CPU_ZERO(&client_cpus);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all_cpus))
            CPU_SET(c, k++ < n / 2 ? &server_cpus : &client_cpus);
    char a[64], b[64];
    cpus_list(&server_cpus, a, sizeof a);
    cpus_list(&client_cpus, b, sizeof b);
    snprintf(pin_desc, sizeof pin_desc, "servers and git on CPU %s, clients on CPU %s", a, b);
    pinning = true;
}

static void pin_self(const cpu_set_t *set)
{
    if (pinning && sched_setaffinity(0, sizeof *set, set) != 0)
        fk_warn("sched_setaffinity: %s", strerror(errno));
}

/* ---- CPU accounting of a server ---- */

/* Task-clock counters on every thread the server had when it became ready;
 * threads it creates later inherit them (their counts fold into these when
 * they exit, and a read includes the live ones). self: inherit_thread, so
 * threads only; all: every descendant, git included; csw: the server's
 * threads' context switches (how often it waited on its clients: the
 * socket server's CPU per fetch moves with it). */
#define MAX_TASKS 256
struct srv_cpu {
    int n;
    int self[MAX_TASKS], all[MAX_TASKS], csw[MAX_TASKS];
    bool perf;      /* else /proc ticks */
};

static int open_counter(pid_t tid, uint64_t config, bool threads_only)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = config;
    a.inherit = 1;
    a.inherit_thread = threads_only;
    return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* fk_proc_for_each_tid's step: the three counters on thread tid; false
 * (stop) when one cannot be opened or MAX_TASKS are open. */
static bool srv_cpu_task(pid_t tid, void *ctx)
{
    struct srv_cpu *c = ctx;
    if (c->n == MAX_TASKS) {
        c->perf = false;
        return false;
    }
    c->self[c->n] = open_counter(tid, PERF_COUNT_SW_TASK_CLOCK, true);
    c->all[c->n] = open_counter(tid, PERF_COUNT_SW_TASK_CLOCK, false);
    c->csw[c->n] = open_counter(tid, PERF_COUNT_SW_CONTEXT_SWITCHES, true);
    c->n++;
    if (c->self[c->n - 1] < 0 || c->all[c->n - 1] < 0 || c->csw[c->n - 1] < 0) {
        fk_warn("perf_event_open on the server's thread %d: %s; CPU from /proc ticks (10 ms steps)",
                (int)tid, strerror(errno));
        c->perf = false;
    }
    return c->perf;
}

static void srv_cpu_open(struct srv_cpu *c, pid_t pid)
{
    c->n = 0;
    c->perf = true;
    if (!fk_proc_for_each_tid(pid, srv_cpu_task, c))
        c->perf = false;
    if (!c->perf) {
        for (int i = 0; i < c->n; i++) {
            if (c->self[i] >= 0)
                close(c->self[i]);
            if (c->all[i] >= 0)
                close(c->all[i]);
            if (c->csw[i] >= 0)
                close(c->csw[i]);
        }
        c->n = 0;
    }
}

static double read_counter(int fd)
{
    uint64_t v = 0;
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
        fk_die("reading a software counter: %s", strerror(errno));
    return (double)v;
}

/* Seconds of CPU so far: the server's own threads, and its git children;
 * the server's threads' context switches (0 without perf_event_open). */
static void srv_cpu_read(const struct srv_cpu *c, pid_t pid, double *server, double *git, double *csw)
{
    *server = *git = *csw = 0;
    if (c->perf) {
        double all = 0;
        for (int i = 0; i < c->n; i++) {
            *server += read_counter(c->self[i]) / 1e9;
            all += read_counter(c->all[i]) / 1e9;
            *csw += read_counter(c->csw[i]);
        }
        *git = all > *server ? all - *server : 0;   /* read a moment apart */
        return;
    }
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    long long cut, cst;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &ut, &st, &cut,
                     &cst) != 4)
        return;
    double hz = (double)sysconf(_SC_CLK_TCK);
    *server = (double)(ut + st) / hz;
    *git = (double)(cut + cst) / hz;
}

/* CPU seconds the tasks of cgroup v2 directory dir have used so far, ended
 * tasks included (cpu.stat's usage_usec: the scheduler's time, kept for
 * every cgroup whether or not the cpu controller is enabled), or NAN (no
 * cgroup, or the file unreadable). */
static double cgroup_cpu_s(const char *dir)
{
    char path[PATH_MAX], buf[1024];
    if (!dir || snprintf(path, sizeof path, "%s/cpu.stat", dir) >= (int)sizeof path ||
        fk_read_small(path, buf, sizeof buf) <= 0)
        return NAN;
    for (const char *line = buf; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (strncmp(line, "usage_usec ", 11) == 0) {
            char *end;
            errno = 0;
            unsigned long long us = strtoull(line + 11, &end, 10);
            return end == line + 11 || errno ? NAN : (double)us / 1e6;
        }
    return NAN;
}

/* A "Key: N kB" line of /proc/PID/status in MiB (0 when absent). */
static double status_mib(pid_t pid, const char *key)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    return (double)fk_proc_status_last(path, key) / 1024;     /* the line is "KEY: N kB" */
}

/* Minor page faults of a process so far, all its threads (/proc/PID/stat
 * field 10; its children's are apart), or 0. */
static double proc_minflt(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')');        /* past comm, which may hold anything */
    unsigned long long v = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu", &v) != 1)
        return 0;
    return (double)v;
}

/* Packets and bytes sent, and packets received, so far on the devices of
 * a process's network namespace other than loopback (/proc/PID/net/dev
 * shows PID's namespace): for a server in the benchmark's namespace, its
 * end of the veth pair. false when unreadable. */
static bool proc_netdev(pid_t pid, double *tx_packets, double *tx_bytes, double *rx_packets)
{
    char path[64], *line = NULL;
    size_t cap = 0;
    snprintf(path, sizeof path, "/proc/%d/net/dev", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    *tx_packets = *tx_bytes = *rx_packets = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        char *colon = strchr(line, ':');
        unsigned long long rxb, rxp, txb, txp;
        /* "  DEV: rx bytes packets errs drop fifo frame compressed multicast tx bytes packets ..." */
        if (!colon || sscanf(colon + 1, "%llu %llu %*u %*u %*u %*u %*u %*u %llu %llu", &rxb, &rxp, &txb, &txp) != 4)
            continue;
        *colon = 0;
        if (strcmp(line + strspn(line, " "), "lo") == 0)
            continue;
        *tx_packets += (double)txp;
        *tx_bytes += (double)txb;
        *rx_packets += (double)rxp;
        n++;
    }
    free(line);
    fclose(f);
    return n > 0;
}

/* Context switches of each of a process's threads so far (its /proc task
 * status: voluntary and involuntary), with the thread's name. Read outside
 * the timed window, before and after a run: which threads the server's
 * switches were (does gRPC's cost follow its hand-offs between threads?). */
#define MAX_SNAP_TASKS 512
struct task_csw { pid_t tid; char name[16]; double csw; };
struct tasks_snap { int n; struct task_csw t[MAX_SNAP_TASKS]; };

static bool snap_task(pid_t tid, void *ctx)
{
    struct tasks_snap *s = ctx;
    if (s->n == MAX_SNAP_TASKS)
        return false;
    pid_t pid = s->t[0].tid;    /* the process, put first by tasks_snap */
    char path[80], name[sizeof s->t[0].name];
    snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    ssize_t n = fk_read_small(path, name, sizeof name);
    if (n <= 0)
        return true;            /* gone meanwhile: counted with the threads that ended */
    name[strcspn(name, "\n")] = 0;
    unsigned long long switches = 0;
    double csw = fk_proc_task_switches(pid, tid, &switches) ? (double)switches : 0;
    struct task_csw *t = tid == pid ? &s->t[0] : &s->t[s->n++];
    t->tid = tid;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->csw = csw;
    return true;
}

static void tasks_snap(pid_t pid, struct tasks_snap *s)
{
    s->n = 1;
    s->t[0] = (struct task_csw){ .tid = pid };
    if (!fk_proc_for_each_tid(pid, snap_task, s))
        s->n = 0;
}

/* Add csw switches of one thread to its group in o->by_thread. */
static void by_thread_add(struct obs *o, const char *name, double csw, bool thread)
{
    int i = 0;
    while (i < o->nby_thread && strcmp(o->by_thread[i].name, name) != 0)
        i++;
    if (i == o->nby_thread) {
        if (i == OBS_THREAD_GROUPS)
            i--;                /* more names than groups: the last one takes the rest */
        else {
            o->nby_thread++;
            snprintf(o->by_thread[i].name, sizeof o->by_thread[i].name, "%s", name);
        }
    }
    o->by_thread[i].threads += thread;
    o->by_thread[i].csw += csw;
}

/* The run's switches by thread: each thread alive after it (less what it
 * had before), grouped as struct obs says; what the counter (total) saw
 * beyond them is the threads that ended during the run. */
static void threads_csw(struct obs *o, const struct tasks_snap *a, const struct tasks_snap *b, double total)
{
    o->nby_thread = 0;
    o->server_threads = b->n;
    if (!a->n || !b->n)
        return;
    double seen = 0;
    const char *self = b->t[0].name;
    for (int i = 0; i < b->n; i++) {
        const struct task_csw *t = &b->t[i];
        double before = 0;
        for (int k = 0; k < a->n; k++)
            if (a->t[k].tid == t->tid) {
                before = a->t[k].csw;
                break;
            }
        double d = t->csw > before ? t->csw - before : 0;
        seen += d;
        by_thread_add(o, i == 0 ? "main" : strcmp(t->name, self) == 0 ? "calls" : t->name, d, true);
    }
    if (total > 0)
        by_thread_add(o, "ended", total > seen ? total - seen : 0, false);
}

/* Peak RSS from now on (clear_refs 5 resets VmHWM). */
static void reset_hwm(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)!write(fd, "5", 1);
        close(fd);
    }
}

static double loadavg1(void)
{
    FILE *f = fopen("/proc/loadavg", "re");
    double l = 0;
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = 0;
        fclose(f);
    }
    return l;
}

/* The machine's speed just now: thread CPU milliseconds of a fixed piece
 * of work on the servers' CPUs (integer mixing and scattered reads and
 * writes in a PROBE_MIB table, like git's hashing and copying). On a
 * virtual machine the same work takes more CPU time when the host is
 * busier (invisible to /proc/stat here: no steal time); git upload-pack's
 * CPU per GiB moved 7-32 % between invocations with the server unchanged and
 * in step across all settings of a round. The table is far larger than the
 * caches and the TLB's reach, so every probe misses them alike whatever ran
 * before it: with 4 MiB, a probe after a run took 22-37 ms (the run had
 * flushed the table's TLB entries; each miss a nested page walk) but one
 * right after another probe 2-7 ms, even with the table's lines flushed
 * from the caches first. The wait for a slow spell to pass and the retake's
 * own probe ran back to back, so every retake passed at once, whatever the
 * host did, and was kept as normal though it cost as much as the run it
 * replaced (the socket server 688 ms/GiB where its setting's median was
 * 565). */
/* Thread CPU milliseconds, on the CPUs on, of steps of integer
 * mixing (a multiply by mul when not 1) with a read and a write at
 * scattered places of t[words]. */
static double probe_loop_ms(const cpu_set_t *on, uint64_t *t, size_t words, int steps, uint64_t mul)
{
    pin_self(on);
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    uint64_t x = 0x9E3779B97F4A7C15ull, acc = 0;
    for (int i = 0; i < steps; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        acc = acc * mul + t[x % words];
        t[(x >> 32) % words] += acc;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    pin_self(&all_cpus);
    return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

#define PROBE_MIB 64
static double machine_probe_ms(const cpu_set_t *on)
{
    enum { WORDS = (PROBE_MIB << 20) >> 3, STEPS = 1 << 20 };
    static uint64_t *t;
    if (opt.no_probes)
        return 0;       /* every reference 0 too: no probe is over 115 % of it */
    if (!t) {
        void *m = mmap(NULL, (size_t)WORDS * sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            fk_die("mmap of the machine probe's %d MiB: %s", PROBE_MIB, strerror(errno));
        /* small pages always; not in the clients (fork copies no page table of it) */
        (void)madvise(m, (size_t)WORDS * sizeof *t, MADV_NOHUGEPAGE);
        (void)madvise(m, (size_t)WORDS * sizeof *t, MADV_DONTFORK);
        t = m;
        for (size_t i = 0; i < WORDS; i += 512)
            t[i] = i;
    }
    return probe_loop_ms(on, t, WORDS, STEPS, 1);
}

/* The servers' CPUs' speed at compute: thread CPU milliseconds of a fixed
 * piece of integer work on a 16 KiB table (the L1 cache's size), the kind
 * of work the gRPC server and its clients do between system calls
 * (protobuf coding, copying, hashing). machine_probe_ms above misses the
 * caches and the TLB on purpose and is slowed by what slows memory; this
 * one is slowed by what slows a core (a busy sibling thread on the host,
 * a lower clock). */
static double compute_probe_ms(void)
{
    enum { WORDS = 2048, STEPS = 1 << 22 };
    static uint64_t t[WORDS];
    if (opt.no_probes)
        return 0;
    return probe_loop_ms(&server_cpus, t, WORDS, STEPS, 0x100000001B3ull);
}

/* Busy and total jiffies of all CPUs (/proc/stat), for the machine's
 * utilisation by everyone: this is a shared machine; and its interrupts so
 * far (every CPU's, inter-processor ones included). */
static void machine_jiffies(double *busy, double *total, double *intr)
{
    unsigned long long v[8] = { 0 }, n = 0;
    char *line = NULL;
    size_t cap = 0;
    *busy = *total = *intr = 0;
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return;
    /* "cpu" first; "intr" (its first number the total) a few lines on */
    while (getline(&line, &cap, f) > 0) {
        if (sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]) == 8) {
            *total = 0;
            for (int i = 0; i < 8; i++)
                *total += (double)v[i];
            *busy = *total - (double)v[3] - (double)v[4];     /* less idle and iowait */
        } else if (sscanf(line, "intr %llu", &n) == 1) {
            *intr = (double)n;
            break;
        }
    }
    free(line);
    fclose(f);
}

/* The interrupts each side's CPUs have taken (/proc/interrupts: a row a
 * source, a column an online CPU, named in its header; rows with fewer
 * numbers, ERR and MIS, are the machine's, not a CPU's): false when it
 * cannot be read. The socket server's CPU follows the machine's
 * interrupts; these say on which side they fell. */
static bool side_interrupts(double *server, double *client)
{
    enum { MAXCOLS = CPU_SETSIZE };
    static int col[MAXCOLS];
    int ncol = 0;
    char *line = NULL;
    size_t cap = 0;
    *server = *client = 0;
    FILE *f = fopen("/proc/interrupts", "re");
    if (!f)
        return false;
    bool ok = getline(&line, &cap, f) > 0;
    for (char *p = line, *e; ok && (p = strstr(p, "CPU")) && ncol < MAXCOLS; p = e) {
        long c = strtol(p + 3, &e, 10);
        if (e == p + 3 || c < 0 || c >= CPU_SETSIZE)
            ok = false;
        else
            col[ncol++] = (int)c;
    }
    ok = ok && ncol > 0;
    while (ok && getline(&line, &cap, f) > 0) {
        char *p = strchr(line, ':');
        if (!p)
            continue;
        unsigned long long v[MAXCOLS];
        int n = 0;
        for (char *e; n < ncol; p = e) {
            v[n] = strtoull(p + 1, &e, 10);
            if (e == p + 1 || (*e != ' ' && *e != '\n' && *e != '\0'))
                break;
            n++;
        }
        if (n < ncol)
            continue;
        for (int i = 0; i < ncol; i++) {
            if (CPU_ISSET(col[i], &server_cpus))
                *server += (double)v[i];
            else if (CPU_ISSET(col[i], &client_cpus))
                *client += (double)v[i];
        }
    }
    free(line);
    fclose(f);
    return ok;
}

/* ---- each side's CPU: its CPUs' busy time ---- */

/* The servers and the clients each have CPUs of their own (pin_setup), and
 * over the veth pair each end's packets are received on its own side's
 * CPUs (RPS, bench-net.c). The receive work runs in softirq, and this
 * kernel has no IRQ time accounting (CONFIG_IRQ_TIME_ACCOUNTING off, as in
 * most distributions' kernels): softirq time is charged to whichever task
 * it interrupts, or to no task at all when the CPU was idle, and a
 * cgroup's cpu.stat sums its tasks' times, so it is no better. Which one
 * it was is chance: -p graphs showed RPS interrupts in 18-21 % of a
 * server's samples and softirq work in 27-57 % with the pack cache, and
 * each server's CPU per GiB moved 8-9 % from run to run. So when pinned
 * on the veth pair, a side's CPU is the busy time of its CPUs over the
 * run: the elapsed time less their idle and iowait time, which the kernel
 * keeps in nanoseconds per CPU (/proc/timer_list, tick_sched's
 * idle_sleeptime and iowait_sleeptime; the time an idle CPU spends in an
 * interrupt and its softirq is not idle). Server = the servers' CPUs' busy
 * time less git's; clients = the clients' CPUs'. Both then include the
 * machine's background on those CPUs (kernel threads; near nothing on a
 * quiet machine, everything on a loaded one: such figures are not the
 * servers').
 * That background moved the clients' figure: in two quiet default sweeps
 * (session 18, fbq18c/d) the client processes' own CPU per GiB without
 * the cache agreed within 10 % on 14 of 22 settings and the rest of their
 * CPUs' busy time on 0 of 22, at 74-122 ms a second in one sweep and
 * 34-84 in the other, in every setting alike whatever the bytes moved
 * (4M, one socket client, 47 MiB/s: 80 against 34 ms/s), and the server
 * + clients ratios without the cache agreed on 9 of 14. Where the kernel
 * keeps every task's CPU time per CPU (cgroup v1 cpuacct's root,
 * cpuacct.usage_percpu: the scheduler's own nanoseconds, whoever ran), the
 * busy time less it is what ran in no task (interrupts and softirq while
 * idle, the clients' receive work among them), and the clients' CPU is
 * their processes' own plus that: other tasks on their CPUs are left out
 * (report.json keeps both sides' busy and task times).
 * The servers' CPUs carried the same: in the next two default sweeps
 * (session 19, fb19a/b) other tasks took 66-99 ms a second of them
 * without the cache and 29-137 with it (setting medians), as much CPU per
 * GiB as the socket server's own without the cache, and the gRPC/socket
 * server CPU per GiB agreed on 21 of 28 ratios. So the server's CPU is
 * likewise its own (run: its threads' task-clock, or its cgroup's time
 * where no git ran) plus what ran in no task on its CPUs: from the same
 * runs, 23 of 28 server and 25 of 28 server + clients ratios agreed
 * (busy time: 21 and 22). */
static bool side_cpu;           /* set in main: pinned, on the veth pair, timer_list readable */
/* Each CPU's softirq thread (ksoftirqd/N), 0 where none was found. A
 * softirq the kernel cannot finish on an interrupt's return (it ran too
 * long, or came again) goes on in that thread: a task, so left out with
 * other tasks, though its work is the side's receive work (RPS puts each
 * side's packets on its own CPUs). In one quiet call ksoftirqd/1 took
 * 17.6 ms a second of the clients' CPU during the runs, 6.0 of it in
 * net_rx_action and 3.1 in tcp_v4_rcv (perf record -a; its stacks): so
 * each side's CPU counts its CPUs' softirq threads' time too. */
static pid_t softirqd[CPU_SETSIZE];

/* fk_proc_for_each_pid's step: note a kernel thread named ksoftirqd/N. */
static bool find_softirqd(pid_t pid, void *ctx)
{
    (void)ctx;
    char path[64], name[32], nl;
    int cpu;
    struct fk_proc_stat st;
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (fk_read_small(path, name, sizeof name) > 0 && sscanf(name, "ksoftirqd/%d%c", &cpu, &nl) == 2 && nl == '\n' &&
        cpu >= 0 && cpu < CPU_SETSIZE && fk_proc_stat(pid, 0, &st) && (st.flags & FK_PF_KTHREAD))
        softirqd[cpu] = pid;
    return true;
}

/* cpuacct.usage_percpu of the cpuacct hierarchy's root (cgroup v1), or
 * NULL (cgroup v2 only: no per-CPU time of every task; each side's CPU
 * stays its CPUs' busy time). */
static const char *cpu_tasks_file;

/* Idle and iowait nanoseconds of CPU cpu so far, read from a thread on
 * that CPU (a CPU's idle count is brought up to date when it leaves idle,
 * so the reading CPU's is current), and the monotonic time of the read:
 * false when /proc/timer_list cannot be read (root only) or lacks them. */
static bool cpu_idle_ns(int cpu, double *idle, double *at)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return false;
    FILE *f = fopen("/proc/timer_list", "re");
    if (!f)
        return false;
    char line[256];
    int cur = -1, seen = 0;
    *idle = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "cpu: ", 5) == 0)
            cur = atoi(line + 5);
        else if (cur == cpu && (strstr(line, ".idle_sleeptime") || strstr(line, ".iowait_sleeptime"))) {
            const char *c = strchr(line, ':');
            if (c) {
                *idle += strtod(c + 1, NULL);
                seen++;
            }
        }
    }
    *at = (double)fk_now_ns();
    fclose(f);
    return seen == 2;
}

/* Every task's CPU time on CPU cpu so far, nanoseconds (cpu_tasks_file:
 * one number per possible CPU, in order); read from a thread on that CPU,
 * whose own time since it came there is not in it yet (as in cpu_idle_ns,
 * alike at both marks of a run). false when unreadable. */
static bool cpu_tasks_ns(int cpu, double *ns)
{
    static char buf[65536];
    if (!cpu_tasks_file || fk_read_small(cpu_tasks_file, buf, sizeof buf) <= 0)
        return false;
    char *p = buf, *end;
    for (int i = 0;; i++, p = end) {
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno)
            return false;
        if (i == cpu) {
            *ns = (double)v;
            return true;
        }
    }
}

/* The sum over the CPUs of set of (time - idle time), in seconds: its
 * difference over a run is their busy time; the sum of the times the
 * CPUs were read, in seconds: its difference is the CPU time that busy
 * time is within (more than the run's when a reading waited for its CPU,
 * on a loaded machine); if tasks, the sum of every task's CPU time on
 * them (cpu_tasks_ns), in seconds, or NAN where the kernel gives none;
 * and if softirq, their softirq threads' CPU time so far, or NAN where one
 * is unknown (read on the CPU: the thread is not running then). The
 * calling thread is back on all_cpus after. */
static bool cpus_busy_mark(const cpu_set_t *set, double *mark, double *read_at, double *tasks, double *softirq)
{
    bool ok = true;
    *mark = *read_at = 0;
    if (tasks)
        *tasks = 0;
    if (softirq)
        *softirq = 0;
    for (int c = 0; c < CPU_SETSIZE && ok; c++)
        if (CPU_ISSET(c, set)) {
            double idle, at, t;
            unsigned long long ns;
            ok = cpu_idle_ns(c, &idle, &at);
            *mark += (at - idle) / 1e9;
            *read_at += at / 1e9;
            if (tasks)
                *tasks = cpu_tasks_ns(c, &t) ? *tasks + t / 1e9 : NAN;
            if (softirq)
                *softirq = softirqd[c] > 0 && fk_proc_task_cpu_ns(softirqd[c], &ns) ? *softirq + (double)ns / 1e9 : NAN;
        }
    pin_self(&all_cpus);
    return ok;
}

/* ---- servers ---- */

struct counters { uint64_t magic, calls, bytes; };

struct server {
    bool grpc, cache;
    char name[32];
    pid_t pid;
    char *cgroup;               /* its own cgroup v2 directory, or NULL */
    char addr[64];
    struct counters *cnt;       /* the shim's counters, or NULL */
    struct srv_cpu cpu;
};

static void server_start(struct server *s, bool grpc, bool cache, const char *root)
{
    memset(s, 0, sizeof *s);
    s->grpc = grpc;
    s->cache = cache;
    snprintf(s->name, sizeof s->name, "%s%s", grpc ? "grpc" : "sock", cache ? "+cache" : "");
    char portf[PATH_MAX], log[PATH_MAX], cdir[PATH_MAX], stats[PATH_MAX], chunk[32];
    snprintf(portf, sizeof portf, "%s/%s.port", opt.out, s->name);
    snprintf(log, sizeof log, "%s/%s.log", opt.out, s->name);
    snprintf(cdir, sizeof cdir, "%s/cache-%s", opt.out, s->name);
    snprintf(stats, sizeof stats, "%s/%s.malloc", opt.out, s->name);
    snprintf(chunk, sizeof chunk, "%llu", (unsigned long long)opt.chunk);
    char rmcmd[PATH_MAX + 16];
    snprintf(rmcmd, sizeof rmcmd, "rm -rf '%s'", cdir);
    if (system(rmcmd) != 0)
        fk_warn("cannot clear %s", cdir);
    unlink(portf);
    unlink(stats);
    char *prog = find_prog(grpc ? "fetchd-grpc" : "fetchd-sock");
    const char *argv[24];
    int a = 0;
    argv[a++] = prog;
    argv[a++] = "--repo-root"; argv[a++] = root;
    argv[a++] = "--port-file"; argv[a++] = portf;
    char listen[64];
    snprintf(listen, sizeof listen, "%s:0", bench_net_server_ip());
    argv[a++] = "--listen"; argv[a++] = listen;
    argv[a++] = "--max-conns"; argv[a++] = "128";
    argv[a++] = "--max-per-peer"; argv[a++] = "128";    /* every client is local */
    if (grpc) { argv[a++] = "--chunk-size"; argv[a++] = chunk; }
    if (cache) { argv[a++] = "--cache-dir"; argv[a++] = cdir; argv[a++] = "--cache-size"; argv[a++] = "4G"; }
    argv[a] = NULL;
    size_t ne = 0;
    while (environ[ne])
        ne++;
    char **envp = fk_calloc(ne + 3, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            envp[k++] = environ[i];
    bool counting = opt.shim && access(opt.shim, R_OK) == 0;
    if (counting && uses_asan(prog)) {
        fk_warn("%s is built with AddressSanitizer: allocations not counted", prog);
        counting = false;
    }
    char *pre = NULL, *st = NULL;
    if (counting) {
        envp[k++] = pre = fk_asprintf("LD_PRELOAD=%s", opt.shim);
        envp[k++] = st = fk_asprintf("FETCHD_MALLOC_STATS=%s", stats);
    }
    pin_self(&server_cpus);     /* inherited by the server, its threads and git */
    bench_net_enter_server();   /* and so is the network namespace */
    s->pid = spawn(argv, envp, log, -1);
    bench_net_leave();
    pin_self(&all_cpus);
    /* A cgroup of its own (its threads and git children): flamekit pid
     * then samples it per CPU in that cgroup, and a thread-per-connection
     * server's short threads are sampled from their start. */
    char *note = NULL;
    if (!(s->cgroup = fk_cgroup_make(s->pid, "fetch-bench", &note))) {
        static bool said;
        if (!said)
            fk_warn("servers run in fetch-bench's cgroup: %s (--profile's flame graphs of fetchd-sock may miss its "
                    "short connection threads)", note);
        said = true;
        free(note);
    }
    free(pre);
    free(st);
    free(envp);
    for (int i = 0; i < 400 && access(portf, R_OK) != 0; i++) {
        int wst;
        if (waitpid(s->pid, &wst, WNOHANG) == s->pid) {
            s->pid = 0;     /* reaped: nothing for servers_kill */
            fk_die("%s exited at start; see %s", prog, log);
        }
        usleep(25000);
    }
    FILE *pf = fopen(portf, "re");
    int port = 0;
    if (!pf || fscanf(pf, "%d", &port) != 1)
        fk_die("%s did not start within 10 s; see %s", prog, log);
    fclose(pf);
    free(prog);
    snprintf(s->addr, sizeof s->addr, "%s:%d", bench_net_server_ip(), port);
    if (counting) {
        int fd = open(stats, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
            close(fd);
            if (m != MAP_FAILED && ((struct counters *)m)->magic)
                s->cnt = m;
            else if (m != MAP_FAILED)
                munmap(m, 4096);
        }
        if (!s->cnt)
            fk_warn("%s: the allocation counter did not start: allocations not counted", s->name);
    }
    srv_cpu_open(&s->cpu, s->pid);
}

static void server_uncgroup(struct server *s)
{
    if (s->cgroup && !fk_cgroup_remove(s->cgroup))
        fk_warn("cannot remove the cgroup %s: %s", s->cgroup, strerror(errno));
    free(s->cgroup);
    s->cgroup = NULL;
}

static void server_stop(struct server *s)
{
    kill(s->pid, SIGTERM);
    int st = wait_exit(s->pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fk_warn("%s did not exit cleanly; see %s/%s.log", s->name, opt.out, s->name);
    for (int i = 0; i < s->cpu.n; i++) {
        close(s->cpu.self[i]);
        close(s->cpu.all[i]);
    }
    if (s->cnt)
        munmap(s->cnt, 4096);
    s->pid = 0;
    server_uncgroup(s);
}

/* ---- clients ---- */

/* One client process's report, in memory shared with the parent. */
struct client_report {
    uint64_t fetches, bytes, errors;
    uint64_t t_end;             /* fk_now_ns() after its last fetch */
    double cpu;                 /* seconds of CPU (all its threads) over the timed fetches */
    uint64_t minflt, csw;       /* its minor page faults and context switches over them */
    char err[256];
};

struct client_job {
    enum fetchd_transport tr;
    const char *addr, *repo;
    const struct fk_buf *req;
    int streams;                /* calls in flight on one connection (grpc-shared), else 1 */
    int fetches;                /* per stream; 0: until *stop */
    volatile int *stop;
    struct client_report *rep;
    int ready_w, go_r, done_w;
    int leave_r;                /* closed by the parent once the run is measured: then exit */
};

/* One stream of fetches: one call at a time, each a complete fetch (the
 * response demultiplexed, its final flush seen). */
struct stream {
    const struct client_job *j;
    int left;                   /* fetches still to start; -1: until *stop */
    struct fetchd_demux dm;
    uint64_t bytes;             /* of the call under way */
    uint64_t fetches, total, errors;
    char err[256];
};

static bool drop_sink(void *arg, const void *data, size_t len)
{
    (void)arg, (void)data, (void)len;
    return true;
}

static bool stream_next(void *arg)
{
    struct stream *s = arg;
    if (s->errors || s->left == 0 || (s->left < 0 && *s->j->stop))
        return false;
    if (s->left > 0)
        s->left--;
    fetchd_demux_init(&s->dm, drop_sink, NULL);
    s->bytes = 0;
    return true;
}

static bool stream_sink(void *arg, const void *data, size_t len)
{
    struct stream *s = arg;
    s->bytes += len;
    return fetchd_demux_feed(&s->dm, data, len);
}

static void stream_end(void *arg, bool ok, const char *err)
{
    struct stream *s = arg;
    if (ok && (s->dm.failed || !s->dm.done || s->dm.pack_bytes == 0)) {
        err = s->dm.failed ? s->dm.err : "response truncated or without a pack";
        ok = false;
    } else if (!ok && s->dm.failed)
        err = s->dm.err;
    if (!ok) {
        s->errors++;
        if (!s->err[0])
            snprintf(s->err, sizeof s->err, "%.255s", *err ? err : "the response was refused");
        return;
    }
    s->fetches++;
    s->total += s->bytes;
}

/* n streams on c, each making `fetches` fetches (0: until *j->stop). */
static void streams_run(struct fetchd_client *c, const struct client_job *j, struct stream *st, int n, int fetches)
{
    void **args = fk_calloc((size_t)n, sizeof *args);
    for (int i = 0; i < n; i++) {
        memset(&st[i], 0, sizeof st[i]);
        st[i].j = j;
        st[i].left = fetches ? fetches : -1;
        args[i] = &st[i];
    }
    const struct fetchd_calls k = { n, args, stream_next, stream_sink, stream_end };
    char err[256];
    if (!fetchd_client_run(c, FETCHD_OP_UPLOAD_PACK, j->repo, j->req->data, j->req->len, &k, err, sizeof err)) {
        st[0].errors++;
        snprintf(st[0].err, sizeof st[0].err, "%s", err);
    }
    free(args);
}

/* CPU seconds of this process so far, its minor page faults and context
 * switches. */
static double self_cpu(uint64_t *minflt, uint64_t *csw)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *minflt = (uint64_t)ru.ru_minflt;
    *csw = (uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* A gRPC client's heap grows over its fetches: its read buffers come and
 * go in sizes that leave holes, and the heap's top moves up 2-4 MiB per
 * 10.8 MiB fetch even though freed memory is kept (see client_process).
 * Every page the heap grows by is faulted in, and a fault costs 10-15 us
 * on this virtual machine: 8 grpc-conn clients took 12,000-15,000 faults
 * per run, most of their CPU, and 1 or 10,000 by the heap's history. So
 * after the warm-up the heap is grown by CLIENT_HEAP_MIB (bench.h) per
 * call in flight (grpc-shared: one per client; 19,683 faults in one run of
 * 8 calls with 32 MiB in all), up to 4 times that, touched and freed, in blocks under the mmap threshold so that they stay
 * in the heap and coalesce into its top: the timed fetches then fault in a
 * few hundred pages per client at most. The blocks are asked for as
 * transparent huge pages, so touching them is 16 faults, not 8,192 (80 ms
 * of a client's CPU per run); where the kernel gives none, small pages. */
static void heap_prefault(int streams)
{
    enum { BLOCK = 8 << 20, PER = (CLIENT_HEAP_MIB << 20) / BLOCK, MAXN = 4 * PER };
    const uintptr_t huge = 2 << 20;
    int N = streams * PER < MAXN ? streams * PER : MAXN;
    char *blk[MAXN];
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < N; i++) {
        blk[i] = fk_malloc(BLOCK);
        lo = (uintptr_t)blk[i] < lo ? (uintptr_t)blk[i] : lo;
        hi = (uintptr_t)blk[i] + BLOCK > hi ? (uintptr_t)blk[i] + BLOCK : hi;
    }
    /* One range at the heap's top (glibc splits it from the top chunk in
     * order); its whole huge pages, where it is one. */
    lo = (lo + huge - 1) & ~(huge - 1);
    hi &= ~(huge - 1);
    if (hi > lo && hi - lo <= 2 * (uintptr_t)N * BLOCK)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    for (int i = 0; i < N; i++)
        for (size_t o = 0; o < BLOCK; o += 4096)
            ((volatile char *)blk[i])[o] = 1;
    for (int i = N; i-- > 0;)
        free(blk[i]);
}

/* A client process: its streams warm up (one fetch each), it says ready,
 * waits for go (the parent closes the pipe), runs the timed fetches and
 * reports. All its calls run from one thread through one completion
 * queue: with a thread per call on a shared connection, gRPC's threads
 * handed each other the connection's reads, and the client's CPU per GiB
 * moved +-50 % from run to run. */
static _Noreturn void client_process(const struct client_job *j)
{
    fk_stop_restore();          /* the terminal's Ctrl-C ends a client */
    signal(SIGPIPE, SIG_IGN);
    pin_self(&client_cpus);
    bench_net_enter_client();   /* before gRPC makes its threads: they inherit it */
    /* A client keeps the memory it frees. By default glibc hands freed
     * memory at the top of a heap back to the kernel (trim threshold
     * 128 KiB, moved by its dynamic mmap threshold) and faults it in again
     * on the next allocation: gRPC's read buffers, allocated and freed per
     * read, then cost 7k-38k page faults per 216 MiB and made the gRPC
     * client 3-6x dearer (0.6 -> 3-5 CPU s/GiB), the bottleneck, and
     * bimodal from run to run by the heap's history. The servers keep
     * glibc's defaults: their cost is what is measured. */
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);     /* glibc's largest */
    (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
    /* One arena for all its threads, the heap heap_prefault grows: gRPC
     * starts seven threads, and whichever of them happened to handle the
     * reads of a run allocated in an arena of its own, grown (and faulted
     * in) during the timed fetches: 2,430 and 5,838 faults in two of six
     * runs of 8 grpc-shared streams, its arena 0.1 -> 23 MiB, the heap
     * unchanged. Set before gRPC's threads exist (glibc fixes the limit at
     * a process's first extra arena); the client runs on one CPU, so its
     * threads seldom contend for the arena's lock. */
    (void)mallopt(M_ARENA_MAX, 1);
    struct client_report *r = j->rep;
    struct fetchd_client *c = fetchd_client_new(j->tr, j->addr, r->err, sizeof r->err);
    if (!c) {
        r->errors = 1;
        _exit(1);
    }
    int n = j->streams;
    struct stream *st = fk_calloc((size_t)n, sizeof *st);
    streams_run(c, j, st, n, 1);        /* warm-up, not counted */
    if (j->tr == FETCHD_GRPC)
        heap_prefault(n);
    for (int i = 0; i < n; i++)
        if (st[i].errors) {
            r->errors = st[i].errors;
            snprintf(r->err, sizeof r->err, "%s", st[i].err);
            _exit(1);
        }
    char x = 1;
    if (write(j->ready_w, &x, 1) != 1)
        _exit(1);
    while (read(j->go_r, &x, 1) < 0 && errno == EINTR)
        ;
    uint64_t f0, f1, w0, w1;
    double c0 = self_cpu(&f0, &w0);
    streams_run(c, j, st, n, j->fetches);
    uint64_t t_end = fk_now_ns();
    double c1 = self_cpu(&f1, &w1);
    for (int i = 0; i < n; i++) {
        r->fetches += st[i].fetches;
        r->bytes += st[i].total;
        r->errors += st[i].errors;
        if (st[i].errors && !r->err[0])
            snprintf(r->err, sizeof r->err, "%s", st[i].err);
    }
    r->t_end = t_end;
    r->cpu = c1 - c0;
    r->minflt = f1 - f0;
    r->csw = w1 - w0;
    if (write(j->done_w, &x, 1) != 1)
        _exit(1);
    /* Exit once the run is measured: a process's exit (its memory
     * unmapped: a gRPC client's grown heap) would land on the clients' CPUs
     * inside the run's marks, counted as another task's time. */
    while (read(j->leave_r, &x, 1) < 0 && errno == EINTR)
        ;
    _exit(0);   /* no gRPC shutdown: nothing of it is measured */
}

/* ---- one run ---- */


/* SIGINT, SIGTERM, SIGHUP: the run in progress ends (its clients killed),
 * and so does the benchmark, without a report (atexit: servers_kill). */
static void die_if_stopped(void)
{
    if (fk_stop_signal)
        fk_die("stopped by signal %d (%s): no report written", (int)fk_stop_signal,
               strsignal(fk_stop_signal));
}

/* Read exactly n bytes of tokens from fd, within 10 minutes (false at
 * once on a stop signal). */
static bool read_tokens(int fd, int n)
{
    uint64_t until = fk_now_ns() + 600ull * 1000000000ull;
    while (n > 0) {
        if (fk_stop_signal)
            return false;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, 1000);
        if (r < 0 && errno != EINTR)
            return false;
        if (r > 0) {
            char b[64];
            ssize_t m = read(fd, b, (size_t)n < sizeof b ? (size_t)n : sizeof b);
            if (m <= 0)
                return false;   /* every writer gone: a client died */
            n -= (int)m;
        }
        if (fk_now_ns() > until)
            return false;
    }
    return true;
}

/* What a run without a set number of fetches does around its clients:
 * before_go once they are warmed up and waiting (false: they are sent home
 * without fetching), during once they fetch; they stop when it returns. */
struct run_hooks {
    bool (*before_go)(void *arg);
    void (*during)(void *arg);
    void *arg;
};

/* nclients clients of mode against s fetch repo; fetches per client (0:
 * until the hooks' during returns). */
static void run(struct server *s, enum mode m, int nclients, const char *repo, const struct fk_buf *req,
                int fetches, struct obs *o, const struct run_hooks *h)
{
    int nproc = m == M_GRPC_SHARED ? 1 : nclients;
    struct client_report *reps = mmap(NULL, sizeof *reps * (size_t)nproc + sizeof(int), PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (reps == MAP_FAILED)
        fk_die("mmap: %s", strerror(errno));
    volatile int *stop = (volatile int *)(reps + nproc);
    int ready[2], go[2], done[2], leave[2];
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0 || pipe2(done, O_CLOEXEC) != 0 ||
        pipe2(leave, O_CLOEXEC) != 0)
        fk_die("pipe: %s", strerror(errno));
    double probe = machine_probe_ms(&server_cpus), cprobe = compute_probe_ms();
    double clprobe = machine_probe_ms(&client_cpus);
    reset_hwm(s->pid);
    pid_t *pids = fk_calloc((size_t)nproc, sizeof *pids);
    fflush(NULL);
    for (int i = 0; i < nproc; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            fk_die("fork: %s", strerror(errno));
        if (pids[i] == 0) {
            close(ready[0]);
            close(go[1]);
            close(done[0]);
            close(leave[1]);
            struct client_job j = {
                .tr = s->grpc ? FETCHD_GRPC : FETCHD_SOCK, .addr = s->addr, .repo = repo, .req = req,
                .streams = m == M_GRPC_SHARED ? nclients : 1, .fetches = fetches, .stop = stop,
                .rep = &reps[i], .ready_w = ready[1], .go_r = go[0], .done_w = done[1], .leave_r = leave[0],
            };
            client_process(&j);
        }
    }
    close(ready[1]);
    close(go[0]);
    close(done[1]);
    close(leave[0]);
    if (!read_tokens(ready[0], nproc)) {
        for (int i = 0; i < nproc; i++)
            kill(pids[i], SIGKILL);
        die_if_stopped();
        const char *e = "";
        for (int i = 0; i < nproc && !*e; i++)
            e = reps[i].err;
        fk_die("%s, %s, %d clients: a client failed before the timed fetches: %s", s->name, mode_name[m],
               nclients, *e ? e : "(it died)");
    }
    double sc0, gc0, sc1, gc1, sw0, sw1;
    struct counters m0 = { 0 }, m1 = { 0 };
    if (s->cnt)
        m0 = *s->cnt;
    srv_cpu_read(&s->cpu, s->pid, &sc0, &gc0, &sw0);
    double cg0 = cgroup_cpu_s(s->cgroup);
    double sf0 = proc_minflt(s->pid);
    double ntp0 = 0, ntb0 = 0, nrp0 = 0, ntp1 = 0, ntb1 = 0, nrp1 = 0;
    bool netdev = bench_net_active() && proc_netdev(s->pid, &ntp0, &ntb0, &nrp0);
    static struct tasks_snap ts0, ts1;
    tasks_snap(s->pid, &ts0);
    double mb0, mt0, mb1, mt1, mi0, mi1, ss0 = 0, cs0 = 0, ss1 = 0, cs1 = 0, sa0 = 0, ca0 = 0, sa1 = 0, ca1 = 0;
    double st0 = NAN, ct0 = NAN, st1 = NAN, ct1 = NAN, sq0 = NAN, cq0 = NAN, sq1 = NAN, cq1 = NAN;
    bool sides = side_cpu && !h && cpus_busy_mark(&server_cpus, &ss0, &sa0, &st0, &sq0) &&
                 cpus_busy_mark(&client_cpus, &cs0, &ca0, &ct0, &cq0);
    machine_jiffies(&mb0, &mt0, &mi0);
    double si0 = 0, ci0 = 0, si1 = 0, ci1 = 0;
    bool intr_sides = sides && side_interrupts(&si0, &ci0);
    bool going = !h || !h->before_go || h->before_go(h->arg);
    if (!going)
        *stop = 1;
    uint64_t t0 = fk_now_ns();
    close(go[1]);       /* go */
    if (going && h && h->during)
        h->during(h->arg);
    if (!fetches)
        *stop = 1;
    bool ok = read_tokens(done[0], nproc);
    sides = sides && cpus_busy_mark(&server_cpus, &ss1, &sa1, &st1, &sq1) &&
            cpus_busy_mark(&client_cpus, &cs1, &ca1, &ct1, &cq1);
    machine_jiffies(&mb1, &mt1, &mi1);
    intr_sides = intr_sides && side_interrupts(&si1, &ci1);
    double cg1 = cgroup_cpu_s(s->cgroup);
    srv_cpu_read(&s->cpu, s->pid, &sc1, &gc1, &sw1);
    double sf1 = proc_minflt(s->pid);
    netdev = netdev && proc_netdev(s->pid, &ntp1, &ntb1, &nrp1);
    tasks_snap(s->pid, &ts1);
    if (s->cnt)
        m1 = *s->cnt;
    o->rss_mib = status_mib(s->pid, "VmHWM");
    o->anon_mib = status_mib(s->pid, "RssAnon");
    o->load1 = loadavg1();
    o->machine_busy = mt1 > mt0 ? 100 * (mb1 - mb0) / (mt1 - mt0) : 0;
    o->interrupts = mi1 > mi0 ? mi1 - mi0 : 0;
    o->server_cpus_interrupts = intr_sides && si1 >= si0 ? si1 - si0 : NAN;
    o->client_cpus_interrupts = intr_sides && ci1 >= ci0 ? ci1 - ci0 : NAN;
    o->probe_ms = probe;
    o->cprobe_ms = cprobe;
    o->probe_after_ms = machine_probe_ms(&server_cpus);
    o->cprobe_after_ms = compute_probe_ms();
    o->client_probe_ms = clprobe;
    o->client_probe_after_ms = machine_probe_ms(&client_cpus);
    close(leave[1]);    /* the clients may exit now */
    for (int i = 0; i < nproc; i++) {
        if (!ok)
            kill(pids[i], SIGKILL);
        int st;
        while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
            ;
    }
    close(ready[0]);
    close(done[0]);
    memset(o, 0, offsetof(struct obs, rss_mib));
    uint64_t t_end = t0;
    const char *err = NULL;
    uint64_t errors = 0;
    for (int i = 0; i < nproc; i++) {
        o->fetches += (double)reps[i].fetches;
        o->bytes += (double)reps[i].bytes;
        o->client_cpu += reps[i].cpu;
        o->client_minflt += (double)reps[i].minflt;
        o->client_csw += (double)reps[i].csw;
        errors += reps[i].errors;
        if (reps[i].errors && !err)
            err = reps[i].err;
        if (reps[i].t_end > t_end)
            t_end = reps[i].t_end;
    }
    if (!ok)
        die_if_stopped();
    if (!ok || errors)
        fk_die("%s, %s, %d clients: %llu fetch(es) failed: %s", s->name, mode_name[m], nclients,
               (unsigned long long)errors, err && *err ? err : "a client died");
    o->wall = (double)(t_end - t0) / 1e9;
    o->server_cpu = o->server_threads_cpu = sc1 - sc0;
    o->server_csw = sw1 - sw0;
    threads_csw(o, &ts0, &ts1, o->server_csw);
    o->server_minflt = sf1 > sf0 ? sf1 - sf0 : 0;
    if (netdev) {
        o->server_tx_packets = ntp1 - ntp0;
        o->server_tx_bytes = ntb1 - ntb0;
        o->server_rx_packets = nrp1 - nrp0;
    }
    o->git_cpu = gc1 > gc0 ? gc1 - gc0 : 0;
    o->client_procs_cpu = o->client_cpu;
    /* Inherited task-clock counters miss part of each short task's life
     * (here: 300 runs of /bin/true under one, 1,097 ms against 1,228 in
     * getrusage's children, 0.44 ms a process; threads made and joined,
     * 12-48 us each), and a thread-per-connection server makes a thread a
     * fetch, git two or three processes. The server's cgroup keeps the
     * scheduler's time of all of them. So in a run where git ran, git's is
     * the cgroup's less the server's threads' (a thread's share of what
     * the counters miss goes with it), and where none did, the server's
     * own is the cgroup's. A git that ran took milliseconds; the two
     * counters read a moment apart differ by microseconds (0-29 us in
     * runs with the cache). */
    o->git_task_clock = o->git_cpu;
    o->server_own_cpu = o->server_threads_cpu;
    o->server_cgroup_cpu = isfinite(cg0) && isfinite(cg1) ? cg1 - cg0 : NAN;
    if (isfinite(o->server_cgroup_cpu)) {
        double rest = o->server_cgroup_cpu - o->server_threads_cpu;
        bool git_ran = o->git_task_clock >= 0.001;
        if (git_ran && rest > o->git_cpu)
            o->git_cpu = rest;
        else if (!git_ran && rest > 0) {
            o->server_own_cpu = o->server_cgroup_cpu;
            o->git_cpu = 0;
        }
    }
    o->server_cpu = o->server_own_cpu;
    o->sides = sides;
    if (sides) {
        /* The CPUs' busy time; never below what their tasks were counted. */
        double sv = ss1 - ss0 - o->git_cpu, cl = cs1 - cs0;
        o->server_cpus_elapsed = sa1 - sa0;
        o->client_cpus_elapsed = ca1 - ca0;
        o->server_cpus_busy = ss1 - ss0;
        o->client_cpus_busy = cl;
        o->tasks_known = isfinite(st0) && isfinite(st1) && isfinite(ct0) && isfinite(ct1);
        if (o->tasks_known) {
            /* each side's own, what ran in no task on its CPUs and their
             * softirq threads */
            o->server_cpus_tasks = st1 - st0;
            o->client_cpus_tasks = ct1 - ct0;
            o->softirqd_known = isfinite(sq0) && isfinite(sq1) && isfinite(cq0) && isfinite(cq1);
            if (o->softirqd_known) {
                o->server_cpus_softirqd = sq1 - sq0;
                o->client_cpus_softirqd = cq1 - cq0;
            }
            double untasked = o->server_cpus_busy - o->server_cpus_tasks;
            sv = o->server_own_cpu + (untasked > 0 ? untasked : 0) + o->server_cpus_softirqd;
            untasked = cl - o->client_cpus_tasks;
            cl = o->client_procs_cpu + (untasked > 0 ? untasked : 0) + o->client_cpus_softirqd;
        }
        o->server_cpu = sv > o->server_cpu ? sv : o->server_cpu;
        o->client_cpu = cl > o->client_cpu ? cl : o->client_cpu;
    }
    o->alloc_counted = s->cnt != NULL;
    o->alloc_calls = (double)(m1.calls - m0.calls);
    o->alloc_bytes = (double)(m1.bytes - m0.bytes);
    munmap(reps, sizeof *reps * (size_t)nproc + sizeof(int));
    free(pids);
}

/* ---- the host's slow spells ---- */

/* On this virtual machine the host sometimes slows it for tens of seconds
 * (invisible as steal time): in such a spell the probe took 24-26 ms
 * instead of 18-20, and the gRPC server's CPU per GiB rose 35-100 %, the
 * socket server's 10-40 %, so a round's ratios moved. In two default
 * sweeps, 40 of 44 gRPC runs 20 % or more above their setting's median
 * had a probe 15 % or more above the sweep's median probe, and every run
 * with such a probe was 10 % or more above. But a spell that slows cores
 * rather than memory passed the memory probe: whole rounds of the gRPC
 * server's runs (and its clients') cost 15-20 % more or less than the
 * rest with the memory probe unchanged, and a spell that began during a
 * run was seen by no probe before it. So each run is bracketed by both
 * probes (memory and compute, before and after), each against a reference
 * of its own kind and place, and a run any of them calls slow is taken
 * again once the probes are back to normal, within a budget of time.
 * The reference is a low percentile (PROBE_REF_PCT) of the probes so far,
 * the five taken before the first run among them, not their median: a
 * host slow for most of a sweep made the median slow too, so its runs
 * passed as normal (a sweep whose memory probe took 33-35 ms in 19 of 25
 * runs and 19-20 ms in 5 kept none as slow, its reference 34.8 ms; its
 * socket server's CPU per GiB was 1.35 s against 0.72 s in the next
 * sweep, where the probes took 17-19 ms). Normal probes spread little
 * (their median 2-4 % above their 10th percentile in quiet sweeps), so
 * the low reference flags little more when the host is steady. A host
 * slow for a whole sweep, calibration included, is seen by no reference
 * of the sweep's own: fetch-agree.sh compares the sweeps' references. */
int runs_retaken, runs_slow_kept, runs_crowded_kept, runs_clients_slow_kept;
struct retake_pass retake_pass;
struct probe_ref probe_ref[NPROBES];
static double retake_s;         /* spent on retakes and waits */
static double rounds_s;         /* the rounds' own time, retakes between them left out */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void probe_note1(struct probe_ref *p, double ms)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->seen = fk_realloc(p->seen, (size_t)p->cap * sizeof *p->seen);
    }
    p->seen[p->n++] = ms;
    double *t = fk_malloc((size_t)p->n * sizeof *t);
    memcpy(t, p->seen, (size_t)p->n * sizeof *t);
    qsort(t, (size_t)p->n, sizeof *t, cmp_double);
    p->ref_ms = t[p->n * PROBE_REF_PCT / 100];
    free(t);
}

static const double *probe_of(const struct obs *o, int k)
{
    static const size_t at[NPROBES] = { offsetof(struct obs, probe_ms), offsetof(struct obs, cprobe_ms),
                                        offsetof(struct obs, probe_after_ms), offsetof(struct obs, cprobe_after_ms),
                                        offsetof(struct obs, client_probe_ms),
                                        offsetof(struct obs, client_probe_after_ms) };
    return (const double *)((const char *)o + at[k]);
}

static void probe_note(const struct obs *o)
{
    for (int k = 0; k < NPROBES; k++)
        probe_note1(&probe_ref[k], *probe_of(o, k));
}

/* Other work on the benchmark's CPUs. The probes time a fixed piece of
 * work in CPU time, so a process that shares the CPUs with the benchmark
 * leaves them unchanged, but each side's CPU is its CPUs' busy time, which
 * counts that process too. In one quiet call of session 14 (every setting
 * 4M, cache, 1 and 2 clients, six invocations) the clients' CPU was busy
 * 38-82 % of the time beyond the client processes' own CPU in every run,
 * against 2-15 % in the next call: the servers' CPU per GiB rose 30-100 %,
 * unevenly (the socket server's with one client 1.5-1.8 s against 0.8),
 * and the gRPC/socket ratios with two clients moved 26-48 % between the
 * two calls while each call's invocations agreed with one another. The
 * clients' CPUs are the ones to watch: the servers' are near 100 % busy
 * with the benchmark, so the scheduler puts other work on the clients'
 * first, and the servers' own count misses the short-lived threads of the
 * socket server (its side's extra is 10-40 % on a quiet machine). What is
 * left there on a quiet machine is softirq work taken while the CPU was
 * idle (the receive side of RPS) and kernel threads. */
double client_cpus_others_pct(const struct obs *o)
{
    if (!o->sides || o->client_cpus_elapsed <= 0)
        return 0;
    double busy = o->client_cpus_busy > o->client_procs_cpu ? o->client_cpus_busy : o->client_procs_cpu;
    return 100 * (busy - o->client_procs_cpu) / o->client_cpus_elapsed;
}

double server_cpus_others_pct(const struct obs *o)
{
    if (!o->sides || o->server_cpus_elapsed <= 0)
        return 0;
    double busy = o->server_cpus_busy - o->git_cpu;
    busy = busy > o->server_own_cpu ? busy : o->server_own_cpu;
    return 100 * (busy - o->server_own_cpu) / o->server_cpus_elapsed;
}

/* Against its setting's lowest run too: the socket server's clients
 * receive 10.8 MiB fetches with the cache at 17-30 % beyond their own CPU
 * on a quiet machine (the receive work done while their CPU is idle). */
bool run_crowded(const struct setting *s, int r)
{
    if (opt.no_probes)
        return false;
    double low = 100;
    for (int k = 0; k < opt.rounds; k++)
        if (s->o[k].sides && client_cpus_others_pct(&s->o[k]) < low)
            low = client_cpus_others_pct(&s->o[k]);
    double v = client_cpus_others_pct(&s->o[r]);
    return v > OTHERS_MAX_PCT && v > low + OTHERS_MARGIN_PCT;
}

/* The run cannot be quoted: a probe says the host was slow around it, or
 * other work crowded its CPUs. */
static bool host_slow(const struct setting *s, int r)
{
    for (int k = 0; k < PROBE_CLIENT_MEM; k++)
        if (*probe_of(&s->o[r], k) > SLOW_PROBE * probe_ref[k].ref_ms)
            return true;
    return run_crowded(s, r);
}

/* The clients' CPU has slow spells of its own, which the probes on the
 * servers' CPU do not see: in a quiet sweep without the cache (session 18,
 * 138 runs) the client processes' CPU per fetch, over its setting's
 * median, correlated 0.73 with the memory probe on the clients' CPU after
 * the run (0.62 before) and 0.04-0.17 with the servers' probes; that probe
 * took 1.5-2.0x its reference in such a spell, the clients' CPU per fetch
 * 1.2-1.9x its median (the clients' CPU per GiB moved up to 48 % between
 * two default sweeps with every server figure within 10 %). A run whose
 * clients' probe was slow is taken again with the slow ones; kept, it is
 * left out of the figures that count the clients' CPU (bench-report.c). */
static bool run_clients_slow(const struct setting *s, int r)
{
    for (int k = PROBE_CLIENT_MEM; k < NPROBES; k++)
        if (*probe_of(&s->o[r], k) > SLOW_PROBE * probe_ref[k].ref_ms)
            return true;
    return false;
}

/* Whether a run started now would be normal: both probes as they would
 * be before it, and the clients' CPUs, with no client running, busy under
 * OTHERS_MARGIN_PCT % of 0.1 s. */
enum host_now { HOST_NORMAL, HOST_SLOW, HOST_CROWDED };
static enum host_now host_now(void)
{
    if (machine_probe_ms(&server_cpus) > SLOW_PROBE * probe_ref[PROBE_MEM].ref_ms ||
        compute_probe_ms() > SLOW_PROBE * probe_ref[PROBE_COMPUTE].ref_ms ||
        machine_probe_ms(&client_cpus) > SLOW_PROBE * probe_ref[PROBE_CLIENT_MEM].ref_ms)
        return HOST_SLOW;
    double b0, a0, b1, a1;
    if (!side_cpu || !cpus_busy_mark(&client_cpus, &b0, &a0, NULL, NULL))
        return HOST_NORMAL;
    usleep(100000);
    if (!cpus_busy_mark(&client_cpus, &b1, &a1, NULL, NULL) || a1 <= a0 || 100 * (b1 - b0) / (a1 - a0) <= OTHERS_MARGIN_PCT)
        return HOST_NORMAL;
    return HOST_CROWDED;
}

/* One round's run of a setting. A slow one (a probe around it says the
 * host was slow) is taken again after the rounds (retake_slow), not at
 * once: a slow spell lasts tens of seconds, so a retake right after it
 * mostly met the same spell. */
static void run_setting(struct server *sv, struct setting *s, int r)
{
    struct obs *o = &s->o[r];
    o->retakes = 0;
    run(sv, s->mode, s->nclients, repos[s->size].name, &repos[s->size].req, s->fetches, o, NULL);
    probe_note(o);
}

/* ---- the whole benchmark ---- */

struct repo repos[MAX_SIZES];
int nrepos;
struct setting *settings;
int nsettings;
struct pair *pairs;
int npairs;
static struct server servers[2][2];     /* [grpc][cache] */
static bool server_up[2][2];

/* The settings a ratio compares (a socket setting and its gRPC ones: the
 * same size, cache and client count) are neighbours in settings[] and run
 * one after another in a round, so that a ratio is taken between runs of
 * the same moment. */
static bool same_group(const struct setting *a, const struct setting *b)
{
    return a->size == b->size && a->cache == b->cache && a->nclients == b->nclients;
}

/* A run normal for a class of figures: no probe of the servers' CPU
 * said slow and no other work crowded it (host_slow), and with clients
 * (the figures that count the clients' CPU) no probe of the clients' CPU
 * said slow either (run_clients_slow), against the references so far. */
static bool run_normal(const struct setting *s, int r, bool clients)
{
    return !host_slow(s, r) && !(clients && run_clients_slow(s, r));
}

/* A group of settings (those same_group from settings[i] up to j: a
 * socket setting and its gRPC ones) in round r: normal for the class when
 * every run of it is. */
static bool group_round_normal(int i, int j, int r, bool clients)
{
    for (int q = i; q < j; q++)
        if (!run_normal(&settings[q], r, clients))
            return false;
    return true;
}

static int group_end(int i)
{
    int j = i;
    while (j < nsettings && same_group(&settings[i], &settings[j]))
        j++;
    return j;
}

static int group_sock(int i, int j)
{
    for (int q = i; q < j; q++)
        if (settings[q].mode == M_SOCK)
            return q;
    return -1;
}

/* The ratio of socket setting sock against gRPC setting grpc in round r:
 * normal for the class when both its runs are. */
static bool ratio_round_normal(int grpc, int sock, int r, bool clients)
{
    return run_normal(&settings[grpc], r, clients) && run_normal(&settings[sock], r, clients);
}

/* The group's ratio (its socket setting against gRPC setting *least) with
 * the fewest rounds, of the first `upto`, where both its runs were normal
 * for the class (bench-report.c takes a ratio's median over such rounds
 * when there are MIN_NORMAL_ROUNDS), and that count; a group without a
 * socket setting has no ratio (upto, *least -1). */
static int group_ratio_normal(int i, int j, int upto, bool clients, int *least)
{
    int sock = group_sock(i, j), fewest = upto;
    *least = -1;
    for (int q = i; q < j && sock >= 0; q++) {
        if (q == sock)
            continue;
        int n = 0;
        for (int r = 0; r < upto; r++)
            n += ratio_round_normal(q, sock, r, clients);
        if (*least < 0 || n < fewest)
            fewest = n, *least = q;
    }
    return fewest;
}

/* What the group's retakes are for, of the first `upto` rounds with
 * `left` still to run: 0, a ratio of the servers' figures (server CPU,
 * throughput) that cannot have MIN_NORMAL_ROUNDS normal rounds even if
 * every round left is normal; else 1, such a ratio of the figures that
 * count the clients' CPU; else -1. *least: that ratio's gRPC setting;
 * *deficit: the rounds it is short of. The servers' class goes first:
 * a round is normal for it far more often (in the nine default sweeps of
 * sessions 18-21, 31-79 % of a ratio's rounds against 23-59 % with the
 * clients' probes too), so a retake brings a ratio of it to
 * MIN_NORMAL_ROUNDS far more often, and its ratios missed 10 % the most
 * (server CPU per GiB 20 of 28 within 10 % in session 21's pair). */
static int group_short(int i, int j, int upto, int left, int *least, int *deficit)
{
    for (int cl = 0; cl < 2; cl++) {
        int n = group_ratio_normal(i, j, upto, cl, least);
        if (*least >= 0 && n + left < MIN_NORMAL_ROUNDS) {
            *deficit = MIN_NORMAL_ROUNDS - n - left;
            return cl;
        }
    }
    return -1;
}

/* How good group i..j's runs of round r are, for keeping the better of a
 * round and its retake: normal for the servers' figures first, then for
 * every figure, then the fewer runs slow or slow on the clients' CPU. */
static int group_round_rank(int i, int j, int r)
{
    int rank = 100 * group_round_normal(i, j, r, false) + 10 * group_round_normal(i, j, r, true);
    for (int q = i; q < j; q++)
        rank -= host_slow(&settings[q], r) + run_clients_slow(&settings[q], r);
    return rank;
}

/* Take group i..j's runs of round r again, one after another as in the
 * round (a retaken gRPC run beside a socket run of minutes before is a
 * ratio across a change of the host: in the nine default sweeps of
 * sessions 18-21 a ratio between normal runs of different rounds was
 * 2.6-6.6 % off its median over all such pairs, its 90th percentile
 * 7.6-24 %, against 0.7-3.7 % and 2.7-14 % for one within a round). The
 * retake replaces the round's runs only when it is better
 * (group_round_rank): a retake that met a spell used to replace runs
 * normal for the servers' figures and slow only on the clients' CPU, or
 * less slow than its own (in those sweeps 0-98 % of a sweep's runs taken
 * again came out normal). */
static void retake_group(int i, int j, int r)
{
    struct obs old[NMODES];
    for (int q = i; q < j; q++) {
        struct setting *s = &settings[q];
        struct obs *o = &s->o[r];
        old[q - i] = *o;
        run(&servers[s->mode != M_SOCK][s->cache], s->mode, s->nclients, repos[s->size].name, &repos[s->size].req,
            s->fetches, o, NULL);
        runs_retaken++;
        probe_note(o);
    }
    int now = group_round_rank(i, j, r);
    struct obs retaken[NMODES];
    for (int q = i; q < j; q++) {
        retaken[q - i] = settings[q].o[r];
        settings[q].o[r] = old[q - i];
    }
    bool keep = now > group_round_rank(i, j, r);
    for (int q = i; q < j; q++) {
        struct obs *o = &settings[q].o[r];
        if (keep)
            *o = retaken[q - i];
        o->retakes = old[q - i].retakes + 1;
    }
    retake_pass.rounds_put_back += !keep;
}

/* Group i..j's round to take again next for gRPC setting `least`'s ratio
 * (class clients as in group_short), or with least -1 for any run of the
 * group, or -1: a round where those runs were not normal, taken again
 * fewer than twice, the least taken first, then the earliest. */
static int group_round_to_retake(int i, int j, int least, bool clients, int upto)
{
    int best = -1, best_n = 2, sock = group_sock(i, j);
    for (int r = 0; r < upto; r++) {
        if (least >= 0 ? ratio_round_normal(least, sock, r, clients) : group_round_normal(i, j, r, true))
            continue;
        int n = 0;
        for (int q = i; q < j; q++)
            n = settings[q].o[r].retakes > n ? settings[q].o[r].retakes : n;
        if (n < best_n)
            best = r, best_n = n;
    }
    return best;
}

/* The retakes' budget is a share of the rounds' own time (rounds_s), not
 * of the time so far: that counted the repositories' set-up and the pass
 * itself, so a pass could take 18 % of the rounds and more (70 s after
 * 379 s of rounds in session 21's second default sweep, 452 s in all). */
static double retake_budget_s(void)
{
    return RETAKE_BUDGET * rounds_s - retake_s;
}

static bool retake_budget_left(void)
{
    return retake_budget_s() >= 0;
}

/* Between rounds, once round `done` (from 0) is over: the slow rounds of
 * a group with a ratio that cannot reach MIN_NORMAL_ROUNDS normal ones
 * even if every round left is normal (group_short: the servers' figures'
 * ratios first) are taken again now, while a look at the host (no
 * wait: host_now) finds it normal and the budget allows. A slow spell
 * comes and goes through a sweep, and the pass after the rounds can only
 * wait for one to pass (in session 20's three default sweeps it waited
 * 25, 49 and 39 s and took 32, 3 and 16 runs again), while such a
 * group's ratios otherwise fall back to rounds that were slow (bench-
 * report.c): in those sweeps 13 to 16 of the 16 groups had fewer than 3
 * normal rounds; in five pairs of default sweeps (sessions 18 to 20)
 * 66 of the 67 ratios that missed 10 % fell back so in one sweep or both,
 * and 1 of the 98 taken over normal rounds in both missed. */
static void retake_between_rounds(int done)
{
    int left = opt.rounds - 1 - done;
    for (int i = 0, j; i < nsettings; i = j) {
        j = group_end(i);
        for (int cl, least, deficit, r;
             (cl = group_short(i, j, done + 1, left, &least, &deficit)) >= 0 &&
             (r = group_round_to_retake(i, j, least, cl, done + 1)) >= 0;) {
            if (fk_stop_signal || !retake_budget_left())
                return;
            uint64_t t = fk_now_ns();
            if (host_now() != HOST_NORMAL) {
                retake_s += (double)(fk_now_ns() - t) / 1e9;
                return;         /* a spell (or other work) now: the next round goes on */
            }
            retake_group(i, j, r);
            retake_pass.between_rounds_runs += j - i;
            retake_s += (double)(fk_now_ns() - t) / 1e9;
        }
    }
}

/* After the rounds: the slow rounds of groups (where a probe says the
 * host was slow around any run of the group, or its clients' CPU, against
 * the references by then) are taken again once the host is normal, each
 * at most twice, while the retakes have cost less than RETAKE_BUDGET of
 * the rounds' time. The groups with a ratio short of MIN_NORMAL_ROUNDS
 * normal rounds go first, those of the servers' figures before those
 * that count the clients' CPU, the nearest to it first (one retake there
 * turns a median over slow rounds into one over normal rounds); then the
 * others. In a simulation over the nine default sweeps of sessions 18-21
 * (each retaken run normal as often as that sweep's were; 30 runs taken
 * again a sweep) this order and keeping the better of a round and its
 * retake gave 167 of their 252 ratios of the servers' figures 3 normal
 * rounds, and 53 of those that count the clients' CPU, against 125 and
 * 64 by the order of before (the group nearest to 3 rounds normal for
 * every figure first, a retake always kept). The wait for the host to be
 * normal is one, of up to RETAKE_WAIT_S (less when the budget ends
 * first): a spell that outlasts it ends the pass (before, a wait of up to
 * 5 s per slow group, each one in vain skipped its group and went on to
 * the next: in session 20's three default sweeps the pass spent 25, 49
 * and 39 s waiting and 6 to 8 waits ended still slow; a spell that
 * outlasts 10 s mostly outlasts the budget). Other work on the clients'
 * CPUs for 2 s (a build, a test suite) is no spell: the pass ends. Then
 * the slow runs left are counted, and the report leaves them out of the
 * medians where enough rounds were normal (bench-report.c, use_round). */
static void retake_slow(void)
{
    uint64_t t_pass = fk_now_ns();
    retake_pass.ended = "with no slow run left to take again";
    for (;;) {
        int bi = -1, bj = 0, br = -1, bkey = 0;
        for (int i = 0, j; i < nsettings; i = j) {
            j = group_end(i);
            int least, deficit, cl = group_short(i, j, opt.rounds, 0, &least, &deficit);
            int r = cl >= 0 ? group_round_to_retake(i, j, least, cl, opt.rounds) : -1;
            int key = cl * MIN_NORMAL_ROUNDS + deficit;
            if (r < 0) {        /* the others: any round not normal for every figure */
                r = group_round_to_retake(i, j, -1, true, opt.rounds);
                key = 2 * MIN_NORMAL_ROUNDS + 1;
            }
            if (r >= 0 && (bi < 0 || key < bkey))
                bi = i, bj = j, br = r, bkey = key;
        }
        if (bi < 0)
            break;
        if (fk_stop_signal) {
            retake_pass.ended = "on a stop signal";
            break;
        }
        if (!retake_budget_left()) {
            retake_pass.ended = RETAKE_BUDGET_SPENT;
            break;
        }
        /* the wait ends with the budget too */
        double wait_max = retake_budget_s() < RETAKE_WAIT_S ? retake_budget_s() : RETAKE_WAIT_S;
        uint64_t t = fk_now_ns(), until = t + (uint64_t)(wait_max * 1e9);
        enum host_now now;
        /* a look every 0.25 s; other work that lasts 2 s is no spell */
        while ((now = host_now()) != HOST_NORMAL && !(now == HOST_CROWDED && fk_now_ns() - t >= 2000000000ull) &&
               fk_now_ns() < until)
            usleep(250000);
        double waited = (double)(fk_now_ns() - t) / 1e9;
        retake_pass.wait_s += waited;
        if (now != HOST_NORMAL) {       /* still in the spell: the retake would meet it too */
            retake_s += waited;
            if (now == HOST_CROWDED && fk_now_ns() - t >= 2000000000ull) {
                retake_pass.waits_crowded++;
                retake_pass.ended = "on other work on the clients' CPUs";
            } else if (wait_max < RETAKE_WAIT_S) {
                retake_pass.ended = RETAKE_BUDGET_SPENT;
            } else {
                retake_pass.waits_slow++;
                retake_pass.ended = "on a slow spell that outlasted its wait (" RETAKE_WAIT_TEXT ")";
            }
            break;
        }
        retake_group(bi, bj, br);
        retake_s += (double)(fk_now_ns() - t) / 1e9;
    }
    retake_pass.secs = (double)(fk_now_ns() - t_pass) / 1e9;
    runs_slow_kept = runs_crowded_kept = runs_clients_slow_kept = 0;
    for (int i = 0; i < nsettings; i++)
        for (int r = 0; r < opt.rounds; r++) {
            struct obs *o = &settings[i].o[r];
            o->slow = host_slow(&settings[i], r);
            o->clients_slow = run_clients_slow(&settings[i], r);
            runs_slow_kept += o->slow;
            runs_clients_slow_kept += o->clients_slow;
            runs_crowded_kept += run_crowded(&settings[i], r);
        }
}

/* On fk_die in this process (not a client's): no server or cgroup left. */
static pid_t main_pid;
static void servers_kill(void)
{
    if (getpid() != main_pid)
        return;
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++)
            if (server_up[g][c] && servers[g][c].pid > 0) {
                kill(servers[g][c].pid, SIGKILL);
                waitpid(servers[g][c].pid, NULL, 0);
                server_uncgroup(&servers[g][c]);
            }
}

static uint64_t probe_fetch(struct server *s, struct repo *r)
{
    char err[512];
    bench_net_enter_client();   /* the fetch's socket is made there */
    struct fetchd_client *c = fetchd_client_new(FETCHD_SOCK, s->addr, err, sizeof err);
    struct client_job j = { .repo = r->name, .req = &r->req };
    struct stream st;
    if (!c)
        fk_die("%s: %s", s->name, err);
    streams_run(c, &j, &st, 1, 1);
    bench_net_leave();
    if (st.errors || !st.fetches)
        fk_die("%s: fetch of %s failed: %s", s->name, r->name, st.err);
    fetchd_client_free(c);
    return st.total;
}

static uint64_t git_fetch_bytes(struct repo *r)
{
    struct fetchd_child ch;
    if (!fetchd_child_start(&ch, FETCHD_OP_UPLOAD_PACK, r->path, r->req.data, r->req.len))
        fk_die("cannot run git upload-pack %s", r->path);
    uint64_t total = 0;
    char b[65536];
    ssize_t n;
    while ((n = read(ch.out, b, sizeof b)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            total += (uint64_t)n;
    if (!fetchd_child_finish(&ch))
        fk_die("git upload-pack %s failed", r->path);
    return total;
}


/* ---- profiles ---- */

struct prof_arg {
    const char *fk;
    struct server *s;
    char dir[PATH_MAX], log[PATH_MAX + 8];
    pid_t pid;
    bool ok;
};

/* How long flamekit may take to open its capture (a sanitizer build on a
 * loaded machine takes seconds to read the server's maps). */
#define PROFILE_READY_S 60
#define FK_STR_(x) #x
#define FK_STR(x) FK_STR_(x)


/* flamekit pid on the server, its clients warmed up and waiting; true
 * once its capture runs (it says "ready" on its --ready-fd), so the whole
 * window is under load and no client's connection comes or goes while it
 * opens its events on the server's threads. */
static bool profile_start(void *arg)
{
    struct prof_arg *p = arg;
    char pidarg[32], durarg[32];
    snprintf(pidarg, sizeof pidarg, "%d", (int)p->s->pid);
    snprintf(durarg, sizeof durarg, "%llums", (unsigned long long)opt.profile_ms);
    snprintf(p->log, sizeof p->log, "%s.log", p->dir);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        fk_die("pipe: %s", strerror(errno));
    int w = fcntl(pfd[1], F_DUPFD_CLOEXEC, 4);     /* not 3: dup2 onto itself keeps FD_CLOEXEC */
    if (w < 0)
        fk_die("fcntl: %s", strerror(errno));
    close(pfd[1]);
    const char *argv[] = { p->fk, "pid", "-d", durarg, "--ready-fd", "3", "-o", p->dir, pidarg, NULL };
    p->pid = spawn(argv, environ, p->log, w);
    close(w);
    char buf[16];
    size_t got = 0;
    uint64_t until = fk_now_ns() + PROFILE_READY_S * 1000000000ull;
    const char *why = NULL;
    while (!why) {
        if (fk_stop_signal) {
            why = "was stopped with the benchmark";
            kill(p->pid, SIGTERM);
            break;
        }
        uint64_t now = fk_now_ns();
        struct pollfd pl = { .fd = pfd[0], .events = POLLIN };
        int r = now < until ? poll(&pl, 1, (int)((until - now) / 1000000ull) + 1) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) {
            why = "did not start its capture within " FK_STR(PROFILE_READY_S) " s";
            kill(p->pid, SIGTERM);
            break;
        }
        ssize_t n = r < 0 ? -1 : read(pfd[0], buf + got, sizeof buf - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            why = "failed before its capture started";
            break;
        }
        got += (size_t)n;
        if (memchr(buf, '\n', got) || got == sizeof buf - 1)
            break;
    }
    close(pfd[0]);
    buf[got] = 0;
    if (!why && strcmp(buf, "ready\n") != 0)
        why = "said something other than \"ready\" on --ready-fd";
    if (why) {
        wait_exit(p->pid);
        fk_warn("%s: flamekit pid %s; see %s", p->s->name, why, p->log);
        p->ok = false;
        return false;
    }
    return true;
}

/* Until the capture ends. */
static void profile_during(void *arg)
{
    struct prof_arg *p = arg;
    int st = wait_exit(p->pid);
    p->ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!p->ok)
        fk_warn("%s: flamekit pid failed; see %s", p->s->name, p->log);
}

/* The SVG flamekit pid wrote into dir (relative to the output directory). */
static char *find_svg(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    struct dirent *e;
    char *r = NULL;
    while (!r && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".svg") == 0)
            r = fk_asprintf("%s/%s", strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir, e->d_name);
    }
    closedir(d);
    return r;
}

/* The options, checked; FK_OPT_CONTINUE to run. */
static int parse_cmdline(int argc, char **argv)
{
    const struct fk_optsec secs[] = { { "Options", bench_optset, &opt }, { NULL } };
    struct fk_args a;
    int rc = fk_opt_parse(&cmdline, secs, argc, argv, &a);
    if (rc == FK_OPT_CONTINUE && a.n)
        rc = fk_opt_error("unexpected argument '%s'", a.v[0]);
    fk_args_free(&a);
    if (rc != FK_OPT_CONTINUE)
        return rc;
    if (opt.rounds > 1000)
        return fk_opt_error("--rounds: at most 1000");
    if (opt.grpc_bdp && opt.grpc_window)
        return fk_opt_error("--grpc-bdp grows gRPC's window itself: give it without --grpc-window");
    for (int i = 0; !opt.repo && i < opt.nsizes; i++)
        for (int k = i + 1; k < opt.nsizes; k++)
            if (opt.sizes[i] >> 20 == opt.sizes[k] >> 20)
                return fk_opt_error("--repo-size: %lluM given twice", (unsigned long long)(opt.sizes[i] >> 20));
    return FK_OPT_CONTINUE;
}

/* exedir (where the servers are looked for first), and the allocation
 * counter: --malloc-shim, else next to the program or in libexec. */
static void find_programs(char *shimbuf, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", exedir, sizeof exedir - 1);
    if (len > 0) {
        exedir[len] = 0;
        char *d = dirname(exedir);
        memmove(exedir, d, strlen(d) + 1);
    } else
        snprintf(exedir, sizeof exedir, ".");
    if (!opt.shim) {
        snprintf(shimbuf, n, "%s/fetchd-malloc.so", exedir);
        if (access(shimbuf, R_OK) != 0)
            snprintf(shimbuf, n, "%s/fetchd-malloc.so", FK_PKGLIBEXECDIR);
        opt.shim = shimbuf;
    }
    if (access(opt.shim, R_OK) != 0) {
        fk_warn("allocation counter %s not found: allocations not counted", opt.shim);
        opt.shim = NULL;
    }
}

/* Servers and clients on CPUs of their own, over the veth pair where it
 * can be made (else loopback, said in net_desc), and whether each side's
 * CPU is its CPUs' busy time (side_cpu). */
static void place_sides(void)
{
    pin_setup();
    char why[256];
    if (!pinning || opt.loopback)
        snprintf(net_desc, sizeof net_desc, "loopback (127.0.0.1; %s): the kernel does part of the clients' TCP "
                 "receive work in whichever process is running, server or client, so the server's CPU per GiB "
                 "includes a varying part of the clients'", opt.loopback ? "--loopback" : "servers and clients not pinned");
    else if (!bench_net_setup(&server_cpus, &client_cpus, opt.tcp_cc, why, sizeof why)) {
        fk_warn("clients on loopback: cannot set up the benchmark's network namespaces (%s); the server's CPU "
                "per GiB then includes part of the clients' receive work (run as root, or see --loopback)", why);
        snprintf(net_desc, sizeof net_desc, "loopback (127.0.0.1; the network namespaces failed: %s): the kernel "
                 "does part of the clients' TCP receive work in whichever process is running, server or client, "
                 "so the server's CPU per GiB includes a varying part of the clients'", why);
    } else {
        bench_net_describe(&server_cpus, &client_cpus, net_desc, sizeof net_desc);
        double mark, at, tasks;
        static const char *const cpuacct[] = { "/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu",
                                                "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage_percpu" };
        for (size_t i = 0; i < sizeof cpuacct / sizeof *cpuacct && !cpu_tasks_file; i++)
            if (access(cpuacct[i], R_OK) == 0)
                cpu_tasks_file = cpuacct[i];
        if (cpu_tasks_file && !fk_proc_for_each_pid(find_softirqd, NULL))
            memset(softirqd, 0, sizeof softirqd);
        side_cpu = cpus_busy_mark(&all_cpus, &mark, &at, &tasks, NULL);
        if (cpu_tasks_file && !isfinite(tasks))
            cpu_tasks_file = NULL;      /* not numbers per CPU: the busy time alone */
        if (!side_cpu)
            fk_warn("/proc/timer_list gives no idle time per CPU: server and client CPU are their tasks' own, "
                    "without the receive work done on their CPUs while idle");
    }
}

/* flamekit for -p, or NULL (and -p off, with a warning) without its CPU
 * capture. */
static char *find_profiler(void)
{
    if (!opt.profile)
        return NULL;
    char *fk = find_prog("flamekit");
    if (flamekit_has_pid(fk))
        return fk;
    fk_warn("--profile: '%s pid' is not available (flamekit's CPU capture is not built in); "
            "running without flame graphs", fk);
    free(fk);
    opt.profile = false;
    return NULL;
}

/* repos[]: --repo, or the generated ones, smallest first; root: the
 * directory the servers serve them from. */
static void repos_prepare(char *root)
{
    char dir[PATH_MAX];
    if (opt.repo) {
        char real[PATH_MAX];
        if (!realpath(opt.repo, real))
            fk_die("repository %s: %s", opt.repo, strerror(errno));
        char *r = fk_strdup(real), *b = fk_strdup(real);
        snprintf(root, PATH_MAX, "%s", dirname(r));
        repos[0].path = fk_strdup(real);
        repos[0].name = fk_strdup(basename(b));
        free(r);
        free(b);
        nrepos = 1;
    } else {
        cache_base(dir, sizeof dir);
        for (int i = 0; i < opt.nsizes; i++)
            for (int k = i + 1; k < opt.nsizes; k++)
                if (opt.sizes[k] < opt.sizes[i]) {
                    uint64_t t = opt.sizes[i];
                    opt.sizes[i] = opt.sizes[k];
                    opt.sizes[k] = t;
                }
        for (int i = 0; i < opt.nsizes; i++) {
            repos[i].path = generate_repo(dir, opt.sizes[i]);
            char *b = fk_strdup(repos[i].path);
            repos[i].name = fk_strdup(basename(b));
            free(b);
        }
        nrepos = opt.nsizes;
        if (!realpath(dir, root))
            fk_die("%s: %s", dir, strerror(errno));
    }
    for (int i = 0; i < nrepos; i++)
        build_request(repos[i].path, &repos[i].req);
}

/* The servers the settings need, kept for all rounds; how their CPU is
 * counted (report.md's words). */
static const char *servers_start(const char *root)
{
    main_pid = getpid();
    atexit(servers_kill);
    bool want_grpc = opt.modes[M_GRPC_CONN] || opt.modes[M_GRPC_SHARED];
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++)
            if ((g ? want_grpc : opt.modes[M_SOCK]) && opt.cache_modes[c]) {
                server_up[g][c] = true;     /* servers_kill: once it has a pid */
                server_start(&servers[g][c], g, c, root);
            }
    const char *cpu_source = side_cpu && cpu_tasks_file ?
                             "each side's own CPU plus its CPUs' busy time (elapsed less idle and iowait, "
                             "/proc/timer_list, nanoseconds per CPU) less every task's time on them "
                             "(cpuacct.usage_percpu), plus their softirq threads' (ksoftirqd): the server's own is its threads' task-clock counters "
                             "(perf_event_open; its cgroup's CPU time, cpu.stat, in a run where no git ran), the "
                             "clients' their processes' own; not other tasks there; so each includes the receive work "
                             "(softirq) done on its CPUs, whichever task it interrupted or none; git's is the server's "
                             "cgroup's CPU time less its threads' (without a cgroup, task-clock counters of its "
                             "children)"
                             : side_cpu ? "each side's CPUs' busy time (elapsed less idle and iowait, /proc/timer_list, "
                             "nanoseconds per CPU): the servers' CPUs' less git's for the server, the clients' CPUs' for "
                             "the clients, so each includes the receive work (softirq) done on its CPUs, whichever task "
                             "it interrupted or none; git's is the server's cgroup's CPU time (cpu.stat) less its "
                             "threads' (without a cgroup, task-clock counters of its children)"
                                      : "task-clock counters (perf_event_open) of the server's threads; git's the server's "
                                        "cgroup's CPU time (cpu.stat) less its threads' (without a cgroup, task-clock "
                                        "counters of its children)";
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++)
            if (server_up[g][c] && !servers[g][c].cpu.perf)
                cpu_source = "/proc/PID/stat utime+stime and reaped children's cutime+cstime (10 ms steps; "
                             "perf_event_open was refused)";
    /* The size of one fetch, through a socket server (no gRPC in this
     * process); without one, git's own response. */
    struct server *probe = server_up[0][0] ? &servers[0][0] : server_up[0][1] ? &servers[0][1] : NULL;
    for (int i = 0; i < nrepos; i++)
        repos[i].fetch_bytes = probe ? probe_fetch(probe, &repos[i]) : git_fetch_bytes(&repos[i]);
    return cpu_source;
}

/* settings[] in the order each round runs them, and pairs[]. */
static void settings_make(void)
{
    settings = fk_calloc((size_t)(nrepos * 2 * opt.nclients * NMODES), sizeof *settings);
    for (int i = 0; i < nrepos; i++)
        for (int c = 0; c < 2; c++)
            for (int q = 0; q < opt.nclients; q++)
                for (int m = 0; m < NMODES; m++) {
                    int nc = opt.clients[q];
                    if (!opt.cache_modes[c] || !opt.modes[m] || (m == M_GRPC_SHARED && nc == 1 && opt.modes[M_GRPC_CONN]))
                        continue;   /* one client: one connection either way */
                    struct setting *s = &settings[nsettings++];
                    s->size = i;
                    s->cache = c;
                    s->nclients = nc;
                    s->mode = (enum mode)m;
                    if (opt.fetches)
                        s->fetches = opt.fetches;
                    else {
                        double f = (double)opt.work / ((double)nc * (double)repos[i].fetch_bytes);
                        s->fetches = f < 1 ? 1 : (int)(f + 0.5);
                    }
                    s->o = fk_calloc((size_t)opt.rounds, sizeof *s->o);
                }
    pairs = fk_calloc((size_t)nsettings, sizeof *pairs);
    for (int i = 0; i < nsettings; i++) {
        struct setting *g = &settings[i], *so = find_setting(g->size, g->cache, g->nclients, M_SOCK);
        if (g->mode != M_SOCK && so)
            pairs[npairs++] = (struct pair){ g, so };
    }
}

/* A setting's run in round r, and in the first two rounds sized: too
 * short a run measures its start and the scheduler's whims (a sock+cache
 * run of --work took 50 ms): size the work in the first round, then keep
 * it for every round. A short run is slower per fetch than a long one
 * (gRPC's flow-control windows still growing, caches cold): sized from a
 * run of 2 fetches, a run of 24 took 0.2 s, not 0.77. So again until a
 * run lasts long enough. A first round slowed down (the host, or before
 * heap_prefault the clients' page faults) left runs of 0.24-0.5 s in
 * later rounds: the second round sizes again a run under 3/4 of the time;
 * the count then holds for every later round (each run's own fetches are
 * in its figures). */
static void run_sized(struct server *sv, struct setting *s, int r)
{
    run_setting(sv, s, r);
    double want = (double)opt.min_run_ms / 1000;
    for (int k = 0; r <= 1 && !opt.fetches && s->o[r].wall < (r ? 0.75 : 1) * want && s->fetches < 100000 &&
                    k < 6; k++) {
        double f = ceil((double)s->fetches * want * 1.2 / (s->o[r].wall > 1e-3 ? s->o[r].wall : 1e-3));
        s->fetches = f > 100000 ? 100000 : (int)f;
        run_setting(sv, s, r);
    }
}

/* The probes' first references, the rounds, the retakes. */
static void rounds_run(void)
{
    for (int i = 0; i < 5; i++) {
        /* the references' first values: both kinds, back to back, as around a run */
        struct obs o = { .probe_ms = machine_probe_ms(&server_cpus), .cprobe_ms = compute_probe_ms() };
        o.client_probe_ms = machine_probe_ms(&client_cpus);
        o.probe_after_ms = machine_probe_ms(&server_cpus);
        o.cprobe_after_ms = compute_probe_ms();
        o.client_probe_after_ms = machine_probe_ms(&client_cpus);
        probe_note(&o);
    }
    fprintf(stderr, "fetch-bench: %d settings × %d rounds (output in %s)\n", nsettings, opt.rounds, opt.out);
    for (int r = 0; r < opt.rounds; r++) {
        uint64_t t = fk_now_ns();
        for (int i = 0; i < nsettings; i++)
            run_sized(&servers[settings[i].mode != M_SOCK][settings[i].cache], &settings[i], r);
        double secs = (double)(fk_now_ns() - t) / 1e9;
        rounds_s += secs;
        fprintf(stderr, "fetch-bench: round %d/%d done in %.1f s\n", r + 1, opt.rounds, secs);
        if (r + 1 < opt.rounds)
            retake_between_rounds(r);
    }
    retake_pass.rounds_s = rounds_s;
    retake_slow();
    if (runs_retaken)
        fprintf(stderr, "fetch-bench: %d slow run(s) taken again (%d between rounds)\n", runs_retaken,
                retake_pass.between_rounds_runs);
    if (runs_slow_kept || runs_clients_slow_kept)
        fprintf(stderr, "fetch-bench: %d slow run(s) kept (%d slow on the clients' CPU): the retake pass (%.0f s) "
                "waited %d time(s) in vain (%.0f s of waits) and ended %s\n",
                runs_slow_kept, runs_clients_slow_kept, retake_pass.secs,
                retake_pass.waits_slow + retake_pass.waits_crowded, retake_pass.wait_s, retake_pass.ended);
}

/* -p: a flame graph of each server under the headline load, after the
 * rounds, into profiles[grpc][cache]; the number that failed. */
static int profiles_capture(char *fk, char *profiles[2][2])
{
    int failed = 0, hs, hn;
    enum mode hg;
    headline(&hs, &hn, &hg);
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++) {
            if (!server_up[g][c])
                continue;
            struct prof_arg p = { .fk = fk, .s = &servers[g][c] };
            snprintf(p.dir, sizeof p.dir, "%s/profile-%s", opt.out, servers[g][c].name);
            char rm[PATH_MAX + 16];
            snprintf(rm, sizeof rm, "rm -rf '%s'", p.dir);
            if (system(rm) != 0)
                fk_warn("cannot clear %s", p.dir);
            fprintf(stderr, "fetch-bench: flame graph of %s\n", servers[g][c].name);
            struct obs o;
            const struct run_hooks h = { profile_start, profile_during, &p };
            run(&servers[g][c], g ? hg : M_SOCK, hn, repos[hs].name, &repos[hs].req, 0, &o, &h);
            if (p.ok && !(profiles[g][c] = find_svg(p.dir)))
                fk_warn("%s: flamekit pid wrote no SVG into %s", servers[g][c].name, p.dir);
            failed += !profiles[g][c];
        }
    return failed;
}

static void bench_free(char *profiles[2][2])
{
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++)
            free(profiles[g][c]);
    for (int i = 0; i < nsettings; i++)
        free(settings[i].o);
    free(settings);
    free(pairs);
    for (int i = 0; i < nrepos; i++) {
        free(repos[i].path);
        free(repos[i].name);
        fk_buf_free(&repos[i].req);
    }
}

int main(int argc, char **argv)
{
    fk_progname = "fetch-bench";
    int rc = parse_cmdline(argc, argv);
    if (rc != FK_OPT_CONTINUE)
        return rc;
    char shimbuf[PATH_MAX + 32];
    find_programs(shimbuf, sizeof shimbuf);
    if (mkdir(opt.out, 0755) != 0 && errno != EEXIST)
        fk_die("cannot create output directory %s: %s", opt.out, strerror(errno));
    if (!fk_stop_on_signals(FK_STOP_IGNORE_SIGPIPE))
        fk_die("cannot install signal handlers: %s", strerror(errno));
    ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    /* the forked clients': BDP probing off unless asked for (fetch-bench(1)) */
    fetchd_client_window = opt.grpc_bdp ? 0 : opt.grpc_window ? (uint32_t)opt.grpc_window : 64u << 10;
    place_sides();
    char *fk = find_profiler();
    uint64_t start = fk_now_ns();
    char root[PATH_MAX];
    repos_prepare(root);
    const char *cpu_source = servers_start(root);
    settings_make();
    rounds_run();
    char *profiles[2][2] = { { NULL, NULL }, { NULL, NULL } };
    int profiles_failed = opt.profile ? profiles_capture(fk, profiles) : 0;
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++)
            if (server_up[g][c])
                server_stop(&servers[g][c]);
    bench_check_figures();
    bench_write_reports(cpu_source, profiles, (double)(fk_now_ns() - start) / 1e9);
    bench_print_summary();
    printf("report: %s/report.md, %s/report.json\n", opt.out, opt.out);
    bench_free(profiles);
    free(fk);
    if (profiles_failed) {
        fk_error("--profile: %d of the flame graphs failed (see the warnings above); the report is complete "
                 "without them", profiles_failed);
        return 1;
    }
    return 0;
}
