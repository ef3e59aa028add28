/* SPDX-License-Identifier: GPL-2.0-only */
/* git pkt-lines: the ref advertisement, the want/done request and the
 * side-band-64k response demultiplexer. */
#include "fetchd/fetchd.h"

#include <stdlib.h>
#include <string.h>

static long pkt_len(const char *h)
{
    long n = 0;
    for (int i = 0; i < 4; i++) {
        int v = fk_hexval(h[i]);
        if (v < 0)
            return -1;
        n = n * 16 + v;
    }
    return n;
}

bool fetchd_parse_advertisement(const char *data, size_t len, struct fetchd_refs *refs, char *err, size_t errlen)
{
    size_t off = 0;
    while (off + 4 <= len) {
        long n = pkt_len(data + off);
        if (n < 0 || (n > 0 && n < 4) || off + (size_t)(n ? n : 4) > len) {
            snprintf(err, errlen, "malformed advertisement at byte %zu", off);
            return false;
        }
        if (n == 0)
            return true;    /* flush: end of the list */
        const char *p = data + off + 4;
        size_t pl = (size_t)n - 4;
        off += (size_t)n;
        if (pl >= 4 && memcmp(p, "ERR ", 4) == 0) {
            snprintf(err, errlen, "server: %.*s", (int)(pl - 4), p + 4);
            return false;
        }
        if (pl < 42 || p[40] != ' ') {
            snprintf(err, errlen, "malformed ref line in advertisement");
            return false;
        }
        size_t nl = strnlen(p + 41, pl - 41);    /* the name ends at NUL (caps) */
        while (nl > 0 && p[41 + nl - 1] == '\n')
            nl--;
        char *name = fk_strndup(p + 41, nl);
        bool zero = true;   /* all-zero oid; p is not NUL-terminated */
        for (int i = 0; i < 40 && zero; i++)
            zero = p[i] == '0';
        size_t namelen = strlen(name);
        if (zero || (namelen > 3 && strcmp(name + namelen - 3, "^{}") == 0)) {
            free(name);     /* empty repository or a peeled tag */
            continue;
        }
        refs->v = fk_grow(refs->v, &refs->cap, refs->n + 1, sizeof *refs->v);
        memcpy(refs->v[refs->n].oid, p, 40);
        refs->v[refs->n].oid[40] = 0;
        refs->v[refs->n].name = name;
        refs->n++;
    }
    snprintf(err, errlen, "advertisement truncated (no final flush)");
    return false;
}

void fetchd_refs_free(struct fetchd_refs *refs)
{
    for (size_t i = 0; i < refs->n; i++)
        free(refs->v[i].name);
    free(refs->v);
    refs->v = NULL;
    refs->n = refs->cap = 0;
}

static void add_pkt(struct fk_buf *b, const char *s)
{
    fk_buf_printf(b, "%04zx%s", strlen(s) + 4, s);
}

bool fetchd_build_request(const struct fetchd_refs *refs, char **names, size_t nnames,
                      struct fk_buf *req, char *err, size_t errlen)
{
    size_t nw = 0;
    char (*seen)[41] = fk_calloc(refs->n + 1, 41);
    for (size_t i = 0; i < refs->n; i++) {
        bool want = nnames == 0;
        for (size_t j = 0; j < nnames && !want; j++) {
            const char *r = refs->v[i].name, *q = names[j];
            size_t rl = strlen(r), ql = strlen(q);
            /* "main" matches refs/heads/main, refs/tags/main, ... */
            want = strcmp(r, q) == 0 ||
                   (rl > ql && r[rl - ql - 1] == '/' && strcmp(r + rl - ql, q) == 0);
        }
        if (!want)
            continue;
        bool dup = false;
        for (size_t k = 0; k < nw && !dup; k++)
            dup = strcmp(seen[k], refs->v[i].oid) == 0;
        if (dup)
            continue;
        memcpy(seen[nw++], refs->v[i].oid, 41);
    }
    for (size_t j = 0; j < nnames; j++) {
        bool found = false;
        for (size_t i = 0; i < refs->n && !found; i++) {
            const char *r = refs->v[i].name, *q = names[j];
            size_t rl = strlen(r), ql = strlen(q);
            found = strcmp(r, q) == 0 || (rl > ql && r[rl - ql - 1] == '/' && strcmp(r + rl - ql, q) == 0);
        }
        if (!found) {
            snprintf(err, errlen, "ref not advertised by the server: %s", names[j]);
            free(seen);
            return false;
        }
    }
    if (nw == 0) {
        snprintf(err, errlen, "nothing to fetch: the repository has no refs");
        free(seen);
        return false;
    }
    for (size_t k = 0; k < nw; k++) {
        char line[200];
        if (k == 0)
            snprintf(line, sizeof line, "want %s multi_ack_detailed no-done side-band-64k ofs-delta no-progress\n", seen[k]);
        else
            snprintf(line, sizeof line, "want %s\n", seen[k]);
        add_pkt(req, line);
    }
    fk_buf_adds(req, "0000");
    add_pkt(req, "done\n");
    free(seen);
    return true;
}

