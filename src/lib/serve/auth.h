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

/* Load "NAME:TOKEN" lines ('#' comments, blank lines ignored). False with
 * one line in err naming the file and the fix (mode, format, short token);
 * a missing Nettle is said by util/dynlib. */
bool fk_tokens_load(struct fk_tokens *t, const char *path, char *err, size_t errlen);
void fk_tokens_free(struct fk_tokens *t);
/* The name of the token equal to tok (len bytes), or NULL; constant time
 * in which token matched. */
const char *fk_tokens_check(const struct fk_tokens *t, const char *tok, size_t len);

/* Sign-in sessions of the page: the cookie holds a random id, never the
 * token (cookies are not kept apart by port: another service on the same
 * host name receives them). Kept as SHA-256 digests of the ids, at most
 * FK_AUTH_MAX_SESSIONS (the oldest goes first), each for
 * FK_AUTH_SESSION_S seconds. Not thread-safe: the caller locks. */
#define FK_AUTH_MAX_SESSIONS 1024
#define FK_AUTH_SESSION_S 43200
struct fk_session {
    unsigned char digest[32];
    const char *name;           /* the token's name (fk_tokens keeps it) */
    uint64_t expires_ns;        /* CLOCK_MONOTONIC */
};
struct fk_sessions {
    struct fk_session v[FK_AUTH_MAX_SESSIONS];
    size_t n;
};
/* A new session for name: its id, 64 hex digits, in id. False if the
 * system gave no random bytes. */
bool fk_session_new(struct fk_sessions *s, const char *name, uint64_t now_ns, char id[65]);
/* The name of the live session with this id, or NULL. */
const char *fk_session_check(struct fk_sessions *s, const char *id, size_t len, uint64_t now_ns);

/* A TLS session's verified client certificate: true and its subject's CN
 * (or the whole DN, raw: clean it before printing) in who when the peer
 * sent a certificate that chains to the trusted CA, is within its validity
 * and is marked for TLS client authentication (extendedKeyUsage
 * clientAuth: a server certificate of the same CA is refused); why says what was wrong
 * otherwise ("no client certificate", "expired", ...). session is a
 * gnutls_session_t. */
bool fk_cert_check(void *session, char *who, size_t wholen, const char **why);

#endif
