/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit run: CPU flame graph of a command, until it exits (capture-cli.c). */
#include "commands.h"
#include "capture-cli.h"

int cmd_run(int argc, char **argv)
{
    return fk_cpu_command(FK_TARGET_RUN, argc, argv);
}
