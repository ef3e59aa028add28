/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: hostile result streams -> the reader. The first byte
 * picks the feed chunk size. Whatever the input, the reader must not crash,
 * must leave only committed files (never a temporary) in its directory,
 * may commit only streams that end with a valid end record, and only
 * files named as a capture names its results (no Makefile). */
#include "fuzz.h"
#include "deliver/stream.h"
#include "util/result.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void check_and_clear(bool committed)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (e->d_name[0] == '.' || !committed)
            abort();    /* a temporary survived, or files of a bad stream */
        const char *n0 = e->d_name;
        if (!strncmp(n0, "fuzz.", 5) && !fk_result_file_name_ok(n0))
            n0 += 5;    /* the clash prefix */
        if (!fk_result_file_name_ok(n0))
            abort();    /* only result names may be planted (issue 12) */
        char *p = fk_asprintf("%s/%s", dir, e->d_name);
        unlink(p);
        free(p);
        n++;
    }
    if (d)
        closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        strcpy(dir, "/tmp/fk-fuzz-stream.XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    data++, size--;
    struct fk_stream_reader r;
    fk_stream_reader_init(&r, dir);
    r.max_file = r.max_total = 1 << 20;
    for (size_t off = 0; off < size; off += chunk)
        fk_stream_reader_feed(&r, data + off, size - off < chunk ? size - off : chunk);
    bool ok = fk_stream_reader_finish(&r, "fuzz");
    if (ok && (r.state != FK_STREAM_ENDED || r.status != 0))
        abort();
    fk_stream_reader_free(&r);
    check_and_clear(ok);
    return 0;
}
