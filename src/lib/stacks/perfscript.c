/* SPDX-License-Identifier: GPL-2.0-only */
/* `perf script` text -> stack table. The input is a sequence of samples:
 *   HEADER          comm [pid/]tid [cpu] time: [period] event: [ip sym (dso)]
 *   \t ip sym+off (dso)      one line per frame, leaf first (with -g)
 *   (blank line)
 * Which header fields appear depends on `perf script -F`; we classify the
 * header's tokens by shape instead of assuming positions.
 * Frame lines repeat (deep stacks: ~2% of them are distinct), so a frame
 * line is parsed once: two bounded caches map a whole line, or its text
 * after the ip, to the frame's name id, and each cached line remembers the
 * line that followed it, which is checked in place before anything else.
 * Invariant: a cached result is what add_frame gives for those bytes in a
 * process of the same java-ness (the only state it reads). */
#include "perfscript.h"
#include "folded.h"
#include "util/lineread.h"

#include <stdlib.h>
#include <string.h>

/* Character classes by table: the frame lines are the hot path. */
enum { C_SPACE = 1, C_HEX = 2, C_DIGIT = 4, C_TIDY = 8 };
static const unsigned char cclass[256] = {
    [' '] = C_SPACE, ['\t'] = C_SPACE,
    ['0'] = C_HEX | C_DIGIT, ['1'] = C_HEX | C_DIGIT, ['2'] = C_HEX | C_DIGIT,
    ['3'] = C_HEX | C_DIGIT, ['4'] = C_HEX | C_DIGIT, ['5'] = C_HEX | C_DIGIT,
    ['6'] = C_HEX | C_DIGIT, ['7'] = C_HEX | C_DIGIT, ['8'] = C_HEX | C_DIGIT,
    ['9'] = C_HEX | C_DIGIT,
    ['a'] = C_HEX, ['b'] = C_HEX, ['c'] = C_HEX, ['d'] = C_HEX, ['e'] = C_HEX, ['f'] = C_HEX,
    ['A'] = C_HEX, ['B'] = C_HEX, ['C'] = C_HEX, ['D'] = C_HEX, ['E'] = C_HEX, ['F'] = C_HEX,
    /* characters a frame name may not keep */
    [';'] = C_TIDY, ['"'] = C_TIDY, ['\''] = C_TIDY, ['\0'] = C_TIDY,
};
static inline bool is_digit(char c) { return cclass[(unsigned char)c] & C_DIGIT; }
static inline bool is_space(char c) { return cclass[(unsigned char)c] & C_SPACE; }
static inline bool is_hex(char c) { return cclass[(unsigned char)c] & C_HEX; }


/* Nonzero high bits mark bytes equal to c; the lowest mark is exact. */
static inline uint64_t has_byte(uint64_t w, uint64_t c)
{
    uint64_t x = w ^ (0x0101010101010101ULL * c);
    return (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
}

/* First blank at or after s (or end), a word at a time. */
static inline char *find_blank(char *s, char *end)
{
    while (end - s >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        uint64_t m = has_byte(w, ' ') | has_byte(w, '\t');
        if (m)
            return s + (__builtin_ctzll(m) >> 3);
        s += 8;
    }
    while (s < end && !is_space(*s))
        s++;
    return s;
}

/* Is s[0..n) all hex digits? A word at a time for ips of up to 16 digits. */
static inline bool hex_token(const char *s, size_t n, const char *end)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    if (n > 16 || end - s < 16) {
        for (size_t i = 0; i < n; i++)
            if (!is_hex(s[i]))
                return false;
        return true;
    }
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        size_t k = n - i < 8 ? n - i : 8;
        uint64_t mask = k == 8 ? high : (high & ((1ULL << (8 * k)) - 1));
        if (w & mask)
            return false;       /* non-ASCII */
        w = (w & ~high) | (0x20 * ones);   /* fold A-F to a-f (and ASCII only) */
        uint64_t ge0 = w + (0x80 - '0') * ones, gt9 = w + (0x80 - '9' - 1) * ones;
        uint64_t gea = w + (0x80 - 'a') * ones, gtf = w + (0x80 - 'f' - 1) * ones;
        uint64_t ok = ((ge0 & ~gt9) | (gea & ~gtf)) & mask;
        if (ok != mask)
            return false;
    }
    return true;
}

/* Skip blanks, 8 spaces at a time where possible (frames are indented). */
static inline char *skip_blanks(char *s, char *end)
{
    const uint64_t spaces = 0x2020202020202020ULL, low7 = 0x7f7f7f7f7f7f7f7fULL;
    while (end - s >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        uint64_t x = w ^ spaces;
        /* exact: high bit set in each byte that is not a space */
        uint64_t other = (((x & low7) + low7) | x) & ~low7;
        if (other) {
            s += __builtin_ctzll(other) >> 3;
            break;
        }
        s += 8;
    }
    while (s < end && is_space(*s))
        s++;
    return s;
}

/* The frame-line caches: entries in an array (their numbers stay put),
 * indexed by key hash (util/hindex.h), keys in one buffer. A line's text
 * is its bytes up to the key (blanks and ip) followed by the key, which
 * the other cache holds (rest): lines repeat one key at many addresses,
 * and a key is kept once. Each line entry also remembers which line
 * followed it last time (next): stacks repeat, so the next line is usually
 * that one, checked without hashing. */
