/* SPDX-License-Identifier: GPL-2.0-only */
/* Process table (address spaces, comms), DSO table, locate and name. */
#include "symbols/symbols-int.h"
#include "symbols/cfi.h"
#include "symbols/elf-dyn.h"
#include "symbols/pins.h"
#include "util/busguard.h"
#include "util/dynlib.h"
#include "util/hindex.h"
#include "util/procfs.h"
#include "util/safeopen.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define COMM_LEN 16
#define FD_CAP 1000
#define KERNEL_SLACK 0x10000
#define JIT_NONE UINT32_MAX
#define JIT_MAP_MAX_SIZE (256u << 20)
/* Exited processes and threads whose state is kept: a process's samples
 * are located as they are handled, in time order, and none comes after
 * its EXIT record but for its last switch-out (microseconds later), so
 * the oldest of these is forgotten when one more exits. Without this a
 * tree of thousands of short children kept each one's maps (a copy of
 * its parent's at fork) for the whole capture. */
#define GONE_KEEP 256

struct map {
    uint64_t start, end, pgoff;
    uint32_t dso;
};

struct proc {
    pid_t pid;
    bool exited, scanned;
    char comm[COMM_LEN];
    struct map *maps;
    size_t nmaps, cap;
    uint32_t anon_dso;      /* DSO_ANON for this process, or JIT_NONE */
    /* fk_sym_proc_gen: image is new for each program the pid runs (a new
     * process, a fork's copy, an exec), maps for each mapping added;
     * space is new whenever the maps change, but a fork's copy keeps its
     * parent's (set_space) */
    uint64_t image, maps_gen, space;
};

struct thread {
    pid_t tid, pid;
    bool exited;        /* its EXIT handled, and no FORK or COMM since */
    char comm[COMM_LEN];
};

/* An exit waiting its turn to be forgotten (GONE_KEEP). */
struct gone {
    pid_t pid, tid;     /* pid == tid: the process */
    uint64_t image;     /* the process's image at its exit */
};

struct fk_symbolizer {
    struct fk_sym_opts opts;
    struct proc *procs;
    size_t nprocs, procs_cap;
    struct fk_hindex proc_idx;  /* fk_hash_u64(pid) -> the pid's latest proc */
    struct thread *threads;
    size_t nthreads, threads_cap;
    struct fk_hindex thread_idx;    /* fk_hash_u64(tid) -> thread */
    struct dso *dsos;
    size_t ndsos, dsos_cap;
    struct fk_hindex dso_idx;   /* dso_key (a hash) -> DSOs (callers compare) */
    struct fk_hindex named_idx; /* hash(name) ^ dso -> offset of a DSO_NAMED's name */
    uint32_t vdso_dso;
    size_t fds_open, fd_cap;
    bool kernel_loaded, kernel_hidden, kernel_warned, capture_ended;
    uint64_t exits;         /* processes whose exit was handled */
    /* the last GONE_KEEP exits (a ring), and the slots of procs and
     * threads forgotten, reused before the arrays grow */
    struct gone gone[GONE_KEEP];
    size_t gone_next, ngone;
    uint32_t *free_procs, *free_threads;
    size_t nfree_procs, free_procs_cap, nfree_threads, free_threads_cap;
    uint64_t forgotten;     /* processes forgotten after their exit */
    struct fk_symtab kernel, vdso;
    /* kernel holds only the core kernel's symbols, from the cache
     * (kcache.c), spanning [kernel_lo, kernel_hi]: a frame outside needs
     * the full table */
    bool kernel_core_only;
    uint64_t kernel_lo, kernel_hi;
    /* the kernel's table made on a thread of its own (fk_sym_preload_kernel):
     * the thread's until joined, then moves to kernel */
    struct {
        pthread_t thread;
        bool running, hidden, core_only;
        uint64_t lo, hi;
        struct fk_symtab tab;
    } kload;
    struct fk_debuginfod *dbg;  /* NULL unless asked for */
    uint64_t dev_tmp, ino_tmp;
    int tmp_fd;                 /* our /tmp (O_PATH), where host JITs write their maps */
    uint64_t other_bytes;       /* the capture's own tables, toward opts.max_bytes */
    unsigned map_warnings, budget_warnings;
    uint64_t locate_unknown, names_unresolved, names_fde, deleted_kept, over_budget;
    uint64_t images;            /* the last proc.image given */
    uint64_t spaces;            /* the last proc.space given */
};

/* ---- DSOs ---- */

static uint32_t dso_add(struct fk_symbolizer *s, enum dso_kind kind)
{
    s->dsos = fk_grow(s->dsos, &s->dsos_cap, s->ndsos + 1, sizeof *s->dsos);
    struct dso *d = &s->dsos[s->ndsos];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    d->fd = -1;
    return (uint32_t)s->ndsos++;
}

static const char *basename_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b && b[1] ? b + 1 : path;
}

/* Open the mapped file so it stays readable, never following what the
 * process controls (util/safeopen.h: regular files only, nothing that
 * blocks): its map_files entry while the mapping lives (the kernel pins
 * the very file there, deleted or not); else its path inside its root
 * with no symlink anywhere (the kernel prints resolved paths: a symlink
 * there was planted after the mapping), refused if it is another inode on
 * that device. A process already gone: our path, only if it is the very
 * inode mapped; never our path for a process whose root is not ours. */
static int open_mapped(struct fk_symbolizer *s, struct dso *d, pid_t pid,
                       uint64_t start, uint64_t end)
{
    const struct fk_safe_opts so = { .flags = FK_SAFE_NO_SYMLINKS };
    struct stat st;
    int fd = -1;
    if (pid > 0 && !s->opts.no_map_files && s->opts.pins &&
        (fd = fk_pins_take_file(s->opts.pins, pid, start, end, &st)) >= 0) {
        d->via_map_files = true;    /* pinned there as the record left the ring */
        d->uid = st.st_uid;
        return fd;
    }
    if (pid > 0 && !s->opts.no_map_files) {
        char p[96];
        snprintf(p, sizeof p, "/proc/%d/map_files/%llx-%llx", (int)pid,
                 (unsigned long long)start, (unsigned long long)end);
        fd = fk_safe_open_pinned(p, &so, &st, NULL);
        if (fd >= 0) {
            d->via_map_files = true;
            d->uid = st.st_uid;
            return fd;
        }
    }
    bool host = true;
    int root = pid > 0 ? fk_root_open(pid, &host) : -1;
    bool gone = root < 0;
    if (gone) {
        if (!d->ino)
            return -1;
        root = fk_root_open(0, NULL);
    }
    fd = root >= 0 ? fk_safe_openat(root, d->path, &so, &st, NULL) : -1;
    if (fd >= 0 && !host) {
        struct stat rs;
        if (fstat(root, &rs) == 0) {
            d->root_pid = pid;
            d->root_dev = (uint64_t)rs.st_dev;
            d->root_ino = (uint64_t)rs.st_ino;
        } else {
            close(fd);
            fd = -1;
        }
    }
    if (root >= 0)
        close(root);
    if (fd < 0)
        return -1;
    /* (the mapping's device differs from stat's on overlayfs: same device
     * and another inode is what tells a replaced file) */
    bool same_dev = (uint64_t)st.st_dev == d->dev, same_ino = (uint64_t)st.st_ino == d->ino;
    if (gone ? !(same_dev && same_ino) : d->ino && same_dev && !same_ino) {
        close(fd);      /* replaced since it was mapped */
        return -1;
    }
    d->uid = st.st_uid;
    return fd;
}

static void dso_load(struct fk_symbolizer *s, struct dso *d);
static size_t sym_left(struct fk_symbolizer *s);

/* Its file shrank under a read through its mapping (SIGBUS, util/busguard.h):
 * drop what was read from it, keep the half-built libelf/libdw state
 * (freeing it could touch the mapping again), name it by file and offset. */
