/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit host: CPU flame graph of the whole host (all CPUs) (capture-cli.c). */
#include "commands.h"
#include "capture-cli.h"

int cmd_host(int argc, char **argv)
{
    return fk_cpu_command(FK_TARGET_HOST, argc, argv);
}
