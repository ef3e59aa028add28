/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit upload: put result files into S3/GCS-compatible object storage. */
#include "deliver/upload.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: flamekit upload [OPTIONS] FILE... s3://BUCKET/PREFIX/\n"
            "       flamekit upload [OPTIONS] FILE... gs://BUCKET/PREFIX/\n"
            "       flamekit upload [OPTIONS] FILE 'https://...?X-Amz-Signature=...'\n"
            "       flamekit upload --presign[=put|get] [--expires DUR] s3://BUCKET/KEY\n"
            "\n"
            "Upload flame graphs, folded stacks and JSON to object storage (AWS S3, GCS\n"
            "XML API with HMAC keys, MinIO, Ceph RGW) and print each object's URL.\n"
            "Credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY[/AWS_SESSION_TOKEN],\n"
            "~/.aws/credentials profiles, or ~/.config/flamekit/upload.conf (mode 0600).\n"
            "\n"
            "Options:\n"
            "  --endpoint URL          S3-compatible endpoint (http only for loopback)\n"
            "  --region REGION         signing region (default: config, us-east-1; gs: auto)\n"
            "  --profile NAME          profile in ~/.aws/credentials\n"
            "  --config FILE           flamekit upload config file\n"
            "  --ca-file FILE          CA bundle for a private endpoint (TLS is always verified)\n"
            "  --path-style            https://ENDPOINT/BUCKET/KEY addressing\n"
            "  --virtual-host          https://BUCKET.ENDPOINT/KEY addressing\n"
            "  --meta KEY=VALUE        extra x-amz-meta-KEY on every object (repeatable)\n"
            "  --part-size SIZE        multipart part size (default 8M, at least 5M)\n"
            "  --multipart-threshold SIZE  files larger than this go multipart (default 16M)\n"
            "  --timeout DUR           give up on a file after DUR, retries included (default 10m)\n"
            "  --connect-timeout DUR   TCP+TLS connect limit (default 10s)\n"
            "  --stall-timeout DUR     abort a transfer that moves no byte for DUR (default 30s)\n"
            "  --retries N             retries of transient failures (default 4)\n"
            "  --allow-http            permit plain http to a non-loopback endpoint\n"
            "  --presign[=put|get]     print a presigned URL for s3://BUCKET/KEY instead\n"
            "  --expires DUR           lifetime of a presigned URL (default 1h, at most 168h)\n"
            "  -q, --quiet             no retry messages\n"
            "  -h, --help              this text\n"
            "\n"
            "Exit status: 0 every file arrived, 1 some did not (they stay where they are), 2 usage.\n");
}

enum {
    O_ENDPOINT = 256, O_REGION, O_PROFILE, O_CONFIG, O_CA, O_PATH, O_VHOST, O_META, O_PART,
    O_THRESH, O_TIMEOUT, O_CONNECT, O_STALL, O_RETRIES, O_HTTP, O_PRESIGN, O_EXPIRES,
};

static uint64_t duration_arg(const char *opt, const char *v)
{
    uint64_t ms;
    if (!fk_parse_duration_ms(v, &ms) || ms == 0)
        fk_usage_error("%s wants a duration like 30s, 2m or 500ms, not '%s'", opt, v);
    return ms;
}

