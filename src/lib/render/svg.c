/* SPDX-License-Identifier: GPL-2.0-only */
/* SVG flame graph renderer: stacks -> frame tree (memory grows with unique
 * frames) -> pruned static picture + a data block of every frame, through
 * our own buffered writer. The static part (rects and labels of frames wide
 * enough to see) is what an <img> or an image viewer shows; the embedded
 * script (share/flamegraph.js) reads the data block, which has every frame
 * however narrow, so its search and zoom figures are exact, and lays the
 * picture out again at the window's width. Every name is escaped as text. */
#include "svg.h"
#include "assets.h"
#include "stacks/names.h"
#include "util/buf.h"
#include "util/hindex.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layout constants (pixels). */
#define FONT_SIZE 12
#define FONT_WIDTH 0.59
#define XPAD 10
#define YPAD_TOP (FONT_SIZE * 3)
#define YPAD_BOTTOM (FONT_SIZE * 2 + 10)
#define LEGEND_H 20      /* diff legend row above the status line */

void fk_svg_opts_init(struct fk_svg_opts *o)
{
    memset(o, 0, sizeof *o);
    o->countname = "samples";
    o->nametype = "Function:";
    o->colors = "hot";
    o->width = 1200;
    o->height = 16;
    o->minwidth = 0.1;
}

/* ---- buffered writer ---------------------------------------------------- */

struct wr {
    fk_svg_sink sink;
    void *ctx;
    bool err;
    size_t n;
    char buf[1 << 16];
};

static void w_flush(struct wr *w)
{
    if (w->n && !w->err && !w->sink(w->ctx, w->buf, w->n))
        w->err = true;
    w->n = 0;
}

static void w_mem(struct wr *w, const void *p, size_t len)
{
    if (len > sizeof w->buf - w->n) {
        w_flush(w);
        if (len > sizeof w->buf) {
            if (!w->err && !w->sink(w->ctx, p, len))
                w->err = true;
            return;
        }
    }
    memcpy(w->buf + w->n, p, len);
    w->n += len;
}

static inline void w_c(struct wr *w, char c)
{
    if (w->n == sizeof w->buf)
        w_flush(w);
    w->buf[w->n++] = c;
}

static void w_s(struct wr *w, const char *s) { w_mem(w, s, strlen(s)); }

static void w_u64(struct wr *w, uint64_t v)
{
    char t[24];
    int i = 24;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    w_mem(w, t + i, (size_t)(24 - i));
}

static void w_i64(struct wr *w, int64_t v)
{
    if (v < 0) {
        w_c(w, '-');
        w_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        w_u64(w, (uint64_t)v);
    }
}

/* A coordinate with one decimal, "12" rather than "12.0". */
static void w_fix1(struct wr *w, double x)
{
    if (x < 0) {
        w_c(w, '-');
        x = -x;
    }
    uint64_t t = (uint64_t)llround(x * 10);
    w_u64(w, t / 10);
    if (t % 10) {
        w_c(w, '.');
        w_c(w, (char)('0' + t % 10));
    }
}

/* ---- text escaping ------------------------------------------------------ */

/* Decode one code point at s[*i]; invalid or XML-illegal input gives
 * U+FFFD, consuming one byte, so every input maps to one fixed output. */
static uint32_t next_cp(const unsigned char *s, size_t len, size_t *i)
{
    unsigned c = s[*i];
    if (c < 0x80) {
        (*i)++;
        return (c < 0x20 || c == 0x7f) ? 0xfffd : c;
    }
    size_t need;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 1; cp = c & 0x1f; min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2; cp = c & 0x0f; min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3; cp = c & 0x07; min = 0x10000;
    } else {
        (*i)++;
        return 0xfffd;
    }
    if (len - *i <= need) {
        (*i)++;
        return 0xfffd;
    }
    for (size_t k = 1; k <= need; k++) {
        unsigned b = s[*i + k];
        if ((b & 0xc0) != 0x80) {
            (*i)++;
            return 0xfffd;
        }
        cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
        cp == 0xfffe || cp == 0xffff || (cp >= 0x80 && cp <= 0x9f)) {
        (*i)++;
        return 0xfffd;
    }
    *i += need + 1;
    return cp;
}

static void w_cp(struct wr *w, uint32_t cp)
{
    char t[4];
    size_t n;
    if (cp < 0x80) {
        switch (cp) {
        case '&': w_mem(w, "&amp;", 5); return;
        case '<': w_mem(w, "&lt;", 4); return;
        case '>': w_mem(w, "&gt;", 4); return;
        case '"': w_mem(w, "&quot;", 6); return;
        default: w_c(w, (char)cp); return;
        }
    } else if (cp < 0x800) {
        t[0] = (char)(0xc0 | cp >> 6);
        t[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        t[0] = (char)(0xe0 | cp >> 12);
        t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        t[0] = (char)(0xf0 | cp >> 18);
        t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    w_mem(w, t, n);
}

static inline bool plain_ascii(unsigned char c)
{
    return c >= 0x20 && c < 0x7f && c != '&' && c != '<' && c != '>' && c != '"';
}

/* Escaped text (valid in content and in attribute values). */
static void w_esc(struct wr *w, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && plain_ascii(s[j]))
            j++;
        if (j > i) {
            w_mem(w, s + i, j - i);
            i = j;
            continue;
        }
        w_cp(w, next_cp(s, len, &i));
    }
}

static void w_escs(struct wr *w, const char *s) { w_esc(w, s, strlen(s)); }

/* At most maxcp code points, ending in ".." when cut. */
static void w_esc_trunc(struct wr *w, const char *str, size_t len, size_t maxcp)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len <= maxcp) {
        /* fewer bytes than the limit: fewer code points too */
        w_esc(w, str, len);
        return;
    }
    size_t i = 0, ncp = 0;
    while (i < len && ncp <= maxcp) {
        if (s[i] < 0x80)
            i++;
        else
            (void)next_cp(s, len, &i);
        ncp++;
    }
    if (ncp <= maxcp && i >= len) {
        w_esc(w, str, len);
        return;
    }
    i = 0;
    for (size_t k = 0; k + 2 < maxcp && i < len; k++) {
        if (plain_ascii(s[i]))
            w_c(w, (char)s[i++]);
        else
            w_cp(w, next_cp(s, len, &i));
    }
    w_mem(w, "..", 2);
}

/* ---- frame tree --------------------------------------------------------- */

/* Frame names are interned in `names` (entry index = name id, count = how
 * many nodes use it); children are found by (parent, name id). */
