/* SPDX-License-Identifier: GPL-2.0-only */
#include "lineread.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK (1u << 18)

static void fail(struct fk_lineread *r, const char *fmt, ...) FK_PRINTF(2, 3);
static void fail(struct fk_lineread *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}

bool fk_lineread_open(struct fk_lineread *r, const char *path)
{
    memset(r, 0, sizeof *r);
    int fd;
    if (!path || !strcmp(path, "-")) {
        r->name = "<stdin>";
        fd = dup(STDIN_FILENO);
    } else {
        r->name = path;
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
        fail(r, "cannot open %s: %s", r->name, strerror(errno));
        return false;
    }
    struct stat sb;
    off_t at = S_ISREG(fstat(fd, &sb) == 0 ? sb.st_mode : 0) ? lseek(fd, 0, SEEK_CUR) : -1;
    if (at >= 0 && at <= sb.st_size)
        r->left = (uint64_t)(sb.st_size - at);
    /* zlib reads plain data through unchanged, so one path serves both. */
    r->gz = gzdopen(fd, "rb");
    if (!r->gz) {
        close(fd);
        fail(r, "cannot read %s: out of memory", r->name);
        return false;
    }
    /* zlib reads plain input straight into our buffer only when a read asks
     * for at least twice its own buffer size; otherwise it copies. */
    gzbuffer(r->gz, CHUNK / 4);
    r->cap = CHUNK;
    r->buf = fk_malloc(r->cap + 1);
    return true;
}

/* Read more input after the unconsumed part; false at EOF/error. */
static bool fill(struct fk_lineread *r)
{
    if (r->eof)
        return false;
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap) {
        r->cap *= 2;
        r->buf = fk_realloc(r->buf, r->cap + 1);
    }
    size_t want = r->cap - r->end;
    if (want > (1u << 30))
        want = 1u << 30;
    int n = gzread(r->gz, r->buf + r->end, (unsigned)want);
    if (n < 0) {
        int zerr;
        const char *msg = gzerror(r->gz, &zerr);
        fail(r, "cannot read %s: %s", r->name, zerr == Z_ERRNO ? strerror(errno) : msg);
        r->eof = true;
        return false;
    }
    if (n == 0) {
        int zerr;
        gzerror(r->gz, &zerr);
        if (zerr != Z_OK && zerr != Z_BUF_ERROR)
            fail(r, "cannot read %s: corrupt gzip data", r->name);
        else if (zerr == Z_BUF_ERROR)
            fail(r, "cannot read %s: gzip data is truncated", r->name);
        r->eof = true;
        return false;
    }
    r->end += (size_t)n;
    return true;
}

char *fk_lineread_next(struct fk_lineread *r, size_t *len)
{
    size_t scanned = r->start;
    for (;;) {
        char *nl = memchr(r->buf + scanned, '\n', r->end - scanned);
        if (nl) {
            char *line = r->buf + r->start;
            size_t n = (size_t)(nl - line);
            r->start += n + 1;
            if (n && line[n - 1] == '\r')
                n--;
            line[n] = '\0';
            *len = n;
            r->lineno++;
            return line;
        }
        size_t off = r->end - r->start;
        if (!fill(r)) {
            if (r->error[0] || r->end == r->start)
                return NULL;
            /* Last line without a newline. */
            char *line = r->buf + r->start;
            size_t n = r->end - r->start;
            r->start = r->end;
            if (n && line[n - 1] == '\r')
                n--;
            line[n] = '\0';
            *len = n;
            r->lineno++;
            return line;
        }
        scanned = r->start + off;
    }
}

const char *fk_lineread_peek(struct fk_lineread *r, size_t want, size_t *avail, bool *eof)
{
    while (r->end - r->start < want && fill(r))
        ;
    if (r->error[0])
        return NULL;
    *avail = r->end - r->start;
    *eof = r->eof;
    return r->buf + r->start;
}

char *fk_lineread_slurp(struct fk_lineread *r, size_t max, size_t *len)
{
    while (r->end - r->start <= max && fill(r))
        ;
    if (r->error[0])
        return NULL;
    size_t n = r->end - r->start;
    if (n > max) {
        fail(r, "%s: input larger than %zu MB", r->name, max >> 20);
        return NULL;
    }
    char *data = r->buf;
    if (r->start)
        memmove(data, data + r->start, n);
    r->buf = NULL;
    r->cap = r->start = r->end = 0;
    r->eof = true;
    *len = n;
    return data;
}

uint64_t fk_lineread_plain_size(struct fk_lineread *r)
{
    return r->gz && gzdirect(r->gz) ? r->left : 0;
}

void fk_lineread_close(struct fk_lineread *r)
{
    if (r->gz)
        gzclose(r->gz);
    free(r->buf);
    r->gz = NULL;
    r->buf = NULL;
    r->cap = r->start = r->end = 0;
    r->eof = true;
}
