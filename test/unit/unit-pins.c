/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for pins (symbols/pins.h): files and JIT /tmp directories held
 * from the moment a record leaves the ring, on this very process. */
#include "unit.h"
#include "symbols/pins.h"
#include "symbols/symbols.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* This program's first executable file mapping (from /proc/self/maps). */
static bool exec_mapping(uint64_t *start, uint64_t *end, char *path, size_t size)
{
    FILE *f = fopen("/proc/self/maps", "re");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long long s, e;
        char perm[8];
        int at = 0;
        if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &s, &e, perm, &at) == 3 && at &&
            perm[2] == 'x' && line[at] == '/') {
            *start = s;
            *end = e;
            snprintf(path, size, "%s", line + at);
            path[strcspn(path, "\n")] = 0;
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* A child that lives until *release is closed (then reap it). */
static pid_t held_child(int *release)
{
    int gate[2];
    UNIT_CHECK("a pipe", pipe(gate) == 0);
    pid_t c = fork();
    if (c == 0) {
        char b;
        close(gate[1]);
        _exit(read(gate[0], &b, 1) < 0);
    }
    close(gate[0]);
    *release = gate[1];
    return c;
}

int main(void)
{
    unit_name = "unit-pins";
    pid_t me = getpid();
    uint64_t start = 0, end = 0;
    char path[4096] = "";
    UNIT_CHECK("an executable file mapping of this process", exec_mapping(&start, &end, path, sizeof path));
    struct stat want;
    UNIT_CHECK("its file", stat(path, &want) == 0);

    struct fk_pins *p = fk_pins_new(2, true);
    fk_pins_mmap(p, me, start, end - start, PROT_READ | PROT_EXEC, 8, 1, (uint64_t)want.st_ino,
                 NULL, 0, path, 100);
    struct fk_pins_stats st;
    fk_pins_stats(p, &st);
    UNIT_CHECK("the file is pinned", st.files == 1);
    /* the same file mapped again (another process, another exec): once */
    fk_pins_mmap(p, me, start, end - start, PROT_READ | PROT_EXEC, 8, 1, (uint64_t)want.st_ino,
                 NULL, 0, path, 110);
    fk_pins_stats(p, &st);
    UNIT_CHECK("a file pinned once is not pinned again", st.files == 1);
    fk_pins_mmap(p, me, start, end - start, PROT_READ, 8, 1, 99, NULL, 0, "/data", 120);
    fk_pins_stats(p, &st);
    UNIT_CHECK("a mapping that is not executable is not pinned", st.files == 1);
    struct stat got;
    UNIT_CHECK("another mapping's pin is not taken",
               fk_pins_take_file(p, me, start, end + 4096, &got) == -1);
    int fd = fk_pins_take_file(p, me, start, end, &got);
    UNIT_CHECK("taken: the very file mapped", fd >= 0 && got.st_ino == want.st_ino && got.st_dev == want.st_dev);
    if (fd >= 0)
        close(fd);
    UNIT_CHECK("taken once", fk_pins_take_file(p, me, start, end, &got) == -1);

    /* JIT memory: where its perf map will be, read while it lives */
    void *jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    UNIT_CHECK("anonymous executable memory", jit != MAP_FAILED);
    fk_pins_mmap(p, me, (uint64_t)(uintptr_t)jit, 4096, PROT_READ | PROT_EXEC, 0, 0, 0, NULL, 0, "//anon", 200);
    fk_pins_mmap(p, me, (uint64_t)(uintptr_t)jit + 4096, 4096, PROT_READ | PROT_EXEC, 0, 0, 0, NULL, 0, "//anon", 210);
    fk_pins_stats(p, &st);
    UNIT_CHECK("JIT facts pinned once per program", st.jits == 1);
    struct fk_jit_where w;
    bool took = fk_pins_take_jit(p, me, &w);
    struct stat tmp, ours;
    UNIT_CHECK("JIT: pid, uids and /tmp",
               took && w.nspid == me && w.nuids >= 1 && w.uids[0] == getuid() && w.tmp_fd >= 0 &&
               fstat(w.tmp_fd, &tmp) == 0 && stat("/tmp", &ours) == 0 && tmp.st_ino == ours.st_ino);
    if (took && w.tmp_fd >= 0)
        close(w.tmp_fd);
    UNIT_CHECK("JIT facts taken once", !fk_pins_take_jit(p, me, &w));
    /* a child forked by it (no MMAP2 of its own): pinned at its FORK */
    int gate;
    pid_t child = held_child(&gate);
    fk_pins_fork(p, child, me, 250);
    fk_pins_stats(p, &st);
    UNIT_CHECK("a JIT's forked child is pinned at its FORK", st.jits == 2);
    took = fk_pins_take_jit(p, child, &w);
    UNIT_CHECK("... with its own pid", took && w.nspid == child && w.tmp_fd >= 0);
    if (took && w.tmp_fd >= 0)
        close(w.tmp_fd);
    fk_pins_fork(p, child, getppid(), 260);     /* the same pid made by another, no JIT */
    fk_pins_stats(p, &st);
    UNIT_CHECK("a child of a process without JIT is not", st.jits == 2);
    fk_pins_mmap(p, child, (uint64_t)(uintptr_t)jit, 4096, PROT_READ | PROT_EXEC, 0, 0, 0, NULL, 0,
                 "//anon", 270);
    fk_pins_stats(p, &st);
    UNIT_CHECK("... and the JIT of a pid reused by it is pinned anew", st.jits == 3);
    took = fk_pins_take_jit(p, child, &w);
    if (took && w.tmp_fd >= 0)
        close(w.tmp_fd);
    close(gate);
    waitpid(child, NULL, 0);
    /* an exec: the new program's JIT is pinned again */
    fk_pins_exec(p, me);
    fk_pins_mmap(p, me, (uint64_t)(uintptr_t)jit, 4096, PROT_READ | PROT_EXEC, 0, 0, 0, NULL, 0, "//anon", 300);
    fk_pins_stats(p, &st);
    UNIT_CHECK("after an exec, pinned again", st.jits == 4);

    /* bounds: two fds at most (the JIT /tmp holds one) */
    fk_pins_mmap(p, me, start, end - start, PROT_READ | PROT_EXEC, 8, 2, (uint64_t)want.st_ino,
                 NULL, 0, path, 310);
    fk_pins_mmap(p, me, start, end - start, PROT_READ | PROT_EXEC, 8, 3, (uint64_t)want.st_ino,
                 NULL, 0, path, 320);
    fk_pins_stats(p, &st);
    UNIT_CHECK("fds bounded: the third refused, counted", st.files == 2 && st.refused >= 1);
    /* exit at 305: what was pinned before it goes (the JIT at 300), not after */
    fk_pins_drop_exit(p, me, 305);
    UNIT_CHECK("exit drops the pins of records before it", !fk_pins_take_jit(p, me, &w));
    fd = fk_pins_take_file(p, me, start, end, &got);
    UNIT_CHECK("... not those after it (a reused pid)", fd >= 0);
    if (fd >= 0)
        close(fd);
    UNIT_CHECK("bytes are counted", fk_pins_bytes(p) > 0);
    fk_pins_mmap(p, 0, start, end - start, PROT_READ | PROT_EXEC, 8, 4, 1, NULL, 0, path, 400);
    fk_pins_mmap(p, me, start, end - start, PROT_READ | PROT_EXEC, 8, 5, 1, NULL, 0,
                 "[kernel.kallsyms]_text", 400);
    fk_pins_stats(p, &st);
    UNIT_CHECK("no pins for the kernel", st.files == 2);
    fk_pins_free(p);    /* closes what is left (leak-checked under ASan) */

    /* JIT code mapped before the capture (no MMAP2 record): the
     * symbolizer's scan of the process pins it, so its forked child is
     * pinned at its FORK */
    p = fk_pins_new(8, true);
    struct fk_sym_opts so = { .jit = true, .pins = p };
    struct fk_symbolizer *s = fk_sym_new(&so);
    fk_sym_scan_pid(s, me);
    fk_pins_stats(p, &st);
    UNIT_CHECK("a JIT present at the start is pinned by the scan", st.jits == 1);
    child = held_child(&gate);
    fk_pins_fork(p, child, me, 10);
    fk_pins_stats(p, &st);
    took = fk_pins_take_jit(p, child, &w);
    UNIT_CHECK("... and its forked child at its FORK", st.jits == 2 && took && w.nspid == child);
    if (took && w.tmp_fd >= 0)
        close(w.tmp_fd);
    close(gate);
    waitpid(child, NULL, 0);
    fk_sym_free(s);
    fk_pins_free(p);
    munmap(jit, 4096);
    return UNIT_END();
}
