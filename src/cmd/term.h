/* SPDX-License-Identifier: GPL-2.0-only */
/* The programs' terminal: the one place where flamekit's commands, the
 * fetchd programs and the test and bench programs print diagnostics, and
 * where the option parser's --help, --version and usage lines reach
 * stdout and stderr.
 *
 * Invariant: the library (src/lib) never calls anything here. It reports
 * errors as values and hands warnings to the fk_warn_fn its caller gave
 * (util/fk.h); a program decides what to print, through these. Built as
 * libfkcmd.a; test/t-unit.sh checks that libflamekit.a names no terminal
 * stream and no printing function. */
#ifndef FK_TERM_H
#define FK_TERM_H

#include "util/fk.h"
#include "util/opt.h"

/* One line on stderr, "PROG: warning: MESSAGE" / "PROG: MESSAGE", made
 * safe for a terminal (fk_text_sanitize) and written in one piece (so
 * also the fetch servers' --verbose log lines, which name what a client
 * sent, from several threads). */
void fk_warn(const char *fmt, ...) FK_PRINTF(1, 2);
void fk_error(const char *fmt, ...) FK_PRINTF(1, 2);
/* The fk_warn_fn to give the library: fk_warn("%s", msg). */
void fk_warn_line(void *ctx, const char *msg);

/* fk_opt_scan (util/opt.h), then what it left to say: --help's or
 * --version's text on stdout, or one usage line on stderr (as
 * fk_opt_error). Same result as fk_opt_scan. */
int fk_opt_parse(const struct fk_cmdline *cl, const struct fk_optsec *secs, int argc,
                 char **argv, struct fk_args *a);

/* A usage error after parsing (a bad combination, a missing operand): one
 * line "PROG: MESSAGE; see 'PROG --help'" on stderr; returns FK_EXIT_USAGE. */
int fk_opt_error(const char *fmt, ...) FK_PRINTF(1, 2);

#endif
