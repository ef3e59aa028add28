/* SPDX-License-Identifier: GPL-2.0-only */
/* Sorting fixed-size records by unsigned integer fields, without a
 * comparison callback: an LSD radix sort, one pass per key byte, a pass
 * skipped when every record has the same byte there. Symbol tables and
 * FDE ranges of 10,000-50,000 entries sort several times faster than with
 * qsort, whose callback per comparison was a capture's largest single cost
 * after its kernel symbols. Stable; records equal in every field keep
 * their order. */
#ifndef FK_SORT_H
#define FK_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fk_sort_field {
    size_t off;         /* offset of a uint32_t or uint64_t in the record */
    unsigned width;     /* 4 or 8 */
    bool desc;          /* larger first */
};

/* Sort n records of size bytes at v by the fields, the most significant
 * first (at most 4). */
void fk_sort_fields(void *v, size_t n, size_t size, const struct fk_sort_field *f, size_t nf);

#endif
