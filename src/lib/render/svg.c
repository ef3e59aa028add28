/* SPDX-License-Identifier: GPL-2.0-only */
/* SVG flame graph renderer: stacks -> frame tree (memory grows with unique
 * frames) -> pruned layout -> compact SVG through our own buffered writer.
 * The embedded script (share/flamegraph.js) rebuilds the tree from the
 * document order: frames come in pre-order, depth is given by y, the count
 * is the first number of the title's " (...)" suffix, and an explicit
 * data-o="OFFSET" appears only where pruned siblings left a gap. */
#include "svg.h"
#include "assets.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Layout constants (pixels). */
#define FONT_SIZE 12
#define FONT_WIDTH 0.59
#define XPAD 10
#define YPAD_TOP (FONT_SIZE * 3)
#define YPAD_BOTTOM (FONT_SIZE * 2 + 10)

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

/* 1,234,567 */
static void w_u64_grouped(struct wr *w, uint64_t v)
{
    char t[32];
    int i = 32, d = 0;
    do {
        if (d && d % 3 == 0)
            t[--i] = ',';
        t[--i] = (char)('0' + v % 10);
        v /= 10;
        d++;
    } while (v);
    w_mem(w, t + i, (size_t)(32 - i));
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

/* num/den as a percentage with two decimals, exactly rounded. */
static void w_pct(struct wr *w, uint64_t num, uint64_t den)
{
    unsigned __int128 q = den ? ((unsigned __int128)num * 10000 + den / 2) / den : 0;
    uint64_t v = (uint64_t)q;
    w_u64(w, v / 100);
    w_c(w, '.');
    w_c(w, (char)('0' + v / 10 % 10));
    w_c(w, (char)('0' + v % 10));
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

struct node {
    const char *name;
    uint32_t nlen;
    uint32_t parent;
    uint32_t first, next, last;  /* children list; 0 = none (root is 0) */
    uint64_t c1, c2;             /* counts through this frame */
};

struct tree {
    struct node *v;
    size_t n, cap;
    uint32_t *index;    /* hash of (parent, name) -> node + 1 */
    uint32_t *hashes;
    size_t mask;
};

static uint32_t child_hash(uint32_t parent, const char *name, size_t len)
{
    uint64_t h = fk_hash(name, len) ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ULL);
    h ^= h >> 31;
    return (uint32_t)h;
}

static void tree_rehash(struct tree *tr)
{
    size_t size = (tr->mask + 1) * 2;
    if (size < 1024)
        size = 1024;
    free(tr->index);
    tr->index = fk_calloc(size, sizeof *tr->index);
    tr->mask = size - 1;
    for (size_t i = 1; i < tr->n; i++) {
        size_t p = tr->hashes[i] & tr->mask;
        while (tr->index[p])
            p = (p + 1) & tr->mask;
        tr->index[p] = (uint32_t)i + 1;
    }
}

static uint32_t tree_new(struct tree *tr, uint32_t parent, const char *name, size_t len,
                         uint32_t h)
{
    if (tr->n >= UINT32_MAX - 1)
        fk_die("too many unique frames for one flame graph");
    if (tr->n == tr->cap) {
        size_t cap = tr->cap;
        tr->v = fk_grow(tr->v, &tr->cap, tr->n + 1, sizeof *tr->v);
        tr->hashes = fk_grow(tr->hashes, &cap, tr->n + 1, sizeof *tr->hashes);
    }
    uint32_t id = (uint32_t)tr->n++;
    struct node *nd = &tr->v[id];
    memset(nd, 0, sizeof *nd);
    nd->name = name;
    nd->nlen = (uint32_t)len;
    nd->parent = parent;
    tr->hashes[id] = h;
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

static uint32_t tree_child(struct tree *tr, uint32_t parent, const char *name, size_t len,
                           bool adjacent_only)
{
    struct node *p = &tr->v[parent];
    if (p->last) {
        struct node *l = &tr->v[p->last];
        if (l->nlen == len && !memcmp(l->name, name, len))
            return p->last;
    }
    uint32_t h = child_hash(parent, name, len);
    if (!adjacent_only) {
        for (size_t q = h & tr->mask;; q = (q + 1) & tr->mask) {
            uint32_t e = tr->index[q];
            if (!e)
                break;
            struct node *c = &tr->v[e - 1];
            if (tr->hashes[e - 1] == h && c->parent == parent && c->nlen == len &&
                !memcmp(c->name, name, len))
                return e - 1;
        }
    }
    uint32_t id = tree_new(tr, parent, name, len, h);
    if (!adjacent_only) {
        if (tr->n * 2 > tr->mask) {
            tree_rehash(tr);
        } else {
            size_t q = h & tr->mask;
            while (tr->index[q])
                q = (q + 1) & tr->mask;
            tr->index[q] = id + 1;
        }
    }
    return id;
}

/* Adding stacks in order: frames inside the byte prefix shared with the
 * previous stack are the same nodes, so only the rest is looked up. */
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
    free(tr->index);
    free(tr->hashes);
}

/* ---- colours ------------------------------------------------------------ */

enum pal { P_HOT, P_MEM, P_IO, P_JAVA, P_JS, P_PERL, P_RED, P_GREEN, P_BLUE, P_AQUA,
           P_YELLOW, P_PURPLE, P_ORANGE, P_WAKEUP, P_CHAIN };
static const char *const pal_names[] = { "hot", "mem", "io", "java", "js", "perl", "red",
                                         "green", "blue", "aqua", "yellow", "purple",
                                         "orange", "wakeup", "chain" };
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
};

