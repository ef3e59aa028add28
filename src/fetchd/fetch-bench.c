/* SPDX-License-Identifier: GPL-2.0-only */
/* fetch-bench: the talk's experiment on one machine. N concurrent fetch
 * clients for T seconds against fetchd-grpc and fetchd-sock, each without
 * and with the pack cache; server CPU (own vs git children), load, peak
 * RSS, allocations per GiB served (fetchd-malloc.so preloaded into the
 * server), optionally a flamekit CPU flame graph of each server. */
#include "fetchd/fetchd.h"
#include "util/opt.h"
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static struct bench_opts {
    const char *repo, *out, *shim, *servers;
    uint64_t repo_size, chunk;
    int clients;
    uint64_t dur_ms;
    bool profile;
} opt = { .out = "fetch-bench.out", .repo_size = 300ull << 20, .chunk = 32 << 10,
          .clients = 4, .dur_ms = 10000, .servers = "grpc,sock" };

static char exedir[PATH_MAX];

#define BO(field) offsetof(struct bench_opts, field)

static const struct fk_opt bench_optset[] = {
    { "repo", 'r', FK_OPT_STR, BO(repo), "GITDIR", "repository to serve (default: generate one)", "repo.git" },
    { "repo-size", 'S', FK_OPT_SIZE, BO(repo_size), "SIZE",
      "size of the generated repository's content (default 300M)", "300M", .min = 1 << 20 },
    { "clients", 'n', FK_OPT_INT, BO(clients), "N", "concurrent fetch clients (default 4)", "4",
      .min = 1, .max = 256 },
    { "duration", 't', FK_OPT_DURATION, BO(dur_ms), "T", "time per run (default 10s)", "10s", .min = 100 },
    { "chunk-size", 'k', FK_OPT_SIZE, BO(chunk), "SIZE", "fetchd-grpc message size (default 32K)", "32K",
      .min = 1024, .max = 4 << 20 },
    { "servers", 's', FK_OPT_STR, BO(servers), "LIST", "grpc,sock (default both)", "grpc,sock" },
    { "output", 'o', FK_OPT_STR, BO(out), "DIR",
      "report.md, report.json, flame graphs (default fetch-bench.out)", "fetch-bench.out" },
    { "profile", 'p', FK_OPT_FLAG, BO(profile), NULL, "flame graph of each server (flamekit pid)" },
    { "malloc-shim", 0, FK_OPT_STR, BO(shim), "PATH", "fetchd-malloc.so to preload into the servers",
      "fetchd-malloc.so" },
    { "version", 'V', FK_OPT_VERSION, 0, NULL, "print the version" },
    { NULL },
};

static const struct fk_cmdline cmdline = {
    "fetch-bench [OPTIONS]",
    "Benchmark fetchd-grpc against fetchd-sock serving git fetches.",
    "See fetch-bench(1).",
    NULL,
};

/* ---- the generated repository ---- */

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static char *generate_repo(void)
{
    const char *base = getenv("FLAMEKIT_CACHE");
    char dir[PATH_MAX];
    if (base && *base)
        snprintf(dir, sizeof dir, "%s/fetch-bench", base);
    else
        snprintf(dir, sizeof dir, "%s/.cache/flamekit/fetch-bench", getenv("HOME") ? getenv("HOME") : "/tmp");
    char *path = fk_asprintf("%s/repo-%lluM.git", dir, (unsigned long long)(opt.repo_size >> 20));
    struct stat st;
    if (stat(path, &st) == 0)
        return path;
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0)
        fk_die("cannot create %s", dir);
    char *tmp = fk_asprintf("%s.tmp.%d", path, (int)getpid());
    snprintf(cmd, sizeof cmd, "git init -q --bare '%s' && git -C '%s' fast-import --quiet", tmp, tmp);
    fprintf(stderr, "fetch-bench: generating a %lluM test repository in %s\n",
            (unsigned long long)(opt.repo_size >> 20), path);
    FILE *fi = popen(cmd, "w");
    if (!fi)
        fk_die("cannot run git fast-import: %s", strerror(errno));
    /* Random words from a small vocabulary: compressible like source text. */
    char words[1024][12];
    for (int i = 0; i < 1024; i++) {
        int l = 2 + (int)(next() % 9);
        for (int j = 0; j < l; j++)
            words[i][j] = (char)('a' + next() % 26);
        words[i][l] = 0;
    }
    const size_t blob = 256 << 10;
    size_t nblobs = (size_t)(opt.repo_size / blob) + 1;
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
    if (rename(tmp, path) != 0)
        fk_die("cannot rename %s: %s", tmp, strerror(errno));
    free(tmp);
    return path;
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

