/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit upload: put result files into S3/GCS-compatible object storage. */
#include "commands.h"
#include "deliver/upload.h"
#include "util/opt.h"
#include "term.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct upload_cli {
    struct fk_upload_opts o;
    struct fk_strv meta;
    const char *presign;
    uint64_t expires_ms;
    const char *dest_from;      /* --to-from FILE|-: the destination read from there */
};

#define DEST_MAX 16384

void fk_upload_print(void *ctx, const char *path, const char *url, const char *err)
{
    (void)ctx;
    (void)path;
    if (url) {
        printf("%s\n", url);
        fflush(stdout);
    } else if (err) {
        fk_error("%s", err);
    }
}

/* The destination from the first line of path ("-": standard input), so
 * a presigned URL never sits in the command line, which every local user
 * can read in /proc/PID/cmdline. NULL after an error line. */
static char *read_dest(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
    if (!f) {
        fk_error("--to-from %s: %s", path, strerror(errno));
        return NULL;
    }
    char *line = fk_malloc(DEST_MAX + 2);
    bool ok = fgets(line, DEST_MAX + 2, f) != NULL;
    if (f != stdin)
        fclose(f);
    size_t n = ok ? strcspn(line, "\r\n") : 0;
    if (!ok || n == 0 || n > DEST_MAX) {
        fk_error("--to-from %s: want the destination (s3://, gs:// or a presigned https:// URL) "
                 "on the first line, at most %d bytes", path, DEST_MAX);
        free(line);
        return NULL;
    }
    line[n] = 0;
    return line;
}

#define UO(field) offsetof(struct upload_cli, field)

static bool parse_retries(void *base, const char *val, char *err, size_t n)
{
    struct upload_cli *c = base;
    uint64_t v;
    if (!fk_parse_u64(val, &v) || v > 20) {
        snprintf(err, n, "a number from 0 to 20");
        return false;
    }
    c->o.retries = v ? (int)v : -1;
    return true;
}

static bool parse_presign(void *base, const char *val, char *err, size_t n)
{
    struct upload_cli *c = base;
    c->presign = val ? val : "put";
    if (strcasecmp(c->presign, "put") && strcasecmp(c->presign, "get")) {
        snprintf(err, n, "put or get");
        return false;
    }
    return true;
}

static const struct fk_opt upload_optset[] = {
    { "endpoint", 0, FK_OPT_STR, UO(o.endpoint), "URL",
      "S3-compatible endpoint (http only for loopback)", "https://s3.example.com" },
    { "region", 0, FK_OPT_STR, UO(o.region), "REGION",
      "signing region (default: config, us-east-1; gs: auto)", "eu-west-1" },
    { "profile", 0, FK_OPT_STR, UO(o.profile), "NAME", "profile in ~/.aws/credentials", "default" },
    { "config", 0, FK_OPT_STR, UO(o.config), "FILE", "flamekit upload config file", "upload.conf" },
    { "ca-file", 0, FK_OPT_STR, UO(o.ca_file), "FILE",
      "CA bundle for a private endpoint (TLS is always verified)", "ca.pem" },
    { "path-style", 0, FK_OPT_SET, UO(o.addressing), NULL, "https://ENDPOINT/BUCKET/KEY addressing",
      .set = 1 },
    { "virtual-host", 0, FK_OPT_SET, UO(o.addressing), NULL, "https://BUCKET.ENDPOINT/KEY addressing",
      .set = 2 },
    { "meta", 0, FK_OPT_LIST, UO(meta), "KEY=VALUE",
      "extra x-amz-meta-KEY on every object (repeatable)", "team=db" },
    { "part-size", 0, FK_OPT_SIZE, UO(o.part_size), "SIZE",
      "multipart part size (default 8M, at least 5M: S3's minimum part)", "8M", .min = 5 << 20 },
    { "multipart-threshold", 0, FK_OPT_SIZE, UO(o.multipart_threshold), "SIZE",
      "files larger than this go multipart (default 16M)", "16M", .min = 1 },
    { "timeout", 0, FK_OPT_DURATION, UO(o.timeout_ms), "DUR",
      "give up on a file after DUR, retries included (default 10m)", "10m" },
    { "connect-timeout", 0, FK_OPT_DURATION, UO(o.connect_timeout_ms), "DUR",
      "TCP+TLS connect limit (default 10s)", "10s" },
    { "stall-timeout", 0, FK_OPT_DURATION, UO(o.stall_timeout_ms), "DUR",
      "abort a transfer that moves no byte for DUR (default 30s)", "30s" },
    { "retries", 0, FK_OPT_CALL, 0, "N", "retries of transient failures (default 4)", "4",
      .call = parse_retries },
    { "allow-http", 0, FK_OPT_FLAG, UO(o.allow_http), NULL,
      "permit plain http to a non-loopback endpoint" },
    { "presign", 0, FK_OPT_CALL, 0, "put|get",
      "print a presigned URL for s3://BUCKET/KEY instead (default put)", "get",
      .call = parse_presign, .optional = true },
    { "expires", 0, FK_OPT_DURATION, UO(expires_ms), "DUR",
      "lifetime of a presigned URL (default 1h, at most 168h)", "1h" },
    { "quiet", 'q', FK_OPT_FLAG, UO(o.quiet), NULL, "no retry messages" },
    { "to-from", 0, FK_OPT_STR, UO(dest_from), "FILE",
      "read the destination from FILE's first line (-: standard input), not\n"
      "the command line, where every local user can read a presigned URL", "url.txt" },
    { NULL },
};

