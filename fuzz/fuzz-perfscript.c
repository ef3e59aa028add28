/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: perf-script text parser. The first byte picks options.
 * The text is parsed line by line, and again through the reader
 * (fk_perfscript_read_lines, which checks predicted frame lines in its
 * buffer): both must give the same bytes. */
#include "fuzz.h"
#include "stacks/folded.h"
#include "stacks/perfscript.h"
#include "util/buf.h"
#include "util/lineread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* One line as fk_lineread gives it: a CR before the newline dropped. */
static void one_line(void *ctx, char *line, size_t len, uint64_t lineno)
{
    if (len && line[len - 1] == '\r')
        line[--len] = 0;
    fk_perfscript_line(ctx, line, len, lineno);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fk_perfscript_opts o = { 0 };
    if (size) {
        uint8_t f = data[0];
        o.pid = f & 1;
        o.tid = f & 2;
        o.kernel = o.jit = f & 4;
        o.tag_inlined = f & 8;
        o.offsets = (f & 40) == 40;
        o.no_inline = f & 16;
        o.addrs = f & 32;
        o.period = f & 64;
        o.event = (f & 128) ? "cpu-clock" : NULL;
        data++;
        size--;
    }
    struct fk_stacktab t;
    struct fk_parse_stats st = { 0 };
    struct fk_perfscript p;
    fk_stacktab_init(&t);
    fk_perfscript_init(&p, &o, &t, &st);
    fuzz_each_line(data, size, one_line, &p);
    fk_perfscript_finish(&p);
    /* every key must be a sane folded stack */
    uint64_t sum = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct fk_stack *e = &t.v[i];
        if (e->len == 0 || memchr(e->key, '\n', e->len) || strlen(e->key) != e->len)
            abort();
        sum += e->count;
    }
    if (!o.period && sum != p.samples)
        abort();
    /* the sorted output written from name ids is the table's, sorted */
    struct fk_buf w = FK_BUF_INIT, f = FK_BUF_INIT;
    if (!fk_perfscript_write(&p, fuzz_buf_sink, &w))
        abort();
    struct fk_stack **sorted = fk_stacktab_sorted(&t);
    for (size_t i = 0; i < t.n; i++) {
        fk_buf_add(&f, sorted[i]->key, sorted[i]->len);     /* no escapes in folded text */
        fk_buf_printf(&f, " %llu\n", (unsigned long long)sorted[i]->count);
    }
    free(sorted);
    if (w.len != f.len || (w.len && memcmp(w.data, f.data, w.len)))
        abort();
    /* the same text through the reader (not gzip data: the reader inflates it) */
    int fd = size >= 2 && data[0] == 0x1f && data[1] == 0x8b ? -1 : memfd_create("fuzz", 0);
    if (fd >= 0) {
        if (write(fd, data, size) != (ssize_t)size)
            abort();
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        struct fk_lineread r;
        struct fk_parse_stats st2 = { 0 };
        struct fk_perfscript p2;
        fk_perfscript_init(&p2, &o, NULL, &st2);
        if (!fk_lineread_open(&r, path))
            abort();
        if (!fk_perfscript_read_lines(&p2, &r))
            abort();
        fk_lineread_close(&r);
        close(fd);
        struct fk_buf w2 = FK_BUF_INIT;
        if (!fk_perfscript_write(&p2, fuzz_buf_sink, &w2))
            abort();
        if (w2.len != w.len || (w.len && memcmp(w.data, w2.data, w.len)) ||
            p2.samples != p.samples || st2.lines != st.lines || st2.bad != st.bad ||
            st2.first_bad_lineno != st.first_bad_lineno)
            abort();
        fk_buf_free(&w2);
        fk_perfscript_free(&p2);
        fk_parse_stats_free(&st2);
    }
    fk_buf_free(&w);
    fk_buf_free(&f);
    fk_perfscript_free(&p);
    fk_parse_stats_free(&st);
    fk_stacktab_free(&t);
    return 0;
}
