/* SPDX-License-Identifier: GPL-2.0-only */
/* The hash index (util/hindex.h): ids under one hash (collisions) come back
 * in insertion order, and stay through growth; many ids; replacing an id;
 * an empty (zeroed) index finds nothing. */
#include "unit.h"
#include "util/hindex.h"

#include <stdlib.h>

/* The ids under h, in the order the index gives them. */
static size_t ids_of(const struct fk_hindex *x, uint64_t h, uint32_t *out, size_t max)
{
    struct fk_hiter it = fk_hindex_find(x, h);
    uint32_t id;
    size_t n = 0;
    while (fk_hindex_next(&it, &id))
        if (n < max)
            out[n++] = id;
        else
            n++;
    return n;
}

int main(void)
{
    unit_name = "unit-hindex";
    struct fk_hindex x;
    memset(&x, 0, sizeof x);
    uint32_t got[64];

    UNIT_CHECK("an empty index finds nothing", ids_of(&x, 42, got, 64) == 0);
    UNIT_CHECK("an empty index holds no memory", fk_hindex_bytes(&x) == 0);

    /* collisions: one hash, several ids, in insertion order */
    const uint64_t same = 0x1234567890abcdefULL;
    for (uint32_t i = 0; i < 5; i++)
        fk_hindex_add(&x, same, 100 + i);
    size_t n = ids_of(&x, same, got, 64);
    UNIT_CHECK("five ids under one hash: all five", n == 5);
    bool order = n == 5;
    for (size_t i = 0; order && i < 5; i++)
        order = got[i] == 100 + i;
    UNIT_CHECK("ids under one hash come in insertion order", order);
    /* same low 32 bits (the slot's tag), other high bits: still candidates,
     * the caller's key compare tells them apart */
    UNIT_CHECK("a hash with the same low 32 bits gives the same candidates",
               ids_of(&x, same ^ (1ULL << 40), got, 64) == 5);
    UNIT_CHECK("a hash with other low bits gives none",
               ids_of(&x, same ^ 1, got, 64) == 0);
    /* colliding slots, different tags: one slot's run, no false candidates */
    size_t slots = x.mask + 1;
    fk_hindex_add(&x, (same & ~(uint64_t)0xffffffff) | ((uint32_t)same + slots), 7);
    UNIT_CHECK("a hash on the same slot with another tag is not a candidate",
               ids_of(&x, same, got, 64) == 5);
    UNIT_CHECK("that hash finds its own id",
               ids_of(&x, (uint32_t)same + slots, got, 64) == 1 && got[0] == 7);

    /* replace: fk_hindex_set on the candidate just given */
    struct fk_hiter it = fk_hindex_find(&x, same);
    uint32_t id;
    while (fk_hindex_next(&it, &id))
        if (id == 102) {
            fk_hindex_set(&x, &it, 999);
            break;
        }
    n = ids_of(&x, same, got, 64);
    UNIT_CHECK("set replaces the id in place",
               n == 5 && got[1] == 101 && got[2] == 999 && got[3] == 103);

    /* growth: many ids, each found under its hash; collisions kept */
    size_t before = x.mask + 1;
    const uint32_t many = 200000;
    for (uint32_t i = 0; i < many; i++)
        fk_hindex_add(&x, fk_hash_u64(i), i);
    UNIT_CHECK("the index grew", x.mask + 1 > before);
    UNIT_CHECK("load stays at most 3/4", x.n * 4 <= (x.mask + 1) * 3);
    UNIT_CHECK("n counts every id", x.n == 5 + 1 + many);
    size_t found = 0, extra = 0;
    for (uint32_t i = 0; i < many; i++) {
        bool hit = false;
        it = fk_hindex_find(&x, fk_hash_u64(i));
        while (fk_hindex_next(&it, &id)) {
            if (id == i)
                hit = true;
            else
                extra++;
        }
        found += hit;
    }
    UNIT_CHECK("every one of 200000 ids is found under its hash", found == many);
    UNIT_CHECK("few other candidates (32-bit tags)", extra < 100);
    n = ids_of(&x, same, got, 64);
    UNIT_CHECK("after growth the colliding ids are all there, in order",
               n == 5 && got[0] == 100 && got[1] == 101 && got[2] == 999 && got[3] == 103 &&
               got[4] == 104);

    /* many ids under one hash, across growth (a run longer than the table
     * was at first, wrapping at its end) */
    struct fk_hindex y;
    memset(&y, 0, sizeof y);
    const uint64_t last = 0xffffffffULL;    /* slot = mask: the run wraps */
    for (uint32_t i = 0; i < 1000; i++)
        fk_hindex_add(&y, last, i);
    uint32_t all[1000];
    n = ids_of(&y, last, all, 1000);
    order = n == 1000;
    for (uint32_t i = 0; order && i < 1000; i++)
        order = all[i] == i;
    UNIT_CHECK("1000 ids under one hash, wrapped and grown: all, in order", order);
    fk_hindex_free(&y);
    UNIT_CHECK("free leaves an empty index", y.slot == NULL && y.n == 0 && ids_of(&y, last, all, 1) == 0);

    /* delete: ids removed at random from runs that collide and wrap (64
     * slots, hashes on 8 of them, the last included), checked after each
     * against what should be left, in order */
    struct fk_hindex d;
    memset(&d, 0, sizeof d);
    uint64_t hs[8] = { 0, 1, 5, 6, 30, 61, 62, 63 };
    uint32_t live[40], nlive = 0;
    for (uint32_t i = 0; i < 40; i++)
        live[nlive++] = i;
    for (uint32_t i = 0; i < 40; i++)
        fk_hindex_add(&d, hs[i % 8], i);
    bool del_ok = d.mask == 63, del_order = true;
    uint32_t rnd = 12345;
    while (nlive && del_ok) {
        rnd = rnd * 1103515245u + 12345u;
        uint32_t k = (rnd >> 8) % nlive, victim = live[k];
        memmove(live + k, live + k + 1, (nlive - k - 1) * sizeof *live);
        nlive--;
        it = fk_hindex_find(&d, hs[victim % 8]);
        bool hit = false;
        while (!hit && fk_hindex_next(&it, &id))
            hit = id == victim;
        if (!hit) {
            del_ok = false;
            break;
        }
        fk_hindex_del(&d, &it);
        del_ok = d.n == nlive;
        for (uint32_t h = 0; h < 8 && del_ok; h++) {
            uint32_t want[40], nw = 0;
            for (uint32_t i = 0; i < nlive; i++)
                if (live[i] % 8 == h)
                    want[nw++] = live[i];
            n = ids_of(&d, hs[h], got, 64);
            del_ok = n == nw;
            for (uint32_t i = 0; del_ok && i < nw; i++)
                del_order &= got[i] == want[i];
        }
    }
    UNIT_CHECK("delete: 40 colliding, wrapping ids removed one by one at random, the rest found", del_ok);
    UNIT_CHECK("delete: ... in their order", del_order);
    UNIT_CHECK("delete: the index is empty at the end", d.n == 0 && ids_of(&d, hs[0], got, 64) == 0);
    fk_hindex_free(&d);

    fk_hindex_free(&x);
    return UNIT_END();
}
