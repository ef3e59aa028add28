/* SPDX-License-Identifier: GPL-2.0-only */
/* Per-binary CFI and its row cache (see cfi.h). Rows never overlap and
 * are kept in two runs sorted by start: the settled rows, and the few
 * found since they were last merged (at most about the square root of
 * the settled ones), so a lookup is two binary searches; a miss asks
 * libdw (dwarf_cfi_addrframe) once for the range around the pc, or
 * extends the row above it down to it (extend_below). One
 * sorted array took each new row in with a memmove of the rows above it:
 * python3.11's interpreter loop gets a row per return address (8,000 in
 * a 10 s capture of two busy interpreters), 1.4 GB moved, 7 % of
 * flamekit's CPU in its steady state. */
#include "symbols/cfi.h"
#include "symbols/gopclntab.h"
#include "util/busguard.h"
#include "util/fk.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#define FK_ELF_MACHINE EM_X86_64
#else
#define FK_ELF_MACHINE EM_NONE
#endif

/* ---- the per-binary object ---- */

struct seg { uint64_t off, filesz, vaddr; };

/* How far past the ELF entry point a pc without CFI counts as the entry
 * function itself (glibc's and the loader's _start are a few dozen bytes). */
#define ENTRY_SPAN 256

struct fk_cfi {
    Elf *e;
    uint64_t entry;
    const struct fk_uw_arch *arch;
    struct seg *segs;
    size_t nsegs;
    Dwarf_CFI *eh;
    Dwarf *dw;
    Dwarf_CFI *dbg;
    bool dbg_tried, go_tried;
    bool truncated;                 /* the file shrank under a read (SIGBUS): no more reads */
    struct fk_gopcln go;
    bool go_ok;
    struct fk_uw_row *rows;         /* the settled run */
    size_t nrows, caprows, nnone;   /* nrows, nnone: of both runs */
    struct fk_uw_row *recent;       /* rows found since the last merge */
    size_t nsettled, nrecent, caprecent;
    struct fk_uw_op *ops;
    size_t nops, capops;
    struct fk_uw_row scratch;       /* returned when the cache is full */
};

#define MAX_POOL_OPS (1u << 20)

struct fk_cfi *fk_cfi_new(Elf *e)
{
    const struct fk_uw_arch *arch = fk_uw_arch();
    if (!e || !arch || elf_kind(e) != ELF_K_ELF)
        return NULL;
    GElf_Ehdr eh;
    if (!gelf_getehdr(e, &eh) || eh.e_machine != FK_ELF_MACHINE ||
        gelf_getclass(e) != (arch->ptr_size == 8 ? ELFCLASS64 : ELFCLASS32))
        return NULL;
    struct fk_cfi *c = fk_calloc(1, sizeof *c);
    c->e = e;
    c->arch = arch;
    c->entry = eh.e_entry;
    size_t phnum = 0;
    if (elf_getphdrnum(e, &phnum) == 0 && phnum > 0 && phnum < 4096) {
        c->segs = fk_calloc(phnum, sizeof *c->segs);
        for (size_t i = 0; i < phnum; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
                c->segs[c->nsegs++] = (struct seg){ ph.p_offset, ph.p_filesz, ph.p_vaddr };
        }
    }
    c->eh = dwarf_getcfi_elf(e);
    return c;
}

void fk_cfi_free(struct fk_cfi *c)
{
    if (!c)
        return;
    if (c->truncated) {
        fk_bus_abandon(c->eh);
        fk_bus_abandon(c->dw);
    } else {
        if (c->eh)
            dwarf_cfi_end(c->eh);
        if (c->dw)
            dwarf_end(c->dw);  /* owns c->dbg */
    }
    free(c->segs);
    free(c->rows);
    free(c->recent);
    free(c->ops);
    free(c);
}

bool fk_cfi_off_to_vaddr(const struct fk_cfi *c, uint64_t off, uint64_t *vaddr)
{
    for (size_t i = 0; i < c->nsegs; i++) {
        const struct seg *s = &c->segs[i];
        if (off >= s->off && off - s->off < (s->filesz ? s->filesz : 1)) {
            *vaddr = off - s->off + s->vaddr;
            return true;
        }
    }
    return false;
}

