/* SPDX-License-Identifier: GPL-2.0-only */
/* pprof input: a perftools.profiles.Profile message (already decompressed)
 * into a structured profile (prof.h). The bytes come from anyone (a Go
 * program's /debug/pprof, a file mailed around): everything is checked --
 * truncation, string indices, ids, value counts -- and memory is bounded,
 * so bad input ends in one error line, never a crash or a huge allocation. */
#ifndef FK_PPROF_READ_H
#define FK_PPROF_READ_H

#include "prof.h"

/* Limits; 0 = default (FK_PPROF_MAX_INPUT / FK_PPROF_MAX_MEM). */
#define FK_PPROF_MAX_INPUT (256u << 20)     /* decompressed bytes */
#define FK_PPROF_MAX_MEM (1024u << 20)      /* bytes the decoder may allocate */
struct fk_pprof_limits {
    size_t max_input, max_mem;
};

/* Do these first bytes of an input (complete: they are all of it) look like
 * a pprof Profile? 1 yes, 0 no, -1 cannot tell yet (the first field runs
 * past len: give more bytes). Checks the protobuf structure and the field
 * types of the first field and of the messages nested in it, so text
 * (folded stacks, perf script) is not taken for one. */
int fk_pprof_sniff(const void *data, size_t len, bool complete);

/* Decode data into p (fk_prof_init'ed by us; free it with fk_prof_free
 * whatever the result). False with one line "NAME: what is wrong" in err. */
bool fk_pprof_decode(const void *data, size_t len, const char *name,
                     const struct fk_pprof_limits *lim, struct fk_prof *p, char *err,
                     size_t errlen);

#endif
