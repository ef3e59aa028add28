/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit serve: profiles on demand over HTTP(S) (src/lib/serve). */
#include "commands.h"
#include "serve/serve.h"
#include "util/opt.h"
#include "util/stopsig.h"
#include "term.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SO(field) offsetof(struct fk_serve_opts, field)

static const struct fk_opt serve_opts[] = {
    { "listen", 'l', FK_OPT_STR, SO(listen), "ADDR:PORT",
      "where to listen (default 127.0.0.1:8089; port 0: any free one, printed);\n"
      "beyond loopback only with TLS", "127.0.0.1:8089" },
    { "token-file", 't', FK_OPT_STR, SO(token_file), "FILE",
      "NAME:TOKEN lines, mode 0600: bearer tokens (and the page's sign-in)", "/etc/flamekit/tokens" },
    { "tls-cert", 0, FK_OPT_STR, SO(tls_cert), "FILE", "TLS: the server certificate (PEM)", "cert.pem" },
    { "tls-key", 0, FK_OPT_STR, SO(tls_key), "FILE", "TLS: its private key (PEM)", "key.pem" },
    { "client-ca", 0, FK_OPT_STR, SO(client_ca), "FILE",
      "mutual TLS: accept client certificates signed by this CA (PEM)", "ca.pem" },
    { "max-seconds", 0, FK_OPT_UINT, SO(max_seconds), "N",
      "longest capture a request may ask for (default 60, at most 300);\nlonger: 400",
      "60", .min = 1, .max = 300 },
    { "rate", 0, FK_OPT_UINT, SO(rate), "N",
      "requests per minute per client address (default 30)", "30", .min = 1, .max = 100000 },
    { "timeout", 0, FK_OPT_UINT, SO(timeout_s), "SECONDS",
      "drop connections idle this long, or whose request has not arrived\n"
      "whole this long after connecting (default 15)", "15", .min = 1, .max = 3600 },
    { NULL },
};

/* The server's log (fk_serve_opts.log) on stderr, for journald: one
 * write per line (stderr is unbuffered), so lines from connection threads
 * never mix. */
static void log_stderr(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s: %s\n", fk_progname, line);
}

int cmd_serve(int argc, char **argv)
{
    struct fk_serve_opts o;
    fk_serve_opts_init(&o);
    static const struct fk_cmdline cl = {
        .usage = "flamekit serve [--listen ADDR:PORT] --token-file FILE\n"
                 "flamekit serve --listen ADDR:PORT --tls-cert F --tls-key F (--client-ca F | --token-file FILE)",
        .about = "Serve flame graphs on demand: GET / (a page: pick, click, download),\n"
                 "GET /profile?target=host|pid:N|user:NAME|cgroup:PATH&seconds=N&kind=cpu|faults|offcpu\n"
                 "&format=svg|folded|pprof|json, and GET /debug/pprof/profile?seconds=N (Go's:\n"
                 "go tool pprof, Parca, Pyroscope). One capture at a time.",
        .footer = "Every request is authenticated (token or client certificate) and logged\n"
                  "on stderr. See flamekit-serve(1).",
    };
    const struct fk_optsec secs[] = { { "Options", serve_opts, &o }, { NULL } };
    struct fk_args a;
    int rc = fk_opt_parse(&cl, secs, argc, argv, &a);
    if (rc == FK_OPT_CONTINUE && a.n)
        rc = fk_opt_error("unexpected argument '%s'", a.v[0]);
    fk_args_free(&a);
    if (rc != FK_OPT_CONTINUE)
        return rc;
    if (!fk_stop_on_signals(FK_STOP_IGNORE_SIGPIPE)) {
        fk_error("cannot set the signal handlers: %s", strerror(errno));
        return FK_EXIT_ERROR;
    }
    o.stop = &fk_stop_signal;
    o.log = log_stderr;
    char err[512];
    rc = fk_serve_run(&o, err, sizeof err);
    if (err[0])
        fk_error("%s", err);
    return rc;
}
