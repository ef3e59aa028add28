/* SPDX-License-Identifier: GPL-2.0-only */
/* Folded stacks (folded.h): reading with one count (two only when the
 * caller asks, for diff input), writing with the escapes that keep every
 * name unambiguous: a frame name ending in " DIGITS" or holding a newline
 * would otherwise be read back as a count or split a line. */
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

bool fk_parse_stats_report(const struct fk_parse_stats *st, const char *input, bool strict)
{
    if (!st->bad)
        return true;
    if (strict)
        fk_error("%s:%llu: %s: '%s' (%llu malformed line%s; fix the input or drop --strict)",
                 input, (unsigned long long)st->first_bad_lineno, st->first_bad_why,
                 st->first_bad_text, (unsigned long long)st->bad, st->bad == 1 ? "" : "s");
    else
        fk_warn("%s: skipped %llu malformed line%s; first at line %llu (%s): '%s'", input,
                (unsigned long long)st->bad, st->bad == 1 ? "" : "s",
                (unsigned long long)st->first_bad_lineno, st->first_bad_why,
                st->first_bad_text);
    return !strict;
}

void fk_parse_stats_free(struct fk_parse_stats *st)
{
    free(st->first_bad_text);
    memset(st, 0, sizeof *st);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Trailing unsigned decimal before position end; returns its start or NULL. */
static char *trailing_number(char *s, size_t end, uint64_t *v, bool *overflow)
{
    size_t i = end;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
        i--;
    if (i == end || i == 0 || s[i - 1] != ' ')
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

/* Undo the writer's escapes in s[0..n) in place; returns the new length.
 * Only "\\" and "\xHH" are escapes: any other backslash is kept as it is,
 * so folded text from other tools reads as before. */
static size_t unescape(char *s, size_t n)
{
    char *bs = memchr(s, '\\', n);
    if (!bs)
        return n;
    size_t w = (size_t)(bs - s);
    for (size_t r = w; r < n;) {
        int hi, lo;
        if (s[r] == '\\' && r + 1 < n && s[r + 1] == '\\') {
            s[w++] = '\\';
            r += 2;
        } else if (s[r] == '\\' && r + 3 < n && s[r + 1] == 'x' &&
                   (hi = hexval(s[r + 2])) >= 0 && (lo = hexval(s[r + 3])) >= 0) {
            s[w++] = (char)(hi << 4 | lo);
            r += 4;
        } else {
            s[w++] = s[r++];
        }
    }
    return w;
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
    while (rest && line[rest - 1] == ' ')
        rest--;
    if (!rest) {
        *why = "empty stack";
        return false;
    }
    rest = unescape(line, rest);
    if (memchr(line, '\0', rest)) {
        *why = "NUL byte in stack";
        return false;
    }
    *stack = line;
    *stack_len = rest;
    return true;
}

bool fk_folded_foreach(const char *path, bool two, struct fk_parse_stats *st, fk_folded_fn fn,
                       void *ctx)
{
    struct fk_lineread r;
    if (!fk_lineread_open(&r, path))
        return false;
    bool ok = fk_folded_foreach_lines(&r, two, st, fn, ctx);
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
    return !r->error;
}

void fk_folded_to_table(void *ctx, const char *stack, size_t len, uint64_t count,
                        uint64_t count2, bool has2)
{
    fk_stacktab_add2(ctx, stack, len, count, has2 ? count2 : 0);
}

bool fk_folded_read(const char *path, struct fk_stacktab *t, struct fk_parse_stats *st)
{
    return fk_folded_foreach(path, false, st, fk_folded_to_table, t);
}

unsigned fk_folded_name_escapes(const char *s, size_t n)
{
    unsigned f = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c < 0x20 || c == 0x7f)
            f |= FK_ESC_ANY;
    }
    size_t digits = 0;      /* a count the reader would take: " DIGITS" */
    while (digits < n && s[n - 1 - digits] >= '0' && s[n - 1 - digits] <= '9')
        digits++;
    if (digits && n > digits && s[n - digits - 1] == ' ')
        f |= FK_ESC_ANY;
    if (n && s[0] == '#')
        f |= FK_ESC_FIRST;  /* a comment line */
    if (n && s[n - 1] == ' ')
        f |= FK_ESC_LAST;   /* a space the reader trims */
    return f;
}

/* Most stacks need no escape: name by name, the rules above. */
bool fk_folded_needs_escape(const char *s, size_t n)
{
    const char *end = s + n, *name = s;
    unsigned any = 0;
    bool first = true;
    for (;;) {
        const char *semi = memchr(name, ';', (size_t)(end - name));
        const char *stop = semi ? semi : end;
        unsigned f = fk_folded_name_escapes(name, (size_t)(stop - name));
        any |= f & FK_ESC_ANY;
        if (first && (f & FK_ESC_FIRST))
            return true;
        first = false;
        if (!semi)
            return any || (f & FK_ESC_LAST);
        name = semi + 1;
    }
}

void fk_folded_escape(const char *s, size_t n, struct fk_buf *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool esc = c < 0x20 || c == 0x7f;
        if (c == ' ') {
            size_t j = i + 1;
            while (j < n && s[j] >= '0' && s[j] <= '9')
                j++;
            esc = (j > i + 1 && (j == n || s[j] == ';')) || i + 1 == n;
        }
        if (i == 0 && c == '#')
            esc = true;
        if (c == '\\') {
            fk_buf_add(out, "\\\\", 2);
        } else if (esc) {
            char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
            fk_buf_add(out, e, 4);
        } else {
            fk_buf_addc(out, (char)c);
        }
    }
}

bool fk_folded_write(struct fk_outfile *o, const struct fk_stacktab *t)
{
    struct fk_stack **s = fk_stacktab_sorted(t);
    struct fk_buf esc = FK_BUF_INIT;
    bool ok = true;
    char num[32];
    for (size_t i = 0; i < t->n && ok; i++) {
        /* " COUNT\n" by hand: snprintf costs more than the rest of the line */
        char *d = num + sizeof num;
        *--d = '\n';
        uint64_t c = s[i]->count;
        do
            *--d = (char)('0' + c % 10);
        while (c /= 10);
        *--d = ' ';
        const char *key = s[i]->key;
        size_t len = s[i]->len;
        if (fk_folded_needs_escape(key, len)) {
            fk_buf_reset(&esc);
            fk_folded_escape(key, len, &esc);
            key = esc.data;
            len = esc.len;
        }
        ok = fk_outfile_write(o, key, len)
             && fk_outfile_write(o, d, (size_t)(num + sizeof num - d));
    }
    fk_buf_free(&esc);
    free(s);
    return ok;
}
