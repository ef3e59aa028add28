/* SPDX-License-Identifier: GPL-2.0-only */
/* Nettle's SHA-256 and HMAC-SHA256 through dlopen() (see crypto-dyn.h). */
#include "util/crypto-dyn.h"
#include "util/dynlib.h"
#include "util/fk.h"

#include <nettle/hmac.h>
#include <nettle/sha2.h>

_Static_assert(sizeof(struct sha256_ctx) <= sizeof(struct fk_sha256_ctx), "fk_sha256_ctx too small");
_Static_assert(_Alignof(struct sha256_ctx) <= 8, "fk_sha256_ctx under-aligned");

static struct fk_dynlib libnettle = {
    .soname = "libnettle.so.8", .who = "SHA-256 (upload, serve, fetchd's pack cache)", .package = "libnettle8",
    .newer = "libnettle8 (Nettle 3.7 or later)",
};
/* The types of Nettle 3's functions (<nettle/sha2.h>, <nettle/hmac.h>),
 * which name them through macros (sha256_init is nettle_sha256_init). */
static struct {
    void (*init)(struct sha256_ctx *);
    void (*update)(struct sha256_ctx *, size_t, const uint8_t *);
    void (*digest)(struct sha256_ctx *, size_t, uint8_t *);
    void (*hmac_key)(struct hmac_sha256_ctx *, size_t, const uint8_t *);
    void (*hmac_update)(struct hmac_sha256_ctx *, size_t, const uint8_t *);
    void (*hmac_digest)(struct hmac_sha256_ctx *, size_t, uint8_t *);
} lib;

bool fk_crypto_load(char *err, size_t errlen)
{
    const struct fk_dynsym syms[] = {
        { "nettle_sha256_init", (void **)&lib.init },
        { "nettle_sha256_update", (void **)&lib.update },
        { "nettle_sha256_digest", (void **)&lib.digest },
        { "nettle_hmac_sha256_set_key", (void **)&lib.hmac_key },
        { "nettle_hmac_sha256_update", (void **)&lib.hmac_update },
        { "nettle_hmac_sha256_digest", (void **)&lib.hmac_digest },
    };
    return fk_dynlib_once(&libnettle, syms, sizeof syms / sizeof syms[0], err, errlen);
}

static void need(void)
{
    if (libnettle.state <= 0)
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
    lib.init((struct sha256_ctx *)c->state);
}

void fk_sha256_update(struct fk_sha256_ctx *c, const void *data, size_t len)
{
    lib.update((struct sha256_ctx *)c->state, len, data);
}

void fk_sha256_end(struct fk_sha256_ctx *c, unsigned char md[32])
{
    lib.digest((struct sha256_ctx *)c->state, SHA256_DIGEST_SIZE, md);
}

void fk_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
                    unsigned char md[32])
{
    need();
    struct hmac_sha256_ctx h;
    lib.hmac_key(&h, keylen, key);
    lib.hmac_update(&h, len, msg);
    lib.hmac_digest(&h, SHA256_DIGEST_SIZE, md);
}
