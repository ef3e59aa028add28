/* SPDX-License-Identifier: GPL-2.0-only */
/* `perf script` text -> stack table. The input is a sequence of samples:
 *   HEADER          comm [pid/]tid [cpu] time: [period] event: [ip sym (dso)]
 *   \t ip sym+off (dso)      one line per frame, leaf first (with -g)
 *   (blank line)
 * Which header fields appear depends on `perf script -F`; we classify the
 * header's tokens by shape instead of assuming positions.
 * Frame lines repeat (deep stacks: ~2% of them are distinct), so a frame
 * line's text after its ip (its key) is parsed once: a bounded table maps
 * keys to their frames' name ids, and each key remembers the key that
 * followed it, which is checked in the reader's buffer before anything is
 * scanned or hashed (3 frame lines in 4 on shallow host-wide input, 6 in
 * 7 on deep stacks). A sample's stack is its name ids, hashed as they are
 * pushed, and the folded text is made once, at the end.
 * Invariant: a kept key's frames are what add_frame gives for those bytes
 * in a process of the same java-ness (the only state it reads). */
#include "perfscript.h"
#include "folded.h"
#include "util/lineread.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
        /* ASCII only; digits tested unfolded (folded, the control
         * bytes 0x10-0x19 would pass as '0'-'9'), letters with A-F
         * folded to a-f */
        w &= ~high;
        uint64_t lw = w | (0x20 * ones);
        uint64_t ge0 = w + (0x80 - '0') * ones, gt9 = w + (0x80 - '9' - 1) * ones;
        uint64_t gea = lw + (0x80 - 'a') * ones, gtf = lw + (0x80 - 'f' - 1) * ones;
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

#ifdef __SSE2__
/* Bit i set when byte i of v is a blank (space or tab), a decimal digit,
 * a hex digit. */
static inline unsigned blank_mask16(__m128i v)
{
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                                    _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))));
}

static inline __m128i digits16(__m128i v)
{
    __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
}

static inline unsigned digit_mask16(__m128i v)
{
    return (unsigned)_mm_movemask_epi8(digits16(v));
}

static inline unsigned hex_mask16(__m128i v)
{
    __m128i l = _mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
    __m128i af = _mm_cmpeq_epi8(_mm_min_epu8(l, _mm_set1_epi8(5)), l);
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(digits16(v), af));
}
#endif

/* The frame keys: a frame line's text after its ip (with --addrs from the
 * ip on), in records of 32-bit words in one array, indexed by key hash
 * (util/hindex.h): a lookup touches an index slot and one record.
 *   KR_KJ    key length << 1 | seen in a java process (see add_frame)
 *   KR_ID    the frames: LC_SKIP, a name id or LC_CHAIN | chain offset
 *   KR_NEXT  record offset + 1 of the key that followed it last time, 0 none
 *   KR_PFX   length of the prefix below, 0 none
 *   then KR_PFXMAX bytes ending with what came before the key on its line
 *   last time (indent and ip: the same ip comes back with the same key in
 *   a process), so that a predicted line is checked whole with one
 *   compare, and the key's bytes, padded to a word.
 * Records are named by offset + 1 (0: none) from the first block's start
 * and never move: a full block is followed by another one (kr_block),
 * not copied, so memory the heap has touched is all in use. */
enum { KR_KJ, KR_ID, KR_NEXT, KR_PFX, KR_PFXMAX = 24, KR_HEAD = KR_PFX + 1 + KR_PFXMAX / 4,
       KR_BLOCK_MIN = (64 << 10) / 4 };
enum { LC_CHAIN = 1u << 31, LC_SKIP = UINT32_MAX - 1 };

static inline const char *kr_key(const struct fk_perfscript_keys *c, uint32_t r)
{
    return (const char *)(c->w + r - 1 + KR_HEAD);
}

/* Record r's key came after the n bytes at line on a line of its own:
 * keep them as its prefix. None when they do not fit, when the line is
 * not indented (predicted_lines takes only indented lines: an unindented
 * one may be a header) or when the key ends in '\r' (the reader would
 * have dropped it from a whole line). */
static inline void kr_set_prefix(struct fk_perfscript_keys *c, uint32_t r, const char *line,
                                 size_t n)
{
    uint32_t *rec = c->w + r - 1;
    size_t klen = rec[KR_KJ] >> 1;
    if (n == 0 || n > KR_PFXMAX || !is_space(line[0]) || (klen && kr_key(c, r)[klen - 1] == '\r')) {
        rec[KR_PFX] = 0;
        return;
    }
    rec[KR_PFX] = (uint32_t)n;
    memcpy((char *)(rec + KR_HEAD) - n, line, n);
}

/* Is record r the key key[0..len) (of a process of this java-ness)? */
static inline bool kr_is(const struct fk_perfscript_keys *c, uint32_t r, const char *key,
                         size_t len, bool java)
{
    return c->w[r - 1 + KR_KJ] == (uint32_t)(len << 1 | java) && !memcmp(kr_key(c, r), key, len);
}

/* The record of key, 0 if there is none. */
static inline uint32_t kr_find(const struct fk_perfscript_keys *c, const char *key, size_t len,
                               uint64_t h, bool java)
{
    struct fk_hiter it = fk_hindex_find(&c->index, h);
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (kr_is(c, i + 1, key, len, java))
            return i + 1;
    return 0;
}

/* A block of at least `words` words for more records, after the current
 * one: false when none can be named from the first block (it would lie
 * below it or too far above; then nothing new is kept, as past max). A
 * new block is as big as all before it together (the first: 64 KB, or
 * what fk_perfscript_expect chose). */
static bool kr_block(struct fk_perfscript_keys *c, size_t words)
{
    size_t size = c->w ? c->cap - c->len + c->used : KR_BLOCK_MIN;
    if (size > c->max - c->used)
        size = c->max - c->used;
    if (size < words)
        size = words;
    if (c->nblocks == sizeof c->block / sizeof c->block[0])
        return false;
    uint32_t *b = fk_malloc(size * sizeof *b);
    size_t at = 0;
    if (c->w) {
        /* named by its distance from the first block, in words */
        uintptr_t d = (uintptr_t)b - (uintptr_t)c->w;
        if ((uintptr_t)b < (uintptr_t)c->w || d % sizeof *b
            || d / sizeof *b + size >= UINT32_MAX / 2) {
            free(b);
            return false;
        }
        at = d / sizeof *b;
    } else {
        c->w = b;
    }
    c->block[c->nblocks++] = b;
    c->len = at;
    c->cap = at + size;
    return true;
}

/* Add key (not there yet) with its frames id; its record, 0 when the
 * records would pass c->max words (then nothing new is kept). */
static uint32_t kr_put(struct fk_perfscript_keys *c, const char *key, size_t len, uint64_t h,
                       bool java, uint32_t id)
{
    size_t words = KR_HEAD + (len + 3) / 4;
    if (len >= UINT32_MAX / 2 || c->used + words + fk_hindex_bytes(&c->index) / 4 > c->max)
        return 0;
    if (c->len + words > c->cap && !kr_block(c, words))
        return 0;
    uint32_t *r = c->w + c->len;
    r[KR_KJ] = (uint32_t)(len << 1 | java);
    r[KR_ID] = id;
    r[KR_NEXT] = 0;
    r[KR_PFX] = 0;
    if (words > KR_HEAD)
        r[words - 1] = 0;   /* the padding */
    memcpy(r + KR_HEAD, key, len);
    fk_hindex_add(&c->index, h, (uint32_t)c->len);
    c->len += words;
    c->used += words;
    return (uint32_t)(r - c->w) + 1;
}

static void kr_free(struct fk_perfscript_keys *c)
{
    fk_hindex_free(&c->index);
    for (unsigned i = 0; i < c->nblocks; i++)
        free(c->block[i]);
    memset(c, 0, sizeof *c);    /* max 0: keeps nothing more */
}

