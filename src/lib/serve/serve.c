/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit serve (see serve.h): libmicrohttpd with a thread per
 * connection, so a capture that takes a minute holds only its own
 * connection; captures themselves are serialised by a try-lock (a second
 * one gets 429 at once, never waits). */
#include "serve.h"
#include "auth.h"
#include "mhd-dyn.h"
#include "profile/kinds.h"
#include "util/buf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern const char fk_serve_page[];
extern const size_t fk_serve_page_len;

#define MAX_BODY 1024           /* POST /login */
#define MAX_RESULT (512u << 20) /* a result file served from memory */
#define BUCKETS 256
#define AUTH_FAIL_COST 4        /* a 401 spends this many requests of the budget */
/* Connections: libmicrohttpd refuses new ones at CONN_LIMIT, and per
 * address at CONN_PER_IP (4 addresses take half the slots). It accepts
 * before anyone is known, so the reserve is kept by closing the oldest
 * connection still sending its request when more than CONN_LIMIT -
 * CONN_RESERVE are; a request that has arrived whole is never closed.
 * Each request must arrive whole (headers and body, TLS handshake
 * included) within --timeout seconds of its connection's accept. */
#define CONN_LIMIT 64
#define CONN_PER_IP 8
#define CONN_RESERVE 8

/* A request budget: of an identity ("token:NAME", "cert:CN") for
 * authenticated requests, of an address for everything else. */
struct bucket {
    char key[160];
    double tokens;
    uint64_t last_ns;
};

/* One open connection (libmicrohttpd's socket context). */
struct conn {
    struct conn *prev, *next;   /* oldest first */
    int fd;
    uint64_t t0;                /* accepted */
    bool pending;               /* its request has not arrived whole yet */
    bool closing;               /* shut down by us: deadline or reserve */
    char ip[INET6_ADDRSTRLEN];
};

struct server {
    const struct fk_serve_opts *o;
    struct fk_tokens tokens;
    bool tls, ca;
    char *cert, *key, *capem;
    pthread_mutex_t capture;        /* held while a capture runs */
    pthread_mutex_t lock;           /* the fields below */
    uint64_t capture_end_ns;        /* when the running capture should end */
    struct bucket buckets[BUCKETS];
    struct fk_sessions sessions;    /* the page's sign-ins */
    struct conn conns;              /* list head: open connections, oldest first */
    size_t npending;                /* of them, still sending their request */
    char *page;                     /* the page with the cap filled in */
};

/* One request's state and audit record. */
struct req {
    const struct fk_serve_opts *o;  /* its log */
    struct fk_buf body;
    bool post;
    char ip[INET6_ADDRSTRLEN];
    char who[128];
    char id[160];               /* its budget's key once authenticated ("token:NAME", "cert:CN") */
    char what[256];             /* target=... for the audit line */
    char why[256];              /* an error answer's text, for the audit line */
    uint64_t t0;
};

void fk_serve_opts_init(struct fk_serve_opts *o)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:8089";
    o->max_seconds = 60;
    o->default_seconds = 30;
    o->rate = 30;
    o->timeout_s = 15;
    o->freq = 99;
}

/* ---- small helpers ------------------------------------------------------- */

static char *read_file(const char *path, const char *what, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size > (1 << 20)) {
        snprintf(err, errlen, "cannot read %s %s: %s", what, path,
                 fd < 0 ? strerror(errno) : "too large");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *b = fk_malloc((size_t)st.st_size + 1);
    ssize_t n = read(fd, b, (size_t)st.st_size);
    close(fd);
    if (n != st.st_size) {
        snprintf(err, errlen, "cannot read %s %s", what, path);
        free(b);
        return NULL;
    }
    b[n] = 0;
    return b;
}

/* One field of an audit line from what a client sent (method, path,
 * query values, certificate names): blanks and controls become '_' so it
 * stays one field, then the terminal-text cleaner (util/fk.h) takes C1
 * controls and broken UTF-8; cut to n - 1 bytes. quoted: an error answer's
 * text for why="..." (it may quote what a client sent): blanks stay, the
 * quotes delimit it, so quotes and backslashes become '\'' and it ends at
 * a line break. */
