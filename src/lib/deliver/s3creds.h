/* SPDX-License-Identifier: GPL-2.0-only */
/* Where upload credentials and settings come from: the environment,
 * ~/.aws/credentials and ~/.aws/config profiles, flamekit's upload.conf. */
#ifndef FK_S3CREDS_H
#define FK_S3CREDS_H

#include "deliver/upload.h"

struct fk_s3_settings {
    char *key_id, *secret, *token;
    char *source;        /* where the key came from, for messages */
    char *region;        /* NULL: caller's default */
    char *endpoint;      /* from upload.conf or AWS_ENDPOINT_URL(_S3) */
    char *ca_file;
    int addressing;      /* 0 unset, 1 path, 2 virtual host */
};

/* Fill s from opts, the environment and the files; false with one line in
 * err (no credentials, unsafe config file mode, bad profile). */
bool fk_s3_settings_load(struct fk_s3_settings *s, const struct fk_upload_opts *o, char *err,
                         size_t errlen);
/* Wipes the secret before freeing. */
void fk_s3_settings_free(struct fk_s3_settings *s);
/* "...WXYZ": at most the last 4 characters of a key id, for messages. */
char *fk_s3_key_hint(const char *key_id);

#endif