/* Stack records (see perfscript.h): SR_COUNT (2 words), SR_N, ids. */
enum { SR_COUNT, SR_N = 2, SR_HEAD };

/* Slots of p->lcache: 64 KB, a few times the distinct keys of a 65 MB
 * host capture. */
enum { LCACHE_SLOTS = 1 << 14 };
/* Slots of p->pcache: 32 KB, a few times the process names of a busy
 * host (302 in 135k samples of the shallow bench input: 2.4k misses
 * here, 5.5k with 256 slots). */
enum { PCACHE_BITS = 10, PCACHE_SLOTS = 1 << PCACHE_BITS };
/* Slots of p->lh: 14 KB, the headers of the processes running at a time
 * on a small host (the shallow bench input's headers were taken again
 * 78 % of the time with 64 slots, 74 % with 32). */
enum { LH_BITS = 6 };

/* The lcache slot of the frame line at line (end: its end or the end of
 * what is buffered): a hash of its bytes 9 to 16, where an indented ip
 * has its low digits; -1 for a shorter line. A slot only proposes a
 * record; the record's key decides. */
static inline int line_slot(const char *line, const char *end)
{
    if (end - line < 17)
        return -1;
    uint64_t w;
    memcpy(&w, line + 9, 8);
    return (int)((w * 0x9fb21c651e98df25ULL) >> (64 - 14));
}

static inline uint64_t sr_count(const uint32_t *r)
{
    uint64_t c;
    memcpy(&c, r + SR_COUNT, sizeof c);
    return c;
}

/* The hash of a stack's ids, pushed one by one leaf first: one multiply
 * per frame as it is read, mixed once at the end (fk_hash_u64). */
static inline uint64_t ids_step(uint64_t h, uint32_t id)
{
    h = (h ^ id) * 0x9fb21c651e98df25ULL;
    return h ^ (h >> 29);
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
    p->event_len = p->event ? strlen(p->event) : 0;
    p->stk_cap = 512;
    p->stk = fk_malloc(p->stk_cap * sizeof *p->stk);
    p->stk_pos = p->stk_cap;
    fk_stacktab_init(&p->names);
    /* 4 MB of keys and their index: ~40k keys of ~80 bytes */
    p->keys.max = (4u << 20) / sizeof *p->keys.w;
    p->lcache = fk_calloc(LCACHE_SLOTS, sizeof *p->lcache);
    p->pcache = fk_calloc(PCACHE_SLOTS, sizeof *p->pcache);
    p->pname_id = UINT32_MAX;
}

/* Bytes of input per byte of key records, and of stack records, at
 * which the tables are first made (fk_perfscript_expect): 65 MB host-wide
 * and deep-stack captures keep 2.0-3.7 % of their size as keys and 1-3 %
 * as stacks. Doubled from a small start, the key records of the shallow
 * bench input went through blocks of 0.5, 1, 2 and 4 MB, each freed block
 * a hole the heap had touched, and a 4 MB block 2.4 MB used put the next
 * chunk's header on a fifth huge page: 10 MB of huge pages (each one
 * zeroed on its first touch, 20 % of the CPU) for 6.5 MB in use. Started
 * near their final sizes they are not copied. A guess too small only
 * doubles as before; one too big is address space, untouched past what is
 * used, but it moves what comes after it: which 2 MB pages the heap
 * touches depends on that layout (24 and 40 gave the three bench inputs
 * 3, 3 and 5 huge pages instead of 5, 5 and 6; 24 and 32, 4, 3 and 6).
 * Stacks at 1/40 left deep2's table (1.49 MB) to be regrown to 2.99 MB,
 * the old block a hole and the new one's end on a fifth huge page: at
 * 1/28 the heaps of deep, deep2 and shallow are a huge page smaller
 * (peak RSS 10.7, 12.8, 12.8 -> 8.5, 10.7, 10.8 MB). */
enum { KEYS_PER_INPUT = 24, STACKS_PER_INPUT = 28, STACKS_START_MAX = 4 << 20,
       TABLE_START_MIN = 64 << 10 };

void fk_perfscript_expect(struct fk_perfscript *p, uint64_t bytes)
{
    uint64_t k = bytes / KEYS_PER_INPUT, s = bytes / STACKS_PER_INPUT;
    if (k > (uint64_t)p->keys.max * sizeof *p->keys.w)
        k = (uint64_t)p->keys.max * sizeof *p->keys.w;
    if (s > STACKS_START_MAX)
        s = STACKS_START_MAX;
    /* exact sizes (fk_grow would round them up to a power of two) */
    if (!p->keys.w && k >= TABLE_START_MIN)
        kr_block(&p->keys, (size_t)k / sizeof *p->keys.w);
    if (!p->stacks.w && s >= TABLE_START_MIN) {
        p->stacks.cap = (size_t)s / sizeof *p->stacks.w;
        p->stacks.w = fk_malloc(p->stacks.cap * sizeof *p->stacks.w);
    }
}

void fk_perfscript_free(struct fk_perfscript *p)
{
    free(p->event);
    free(p->other_event);
    free(p->stk);
    fk_buf_free(&p->pname);
    fk_buf_free(&p->frame);
    free(p->chains);
    free(p->kfirst);
    free(p->lcache);
    free(p->pcache);
    free(p->lh);
    fk_stacktab_free(&p->names);
    free(p->stacks.w);
    fk_hindex_free(&p->stacks.index);
    free(p->stacks.pend[0].ids);
    free(p->stacks.pend[1].ids);
    kr_free(&p->keys);
    memset(p, 0, sizeof *p);
}

/* The frame stack is full at its front: double it, keeping the frames at
 * its end (they are filled from the back, see stk_push). */
static void stk_grow(struct fk_perfscript *p)
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

/* Push a name id in front of the frames read so far (frames come leaf
 * first, stacks are stored root first). */