struct node {
    const char *name;           /* interned: stable, NUL-terminated */
    const char *raw;            /* the name as in the input (while building;
                                   interned: the input need not stay) */
    uint32_t rawlen;
    uint32_t nlen;
    uint32_t nameid;
    uint32_t parent;
    uint32_t first, next, last;  /* children list; 0 = none (root is 0) */
    uint64_t c1, c2;             /* counts through this frame */
};

struct tree {
    struct node *v;
    size_t n, cap;
    struct fk_hindex index;     /* child_hash(parent, name id) -> node */
    struct fk_stacktab names;   /* shown names */
    struct fk_stacktab fulls;   /* --names short: full names that were cut,
                                   aux = the short name's id + 1 */
    bool short_names;
    struct fk_buf scratch;
};

static inline uint64_t child_hash(uint32_t parent, uint32_t nameid)
{
    return fk_hash_u64((uint64_t)parent << 32 | nameid);
}

static uint32_t tree_new(struct tree *tr, uint32_t parent, uint32_t nameid)
{
    if (tr->n >= UINT32_MAX - 1)
        fk_die("too many unique frames for one flame graph");
    if (tr->n == tr->cap)
        tr->v = fk_grow(tr->v, &tr->cap, tr->n + 1, sizeof *tr->v);
    uint32_t id = (uint32_t)tr->n++;
    struct node *nd = &tr->v[id];
    memset(nd, 0, sizeof *nd);
    struct fk_stack *ne = &tr->names.v[nameid];
    nd->name = ne->key;
    nd->nlen = ne->len;
    nd->nameid = nameid;
    nd->parent = parent;
    ne->count++;
    if (id) {
        struct node *p = &tr->v[parent];
        if (p->last)
            tr->v[p->last].next = id;
        else
            p->first = id;
        p->last = id;
    }
    return id;
}

/* The id of the name shown for frame s[0..len); *raw: a kept copy of s. */
static uint32_t tree_name(struct tree *tr, const char *s, size_t len, const char **raw)
{
    size_t n = len;
    const char *sh = tr->short_names ? fk_name_short(s, len, &tr->scratch, &n) : s;
    struct fk_stack *e = fk_stacktab_add(&tr->names, sh, n, 0);
    uint32_t id = (uint32_t)(e - tr->names.v);
    *raw = e->key;
    if (sh != s || n != len) {
        struct fk_stack *f = fk_stacktab_add(&tr->fulls, s, len, 0);
        if (!f->aux)
            f->aux = id + 1;
        *raw = f->key;
    }
    return id;
}

static uint32_t tree_child(struct tree *tr, uint32_t parent, const char *name, size_t len,
                           bool adjacent_only)
{
    struct node *p = &tr->v[parent];
    if (p->last) {
        /* sorted input: the child wanted is usually the one added last */
        struct node *l = &tr->v[p->last];
        if (l->rawlen == len && !memcmp(l->raw, name, len))
            return p->last;
    }
    const char *raw;
    uint32_t nameid = tree_name(tr, name, len, &raw);
    if (p->last && tr->v[p->last].nameid == nameid) {
        tr->v[p->last].raw = raw;       /* another spelling of the same short name */
        tr->v[p->last].rawlen = (uint32_t)len;
        return p->last;
    }
    uint64_t h = child_hash(parent, nameid);
    if (!adjacent_only) {
        struct fk_hiter it = fk_hindex_find(&tr->index, h);
        uint32_t e;
        while (fk_hindex_next(&it, &e))
            if (tr->v[e].parent == parent && tr->v[e].nameid == nameid)
                return e;
    }
    uint32_t id = tree_new(tr, parent, nameid);
    tr->v[id].raw = raw;
    tr->v[id].rawlen = (uint32_t)len;
    if (!adjacent_only)
        fk_hindex_add(&tr->index, h, id);
    return id;
}

/* Adding stacks in order: frames inside the byte prefix shared with the
 * previous stack are the same nodes, so only the rest is looked up (prev
 * must stay readable until the next stack is added). */
struct adder {
    uint32_t *path;     /* node per depth of the previous stack */
    size_t *ends;       /* byte offset where that frame ended */
    size_t depth, cap;
    const char *prev;
    size_t prevlen;
};

static inline uint64_t sat(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static void tree_add(struct tree *tr, struct adder *ad, const char *key, size_t len,
                     uint64_t c1, uint64_t c2, bool adjacent_only)
{
    tr->v[0].c1 = sat(tr->v[0].c1, c1);
    tr->v[0].c2 = sat(tr->v[0].c2, c2);
    size_t lcp = 0, m = len < ad->prevlen ? len : ad->prevlen;
    if (ad->prev) {
        /* eight bytes at a time, then the tail */
        while (lcp + 8 <= m) {
            uint64_t x, y;
            memcpy(&x, key + lcp, 8);
            memcpy(&y, ad->prev + lcp, 8);
            if (x != y)
                break;
            lcp += 8;
        }
        while (lcp < m && key[lcp] == ad->prev[lcp])
            lcp++;
    }
    size_t d = 0;
    while (d < ad->depth && ad->ends[d] < lcp) {
        struct node *nd = &tr->v[ad->path[d]];
        nd->c1 = sat(nd->c1, c1);
        nd->c2 = sat(nd->c2, c2);
        d++;
    }
    uint32_t cur = d ? ad->path[d - 1] : 0;
    size_t i = d ? ad->ends[d - 1] + 1 : 0;
    for (;;) {
        const char *semi = memchr(key + i, ';', len - i);
        size_t end = semi ? (size_t)(semi - key) : len;
        cur = tree_child(tr, cur, key + i, end - i, adjacent_only);
        struct node *nd = &tr->v[cur];
        nd->c1 = sat(nd->c1, c1);
        nd->c2 = sat(nd->c2, c2);
        if (d >= ad->cap) {
            size_t cap = ad->cap;
            ad->path = fk_grow(ad->path, &ad->cap, d + 1, sizeof *ad->path);
            ad->ends = fk_grow(ad->ends, &cap, d + 1, sizeof *ad->ends);
        }
        ad->path[d] = cur;
        ad->ends[d] = end;
        d++;
        if (!semi)
            break;
        i = end + 1;
    }
    ad->depth = d;
    ad->prev = key;
    ad->prevlen = len;
}

static int cmp_child(const void *a, const void *b, void *arg)
{
    const struct node *v = arg;
    const struct node *x = &v[*(const uint32_t *)a], *y = &v[*(const uint32_t *)b];
    size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
    int c = memcmp(x->name, y->name, n);
    if (c)
        return c;
    return x->nlen < y->nlen ? -1 : x->nlen > y->nlen;
}

/* Children in name order (sorted input leaves them nearly so already). */
static void tree_sort_children(struct tree *tr)
{
    uint32_t *tmp = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < tr->n; i++) {
        struct node *p = &tr->v[i];
        if (!p->first || p->first == p->last)
            continue;
        size_t k = 0;
        bool sorted = true;
        for (uint32_t c = p->first; c; c = tr->v[c].next) {
            tmp = fk_grow(tmp, &cap, k + 1, sizeof *tmp);
            if (k && cmp_child(&tmp[k - 1], &c, tr->v) > 0)
                sorted = false;
            tmp[k++] = c;
        }
        if (sorted)
            continue;
        qsort_r(tmp, k, sizeof *tmp, cmp_child, tr->v);
        p->first = tmp[0];
        for (size_t j = 0; j + 1 < k; j++)
            tr->v[tmp[j]].next = tmp[j + 1];
        tr->v[tmp[k - 1]].next = 0;
        p->last = tmp[k - 1];
    }
    free(tmp);
}

