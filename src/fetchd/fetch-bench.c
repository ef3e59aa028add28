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
 * (server and git; git is the difference), each client's getrusage around
 * its timed fetches. Allocations are counted in the server by
 * fetchd-malloc.so; peak RSS per run after clearing VmHWM. */
#include "fetchd/fetchd.h"
#include "util/opt.h"
#include "util/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- options ---- */

#define MAX_SIZES 4
#define MAX_NCLIENTS 8
enum mode { M_SOCK, M_GRPC_CONN, M_GRPC_SHARED, NMODES };
static const char *const mode_name[NMODES] = { "sock", "grpc-conn", "grpc-shared" };
static const char *const mode_label[NMODES] = { "socket", "gRPC, a connection per client",
                                                "gRPC, one shared connection" };

static struct bench_opts {
    const char *repo, *out, *shim;
    uint64_t sizes[MAX_SIZES];
    int nsizes;
    int clients[MAX_NCLIENTS];
    int nclients;
    bool modes[NMODES];
    bool cache_modes[2];        /* [0] without, [1] with the pack cache */
    uint64_t work, chunk, profile_ms;
    int fetches, rounds;
    bool profile;
} opt = { .out = "fetch-bench.out", .sizes = { 4ull << 20, 32ull << 20 }, .nsizes = 2,
          .clients = { 1, 2, 4, 8 }, .nclients = 4, .modes = { true, true, true },
          .cache_modes = { true, true }, .work = 48ull << 20, .chunk = 32 << 10, .profile_ms = 10000,
          .rounds = 5 };

#define BO(field) offsetof(struct bench_opts, field)

static bool parse_sizes(void *base, const char *val, char *err, size_t n)
{
    struct bench_opts *o = base;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", val);
    o->nsizes = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (o->nsizes == MAX_SIZES || !fk_parse_size(t, &v) || v < (1 << 20)) {
            snprintf(err, n, "SIZE,SIZE (up to %d sizes of at least 1M, e.g. 4M,32M)", MAX_SIZES);
            return false;
        }
        o->sizes[o->nsizes++] = v;
    }
    return o->nsizes > 0 || (snprintf(err, n, "SIZE,SIZE (e.g. 4M,32M)"), false);
}

static bool parse_clients(void *base, const char *val, char *err, size_t n)
{
    struct bench_opts *o = base;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", val);
    o->nclients = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        long v = strtol(t, &end, 10);
        if (o->nclients == MAX_NCLIENTS || *end || v < 1 || v > 64) {
            snprintf(err, n, "N,N,... (up to %d counts from 1 to 64, e.g. 1,2,4,8)", MAX_NCLIENTS);
            return false;
        }
        o->clients[o->nclients++] = (int)v;
    }
    return o->nclients > 0 || (snprintf(err, n, "N,N,... (e.g. 1,2,4,8)"), false);
}

static bool parse_servers(void *base, const char *val, char *err, size_t n)
{
    struct bench_opts *o = base;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", val);
    memset(o->modes, 0, sizeof o->modes);
    bool any = false;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "grpc") == 0)
            o->modes[M_GRPC_CONN] = o->modes[M_GRPC_SHARED] = true;
        else if (strcmp(t, "sock") == 0 || strcmp(t, "grpc-conn") == 0 || strcmp(t, "grpc-shared") == 0)
            o->modes[strcmp(t, "sock") == 0 ? M_SOCK : strcmp(t, "grpc-conn") == 0 ? M_GRPC_CONN : M_GRPC_SHARED] = true;
        else {
            snprintf(err, n, "a list of sock, grpc-conn, grpc-shared (grpc: both gRPC modes)");
            return false;
        }
        any = true;
    }
    return any || (snprintf(err, n, "sock,grpc"), false);
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
      "bytes to fetch per run, split over the clients (default 48M); each client makes at least one fetch",
      "48M", .min = 1 << 20 },
    { "fetches", 'f', FK_OPT_INT, BO(fetches), "N", "fetches per client per run, instead of --work", "4",
      .min = 1, .max = 100000 },
    { "rounds", 'R', FK_OPT_INT, BO(rounds), "N", "repetitions of every setting (default 5)", "5", .min = 1,
      .max = 1000 },
    { "chunk-size", 'k', FK_OPT_SIZE, BO(chunk), "SIZE", "fetchd-grpc message size (default 32K)", "32K",
      .min = 1024, .max = 4 << 20 },
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

/* SIZE bytes of word-like text (compressible like source) in one commit,
 * packed with a bitmap the way a server's housekeeping leaves a repository
 * (git then reuses the pack instead of searching for deltas per fetch). */
static char *generate_repo(const char *dir, uint64_t size)
{
    char *path = fk_asprintf("%s/packed-%lluM.git", dir, (unsigned long long)(size >> 20));
    struct stat st;
    if (stat(path, &st) == 0)
        return path;
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0)
        fk_die("cannot create %s", dir);
    char *tmp = fk_asprintf("%s.tmp.%d", path, (int)getpid());
    snprintf(cmd, sizeof cmd, "git init -q --bare '%s' && git -C '%s' fast-import --quiet", tmp, tmp);
    fprintf(stderr, "fetch-bench: generating a %lluM test repository in %s\n", (unsigned long long)(size >> 20), path);
    FILE *fi = popen(cmd, "w");
    if (!fi)
        fk_die("cannot run git fast-import: %s", strerror(errno));
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
    char *b = fk_malloc(blob + 64);
    for (size_t k = 0; k < nblobs; k++) {
        size_t n = 0;
        while (n < blob) {
            const char *w = words[next() % 1024];
            size_t l = strlen(w);
            memcpy(b + n, w, l);
            n += l;
            b[n++] = next() % 12 == 0 ? '\n' : ' ';
        }
        fprintf(fi, "blob\nmark :%zu\ndata %zu\n", k + 1, n);
        fwrite(b, 1, n, fi);
        fputc('\n', fi);
    }
    free(b);
    fprintf(fi, "commit refs/heads/main\ncommitter bench <bench@example.org> 1700000000 +0000\ndata 6\nbench\n");
    for (size_t k = 0; k < nblobs; k++)
        fprintf(fi, "M 100644 :%zu d%02zu/f%05zu.txt\n", k + 1, k % 64, k);
    fprintf(fi, "\n");
    if (pclose(fi) != 0)
        fk_die("git fast-import failed");
    snprintf(cmd, sizeof cmd, "git -C '%s' repack -a -d -q --write-bitmap-index", tmp);
    if (system(cmd) != 0)
        fk_die("git repack failed in %s", tmp);
    if (rename(tmp, path) != 0)
        fk_die("cannot rename %s: %s", tmp, strerror(errno));
    free(tmp);
    return path;
}

