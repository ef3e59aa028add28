/* SPDX-License-Identifier: GPL-2.0-only */
/* Display forms of frame names (see names.h). Only the end of a name is
 * looked at: demanglers put what we drop (parameters, qualifiers, clone
 * suffixes, hashes) last, and names inside template arguments or lambda
 * contexts are left alone. */
#include "names.h"

#include <string.h>

static const struct { const char *suf; enum fk_name_kind kind; } annotations[] = {
    { "_[k]", FK_NAME_KERNEL }, { "_[j]", FK_NAME_JIT }, { "_[i]", FK_NAME_INLINED },
    { "_[p]", FK_NAME_PYTHON },
};

size_t fk_name_base(const char *s, size_t n, enum fk_name_kind *kind)
{
    if (n > 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']') {
        for (size_t i = 0; i < sizeof annotations / sizeof annotations[0]; i++) {
            if (s[n - 2] == annotations[i].suf[2]) {
                *kind = annotations[i].kind;
                return n - 4;
            }
        }
    }
    *kind = FK_NAME_PLAIN;
    return n;
}

static size_t trim(const char *s, size_t n)
{
    while (n && s[n - 1] == ' ')
        n--;
    return n;
}

/* Without trailing " [clone .isra.0]" groups (GCC's clones). */
static size_t strip_clones(const char *s, size_t n)
{
    for (;;) {
        size_t m = trim(s, n);
        if (!m || s[m - 1] != ']')
            return m;
        const char *open = NULL;
        for (size_t i = m - 1; i-- > 0;) {
            if (s[i] == '[') {
                open = s + i;
                break;
            }
        }
        if (!open || (size_t)(s + m - open) < 8 || memcmp(open, "[clone ", 7) || open == s)
            return m;
        n = (size_t)(open - s);
    }
}

/* Without a Rust legacy-mangling hash "::h" + 16 hex digits. */
static size_t strip_rust_hash(const char *s, size_t n)
{
    if (n < 20 || memcmp(s + n - 19, "::h", 3))
        return n;
    for (size_t i = n - 16; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return n;
    }
    return n - 19;
}

/* Without the parameter list and the qualifiers after it:
 * "ns::f<int>(int const&) const &&" -> "ns::f<int>". A list is cut only
 * when it closes the name, follows a name character directly (not a space:
 * "func (file.py:12)" is another profiler's location) and leaves a name. */
static size_t strip_params(const char *s, size_t n)
{
    static const struct { const char *s; size_t n; } quals[] = {
        { " const", 6 }, { " volatile", 9 }, { " noexcept", 9 }, { " &&", 3 }, { " &", 2 },
        { "&&", 2 }, { "&", 1 },
    };
    size_t m = trim(s, n);
    if (!m || (s[m - 1] != ')' && s[m - 1] != 't' && s[m - 1] != 'e' && s[m - 1] != '&'))
        return n;   /* no list and no qualifier can end here: the usual case */
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < sizeof quals / sizeof quals[0]; i++) {
            size_t k = quals[i].n;
            if (m > k && fk_ends_with(s, m, quals[i].s)) {
                m = trim(s, m - k);
                again = true;
                break;
            }
        }
    }
    if (!m || s[m - 1] != ')')
        return n;   /* qualifiers only count after a parameter list */
    int depth = 0;
    size_t i = m;
    while (i-- > 0) {
        if (s[i] == ')')
            depth++;
        else if (s[i] == '(' && --depth == 0)
            break;
    }
    if (depth != 0 || i == (size_t)-1 || i == 0 || s[i - 1] == ' ')
        return n;
    static const char anon[] = "(anonymous namespace)";
    if (m - i == sizeof anon - 1 && !memcmp(s + i, anon, sizeof anon - 1))
        return n;
    /* "operator()" keeps its own parentheses: the list is the one after */
    if (fk_ends_with(s, i, "operator"))
        return n;
    return trim(s, i);
}

const char *fk_name_short(const char *s, size_t n, struct fk_buf *out, size_t *len)
{
    enum fk_name_kind kind;
    size_t base = fk_name_base(s, n, &kind);
    size_t m = strip_rust_hash(s, strip_clones(s, base));
    m = strip_params(s, m);
    if (m == 0)
        m = base;   /* nothing would be left: keep the name as it is */
    if (m == base) {
        *len = n;
        return s;
    }
    if (kind == FK_NAME_PLAIN) {
        *len = m;
        return s;
    }
    fk_buf_reset(out);
    fk_buf_add(out, s, m);
    fk_buf_add(out, s + base, n - base);
    *len = out->len;
    return out->data;
}

void fk_name_display(const char *s, size_t n, struct fk_buf *out)
{
    enum fk_name_kind kind;
    size_t base = fk_name_base(s, n, &kind);
    struct fk_buf tmp = FK_BUF_INIT;
    size_t m;
    const char *sh = fk_name_short(s, base, &tmp, &m);
    fk_buf_add(out, sh, m);
    fk_buf_free(&tmp);
    switch (kind) {
    case FK_NAME_KERNEL: fk_buf_adds(out, " (kernel)"); break;
    case FK_NAME_JIT: fk_buf_adds(out, " (JIT)"); break;
    case FK_NAME_INLINED: fk_buf_adds(out, " (inlined)"); break;
    case FK_NAME_PYTHON: fk_buf_adds(out, " (python)"); break;
    case FK_NAME_PLAIN: break;
    }
}
