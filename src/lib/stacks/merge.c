/* SPDX-License-Identifier: GPL-2.0-only */
/* Several folded profiles into one stack table (merge.h). */
#include "merge.h"
#include "util/buf.h"
#include "util/result.h"

#include <stdlib.h>
#include <string.h>

char *fk_merge_host_from_name(const char *path)
{
    struct fk_result_name n;
    if (fk_result_parse(path, &n)) {
        char *host = n.host;
        n.host = NULL;
        fk_result_name_free(&n);
        return host;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    static const char *const sfx[] = { ".gz", ".folded", ".txt", ".stacks", ".pb" };
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

struct merge_ctx {
    struct fk_stacktab *t;
    const char *frame;
    struct fk_buf key;
};

static void merge_line(void *ctx, const char *stack, size_t slen, uint64_t c, uint64_t c2,
                       bool has2)
{
    struct merge_ctx *m = ctx;
    (void)c2, (void)has2;   /* one count per line: only diff reads two */
    if (m->frame) {
        fk_buf_reset(&m->key);
        fk_buf_adds(&m->key, m->frame);
        fk_buf_addc(&m->key, ';');
        fk_buf_add(&m->key, stack, slen);
        fk_stacktab_add(m->t, m->key.data, m->key.len, c);
    } else {
        fk_stacktab_add(m->t, stack, slen, c);
    }
}

bool fk_merge_add_file(struct fk_stacktab *t, const char *path, const char *frame,
                       const struct fk_input_opts *o, struct fk_parse_stats *st, char *err,
                       size_t errlen)
{
    struct merge_ctx m = { t, frame, FK_BUF_INIT };
    bool ok = fk_input_foreach(path, o, st, merge_line, &m, NULL, err, errlen);
    fk_buf_free(&m.key);
    return ok;
}
