/* SPDX-License-Identifier: GPL-2.0-only */
/* Line input from a file or stdin ("-"), gzip detected by magic and read
 * transparently. Lines have no length limit; memory is one buffer. */
#ifndef FK_LINEREAD_H
#define FK_LINEREAD_H

#include "fk.h"

struct fk_lineread {
    void *gz;           /* gzFile */
    char *buf;
    size_t cap, start, end;
    bool eof;
    uint64_t lineno;    /* 1-based number of the line last returned */
    const char *name;   /* for messages */
    bool error;
};

/* false + one-line error if the file cannot be opened. */
bool fk_lineread_open(struct fk_lineread *r, const char *path);
/* Next line without its '\n' (and without a trailing '\r'); *len gets its
 * length. The returned memory is writable and valid until the next call.
 * Returns NULL at end of input or on error (check r->error). A last line
 * without a newline is returned as usual. */
char *fk_lineread_next(struct fk_lineread *r, size_t *len);
/* The input already read and not yet returned (it may end inside a line),
 * for a caller that can tell a line's length without scanning it; then
 * fk_lineread_skip(r, n) consumes one line of n bytes, newline included. */
static inline const char *fk_lineread_peek(const struct fk_lineread *r, size_t *len)
{
    *len = r->end - r->start;
    return r->buf + r->start;
}
static inline void fk_lineread_skip(struct fk_lineread *r, size_t n)
{
    r->start += n;
    r->lineno++;
}
void fk_lineread_close(struct fk_lineread *r);

#endif
