/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: the .gopclntab reader (symbols/gopclntab.h) on a
 * hostile section, exactly as large as the input (any read past either
 * end is a sanitizer error): every function's record, name, flag and SP
 * deltas, lookups, and accessors given offsets the bytes chose. Seeds:
 * fuzz/seed-gopclntab.sh (the section of a small Go program). */
#include "fuzz.h"
#include "symbols/gopclntab.h"

#include <stdlib.h>
#include <string.h>

static uint64_t word(const uint8_t *data, size_t size, size_t at)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 8 && at + i < size; i++)
        v |= (uint64_t)data[at + i] << (8 * i);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fk_gopcln g;
    if (!fk_gopcln_open(&g, data, size))
        return 0;
    uint64_t n = g.nfunc < 4096 ? g.nfunc : 4096;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t entry, end, func, s, e;
        int32_t delta;
        if (!fk_gopcln_func(&g, i, &entry, &end, &func))
            continue;
        const char *name = fk_gopcln_name(&g, func);
        if (name && (name < (const char *)data || name + strlen(name) >= (const char *)data + size))
            abort();
        (void)fk_gopcln_flag(&g, func);
        int64_t j = fk_gopcln_find(&g, entry);
        if (j >= 0 && (uint64_t)j >= g.nfunc)
            abort();
        if (fk_gopcln_spdelta(&g, func, entry, entry + (end - entry) / 2, &delta, &s, &e) &&
            !(s <= entry + (end - entry) / 2 && entry + (end - entry) / 2 < e))
            abort();
    }
    /* offsets the bytes chose, wrapped or not: refused, never read */
    for (size_t at = 0; at + 8 <= size && at < 256; at += 8) {
        uint64_t func = word(data, size, at), s, e;
        int32_t delta;
        (void)fk_gopcln_name(&g, func);
        (void)fk_gopcln_flag(&g, func);
        (void)fk_gopcln_spdelta(&g, func, 0, func, &delta, &s, &e);
        (void)fk_gopcln_find(&g, func);
    }
    return 0;
}