struct procstat { double user, sys, cuser, csys; };

static bool read_stat(pid_t pid, struct procstat *ps)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return false;
    unsigned long long ut, st;
    long long cut, cst;
    /* fields after the command: state(3) ... utime(14) stime(15) cutime(16) cstime(17) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &ut, &st, &cut, &cst) != 4)
        return false;
    double hz = (double)sysconf(_SC_CLK_TCK);
    ps->user = (double)ut / hz;
    ps->sys = (double)st / hz;
    ps->cuser = (double)cut / hz;
    ps->csys = (double)cst / hz;
    return true;
}

static double vm_hwm_mb(pid_t pid)
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

struct counters { uint64_t magic, calls, bytes; };

static bool adv_sink(void *arg, const void *data, size_t len)
{
    fk_buf_add(arg, data, len);
    return true;
}

/* ---- clients ---- */

struct run {
    const char *kind;           /* grpc / sock */
    bool cache;
    char addr[64];
    const char *repo;
    struct fk_buf *req;
    uint64_t deadline;
    pthread_mutex_t mu;
    uint64_t requests, bytes, errors;
    char err[256];
};

static bool count_sink(void *arg, const void *data, size_t len)
{
    (void)data;
    *(uint64_t *)arg += len;
    return true;
}

static void *client_thread(void *arg)
{
    struct run *r = arg;
    char err[256];
    struct fd_client *c = fd_client_new(strcmp(r->kind, "grpc") == 0 ? FD_GRPC : FD_SOCK, r->addr, err, sizeof err);
    uint64_t reqs = 0, bytes = 0, errors = 0;
    while (c && fk_now_ns() < r->deadline) {
        uint64_t got = 0;
        if (fd_client_call(c, FD_OP_UPLOAD_PACK, r->repo, r->req->data, r->req->len, count_sink, &got, err, sizeof err)) {
            reqs++;
            bytes += got;
        } else {
            errors++;
            pthread_mutex_lock(&r->mu);
            snprintf(r->err, sizeof r->err, "%s", err);
            pthread_mutex_unlock(&r->mu);
            usleep(10000);
        }
    }
    fd_client_free(c);
    pthread_mutex_lock(&r->mu);
    r->requests += reqs;
    r->bytes += bytes;
    r->errors += errors;
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

struct result {
    char name[32];
    double secs, rps, mbps, cpu_pct, child_pct, load, rss_mb, alloc_per_gib, calls_per_gib;
    double cpu_s_per_gib, child_s_per_gib, gib;
    uint64_t requests, errors;
    bool alloc_counted;
    char profile[PATH_MAX];
};

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

static void run_one(const char *kind, bool cache, const char *repo_root, const char *repo_name,
                    struct result *res, const char *fk)
{
    char name[32], portf[PATH_MAX], log[PATH_MAX], cdir[PATH_MAX], stats[PATH_MAX], chunk[32];
    snprintf(name, sizeof name, "%s%s", kind, cache ? "+cache" : "");
    snprintf(portf, sizeof portf, "%s/%s.port", opt.out, name);
    snprintf(log, sizeof log, "%s/%s.log", opt.out, name);
    snprintf(cdir, sizeof cdir, "%s/cache-%s", opt.out, kind);
    snprintf(stats, sizeof stats, "%s/%s.malloc", opt.out, name);
    snprintf(chunk, sizeof chunk, "%llu", (unsigned long long)opt.chunk);
    char rmcmd[PATH_MAX + 16];
    snprintf(rmcmd, sizeof rmcmd, "rm -rf '%s'", cdir);
    if (system(rmcmd) != 0)
        fk_warn("cannot clear %s", cdir);
    unlink(portf);
    unlink(stats);
    char *prog = find_prog(strcmp(kind, "grpc") == 0 ? "fetchd-grpc" : "fetchd-sock");
    char *argv[20];
    int a = 0;
    argv[a++] = prog;
    argv[a++] = "--repo-root"; argv[a++] = (char *)repo_root;
    argv[a++] = "--port-file"; argv[a++] = portf;
    argv[a++] = "--max-conns"; argv[a++] = "64";
    argv[a++] = "--max-per-peer"; argv[a++] = "64";     /* every client is local */
    if (strcmp(kind, "grpc") == 0) { argv[a++] = "--chunk-size"; argv[a++] = chunk; }
    if (cache) { argv[a++] = "--cache-dir"; argv[a++] = cdir; argv[a++] = "--cache-size"; argv[a++] = "4G"; }
    argv[a] = NULL;
    /* The environment plus the allocation counter. */
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
    if (counting) {
        envp[k++] = fk_asprintf("LD_PRELOAD=%s", opt.shim);
        envp[k++] = fk_asprintf("FETCHD_MALLOC_STATS=%s", stats);
    }
    pid_t pid = spawn(argv, envp, log);
    for (int i = 0; i < 200 && access(portf, R_OK) != 0; i++)
        usleep(25000);
    FILE *pf = fopen(portf, "re");
    int port = 0;
    if (!pf || fscanf(pf, "%d", &port) != 1)
        fk_die("%s did not start; see %s", prog, log);
    fclose(pf);

    struct run r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    r.kind = kind;
    r.cache = cache;
    snprintf(r.addr, sizeof r.addr, "127.0.0.1:%d", port);
    r.repo = repo_name;
    /* The request: all refs from the advertisement. */
    char err[512];
    struct fd_client *c = fd_client_new(strcmp(kind, "grpc") == 0 ? FD_GRPC : FD_SOCK, r.addr, err, sizeof err);
    struct fk_buf adv = FK_BUF_INIT, req = FK_BUF_INIT;
    struct fd_refs refs = { 0 };
    if (!c || !fd_client_call(c, FD_OP_ADVERTISE, repo_name, "", 0, adv_sink, &adv, err, sizeof err) ||
        !fd_parse_advertisement(adv.data ? adv.data : "", adv.len, &refs, err, sizeof err) ||
        !fd_build_request(&refs, NULL, 0, &req, err, sizeof err))
        fk_die("%s: advertisement: %s", name, err);
    r.req = &req;
    /* Warm-up: one fetch (fills the cache in cache mode). */
    uint64_t got = 0;
    if (!fd_client_call(c, FD_OP_UPLOAD_PACK, repo_name, req.data, req.len, count_sink, &got, err, sizeof err))
        fk_die("%s: warm-up fetch: %s", name, err);
    fd_client_free(c);

    struct procstat s0, s1;
    struct counters *cnt = NULL, m0 = { 0 };
    if (counting) {
        int fd = open(stats, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
            close(fd);
            if (m != MAP_FAILED)
                cnt = m;
        }
        if (cnt && cnt->magic)
            m0 = *cnt;
    }
    pid_t prof = -1;
    res->profile[0] = 0;
    if (opt.profile && fk) {
        char pidarg[32], durarg[32];
        snprintf(pidarg, sizeof pidarg, "%d", (int)pid);
        snprintf(durarg, sizeof durarg, "%llu", (unsigned long long)((opt.dur_ms + 999) / 1000));
        snprintf(res->profile, sizeof res->profile, "%s/profile-%s", opt.out, name);
        char plog[PATH_MAX + 8];
        snprintf(plog, sizeof plog, "%s.log", res->profile);
        char *pargv[] = { (char *)fk, "pid", "-d", durarg, "-o", res->profile, pidarg, NULL };
        prof = spawn(pargv, environ, plog);
    }
    read_stat(pid, &s0);
    uint64_t t0 = fk_now_ns();
    r.deadline = t0 + opt.dur_ms * 1000000ull;
    pthread_t *th = fk_calloc((size_t)opt.clients, sizeof *th);
    for (int i = 0; i < opt.clients; i++)
        if (pthread_create(&th[i], NULL, client_thread, &r) != 0)
            fk_die("cannot start client threads");
    for (int i = 0; i < opt.clients; i++)
        pthread_join(th[i], NULL);
    free(th);
    uint64_t t1 = fk_now_ns();
    read_stat(pid, &s1);
    res->load = loadavg1();
    res->rss_mb = vm_hwm_mb(pid);
    struct counters m1 = { 0 };
    if (cnt)
        m1 = *cnt;
    if (prof > 0) {
        int st;
        waitpid(prof, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fk_warn("%s: flamekit pid failed; see %s.log", name, res->profile);
            res->profile[0] = 0;
        }
    }
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fk_warn("%s: server did not exit cleanly; see %s", name, log);
    if (r.requests == 0)
        fk_die("%s: no fetch completed (%s)", name, r.err);
    if (r.errors)
        fk_warn("%s: %llu failed requests (last: %s)", name, (unsigned long long)r.errors, r.err);

    snprintf(res->name, sizeof res->name, "%s", name);
    res->secs = (double)(t1 - t0) / 1e9;
    res->requests = r.requests;
    res->errors = r.errors;
    res->gib = (double)r.bytes / (double)(1ull << 30);
    res->rps = (double)r.requests / res->secs;
    res->mbps = (double)r.bytes / (1 << 20) / res->secs;
    double cpu = (s1.user + s1.sys) - (s0.user + s0.sys);
    double child = (s1.cuser + s1.csys) - (s0.cuser + s0.csys);
    res->cpu_pct = 100 * cpu / res->secs;
    res->child_pct = 100 * child / res->secs;
    res->cpu_s_per_gib = cpu / res->gib;
    res->child_s_per_gib = child / res->gib;
    res->alloc_counted = cnt && m0.magic;
    res->alloc_per_gib = res->alloc_counted ? (double)(m1.bytes - m0.bytes) / res->gib : 0;
    res->calls_per_gib = res->alloc_counted ? (double)(m1.calls - m0.calls) / res->gib : 0;
    if (cnt)
        munmap(cnt, 4096);
    fd_refs_free(&refs);
    fk_buf_free(&adv);
    fk_buf_free(&req);
    free(prog);
    free(envp);
}

static const char *human(double v, char *buf, size_t n)
{
    const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(buf, n, "%.1f %s", v, u[i]);
    return buf;
}

static void table(FILE *f, struct result *rs, int n, bool md)
{
    const char *hdr[] = { "server", "req/s", "MiB/s", "CPU% server", "CPU% git", "load1",
                          "peak RSS MiB", "alloc/GiB", "allocs/GiB", "CPU s/GiB server", "CPU s/GiB git" };
    if (md) {
        for (int i = 0; i < 11; i++)
            fprintf(f, "| %s ", hdr[i]);
        fprintf(f, "|\n");
        for (int i = 0; i < 11; i++)
            fprintf(f, "|---");
        fprintf(f, "|\n");
    } else
        fprintf(f, "%-12s %7s %8s %11s %8s %5s %12s %11s %10s %16s %13s\n", hdr[0], hdr[1], hdr[2], hdr[3],
                hdr[4], hdr[5], hdr[6], hdr[7], hdr[8], hdr[9], hdr[10]);
    for (int i = 0; i < n; i++) {
        struct result *r = &rs[i];
        char a[32], calls[32];
        if (r->alloc_counted) {
            human(r->alloc_per_gib, a, sizeof a);
            snprintf(calls, sizeof calls, "%.0f", r->calls_per_gib);
        } else {
            snprintf(a, sizeof a, "n/a");
            snprintf(calls, sizeof calls, "n/a");
        }
        if (md)
            fprintf(f, "| %s | %.2f | %.1f | %.1f | %.1f | %.2f | %.1f | %s | %s | %.3f | %.3f |\n", r->name, r->rps,
                    r->mbps, r->cpu_pct, r->child_pct, r->load, r->rss_mb, a, calls, r->cpu_s_per_gib,
                    r->child_s_per_gib);
        else
            fprintf(f, "%-12s %7.2f %8.1f %11.1f %8.1f %5.2f %12.1f %11s %10s %16.3f %13.3f\n", r->name, r->rps,
                    r->mbps, r->cpu_pct, r->child_pct, r->load, r->rss_mb, a, calls, r->cpu_s_per_gib,
                    r->child_s_per_gib);
    }
}

static struct result *find(struct result *rs, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rs[i].name, name) == 0)
            return &rs[i];
    return NULL;
}

