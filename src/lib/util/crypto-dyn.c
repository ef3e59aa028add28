/* SPDX-License-Identifier: GPL-2.0-only */
/* libcrypto's digests through dlopen() (see crypto-dyn.h). */
#include "util/crypto-dyn.h"
#include "util/dynlib.h"
#include "util/fk.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

static struct fk_dynlib libcrypto = {
    .soname = "libcrypto.so.3", .who = "SHA-256 (upload, serve)", .package = "libssl3",
    .newer = "libssl3 (OpenSSL 3)",
};
static struct {
    const EVP_MD *(*sha256)(void);
    int (*digest)(const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *, ENGINE *);
    EVP_MD_CTX *(*ctx_new)(void);
    void (*ctx_free)(EVP_MD_CTX *);
    int (*init)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
    int (*update)(EVP_MD_CTX *, const void *, size_t);
    int (*final)(EVP_MD_CTX *, unsigned char *, unsigned int *);
    unsigned char *(*hmac)(const EVP_MD *, const void *, int, const unsigned char *, size_t,
                           unsigned char *, unsigned int *);
} lib;

bool fk_crypto_load(void)
{
    const struct fk_dynsym syms[] = {
        { "EVP_sha256", (void **)&lib.sha256 },
        { "EVP_Digest", (void **)&lib.digest },
        { "EVP_MD_CTX_new", (void **)&lib.ctx_new },
        { "EVP_MD_CTX_free", (void **)&lib.ctx_free },
        { "EVP_DigestInit_ex", (void **)&lib.init },
        { "EVP_DigestUpdate", (void **)&lib.update },
        { "EVP_DigestFinal_ex", (void **)&lib.final },
        { "HMAC", (void **)&lib.hmac },
    };
    return fk_dynlib_once(&libcrypto, syms, sizeof syms / sizeof syms[0]);
}

static void need(void)
{
    if (libcrypto.state <= 0)
        fk_die("internal error: SHA-256 used before fk_crypto_load()");
}

void fk_sha256(const void *data, size_t len, unsigned char md[32])
{
    need();
    unsigned int n = 0;
    if (!lib.digest(data, len, md, &n, lib.sha256(), NULL) || n != 32)
        fk_die("SHA-256 failed in libcrypto");
}

struct fk_sha256_ctx *fk_sha256_begin(void)
{
    need();
    EVP_MD_CTX *c = lib.ctx_new();
    if (!c || !lib.init(c, lib.sha256(), NULL))
        fk_die("SHA-256 failed in libcrypto");
    return (struct fk_sha256_ctx *)c;
}

void fk_sha256_update(struct fk_sha256_ctx *c, const void *data, size_t len)
{
    if (!lib.update((EVP_MD_CTX *)c, data, len))
        fk_die("SHA-256 failed in libcrypto");
}

void fk_sha256_end(struct fk_sha256_ctx *c, unsigned char md[32])
{
    unsigned int n = 0;
    if (!lib.final((EVP_MD_CTX *)c, md, &n) || n != 32)
        fk_die("SHA-256 failed in libcrypto");
    lib.ctx_free((EVP_MD_CTX *)c);
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
