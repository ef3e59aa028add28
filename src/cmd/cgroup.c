/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit cgroup: CPU flame graph of a cgroup v2 or container (capture-cli.c). */
#include "commands.h"
#include "capture-cli.h"

int cmd_cgroup(int argc, char **argv)
{
    return fk_cpu_command(FK_TARGET_CGROUP, argc, argv);
}