int cmd_upload(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "endpoint", required_argument, NULL, O_ENDPOINT },
        { "region", required_argument, NULL, O_REGION },
        { "profile", required_argument, NULL, O_PROFILE },
        { "config", required_argument, NULL, O_CONFIG },
        { "ca-file", required_argument, NULL, O_CA },
        { "path-style", no_argument, NULL, O_PATH },
        { "virtual-host", no_argument, NULL, O_VHOST },
        { "meta", required_argument, NULL, O_META },
        { "part-size", required_argument, NULL, O_PART },
        { "multipart-threshold", required_argument, NULL, O_THRESH },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "connect-timeout", required_argument, NULL, O_CONNECT },
        { "stall-timeout", required_argument, NULL, O_STALL },
        { "retries", required_argument, NULL, O_RETRIES },
        { "allow-http", no_argument, NULL, O_HTTP },
        { "presign", optional_argument, NULL, O_PRESIGN },
        { "expires", required_argument, NULL, O_EXPIRES },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct fk_upload_opts o = { 0 };
    const char **mkeys = NULL, **mvals = NULL;
    size_t nmeta = 0, capk = 0, capv = 0;
    const char *presign = NULL;
    uint64_t expires_ms = 3600 * 1000;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+qh", longopts, NULL)) != -1) {
        switch (c) {
        case O_ENDPOINT: o.endpoint = optarg; break;
        case O_REGION: o.region = optarg; break;
        case O_PROFILE: o.profile = optarg; break;
        case O_CONFIG: o.config = optarg; break;
        case O_CA: o.ca_file = optarg; break;
        case O_PATH: o.addressing = 1; break;
        case O_VHOST: o.addressing = 2; break;
        case O_META: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg)
                fk_usage_error("--meta wants KEY=VALUE, not '%s'", optarg);
            mkeys = fk_grow(mkeys, &capk, nmeta + 1, sizeof *mkeys);
            mvals = fk_grow(mvals, &capv, nmeta + 1, sizeof *mvals);
            mkeys[nmeta] = fk_strndup(optarg, (size_t)(eq - optarg));
            mvals[nmeta++] = eq + 1;
            break;
        }
        case O_PART:
            if (!fk_parse_size(optarg, &o.part_size) || o.part_size < 5 * 1024 * 1024)
                fk_usage_error("--part-size wants a size of at least 5M (S3's minimum part), not '%s'", optarg);
            break;
        case O_THRESH:
            if (!fk_parse_size(optarg, &o.multipart_threshold) || o.multipart_threshold == 0)
                fk_usage_error("--multipart-threshold wants a size like 16M, not '%s'", optarg);
            break;
        case O_TIMEOUT: o.timeout_ms = duration_arg("--timeout", optarg); break;
        case O_CONNECT: o.connect_timeout_ms = duration_arg("--connect-timeout", optarg); break;
        case O_STALL: o.stall_timeout_ms = duration_arg("--stall-timeout", optarg); break;
        case O_RETRIES: {
            uint64_t n;
            if (!fk_parse_u64(optarg, &n) || n > 20)
                fk_usage_error("--retries wants a number from 0 to 20, not '%s'", optarg);
            o.retries = n ? (int)n : -1;
            break;
        }
        case O_HTTP: o.allow_http = true; break;
        case O_PRESIGN:
            presign = optarg ? optarg : "put";
            if (strcasecmp(presign, "put") && strcasecmp(presign, "get"))
                fk_usage_error("--presign wants put or get, not '%s'", presign);
            break;
        case O_EXPIRES: expires_ms = duration_arg("--expires", optarg); break;
        case 'q': o.quiet = true; break;
        case 'h': usage(stdout); return FK_EXIT_OK;
        default:
            if (optopt && optopt < 256)
                fk_usage_error("unknown option '-%c'", optopt);
            fk_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    int nargs = argc - optind;
    if (presign) {
        if (nargs != 1)
            fk_usage_error("--presign wants one object URL s3://BUCKET/KEY");
        char *url = fk_upload_presign(argv[optind], strcasecmp(presign, "get") ? "PUT" : "GET",
                                      (expires_ms + 999) / 1000, &o);
        if (!url)
            return FK_EXIT_ERROR;
        printf("%s\n", url);
        free(url);
        return FK_EXIT_OK;
    }
    if (nargs < 2)
        fk_usage_error("want FILE... and a destination s3://BUCKET/PREFIX/");
    const char *dest = argv[argc - 1];
    int failed = 0;
    if (nmeta == 0) {
        failed = fk_upload_paths(dest, (const char *const *)argv + optind, (size_t)nargs - 1, NULL, &o);
    } else {
        /* Per file: the pairs from its name plus the --meta ones. */
        for (int i = optind; i < argc - 1; i++) {
            struct fk_upload_meta m;
            fk_upload_meta_from_name(argv[i], &m);
            size_t n = m.n + nmeta;
            const char **k = fk_calloc(n, sizeof *k), **v = fk_calloc(n, sizeof *v);
            for (size_t j = 0; j < m.n; j++)
                k[j] = m.keys[j], v[j] = m.values[j];
            for (size_t j = 0; j < nmeta; j++)
                k[m.n + j] = mkeys[j], v[m.n + j] = mvals[j];
            struct fk_upload_meta all = { k, v, n };
            failed += fk_upload_paths(dest, (const char *const *)argv + i, 1, &all, &o);
            free(k);
            free(v);
            fk_upload_meta_free(&m);
        }
    }
    for (size_t j = 0; j < nmeta; j++)
        free((char *)mkeys[j]);
    free(mkeys);
    free(mvals);
    if (failed && nargs - 1 > 1)
        fk_error("%d of %d files not uploaded", failed, nargs - 1);
    return failed ? FK_EXIT_ERROR : FK_EXIT_OK;
}
