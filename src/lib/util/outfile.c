/* SPDX-License-Identifier: GPL-2.0-only */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static bool is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool open_common(struct fk_outfile *o, const char *path, int mode, bool gz)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->path = fk_strdup(path);
    o->gzip = gz;
    if (!strcmp(path, "-")) {
        o->fd = dup(STDOUT_FILENO);
        if (o->fd < 0) {
            fk_error("cannot duplicate stdout: %s", strerror(errno));
            return false;
        }
    } else if (stat(path, &(struct stat){ 0 }) == 0 && !is_regular(path)) {
        /* A device or FIFO (-o /dev/null): write to it; renaming a
         * temporary over it would replace the device with a file. */
        o->fd = open(path, O_WRONLY | O_CLOEXEC);
        if (o->fd < 0) {
            fk_error("cannot open %s: %s", path, strerror(errno));
            return false;
        }
    } else {
        o->tmp = fk_asprintf("%s.tmp.%ld", path, (long)getpid());
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (o->fd < 0) {
            fk_error("cannot create %s: %s; choose a writable output location",
                     path, strerror(errno));
            free(o->tmp);
            o->tmp = NULL;
            return false;
        }
    }
    if (gz) {
        o->gz = gzdopen(o->fd, "wb6");
        if (!o->gz) {
            fk_error("cannot start gzip stream for %s", path);
            fk_outfile_abort(o);
            return false;
        }
    } else {
        o->fp = fdopen(o->fd, "w");
        if (!o->fp) {
            fk_error("cannot open %s: %s", path, strerror(errno));
            fk_outfile_abort(o);
            return false;
        }
        setvbuf(o->fp, NULL, _IOFBF, 1 << 16);
    }
    return true;
}

bool fk_outfile_open(struct fk_outfile *o, const char *path, int mode)
{
    return open_common(o, path, mode, false);
}

bool fk_outfile_open_gz(struct fk_outfile *o, const char *path, int mode)
{
    return open_common(o, path, mode, true);
}

bool fk_outfile_write(struct fk_outfile *o, const void *data, size_t len)
{
    if (o->gz) {
        const char *p = data;
        while (len) {
            unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
            if (gzwrite(o->gz, p, chunk) != (int)chunk)
                return false;
            p += chunk;
            len -= chunk;
        }
        return true;
    }
    return o->fp && fwrite(data, 1, len, o->fp) == len;
}

bool fk_outfile_printf(struct fk_outfile *o, const char *fmt, ...)
{
    va_list ap;
    if (o->gz) {
        char *s;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
            return false;
        bool ok = fk_outfile_write(o, s, (size_t)n);
        free(s);
        return ok;
    }
    va_start(ap, fmt);
    int n = o->fp ? vfprintf(o->fp, fmt, ap) : -1;
    va_end(ap);
    return n >= 0;
}

static void release(struct fk_outfile *o)
{
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    o->fp = NULL;
    o->gz = NULL;
    o->fd = -1;
}

bool fk_outfile_commit(struct fk_outfile *o)
{
    const char *what = NULL;
    int err = 0;
    if (o->gz) {
        /* gzclose closes the fd; fsync first. */
        if (gzflush(o->gz, Z_FINISH) != Z_OK)
            what = "write", err = errno ? errno : EIO;
        if (!what && o->tmp && fsync(o->fd) != 0)
            what = "fsync", err = errno;
        if (gzclose(o->gz) != Z_OK && !what)
            what = "close", err = errno ? errno : EIO;
    } else if (o->fp) {
        if (fflush(o->fp) != 0 || ferror(o->fp))
            what = "write", err = errno ? errno : EIO;
        if (!what && o->tmp && fsync(o->fd) != 0)
            what = "fsync", err = errno;
        if (fclose(o->fp) != 0 && !what)
            what = "close", err = errno;
    } else {
        what = "write", err = EBADF;
    }
    o->fp = NULL;
    o->gz = NULL;
    if (!what && o->tmp && rename(o->tmp, o->path) != 0)
        what = "rename", err = errno;
    if (what) {
        fk_error("cannot %s %s: %s; nothing was written there", what, o->path, strerror(err));
        if (o->tmp)
            unlink(o->tmp);
        release(o);
        return false;
    }
    release(o);
    return true;
}

void fk_outfile_abort(struct fk_outfile *o)
{
    if (!o->path)
        return;
    if (o->gz)
        gzclose(o->gz);
    else if (o->fp)
        fclose(o->fp);
    else if (o->fd >= 0)
        close(o->fd);
    if (o->tmp)
        unlink(o->tmp);
    release(o);
}
