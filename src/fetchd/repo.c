/* SPDX-License-Identifier: GPL-2.0-only */
/* Repository names -> git directories under --repo-root, and ref state. */
#include "fetchd/fetchd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

char *fd_repo_resolve(const char *root, const char *name, char *err, size_t errlen)
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
    size_t rl = strlen(rroot);
    /* Symlinks may still point outside: check the resolved path. */
    if (strncmp(real, rroot, rl) != 0 || (real[rl] != '/' && !(rl == 1 && rroot[0] == '/'))) {
        snprintf(err, errlen, "repository path escapes the repository root: %s", name);
        return NULL;
    }
    if (is_gitdir(real))
        return fk_strdup(real);
    char dotgit[PATH_MAX + 8];
    snprintf(dotgit, sizeof dotgit, "%s/.git", real);
    if (is_gitdir(dotgit))
        return fk_strdup(dotgit);
    snprintf(err, errlen, "repository not found: %s", name);
    return NULL;
}

static uint64_t mix_file(uint64_t h, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return h * 31 + 1;
    char buf[8192];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        h = (h ^ fk_hash(buf, (size_t)r)) * 0x100000001b3ULL;
    close(fd);
    return h;
}

static uint64_t mix_dir(uint64_t h, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d || depth > 32) {
        if (d)
            closedir(d);
        return h;
    }
    /* Order-independent combination: readdir order is arbitrary. */
    uint64_t acc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) != 0)
            continue;
        uint64_t eh = fk_hash(p, strlen(p));
        if (S_ISDIR(st.st_mode))
            eh = mix_dir(eh, p, depth + 1);
        else
            eh = mix_file(eh, p);
        acc += eh * 0x9e3779b97f4a7c15ULL + (eh >> 17);
    }
    closedir(d);
    return (h ^ acc) * 0x100000001b3ULL;
}

uint64_t fd_repo_refstate(const char *gitdir)
{
    char p[PATH_MAX];
    uint64_t h = 0xcbf29ce484222325ULL;
    snprintf(p, sizeof p, "%s/HEAD", gitdir);
    h = mix_file(h, p);
    snprintf(p, sizeof p, "%s/packed-refs", gitdir);
    h = mix_file(h, p);
    snprintf(p, sizeof p, "%s/refs", gitdir);
    return mix_dir(h, p, 0);
}
