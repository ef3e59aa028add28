/* SPDX-License-Identifier: GPL-2.0-only */
/* The SVG options shared by 'flamekit svg' and 'flamekit diff': option
 * sets bound to struct fk_svg_cli, reading folded or pprof input
 * (stacks/input.h) and atomic output around render/svg.h. */
#ifndef FK_CMD_SVG_CLI_H
#define FK_CMD_SVG_CLI_H

#include "render/svg.h"
#include "stacks/input.h"
#include "util/opt.h"

struct fk_svg_cli {
    struct fk_svg_opts opts;
    const char *output;         /* "-" = stdout */
    const char *metadata_path;
    bool strict;
    json_t *metadata;           /* loaded from metadata_path */
    const char *sample_type;    /* --sample-type (pprof input) */
    bool countname_set;         /* --countname given */
    int names;                  /* --names: 0 short, 1 full */
    char countname_buf[64];     /* from a pprof sample type */
    bool two_counts;            /* diff's one-input form: "STACK BEFORE AFTER" */
};

/* Sections of --help, bound to a struct fk_svg_cli. */
extern const struct fk_opt fk_optset_svg[];     /* -o, --title, --width, ... --strict */
extern const struct fk_opt fk_optset_diff[];    /* --negate, --normalize */

void fk_svg_cli_init(struct fk_svg_cli *c, bool diff);
/* After parsing: cross-checks and --metadata loading. FK_OPT_CONTINUE, or
 * an exit status after one error line. */
int fk_svg_cli_finish(struct fk_svg_cli *c);

/* Read folded stacks or a pprof profile (stacks/input.h) into t, warning
 * once about malformed lines (error with strict); a pprof sample type names
 * the counts unless --countname did. False on I/O error, bad input, strict
 * failure (reported). */
bool fk_svg_cli_read(struct fk_svg_cli *c, const char *path, struct fk_stacktab *t);
/* Render t to c->output atomically; false (reported) on failure. */
bool fk_svg_cli_write(struct fk_svg_cli *c, const struct fk_stacktab *t);
/* Read path (as fk_svg_cli_read) straight into the frame tree, keeping no
 * stacks (big input, little memory; --flamechart reads a table first, as
 * it merges only adjacent distinct stacks), and render it to c->output;
 * false (reported) on failure, also when no stack has a count. */
bool fk_svg_cli_draw(struct fk_svg_cli *c, const char *path);
void fk_svg_cli_free(struct fk_svg_cli *c);

#endif