struct fk_lc_entry {
    uint32_t koff;
    uint32_t kj;                /* key length << 1 | seen in a java process (see add_frame) */
    uint32_t id;                /* LC_SKIP or a name id */
    uint32_t next;              /* entry number + 1 of the line after, 0 none */
    uint32_t rest;              /* entry number + 1 in the key cache of the rest, 0 none */
};
enum { LC_CHAIN = 1u << 31, LC_SKIP = UINT32_MAX - 1 };

/* max: bytes of keys and entries kept at most (beyond, nothing new is cached) */
static void lc_init(struct fk_perfscript_cache *c, size_t max)
{
    memset(c, 0, sizeof *c);
    c->max = max;
}

static void lc_free(struct fk_perfscript_cache *c)
{
    fk_hindex_free(&c->index);
    free(c->e);
    fk_buf_free(&c->keys);
    memset(c, 0, sizeof *c);    /* max 0: caches nothing more */
}

/* Is entry en (+ 1) of c the text key[0..len)? rc holds the rests of c's
 * entries (the key cache for the line cache). */
static inline bool lc_is(const struct fk_perfscript_cache *c, const struct fk_perfscript_cache *rc,
                         uint32_t en, const char *key, size_t len, bool java)
{
    const struct fk_lc_entry *e = &c->e[en - 1];
    size_t plen = e->kj >> 1;
    if (!e->rest)
        return e->kj == (len << 1 | java) && !memcmp(c->keys.data + e->koff, key, len);
    const struct fk_lc_entry *r = &rc->e[e->rest - 1];
    return (e->kj & 1) == java && plen + (r->kj >> 1) == len &&
           !memcmp(c->keys.data + e->koff, key, plen) &&
           !memcmp(rc->keys.data + r->koff, key + plen, len - plen);
}

/* The entry number + 1 of key, 0 if it is not there. */
static inline uint32_t lc_find(const struct fk_perfscript_cache *c,
                               const struct fk_perfscript_cache *rc, const char *key, size_t len,
                               uint64_t h, bool java)
{
    struct fk_hiter it = fk_hindex_find(&c->index, h);
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (lc_is(c, rc, i + 1, key, len, java))
            return i + 1;
    return 0;
}

/* Would more key bytes (and an entry) go over max? */
static inline bool lc_full(const struct fk_perfscript_cache *c, size_t more)
{
    return c->keys.len + more + (c->n + 1) * sizeof *c->e + fk_hindex_bytes(&c->index) > c->max;
}

/* Add key[0..len) (not there yet), of which the first plen bytes are kept
 * here and the rest is entry rest (+ 1) of the other cache (0: all kept
 * here, plen == len); its entry number + 1, 0 when the cache is full. */
static uint32_t lc_put(struct fk_perfscript_cache *c, const char *key, size_t plen, uint64_t h,
                       bool java, uint32_t id, uint32_t rest)
{
    if (lc_full(c, plen))
        return 0;
    c->e = fk_grow(c->e, &c->cap, c->n + 1, sizeof *c->e);
    c->e[c->n] = (struct fk_lc_entry){ (uint32_t)c->keys.len, (uint32_t)(plen << 1 | java), id, 0,
                                       rest };
    fk_buf_add(&c->keys, key, plen);
    fk_hindex_add(&c->index, h, (uint32_t)c->n);
    return (uint32_t)++c->n;
}

void fk_perfscript_init(struct fk_perfscript *p, const struct fk_perfscript_opts *o,
                        struct fk_stacktab *tab, struct fk_parse_stats *st)
{
    memset(p, 0, sizeof *p);
    p->o = *o;
    p->tab = tab;
    p->st = st;
    if (o->event)
        p->event = fk_strdup(o->event);
    p->stk_cap = 512;
    p->stk = fk_malloc(p->stk_cap * sizeof *p->stk);
    p->stk_pos = p->stk_cap;
    fk_stacktab_init(&p->names);
    fk_stacktab_init(&p->stacks);
    /* ~30k lines (~50 bytes each with their index) and ~40k keys: the
     * line cache pays where stacks are deep (it predicts the next line);
     * on shallow input the key cache does nearly as well */
    lc_init(&p->line, 3u << 19);
    lc_init(&p->cache, 4u << 20);
    p->pname_id = UINT32_MAX;
}

void fk_perfscript_free(struct fk_perfscript *p)
{
    free(p->event);
    free(p->other_event);
    free(p->stk);
    fk_buf_free(&p->pname);
    fk_buf_free(&p->frame);
    free(p->chains);
    fk_stacktab_free(&p->names);
    fk_stacktab_free(&p->stacks);
    lc_free(&p->cache);
    lc_free(&p->line);
    memset(p, 0, sizeof *p);
}

/* Push a name id in front of the frames read so far (frames come leaf
 * first, stacks are stored root first). */
static void stk_grow(struct fk_perfscript *p)
{
    {
        size_t used = p->stk_cap, cap = p->stk_cap * 2;
        if (cap > SIZE_MAX / sizeof *p->stk / 2)
            fk_die("stack too deep");
        uint32_t *n = fk_malloc(cap * sizeof *n);
        memcpy(n + cap - used, p->stk, used * sizeof *n);
        free(p->stk);
        p->stk = n;
        p->stk_pos = cap - used;
        p->stk_cap = cap;
    }
}

static inline void stk_push(struct fk_perfscript *p, uint32_t id)
{
    if (p->stk_pos == 0)
        stk_grow(p);
    p->stk[--p->stk_pos] = id;
    p->nframes++;
}