static const char *log_clean(char *dst, size_t n, const char *src, bool quoted)
{
    size_t k = 0;
    for (const char *c = src; *c && !(quoted && *c == '\n') && k + 1 < n; c++) {
        unsigned char u = (unsigned char)*c;
        dst[k++] = u < ' ' + !quoted || u == 0x7f ? '_' : quoted && (u == '"' || u == '\\') ? '\'' : *c;
    }
    dst[k] = 0;
    fk_text_sanitize(dst);
    return dst;
}

static const char *log_field(char *dst, size_t n, const char *src)
{
    return log_clean(dst, n, src, false);
}

/* Methods are logged as sent only from this list (the 405 answer comes
 * before authentication: anything else is a client's text). */
static const char *log_method(const char *m)
{
    static const char *const known[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS",
                                         "PATCH", "TRACE", "CONNECT" };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(m, known[i]))
            return known[i];
    return "(other-method)";
}

static void log_time(char *ts, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One line of the log (struct fk_serve_opts.log), formatted. */
static void log_line(const struct fk_serve_opts *o, const char *fmt, ...) FK_PRINTF(2, 3);
static void log_line(const struct fk_serve_opts *o, const char *fmt, ...)
{
    if (!o->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *line = fk_vasprintf(fmt, ap);
    va_end(ap);
    o->log(o->log_ctx, line);
    free(line);
}

static void audit(const struct req *r, const char *method, const char *url, unsigned status,
                  size_t bytes)
{
    char ts[32], ip[sizeof r->ip], who[sizeof r->who], u[160], why[sizeof r->why];
    log_time(ts, sizeof ts);
    /* what = "k=v k=v": its blanks are ours, each value was cleaned */
    log_line(r->o, "audit %s client=%s who=%s %s %s%s%s status=%u bytes=%zu ms=%llu%s%s%s",
         ts, log_field(ip, sizeof ip, r->ip),
         r->who[0] ? log_field(who, sizeof who, r->who) : "-", log_method(method),
         log_field(u, sizeof u, url), r->what[0] ? " " : "", r->what, status, bytes,
         (unsigned long long)((fk_now_ns() - r->t0) / 1000000u),
         r->why[0] ? " why=\"" : "", r->why[0] ? log_clean(why, sizeof why, r->why, true) : "",
         r->why[0] ? "\"" : "");
}

/* What a capture's symbolizer skipped (its fk_warn_fn), into the log. */
static void log_warning(void *ctx, const char *msg)
{
    const struct server *s = ctx;
    if (!s->o->log)
        return;
    char *line = fk_asprintf("warning: %s", msg);
    fk_text_sanitize(line);
    s->o->log(s->o->log_ctx, line);
    free(line);
}

/* libmicrohttpd's own reports (MHD_USE_ERROR_LOG), into the log: one line
 * each, cleaned (they may quote what a client sent). */
static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    const struct server *s = cls;
    if (!s->o->log)
        return;
    char *line = fk_vasprintf(fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    fk_text_sanitize(line);
    if (n)
        s->o->log(s->o->log_ctx, line);
    free(line);
}

static enum MHD_Result respond(struct MHD_Connection *c, struct req *r, const char *method,
                               const char *url, unsigned status, const char *type, void *body,
                               size_t len, bool must_free, const char *const *headers)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, body, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        if (must_free)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    /* same-origin: no-referrer would make browsers send "Origin: null" with
     * the sign-in form, which the cross-site check must refuse */
    MHD_add_response_header(resp, "Referrer-Policy", "same-origin");
    /* one request per connection: its deadline runs from accept */
    MHD_add_response_header(resp, "Connection", "close");
    for (size_t i = 0; headers && headers[i]; i += 2)
        MHD_add_response_header(resp, headers[i], headers[i + 1]);
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    audit(r, method, url, status, len);
    return ret;
}

/* A one-line text answer: "what is wrong and what to do". */
static enum MHD_Result text(struct MHD_Connection *c, struct req *r, const char *method,
                            const char *url, unsigned status, const char *const *headers,
                            const char *fmt, ...) FK_PRINTF(7, 8);
static enum MHD_Result text(struct MHD_Connection *c, struct req *r, const char *method,
                            const char *url, unsigned status, const char *const *headers,
                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = fk_vasprintf(fmt, ap);
    va_end(ap);
    char *line = fk_asprintf("%s\n", s);
    if (status >= 400)  /* the log says why as the client was told */
        snprintf(r->why, sizeof r->why, "%s", s);
    free(s);
    return respond(c, r, method, url, status, "text/plain; charset=utf-8", line, strlen(line), true,
                   headers);
}

/* Request budget per key (struct bucket): rate per minute, refilled
 * smoothly. Returns 0, or the seconds to wait. */
static unsigned spend(struct server *s, const char *key, double cost)
{
    uint64_t now = fk_now_ns();
    double rate = (double)s->o->rate / 60e9;    /* per ns */
    pthread_mutex_lock(&s->lock);
    struct bucket *b = NULL, *oldest = &s->buckets[0];
    for (int i = 0; i < BUCKETS && !b; i++) {
        if (!strcmp(s->buckets[i].key, key))
            b = &s->buckets[i];
        else if (s->buckets[i].last_ns < oldest->last_ns)
            oldest = &s->buckets[i];
    }
    if (!b) {
        b = oldest;
        snprintf(b->key, sizeof b->key, "%s", key);
        b->tokens = (double)s->o->rate;
        b->last_ns = now;
    }
    b->tokens += (double)(now - b->last_ns) * rate;
    if (b->tokens > (double)s->o->rate)
        b->tokens = (double)s->o->rate;
    b->last_ns = now;
    unsigned wait = 0;
    if (b->tokens >= 1)
        b->tokens -= cost;
    else
        wait = (unsigned)((1 - b->tokens) / rate / 1e9) + 1;
    pthread_mutex_unlock(&s->lock);
    return wait;
}

/* The value of field name in an application/x-www-form-urlencoded body. */
static char *form_value(const char *body, size_t len, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && body[e] != '&')
            e++;
        if (e - i > nl && !memcmp(body + i, name, nl) && body[i + nl] == '=') {
            char *v = fk_malloc(e - i);
            size_t k = 0;
            for (size_t j = i + nl + 1; j < e; j++) {
                if (body[j] == '+')
                    v[k++] = ' ';
                else if (body[j] == '%' && j + 2 < e && fk_hexval(body[j + 1]) >= 0 && fk_hexval(body[j + 2]) >= 0) {
                    v[k++] = (char)(fk_hexval(body[j + 1]) * 16 + fk_hexval(body[j + 2]));
                    j += 2;
                } else
                    v[k++] = body[j];
            }
            v[k] = 0;
            return v;
        }
        i = e + 1;
    }
    return NULL;
}

