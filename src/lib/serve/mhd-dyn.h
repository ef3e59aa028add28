/* SPDX-License-Identifier: GPL-2.0-only */
/* libmicrohttpd and GnuTLS, loaded with dlopen() when flamekit serve starts
 * (see mhd-dyn.c). */
#ifndef FK_MHD_DYN_H
#define FK_MHD_DYN_H

#include <stdbool.h>
#include <stddef.h>

/* Load both once; false with one line in err naming the package to
 * install when one is missing. Every MHD_* and gnutls_* call serve.c and
 * auth.c make goes through it. */
bool fk_mhd_load(char *err, size_t errlen);

#endif