static uint32_t intern(struct fk_perfscript *p, const char *name, size_t len)
{
    struct fk_stack *e = fk_stacktab_add(&p->names, name, len, 0);
    if (e - p->names.v >= LC_CHAIN)
        fk_die("more than 2^31 distinct frame names");
    return (uint32_t)(e - p->names.v);
}

/* Word-at-a-time test for the bytes a frame name may not keep as they are
 * (';' '"' '\'' NUL), so clean names (nearly all) are copied just once. */
static bool needs_tidy(const char *s, size_t n)
{
    uint64_t w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        if (has_byte(w, ';') | has_byte(w, '"') | has_byte(w, '\'') | has_byte(w, 0))
            return true;
    }
    for (; n; s++, n--)
        if (cclass[(unsigned char)*s] & C_TIDY)
            return true;
    return false;
}

static void flush_sample(struct fk_perfscript *p)
{
    if (p->in_sample && p->keep) {
        /* samples in a row are often of one process: check its id first */
        const struct fk_stack *last = p->names.n > p->pname_id ? &p->names.v[p->pname_id] : NULL;
        if (!last || last->len != p->pname.len || (last->len && memcmp(last->key, p->pname.data, last->len)))
            p->pname_id = intern(p, p->pname.data ? p->pname.data : "", p->pname.len);
        stk_push(p, p->pname_id);
        fk_stacktab_add(&p->stacks, (const char *)(p->stk + p->stk_pos),
                        (p->stk_cap - p->stk_pos) * sizeof *p->stk, p->weight);
        p->samples++;
    }
    p->in_sample = false;
    p->stk_pos = p->stk_cap;
    p->nframes = 0;
    p->lprev = 0;
}

static bool event_matches(const char *want, const char *ev, size_t len)
{
    size_t wl = strlen(want);
    if (len == wl && !memcmp(want, ev, len))
        return true;
    /* "cpu-clock" also matches "cpu-clock:ppp" (perf appends modifiers). */
    if (len > wl + 1 && !memcmp(want, ev, wl) && ev[wl] == ':') {
        for (size_t i = wl + 1; i < len; i++)
            if (!((ev[i] >= 'a' && ev[i] <= 'z') || (ev[i] >= 'A' && ev[i] <= 'Z')))
                return false;
        return true;
    }
    return false;
}

/* Text after the last '/' (a path's file name). */
static const char *base_name(const char *s, size_t len, size_t *blen)
{
    const char *q = memrchr(s, '/', len);
    const char *b = q ? q + 1 : s;
    *blen = (size_t)(s + len - b);
    return b;
}

/* A java process: its names lose the 'L' of "Lpkg/Class;" */
static inline bool is_java(const struct fk_perfscript *p)
{
    return p->pname.len >= 4 && !memcmp(p->pname.data, "java", 4);
}

/* Does the object name a kernel file? stackcollapse-perf.pl's rule (a
 * "[...]" object or one ending in "vmlinux", never one mentioning
 * "unknown"), widened as inferno's: versioned "vmlinux-5.4.0-x" files and
 * ".ko" modules. */
static bool kernel_object(const char *m, size_t n)
{
    if (!n || memmem(m, n, "unknown", 7))
        return false;
    if (m[0] == '[' || fk_ends_with(m, n, ".ko"))
        return true;
    const char *v = NULL;
    for (const char *q = m; (q = memmem(q, (size_t)(m + n - q), "vmlinux", 7)); q++)
        v = q;
    if (!v)
        return false;
    for (const char *q = v + 7; q < m + n; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || is_digit(*q) || *q == '-' ||
              *q == '.' || *q == '_'))
            return false;
    return true;
}

/* Does the object hold JIT code: a perf map ("/tmp/perf-PID.map" anywhere
 * in it, as the Perl tool matches) or a jitdump object ("/tmp/jitted-PID-N.so",
 * as inferno)? */
static bool jit_object(const char *m, size_t n)
{
    if (!n)
        return false;
    for (const char *q = m; (q = memmem(q, (size_t)(m + n - q), "/tmp/perf-", 10)); q++) {
        const char *d = q + 10;
        while (d < m + n && is_digit(*d))
            d++;
        if (d > q + 10 && (size_t)(m + n - d) >= 4 && !memcmp(d, ".map", 4))
            return true;
    }
    return memmem(m, n, "/jitted-", 8) && fk_ends_with(m, n, ".so");
}

/* Append one frame name to p->frame (NUL-terminated), tidied as
 * stackcollapse-perf.pl tidies each function: ';' becomes ':', what
 * follows the first '(' goes (C++ and Java signatures) unless it opens
 * "(anonymous namespace)" or the name is a Go method "pkg.(*T).M", quotes
 * go, and in a java process a leading 'L' of a name with '/' goes. NUL
 * bytes become '?' (a name is a C string here). */
