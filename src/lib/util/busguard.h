/* SPDX-License-Identifier: GPL-2.0-only */
/* Reads of a file through a mapping (libelf's ELF_C_READ_MMAP, libdw's
 * CFI): the file's owner can truncate it meanwhile, and touching a page
 * past its new end raises SIGBUS, which would kill flamekit and lose the
 * capture. Such reads run under a guard; the signal then ends the guarded
 * read as a failure instead:
 *
 *     struct fk_bus_guard g;
 *     fk_bus_push(&g);
 *     if (sigsetjmp(g.env, 0) == 0) {
 *         ...read through the mapping...
 *         fk_bus_pop(&g);
 *     } else {
 *         ...SIGBUS: popped already; what the read built is suspect...
 *     }
 *
 * Invariants: guards nest (innermost wins) and are popped in order; a
 * SIGBUS outside every guard keeps its default action (core dump); locals
 * changed inside the guarded part must be volatile to be used after a
 * SIGBUS (sigsetjmp rules): keep that part a single call. Not for threads. */
#ifndef FK_BUSGUARD_H
#define FK_BUSGUARD_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

struct fk_bus_guard {
    sigjmp_buf env;
    struct fk_bus_guard *prev;
    size_t noted;       /* (AddressSanitizer builds: see busguard.c) */
};

void fk_bus_push(struct fk_bus_guard *g);
void fk_bus_pop(struct fk_bus_guard *g);
/* The pattern above for a single call: fn(ctx) under a guard. Its result
 * (1 or 0), or -1 when a SIGBUS ended it. */
int fk_bus_call(bool (*fn)(void *ctx), void *ctx);
/* SIGBUS caught so far (for tests and the summary). */
unsigned long fk_bus_caught(void);
/* Keep what a caught SIGBUS left half-built (a libelf or libdw handle):
 * never freed (freeing could touch the mapping again), but reachable, so
 * a leak checker does not report it. NULL is ignored. */
void fk_bus_abandon(void *p);

#endif