static const struct fk_cmdline cmdline = {
    "flamekit upload [OPTIONS] FILE... s3://BUCKET/PREFIX/\n"
    "flamekit upload [OPTIONS] FILE... gs://BUCKET/PREFIX/\n"
    "flamekit upload [OPTIONS] FILE 'https://...?X-Amz-Signature=...'\n"
    "flamekit upload [OPTIONS] --to-from URLFILE|- FILE...\n"
    "flamekit upload --presign[=put|get] [--expires DUR] s3://BUCKET/KEY",
    "Upload flame graphs, folded stacks and JSON to object storage (AWS S3, GCS XML API "
    "with HMAC keys, MinIO, Ceph RGW) and print each object's URL. Credentials: "
    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY[/AWS_SESSION_TOKEN], ~/.aws/credentials "
    "profiles, or ~/.config/flamekit/upload.conf (mode 0600).",
    "Exit status: 0 every file arrived, 1 some did not (they stay where they are), 2 usage.",
    NULL,
};

/* The files args[0..nargs-2] to the destination args[nargs-1], or --presign. */
static int upload_files(const struct upload_cli *c, int nargs, char **args)
{
    const struct fk_upload_opts *o = &c->o;
    if (c->presign) {
        char err[512];
        char *url = fk_upload_presign(args[0], strcasecmp(c->presign, "get") ? "PUT" : "GET",
                                      (c->expires_ms + 999) / 1000, o, err, sizeof err);
        if (!url) {
            fk_error("%s", err);
            return FK_EXIT_ERROR;
        }
        printf("%s\n", url);
        free(url);
        return FK_EXIT_OK;
    }
    const char *dest = args[nargs - 1];
    size_t nmeta = c->meta.n;
    int failed = 0;
    if (nmeta == 0) {
        failed = fk_upload_paths(dest, (const char *const *)args, (size_t)nargs - 1, NULL, o);
    } else {
        /* Per file: the pairs from its name plus the --meta ones. */
        for (int i = 0; i < nargs - 1; i++) {
            struct fk_upload_meta m;
            fk_upload_meta_from_name(args[i], &m);
            size_t n = m.n + nmeta;
            const char **k = fk_calloc(n, sizeof *k), **v = fk_calloc(n, sizeof *v);
            for (size_t j = 0; j < m.n; j++)
                k[j] = m.keys[j], v[j] = m.values[j];
            for (size_t j = 0; j < nmeta; j++) {
                const char *eq = strchr(c->meta.v[j], '=');
                k[m.n + j] = fk_strndup(c->meta.v[j], (size_t)(eq - c->meta.v[j]));
                v[m.n + j] = eq + 1;
            }
            struct fk_upload_meta all = { k, v, n };
            failed += fk_upload_paths(dest, (const char *const *)args + i, 1, &all, o);
            for (size_t j = 0; j < nmeta; j++)
                free((char *)k[m.n + j]);
            free(k);
            free(v);
            fk_upload_meta_free(&m);
        }
    }
    if (failed && nargs - 1 > 1)
        fk_error("%d of %d files not uploaded", failed, nargs - 1);
    return failed ? FK_EXIT_ERROR : FK_EXIT_OK;
}

int cmd_upload(int argc, char **argv)
{
    struct upload_cli c = { .o = { .report = fk_upload_print, .warn = fk_warn_line },
                            .expires_ms = 3600 * 1000 };
    const struct fk_optsec secs[] = { { "Options", upload_optset, &c }, { NULL } };
    struct fk_args a;
    int rc = fk_opt_parse(&cmdline, secs, argc, argv, &a);
    for (size_t i = 0; rc == FK_OPT_CONTINUE && i < c.meta.n; i++) {
        const char *eq = strchr(c.meta.v[i], '=');
        if (!eq || eq == c.meta.v[i])
            rc = fk_opt_error("option '--meta' wants KEY=VALUE, not '%s'", c.meta.v[i]);
    }
    if (rc == FK_OPT_CONTINUE && c.presign && c.dest_from)
        rc = fk_opt_error("--presign takes its s3://BUCKET/KEY on the command line, not --to-from");
    if (rc == FK_OPT_CONTINUE && c.presign && a.n != 1)
        rc = fk_opt_error("--presign wants one object URL s3://BUCKET/KEY");
    if (rc == FK_OPT_CONTINUE && !c.presign && a.n < (c.dest_from ? 1 : 2))
        rc = fk_opt_error(c.dest_from ? "want FILE... to upload" :
                          "want FILE... and a destination s3://BUCKET/PREFIX/");
    char *dest = NULL;
    if (rc == FK_OPT_CONTINUE && c.dest_from && !(dest = read_dest(c.dest_from)))
        rc = FK_EXIT_USAGE;
    if (rc == FK_OPT_CONTINUE && dest) {
        char **v = fk_calloc(a.n + 1, sizeof *v);
        memcpy(v, a.v, a.n * sizeof *v);
        v[a.n] = dest;
        rc = upload_files(&c, (int)a.n + 1, v);
        free(v);
    } else if (rc == FK_OPT_CONTINUE) {
        rc = upload_files(&c, a.n, a.v);
    }
    free(dest);
    fk_strv_free(&c.meta);
    fk_args_free(&a);
    return rc;
}
