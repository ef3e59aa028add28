/* SPDX-License-Identifier: GPL-2.0-only */
/* Safe opening of process-controlled files: see safeopen.h. */
#include "safeopen.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

bool fk_safe_open_walk_only;

#define MAX_LINKS 40    /* the kernel's own limit */
#define MAX_DEPTH 256

int fk_root_open(pid_t pid, bool *host)
{
    char p[64];
    if (pid > 0)
        snprintf(p, sizeof p, "/proc/%d/root", (int)pid);
    else
        snprintf(p, sizeof p, "/");
    int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (host) {
        struct stat a, b;
        *host = fstat(fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev &&
                a.st_ino == b.st_ino;
    }
    return fd;
}

static int fail(int err, const char **why, const char *reason)
{
    if (why)
        *why = reason ? reason : strerror(err);
    errno = err;
    return -1;
}

/* Resolve path below rootfd by hand, one component at a time, each opened
 * O_PATH|O_NOFOLLOW. Symlinks are read and spliced into the rest of the
 * path (absolute ones restart at the root); ".." pops our own stack, so
 * nothing (not even a directory moved meanwhile) leads above the root.
 * Returns an O_PATH fd of the last component. */
static int walk(int rootfd, const char *path, unsigned flags, const char **why)
{
    int stack[MAX_DEPTH];
    int depth = 0, links = 0, rc = -1, err = 0;
    const char *reason = NULL;
    char *work = fk_strdup(path), *p = work;
    stack[0] = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
    if (stack[0] < 0) {
        err = errno;
        goto out;
    }
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p) {                      /* ends at a directory */
            rc = stack[depth--];
            break;
        }
        char *comp = p, *next = strchr(p, '/');
        if (next)
            *next++ = '\0';
        else
            next = p + strlen(p);
        while (*next == '/')
            next++;
        bool last = !*next;
        if (!strcmp(comp, ".")) {
            p = next;
            continue;
        }
        if (!strcmp(comp, "..")) {
            if (depth > 0)
                close(stack[depth--]);
            p = next;
            continue;
        }
        int fd = openat(stack[depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            err = errno;
            if (fd >= 0)
                close(fd);
            goto out;
        }
        if (S_ISLNK(st.st_mode)) {
            if ((flags & FK_SAFE_NO_SYMLINKS) || (last && !(flags & FK_SAFE_FOLLOW))) {
                if (last && !(flags & FK_SAFE_NO_SYMLINKS)) {
                    rc = fd;            /* the caller refuses it, like openat2 would */
                    break;
                }
                close(fd);
                err = ELOOP;
                reason = "a symbolic link on the way";
                goto out;
            }
            char target[PATH_MAX];
            ssize_t n = readlinkat(fd, "", target, sizeof target - 1);
            close(fd);
            if (n <= 0 || ++links > MAX_LINKS) {
                err = n < 0 ? errno : ELOOP;
                goto out;
            }
            target[n] = '\0';
            char *spliced = fk_asprintf("%s/%s", target, next);
            free(work);
            work = p = spliced;
            if (target[0] == '/')
                while (depth > 0)
                    close(stack[depth--]);
            continue;
        }
        if (last) {
            rc = fd;
            break;
        }
        if (!S_ISDIR(st.st_mode) || depth + 1 >= MAX_DEPTH) {
            close(fd);
            err = S_ISDIR(st.st_mode) ? ENAMETOOLONG : ENOTDIR;
            goto out;
        }
        stack[++depth] = fd;
        p = next;
    }
out:
    while (depth >= 0)
        close(stack[depth--]);
    free(work);
    if (rc < 0)
        return fail(err ? err : ENOENT, why, reason);
    return rc;
}

/* The O_PATH fd of path inside rootfd: openat2 when the kernel has it. */
static int resolve(int rootfd, const char *path, unsigned flags, const char **why)
{
    static bool no_openat2;
    if (!no_openat2 && !fk_safe_open_walk_only) {
        struct open_how how;
        memset(&how, 0, sizeof how);
        how.flags = O_PATH | O_CLOEXEC | ((flags & FK_SAFE_FOLLOW) ? 0 : O_NOFOLLOW);
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
                      ((flags & FK_SAFE_NO_SYMLINKS) ? RESOLVE_NO_SYMLINKS : 0);
        long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        /* ENOSYS: kernel before 5.6; EPERM: a seccomp filter refuses it */
        if (errno != ENOSYS && errno != EPERM)
            return fail(errno, why, errno == ELOOP ? "a symbolic link on the way" : NULL);
        no_openat2 = true;
    }
    return walk(rootfd, path, flags, why);
}

/* Check the O_PATH fd and reopen it for reading; closes opath. */
static int check_and_reopen(int opath, const struct fk_safe_opts *o, struct stat *out,
                            const char **why)
{
    struct stat st;
    int err = 0;
    const char *reason = NULL;
    if (fstat(opath, &st) != 0)
        err = errno;
    else if (S_ISLNK(st.st_mode))
        err = ELOOP, reason = "a symbolic link";
    else if (!S_ISREG(st.st_mode))
        err = EPERM, reason = "not a regular file";
    else if (o->max_size && (uint64_t)st.st_size > o->max_size)
        err = EFBIG, reason = "larger than the size limit";
    else if (o->owners && st.st_uid != 0) {
        err = EPERM, reason = "not owned by the process's user or root";
        for (size_t i = 0; i < o->nowners; i++)
            if (o->owners[i] == st.st_uid)
                err = 0, reason = NULL;
    }
    int fd = -1;
    if (!err) {
        /* The O_PATH fd pins this very inode: reopening it through our own
         * fd table cannot land on anything else. */
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", opath);
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
            err = errno;
    }
    close(opath);
    if (err)
        return fail(err, why, reason);
    if (out)
        *out = st;
    return fd;
}

int fk_safe_openat(int rootfd, const char *path, const struct fk_safe_opts *o, struct stat *st,
                   const char **why)
{
    static const struct fk_safe_opts none;
    int opath = resolve(rootfd, path, (o ? o : &none)->flags, why);
    return opath < 0 ? -1 : check_and_reopen(opath, o ? o : &none, st, why);
}

int fk_safe_open_pinned(const char *procpath, const struct fk_safe_opts *o, struct stat *st,
                        const char **why)
{
    static const struct fk_safe_opts none;
    /* O_PATH: following this magic link opens nothing yet */
    int opath = open(procpath, O_PATH | O_CLOEXEC);
    if (opath < 0)
        return fail(errno, why, NULL);
    return check_and_reopen(opath, o ? o : &none, st, why);
}

size_t fk_proc_uids(pid_t pid, uid_t uids[2])
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    unsigned long long v[2];
    if (fk_proc_status_numbers(p, "Uid", v, 2) != 2)
        return 0;
    uids[0] = (uid_t)v[0];
    uids[1] = (uid_t)v[1];
    return 2;
}
