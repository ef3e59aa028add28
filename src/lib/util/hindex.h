/* SPDX-License-Identifier: GPL-2.0-only */
/* The hash index, flamekit's one hash map: a 64-bit hash -> u32 ids of the
 * caller's entries (array indexes, say). The caller keeps keys and values
 * and compares its own key for each candidate id, so one index serves any
 * key; several ids may share a hash. Open addressing with linear probing,
 * grown to twice the size at load 3/4. A slot keeps the hash's low 32 bits
 * (its tag): a candidate is an id whose whole tag matches, so other entries
 * are passed over without touching the caller's memory (which is why 3/4
 * is as quick as 1/2 here: collapse and svg measured the same, and 1/2 took
 * 10% more memory in collapse), and growing needs nothing from the caller. A zeroed struct is an empty index. Lookup and
 * insert are inline: collapse and svg probe per frame.
 * Hashes must be well mixed in their low bits (fk_hash, fk_hash_u64). */
#ifndef FK_HINDEX_H
#define FK_HINDEX_H

#include "util/fk.h"

struct fk_hslot {
    uint32_t tag;       /* low 32 bits of the hash; slot = tag & mask */
    uint32_t id1;       /* id + 1; 0: empty */
};

struct fk_hindex {
    struct fk_hslot *slot;
    size_t mask;        /* slots - 1 (a power of two); 0 before the first add */
    size_t n;           /* ids stored */
};

/* A lookup: fk_hindex_find, then fk_hindex_next for each candidate. */
struct fk_hiter {
    const struct fk_hslot *slot;
    size_t mask, pos;
    uint32_t tag;
};

extern const struct fk_hslot fk_hindex_none[1];

void fk_hindex_free(struct fk_hindex *x);
/* Double the slots (or make the first ones), keeping every id. */
void fk_hindex_grow(struct fk_hindex *x);
/* Memory held (for limits and benchmarks). */
static inline size_t fk_hindex_bytes(const struct fk_hindex *x)
{
    return x->slot ? (x->mask + 1) * sizeof *x->slot : 0;
}

static inline struct fk_hiter fk_hindex_find(const struct fk_hindex *x, uint64_t h)
{
    struct fk_hiter it = { x->slot, x->mask, (uint32_t)h & x->mask, (uint32_t)h };
    if (!it.slot)
        it.slot = fk_hindex_none;
    return it;
}

/* The next id stored under the hash of `it`, in insertion order; false
 * when there are no more. */
static inline bool fk_hindex_next(struct fk_hiter *it, uint32_t *id)
{
    for (;;) {
        struct fk_hslot s = it->slot[it->pos];
        if (!s.id1)
            return false;
        it->pos = (it->pos + 1) & it->mask;
        if (s.tag == it->tag) {
            *id = s.id1 - 1;
            return true;
        }
    }
}

/* Replace the id fk_hindex_next just gave (x: the index `it` reads). */
static inline void fk_hindex_set(struct fk_hindex *x, const struct fk_hiter *it, uint32_t id)
{
    x->slot[(it->pos - 1) & x->mask].id1 = id + 1;
}

/* Remove the id fk_hindex_next just gave (x: the index `it` reads; `it`
 * is spent). The entries after it in its run move back into the hole
 * unless that would put one before its own slot (backward-shift
 * deletion: no tombstones, lookups stay as short), so ids under one hash
 * keep their order. */
static inline void fk_hindex_del(struct fk_hindex *x, const struct fk_hiter *it)
{
    size_t hole = (it->pos - 1) & x->mask;
    for (size_t j = (hole + 1) & x->mask; x->slot[j].id1; j = (j + 1) & x->mask) {
        size_t home = x->slot[j].tag & x->mask;
        /* stays when its home is cyclically in (hole, j] */
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (stays)
            continue;
        x->slot[hole] = x->slot[j];
        hole = j;
    }
    x->slot[hole] = (struct fk_hslot){ 0, 0 };
    x->n--;
}

/* Add id under h (ids already there under h stay: the caller looks first
 * when keys are unique). id < UINT32_MAX. */
static inline void fk_hindex_add(struct fk_hindex *x, uint64_t h, uint32_t id)
{
    if (id == UINT32_MAX)
        fk_die("hash index: id %u is out of range", (unsigned)id);
    if ((x->n + 1) * 4 > (x->mask + 1) * 3)
        fk_hindex_grow(x);
    size_t i = (uint32_t)h & x->mask;
    while (x->slot[i].id1)
        i = (i + 1) & x->mask;
    x->slot[i].tag = (uint32_t)h;
    x->slot[i].id1 = id + 1;
    x->n++;
}

/* A small u64 -> u64 map on the index (pids, cgroup ids, sample ids): pairs
 * in an array. A zeroed struct is an empty map. */
struct fk_u64map {
    struct fk_u64pair { uint64_t key, val; } *v;
    size_t n, cap;
    struct fk_hindex index;
};
/* key's value, created as 0 when add is true, else NULL when absent;
 * valid until the next add. */
uint64_t *fk_u64map_slot(struct fk_u64map *m, uint64_t key, bool add);
void fk_u64map_free(struct fk_u64map *m);
static inline size_t fk_u64map_bytes(const struct fk_u64map *m)
{
    return m->cap * sizeof *m->v + fk_hindex_bytes(&m->index);
}

#endif