static void put_name(struct fk_perfscript *p, const char *f, size_t n, const char *off,
                     size_t offlen, const char *tag)
{
    struct fk_buf *o = &p->frame;
    const char *dp = NULL;      /* Go: ".(" ... ")." */
    for (const char *q = f; (q = memmem(q, (size_t)(f + n - q), ".(", 2)); q++) {
        dp = q;
        break;
    }
    bool go = false;
    if (dp)
        for (const char *q = dp + 2; q + 1 < f + n && !go; q++)
            go = q[0] == ')' && q[1] == '.';
    if (!go) {
        for (const char *q = f; (q = memchr(q, '(', (size_t)(f + n - q))); q++) {
            if ((size_t)(f + n - q) >= 21 && !memcmp(q, "(anonymous namespace)", 21))
                continue;
            n = (size_t)(q - f);
            break;
        }
    }
    if (n > 1 && f[0] == 'L' && is_java(p) && memchr(f, '/', n)) {
        f++;
        n--;
    }
    size_t at = o->len;
    fk_buf_reserve(o, n + 8);
    char *d = o->data + at;
    if (!needs_tidy(f, n)) {
        memcpy(d, f, n);
        d += n;
    } else {
        for (size_t i = 0; i < n; i++) {
            char c = f[i];
            if (cclass[(unsigned char)c] & C_TIDY) {
                if (c == '"' || c == '\'')
                    continue;
                c = c == ';' ? ':' : '?';
            }
            *d++ = c;
        }
    }
    o->len = (size_t)(d - o->data);
    fk_buf_add(o, off, offlen);     /* --offsets: "+0x1f" after the tidied name */
    if (tag)
        fk_buf_adds(o, tag);
    fk_buf_addc(o, '\0');
    p->nparts++;
}

/* One frame line "ip sym (dso)" (s at the ip): its names into p->frame,
 * root first (nparts of them; none for a frame that is dropped). The
 * split is the Perl tool's: the object is what lies between the last
 * " (" and the last ')' of the line, the symbol everything before, its
 * "+0x1f" offset stripped (--offsets keeps it); "a->b->c" (perf-map-agent's
 * inline chains) are frames a;b_[i];c_[i]. Where that split loses data
 * flamekit differs, as flamekit-collapse(1) lists: an empty symbol is
 * the object's "[name]"; an object "(/x (deleted))" is /x; a line with no
 * "(object)" is its symbol. False when the text is not a frame. */
static bool add_frame(struct fk_perfscript *p, char *s, char *end)
{
    fk_buf_reset(&p->frame);
    p->nparts = 0;
    char *ip = s;
    s = find_blank(s, end);
    if (s == ip)
        return false;
    size_t iplen = (size_t)(s - ip);
    if (!hex_token(ip, iplen, end))
        return false;
    s = skip_blanks(s, end);
    char *sym = s, *symend = end, *mod = NULL, *modend = NULL;
    char *rp = s < end ? memrchr(s, ')', (size_t)(end - s)) : NULL;
    if (rp) {
        char *open = NULL;      /* the '(' of the last " (" before rp */
        for (char *q = rp - 1; q >= s + 2; q--)
            if (*q == '(' && q[-1] == ' ') {
                open = q;
                break;
            }
        if (open && rp - open == 9 && !memcmp(open, "(deleted)", 8)) {
            /* "(/path (deleted))": the object is /path */
            char *outer = NULL;
            for (char *q = open - 2; q >= s + 2; q--)
                if (*q == '(' && q[-1] == ' ') {
                    outer = q;
                    break;
                }
            if (outer) {
                mod = outer + 1;
                modend = open - 1;
                symend = outer - 1;
            } else {
                mod = open + 1;
                modend = rp;
                symend = open - 1;
            }
        } else if (open) {
            mod = open + 1;
            modend = rp;
            symend = open - 1;
        } else if (*s == '(') {
            mod = s + 1;        /* "ip (dso)": no symbol */
            modend = rp;
            symend = s;
        }
    }
    size_t modlen = mod ? (size_t)(modend - mod) : 0;
    bool inlined = mod && modlen == 7 && !memcmp(mod, "inlined", 7);
    if (inlined && p->o.no_inline)
        return true;
    if (!mod)       /* no object: trailing blanks are not part of the symbol */
        while (symend > sym && is_space(symend[-1]))
            symend--;
    const char *off = symend, *symend0 = symend;
    {
        char *q = symend;
        while (q > sym && (is_digit(q[-1]) || (q[-1] >= 'a' && q[-1] <= 'f')))
            q--;
        if (q < symend && q - sym >= 3 && q[-1] == 'x' && q[-2] == '0' && q[-3] == '+')
            off = symend = q - 3;
    }
    size_t offlen = p->o.offsets ? (size_t)(symend0 - off) : 0;
    size_t symlen = (size_t)(symend - sym);
    if (symlen && sym[0] == '(')
        return true;    /* the Perl tool drops these frames: perf's "(unknown)", and
                         * also "(anonymous namespace)::f" (files must merge) */

    const char *tag = NULL;
    if (inlined) {
        if (p->o.tag_inlined)
            tag = "_[i]";
    } else if (p->o.kernel && kernel_object(mod, modlen)) {
        tag = "_[k]";
    } else if (p->o.jit && jit_object(mod, modlen)) {
        tag = "_[j]";
    }
    if (symlen == 0) {
        sym = "[unknown]";
        symlen = 9;
    }
    /* split on "->"; empty fields at the end are no frames (Perl's split) */
    const char *f = sym, *stop = sym + symlen;
    while (stop - f >= 2 && stop[-1] == '>' && stop[-2] == '-')
        stop -= 2;
    if (stop == f)
        return true;    /* only arrows: Perl's split gives no field */
    for (bool first = true;; first = false) {
        const char *arrow = f + 1 < stop ? memmem(f, (size_t)(stop - f), "->", 2) : NULL;
        const char *fe = arrow ? arrow : stop;
        size_t fl = (size_t)(fe - f);
        const char *t = first ? tag : memmem(f, fl, "_[i]", 4) ? NULL : "_[i]";
        if (first && tag && tag[2] == 'j' && memmem(f, fl, "_[j]", 4))
            t = NULL;
        if (fl == 9 && !memcmp(f, "[unknown]", 9)) {
            /* the object's file name instead, "[name]" (with --addrs "[name <ip>]") */
            struct fk_buf *nb = &p->pname;  /* scratch after pname's bytes */
            size_t mark = nb->len;
            fk_buf_addc(nb, '[');
            if (mod && !(modlen == 9 && !memcmp(mod, "[unknown]", 9))) {
                size_t bl;
                const char *b = base_name(mod, modlen, &bl);
                fk_buf_add(nb, b, bl);
            } else {
                fk_buf_adds(nb, "unknown");
            }
            if (p->o.addrs) {
                fk_buf_adds(nb, " <");
                fk_buf_add(nb, ip, iplen);
                fk_buf_addc(nb, '>');
            }
            fk_buf_addc(nb, ']');
            put_name(p, nb->data + mark, nb->len - mark, "", 0, t);
            nb->len = mark;
        } else {
            put_name(p, f, fl, off, arrow ? 0 : offlen, t);
        }
        if (!arrow)
            break;
        f = arrow + 2;
    }
    return true;
}