const struct fk_uw_op *fk_cfi_ops(const struct fk_cfi *c)
{
    return c->ops;
}

size_t fk_cfi_rows(const struct fk_cfi *c)
{
    return c->nrows;
}

size_t fk_cfi_bytes(const struct fk_cfi *c)
{
    return sizeof *c + (c->caprows + c->caprecent) * sizeof *c->rows + c->capops * sizeof *c->ops +
           c->nsegs * sizeof *c->segs;
}

/* ---- conversion from libdw ---- */

static int tracked(const struct fk_cfi *c, uint64_t dwarf_reg)
{
    for (int i = 0; i < FK_UW_NREGS; i++)
        if ((uint64_t)c->arch->dwarf_reg[i] == dwarf_reg)
            return i;
    return -1;
}

static bool copy_ops(struct fk_cfi *c, const Dwarf_Op *ops, size_t n, uint32_t *first,
                     uint16_t *count)
{
    if (n == 0 || n > FK_CFI_MAX_OPS || c->nops + n > MAX_POOL_OPS)
        return false;
    c->ops = fk_grow(c->ops, &c->capops, c->nops + n, sizeof *c->ops);
    *first = (uint32_t)c->nops;
    *count = (uint16_t)n;
    for (size_t i = 0; i < n; i++)
        c->ops[c->nops++] = (struct fk_uw_op){ ops[i].atom, ops[i].number, ops[i].number2 };
    return true;
}

static void conv_rule(struct fk_cfi *c, Dwarf_Frame *f, int dwarf_reg, struct fk_uw_rule *r)
{
    Dwarf_Op mem[3], *ops = NULL;
    size_t n = 0;
    memset(r, 0, sizeof *r);
    if (dwarf_frame_register(f, dwarf_reg, mem, &ops, &n) != 0) {
        r->kind = FK_RULE_UNDEF;
        return;
    }
    if (n == 0) {
        r->kind = ops ? FK_RULE_UNDEF : FK_RULE_SAME;
        return;
    }
    bool value = ops[n - 1].atom == DW_OP_stack_value;
    size_t m = value ? n - 1 : n;
    if (ops == mem) {
        if (m >= 1 && ops[0].atom == DW_OP_call_frame_cfa &&
            (m == 1 || (m == 2 && ops[1].atom == DW_OP_plus_uconst))) {
            r->kind = value ? FK_RULE_VAL : FK_RULE_AT;
            r->off = m == 2 ? (int64_t)ops[1].number : 0;
            return;
        }
        if (m == 1 && ops[0].atom == DW_OP_regx && !value) {
            int t = tracked(c, ops[0].number);
            r->kind = t >= 0 ? FK_RULE_REG : FK_RULE_UNDEF;
            r->reg = (uint8_t)(t >= 0 ? t : 0);
            return;
        }
    }
    if (m && copy_ops(c, ops, m, &r->expr, &r->nops))
        r->kind = value ? FK_RULE_EXPR_VAL : FK_RULE_EXPR_AT;
    else
        r->kind = FK_RULE_UNDEF;
}

/* Row from a libdw frame; false if it says nothing usable. */
static bool conv_frame(struct fk_cfi *c, Dwarf_Frame *f, struct fk_uw_row *row, uint8_t src)
{
    Dwarf_Addr start, end;
    bool signal = false;
    int ra = dwarf_frame_info(f, &start, &end, &signal);
    if (ra < 0 || end <= start)
        return false;
    memset(row, 0, sizeof *row);
    row->start = start;
    row->end = end;
    row->signal = signal;
    row->src = src;
    Dwarf_Op *ops = NULL;
    size_t n = 0;
    if (dwarf_frame_cfa(f, &ops, &n) != 0 || n == 0) {
        row->cfa_kind = FK_CFA_NONE;
    } else if (n == 1 && ops[0].atom == DW_OP_bregx && tracked(c, ops[0].number) >= 0) {
        row->cfa_kind = FK_CFA_REG;
        row->cfa_reg = (uint8_t)tracked(c, ops[0].number);
        row->cfa_off = (int64_t)ops[0].number2;
    } else if (copy_ops(c, ops, n, &row->cfa_expr, &row->cfa_nops)) {
        row->cfa_kind = FK_CFA_EXPR;
    } else {
        row->cfa_kind = FK_CFA_NONE;
    }
    for (int i = 0; i < FK_UW_NREGS; i++) {
        /* the instruction pointer of the caller is the return-address column */
        int reg = i == FK_UW_IP ? ra : c->arch->dwarf_reg[i];
        conv_rule(c, f, reg, &row->rule[i]);
    }
    return true;
}