static void dso_truncated(struct dso *d)
{
    fk_bus_abandon(d->elf);
    fk_bus_abandon(d->cfi);
    d->elf = NULL;
    d->cfi = NULL;
    d->cfi_tried = true;
    d->loaded = true;
    d->elf_ok = false;
    d->nloads = 0;
    free(d->fdes);
    d->fdes = NULL;
    d->nfdes = 0;
    fk_symtab_free(&d->st);
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

/* fk_dso_elf under a SIGBUS guard. */
static Elf *dso_elf(struct dso *d)
{
    struct fk_bus_guard g;
    fk_bus_push(&g);
    if (sigsetjmp(g.env, 0) == 0) {
        Elf *e = fk_dso_elf(d);
        fk_bus_pop(&g);
        return e;
    }
    dso_truncated(d);
    return NULL;
}

static uint64_t dso_key(uint64_t dev, uint64_t ino, const char *path,
                        const unsigned char *bid, size_t bid_len)
{
    uint64_t h = fk_hash(path, strlen(path));
    if (bid_len)
        return h ^ fk_hash(bid, bid_len) * 0x9e3779b97f4a7c15ULL;
    return h ^ fk_hash_u64(dev * 0x9e3779b97f4a7c15ULL + ino);
}

/* DSO of a file mapping, created (and its file pinned) at first sight. */
static uint32_t dso_file(struct fk_symbolizer *s, pid_t pid, uint64_t start, uint64_t end,
                         uint64_t dev, uint64_t ino, const char *name,
                         const unsigned char *bid, size_t bid_len)
{
    size_t nlen = strlen(name);
    bool deleted = false;
    if (nlen > 10 && strcmp(name + nlen - 10, " (deleted)") == 0) {
        nlen -= 10;
        deleted = true;
    }
    char *path = fk_strndup(name, nlen);
    if (bid_len > 20)
        bid_len = 20;
    uint64_t key = dso_key(dev, ino, path, bid, bid_len);
    struct fk_hiter it = fk_hindex_find(&s->dso_idx, key);
    uint32_t idx;
    while (fk_hindex_next(&it, &idx)) {
        struct dso *d = &s->dsos[idx];
        if (strcmp(d->path, path) == 0 &&
            (bid_len ? d->build_id_len == bid_len && memcmp(d->build_id, bid, bid_len) == 0
                     : d->dev == dev && d->ino == ino)) {
            free(path);
            return idx;
        }
    }
    idx = dso_add(s, DSO_FILE);
    struct dso *d = &s->dsos[idx];
    d->path = path;
    d->dev = dev;
    d->ino = ino;
    d->key = key;
    d->deleted = deleted;
    if (bid_len) {
        memcpy(d->build_id, bid, bid_len);
        d->build_id_len = bid_len;
    }
    d->fd = open_mapped(s, d, pid, start, end);
    if (d->fd >= 0) {
        if (s->fds_open >= s->fd_cap) {
            /* too many pinned: keep the file as a mapping (the unwinder
             * needs its CFI), read its symbols now, close the fd */
            dso_elf(d);
            dso_load(s, d);
        } else {
            s->fds_open++;
        }
    }
    fk_hindex_add(&s->dso_idx, key, idx);
    return idx;
}

/* Read a file DSO's symbols; count it when the path no longer leads to
 * the file we pinned (deleted, replaced by an upgrade). */
static void dso_load(struct fk_symbolizer *s, struct dso *d)
{
    struct stat pinned, now;
    if (d->fd >= 0 && fstat(d->fd, &pinned) == 0) {
        char p[64 + 4096];
        if (d->root_pid)
            snprintf(p, sizeof p, "/proc/%d/root%s", (int)d->root_pid, d->path);
        else
            snprintf(p, sizeof p, "%s", d->path);
        if (d->deleted || stat(p, &now) != 0 || now.st_ino != pinned.st_ino ||
            now.st_dev != pinned.st_dev)
            s->deleted_kept++;
    }
    struct fk_bus_guard g;
    fk_bus_push(&g);
    if (sigsetjmp(g.env, 0) == 0) {
        fk_dso_load_elf(d, s->dbg, !s->capture_ended, sym_left(s));
        fk_bus_pop(&g);
    } else {
        dso_truncated(d);
    }
    if (d->over_budget) {
        s->over_budget++;
        if (s->budget_warnings++ < 3)
            fk_warn_to(s->opts.warn, s->opts.warn_ctx, "symbols of %s skipped: its symbol table "
                       "would pass its memory budget (4 times the file's size + 1 MiB, within "
                       "half of --max-memory); its frames are named by file and address", d->path);
        else if (s->budget_warnings == 4)
            fk_warn_to(s->opts.warn, s->opts.warn_ctx, "more files' symbols skipped for their "
                       "memory budget: not reported (counted in the metadata, "
                       "symbols.files_over_budget)");
    }
}

/* Where a JIT's perf map will be, fixed while the process runs, so a map
 * written at exit (java -XX:+DumpPerfMapAtExit) or late (jcmd
 * Compiler.perfmap) is still found after it is gone: perf-NSPID.map in our
 * /tmp when its /tmp is ours, else in its own /tmp, held open (that keeps
 * a private tmpfs and its files reachable after its mount namespace is
 * gone, where its root alone would not). Its uids: the map's owner must
 * be one of them or root (perf's owner rule, for the process's user). All
 * three as pinned when its first JIT mapping left the ring (pins.h), while
 * it lived; else read now. */
static void jit_locate(struct fk_symbolizer *s, struct dso *d)
{
    struct stat ts;
    struct fk_jit_where w;
    if (!s->opts.pins || !fk_pins_take_jit(s->opts.pins, d->pid, &w))
        fk_jit_where(d->pid, &w);   /* not pinned as its record left the ring: now */
    d->nspid = w.nspid;
    d->nuids = w.nuids;
    d->start_ns = w.start_ns;
    memcpy(d->uids, w.uids, sizeof d->uids);
    bool gone = w.gone;
    int fd = w.tmp_fd;
    if (fd < 0 || fstat(fd, &ts) != 0) {
        if (fd >= 0)
            close(fd);
        /* gone: JIT_TMP_UNKNOWN; else no map can be read for it */
        d->jit_tmp = gone ? JIT_TMP_UNKNOWN : JIT_TMP_NONE;
        return;
    }
    if ((uint64_t)ts.st_dev == s->dev_tmp && (uint64_t)ts.st_ino == s->ino_tmp) {
        d->jit_tmp = JIT_TMP_OURS;
        close(fd);
        return;
    }
    d->jit_tmp = JIT_TMP_OTHER;
    if (s->fds_open >= s->fd_cap) {
        close(fd);  /* then only readable while it lives */
        return;
    }
    d->fd = fd;
    s->fds_open++;
}

/* Load a pinned (counted) DSO on first use. */
static void dso_ensure_loaded(struct fk_symbolizer *s, struct dso *d)
{
    if (d->loaded)
        return;
    bool had_fd = d->fd >= 0;
    dso_load(s, d);
    if (had_fd && s->fds_open)
        s->fds_open--;
}

/* What a symbol table read from a file the target controls (a binary, a
 * debug file, a perf map) may still take: the symbolizer stays within
 * half of opts.max_bytes and the whole capture within all of it, so what
 * a target planted can neither stop the capture at the memory limit nor
 * take the stack table's room. */
static size_t sym_left(struct fk_symbolizer *s)
{
    if (!s->opts.max_bytes)
        return SIZE_MAX;
    uint64_t sym = fk_sym_bytes(s), used = s->other_bytes + sym, share = s->opts.max_bytes / 2;
    if (used >= s->opts.max_bytes || sym >= share)
        return 0;
    uint64_t left = s->opts.max_bytes - used < share - sym ? s->opts.max_bytes - used : share - sym;
    return left > SIZE_MAX ? SIZE_MAX : (size_t)left;
}

#define MAP_WARNINGS_MAX 5

/* One line per refused or cut map (a host may hold many: bounded). */
static void map_warn(struct fk_symbolizer *s, struct dso *d, const char *name, const char *what)
{
    if (d->map_warned || s->map_warnings > MAP_WARNINGS_MAX)
        return;
    d->map_warned = true;
    if (++s->map_warnings > MAP_WARNINGS_MAX) {
        fk_warn_to(s->opts.warn, s->opts.warn_ctx, "more perf maps skipped: not reported");
        return;
    }
    fk_warn_to(s->opts.warn, s->opts.warn_ctx, "perf map /tmp/%s of pid %d %s", name, (int)d->pid,
               what);
}

/* A map last written before the process started is an earlier process's
 * (pids are reused; nothing removes a map when its JIT exits): its names
 * would be wrong, not missing. The map's mtime (wall clock) is taken to
 * boot time through the clocks' offset now; a second of slack covers the
 * coarse file clock, the start's tick and clock slewing since. */
#define MAP_STALE_SLACK_NS 1000000000ull
static bool map_predates(const struct dso *d, int fd)
{
    struct stat st;
    struct timespec real, boot;
    if (!d->start_ns || fstat(fd, &st) != 0 || clock_gettime(CLOCK_REALTIME, &real) != 0 ||
        clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
        return false;
    long long mtime = (long long)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
    long long offset = ((long long)real.tv_sec - boot.tv_sec) * 1000000000ll +
                       (real.tv_nsec - boot.tv_nsec);   /* wall clock at boot */
    long long written = mtime - offset;                 /* in boot time */
    return written + (long long)MAP_STALE_SLACK_NS < (long long)d->start_ns;
}

/* The process's perf map: a regular file owned by one of its uids or
 * root, in its /tmp (never through a symlink), within JIT_MAP_MAX_SIZE
 * and what --max-memory leaves. A process gone before we saw it: our
 * /tmp (most share it), by root only (its uids are unknown). */
static void read_perf_map(struct fk_symbolizer *s, struct dso *d, bool at_end)
{
    if (!s->opts.jit || d->jit_tmp == JIT_TMP_NONE)
        return;
    char name[32];
    bool guess = at_end && d->jit_tmp == JIT_TMP_UNKNOWN, gone;
    if (d->jit_tmp == JIT_TMP_UNKNOWN && !guess)
        return;
    snprintf(name, sizeof name, "perf-%d.map", (int)(d->nspid > 0 && !guess ? d->nspid : d->pid));
    int dir = d->jit_tmp == JIT_TMP_OURS || guess ? s->tmp_fd : d->fd;
    int own = dir < 0 ? fk_proc_tmp_open(d->pid, &gone) : -1;    /* not held: while it lives */
    const struct fk_safe_opts so = { .max_size = JIT_MAP_MAX_SIZE, .owners = d->uids,
                                     .nowners = guess ? 0 : d->nuids };
    const char *why = NULL;
    int fd = dir >= 0 || own >= 0 ? fk_safe_openat(dir >= 0 ? dir : own, name, &so, NULL, &why) : -1;
    int err = errno;
    if (own >= 0)
        close(own);
    if (fd < 0) {
        if ((dir >= 0 || own >= 0) && err != ENOENT) {
            char what[160];
            snprintf(what, sizeof what, "skipped: %s (flamekit reads only regular files of at most "
                     "%u MiB owned by the process's user or root)", why ? why : strerror(err),
                     JIT_MAP_MAX_SIZE >> 20);
            map_warn(s, d, name, what);
        }
        return;
    }
    if (!guess && map_predates(d, fd)) {
        map_warn(s, d, name, "skipped: it was last written before the process started (a map "
                 "left by an earlier process with the same pid)");
        close(fd);
        return;
    }
    if (fk_perfmap_load(&d->st, fd, JIT_MAP_MAX_SIZE, sym_left(s)) == FK_PERFMAP_TRUNCATED)
        map_warn(s, d, name, "read in part: it reached the memory limit (--max-memory) "
                 "or its size limit; the rest of its code is unnamed");
    close(fd);
}

static uint32_t dso_anon(struct fk_symbolizer *s, struct proc *pr)
{
    if (pr->anon_dso != JIT_NONE)
        return pr->anon_dso;
    pid_t pid = pr->pid;
    uint32_t idx = dso_add(s, DSO_ANON);    /* may move s->procs? no: separate array */
    s->dsos[idx].pid = pid;
    if (s->opts.jit)
        jit_locate(s, &s->dsos[idx]);
    read_perf_map(s, &s->dsos[idx], false);
    pr->anon_dso = idx;
    return idx;
}

static uint32_t dso_vdso(struct fk_symbolizer *s)
{
    if (!s->vdso_dso) {
        s->vdso_dso = dso_add(s, DSO_VDSO);
        s->dsos[s->vdso_dso].path = fk_strdup("[vdso]");
    }
    return s->vdso_dso;
}

static uint32_t dso_special(struct fk_symbolizer *s, const char *name)
{
    uint64_t key = fk_hash(name, strlen(name)) ^ 0x5bd1e995;
    struct fk_hiter it = fk_hindex_find(&s->dso_idx, key);
    uint32_t idx;
    while (fk_hindex_next(&it, &idx))
        if (s->dsos[idx].kind == DSO_SPECIAL && strcmp(s->dsos[idx].path, name) == 0)
            return idx;
    idx = dso_add(s, DSO_SPECIAL);
    s->dsos[idx].path = fk_strdup(name);
    fk_hindex_add(&s->dso_idx, key, idx);
    return idx;
}

static uint32_t dso_named(struct fk_symbolizer *s, const char *label, const char *suffix)
{
    uint64_t key = fk_hash(label, strlen(label)) ^ 0x6e616d6564ull;
    struct fk_hiter it = fk_hindex_find(&s->dso_idx, key);
    uint32_t idx;
    while (fk_hindex_next(&it, &idx))
        if (s->dsos[idx].kind == DSO_NAMED && strcmp(s->dsos[idx].path, label) == 0)
            return idx;
    idx = dso_add(s, DSO_NAMED);
    s->dsos[idx].path = fk_strdup(label);
    s->dsos[idx].suffix = suffix;
    s->dsos[idx].loaded = true;
    fk_buf_addc(&s->dsos[idx].st.strs, 0);    /* offset 0: no name */
    fk_hindex_add(&s->dso_idx, key, idx);
    return idx;
}

struct fk_loc fk_sym_named(struct fk_symbolizer *s, const char *label, const char *suffix,
                           enum fk_frame_kind kind, const char *name, size_t len)
{
    uint32_t di = dso_named(s, label, suffix);
    struct dso *d = &s->dsos[di];
    d->named_kind = kind;
    uint64_t h = fk_hash(name, len) ^ di;
    struct fk_hiter it = fk_hindex_find(&s->named_idx, h);
    uint32_t off;
    while (fk_hindex_next(&it, &off)) {
        const char *t = d->st.strs.data + off;
        if (strncmp(t, name, len) == 0 && t[len] == 0)
            return (struct fk_loc){ di, off };
    }
    off = (uint32_t)d->st.strs.len;
    fk_buf_add(&d->st.strs, name, len);
    fk_buf_addc(&d->st.strs, 0);
    fk_hindex_add(&s->named_idx, h, off);
    return (struct fk_loc){ di, off };
}

/* ---- processes ---- */

/* Processes and threads are indexed by fk_hash_u64 of their pid/tid; a
 * reused pid's new process takes the index entry of the old one. */
static struct proc *proc_find(struct fk_symbolizer *s, pid_t pid)
{
    struct fk_hiter it = fk_hindex_find(&s->proc_idx, fk_hash_u64((uint32_t)pid));
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (s->procs[i].pid == pid)
            return &s->procs[i];
    return NULL;
}

static struct proc *proc_new(struct fk_symbolizer *s, pid_t pid)
{
    uint32_t n;
    if (s->nfree_procs) {
        n = s->free_procs[--s->nfree_procs];
    } else {
        s->procs = fk_grow(s->procs, &s->procs_cap, s->nprocs + 1, sizeof *s->procs);
        n = (uint32_t)s->nprocs++;
    }
    struct fk_hiter it = fk_hindex_find(&s->proc_idx, fk_hash_u64((uint32_t)pid));
    uint32_t i;
    bool reused = false;
    while (!reused && fk_hindex_next(&it, &i))
        if (s->procs[i].pid == pid) {
            fk_hindex_set(&s->proc_idx, &it, n);
            reused = true;
        }
    if (!reused)
        fk_hindex_add(&s->proc_idx, fk_hash_u64((uint32_t)pid), n);
    struct proc *pr = &s->procs[n];
    memset(pr, 0, sizeof *pr);
    pr->pid = pid;
    pr->anon_dso = JIT_NONE;
    pr->image = ++s->images;
    pr->space = ++s->spaces;
    return pr;
}

static struct thread *thread_find(struct fk_symbolizer *s, pid_t tid)
{
    struct fk_hiter it = fk_hindex_find(&s->thread_idx, fk_hash_u64((uint32_t)tid));
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (s->threads[i].tid == tid)
            return &s->threads[i];
    return NULL;
}

static struct thread *thread_get(struct fk_symbolizer *s, pid_t tid, pid_t pid)
{
    struct thread *t = thread_find(s, tid);
    if (t) {
        t->pid = pid;
        t->exited = false;
        return t;
    }
    uint32_t n;
    if (s->nfree_threads) {
        n = s->free_threads[--s->nfree_threads];
    } else {
        s->threads = fk_grow(s->threads, &s->threads_cap, s->nthreads + 1, sizeof *s->threads);
        n = (uint32_t)s->nthreads++;
    }
    t = &s->threads[n];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->pid = pid;
    fk_hindex_add(&s->thread_idx, fk_hash_u64((uint32_t)tid), n);
    return t;
}

static void set_comm(char dst[COMM_LEN], const char *comm)
{
    snprintf(dst, COMM_LEN, "%s", comm);
}

/* Insert a mapping, trimming whatever it overlaps (a new mmap replaces). */
static void maps_insert(struct proc *pr, uint64_t start, uint64_t end, uint64_t pgoff, uint32_t dso)
{
    if (end <= start)
        return;
    size_t n = pr->nmaps;
    if (n == 0 || pr->maps[n - 1].end <= start) {     /* fast path: scans come sorted */
        pr->maps = fk_grow(pr->maps, &pr->cap, n + 1, sizeof *pr->maps);
        pr->maps[n] = (struct map){ start, end, pgoff, dso };
        pr->nmaps++;
        return;
    }
    struct map *out = fk_malloc((n + 2) * sizeof *out);
    size_t w = 0;
    bool placed = false;
    for (size_t i = 0; i < n; i++) {
        struct map m = pr->maps[i];
        if (m.end <= start) {
            out[w++] = m;
            continue;
        }
        if (m.start >= end) {
            if (!placed)
                out[w++] = (struct map){ start, end, pgoff, dso };
            placed = true;
            out[w++] = m;
            continue;
        }
        if (m.start < start)
            out[w++] = (struct map){ m.start, start, m.pgoff, m.dso };
        if (!placed)
            out[w++] = (struct map){ start, end, pgoff, dso };
        placed = true;
        if (m.end > end)
            out[w++] = (struct map){ end, m.end, m.pgoff + (end - m.start), m.dso };
    }
    if (!placed)
        out[w++] = (struct map){ start, end, pgoff, dso };
    free(pr->maps);
    pr->maps = out;
    pr->nmaps = w;
    pr->cap = n + 2;
}

/* Classify a mapping by its name and add it. */
static void add_mapping(struct fk_symbolizer *s, struct proc *pr, uint64_t start, uint64_t end,
                        uint64_t pgoff, uint64_t dev, uint64_t ino, const char *name,
                        const unsigned char *bid, size_t bid_len)
{
    uint32_t dso;
    if (name[0] == '/' && name[1] != '/')
        dso = dso_file(s, pr->pid, start, end, dev, ino, name, bid, bid_len);
    else if (strcmp(name, "[vdso]") == 0)
        dso = dso_vdso(s);
    else if (strcmp(name, "[vsyscall]") == 0)
        dso = dso_special(s, name);
    else
        dso = dso_anon(s, pr);      /* "", "//anon", "[heap]", "[anon:...]" */
    maps_insert(pr, start, end, pgoff, dso);
    pr->maps_gen++;
    pr->space = ++s->spaces;
}

static bool read_comm(const char *path, char comm[COMM_LEN])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, comm, COMM_LEN - 1);
    close(fd);
    if (n <= 0)
        return false;
    comm[n] = 0;
    comm[strcspn(comm, "\n")] = 0;
    return true;
}

