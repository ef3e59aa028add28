/* SPDX-License-Identifier: GPL-2.0-only */
/* Folded stacks (folded.h): reading with one count (two only when the
 * caller asks, for diff input) and writing, byte for byte as
 * stackcollapse-perf.pl and flamegraph.pl do: the format has no escapes. */
#include "folded.h"
#include "util/buf.h"
#include "util/lineread.h"

#include <stdlib.h>
#include <string.h>

void fk_parse_stats_bad(struct fk_parse_stats *st, uint64_t lineno, const char *line,
                        size_t len, const char *why)
{
    st->bad++;
    if (st->first_bad_text)
        return;
    size_t n = len < 120 ? len : 120;
    char *t = fk_malloc(n + 4);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)line[i];
        t[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    strcpy(t + n, len > n ? "..." : "");
    st->first_bad_text = t;
    st->first_bad_lineno = lineno;
    st->first_bad_why = why;
}

bool fk_parse_stats_report(const struct fk_parse_stats *st, const char *input, bool strict,
                           char *msg, size_t msglen)
{
    if (msglen)
        msg[0] = 0;
    if (!st->bad)
        return true;
    if (strict)
        snprintf(msg, msglen, "%s:%llu: %s: '%s' (%llu malformed line%s; fix the input or drop "
                 "--strict)", input, (unsigned long long)st->first_bad_lineno, st->first_bad_why,
                 st->first_bad_text, (unsigned long long)st->bad, st->bad == 1 ? "" : "s");
    else
        snprintf(msg, msglen, "%s: skipped %llu malformed line%s; first at line %llu (%s): '%s'",
                 input, (unsigned long long)st->bad, st->bad == 1 ? "" : "s",
                 (unsigned long long)st->first_bad_lineno, st->first_bad_why,
                 st->first_bad_text);
    return !strict;
}

void fk_parse_stats_free(struct fk_parse_stats *st)
{
    free(st->first_bad_text);
    memset(st, 0, sizeof *st);
}

/* Trailing unsigned decimal before position end; returns its start or NULL. */
static char *trailing_number(char *s, size_t end, uint64_t *v, bool *overflow)
{
    size_t i = end;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
        i--;
    if (i == end || i == 0 || (s[i - 1] != ' ' && s[i - 1] != '\t'))
        return NULL;
    uint64_t x = 0;
    for (size_t j = i; j < end; j++) {
        unsigned d = (unsigned)(s[j] - '0');
        if (x > (UINT64_MAX - d) / 10) {
            *overflow = true;
            return NULL;
        }
        x = x * 10 + d;
    }
    *v = x;
    return s + i - 1;   /* the separating space */
}

bool fk_folded_parse_line(char *line, size_t len, bool two, const char **stack,
                          size_t *stack_len, uint64_t *count, uint64_t *count2, bool *has2,
                          const char **why)
{
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    bool overflow = false;
    uint64_t c1;
    char *sp = trailing_number(line, len, &c1, &overflow);
    if (!sp) {
        *why = overflow ? "count does not fit in 64 bits" : "no count at end of line";
        return false;
    }
    *has2 = false;
    size_t rest = (size_t)(sp - line);
    uint64_t c0 = 0;
    char *sp2 = two ? trailing_number(line, rest, &c0, &overflow) : NULL;
    if (overflow) {
        *why = "count does not fit in 64 bits";
        return false;
    }
    if (sp2 && sp2 > line) {
        *has2 = true;
        *count = c0;
        *count2 = c1;
        rest = (size_t)(sp2 - line);
    } else {
        *count = c1;
        *count2 = 0;
    }
    /* one blank separates the count, as flamegraph.pl reads it: a name
     * may end in a space ("std::function<int " from "...<int (int)>") */
    if (!rest) {
        *why = "empty stack";
        return false;
    }
    if (memchr(line, '\0', rest)) {
        *why = "NUL byte in stack";
        return false;
    }
    *stack = line;
    *stack_len = rest;
    return true;
}

bool fk_folded_foreach(const char *path, bool two, struct fk_parse_stats *st, fk_folded_fn fn,
                       void *ctx, char *err, size_t errlen)
{
    struct fk_lineread r;
    bool ok = fk_lineread_open(&r, path) && fk_folded_foreach_lines(&r, two, st, fn, ctx);
    if (!ok)
        snprintf(err, errlen, "%s", r.error);
    fk_lineread_close(&r);
    return ok;
}

bool fk_folded_foreach_lines(struct fk_lineread *r, bool two, struct fk_parse_stats *st,
                             fk_folded_fn fn, void *ctx)
{
    char *line;
    size_t len;
    while ((line = fk_lineread_next(r, &len))) {
        st->lines++;
        if (len == 0 || line[0] == '#')
            continue;
        const char *stack, *why;
        size_t slen;
        uint64_t c, c2;
        bool has2;
        if (!fk_folded_parse_line(line, len, two, &stack, &slen, &c, &c2, &has2, &why)) {
            fk_parse_stats_bad(st, r->lineno, line, len, why);
            continue;
        }
        fn(ctx, stack, slen, c, c2, has2);
    }
    return !r->error[0];
}

void fk_folded_to_table(void *ctx, const char *stack, size_t len, uint64_t count,
                        uint64_t count2, bool has2)
{
    fk_stacktab_add2(ctx, stack, len, count, has2 ? count2 : 0);
}

bool fk_folded_read(const char *path, struct fk_stacktab *t, struct fk_parse_stats *st,
                    char *err, size_t errlen)
{
    return fk_folded_foreach(path, false, st, fk_folded_to_table, t, err, errlen);
}

bool fk_folded_write_lines(size_t n, uint64_t (*stack)(void *ctx, size_t i, struct fk_buf *b),
                           void *ctx, bool (*sink)(void *sink_ctx, const void *data, size_t len),
                           void *sink_ctx)
{
    struct fk_buf b = FK_BUF_INIT;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        size_t start = b.len;
        uint64_t c = stack(ctx, i, &b);
        /* a newline (from a binary's symbol table or a pprof file) */
        for (size_t k = start; k < b.len; k++) {
            char *nl = memchr(b.data + k, '\n', b.len - k);
            if (!nl)
                break;
            *nl = '?';
            k = (size_t)(nl - b.data);
        }
        /* " COUNT\n" by hand: snprintf costs more than the rest of the line */
        char num[32], *d = num + sizeof num;
        *--d = '\n';
        do
            *--d = (char)('0' + c % 10);
        while (c /= 10);
        *--d = ' ';
        fk_buf_add(&b, d, (size_t)(num + sizeof num - d));
        /* lines gathered into blocks: one write, no stdio copy */
        if (b.len >= (1u << 18) || i + 1 == n) {
            ok = sink(sink_ctx, b.data, b.len);
            fk_buf_reset(&b);
        }
    }
    fk_buf_free(&b);
    return ok;
}

static uint64_t table_stack(void *ctx, size_t i, struct fk_buf *b)
{
    struct fk_stack **s = ctx;
    fk_buf_add(b, s[i]->key, s[i]->len);
    return s[i]->count;
}

static bool outfile_sink(void *ctx, const void *data, size_t len)
{
    return fk_outfile_write(ctx, data, len);
}

bool fk_folded_write(struct fk_outfile *o, const struct fk_stacktab *t)
{
    struct fk_stack **s = fk_stacktab_sorted(t);
    bool ok = fk_folded_write_lines(t->n, table_stack, s, outfile_sink, o);
    free(s);
    return ok;
}