/* ---- authentication ------------------------------------------------------ */

static const char *cookie_name = "fk_session";

/* Who is asking, or NULL. Cookies count only from our own pages: browsers
 * send SameSite=Strict cookies only same-site, and Sec-Fetch-Site (when
 * the browser sends it) must not say cross-site. */
static bool authenticate(struct server *s, struct MHD_Connection *c, struct req *r,
                         const char **why)
{
    *why = s->tokens.n ? "no token" : "no client certificate";
    if (s->ca) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        char cn[96];
        const char *cwhy;
        if (ci && fk_cert_check(ci->tls_session, cn, sizeof cn, &cwhy)) {
            snprintf(r->who, sizeof r->who, "cert:%s", cn);
            snprintf(r->id, sizeof r->id, "cert:%s", cn);
            return true;
        }
        *why = cwhy;
    }
    if (!s->tokens.n)
        return false;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h && !strncasecmp(h, "Bearer ", 7)) {
        const char *name = fk_tokens_check(&s->tokens, h + 7, strlen(h + 7));
        if (name) {
            snprintf(r->who, sizeof r->who, "token:%s", name);
            snprintf(r->id, sizeof r->id, "token:%s", name);
            return true;
        }
        *why = "wrong token";
        return false;
    }
    const char *ck = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, cookie_name);
    if (ck) {
        const char *site = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
        if (site && strcmp(site, "same-origin") && strcmp(site, "none")) {
            *why = "cookie sent from another site";
            return false;
        }
        pthread_mutex_lock(&s->lock);
        const char *name = fk_session_check(&s->sessions, ck, strlen(ck), fk_now_ns());
        pthread_mutex_unlock(&s->lock);
        if (name) {
            snprintf(r->who, sizeof r->who, "cookie:%s", name);
            snprintf(r->id, sizeof r->id, "token:%s", name);
            return true;
        }
        *why = "unknown or expired sign-in (sign in again)";
    }
    return false;
}

