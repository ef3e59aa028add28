/* SPDX-License-Identifier: GPL-2.0-only */
/* Atomic output files (outfile.h): temporary + rename, and the rules for
 * what may stand at the final path and in an output directory. */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

static void release(struct fk_outfile *o)
{
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    o->fp = NULL;
    o->gz = NULL;
    o->fd = -1;
}

/* The null device: written in place (-o /dev/null), never renamed over. */
static bool is_null_device(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

/* What may stand at the final path: nothing, a regular file or a symlink
 * (replaced by the rename, never followed). A FIFO, socket or device is
 * refused: writing to it would feed whoever planted it, and a rename over
 * it would replace a device node. Otherwise false, with one line in err. */
static bool final_path_ok(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return true;
        snprintf(err, errlen, "cannot check %s: %s; choose another output path", path,
                 strerror(errno));
        return false;
    }
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
        return true;
    const char *what = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
    snprintf(err, errlen, "refusing to write %s: it is %s, not a regular file; remove it or "
             "choose another output path", path, what);
    return false;
}

/* "PATH.tmp.PID.RANDOM", created exclusively (O_EXCL never follows a
 * symlink planted at that name; a taken name just draws again). */
static int create_tmp(struct fk_outfile *o, const char *path, int mode)
{
    for (int i = 0; i < 16; i++) {
        unsigned r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r = (unsigned)fk_now_ns() ^ (unsigned)i * 2654435761u;
        o->tmp = fk_asprintf("%s.tmp.%ld.%08x", path, (long)getpid(), r);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0)
            return fd;
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        errno = e;
        if (e != EEXIST)
            break;
    }
    return -1;
}

/* Output into a pipe ("flamekit collapse | flamekit svg"): a 1 MB pipe
 * instead of the default 64 KB, so a large output is written in a few
 * wake-ups of the reader, not hundreds (12 MB of folded stacks: ~10 ms of
 * this process's CPU on the default pipe). Best effort: a pipe already as
 * large, or a limit (fs.pipe-max-size, the user's pipe pages) keeps it. */
static void widen_pipe(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
        return;
    int sz = fcntl(fd, F_GETPIPE_SZ);
    if (sz >= 0 && sz < (1 << 20))
        (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
}

static bool open_common(struct fk_outfile *o, const char *path, int mode, bool gz, char *err,
                        size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->path = fk_strdup(path);
    o->gzip = gz;
    struct stat st;
    if (!strcmp(path, "-")) {
        o->fd = dup(STDOUT_FILENO);
        if (o->fd < 0) {
            snprintf(err, errlen, "cannot duplicate stdout: %s", strerror(errno));
            release(o);
            return false;
        }
        widen_pipe(o->fd);
    } else if (lstat(path, &st) == 0 && is_null_device(&st)) {
        o->fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (o->fd < 0 || fstat(o->fd, &st) != 0 || !is_null_device(&st)) {
            snprintf(err, errlen, "cannot open %s: %s", path,
                     o->fd < 0 ? strerror(errno) : "it changed");
            if (o->fd >= 0)
                close(o->fd);
            release(o);
            return false;
        }
    } else {
        if (!final_path_ok(path, err, errlen)) {
            release(o);
            return false;
        }
        o->fd = create_tmp(o, path, mode);
        if (o->fd < 0) {
            snprintf(err, errlen, "cannot create %s: %s; choose a writable output location",
                     path, strerror(errno));
            release(o);
            return false;
        }
    }
    if (gz) {
        o->gz = gzdopen(o->fd, "wb6");
        if (!o->gz) {
            snprintf(err, errlen, "cannot start gzip stream for %s", path);
            fk_outfile_abort(o);
            return false;
        }
    } else {
        o->fp = fdopen(o->fd, "w");
        if (!o->fp) {
            snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
            fk_outfile_abort(o);
            return false;
        }
        setvbuf(o->fp, NULL, _IOFBF, 1 << 16);
    }
    return true;
}

bool fk_outfile_open(struct fk_outfile *o, const char *path, int mode, char *err, size_t errlen)
{
    return open_common(o, path, mode, false, err, errlen);
}

bool fk_outfile_open_gz(struct fk_outfile *o, const char *path, int mode, char *err,
                        size_t errlen)
{
    return open_common(o, path, mode, true, err, errlen);
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
        va_start(ap, fmt);
        char *s = fk_vasprintf(fmt, ap);
        va_end(ap);
        bool ok = fk_outfile_write(o, s, strlen(s));
        free(s);
        return ok;
    }
    va_start(ap, fmt);
    int n = o->fp ? vfprintf(o->fp, fmt, ap) : -1;
    va_end(ap);
    return n >= 0;
}

bool fk_outfile_place(const char *tmp, const char *path, char *err, size_t errlen)
{
    /* Checked again: something may have been planted since the open. */
    if (!final_path_ok(path, err, errlen))
        return false;
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename into %s: %s; nothing was written there", path,
                 strerror(errno));
        return false;
    }
    return true;
}

bool fk_outfile_commit(struct fk_outfile *o, char *err, size_t errlen)
{
    const char *what = NULL;
    int e = 0;
    if (o->gz) {
        /* gzclose closes the fd; fsync first. */
        if (gzflush(o->gz, Z_FINISH) != Z_OK)
            what = "write", e = errno ? errno : EIO;
        if (!what && o->tmp && fsync(o->fd) != 0)
            what = "fsync", e = errno;
        if (gzclose(o->gz) != Z_OK && !what)
            what = "close", e = errno ? errno : EIO;
    } else if (o->fp) {
        if (fflush(o->fp) != 0 || ferror(o->fp))
            what = "write", e = errno ? errno : EIO;
        if (!what && o->tmp && fsync(o->fd) != 0)
            what = "fsync", e = errno;
        if (fclose(o->fp) != 0 && !what)
            what = "close", e = errno;
    } else {
        what = "write", e = EBADF;
    }
    o->fp = NULL;
    o->gz = NULL;
    if (!what && o->tmp && !fk_outfile_place(o->tmp, o->path, err, errlen)) {
        unlink(o->tmp);
        release(o);
        return false;
    }
    if (what) {
        snprintf(err, errlen, "cannot %s %s: %s; nothing was written there", what, o->path,
                 strerror(e));
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

bool fk_outdir_check(const char *dir, bool own, char *err, size_t errlen)
{
    struct stat st, lst;
    if (stat(dir, &st) != 0 || lstat(dir, &lst) != 0) {
        snprintf(err, errlen, "cannot use output directory %s: %s; create it or choose another "
                 "with -o", dir, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "output directory %s is not a directory; choose another with -o", dir);
        return false;
    }
    uid_t me = geteuid();
    if (own && (st.st_uid != me || (S_ISLNK(lst.st_mode) && lst.st_uid != me && lst.st_uid != 0))) {
        snprintf(err, errlen, "refusing output directory %s: it is owned by uid %u, not by uid %u "
                 "running flamekit; choose a directory you own with -o", dir,
                 (unsigned)(st.st_uid != me ? st.st_uid : lst.st_uid), (unsigned)me);
        return false;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
        snprintf(err, errlen, "refusing output directory %s: it is group or world writable "
                 "without the sticky bit (mode %04o); chmod go-w it or choose another with -o", dir,
                 (unsigned)(st.st_mode & 07777));
        return false;
    }
    return true;
}