static void tree_free(struct tree *tr)
{
    free(tr->v);
    fk_hindex_free(&tr->index);
    fk_stacktab_free(&tr->names);
    fk_stacktab_free(&tr->fulls);
    fk_buf_free(&tr->scratch);
}

/* ---- colours ------------------------------------------------------------ */

enum pal { P_HOT, P_MEM, P_IO, P_JAVA, P_JS, P_PERL, P_RED, P_GREEN, P_BLUE, P_AQUA,
           P_YELLOW, P_PURPLE, P_ORANGE, P_WAKEUP, P_CHAIN, P_COLD, P_PYTHON };
static const char *const pal_names[] = { "hot", "mem", "io", "java", "js", "perl", "red",
                                         "green", "blue", "aqua", "yellow", "purple",
                                         "orange", "wakeup", "chain", "cold" };
#define NPAL (sizeof pal_names / sizeof pal_names[0])

static int pal_find(const char *name)
{
    for (size_t i = 0; i < NPAL; i++)
        if (!strcmp(pal_names[i], name))
            return (int)i;
    return -1;
}

bool fk_svg_palette_ok(const char *name) { return name && pal_find(name) >= 0; }

/* Each family: base and span per channel, value v in [0,1] per channel. */
struct family { uint8_t r0, rs, g0, gs, b0, bs; };
static const struct family fam[] = {
    [P_HOT] = { 205, 50, 0, 230, 0, 55 },
    [P_MEM] = { 0, 0, 190, 50, 0, 60 },
    [P_IO] = { 80, 60, 80, 60, 190, 55 },
    [P_RED] = { 200, 55, 50, 80, 50, 80 },
    [P_GREEN] = { 50, 60, 190, 60, 50, 60 },
    [P_BLUE] = { 80, 60, 80, 60, 205, 50 },
    [P_AQUA] = { 50, 60, 165, 55, 165, 55 },
    [P_YELLOW] = { 175, 55, 175, 55, 50, 60 },
    [P_PURPLE] = { 190, 65, 80, 60, 190, 65 },
    [P_ORANGE] = { 190, 65, 90, 65, 0, 55 },
    [P_WAKEUP] = { 0, 0, 110, 60, 200, 55 },
    [P_PYTHON] = { 45, 40, 110, 50, 175, 60 },  /* Python's blue, apart from every other family */
};

static bool contains(const char *s, size_t n, const char *needle)
{
    return memmem(s, n, needle, strlen(needle)) != NULL;
}

/* Where a frame sits in a stack, for the palettes that colour by position:
 * below any marker, above an off-CPU state frame ([S], [D], [R], [other])
 * or the on-CPU frame ([on-CPU]) of flamekit offcpu, or above a "--" frame
 * (a wakeup chain's waker). */
enum zone { Z_PLAIN, Z_OFFCPU, Z_ONCPU, Z_WAKER };

static enum zone marker_zone(const char *s, size_t n)
{
    if ((n == 3 && s[0] == '[' && s[2] == ']' && (s[1] == 'S' || s[1] == 'D' || s[1] == 'R')) ||
        (n == 7 && !memcmp(s, "[other]", 7)))
        return Z_OFFCPU;
    if (n == 8 && !memcmp(s, "[on-CPU]", 8))
        return Z_ONCPU;
    return Z_PLAIN;
}

/* Which family a frame gets under a language-aware or positional palette. */
static enum pal classify(enum pal p, const char *s, size_t n, enum zone z)
{
    /* Python functions (unwind/python.c) stand out under the name palettes */
    if ((p == P_HOT || p == P_JAVA || p == P_JS || p == P_PERL) && fk_ends_with(s, n, "_[p]"))
        return P_PYTHON;
    switch (p) {
    case P_JAVA:
    case P_JS:
    case P_PERL:
        if (fk_ends_with(s, n, "_[k]"))
            return P_ORANGE;
        if (fk_ends_with(s, n, "_[j]"))
            return P_GREEN;
        if (fk_ends_with(s, n, "_[i]"))
            return P_AQUA;
        if (p == P_PERL)
            return (contains(s, n, "::") || contains(s, n, ".pl") || contains(s, n, ".pm"))
                       ? P_GREEN : P_RED;
        if (p == P_JS) {
            if (contains(s, n, ".js") || contains(s, n, "/") || (n && s[0] == '~'))
                return P_GREEN;
            return contains(s, n, "::") ? P_YELLOW : P_RED;
        }
        if (contains(s, n, "::"))
            return P_YELLOW;
        /* Java class paths: java/lang/Thread.run, Ljava/util/... */
        if (contains(s, n, "/") || (n && s[0] == 'L' && contains(s, n, ";")) ||
            contains(s, n, "java") || contains(s, n, "."))
            return P_GREEN;
        return P_RED;
    case P_CHAIN:
        return z == Z_WAKER ? P_BLUE : P_AQUA;
    case P_COLD:        /* off-CPU blue, wakers aqua, on-CPU (--with-cpu) warm */
        return z == Z_WAKER ? P_AQUA : z == Z_ONCPU ? P_HOT : P_BLUE;
    default:
        return p;
    }
}

/* A 64-bit mix (splitmix64's finaliser) of a seed and an index: --rand
 * colours depend on the frame, not on the order frames are written in. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Colours as 0xRRGGBB. */
static uint32_t rgb(unsigned r, unsigned g, unsigned b)
{
    return (uint32_t)((r > 255 ? 255 : r) << 16 | (g > 255 ? 255 : g) << 8 | (b > 255 ? 255 : b));
}