static inline uint64_t key_hash(const char *key, size_t len, bool java)
{
    return fk_hash(key, len) ^ (java ? 0x9e3779b97f4a7c15ULL : 0);
}

/* The frames of one line: LC_SKIP (none), a name id, or LC_CHAIN | the
 * offset in p->chains of "n, ids..." (an inline chain, leaf first). */
static inline void push_frames(struct fk_perfscript *p, uint32_t id)
{
    if (id < LC_CHAIN) {
        stk_push(p, id);
    } else if (id != LC_SKIP) {
        const uint32_t *c = p->chains + (id - LC_CHAIN);
        for (uint32_t i = 1; i <= c[0]; i++)
            stk_push(p, c[i]);
    }
}

/* The next frame line of this sample is the entry en (+ 1); its frames. */
static inline void line_seen(struct fk_perfscript *p, uint32_t en)
{
    if (p->lprev)
        p->line.e[p->lprev - 1].next = en;
    p->lprev = en;
    push_frames(p, p->line.e[en - 1].id);
}

/* The names add_frame left in p->frame as one entry for push_frames. */
static uint32_t frames_id(struct fk_perfscript *p)
{
    if (p->nparts == 0)
        return LC_SKIP;
    if (p->nparts == 1)
        return intern(p, p->frame.data, p->frame.len - 1);
    if (p->nchains + 1 + p->nparts >= LC_SKIP - LC_CHAIN)
        fk_die("too many inline chains");
    p->chains = fk_grow(p->chains, &p->chains_cap, p->nchains + 1 + p->nparts, sizeof *p->chains);
    uint32_t off = (uint32_t)p->nchains, *c = p->chains + off;
    c[0] = p->nparts;
    /* the names are root first; frames are pushed leaf first */
    const char *n = p->frame.data, *end = n + p->frame.len;
    for (uint32_t i = p->nparts; i >= 1 && n < end; i--) {
        size_t l = strlen(n);
        c[i] = intern(p, n, l);
        n += l + 1;
    }
    p->nchains += 1 + p->nparts;
    return LC_CHAIN + off;
}

/* line: the whole line, to remember it by (NULL: not a line of its own) */
static bool frame_line(struct fk_perfscript *p, char *s, char *end, const char *line)
{
    char *ipend = find_blank(s, end);
    if (ipend == s || !hex_token(s, (size_t)(ipend - s), end))
        return false;
    const char *key = p->o.addrs ? s : skip_blanks(ipend, end);
    size_t klen = (size_t)(end - key);
    bool java = is_java(p);
    uint64_t h = key_hash(key, klen, java);
    uint32_t en = lc_find(&p->cache, NULL, key, klen, h, java), id;
    if (en) {
        id = p->cache.e[en - 1].id;
    } else {
        if (!add_frame(p, s, end))
            return false;
        id = frames_id(p);
        en = lc_put(&p->cache, key, klen, h, java, id, 0);
    }
    uint32_t ln = 0;
    if (line && !p->line_off) {
        /* the line is kept up to its key when the key cache holds the key */
        size_t len = (size_t)(end - line), plen = en ? (size_t)(key - line) : len;
        ln = lc_put(&p->line, line, plen, key_hash(line, len, java), java, id, en);
    }
    if (ln) {
        line_seen(p, ln);
    } else {
        p->lprev = 0;
        push_frames(p, id);
    }
    return true;
}

enum tok { T_OTHER, T_NUM, T_PIDTID, T_CPU, T_TIME, T_EVENT };

static enum tok classify(const char *s, size_t n)
{
    size_t i = 0;
    if (s[0] == '[' && n >= 3 && s[n - 1] == ']') {
        for (i = 1; i < n - 1 && is_digit(s[i]); i++)
            ;
        return i == n - 1 ? T_CPU : T_OTHER;
    }
    if (is_digit(s[0])) {
        while (i < n && is_digit(s[i]))
            i++;
        if (i == n)
            return T_NUM;
        if (s[i] == '/') {
            size_t j = ++i;
            while (i < n && is_digit(s[i]))
                i++;
            return (i == n && i > j) ? T_PIDTID : T_OTHER;
        }
        if (s[i] == '.' || s[i] == ':') {
            while (i < n && (is_digit(s[i]) || s[i] == '.'))
                i++;
            if (i == n - 1 && s[i] == ':')
                return T_TIME;
        }
    }
    if (n >= 2 && s[n - 1] == ':')
        return T_EVENT;
    return T_OTHER;
}

