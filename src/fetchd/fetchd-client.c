/* SPDX-License-Identifier: GPL-2.0-only */
/* fetchd-client: one git fetch against fetchd-grpc or fetchd-sock: get the
 * advertisement, ask for all (or the named) refs, demultiplex the
 * side-band-64k response and write the pack. */
#include "fetchd/fetchd.h"
#include "util/opt.h"
#include "util/outfile.h"
#include "cmd/term.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct client_opts {
    const char *addr, *output, *refs_out, *body_file, *raw_file;
    enum fetchd_transport tr;
    struct fk_strv refs;
    bool adv_only, quiet;
    uint64_t stop_after, hold_after, read_delay;
};

#define CL(field) offsetof(struct client_opts, field)

static bool set_grpc(void *base, const char *val, char *err, size_t n)
{
    (void)err, (void)n;
    struct client_opts *o = base;
    o->addr = val;
    o->tr = FETCHD_GRPC;
    return true;
}

static bool set_sock(void *base, const char *val, char *err, size_t n)
{
    (void)err, (void)n;
    struct client_opts *o = base;
    o->addr = val;
    o->tr = FETCHD_SOCK;
    return true;
}

static const struct fk_opt client_optset[] = {
    { "grpc", 'g', FK_OPT_CALL, 0, "HOST:PORT", "talk to fetchd-grpc", "127.0.0.1:9418", .call = set_grpc },
    { "sock", 's', FK_OPT_CALL, 0, "HOST:PORT", "talk to fetchd-sock", "127.0.0.1:9419", .call = set_sock },
    { "output", 'o', FK_OPT_STR, CL(output), "FILE", "write the pack here (\"-\": stdout)", "pack" },
    { "ref", 'r', FK_OPT_LIST, CL(refs), "REF", "want REF (repeatable; default: all refs)", "main" },
    { "refs-out", 'R', FK_OPT_STR, CL(refs_out), "FILE", "write \"OID NAME\" of the wanted refs", "refs" },
    { "advertise-only", 'a', FK_OPT_FLAG, CL(adv_only), NULL, "print the advertised refs and stop" },
    { "body", 'b', FK_OPT_STR, CL(body_file), "FILE", "send FILE as the upload-pack request (testing)", "req" },
    { "raw", 0, FK_OPT_STR, CL(raw_file), "FILE", "also write the raw response to FILE", "raw" },
    { "stop-after", 0, FK_OPT_SIZE, CL(stop_after), "BYTES", "hang up after BYTES of response (testing)",
      "64K", .min = 1 },
    { "hold-after", 0, FK_OPT_SIZE, CL(hold_after), "BYTES",
      "stop reading after BYTES of the pack but keep the connection open (testing: a client that stalls; gRPC: a 64K window)",
      "64K", .min = 1 },
    { "read-delay", 0, FK_OPT_DURATION, CL(read_delay), "DURATION",
      "sleep before taking each piece of the pack (testing: a slow reader; gRPC: a 64K window)", "2s" },
    { "quiet", 'q', FK_OPT_FLAG, CL(quiet), NULL, "no summary line" },
    { "version", 'V', FK_OPT_VERSION, 0, NULL, "print the version" },
    { NULL },
};

static const struct fk_cmdline cmdline = {
    "fetchd-client (--grpc|--sock) HOST:PORT [OPTIONS] REPO",
    "Fetch REPO's refs from fetchd-grpc or fetchd-sock and write the pack.",
    "See fetchd-client(1).",
    NULL,
};

struct sinkst {
    struct fetchd_demux dm;
    struct fk_buf adv;
    struct fk_outfile *pack, *raw;
    uint64_t total, stop_after, hold_after, read_delay;
    bool is_adv;
};

static bool pack_sink(void *arg, const void *data, size_t len)
{
    return fk_outfile_write(arg, data, len);
}

