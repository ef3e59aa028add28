/* SPDX-License-Identifier: GPL-2.0-only */
/* Writer side of the result stream.
 *
 * Layout (all integers big-endian):
 *   "FKS1"                                  stream magic
 *   record*: type:u8 name_len:u16 data_len:u64 name data crc:u32
 *     type 'F' = a file (name = file name, no '/'), 'E' = end
 *     (data = "STATUS\n" + message); crc = CRC-32 of type..data.
 * A reader accepts the files only after a valid 'E' record: a cut stream
 * or a corrupted byte is always detected. */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static bool write_all(struct fk_stream_writer *w, const void *data, size_t len)
{
    const char *p = data;
    while (len && !w->failed) {
        ssize_t n = write(w->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fk_error("cannot write result stream: %s", n < 0 ? strerror(errno) : "short write");
            w->failed = true;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    return !w->failed;
}

bool fk_stream_begin(struct fk_stream_writer *w, int fd)
{
    w->fd = fd;
    w->failed = false;
    return write_all(w, "FKS1", 4);
}

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

/* Header, then the payload supplied by `more` in pieces, then the CRC. */
static bool record_head(struct fk_stream_writer *w, char type, const char *name,
                        uint64_t len, uLong *crc)
{
    size_t nlen = strlen(name);
    if (nlen > 0xffff || strchr(name, '/')) {
        fk_error("bad stream file name '%s'", name);
        w->failed = true;
        return false;
    }
    unsigned char h[11];
    h[0] = (unsigned char)type;
    put_be(h + 1, nlen, 2);
    put_be(h + 3, len, 8);
    *crc = crc32(0L, Z_NULL, 0);
    *crc = crc32(*crc, h, sizeof h);
    *crc = crc32(*crc, (const Bytef *)name, (uInt)nlen);
    return write_all(w, h, sizeof h) && write_all(w, name, nlen);
}

static bool record_body(struct fk_stream_writer *w, const void *data, size_t len, uLong *crc)
{
    const Bytef *p = data;
    size_t left = len;
    while (left) {
        uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
        *crc = crc32(*crc, p, chunk);
        p += chunk;
        left -= chunk;
    }
    return write_all(w, data, len);
}

static bool record_tail(struct fk_stream_writer *w, uLong crc)
{
    unsigned char c[4];
    put_be(c, crc, 4);
    return write_all(w, c, 4);
}

bool fk_stream_file(struct fk_stream_writer *w, const char *name, const void *data, size_t len)
{
    uLong crc;
    return record_head(w, 'F', name, len, &crc) && record_body(w, data, len, &crc) &&
           record_tail(w, crc);
}

bool fk_stream_file_path(struct fk_stream_writer *w, const char *name, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fk_error("cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        w->failed = true;
        return false;
    }
    uLong crc;
    bool ok = record_head(w, 'F', name, (uint64_t)st.st_size, &crc);
    char buf[1 << 16];
    uint64_t left = (uint64_t)st.st_size;
    while (ok && left) {
        ssize_t n = read(fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fk_error("cannot read %s: %s", path, n < 0 ? strerror(errno) : "file shrank");
            w->failed = true;
            ok = false;
            break;
        }
        ok = record_body(w, buf, (size_t)n, &crc);
        left -= (uint64_t)n;
    }
    close(fd);
    return ok && record_tail(w, crc);
}

bool fk_stream_end(struct fk_stream_writer *w, int status, const char *message)
{
    char *body = fk_asprintf("%d\n%s", status, message ? message : "");
    uLong crc;
    size_t len = strlen(body);
    bool ok = record_head(w, 'E', "", len, &crc) && record_body(w, body, len, &crc) &&
              record_tail(w, crc);
    free(body);
    return ok;
}
