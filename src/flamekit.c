/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit: one binary, git-style subcommands. */
#include "cmd/commands.h"
#include "util/fk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct fk_command commands[] = {
#define FK_CMD(name, fn, summary) { name, fn, summary },
#include "cmd/commands.def"
#undef FK_CMD
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fprintf(out,
            "usage: flamekit COMMAND [OPTIONS] [ARGS]\n"
            "\n"
            "Safe, fast CPU and page-fault flame graphs for production hosts.\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "Run 'flamekit COMMAND --help' for a command's options; man flamekit(1).\n"
            "Options: -h, --help  this text;  -V, --version  print the version.\n");
}

int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("flamekit %s (libperf from %s)\n", FK_VERSION, fk_libperf_source);
    return FK_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return FK_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            /* "flamekit help CMD" == "flamekit CMD --help" */
            char help[] = "--help";
            char *av[] = { argv[2], help, NULL };
            for (size_t i = 0; i < NCOMMANDS; i++)
                if (!strcmp(commands[i].name, argv[2])) {
                    fk_progname = fk_asprintf("flamekit %s", argv[2]);
                    return commands[i].run(2, av);
                }
        } else {
            usage(stdout);
            return FK_EXIT_OK;
        }
    }
    if (!strcmp(name, "-V") || !strcmp(name, "--version"))
        return cmd_version(0, NULL);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (!strcmp(commands[i].name, name)) {
            fk_progname = fk_asprintf("flamekit %s", name);
            return commands[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "flamekit: '%s' is not a flamekit command; see 'flamekit --help'\n", name);
    return FK_EXIT_USAGE;
}
