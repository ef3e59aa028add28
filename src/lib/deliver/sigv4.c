/* SPDX-License-Identifier: GPL-2.0-only */
/* SigV4 helpers over Nettle's SHA-256 and HMAC (util/crypto-dyn). */
#include "deliver/sigv4.h"
#include "util/crypto-dyn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void to_hex(const unsigned char *d, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * n] = 0;
}

void fk_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    fk_sha256(data, len, md);
    to_hex(md, 32, out);
}

bool fk_sha256_file_hex(int fd, uint64_t off, uint64_t len, char out[65])
{
    struct fk_sha256_ctx c;
    fk_sha256_begin(&c);
    size_t cap = 1 << 16;
    char *buf = fk_malloc(cap);
    bool ok = true;
    while (len > 0) {
        size_t want = len < cap ? (size_t)len : cap;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;    /* file shrank under us */
            ok = false;
            break;
        }
        fk_sha256_update(&c, buf, (size_t)r);
        off += (uint64_t)r;
        len -= (uint64_t)r;
    }
    unsigned char md[32];
    fk_sha256_end(&c, md);
    if (ok)
        to_hex(md, 32, out);
    free(buf);
    return ok;
}

void fk_uri_encode(struct fk_buf *b, const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
            fk_buf_addc(b, (char)c);
        } else {
            fk_buf_addc(b, '%');
            fk_buf_addc(b, hex[c >> 4]);
            fk_buf_addc(b, hex[c & 15]);
        }
    }
}

static void hmac(const void *key, size_t keylen, const char *msg, unsigned char out[32])
{
    fk_hmac_sha256(key, keylen, msg, strlen(msg), out);
}

char *fk_sigv4_presign(const char *method, const char *base_url, const char *host,
                       const char *path, const struct fk_sigv4_key *k,
                       time_t now, uint64_t expires_s)
{
    struct tm tm;
    char amzdate[17], date[9];
    gmtime_r(&now, &tm);
    strftime(amzdate, sizeof amzdate, "%Y%m%dT%H%M%SZ", &tm);
    strftime(date, sizeof date, "%Y%m%d", &tm);

    struct fk_buf scope = FK_BUF_INIT, cred = FK_BUF_INIT, q = FK_BUF_INIT, creq = FK_BUF_INIT;
    fk_buf_printf(&scope, "%s/%s/%s/aws4_request", date, k->region, k->service);
    fk_buf_printf(&cred, "%s/%s", k->key_id, fk_buf_cstr(&scope));
    /* Parameters in byte order, as the canonical query string wants. */
    fk_buf_adds(&q, "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=");
    fk_uri_encode(&q, fk_buf_cstr(&cred), false);
    fk_buf_printf(&q, "&X-Amz-Date=%s&X-Amz-Expires=%llu", amzdate, (unsigned long long)expires_s);
    if (k->token && *k->token) {
        fk_buf_adds(&q, "&X-Amz-Security-Token=");
        fk_uri_encode(&q, k->token, false);
    }
    fk_buf_adds(&q, "&X-Amz-SignedHeaders=host");

    fk_buf_printf(&creq, "%s\n%s\n%s\nhost:%s\n\nhost\nUNSIGNED-PAYLOAD",
                  method, path, fk_buf_cstr(&q), host);
    char creq_hash[65];
    fk_sha256_hex(creq.data, creq.len, creq_hash);
    char *sts = fk_asprintf("AWS4-HMAC-SHA256\n%s\n%s\n%s", amzdate, fk_buf_cstr(&scope), creq_hash);

    char *k0 = fk_asprintf("AWS4%s", k->secret);
    unsigned char kd[32], kr[32], ks[32], kk[32], sig[32];
    hmac(k0, strlen(k0), date, kd);
    hmac(kd, 32, k->region, kr);
    hmac(kr, 32, k->service, ks);
    hmac(ks, 32, "aws4_request", kk);
    hmac(kk, 32, sts, sig);
    char sighex[65];
    to_hex(sig, 32, sighex);
    /* The signing key material is secret: do not leave it in freed memory. */
    explicit_bzero(k0, strlen(k0));
    explicit_bzero(kd, sizeof kd);
    explicit_bzero(kr, sizeof kr);
    explicit_bzero(ks, sizeof ks);
    explicit_bzero(kk, sizeof kk);

    char *url = fk_asprintf("%s%s?%s&X-Amz-Signature=%s", base_url, path, fk_buf_cstr(&q), sighex);
    free(k0);
    free(sts);
    fk_buf_free(&scope);
    fk_buf_free(&cred);
    fk_buf_free(&q);
    fk_buf_free(&creq);
    return url;
}
