/* SPDX-License-Identifier: GPL-2.0-only */
/* Tokens and client certificates for flamekit serve (see auth.h). */
#include "auth.h"
#include "util/crypto-dyn.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static bool name_ok(const char *s, size_t n)
{
    if (!n || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

/* Equal digests? Every byte is looked at, whatever differs first. */
static bool digest_equal(const unsigned char a[32], const unsigned char b[32])
{
    volatile unsigned char diff = 0;
    for (size_t i = 0; i < 32; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}

bool fk_tokens_load(struct fk_tokens *t, const char *path, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (errlen)
        err[0] = 0;
    if (!fk_crypto_load(err, errlen))
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot open token file %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid()) {
        snprintf(err, errlen, "token file %s must be a regular file owned by this user with "
                 "mode 0600 (it is %04o, owner %u): chmod 600 %s", path,
                 (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, path);
        close(fd);
        return false;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read token file %s: %s", path, strerror(errno));
        close(fd);
        return false;
    }
    char line[1024];
    unsigned lineno = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        size_t n = strcspn(line, "\r\n");
        line[n] = 0;
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '#')
            continue;
        char *colon = strchr(s, ':');
        const char *tok = colon ? colon + 1 : "";
        size_t tl = strlen(tok);
        bool printable = true;
        for (size_t i = 0; i < tl; i++)
            if ((unsigned char)tok[i] <= ' ' || tok[i] == 0x7f)
                printable = false;
        if (!colon || !name_ok(s, (size_t)(colon - s)) || tl < FK_AUTH_MIN_TOKEN || !printable ||
            t->n >= FK_AUTH_MAX_TOKENS) {
            snprintf(err, errlen, "%s:%u: want NAME:TOKEN (NAME of letters, digits, '._-'; "
                     "TOKEN of at least %d printable characters, e.g. from 'openssl rand -hex "
                     "32')", path, lineno, FK_AUTH_MIN_TOKEN);
            ok = false;
            break;
        }
        t->names = fk_realloc(t->names, (t->n + 1) * sizeof *t->names);
        t->digest = fk_realloc(t->digest, (t->n + 1) * sizeof *t->digest);
        t->names[t->n] = fk_strndup(s, (size_t)(colon - s));
        fk_sha256(tok, tl, t->digest[t->n]);
        t->n++;
    }
    explicit_bzero(line, sizeof line);
    fclose(f);
    if (ok && !t->n) {
        snprintf(err, errlen, "token file %s has no tokens (want NAME:TOKEN lines)", path);
        ok = false;
    }
    if (!ok)
        fk_tokens_free(t);
    return ok;
}

void fk_tokens_free(struct fk_tokens *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    if (t->digest)
        explicit_bzero(t->digest, t->n * sizeof *t->digest);
    free(t->digest);
    memset(t, 0, sizeof *t);
}

const char *fk_tokens_check(const struct fk_tokens *t, const char *tok, size_t len)
{
    unsigned char d[32];
    fk_sha256(tok, len, d);
    size_t hit = SIZE_MAX;
    for (size_t i = 0; i < t->n; i++) {
        /* every token compared, whatever matched */
        size_t eq = digest_equal(d, t->digest[i]);
        hit = eq ? i : hit;
    }
    return hit == SIZE_MAX ? NULL : t->names[hit];
}

bool fk_session_new(struct fk_sessions *s, const char *name, uint64_t now_ns, char id[65])
{
    unsigned char raw[32];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return false;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(id + 2 * i, 3, "%02x", raw[i]);
    explicit_bzero(raw, sizeof raw);
    /* expired ones out; full: the oldest (the first) goes */
    size_t w = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].expires_ns > now_ns)
            s->v[w++] = s->v[i];
    s->n = w;
    if (s->n == FK_AUTH_MAX_SESSIONS)
        memmove(s->v, s->v + 1, --s->n * sizeof *s->v);
    struct fk_session *e = &s->v[s->n++];
    fk_sha256(id, 64, e->digest);
    e->name = name;
    e->expires_ns = now_ns + FK_AUTH_SESSION_S * 1000000000ull;
    return true;
}

const char *fk_session_check(struct fk_sessions *s, const char *id, size_t len, uint64_t now_ns)
{
    unsigned char d[32];
    fk_sha256(id, len, d);
    const char *name = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (digest_equal(d, s->v[i].digest) && s->v[i].expires_ns > now_ns)
            name = s->v[i].name;
    return name;
}

bool fk_cert_check(void *session, char *who, size_t wholen, const char **why)
{
    gnutls_session_t s = session;
    *why = "no client certificate";
    if (!s)
        return false;
    unsigned int n = 0;
    const gnutls_datum_t *chain = gnutls_certificate_get_peers(s, &n);
    if (!chain || !n)
        return false;
    unsigned int status = 0;
    if (gnutls_certificate_verify_peers2(s, &status) < 0) {
        *why = "client certificate could not be verified";
        return false;
    }
    if (status) {
        *why = status & GNUTLS_CERT_EXPIRED ? "client certificate expired"
             : status & GNUTLS_CERT_NOT_ACTIVATED ? "client certificate not yet valid"
             : status & GNUTLS_CERT_REVOKED ? "client certificate revoked"
             : "client certificate not signed by the client CA";
        return false;
    }
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) < 0)
        return false;
    bool ok = gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER) >= 0;
    size_t sz = wholen;
    if (ok && gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, who, &sz) < 0) {
        sz = wholen;
        ok = gnutls_x509_crt_get_dn(crt, who, &sz) >= 0;
    }
    /* a certificate of the same CA made for another use (a server's) is
     * no client's: the extended key usage must name TLS client auth */
    bool client = false;
    for (unsigned i = 0; ok && !client; i++) {
        char oid[128];
        size_t osz = sizeof oid;
        if (gnutls_x509_crt_get_key_purpose_oid(crt, i, oid, &osz, NULL) < 0)
            break;
        client = !strcmp(oid, GNUTLS_KP_TLS_WWW_CLIENT);
    }
    gnutls_x509_crt_deinit(crt);
    if (!ok) {
        *why = "client certificate unreadable";
        return false;
    }
    if (!client) {
        *why = "certificate not made for TLS clients (extendedKeyUsage lacks clientAuth)";
        return false;
    }
    return true;    /* who: as the certificate says; the audit log cleans it */
}
