/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit user: CPU flame graph of one user's processes (capture-cli.c). */
#include "commands.h"
#include "capture-cli.h"

int cmd_user(int argc, char **argv)
{
    return fk_cpu_command(FK_TARGET_USER, argc, argv);
}
