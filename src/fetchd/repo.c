/* SPDX-License-Identifier: GPL-2.0-only */
/* Repository names -> git directories under --repo-root, and ref state. */
#include "fetchd/fetchd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_gitdir(const char *d)
{
    struct stat st;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/HEAD", d);
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    snprintf(p, sizeof p, "%s/objects", d);
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Is path (resolved through every symlink) rroot or under it? The
 * resolved path goes to out when given. */
static bool under_root(const char *rroot, const char *path, char out[PATH_MAX])
{
    char buf[PATH_MAX], *real = out ? out : buf;
    if (!realpath(path, real))
        return false;
    size_t rl = strlen(rroot);
    if (rl == 1 && rroot[0] == '/')
        return true;
    return strncmp(real, rroot, rl) == 0 && (real[rl] == '/' || real[rl] == 0);
}

/* fopen(path) only when it exists: fopen allocates its FILE before it
 * tries, and most git directories have no commondir or alternates. */
static FILE *open_if_present(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f)
        close(fd);
    return f;
}

/* The parts of a git directory that git itself follows (objects, refs, a
 * linked worktree's commondir, alternates, recursively) must stay under
 * the root too, or a repository made of symlinks or alternates would serve
 * another's objects. false with the offending part in what. */
static bool parts_under_root(const char *rroot, const char *gitdir, int depth, char *what, size_t wl)
{
    static const char *const parts[] = { "objects", "refs", "HEAD", "packed-refs", "commondir" };
    char p[PATH_MAX + 64], real[PATH_MAX];
    if (depth > 5) {
        snprintf(what, wl, "alternates nested too deeply");
        return false;
    }
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", gitdir, parts[i]);
        if (lstat(p, &st) != 0)
            continue;
        if (!under_root(rroot, p, NULL)) {
            snprintf(what, wl, "%s", parts[i]);
            return false;
        }
    }
    /* commondir: a linked worktree's git directory shares another's. */
    snprintf(p, sizeof p, "%s/commondir", gitdir);
    FILE *f = open_if_present(p);
    if (f) {
        char line[PATH_MAX], target[PATH_MAX * 2 + 2];
        bool ok = true;
        if (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(target, sizeof target, "%s%s%s", line[0] == '/' ? "" : gitdir, line[0] == '/' ? "" : "/", line);
            ok = under_root(rroot, target, real) && parts_under_root(rroot, real, depth + 1, what, wl);
            if (!ok && !what[0])
                snprintf(what, wl, "commondir");
        }
        fclose(f);
        if (!ok)
            return false;
    }
    snprintf(p, sizeof p, "%s/objects/info/alternates", gitdir);
    f = open_if_present(p);
    if (!f)
        return true;
    char line[PATH_MAX], target[PATH_MAX * 2 + 16];
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        /* Relative entries are relative to the objects directory. */
        snprintf(target, sizeof target, "%s%s%s", line[0] == '/' ? "" : gitdir,
                 line[0] == '/' ? "" : "/objects/", line);
        ok = under_root(rroot, target, real);
        if (ok) {
            /* The alternate's own alternates: <alt>/info/alternates, as if <alt>/.. were a git dir. */
            char *slash = strrchr(real, '/');
            if (slash && strcmp(slash, "/objects") == 0) {
                *slash = 0;
                ok = parts_under_root(rroot, real, depth + 1, what, wl);
            }
        } else
            snprintf(what, wl, "objects/info/alternates");
    }
    fclose(f);
    return ok;
}

