/* SPDX-License-Identifier: GPL-2.0-only */
/* Files and JIT /tmp directories pinned as records leave the rings (see
 * pins.h). Pins are few (bounded by fds): a flat array, searched whole. */
#include "symbols/pins.h"

#include "util/fk.h"
#include "util/hindex.h"
#include "util/procfs.h"
#include "util/safeopen.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Keys remembered (files pinned once, pids whose JIT is pinned): past
 * it they are forgotten, which only pins some again. */
#define SEEN_MAX 65536

struct pin {
    pid_t pid;
    bool jit;
    uint64_t start, end;        /* file: the mapping */
    uint64_t time;              /* the record's */
    int fd;                     /* file: the file; jit: w.tmp_fd */
    struct stat st;             /* file */
    struct fk_jit_where w;      /* jit */
};

struct fk_pins {
    pthread_mutex_t lock;
    size_t max_fds, fds;
    bool jit;
    struct pin *v;
    size_t n, cap;
    struct fk_u64map files_seen;    /* file key -> 1 */
    struct fk_u64map jit_seen;      /* pid -> 1 while its image's JIT is pinned */
    struct fk_pins_stats st;
};

/* The pid a process sees for itself (last NStgid field): a JIT in a
 * container names its map after that one. */
static pid_t ns_pid(pid_t pid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    return (pid_t)fk_proc_status_last(p, "NStgid");
}

int fk_proc_tmp_open(pid_t pid, bool *gone)
{
    int root = fk_root_open(pid, NULL);
    *gone = root < 0;
    if (root < 0)
        return -1;
    int fd = openat(root, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(root);
    return fd;
}

void fk_jit_where(pid_t pid, struct fk_jit_where *w)
{
    memset(w, 0, sizeof *w);
    w->tmp_fd = -1;
    w->gone = true;
    w->nspid = ns_pid(pid);
    w->nuids = fk_proc_uids(pid, w->uids);
    if (!fk_proc_start_boot_ns(pid, &w->start_ns))
        w->start_ns = 0;
    if (w->nspid > 0 && w->nuids)
        w->tmp_fd = fk_proc_tmp_open(pid, &w->gone);
}

struct fk_pins *fk_pins_new(size_t max_fds, bool jit)
{
    struct fk_pins *p = fk_calloc(1, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->max_fds = max_fds;
    p->jit = jit;
    return p;
}

void fk_pins_free(struct fk_pins *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].fd >= 0)
            close(p->v[i].fd);
    free(p->v);
    fk_u64map_free(&p->files_seen);
    fk_u64map_free(&p->jit_seen);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Room for one more pin holding an fd. Under lock. */
static bool room(struct fk_pins *p)
{
    if (p->n < FK_PINS_MAX && p->fds < p->max_fds)
        return true;
    p->st.refused++;
    return false;
}

/* Add a pin (fd counted). Under lock. */
static void add(struct fk_pins *p, const struct pin *x)
{
    p->v = fk_grow(p->v, &p->cap, p->n + 1, sizeof *p->v);
    p->v[p->n++] = *x;
    p->fds += x->fd >= 0;
}

/* Remove v[i] (its fd closed unless taken). Under lock. */
static void remove_at(struct fk_pins *p, size_t i, bool close_fd)
{
    if (p->v[i].fd >= 0) {
        if (close_fd)
            close(p->v[i].fd);
        p->fds--;
    }
    p->v[i] = p->v[--p->n];
}

/* Whether key is remembered in m. Under lock. */
static bool seen(struct fk_u64map *m, uint64_t key)
{
    uint64_t *v = fk_u64map_slot(m, key, false);
    return v && *v;
}

/* Remember key in m (false: it was there). Under lock. */
static bool first_time(struct fk_u64map *m, uint64_t key)
{
    if (m->n >= SEEN_MAX)
        fk_u64map_free(m);  /* zeroed: empty */
    uint64_t *v = fk_u64map_slot(m, key, true);
    if (*v)
        return false;
    *v = 1;
    return true;
}

static uint64_t file_key(const char *filename, uint32_t maj, uint32_t min, uint64_t ino,
                         const unsigned char *bid, size_t bid_len)
{
    uint64_t h = fk_hash(filename, strlen(filename));
    if (bid_len)
        return h ^ fk_hash(bid, bid_len) * 0x9e3779b97f4a7c15ULL;
    return h ^ fk_hash_u64(((uint64_t)maj << 32 | min) * 0x9e3779b97f4a7c15ULL + ino);
}

static void pin_file(struct fk_pins *p, pid_t pid, uint64_t start, uint64_t end, uint64_t key,
                     uint64_t time)
{
    pthread_mutex_lock(&p->lock);
    bool want = room(p) && !seen(&p->files_seen, key);
    pthread_mutex_unlock(&p->lock);
    if (!want)
        return;
    struct pin x = { .pid = pid, .start = start, .end = end, .time = time };
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", (int)pid,
             (unsigned long long)start, (unsigned long long)end);
    const struct fk_safe_opts so = { .flags = FK_SAFE_NO_SYMLINKS };
    x.fd = fk_safe_open_pinned(path, &so, &x.st, NULL);
    if (x.fd < 0)
        return;     /* gone already, or not a regular file */
    pthread_mutex_lock(&p->lock);
    if (room(p) && first_time(&p->files_seen, key)) {
        add(p, &x);
        p->st.files++;
    } else {
        close(x.fd);
    }
    pthread_mutex_unlock(&p->lock);
}

