/* SPDX-License-Identifier: GPL-2.0-only */
/* Aggregation across profiles: several folded profiles (e.g. one per host)
 * into one stack table, optionally under a frame naming each input
 * ('flamekit merge'). */
#ifndef FK_MERGE_H
#define FK_MERGE_H

#include "stacks/input.h"

/* The host a capture file belongs to: "db1.example.com" from
 * "db1.example.com.20261202_151500_UTC.pid-42.folded.gz" (a result name,
 * util/result.h); for other names, the base name minus .gz/.folded/.txt.
 * Caller frees. */
char *fk_merge_host_from_name(const char *path);
/* A folded frame from free text: ';', blanks and control characters
 * become '_'. Caller frees. */
char *fk_merge_frame(const char *s);
/* Add every stack of path (folded or pprof, plain or gzip, "-" = stdin; see
 * stacks/input.h) to t, prefixed with "FRAME;" when frame is not NULL.
 * Malformed lines are counted in st. False on I/O error or bad input, with
 * one line in err. */
bool fk_merge_add_file(struct fk_stacktab *t, const char *path, const char *frame,
                       const struct fk_input_opts *o, struct fk_parse_stats *st, char *err,
                       size_t errlen);

#endif