static uint32_t family_color(enum pal f, uint64_t bits)
{
    const struct family *c = &fam[f];
    double v1 = (double)(bits & 0xffff) / 65535.0;
    double v2 = (double)(bits >> 16 & 0xffff) / 65535.0;
    double v3 = (double)(bits >> 32 & 0xffff) / 65535.0;
    /* one dominant value keeps the family's look; channel spread varies it */
    return rgb((unsigned)(c->r0 + c->rs * v1), (unsigned)(c->g0 + c->gs * (f == P_HOT ? v1 : v2)),
               (unsigned)(c->b0 + c->bs * (f == P_HOT ? v2 : v3)));
}

/* Colour bits of a name as the script computes them too (flamegraph.js
 * nameBits): a 32-bit FNV-1a over the code points of the name as written
 * (invalid UTF-8 read as U+FFFD, as w_esc writes it), then a second word
 * from a murmur3 finaliser; an annotation suffix is ignored so kernel/user
 * twins match. */
static uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bU;
    h ^= h >> 13;
    h *= 0xc2b2ae35U;
    h ^= h >> 16;
    return h;
}

static uint64_t name_bits(const char *str, size_t n)
{
    enum fk_name_kind kind;
    size_t len = fk_name_base(str, n, &kind), i = 0;
    const unsigned char *s = (const unsigned char *)str;
    uint32_t h = 0x811c9dc5U;
    while (i < len) {
        uint32_t cp = s[i] >= 0x20 && s[i] < 0x7f ? s[i++] : next_cp(s, len, &i);
        h = (h ^ cp) * 0x01000193U;
    }
    uint32_t h2 = fmix32(h ^ 0x9e3779b9U);
    return (uint64_t)(h2 & 0xffff) << 32 | h;
}

/* Colour by name (the script computes the same from the name). */
static uint32_t name_color(enum pal p, const char *s, size_t n, enum zone z)
{
    return family_color(classify(p, s, n, z), name_bits(s, n));
}

/* WCAG relative luminance of an sRGB colour, then the label colour with the
 * better contrast ratio: black text unless white reads better. */
static double channel_lum(unsigned c)
{
    double v = c / 255.0;
    return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
}

static bool white_label(uint32_t c)
{
    double l = 0.2126 * channel_lum(c >> 16 & 255) + 0.7152 * channel_lum(c >> 8 & 255) +
               0.0722 * channel_lum(c & 255);
    return (1.05 / (l + 0.05)) > ((l + 0.05) / 0.05);
}

static void w_hex6(struct wr *w, uint32_t c)
{
    static const char hex[] = "0123456789abcdef";
    char t[6];
    for (int i = 5; i >= 0; i--, c >>= 4)
        t[i] = hex[c & 15];
    w_mem(w, t, 6);
}

static void w_color(struct wr *w, uint32_t c)
{
    w_c(w, '#');
    w_hex6(w, c);
}
/* ---- rendering ---------------------------------------------------------- */

enum colors { COL_NAME, COL_NODE, COL_DIFF };

struct sframe {
    uint32_t node, color;
    uint8_t cls;            /* 0, 1 new, 2 vanished */
    int y;
    double x, w;
};

struct ctx {
    struct wr *w;
    const struct fk_svg_opts *o;
    struct tree tr;
    enum pal pal;
    enum colors colors;
    uint32_t *ncol;         /* COL_NAME: colour per name id (table order) */
    uint32_t *vcol;         /* COL_NODE: colour per node */
    uint32_t *newid;        /* table name id -> written name id */
    struct sframe *sf;      /* the static picture's frames */
    size_t nsf, sfcap;
    int width, fh;
    double scale;           /* px per count */
    double minpx;
    int maxdepth;           /* deepest visible frame */
    int height;
    int ypad_top, ypad_bottom;
    double beforescale;     /* --normalize: BEFORE scaled to AFTER's total */
    double afterscale;      /* --normalize --negate: AFTER to BEFORE's */
    double maxdelta;
};

static inline uint64_t wcount(const struct ctx *c, const struct node *n)
{
    return c->o->diff && !c->o->negate ? n->c2 : n->c1;
}

/* AFTER - BEFORE (negate: BEFORE - AFTER), BEFORE normalized if asked. */
static double delta(const struct ctx *c, const struct node *n)
{
    double before = (double)n->c1 * c->beforescale, after = (double)n->c2 * c->afterscale;
    return c->o->negate ? before - after : after - before;
}

static bool visible(const struct ctx *c, const struct node *n)
{
    uint64_t v = wcount(c, n);
    return v && (double)v * c->scale >= c->minpx;
}

/* Iterative DFS over visible frames: visit(node, offset, depth). */
struct it { uint32_t node, next; uint64_t off; int depth; };

static void walk(struct ctx *c, void (*visit)(struct ctx *, uint32_t, uint64_t, int))
{
    struct it *st = NULL;
    size_t cap = 0, sp = 0;
    st = fk_grow(st, &cap, 1, sizeof *st);
    st[sp++] = (struct it){ 0, c->tr.v[0].first, 0, 0 };
    visit(c, 0, 0, 0);
    while (sp) {
        struct it *t = &st[sp - 1];
        if (!t->next) {
            sp--;
            continue;
        }
        uint32_t id = t->next;
        const struct node *nd = &c->tr.v[id];
        t->next = nd->next;
        uint64_t off = t->off;
        t->off += wcount(c, nd);
        if (!visible(c, nd))
            continue;
        int depth = t->depth + 1;
        visit(c, id, off, depth);
        st = fk_grow(st, &cap, sp + 1, sizeof *st);
        st[sp++] = (struct it){ id, nd->first, off, depth };
    }
    free(st);
}

/* Every node in pre-order (children in their list order), without a stack:
 * the next node and how many levels up it is from the one before plus one
 * (0 = first child, 1 = next sibling, 2 = the parent's next sibling...). */
static uint32_t preorder_next(const struct tree *tr, uint32_t i, unsigned *up)
{
    if (tr->v[i].first) {
        *up = 0;
        return tr->v[i].first;
    }
    unsigned k = 1;
    while (i) {
        if (tr->v[i].next) {
            *up = k;
            return tr->v[i].next;
        }
        i = tr->v[i].parent;
        k++;
    }
    return 0;
}

static void measure(struct ctx *c, uint32_t id, uint64_t off, int depth)
{
    (void)off;
    if (depth > c->maxdepth)
        c->maxdepth = depth;
    if (c->o->diff) {
        double d = fabs(delta(c, &c->tr.v[id]));
        if (d > c->maxdelta)
            c->maxdelta = d;
    }
}

static int frame_y(const struct ctx *c, int depth)
{
    if (c->o->inverted)
        return c->ypad_top + depth * c->fh;
    return c->height - c->ypad_bottom - (depth + 1) * c->fh;
}