/* A line of /proc/PID/maps, "START-END PERMS OFFSET MAJ:MIN INODE   PATH"
 * (numbers in hex but the inode; PATH may be empty). */
struct maps_line {
    uint64_t start, end, off, ino;
    unsigned maj, min;
    bool exec;
    const char *name;
};

static const char *maps_num(const char *p, int base, uint64_t *v)
{
    const char *p0 = p;
    uint64_t x = 0;
    for (;; p++) {
        unsigned c = (unsigned char)*p, d;
        if (c - '0' < 10)
            d = c - '0';
        else if (base == 16 && (c | 0x20) - 'a' < 6)
            d = (c | 0x20) - 'a' + 10;
        else
            break;
        x = x * (unsigned)base + d;
    }
    *v = x;
    return p > p0 && p - p0 <= 20 ? p : NULL;
}

static bool maps_parse(const char *p, struct maps_line *m)
{
    uint64_t maj, min;
    if (!(p = maps_num(p, 16, &m->start)) || *p++ != '-' || !(p = maps_num(p, 16, &m->end)) ||
        *p++ != ' ')
        return false;
    size_t np = strcspn(p, " ");
    if (np < 4 || p[np] != ' ')
        return false;
    m->exec = p[2] == 'x';
    p += np + 1;
    if (!(p = maps_num(p, 16, &m->off)) || *p++ != ' ' || !(p = maps_num(p, 16, &maj)) ||
        *p++ != ':' || !(p = maps_num(p, 16, &min)) || *p++ != ' ' ||
        !(p = maps_num(p, 10, &m->ino)) || maj > UINT32_MAX || min > UINT32_MAX)
        return false;
    m->maj = (unsigned)maj;
    m->min = (unsigned)min;
    while (*p == ' ')
        p++;
    m->name = p;
    return true;
}

