/* SPDX-License-Identifier: GPL-2.0-only */
/* Go's .gopclntab (Go 1.18+ layout, magics 0xfffffff0 and 0xfffffff1):
 * the function table (entries, names, flags) and the per-pc SP delta
 * tables. Present even in binaries linked with -s -w, so it names and
 * unwinds Go code without symbols or DWARF. The section bytes are hostile:
 * every offset is checked against the section's size. */
#ifndef FK_SYMBOLS_GOPCLNTAB_H
#define FK_SYMBOLS_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fk_gopcln {
    const unsigned char *p;
    size_t size;
    uint64_t nfunc, text, names, pctab, pcln;
    unsigned quantum, ptr;
    unsigned off_flag;      /* offset of _func.flag (differs by version) */
};

/* Go's funcFlag_TOPFRAME: the function is the outermost frame of a stack. */
#define FK_GO_TOPFRAME 1

/* Validate the header of a .gopclntab section's bytes. */
bool fk_gopcln_open(struct fk_gopcln *g, const void *data, size_t size);

/* Function i (0 <= i < nfunc): entry vaddr, end vaddr and the offset of
 * its _func record; false if the record is out of bounds. */
bool fk_gopcln_func(const struct fk_gopcln *g, uint64_t i, uint64_t *entry, uint64_t *end,
                    uint64_t *func);
/* Its name (NUL-terminated inside the section), or NULL. */
const char *fk_gopcln_name(const struct fk_gopcln *g, uint64_t func);
/* Its flag byte (FK_GO_TOPFRAME...). */
unsigned fk_gopcln_flag(const struct fk_gopcln *g, uint64_t func);
/* The function containing vaddr: its index, or -1. */
int64_t fk_gopcln_find(const struct fk_gopcln *g, uint64_t vaddr);
/* SP delta at vaddr inside the function (entry, func), and the pc range
 * [*start, *end) over which it holds; false if the table is malformed. */
bool fk_gopcln_spdelta(const struct fk_gopcln *g, uint64_t func, uint64_t entry,
                       uint64_t vaddr, int32_t *delta, uint64_t *start, uint64_t *end);

#endif