/* Diff colours: red grew, blue shrank (swapped with --negate, where the
 * delta is BEFORE - AFTER), white to saturated by |delta| / the largest.
 * Frames only in the profile drawn (new; vanished with --negate) are at
 * least 60% saturated: a small new function must not look unchanged. The
 * same formula is in share/flamegraph.js (diffColor). */
static uint32_t diff_color(const struct ctx *c, const struct node *nd)
{
    double d = delta(c, nd);
    double r = c->maxdelta > 0 ? fabs(d) / c->maxdelta : 0;
    if (r > 1)
        r = 1;
    bool only = c->o->negate ? nd->c2 == 0 : nd->c1 == 0;
    if (only && d != 0 && r < 0.6)
        r = 0.6;
    unsigned v = (unsigned)lround(225.0 * (1 - r));
    if (d > 0)
        return rgb(255, v, v);
    if (d < 0)
        return rgb(v, v, 255);
    return rgb(225, 225, 225);
}

static uint32_t node_color(const struct ctx *c, uint32_t id)
{
    const struct node *nd = &c->tr.v[id];
    switch (c->colors) {
    case COL_DIFF: return diff_color(c, nd);
    case COL_NODE: return c->vcol[id];
    case COL_NAME: break;
    }
    return c->ncol[nd->nameid];
}

/* The static picture: frames collected in the walk, then written as one
 * <path> per colour (and class: new/vanished in a diff) with a subpath per
 * frame, then the labels. Nothing in it is interactive: the script draws
 * its own frames from the data block. */
static void collect(struct ctx *c, uint32_t id, uint64_t off, int depth)
{
    const struct node *nd = &c->tr.v[id];
    c->sf = fk_grow(c->sf, &c->sfcap, c->nsf + 1, sizeof *c->sf);
    struct sframe *f = &c->sf[c->nsf++];
    f->node = id;
    f->color = node_color(c, id);
    f->cls = c->o->diff && id ? (nd->c1 == 0 ? 1 : nd->c2 == 0 ? 2 : 0) : 0;
    f->y = frame_y(c, depth);
    f->x = XPAD + (double)off * c->scale;
    f->w = (double)wcount(c, nd) * c->scale;
}

