/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit pid: CPU flame graph of processes (all threads, children) (capture-cli.c). */
#include "commands.h"
#include "capture-cli.h"

int cmd_pid(int argc, char **argv)
{
    return fk_cpu_command(FK_TARGET_PID, argc, argv);
}
