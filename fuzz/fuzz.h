/* SPDX-License-Identifier: GPL-2.0-only */
/* Helpers shared by the libFuzzer targets (fuzz/fuzz-*.c). */
#ifndef FK_FUZZ_H
#define FK_FUZZ_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* A writer's sink (fk_svg_sink and its kin) that appends to the struct
 * fk_buf ctx. */
static inline bool fuzz_buf_sink(void *ctx, const void *data, size_t len)
{
    fk_buf_add(ctx, data, len);
    return true;
}

/* fn on each line of the input, split at '\n' as fk_lineread splits (the
 * last line may lack one): each its own writable NUL-terminated copy,
 * numbered from 1. */
static inline void fuzz_each_line(const uint8_t *data, size_t size,
                                  void (*fn)(void *ctx, char *line, size_t len, uint64_t lineno),
                                  void *ctx)
{
    const uint8_t *s = data, *end = data + size;
    uint64_t lineno = 0;
    while (s < end) {
        const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
        size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
        char *line = malloc(len + 1);
        if (!line)
            abort();
        memcpy(line, s, len);
        line[len] = 0;
        fn(ctx, line, len, ++lineno);
        free(line);
        s += len + (nl ? 1 : 0);
    }
}

#endif