void fetchd_demux_init(struct fetchd_demux *d, bool (*sink)(void *, const void *, size_t), void *arg)
{
    memset(d, 0, sizeof *d);
    d->sink = sink;
    d->arg = arg;
}

static bool fail(struct fetchd_demux *d, const char *msg)
{
    if (!d->failed)
        snprintf(d->err, sizeof d->err, "%s", msg);
    d->failed = true;
    return false;
}

bool fetchd_demux_feed(struct fetchd_demux *d, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0 && !d->failed) {
        if (d->done)
            return fail(d, "data after the end of the response");
        if (d->state == 0) {
            size_t take = 4 - d->hlen < len ? 4 - d->hlen : len;
            memcpy(d->hdr + d->hlen, p, take);
            d->hlen += take;
            p += take;
            len -= take;
            if (d->hlen < 4)
                break;
            d->hlen = 0;
            long n = pkt_len(d->hdr);
            if (n < 0 || (n > 0 && n < 5) || n > 65520)
                return fail(d, n == 4 ? "empty pkt-line in response" : "malformed pkt-line in response");
            if (n == 0) {
                d->done = true;
                continue;
            }
            d->need = (size_t)n - 4;
            d->first = true;
            d->state = 1;
            d->llen = 0;
            continue;
        }
        if (d->first) {
            d->first = false;
            unsigned char b = (unsigned char)*p;
            if (!d->in_sideband && (b == 'N' || b == 'A' || b == 'E' || b == 's' || b == 'u'))
                d->band = 0;    /* NAK/ACK/ERR/shallow line before the pack */
            else if (b >= 1 && b <= 3) {
                d->in_sideband = true;
                d->band = b;
                p++;
                len--;
                d->need--;
            } else
                return fail(d, "unexpected packet in response (not side-band-64k)");
        }
        size_t take = d->need < len ? d->need : len;
        if (d->band == 1) {
            if (take && !d->sink(d->arg, p, take))
                return fail(d, "cannot write the pack");
            d->pack_bytes += take;
        } else if (d->band == 0 || d->band == 3) {
            size_t room = sizeof d->line - 1 - d->llen;
            size_t c = take < room ? take : room;
            memcpy(d->line + d->llen, p, c);
            d->llen += c;
        }
        p += take;
        len -= take;
        d->need -= take;
        if (d->need == 0) {
            d->state = 0;
            d->line[d->llen] = 0;
            while (d->llen && d->line[d->llen - 1] == '\n')
                d->line[--d->llen] = 0;
            if (d->band == 3) {
                char m[300];
                snprintf(m, sizeof m, "remote error: %s", d->line);
                return fail(d, m);
            }
            if (d->band == 0 && strncmp(d->line, "ERR ", 4) == 0) {
                char m[300];
                snprintf(m, sizeof m, "remote error: %s", d->line + 4);
                return fail(d, m);
            }
        }
    }
    return !d->failed;
}
