/* SPDX-License-Identifier: GPL-2.0-only */
/* The unwinder's vocabulary: the registers it tracks, each architecture's
 * perf and DWARF numbers for them, and the rows that say how to find a
 * frame's caller from a pc (the CFA and a rule per tracked register).
 * symbols/cfi.c compiles a binary's CFI into these rows and the walker
 * (unwind.h) steps with them; both are the symbolize stage, this header
 * is its lowest part and includes nothing of flamekit's. */
#ifndef FK_UNWIND_REGS_H
#define FK_UNWIND_REGS_H

#include <stdbool.h>
#include <stdint.h>

/* Registers the unwinder tracks, in every architecture's table. */
enum { FK_UW_IP, FK_UW_SP, FK_UW_FP, FK_UW_NREGS };

/* One architecture: which perf registers the sample carries
 * (PERF_SAMPLE_REGS_USER, in bit order) and their DWARF numbers. Adding an
 * architecture (arm64: x29, sp, pc with the return address in x30) is one
 * row of the table in regs.c, its ELF machine in symbols/cfi.c and its
 * tracked link register. */
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
    uint32_t below;                 /* symbols/cfi.c's: the row may also hold [start - below, start) */
    int64_t cfa_off;
    struct fk_uw_rule rule[FK_UW_NREGS];
};

/* A DWARF expression operation, copied out of libdw. */
struct fk_uw_op {
    uint8_t atom;
    uint64_t number, number2;
};

#endif
