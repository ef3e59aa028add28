/* SPDX-License-Identifier: GPL-2.0-only */
/* Measure the symbolizer on this host: scan every process, locate one
 * address in every executable mapping, then name them all (loads every
 * DSO's symbols). Prints times, counts and bytes held. */
#include "symbols/symbols.h"
#include "cmd/term.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int main(void)
{
    fk_progname = "symscan";
    uint64_t t0 = fk_now_ns();
    struct fk_symbolizer *s = fk_sym_new(&(struct fk_sym_opts){ .kernel = true, .jit = true,
                                                                 .warn = fk_warn_line });
    fk_sym_scan_all(s);
    uint64_t t1 = fk_now_ns();
    struct fk_loc *locs = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        int pid = atoi(de->d_name);
        if (pid <= 0)
            continue;
        char p[64], line[512];
        snprintf(p, sizeof p, "/proc/%d/maps", pid);
        FILE *f = fopen(p, "r");
        while (f && fgets(line, sizeof line, f)) {
            unsigned long long a, b;
            char perms[8];
            if (sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3 && perms[2] == 'x') {
                locs = fk_grow(locs, &cap, n + 1, sizeof *locs);
                locs[n++] = fk_sym_locate(s, pid, a + (b - a) / 2, false);
            }
        }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    uint64_t t2 = fk_now_ns();
    size_t before = fk_sym_bytes(s);
    struct fk_buf b = FK_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        fk_buf_reset(&b);
        fk_sym_name(s, locs[i], &b);
    }
    fk_buf_reset(&b);
    fk_sym_name(s, fk_sym_locate(s, 1, 0xffffffff81000000ULL, true), &b);   /* loads kallsyms */
    uint64_t t3 = fk_now_ns();
    struct fk_sym_stats st;
    fk_sym_stats(s, &st);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("scan_all: %llu processes, %llu DSOs, %.1f ms, %zu KiB held\n",
           (unsigned long long)st.processes, (unsigned long long)st.dsos, (t1 - t0) / 1e6, before / 1024);
    printf("locate: %zu mappings (incl. reading maps again) %.1f ms\n", n, (t2 - t1) / 1e6);
    printf("name all + kallsyms: %.1f ms, %zu KiB held after, %llu unresolved; max RSS %ld KiB\n",
           (t3 - t2) / 1e6, fk_sym_bytes(s) / 1024, (unsigned long long)st.names_unresolved, ru.ru_maxrss);
    fk_buf_free(&b);
    free(locs);
    fk_sym_free(s);
    return 0;
}