static bool resp_sink(void *arg, const void *data, size_t len)
{
    struct sinkst *s = arg;
    s->total += len;
    if (s->stop_after && s->total >= s->stop_after)
        return false;
    if (s->hold_after && s->total >= s->hold_after) {
        fk_warn("holding the connection after %llu bytes, not reading", (unsigned long long)s->total);
        for (;;)
            pause();    /* until killed */
    }
    if (s->read_delay) {
        struct timespec ts = { (time_t)(s->read_delay / 1000), (long)(s->read_delay % 1000) * 1000000 };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    if (s->raw && !fk_outfile_write(s->raw, data, len))
        return false;
    if (s->is_adv) {
        fk_buf_add(&s->adv, data, len);
        return true;
    }
    return fetchd_demux_feed(&s->dm, data, len);
}

int main(int argc, char **argv)
{
    fk_progname = "fetchd-client";
    struct client_opts co = { .tr = FETCHD_SOCK };
    const struct fk_optsec secs[] = { { "Options", client_optset, &co }, { NULL } };
    struct fk_args args;
    int prc = fk_opt_parse(&cmdline, secs, argc, argv, &args);
    if (prc == FK_OPT_CONTINUE && !co.addr)
        prc = fk_opt_error("say which server: --grpc HOST:PORT or --sock HOST:PORT");
    if (prc == FK_OPT_CONTINUE && args.n != 1)
        prc = fk_opt_error(args.n == 0 ? "missing REPO" : "more than one REPO");
    if (prc == FK_OPT_CONTINUE && !co.adv_only && !co.output)
        prc = fk_opt_error("missing --output FILE for the pack");
    if (prc != FK_OPT_CONTINUE) {
        fk_strv_free(&co.refs);
        fk_args_free(&args);
        return prc;
    }
    const char *addr = co.addr, *output = co.output, *refs_out = co.refs_out;
    const char *body_file = co.body_file, *raw_file = co.raw_file;
    enum fetchd_transport tr = co.tr;
    char **names = (char **)co.refs.v;
    size_t nnames = co.refs.n;
    bool adv_only = co.adv_only, quiet = co.quiet;
    uint64_t stop_after = co.stop_after;
    const char *repo = args.v[0];
    char err[512];
    fetchd_client_window = co.hold_after || co.read_delay ? 64 << 10 : 0;    /* a client that stalls the server */
    struct fetchd_client *c = fetchd_client_new(tr, addr, err, sizeof err);
    if (!c)
        fk_die("%s", err);
    struct sinkst s;
    memset(&s, 0, sizeof s);
    struct fk_buf req = FK_BUF_INIT;
    struct fetchd_refs refs = { 0 };
    int rc = 1;
    if (!body_file || adv_only) {
        s.is_adv = true;
        if (!fetchd_client_call(c, FETCHD_OP_ADVERTISE, repo, "", 0, resp_sink, &s, err, sizeof err))
            fk_die("advertisement of %s: %s", repo, err);
        if (!fetchd_parse_advertisement(s.adv.data ? s.adv.data : "", s.adv.len, &refs, err, sizeof err))
            fk_die("advertisement of %s: %s", repo, err);
        if (adv_only) {
            for (size_t i = 0; i < refs.n; i++)
                printf("%s %s\n", refs.v[i].oid, refs.v[i].name);
            rc = 0;
            goto done;
        }
        if (!fetchd_build_request(&refs, names, nnames, &req, err, sizeof err))
            fk_die("%s", err);
    } else {
        int fd = open(body_file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            fk_die("cannot open --body %s: %s", body_file, strerror(errno));
        char b[65536];
        ssize_t n;
        while ((n = read(fd, b, sizeof b)) > 0)
            fk_buf_add(&req, b, (size_t)n);
        close(fd);
    }
    if (refs_out) {
        struct fk_outfile ro;
        if (!fk_outfile_open(&ro, refs_out, 0644, err, sizeof err)) {
            fk_error("%s", err);
            goto done;
        }
        for (size_t i = 0; i < refs.n; i++) {
            bool want = nnames == 0;
            for (size_t j = 0; j < nnames && !want; j++) {
                size_t rl = strlen(refs.v[i].name), ql = strlen(names[j]);
                want = strcmp(refs.v[i].name, names[j]) == 0 ||
                       (rl > ql && refs.v[i].name[rl - ql - 1] == '/' && strcmp(refs.v[i].name + rl - ql, names[j]) == 0);
            }
            if (want)
                fk_outfile_printf(&ro, "%s %s\n", refs.v[i].oid, refs.v[i].name);
        }
        if (!fk_outfile_commit(&ro, err, sizeof err)) {
            fk_error("%s", err);
            goto done;
        }
    }
    struct fk_outfile pack, raw;
    if (!fk_outfile_open(&pack, output, 0644, err, sizeof err)) {
        fk_error("%s", err);
        goto done;
    }
    if (raw_file && !fk_outfile_open(&raw, raw_file, 0644, err, sizeof err)) {
        fk_error("%s", err);
        fk_outfile_abort(&pack);
        goto done;
    }
    s.is_adv = false;
    s.total = 0;
    s.stop_after = stop_after;
    s.hold_after = co.hold_after;
    s.read_delay = co.read_delay;
    s.raw = raw_file ? &raw : NULL;
    fetchd_demux_init(&s.dm, pack_sink, &pack);
    bool ok = fetchd_client_call(c, FETCHD_OP_UPLOAD_PACK, repo, req.data ? req.data : "", req.len, resp_sink, &s, err, sizeof err);
    if (ok && !s.dm.done)
        snprintf(err, sizeof err, "response truncated (no final flush)"), ok = false;
    if (ok && s.dm.pack_bytes == 0)
        snprintf(err, sizeof err, "response carried no pack"), ok = false;
    if (!ok) {
        fk_outfile_abort(&pack);
        if (raw_file)
            fk_outfile_abort(&raw);
        if (stop_after && s.total >= stop_after) {
            if (!quiet)
                fk_warn("hung up after %llu bytes as asked", (unsigned long long)s.total);
            rc = 3;
            goto done;
        }
        fk_die("fetch of %s: %s", repo, s.dm.failed ? s.dm.err : err);
    }
    if (!fk_outfile_commit(&pack, err, sizeof err) ||
        (raw_file && !fk_outfile_commit(&raw, err, sizeof err))) {
        fk_error("%s", err);
        goto done;
    }
    if (!quiet)
        fprintf(stderr, "fetchd-client: %s: %zu refs, pack %llu bytes, response %llu bytes\n", repo,
                nnames ? nnames : refs.n, (unsigned long long)s.dm.pack_bytes, (unsigned long long)s.total);
    rc = 0;
done:
    fetchd_refs_free(&refs);
    fk_buf_free(&req);
    fk_buf_free(&s.adv);
    fk_strv_free(&co.refs);
    fk_args_free(&args);
    fetchd_client_free(c);
    return rc;
}