static const char login_page[] =
    "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>flamekit: sign in</title>"
    "<meta name=\"viewport\" content=\"width=device-width\"></head><body style=\"font:16px "
    "sans-serif;margin:3em\"><h1>flamekit</h1><p>Flame graphs of this host, on demand. "
    "Sign in with your access token.</p><form method=\"post\" action=\"/login\">"
    "<input type=\"password\" name=\"token\" id=\"token\" size=\"40\" autocomplete=\"off\" "
    "autofocus> <button type=\"submit\" id=\"signin\">Sign in</button></form></body></html>\n";

static const char *const html_headers[] = {
    "Content-Security-Policy",
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    NULL,
};

/* ---- captures ------------------------------------------------------------ */

enum fmt { F_SVG, F_FOLDED, F_PPROF, F_JSON };

static bool parse_seconds(const char *v, uint64_t *out)
{
    uint64_t n;
    if (!v || !fk_parse_u64(v, &n) || n == 0 || n > 86400)
        return false;
    *out = n;
    return true;
}

/* Run one capture and answer with the file of the format asked for. */
static enum MHD_Result capture(struct server *s, struct MHD_Connection *c, struct req *r,
                               const char *url, enum fk_profile_kind kind, enum fk_target_kind tk,
                               const char *targ, uint64_t secs, enum fmt f, bool go_style)
{
    if (pthread_mutex_trylock(&s->capture) != 0) {
        pthread_mutex_lock(&s->lock);
        uint64_t now = fk_now_ns(), end = s->capture_end_ns;
        pthread_mutex_unlock(&s->lock);
        char ra[32];
        snprintf(ra, sizeof ra, "%llu", (unsigned long long)(end > now ? (end - now) / 1000000000u + 2 : 2));
        const char *h[] = { "Retry-After", ra, NULL };
        return text(c, r, "GET", url, 429, h,
                    "another capture is running (one at a time); retry in %s s", ra);
    }
    pthread_mutex_lock(&s->lock);
    s->capture_end_ns = fk_now_ns() + secs * 1000000000ull;
    pthread_mutex_unlock(&s->lock);

    static const enum fk_result_kind kinds[] = { FK_RESULT_SVG, FK_RESULT_FOLDED,
                                                 FK_RESULT_PPROF, FK_RESULT_JSON };
    struct fk_profile_request rq;
    fk_profile_request_init(&rq);
    rq.kind = kind;
    rq.target = tk;
    rq.target_arg = targ;
    rq.duration_ms = secs * 1000;
    if (kind == FK_PROFILE_CPU)
        rq.freq = s->o->freq;
    rq.outputs = FK_OUTPUT(kinds[f]) | FK_OUTPUT(FK_RESULT_JSON);
    rq.temp_dir = true;
    rq.quiet = true;
    rq.warn = log_warning;      /* what the symbolizer skipped, into the log */
    rq.warn_ctx = s;
    rq.command = "serve";
    char *argv[] = { (char *)"serve", (char *)url, NULL };
    rq.argc = 2;
    rq.argv = argv;
    rq.stop = s->o->stop;
    char err[256];
    enum MHD_Result ret;
    if (fk_profile_check(&rq, err, sizeof err)) {
        pthread_mutex_unlock(&s->capture);
        return text(c, r, "GET", url, 400, NULL, "%s", err);
    }
    struct fk_profile_result res;
    fk_profile_run(&rq, &res);
    const char *path = res.files[kinds[f]];
    if (res.status != 0 || !path) {
        /* The library's own reason: a target that does not exist is the
         * client's mistake (404), anything else the server's (500). */
        if (res.error[0])
            ret = text(c, r, "GET", url, res.bad_target ? 404 : 500, NULL, "%s", res.error);
        else
            ret = text(c, r, "GET", url, 500, NULL,
                       "the capture failed (status %d); the server's log says why", res.status);
    } else {
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        char *body = NULL;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size <= MAX_RESULT) {
            body = fk_malloc((size_t)st.st_size + 1);
            if (read(fd, body, (size_t)st.st_size) != st.st_size) {
                free(body);
                body = NULL;
            }
        }
        if (fd >= 0)
            close(fd);
        if (!body) {
            ret = text(c, r, "GET", url, 500, NULL, "cannot read the result");
        } else {
            static const char *const types[] = {
                "image/svg+xml", "text/plain; charset=utf-8", "application/octet-stream",
                "application/json",
            };
            const char *base = strrchr(path, '/') + 1;
            char *disp = fk_asprintf("attachment; filename=\"%s\"", go_style ? "profile" : base);
            const char *h[] = { "Content-Disposition", disp, NULL };
            /* folded: the file is gzip; serve it as such */
            const char *h2[] = { "Content-Disposition", disp, "Content-Encoding", "gzip", NULL };
            ret = respond(c, r, "GET", url, 200, types[f], body, (size_t)st.st_size, true,
                          f == F_FOLDED ? h2 : h);
            free(disp);
        }
    }
    fk_profile_result_free(&res);
    pthread_mutex_unlock(&s->capture);
    return ret;
}

