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
#include "util/outfile.h"
#include "util/result.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The writer's first error: later ones follow from it. */
static bool fail(struct fk_stream_writer *w, const char *fmt, ...) FK_PRINTF(2, 3);
static bool fail(struct fk_stream_writer *w, const char *fmt, ...)
{
    if (!w->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->error, sizeof w->error, fmt, ap);
        va_end(ap);
    }
    w->failed = true;
    return false;
}

static bool write_all(struct fk_stream_writer *w, const void *data, size_t len)
{
    if (!w->failed && !fk_write_full(w->fd, data, len))
        fail(w, "cannot write result stream: %s", errno ? strerror(errno) : "short write");
    return !w->failed;
}

bool fk_stream_begin(struct fk_stream_writer *w, int fd)
{
    w->fd = fd;
    w->failed = false;
    w->error[0] = 0;
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
    if (nlen > 0xffff || strchr(name, '/'))
        return fail(w, "bad stream file name '%s'", name);
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
        fail(w, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
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
            ok = fail(w, "cannot read %s: %s", path, n < 0 ? strerror(errno) : "file shrank");
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

/* ---- Reader side ------------------------------------------------------ */

#include <stdio.h>

enum { PH_MAGIC, PH_HEAD, PH_NAME, PH_DATA, PH_CRC, PH_DONE, PH_BROKEN };

static mode_t file_mode(void)
{
    mode_t m = umask(0);
    umask(m);
    return 0666 & ~m;
}

void fk_stream_reader_init(struct fk_stream_reader *r, const char *dir)
{
    memset(r, 0, sizeof *r);
    r->dir = fk_strdup(dir);
    r->max_file = FK_STREAM_MAX_FILE_DEFAULT;
    r->max_total = FK_STREAM_MAX_FILE_DEFAULT;
    r->state = FK_STREAM_RUNNING;
    r->phase = PH_MAGIC;
    r->status = -1;
    r->fd = -1;
}

static enum fk_stream_state broken(struct fk_stream_reader *r, const char *fmt, ...)
    FK_PRINTF(2, 3);
static enum fk_stream_state broken(struct fk_stream_reader *r, const char *fmt, ...)
{
    if (r->state != FK_STREAM_BROKEN) {
        va_list ap;
        va_start(ap, fmt);
        free(r->error);
        r->error = fk_vasprintf(fmt, ap);
        va_end(ap);
    }
    r->state = FK_STREAM_BROKEN;
    r->phase = PH_BROKEN;
    if (r->fd >= 0) {
        close(r->fd);
        r->fd = -1;
    }
    return r->state;
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

/* File names come from the remote side: only the names a capture writes
 * (the result contract), so nothing else (a Makefile, a .bashrc) can be
 * planted in the output directory. */
static const char *bad_name(const struct fk_stream_reader *r, const char *name, size_t len)
{
    if (len == 0)
        return "empty file name";
    if (strlen(name) != len || !fk_result_file_name_ok(name))
        return "not a flamekit result file name";
    for (size_t i = 0; i < r->nfiles; i++)
        if (!strcmp(r->files[i].name, name))
            return "file sent twice";
    return NULL;
}

static enum fk_stream_state start_record(struct fk_stream_reader *r)
{
    r->name[r->name_len] = '\0';
    if (r->type == 'E') {
        if (r->name_len)
            return broken(r, "end record has a name");
        if (r->data_len > FK_STREAM_MAX_MESSAGE)
            return broken(r, "end record of %llu bytes is larger than %u",
                          (unsigned long long)r->data_len, FK_STREAM_MAX_MESSAGE);
        r->msg_buf = fk_malloc((size_t)r->data_len + 1);
        return r->state;
    }
    const char *why = bad_name(r, r->name, r->name_len);
    if (why)
        return broken(r, "%s: '%.80s'", why, r->name);
    if (r->nfiles == FK_STREAM_MAX_FILES)
        return broken(r, "more than %d files in the stream", FK_STREAM_MAX_FILES);
    if (r->data_len > r->max_file || r->data_len > r->max_total - r->total_bytes)
        return broken(r, "file %s of %llu bytes exceeds the size limit", r->name,
                      (unsigned long long)r->data_len);
    struct fk_stream_file_rec *f = &r->files[r->nfiles];
    f->name = fk_strdup(r->name);
    f->size = r->data_len;
    f->tmp = fk_asprintf("%s/.%.200s.fkpart.XXXXXX", r->dir, r->name);
    r->nfiles++;
    r->fd = mkostemp(f->tmp, O_CLOEXEC);
    if (r->fd < 0) {
        int e = errno;
        free(f->tmp);
        f->tmp = NULL;
        return broken(r, "cannot create a file in %s: %s; choose a writable directory with -o",
                      r->dir, strerror(e));
    }
    return r->state;
}

static enum fk_stream_state end_record_data(struct fk_stream_reader *r)
{
    char *m = r->msg_buf;
    m[r->data_len] = '\0';
    if (memchr(m, '\0', (size_t)r->data_len))
        return broken(r, "end record contains a NUL byte");
    char *nl = strchr(m, '\n');
    if (!nl)
        return broken(r, "end record has no status line");
    *nl = '\0';
    char *end;
    errno = 0;
    long st = strtol(m, &end, 10);
    if (end == m || *end || errno || st < -255 || st > 255)
        return broken(r, "end record has a bad status '%.20s'", m);
    r->status = (int)st;
    r->message = fk_strdup(nl + 1);
    free(r->msg_buf);
    r->msg_buf = NULL;
    return r->state;
}

static enum fk_stream_state write_data(struct fk_stream_reader *r, const unsigned char *p,
                                       size_t n)
{
    r->crc = crc32(r->crc, p, (uInt)n);
    if (r->type == 'E') {
        memcpy(r->msg_buf + (r->data_len - r->data_left), p, n);
        return r->state;
    }
    r->total_bytes += n;
    while (n) {
        ssize_t w = write(r->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return broken(r, "cannot write %s: %s", r->files[r->nfiles - 1].tmp,
                          w < 0 ? strerror(errno) : "short write");
        p += w;
        n -= (size_t)w;
    }
    return r->state;
}

static enum fk_stream_state end_of_record(struct fk_stream_reader *r)
{
    uint32_t want = (uint32_t)get_be(r->crc_buf, 4);
    if (want != (uint32_t)r->crc)
        return broken(r, "checksum mismatch in %s record '%s' (corrupted stream)",
                      r->type == 'E' ? "end" : "file", r->name);
    if (r->type == 'E') {
        r->phase = PH_DONE;
        r->state = FK_STREAM_ENDED;
        return end_record_data(r);
    }
    if (fsync(r->fd) != 0 || close(r->fd) != 0) {
        r->fd = -1;
        return broken(r, "cannot write %s: %s", r->files[r->nfiles - 1].tmp, strerror(errno));
    }
    r->fd = -1;
    r->phase = PH_HEAD;
    r->have = 0;
    return r->state;
}

enum fk_stream_state fk_stream_reader_feed(struct fk_stream_reader *r, const void *data,
                                           size_t len)
{
    const unsigned char *p = data;
    r->stream_bytes += len;
    while (len && r->state == FK_STREAM_RUNNING) {
        size_t need, take;
        switch (r->phase) {
        case PH_MAGIC:
            need = 4 - r->have;
            take = len < need ? len : need;
            memcpy(r->hdr + r->have, p, take);
            r->have += take, p += take, len -= take;
            if (r->have == 4) {
                if (memcmp(r->hdr, "FKS1", 4))
                    return broken(r, "not a flamekit result stream (bad magic); is the "
                                     "remote flamekit too old or printing to stdout?");
                r->phase = PH_HEAD;
                r->have = 0;
            }
            break;
        case PH_HEAD:
            need = sizeof r->hdr - r->have;
            take = len < need ? len : need;
            memcpy(r->hdr + r->have, p, take);
            r->have += take, p += take, len -= take;
            if (r->have == sizeof r->hdr) {
                r->type = (char)r->hdr[0];
                if (r->type != 'F' && r->type != 'E')
                    return broken(r, "unknown record type 0x%02x (corrupted stream)",
                                  r->hdr[0]);
                r->name_len = (size_t)get_be(r->hdr + 1, 2);
                r->data_len = r->data_left = get_be(r->hdr + 3, 8);
                if (r->name_len > FK_STREAM_MAX_NAME)
                    return broken(r, "file name of %zu bytes is too long", r->name_len);
                r->crc = crc32(0L, Z_NULL, 0);
                r->crc = crc32(r->crc, r->hdr, sizeof r->hdr);
                r->phase = PH_NAME;
                r->have = 0;
                if (r->name_len == 0 && start_record(r) != FK_STREAM_RUNNING)
                    return r->state;
                if (r->name_len == 0)
                    r->phase = r->data_len ? PH_DATA : PH_CRC;
            }
            break;
        case PH_NAME:
            need = r->name_len - r->have;
            take = len < need ? len : need;
            memcpy(r->name + r->have, p, take);
            r->crc = crc32(r->crc, p, (uInt)take);
            r->have += take, p += take, len -= take;
            if (r->have == r->name_len) {
                if (start_record(r) != FK_STREAM_RUNNING)
                    return r->state;
                r->phase = r->data_len ? PH_DATA : PH_CRC;
                r->have = 0;
            }
            break;
        case PH_DATA:
            take = len < r->data_left ? len : (size_t)r->data_left;
            if (take > (1u << 30))
                take = 1u << 30;
            if (write_data(r, p, take) != FK_STREAM_RUNNING)
                return r->state;
            r->data_left -= take, p += take, len -= take;
            if (!r->data_left) {
                r->phase = PH_CRC;
                r->have = 0;
            }
            break;
        case PH_CRC:
            need = 4 - r->have;
            take = len < need ? len : need;
            memcpy(r->crc_buf + r->have, p, take);
            r->have += take, p += take, len -= take;
            if (r->have == 4 && end_of_record(r) != FK_STREAM_RUNNING && r->state == FK_STREAM_BROKEN)
                return r->state;
            break;
        default:
            return broken(r, "internal: bad reader phase");
        }
    }
    if (len && r->state == FK_STREAM_ENDED)
        return broken(r, "%zu unexpected bytes after the end record", len);
    return r->state;
}

static void remove_temps(struct fk_stream_reader *r)
{
    if (r->fd >= 0) {
        close(r->fd);
        r->fd = -1;
    }
    for (size_t i = 0; i < r->nfiles; i++) {
        if (r->files[i].tmp) {
            unlink(r->files[i].tmp);
            free(r->files[i].tmp);
            r->files[i].tmp = NULL;
        }
    }
}

static const char *cut_where(const struct fk_stream_reader *r)
{
    switch (r->phase) {
    case PH_MAGIC: return r->have ? "in the stream header" : "before any data";
    case PH_DATA: return "in the middle of a file";
    default: return "between records";
    }
}

bool fk_stream_reader_finish(struct fk_stream_reader *r, const char *prefix)
{
    if (r->state == FK_STREAM_RUNNING) {
        if (r->phase == PH_MAGIC && r->have == 0)
            broken(r, "no result received (the remote command sent nothing)");
        else if (r->phase == PH_DATA && r->nfiles)
            broken(r, "stream cut %s (%s: %llu of %llu bytes); no file was written",
                   cut_where(r), r->files[r->nfiles - 1].name,
                   (unsigned long long)(r->data_len - r->data_left),
                   (unsigned long long)r->data_len);
        else
            broken(r, "stream cut %s after %llu bytes; no file was written", cut_where(r),
                   (unsigned long long)r->stream_bytes);
    }
    if (r->state != FK_STREAM_ENDED || r->status != 0) {
        remove_temps(r);
        return false;
    }
    /* All final names must be free; else give this host's files a prefix. */
    const char *pre = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        bool clash = false;
        for (size_t i = 0; i < r->nfiles && !clash; i++) {
            char *path = fk_asprintf("%s/%s%s%s", r->dir, pre, *pre ? "." : "", r->files[i].name);
            clash = access(path, F_OK) == 0 || errno != ENOENT;
            free(path);
        }
        if (!clash)
            break;
        if (attempt == 1 || !prefix) {
            broken(r, "a file named %s%s%s already exists in %s; remove it or choose "
                      "another directory with -o", pre, *pre ? "." : "", r->files[0].name, r->dir);
            remove_temps(r);
            return false;
        }
        pre = prefix;
    }
    mode_t mode = file_mode();
    char err[512];
    for (size_t i = 0; i < r->nfiles; i++) {
        struct fk_stream_file_rec *f = &r->files[i];
        f->path = fk_asprintf("%s/%s%s%s", r->dir, pre, *pre ? "." : "", f->name);
        bool ok = chmod(f->tmp, mode) == 0;
        if (!ok)
            broken(r, "cannot create %s: %s", f->path, strerror(errno));
        else if (!(ok = fk_outfile_place(f->tmp, f->path, err, sizeof err)))
            broken(r, "%s", err);
        if (!ok) {
            /* Undo what was committed: all files or none. */
            for (size_t j = 0; j < i; j++) {
                unlink(r->files[j].path);
                free(r->files[j].path);
                r->files[j].path = NULL;
            }
            free(f->path);
            f->path = NULL;
            remove_temps(r);
            return false;
        }
        free(f->tmp);
        f->tmp = NULL;
    }
    return true;
}

void fk_stream_reader_free(struct fk_stream_reader *r)
{
    remove_temps(r);
    for (size_t i = 0; i < r->nfiles; i++) {
        free(r->files[i].name);
        free(r->files[i].path);
    }
    free(r->dir);
    free(r->error);
    free(r->message);
    free(r->msg_buf);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}