/* The want-all request for gitdir, from git's own advertisement. */
static void build_request(const char *gitdir, struct fk_buf *req)
{
    struct fd_child ch;
    if (!fd_child_start(&ch, FD_OP_ADVERTISE, gitdir, "", 0))
        fk_die("cannot run git upload-pack --advertise-refs %s", gitdir);
    struct fk_buf adv = FK_BUF_INIT;
    char b[65536];
    ssize_t n;
    while ((n = read(ch.out, b, sizeof b)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            fk_buf_add(&adv, b, (size_t)n);
    if (!fd_child_finish(&ch))
        fk_die("git upload-pack --advertise-refs %s failed", gitdir);
    struct fd_refs refs = { 0 };
    char err[512];
    if (!fd_parse_advertisement(adv.data ? adv.data : "", adv.len, &refs, err, sizeof err) ||
        !fd_build_request(&refs, NULL, 0, req, err, sizeof err))
        fk_die("%s: %s", gitdir, err);
    fd_refs_free(&refs);
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

static pid_t spawn(char **argv, char **envp, const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (log) {
        posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 2, 1);
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fk_die("cannot run %s: %s", argv[0], strerror(rc));
    return pid;
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

/* ---- CPU accounting of a server ---- */

/* Task-clock counters on every thread the server had when it became ready;
 * threads it creates later inherit them (their counts fold into these when
 * they exit, and a read includes the live ones). self: inherit_thread, so
 * threads only; all: every descendant, git included. */
#define MAX_TASKS 256
struct srv_cpu {
    int n;
    int self[MAX_TASKS], all[MAX_TASKS];
    bool perf;      /* else /proc ticks */
};

static int open_clock(pid_t tid, bool threads_only)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.inherit = 1;
    a.inherit_thread = threads_only;
    return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void srv_cpu_open(struct srv_cpu *c, pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    c->n = 0;
    c->perf = d != NULL;
    struct dirent *e;
    while (c->perf && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (c->n == MAX_TASKS) {
            c->perf = false;
            break;
        }
        pid_t tid = (pid_t)atoi(e->d_name);
        c->self[c->n] = open_clock(tid, true);
        c->all[c->n] = open_clock(tid, false);
        if (c->self[c->n] < 0 || c->all[c->n] < 0) {
            fk_warn("perf_event_open on the server's thread %d: %s; CPU from /proc ticks (10 ms steps)",
                    (int)tid, strerror(errno));
            c->perf = false;
        }
        c->n++;
    }
    if (d)
        closedir(d);
    if (!c->perf) {
        for (int i = 0; i < c->n; i++) {
            if (c->self[i] >= 0)
                close(c->self[i]);
            if (c->all[i] >= 0)
                close(c->all[i]);
        }
        c->n = 0;
    }
}

static double read_clock(int fd)
{
    uint64_t v = 0;
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
        fk_die("reading a task-clock counter: %s", strerror(errno));
    return (double)v / 1e9;
}

/* Seconds of CPU so far: the server's own threads, and its git children. */
static void srv_cpu_read(const struct srv_cpu *c, pid_t pid, double *server, double *git)
{
    *server = *git = 0;
    if (c->perf) {
        double all = 0;
        for (int i = 0; i < c->n; i++) {
            *server += read_clock(c->self[i]);
            all += read_clock(c->all[i]);
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

static double vm_hwm_mib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    double kb = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf kB", &kb) == 1)
            break;
    fclose(f);
    return kb / 1024;
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

/* Busy and total jiffies of all CPUs (/proc/stat), for the machine's
 * utilisation by everyone: this is a shared machine. */
static void machine_jiffies(double *busy, double *total)
{
    unsigned long long v[8] = { 0 };
    *busy = *total = 0;
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) == 8) {
        for (int i = 0; i < 8; i++)
            *total += (double)v[i];
        *busy = *total - (double)v[3] - (double)v[4];     /* less idle and iowait */
    }
    fclose(f);
}

/* ---- servers ---- */

struct counters { uint64_t magic, calls, bytes; };

struct server {
    bool grpc, cache;
    char name[32];
    pid_t pid;
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
    char *argv[24];
    int a = 0;
    argv[a++] = prog;
    argv[a++] = "--repo-root"; argv[a++] = (char *)root;
    argv[a++] = "--port-file"; argv[a++] = portf;
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
    s->pid = spawn(argv, envp, log);
    free(pre);
    free(st);
    free(envp);
    for (int i = 0; i < 400 && access(portf, R_OK) != 0; i++) {
        int wst;
        if (waitpid(s->pid, &wst, WNOHANG) == s->pid)
            fk_die("%s exited at start; see %s", prog, log);
        usleep(25000);
    }
    FILE *pf = fopen(portf, "re");
    int port = 0;
    if (!pf || fscanf(pf, "%d", &port) != 1)
        fk_die("%s did not start within 10 s; see %s", prog, log);
    fclose(pf);
    free(prog);
    snprintf(s->addr, sizeof s->addr, "127.0.0.1:%d", port);
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

static void server_stop(struct server *s)
{
    kill(s->pid, SIGTERM);
    int st;
    waitpid(s->pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fk_warn("%s did not exit cleanly; see %s/%s.log", s->name, opt.out, s->name);
    for (int i = 0; i < s->cpu.n; i++) {
        close(s->cpu.self[i]);
        close(s->cpu.all[i]);
    }
    if (s->cnt)
        munmap(s->cnt, 4096);
}

/* ---- clients ---- */

/* One client process's report, in memory shared with the parent. */
struct client_report {
    uint64_t fetches, bytes, errors;
    uint64_t t_end;             /* fk_now_ns() after its last fetch */
    double cpu;                 /* seconds of CPU (all its threads) over the timed fetches */
    char err[256];
};

struct client_job {
    enum fd_transport tr;
    const char *addr, *repo;
    const struct fk_buf *req;
    int threads;                /* calls in flight on one connection (grpc-shared), else 1 */
    int fetches;                /* per thread; 0: until *stop */
    volatile int *stop;
    struct client_report *rep;
    int ready_w, go_r, done_w;
};

struct fetch_state {
    struct fd_demux dm;
    uint64_t bytes;
};

static bool drop_sink(void *arg, const void *data, size_t len)
{
    (void)arg, (void)data, (void)len;
    return true;
}

static bool resp_sink(void *arg, const void *data, size_t len)
{
    struct fetch_state *f = arg;
    f->bytes += len;
    return fd_demux_feed(&f->dm, data, len);
}

/* One complete fetch: the response demultiplexed, its final flush seen. */
static bool fetch_once(struct fd_client *c, const struct client_job *j, uint64_t *bytes, char *err, size_t errlen)
{
    struct fetch_state f;
    memset(&f, 0, sizeof f);
    fd_demux_init(&f.dm, drop_sink, NULL);
    bool ok = fd_client_call(c, FD_OP_UPLOAD_PACK, j->repo, j->req->data, j->req->len, resp_sink, &f, err, errlen);
    if (ok && (f.dm.failed || !f.dm.done || f.dm.pack_bytes == 0)) {
        snprintf(err, errlen, "%s", f.dm.failed ? f.dm.err : "response truncated or without a pack");
        ok = false;
    }
    *bytes = f.bytes;
    return ok;
}

struct client_thread {
    const struct client_job *j;
    struct fd_client *c;
    pthread_barrier_t *warm, *go;
    uint64_t fetches, bytes, errors;
    char err[256];
};

static void *client_thread_main(void *arg)
{
    struct client_thread *t = arg;
    uint64_t b;
    if (!fetch_once(t->c, t->j, &b, t->err, sizeof t->err))     /* warm-up, not counted */
        t->errors++;
    pthread_barrier_wait(t->warm);
    pthread_barrier_wait(t->go);
    for (int i = 0; t->errors == 0 && (t->j->fetches ? i < t->j->fetches : !*t->j->stop); i++) {
        if (fetch_once(t->c, t->j, &b, t->err, sizeof t->err)) {
            t->fetches++;
            t->bytes += b;
        } else
            t->errors++;
    }
    return NULL;
}

static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* A client process: its threads warm up, it says ready, waits for go (the
 * parent closes the pipe), runs the timed fetches and reports. */
static _Noreturn void client_process(const struct client_job *j)
{
    char err[256];
    struct fd_client *base = fd_client_new(j->tr, j->addr, err, sizeof err);
    if (!base) {
        snprintf(j->rep->err, sizeof j->rep->err, "%s", err);
        j->rep->errors = 1;
        _exit(1);
    }
    int n = j->threads;
    struct client_thread *t = fk_calloc((size_t)n, sizeof *t);
    pthread_t *th = fk_calloc((size_t)n, sizeof *th);
    pthread_barrier_t warm, go;
    pthread_barrier_init(&warm, NULL, (unsigned)n + 1);
    pthread_barrier_init(&go, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        t[i].j = j;
        t[i].c = i == 0 ? base : fd_client_share(base);
        t[i].warm = &warm;
        t[i].go = &go;
        if (pthread_create(&th[i], NULL, client_thread_main, &t[i]) != 0)
            _exit(1);
    }
    pthread_barrier_wait(&warm);
    char x = 1;
    if (write(j->ready_w, &x, 1) != 1)
        _exit(1);
    while (read(j->go_r, &x, 1) < 0 && errno == EINTR)
        ;
    double c0 = self_cpu();
    pthread_barrier_wait(&go);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    uint64_t t_end = fk_now_ns();
    double c1 = self_cpu();
    struct client_report *r = j->rep;
    for (int i = 0; i < n; i++) {
        r->fetches += t[i].fetches;
        r->bytes += t[i].bytes;
        r->errors += t[i].errors;
        if (t[i].errors && !r->err[0])
            snprintf(r->err, sizeof r->err, "%s", t[i].err);
    }
    r->t_end = t_end;
    r->cpu = c1 - c0;
    if (write(j->done_w, &x, 1) != 1)
        _exit(1);
    _exit(0);   /* no gRPC shutdown: nothing of it is measured */
}

/* ---- one run ---- */

struct obs {
    double wall, bytes, fetches, server_cpu, git_cpu, client_cpu, alloc_calls, alloc_bytes, rss_mib, load1;
    double machine_busy;        /* %, every process on the machine */
    bool alloc_counted;
};

/* Read exactly n bytes of tokens from fd, within 10 minutes. */
static bool read_tokens(int fd, int n)
{
    uint64_t until = fk_now_ns() + 600ull * 1000000000ull;
    while (n > 0) {
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

/* nclients clients of mode against s fetch repo; fetches per client (0:
 * until *stop, set by the caller's hook after start). */
static void run(struct server *s, enum mode m, int nclients, const char *repo, const struct fk_buf *req,
                int fetches, struct obs *o, void (*during)(void *), void *during_arg)
{
    int nproc = m == M_GRPC_SHARED ? 1 : nclients;
    struct client_report *reps = mmap(NULL, sizeof *reps * (size_t)nproc + sizeof(int), PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (reps == MAP_FAILED)
        fk_die("mmap: %s", strerror(errno));
    volatile int *stop = (volatile int *)(reps + nproc);
    int ready[2], go[2], done[2];
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0 || pipe2(done, O_CLOEXEC) != 0)
        fk_die("pipe: %s", strerror(errno));
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
            struct client_job j = {
                .tr = s->grpc ? FD_GRPC : FD_SOCK, .addr = s->addr, .repo = repo, .req = req,
                .threads = m == M_GRPC_SHARED ? nclients : 1, .fetches = fetches, .stop = stop,
                .rep = &reps[i], .ready_w = ready[1], .go_r = go[0], .done_w = done[1],
            };
            client_process(&j);
        }
    }
    close(ready[1]);
    close(go[0]);
    close(done[1]);
    if (!read_tokens(ready[0], nproc)) {
        for (int i = 0; i < nproc; i++)
            kill(pids[i], SIGKILL);
        const char *e = "";
        for (int i = 0; i < nproc && !*e; i++)
            e = reps[i].err;
        fk_die("%s, %s, %d clients: a client failed before the timed fetches: %s", s->name, mode_name[m],
               nclients, *e ? e : "(it died)");
    }
    double sc0, gc0, sc1, gc1;
    struct counters m0 = { 0 }, m1 = { 0 };
    if (s->cnt)
        m0 = *s->cnt;
    srv_cpu_read(&s->cpu, s->pid, &sc0, &gc0);
    double mb0, mt0, mb1, mt1;
    machine_jiffies(&mb0, &mt0);
    uint64_t t0 = fk_now_ns();
    close(go[1]);       /* go */
    if (during)
        during(during_arg);
    if (!fetches)
        *stop = 1;
    bool ok = read_tokens(done[0], nproc);
    machine_jiffies(&mb1, &mt1);
    srv_cpu_read(&s->cpu, s->pid, &sc1, &gc1);
    if (s->cnt)
        m1 = *s->cnt;
    o->rss_mib = vm_hwm_mib(s->pid);
    o->load1 = loadavg1();
    o->machine_busy = mt1 > mt0 ? 100 * (mb1 - mb0) / (mt1 - mt0) : 0;
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
        errors += reps[i].errors;
        if (reps[i].errors && !err)
            err = reps[i].err;
        if (reps[i].t_end > t_end)
            t_end = reps[i].t_end;
    }
    if (!ok || errors)
        fk_die("%s, %s, %d clients: %llu fetch(es) failed: %s", s->name, mode_name[m], nclients,
               (unsigned long long)errors, err && *err ? err : "a client died");
    o->wall = (double)(t_end - t0) / 1e9;
    o->server_cpu = sc1 - sc0;
    o->git_cpu = gc1 > gc0 ? gc1 - gc0 : 0;
    o->alloc_counted = s->cnt != NULL;
    o->alloc_calls = (double)(m1.calls - m0.calls);
    o->alloc_bytes = (double)(m1.bytes - m0.bytes);
    munmap(reps, sizeof *reps * (size_t)nproc + sizeof(int));
    free(pids);
}

/* ---- statistics ---- */

struct stat3 { double med, min, max; };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static struct stat3 stat_of(const double *v, int n)
{
    double *s = fk_calloc((size_t)n, sizeof *s);
    memcpy(s, v, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    struct stat3 r = { n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0], s[n - 1] };
    free(s);
    return r;
}

/* The figures of a run, by name: what the tables and report.json show. */
enum fig {
    F_MIBS, F_CAP_MIBS, F_FETCHES_S, F_UTIL, F_SERVER_PCT, F_SERVER_S_GIB, F_GIT_S_GIB, F_CLIENT_S_GIB, F_ALLOC_B_GIB,
    F_ALLOC_CALLS_GIB, F_ALLOC_CALLS_FETCH, F_ALLOC_B_FETCH, F_RSS, F_LOAD, F_MACHINE, NFIGS
};
static const struct {
    const char *key, *label;
    bool alloc;
} figs[NFIGS] = {
    [F_MIBS] = { "throughput_mib_s", "throughput MiB/s (wall clock)", false },
    [F_CAP_MIBS] = { "cpu_bound_throughput_mib_s", "throughput MiB/s if CPU-bound", false },
    [F_FETCHES_S] = { "fetches_per_s", "fetches/s", false },
    [F_UTIL] = { "cpu_utilisation_pct", "CPU utilisation % (server+git+clients, of all CPUs)", false },
    [F_SERVER_PCT] = { "server_cpu_pct", "server CPU % of one CPU", false },
    [F_SERVER_S_GIB] = { "server_cpu_s_per_gib", "server CPU s/GiB", false },
    [F_GIT_S_GIB] = { "git_cpu_s_per_gib", "git CPU s/GiB", false },
    [F_CLIENT_S_GIB] = { "client_cpu_s_per_gib", "clients CPU s/GiB", false },
    [F_ALLOC_B_GIB] = { "alloc_bytes_per_gib", "allocated bytes/GiB", true },
    [F_ALLOC_CALLS_GIB] = { "alloc_calls_per_gib", "allocations/GiB", true },
    [F_ALLOC_CALLS_FETCH] = { "alloc_calls_per_fetch", "allocations/fetch", true },
    [F_ALLOC_B_FETCH] = { "alloc_bytes_per_fetch", "allocated bytes/fetch", true },
    [F_RSS] = { "peak_rss_mib", "server peak RSS MiB", false },
    [F_LOAD] = { "load1", "load1 after the run", false },
    [F_MACHINE] = { "machine_busy_pct", "machine busy % (everyone's work)", false },
};

static int ncpus;

static double figure(const struct obs *o, enum fig f)
{
    double gib = o->bytes / (double)(1ull << 30);
    switch (f) {
    case F_MIBS: return o->bytes / (1 << 20) / o->wall;
    case F_CAP_MIBS: return o->bytes / (1 << 20) * ncpus / (o->server_cpu + o->git_cpu + o->client_cpu);
    case F_FETCHES_S: return o->fetches / o->wall;
    case F_UTIL: return 100 * (o->server_cpu + o->git_cpu + o->client_cpu) / (o->wall * ncpus);
    case F_SERVER_PCT: return 100 * o->server_cpu / o->wall;
    case F_SERVER_S_GIB: return o->server_cpu / gib;
    case F_GIT_S_GIB: return o->git_cpu / gib;
    case F_CLIENT_S_GIB: return o->client_cpu / gib;
    case F_ALLOC_B_GIB: return o->alloc_bytes / gib;
    case F_ALLOC_CALLS_GIB: return o->alloc_calls / gib;
    case F_ALLOC_CALLS_FETCH: return o->alloc_calls / o->fetches;
    case F_ALLOC_B_FETCH: return o->alloc_bytes / o->fetches;
    case F_RSS: return o->rss_mib;
    case F_LOAD: return o->load1;
    case F_MACHINE: return o->machine_busy;
    default: return 0;
    }
}

/* A setting: one fetch size, cache or not, a client count, a mode. */
struct setting {
    int size, cache, nclients;
    enum mode mode;
    int fetches;                /* per client */
    struct obs *o;              /* [rounds] */
};

/* Ratios of gRPC (a mode) to the socket server, within each round. */
enum ratio { R_CPU, R_CAP, R_THR, R_ALLOC, NRATIOS };
static const struct {
    const char *key, *label;
} ratio_info[NRATIOS] = {
    [R_CPU] = { "server_cpu_per_gib_grpc_over_sock", "server CPU/GiB gRPC/socket" },
    [R_CAP] = { "cpu_bound_throughput_sock_over_grpc", "throughput if CPU-bound socket/gRPC" },
    [R_THR] = { "throughput_sock_over_grpc", "throughput (wall clock) socket/gRPC" },
    [R_ALLOC] = { "alloc_bytes_per_gib_grpc_over_sock", "allocated bytes/GiB gRPC/socket" },
};

static double ratio_of(const struct obs *g, const struct obs *s, enum ratio r)
{
    switch (r) {
    case R_CPU: return figure(g, F_SERVER_S_GIB) / figure(s, F_SERVER_S_GIB);
    case R_CAP: return figure(s, F_CAP_MIBS) / figure(g, F_CAP_MIBS);
    case R_THR: return figure(s, F_MIBS) / figure(g, F_MIBS);
    default: return figure(g, F_ALLOC_B_GIB) / figure(s, F_ALLOC_B_GIB);
    }
}

static struct stat3 ratio_stat(const struct setting *g, const struct setting *s, enum ratio r)
{
    double v[1000];
    for (int i = 0; i < opt.rounds; i++)
        v[i] = ratio_of(&g->o[i], &s->o[i], r);
    return stat_of(v, opt.rounds);
}

static struct stat3 fig_stat(const struct setting *st, enum fig f)
{
    double v[1000];
    for (int i = 0; i < opt.rounds; i++)
        v[i] = figure(&st->o[i], f);
    return stat_of(v, opt.rounds);
}

/* ---- formatting ---- */

static const char *human(double v, char *buf, size_t n)
{
    const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(buf, n, i == 0 ? "%.0f %s" : "%.1f %s", v, u[i]);
    return buf;
}

/* A number with about three significant digits. */
static const char *num(double v, char *buf, size_t n)
{
    double a = fabs(v);
    snprintf(buf, n, a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f", v);
    return buf;
}

static const char *cell(enum fig f, struct stat3 s, char *buf, size_t n)
{
    char a[32], b[32], c[32];
    bool bytes = f == F_ALLOC_B_GIB || f == F_ALLOC_B_FETCH;
    if (bytes)
        snprintf(buf, n, "%s (%s–%s)", human(s.med, a, sizeof a), human(s.min, b, sizeof b), human(s.max, c, sizeof c));
    else
        snprintf(buf, n, "%s (%s–%s)", num(s.med, a, sizeof a), num(s.min, b, sizeof b), num(s.max, c, sizeof c));
    return buf;
}

static const char *rcell(struct stat3 s, char *buf, size_t n)
{
    char a[32], b[32], c[32];
    snprintf(buf, n, "%s× (%s–%s)", num(s.med, a, sizeof a), num(s.min, b, sizeof b), num(s.max, c, sizeof c));
    return buf;
}

static json_t *jstat(struct stat3 s)
{
    return json_pack("{s:f,s:f,s:f}", "median", s.med, "min", s.min, "max", s.max);
}

/* ---- the whole benchmark ---- */

struct repo {
    char *path, *name;
    struct fk_buf req;
    uint64_t fetch_bytes;       /* one response */
};

static struct repo repos[MAX_SIZES];
static int nrepos;
static struct server servers[2][2];     /* [grpc][cache] */
static bool server_up[2][2];
static struct setting *settings;
static int nsettings;

/* gRPC settings and the socket setting they are compared with. */
struct pair { struct setting *g, *s; };
static struct pair *pairs;
static int npairs;

static struct setting *find_setting(int size, int cache, int n, enum mode m)
{
    for (int i = 0; i < nsettings; i++)
        if (settings[i].size == size && settings[i].cache == cache && settings[i].nclients == n &&
            settings[i].mode == m)
            return &settings[i];
    return NULL;
}

static uint64_t probe_fetch(struct server *s, struct repo *r)
{
    char err[512];
    struct fd_client *c = fd_client_new(FD_SOCK, s->addr, err, sizeof err);
    struct client_job j = { .repo = r->name, .req = &r->req };
    uint64_t b = 0;
    if (!c || !fetch_once(c, &j, &b, err, sizeof err))
        fk_die("%s: fetch of %s failed: %s", s->name, r->name, err);
    fd_client_free(c);
    return b;
}

static uint64_t git_fetch_bytes(struct repo *r)
{
    struct fd_child ch;
    if (!fd_child_start(&ch, FD_OP_UPLOAD_PACK, r->path, r->req.data, r->req.len))
        fk_die("cannot run git upload-pack %s", r->path);
    uint64_t total = 0;
    char b[65536];
    ssize_t n;
    while ((n = read(ch.out, b, sizeof b)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            total += (uint64_t)n;
    if (!fd_child_finish(&ch))
        fk_die("git upload-pack %s failed", r->path);
    return total;
}

/* The setting the talk's table shows: the largest fetch, 4 clients (or the
 * largest count), gRPC on one shared connection (how gRPC multiplexes). */
static void headline(int *size, int *n, enum mode *gm)
{
    *size = nrepos - 1;
    *n = opt.clients[opt.nclients - 1];
    for (int i = 0; i < opt.nclients; i++)
        if (opt.clients[i] == 4)
            *n = 4;
    *gm = opt.modes[M_GRPC_SHARED] && *n > 1 ? M_GRPC_SHARED : M_GRPC_CONN;
}

/* ---- profiles ---- */

struct prof_arg {
    const char *fk;
    struct server *s;
    char dir[PATH_MAX];
    bool ok;
};

static void profile_during(void *arg)
{
    struct prof_arg *p = arg;
    char pidarg[32], durarg[32], log[PATH_MAX + 8];
    snprintf(pidarg, sizeof pidarg, "%d", (int)p->s->pid);
    snprintf(durarg, sizeof durarg, "%llums", (unsigned long long)opt.profile_ms);
    snprintf(log, sizeof log, "%s.log", p->dir);
    char *argv[] = { (char *)p->fk, "pid", "-d", durarg, "-o", p->dir, pidarg, NULL };
    pid_t pid = spawn(argv, environ, log);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    p->ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!p->ok)
        fk_warn("%s: flamekit pid failed; see %s", p->s->name, log);
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

/* ---- report ---- */

static const char *size_label(int i, char *buf, size_t n)
{
    char h[32];
    snprintf(buf, n, "%s fetch", human((double)repos[i].fetch_bytes, h, sizeof h));
    return buf;
}

/* A verdict line of "where the data disagrees with the talk". */
enum agree { DISAGREES, AGREES, CANNOT_TELL };
static void verdict(struct fk_outfile *md, json_t *arr, const char *claim, enum agree agrees, const char *fmt, ...)
    FK_PRINTF(5, 6);
static void verdict(struct fk_outfile *md, json_t *arr, const char *claim, enum agree agrees, const char *fmt, ...)
{
    static const char *const word[] = { "disagrees", "agrees", "cannot tell" };
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fk_outfile_printf(md, "- %s **%c%s.** — %s\n", claim, word[agrees][0] - 'a' + 'A', word[agrees] + 1, what);
    json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "claim", claim, "verdict", word[agrees], "data", what));
}

/* Every figure of every run is a finite number, or the run was broken
 * (no bytes, no time, no CPU counted): never a report with holes. */
static void check_figures(void)
{
    for (int i = 0; i < nsettings; i++)
        for (int r = 0; r < opt.rounds; r++)
            for (int f = 0; f < NFIGS; f++) {
                double v = figure(&settings[i].o[r], (enum fig)f);
                if ((!figs[f].alloc || settings[i].o[r].alloc_counted) && (!isfinite(v) || v < 0))
                    fk_die("%s, %d clients, %s cache, round %d: %s is %g (no bytes, time or CPU counted?)",
                           mode_name[settings[i].mode], settings[i].nclients, settings[i].cache ? "with" : "no", r + 1,
                           figs[f].key, v);
            }
}

static void write_reports(const char *cpu_source, const char *fk_profiles[2][2], double secs_total)
{
    char path[PATH_MAX + 16], b1[160], b2[160], b3[160], b4[160];
    struct fk_outfile md;
    snprintf(path, sizeof path, "%s/report.md", opt.out);
    if (!fk_outfile_open(&md, path, 0644))
        exit(1);
    json_t *jr = json_object();
    struct utsname un;
    uname(&un);
    fk_outfile_printf(&md, "# fetch-bench: gRPC against a plain socket, serving git fetches\n\n");
    fk_outfile_printf(&md,
                      "Machine: %d CPUs, Linux %s; the clients run on the same machine. %d rounds; in each, every "
                      "setting runs once, in the same order, so a change in the machine's load meets all "
                      "settings alike. Each client makes one warm-up fetch (not counted), then all clients start "
                      "together and make a set number of fetches. Figures are median (min–max) over the rounds; "
                      "ratios are taken within a round, then summarised. The benchmark took %.0f s.\n\n",
                      ncpus, un.release, opt.rounds, secs_total);
    fk_outfile_printf(&md, "Repositories (generated text, one commit, packed with a bitmap, so git reuses the "
                      "pack):");
    for (int i = 0; i < nrepos; i++)
        fk_outfile_printf(&md, "%s `%s` (%s per fetch)", i ? ";" : "", repos[i].name,
                          human((double)repos[i].fetch_bytes, b1, sizeof b1));
    fk_outfile_printf(&md, ". gRPC messages of %llu bytes.\n\n", (unsigned long long)opt.chunk);
    fk_outfile_printf(&md, "CPU: %s. Server = the server process's own threads; git = its git upload-pack "
                      "children; clients = the client processes over their timed fetches. CPU utilisation = "
                      "(server + git + clients) / (wall time × %d CPUs). Allocations: calls and bytes of "
                      "malloc/calloc/realloc in the server process (fetchd-malloc.so). Peak RSS: the server's "
                      "VmHWM during the run (reset before it).\n\n", cpu_source, ncpus);

    int hs, hn;
    enum mode hg;
    headline(&hs, &hn, &hg);
    bool have_both = opt.modes[M_SOCK] && (opt.modes[M_GRPC_CONN] || opt.modes[M_GRPC_SHARED]);
    struct setting *T[2][2] = { { NULL, NULL }, { NULL, NULL } };     /* [grpc][cache] */
    for (int c = 0; c < 2; c++) {
        T[0][c] = opt.cache_modes[c] ? find_setting(hs, c, hn, M_SOCK) : NULL;
        T[1][c] = opt.cache_modes[c] ? find_setting(hs, c, hn, hg) : NULL;
    }
    char sl[64];
    fk_outfile_printf(&md, "## The talk's table\n\n%s, %d client%s, %s against the socket server.\n\n",
                      size_label(hs, sl, sizeof sl), hn, hn > 1 ? "s" : "", mode_label[hg]);
    static const enum fig rows[] = { F_MIBS, F_CAP_MIBS, F_UTIL, F_MACHINE, F_SERVER_PCT, F_SERVER_S_GIB,
                                     F_ALLOC_B_GIB, F_ALLOC_CALLS_GIB, F_RSS };
    static const char *const colname[2][2] = { { "socket", "socket + cache" }, { "gRPC", "gRPC + cache" } };
    fk_outfile_printf(&md, "| |");
    for (int g = 1; g >= 0; g--)
        for (int c = 0; c < 2; c++)
            if (T[g][c])
                fk_outfile_printf(&md, " %s |", colname[g][c]);
    fk_outfile_printf(&md, "\n|---|");
    for (int g = 1; g >= 0; g--)
        for (int c = 0; c < 2; c++)
            if (T[g][c])
                fk_outfile_printf(&md, "---|");
    fk_outfile_printf(&md, "\n");
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        enum fig f = rows[r];
        fk_outfile_printf(&md, "| %s |", figs[f].label);
        for (int g = 1; g >= 0; g--)
            for (int c = 0; c < 2; c++)
                if (T[g][c])
                    fk_outfile_printf(&md, " %s |", figs[f].alloc && !T[g][c]->o[0].alloc_counted
                                                        ? "not counted" : cell(f, fig_stat(T[g][c], f), b1, sizeof b1));
        fk_outfile_printf(&md, "\n");
    }
    fk_outfile_printf(&md, "\n");
    /* One sentence per row: what it shows, from the ratios. */
    json_t *jsent = json_object();
    enum { NROWS = sizeof rows / sizeof rows[0] };
    char sent[NROWS][1200];
    for (size_t r = 0; r < NROWS; r++)
        sent[r][0] = 0;
    for (int c = 0; c < 2 && have_both; c++) {
        if (!T[0][c] || !T[1][c])
            continue;
        struct setting *G = T[1][c], *S = T[0][c];
        const char *w = c ? "With the pack cache" : "Without the cache";
        for (size_t r = 0; r < NROWS; r++) {
            enum fig f = rows[r];
            struct stat3 g = fig_stat(G, f), so = fig_stat(S, f);
            char x[600] = "";
            switch (f) {
            case F_MIBS:
                snprintf(x, sizeof x, "%s, the socket server moved %s the bytes per second of gRPC (wall clock: "
                         "what the machine's other load left to the benchmark).", w,
                         rcell(ratio_stat(G, S, R_THR), b1, sizeof b1));
                break;
            case F_CAP_MIBS:
                snprintf(x, sizeof x, "%s, on CPUs given to the benchmark alone it would move %s (bytes per CPU "
                         "second of server, git and clients, times %d CPUs).", w,
                         rcell(ratio_stat(G, S, R_CAP), b1, sizeof b1), ncpus);
                break;
            case F_UTIL:
                snprintf(x, sizeof x, "%s, the benchmark's processes kept %.0f%% of the CPUs busy with gRPC and "
                         "%.0f%% with the socket server%s.", w, g.med, so.med,
                         g.med < 80 || so.med < 80 ? " (below 100%: waiting on git's start-up, or other work on "
                         "this shared machine took the rest)" : "");
                break;
            case F_MACHINE:
                snprintf(x, sizeof x, "%s, the machine was %.0f%% busy during the gRPC runs and %.0f%% during the "
                         "socket runs, counting everyone's work%s.", w, g.med, so.med,
                         g.med >= 90 || so.med >= 90 ? ": other work took what the benchmark did not use" : "");
                break;
            case F_SERVER_PCT:
                snprintf(x, sizeof x, "%s, the gRPC server process itself used %.0f%% of a CPU and the socket "
                         "server %.0f%%.", w, g.med, so.med);
                break;
            case F_SERVER_S_GIB:
                snprintf(x, sizeof x, "%s, gRPC's server spent %s the socket server's CPU per GiB served.", w,
                         rcell(ratio_stat(G, S, R_CPU), b1, sizeof b1));
                break;
            case F_ALLOC_B_GIB:
                if (G->o[0].alloc_counted && S->o[0].alloc_counted)
                    snprintf(x, sizeof x, "%s, gRPC allocated %s per GiB served, %s the socket server, which "
                             "allocated %s per fetch.", w, human(g.med, b1, sizeof b1),
                             rcell(ratio_stat(G, S, R_ALLOC), b2, sizeof b2),
                             human(fig_stat(S, F_ALLOC_B_FETCH).med, b3, sizeof b3));
                else
                    snprintf(x, sizeof x, "%s, allocations were not counted (servers built with AddressSanitizer, "
                             "or no fetchd-malloc.so).", w);
                break;
            case F_ALLOC_CALLS_GIB:
                if (G->o[0].alloc_counted && S->o[0].alloc_counted)
                    snprintf(x, sizeof x, "%s, gRPC made %s allocations per %llu-byte message and the socket "
                             "server %s per fetch.", w,
                             num(g.med / ((double)(1ull << 30) / (double)opt.chunk), b1, sizeof b1),
                             (unsigned long long)opt.chunk, num(fig_stat(S, F_ALLOC_CALLS_FETCH).med, b2, sizeof b2));
                else
                    snprintf(x, sizeof x, "%s, allocations were not counted.", w);
                break;
            case F_RSS:
                snprintf(x, sizeof x, "%s, the gRPC server peaked at %.1f MiB resident and the socket server at "
                         "%.1f MiB.", w, g.med, so.med);
                break;
            default:
                break;
            }
            if (x[0])
                snprintf(sent[r] + strlen(sent[r]), sizeof sent[r] - strlen(sent[r]), "%s%s", sent[r][0] ? " " : "",
                         x);
        }
    }
    for (size_t r = 0; r < NROWS; r++)
        if (sent[r][0]) {
            fk_outfile_printf(&md, "- **%s.** %s\n", figs[rows[r]].label, sent[r]);
            json_object_set_new(jsent, figs[rows[r]].key, json_string(sent[r]));
        }
    fk_outfile_printf(&md, "\n");
    json_object_set_new(jr, "table_sentences", jsent);

    /* Where the data disagrees with the talk. */
    json_t *jv = json_array();
    if (have_both && T[0][0] && T[1][0] && T[0][1] && T[1][1]) {
        fk_outfile_printf(&md, "## Against the talk\n\n");
        struct stat3 thr0 = ratio_stat(T[1][0], T[0][0], R_THR), cap0 = ratio_stat(T[1][0], T[0][0], R_CAP);
        verdict(&md, jv, "The talk: the socket server (rpctest) doubles throughput without the cache.",
                cap0.med >= 1.6 && cap0.med <= 2.5 ? AGREES : DISAGREES,
                "here %s on CPUs given to the benchmark alone (%s by the wall clock); without the cache git "
                "upload-pack's CPU dominates both.", rcell(cap0, b1, sizeof b1), rcell(thr0, b2, sizeof b2));
        struct stat3 g0 = fig_stat(T[1][0], F_CAP_MIBS), g1 = fig_stat(T[1][1], F_CAP_MIBS);
        verdict(&md, jv, "The talk: adding the pack cache gives gRPC more throughput.", g1.med > g0.med * 1.1 ? AGREES : DISAGREES,
                "here %s MiB/s with the cache against %s without, if CPU-bound.", num(g1.med, b1, sizeof b1),
                num(g0.med, b2, sizeof b2));
        /* Utilisation says something only when the benchmark had the
         * machine: when others kept it busy, they decided the share. */
        struct stat3 ug0 = fig_stat(T[1][0], F_UTIL), ug1 = fig_stat(T[1][1], F_UTIL);
        struct stat3 us0 = fig_stat(T[0][0], F_UTIL), us1 = fig_stat(T[0][1], F_UTIL);
        double busy = 0;
        for (int g = 0; g < 2; g++)
            for (int c = 0; c < 2; c++)
                if (fig_stat(T[g][c], F_MACHINE).med > busy)
                    busy = fig_stat(T[g][c], F_MACHINE).med;
        bool shared = busy >= 90;
        char why[300];
        snprintf(why, sizeof why, " The machine was up to %.0f%% busy with everyone's work (load1 %.1f): other work "
                 "took what the benchmark did not, so its share says nothing about saturation.", busy,
                 fig_stat(T[0][1], F_LOAD).med);
        verdict(&md, jv, "The talk: with the cache gRPC's machine is slightly less utilised (about 77%), "
                "still nearly saturated.", shared ? CANNOT_TELL : ug1.med < ug0.med && ug1.med >= 60 ? AGREES : DISAGREES,
                "here %.0f%% with the cache against %.0f%% without.%s", ug1.med, ug0.med, shared ? why : "");
        verdict(&md, jv, "The talk: the socket server without the cache saturates the CPUs (about 100%).",
                shared ? CANNOT_TELL : us0.med >= 90 ? AGREES : DISAGREES, "here %.0f%%.%s", us0.med, shared ? why : "");
        verdict(&md, jv, "The talk: the socket server with the cache does not saturate the CPUs (load about 0.6).",
                shared ? CANNOT_TELL : us1.med < 90 ? AGREES : DISAGREES,
                "here %.0f%%; the clients run on the same CPUs as the server, so a faster server makes them busier."
                "%s", us1.med, shared ? why : "");
        struct stat3 cpu0 = ratio_stat(T[1][0], T[0][0], R_CPU), cpu1 = ratio_stat(T[1][1], T[0][1], R_CPU);
        verdict(&md, jv, "The talk: gRPC spends more CPU queueing messages than writing them, i.e. more server "
                "CPU per byte than the socket server.", cpu0.min > 1 && cpu1.min > 1 ? AGREES : DISAGREES,
                "here %s without the cache and %s with it.", rcell(cpu0, b1, sizeof b1), rcell(cpu1, b2, sizeof b2));
        if (T[1][1]->o[0].alloc_counted && T[0][1]->o[0].alloc_counted) {
            struct stat3 ag = fig_stat(T[1][0], F_ALLOC_B_GIB);
            verdict(&md, jv, "The talk: gRPC allocates in proportion to the bytes sent (115 GB in 30 s).",
                    ag.med >= 0.5 * (double)(1ull << 30) ? AGREES : DISAGREES, "here %s allocated per GiB served.",
                    human(ag.med, b1, sizeof b1));
            /* Per fetch, the socket server across sizes. */
            double lo = 1e300, hi = 0;
            for (int i = 0; i < nrepos; i++) {
                struct setting *s = find_setting(i, 1, hn, M_SOCK);
                if (s) {
                    double v = fig_stat(s, F_ALLOC_B_FETCH).med;
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
            }
            verdict(&md, jv, "The talk: the socket server with the cache allocates a constant amount per request "
                    "(5 MB in 30 s).", nrepos < 2 || hi <= lo * 1.1 ? AGREES : DISAGREES,
                    "here %s to %s per fetch over fetches of %s to %s.", human(lo, b1, sizeof b1),
                    human(hi, b2, sizeof b2), human((double)repos[0].fetch_bytes, b3, sizeof b3),
                    human((double)repos[nrepos - 1].fetch_bytes, b4, sizeof b4));
        }
        fk_outfile_printf(&md, "\n");
    }
    json_object_set_new(jr, "talk", jv);

    /* Sweeps. */
    fk_outfile_printf(&md, "## Sweeps\n\nEach setting: median (min–max) over %d rounds.\n\n", opt.rounds);
    static const enum fig sweep_figs[] = { F_MIBS, F_CAP_MIBS, F_SERVER_S_GIB, F_GIT_S_GIB, F_CLIENT_S_GIB, F_UTIL,
                                           F_ALLOC_B_GIB, F_ALLOC_CALLS_FETCH, F_RSS };
    for (int i = 0; i < nrepos; i++)
        for (int c = 0; c < 2; c++) {
            if (!opt.cache_modes[c])
                continue;
            fk_outfile_printf(&md, "### %s, %s\n\n| clients | server | fetches/client |", size_label(i, sl, sizeof sl),
                              c ? "pack cache" : "no cache");
            for (size_t k = 0; k < sizeof sweep_figs / sizeof sweep_figs[0]; k++)
                fk_outfile_printf(&md, " %s |", figs[sweep_figs[k]].label);
            fk_outfile_printf(&md, "\n|---|---|---|");
            for (size_t k = 0; k < sizeof sweep_figs / sizeof sweep_figs[0]; k++)
                fk_outfile_printf(&md, "---|");
            fk_outfile_printf(&md, "\n");
            for (int q = 0; q < opt.nclients; q++)
                for (int m = 0; m < NMODES; m++) {
                    struct setting *s = find_setting(i, c, opt.clients[q], (enum mode)m);
                    if (!s)
                        continue;
                    fk_outfile_printf(&md, "| %d | %s | %d |", s->nclients, mode_name[m], s->fetches);
                    for (size_t k = 0; k < sizeof sweep_figs / sizeof sweep_figs[0]; k++) {
                        enum fig f = sweep_figs[k];
                        fk_outfile_printf(&md, " %s |", figs[f].alloc && !s->o[0].alloc_counted
                                                            ? "not counted" : cell(f, fig_stat(s, f), b1, sizeof b1));
                    }
                    fk_outfile_printf(&md, "\n");
                }
            fk_outfile_printf(&md, "\n");
        }

    /* Ratios. */
    json_t *jratios = json_array();
    if (have_both) {
        fk_outfile_printf(&md, "## Ratios, gRPC against the socket server\n\nWithin each round, then median "
                          "(min–max).\n\n| fetch | cache | clients | gRPC | %s | %s | %s | %s |\n"
                          "|---|---|---|---|---|---|---|---|\n", ratio_info[R_CPU].label, ratio_info[R_CAP].label,
                          ratio_info[R_THR].label, ratio_info[R_ALLOC].label);
        for (int k = 0; k < npairs; k++) {
            struct setting *g = pairs[k].g, *s = pairs[k].s;
            int i = g->size, c = g->cache;
            json_t *o = json_pack("{s:I,s:b,s:i,s:s}", "fetch_bytes", (json_int_t)repos[i].fetch_bytes, "cache", c,
                                  "clients", g->nclients, "grpc_mode", mode_name[g->mode]);
            fk_outfile_printf(&md, "| %s | %s | %d | %s |", human((double)repos[i].fetch_bytes, b1, sizeof b1),
                              c ? "yes" : "no", g->nclients, mode_name[g->mode]);
            for (int r = 0; r < NRATIOS; r++) {
                if (r == R_ALLOC && !(g->o[0].alloc_counted && s->o[0].alloc_counted)) {
                    fk_outfile_printf(&md, " not counted |");
                    continue;
                }
                struct stat3 st = ratio_stat(g, s, (enum ratio)r);
                fk_outfile_printf(&md, " %s |", rcell(st, b2, sizeof b2));
                json_object_set_new(o, ratio_info[r].key, jstat(st));
            }
            fk_outfile_printf(&md, "\n");
            json_array_append_new(jratios, o);
        }
        fk_outfile_printf(&md, "\n");
    }
    json_object_set_new(jr, "ratios", jratios);

    /* Socket allocations per fetch across sizes. */
    if (opt.modes[M_SOCK] && nrepos > 1 && servers[0][0].cnt) {
        fk_outfile_printf(&md, "## The socket server's allocations per fetch, by fetch size\n\n| cache | clients |");
        for (int i = 0; i < nrepos; i++)
            fk_outfile_printf(&md, " %s |", size_label(i, sl, sizeof sl));
        fk_outfile_printf(&md, "\n|---|---|");
        for (int i = 0; i < nrepos; i++)
            fk_outfile_printf(&md, "---|");
        fk_outfile_printf(&md, "\n");
        for (int c = 0; c < 2; c++)
            for (int q = 0; q < opt.nclients && opt.cache_modes[c]; q++) {
                fk_outfile_printf(&md, "| %s | %d |", c ? "yes" : "no", opt.clients[q]);
                for (int i = 0; i < nrepos; i++) {
                    struct setting *s = find_setting(i, c, opt.clients[q], M_SOCK);
                    struct stat3 n = fig_stat(s, F_ALLOC_CALLS_FETCH), b = fig_stat(s, F_ALLOC_B_FETCH);
                    fk_outfile_printf(&md, " %s calls, %s |", num(n.med, b1, sizeof b1), human(b.med, b2, sizeof b2));
                }
                fk_outfile_printf(&md, "\n");
            }
        fk_outfile_printf(&md, "\n");
    }

    /* Flame graphs. */
    json_t *jprof = json_object();
    if (opt.profile) {
        fk_outfile_printf(&md, "## Flame graphs\n\nCaptured with `flamekit pid` in separate runs after the rounds "
                          "(%s, %d clients), so the profiler's cost is in none of the figures above.\n\n",
                          size_label(hs, sl, sizeof sl), hn);
        for (int g = 1; g >= 0; g--)
            for (int c = 0; c < 2; c++)
                if (fk_profiles[g][c]) {
                    fk_outfile_printf(&md, "- [%s](%s)\n", colname[g][c], fk_profiles[g][c]);
                    json_object_set_new(jprof, colname[g][c], json_string(fk_profiles[g][c]));
                }
        fk_outfile_printf(&md, "\n");
    }
    json_object_set_new(jr, "profiles", jprof);
    if (!fk_outfile_commit(&md))
        exit(1);

    /* report.json: every run, and every figure's median and range. */
    json_t *j = json_pack("{s:i,s:s,s:s,s:i,s:I}", "cpus", ncpus, "kernel", un.release, "cpu_accounting", cpu_source,
                          "rounds", opt.rounds, "chunk_size", (json_int_t)opt.chunk);
    json_t *jrepos = json_array();
    for (int i = 0; i < nrepos; i++)
        json_array_append_new(jrepos, json_pack("{s:s,s:I}", "repository", repos[i].path, "fetch_bytes",
                                                (json_int_t)repos[i].fetch_bytes));
    json_object_set_new(j, "repositories", jrepos);
    json_object_set_new(j, "headline", json_pack("{s:I,s:i,s:s}", "fetch_bytes", (json_int_t)repos[hs].fetch_bytes,
                                                 "clients", hn, "grpc_mode", mode_name[hg]));
    json_t *jset = json_array();
    for (int i = 0; i < nsettings; i++) {
        struct setting *s = &settings[i];
        json_t *o = json_pack("{s:I,s:b,s:i,s:s,s:i}", "fetch_bytes", (json_int_t)repos[s->size].fetch_bytes, "cache",
                              s->cache, "clients", s->nclients, "server", mode_name[s->mode], "fetches_per_client",
                              s->fetches);
        json_t *runs = json_array();
        for (int r = 0; r < opt.rounds; r++) {
            struct obs *b = &s->o[r];
            json_t *x = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "wall_s", b->wall, "bytes", b->bytes,
                                  "fetches", b->fetches, "server_cpu_s", b->server_cpu, "git_cpu_s", b->git_cpu,
                                  "client_cpu_s", b->client_cpu, "peak_rss_mib", b->rss_mib, "load1", b->load1);
            if (b->alloc_counted) {
                json_object_set_new(x, "alloc_calls", json_real(b->alloc_calls));
                json_object_set_new(x, "alloc_bytes", json_real(b->alloc_bytes));
            }
            json_array_append_new(runs, x);
        }
        json_object_set_new(o, "runs", runs);
        json_t *sum = json_object();
        for (int f = 0; f < NFIGS; f++)
            if (!figs[f].alloc || s->o[0].alloc_counted)
                json_object_set_new(sum, figs[f].key, jstat(fig_stat(s, (enum fig)f)));
        json_object_set_new(o, "figures", sum);
        json_array_append_new(jset, o);
    }
    json_object_set_new(j, "settings", jset);
    json_object_update(j, jr);
    json_decref(jr);
    char *js = json_dumps(j, JSON_INDENT(2));
    struct fk_outfile jf;
    snprintf(path, sizeof path, "%s/report.json", opt.out);
    bool ok = fk_outfile_open(&jf, path, 0644);
    if (ok && !(fk_outfile_printf(&jf, "%s\n", js) && fk_outfile_commit(&jf))) {
        fk_outfile_abort(&jf);
        ok = false;
    }
    free(js);
    json_decref(j);
    if (!ok)
        exit(1);
}

/* The summary on stdout: the headline ratios. */
static void print_summary(void)
{
    char b1[160], b2[160], b3[160], b4[160], sl[64];
    printf("gRPC against the socket server (median (min-max) of %d rounds): server CPU per GiB gRPC/socket, "
           "throughput socket/gRPC if CPU-bound and by the wall clock, allocated bytes per GiB gRPC/socket\n",
           opt.rounds);
    for (int k = 0; k < npairs; k++) {
        struct setting *g = pairs[k].g, *s = pairs[k].s;
        printf("%-14s %-8s %d clients %-11s server CPU/GiB %s  throughput %s (wall clock %s)",
               size_label(g->size, sl, sizeof sl), g->cache ? "cache" : "no cache", g->nclients, mode_name[g->mode],
               rcell(ratio_stat(g, s, R_CPU), b1, sizeof b1), rcell(ratio_stat(g, s, R_CAP), b2, sizeof b2),
               rcell(ratio_stat(g, s, R_THR), b4, sizeof b4));
        if (g->o[0].alloc_counted && s->o[0].alloc_counted)
            printf("  alloc/GiB %s", rcell(ratio_stat(g, s, R_ALLOC), b3, sizeof b3));
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    fk_progname = "fetch-bench";
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
    ssize_t n = readlink("/proc/self/exe", exedir, sizeof exedir - 1);
    if (n > 0) {
        exedir[n] = 0;
        char *d = dirname(exedir);
        memmove(exedir, d, strlen(d) + 1);
    } else
        snprintf(exedir, sizeof exedir, ".");
    char shimbuf[PATH_MAX + 32];
    if (!opt.shim) {
        snprintf(shimbuf, sizeof shimbuf, "%s/fetchd-malloc.so", exedir);
        if (access(shimbuf, R_OK) != 0)
            snprintf(shimbuf, sizeof shimbuf, "%s/fetchd-malloc.so", FK_PKGLIBEXECDIR);
        opt.shim = shimbuf;
    }
    if (access(opt.shim, R_OK) != 0) {
        fk_warn("allocation counter %s not found: allocations not counted", opt.shim);
        opt.shim = NULL;
    }
    if (mkdir(opt.out, 0755) != 0 && errno != EEXIST)
        fk_die("cannot create output directory %s: %s", opt.out, strerror(errno));
    signal(SIGPIPE, SIG_IGN);
    ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char *fk = NULL;
    if (opt.profile) {
        fk = find_prog("flamekit");
        if (!flamekit_has_pid(fk)) {
            fk_warn("--profile: '%s pid' is not available (flamekit's CPU capture is not built in); "
                    "running without flame graphs", fk);
            free(fk);
            fk = NULL;
            opt.profile = false;
        }
    }
    uint64_t start = fk_now_ns();

    /* Repositories: all under one root the servers serve. */
    char root[PATH_MAX], dir[PATH_MAX];
    if (opt.repo) {
        char real[PATH_MAX];
        if (!realpath(opt.repo, real))
            fk_die("repository %s: %s", opt.repo, strerror(errno));
        char *r = fk_strdup(real), *b = fk_strdup(real);
        snprintf(root, sizeof root, "%s", dirname(r));
        repos[0].path = fk_strdup(real);
        repos[0].name = fk_strdup(basename(b));
        free(r);
        free(b);
        nrepos = 1;
    } else {
        cache_base(dir, sizeof dir);
        for (int i = 0; i < opt.nsizes; i++)
            for (int k = i + 1; k < opt.nsizes; k++)
                if (opt.sizes[i] >> 20 == opt.sizes[k] >> 20)
                    return fk_opt_error("--repo-size: %lluM given twice", (unsigned long long)(opt.sizes[i] >> 20));
        /* smallest first */
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

    /* Servers, kept for all rounds. */
    bool want_grpc = opt.modes[M_GRPC_CONN] || opt.modes[M_GRPC_SHARED];
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++)
            if ((g ? want_grpc : opt.modes[M_SOCK]) && opt.cache_modes[c]) {
                server_start(&servers[g][c], g, c, root);
                server_up[g][c] = true;
            }
    const char *cpu_source = "task-clock counters (perf_event_open) of the server's threads and of its children";
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

    /* Settings, in the order each round runs them. */
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
    fprintf(stderr, "fetch-bench: %d settings × %d rounds (output in %s)\n", nsettings, opt.rounds, opt.out);
    for (int r = 0; r < opt.rounds; r++) {
        uint64_t t = fk_now_ns();
        for (int i = 0; i < nsettings; i++) {
            struct setting *s = &settings[i];
            run(&servers[s->mode != M_SOCK][s->cache], s->mode, s->nclients, repos[s->size].name,
                &repos[s->size].req, s->fetches, &s->o[r], NULL, NULL);
        }
        fprintf(stderr, "fetch-bench: round %d/%d done in %.1f s\n", r + 1, opt.rounds, (double)(fk_now_ns() - t) / 1e9);
    }

    /* Flame graphs under the headline load, after the rounds. */
    const char *profiles[2][2] = { { NULL, NULL }, { NULL, NULL } };
    if (opt.profile) {
        int hs, hn;
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
                run(&servers[g][c], g ? hg : M_SOCK, hn, repos[hs].name, &repos[hs].req, 0, &o, profile_during, &p);
                if (p.ok && !(profiles[g][c] = find_svg(p.dir)))
                    fk_warn("%s: flamekit pid wrote no SVG into %s", servers[g][c].name, p.dir);
            }
    }
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++)
            if (server_up[g][c])
                server_stop(&servers[g][c]);

    check_figures();
    write_reports(cpu_source, profiles, (double)(fk_now_ns() - start) / 1e9);
    print_summary();
    printf("report: %s/report.md, %s/report.json\n", opt.out, opt.out);
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 2; c++)
            free((char *)profiles[g][c]);
    for (int i = 0; i < nsettings; i++)
        free(settings[i].o);
    free(settings);
    free(pairs);
    for (int i = 0; i < nrepos; i++) {
        free(repos[i].path);
        free(repos[i].name);
        fk_buf_free(&repos[i].req);
    }
    free(fk);
    return 0;
}
