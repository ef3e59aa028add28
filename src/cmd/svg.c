/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit svg: folded stacks -> interactive SVG flame graph. */
#include "commands.h"
#include "svg-cli.h"
#include "term.h"

#include <stdlib.h>
#include <string.h>

static const struct fk_cmdline cmdline = {
    "flamekit svg [OPTIONS] [FOLDED|-]",
    "Render folded stacks (\"frame;frame;...;frame COUNT\" lines, gzip read "
    "transparently; default stdin) as an interactive SVG flame graph. In the SVG "
    "(every frame kept, so figures count every sample): click a frame to zoom, "
    "Ctrl-F or / to search (Alt-C: ignore case), t for the top functions, "
    "right-click a frame for its callers and callees, i for the Info panel, Esc "
    "to go back; zoom and search are kept in the URL.",
    "See flamekit-svg(1).",
    NULL,
};

int cmd_svg(int argc, char **argv)
{
    struct fk_svg_cli c;
    fk_svg_cli_init(&c, false);
    const struct fk_optsec secs[] = { { "Options", fk_optset_svg, &c }, { NULL } };
    struct fk_args a;
    int rc = fk_opt_parse(&cmdline, secs, argc, argv, &a);
    if (rc == FK_OPT_CONTINUE && a.n > 1)
        rc = fk_opt_error("one input file at most (got %d)", a.n);
    if (rc == FK_OPT_CONTINUE)
        rc = fk_svg_cli_finish(&c);
    if (rc != FK_OPT_CONTINUE) {
        fk_args_free(&a);
        fk_svg_cli_free(&c);
        return rc;
    }
    fk_heap_for_batch();
    /* stacks go straight into the frame tree: memory follows frames, not
     * the input's size */
    rc = fk_svg_cli_draw(&c, a.n ? a.v[0] : "-") ? FK_EXIT_OK : FK_EXIT_ERROR;
    fk_svg_cli_free(&c);
    fk_args_free(&a);
    return rc;
}
