/* SPDX-License-Identifier: GPL-2.0-only */
/* What fetchd-grpc and fetchd-sock share: options, signals, the port file. */
#include "fetchd/fetchd.h"
#include "util/opt.h"
#include "util/outfile.h"
#include "util/stopsig.h"
#include "cmd/term.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void fetchd_server_signals(void)
{
    if (!fk_stop_on_signals(FK_STOP_IGNORE_SIGPIPE))
        fk_die("cannot set the signal handlers: %s", strerror(errno));
}

#define SO(field) offsetof(struct fetchd_server_opts, field)

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
    { "max-per-peer", 0, FK_OPT_INT, SO(max_per_peer), "N",
      "requests served at once for one client address (default: half of --max-conns, at least 1)", "4",
      .min = 1, .max = 4096 },
    { "timeout", 0, FK_OPT_DURATION, SO(timeout), "DURATION",
      "a request's overall deadline: request, git and response (default 10m)", "10m" },
    { "min-rate", 0, FK_OPT_SIZE, SO(min_rate), "RATE",
      "bytes/s a client must move while the server waits on it (default 4K; 0: no minimum)", "4K" },
    { "rate-window", 0, FK_OPT_DURATION, SO(rate_window), "DURATION",
      "time waited on a client over which --min-rate is measured (default 20s)", "20s" },
    { "port-file", 'p', FK_OPT_STR, SO(port_file), "FILE", "write the bound port to FILE", "port" },
    { "verbose", 'v', FK_OPT_FLAG, SO(verbose), NULL, "log requests on stderr" },
    { "version", 'V', FK_OPT_VERSION, 0, NULL, "print the version" },
    { NULL },
};

static const struct fk_opt grpc_optset[] = {
    { "chunk-size", 'k', FK_OPT_SIZE, SO(chunk), "SIZE", "bytes per Chunk message (default 32K)", "32K",
      .min = 1024, .max = 4 << 20 },
    { "keepalive", 0, FK_OPT_DURATION, SO(keepalive), "DURATION",
      "ping each connection this often (default 1m)", "1m", .min = 1000 },
    { "keepalive-timeout", 0, FK_OPT_DURATION, SO(keepalive_timeout), "DURATION",
      "close a connection whose ping is unanswered this long (default 20s)", "20s" },
    { "max-connection-age", 0, FK_OPT_DURATION, SO(max_conn_age), "DURATION",
      "close connections this old; calls in flight get --timeout to finish (default 30m)", "30m" },
    { "max-connection-idle", 0, FK_OPT_DURATION, SO(max_conn_idle), "DURATION",
      "close connections without calls this long (default 5m)", "5m" },
    { "handshake-timeout", 0, FK_OPT_DURATION, SO(handshake_timeout), "DURATION",
      "close connections that do not complete the HTTP/2 handshake in time (default 10s)", "10s" },
    { NULL },
};

int fetchd_server_parse(int argc, char **argv, struct fetchd_server_opts *o, const struct fk_cmdline *cl,
                    bool grpc)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:0";
    o->cache_size = 256ull << 20;
    o->max_conns = 16;
    o->timeout = 10 * 60 * 1000;
    o->min_rate = 4 << 10;
    o->rate_window = 20 * 1000;
    o->keepalive = 60 * 1000;
    o->keepalive_timeout = 20 * 1000;
    o->max_conn_age = 30 * 60 * 1000;
    o->max_conn_idle = 5 * 60 * 1000;
    o->handshake_timeout = 10 * 1000;
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
    else if (o->max_per_peer > o->max_conns)
        rc = fk_opt_error("--max-per-peer %d exceeds --max-conns %d", o->max_per_peer, o->max_conns);
    if (o->max_per_peer == 0)
        o->max_per_peer = o->max_conns > 1 ? o->max_conns / 2 : 1;
    fk_args_free(&a);
    return rc;
}

void fetchd_server_ready(const struct fetchd_server_opts *o, int port)
{
    if (o->port_file) {
        struct fk_outfile f;
        char err[512] = "";
        if (!fk_outfile_open(&f, o->port_file, 0644, err, sizeof err) ||
            !fk_outfile_printf(&f, "%d\n", port) || !fk_outfile_commit(&f, err, sizeof err)) {
            if (err[0])
                fk_error("%s", err);
            fk_die("cannot write --port-file %s", o->port_file);
        }
    }
    if (o->verbose)
        fk_error("listening on port %d", port);
}

bool fetchd_check_request(const char *body, size_t len, char *err, size_t errlen)
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
            int d = fk_hexval(c);
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

