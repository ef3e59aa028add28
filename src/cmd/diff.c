/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit diff: differential flame graph of two folded profiles. */
#include "commands.h"
#include "svg-cli.h"
#include "term.h"

#include <stdlib.h>
#include <string.h>

static const struct fk_cmdline cmdline = {
    "flamekit diff [OPTIONS] BEFORE AFTER\nflamekit diff [OPTIONS] [TWO-COLUMN-FOLDED|-]",
    "Differential flame graph: frame widths from AFTER, colours from the difference "
    "AFTER - BEFORE (red grew, blue shrank, stronger = more); tooltips show both counts "
    "and the delta. One input with two counts per line (\"stack BEFORE AFTER\", as "
    "difffolded.pl writes) works too.",
    "See flamekit-diff(1).",
    NULL,
};

static const char *shown(const char *p) { return strcmp(p, "-") ? p : "stdin"; }

int cmd_diff(int argc, char **argv)
{
    struct fk_svg_cli c;
    fk_svg_cli_init(&c, true);
    const struct fk_optsec secs[] = {
        { "Options", fk_optset_diff, &c }, { "Options", fk_optset_svg, &c }, { NULL },
    };
    struct fk_args args;
    int rc = fk_opt_parse(&cmdline, secs, argc, argv, &args);
    int nargs = args.n;
    if (rc == FK_OPT_CONTINUE && nargs > 2)
        rc = fk_opt_error("give BEFORE AFTER, or one two-column file (got %d files)", nargs);
    if (rc == FK_OPT_CONTINUE && nargs == 2 && !strcmp(args.v[0], "-") && !strcmp(args.v[1], "-"))
        rc = fk_opt_error("only one of BEFORE and AFTER can be stdin");
    if (rc == FK_OPT_CONTINUE)
        rc = fk_svg_cli_finish(&c);
    if (rc != FK_OPT_CONTINUE) {
        fk_args_free(&args);
        fk_svg_cli_free(&c);
        return rc;
    }
    fk_heap_for_batch();
    struct fk_stacktab t, a, b;
    fk_stacktab_init(&t);
    fk_stacktab_init(&a);
    fk_stacktab_init(&b);
    rc = FK_EXIT_ERROR;
    if (nargs == 2) {
        const char *before = args.v[0], *after = args.v[1];
        if (!fk_svg_cli_read(&c, before, &b) || !fk_svg_cli_read(&c, after, &a))
            goto out;
        if (!b.total && !a.total) {
            fk_error("%s and %s: no stacks in either; nothing to compare", shown(before),
                     shown(after));
            goto out;
        }
        /* BEFORE and AFTER are profiles: one count per line */
        for (size_t i = 0; i < b.n; i++)
            fk_stacktab_add2(&t, b.v[i].key, b.v[i].len, b.v[i].count, 0);
        for (size_t i = 0; i < a.n; i++)
            fk_stacktab_add2(&t, a.v[i].key, a.v[i].len, 0, a.v[i].count);
    } else {
        const char *in = nargs ? args.v[0] : "-";
        c.two_counts = true;    /* the one place two counts are read */
        if (!fk_svg_cli_read(&c, in, &t))
            goto out;
        if (!t.total2 && !t.total) {
            fk_error("%s: no stacks; nothing to compare", shown(in));
            goto out;
        }
        if (!t.total2)
            fk_warn("%s: no line has a second count: AFTER is empty (give BEFORE AFTER as "
                    "two files, or lines 'stack BEFORE AFTER')", shown(in));
    }
    uint64_t wtotal = c.opts.negate ? t.total : t.total2;
    if (!wtotal) {
        fk_error("the %s profile is empty: nothing to draw (%s)",
                 c.opts.negate ? "BEFORE" : "AFTER",
                 c.opts.negate ? "drop --negate" : "use --negate to draw BEFORE's shape");
        goto out;
    }
    if (fk_svg_cli_write(&c, &t))
        rc = FK_EXIT_OK;
out:
    fk_stacktab_free(&t);
    fk_stacktab_free(&a);
    fk_stacktab_free(&b);
    fk_svg_cli_free(&c);
    fk_args_free(&args);
    return rc;
}
