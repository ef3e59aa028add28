/* SPDX-License-Identifier: GPL-2.0-only */
/* What fetchd-grpc and fetchd-sock share: options, signals, the port file. */
#include "fetchd/fetchd.h"
#include "util/outfile.h"

#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

volatile int fd_stopping;

void fd_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", fk_progname, line);
}

static void on_stop(int sig)
{
    (void)sig;
    fd_stopping = 1;
}

void fd_server_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

void fd_server_parse(int argc, char **argv, struct fd_server_opts *o,
                     void (*usage)(FILE *), bool grpc)
{
    static const struct option lo[] = {
        { "listen", required_argument, NULL, 'l' },
        { "repo-root", required_argument, NULL, 'r' },
        { "cache-dir", required_argument, NULL, 'c' },
        { "cache-size", required_argument, NULL, 's' },
        { "max-conns", required_argument, NULL, 'm' },
        { "chunk-size", required_argument, NULL, 'k' },
        { "port-file", required_argument, NULL, 'p' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:0";
    o->cache_size = 256ull << 20;
    o->max_conns = 16;
    o->chunk = 32 << 10;
    opterr = 0;
    int ch;
    uint64_t v;
    while ((ch = getopt_long(argc, argv, ":l:r:c:s:m:k:p:vhV", lo, NULL)) != -1) {
        switch (ch) {
        case 'l': o->listen = optarg; break;
        case 'r': o->repo_root = optarg; break;
        case 'c': o->cache_dir = optarg; break;
        case 's':
            if (!fk_parse_size(optarg, &o->cache_size))
                fk_usage_error("bad --cache-size '%s' (e.g. 256M; 0 disables the cache)", optarg);
            break;
        case 'm':
            if (!fk_parse_u64(optarg, &v) || v == 0 || v > 4096)
                fk_usage_error("bad --max-conns '%s' (1-4096)", optarg);
            o->max_conns = (unsigned)v;
            break;
        case 'k':
            if (!grpc)
                fk_usage_error("--chunk-size applies to fetchd-grpc only");
            if (!fk_parse_size(optarg, &v) || v < 1024 || v > (4u << 20))
                fk_usage_error("bad --chunk-size '%s' (1K-4M)", optarg);
            o->chunk = v;
            break;
        case 'p': o->port_file = optarg; break;
        case 'v': o->verbose = true; break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("%s (flamekit) %s\n", fk_progname, FK_VERSION); exit(0);
        case ':': fk_usage_error("option '%s' needs an argument", argv[optind - 1]);
        default: fk_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fk_usage_error("unexpected argument '%s'", argv[optind]);
    if (!o->repo_root)
        fk_usage_error("--repo-root DIR is required (only repositories under it are served)");
    struct stat st;
    if (stat(o->repo_root, &st) != 0 || !S_ISDIR(st.st_mode))
        fk_usage_error("--repo-root '%s' is not a directory", o->repo_root);
    if (!strrchr(o->listen, ':'))
        fk_usage_error("bad --listen '%s' (want HOST:PORT)", o->listen);
}

void fd_server_ready(const struct fd_server_opts *o, int port)
{
    if (o->port_file) {
        struct fk_outfile f;
        if (!fk_outfile_open(&f, o->port_file, 0644) || !fk_outfile_printf(&f, "%d\n", port) ||
            !fk_outfile_commit(&f))
            fk_die("cannot write --port-file %s", o->port_file);
    }
    if (o->verbose)
        fd_log("listening on port %d", port);
}

bool fd_check_request(const char *body, size_t len, char *err, size_t errlen)
{
    size_t off = 0, wants = 0;
    bool done = false;
    if (len == 0) {
        snprintf(err, errlen, "malformed request: empty upload-pack body");
        return false;
    }
    while (off < len) {
        long n = 0;
        for (int i = 0; i < 4; i++) {
            char c = off + 4 <= len ? body[off + i] : 'x';
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) {
                snprintf(err, errlen, "malformed request: bad pkt-line header at byte %zu", off);
                return false;
            }
            n = n * 16 + d;
        }
        if ((n > 0 && n < 4) || off + (size_t)(n ? n : 4) > len) {
            snprintf(err, errlen, "malformed request: bad pkt-line length at byte %zu", off);
            return false;
        }
        const char *p = body + off + 4;
        size_t pl = n ? (size_t)n - 4 : 0;
        if (pl >= 45 && memcmp(p, "want ", 5) == 0) {
            /* 40 hex digits; the body is not NUL-terminated, so no strspn */
            int hex = 0;
            while (hex < 40 && strchr("0123456789abcdef", p[5 + hex]) && p[5 + hex])
                hex++;
            if (hex == 40)
                wants++;
        }
        if (pl == 5 && memcmp(p, "done\n", 5) == 0)
            done = true;
        off += n ? (size_t)n : 4;
    }
    if (wants == 0 || !done) {
        snprintf(err, errlen, "malformed request: need want lines and done");
        return false;
    }
    return true;
}

bool fd_gate_enter(struct fd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    bool ok = g->active < g->max;
    if (ok) {
        g->active++;
        g->threads++;
    }
    pthread_mutex_unlock(&g->mu);
    return ok;
}

void fd_gate_cancel(struct fd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->active--;
    g->threads--;
    pthread_mutex_unlock(&g->mu);
}

void fd_gate_release_slot(struct fd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->active--;
    pthread_mutex_unlock(&g->mu);
}

void fd_gate_thread_done(struct fd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    if (--g->threads == 0)
        pthread_cond_broadcast(&g->idle);
    pthread_mutex_unlock(&g->mu);
}

unsigned fd_gate_active(struct fd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    unsigned n = g->active;
    pthread_mutex_unlock(&g->mu);
    return n;
}

void fd_gate_drain(struct fd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (g->threads > 0)
        pthread_cond_wait(&g->idle, &g->mu);
    pthread_mutex_unlock(&g->mu);
}