static int cmp_sframe(const void *a, const void *b)
{
    const struct sframe *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    if (x->color != y->color)
        return x->color < y->color ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* One decimal, without a leading zero: "12.3", ".4", "7". */
static void w_short1(struct wr *w, double x)
{
    if (x < 0) {
        w_c(w, '-');
        x = -x;
    }
    uint64_t t = (uint64_t)llround(x * 10);
    if (t / 10)
        w_u64(w, t / 10);
    if (t % 10) {
        w_c(w, '.');
        w_c(w, (char)('0' + t % 10));
    } else if (!(t / 10)) {
        w_c(w, '0');
    }
}

static void emit_static(struct ctx *c)
{
    struct wr *w = c->w;
    static const char *const cls[] = { "", " class=\"new\"", " class=\"gone\"" };
    qsort(c->sf, c->nsf, sizeof *c->sf, cmp_sframe);
    for (size_t i = 0; i < c->nsf;) {
        size_t j = i;
        w_s(w, "<path");
        w_s(w, cls[c->sf[i].cls]);
        w_s(w, " fill=\"");
        w_color(w, c->sf[i].color);
        w_s(w, "\" d=\"");
        for (; j < c->nsf && c->sf[j].color == c->sf[i].color && c->sf[j].cls == c->sf[i].cls; j++) {
            const struct sframe *f = &c->sf[j];
            w_c(w, 'M');
            w_short1(w, f->x);
            w_c(w, ' ');
            w_i64(w, f->y);
            w_c(w, 'h');
            w_short1(w, f->w);
            w_c(w, 'v');
            w_i64(w, c->fh - 1);
            w_mem(w, "h-", 2);
            w_short1(w, f->w);
            w_c(w, 'z');
        }
        w_s(w, "\"/>\n");
        i = j;
    }
    for (size_t i = 0; i < c->nsf; i++) {
        const struct sframe *f = &c->sf[i];
        size_t chars = (size_t)((f->w - 6) / (FONT_SIZE * FONT_WIDTH));
        if (chars < 3)
            continue;
        const struct node *nd = &c->tr.v[f->node];
        bool white = white_label(f->color);
        w_mem(w, white ? "<text class=\"w\" x=\"" : "<text x=\"", white ? 19 : 9);
        w_fix1(w, f->x + 3);
        w_mem(w, "\" y=\"", 5);
        w_fix1(w, f->y + c->fh / 2.0 + FONT_SIZE / 2.0 - 2.5);
        w_mem(w, "\">", 2);
        w_esc_trunc(w, nd->name, nd->nlen, chars);
        w_mem(w, "</text>\n", 8);
    }
}

/* A JSON value escaped as XML text. */
static void w_json(struct wr *w, const json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
    if (s) {
        w_escs(w, s);
        free(s);
    }
}

static void w_attr_num(struct wr *w, const char *name, int64_t v)
{
    w_c(w, ' ');
    w_s(w, name);
    w_mem(w, "=\"", 2);
    w_i64(w, v);
    w_c(w, '"');
}

static void w_attr_str(struct wr *w, const char *name, const char *v)
{
    w_c(w, ' ');
    w_s(w, name);
    w_mem(w, "=\"", 2);
    w_escs(w, v);
    w_c(w, '"');
}

/* A double that the script reads back exactly (17 significant digits). */
static void w_attr_dbl(struct wr *w, const char *name, double v)
{
    char t[40];
    snprintf(t, sizeof t, "%.17g", v);
    w_attr_str(w, name, t);
}

static void w_textel(struct wr *w, const char *cls, double x, double y, const char *text)
{
    w_mem(w, "<text", 5);
    if (cls)
        w_attr_str(w, "class", cls);
    w_mem(w, " x=\"", 4);
    w_fix1(w, x);
    w_mem(w, "\" y=\"", 5);
    w_fix1(w, y);
    w_mem(w, "\">", 2);
    w_escs(w, text);
    w_mem(w, "</text>\n", 8);
}

/* Numbers in the data block: base 32, most significant digit first, the
 * last digit from "0-9a-v" and the others from "w-zA-Z-_", so numbers need
 * no separators and no XML escaping (the script's readNum). */
static const char vlq_digits[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";

static void w_vlq(struct wr *w, uint64_t v)
{
    char t[14];
    int i = 14;
    t[--i] = vlq_digits[v & 31];
    for (v >>= 5; v; v >>= 5)
        t[--i] = vlq_digits[32 + (v & 31)];
    w_mem(w, t + i, (size_t)(14 - i));
}

struct idcount { uint32_t id; uint64_t count; const struct fk_stack *e; };

/* most used first, then by name: the same order whatever the input order */
static int cmp_idcount(const void *a, const void *b)
{
    const struct idcount *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    size_t n = x->e->len < y->e->len ? x->e->len : y->e->len;
    int c = memcmp(x->e->key, y->e->key, n);
    return c ? c : (x->e->len > y->e->len) - (x->e->len < y->e->len);
}

/* Name ids in the order written: most used first, so most records use a
 * one-digit id. Returns that order (written id -> table id). */
static uint32_t *order_names(struct ctx *c)
{
    size_t m = c->tr.names.n;
    struct idcount *v = fk_malloc((m ? m : 1) * sizeof *v);
    for (size_t i = 0; i < m; i++)
        v[i] = (struct idcount){ (uint32_t)i, c->tr.names.v[i].count, &c->tr.names.v[i] };
    qsort(v, m, sizeof *v, cmp_idcount);
    uint32_t *order = fk_malloc((m ? m : 1) * sizeof *order);
    c->newid = fk_malloc((m ? m : 1) * sizeof *c->newid);
    for (size_t i = 0; i < m; i++) {
        order[i] = v[i].id;
        c->newid[v[i].id] = (uint32_t)i;
    }
    free(v);
    return order;
}

/* Colours of every name (COL_NAME) or node (COL_NODE). */
static void compute_colors(struct ctx *c)
{
    const struct fk_svg_opts *o = c->o;
    if (o->diff) {
        c->colors = COL_DIFF;
        return;
    }
    bool positional = c->pal == P_CHAIN || c->pal == P_COLD;
    if (!o->rand && !positional) {
        c->colors = COL_NAME;
        c->ncol = fk_malloc((c->tr.names.n ? c->tr.names.n : 1) * sizeof *c->ncol);
        for (size_t i = 0; i < c->tr.names.n; i++)
            c->ncol[i] = name_color(c->pal, c->tr.names.v[i].key, c->tr.names.v[i].len, Z_PLAIN);
        return;
    }
    c->colors = COL_NODE;
    c->vcol = fk_malloc(c->tr.n * sizeof *c->vcol);
    /* zone[d]: the zone of the frame at depth d (a "--" or state frame at
     * depth <= d moves it up) */
    uint8_t *chain = fk_calloc(1, sizeof *chain);
    size_t chaincap = 1;
    uint64_t seed = 0x666c616d656b6974ULL;   /* fixed: --rand is reproducible */
    unsigned up;
    size_t depth = 0;
    c->vcol[0] = name_color(c->pal, "all", 3, Z_PLAIN);
    chain[0] = Z_PLAIN;
    for (uint32_t i = preorder_next(&c->tr, 0, &up); i; i = preorder_next(&c->tr, i, &up)) {
        depth = depth + 1 - up;
        chain = fk_grow(chain, &chaincap, depth + 1, sizeof *chain);
        const struct node *nd = &c->tr.v[i];
        enum zone after = (enum zone)chain[depth - 1];
        if (nd->nlen == 2 && !memcmp(nd->name, "--", 2))
            chain[depth] = Z_WAKER;
        else if (after == Z_PLAIN)
            chain[depth] = (uint8_t)marker_zone(nd->name, nd->nlen);
        else
            chain[depth] = (uint8_t)after;
        /* a "--" takes its parent's colour, a state frame its own zone's */
        enum zone z = chain[depth] == Z_WAKER ? after : (enum zone)chain[depth];
        if (o->rand)
            c->vcol[i] = family_color(classify(c->pal, nd->name, nd->nlen, z),
                                      mix64(seed ^ (uint64_t)i * 0x2545f4914f6cdd1dULL));
        else
            c->vcol[i] = name_color(c->pal, nd->name, nd->nlen, z);
    }
    free(chain);
}

/* The data block: every frame, drawn or not, so the script's figures are
 * exact and zooming can draw what was too narrow here. Lines: the names
 * (under COL_NAME the script colours them by name_color's rule and the
 * palette named in data-palette), "ID<TAB>FULL NAME" for
 * names --names short cut, then one line of node records in pre-order:
 * levels up from the node before plus one (0: its first child, 1: its
 * next sibling...), name id, count (and the AFTER count in a diff), then under
 * COL_NODE one line of 6-digit colours per node. */
static void emit_data(struct ctx *c)
{
    struct wr *w = c->w;
    const struct fk_svg_opts *o = c->o;
    uint32_t *order = order_names(c);
    size_t nfull = 0;
    for (size_t i = 0; i < c->tr.fulls.n; i++)
        nfull += c->tr.fulls.v[i].aux != 0;
    static const char *const colnames[] = { "name", "node", "diff" };
    w_s(w, "<metadata class=\"fk-data\" data-v=\"1\"");
    w_attr_num(w, "data-names", (int64_t)c->tr.names.n);
    w_attr_num(w, "data-fulls", (int64_t)nfull);
    w_attr_num(w, "data-nodes", (int64_t)c->tr.n);
    w_attr_str(w, "data-colors", colnames[c->colors]);
    if (c->colors == COL_NAME)
        w_attr_str(w, "data-palette", c->o->colors);
    w_attr_num(w, "data-root", c->newid[c->tr.v[0].nameid]);
    w_mem(w, " data-c1=\"", 10);
    w_u64(w, c->tr.v[0].c1);
    w_mem(w, "\" data-c2=\"", 11);
    w_u64(w, c->tr.v[0].c2);
    w_c(w, '"');
    if (o->diff) {
        w_attr_dbl(w, "data-maxdelta", c->maxdelta);
        w_attr_dbl(w, "data-scale1", c->beforescale);
        w_attr_dbl(w, "data-scale2", c->afterscale);
    }
    w_s(w, ">\n");
    for (size_t k = 0; k < c->tr.names.n; k++) {
        const struct fk_stack *e = &c->tr.names.v[order[k]];
        w_esc(w, e->key, e->len);
        w_c(w, '\n');
    }
    /* full names by short name id, then by name */
    struct idcount *fv = fk_malloc((nfull ? nfull : 1) * sizeof *fv);
    size_t k = 0;
    for (size_t i = 0; i < c->tr.fulls.n; i++)
        if (c->tr.fulls.v[i].aux)
            fv[k++] = (struct idcount){ 0, UINT64_MAX - c->newid[c->tr.fulls.v[i].aux - 1],
                                        &c->tr.fulls.v[i] };
    qsort(fv, nfull, sizeof *fv, cmp_idcount);
    for (size_t i = 0; i < nfull; i++) {
        const struct fk_stack *e = fv[i].e;
        w_u64(w, c->newid[e->aux - 1]);
        w_c(w, '\t');
        w_esc(w, e->key, e->len);
        w_c(w, '\n');
    }
    free(fv);
    unsigned up;
    for (uint32_t i = preorder_next(&c->tr, 0, &up); i; i = preorder_next(&c->tr, i, &up)) {
        const struct node *nd = &c->tr.v[i];
        w_vlq(w, up);
        w_vlq(w, c->newid[nd->nameid]);
        w_vlq(w, nd->c1);
        if (o->diff)
            w_vlq(w, nd->c2);
    }
    w_c(w, '\n');
    if (c->colors == COL_NODE) {
        w_hex6(w, c->vcol[0]);
        for (uint32_t i = preorder_next(&c->tr, 0, &up); i; i = preorder_next(&c->tr, i, &up))
            w_hex6(w, c->vcol[i]);
        w_c(w, '\n');
    }
    w_s(w, "</metadata>\n");
    free(order);
}

/* Swatch and word pairs of the diff legend, at the bottom (the script
 * keeps it on screen with the status line). */
static void emit_legend(struct ctx *c)
{
    struct wr *w = c->w;
    bool neg = c->o->negate;
    struct { uint32_t fill; const char *cls, *word; } items[] = {
        { rgb(255, 0, 0), NULL, neg ? "shrank" : "grew" },
        { rgb(0, 0, 255), NULL, neg ? "grew" : "shrank" },
        { rgb(255, 90, 90), neg ? "gone" : "new", neg ? "vanished (not in after)" : "new (not in before)" },
    };
    double y = c->height - c->ypad_bottom + 8, x = XPAD;
    w_s(w, "<g class=\"fk-legend\">\n");
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        w_mem(w, "<rect x=\"", 9);
        w_fix1(w, x);
        w_mem(w, "\" y=\"", 5);
        w_fix1(w, y);
        w_s(w, "\" width=\"12\" height=\"12\" fill=\"");
        w_color(w, items[i].fill);
        if (items[i].cls) {
            w_s(w, "\" class=\"");
            w_s(w, items[i].cls);
        }
        w_s(w, "\"/>");
        w_textel(w, NULL, x + 16, y + 10.5, items[i].word);
        x += 16 + strlen(items[i].word) * FONT_SIZE * FONT_WIDTH + 14;
    }
    w_textel(w, "fk-legend-note", x, y + 10.5,
             neg ? "width: before; colour: before - after, for that frame (red: it shrank)"
                 : "width: after; colour: after - before, for that frame (vanished frames: flamekit diff --negate)");
    w_s(w, "</g>\n");
}

/* A flame graph being built: the frame tree grows as stacks come in; the
 * stacks themselves are not kept. */
struct fk_svg_builder {
    const struct fk_svg_opts *o;
    struct tree tr;
    struct adder ad;
    struct fk_buf copy[2];      /* the last two stacks (the adder compares them) */
    int cur;
    struct fk_buf rev;          /* --reverse: the stack reversed */
    bool overflow;              /* a count through the root was capped */
};

struct fk_svg_builder *fk_svg_builder_new(const struct fk_svg_opts *o)
{
    struct fk_svg_builder *b = fk_calloc(1, sizeof *b);
    b->o = o;
    fk_stacktab_init(&b->tr.names);
    fk_stacktab_init(&b->tr.fulls);
    b->tr.short_names = !o->full_names;
    (void)fk_stacktab_add(&b->tr.names, "all", 3, 0);
    tree_new(&b->tr, 0, 0);
    return b;
}

/* kept: key stays readable until the next add (a table's key) */
static void builder_add(struct fk_svg_builder *b, const char *key, size_t len, uint64_t c1,
                        uint64_t c2, bool kept)
{
    if (b->o->reverse) {
        /* the frames in reverse order; the tree merges what becomes equal */
        struct fk_buf *r = &b->rev;
        fk_buf_reset(r);
        size_t end = len;
        for (;;) {
            const char *p = memrchr(key, ';', end);
            size_t start = p ? (size_t)(p - key) + 1 : 0;
            fk_buf_add(r, key + start, end - start);
            if (!p)
                break;
            fk_buf_addc(r, ';');
            end = start - 1;
        }
        key = r->data ? r->data : "";
        kept = false;
    }
    if (!kept) {
        struct fk_buf *d = &b->copy[b->cur];
        b->cur ^= 1;
        fk_buf_reset(d);
        fk_buf_add(d, key, len);
        key = d->data ? d->data : "";
    }
    const struct node *root = &b->tr.v[0];
    if (root->c1 + c1 < c1 || root->c2 + c2 < c2)
        b->overflow = true;     /* tree_add caps the sums */
    tree_add(&b->tr, &b->ad, key, len, c1, c2, b->o->flamechart);
}

void fk_svg_builder_add(struct fk_svg_builder *b, const char *stack, size_t len, uint64_t count,
                        uint64_t count2)
{
    builder_add(b, stack, len, count, count2, false);
}

bool fk_svg_minwidth_parse(const char *s, struct fk_svg_opts *o)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    bool pct = *end == '%';
    if (pct)
        end++;
    if (errno || end == s || *end || !(v >= 0) || (pct && v > 100) || v > 1e6)
        return false;
    o->minwidth = v;
    o->minwidth_pct = pct;
    return true;
}