static void pin_jit(struct fk_pins *p, pid_t pid, uint64_t time)
{
    pthread_mutex_lock(&p->lock);
    bool want = room(p) && !seen(&p->jit_seen, (uint64_t)pid);
    pthread_mutex_unlock(&p->lock);
    if (!want)
        return;
    struct pin x = { .pid = pid, .jit = true, .time = time };
    fk_jit_where(pid, &x.w);
    if (x.w.gone)
        return;     /* gone already: the symbolizer finds that out itself */
    x.fd = x.w.tmp_fd;
    pthread_mutex_lock(&p->lock);
    if (room(p) && first_time(&p->jit_seen, (uint64_t)pid)) {
        add(p, &x);
        p->st.jits++;
    } else if (x.fd >= 0) {
        close(x.fd);
    }
    pthread_mutex_unlock(&p->lock);
}

void fk_pins_mmap(struct fk_pins *p, pid_t pid, uint64_t start, uint64_t len, uint32_t prot,
                  uint32_t maj, uint32_t min, uint64_t ino, const unsigned char *build_id,
                  size_t build_id_len, const char *filename, uint64_t time)
{
    if (pid <= 0 || !(prot & PROT_EXEC) || strncmp(filename, "[kernel.kallsyms]", 17) == 0)
        return;
    if (filename[0] == '/' && filename[1] != '/')
        pin_file(p, pid, start, start + len,
                 file_key(filename, maj, min, ino, build_id, build_id_len), time);
    else if (p->jit && strcmp(filename, "[vdso]") != 0 && strcmp(filename, "[vsyscall]") != 0)
        pin_jit(p, pid, time);      /* "//anon", "", "[anon:...]": JIT code */
}

void fk_pins_exec(struct fk_pins *p, pid_t pid)
{
    pthread_mutex_lock(&p->lock);
    uint64_t *v = fk_u64map_slot(&p->jit_seen, (uint64_t)pid, false);
    if (v)
        *v = 0;
    pthread_mutex_unlock(&p->lock);
}

void fk_pins_fork(struct fk_pins *p, pid_t pid, pid_t ppid, uint64_t time)
{
    if (pid <= 0 || pid == ppid || !p->jit)
        return;
    pthread_mutex_lock(&p->lock);
    uint64_t *v = fk_u64map_slot(&p->jit_seen, (uint64_t)pid, false);
    if (v)
        *v = 0;     /* a reused pid: another process */
    bool jit = seen(&p->jit_seen, (uint64_t)ppid);
    pthread_mutex_unlock(&p->lock);
    if (jit)
        pin_jit(p, pid, time);
}

int fk_pins_take_file(struct fk_pins *p, pid_t pid, uint64_t start, uint64_t end,
                      struct stat *st)
{
    int fd = -1;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->n; i++)
        if (!p->v[i].jit && p->v[i].pid == pid && p->v[i].start == start && p->v[i].end == end) {
            fd = p->v[i].fd;
            *st = p->v[i].st;
            remove_at(p, i, false);
            p->st.used++;
            break;
        }
    pthread_mutex_unlock(&p->lock);
    return fd;
}

bool fk_pins_take_jit(struct fk_pins *p, pid_t pid, struct fk_jit_where *w)
{
    size_t best = SIZE_MAX;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].jit && p->v[i].pid == pid && (best == SIZE_MAX || p->v[i].time < p->v[best].time))
            best = i;
    if (best != SIZE_MAX) {
        *w = p->v[best].w;
        remove_at(p, best, false);
        p->st.used++;
    }
    pthread_mutex_unlock(&p->lock);
    return best != SIZE_MAX;
}

void fk_pins_drop_file(struct fk_pins *p, pid_t pid, uint64_t start, uint64_t end)
{
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->n; i++)
        if (!p->v[i].jit && p->v[i].pid == pid && p->v[i].start == start && p->v[i].end == end) {
            remove_at(p, i, true);
            break;
        }
    pthread_mutex_unlock(&p->lock);
}

void fk_pins_drop_exit(struct fk_pins *p, pid_t pid, uint64_t time)
{
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->n;)
        if (p->v[i].pid == pid && p->v[i].time <= time)
            remove_at(p, i, true);
        else
            i++;
    pthread_mutex_unlock(&p->lock);
}

size_t fk_pins_bytes(struct fk_pins *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->cap * sizeof *p->v + fk_u64map_bytes(&p->files_seen) +
               fk_u64map_bytes(&p->jit_seen);
    pthread_mutex_unlock(&p->lock);
    return n;
}

void fk_pins_stats(struct fk_pins *p, struct fk_pins_stats *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->st;
    pthread_mutex_unlock(&p->lock);
}
