/* SPDX-License-Identifier: GPL-2.0-only */
/* Who may ask flamekit serve for a profile: named bearer tokens from a
 * file (owner-only, mode 0600 or stricter) and/or client certificates
 * signed by a client CA (mutual TLS, checked by GnuTLS). Tokens are kept
 * only as SHA-256 digests and compared in constant time: the time an
 * answer takes says nothing about which token, or how much of one,
 * matched. */
#ifndef FK_SERVE_AUTH_H
#define FK_SERVE_AUTH_H

#include "util/fk.h"

#define FK_AUTH_MIN_TOKEN 16
#define FK_AUTH_MAX_TOKENS 256

struct fk_tokens {
    char **names;
    unsigned char (*digest)[32];
    size_t n;
};

/* Load "NAME:TOKEN" lines ('#' comments, blank lines ignored). False after
 * one error line naming the file and the fix (mode, format, short token). */
bool fk_tokens_load(struct fk_tokens *t, const char *path);
void fk_tokens_free(struct fk_tokens *t);
/* The name of the token equal to tok (len bytes), or NULL; constant time
 * in which token matched. */
const char *fk_tokens_check(const struct fk_tokens *t, const char *tok, size_t len);

/* A TLS session's verified client certificate: true and its subject's CN
 * (or the whole DN, raw: clean it before printing) in who when the peer
 * sent a certificate that chains to the trusted CA, is within its validity
 * and is marked for TLS client authentication (extendedKeyUsage
 * clientAuth: a server certificate of the same CA is refused); why says what was wrong
 * otherwise ("no client certificate", "expired", ...). session is a
 * gnutls_session_t. */
bool fk_cert_check(void *session, char *who, size_t wholen, const char **why);

#endif
