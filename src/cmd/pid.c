/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit pid: CPU flame graph of processes (see capture/record.c). */
#include "capture/record.h"

int cmd_pid(int argc, char **argv)
{
    static const struct fk_record_spec spec = {
        .name = "pid", .kind = FK_TARGET_PID, .operand = "PID[,PID...]", .profile = "cpu",
    };
    return fk_record_main(&spec, argc, argv);
}
