/* SPDX-License-Identifier: GPL-2.0-only */
#include "merge.h"
#include "util/buf.h"
#include "util/lineread.h"

#include <stdlib.h>
#include <string.h>

/* ".YYYYMMDD_HHMMSS_UTC." at s? */
static bool is_stamp(const char *s)
{
    static const char pat[] = ".99999999_999999_UTC.";
    for (size_t i = 0; pat[i]; i++) {
        if (pat[i] == '9' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
            return false;
    }
    return true;
}

char *fk_merge_host_from_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = base; *p; p++)
        if (p > base && is_stamp(p))
            return fk_strndup(base, (size_t)(p - base));
    size_t len = strlen(base);
    static const char *const sfx[] = { ".gz", ".folded", ".txt", ".stacks" };
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        size_t l = strlen(sfx[i]);
        if (len > l && !memcmp(base + len - l, sfx[i], l))
            len -= l;
    }
    return fk_strndup(base, len);
}

char *fk_merge_frame(const char *s)
{
    char *f = fk_strdup(*s ? s : "unknown");
    for (char *p = f; *p; p++)
        if (*p == ';' || *p == ' ' || (unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '_';
    return f;
}

bool fk_merge_add_file(struct fk_stacktab *t, const char *path, const char *frame,
                       struct fk_parse_stats *st)
{
    struct fk_lineread r;
    if (!fk_lineread_open(&r, path))
        return false;
    struct fk_buf key = FK_BUF_INIT;
    char *line;
    size_t len;
    while ((line = fk_lineread_next(&r, &len))) {
        st->lines++;
        if (len == 0 || line[0] == '#')
            continue;
        const char *stack, *why;
        size_t slen;
        uint64_t c, c2;
        bool has2;
        if (!fk_folded_parse_line(line, len, &stack, &slen, &c, &c2, &has2, &why)) {
            fk_parse_stats_bad(st, r.lineno, line, len, why);
            continue;
        }
        if (has2) {
            /* A differential file: keep the AFTER column, like 'flamekit svg'. */
            c = c2;
        }
        if (frame) {
            fk_buf_reset(&key);
            fk_buf_adds(&key, frame);
            fk_buf_addc(&key, ';');
            fk_buf_add(&key, stack, slen);
            fk_stacktab_add(t, key.data, key.len, c);
        } else {
            fk_stacktab_add(t, stack, slen, c);
        }
    }
    fk_buf_free(&key);
    bool ok = !r.error;
    fk_lineread_close(&r);
    return ok;
}
