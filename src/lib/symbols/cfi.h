/* SPDX-License-Identifier: GPL-2.0-only */
/* Call frame information of one binary, compiled into compact unwind rows.
 *
 * A struct fk_cfi wraps an ELF image (borrowed: it must outlive the fk_cfi)
 * and answers "how do I find the caller from this pc?" with a row: the CFA
 * as register + offset (or a small DWARF expression) and a rule for each
 * register the unwinder tracks (ip, sp, fp; see fk_uw_arch). Sources, in
 * order: .eh_frame, .debug_frame (Go, some static binaries) through elfutils
 * libdw, then Go's .gopclntab SP deltas (binaries linked with -w). Go's
 * top-of-stack functions (runtime.goexit, rt0_go, mstart) get an undefined
 * return address so a walk ends there as complete.
 *
 * Rows are cached by the pc range they cover, so the hot path is a binary
 * search; DWARF is walked once per range. Everything read from the file is
 * hostile: every count, offset and expression is bounded. */
#ifndef FK_UNWIND_CFI_H
#define FK_UNWIND_CFI_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Registers the unwinder tracks, in every architecture's table. */
enum { FK_UW_IP, FK_UW_SP, FK_UW_FP, FK_UW_NREGS };

/* One architecture: which perf registers the sample carries
 * (PERF_SAMPLE_REGS_USER, in bit order) and their DWARF numbers. Adding an
 * architecture (arm64: x29, sp, pc with the return address in x30) is one
 * row of the table in cfi.c plus its tracked link register. */
struct fk_uw_arch {
    const char *name;
    int perf_reg[FK_UW_NREGS];      /* PERF_REG_* index of ip, sp, fp */
    int dwarf_reg[FK_UW_NREGS];     /* DWARF register number of each */
    int ra_column;                  /* DWARF return-address column */
    unsigned ptr_size;
};
/* This machine's architecture, or NULL when DWARF unwinding is not
 * supported here (frame pointers only). */
const struct fk_uw_arch *fk_uw_arch(void);
/* The sample_regs_user mask for the arch. */
uint64_t fk_uw_perf_mask(const struct fk_uw_arch *a);

enum fk_uw_rule_kind {
    FK_RULE_SAME,       /* unchanged by this frame (sp: the CFA) */
    FK_RULE_UNDEF,      /* not recoverable; for the return address: outermost frame */
    FK_RULE_AT,         /* saved at CFA + off */
    FK_RULE_VAL,        /* equals CFA + off */
    FK_RULE_REG,        /* equals tracked register `reg` */
    FK_RULE_EXPR_AT,    /* saved at the address the expression computes */
    FK_RULE_EXPR_VAL,   /* equals the expression's value */
};

struct fk_uw_rule {
    uint8_t kind;       /* enum fk_uw_rule_kind */
    uint8_t reg;
    uint16_t nops;      /* EXPR: operations in the pool */
    uint32_t expr;      /* EXPR: first operation in the pool */
    int64_t off;
};

enum fk_uw_cfa_kind { FK_CFA_NONE, FK_CFA_REG, FK_CFA_EXPR };

/* FK_SRC_ENTRY: no CFI, but the pc is at the ELF entry point (e.g. the
 * dynamic loader's _start): nothing called it, the walk is complete. */
enum fk_uw_src { FK_SRC_NONE, FK_SRC_EH, FK_SRC_DEBUG, FK_SRC_GOPCLN, FK_SRC_ENTRY };

struct fk_uw_row {
    uint64_t start, end;            /* [start, end) in the ELF's vaddr space */
    uint8_t cfa_kind;               /* enum fk_uw_cfa_kind */
    uint8_t cfa_reg;                /* FK_CFA_REG: tracked register index */
    uint8_t src;                    /* enum fk_uw_src; NONE: no CFI covers it */
    bool signal;                    /* a signal trampoline ('S'): the caller's pc is exact */
    uint16_t cfa_nops;
    uint32_t cfa_expr;
    int64_t cfa_off;
    struct fk_uw_rule rule[FK_UW_NREGS];
};

/* A DWARF expression operation, copied out of libdw. */
struct fk_uw_op {
    uint8_t atom;
    uint64_t number, number2;
};

struct fk_cfi;

/* CFI of the ELF image e (borrowed; NULL if e is not an ELF file of this
 * architecture's class). Cheap: sections are parsed on first use. */
struct fk_cfi *fk_cfi_new(Elf *e);
void fk_cfi_free(struct fk_cfi *c);

/* ELF file offset -> vaddr through the PT_LOAD segments. */
bool fk_cfi_off_to_vaddr(const struct fk_cfi *c, uint64_t off, uint64_t *vaddr);

/* The row covering vaddr. Never NULL: a row with src FK_SRC_NONE says no
 * CFI covers it (the caller falls back to frame pointers). The pointer is
 * valid until the next fk_cfi_find on c. */
const struct fk_uw_row *fk_cfi_find(struct fk_cfi *c, uint64_t vaddr);

/* Expression operations of a row (cfa_expr/rule.expr index them). */
const struct fk_uw_op *fk_cfi_ops(const struct fk_cfi *c);

/* Bytes held by the row cache (for the memory cap). */
size_t fk_cfi_bytes(const struct fk_cfi *c);

/* Limits: rows cached per binary; operations per expression. */
#define FK_CFI_MAX_ROWS 65536
#define FK_CFI_MAX_OPS 32

#endif
