/* SPDX-License-Identifier: GPL-2.0-only */
/* SHA-256 and HMAC-SHA256 from GNU Nettle (libnettle.so.8), loaded with
 * dlopen() the first time upload (SigV4), serve (token digests) or a fetch
 * server's pack cache (keys) needs them, so a collapse, an svg or a fetch
 * server without a cache maps nothing.
 * Nettle, not OpenSSL's libcrypto: the same digests (SHA-NI where the CPU
 * has it), but libcrypto cost a process 1.6 MiB of RSS, 0.4 MiB of it
 * private relocated data, where Nettle costs 0.3 MiB, 20 KiB of it
 * private (measured here, dlopen + one digest). Nettle is on every Debian
 * system (apt -> GnuTLS -> Nettle) and serve's GnuTLS maps it anyway.
 * Contexts are the caller's (locals): nothing is allocated, nothing fails.
 * Invariant: fk_crypto_load() succeeded before any other call (they die
 * otherwise: a caller that skipped the check is a bug, not bad input). */
#ifndef FK_CRYPTO_DYN_H
#define FK_CRYPTO_DYN_H

#include <stdbool.h>
#include <stddef.h>

/* Load Nettle once; false with one line in err naming the package to
 * install when it is missing. */
bool fk_crypto_load(char *err, size_t errlen);

void fk_sha256(const void *data, size_t len, unsigned char md[32]);
/* Incremental SHA-256: begin, any number of updates, end; the context is
 * the caller's (a local: nothing is allocated). */
struct fk_sha256_ctx { _Alignas(8) unsigned char state[128]; };
void fk_sha256_begin(struct fk_sha256_ctx *c);
void fk_sha256_update(struct fk_sha256_ctx *c, const void *data, size_t len);
void fk_sha256_end(struct fk_sha256_ctx *c, unsigned char md[32]);
void fk_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
                    unsigned char md[32]);

#endif