#define MAX_TOK 24

/* Tokens of the usual header "comm pid [cpu] secs.frac: period event:",
 * classified by position (as classify() would), or false for any other
 * shape, which the general loop then handles. */
static bool header_fast(char *s, char *end, char **ts, size_t *tl, enum tok *tk)
{
    char *q = find_blank(s, end), *b = s;
    if (q == b || q == end)
        return false;
    ts[0] = b, tl[0] = (size_t)(q - b), tk[0] = classify(b, tl[0]);
    b = q = skip_blanks(q, end);
    while (q < end && is_digit(*q))
        q++;
    if (q == b || q == end || !is_space(*q))
        return false;
    ts[1] = b, tl[1] = (size_t)(q - b), tk[1] = T_NUM;
    b = q = skip_blanks(q, end);
    if (q == end || *q++ != '[')
        return false;
    while (q < end && is_digit(*q))
        q++;
    if (q == b + 1 || q == end || *q++ != ']' || q == end || !is_space(*q))
        return false;
    ts[2] = b, tl[2] = (size_t)(q - b), tk[2] = T_CPU;
    b = q = skip_blanks(q, end);
    while (q < end && is_digit(*q))
        q++;
    if (q == b || q == end || *q++ != '.')
        return false;
    while (q < end && (is_digit(*q) || *q == '.'))
        q++;
    if (q == end || *q++ != ':' || q == end || !is_space(*q))
        return false;
    ts[3] = b, tl[3] = (size_t)(q - b), tk[3] = T_TIME;
    b = q = skip_blanks(q, end);
    while (q < end && is_digit(*q))
        q++;
    if (q == b || q == end || !is_space(*q))
        return false;
    ts[4] = b, tl[4] = (size_t)(q - b), tk[4] = T_NUM;
    b = q = skip_blanks(q, end);
    if (q == end || is_digit(*q))
        return false;
    q = find_blank(q, end);
    if (q - b < 2 || q[-1] != ':')
        return false;
    ts[5] = b, tl[5] = (size_t)(q - b), tk[5] = T_EVENT;
    return true;
}

/* A sample header. Returns false if the line does not look like one. */
static bool parse_header(struct fk_perfscript *p, char *s, char *end, const char **why)
{
    char *ts[MAX_TOK];
    size_t tl[MAX_TOK];
    enum tok tk[MAX_TOK];
    bool fast = header_fast(s, end, ts, tl, tk);
    int nt = fast ? 6 : 0;
    char *q = s;
    while (!fast && q < end && nt < MAX_TOK) {
        q = skip_blanks(q, end);
        if (q == end)
            break;
        char *b = q;
        q = find_blank(q, end);
        ts[nt] = b;
        tl[nt] = (size_t)(q - b);
        tk[nt] = classify(b, tl[nt]);
        nt++;
        /* the event ends the fields we need; what follows is ip/sym/dso or trace data */
        if (nt > 1 && tk[nt - 1] == T_EVENT)
            break;
    }
    int ev = -1, pidt = -1, commend = -1;
    for (int i = 1; i < nt; i++) {
        if (commend < 0 && (tk[i] == T_NUM || tk[i] == T_PIDTID || tk[i] == T_CPU || tk[i] == T_TIME))
            commend = i;
        if (tk[i] == T_EVENT && ev < 0)
            ev = i;
    }
    if (commend < 0)
        commend = ev;
    if (commend < 0) {
        *why = "not a sample header (no pid, time or event)";
        return false;
    }
    if (tk[commend] == T_NUM || tk[commend] == T_PIDTID) {
        /* A lone number right before the event after a time is the period. */
        if (!(tk[commend] == T_NUM && commend + 1 == ev && commend > 0 && tk[commend - 1] == T_TIME))
            pidt = commend;
    }
    uint64_t period = 1;
    int pi = ev > 0 ? ev - 1 : -1;
    if (p->o.period && pi >= 0 && pi != pidt && pi >= commend && tk[pi] == T_NUM) {
        uint64_t v = 0;
        for (size_t i = 0; i < tl[pi]; i++) {
            if (__builtin_mul_overflow(v, 10, &v)
                || __builtin_add_overflow(v, (uint64_t)(ts[pi][i] - '0'), &v)) {
                *why = "sample period does not fit in 64 bits";
                return false;
            }
        }
        period = v;
    }

    /* event filter */
    bool keep = true;
    if (ev > 0) {
        const char *e = ts[ev];
        size_t el = tl[ev] - 1;
        if (!p->event) {
            p->event = fk_strndup(e, el);
            p->event_defaulted = true;
        } else if (!event_matches(p->event, e, el)) {
            keep = false;
            p->skipped_events++;
            if (!p->other_event)
                p->other_event = fk_strndup(e, el);
        }
    }

    flush_sample(p);
    p->in_sample = true;
    p->keep = keep;
    p->weight = p->o.period ? period : 1;
    if (!keep)
        return true;

    /* process name */
    struct fk_buf *pn = &p->pname;
    fk_buf_reset(pn);
    char *cb = ts[0], *ce = commend > 0 ? ts[commend] : ts[0];
    while (ce > cb && is_space(ce[-1]))
        ce--;
    if (ce == cb)
        fk_buf_adds(pn, "[unknown]");
    fk_buf_add(pn, cb, (size_t)(ce - cb));
    for (char *c = pn->data, *e = pn->data + pn->len; c < e; c++)
        if (*c == ' ' || *c == '\t')
            *c = '_';
        else if (*c == ';')
            *c = ':';
        else if (*c == '\0')
            *c = '?';
    if ((p->o.pid || p->o.tid) && pidt > 0) {
        const char *t = ts[pidt];
        size_t n = tl[pidt];
        const char *slash = memchr(t, '/', n);
        fk_buf_addc(pn, '-');
        if (slash) {
            fk_buf_add(pn, t, (size_t)(slash - t));
            if (p->o.tid)
                fk_buf_add(pn, slash, (size_t)(t + n - slash));
        } else {
            /* perf printed only the TID: the PID is unknown */
            fk_buf_addc(pn, '?');
            if (p->o.tid) {
                fk_buf_addc(pn, '/');
                fk_buf_add(pn, t, n);
            }
        }
    }
    /* Without -g the sample's own ip/sym/dso follow the event. */
    if (ev > 0) {
        char *r = ts[ev] + tl[ev];
        while (r < end && is_space(*r))
            r++;
        if (r < end && is_hex(*r) && end[-1] == ')')
            frame_line(p, r, end, NULL);
    }
    return true;
}