static inline void stk_push(struct fk_perfscript *p, uint32_t id)
{
    if (p->stk_pos == 0)
        stk_grow(p);
    p->stk[--p->stk_pos] = id;
    p->stk_hash = ids_step(p->stk_hash, id);
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

/* Count a stack weight times: its record (cand: offset + 1 of a likely
 * one, 0 none), made when there is none. */
static void count_stack(struct fk_perfscript_stacks *t, const uint32_t *ids, size_t n,
                        uint64_t h, uint64_t weight, uint32_t cand)
{
    uint32_t *r = NULL;
    if (cand) {
        uint32_t *c = t->w + cand - 1;
        if (c[SR_N] == n && !memcmp(c + SR_HEAD, ids, n * sizeof *ids))
            r = c;
    }
    if (!r) {
        struct fk_hiter it = fk_hindex_find(&t->index, h);
        uint32_t at;
        while (fk_hindex_next(&it, &at)) {
            uint32_t *c = t->w + at;
            if (c[SR_N] == n && !memcmp(c + SR_HEAD, ids, n * sizeof *ids)) {
                r = c;
                break;
            }
        }
    }
    if (!r) {
        if (n >= UINT32_MAX || t->len + SR_HEAD + n >= UINT32_MAX)
            fk_die("more than 16 GB of stacks");
        t->w = fk_grow(t->w, &t->cap, t->len + SR_HEAD + n, sizeof *t->w);
        r = t->w + t->len;
        memset(r, 0, SR_HEAD * sizeof *r);
        r[SR_N] = (uint32_t)n;
        memcpy(r + SR_HEAD, ids, n * sizeof *ids);
        fk_hindex_add(&t->index, h, (uint32_t)t->len);
        t->len += SR_HEAD + n;
        t->n++;
    }
    uint64_t c = sr_count(r);
    if (__builtin_add_overflow(c, weight, &c)) {
        t->overflow = true;
        c = UINT64_MAX;
    }
    memcpy(r + SR_COUNT, &c, sizeof c);
}

/* The pending stack whose slot was fetched: the record its slot names
 * (the first with its hash; the rest are rare) is fetched now. */
static void pend_probe(struct fk_perfscript_stacks *t, struct fk_pending_stack *q)
{
    struct fk_hiter it = fk_hindex_find(&t->index, q->h);
    uint32_t at;
    q->cand = fk_hindex_next(&it, &at) ? at + 1 : 0;
    if (q->cand)
        __builtin_prefetch(t->w + at);
}

static void pend_count(struct fk_perfscript_stacks *t, struct fk_pending_stack *q)
{
    count_stack(t, q->ids, q->n, q->h, q->weight, q->cand);
    q->used = false;
}

/* Count the stack in p->stk (its hash p->stk_hash) weight times, two
 * samples from now: count the oldest pending one, fetch the next one's
 * record, and this one's slot. The order keeps what each finds exact: a
 * stack is looked up after every earlier one was counted. */
static void add_stack(struct fk_perfscript *p, uint64_t weight)
{
    struct fk_perfscript_stacks *t = &p->stacks;
    struct fk_pending_stack *a = &t->pend[0], *b = &t->pend[1];
    if (b->used)
        pend_count(t, b);
    if (a->used) {
        pend_probe(t, a);
        struct fk_pending_stack x = *a;
        *a = *b;
        *b = x;
    }
    size_t n = p->stk_cap - p->stk_pos;
    a->ids = fk_grow(a->ids, &a->cap, n, sizeof *a->ids);
    memcpy(a->ids, p->stk + p->stk_pos, n * sizeof *a->ids);
    a->n = n;
    a->h = fk_hash_u64(p->stk_hash ^ n);
    a->weight = weight;
    a->used = true;
    if (t->index.slot)
        __builtin_prefetch(&t->index.slot[(uint32_t)a->h & t->index.mask]);
}

/* Count what is pending (before the table is read). */
static void drain_stacks(struct fk_perfscript_stacks *t)
{
    if (t->pend[1].used)
        pend_count(t, &t->pend[1]);
    if (t->pend[0].used) {
        pend_probe(t, &t->pend[0]);
        pend_count(t, &t->pend[0]);
    }
}

static void flush_sample(struct fk_perfscript *p)
{
    if (p->in_sample && p->keep) {
        stk_push(p, p->pname_id);
        add_stack(p, p->weight);
        p->samples++;
    }
    p->in_sample = false;
    p->stk_pos = p->stk_cap;
    p->stk_hash = 0;
    p->nframes = 0;
    p->kprev = 0;
    p->kstart = false;
}

/* A process name of up to 16 bytes as two words, zero after its end
 * (names hold no NUL: see name_ranks); end: where the readable bytes
 * after s end (a name is read in two loads when 16 bytes are there). */
static inline void pname_words(const char *s, size_t n, const char *end, uint64_t w[2])
{
    if (end - s >= 16) {
        memcpy(&w[0], s, 8);
        memcpy(&w[1], s + 8, 8);
        if (n < 8) {
            w[0] &= n ? ~0ULL >> (64 - 8 * n) : 0;
            w[1] = 0;
        } else if (n < 16) {
            w[1] &= n > 8 ? ~0ULL >> (128 - 8 * n) : 0;
        }
    } else {
        unsigned char b[16] = { 0 };
        for (size_t i = 0; i < n; i++)
            b[i] = (unsigned char)s[i];
        memcpy(w, b, 16);
    }
}

/* The name id of the process name s[0..n) (end: see pname_words): one
 * cached by the name's hash, or interned (then p->kfirst has room for
 * it). Names of up to 16 bytes (nearly all: a comm has 15 at most) are
 * hashed and compared as two words. */
static uint32_t pname_intern(struct fk_perfscript *p, const char *s, size_t n, const char *end)
{
    struct fk_pname_slot *c = NULL;
    uint64_t w[2];
    if (n <= 16) {
        pname_words(s, n, end, w);
        uint64_t h = (w[0] * 0x9fb21c651e98df25ULL) ^ (w[1] * 0xc2b2ae3d27d4eb4fULL) ^ n;
        c = &p->pcache[(h ^ h >> 29) * 0x9e3779b97f4a7c15ULL >> (64 - PCACHE_BITS)];
        uint64_t x[2];
        memcpy(x, c->name, 16);
        if (c->id1 && c->len == n && !((x[0] ^ w[0]) | (x[1] ^ w[1])))
            return c->id1 - 1;
    } else if (n <= sizeof c->name) {
        c = &p->pcache[fk_hash(s, n) % PCACHE_SLOTS];
        if (c->id1 && c->len == n && !memcmp(c->name, s, n))
            return c->id1 - 1;
    }
    uint32_t id = intern(p, s, n);
    if (c) {
        c->id1 = id + 1;
        c->len = (uint8_t)n;
        memset(c->name, 0, sizeof c->name);
        memcpy(c->name, s, n);
    }
    if (id >= p->kfirst_cap) {
        size_t old = p->kfirst_cap;
        p->kfirst = fk_grow(p->kfirst, &p->kfirst_cap, (size_t)id + 1, sizeof *p->kfirst);
        memset(p->kfirst + old, 0, (p->kfirst_cap - old) * sizeof *p->kfirst);
    }
    return id;
}

/* Is ev[0..len) the event want (wl bytes, strlen(want))? */
static bool event_matches(const char *want, size_t wl, const char *ev, size_t len)
{
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
    return p->java;
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

/* The first "ab" in s[0..n), NULL when there is none: 16 places at a
 * time (glibc's memmem makes a table at each call, which cost more than
 * the search in a name of ~70 bytes). */
static const char *find_pair(const char *s, size_t n, char a, char b)
{
    size_t i = 0;
#ifdef __SSE2__
    if (n >= 17) {
        const __m128i va = _mm_set1_epi8(a), vb = _mm_set1_epi8(b);
        for (;; i += 16) {
            if (i + 17 > n)
                i = n - 17;     /* the last places, overlapping (none before i matched) */
            unsigned m = (unsigned)_mm_movemask_epi8(_mm_and_si128(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + i)), va),
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + i + 1)), vb)));
            if (m)
                return s + i + __builtin_ctz(m);
            if (i + 17 == n)
                return NULL;
        }
    }
