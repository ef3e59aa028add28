/* SPDX-License-Identifier: GPL-2.0-only */
/* Facts kept once per boot: see bootcache.h. */
#include "util/bootcache.h"
#include "util/fk.h"
#include "util/safeopen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *cache_dir(void)
{
    const char *d = getenv("FLAMEKIT_KERNEL_CACHE");
    if (d && (!*d || strcmp(d, "off") == 0))
        return NULL;
    return d ? d : "/var/cache/flamekit";
}

bool fk_bootcache_enabled(void)
{
    return cache_dir() != NULL;
}

bool fk_boot_id(char out[40])
{
    char buf[64];
    memset(out, 0, 40);
    ssize_t n = fk_read_small("/proc/sys/kernel/random/boot_id", buf, sizeof buf);
    if (n < 32)
        return false;
    memcpy(out, buf, strcspn(buf, "\n") < 39 ? strcspn(buf, "\n") : 39);
    return true;
}

/* The cache directory, O_PATH: root's, written by nobody else, no
 * symlink as its last component; made (0700) when missing and create. */
static int dir_open(bool create)
{
    const char *dir = cache_dir();
    if (!dir || geteuid() != 0)
        return -1;
    if (create && mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
                    (st.st_mode & 022))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

int fk_bootcache_open(const char *name, size_t max, struct stat *st)
{
    int dfd = dir_open(false);
    if (dfd < 0)
        return -1;
    const struct fk_safe_opts so = { .flags = FK_SAFE_NO_SYMLINKS, .max_size = max,
                                     .owners = (const uid_t[]){ 0 }, .nowners = 1 };
    int fd = fk_safe_openat(dfd, name, &so, st, NULL);
    close(dfd);
    if (fd >= 0 && (st->st_mode & 022)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

bool fk_bootcache_write(const char *name, const void *const *parts, const size_t *sizes,
                        size_t n)
{
    int dfd = dir_open(true);
    if (dfd < 0)
        return false;
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", name, (int)getpid());
    unlinkat(dfd, tmp, 0);      /* a dead capture's, with our pid */
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = fk_write_full(fd, parts[i], sizes[i]);
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    if (fd >= 0 && (!ok || renameat(dfd, tmp, dfd, name) != 0)) {
        unlinkat(dfd, tmp, 0);
        ok = false;
    }
    close(dfd);
    return ok;
}

/* fk_bootcache_get/put's record: magic, boot id, payload, hash. */
#define RECORD_HEAD 48
#define RECORD_MAX 256

bool fk_bootcache_get(const char *name, const char magic[8], void *payload, size_t size)
{
    unsigned char rec[RECORD_MAX];
    size_t len = RECORD_HEAD + size + 8;
    char boot[40];
    struct stat st;
    if (size % 8 || len > sizeof rec)
        return false;
    int fd = fk_bootcache_open(name, len, &st);
    if (fd < 0)
        return false;
    bool have = (size_t)st.st_size == len && fk_read_full(fd, rec, len) &&
                !memcmp(rec, magic, 8) && fk_boot_id(boot) && !memcmp(rec + 8, boot, 40);
    close(fd);
    uint64_t hash;
    if (have) {
        memcpy(&hash, rec + RECORD_HEAD + size, sizeof hash);
        have = hash == fk_hash(rec, RECORD_HEAD + size);
    }
    if (have)
        memcpy(payload, rec + RECORD_HEAD, size);
    return have;
}

bool fk_bootcache_put(const char *name, const char magic[8], const void *payload, size_t size)
{
    unsigned char rec[RECORD_MAX] = { 0 };
    size_t len = RECORD_HEAD + size + 8;
    if (size % 8 || len > sizeof rec || !fk_bootcache_enabled())
        return false;
    memcpy(rec, magic, 8);
    if (!fk_boot_id((char *)rec + 8))
        return false;
    memcpy(rec + RECORD_HEAD, payload, size);
    uint64_t hash = fk_hash(rec, RECORD_HEAD + size);
    memcpy(rec + RECORD_HEAD + size, &hash, sizeof hash);
    return fk_bootcache_write(name, (const void *const[]){ rec }, (const size_t[]){ len }, 1);
}
