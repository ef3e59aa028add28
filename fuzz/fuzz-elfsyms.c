/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: the ELF symbol readers on a hostile binary (.symtab,
 * .dynsym, .gopclntab, MiniDebugInfo, FDE ranges from .eh_frame or
 * .debug_frame), then lookups; every range found must hold what it names.
 * Seeds: fuzz/seed-elfsyms.sh (small real binaries, stripped and with
 * MiniDebugInfo). No debuginfod; debug-file paths lead nowhere. */
#include "fuzz.h"
#include "symbols/symbols-int.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = fuzz_memfd("fuzz-elf", data, size);
    if (fd < 0)
        return 0;
    struct dso d = { .kind = DSO_FILE, .fd = fd };
    d.path = fk_strdup("/nonexistent/fuzz.so");
    fk_dso_load_elf(&d, NULL, false);     /* closes fd */
    for (size_t i = 0; i < d.nfdes; i++) {
        const struct fde_range *f = &d.fdes[i];
        if (i && f->start <= d.fdes[i - 1].start)
            abort();    /* sorted, one per start */
        /* overlapping (hostile) ranges may hide each other: never a wrong one */
        uint64_t a = f->start + f->len / 2;
        const struct fde_range *g = fk_dso_fde_find(&d, a);
        if ((g && a - g->start >= g->len) || !fk_dso_fde_find(&d, f->start))
            abort();
    }
    for (size_t i = 0; i < d.st.n; i++) {
        const struct fk_sym *y = fk_symtab_find(&d.st, d.st.syms[i].addr, 0);
        if (!y || y->name >= d.st.strs.len)
            abort();
    }
    free(d.path);
    free(d.loads);
    free(d.fdes);
    free(d.debug_path);
    fk_symtab_free(&d.st);
    return 0;
}