/* The executable mappings in a maps file (path) into pr; false when it
 * cannot be opened. *lines: how many lines it had. */
static bool scan_maps(struct fk_symbolizer *s, struct proc *pr, const char *path, size_t *lines)
{
    pid_t pid = pr->pid;
    *lines = 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    pr->nmaps = 0;
    pr->maps_gen++;     /* even if none is added back */
    pr->space = ++s->spaces;
    char *line = NULL;
    size_t cap = 0;
    /* (the kernel writes a read's worth of lines per call: fewer calls) */
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    while (getline(&line, &cap, f) > 0) {
        ++*lines;
        line[strcspn(line, "\n")] = 0;
        struct maps_line m;
        if (!maps_parse(line, &m) || !m.exec)
            continue;
        add_mapping(s, pr, m.start, m.end, m.off, makedev(m.maj, m.min), m.ino, m.name, NULL, 0);
        /* JIT code mapped before the capture has no MMAP2 record: pinned
         * here, so the children it forks are pinned at their FORK */
        if (s->opts.pins && m.name[0] != '/')
            fk_pins_mmap(s->opts.pins, pid, m.start, m.end - m.start, PROT_READ | PROT_EXEC, 0, 0,
                         0, NULL, 0, m.name, 0);
    }
    free(line);
    fclose(f);
    return true;
}

/* One thread of a process being scanned (scan_into). */
struct scan_ctx {
    struct fk_symbolizer *s;
    struct proc *pr;
    size_t lines;               /* of the process's maps read so far */
    bool have_comm;             /* pr->comm read from /proc/PID/comm */
};