static enum MHD_Result route_profile(struct server *s, struct MHD_Connection *c, struct req *r,
                                     const char *url, bool go_style)
{
    const char *sv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds");
    uint64_t secs = go_style ? s->o->default_seconds : 10;
    if (secs > s->o->max_seconds)
        secs = s->o->max_seconds;
    if (sv && !parse_seconds(sv, &secs))
        return text(c, r, "GET", url, 400, NULL, "seconds=%s: want a whole number of seconds", sv);
    if (secs > s->o->max_seconds)
        return text(c, r, "GET", url, 400, NULL,
                    "profile duration %llu s exceeds this server's limit of %llu s",
                    (unsigned long long)secs, (unsigned long long)s->o->max_seconds);
    enum fk_profile_kind kind = FK_PROFILE_CPU;
    enum fk_target_kind tk = FK_TARGET_HOST;
    const char *targ = NULL;
    enum fmt f = F_PPROF;
    if (!go_style) {
        const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "target");
        const char *k = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "kind");
        const char *fm = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
        if (!t || !strcmp(t, "host"))
            tk = FK_TARGET_HOST;
        else if (!strncmp(t, "pid:", 4) && t[4])
            tk = FK_TARGET_PID, targ = t + 4;
        else if (!strncmp(t, "user:", 5) && t[5])
            tk = FK_TARGET_USER, targ = t + 5;
        else if (!strncmp(t, "cgroup:", 7) && t[7])
            tk = FK_TARGET_CGROUP, targ = t + 7;
        else
            return text(c, r, "GET", url, 400, NULL,
                        "target=%s: want host, pid:PID, user:NAME or cgroup:PATH", t);
        if (!k || !strcmp(k, "cpu"))
            kind = FK_PROFILE_CPU;
        else if (!strcmp(k, "faults"))
            kind = FK_PROFILE_FAULTS;
        else if (!strcmp(k, "offcpu"))
            kind = FK_PROFILE_OFFCPU;
        else
            return text(c, r, "GET", url, 400, NULL, "kind=%s: want cpu, faults or offcpu", k);
        static const char *const fmts[] = { "svg", "folded", "pprof", "json" };
        f = F_SVG;
        if (fm) {
            int i = 0;
            while (i < 4 && strcmp(fm, fmts[i]))
                i++;
            if (i == 4)
                return text(c, r, "GET", url, 400, NULL,
                            "format=%s: want svg, folded, pprof or json", fm);
            f = (enum fmt)i;
        }
        char tv[101];
        snprintf(r->what, sizeof r->what, "target=%s kind=%s seconds=%llu format=%s",
                 log_field(tv, sizeof tv, t ? t : "host"), fk_profile_ops(kind)->name,
                 (unsigned long long)secs, fmts[f]);
    } else {
        snprintf(r->what, sizeof r->what, "target=host kind=cpu seconds=%llu format=pprof",
                 (unsigned long long)secs);
    }
    return capture(s, c, r, url, kind, tk, targ, secs, f, go_style);
}

/* ---- connections: deadline and reserve (CONN_LIMIT) ----------------------- */

static void client_ip(struct MHD_Connection *c, char *ip, size_t n)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, (socklen_t)n);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, (socklen_t)n);
    else
        snprintf(ip, n, "?");
}

/* Close a connection still sending its request (s->lock held). shutdown()
 * wakes its thread, which ends it; libmicrohttpd closes the socket only
 * after conn_notify(CLOSED), which waits for the lock: the fd is still
 * this connection's here. */
