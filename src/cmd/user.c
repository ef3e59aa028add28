/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit user: CPU flame graph of a user's processes (see capture/record.c). */
#include "capture/record.h"

int cmd_user(int argc, char **argv)
{
    static const struct fk_record_spec spec = {
        .name = "user", .kind = FK_TARGET_USER, .operand = "USER|UID", .profile = "cpu",
    };
    return fk_record_main(&spec, argc, argv);
}
