/* SPDX-License-Identifier: GPL-2.0-only */
#include "stacktab.h"

#include <stdlib.h>
#include <string.h>

/* Keys live in blocks, not one allocation per key: from 64 KiB, doubling
 * to 1 MiB (a small table does not hold a mostly empty 1 MiB block). */
struct fk_arena_block {
    struct fk_arena_block *next;
    size_t used, size;
    char data[];
};

static char *arena_copy(struct fk_stacktab *t, const char *s, size_t len)
{
    struct fk_arena_block *b = t->arena;
    if (!b || b->size - b->used < len + 1) {
        size_t size = !b ? (1u << 16) : b->size < (1u << 19) ? 2 * b->size : (1u << 20);
        if (size < len + 1)
            size = len + 1;
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
}

void fk_stacktab_free(struct fk_stacktab *t)
{
    for (struct fk_arena_block *b = t->arena, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(t->v);
    fk_hindex_free(&t->index);
    memset(t, 0, sizeof *t);
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

/* The entry of key (its hash h), or NULL. */
static inline struct fk_stack *lookup(const struct fk_stacktab *t, const char *key, size_t len,
                                      uint64_t h)
{
    struct fk_hiter it = fk_hindex_find(&t->index, h);
    uint32_t i;
    while (fk_hindex_next(&it, &i)) {
        struct fk_stack *e = &t->v[i];
        if (e->len == len && !memcmp(e->key, key, len))
            return e;
    }
    return NULL;
}

struct fk_stack *fk_stacktab_add2(struct fk_stacktab *t, const char *key, size_t len,
                                  uint64_t count, uint64_t count2)
{
    if (len > UINT32_MAX)
        fk_die("stack of %zu bytes is too long", len);
    uint64_t h = fk_hash(key, len);
    struct fk_stack *e = lookup(t, key, len, h);
    if (!e) {
        if (t->n >= UINT32_MAX - 1)
            fk_die("more than 4 billion unique stacks");
        t->v = fk_grow(t->v, &t->cap, t->n + 1, sizeof *t->v);
        e = &t->v[t->n];
        e->key = arena_copy(t, key, len);
        e->len = (uint32_t)len;
        e->aux = 0;
        e->count = 0;
        e->count2 = 0;
        fk_hindex_add(&t->index, h, (uint32_t)t->n);
        t->n++;
    }
    fk_stacktab_add_at(t, (size_t)(e - t->v), count, count2);
    return e;
}

void fk_stacktab_add_at(struct fk_stacktab *t, size_t i, uint64_t count, uint64_t count2)
{
    struct fk_stack *e = &t->v[i];
    e->count = sat_add(e->count, count, &t->overflow);
    e->count2 = sat_add(e->count2, count2, &t->overflow);
    t->total = sat_add(t->total, count, &t->overflow);
    t->total2 = sat_add(t->total2, count2, &t->overflow);
}

struct fk_stack *fk_stacktab_find(const struct fk_stacktab *t, const char *key, size_t len)
{
    return lookup(t, key, len, fk_hash(key, len));
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
    return t->arena_bytes + t->cap * sizeof *t->v + fk_hindex_bytes(&t->index);
}