#endif
    for (; i + 1 < n; i++)
        if (s[i] == a && s[i + 1] == b)
            return s + i;
    return NULL;
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
    const char *dp = find_pair(f, n, '.', '(');     /* Go: ".(" ... ")." */
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
    const char *sym = s, *symend = end, *mod = NULL, *modend = NULL;
    const char *rp = s < end ? memrchr(s, ')', (size_t)(end - s)) : NULL;
    if (rp) {
        const char *open = NULL;      /* the '(' of the last " (" before rp */
        for (const char *q = rp - 1; q >= s + 2; q--)
            if (*q == '(' && q[-1] == ' ') {
                open = q;
                break;
            }
        if (open && rp - open == 9 && !memcmp(open, "(deleted)", 8)) {
            /* "(/path (deleted))": the object is /path */
            const char *outer = NULL;
            for (const char *q = open - 2; q >= s + 2; q--)
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
        const char *q = symend;
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
        const char *arrow = find_pair(f, (size_t)(stop - f), '-', '>');
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

/* The record of the key predicted for this sample's next frame line: the
 * one that followed the last line's key last time, or for the first line
 * the key this process's last sample began with; 0 none. */
static inline uint32_t predicted_key(const struct fk_perfscript *p)
{
    return p->kprev ? p->keys.w[p->kprev - 1 + KR_NEXT] : p->kstart ? p->kfirst[p->pname_id] : 0;
}

/* The next frame line of this sample has the key of record r; its frames. */
static inline void key_seen(struct fk_perfscript *p, uint32_t r)
{
    if (p->kprev)
        p->keys.w[p->kprev - 1 + KR_NEXT] = r;
    else if (p->kstart)
        p->kfirst[p->pname_id] = r;
    p->kstart = false;
    p->kprev = r;
    push_frames(p, p->keys.w[r - 1 + KR_ID]);
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

/* A frame line "ip sym (dso)" from s to end; line: the start of its line
 * when it is a line of its own (not the end of a sample header), so it may
 * be predicted, else NULL. */
static bool frame_line(struct fk_perfscript *p, const char *line, char *s, char *end)
{
    bool own_line = line != NULL;
    char *ipend = find_blank(s, end);
    if (ipend == s || !hex_token(s, (size_t)(ipend - s), end))
        return false;
    const char *key = p->o.addrs ? s : skip_blanks(ipend, end);
    size_t klen = (size_t)(end - key);
    bool java = is_java(p);
    /* the key predicted, the one last seen with this ip, then the index */
    uint32_t r = predicted_key(p);
    int slot = own_line ? line_slot(line, end) : -1;
    if ((!r || !kr_is(&p->keys, r, key, klen, java)) &&
        (slot < 0 || !(r = p->lcache[slot]) || !kr_is(&p->keys, r, key, klen, java))) {
        uint64_t h = key_hash(key, klen, java);
        r = kr_find(&p->keys, key, klen, h, java);
        if (!r) {
            if (!add_frame(p, s, end))
                return false;
            uint32_t id = frames_id(p);
            r = kr_put(&p->keys, key, klen, h, java, id);
            if (!r) {
                /* not kept: nor is its chain (memory follows what is kept) */
                p->kprev = 0;
                p->kstart = false;
                push_frames(p, id);
                if (id >= LC_CHAIN && id != LC_SKIP)
                    p->nchains = id - LC_CHAIN;
                return true;
            }
        }
    }
    if (own_line) {
        kr_set_prefix(&p->keys, r, line, (size_t)(key - line));
        if (slot >= 0)
            p->lcache[slot] = r;
        key_seen(p, r);
    } else {
        p->kprev = 0;
        p->kstart = false;
        push_frames(p, p->keys.w[r - 1 + KR_ID]);
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

/* Tokens of the usual headers "comm pid[/tid] [cpu] secs.frac: period
 * event:" (perf record -a) and the same without "[cpu]" (a command or
 * pid recorded), classified by position (as classify() would): how many
 * (6 or 5), or 0 for any other shape, which the general loop then
 * handles. A byte at a time; header_fast gives the same from bit masks. */
static int header_scalar(char *s, char *end, char **ts, size_t *tl, enum tok *tk)
{
    char *q = find_blank(s, end), *b = s;
    int n = 0;
    if (q == b || q == end)
        return 0;
    ts[n] = b, tl[n] = (size_t)(q - b), tk[n] = classify(b, tl[n]), n++;
    b = q = skip_blanks(q, end);
    while (q < end && is_digit(*q))
        q++;
    enum tok pid = T_NUM;
    if (q > b && q < end && *q == '/') {
        char *t = ++q;
        while (q < end && is_digit(*q))
            q++;
        if (q == t)
            return 0;
        pid = T_PIDTID;
    }
    if (q == b || q == end || !is_space(*q))
        return 0;
    ts[n] = b, tl[n] = (size_t)(q - b), tk[n] = pid, n++;
    b = q = skip_blanks(q, end);
    if (q < end && *q == '[') {
        q++;
        while (q < end && is_digit(*q))
            q++;
        if (q == b + 1 || q == end || *q++ != ']' || q == end || !is_space(*q))
            return 0;
        ts[n] = b, tl[n] = (size_t)(q - b), tk[n] = T_CPU, n++;
        b = q = skip_blanks(q, end);
    }
    while (q < end && is_digit(*q))
        q++;
    if (q == b || q == end || *q++ != '.')
        return 0;
    while (q < end && (is_digit(*q) || *q == '.'))
        q++;
    if (q == end || *q++ != ':' || q == end || !is_space(*q))
        return 0;
    ts[n] = b, tl[n] = (size_t)(q - b), tk[n] = T_TIME, n++;
    b = q = skip_blanks(q, end);
    while (q < end && is_digit(*q))
        q++;
    if (q == b || q == end || !is_space(*q))
        return 0;
    ts[n] = b, tl[n] = (size_t)(q - b), tk[n] = T_NUM, n++;
    b = q = skip_blanks(q, end);
    if (q == end || is_digit(*q))
        return 0;
    q = find_blank(q, end);
    if (q - b < 2 || q[-1] != ':')
        return 0;
    ts[n] = b, tl[n] = (size_t)(q - b), tk[n] = T_EVENT, n++;
    return n;
}

#ifdef __SSE2__
/* The first set bit of mask at or after from; n (the end) when none. */
static inline unsigned first_at(uint64_t mask, unsigned from, unsigned n)
{
    uint64_t m = from < 64 ? mask & (~0ULL << from) : 0;
    return m ? (unsigned)__builtin_ctzll(m) : n;
}

/* header_masks' state: the line's masks, and the tokens found so far. */
struct header_fields {
    char *s;
    uint64_t sp, nsp;       /* blanks, and not blanks */
    unsigned n;             /* bytes in the masks (at most 64) */
    bool whole;             /* they are the whole line */
    char **ts;
    size_t *tl;
    enum tok *tk;
    int k;
};

/* header_masks' answer when a field reaches the masks' end: not the usual
 * header when the line ends there, else -1 (header_scalar decides). */
static inline int window_end(const struct header_fields *h)
{
    return h->whole ? 0 : -1;
}

/* The field from *b ends at q, where a blank must follow it: keep it as a
 * token of kind t and set *b to where the next field begins. 1 on; else
 * header_masks' answer. */
static inline int field_end(struct header_fields *h, unsigned *b, unsigned q, enum tok t)
{
    if (q >= h->n)
        return window_end(h);
    if (!(h->sp >> q & 1))
        return 0;
    h->ts[h->k] = h->s + *b, h->tl[h->k] = q - *b, h->tk[h->k] = t, h->k++;
    *b = first_at(h->nsp, q, h->n);
    return *b < h->n ? 1 : window_end(h);
}

/* header_scalar's answer from masks of the line's first 64 bytes (blanks,
 * digits, dots): each field's end is one bit scan, not a loop a byte at a
 * time (whose exits the branch predictor misses: field widths vary from
 * sample to sample). -1 when the line is under 16 bytes, or a field runs
 * past the 64 bytes and the line goes on: then header_scalar decides. */
static int header_masks(char *s, char *end, char **ts, size_t *tl, enum tok *tk)
{
    size_t len = (size_t)(end - s);
    if (len < 16)
        return -1;
    unsigned n = len < 64 ? (unsigned)len : 64;
    uint64_t sp = 0, dg = 0, dot = 0;
    for (unsigned off = 0; off < n; off += 16) {
        /* a last part of under 16 bytes: the line's last 16, shifted */
        unsigned shift = n - off >= 16 ? 0 : 16 - (n - off);
        __m128i v = _mm_loadu_si128((const __m128i *)(s + off - shift));
        unsigned t = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
        sp |= (uint64_t)(blank_mask16(v) >> shift) << off;
        dg |= (uint64_t)(digit_mask16(v) >> shift) << off;
        dot |= (uint64_t)(t >> shift) << off;
    }
    uint64_t valid = n == 64 ? ~0ULL : (1ULL << n) - 1, ndg = ~dg & valid;
    struct header_fields h = { s, sp, ~sp & valid, n, len <= 64, ts, tl, tk, 0 };
    int on;
    unsigned b = 0, q = first_at(sp, 0, n);     /* the comm */
    if (q >= n)
        return window_end(&h);
    if (q == 0)
        return 0;
    if ((on = field_end(&h, &b, q, classify(s, q))) <= 0)
        return on;
    q = first_at(ndg, b, n);        /* pid[/tid] */
    if (q >= n)
        return window_end(&h);
    enum tok pid = T_NUM;
    if (q > b && s[q] == '/') {
        unsigned t = q + 1;
        q = first_at(ndg, t, n);
        if (q >= n)
            return window_end(&h);
        if (q == t)
            return 0;
        pid = T_PIDTID;
    }
    if (q == b || (on = field_end(&h, &b, q, pid)) <= 0)
        return q == b ? 0 : on;
    if (s[b] == '[') {              /* [cpu] */
        q = first_at(ndg, b + 1, n);
        if (q >= n)
            return window_end(&h);
        if (q == b + 1 || s[q] != ']')
            return 0;
        if ((on = field_end(&h, &b, q + 1, T_CPU)) <= 0)
            return on;
    }
    q = first_at(ndg, b, n);        /* the time: digits '.' digits and dots ':' */
    if (q >= n)
        return window_end(&h);
    if (q == b || s[q] != '.')
        return 0;
    q = first_at(~(dg | dot) & valid, q + 1, n);
    if (q >= n)
        return window_end(&h);
    if (s[q] != ':')
        return 0;
    if ((on = field_end(&h, &b, q + 1, T_TIME)) <= 0)
        return on;
    q = first_at(ndg, b, n);        /* the period */
    if (q >= n)
        return window_end(&h);
    if (q == b || (on = field_end(&h, &b, q, T_NUM)) <= 0)
        return q == b ? 0 : on;
    if (dg >> b & 1)                /* the event */
        return 0;
    q = first_at(sp, b, n);
    if (q >= n && !h.whole)
        return -1;
    if (q - b < 2 || s[q - 1] != ':')
        return 0;
    ts[h.k] = s + b, tl[h.k] = q - b, tk[h.k] = T_EVENT, h.k++;
    return h.k;
}
#endif

/* The usual header's tokens (see header_scalar). */
static inline int header_fast(char *s, char *end, char **ts, size_t *tl, enum tok *tk)
{
#ifdef __SSE2__
    int k = header_masks(s, end, ts, tl, tk);
    if (k >= 0)
        return k;
#endif
    return header_scalar(s, end, ts, tl, tk);
}

static const char *pname_make(struct fk_perfscript *p, const char *cb, const char *ce,
                              const char *t, size_t tn);

/* The p->lh slot of a header of len bytes at s (16 at least): a hash
 * of its first 8 (the comm, or the comm and pid). */
static inline struct fk_last_header *header_slot(const struct fk_perfscript *p, const char *s)
{
    uint64_t w;
    memcpy(&w, s, 8);
    return &p->lh[(w * 0x9fb21c651e98df25ULL) >> (64 - LH_BITS)];
}

/* The header s..end's slot when it holds this header but for the digits
 * header_keep let differ (cpu, time, pid), else NULL. Then parse_header
 * would find the same tokens at the same places (only digits differ,
 * where digits were), so the same process name, event and period. 16
 * bytes at a time, the last chunk overlapping. */
static inline const struct fk_last_header *header_again(const struct fk_perfscript *p,
                                                        const char *s, const char *end)
{
#ifdef __SSE2__
    size_t len = (size_t)(end - s);
    if (len < 16 || !p->lh)
        return NULL;
    const struct fk_last_header *h = header_slot(p, s);
    if (len != h->len)
        return NULL;
    for (size_t off = 0; off < len; off += 16) {
        size_t at = off + 16 <= len ? off : len - 16;
        __m128i v = _mm_loadu_si128((const __m128i *)(s + at));
        __m128i ok = _mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_loadu_si128((const __m128i *)(h->text + at))),
            _mm_and_si128(_mm_loadu_si128((const __m128i *)(h->var + at)), digits16(v)));
        if (_mm_movemask_epi8(ok) != 0xffff)
            return NULL;
    }
    return h;
#else
    (void)p, (void)s, (void)end;
    return NULL;
#endif
}

/* Keep the header s..end (tokens of the usual shape, nt of them, the
 * event last with only blanks after it) in its slot for header_again,
 * with what it gave. The digits of its cpu and time may differ next
 * time, and those of its pid (token pidt; -1: none) when the process
 * name does not show it: a host's short-lived processes (each compiler
 * run a new pid) then take their headers again too. */
static void header_keep(struct fk_perfscript *p, const char *s, const char *end, char **ts,
                        const size_t *tl, const enum tok *tk, int nt, int pidt)
{
    size_t len = (size_t)(end - s);
    if (len < 16)
        return;
    if (!p->lh)     /* made at the first such header */
        p->lh = fk_calloc(1u << LH_BITS, sizeof *p->lh);
    struct fk_last_header *h = header_slot(p, s);
    h->len = 0;
    if (len > sizeof h->text)
        return;
    memcpy(h->text, s, len);
    memset(h->var, 0, len);
    for (int i = 0; i < nt; i++) {
        if (tk[i] != T_CPU && tk[i] != T_TIME && i != pidt)
            continue;
        for (size_t j = (size_t)(ts[i] - s); j < (size_t)(ts[i] - s) + tl[i]; j++)
            if (is_digit(s[j]))
                h->var[j] = 0xff;
    }
    h->len = len;
    h->pname_id = p->pname_id;
    h->java = p->java;
    h->weight = p->weight;
}

/* A sample of process name id pname_id begins (after the one before is
 * counted). */
static inline void sample_begin(struct fk_perfscript *p, uint32_t pname_id, bool java,
                                uint64_t weight)
{
    uint32_t first = p->kfirst[pname_id];
    if (first) {
        __builtin_prefetch(p->keys.w + first - 1);
        __builtin_prefetch(p->keys.w + first - 1 + KR_HEAD);
    }
    flush_sample(p);
    p->in_sample = true;
    p->keep = true;
    p->weight = weight;
    p->kstart = true;
    p->pname_id = pname_id;
    p->java = java;
}

/* A sample header. Returns false if the line does not look like one. */
static bool parse_header(struct fk_perfscript *p, char *s, char *end, const char **why)
{
    const struct fk_last_header *again = header_again(p, s, end);
    if (again) {
        sample_begin(p, again->pname_id, again->java, again->weight);
        return true;
    }
    char *ts[MAX_TOK];
    size_t tl[MAX_TOK];
    enum tok tk[MAX_TOK];
    int nt = header_fast(s, end, ts, tl, tk);
    bool fast = nt > 0;
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
            p->event_len = strlen(p->event);
            p->event_defaulted = true;
        } else if (!event_matches(p->event, p->event_len, e, el)) {
            keep = false;
            p->skipped_events++;
            if (!p->other_event)
                p->other_event = fk_strndup(e, el);
        }
    }

    if (!keep) {
        flush_sample(p);
        p->in_sample = true;
        p->keep = false;
        return true;
    }

    /* process name: the comm itself when it needs no tidying and gets no
     * pid (nearly always), else made in p->pname; found before the sample
     * before is counted, so that the record of the key its last sample
     * began with is fetched meanwhile */
    char *cb = ts[0], *ce = commend > 0 ? ts[commend] : ts[0];
    while (ce > cb && is_space(ce[-1]))
        ce--;
    bool with_pid = (p->o.pid || p->o.tid) && pidt > 0, plain = ce > cb && !with_pid;
    for (const char *c = cb; c < ce && plain; c++)
        plain = !(is_space(*c) || *c == ';' || *c == '\0');
    const char *pn = cb;
    size_t pl = (size_t)(ce - cb);
    if (!plain) {
        pn = pname_make(p, cb, ce, with_pid ? ts[pidt] : NULL, with_pid ? tl[pidt] : 0);
        pl = p->pname.len;
    }
    uint32_t pname_id = pname_intern(p, pn, pl, plain ? end : pn + pl);
    /* java-ness from the bytes at hand, not the name table's (a cache miss) */
    sample_begin(p, pname_id, pl >= 4 && !memcmp(pn, "java", 4), p->o.period ? period : 1);
    /* Without -g the sample's own ip/sym/dso follow the event. */
    if (ev > 0) {
        char *r = ts[ev] + tl[ev];
        while (r < end && is_space(*r))
            r++;
        if (r < end && is_hex(*r) && end[-1] == ')')
            frame_line(p, NULL, r, end);
        else if (r == end && fast && ev == nt - 1)
            header_keep(p, s, end, ts, tl, tk, nt, p->o.pid || p->o.tid ? -1 : pidt);
    }
    return true;
}

/* The process name of comm cb..ce in p->pname, tidied (blanks become '_',
 * ';' ':', NUL '?'; none is "[unknown]"), with "-PID" (--pid) or
 * "-PID/TID" (--tid) from the token t[0..tn) when t is not NULL. */
static const char *pname_make(struct fk_perfscript *p, const char *cb, const char *ce,
                              const char *t, size_t tn)
{
    struct fk_buf *pn = &p->pname;
    fk_buf_reset(pn);
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
    if (t) {
        size_t n = tn;
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
    return pn->data;
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
        if (frame_line(p, line, s, end))
            return;
        /* perhaps a header with a right-aligned comm */
    } else if (s == line && p->in_sample && !perl_header(s, end) && !event_second(s, end)) {
        /* an unindented frame line (perf-map-agent's tools write them):
         * the Perl tool takes a line for a header only when it has this
         * shape, anything else in a sample for a frame */
        if (!p->keep || frame_line(p, line, s, end))
            return;
    }
    if (parse_header(p, s, end, &why))
        return;
    fk_parse_stats_bad(p->st, lineno, line, len, why);
}

/* Sorting stacks into the order of their folded text (frame names joined
 * by ';', compared bytewise, a line before one it is the beginning of:
 * what fk_folded_write gives) without writing the text out. Names never
 * hold ';' or NUL (add_frame and the process name turn them into ':' and
 * '?'), and equal names have equal ids. So each name x gets two ranks,
 * its place among all the strings "x" (x ends its stack) and "x;" (more
 * frames follow): a stack's text orders as the sequence of its frames'
 * ranks, mid ranks then the last frame's last rank. The ranks come from
 * the names sorted by their bytes, and the stacks are sorted by their
 * rank sequences, both by one radix sort of 64-bit chunks (8 bytes of a
 * name, a few ranks of a stack), refined chunk by chunk in the runs that
 * tie: no comparison of stacks, and a record is read once per chunk. */
struct chunk_item {
    uint64_t key;       /* the chunk being sorted on */
    uint32_t ref;       /* a name id or a stack record's word offset */
};

struct chunk_sort {
    const struct fk_perfscript *p;
    const uint32_t *mid, *last;     /* ranks by name id (1 on; 0 is "ended") */
    unsigned bits, per;             /* bits a rank takes, ranks per chunk */
    /* chunk depth of ref: its key; *more when ref goes on after it */
    uint64_t (*chunk)(const struct chunk_sort *cs, uint32_t ref, size_t depth, bool *more);
    struct chunk_item *tmp;
    uint32_t (*count)[256];         /* 8 x 256 counters */
};

static uint64_t name_chunk(const struct chunk_sort *cs, uint32_t id, size_t depth, bool *more)
{
    const struct fk_stack *nm = &cs->p->names.v[id];
    size_t at = depth * 8;
    uint64_t x = 0;
    for (size_t k = 0; k < 8; k++)
        x = x << 8 | (at + k < nm->len ? (unsigned char)nm->key[at + k] : 0);
    *more = nm->len > at + 8;
    return x;
}

static uint64_t stack_chunk(const struct chunk_sort *cs, uint32_t off, size_t depth, bool *more)
{
    const uint32_t *r = cs->p->stacks.w + off, *ids = r + SR_HEAD;
    size_t n = r[SR_N], at = depth * cs->per, stop = at + cs->per;
    uint64_t x = 0;
    for (size_t j = at; j < stop; j++)
        x = x << cs->bits | (j + 1 < n ? cs->mid[ids[j]] : j + 1 == n ? cs->last[ids[j]] : 0);
    *more = n > stop;
    return x;
}

/* Sort v[0..n) by key, stably: insertion for a few, else LSD radix by
 * bytes (a byte the same in every key is no pass). */
static void sort_items(struct chunk_sort *cs, struct chunk_item *v, size_t n)
{
    if (n < 48) {
        for (size_t i = 1; i < n; i++) {
            struct chunk_item x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1].key > x.key; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    uint32_t (*c)[256] = cs->count;
    memset(c, 0, 8 * sizeof *c);
    for (size_t i = 0; i < n; i++)
        for (unsigned b = 0; b < 8; b++)
            c[b][(v[i].key >> (8 * b)) & 0xff]++;
    struct chunk_item *from = v, *to = cs->tmp;
    for (unsigned b = 0; b < 8; b++) {
        if (c[b][(v[0].key >> (8 * b)) & 0xff] == n)
            continue;
        uint32_t at = 0;
        for (unsigned d = 0; d < 256; d++) {
            uint32_t k = c[b][d];
            c[b][d] = at;
            at += k;
        }
        for (size_t i = 0; i < n; i++)
            to[c[b][(from[i].key >> (8 * b)) & 0xff]++] = from[i];
        struct chunk_item *t = from;
        from = to;
        to = t;
    }
    if (from != v)
        memcpy(v, from, n * sizeof *v);
}

/* Sort v[0..n) by the refs' chunk sequences: by chunk 0, then each run
 * that ties by its next chunk, and so on (a work list, not recursion: a
 * stack may be a million frames deep). Refs that tie to their ends keep
 * their order. */
static void chunk_sort(struct chunk_sort *cs, struct chunk_item *v, size_t n)
{
    struct run { size_t at, n, depth; } *work = NULL;
    size_t nwork = 0, cap = 0;
    cs->tmp = fk_malloc((n ? n : 1) * sizeof *cs->tmp);
    cs->count = fk_malloc(8 * sizeof *cs->count);
    if (n > 1) {
        work = fk_grow(work, &cap, 1, sizeof *work);
        work[nwork++] = (struct run){ 0, n, 0 };
    }
    while (nwork) {
        struct run r = work[--nwork];
        struct chunk_item *w = v + r.at;
        bool any = false;
        for (size_t i = 0; i < r.n; i++) {
            bool more;
            w[i].key = cs->chunk(cs, w[i].ref, r.depth, &more);
            any |= more;
        }
        sort_items(cs, w, r.n);
        if (!any)
            continue;
        for (size_t i = 0, j; i < r.n; i = j) {
            for (j = i + 1; j < r.n && w[j].key == w[i].key; j++)
                ;
            if (j - i > 1) {
                work = fk_grow(work, &cap, nwork + 1, sizeof *work);
                work[nwork++] = (struct run){ r.at + i, j - i, r.depth + 1 };
            }
        }
    }
    free(work);
    free(cs->tmp);
    free(cs->count);
}

/* The names' ranks (see above) into mid[] and last[], by id. In bytewise
 * order, the names that x begins are right after x; "x;" comes after
 * those of them whose next byte is below ';' and before the rest. Names
 * that begin the current one wait on a stack (each begins the next) until
 * a name that they do not begin, or that goes on with a byte above ';',
 * shows their "x;" comes now. */
static void name_ranks(struct chunk_sort *cs, uint32_t *mid, uint32_t *last)
{
    const struct fk_stacktab *names = &cs->p->names;
    size_t n = names->n;
    struct chunk_item *v = fk_malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i].ref = (uint32_t)i;
    cs->chunk = name_chunk;
    chunk_sort(cs, v, n);
    uint32_t *open = fk_malloc((n ? n : 1) * sizeof *open), nopen = 0, rank = 0;
    for (size_t i = 0; i < n; i++) {
        const struct fk_stack *y = &names->v[v[i].ref];
        while (nopen) {
            const struct fk_stack *x = &names->v[open[nopen - 1]];
            if (x->len < y->len && !memcmp(x->key, y->key, x->len) &&
                (unsigned char)y->key[x->len] < ';')
                break;
            mid[open[--nopen]] = ++rank;
        }
        last[v[i].ref] = ++rank;
        open[nopen++] = v[i].ref;
    }
    while (nopen)
        mid[open[--nopen]] = ++rank;
    free(open);
    free(v);
}

/* The folded text of stack record r appended to buf (room left for its
 * count). */
static void stack_text(const struct fk_perfscript *p, const uint32_t *r, struct fk_buf *buf)
{
    size_t n = r[SR_N], len = n;
    const uint32_t *ids = r + SR_HEAD;
    for (size_t k = 0; k < n; k++)
        len += p->names.v[ids[k]].len;
    fk_buf_reserve(buf, len + 32);
    char *d = buf->data + buf->len;
    for (size_t k = 0; k < n; k++) {
        const struct fk_stack *nm = &p->names.v[ids[k]];
        if (k)
            *d++ = ';';
        memcpy(d, nm->key, nm->len);
        d += nm->len;
    }
    buf->len = (size_t)(d - buf->data);
}

/* The stack records, in the order they were first seen. */
static const uint32_t **stack_list(const struct fk_perfscript *p)
{
    const uint32_t **v = fk_malloc((p->stacks.n ? p->stacks.n : 1) * sizeof *v);
    size_t i = 0;
    for (size_t at = 0; at < p->stacks.len; at += SR_HEAD + p->stacks.w[at + SR_N])
        v[i++] = p->stacks.w + at;
    return v;
}

void fk_perfscript_finish(struct fk_perfscript *p)
{
    flush_sample(p);
    drain_stacks(&p->stacks);
    /* the key records are for reading only: their memory goes to the output */
    kr_free(&p->keys);
    p->kprev = 0;
    if (!p->tab)
        return;
    struct fk_buf b = FK_BUF_INIT;
    const uint32_t **v = stack_list(p);
    for (size_t i = 0; i < p->stacks.n; i++) {
        fk_buf_reset(&b);
        stack_text(p, v[i], &b);
        fk_stacktab_add(p->tab, b.data ? b.data : "", b.len, sr_count(v[i]));
    }
    free(v);
    if (p->stacks.overflow)
        p->tab->overflow = true;
    fk_buf_free(&b);
}

struct sorted_stacks {
    const struct fk_perfscript *p;
    const struct chunk_item *v;     /* refs: stack records, in order */
};

static uint64_t sorted_stack(void *ctx, size_t i, struct fk_buf *b)
{
    const struct sorted_stacks *ss = ctx;
    const uint32_t *r = ss->p->stacks.w + ss->v[i].ref;
    if (i + 4 < ss->p->stacks.n)
        __builtin_prefetch(ss->p->stacks.w + ss->v[i + 4].ref);
    stack_text(ss->p, r, b);
    return sr_count(r);
}

bool fk_perfscript_write(const struct fk_perfscript *p,
                         bool (*sink)(void *ctx, const void *data, size_t len), void *ctx)
{
    size_t n = p->stacks.n, nn = p->names.n;
    struct chunk_sort cs = { .p = p };
    uint32_t *ranks = fk_malloc((nn ? 2 * nn : 1) * sizeof *ranks);
    name_ranks(&cs, ranks, ranks + nn);
    cs.mid = ranks;
    cs.last = ranks + nn;
    cs.bits = 1;
    while (cs.bits < 32 && (2 * (uint64_t)nn) >> cs.bits)
        cs.bits++;
    cs.per = 64 / cs.bits;
    cs.chunk = stack_chunk;
    struct chunk_item *items = fk_malloc((n ? n : 1) * sizeof *items);
    size_t i = 0;
    for (size_t at = 0; at < p->stacks.len; at += SR_HEAD + p->stacks.w[at + SR_N])
        items[i++].ref = (uint32_t)at;
    chunk_sort(&cs, items, n);
    free(ranks);
    struct sorted_stacks ss = { p, items };
    bool ok = fk_folded_write_lines(n, sorted_stack, &ss, sink, ctx);
    free(items);
    return ok;
}

/* Are a[0..n) and b[0..n) the same bytes? Inline, 16 at a time (the last
 * chunk overlapping): every frame line is checked against a key, and a
 * call to memcmp per line cost more than the compare. The chunks'
 * differences are gathered and tested once: the bytes are nearly always
 * the same, and a branch per chunk only costs. */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
#ifdef __SSE2__
    if (n >= 16) {
        __m128i d = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + n - 16)),
                                  _mm_loadu_si128((const __m128i *)(b + n - 16)));
        for (size_t i = 0; i + 16 < n; i += 16)
            d = _mm_or_si128(d, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + i)),
                                              _mm_loadu_si128((const __m128i *)(b + i))));
        return _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xffff;
    }