/* The row at vaddr from libdw, kept for [vaddr, end). Its end is the
 * first advance of the location past vaddr; its start, the last advance
 * at or below vaddr, except after a DW_CFA_restore_state, where libdw
 * gives back the remembered row's start (the code after a function's
 * early return: the rows between have other rules). How far below vaddr
 * libdw's start lies is kept (below) and checked only when an address
 * there is asked (extend_below): most rows are never asked below. */
static bool from_libdw(struct fk_cfi *c, Dwarf_CFI *cfi, uint64_t vaddr, struct fk_uw_row *row,
                       uint8_t src)
{
    Dwarf_Frame *f = NULL;
    if (!cfi || dwarf_cfi_addrframe(cfi, vaddr, &f) != 0 || !f)
        return false;
    bool ok = conv_frame(c, f, row, src) && vaddr >= row->start && vaddr < row->end;
    free(f);
    row->below = ok && vaddr - row->start <= UINT32_MAX ? (uint32_t)(vaddr - row->start) : 0;
    row->start = vaddr;
    return ok;
}

/* The row r (from libdw) extended below its start to vaddr, when libdw's
 * row at its start less below ends where r does: no advance of the
 * location lies between (one there would have ended that row), so both
 * ran the same instructions and every address between shares r's rules.
 * out: [start less below, r's start); r's below is used up either way.
 * One libdw call, as the row at vaddr would have cost: a large function's
 * return addresses and sampled pcs below the first one asked then need
 * no call of their own. */
static bool extend_below(struct fk_cfi *c, struct fk_uw_row *r, uint64_t vaddr,
                         struct fk_uw_row *out)
{
    uint64_t lo = r->start - r->below;
    r->below = 0;
    Dwarf_CFI *cfi = r->src == FK_SRC_EH ? c->eh : r->src == FK_SRC_DEBUG ? c->dbg : NULL;
    Dwarf_Frame *f = NULL;
    if (!cfi || vaddr < lo || dwarf_cfi_addrframe(cfi, lo, &f) != 0 || !f)
        return false;
    bool signal;
    Dwarf_Addr s, e;
    bool same = dwarf_frame_info(f, &s, &e, &signal) >= 0 && s == lo && e == r->end;
    free(f);
    if (!same)
        return false;
    *out = *r;
    out->start = lo;
    out->end = r->start;
    return true;
}

static bool section_data(Elf *e, const char *want, const void **data, size_t *size)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        return false;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        const char *name;
        if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
            strcmp(name, want) != 0 || sh.sh_type == SHT_NOBITS)
            continue;
        Elf_Data *d = elf_rawdata(scn, NULL);
        if (!d || !d->d_buf)
            return false;
        *data = d->d_buf;
        *size = d->d_size;
        return true;
    }
    return false;
}

static bool has_section(Elf *e, const char *want)
{
    const void *d;
    size_t n;
    return section_data(e, want, &d, &n);
}

static void open_go(struct fk_cfi *c)
{
    c->go_tried = true;
    const void *d;
    size_t n;
    if (section_data(c->e, ".gopclntab", &d, &n))
        c->go_ok = fk_gopcln_open(&c->go, d, n);
}

/* A Go function's row from its SP delta: the return address sits at the
 * frame's top, CFA = sp + delta + pointer size. */
