/* SPDX-License-Identifier: GPL-2.0-only */
/* libelf, libdw and liblzma loaded at run time (elf-dyn.c). */
#ifndef FK_ELF_DYN_H
#define FK_ELF_DYN_H

#include "util/fk.h"

#include <stdbool.h>

/* Load the three libraries now: a capture does it before its first sample
 * (loading takes milliseconds, and a capture that stalled on its first
 * ELF file would lose short-lived processes' maps). False when one is
 * missing: warn gets the line naming its package, and its entry points
 * fail. Weak: defined only
 * where the libraries are loaded at run time (libfkelfdyn.a); in
 * flamekit-portable, which links them, it is NULL. */
bool fk_elf_preload(fk_warn_fn warn, void *warn_ctx) __attribute__((weak));

#endif