#endif
    if (n >= 8) {
        uint64_t x, y, u, v;
        memcpy(&x, a, 8), memcpy(&y, b, 8);
        memcpy(&u, a + n - 8, 8), memcpy(&v, b + n - 8, 8);
        return !((x ^ y) | (u ^ v));
    }
    return !memcmp(a, b, n);
}

/* Is s[0..n) what frame_line takes before a key: blanks (at least one: an
 * unindented line may be a header), then (without --addrs) a hex ip and
 * blanks? A byte at a time; ip_prefix gives the same from bit masks. */
static inline bool ip_prefix_scalar(const char *s, size_t n, bool addrs)
{
    size_t i = 0;
    while (i < n && is_space(s[i]))
        i++;
    if (i == 0 || addrs)
        return i && i == n;
    size_t j = i;
    while (j < n && is_hex(s[j]))
        j++;
    if (j == i || j == n)
        return false;
    while (j < n && is_space(s[j]))
        j++;
    return j == n;
}

/* ip_prefix_scalar's answer (n <= KR_PFXMAX; end: where the readable bytes
 * after s end) from masks of blanks and hex digits: the ip of a known key
 * often changes (a process's libraries at other addresses, or a stripped
 * binary's "[unknown]" at every address: a third of a host capture's
 * frame lines), and the loops a byte at a time missed their exits as the
 * ips' widths vary. perf's own shape, one indent byte, an ip field of at
 * most 16 bytes and one blank, takes one 16-byte load: the bytes between
 * a blank first and a blank last must be blanks, one run of hex digits,
 * blanks. */
