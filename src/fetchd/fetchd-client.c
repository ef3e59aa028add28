/* SPDX-License-Identifier: GPL-2.0-only */
/* fetchd-client: one git fetch against fetchd-grpc or fetchd-sock: get the
 * advertisement, ask for all (or the named) refs, demultiplex the
 * side-band-64k response and write the pack. */
#include "fetchd/fetchd.h"
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: fetchd-client (--grpc|--sock) HOST:PORT [OPTIONS] REPO\n"
            "Fetch REPO's refs from fetchd-grpc or fetchd-sock and write the pack.\n"
            "  -g, --grpc HOST:PORT     talk to fetchd-grpc\n"
            "  -s, --sock HOST:PORT     talk to fetchd-sock\n"
            "  -o, --output FILE        write the pack here (\"-\": stdout)\n"
            "  -r, --ref REF            want REF (repeatable; default: all refs)\n"
            "  -R, --refs-out FILE      write \"OID NAME\" of the wanted refs\n"
            "  -a, --advertise-only     print the advertised refs and stop\n"
            "  -b, --body FILE          send FILE as the upload-pack request (testing)\n"
            "      --raw FILE           also write the raw response to FILE\n"
            "      --stop-after BYTES   hang up after BYTES of response (testing)\n"
            "  -q, --quiet              no summary line\n"
            "  -h, --help, -V, --version\n");
}

struct sinkst {
    struct fd_demux dm;
    struct fk_buf adv;
    struct fk_outfile *pack, *raw;
    uint64_t total, stop_after;
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
    if (s->raw && !fk_outfile_write(s->raw, data, len))
        return false;
    if (s->is_adv) {
        fk_buf_add(&s->adv, data, len);
        return true;
    }
    return fd_demux_feed(&s->dm, data, len);
}

int main(int argc, char **argv)
{
    fk_progname = "fetchd-client";
    static const struct option lo[] = {
        { "grpc", required_argument, NULL, 'g' },
        { "sock", required_argument, NULL, 's' },
        { "output", required_argument, NULL, 'o' },
        { "ref", required_argument, NULL, 'r' },
        { "refs-out", required_argument, NULL, 'R' },
        { "advertise-only", no_argument, NULL, 'a' },
        { "body", required_argument, NULL, 'b' },
        { "raw", required_argument, NULL, 1 },
        { "stop-after", required_argument, NULL, 2 },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    const char *addr = NULL, *output = NULL, *refs_out = NULL, *body_file = NULL, *raw_file = NULL;
    enum fd_transport tr = FD_SOCK;
    char **names = fk_calloc((size_t)argc, sizeof *names);
    size_t nnames = 0;
    bool adv_only = false, quiet = false;
    uint64_t stop_after = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":g:s:o:r:R:ab:qhV", lo, NULL)) != -1) {
        switch (ch) {
        case 'g': addr = optarg; tr = FD_GRPC; break;
        case 's': addr = optarg; tr = FD_SOCK; break;
        case 'o': output = optarg; break;
        case 'r': names[nnames++] = optarg; break;
        case 'R': refs_out = optarg; break;
        case 'a': adv_only = true; break;
        case 'b': body_file = optarg; break;
        case 1: raw_file = optarg; break;
        case 2:
            if (!fk_parse_size(optarg, &stop_after) || stop_after == 0)
                fk_usage_error("bad --stop-after '%s'", optarg);
            break;
        case 'q': quiet = true; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("fetchd-client (flamekit) %s\n", FK_VERSION); return 0;
        case ':': fk_usage_error("option '%s' needs an argument", argv[optind - 1]);
        default: fk_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!addr)
        fk_usage_error("say which server: --grpc HOST:PORT or --sock HOST:PORT");
    if (optind + 1 != argc)
        fk_usage_error(optind == argc ? "missing REPO" : "more than one REPO");
    if (!adv_only && !output)
        fk_usage_error("missing --output FILE for the pack");
    const char *repo = argv[optind];
    char err[512];
    struct fd_client *c = fd_client_new(tr, addr, err, sizeof err);
    if (!c)
        fk_die("%s", err);
    struct sinkst s;
    memset(&s, 0, sizeof s);
    struct fk_buf req = FK_BUF_INIT;
    struct fd_refs refs = { 0 };
    if (!body_file || adv_only) {
        s.is_adv = true;
        if (!fd_client_call(c, FD_OP_ADVERTISE, repo, "", 0, resp_sink, &s, err, sizeof err))
            fk_die("advertisement of %s: %s", repo, err);
        if (!fd_parse_advertisement(s.adv.data ? s.adv.data : "", s.adv.len, &refs, err, sizeof err))
            fk_die("advertisement of %s: %s", repo, err);
        if (adv_only) {
            for (size_t i = 0; i < refs.n; i++)
                printf("%s %s\n", refs.v[i].oid, refs.v[i].name);
            return 0;
        }
        if (!fd_build_request(&refs, names, nnames, &req, err, sizeof err))
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
        if (!fk_outfile_open(&ro, refs_out, 0644))
            return 1;
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
        if (!fk_outfile_commit(&ro))
            return 1;
    }
    struct fk_outfile pack, raw;
    if (!fk_outfile_open(&pack, output, 0644))
        return 1;
    if (raw_file && !fk_outfile_open(&raw, raw_file, 0644))
        return 1;
    s.is_adv = false;
    s.total = 0;
    s.stop_after = stop_after;
    s.raw = raw_file ? &raw : NULL;
    fd_demux_init(&s.dm, pack_sink, &pack);
    bool ok = fd_client_call(c, FD_OP_UPLOAD_PACK, repo, req.data ? req.data : "", req.len, resp_sink, &s, err, sizeof err);
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
            fd_client_free(c);
            return 3;
        }
        fk_die("fetch of %s: %s", repo, s.dm.failed ? s.dm.err : err);
    }
    if (!fk_outfile_commit(&pack) || (raw_file && !fk_outfile_commit(&raw)))
        return 1;
    if (!quiet)
        fprintf(stderr, "fetchd-client: %s: %zu refs, pack %llu bytes, response %llu bytes\n", repo,
                nnames ? nnames : refs.n, (unsigned long long)s.dm.pack_bytes, (unsigned long long)s.total);
    fd_refs_free(&refs);
    fk_buf_free(&req);
    fk_buf_free(&s.adv);
    free(names);
    fd_client_free(c);
    return 0;
}
