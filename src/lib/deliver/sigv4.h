/* SPDX-License-Identifier: GPL-2.0-only */
/* AWS Signature V4 pieces libcurl does not give us: payload hashes, S3
 * URI encoding and query-string (presigned URL) signing. */
#ifndef FK_SIGV4_H
#define FK_SIGV4_H

#include "util/fk.h"
#include "util/buf.h"
#include <time.h>

/* Hex SHA-256 (65 bytes with the NUL) of memory or of a file range. */
void fk_sha256_hex(const void *data, size_t len, char out[65]);
/* false (errno set) when the file cannot be read. */
bool fk_sha256_file_hex(int fd, uint64_t off, uint64_t len, char out[65]);

/* SigV4 URI encoding: everything but A-Za-z0-9-._~ as %XX (upper-case
 * hex); '/' kept when keep_slash (object keys), encoded otherwise. */
void fk_uri_encode(struct fk_buf *b, const char *s, bool keep_slash);

struct fk_sigv4_key {
    const char *key_id, *secret, *token;   /* token may be NULL */
    const char *region;
    const char *service;                   /* "s3" */
};

/* Presigned URL for METHOD on base_url + path (path already URI-encoded,
 * starting with '/'); host is the Host header value (with :port when not
 * the scheme's default). Valid for expires_s seconds from `now`. */
char *fk_sigv4_presign(const char *method, const char *base_url, const char *host,
                       const char *path, const struct fk_sigv4_key *k,
                       time_t now, uint64_t expires_s);

#endif