static inline bool ip_prefix(const char *s, size_t n, const char *end, bool addrs)
{
#ifdef __SSE2__
    if (!addrs && n >= 3 && n <= 18 && end - s >= 17) {
        if (!is_space(s[0]) || !is_space(s[n - 1]))
            return false;
        __m128i v = _mm_loadu_si128((const __m128i *)(s + 1));
        unsigned mid = (1u << (n - 2)) - 1;
        unsigned ip = ~blank_mask16(v) & mid;
        if (!ip || (ip & ~hex_mask16(v)))
            return false;
        ip >>= __builtin_ctz(ip);
        return !(ip & (ip + 1));    /* one run */
    }
    if (end - s >= 32 && n < 32) {
        uint32_t blank = 0, hex = 0;
        for (unsigned off = 0; off < 32; off += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + off));
            blank |= blank_mask16(v) << off;
            hex |= hex_mask16(v) << off;
        }
        uint32_t all = (1u << n) - 1, other = ~blank & all;
        if (!other)         /* blanks only */
            return n && addrs;
        unsigned i = (unsigned)__builtin_ctz(other);   /* the ip */
        if (i == 0 || addrs)
            return false;
        uint32_t past = ~hex & all & ~((1u << i) - 1);
        unsigned j = past ? (unsigned)__builtin_ctz(past) : (unsigned)n;   /* after it */
        return j > i && j < n && !(other >> j);
    }
