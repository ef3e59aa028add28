/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: the perf-PID.map reader (fk_perfmap_load) on hostile
 * maps, as it reads them: from a file descriptor, in bounded chunks, with
 * a read cap and a memory budget taken from the input's first 4 bytes.
 * The table must come out sorted, every name inside its pool and
 * terminated, and the table within the budget. */
#include "fuzz.h"
#include "symbols/symbols-int.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    /* budget: 0 .. 1 MiB in 16-byte steps; read cap: all, or a prefix */
    size_t budget = ((size_t)data[0] | (size_t)data[1] << 8) * 16;
    uint64_t max_read = data[2] & 1 ? (uint64_t)data[3] * 64 : UINT64_MAX;
    data += 4;
    size -= 4;
    int fd = fuzz_memfd("fuzz-perfmap", data, size);
    if (fd < 0)
        return 0;
    struct fk_symtab t = { 0 };
    fk_symtab_add(&t, 1, 1, "before");      /* replaced by what is read */
    for (int pass = 0; pass < 2; pass++) {  /* read again, as at the end of a capture */
        if (lseek(fd, 0, SEEK_SET) != 0)
            abort();
        enum fk_perfmap_rc rc = fk_perfmap_load(&t, fd, max_read, budget);
        if (rc == FK_PERFMAP_ERROR)
            abort();
        if (t.cap * sizeof *t.syms + t.strs.cap > budget && t.n)
            abort();    /* past the budget */
        for (size_t i = 0; i < t.n; i++) {
            const struct fk_sym *y = &t.syms[i];
            if ((i && y->addr <= t.syms[i - 1].addr) || y->name >= t.strs.len ||
                !memchr(t.strs.data + y->name, 0, t.strs.len - y->name) || y->size == 0)
                abort();
            if (fk_symtab_find(&t, y->addr, 0) != y)
                abort();
        }
    }
    fk_symtab_free(&t);
    close(fd);
    return 0;
}