char *fetchd_repo_resolve(const char *root, const char *name, char *err, size_t errlen)
{
    size_t n = strlen(name);
    if (n == 0 || n > 1024) {
        snprintf(err, errlen, "bad repository name (empty or too long)");
        return NULL;
    }
    if (name[0] == '/') {
        snprintf(err, errlen, "repository path must be relative to the repository root: %s", name);
        return NULL;
    }
    for (const char *p = name; *p; p++) {
        if ((unsigned char)*p < 0x20) {
            snprintf(err, errlen, "bad character in repository name");
            return NULL;
        }
    }
    /* Refuse any ".." component before touching the file system. */
    for (const char *p = name; p; ) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 2 && p[0] == '.' && p[1] == '.') {
            snprintf(err, errlen, "repository path escapes the repository root: %s", name);
            return NULL;
        }
        p = e ? e + 1 : NULL;
    }
    char rroot[PATH_MAX], joined[PATH_MAX + 1100], real[PATH_MAX];
    if (!realpath(root, rroot)) {
        snprintf(err, errlen, "repository root unavailable");
        return NULL;
    }
    snprintf(joined, sizeof joined, "%s/%s", rroot, name);
    if (!realpath(joined, real)) {
        snprintf(err, errlen, "repository not found: %s", name);
        return NULL;
    }
    /* Symlinks may still point outside: check the resolved path. */
    if (!under_root(rroot, real, NULL)) {
        snprintf(err, errlen, "repository path escapes the repository root: %s", name);
        return NULL;
    }
    char gitdir[PATH_MAX], what[64] = "";
    if (!is_gitdir(real)) {
        /* A work tree: its .git may itself be a symlink out of the root. */
        char dotgit[PATH_MAX + 8];
        snprintf(dotgit, sizeof dotgit, "%s/.git", real);
        if (!is_gitdir(dotgit)) {
            snprintf(err, errlen, "repository not found: %s", name);
            return NULL;
        }
        if (!under_root(rroot, dotgit, gitdir)) {
            snprintf(err, errlen, "repository path escapes the repository root: %s/.git resolves outside it", name);
            return NULL;
        }
    } else
        snprintf(gitdir, sizeof gitdir, "%s", real);
    if (!parts_under_root(rroot, gitdir, 0, what, sizeof what)) {
        snprintf(err, errlen, "repository path escapes the repository root: %s's %s resolves outside it", name, what);
        return NULL;
    }
    return fk_strdup(gitdir);
}

/* SHA-256 input, unambiguous: every piece is length-prefixed. */
static void feed(struct fk_sha256_ctx *c, const void *data, size_t len)
{
    uint64_t l = len;
    fk_sha256_update(c, &l, sizeof l);
    fk_sha256_update(c, data, len);
}

/* A file's name and contents (in length-prefixed pieces, ending with an
 * empty one); regular files only: a FIFO planted in refs/ must not hang us. */
static void feed_file(struct fk_sha256_ctx *c, const char *path)
{
    feed(c, path, strlen(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        feed(c, "-", 1);    /* missing or not a file: differs from any contents */
        return;
    }
    char buf[4096];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        feed(c, buf, (size_t)r);
    close(fd);
    feed(c, "", 0);
}

/* Every file under path (a PATH_MAX buffer holding the directory's name,
 * extended and restored here), in directory order: getdents64 into a
 * buffer on the stack, where opendir/scandir would allocate 32 KiB and a
 * copy of every entry per request. Depth and path length are bounded. */
static void feed_dir(struct fk_sha256_ctx *c, char *path, int depth)
{
    size_t plen = strlen(path);
    int fd = depth > 32 ? -1 : open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    _Alignas(8) char buf[1024];
    ssize_t n;
    while ((n = getdents64(fd, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < n; ) {
            const struct dirent64 *e = (const struct dirent64 *)(buf + off);
            off += e->d_reclen;
            size_t nl = strlen(e->d_name);
            if (e->d_name[0] == '.' || plen + 1 + nl >= PATH_MAX)
                continue;
            path[plen] = '/';
            memcpy(path + plen + 1, e->d_name, nl + 1);
            struct stat st;
            bool dir = e->d_type == DT_DIR ||
                       (e->d_type == DT_UNKNOWN && lstat(path, &st) == 0 && S_ISDIR(st.st_mode));
            if (dir)
                feed_dir(c, path, depth + 1);
            else
                feed_file(c, path);
            path[plen] = 0;
        }
    }
    close(fd);
}

void fetchd_repo_refstate(struct fk_sha256_ctx *c, const char *gitdir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/HEAD", gitdir);
    feed_file(c, p);
    snprintf(p, sizeof p, "%s/packed-refs", gitdir);
    feed_file(c, p);
    snprintf(p, sizeof p, "%s/refs", gitdir);
    feed_dir(c, p, 0);
}