/* Has an unindented line the shape the Perl tool takes for a sample
 * header, "COMM  PID[/TID] ..." (two characters at least, blanks, digits
 * with perhaps "/TID", a blank)? */
static bool perl_header(const char *s, const char *end)
{
    for (const char *q = s + 2; q < end; q++) {
        if (!is_space(*q))
            continue;
        while (q < end && is_space(*q))
            q++;
        const char *d = q;
        while (q < end && is_digit(*q))
            q++;
        if (q == d)
            continue;
        while (q < end && *q == '/')
            q++;
        while (q < end && is_digit(*q))
            q++;
        if (q < end && is_space(*q))
            return true;
        q--;
    }
    return false;
}

/* Is the second word an event ("comm cpu-clock: ...", perf script -F
 * comm,event,ip,sym without a pid: one line per sample, no blank lines)?
 * Then the line is a header even if its comm looks like an address. */
static bool event_second(char *s, char *end)
{
    char *q = skip_blanks(find_blank(s, end), end), *e = find_blank(q, end);
    return e - q >= 2 && e[-1] == ':';
}

void fk_perfscript_line(struct fk_perfscript *p, char *line, size_t len, uint64_t lineno)
{
    p->st->lines++;
    char *end = line + len, *s = line;
    if (len && is_space(line[0]) && p->in_sample && p->keep && !p->line_off) {
        /* a frame line seen before: its name id, nothing to parse; first
         * try the line that followed the previous one last time */
        bool java = is_java(p);
        uint32_t en = p->lprev ? p->line.e[p->lprev - 1].next : 0;
        if (!en || !lc_is(&p->line, &p->cache, en, line, len, java)) {
            en = lc_find(&p->line, &p->cache, line, len, key_hash(line, len, java), java);
            /* once full, the line cache must earn its lookups: when most
             * lines are new (many processes, few repeats) it is left off */
            if (lc_full(&p->line, 256)) {
                p->line_tries++;
                p->line_hits += en != 0;
                if (p->line_tries == 65536) {
                    p->line_off = p->line_hits * 2 < p->line_tries;
                    p->line_tries = p->line_hits = 0;
                }
            }
        }
        if (en) {
            line_seen(p, en);
            return;
        }
    }
    if (s < end && is_space(*s))
        s = skip_blanks(s + 1, end);
    if (s == end) {
        flush_sample(p);
        return;
    }
    if (line[0] == '#')
        return;     /* perf script --header */
    /* (NUL bytes become '?' in names, so a line is not scanned for them.) */
    const char *why = "not a stack frame or sample header";
    if (s != line && p->in_sample) {
        if (!p->keep)
            return;
        if (frame_line(p, s, end, line))
            return;
        /* perhaps a header with a right-aligned comm */
    } else if (s == line && p->in_sample && !perl_header(s, end) && !event_second(s, end)) {
        /* an unindented frame line (perf-map-agent's tools write them):
         * the Perl tool takes a line for a header only when it has this
         * shape, anything else in a sample for a frame */
        if (!p->keep || frame_line(p, s, end, line))
            return;
    }
    if (parse_header(p, s, end, &why))
        return;
    fk_parse_stats_bad(p->st, lineno, line, len, why);
}

/* A stack key is name ids, root first, at any alignment (the table packs
 * keys): read them with memcpy. */
static inline uint32_t id_at(const char *key, size_t k)
{
    uint32_t v;
    memcpy(&v, key + k * sizeof v, sizeof v);
    return v;
}

/* Two stacks in the order of their folded text (frame names joined by ';',
 * compared bytewise as fk_folded_write sorts), without writing the text
 * out. Names never hold ';' (add_frame and the process name turn it into
 * ':'), and equal names have equal ids. */