static bool scan_thread(pid_t tid, void *ctx)
{
    struct scan_ctx *c = ctx;
    pid_t pid = c->pr->pid;
    char cp[96];
    /* A leader that ended with pthread_exit is a zombie with no
     * memory until its process exits: /proc/PID/maps is empty, and
     * the process's mappings are its other threads' */
    if (!c->lines && tid != pid) {
        snprintf(cp, sizeof cp, "/proc/%d/task/%d/maps", (int)pid, (int)tid);
        (void)scan_maps(c->s, c->pr, cp, &c->lines);
    }
    char comm[COMM_LEN];
    snprintf(cp, sizeof cp, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    if (tid == pid && c->have_comm) {       /* the leader's: /proc/PID/comm, read above */
        set_comm(thread_get(c->s, tid, pid)->comm, c->pr->comm);
    } else if (read_comm(cp, comm)) {
        struct thread *t = thread_get(c->s, tid, pid);
        set_comm(t->comm, comm);
    }
    return true;
}

/* (Re)read /proc/PID: maps, comm, threads. */
static void scan_into(struct fk_symbolizer *s, struct proc *pr)
{
    char p[64];
    pid_t pid = pr->pid;
    pr->scanned = true;
    struct scan_ctx c = { .s = s, .pr = pr };
    snprintf(p, sizeof p, "/proc/%d/comm", (int)pid);
    c.have_comm = read_comm(p, pr->comm);
    snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
    if (!scan_maps(s, pr, p, &c.lines))
        return;
    (void)fk_proc_for_each_tid(pid, scan_thread, &c);   /* gone meanwhile: nothing more to read */
}

/* The process, seeded from /proc the first time we hear of it. */
static struct proc *proc_get(struct fk_symbolizer *s, pid_t pid)
{
    struct proc *pr = proc_find(s, pid);
    if (pr)
        return pr;
    pr = proc_new(s, pid);
    if (pid > 0)
        scan_into(s, pr);
    return pr;
}

/* ---- public API ---- */

struct fk_symbolizer *fk_sym_new(const struct fk_sym_opts *opts)
{
    struct fk_symbolizer *s = fk_calloc(1, sizeof *s);
    if (opts)
        s->opts = *opts;
    if (fk_elf_preload)     /* a missing one is said; its symbols stay unresolved */
        (void)fk_elf_preload(s->opts.warn, s->opts.warn_ctx);
    dso_add(s, DSO_UNKNOWN);
    dso_add(s, DSO_KERNEL);
    struct stat st;
    s->tmp_fd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
    s->fds_open = s->tmp_fd >= 0;   /* held like pinned files, under the cap */
    if (s->tmp_fd >= 0 && fstat(s->tmp_fd, &st) == 0) {
        s->dev_tmp = st.st_dev;
        s->ino_tmp = st.st_ino;
    }
    s->dbg = fk_debuginfod_new(s->opts.debuginfod_urls,
                               s->opts.debuginfod_budget_ms ? s->opts.debuginfod_budget_ms
                                                            : FK_DEBUGINFOD_BUDGET_MS,
                               s->opts.debuginfod_request_ms ? s->opts.debuginfod_request_ms
                                                             : FK_DEBUGINFOD_REQUEST_MS,
                               s->opts.warn, s->opts.warn_ctx);
    /* pinned files are held open: stay well inside RLIMIT_NOFILE */
    struct rlimit rl;
    s->fd_cap = FD_CAP;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max && rl.rlim_cur < FD_CAP + 256) {
            rl.rlim_cur = rl.rlim_max < FD_CAP + 256 ? rl.rlim_max : FD_CAP + 256;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < FD_CAP + 256)
            s->fd_cap = rl.rlim_cur > 256 ? rl.rlim_cur - 256 : rl.rlim_cur / 2;
    }
    return s;
}

void fk_sym_free(struct fk_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nprocs; i++)
        free(s->procs[i].maps);
    free(s->procs);
    free(s->threads);
    free(s->free_procs);
    free(s->free_threads);
    for (size_t i = 0; i < s->ndsos; i++) {
        struct dso *d = &s->dsos[i];
        fk_cfi_free(d->cfi);
        if (d->elf)
            elf_end(d->elf);
        if (d->fd >= 0)
            close(d->fd);
        free(d->path);
        free(d->loads);
        free(d->fdes);
        free(d->debug_path);
        fk_symtab_free(&d->st);
    }
    fk_debuginfod_free(s->dbg);
    if (s->tmp_fd >= 0)
        close(s->tmp_fd);
    free(s->dsos);
    fk_hindex_free(&s->proc_idx);
    fk_hindex_free(&s->thread_idx);
    fk_hindex_free(&s->dso_idx);
    fk_hindex_free(&s->named_idx);
    if (s->kload.running)
        pthread_join(s->kload.thread, NULL);
    fk_symtab_free(&s->kload.tab);
    fk_symtab_free(&s->kernel);
    fk_symtab_free(&s->vdso);
    free(s);
}

void fk_sym_scan_pid(struct fk_symbolizer *s, pid_t pid)
{
    struct proc *pr = proc_find(s, pid);
    if (!pr)
        pr = proc_new(s, pid);
    scan_into(s, pr);
}

static bool scan_one(pid_t pid, void *s)
{
    fk_sym_scan_pid(s, pid);
    return true;
}

void fk_sym_scan_all(struct fk_symbolizer *s)
{
    if (!fk_proc_for_each_pid(scan_one, s))
        fk_warn_to(s->opts.warn, s->opts.warn_ctx, "cannot list /proc: %s", strerror(errno));
}

void fk_sym_comm(struct fk_symbolizer *s, pid_t pid, pid_t tid, const char *comm, bool exec)
{
    struct proc *pr = proc_get(s, pid);
    if (exec) {
        /* the new image's mmaps follow this record */
        pr->nmaps = 0;
        pr->image = ++s->images;
        pr->space = ++s->spaces;
        pr->anon_dso = JIT_NONE;
        pr->exited = false;
    }
    if (pid == tid || exec)
        set_comm(pr->comm, comm);
    set_comm(thread_get(s, tid, pid)->comm, comm);
}

void fk_sym_fork(struct fk_symbolizer *s, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid)
{
    char comm[COMM_LEN];
    struct proc *parent = proc_get(s, ppid);
    const struct thread *pt = thread_find(s, ptid);
    if (pt)
        set_comm(comm, pt->comm);
    else
        set_comm(comm, parent->comm);
    if (pid != ppid) {
        /* a new process: a copy of the parent's address space */
        struct proc *pr = proc_find(s, pid);
        if (!pr)
            pr = proc_new(s, pid);
        parent = proc_find(s, ppid);    /* proc_new may have moved it */
        pr->scanned = true;
        pr->exited = false;
        pr->anon_dso = JIT_NONE;
        pr->image = ++s->images;
        pr->maps_gen++;
        pr->maps = fk_grow(pr->maps, &pr->cap, parent->nmaps + 1, sizeof *pr->maps);
        bool own = false;
        for (size_t i = 0; i < parent->nmaps; i++) {
            pr->maps[i] = parent->maps[i];
            if (s->dsos[pr->maps[i].dso].kind == DSO_ANON) { /* JIT code: the child's own map */
                pr->maps[i].dso = dso_anon(s, pr);
                own = true;
            }
        }
        pr->nmaps = parent->nmaps;
        /* the same maps, so the same answers for every address (a shell's
         * forks, a server's workers): the parent's space, unless an
         * address may locate in a JIT DSO (the child's is its own) */
        pr->space = own || parent->anon_dso != JIT_NONE ? ++s->spaces : parent->space;
        set_comm(pr->comm, comm);
    }
    set_comm(thread_get(s, tid, pid)->comm, comm);
}

/* Forget a process (its maps and index entry) or a thread that exited
 * GONE_KEEP exits ago, unless its pid or tid was taken again since (a
 * FORK, an exec's COMM). Its samples were located as they were handled:
 * the DSOs they name stay. */
static void forget(struct fk_symbolizer *s, const struct gone *g)
{
    struct fk_hiter it;
    uint32_t i;
    if (g->pid == g->tid) {
        it = fk_hindex_find(&s->proc_idx, fk_hash_u64((uint32_t)g->pid));
        while (fk_hindex_next(&it, &i)) {
            struct proc *pr = &s->procs[i];
            if (pr->pid != g->pid)
                continue;
            if (pr->exited && pr->image == g->image) {
                fk_hindex_del(&s->proc_idx, &it);
                free(pr->maps);
                memset(pr, 0, sizeof *pr);
                s->free_procs = fk_grow(s->free_procs, &s->free_procs_cap, s->nfree_procs + 1,
                                        sizeof *s->free_procs);
                s->free_procs[s->nfree_procs++] = i;
                s->forgotten++;
            }
            break;
        }
    }
    it = fk_hindex_find(&s->thread_idx, fk_hash_u64((uint32_t)g->tid));
    while (fk_hindex_next(&it, &i)) {
        struct thread *t = &s->threads[i];
        if (t->tid != g->tid)
            continue;
        if (t->exited) {
            fk_hindex_del(&s->thread_idx, &it);
            memset(t, 0, sizeof *t);
            s->free_threads = fk_grow(s->free_threads, &s->free_threads_cap, s->nfree_threads + 1,
                                      sizeof *s->free_threads);
            s->free_threads[s->nfree_threads++] = i;
        }
        break;
    }
}

