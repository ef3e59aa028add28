/* SPDX-License-Identifier: GPL-2.0-only */
/* Go's .gopclntab reader (see gopclntab.h). Layout facts: a header of
 * magic, pc quantum, pointer size, function count, text start and table
 * offsets; a function table of (entry offset, _func offset) pairs with one
 * extra entry at the end; _func records with the pcsp table offset and the
 * flag byte; pc-value tables as (zig-zag value delta, pc delta) varint
 * pairs starting from value -1 at the entry. */
#include "symbols/gopclntab.h"

#include <string.h>

/* [off, off + len) lies inside the section: written so that no sum can
 * wrap, whatever off and len the bytes claim. */
static bool in_bounds(const struct fk_gopcln *g, uint64_t off, uint64_t len)
{
    return off <= g->size && len <= g->size - off;
}

/* The _func record at func holds every field read from it. */
#define FUNC_BYTES 44

static uint64_t rd(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

bool fk_gopcln_open(struct fk_gopcln *g, const void *data, size_t size)
{
    memset(g, 0, sizeof *g);
    const unsigned char *p = data;
    if (!p || size < 72)
        return false;
    uint32_t magic = (uint32_t)rd(p, 4);
    unsigned ptr = p[7], quantum = p[6];
    if ((magic != 0xfffffff0 && magic != 0xfffffff1) || (ptr != 4 && ptr != 8) || !quantum ||
        size < 8 + 8 * (size_t)ptr)
        return false;
    g->p = p;
    g->size = size;
    g->ptr = ptr;
    g->quantum = quantum;
    g->nfunc = rd(p + 8, ptr);
    g->text = rd(p + 8 + 2 * ptr, ptr);
    g->names = rd(p + 8 + 3 * ptr, ptr);
    g->pctab = rd(p + 8 + 6 * ptr, ptr);
    g->pcln = rd(p + 8 + 7 * ptr, ptr);
    /* Go 1.20 (0xfffffff1) added startLine before funcID and flag */
    g->off_flag = magic == 0xfffffff0 ? 37 : 41;
    /* the function table: nfunc (entry, _func) pairs and the end entry */
    if (!in_bounds(g, g->pcln, 4) || !in_bounds(g, g->names, 1) || !in_bounds(g, g->pctab, 1) ||
        g->nfunc > (size - g->pcln - 4) / 8)
        return false;
    return true;
}

bool fk_gopcln_func(const struct fk_gopcln *g, uint64_t i, uint64_t *entry, uint64_t *end,
                    uint64_t *func)
{
    if (i >= g->nfunc)      /* then pcln + 8 * i + 12 is inside (fk_gopcln_open) */
        return false;
    const unsigned char *ft = g->p + g->pcln + 8 * i;
    uint64_t e = rd(ft, 4), off = rd(ft + 4, 4), next = rd(ft + 8, 4);
    if (!in_bounds(g, g->pcln, off) || !in_bounds(g, g->pcln + off, FUNC_BYTES))
        return false;
    *entry = g->text + e;
    *end = next > e ? g->text + next : *entry;
    *func = g->pcln + off;
    return true;
}

const char *fk_gopcln_name(const struct fk_gopcln *g, uint64_t func)
{
    if (!in_bounds(g, func, FUNC_BYTES))
        return NULL;
    int32_t nameoff = (int32_t)rd(g->p + func + 4, 4);
    if (nameoff < 0 || !in_bounds(g, g->names, (uint64_t)nameoff) ||
        !in_bounds(g, g->names + (uint64_t)nameoff, 1))
        return NULL;
    const char *s = (const char *)g->p + g->names + nameoff;
    return memchr(s, 0, g->size - g->names - (uint64_t)nameoff) ? s : NULL;
}

unsigned fk_gopcln_flag(const struct fk_gopcln *g, uint64_t func)
{
    return in_bounds(g, func, FUNC_BYTES) ? g->p[func + g->off_flag] : 0;
}

int64_t fk_gopcln_find(const struct fk_gopcln *g, uint64_t vaddr)
{
    if (!g->nfunc || vaddr < g->text)
        return -1;
    uint64_t rel = vaddr - g->text, lo = 0, hi = g->nfunc;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;     /* < nfunc: inside (fk_gopcln_open) */
        if (rd(g->p + g->pcln + 8 * mid, 4) <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    uint64_t entry, end, func;
    if (!fk_gopcln_func(g, lo - 1, &entry, &end, &func) || vaddr >= end)
        return -1;
    return (int64_t)(lo - 1);
}

static bool varint(const unsigned char *p, size_t size, size_t *pos, uint32_t *out)
{
    uint32_t v = 0;
    for (unsigned shift = 0; shift < 35; shift += 7) {
        if (*pos >= size)
            return false;
        unsigned char b = p[(*pos)++];
        v |= (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

bool fk_gopcln_spdelta(const struct fk_gopcln *g, uint64_t func, uint64_t entry,
                       uint64_t vaddr, int32_t *delta, uint64_t *start, uint64_t *end)
{
    if (!in_bounds(g, func, FUNC_BYTES))
        return false;
    uint64_t pcsp = rd(g->p + func + 16, 4);
    if (!pcsp || !in_bounds(g, g->pctab, pcsp) || !in_bounds(g, g->pctab + pcsp, 1))
        return false;
    size_t pos = g->pctab + pcsp;
    int64_t val = -1;       /* wide: hostile deltas must not overflow the sum */
    uint64_t pc = entry;
    /* a real table has one step per SP change: bound the walk anyway */
    for (unsigned steps = 0; steps < 1u << 20; steps++) {
        uint32_t uv, pcd;
        if (!varint(g->p, g->size, &pos, &uv) || (uv == 0 && steps > 0))
            return false;
        val += (uv & 1) ? -(int64_t)(uv >> 1) - 1 : (int64_t)(uv >> 1);    /* zig-zag */
        if (val < INT32_MIN || val > INT32_MAX || !varint(g->p, g->size, &pos, &pcd) || pcd == 0)
            return false;
        uint64_t next = pc + (uint64_t)pcd * g->quantum;
        if (vaddr < next) {
            *delta = (int32_t)val;
            *start = pc;
            *end = next;
            return vaddr >= pc;
        }
        pc = next;
    }
    return false;
}
