/* SPDX-License-Identifier: GPL-2.0-only */
/* The programs' terminal (term.h). */
#include "term.h"

#include <stdarg.h>
#include <stdio.h>

static void say(const char *kind, const char *fmt, va_list ap)
{
    char line[4096];
    fk_format_line(line, sizeof line, kind, fmt, ap);
    fprintf(stderr, "%s\n", line);
}

void fk_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("warning: ", fmt, ap);
    va_end(ap);
}

void fk_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("", fmt, ap);
    va_end(ap);
}

void fk_warn_line(void *ctx, const char *msg)
{
    (void)ctx;
    fk_warn("%s", msg);
}

static int usage_line(const char *msg)
{
    fprintf(stderr, "%s: %s; see '%s --help'\n", fk_progname, msg, fk_progname);
    return FK_EXIT_USAGE;
}

int fk_opt_error(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return usage_line(msg);
}

int fk_opt_parse(const struct fk_cmdline *cl, const struct fk_optsec *secs, int argc,
                 char **argv, struct fk_args *a)
{
    int rc = fk_opt_scan(cl, secs, argc, argv, a);
    if (a->out)
        fputs(a->out, stdout);
    if (a->error)
        usage_line(a->error);
    return rc;
}
