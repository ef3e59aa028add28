/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit host: CPU flame graph of the whole host (see capture/record.c). */
#include "capture/record.h"

int cmd_host(int argc, char **argv)
{
    static const struct fk_record_spec spec = {
        .name = "host", .kind = FK_TARGET_HOST, .operand = NULL, .profile = "cpu",
    };
    return fk_record_main(&spec, argc, argv);
}