#endif
    (void)end;
    return ip_prefix_scalar(s, n, addrs);
}

/* Is b[0..plen) (e: the end of what is buffered) a prefix of frame_line's
 * shape, like pfx[0..plen), the one kept before a key? Then it becomes
 * the one kept: an ip comes back with its key in a process. Out of line:
 * raw_line is inlined in the loop over frame lines, and this is its rare
 * path. */
static __attribute__((noinline)) bool other_ip(char *pfx, const char *b, size_t plen,
                                               const char *e, bool addrs)
{
    if (!ip_prefix(b, plen, e, addrs))
        return false;
#ifdef __SSE2__
    if (plen >= 16) {   /* perf's shape: two moves, not a call */
        __m128i lo = _mm_loadu_si128((const __m128i *)b);
        __m128i hi = _mm_loadu_si128((const __m128i *)(b + plen - 16));
        _mm_storeu_si128((__m128i *)pfx, lo);
        _mm_storeu_si128((__m128i *)(pfx + plen - 16), hi);
        return true;
    }
#endif
    memcpy(pfx, b, plen);
    return true;
}

/* Is the line at b (e: the end of what is buffered), newline included,
 * record r's key after as many bytes as came before it last time (its
 * prefix)? Its key; else NULL. The line as it was last time is two
 * compares; another ip of the same width (an unknown symbol's
 * "[unknown] (/usr/bin/bash)" comes after any address) is checked for
 * frame_line's shape. Nothing is parsed. */
