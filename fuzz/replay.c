/* SPDX-License-Identifier: GPL-2.0-only */
/* make check's replay of the fuzz seeds: one target's
 * LLVMFuzzerTestOneInput run once on the empty input and once on each file
 * named, without libFuzzer, so every build (gcc, and the ASan+UBSan one)
 * checks the committed seeds (test/t-fuzz-seeds.sh). fuzz/run fuzzes. */
#include "fuzz.h"
#include "util/fk.h"
#include "cmd/term.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The whole file in a heap buffer of exactly its size (so ASan sees a read
 * past its end), or NULL. */
static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *data = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        data = fk_grow(data, &cap, n + 65536, 1);
        size_t got = fread(data + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(data);
        return NULL;
    }
    uint8_t *exact = fk_malloc(n ? n : 1);
    memcpy(exact, data, n);
    free(data);
    *size = n;
    return exact;
}

int main(int argc, char **argv)
{
    fk_progname = "fuzz-replay";
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
    for (int i = 1; i < argc; i++) {
        size_t size = 0;
        uint8_t *data = read_all(argv[i], &size);
        if (!data) {
            fk_error("cannot read %s: %s", argv[i], strerror(errno));
            return FK_EXIT_ERROR;
        }
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        printf("replayed %s (%zu bytes)\n", argv[i], size);
    }
    return FK_EXIT_OK;
}