static int cmp_text(const struct fk_stacktab *names, const char *a, size_t na, const char *b,
                    size_t nb)
{
    size_t m = na < nb ? na : nb, k = 0;
    while (k + 2 <= m) {
        uint64_t x, y;
        memcpy(&x, a + k * 4, 8);
        memcpy(&y, b + k * 4, 8);
        if (x != y)
            break;
        k += 2;
    }
    while (k < m && id_at(a, k) == id_at(b, k))
        k++;
    if (k == m)     /* one goes on with ';' where the other ends */
        return (na > m) - (nb > m);
    const struct fk_stack *x = &names->v[id_at(a, k)], *y = &names->v[id_at(b, k)];
    size_t l = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, l);
    if (c || x->len == y->len)
        return c;
    /* one name goes on where the other has ';' (more frames) or ends */
    bool xlong = x->len > y->len;
    unsigned char lc = (unsigned char)(xlong ? x->key : y->key)[l];
    bool more = xlong ? k + 1 < nb : k + 1 < na;
    int r = more && lc < ';' ? -1 : 1;
    return xlong ? r : -r;
}

static int cmp_stack(const void *x, const void *y, void *arg)
{
    const struct fk_stack *a = *(const struct fk_stack *const *)x;
    const struct fk_stack *b = *(const struct fk_stack *const *)y;
    return cmp_text(arg, a->key, a->len / sizeof(uint32_t), b->key, b->len / sizeof(uint32_t));
}

/* The folded text of a stack appended to buf (room left for its count). */
static void stack_text(const struct fk_perfscript *p, const struct fk_stack *e, struct fk_buf *buf)
{
    size_t n = e->len / sizeof(uint32_t), len = n;
    for (size_t k = 0; k < n; k++)
        len += p->names.v[id_at(e->key, k)].len;
    fk_buf_reserve(buf, len + 32);
    char *d = buf->data + buf->len;
    for (size_t k = 0; k < n; k++) {
        const struct fk_stack *nm = &p->names.v[id_at(e->key, k)];
        if (k)
            *d++ = ';';
        memcpy(d, nm->key, nm->len);
        d += nm->len;
    }
    buf->len = (size_t)(d - buf->data);
}

void fk_perfscript_finish(struct fk_perfscript *p)
{
    flush_sample(p);
    /* the caches are for reading only: their memory goes to the output */
    lc_free(&p->line);
    lc_free(&p->cache);
    p->line_off = true;
    if (!p->tab)
        return;
    struct fk_buf b = FK_BUF_INIT;
    for (size_t i = 0; i < p->stacks.n; i++) {
        fk_buf_reset(&b);
        stack_text(p, &p->stacks.v[i], &b);
        fk_stacktab_add(p->tab, b.data ? b.data : "", b.len, p->stacks.v[i].count);
    }
    if (p->stacks.overflow)
        p->tab->overflow = true;
    fk_buf_free(&b);
}

struct sorted_stacks {
    const struct fk_perfscript *p;
    const struct fk_stack **v;
};

static uint64_t sorted_stack(void *ctx, size_t i, struct fk_buf *b)
{
    const struct sorted_stacks *ss = ctx;
    stack_text(ss->p, ss->v[i], b);
    return ss->v[i]->count;
}

bool fk_perfscript_write(const struct fk_perfscript *p,
                         bool (*sink)(void *ctx, const void *data, size_t len), void *ctx)
{
    size_t n = p->stacks.n;
    const struct fk_stack **v = fk_malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = &p->stacks.v[i];
    qsort_r(v, n, sizeof *v, cmp_stack, (void *)&p->names);
    struct sorted_stacks ss = { p, v };
    bool ok = fk_folded_write_lines(n, sorted_stack, &ss, sink, ctx);
    free(v);
    return ok;
}

bool fk_perfscript_read(struct fk_perfscript *p, const char *path)
{
    struct fk_lineread r;
    if (!fk_lineread_open(&r, path))
        return false;
    bool ok = fk_perfscript_read_lines(p, &r);
    fk_lineread_close(&r);
    return ok;
}

bool fk_perfscript_read_lines(struct fk_perfscript *p, struct fk_lineread *r)
{
    char *line;
    size_t len;
    for (;;) {
        /* Lines the cache predicts (the line that followed the previous one
         * last time) are checked in place: no scan for the newline. */
        if (p->lprev && p->keep) {
            size_t avail;
            bool eof;
            const char *b = fk_lineread_peek(r, 0, &avail, &eof);  /* what is buffered */
            if (!b)
                break;
            bool java = is_java(p);
            uint32_t en;
            while (p->lprev && (en = p->line.e[p->lprev - 1].next)) {
                const struct fk_lc_entry *e = &p->line.e[en - 1];
                size_t klen = e->kj >> 1;
                if (klen >= avail || (e->kj & 1) != java)
                    break;
                if (e->rest) {
                    const struct fk_lc_entry *re = &p->cache.e[e->rest - 1];
                    size_t rlen = re->kj >> 1;
                    if (klen + rlen >= avail || b[klen + rlen] != '\n' ||
                        memcmp(b, p->line.keys.data + e->koff, klen) ||
                        memcmp(b + klen, p->cache.keys.data + re->koff, rlen))
                        break;
                    klen += rlen;
                } else if (b[klen] != '\n' || memcmp(b, p->line.keys.data + e->koff, klen)) {
                    break;
                }
                p->st->lines++;
                line_seen(p, en);
                fk_lineread_skip(r, klen + 1);
                b += klen + 1;
                avail -= klen + 1;
            }
        }
        if (!(line = fk_lineread_next(r, &len)))
            break;
        fk_perfscript_line(p, line, len, r->lineno);
    }
    fk_perfscript_finish(p);
    return !r->error;
}
