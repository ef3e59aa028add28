/* SPDX-License-Identifier: GPL-2.0-only */
/* Upload capture results to object storage (S3, GCS XML API, MinIO, Ceph
 * RGW) with libcurl's SigV4. Used by 'flamekit upload' and every capture
 * command's --upload. */
#ifndef FK_UPLOAD_H
#define FK_UPLOAD_H

#include "util/fk.h"

/* What an upload says as it goes (the library never writes to the
 * terminal): url set, path arrived there; err set, path did not arrive
 * (one line with the reason and where the file stays); path NULL, err
 * says why nothing could be sent (before the files' own lines). */
typedef void (*fk_upload_report_fn)(void *ctx, const char *path, const char *url, const char *err);

struct fk_upload_opts {
    const char *endpoint;   /* NULL: from the URL scheme / config */
    const char *region;     /* NULL: config, env or us-east-1 */
    const char *profile;    /* ~/.aws/credentials profile, NULL = default */
    const char *ca_file;    /* extra CA bundle for private endpoints */
    int addressing;         /* 0 auto, 1 path style, 2 virtual host */
    bool quiet;             /* no retry warnings */
    fk_upload_report_fn report; /* each file's outcome; NULL: none */
    void *report_ctx;
    fk_warn_fn warn;        /* retries, a dotted bucket name, parts left behind;
                               NULL: none */
    void *warn_ctx;
    /* Added by the upload stage; zero means the default in brackets. */
    const char *config;     /* flamekit upload.conf [search, see the man page] */
    uint64_t part_size;     /* multipart part size [8 MiB, at least 5 MiB] */
    uint64_t multipart_threshold; /* larger files go multipart [16 MiB] */
    uint64_t timeout_ms;    /* per file, retries included [600 s] */
    uint64_t connect_timeout_ms;  /* [10 s] */
    uint64_t stall_timeout_ms;    /* no byte moved for this long [30 s] */
    int retries;            /* extra attempts on transient failures [4]; -1 none */
    bool allow_http;        /* plain http to a non-loopback endpoint */
};

/* x-amz-meta-* pairs attached to every object. */
struct fk_upload_meta {
    const char *const *keys;
    const char *const *values;
    size_t n;
};

/* Upload each path under the destination URL (s3://BUCKET/PREFIX/,
 * gs://BUCKET/PREFIX/ or a presigned https URL for a single file), going
 * on after a file fails; opts->report hears each one's URL or error.
 * Returns the number of files that failed (0 = all arrived). meta NULL:
 * each file gets the pairs fk_upload_meta_from_name derives from its
 * name. */
int fk_upload_paths(const char *dest, const char *const *paths, size_t n,
                    const struct fk_upload_meta *meta, const struct fk_upload_opts *opts);

/* x-amz-meta pairs from a result name (util/result.h: host, scope,
 * start-time as ISO 8601 UTC, profile unless cpu), plus event, duration-s,
 * samples and kernel when the result's .json is beside it. Returns the
 * number of pairs, 0 when the name does not follow the contract;
 * fk_upload_meta_free frees. */
size_t fk_upload_meta_from_name(const char *path, struct fk_upload_meta *out);
void fk_upload_meta_free(struct fk_upload_meta *m);

/* Presigned URL for method "PUT" or "GET" on the object s3://BUCKET/KEY or
 * gs://BUCKET/KEY, valid for expires_s seconds (at most 7 days). NULL with
 * one line in err when credentials or the URL are missing. */
char *fk_upload_presign(const char *object, const char *method, uint64_t expires_s,
                        const struct fk_upload_opts *opts, char *err, size_t errlen);

/* host[:port] or [v6]:port names this machine: 127.0.0.0/8 (dotted quad),
 * ::1 or localhost. Plain http goes only there without --allow-http. */
bool fk_upload_is_loopback(const char *host);

#endif