static void conn_cut(struct server *s, struct conn *k, const char *why)
{
    if (k->closing || !k->pending)
        return;
    k->closing = true;
    s->npending--;
    if (k->fd >= 0)
        shutdown(k->fd, SHUT_RDWR);
    char ts[32];
    log_time(ts, sizeof ts);
    log_line(s->o, "audit %s client=%s closed: %s", ts, k->ip, why);
}

static void conn_notify(void *cls, struct MHD_Connection *c, void **ctx,
                        enum MHD_ConnectionNotificationCode code)
{
    struct server *s = cls;
    struct conn *k = *ctx;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        k = fk_calloc(1, sizeof *k);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        k->fd = ci ? ci->connect_fd : -1;
        k->t0 = fk_now_ns();
        k->pending = true;
        client_ip(c, k->ip, sizeof k->ip);
        pthread_mutex_lock(&s->lock);
        k->prev = s->conns.prev;
        k->next = &s->conns;
        s->conns.prev->next = k;
        s->conns.prev = k;
        s->npending++;
        for (struct conn *o = s->conns.next; o != &s->conns && s->npending > CONN_LIMIT - CONN_RESERVE;
             o = o->next)
            conn_cut(s, o, "the oldest of too many requests still arriving (slots kept free)");
        pthread_mutex_unlock(&s->lock);
        *ctx = k;
    } else if (k) {
        pthread_mutex_lock(&s->lock);
        k->prev->next = k->next;
        k->next->prev = k->prev;
        if (k->pending && !k->closing)
            s->npending--;
        pthread_mutex_unlock(&s->lock);
        free(k);
        *ctx = NULL;
    }
}

/* The request arrived whole: from now on it runs its course. */
static void conn_arrived(struct server *s, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn *k = ci ? ci->socket_context : NULL;
    pthread_mutex_lock(&s->lock);
    if (k && k->pending && !k->closing) {
        k->pending = false;
        s->npending--;
    }
    pthread_mutex_unlock(&s->lock);
}

/* Every connection whose request has not arrived whole within --timeout
 * seconds of its accept is closed (slow headers, slow bodies, stalled
 * TLS handshakes alike). */
static void conn_deadlines(struct server *s)
{
    uint64_t now = fk_now_ns(), limit = s->o->timeout_s * 1000000000ull;
    char why[96];
    snprintf(why, sizeof why, "request not complete within %llu s of connecting (--timeout)",
             (unsigned long long)s->o->timeout_s);
    pthread_mutex_lock(&s->lock);
    for (struct conn *k = s->conns.next; k != &s->conns; k = k->next)
        if (now - k->t0 > limit)
            conn_cut(s, k, why);
    pthread_mutex_unlock(&s->lock);
}

