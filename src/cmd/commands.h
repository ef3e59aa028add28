/* SPDX-License-Identifier: GPL-2.0-only */
/* The subcommand table. Each command lives in src/cmd/NAME.c and is listed
 * once in src/cmd/commands.def. */
#ifndef FK_COMMANDS_H
#define FK_COMMANDS_H

struct fk_command {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the command name */
    const char *summary;
};

#define FK_CMD(name, fn, summary) int fn(int argc, char **argv);
#include "commands.def"
#undef FK_CMD

/* The commands' fk_upload_report_fn (deliver/upload.h), from upload.c:
 * each URL on standard output, each failure as an error line. */
void fk_upload_print(void *ctx, const char *path, const char *url, const char *err);

#endif
