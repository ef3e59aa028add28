/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit cgroup: CPU flame graph of a cgroup or container (see capture/record.c). */
#include "capture/record.h"

int cmd_cgroup(int argc, char **argv)
{
    static const struct fk_record_spec spec = {
        .name = "cgroup", .kind = FK_TARGET_CGROUP, .operand = "PATH|CONTAINER-ID", .profile = "cpu",
    };
    return fk_record_main(&spec, argc, argv);
}