static bool from_go(struct fk_cfi *c, uint64_t vaddr, struct fk_uw_row *row)
{
    int64_t i = fk_gopcln_find(&c->go, vaddr);
    uint64_t entry, end, func, s, e;
    int32_t delta;
    if (i < 0 || !fk_gopcln_func(&c->go, (uint64_t)i, &entry, &end, &func) ||
        !fk_gopcln_spdelta(&c->go, func, entry, vaddr, &delta, &s, &e) || delta < 0)
        return false;
    memset(row, 0, sizeof *row);
    row->start = s;
    row->end = e < end ? e : end;
    row->src = FK_SRC_GOPCLN;
    row->cfa_kind = FK_CFA_REG;
    row->cfa_reg = FK_UW_SP;
    row->cfa_off = (int64_t)delta + c->arch->ptr_size;
    row->rule[FK_UW_IP] = (struct fk_uw_rule){ .kind = FK_RULE_AT, .off = -(int64_t)c->arch->ptr_size };
    row->rule[FK_UW_SP] = (struct fk_uw_rule){ .kind = FK_RULE_SAME };
    row->rule[FK_UW_FP] = (struct fk_uw_rule){ .kind = FK_RULE_SAME };
    return row->end > row->start;
}

/* Go marks the outermost functions of its stacks (TOPFRAME); its CFI
 * does not, so a walk would read past the stack's base. */
static void go_topframe(struct fk_cfi *c, struct fk_uw_row *row, uint64_t vaddr)
{
    int64_t i = fk_gopcln_find(&c->go, vaddr);
    uint64_t entry, end, func;
    if (i < 0 || !fk_gopcln_func(&c->go, (uint64_t)i, &entry, &end, &func))
        return;
    if (fk_gopcln_flag(&c->go, func) & FK_GO_TOPFRAME) {
        row->rule[FK_UW_IP].kind = FK_RULE_UNDEF;
        /* keep the row inside the function */
        if (row->start < entry)
            row->start = entry;
        if (row->end > end)
            row->end = end;
    }
}

static void compute_none(struct fk_cfi *c, uint64_t vaddr, struct fk_uw_row *row)
{
    memset(row, 0, sizeof *row);
    row->start = vaddr;
    row->end = vaddr + 1;
    row->src = FK_SRC_NONE;
    if (c->entry && vaddr >= c->entry && vaddr - c->entry < ENTRY_SPAN) {
        row->src = FK_SRC_ENTRY;
        row->rule[FK_UW_IP].kind = FK_RULE_UNDEF;
    }
}

static void compute_read(struct fk_cfi *c, uint64_t vaddr, struct fk_uw_row *row)
{
    bool ok = from_libdw(c, c->eh, vaddr, row, FK_SRC_EH);
    if (!ok) {
        if (!c->dbg_tried) {
            c->dbg_tried = true;
            if (has_section(c->e, ".debug_frame") || has_section(c->e, ".zdebug_frame")) {
                c->dw = dwarf_begin_elf(c->e, DWARF_C_READ, NULL);
                if (c->dw)
                    c->dbg = dwarf_getcfi(c->dw);
            }
        }
        ok = from_libdw(c, c->dbg, vaddr, row, FK_SRC_DEBUG);
    }
    if (!c->go_tried)
        open_go(c);
    if (!ok && c->go_ok)
        ok = from_go(c, vaddr, row);
    if (ok && c->go_ok) {
        go_topframe(c, row, vaddr);
        row->below = 0;
    }
    if (!ok)
        compute_none(c, vaddr, row);
}

/* The row at vaddr, read from the file's mapping under a SIGBUS guard
 * (util/busguard.h): a file truncated by its owner meanwhile gives no
 * more rows, and its libdw state is left alone (fk_cfi_free too). */
static void compute(struct fk_cfi *c, uint64_t vaddr, struct fk_uw_row *row,
                    struct fk_uw_row *above)
{
    if (c->truncated) {
        compute_none(c, vaddr, row);
        return;
    }
    struct fk_bus_guard g;
    fk_bus_push(&g);
    if (sigsetjmp(g.env, 0) == 0) {
        if (!above || !extend_below(c, above, vaddr, row))
            compute_read(c, vaddr, row);
        fk_bus_pop(&g);
        return;
    }
    c->truncated = true;
    compute_none(c, vaddr, row);
}

