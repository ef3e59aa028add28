/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: the ELF symbol readers on a hostile binary (.symtab,
 * .dynsym, .gopclntab, MiniDebugInfo, FDE ranges from .eh_frame or
 * .debug_frame), then lookups; every range found must hold what it names.
 * Under a memory budget (from the input's size) that the tables, names cut
 * at FK_SYM_NAME_MAX, must keep; fuzz/elfsyms.options caps each malloc,
 * so a file that makes the loader ask for more than its budget crashes.
 * Seeds: fuzz/seed-elfsyms.sh (small real binaries, stripped and with
 * MiniDebugInfo). No debuginfod; debug-file paths lead nowhere. */
#include "fuzz.h"
#include "symbols/symbols-int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = fuzz_memfd("fuzz-elf", data, size);
    if (fd < 0)
        return 0;
    struct dso d = { .kind = DSO_FILE, .fd = fd };
    d.path = fk_strdup("/nonexistent/fuzz.so");
    /* a memory budget (--max-memory's share) of 0..256 KiB, or none */
    size_t budget = size & 3 ? (size & 0xfff) * 64 : SIZE_MAX;
    size_t file_budget = FK_SYM_FILE_BUDGET(size);
    fk_dso_load_elf(&d, NULL, false, budget);     /* closes fd */
    size_t held = fk_symtab_bytes(&d.st) + d.nfdes * sizeof *d.fdes;
    if (held > budget || held > file_budget || (d.over_budget && (d.st.n || d.nfdes)))
        abort();    /* past its budget, or a skipped file kept something */
    if (d.st.transient || d.st.names.slot)
        abort();    /* what the load held must be given back */
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
        if (!y || y->name >= d.st.strs.len || strlen(fk_symtab_name(&d.st, y)) > FK_SYM_NAME_MAX)
            abort();
    }
    free(d.path);
    free(d.loads);
    free(d.fdes);
    free(d.debug_path);
    fk_symtab_free(&d.st);
    return 0;
}
