/* SPDX-License-Identifier: GPL-2.0-only */
/* What fetchd-grpc and fetchd-sock share: options, signals, the port file. */
#include "fetchd/fetchd.h"
#include "util/opt.h"
#include "util/outfile.h"

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

#define SO(field) offsetof(struct fd_server_opts, field)

static const struct fk_opt server_optset[] = {
    { "listen", 'l', FK_OPT_STR, SO(listen), "HOST:PORT", "address (default 127.0.0.1:0: any free port)",
      "127.0.0.1:9418" },
    { "repo-root", 'r', FK_OPT_STR, SO(repo_root), "DIR", "serve only repositories under DIR", "/srv/git" },
    { "cache-dir", 'c', FK_OPT_STR, SO(cache_dir), "DIR", "pack cache directory (default: no cache)",
      "/var/cache/fetchd" },
    { "cache-size", 's', FK_OPT_SIZE, SO(cache_size), "SIZE",
      "pack cache bound, LRU eviction (default 256M; 0 disables the cache)", "256M" },
    { "max-conns", 'm', FK_OPT_INT, SO(max_conns), "N", "requests served at once (default 16)", "16",
      .min = 1, .max = 4096 },
    { "port-file", 'p', FK_OPT_STR, SO(port_file), "FILE", "write the bound port to FILE", "port" },
    { "verbose", 'v', FK_OPT_FLAG, SO(verbose), NULL, "log requests on stderr" },
    { "version", 'V', FK_OPT_VERSION, 0, NULL, "print the version" },
    { NULL },
};

static const struct fk_opt grpc_optset[] = {
    { "chunk-size", 'k', FK_OPT_SIZE, SO(chunk), "SIZE", "bytes per Chunk message (default 32K)", "32K",
      .min = 1024, .max = 4 << 20 },
    { NULL },
};

int fd_server_parse(int argc, char **argv, struct fd_server_opts *o, const struct fk_cmdline *cl,
                    bool grpc)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:0";
    o->cache_size = 256ull << 20;
    o->max_conns = 16;
    o->chunk = 32 << 10;
    struct fk_optsec secs[3] = { { "Options", server_optset, o } };
    if (grpc)
        secs[1] = (struct fk_optsec){ "Options", grpc_optset, o };
    struct fk_args a;
    int rc = fk_opt_parse(cl, secs, argc, argv, &a);
    struct stat st;
    if (rc != FK_OPT_CONTINUE)
        ;
    else if (a.n)
        rc = fk_opt_error("unexpected argument '%s'", a.v[0]);
    else if (!o->repo_root)
        rc = fk_opt_error("--repo-root DIR is required (only repositories under it are served)");
    else if (stat(o->repo_root, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = fk_opt_error("--repo-root '%s' is not a directory", o->repo_root);
    else if (!strrchr(o->listen, ':'))
        rc = fk_opt_error("option '--listen' wants HOST:PORT, not '%s'", o->listen);
    fk_args_free(&a);
    return rc;
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
