/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit serve: on-demand profiles over HTTP(S) for people without a
 * shell on the host and for fleet tools (go tool pprof, Parca, Pyroscope).
 * libmicrohttpd serves, TLS through GnuTLS; every capture goes through the
 * profile runner (profile.h), one at a time.
 *
 *   GET  /debug/pprof/profile?seconds=N   Go-compatible: host CPU profile, pprof
 *   GET  /profile?target=&seconds=&kind=&format=   any target, svg|folded|pprof|json
 *   GET  /                                 the page (or the token login page)
 *   POST /login                            token -> a session id in an HttpOnly SameSite=Strict cookie
 *
 * Invariants: nothing is answered before authentication (bearer token,
 * cookie from the login page, or a client certificate of the client CA);
 * a capture never runs beyond the configured cap; one capture at a time;
 * each client has a request budget; each request gets one audit line in
 * the log (flamekit serve writes it on stderr, for journald); requests that
 * change nothing but start a capture are
 * GET with credentials, never a cookie sent from another site. */
#ifndef FK_SERVE_H
#define FK_SERVE_H

#include "util/fk.h"

#include <signal.h>

struct fk_serve_opts {
    const char *listen;         /* "ADDR:PORT"; default 127.0.0.1:8089 */
    const char *token_file;
    const char *tls_cert, *tls_key, *client_ca;
    uint64_t max_seconds;       /* cap on seconds= (default 60, at most 300) */
    uint64_t default_seconds;   /* /debug/pprof/profile without seconds= (30, like Go) */
    uint64_t rate;              /* requests per minute per client (default 30) */
    uint64_t timeout_s;         /* idle connection timeout, and the deadline from accept
                                   for a whole request (default 15) */
    uint64_t freq;              /* sampling frequency (default 99) */
    bool allow_remote_plain;    /* never set from the command line: tests only */
    volatile sig_atomic_t *stop;    /* set by the caller's signal handler */
    /* The server's log, one line per call, without the program name or a
     * newline, safe for a terminal: "listening on ...", an audit line per
     * request ("audit TIME client=..."), "warning: ..." (what a capture's
     * symbolizer skipped), what libmicrohttpd reports, "stopping". Called
     * from any connection's thread (the caller serialises its writes).
     * NULL: no log. The library itself never writes to the terminal. */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
};
void fk_serve_opts_init(struct fk_serve_opts *o);

/* Check the options, load tokens and certificates, listen, serve until
 * *o->stop. Returns an exit status; on failure one line in err (empty
 * when util/dynlib said a library is missing). */
int fk_serve_run(const struct fk_serve_opts *o, char *err, size_t errlen);

#endif
