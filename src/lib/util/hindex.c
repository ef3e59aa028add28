/* SPDX-License-Identifier: GPL-2.0-only */
/* The hash index's growth (the rest is inline in hindex.h). */
#include "util/hindex.h"

#include <stdlib.h>

/* What a lookup in an index with no slots yet reads: one empty slot. */
const struct fk_hslot fk_hindex_none[1];

void fk_hindex_free(struct fk_hindex *x)
{
    free(x->slot);
    memset(x, 0, sizeof *x);
}

void fk_hindex_grow(struct fk_hindex *x)
{
    size_t old = x->slot ? x->mask + 1 : 0, size = old ? old * 2 : 64;
    /* the tag is the hash's low 32 bits: it places ids in 2^32 slots at most */
    if (size - 1 > UINT32_MAX)
        fk_die("hash index: more than %zu entries", (size_t)1 << 31);
    struct fk_hslot *o = x->slot;
    x->slot = fk_calloc(size, sizeof *x->slot);
    x->mask = size - 1;
    if (!old)
        return;
    /* Start after an empty slot so each run of slots is moved in probe
     * order: ids under one hash keep their order. */
    size_t start = 0;
    while (o[start].id1)
        start++;
    for (size_t k = 1; k <= old; k++) {
        struct fk_hslot s = o[(start + k) & (old - 1)];
        if (!s.id1)
            continue;
        size_t i = s.tag & x->mask;
        while (x->slot[i].id1)
            i = (i + 1) & x->mask;
        x->slot[i] = s;
    }
    free(o);
}

uint64_t *fk_u64map_slot(struct fk_u64map *m, uint64_t key, bool add)
{
    uint64_t h = fk_hash_u64(key);
    struct fk_hiter it = fk_hindex_find(&m->index, h);
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (m->v[i].key == key)
            return &m->v[i].val;
    if (!add)
        return NULL;
    m->v = fk_grow(m->v, &m->cap, m->n + 1, sizeof *m->v);
    m->v[m->n] = (struct fk_u64pair){ key, 0 };
    fk_hindex_add(&m->index, h, (uint32_t)m->n);
    return &m->v[m->n++].val;
}

void fk_u64map_free(struct fk_u64map *m)
{
    free(m->v);
    fk_hindex_free(&m->index);
    memset(m, 0, sizeof *m);
}