void fk_sym_exit(struct fk_symbolizer *s, pid_t pid, pid_t tid)
{
    struct proc *pr = proc_find(s, pid);
    struct thread *t = thread_find(s, tid);
    bool known = false;
    if (t && !t->exited) {
        t->exited = true;
        known = true;
    }
    if (pr && pid == tid && !pr->exited) {
        pr->exited = true;
        s->exits++;
        known = true;
    }
    if (!known)
        return;
    struct gone *g = &s->gone[s->gone_next];
    if (s->ngone == GONE_KEEP)
        forget(s, g);
    else
        s->ngone++;
    *g = (struct gone){ pid, tid, pr && pid == tid ? pr->image : 0 };
    s->gone_next = (s->gone_next + 1) % GONE_KEEP;
}

uint64_t fk_sym_exits(const struct fk_symbolizer *s)
{
    return s->exits;
}

void fk_sym_mmap(struct fk_symbolizer *s, pid_t pid, uint64_t start, uint64_t len,
                 uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino,
                 uint32_t prot, uint32_t flags, const char *filename,
                 const unsigned char *build_id, size_t build_id_len)
{
    if (pid <= 0 || !filename || strncmp(filename, "[kernel.kallsyms]", 17) == 0)
        return;     /* kernel and modules come from /proc/kallsyms */
    if (prot && !(prot & PROT_EXEC))
        return;
    struct proc *pr = proc_get(s, pid);
    add_mapping(s, pr, start, start + len, pgoff, makedev(maj, min), ino, filename,
                build_id, build_id_len);
}

/* The mapping of pr covering ip, or NULL. */
static const struct map *map_find(const struct proc *pr, uint64_t ip)
{
    /* the first map ending after ip */
    size_t lo = fk_count_le(pr->maps, pr->nmaps, sizeof *pr->maps, offsetof(struct map, end), ip);
    return lo < pr->nmaps && pr->maps[lo].start <= ip ? &pr->maps[lo] : NULL;
}

struct fk_loc fk_sym_locate(struct fk_symbolizer *s, pid_t pid, uint64_t ip, bool kernel)
{
    if (kernel)
        return (struct fk_loc){ DSO_IDX_KERNEL, ip };
    /* a kernel address in a user callchain is a bad frame pointer: it is
     * in no map (except [vsyscall]) and ends as [unknown] below */
    struct proc *pr = proc_find(s, pid);
    if (!pr)
        pr = proc_get(s, pid);      /* rare: first sample of an unseen process */
    const struct map *m = map_find(pr, ip);
    if (m) {
        enum dso_kind k = s->dsos[m->dso].kind;
        if (k == DSO_FILE || k == DSO_VDSO) {
            s->dsos[m->dso].sampled = true;     /* (fk_sym_preload) */
            return (struct fk_loc){ m->dso, ip - m->start + m->pgoff };
        }
        if (k == DSO_ANON)
            s->dsos[m->dso].sampled = true;
        return (struct fk_loc){ m->dso, ip };
    }
    if (pr->anon_dso != JIT_NONE && s->dsos[pr->anon_dso].st.n) {
        s->dsos[pr->anon_dso].sampled = true;
        return (struct fk_loc){ pr->anon_dso, ip };
    }
    s->locate_unknown++;
    return (struct fk_loc){ DSO_IDX_UNKNOWN, ip };
}

struct fk_loc fk_sym_special(struct fk_symbolizer *s, const char *name)
{
    return (struct fk_loc){ dso_special(s, name), 0 };
}

static struct fk_cfi *dso_cfi(struct dso *d)
{
    if (!d->cfi_tried) {
        d->cfi_tried = true;
        Elf *e = d->kind == DSO_VDSO ? fk_vdso_elf() : dso_elf(d);
        struct fk_bus_guard g;
        fk_bus_push(&g);
        if (sigsetjmp(g.env, 0) == 0) {
            d->cfi = fk_cfi_new(e);     /* (cfi.c guards its own later reads) */
            fk_bus_pop(&g);
        } else {
            dso_truncated(d);
        }
    }
    return d->cfi;
}

struct fk_cfi *fk_sym_cfi_at(struct fk_symbolizer *s, pid_t pid, uint64_t ip, uint64_t *vaddr,
                             bool *mapped)
{
    struct proc *pr = proc_find(s, pid);
    if (!pr)
        pr = proc_get(s, pid);
    const struct map *m = map_find(pr, ip);
    /* JIT code the maps missed but a perf map names (as fk_sym_locate) */
    *mapped = m || (pr->anon_dso != JIT_NONE && s->dsos[pr->anon_dso].st.n);
    if (!m)
        return NULL;
    struct dso *d = &s->dsos[m->dso];
    if (d->kind != DSO_FILE && d->kind != DSO_VDSO)
        return NULL;
    struct fk_cfi *c = dso_cfi(d);
    if (!c || !fk_cfi_off_to_vaddr(c, ip - m->start + m->pgoff, vaddr))
        return NULL;
    return c;
}

const char *fk_sym_comm_of(struct fk_symbolizer *s, pid_t pid, pid_t tid)
{
    const struct thread *t = thread_find(s, tid);
    if (t && t->comm[0])
        return t->comm;
    struct proc *pr = proc_find(s, pid);
    if (pr && pr->comm[0])
        return pr->comm;
    return "[unknown]";
}

/* C++ names through the C++ runtime's own demangler, loaded only if it is
 * there: no link-time dependency on libstdc++. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn demangler(void)
{
    static bool tried;
    static demangle_fn fn;
    if (!tried) {
        tried = true;
        const struct fk_dynsym sym = { "__cxa_demangle", (void **)&fn };
        const char *what;
        if (fk_dynlib_load("libstdc++.so.6", &sym, 1, &what) != FK_DYNLIB_OK)
            fn = NULL;
    }
    return fn;
}

static void add_symbol_name(struct fk_symbolizer *s, const char *name, struct fk_buf *out)
{
    demangle_fn fn;
    if (name[0] == '_' && name[1] == 'Z' && !s->opts.no_demangle && (fn = demangler())) {
        int status = -1;
        char *d = fn(name, NULL, NULL, &status);
        if (d && status == 0) {
            /* ';' separates frames in folded stacks */
            for (char *c = d; *c; c++)
                if (*c == ';' || *c == '\n')
                    *c = ':';
            fk_buf_adds(out, d);
            free(d);
            return;
        }
        free(d);
    }
    fk_buf_adds(out, name);
}

/* File offset -> ELF vaddr through the PT_LOAD segments. */
static bool off_to_vaddr(const struct dso *d, uint64_t off, uint64_t *vaddr)
{
    for (size_t i = 0; i < d->nloads; i++) {
        const struct load_seg *l = &d->loads[i];
        if (off >= l->off && off - l->off < (l->filesz ? l->filesz : 1)) {
            *vaddr = off - l->off + l->vaddr;
            return true;
        }
    }
    return false;
}

/* The core kernel's table from the cache, else the full one read from
 * /proc/kallsyms (and its core saved for the next capture). */
static void kernel_load(struct fk_symtab *t, bool *hidden, bool *core_only, uint64_t *lo,
                        uint64_t *hi)
{
    *hidden = false;
    if ((*core_only = fk_kcache_load(t, lo, hi)))
        return;
    struct fk_kallsyms_info info;
    if (fk_kallsyms_load(t, hidden, &info))
        fk_kcache_store(t, &info);
}

uint64_t fk_sym_kernel_bytes(void)
{
    struct fk_symtab t = { 0 };
    bool hidden, core_only;
    uint64_t lo, hi;
    kernel_load(&t, &hidden, &core_only, &lo, &hi);
    uint64_t bytes = hidden ? 0 : fk_symtab_bytes(&t);
    fk_symtab_free(&t);
    return bytes;
}

