/* SPDX-License-Identifier: GPL-2.0-only */
#include "stacktab.h"

#include <stdlib.h>
#include <string.h>

/* Keys live in large blocks: one allocation per ~1 MiB, not per stack. */
struct fk_arena_block {
    struct fk_arena_block *next;
    size_t used, size;
    char data[];
};

static char *arena_copy(struct fk_stacktab *t, const char *s, size_t len)
{
    struct fk_arena_block *b = t->arena;
    if (!b || b->size - b->used < len + 1) {
        size_t size = len + 1 > (1u << 20) ? len + 1 : (1u << 20);
        b = fk_malloc(sizeof *b + size);
        b->next = t->arena;
        b->used = 0;
        b->size = size;
        t->arena = b;
        t->arena_bytes += sizeof *b + size;
    }
    char *d = b->data + b->used;
    memcpy(d, s, len);
    d[len] = '\0';
    b->used += len + 1;
    return d;
}

void fk_stacktab_init(struct fk_stacktab *t)
{
    memset(t, 0, sizeof *t);
    t->mask = 1023;
    t->index = fk_calloc(t->mask + 1, sizeof *t->index);
}

void fk_stacktab_free(struct fk_stacktab *t)
{
    for (struct fk_arena_block *b = t->arena, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(t->v);
    free(t->index);
    free(t->hashes);
    memset(t, 0, sizeof *t);
}

static void rehash(struct fk_stacktab *t)
{
    size_t mask = t->mask * 2 + 1;
    uint32_t *index = fk_calloc(mask + 1, sizeof *index);
    for (size_t i = 0; i < t->n; i++) {
        size_t slot = t->hashes[i] & mask;
        while (index[slot])
            slot = (slot + 1) & mask;
        index[slot] = (uint32_t)(i + 1);
    }
    free(t->index);
    t->index = index;
    t->mask = mask;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b, bool *overflow)
{
    uint64_t s;
    if (__builtin_add_overflow(a, b, &s)) {
        *overflow = true;
        return UINT64_MAX;
    }
    return s;
}

/* The table's hash (also for other keys of this stage: fk_key_hash): keys
 * are long (whole stacks), so two independent lanes of one multiply per
 * word, then a full mix. */
static inline uint64_t tab_hash(const char *s, size_t len)
{
    const uint64_t k1 = 0x9fb21c651e98df25ULL, k2 = 0xc2b2ae3d27d4eb4fULL;
    uint64_t a = 0x9e3779b97f4a7c15ULL ^ len, b = 0x165667b19e3779f9ULL;
    const char *start = s;
    while (len >= 16) {
        uint64_t w, x;
        memcpy(&w, s, 8);
        memcpy(&x, s + 8, 8);
        a = (a ^ w) * k1;
        b = (b ^ x) * k2;
        a ^= a >> 29;
        b ^= b >> 31;
        s += 16;
        len -= 16;
    }
    if (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        a = (a ^ w) * k1;
        a ^= a >> 29;
        s += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    if (len && s + len - 8 >= start)
        memcpy(&tail, s + len - 8, 8);   /* the key's last 8 bytes: one load */
    else
        memcpy(&tail, s, len);
    b = (b ^ tail ^ (len << 56)) * k2;
    uint64_t h = a ^ (b >> 32 | b << 32);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

uint64_t fk_key_hash(const char *key, size_t len)
{
    return tab_hash(key, len);
}

static size_t lookup(const struct fk_stacktab *t, const char *key, size_t len, uint64_t h,
                     bool *found)
{
    size_t slot = h & t->mask;
    for (;;) {
        uint32_t i = t->index[slot];
        if (!i) {
            *found = false;
            return slot;
        }
        const struct fk_stack *e = &t->v[i - 1];
        if (t->hashes[i - 1] == h && e->len == len && !memcmp(e->key, key, len)) {
            *found = true;
            return slot;
        }
        slot = (slot + 1) & t->mask;
    }
}

struct fk_stack *fk_stacktab_add2(struct fk_stacktab *t, const char *key, size_t len,
                                  uint64_t count, uint64_t count2)
{
    if (len > UINT32_MAX)
        fk_die("stack of %zu bytes is too long", len);
    uint64_t h = tab_hash(key, len);
    bool found;
    size_t slot = lookup(t, key, len, h, &found);
    struct fk_stack *e;
    if (found) {
        e = &t->v[t->index[slot] - 1];
    } else {
        if (t->n >= UINT32_MAX - 1)
            fk_die("more than 4 billion unique stacks");
        size_t cap = t->cap;
        t->v = fk_grow(t->v, &t->cap, t->n + 1, sizeof *t->v);
        if (cap != t->cap)
            t->hashes = fk_realloc(t->hashes, t->cap * sizeof *t->hashes);
        e = &t->v[t->n];
        e->key = arena_copy(t, key, len);
        e->len = (uint32_t)len;
        e->aux = 0;
        e->count = 0;
        e->count2 = 0;
        t->hashes[t->n] = h;
        t->index[slot] = (uint32_t)(t->n + 1);
        t->n++;
        if (t->n * 4 > (t->mask + 1) * 3)
            rehash(t);
    }
    e->count = sat_add(e->count, count, &t->overflow);
    e->count2 = sat_add(e->count2, count2, &t->overflow);
    t->total = sat_add(t->total, count, &t->overflow);
    t->total2 = sat_add(t->total2, count2, &t->overflow);
    return e;
}

struct fk_stack *fk_stacktab_find(const struct fk_stacktab *t, const char *key, size_t len)
{
    bool found;
    size_t slot = lookup(t, key, len, tab_hash(key, len), &found);
    return found ? &t->v[t->index[slot] - 1] : NULL;
}

static int cmp_key(const void *a, const void *b)
{
    const struct fk_stack *x = *(struct fk_stack *const *)a;
    const struct fk_stack *y = *(struct fk_stack *const *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

struct fk_stack **fk_stacktab_sorted(const struct fk_stacktab *t)
{
    struct fk_stack **a = fk_malloc((t->n ? t->n : 1) * sizeof *a);
    for (size_t i = 0; i < t->n; i++)
        a[i] = &t->v[i];
    qsort(a, t->n, sizeof *a, cmp_key);
    return a;
}

size_t fk_stacktab_bytes(const struct fk_stacktab *t)
{
    return t->arena_bytes + t->cap * (sizeof *t->v + sizeof *t->hashes) +
           (t->mask + 1) * sizeof *t->index;
}