static bool ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && !memcmp(s + n - k, suf, k);
}

static bool contains(const char *s, size_t n, const char *needle)
{
    return memmem(s, n, needle, strlen(needle)) != NULL;
}

/* Which family a frame gets under a language-aware palette. */
static enum pal classify(enum pal p, const char *s, size_t n, bool after_chain)
{
    switch (p) {
    case P_JAVA:
    case P_JS:
    case P_PERL:
        if (ends_with(s, n, "_[k]"))
            return P_ORANGE;
        if (ends_with(s, n, "_[j]"))
            return P_GREEN;
        if (ends_with(s, n, "_[i]"))
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
        return after_chain ? P_BLUE : P_AQUA;
    default:
        return p;
    }
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void w_rgb(struct wr *w, unsigned r, unsigned g, unsigned b)
{
    static const char hex[] = "0123456789abcdef";
    char t[7] = { '#', hex[r >> 4 & 15], hex[r & 15], hex[g >> 4 & 15], hex[g & 15],
                  hex[b >> 4 & 15], hex[b & 15] };
    w_mem(w, t, 7);
}

static void w_family(struct wr *w, enum pal f, uint64_t bits)
{
    const struct family *c = &fam[f];
    double v1 = (double)(bits & 0xffff) / 65535.0;
    double v2 = (double)(bits >> 16 & 0xffff) / 65535.0;
    double v3 = (double)(bits >> 32 & 0xffff) / 65535.0;
    /* one dominant value keeps the family's look; channel spread varies it */
    unsigned r = (unsigned)(c->r0 + c->rs * v1);
    unsigned g = (unsigned)(c->g0 + c->gs * (f == P_HOT ? v1 : v2));
    unsigned b = (unsigned)(c->b0 + c->bs * (f == P_HOT ? v2 : v3));
    w_rgb(w, r > 255 ? 255 : r, g > 255 ? 255 : g, b > 255 ? 255 : b);
}

/* ---- rendering ---------------------------------------------------------- */

struct ctx {
    struct wr *w;
    const struct fk_svg_opts *o;
    struct tree tr;
    enum pal pal;
    uint64_t seed;
    int width, fh;
    double scale;           /* px per count */
    double minpx;
    int maxdepth;           /* deepest visible frame */
    int height;
    int ypad_top;
    double beforescale;     /* --normalize: BEFORE scaled to AFTER's total */
    double afterscale;      /* --normalize --negate: AFTER to BEFORE's */
    double maxdelta;
};

static inline uint64_t wcount(const struct ctx *c, const struct node *n)
{
    return c->o->diff && !c->o->negate ? n->c2 : n->c1;
}

static inline uint64_t ocount(const struct ctx *c, const struct node *n)
{
    return c->o->diff && !c->o->negate ? n->c1 : n->c2;
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

/* Iterative DFS over visible frames; visit(node, offset, depth, chain). */
struct it { uint32_t node, next; uint64_t off; int depth; bool gap, chain; };

static void walk(struct ctx *c, void (*visit)(struct ctx *, uint32_t, uint64_t, int, bool, bool))
{
    struct it *st = NULL;
    size_t cap = 0, sp = 0;
    st = fk_grow(st, &cap, 1, sizeof *st);
    st[sp++] = (struct it){ 0, c->tr.v[0].first, 0, 0, false, false };
    visit(c, 0, 0, 0, false, false);
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
        if (!visible(c, nd)) {
            if (wcount(c, nd))
                t->gap = true;
            continue;
        }
        bool gap = t->gap, chain = t->chain || (nd->nlen == 2 && !memcmp(nd->name, "--", 2));
        t->gap = false;
        int depth = t->depth + 1;
        visit(c, id, off, depth, gap, t->chain);
        st = fk_grow(st, &cap, sp + 1, sizeof *st);
        st[sp++] = (struct it){ id, nd->first, off, depth, false, chain };
    }
    free(st);
}

static void measure(struct ctx *c, uint32_t id, uint64_t off, int depth, bool gap, bool chain)
{
    (void)off;
    (void)gap;
    (void)chain;
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
    return c->height - YPAD_BOTTOM - (depth + 1) * c->fh;
}

static void w_fill(struct ctx *c, const struct node *nd, bool chain)
{
    struct wr *w = c->w;
    if (c->o->diff) {
        double d = delta(c, nd);
        double r = c->maxdelta > 0 ? fabs(d) / c->maxdelta : 0;
        unsigned v = (unsigned)lround(225.0 * (1 - r));
        if (d > 0)
            w_rgb(w, 255, v, v);
        else if (d < 0)
            w_rgb(w, v, v, 255);
        else
            w_rgb(w, 225, 225, 225);
        return;
    }
    enum pal f = classify(c->pal, nd->name, nd->nlen, chain);
    uint64_t bits;
    if (c->o->rand) {
        bits = splitmix(&c->seed);
    } else {
        /* by name, ignoring an annotation suffix so kernel/user twins match */
        size_t n = nd->nlen;
        if (n >= 4 && nd->name[n - 4] == '_' && nd->name[n - 3] == '[' && nd->name[n - 1] == ']')
            n -= 4;
        bits = fk_hash(nd->name, n);
    }
    w_family(w, f, bits);
}

static void emit(struct ctx *c, uint32_t id, uint64_t off, int depth, bool gap, bool chain)
{
    struct wr *w = c->w;
    const struct node *nd = &c->tr.v[id];
    uint64_t n = wcount(c, nd), total = wcount(c, &c->tr.v[0]);
    double x = XPAD + (double)off * c->scale, wd = (double)n * c->scale;
    int y = frame_y(c, depth);
    if (gap) {
        w_mem(w, "<g data-o=\"", 11);
        w_u64(w, off);
        w_mem(w, "\"><title>", 9);
    } else {
        w_mem(w, "<g><title>", 10);
    }
    if (id == 0)
        w_s(w, "all");
    else
        w_esc(w, nd->name, nd->nlen);
    w_mem(w, " (", 2);
    w_u64_grouped(w, n);
    w_c(w, ' ');
    w_escs(w, c->o->countname);
    w_mem(w, ", ", 2);
    w_pct(w, n, total);
    w_c(w, '%');
    if (c->o->diff) {
        uint64_t other = ocount(c, nd);
        w_s(w, c->o->negate ? "; after " : "; before ");
        /* the other profile as compared: scaled when normalizing */
        double scaled = (double)other * (c->o->negate ? c->afterscale : c->beforescale);
        w_u64_grouped(w, (uint64_t)llround(scaled));
        double d = delta(c, nd);
        if (c->o->negate)
            d = -d;     /* shown as AFTER - BEFORE either way */
        w_s(w, "; delta ");
        w_c(w, d < 0 ? '-' : '+');
        w_u64_grouped(w, (uint64_t)llround(fabs(d)));
        w_mem(w, ", ", 2);
        w_c(w, d < 0 ? '-' : '+');
        w_pct(w, (uint64_t)llround(fabs(d)), total);
        w_c(w, '%');
    }
    w_mem(w, ")</title><rect x=\"", 18);
    w_fix1(w, x);
    w_mem(w, "\" y=\"", 5);
    w_i64(w, y);
    w_mem(w, "\" width=\"", 9);
    w_fix1(w, wd);
    w_mem(w, "\" height=\"", 10);
    w_i64(w, c->fh - 1);
    w_mem(w, "\" fill=\"", 8);
    w_fill(c, nd, chain);
    w_mem(w, "\"/>", 3);
    size_t chars = (size_t)((wd - 6) / (FONT_SIZE * FONT_WIDTH));
    if (chars >= 3) {
        w_mem(w, "<text x=\"", 9);
        w_fix1(w, x + 3);
        w_mem(w, "\" y=\"", 5);
        w_fix1(w, y + c->fh / 2.0 + FONT_SIZE / 2.0 - 2.5);
        w_mem(w, "\">", 2);
        if (id == 0)
            w_s(w, "all");
        else
            w_esc_trunc(w, nd->name, nd->nlen, chars);
        w_mem(w, "</text>", 7);
    }
    w_mem(w, "</g>\n", 5);
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

static void w_textel(struct wr *w, const char *id, const char *cls, double x, double y,
                     const char *text)
{
    w_mem(w, "<text", 5);
    if (id)
        w_attr_str(w, "id", id);
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

/* Build the tree from the table's stacks. */
static void build(struct ctx *c, const struct fk_stacktab *t)
{
    const struct fk_svg_opts *o = c->o;
    c->tr.v = NULL;
    tree_rehash(&c->tr);
    tree_new(&c->tr, 0, "all", 3, 0);
    struct fk_buf rev = FK_BUF_INIT;
    struct fk_stacktab rt;
    const struct fk_stacktab *src = t;
    if (o->reverse) {
        /* reverse each stack's frames; re-merge in a table of our own */
        fk_stacktab_init(&rt);
        for (size_t i = 0; i < t->n; i++) {
            const struct fk_stack *s = &t->v[i];
            fk_buf_reset(&rev);
            size_t end = s->len;
            for (;;) {
                const char *p = memrchr(s->key, ';', end);
                size_t start = p ? (size_t)(p - s->key) + 1 : 0;
                fk_buf_add(&rev, s->key + start, end - start);
                if (!p)
                    break;
                fk_buf_addc(&rev, ';');
                end = start - 1;
            }
            fk_stacktab_add2(&rt, rev.data, rev.len, s->count, s->count2);
        }
        src = &rt;
    }
    struct adder ad;
    memset(&ad, 0, sizeof ad);
    /* Insertion order: folded files are usually sorted already, so shared
     * prefixes are reused; any order merges right through the hash, and
     * children are put in name order afterwards. */
    for (size_t i = 0; i < src->n; i++)
        tree_add(&c->tr, &ad, src->v[i].key, src->v[i].len, src->v[i].count, src->v[i].count2,
                 o->flamechart);
    if (!o->flamechart)
        tree_sort_children(&c->tr);
    free(ad.path);
    free(ad.ends);
    fk_buf_free(&rev);
    if (o->reverse) {
        /* node names point into rt's keys: keep them alive by copying */
        for (size_t i = 1; i < c->tr.n; i++) {
            struct node *nd = &c->tr.v[i];
            nd->name = fk_strndup(nd->name, nd->nlen);
        }
        fk_stacktab_free(&rt);
    }
}

bool fk_svg_render(const struct fk_stacktab *t, const struct fk_svg_opts *opts,
                   fk_svg_sink sink, void *sinkctx)
{
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
    c.seed = 0x666c616d656b6974ULL;     /* fixed: --rand output is reproducible */
    c.width = o.width;
    c.fh = o.height;
    build(&c, t);

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
    c.maxdepth = 0;
    if (total)
        walk(&c, measure);
    c.height = c.ypad_top + YPAD_BOTTOM + (c.maxdepth + 1) * c.fh;
    if (!total)
        c.height = c.ypad_top + YPAD_BOTTOM + 3 * c.fh;

    struct wr *w = c.w;
    w_s(w, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"");
    w_attr_num(w, "width", o.width);
    w_attr_num(w, "height", c.height);
    w_mem(w, " viewBox=\"0 0 ", 14);
    w_i64(w, o.width);
    w_c(w, ' ');
    w_i64(w, c.height);
    w_c(w, '"');
    /* what the script needs to lay frames out again */
    w_attr_num(w, "data-fh", c.fh);
    w_attr_num(w, "data-xpad", XPAD);
    w_attr_num(w, "data-y0", frame_y(&c, 0));
    w_attr_num(w, "data-dy", o.inverted ? c.fh : -c.fh);
    w_attr_str(w, "data-countname", o.countname);
    w_attr_str(w, "data-nametype", o.nametype);
    w_attr_num(w, "data-diff", o.diff);
    w_mem(w, " data-minw=\"", 12);
    w_fix1(w, c.minpx);
    w_mem(w, "\">\n<style>/*<![CDATA[*/\n", 24);
    w_mem(w, fk_svg_css, fk_svg_css_len);
    w_mem(w, "/*]]>*/</style>\n<script type=\"text/javascript\">//<![CDATA[\n", 59);
    w_mem(w, fk_svg_js, fk_svg_js_len);
    w_mem(w, "//]]></script>\n", 15);
    if (o.notes) {
        /* notes keep their line breaks (legal XML); other controls go */
        w_s(w, "<desc id=\"fk-notes\">");
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
        w_s(w, "<metadata id=\"fk-meta\">");
        w_json(w, o.metadata);
        w_s(w, "</metadata>\n");
    }
    w_s(w, "<rect class=\"bg\" x=\"0\" y=\"0\"");
    w_attr_num(w, "width", o.width);
    w_attr_num(w, "height", c.height);
    w_s(w, "/>\n");
    w_textel(w, "fk-title", "title", o.width / 2.0, FONT_SIZE * 2, o.title);
    if (o.subtitle)
        w_textel(w, "fk-subtitle", "subtitle", o.width / 2.0, FONT_SIZE * 4, o.subtitle);
    w_textel(w, "fk-details", NULL, XPAD, c.height - YPAD_BOTTOM / 2.0 + 4, " ");
    w_textel(w, "fk-unzoom", "btn hide", XPAD, FONT_SIZE * 2, "Reset Zoom");
    w_textel(w, "fk-search", "btn end", o.width - XPAD, FONT_SIZE * 2, "Search");
    if (o.metadata)
        w_textel(w, "fk-infobtn", "btn", XPAD + 110, FONT_SIZE * 2, "Info");
    w_textel(w, "fk-matched", "end", o.width - XPAD, c.height - YPAD_BOTTOM / 2.0 + 4, " ");
    if (!total) {
        w_textel(w, "fk-empty", "title", o.width / 2.0, c.ypad_top + 2 * c.fh,
                 "No stacks: nothing was sampled");
    }
    w_s(w, "<g id=\"fk-frames\">\n");
    if (total)
        walk(&c, emit);
    w_s(w, "</g>\n<g id=\"fk-info\" class=\"hide\"></g>\n</svg>\n");
    w_flush(w);
    bool ok = !w->err;
    if (o.reverse)
        for (size_t i = 1; i < c.tr.n; i++)
            free((char *)c.tr.v[i].name);
    tree_free(&c.tr);
    free(w);
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
