/* SPDX-License-Identifier: GPL-2.0-only */
/* Call frame information of one binary, compiled into compact unwind rows.
 *
 * A struct fk_cfi wraps an ELF image (borrowed: it must outlive the fk_cfi)
 * and answers "how do I find the caller from this pc?" with a row: the CFA
 * as register + offset (or a small DWARF expression) and a rule for each
 * register the unwinder tracks (ip, sp, fp; unwind/regs.h). Sources, in
 * order: .eh_frame, .debug_frame (Go, some static binaries) through elfutils
 * libdw, then Go's .gopclntab SP deltas (binaries linked with -w). Go's
 * top-of-stack functions (runtime.goexit, rt0_go, mstart) get an undefined
 * return address so a walk ends there as complete.
 *
 * Rows are cached by the pc range they cover, so the hot path is a binary
 * search; DWARF is walked once per range. Everything read from the file is
 * hostile: every count, offset and expression is bounded. */
#ifndef FK_SYMBOLS_CFI_H
#define FK_SYMBOLS_CFI_H

#include "unwind/regs.h"

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Rows cached (every address asked is covered by one until the cache is
 * full: asking again finds it). */
size_t fk_cfi_rows(const struct fk_cfi *c);

/* Bytes held by the row cache (for the memory cap). */
size_t fk_cfi_bytes(const struct fk_cfi *c);

/* Limits: rows cached per binary; operations per expression. */
#define FK_CFI_MAX_ROWS 65536
#define FK_CFI_MAX_OPS 32

#endif