/* ---- the request handler -------------------------------------------------- */

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    (void)version;
    struct server *s = cls;
    struct req *r = *con_cls;
    if (!r) {
        r = fk_calloc(1, sizeof *r);
        r->o = s->o;
        r->t0 = fk_now_ns();
        client_ip(c, r->ip, sizeof r->ip);
        r->post = !strcmp(method, "POST");
        *con_cls = r;
        if (r->post)
            return MHD_YES;     /* the body follows */
    }
    if (r->post && *upload_size) {
        if (r->body.len + *upload_size <= MAX_BODY)
            fk_buf_add(&r->body, upload, *upload_size);
        else
            r->body.len = MAX_BODY + 1;
        *upload_size = 0;
        return MHD_YES;
    }
    conn_arrived(s, c);
    /* who is asking first (a digest compare): an authenticated request
     * spends its identity's budget, never its address's, so others on the
     * same address (a shared host, an ssh -L tunnel) cannot spend it */
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    const char *why = NULL;
    bool authed = get && strcmp(url, "/login") && strcmp(url, "/favicon.ico") &&
                  authenticate(s, c, r, &why);
    const char *key = authed ? r->id : r->ip;
    unsigned wait = spend(s, key, 1);
    if (wait) {
        char ra[16];
        snprintf(ra, sizeof ra, "%u", wait);
        const char *h[] = { "Retry-After", ra, NULL };
        return text(c, r, method, url, 429, h, "too many requests from %s; retry in %u s",
                    authed ? r->who : r->ip, wait);
    }
    if (!strcmp(url, "/login")) {
        if (!r->post)
            return text(c, r, method, url, 405, NULL, "POST the token form of / here");
        /* a login form posted from another site is refused */
        const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        const char *slash = origin ? strstr(origin, "//") : NULL;
        if (origin && (!host || !slash || strcmp(slash + 2, host)))
            return text(c, r, method, url, 403, NULL, "login from another site refused");
        char *tok = r->body.len <= MAX_BODY ? form_value(r->body.data, r->body.len, "token") : NULL;
        const char *name = tok && s->tokens.n ? fk_tokens_check(&s->tokens, tok, strlen(tok)) : NULL;
        enum MHD_Result ret;
        if (!name) {
            spend(s, r->ip, AUTH_FAIL_COST);
            snprintf(r->who, sizeof r->who, "-");
            ret = respond(c, r, method, url, 401, "text/html; charset=utf-8", (void *)login_page,
                          sizeof login_page - 1, false, html_headers);
        } else {
            snprintf(r->who, sizeof r->who, "login:%s", name);
            /* the cookie holds a random session id, never the token;
             * HttpOnly keeps scripts away from it */
            char sid[65];
            pthread_mutex_lock(&s->lock);
            bool made = fk_session_new(&s->sessions, name, fk_now_ns(), sid);
            pthread_mutex_unlock(&s->lock);
            char *ck = fk_asprintf("%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d%s",
                                   cookie_name, sid, FK_AUTH_SESSION_S, s->tls ? "; Secure" : "");
            const char *h[] = { "Set-Cookie", ck, "Location", "/", NULL };
            if (made)
                ret = text(c, r, method, url, 303, h, "signed in");
            else
                ret = text(c, r, method, url, 500, NULL, "no random bytes for a session id; retry");
            explicit_bzero(sid, sizeof sid);
            free(ck);
        }
        free(tok);
        return ret;
    }
    if (!get)
        return text(c, r, method, url, 405, NULL, "only GET (and POST /login) here");
    if (!strcmp(url, "/favicon.ico"))     /* browsers ask; not worth a 401 */
        return text(c, r, method, url, 404, NULL, "no icon");
    if (!authed) {
        if (!strcmp(url, "/") && s->tokens.n)
            return respond(c, r, method, url, 200, "text/html; charset=utf-8", (void *)login_page,
                           sizeof login_page - 1, false, html_headers);
        spend(s, r->ip, AUTH_FAIL_COST);
        const char *h[] = { "WWW-Authenticate", "Bearer realm=\"flamekit\"", NULL };
        return text(c, r, method, url, 401, s->tokens.n ? h : NULL,
                    "authentication required (%s): %s", why,
                    s->tokens.n ? "send 'Authorization: Bearer TOKEN' or sign in at /"
                                : "present a client certificate of the client CA");
    }
    if (!strcmp(url, "/"))
        return respond(c, r, method, url, 200, "text/html; charset=utf-8", s->page,
                       strlen(s->page), false, html_headers);
    if (!strcmp(url, "/debug/pprof/profile"))
        return route_profile(s, c, r, url, true);
    if (!strcmp(url, "/profile"))
        return route_profile(s, c, r, url, false);
    return text(c, r, method, url, 404, NULL, "no such page: try /, /profile or /debug/pprof/profile");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    struct req *r = *con_cls;
    if (r) {
        fk_buf_free(&r->body);
        free(r);
    }
    *con_cls = NULL;
}

/* ---- start-up ------------------------------------------------------------ */

static bool parse_listen(const char *s, struct sockaddr_in *sa)
{
    const char *colon = strrchr(s, ':');
    uint64_t port;
    if (!colon || !fk_parse_u64(colon + 1, &port) || port > 65535)
        return false;
    char host[64];
    if ((size_t)(colon - s) >= sizeof host)
        return false;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost"))
        strcpy(host, "127.0.0.1");
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1;
}

static char *make_page(const struct fk_serve_opts *o)
{
    struct fk_buf b = FK_BUF_INIT;
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)o->max_seconds);
    const char *p = fk_serve_page, *end = fk_serve_page + fk_serve_page_len;
    for (const char *m; (m = strstr(p, "@MAXSECONDS@")) && m < end; p = m + 12) {
        fk_buf_add(&b, p, (size_t)(m - p));
        fk_buf_adds(&b, num);
    }
    fk_buf_add(&b, p, (size_t)(end - p));
    return (char *)fk_buf_cstr(&b);
}

