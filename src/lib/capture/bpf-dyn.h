/* SPDX-License-Identifier: GPL-2.0-only */
/* libbpf loaded at run time (bpf-dyn.c). */
#ifndef FK_BPF_DYN_H
#define FK_BPF_DYN_H

#include <stdbool.h>
#include <stddef.h>

/* Load libbpf now (the first call; later calls say what the first found):
 * false when it is missing or too old, err then naming the package to
 * install, and libbpf's entry points fail (-1, errno ENOSYS; NULL).
 * Weak: defined only where libbpf is loaded at run time (libfkbpfdyn.a);
 * in flamekit-portable, which links it, it is NULL. */
bool fk_bpf_lib_load(char *err, size_t errlen) __attribute__((weak));

#endif
