/* SPDX-License-Identifier: GPL-2.0-only */
/* The architectures the unwinder knows (see regs.h). */
#include "unwind/regs.h"

#include <stddef.h>

static const struct fk_uw_arch arches[] = {
#if defined(__x86_64__)
    /* PERF_REG_X86_IP = 8, SP = 7, BP = 6; DWARF rip = 16, rsp = 7, rbp = 6 */
    { "x86_64", { 8, 7, 6 }, { 16, 7, 6 }, 16, 8 },
#endif
    { NULL, { 0 }, { 0 }, 0, 0 },
};

const struct fk_uw_arch *fk_uw_arch(void)
{
    return arches[0].name ? &arches[0] : NULL;
}

uint64_t fk_uw_perf_mask(const struct fk_uw_arch *a)
{
    uint64_t m = 0;
    for (int i = 0; i < FK_UW_NREGS; i++)
        m |= 1ull << a->perf_reg[i];
    return m;
}
