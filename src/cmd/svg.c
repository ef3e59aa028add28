/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit svg: folded stacks -> interactive SVG flame graph. */
#include "render/svgcli.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: flamekit svg [OPTIONS] [FOLDED|-]\n"
            "\n"
            "Render folded stacks (\"frame;frame;...;frame COUNT\" lines, gzip read\n"
            "transparently; default stdin) as an interactive SVG flame graph.\n"
            "In the SVG (every frame kept, so figures count every sample): click a frame\n"
            "to zoom, Ctrl-F or / to search (Alt-C: ignore case), t for the top functions,\n"
            "right-click a frame for its callers and callees, i for the Info panel, Esc\n"
            "to go back; zoom and search are kept in the URL.\n"
            "\n"
            "Options:\n%s",
            fk_svg_cli_help);
}

int cmd_svg(int argc, char **argv)
{
    struct fk_svg_cli c;
    fk_svg_cli_parse(&c, argc, argv, false, usage);
    if (argc - c.first_arg > 1)
        fk_usage_error("one input file at most (got %d)", argc - c.first_arg);
    const char *in = c.first_arg < argc ? argv[c.first_arg] : "-";
    struct fk_stacktab t;
    fk_stacktab_init(&t);
    int rc = FK_EXIT_ERROR;
    if (!fk_svg_cli_read(&c, in, &t))
        goto out;
    if (!t.n || !t.total) {
        fk_error("%s: no stacks with a count above zero; nothing to draw (input should be "
                 "folded lines like 'main;f;g 12')", strcmp(in, "-") ? in : "stdin");
        goto out;
    }
    if (fk_svg_cli_write(&c, &t))
        rc = FK_EXIT_OK;
out:
    fk_stacktab_free(&t);
    fk_svg_cli_free(&c);
    return rc;
}
