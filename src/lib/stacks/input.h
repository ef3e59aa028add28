/* SPDX-License-Identifier: GPL-2.0-only */
/* Stack input for svg, diff, merge and collapse: folded text or a pprof
 * profile (gzip-compressed or not), told apart by content, never by name,
 * so stdin works too. A pprof profile is folded from one sample type (the
 * "comm" label as root frame when it has one, as in flamekit's own). Binary
 * data that is mostly not folded lines is refused with one line. */
#ifndef FK_INPUT_H
#define FK_INPUT_H

#include "folded.h"
#include "pprof-read.h"
#include "util/lineread.h"

struct fk_input_opts {
    const char *sample_type;        /* pprof: type name ("inuse_space") or index;
                                       NULL = the profile's default (the last) */
    struct fk_pprof_limits limits;  /* 0s: defaults */
    bool two_counts;                /* folded: "STACK BEFORE AFTER" lines (diff) */
    fk_warn_fn warn;                /* pprof samples skipped (negative values);
                                       NULL: none */
    void *warn_ctx;
};

/* What was read, for messages and labels (e.g. the SVG's count name). */
struct fk_input_info {
    bool pprof;
    char type[64], unit[64];        /* pprof: the sample type folded */
    uint64_t skipped;               /* pprof: samples with a negative value */
};

enum fk_input_kind { FK_INPUT_ERROR, FK_INPUT_TEXT, FK_INPUT_PPROF };

/* Open path ("-" = stdin) and tell what it holds, consuming nothing;
 * *binary: the text looks like binary data (NUL bytes, many control bytes);
 * binary NULL: not looked at (a scan of the first 64 KB a byte at a time).
 * On FK_INPUT_ERROR r is closed and r->error says why. */
enum fk_input_kind fk_input_open(struct fk_lineread *r, const char *path, bool *binary);
/* FK_INPUT_PPROF: read the rest of r, decode, fold into t (counts added);
 * false with one line in r->error. */
bool fk_input_pprof(struct fk_lineread *r, const struct fk_input_opts *o, struct fk_stacktab *t,
                    struct fk_input_info *info);

/* A pprof profile's counts named for a graph (info->pprof): its sample
 * type's unit, or the type itself when the unit is "count", without the
 * parentheses a tooltip puts around it; into buf (cut to n - 1 bytes),
 * NULL when nothing is left. */
const char *fk_input_countname(const struct fk_input_info *info, char *buf, size_t n);

/* Folded text or pprof from path: fn per stack (folded lines: malformed ones
 * counted in st). False on error, with one line in err. info may be NULL. */
bool fk_input_foreach(const char *path, const struct fk_input_opts *o, struct fk_parse_stats *st,
                      fk_folded_fn fn, void *ctx, struct fk_input_info *info, char *err,
                      size_t errlen);
/* The same into a table. */
bool fk_input_read(const char *path, const struct fk_input_opts *o, struct fk_stacktab *t,
                   struct fk_parse_stats *st, struct fk_input_info *info, char *err,
                   size_t errlen);

#endif
