/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit run: CPU flame graph of a command (see capture/record.c). */
#include "capture/record.h"

int cmd_run(int argc, char **argv)
{
    static const struct fk_record_spec spec = {
        .name = "run", .kind = FK_TARGET_RUN, .operand = "-- CMD [ARGS]", .profile = "cpu",
    };
    return fk_record_main(&spec, argc, argv);
}
