/* SPDX-License-Identifier: GPL-2.0-only */
/* Upload capture results to object storage (S3, GCS XML API, MinIO, Ceph
 * RGW) with libcurl's SigV4. Used by 'flamekit upload' and every capture
 * command's --upload. */
#ifndef FK_UPLOAD_H
#define FK_UPLOAD_H

#include "util/fk.h"

struct fk_upload_opts {
    const char *endpoint;   /* NULL: from the URL scheme / config */
    const char *region;     /* NULL: config, env or us-east-1 */
    const char *profile;    /* ~/.aws/credentials profile, NULL = default */
    const char *ca_file;    /* extra CA bundle for private endpoints */
    int addressing;         /* 0 auto, 1 path style, 2 virtual host */
    bool quiet;
};

/* x-amz-meta-* pairs attached to every object. */
struct fk_upload_meta {
    const char *const *keys;
    const char *const *values;
    size_t n;
};

/* Upload each path under the destination URL (s3://BUCKET/PREFIX/,
 * gs://BUCKET/PREFIX/ or a presigned https URL for a single file). Prints
 * the object URLs; returns the number of files that failed (0 = all
 * arrived), with one clear error line per failure. */
int fk_upload_paths(const char *dest, const char *const *paths, size_t n,
                    const struct fk_upload_meta *meta, const struct fk_upload_opts *opts);

#endif