static void ratios(FILE *f, struct result *rs, int n, json_t *j)
{
    const char *modes[] = { "", "+cache" };
    for (int m = 0; m < 2; m++) {
        char g[32], s[32];
        snprintf(g, sizeof g, "grpc%s", modes[m]);
        snprintf(s, sizeof s, "sock%s", modes[m]);
        struct result *a = find(rs, n, g), *b = find(rs, n, s);
        if (!a || !b || b->cpu_s_per_gib <= 0)
            continue;
        double cpu = a->cpu_s_per_gib / b->cpu_s_per_gib, thr = b->mbps / a->mbps;
        fprintf(f, "%s vs %s: server CPU per GiB %.2fx (gRPC/socket), throughput %.2fx (socket/gRPC)", g, s, cpu, thr);
        json_t *o = json_pack("{s:f,s:f}", "cpu_per_gib_grpc_over_sock", cpu, "throughput_sock_over_grpc", thr);
        if (a->alloc_counted && b->alloc_counted) {
            double al = b->alloc_per_gib > 0 ? a->alloc_per_gib / b->alloc_per_gib : 0;
            fprintf(f, ", allocated bytes per GiB %.0fx", al);
            json_object_set_new(o, "alloc_per_gib_grpc_over_sock", json_real(al));
        }
        fprintf(f, "\n");
        json_object_set_new(j, m ? "cache" : "no_cache", o);
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
    bool want_grpc = strstr(opt.servers, "grpc") != NULL, want_sock = strstr(opt.servers, "sock") != NULL;
    if (!want_grpc && !want_sock)
        return fk_opt_error("option '--servers' wants grpc, sock or grpc,sock, not '%s'", opt.servers);
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
    char *fk = NULL;
    if (opt.profile) {
        fk = find_prog("flamekit");
        if (!flamekit_has_pid(fk)) {
            fk_warn("--profile: '%s pid' is not available (flamekit's CPU capture is not built in); "
                    "running without flame graphs", fk);
            free(fk);
            fk = NULL;
        }
    }
    char *repo = opt.repo ? fk_strdup(opt.repo) : generate_repo();
    char real[PATH_MAX];
    if (!realpath(repo, real))
        fk_die("repository %s: %s", repo, strerror(errno));
    char *root = fk_strdup(real), *base = fk_strdup(real);
    char *rootd = dirname(root), *name = basename(base);
    struct result rs[4];
    int nr = 0;
    for (int s = 0; s < 2; s++) {
        const char *kind = s == 0 ? "grpc" : "sock";
        if ((s == 0 && !want_grpc) || (s == 1 && !want_sock))
            continue;
        for (int c = 0; c < 2; c++) {
            fprintf(stderr, "fetch-bench: %s%s: %d clients for %.1f s\n", kind, c ? "+cache" : "", opt.clients,
                    (double)opt.dur_ms / 1000);
            run_one(kind, c == 1, rootd, name, &rs[nr++], fk);
        }
    }
    free(root);
    free(base);
    free(repo);
    free(fk);
    table(stdout, rs, nr, false);
    json_t *jr = json_object();
    ratios(stdout, rs, nr, jr);

    char path[PATH_MAX + 16];
    struct fk_outfile md;
    snprintf(path, sizeof path, "%s/report.md", opt.out);
    if (!fk_outfile_open(&md, path, 0644)) {
        json_decref(jr);
        return 1;
    }
    fk_outfile_printf(&md, "# fetch-bench\n\nRepository: %s; %d clients, %.1f s per run, gRPC chunk %llu bytes.\n"
                      "Client threads run on the same machine. CPU%% server = the server process; CPU%% git = its "
                      "reaped git children (cutime+cstime). Allocations are counted in the server process only.\n\n",
                      real, opt.clients, (double)opt.dur_ms / 1000, (unsigned long long)opt.chunk);
    table(md.fp, rs, nr, true);
    fk_outfile_printf(&md, "\n");
    json_t *tmpj = json_object();
    ratios(md.fp, rs, nr, tmpj);
    json_decref(tmpj);
    for (int i = 0; i < nr; i++)
        if (rs[i].profile[0])
            fk_outfile_printf(&md, "\nFlame graph of %s: %s\n", rs[i].name, rs[i].profile);
    if (!fk_outfile_commit(&md)) {
        json_decref(jr);
        return 1;
    }

    json_t *j = json_pack("{s:s,s:i,s:f,s:I}", "repository", real, "clients", (int)opt.clients, "duration_s",
                          (double)opt.dur_ms / 1000, "chunk_size", (json_int_t)opt.chunk);
    json_t *arr = json_array();
    for (int i = 0; i < nr; i++) {
        struct result *r = &rs[i];
        json_t *o = json_pack("{s:s,s:f,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "server", r->name, "seconds",
                              r->secs, "requests", (json_int_t)r->requests, "errors", (json_int_t)r->errors,
                              "gib_served", r->gib, "requests_per_s", r->rps, "mib_per_s", r->mbps,
                              "server_cpu_pct", r->cpu_pct, "git_cpu_pct", r->child_pct, "load1", r->load,
                              "peak_rss_mib", r->rss_mb, "server_cpu_s_per_gib", r->cpu_s_per_gib,
                              "git_cpu_s_per_gib", r->child_s_per_gib);
        if (r->alloc_counted) {
            json_object_set_new(o, "alloc_bytes_per_gib", json_real(r->alloc_per_gib));
            json_object_set_new(o, "alloc_calls_per_gib", json_real(r->calls_per_gib));
        }
        if (r->profile[0])
            json_object_set_new(o, "profile", json_string(r->profile));
        json_array_append_new(arr, o);
    }
    json_object_set_new(j, "runs", arr);
    json_object_set_new(j, "ratios", jr);
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
        return 1;
    fprintf(stdout, "report: %s/report.md, %s/report.json\n", opt.out, opt.out);
    return 0;
}