int fk_serve_run(const struct fk_serve_opts *o, char *err, size_t errlen)
{
    if (errlen)
        err[0] = 0;
    struct sockaddr_in sa;
    if (!parse_listen(o->listen, &sa)) {
        snprintf(err, errlen, "--listen %s: want IPV4ADDR:PORT, e.g. 127.0.0.1:8089 or "
                 "0.0.0.0:8443", o->listen);
        return FK_EXIT_USAGE;
    }
    bool loopback = (ntohl(sa.sin_addr.s_addr) >> 24) == 127;
    bool tls = o->tls_cert || o->tls_key;
    if (tls && !(o->tls_cert && o->tls_key)) {
        snprintf(err, errlen, "TLS needs both --tls-cert and --tls-key");
        return FK_EXIT_USAGE;
    }
    if (o->client_ca && !tls) {
        snprintf(err, errlen, "--client-ca needs TLS: give --tls-cert and --tls-key too");
        return FK_EXIT_USAGE;
    }
    if (!o->token_file && !o->client_ca) {
        snprintf(err, errlen, "refusing to serve profiles to anyone: give --token-file FILE, or "
                 "--client-ca CA.pem with --tls-cert and --tls-key");
        return FK_EXIT_USAGE;
    }
    if (!loopback && !tls && !o->allow_remote_plain) {
        snprintf(err, errlen, "refusing to listen on %s without TLS (tokens would cross the "
                 "network in clear): give --tls-cert and --tls-key, or listen on 127.0.0.1",
                 o->listen);
        return FK_EXIT_USAGE;
    }
    if (o->max_seconds < 1 || o->max_seconds > FK_PROFILE_MAX_DURATION_MS / 1000) {
        snprintf(err, errlen, "--max-seconds must be from 1 to %llu",
                 (unsigned long long)(FK_PROFILE_MAX_DURATION_MS / 1000));
        return FK_EXIT_USAGE;
    }
    struct server s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.tls = tls;
    s.ca = o->client_ca != NULL;
    int rc = FK_EXIT_ERROR;
    struct MHD_Daemon *d = NULL;
    if (!fk_mhd_load(err, errlen))
        goto out;
    if (o->token_file && !fk_tokens_load(&s.tokens, o->token_file, err, errlen))
        goto out;
    if (tls && (!(s.cert = read_file(o->tls_cert, "certificate", err, errlen)) ||
                !(s.key = read_file(o->tls_key, "key", err, errlen))))
        goto out;
    if (s.ca && !(s.capem = read_file(o->client_ca, "client CA", err, errlen)))
        goto out;
    pthread_mutex_init(&s.capture, NULL);
    pthread_mutex_init(&s.lock, NULL);
    s.page = make_page(o);
    s.conns.prev = s.conns.next = &s.conns;

    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0);
    struct MHD_OptionItem opts[] = {
        /* first, so that libmicrohttpd reports nothing on stderr itself */
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)log_mhd, &s },
        { MHD_OPTION_SOCK_ADDR, 0, &sa },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)o->timeout_s, NULL },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)conn_notify, &s },
        { MHD_OPTION_CONNECTION_LIMIT, CONN_LIMIT, NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, CONN_PER_IP, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, 64 * 1024, NULL },
        { tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s.cert },
        { MHD_OPTION_HTTPS_MEM_KEY, 0, s.key },
        { s.ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, s.capem },
        { MHD_OPTION_END, 0, NULL },
    };
    d = MHD_start_daemon(flags, 0, NULL, NULL, handler, &s, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!d) {
        snprintf(err, errlen, "cannot listen on %s (%s): address in use, a bad certificate or "
                 "key, or not permitted", o->listen, strerror(errno));
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char addr[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof addr);
    log_line(o, "listening on %s://%s:%u/ (%s%s%s; captures up to %llu s, one at a time)",
         tls ? "https" : "http", addr, di ? di->port : ntohs(sa.sin_port),
         o->token_file ? "tokens" : "", o->token_file && s.ca ? " or " : "",
         s.ca ? "client certificates" : "", (unsigned long long)o->max_seconds);
    while (!*o->stop) {
        usleep(100000);
        conn_deadlines(&s);
    }
    log_line(o, "stopping");
    rc = FK_EXIT_OK;
out:
    if (d)
        MHD_stop_daemon(d);
    fk_tokens_free(&s.tokens);
    free(s.cert);
    free(s.key);
    free(s.capem);
    free(s.page);
    return rc;
}
