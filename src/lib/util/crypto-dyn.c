/* SPDX-License-Identifier: GPL-2.0-only */
/* libcrypto's digests through dlopen() (see crypto-dyn.h). */
#include "util/crypto-dyn.h"
#include "util/dynlib.h"
#include "util/fk.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

_Static_assert(sizeof(SHA256_CTX) <= sizeof(struct fk_sha256_ctx), "fk_sha256_ctx too small");

static struct fk_dynlib libcrypto = {
    .soname = "libcrypto.so.3", .who = "SHA-256 (upload, serve, fetchd's pack cache)", .package = "libssl3",
    .newer = "libssl3 (OpenSSL 3)",
};
static struct {
    const EVP_MD *(*sha256)(void);
    /* Deprecated since OpenSSL 3.0 but exported: no initialisation, no heap. */
    int (*init)(SHA256_CTX *);
    int (*update)(SHA256_CTX *, const void *, size_t);
    int (*final)(unsigned char *, SHA256_CTX *);
    unsigned char *(*hmac)(const EVP_MD *, const void *, int, const unsigned char *, size_t,
                           unsigned char *, unsigned int *);
} lib;

bool fk_crypto_load(char *err, size_t errlen)
{
    const struct fk_dynsym syms[] = {
        { "EVP_sha256", (void **)&lib.sha256 },
        { "SHA256_Init", (void **)&lib.init },
        { "SHA256_Update", (void **)&lib.update },
        { "SHA256_Final", (void **)&lib.final },
        { "HMAC", (void **)&lib.hmac },
    };
    return fk_dynlib_once(&libcrypto, syms, sizeof syms / sizeof syms[0], err, errlen);
}

static void need(void)
{
    if (libcrypto.state <= 0)
        fk_die("internal error: SHA-256 used before fk_crypto_load()");
}

void fk_sha256(const void *data, size_t len, unsigned char md[32])
{
    struct fk_sha256_ctx c;
    fk_sha256_begin(&c);
    fk_sha256_update(&c, data, len);
    fk_sha256_end(&c, md);
}

void fk_sha256_begin(struct fk_sha256_ctx *c)
{
    need();
    if (!lib.init((SHA256_CTX *)c->state))
        fk_die("SHA-256 failed in libcrypto");
}

void fk_sha256_update(struct fk_sha256_ctx *c, const void *data, size_t len)
{
    if (!lib.update((SHA256_CTX *)c->state, data, len))
        fk_die("SHA-256 failed in libcrypto");
}

void fk_sha256_end(struct fk_sha256_ctx *c, unsigned char md[32])
{
    if (!lib.final(md, (SHA256_CTX *)c->state))
        fk_die("SHA-256 failed in libcrypto");
}

void fk_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
                    unsigned char md[32])
{
    need();
    unsigned int n = 0;
    if (keylen > 0x7fffffff || !lib.hmac(lib.sha256(), key, (int)keylen, msg, len, md, &n) ||
        n != 32)
        fk_die("HMAC-SHA256 failed in libcrypto");
}
