/* SPDX-License-Identifier: GPL-2.0-only */
/* LSD radix sort of records by integer fields (sort.h). */
#include "util/sort.h"
#include "util/fk.h"

#include <stdlib.h>
#include <string.h>

static inline unsigned key_byte(const unsigned char *rec, const struct fk_sort_field *f, unsigned b)
{
    uint64_t v;
    if (f->width == 8) {
        memcpy(&v, rec + f->off, sizeof v);
    } else {
        uint32_t w;
        memcpy(&w, rec + f->off, sizeof w);
        v = w;
    }
    unsigned x = (unsigned)(v >> (8 * b)) & 0xff;
    return f->desc ? x ^ 0xff : x;
}

void fk_sort_fields(void *v, size_t n, size_t size, const struct fk_sort_field *f, size_t nf)
{
    if (n < 2)
        return;
    unsigned char *a = v, *tmp = fk_malloc(n * size), *src = a, *dst = tmp;
    size_t count[256];
    /* least significant field first, and in it its lowest byte first */
    for (size_t k = nf; k-- > 0;)
        for (unsigned b = 0; b < f[k].width; b++) {
            memset(count, 0, sizeof count);
            for (size_t i = 0; i < n; i++)
                count[key_byte(src + i * size, &f[k], b)]++;
            if (count[key_byte(src, &f[k], b)] == n)
                continue;       /* the same byte everywhere: order unchanged */
            size_t at = 0;
            for (unsigned x = 0; x < 256; x++) {
                size_t c = count[x];
                count[x] = at;
                at += c;
            }
            for (size_t i = 0; i < n; i++) {
                const unsigned char *r = src + i * size;
                memcpy(dst + count[key_byte(r, &f[k], b)]++ * size, r, size);
            }
            unsigned char *t = src;
            src = dst;
            dst = t;
        }
    if (src != a)
        memcpy(a, src, n * size);
    free(tmp);
}
