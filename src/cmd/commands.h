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

#endif