static struct fetchd_peer *peer_find(struct fetchd_gate *g, const char *peer)
{
    for (size_t i = 0; i < g->npeers; i++)
        if (strcmp(g->peers[i].addr, peer) == 0)
            return &g->peers[i];
    return NULL;
}

enum fetchd_admit fetchd_gate_enter(struct fetchd_gate *g, const char *peer)
{
    pthread_mutex_lock(&g->mu);
    struct fetchd_peer *p = peer_find(g, peer);
    enum fetchd_admit r = g->active >= g->max ? FETCHD_BUSY
                      : p && p->n >= g->max_peer ? FETCHD_PEER_BUSY : FETCHD_ADMIT;
    if (r == FETCHD_ADMIT) {
        if (!p) {
            g->peers = fk_grow(g->peers, &g->cap, g->npeers + 1, sizeof *g->peers);
            p = &g->peers[g->npeers++];
            snprintf(p->addr, sizeof p->addr, "%s", peer);
            p->n = 0;
        }
        p->n++;
        g->active++;
        g->threads++;
    }
    pthread_mutex_unlock(&g->mu);
    return r;
}

void fetchd_gate_busy_msg(const struct fetchd_gate *g, enum fetchd_admit why, const char *what, char *out, size_t n)
{
    if (why == FETCHD_PEER_BUSY)
        snprintf(out, n, "busy: %u %s from your address in flight (--max-per-peer); retry later",
                 g->max_peer, what);
    else
        snprintf(out, n, "busy: %u %s in flight (--max-conns); retry later", g->max, what);
}

/* The slot of peer goes back (the caller holds the lock). */
static void peer_put(struct fetchd_gate *g, const char *peer)
{
    struct fetchd_peer *p = peer_find(g, peer);
    if (p && --p->n == 0)
        *p = g->peers[--g->npeers];
    g->active--;
}

void fetchd_gate_cancel(struct fetchd_gate *g, const char *peer)
{
    pthread_mutex_lock(&g->mu);
    peer_put(g, peer);
    g->threads--;
    pthread_mutex_unlock(&g->mu);
}

void fetchd_gate_release_slot(struct fetchd_gate *g, const char *peer)
{
    pthread_mutex_lock(&g->mu);
    peer_put(g, peer);
    pthread_mutex_unlock(&g->mu);
}

void fetchd_gate_thread_done(struct fetchd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    if (--g->threads == 0)
        pthread_cond_broadcast(&g->idle);
    pthread_mutex_unlock(&g->mu);
}

unsigned fetchd_gate_active(struct fetchd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    unsigned n = g->active;
    pthread_mutex_unlock(&g->mu);
    return n;
}

void fetchd_gate_drain(struct fetchd_gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (g->threads > 0)
        pthread_cond_wait(&g->idle, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

void fetchd_pace_init(struct fetchd_pace *p, const struct fetchd_server_opts *o)
{
    memset(p, 0, sizeof *p);
    p->deadline = fk_now_ns() + o->timeout * 1000000ull;
    p->window = o->rate_window * 1000000ull;
    p->min_bytes = o->min_rate * o->rate_window / 1000;
    if (o->min_rate && !p->min_bytes)
        p->min_bytes = 1;
}

int fetchd_pace_wait_ms(const struct fetchd_pace *p)
{
    uint64_t now = fk_now_ns(), left = p->deadline > now ? p->deadline - now : 0;
    if (p->min_bytes && p->window - p->waited < left)
        left = p->window - p->waited;
    left = (left + 999999) / 1000000;
    return left < 1 ? 1 : left > 1000 ? 1000 : (int)left;   /* 1 s: also notice SIGTERM */
}

void fetchd_pace_respond(struct fetchd_pace *p)
{
    p->waited = p->moved = 0;
    p->fresh = true;
}

void fetchd_pace_moved(struct fetchd_pace *p, uint64_t bytes)
{
    p->moved += bytes;
}

const char *fetchd_pace_check(struct fetchd_pace *p, uint64_t waited_ns)
{
    if (fk_now_ns() >= p->deadline)
        return "request deadline passed (--timeout)";
    if (!p->min_bytes)
        return NULL;
    if (waited_ns && p->fresh) {
        p->moved = 0;
        p->fresh = false;
    }
    p->waited += waited_ns;
    if (p->waited < p->window)
        return NULL;
    if (p->moved < p->min_bytes)
        return "client too slow (--min-rate)";
    p->waited = p->moved = 0;   /* a new window */
    return NULL;
}