void fk_svg_builder_add_folded(void *ctx, const char *stack, size_t len, uint64_t count,
                               uint64_t count2, bool has2)
{
    builder_add(ctx, stack, len, count, has2 ? count2 : 0, false);
}

void fk_svg_builder_add_table(struct fk_svg_builder *b, const struct fk_stacktab *t)
{
    for (size_t i = 0; i < t->n; i++)
        builder_add(b, t->v[i].key, t->v[i].len, t->v[i].count, t->v[i].count2, false);
}

uint64_t fk_svg_builder_total(const struct fk_svg_builder *b, bool *overflow)
{
    *overflow = b->overflow;
    return b->tr.v[0].c1;
}

void fk_svg_builder_free(struct fk_svg_builder *b)
{
    if (!b)
        return;
    tree_free(&b->tr);
    free(b->ad.path);
    free(b->ad.ends);
    fk_buf_free(&b->copy[0]);
    fk_buf_free(&b->copy[1]);
    fk_buf_free(&b->rev);
    free(b);
}

bool fk_svg_builder_render(struct fk_svg_builder *b, fk_svg_sink sink, void *sinkctx)
{
    const struct fk_svg_opts *opts = b->o;
    struct fk_svg_opts defaults;
    fk_svg_opts_init(&defaults);
    struct fk_svg_opts o = *opts;
    if (!o.countname) o.countname = defaults.countname;
    if (!o.nametype) o.nametype = defaults.nametype;
    if (!o.colors || pal_find(o.colors) < 0) o.colors = defaults.colors;
    if (o.width < 2 * XPAD + 10) o.width = defaults.width;
    if (o.height <= 1) o.height = defaults.height;
    if (!(o.minwidth >= 0)) o.minwidth = defaults.minwidth;
    if (!o.title)
        o.title = o.diff ? "Differential Flame Graph"
                         : o.inverted ? "Icicle Graph" : o.flamechart ? "Flame Chart" : "Flame Graph";

    struct ctx c;
    memset(&c, 0, sizeof c);
    c.w = fk_malloc(sizeof *c.w);
    c.w->sink = sink;
    c.w->ctx = sinkctx;
    c.w->err = false;
    c.w->n = 0;
    c.o = &o;
    c.pal = (enum pal)pal_find(o.colors);
    c.width = o.width;
    c.fh = o.height;
    /* Insertion order: folded files are usually sorted already, so shared
     * prefixes are reused; any order merges right through the hash, and
     * children are put in name order here. */
    if (!o.flamechart)
        tree_sort_children(&b->tr);
    c.tr = b->tr;               /* the builder's tree, freed with it */

    struct node *root = &c.tr.v[0];
    c.beforescale = c.afterscale = 1;
    if (o.diff && o.normalize && !o.negate && root->c1)
        c.beforescale = (double)root->c2 / (double)root->c1;
    if (o.diff && o.normalize && o.negate && root->c2)
        c.afterscale = (double)root->c1 / (double)root->c2;
    uint64_t total = wcount(&c, root);
    double usable = o.width - 2 * XPAD;
    c.scale = total ? usable / (double)total : 0;
    c.minpx = o.minwidth_pct ? usable * o.minwidth / 100.0 : o.minwidth;
    c.ypad_top = YPAD_TOP + (o.subtitle ? FONT_SIZE * 2 : 0);
    c.ypad_bottom = YPAD_BOTTOM + (o.diff ? LEGEND_H : 0);
    c.maxdepth = 0;
    if (total)
        walk(&c, measure);
    c.height = c.ypad_top + c.ypad_bottom + (c.maxdepth + 1) * c.fh;
    if (!total)
        c.height = c.ypad_top + c.ypad_bottom + 3 * c.fh;
    compute_colors(&c);

    struct wr *w = c.w;
    w_s(w, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"fkg\"");
    w_attr_num(w, "width", o.width);
    w_attr_num(w, "height", c.height);
    w_mem(w, " viewBox=\"0 0 ", 14);
    w_i64(w, o.width);
    w_c(w, ' ');
    w_i64(w, c.height);
    w_c(w, '"');
    /* what the script needs to lay frames out again */
    w_attr_num(w, "data-fh", c.fh);
    w_attr_num(w, "data-ytop", c.ypad_top);
    w_attr_num(w, "data-ybottom", c.ypad_bottom);
    w_attr_dbl(w, "data-minw", o.minwidth);
    if (o.minwidth_pct)
        w_attr_num(w, "data-minwpct", 1);
    w_attr_str(w, "data-countname", o.countname);
    w_attr_str(w, "data-nametype", o.nametype);
    if (o.diff)
        w_attr_num(w, "data-diff", o.negate ? 2 : 1);
    if (o.inverted)
        w_attr_num(w, "data-inverted", 1);
    w_s(w, ">\n<title>");
    w_escs(w, o.title);
    w_s(w, "</title>\n<style>/*<![CDATA[*/\n");
    w_mem(w, fk_svg_css, fk_svg_css_len);
    w_mem(w, "/*]]>*/</style>\n<script type=\"text/javascript\">//<![CDATA[\n", 59);
    w_mem(w, fk_svg_js, fk_svg_js_len);
    w_mem(w, "//]]></script>\n", 15);
    if (o.notes) {
        /* notes keep their line breaks (legal XML); other controls go */
        w_s(w, "<desc class=\"fk-notes\">");
        for (const char *p = o.notes;;) {
            const char *nl = strchr(p, '\n');
            w_esc(w, p, nl ? (size_t)(nl - p) : strlen(p));
            if (!nl)
                break;
            w_c(w, '\n');
            p = nl + 1;
        }
        w_s(w, "</desc>\n");
    }
    if (o.metadata) {
        w_s(w, "<metadata class=\"fk-meta\">");
        w_json(w, o.metadata);
        w_s(w, "</metadata>\n");
    }
    w_s(w, "<rect class=\"fk-bg\" x=\"0\" y=\"0\"");
    w_attr_num(w, "width", o.width);
    w_attr_num(w, "height", c.height);
    w_s(w, "/>\n");
    w_textel(w, "fk-title", o.width / 2.0, FONT_SIZE * 2, o.title);
    if (o.subtitle)
        w_textel(w, "fk-subtitle", o.width / 2.0, FONT_SIZE * 4, o.subtitle);
    if (!total) {
        w_textel(w, "fk-title fk-empty", o.width / 2.0, c.ypad_top + 2 * c.fh,
                 "No stacks: nothing was sampled");
    }
    w_s(w, "<g class=\"fk-static\">\n");
    if (total) {
        walk(&c, collect);
        emit_static(&c);
    }
    w_s(w, "</g>\n");
    if (o.diff)
        emit_legend(&c);
    emit_data(&c);
    w_s(w, "</svg>\n");
    w_flush(w);
    bool ok = !w->err;
    free(c.ncol);
    free(c.vcol);
    free(c.newid);
    free(c.sf);
    free(w);
    return ok;
}

bool fk_svg_render(const struct fk_stacktab *t, const struct fk_svg_opts *o, fk_svg_sink sink,
                   void *ctx)
{
    struct fk_svg_builder *b = fk_svg_builder_new(o);
    for (size_t i = 0; i < t->n; i++)
        builder_add(b, t->v[i].key, t->v[i].len, t->v[i].count, t->v[i].count2, true);
    bool ok = fk_svg_builder_render(b, sink, ctx);
    fk_svg_builder_free(b);
    return ok;
}

static bool outfile_sink(void *ctx, const void *data, size_t len)
{
    return fk_outfile_write(ctx, data, len);
}

bool fk_svg_write(struct fk_outfile *out, const struct fk_stacktab *t,
                  const struct fk_svg_opts *o)
{
    return fk_svg_render(t, o, outfile_sink, out);
}

bool fk_svg_builder_write(struct fk_outfile *out, struct fk_svg_builder *b)
{
    return fk_svg_builder_render(b, outfile_sink, out);
}
