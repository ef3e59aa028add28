/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: tracepoint format files (capture/tracefs.h), the
 * kernel's text that gives the raw records' layout for off-CPU profiles
 * (sched_switch's prev_pid and prev_state, the wakeup's pid, the state
 * letters' bits).
 *
 * Input: the text of a format file, passed as it is, without a NUL after
 * it (ASan sees any read past its end). Every field parsed must have a
 * NUL-terminated name that fk_tp_field finds again; state letters are 1 to
 * 3 characters; the counts stay within their arrays; fk_tp_get never reads
 * outside the raw record it is given, and succeeds only for 1, 2, 4 or 8
 * byte fields inside it. */
#include "fuzz.h"
#include "capture/tracefs.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    if (size)
        memcpy(text, data, size);
    struct fk_tp_format fmt;
    memset(&fmt, 0, sizeof fmt);
    bool ok = fk_tp_format_parse(text, size, &fmt);
    if (ok != (fmt.n > 0) || fmt.n > FK_TP_MAX_FIELDS ||
        fmt.nflags > sizeof fmt.flags / sizeof fmt.flags[0])
        abort();
    /* a raw record of exactly 64 bytes (a heap block: ASan guards its end) */
    unsigned char *raw = malloc(64);
    memset(raw, 0xa5, 64);
    for (unsigned i = 0; i < fmt.n; i++) {
        const struct fk_tp_field *f = &fmt.f[i];
        if (!memchr(f->name, 0, sizeof f->name) || !f->name[0])
            abort();
        const struct fk_tp_field *g = fk_tp_field(&fmt, f->name);
        if (!g || strcmp(g->name, f->name))
            abort();
        int64_t v;
        bool got = fk_tp_get(f, raw, 64, &v);
        bool fits = (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8) &&
                    (size_t)f->offset + f->size <= 64;
        if (got != fits)
            abort();
    }
    for (unsigned i = 0; i < fmt.nflags; i++) {
        const char *l = fmt.flags[i].letter;
        const char *nul = memchr(l, 0, sizeof fmt.flags[i].letter);
        if (!nul || nul == l)
            abort();
    }
    free(raw);
    free(text);
    return 0;
}
