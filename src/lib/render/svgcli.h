/* SPDX-License-Identifier: GPL-2.0-only */
/* Command-line options shared by "flamekit svg" and "flamekit diff". */
#ifndef FK_RENDER_SVGCLI_H
#define FK_RENDER_SVGCLI_H

#include "svg.h"

struct fk_svg_cli {
    struct fk_svg_opts opts;
    const char *output;     /* "-" = stdout */
    const char *metadata_path;
    bool strict;
    json_t *metadata;       /* loaded from metadata_path */
    int first_arg;          /* index of the first operand in argv */
    const char *sample_type;    /* --sample-type (pprof input) */
    bool countname_set;         /* --countname given */
    char countname_buf[64];     /* from a pprof sample type */
};

/* Parse argv (argv[0] = command name). Prints usage and exits 0 on --help,
 * exits 2 on a usage error; loads --metadata (exit 1 on bad JSON). */
void fk_svg_cli_parse(struct fk_svg_cli *c, int argc, char **argv, bool diff,
                      void (*usage)(FILE *out));
/* The option lines common to both commands, for their --help. */
extern const char fk_svg_cli_help[];

/* Read folded stacks or a pprof profile (stacks/input.h) into t, warning
 * once about malformed lines (error with strict); a pprof sample type names
 * the counts unless --countname did. False on I/O error, bad input, strict
 * failure (reported). */
bool fk_svg_cli_read(struct fk_svg_cli *c, const char *path, struct fk_stacktab *t);
/* Render t to c->output atomically; false (reported) on failure. */
bool fk_svg_cli_write(struct fk_svg_cli *c, const struct fk_stacktab *t);
void fk_svg_cli_free(struct fk_svg_cli *c);

#endif