static inline const char *raw_line(const struct fk_perfscript *p, uint32_t r, const char *b,
                                   const char *e, bool java)
{
    uint32_t *rec = p->keys.w + r - 1;
    uint32_t kj = rec[KR_KJ];
    size_t klen = kj >> 1, plen = rec[KR_PFX], n = plen + klen;
    if (!plen || (size_t)(e - b) <= n || b[n] != '\n' || (kj & 1) != java)
        return NULL;
    char *pfx = (char *)(rec + KR_HEAD) - plen;
    /* the line as last time (one compare: the prefix is kept before the
     * key), else the key after another ip */
    if (!same_bytes(b, pfx, n) &&
        (!same_bytes(b + plen, pfx + plen, klen) || !other_ip(pfx, b, plen, e, p->o.addrs)))
        return NULL;
    return b + plen;
}

/* The line at b as frame_line reads it, found in the buffer (e its end):
 * its key (*klen bytes), or NULL when it is not a frame line of its own
 * whose key can be checked here. */
static const char *line_key(const struct fk_perfscript *p, const char *b, const char *e,
                            size_t *klen)
{
    const char *s = b;
    if (s == e || !is_space(*s))
        return NULL;
    s = skip_blanks((char *)s + 1, (char *)e);
    const char *ipend = find_blank((char *)s, (char *)e);
    if (ipend == s || ipend == e || !hex_token(s, (size_t)(ipend - s), e))
        return NULL;
    const char *key = p->o.addrs ? s : skip_blanks((char *)ipend, (char *)e);
    const char *nl = memchr(key, '\n', (size_t)(e - key));
    if (!nl || (nl > key && nl[-1] == '\r'))
        return NULL;
    *klen = (size_t)(nl - key);
    return key;
}

/* Frame lines whose key is the one predicted (predicted_key), else the one
 * last seen with the same ip digits (lcache), checked in the reader's
 * buffer: no hash, and mostly no parse (raw_line); else a known key found
 * by its hash. A new key ends the run (frame_line makes its record). As
 * frame_line would take them: blanks, a hex ip, blanks, the key, the
 * newline. Not a key ending in '\r' (the reader drops one before a
 * newline, which this check would not). The sample's stack is kept in
 * locals meanwhile: the stores through p would be reloaded after every
 * store to a record. */
static void predicted_lines(struct fk_perfscript *p, struct fk_lineread *r)
{
    size_t avail;
    bool eof;
    const char *b0 = fk_lineread_peek(r, 0, &avail, &eof);     /* what is buffered */
    if (!b0)
        return;
    const char *b = b0, *e = b0 + avail;
    const bool java = is_java(p);
    uint32_t *const kw = p->keys.w;         /* no key is added here */
    uint32_t *stk = p->stk, kprev = p->kprev;
    size_t pos = p->stk_pos;
    uint64_t h = p->stk_hash, nf = p->nframes, lines = 0;
    bool ended = false;
    /* the first line: the key this process's last sample began with */
    uint32_t want = kprev ? kw[kprev - 1 + KR_NEXT] : p->kstart ? p->kfirst[p->pname_id] : 0;
    if (!want && !kprev && !p->kstart)
        return;
    for (;;) {
        if (b < e && *b == '\n') {
            /* the blank line that ends the sample, as fk_perfscript_line takes it */
            b++;
            lines++;
            ended = true;
            break;
        }
        /* on a sample's first line the key last seen with this ip is
         * fetched now, with the predicted one: that prediction fails
         * nearly half the time on host-wide input, and its record is then
         * not a second miss after the first; on later lines (predicted 4
         * times in 5) only when the prediction fails */
        int slot = -2;
        uint32_t other = 0;
        if (!kprev) {
            slot = line_slot(b, e);
            other = slot >= 0 ? p->lcache[slot] : 0;
            if (other && other != want)
                __builtin_prefetch(kw + other - 1);
        }
        const char *key = want ? raw_line(p, want, b, e, java) : NULL;
        uint32_t kr = want;
        if (!key) {
            if (slot == -2) {
                slot = line_slot(b, e);
                other = slot >= 0 ? p->lcache[slot] : 0;
            }
            if (other && other != want && (key = raw_line(p, other, b, e, java))) {
                kr = other;
            } else {
                /* the same key after an ip of another width, or a known
                 * key after an ip not seen with it (a library at another
                 * address in another process): found by its hash here,
                 * as frame_line would; a new key ends the run */
                size_t klen;
                if (!(key = line_key(p, b, e, &klen)))
                    break;
                if (want && kr_is(&p->keys, want, key, klen, java))
                    kr = want;
                else if (other && kr_is(&p->keys, other, key, klen, java))
                    kr = other;
                else if (!(kr = kr_find(&p->keys, key, klen, key_hash(key, klen, java), java)))
                    break;
                kr_set_prefix(&p->keys, kr, b, (size_t)(key - b));
                if (slot >= 0)
                    p->lcache[slot] = kr;
            }
        }
        /* key_seen, with the stack in locals */
        if (kprev) {
            if (kr != want)
                kw[kprev - 1 + KR_NEXT] = kr;
        } else if (p->kstart) {
            p->kfirst[p->pname_id] = kr;
            p->kstart = false;
        }
        kprev = kr;
        const uint32_t *rec = kw + kr - 1;
        uint32_t id = rec[KR_ID];
        want = rec[KR_NEXT];
        if (want) {
            /* its record's head and the bytes the next line is checked against */
            __builtin_prefetch(kw + want - 1);
            __builtin_prefetch(kw + want - 1 + KR_HEAD);
        }
        b = key + (rec[KR_KJ] >> 1) + 1;
        lines++;
        if (id < LC_CHAIN && pos) {
            stk[--pos] = id;
            h = ids_step(h, id);
            nf++;
        } else if (id != LC_SKIP) {
            p->stk_pos = pos, p->stk_hash = h, p->nframes = nf;
            push_frames(p, id);
            stk = p->stk, pos = p->stk_pos, h = p->stk_hash, nf = p->nframes;
        }
    }
    p->stk_pos = pos, p->stk_hash = h, p->nframes = nf;
    p->kprev = kprev;
    p->st->lines += lines;
    fk_lineread_skip(r, (size_t)(b - b0), lines);
    if (ended)
        flush_sample(p);
}

bool fk_perfscript_read_lines(struct fk_perfscript *p, struct fk_lineread *r)
{
    char *line;
    size_t len;
    for (;;) {
        if ((p->kprev || p->kstart) && p->keep && p->in_sample)
            predicted_lines(p, r);
        if (!(line = fk_lineread_next(r, &len)))
            break;
        /* a sample's first frame line is checked against the key last
         * seen with its ip (lcache): that record is fetched now, while
         * the header before it is parsed and the sample before counted */
        int slot = line_slot(r->buf + r->start, r->buf + r->end);
        if (slot >= 0 && p->lcache[slot]) {
            __builtin_prefetch(p->keys.w + p->lcache[slot] - 1);
            __builtin_prefetch(p->keys.w + p->lcache[slot] - 1 + KR_HEAD);
        }
        fk_perfscript_line(p, line, len, r->lineno);
    }
    fk_perfscript_finish(p);
    return !r->error[0];
}