static void *kernel_load_main(void *arg)
{
    struct fk_symbolizer *s = arg;
    kernel_load(&s->kload.tab, &s->kload.hidden, &s->kload.core_only, &s->kload.lo, &s->kload.hi);
    return NULL;
}

/* The background read's table becomes s->kernel (counted from then on). */
static void kernel_adopt(struct fk_symbolizer *s)
{
    s->kload.running = false;
    s->kernel_loaded = true;
    s->kernel = s->kload.tab;
    s->kernel_hidden = s->kload.hidden;
    s->kernel_core_only = s->kload.core_only;
    s->kernel_lo = s->kload.lo;
    s->kernel_hi = s->kload.hi;
    memset(&s->kload.tab, 0, sizeof s->kload.tab);
}

/* A frame outside the core kernel's span (a module's, a BPF program's):
 * the full table, read now. */
static void kernel_full(struct fk_symbolizer *s)
{
    s->kernel_core_only = false;
    fk_symtab_free(&s->kernel);
    fk_kallsyms_load(&s->kernel, &s->kernel_hidden, NULL);
}

/* The kernel's symbols in s->kernel: the background read's once it ended,
 * else read here. */
static void kernel_wait(struct fk_symbolizer *s)
{
    if (s->kernel_loaded)
        return;
    if (s->kload.running) {
        pthread_join(s->kload.thread, NULL);
        kernel_adopt(s);
        return;
    }
    s->kernel_loaded = true;
    if (s->opts.kernel)
        kernel_load(&s->kernel, &s->kernel_hidden, &s->kernel_core_only, &s->kernel_lo,
                    &s->kernel_hi);
}

void fk_sym_preload_kernel(struct fk_symbolizer *s)
{
    if (s->kernel_loaded || s->kload.running || !s->opts.kernel)
        return;
    /* signals (Ctrl-C, the window's end) stay the engine thread's: the
     * thread starts with every one blocked */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    s->kload.running = pthread_create(&s->kload.thread, NULL, kernel_load_main, s) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* if it could not start: read at the first kernel frame named */
}

size_t fk_sym_preload(struct fk_symbolizer *s, uint64_t budget_ns)
{
    if (s->capture_ended)
        return 0;
    if (s->kload.running && pthread_tryjoin_np(s->kload.thread, NULL) == 0)
        kernel_adopt(s);
    uint64_t t0 = fk_now_ns(), t = t0;
    size_t loaded = 0;
    for (size_t i = 0; i < s->ndsos && t - t0 < budget_ns; i++) {
        struct dso *d = &s->dsos[i];
        if (d->kind != DSO_FILE || !d->sampled || d->loaded)
            continue;
        dso_ensure_loaded(s, d);
        loaded++;
        t = fk_now_ns();
    }
    return loaded;
}

static void end_capture(struct fk_symbolizer *s)
{
    s->capture_ended = true;
    for (size_t i = 0; i < s->ndsos; i++) {
        struct dso *d = &s->dsos[i];
        if (d->kind == DSO_ANON && d->sampled)
            read_perf_map(s, d, true);
        /* unwinding is over: give back the rows and the mappings (a DSO
         * whose fd was closed keeps its mapping until its symbols load) */
        fk_cfi_free(d->cfi);
        d->cfi = NULL;
        if (d->elf && d->fd >= 0) {
            elf_end(d->elf);
            d->elf = NULL;
        }
    }
}

enum fk_frame_kind fk_sym_name(struct fk_symbolizer *s, struct fk_loc loc, struct fk_buf *out)
{
    if (!s->capture_ended)
        end_capture(s);
    if (loc.dso >= s->ndsos || loc.dso == DSO_IDX_UNKNOWN) {
        s->names_unresolved++;
        fk_buf_adds(out, "[unknown]");
        return FK_FRAME_UNKNOWN;
    }
    struct dso *d = &s->dsos[loc.dso];
    const struct fk_sym *y;
    switch (d->kind) {
    case DSO_KERNEL:
        kernel_wait(s);
        if (s->kernel_core_only && (loc.addr < s->kernel_lo || loc.addr > s->kernel_hi))
            kernel_full(s);
        if (s->kernel_hidden && !s->kernel_warned) {
            s->kernel_warned = true;
            fk_warn_to(s->opts.warn, s->opts.warn_ctx, "kernel symbols hidden: /proc/kallsyms "
                       "shows zero addresses (run as root or set kernel.kptr_restrict=0); "
                       "kernel frames are shown as [kernel.kallsyms]");
        }
        y = fk_symtab_find(&s->kernel, loc.addr, KERNEL_SLACK);
        if (y)
            fk_buf_adds(out, fk_symtab_name(&s->kernel, y));
        else {
            s->names_unresolved++;
            fk_buf_adds(out, "[kernel.kallsyms]");
        }
        if (s->opts.annotate)
            fk_buf_adds(out, "_[k]");
        return FK_FRAME_KERNEL;
    case DSO_FILE: {
        dso_ensure_loaded(s, d);
        uint64_t vaddr = loc.addr;
        bool have_vaddr = d->elf_ok && off_to_vaddr(d, loc.addr, &vaddr);
        y = have_vaddr ? fk_symtab_find(&d->st, vaddr, 0) : NULL;
        if (y) {
            add_symbol_name(s, fk_symtab_name(&d->st, y), out);
            return FK_FRAME_USER;
        }
        /* no name: the start of the function (FDE) holding it, else the address */
        const struct fde_range *f = have_vaddr ? fk_dso_fde_find(d, vaddr) : NULL;
        if (f) {
            vaddr = f->start;
            s->names_fde++;
        }
        s->names_unresolved++;
        fk_buf_printf(out, "[%s+0x%llx]", basename_of(d->path), (unsigned long long)vaddr);
        return FK_FRAME_USER;
    }
    case DSO_VDSO:
        if (!d->loaded) {
            d->loaded = true;
            fk_vdso_load(&s->vdso);
        }
        y = fk_symtab_find(&s->vdso, loc.addr, 0);
        if (y)
            fk_buf_adds(out, fk_symtab_name(&s->vdso, y));
        else
            fk_buf_printf(out, "[vdso+0x%llx]", (unsigned long long)loc.addr);
        return FK_FRAME_USER;
    case DSO_ANON:
        y = fk_symtab_find(&d->st, loc.addr, 0);
        if (y)
            add_symbol_name(s, fk_symtab_name(&d->st, y), out);
        else {
            s->names_unresolved++;
            fk_buf_printf(out, "[JIT] tid %d", (int)d->pid);
        }
        if (s->opts.annotate)
            fk_buf_adds(out, "_[j]");
        return FK_FRAME_JIT;
    case DSO_SPECIAL:
        fk_buf_adds(out, d->path);
        return FK_FRAME_USER;
    case DSO_NAMED:
        if (loc.addr && loc.addr < d->st.strs.len)
            fk_buf_adds(out, d->st.strs.data + loc.addr);
        else
            fk_buf_adds(out, "[unknown]");
        if (s->opts.annotate && d->suffix)
            fk_buf_adds(out, d->suffix);
        return d->named_kind;
    default:
        s->names_unresolved++;
        fk_buf_adds(out, "[unknown]");
        return FK_FRAME_UNKNOWN;
    }
}

bool fk_sym_dso_info(struct fk_symbolizer *s, uint32_t dso, struct fk_sym_dso *out)
{
    memset(out, 0, sizeof *out);
    if (dso == DSO_IDX_UNKNOWN || dso >= s->ndsos)
        return false;
    struct dso *d = &s->dsos[dso];
    switch (d->kind) {
    case DSO_KERNEL:
        out->path = "[kernel.kallsyms]";
        out->kind = FK_FRAME_KERNEL;
        return true;
    case DSO_ANON:
        if (!d->path)
            d->path = fk_asprintf("[jit pid %d]", (int)d->pid);
        out->kind = FK_FRAME_JIT;
        break;
    case DSO_FILE:
    case DSO_VDSO:
        out->file_offsets = true;
        out->kind = FK_FRAME_USER;
        break;
    case DSO_SPECIAL:
        out->kind = FK_FRAME_USER;
        break;
    case DSO_NAMED:
        out->kind = d->named_kind;
        break;
    default:
        return false;
    }
    out->path = d->path ? d->path : "[unknown]";
    out->build_id = d->build_id;
    out->build_id_len = d->build_id_len;
    out->deleted = d->deleted;
    return true;
}