/* The index of the first row of v[0, n) that starts past vaddr. */
static size_t rows_past(const struct fk_uw_row *v, size_t n, uint64_t vaddr)
{
    return fk_count_le(v, n, sizeof *v, offsetof(struct fk_uw_row, start), vaddr);
}

/* The recent rows merged into the settled run, from its end backwards
 * (rows above the lowest recent one move once). */
static void merge_recent(struct fk_cfi *c)
{
    c->rows = fk_grow(c->rows, &c->caprows, c->nsettled + c->nrecent, sizeof *c->rows);
    size_t i = c->nsettled, j = c->nrecent, k = c->nsettled + c->nrecent;
    while (j > 0) {
        if (i > 0 && c->rows[i - 1].start > c->recent[j - 1].start)
            c->rows[--k] = c->rows[--i];
        else
            c->rows[--k] = c->recent[--j];
    }
    c->nsettled += c->nrecent;
    c->nrecent = 0;
}

/* How many recent rows wait before a merge: about the square root of the
 * settled ones (an insert moves half the recent run, a merge the settled
 * one), at least 32. */
static size_t recent_max(size_t nsettled)
{
    unsigned bits = nsettled ? 64u - (unsigned)__builtin_clzll((unsigned long long)nsettled) : 0;
    size_t m = (size_t)1 << ((bits + 1) / 2);
    return m < 32 ? 32 : m;
}

const struct fk_uw_row *fk_cfi_find(struct fk_cfi *c, uint64_t vaddr)
{
    size_t ls = rows_past(c->rows, c->nsettled, vaddr);
    if (ls > 0 && vaddr < c->rows[ls - 1].end)
        return &c->rows[ls - 1];
    size_t lr = rows_past(c->recent, c->nrecent, vaddr);
    if (lr > 0 && vaddr < c->recent[lr - 1].end)
        return &c->recent[lr - 1];
    /* the nearest row above vaddr, if its range may reach down here */
    struct fk_uw_row *above = NULL;
    if (ls < c->nsettled)
        above = &c->rows[ls];
    if (lr < c->nrecent && (!above || c->recent[lr].start < above->start))
        above = &c->recent[lr];
    if (above && (!above->below || above->start - above->below > vaddr))
        above = NULL;
    struct fk_uw_row row;
    compute(c, vaddr, &row, above);
    uint64_t row_end = row.end;
    /* keep rows disjoint: clip to the neighbours in both runs (libdw
     * ranges never overlap for one FDE, but two sources may) */
    if (ls > 0 && row.start < c->rows[ls - 1].end)
        row.start = c->rows[ls - 1].end;
    if (lr > 0 && row.start < c->recent[lr - 1].end)
        row.start = c->recent[lr - 1].end;
    if (ls < c->nsettled && row.end > c->rows[ls].start)
        row.end = c->rows[ls].start;
    if (lr < c->nrecent && row.end > c->recent[lr].start)
        row.end = c->recent[lr].start;
    if (row.start > vaddr || row.end <= vaddr) {
        row.start = vaddr;
        row.end = vaddr + 1;
    }
    if (row.end != row_end)
        row.below = 0;      /* cut short: not libdw's row any more */
    /* pcs without CFI (code generated into a file's text) are cached one
     * by one: bound them apart from real rows */
    if (c->nrows >= FK_CFI_MAX_ROWS || (row.src == FK_SRC_NONE && c->nnone >= FK_CFI_MAX_ROWS / 16)) {
        c->scratch = row;
        return &c->scratch;
    }
    if (c->nrecent >= recent_max(c->nsettled)) {
        merge_recent(c);
        lr = 0;
    }
    c->recent = fk_grow(c->recent, &c->caprecent, c->nrecent + 1, sizeof *c->recent);
    memmove(&c->recent[lr + 1], &c->recent[lr], (c->nrecent - lr) * sizeof *c->recent);
    c->recent[lr] = row;
    c->nrecent++;
    c->nrows++;
    c->nnone += row.src == FK_SRC_NONE;
    return &c->recent[lr];
}
