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
    uint64_t left;      /* a regular file's bytes after the offset it was opened at, else 0 */
    const char *name;   /* for messages */
    char error[512];    /* "" or why reading failed: one line naming the input */
};

/* false, with why in r->error, if the file cannot be opened (r is then
 * closed). */
bool fk_lineread_open(struct fk_lineread *r, const char *path);
/* Next line without its '\n' (and without a trailing '\r'); *len gets its
 * length. The returned memory is writable and valid until the next call.
 * Returns NULL at end of input or on error (r->error[0] set). A last line
 * without a newline is returned as usual. */
char *fk_lineread_next(struct fk_lineread *r, size_t *len);
/* Consume `lines` lines of n bytes in all, newlines included, seen with
 * fk_lineread_peek: for a caller that can tell lines' lengths without
 * scanning them. */
static inline void fk_lineread_skip(struct fk_lineread *r, size_t n, uint64_t lines)
{
    r->start += n;
    r->lineno += lines;
}
/* The input's size in bytes when it is known before it is read: a
 * regular file (or stdin redirected from one) that is not compressed;
 * 0 otherwise. Call after a first peek (zlib has then looked for a gzip
 * header). */
uint64_t fk_lineread_plain_size(struct fk_lineread *r);
/* Release the input and the buffer; name and error stay for a message. */
void fk_lineread_close(struct fk_lineread *r);
/* Look at the next bytes without consuming them: reads until at least want
 * bytes are buffered or the input ends (*eof set then). *avail gets how many
 * are there. NULL on a read error (r->error). */
const char *fk_lineread_peek(struct fk_lineread *r, size_t want, size_t *avail, bool *eof);
/* The rest of the input in one buffer (the caller frees it; *len its size);
 * more than max bytes is an error "NAME: input larger than N MB". NULL on
 * error (r->error). The reader is then at its end. */
char *fk_lineread_slurp(struct fk_lineread *r, size_t max, size_t *len);

#endif