void fk_sym_stats(const struct fk_symbolizer *s, struct fk_sym_stats *out)
{
    memset(out, 0, sizeof *out);
    out->dsos = s->ndsos > 2 ? s->ndsos - 2 : 0;
    out->processes = s->nprocs - s->nfree_procs + s->forgotten;
    out->locate_unknown = s->locate_unknown;
    out->names_unresolved = s->names_unresolved;
    out->names_function_start = s->names_fde;
    /* (a table still on its thread named no frame) */
    out->kernel_table = !s->kernel_loaded ? "none" : s->kernel_hidden ? "hidden"
                      : s->kernel_core_only ? "cache" : "kallsyms";
    out->deleted_files_kept = s->deleted_kept;
    out->files_over_budget = s->over_budget;
    out->files_shrunk = fk_bus_caught();
    struct fk_debuginfod_stats ds;
    fk_debuginfod_stats(s->dbg, &ds);
    out->debuginfod = s->dbg != NULL;
    out->debuginfod_found = ds.found;
    out->debuginfod_failed = ds.failed;
    out->debuginfod_timed_out = ds.timed_out;
    out->debuginfod_skipped = ds.skipped;
    out->debuginfod_ms = ds.ms;
}

int fk_sym_debug_file(struct fk_symbolizer *s, uint32_t dso)
{
    if (dso >= s->ndsos || s->dsos[dso].kind != DSO_FILE)
        return -1;
    struct dso *d = &s->dsos[dso];
    dso_ensure_loaded(s, d);
    if (!d->debug_path)
        return -1;
    /* again through the helper: the path may have been replaced since */
    int root = d->debug_in_root ? fk_dso_root_open(d) : fk_root_open(0, NULL);
    const uid_t owners[2] = { d->uid, geteuid() };
    const struct fk_safe_opts o = { .flags = FK_SAFE_FOLLOW, .owners = owners, .nowners = 2 };
    struct stat st;
    int fd = root >= 0 ? fk_safe_openat(root, d->debug_path, &o, &st, NULL) : -1;
    if (root >= 0)
        close(root);
    if (fd >= 0 && ((uint64_t)st.st_dev != d->debug_dev || (uint64_t)st.st_ino != d->debug_ino)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

void fk_sym_set_other_bytes(struct fk_symbolizer *s, uint64_t bytes)
{
    s->other_bytes = bytes;
}

size_t fk_sym_bytes(const struct fk_symbolizer *s)
{
    size_t b = sizeof *s;
    b += s->procs_cap * sizeof *s->procs + s->threads_cap * sizeof *s->threads;
    b += s->free_procs_cap * sizeof *s->free_procs + s->free_threads_cap * sizeof *s->free_threads;
    b += s->dsos_cap * sizeof *s->dsos;
    b += fk_hindex_bytes(&s->proc_idx) + fk_hindex_bytes(&s->thread_idx) + fk_hindex_bytes(&s->dso_idx);
    b += fk_hindex_bytes(&s->named_idx);
    for (size_t i = 0; i < s->nprocs; i++)
        b += s->procs[i].cap * sizeof(struct map);
    for (size_t i = 0; i < s->ndsos; i++) {
        const struct dso *d = &s->dsos[i];
        b += (d->path ? strlen(d->path) + 1 : 0) + d->nloads * sizeof *d->loads;
        b += d->nfdes * sizeof *d->fdes + (d->debug_path ? strlen(d->debug_path) + 1 : 0);
        b += fk_symtab_bytes(&d->st);
        if (d->cfi)
            b += fk_cfi_bytes(d->cfi);
    }
    return b + fk_symtab_bytes(&s->kernel) + fk_symtab_bytes(&s->vdso);
}

/* ---- for readers of a process's runtime ---- */

/* A file DSO with its program headers read (its Elf kept during the
 * capture), or NULL. */
static struct dso *file_dso(struct fk_symbolizer *s, uint32_t dso)
{
    if (dso >= s->ndsos || s->dsos[dso].kind != DSO_FILE)
        return NULL;
    struct dso *d = &s->dsos[dso];
    dso_ensure_loaded(s, d);
    return d->elf_ok ? d : NULL;
}

void fk_sym_proc_gen(struct fk_symbolizer *s, pid_t pid, struct fk_sym_gen *out)
{
    const struct proc *pr = proc_find(s, pid);
    out->image = pr ? pr->image : 0;
    out->maps = pr ? pr->maps_gen : 0;
    out->space = pr ? pr->space : 0;
    out->capture_ended = s->capture_ended;
    out->exited = pr && pr->exited;
}

size_t fk_sym_proc_files(struct fk_symbolizer *s, pid_t pid, bool (*want)(const char *path),
                         struct fk_sym_file *out, size_t max)
{
    struct proc *pr = proc_find(s, pid);
    if (!pr)
        pr = proc_get(s, pid);
    size_t n = 0;
    for (size_t i = 0; i < pr->nmaps && n < max; i++) {
        const struct map *m = &pr->maps[i];
        const struct dso *d0 = &s->dsos[m->dso];
        if (d0->kind != DSO_FILE || !d0->path || !want(d0->path))
            continue;
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = out[k].dso == m->dso;
        struct dso *d = seen ? NULL : file_dso(s, m->dso);
        if (!d)
            continue;
        /* the PT_LOAD holding the mapping's first byte gives the bias */
        for (size_t k = 0; k < d->nloads; k++) {
            const struct load_seg *l = &d->loads[k];
            if (m->pgoff >= l->off && m->pgoff - l->off < (l->filesz ? l->filesz : 1)) {
                out[n].dso = m->dso;
                out[n].path = d->path;
                out[n].bias = m->start - (l->vaddr + (m->pgoff - l->off));
                n++;
                break;
            }
        }
    }
    return n;
}

/* One read of a file DSO's ELF for a caller outside symbols/, under a
 * SIGBUS guard (the file can be truncated under its mapping). */
struct dso_access {
    Elf *e;
    const char *name;           /* lookup */
    uint64_t vaddr, *vaddr_out, *size_out;
    void *buf;                  /* read */
    size_t len;
};

static bool access_symbol(void *ctx)
{
    struct dso_access *a = ctx;
    return fk_elf_symbol(a->e, a->name, a->vaddr_out, a->size_out);
}

static bool access_read(void *ctx)
{
    struct dso_access *a = ctx;
    return fk_elf_read_vaddr(a->e, a->vaddr, a->buf, a->len);
}

static bool dso_access(struct fk_symbolizer *s, uint32_t dso, bool (*fn)(void *ctx),
                       struct dso_access *a)
{
    struct dso *d = file_dso(s, dso);
    a->e = d ? dso_elf(d) : NULL;
    if (!a->e)
        return false;
    int rc = fk_bus_call(fn, a);
    if (rc < 0)
        dso_truncated(d);
    return rc > 0;
}

bool fk_sym_dso_lookup(struct fk_symbolizer *s, uint32_t dso, const char *name,
                       uint64_t *vaddr, uint64_t *size)
{
    struct dso_access a = { .name = name, .vaddr_out = vaddr, .size_out = size };
    return dso_access(s, dso, access_symbol, &a);
}

bool fk_sym_dso_read(struct fk_symbolizer *s, uint32_t dso, uint64_t vaddr, void *buf, size_t len)
{
    struct dso_access a = { .vaddr = vaddr, .buf = buf, .len = len };
    return dso_access(s, dso, access_read, &a);
}

bool fk_sym_dso_loc_addr(struct fk_symbolizer *s, uint32_t dso, uint64_t vaddr, uint64_t *addr)
{
    struct dso *d = file_dso(s, dso);
    for (size_t i = 0; d && i < d->nloads; i++) {
        const struct load_seg *l = &d->loads[i];
        if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz) {
            *addr = vaddr - l->vaddr + l->off;
            return true;
        }
    }
    return false;
}
