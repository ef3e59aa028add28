/* SPDX-License-Identifier: GPL-2.0-only */
/* Helpers shared by the libFuzzer targets (fuzz/fuzz-*.c). */
#ifndef FK_FUZZ_H
#define FK_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* What each target defines: libFuzzer calls it (fuzz/run), and so does
 * make check's replay of the committed seeds (fuzz/replay.c). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a file (memfd), for readers that take an fd; -1 on failure. */
static inline int fuzz_memfd(const char *name, const uint8_t *data, size_t size)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)n;
    }
    return fd;
}

#endif
