/* SPDX-License-Identifier: GPL-2.0-only */
/* The stack table: a key -> two 64-bit counts, keys copied into an arena
 * and kept in insertion order (an entry's index never changes). Keys are
 * folded stacks ("comm;outer;...;leaf"), or any strings to intern: the
 * perf-script parser keeps its frame names in one and uses the indexes as
 * frame ids. Memory grows with the number of unique keys, never with the
 * number of samples. */
#ifndef FK_STACKTAB_H
#define FK_STACKTAB_H

#include "util/fk.h"
#include "util/hindex.h"

struct fk_stack {
    const char *key;    /* "comm;outer;...;leaf", NUL-terminated */
    uint32_t len;
    uint32_t aux;       /* free for the caller (e.g. a second count's index) */
    uint64_t count;
    uint64_t count2;    /* second column for differential input */
};

struct fk_stacktab {
    struct fk_stack *v;     /* entries in insertion order */
    size_t n, cap;
    struct fk_hindex index; /* fk_hash of the key -> entry index */
    struct fk_arena_block *arena;
    size_t arena_bytes;
    uint64_t total, total2;
    bool overflow;          /* some count saturated at UINT64_MAX */
};

void fk_stacktab_init(struct fk_stacktab *t);
void fk_stacktab_free(struct fk_stacktab *t);
/* Add count (and count2) to key; the key is copied. Returns the entry.
 * A sum that would overflow saturates and sets t->overflow. */
struct fk_stack *fk_stacktab_add2(struct fk_stacktab *t, const char *key, size_t len,
                                  uint64_t count, uint64_t count2);
static inline struct fk_stack *fk_stacktab_add(struct fk_stacktab *t, const char *key,
                                               size_t len, uint64_t count)
{
    return fk_stacktab_add2(t, key, len, count, 0);
}
struct fk_stack *fk_stacktab_find(const struct fk_stacktab *t, const char *key, size_t len);
/* Add count (and count2) to the entry at index i (< t->n), as
 * fk_stacktab_add2 would to its key. */
void fk_stacktab_add_at(struct fk_stacktab *t, size_t i, uint64_t count, uint64_t count2);
/* Entries sorted bytewise by key (the folded format's canonical order).
 * The array is the caller's to free; entries stay owned by the table. */
struct fk_stack **fk_stacktab_sorted(const struct fk_stacktab *t);
/* Bytes of memory held by the table (for limits and benchmarks). */
size_t fk_stacktab_bytes(const struct fk_stacktab *t);

#endif
