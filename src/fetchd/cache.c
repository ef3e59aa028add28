/* SPDX-License-Identifier: GPL-2.0-only */
/* The pack cache: whole upload-pack responses, one file each, named by
 * key; filled through a temporary renamed into place only on success;
 * total size bounded with least-recently-used eviction. */
#include "fetchd/fetchd.h"
#include "cmd/term.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct entry {
    char key[FETCHD_CACHE_KEY];
    uint64_t size;
    uint64_t used;      /* LRU clock */
};

struct fetchd_cache {
    pthread_mutex_t mu;
    char *dir;
    uint64_t max, total, clock;
    struct entry *v;
    size_t n, cap;
    uint64_t hits, misses;
};

static struct entry *find(struct fetchd_cache *c, const char *key)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].key, key) == 0)
            return &c->v[i];
    return NULL;
}

static void evict(struct fetchd_cache *c, const char *keep)
{
    while (c->total > c->max && c->n > 0) {
        size_t old = c->n;
        for (size_t i = 0; i < c->n; i++) {
            if (keep && strcmp(c->v[i].key, keep) == 0)
                continue;
            if (old == c->n || c->v[i].used < c->v[old].used)
                old = i;
        }
        if (old == c->n)
            break;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", c->dir, c->v[old].key);
        /* Readers holding it open keep their copy (unlink semantics). */
        if (unlink(p) != 0 && errno != ENOENT)
            fk_warn("cache: cannot remove %s: %s", p, strerror(errno));
        c->total -= c->v[old].size;
        c->v[old] = c->v[--c->n];
    }
}

struct fetchd_cache *fetchd_cache_open(const char *dir, uint64_t max_bytes)
{
    if (!dir || max_bytes == 0)
        return NULL;
    char err[512];
    if (!fk_crypto_load(err, sizeof err))
        fk_die("%s", err);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        fk_die("cannot create cache directory %s: %s", dir, strerror(errno));
    DIR *d = opendir(dir);
    if (!d)
        fk_die("cannot open cache directory %s: %s", dir, strerror(errno));
    struct fetchd_cache *c = fk_calloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->dir = fk_strdup(dir);
    c->max = max_bytes;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (strncmp(e->d_name, ".tmp.", 5) == 0) {
            unlink(p);  /* left by a crash: never complete */
            continue;
        }
        if (e->d_name[0] == '.')
            continue;
        if (strlen(e->d_name) != FETCHD_CACHE_KEY - 1 || strspn(e->d_name, "0123456789abcdef") != FETCHD_CACHE_KEY - 1) {
            /* Not a SHA-256 key: an entry of an older fetchd (fk_hash keys). */
            struct stat lst;
            if (lstat(p, &lst) == 0 && S_ISREG(lst.st_mode) && strchr(e->d_name, '-'))
                unlink(p);
            continue;
        }
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        c->v = fk_grow(c->v, &c->cap, c->n + 1, sizeof *c->v);
        struct entry *x = &c->v[c->n++];
        snprintf(x->key, sizeof x->key, "%s", e->d_name);
        x->size = (uint64_t)st.st_size;
        x->used = (uint64_t)st.st_mtime;   /* approximate order across restarts */
        if (x->used > c->clock)
            c->clock = x->used;
        c->total += x->size;
    }
    closedir(d);
    evict(c, NULL);
    return c;
}

void fetchd_cache_close(struct fetchd_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->dir);
    free(c->v);
    free(c);
}

/* SHA-256, not fk_hash: fk_hash's steps can be inverted, so a client could
 * craft a request whose key equals another request's and have its
 * response served for that one. Pieces are length-prefixed. */
void fetchd_cache_key(char out[FETCHD_CACHE_KEY], const char *gitdir, const void *body, size_t len)
{
    struct fk_sha256_ctx c;
    uint64_t l;
    unsigned char md[32];
    if (!fk_crypto_load(NULL, 0))   /* fetchd_cache_open made sure it loads */
        fk_die("internal error: the pack cache's key made before Nettle loaded");
    fk_sha256_begin(&c);
    fk_sha256_update(&c, "fetchd-cache-2", 15);
    fk_sha256_update(&c, (l = strlen(gitdir), &l), sizeof l);
    fk_sha256_update(&c, gitdir, l);
    fetchd_repo_refstate(&c, gitdir);
    fk_sha256_update(&c, (l = len, &l), sizeof l);
    fk_sha256_update(&c, body, len);
    fk_sha256_end(&c, md);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int fetchd_cache_lookup(struct fetchd_cache *c, const char *key, uint64_t *size)
{
    pthread_mutex_lock(&c->mu);
    struct entry *x = find(c, key);
    int fd = -1;
    if (x) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", c->dir, key);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            x->used = ++c->clock;
            *size = x->size;
        }
    }
    if (fd >= 0)
        c->hits++;
    else
        c->misses++;
    pthread_mutex_unlock(&c->mu);
    return fd;
}

int fetchd_cache_begin(struct fetchd_cache *c, char **tmpname)
{
    char *p = fk_asprintf("%s/.tmp.XXXXXX", c->dir);
    int fd = mkostemp(p, O_CLOEXEC);
    if (fd < 0) {
        fk_warn("cache: cannot create a temporary in %s: %s", c->dir, strerror(errno));
        free(p);
        *tmpname = NULL;
        return -1;
    }
    *tmpname = p;
    return fd;
}

void fetchd_cache_end(struct fetchd_cache *c, int fd, char *tmpname, const char *key, bool ok)
{
    if (fd < 0)
        return;
    struct stat st;
    if (ok && fstat(fd, &st) != 0)
        ok = false;
    if (close(fd) != 0)
        ok = false;
    if (ok && (uint64_t)st.st_size > c->max)
        ok = false;     /* would evict everything and itself */
    if (!ok) {
        unlink(tmpname);
        free(tmpname);
        return;
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", c->dir, key);
    pthread_mutex_lock(&c->mu);
    if (rename(tmpname, p) != 0) {
        fk_warn("cache: cannot rename %s: %s", tmpname, strerror(errno));
        unlink(tmpname);
    } else {
        struct entry *x = find(c, key);
        if (x) {
            c->total -= x->size;
        } else {
            c->v = fk_grow(c->v, &c->cap, c->n + 1, sizeof *c->v);
            x = &c->v[c->n++];
            snprintf(x->key, sizeof x->key, "%s", key);
        }
        x->size = (uint64_t)st.st_size;
        x->used = ++c->clock;
        c->total += x->size;
        evict(c, key);
    }
    pthread_mutex_unlock(&c->mu);
    free(tmpname);
}

void fetchd_cache_stats(struct fetchd_cache *c, uint64_t *hits, uint64_t *misses, uint64_t *bytes, uint64_t *entries)
{
    pthread_mutex_lock(&c->mu);
    *hits = c->hits;
    *misses = c->misses;
    *bytes = c->total;
    *entries = c->n;
    pthread_mutex_unlock(&c->mu);
}
