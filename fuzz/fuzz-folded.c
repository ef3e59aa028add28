/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: folded-line parser and stack table round trip. */
#include "fuzz.h"
#include "stacks/folded.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

struct folded_run {
    struct fk_stacktab t;
    struct fk_parse_stats st;
};

static void one_line(void *ctx, char *line, size_t len, uint64_t lineno)
{
    struct folded_run *r = ctx;
    const char *stack, *why;
    size_t slen;
    uint64_t c, c2;
    bool has2;
    if (!fk_folded_parse_line(line, len, true, &stack, &slen, &c, &c2, &has2, &why)) {
        if (!why || !*why)
            abort();
        fk_parse_stats_bad(&r->st, lineno, line, len, why);
        return;
    }
    if (slen == 0 || slen > len || memchr(stack, '\0', slen))
        abort();
    fk_stacktab_add2(&r->t, stack, slen, c, has2 ? c2 : 0);
    /* what the writer makes of the stack (its bytes, a blank, the count: no
     * escapes) reads back as it with one count */
    struct fk_buf e = FK_BUF_INIT;
    fk_buf_add(&e, stack, slen);
    fk_buf_printf(&e, " %llu", (unsigned long long)c);
    char *l2 = fk_strndup(e.data, e.len);
    const char *s2, *w2;
    size_t n2;
    uint64_t d, d2;
    bool h2;
    if (!fk_folded_parse_line(l2, e.len, false, &s2, &n2, &d, &d2, &h2, &w2) || h2 || d != c ||
        n2 != slen || memcmp(s2, stack, slen))
        abort();
    free(l2);
    fk_buf_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct folded_run r = { .st = { 0 } };
    fk_stacktab_init(&r.t);
    fuzz_each_line(data, size, one_line, &r);
    struct fk_stack **v = fk_stacktab_sorted(&r.t);
    for (size_t i = 1; i < r.t.n; i++) {
        size_t a = v[i - 1]->len, b = v[i]->len;
        int c = memcmp(v[i - 1]->key, v[i]->key, a < b ? a : b);
        if (c > 0 || (c == 0 && a >= b))
            abort();    /* must be strictly increasing */
        if (fk_stacktab_find(&r.t, v[i]->key, v[i]->len) != v[i])
            abort();
    }
    free(v);
    fk_parse_stats_free(&r.st);
    fk_stacktab_free(&r.t);
    return 0;
}
