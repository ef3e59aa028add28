/* SPDX-License-Identifier: GPL-2.0-only */
/* The folded format: one "frame;frame;...;frame COUNT" line per stack
 * (differential files, read only by diff: "STACK COUNT1 COUNT2"), as
 * FlameGraph's tools write and read it: no escapes, the count is the last
 * number after one blank (a name may end in a space or in " DIGITS"), a
 * newline in a name is written as '?'. See flamekit-collapse(1). */
#ifndef FK_FOLDED_H
#define FK_FOLDED_H

#include "stacktab.h"
#include "util/outfile.h"

/* Counts malformed input lines so we can warn once, not per line. */
struct fk_parse_stats {
    uint64_t lines;
    uint64_t bad;
    uint64_t first_bad_lineno;
    char *first_bad_text;       /* first 120 bytes, printable */
    const char *first_bad_why;
};

void fk_parse_stats_bad(struct fk_parse_stats *st, uint64_t lineno, const char *line,
                        size_t len, const char *why);
/* The one line about skipped lines, into msg ("" when none were): a
 * warning, or an error when strict (then false: the input is refused). */
bool fk_parse_stats_report(const struct fk_parse_stats *st, const char *input, bool strict,
                           char *msg, size_t msglen);
void fk_parse_stats_free(struct fk_parse_stats *st);

/* Read folded stacks from path ("-" = stdin, gzip transparent) into t,
 * one count per line. Returns false on I/O error, with one line in err. */
bool fk_folded_read(const char *path, struct fk_stacktab *t, struct fk_parse_stats *st,
                    char *err, size_t errlen);
/* Call fn for every well-formed line of path (same input rules as
 * fk_folded_read); malformed lines go to st. two: lines may carry two
 * counts ("STACK BEFORE AFTER", has2 set); only diff input asks for that,
 * everyone else reads the last number as the count. */
typedef void (*fk_folded_fn)(void *ctx, const char *stack, size_t len, uint64_t count,
                             uint64_t count2, bool has2);
bool fk_folded_foreach(const char *path, bool two, struct fk_parse_stats *st, fk_folded_fn fn,
                       void *ctx, char *err, size_t errlen);
/* The same from an open reader (stacks/input.c opens it to sniff the
 * format); false on a read error (r->error). */
struct fk_lineread;
bool fk_folded_foreach_lines(struct fk_lineread *r, bool two, struct fk_parse_stats *st,
                             fk_folded_fn fn, void *ctx);
/* An fk_folded_fn adding each stack to the fk_stacktab ctx (both counts). */
void fk_folded_to_table(void *ctx, const char *stack, size_t len, uint64_t count,
                        uint64_t count2, bool has2);
/* Parse one line; false if malformed (why says what). */
bool fk_folded_parse_line(char *line, size_t len, bool two, const char **stack,
                          size_t *stack_len, uint64_t *count, uint64_t *count2, bool *has2,
                          const char **why);
/* Write t sorted, one line per stack, to o. */
bool fk_folded_write(struct fk_outfile *o, const struct fk_stacktab *t);
/* The one folded writer (fk_folded_write and perf script's collapse use
 * it): n lines "STACK COUNT\n" in the order given. stack(ctx, i, b)
 * appends line i's stack to b and returns its count; a newline in it is
 * written as '?' (it would split the line: folded text has no escapes).
 * The lines go to sink in blocks of about 256 KiB. */
struct fk_buf;
bool fk_folded_write_lines(size_t n, uint64_t (*stack)(void *ctx, size_t i, struct fk_buf *b),
                           void *ctx, bool (*sink)(void *sink_ctx, const void *data, size_t len),
                           void *sink_ctx);

#endif
