/* SPDX-License-Identifier: GPL-2.0-only */
/* Opening a capture (engine.h): the CPU and thread maps for the target,
 * the events in one evlist (retried without PERF_FORMAT_LOST on kernels
 * before 6.0), the sample ids of several events, the rings (halved while
 * the locked-memory budget is short), and the cgroup target's own
 * counters. Errors are reported in our words, naming the fix. */
#include "engine/engine.h"
#include "util/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <perf/core.h>
#include <perf/cpumap.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/threadmap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static int libperf_print(enum libperf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    (void)fmt;
    (void)ap;
    return 0;   /* we report errors from return codes, in our words */
}

static void open_error(struct fk_engine *e, int err)
{
    const struct fk_capture_opts *o = e->o;
    int paranoid = fk_perf_paranoid();
    switch (err) {
    case EACCES:
    case EPERM:
        fk_engine_fail(e, "not allowed to open perf events (/proc/sys/kernel/perf_event_paranoid is "
                       "%d): run as root, or give CAP_PERFMON, or lower it with "
                       "'sysctl kernel.perf_event_paranoid=%d'",
                       paranoid, o->target->kind == FK_TARGET_PID || o->target->kind == FK_TARGET_RUN ? 1 : -1);
        break;
    case ESRCH:
        fk_engine_fail(e, "the target process exited before the capture started");
        break;
    case EMFILE:
    case ENFILE:
        fk_engine_fail(e, "out of file descriptors (one per thread per CPU): raise 'ulimit -n'");
        break;
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
        fk_engine_fail(e, "the event %s is not supported on this machine", o->event.name);
        break;
    case EINVAL:
        fk_engine_fail(e, "the kernel refused the event %s (invalid argument): frequency %llu Hz "
                       "against perf_event_max_sample_rate %llu?",
                       o->event.name, (unsigned long long)o->event.freq,
                       (unsigned long long)fk_perf_max_sample_rate());
        break;
    default:
        fk_engine_fail(e, "perf_event_open: %s", strerror(err));
    }
}

struct tid_list {
    pid_t *v;
    size_t n, cap;
    pid_t pid;      /* whose threads are being listed */
};

/* A thread that is still a task: not a leader that ended with pthread_exit
 * while its other threads run on (listed as a zombie until its process
 * exits; perf_event_open refuses it with ESRCH, every time). */
static bool add_tid(pid_t tid, void *arg)
{
    struct tid_list *l = arg;
    char state = fk_proc_task_state(l->pid, tid);
    if (state == 'Z' || state == 'X')
        return true;
    l->v = fk_grow(l->v, &l->cap, l->n + 1, sizeof *l->v);
    l->v[l->n++] = tid;
    return true;
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Per-task targets: every thread of every listed process (children follow
 * through inherit); the others, and trees followed in a cgroup: one event
 * per CPU. */
static struct perf_thread_map *target_threads(struct fk_engine *e)
{
    const struct fk_target *t = e->o->target;
    if ((t->kind != FK_TARGET_PID && t->kind != FK_TARGET_RUN) || e->tree_cgroup || e->tree_bpf)
        return perf_thread_map__new_dummy();
    struct tid_list tids = { 0 };
    for (size_t i = 0; i < t->npids; i++) {
        size_t had = tids.n;
        tids.pid = t->pids[i];
        if (!fk_proc_for_each_tid(t->pids[i], add_tid, &tids) || tids.n == had) {
            fk_engine_fail(e, "process %d exited before the capture started", (int)t->pids[i]);
            free(tids.v);
            return NULL;
        }
    }
    struct perf_thread_map *m = perf_thread_map__new_array((int)tids.n, tids.v);
    free(tids.v);
    if (!m)
        fk_engine_fail(e, "out of memory setting up the capture");
    raise_nofile();
    return m;
}

/* Several events share the rings: each sample says which by its id. */
static bool learn_sample_ids(struct fk_engine *e)
{
    int ncpu = perf_cpu_map__nr(e->cpus), nthr = perf_thread_map__nr(e->threads);
    for (unsigned i = 0; i < e->nevents; i++)
        for (int c = 0; c < ncpu; c++)
            for (int th = 0; th < nthr; th++) {
                struct perf_counts_values cv = { 0 };
                if (perf_evsel__read(e->evsel[i], c, th, &cv) != 0) {
                    fk_engine_fail(e, "cannot read the id of event %u: %s", i, strerror(errno));
                    return false;
                }
                *fk_u64map_slot(&e->event_of, cv.id, true) = i + 1;
            }
    return true;
}

/* The fds libperf holds for event i, fds[cpu index * nthreads + thread]:
 * libperf opens with flags 0 and has no call that hands out or adopts an
 * fd, so they are found among this process's perf event fds by their ids
 * (PERF_EVENT_IOC_ID against the ids read with PERF_FORMAT_ID). false
 * with err set when one is not found. */
static bool event_fds(struct fk_engine *e, unsigned i, int *fds, char *err, size_t errlen)
{
    if (!(perf_evsel__attr(e->evsel[i])->read_format & PERF_FORMAT_ID)) {
        snprintf(err, errlen, "event %u has no PERF_FORMAT_ID: its fds cannot be told", i);
        return false;
    }
    struct fk_u64map slot = { 0 };
    int ncpu = perf_cpu_map__nr(e->cpus), nthr = perf_thread_map__nr(e->threads);
    size_t want = (size_t)ncpu * (size_t)nthr, found = 0;
    for (size_t k = 0; k < want; k++) {
        struct perf_counts_values cv = { 0 };
        fds[k] = -1;
        if (perf_evsel__read(e->evsel[i], (int)(k / (size_t)nthr), (int)(k % (size_t)nthr), &cv) == 0 &&
            cv.id)
            *fk_u64map_slot(&slot, cv.id, true) = k + 1;
    }
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        snprintf(err, errlen, "cannot list /proc/self/fd: %s", strerror(errno));
    struct dirent *de;
    while (d && found < want && (de = readdir(d))) {
        char link[64];
        ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
        if (n <= 0)
            continue;
        link[n] = 0;
        uint64_t id;
        int fd = atoi(de->d_name);
        if (strcmp(link, "anon_inode:[perf_event]") || ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0)
            continue;
        uint64_t *v = fk_u64map_slot(&slot, id, false);
        if (v && *v && fds[*v - 1] < 0) {
            fds[*v - 1] = fd;
            found++;
        }
    }
    if (d) {
        closedir(d);
        if (found < want)
            snprintf(err, errlen, "found %zu of the %zu fds of event %u", found, want, i);
    }
    fk_u64map_free(&slot);
    return found == want;
}

/* Trees in a cgroup: libperf's events were opened disabled on each CPU for
 * every task; each is replaced, under the same fd number, by the same
 * event limited to the cgroup (PERF_FLAG_PID_CGROUP, as perf's -G).
 * 0 or -errno; *what names the step that failed. */
static int adopt_cgroup_events(struct fk_engine *e, const char **what)
{
    int ncpu = perf_cpu_map__nr(e->cpus);
    int *fds = fk_malloc((size_t)ncpu * e->nevents * sizeof *fds);
    int err = 0;
    int cg = open(e->tree_cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0) {
        err = -errno;
        *what = "cannot open the cgroup";
    } else {
        char why[128];
        for (unsigned i = 0; !err && i < e->nevents; i++)
            if (!event_fds(e, i, fds + i * (unsigned)ncpu, why, sizeof why)) {
                err = -ENOENT;
                *what = "cannot find libperf's events";
            }
    }
    for (unsigned i = 0; !err && i < e->nevents; i++)
        for (int c = 0; !err && c < ncpu; c++) {
            int fd = (int)syscall(SYS_perf_event_open, perf_evsel__attr(e->evsel[i]), cg,
                                  perf_cpu_map__cpu(e->cpus, c).cpu, -1,
                                  PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
            if (fd < 0) {
                err = -errno;
                *what = "perf_event_open in the cgroup";
            } else {
                if (dup3(fd, fds[i * (unsigned)ncpu + (unsigned)c], O_CLOEXEC) < 0) {
                    err = -errno;
                    *what = "dup3";
                }
                close(fd);
            }
        }
    if (cg >= 0)
        close(cg);
    free(fds);
    return err;
}

/* The decoder's layouts again, after the attrs changed here (a sample's
 * PERF_SAMPLE_READ is laid out by read_format). */
static void relayout(struct fk_engine *e)
{
    for (unsigned i = 0; i < e->nevents; i++) {
        const struct perf_event_attr *a = perf_evsel__attr(e->evsel[i]);
        e->attr[i] = *a;
        fk_sample_format_init(&e->fmt[i], a->sample_type, a->read_format, a->sample_regs_user,
                              a->sample_id_all);
    }
}

/* Open every event on the maps; without PERF_FORMAT_LOST on kernels
 * before 6.0 (EINVAL). 0 or -errno. */
static int open_events(struct fk_engine *e)
{
    int err = perf_evlist__open(e->evlist);
    /* an inherited event's PERF_SAMPLE_READ (a kind's, e.g. off-CPU's
     * weights): Linux 6.12; its samples come without counts before */
    bool inherited_read = false;
    for (unsigned i = 0; i < e->nevents; i++) {
        const struct perf_event_attr *a = perf_evsel__attr(e->evsel[i]);
        inherited_read |= a->inherit && (a->sample_type & PERF_SAMPLE_READ);
    }
    if (err == -EINVAL && inherited_read) {
        for (unsigned i = 0; i < e->nevents; i++)
            if (perf_evsel__attr(e->evsel[i])->inherit)
                perf_evsel__attr(e->evsel[i])->sample_type &= ~(uint64_t)PERF_SAMPLE_READ;
        relayout(e);
        err = perf_evlist__open(e->evlist);
    }
    if (err == -EINVAL) {
        for (unsigned i = 0; i < e->nevents; i++)
            perf_evsel__attr(e->evsel[i])->read_format &= ~(uint64_t)PERF_FORMAT_LOST;
        relayout(e);
        err = perf_evlist__open(e->evlist);
    }
    return err;
}

/* A tree whose cgroup events or BPF filter the kernel refused (no
 * perf_event controller on cgroup v2, not allowed CPU-wide events, a
 * program refused): inherited per-task events, the reason (why, already
 * in tree_note) kept for the summary and the metadata. */
static bool per_task_instead(struct fk_engine *e)
{
    e->r->tree_mode = "per-task";
    e->tree_cgroup = NULL;
    e->follow_tree = false;
    e->tree_bpf = false;
    fk_bpftree_free(e->bpftree);
    e->bpftree = NULL;
    perf_evlist__close(e->evlist);
    const struct fk_target *t = e->o->target;
    for (unsigned i = 0; i < e->nevents; i++) {
        struct perf_event_attr *a = perf_evsel__attr(e->evsel[i]);
        a->inherit = 1;
        a->enable_on_exec = t->kind == FK_TARGET_RUN;
        /* (the gate, and a kind's opened hook -- fk_engine_cpu_events --
         * find fds by id) */
        if (e->nevents == 1 && !e->pygate && !e->kind->opened)
            a->read_format &= ~(uint64_t)PERF_FORMAT_ID;
        a->sample_type &= ~(uint64_t)PERF_SAMPLE_READ;  /* refused with inherit before 6.12 */
    }
    relayout(e);
    struct perf_thread_map *m = target_threads(e);
    if (!m)
        return false;
    perf_evlist__set_maps(e->evlist, e->cpus, m);
    perf_thread_map__put(e->threads);
    e->threads = m;
    return true;
}

/* attach(e, fd, err, errlen) on every fd of every event (cpus x threads
 * each, found by event_fds); stops at the first refusal, false with why
 * in err. */
static bool attach_each_fd(struct fk_engine *e,
                           bool (*attach)(struct fk_engine *e, int fd, char *err, size_t errlen),
                           char *err, size_t errlen)
{
    size_t n = (size_t)perf_cpu_map__nr(e->cpus) * (size_t)perf_thread_map__nr(e->threads);
    int *fds = fk_malloc(n * sizeof *fds);
    bool ok = true;
    for (unsigned i = 0; ok && i < e->nevents; i++) {
        ok = event_fds(e, i, fds, err, errlen);
        for (size_t c = 0; ok && c < n; c++)
            ok = attach(e, fds[c], err, errlen);
    }
    free(fds);
    return ok;
}

/* A 'pid' tree's filter on one fd; with the Python gate, its program
 * filters by the tree too (an event holds one program). */
static bool attach_tree_filter(struct fk_engine *e, int fd, char *err, size_t errlen)
{
    return e->pygate ? fk_pygate_attach(e->pygate, fd, fk_bpftree_map(e->bpftree), err, errlen)
                     : fk_bpftree_filter(e->bpftree, fd, err, errlen);
}

static bool attach_gate(struct fk_engine *e, int fd, char *err, size_t errlen)
{
    return fk_pygate_attach(e->pygate, fd, -1, err, errlen);
}

/* The in-kernel tree (capture/bpftree.h) on every CPU's sampling event:
 * the fork program attached now, before the tree is seeded from /proc
 * (engine_start), so no child falls between. Sized for a host's worth of
 * processes and threads at once (pid_max is 4M, but a tree of more than
 * 64k live tasks is not what a 'pid' target is); its memory is charged
 * with the tree's. false with why in err. */
#define FK_ENGINE_BPFTREE_ENTRIES 65536
static bool attach_bpftree(struct fk_engine *e, char *err, size_t errlen)
{
    e->bpftree = fk_bpftree_new(FK_ENGINE_BPFTREE_ENTRIES, err, errlen);
    if (!e->bpftree)
        return false;
    /* its fork program's event closed with the capture's, after the files
     * (a fallback to per-task events leaves it running until then) */
    int d = fcntl(fk_bpftree_fork_event(e->bpftree), F_DUPFD_CLOEXEC, 0);
    if (d >= 0)
        fk_engine_keep_fd(e, d);
    return attach_each_fd(e, attach_tree_filter, err, errlen);
}

/* The Python wake-up gate (config.c choose_wakeups) on every fd of every
 * event. Refused (no fds to tell: per-task events after a fallback; the
 * kernel's refusal), the rings are read on the reader's clock (or at
 * their watermark where the ring size ruled the clock out, config.c
 * choose_reads), Python samples no sooner: the reason goes in the
 * result, and the gate is dropped. */
static void attach_pygate(struct fk_engine *e)
{
    char why[160] = "";
    if (attach_each_fd(e, attach_gate, why, sizeof why))
        return;
    e->r->reader_wakeups = e->poll_ms ? "clock" : "watermark";
    snprintf(e->r->reader_wakeups_note, sizeof e->r->reader_wakeups_note,
             "the Python wake-up gate was refused (%s)", why);
    fk_pygate_free(e->pygate);
    e->pygate = NULL;
}

bool fk_engine_open(struct fk_engine *e)
{
    static bool inited;
    if (!inited) {
        libperf_init(libperf_print);
        inited = true;
    }
    e->cpus = perf_cpu_map__new_online_cpus();
    if (!e->cpus) {
        fk_engine_fail(e, "cannot read the online CPUs");
        return false;
    }
    e->r->ncpus = perf_cpu_map__nr(e->cpus);
    e->threads = target_threads(e);
    if (!e->threads)
        return false;
    e->evlist = perf_evlist__new();
    if (!e->evlist) {
        fk_engine_fail(e, "out of memory setting up the capture");
        return false;
    }
    for (unsigned i = 0; i < e->nevents; i++) {
        e->evsel[i] = perf_evsel__new(&e->attr[i]);
        if (!e->evsel[i]) {
            fk_engine_fail(e, "out of memory setting up the capture");
            return false;
        }
        perf_evlist__add(e->evlist, e->evsel[i]);
    }
    perf_evlist__set_maps(e->evlist, e->cpus, e->threads);
    int err = open_events(e);
    const char *what = "perf_event_open";
    if (e->tree_cgroup && (err < 0 || (err = adopt_cgroup_events(e, &what)) < 0)) {
        snprintf(e->r->tree_note, sizeof e->r->tree_note, "cgroup events refused (%s: %s)", what,
                 strerror(-err));
        if (!per_task_instead(e))
            return false;
        err = open_events(e);
    }
    char why[200];
    if (e->tree_bpf && (err < 0 || !attach_bpftree(e, why, sizeof why))) {
        size_t len = strlen(e->r->tree_note);
        if (err < 0)
            snprintf(why, sizeof why, "per-CPU events refused: %s", strerror(-err));
        snprintf(e->r->tree_note + len, sizeof e->r->tree_note - len, "; BPF tree filter refused (%s)",
                 why);
        if (!per_task_instead(e))
            return false;
        err = open_events(e);
    }
    /* A thread that exits between the listing and its event's opening
     * (ESRCH; a server's per-connection threads under load do) is no
     * reason to give up: list the tasks again, a bounded number of times. */
    for (int tries = 0; err == -ESRCH && perf_thread_map__nr(e->threads) > 1 && tries < 16; tries++) {
        struct perf_thread_map *m = target_threads(e);
        if (!m)
            return false;       /* the process itself is gone: said */
        perf_evlist__set_maps(e->evlist, e->cpus, m);
        perf_thread_map__put(e->threads);
        e->threads = m;
        err = open_events(e);
    }
    if (err < 0) {
        open_error(e, -err);
        return false;
    }
    if (e->pygate && !e->bpftree)     /* (attach_bpftree: the gate is its filter) */
        attach_pygate(e);
    return e->nevents == 1 || learn_sample_ids(e);
}

bool fk_engine_mmap(struct fk_engine *e)
{
    unsigned page = (unsigned)sysconf(_SC_PAGESIZE);
    /* the user's locked-memory budget may be partly used by other perf
     * sessions: halve until it fits, and say so */
    for (;;) {
        errno = 0;
        int err = perf_evlist__mmap(e->evlist, (int)e->pages);
        int me = errno ? errno : -err;
        if (err >= 0)
            break;
        perf_evlist__munmap(e->evlist);
        if (me != EPERM || e->pages <= 8) {
            fk_engine_fail(e, "cannot map the perf ring buffers (%u pages per CPU): %s; "
                           "see /proc/sys/kernel/perf_event_mlock_kb", e->pages, strerror(me));
            return false;
        }
        e->pages /= 2;
        fk_engine_warn(e, "locked memory for perf rings exhausted (kernel.perf_event_mlock_kb): "
                       "retrying with %u KiB per CPU; records may be lost (they are counted)",
                       e->pages * page / 1024);
    }
    e->r->ring_pages = e->pages;
    return true;
}

/* CGROUP: one counting event per CPU that the kernel limits to the cgroup
 * and its descendants (PERF_FLAG_PID_CGROUP), so the target's own count is
 * known exactly: the sampling event stays host-wide (libperf cannot open
 * cgroup events), its samples filtered by cgroup id. fds[i] = -1 on
 * failure; the count is then reported as unknown. */
static int *open_cgroup_counters(const struct perf_event_attr *sample_attr, const char *dir,
                                 struct perf_cpu_map *cpus)
{
    int n = perf_cpu_map__nr(cpus);
    int *fds = fk_malloc((size_t)n * sizeof *fds);
    for (int i = 0; i < n; i++)
        fds[i] = -1;
    int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0)
        return fds;
    struct perf_event_attr a = { 0 };
    a.size = sizeof a;
    a.type = sample_attr->type;
    a.config = sample_attr->config;
    a.exclude_kernel = sample_attr->exclude_kernel;
    a.exclude_user = sample_attr->exclude_user;
    a.exclude_hv = 1;
    a.disabled = 1;
    for (int i = 0; i < n; i++) {
        int cpu = perf_cpu_map__cpu(cpus, i).cpu;
        fds[i] = (int)syscall(SYS_perf_event_open, &a, cg, cpu, -1,
                              PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
        if (fds[i] < 0)
            break;
    }
    close(cg);
    return fds;
}

/* ioctl every counter (enable/disable); false if any is missing. */
static bool cgroup_counters_ioctl(int *fds, int n, unsigned long req)
{
    bool ok = fds != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = fds[i] >= 0 && ioctl(fds[i], req, 0) == 0;
    return ok;
}

/* Open (first enable), enable or disable the cgroup target's counters;
 * e->cg_counting says whether they count the whole window. */
void fk_engine_cgroup_counters(struct fk_engine *e, unsigned long req)
{
    if (e->o->target->kind != FK_TARGET_CGROUP)
        return;
    if (req == PERF_EVENT_IOC_ENABLE) {
        e->cgfds = open_cgroup_counters(&e->attr[0], e->o->target->cgroup_dir, e->cpus);
        e->cg_counting = cgroup_counters_ioctl(e->cgfds, e->r->ncpus, req);
    } else {
        e->cg_counting = e->cg_counting && cgroup_counters_ioctl(e->cgfds, e->r->ncpus, req);
    }
}

/* libperf's (internal/evsel.h, not installed): the sample-id arrays the
 * evlist's mmap allocates for several events or an event read with
 * PERF_FORMAT_ID, which deleting does not free. */
void perf_evsel__free_id(struct perf_evsel *evsel);

/* The events apart from the engine (fk_engine_hold_events). */
struct fk_held_events {
    struct perf_evlist *evlist;
    struct perf_evsel *evsel[FK_EVKIND_MAX_EVENTS];
    unsigned nevents;
    struct perf_cpu_map *cpus;
    struct perf_thread_map *threads;
    int *cgfds;
    int ncgfds;
    int *kept_fds;
    size_t nkept_fds;
};

static void events_close(struct fk_held_events *h)
{
    for (unsigned i = 0; i < h->nevents; i++)
        if (h->evsel[i] && (h->nevents > 1 ||
                            (perf_evsel__attr(h->evsel[i])->read_format & PERF_FORMAT_ID)))
            perf_evsel__free_id(h->evsel[i]);
    if (h->evlist)
        perf_evlist__delete(h->evlist);     /* unmaps, closes, deletes its evsels */
    else
        for (unsigned i = 0; i < h->nevents; i++)
            if (h->evsel[i])
                perf_evsel__delete(h->evsel[i]);
    perf_thread_map__put(h->threads);
    perf_cpu_map__put(h->cpus);
    for (int i = 0; h->cgfds && i < h->ncgfds; i++)
        if (h->cgfds[i] >= 0)
            close(h->cgfds[i]);
    free(h->cgfds);
    for (size_t i = 0; i < h->nkept_fds; i++)
        close(h->kept_fds[i]);
    free(h->kept_fds);
}

/* The engine's events, its fields cleared. */
static struct fk_held_events take_events(struct fk_engine *e)
{
    struct fk_held_events h = {
        .evlist = e->evlist, .nevents = e->nevents, .cpus = e->cpus, .threads = e->threads,
        .cgfds = e->cgfds, .ncgfds = e->r ? e->r->ncpus : 0,
        .kept_fds = e->kept_fds, .nkept_fds = e->nkept_fds,
    };
    memcpy(h.evsel, e->evsel, sizeof h.evsel);
    e->evlist = NULL;
    memset(e->evsel, 0, sizeof e->evsel);
    e->threads = NULL;
    e->cpus = NULL;
    e->cgfds = NULL;
    e->kept_fds = NULL;
    e->nkept_fds = 0;
    return h;
}

void fk_engine_keep_fd(struct fk_engine *e, int fd)
{
    e->kept_fds = fk_grow(e->kept_fds, &e->capkept_fds, e->nkept_fds + 1, sizeof *e->kept_fds);
    e->kept_fds[e->nkept_fds++] = fd;
}

bool fk_engine_cpu_events(struct fk_engine *e, unsigned event, uint32_t type, uint64_t config,
                          int *fds, int *cpus, size_t cap, size_t *n, char *err, size_t errlen)
{
    *n = 0;
    if (event >= e->nevents || !e->evsel[event] || !e->cpus || !e->threads) {
        snprintf(err, errlen, "no event %u to add CPU events to", event);
        return false;
    }
    int ncpu = perf_cpu_map__nr(e->cpus), nthr = perf_thread_map__nr(e->threads);
    if (ncpu <= 0 || (size_t)ncpu > cap) {
        snprintf(err, errlen, "%d CPUs: room for %zu", ncpu, cap);
        return false;
    }
    /* the rings: event's fds, [cpu index * nthreads + thread]; each CPU's
     * first is in (or writes to) that CPU's ring */
    int *own = fk_malloc((size_t)ncpu * (size_t)nthr * sizeof *own);
    bool ok = event_fds(e, event, own, err, errlen);
    struct perf_event_attr a = e->attr[event];
    a.type = type;
    a.config = config;
    a.disabled = 0;
    a.inherit = 0;
    a.enable_on_exec = 0;
    /* no side-band: the engine's event 0 has it */
    a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = a.context_switch = 0;
    a.mmap_data = a.namespaces = a.ksymbol = a.bpf_event = a.cgroup = a.text_poke = 0;
    a.build_id = 0;
    for (int c = 0; ok && c < ncpu; c++) {
        int cpu = perf_cpu_map__cpu(e->cpus, c).cpu;
        int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        uint64_t id = 0;
        if (fd < 0) {
            snprintf(err, errlen, "perf_event_open on CPU %d: %s", cpu, strerror(errno));
            ok = false;
            break;
        }
        fk_engine_keep_fd(e, fd);
        if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, own[(size_t)c * (size_t)nthr]) != 0 ||
            ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
            snprintf(err, errlen, "CPU %d's event to its ring: %s", cpu, strerror(errno));
            ok = false;
            break;
        }
        *fk_u64map_slot(&e->event_of, id, true) = event + 1;
        fds[*n] = fd;
        cpus[*n] = cpu;
        (*n)++;
    }
    free(own);
    return ok;
}

struct fk_held_events *fk_engine_hold_events(struct fk_engine *e)
{
    if (!e->evlist && !e->nevents)
        return NULL;
    if (e->evlist)
        perf_evlist__munmap(e->evlist);     /* the rings' memory now */
    struct fk_held_events *h = fk_calloc(1, sizeof *h);
    *h = take_events(e);
    return h;
}

void fk_held_events_close(struct fk_held_events *h)
{
    if (!h)
        return;
    events_close(h);
    free(h);
}

void fk_engine_close(struct fk_engine *e)
{
    struct fk_held_events h = take_events(e);
    events_close(&h);
    fk_u64map_free(&e->event_of);
    for (unsigned i = 0; i < FK_EVKIND_MAX_EVENTS; i++) {
        free(e->period_fds[i]);     /* libperf's fds, closed with the evlist */
        e->period_fds[i] = NULL;
        e->nperiod_fds[i] = 0;
    }
}

/* Event i's fds, for fk_engine_set_period (event_fds). */
static bool find_event_fds(struct fk_engine *e, unsigned i, char *err, size_t errlen)
{
    size_t n = (size_t)perf_cpu_map__nr(e->cpus) * (size_t)perf_thread_map__nr(e->threads);
    int *fds = fk_malloc((n ? n : 1) * sizeof *fds);
    if (!n || !event_fds(e, i, fds, err, errlen)) {
        if (!n)
            snprintf(err, errlen, "event %u has no fds", i);
        free(fds);
        return false;
    }
    free(e->period_fds[i]);
    e->period_fds[i] = fds;
    e->nperiod_fds[i] = n;
    return true;
}

bool fk_engine_set_period(struct fk_engine *e, unsigned event, uint64_t period, uint64_t spread,
                          char *err, size_t errlen)
{
    if (event >= e->nevents || !e->evsel[event]) {
        snprintf(err, errlen, "no event %u to set a period of %llu on", event,
                 (unsigned long long)period);
        return false;
    }
    if (!e->nperiod_fds[event] && !find_event_fds(e, event, err, errlen))
        return false;
    if (spread >= period)
        spread = period ? period - 1 : 0;
    if (spread && !e->period_draws)
        e->period_draws = fk_now_ns();      /* the draws' seed */
    for (size_t k = 0; period && k < e->nperiod_fds[event]; k++) {
        uint64_t p = period;
        if (spread)
            p = period - spread + fk_hash_u64(e->period_draws++) % (2 * spread + 1);
        if (ioctl(e->period_fds[event][k], PERF_EVENT_IOC_PERIOD, &p) != 0) {
            snprintf(err, errlen, "PERF_EVENT_IOC_PERIOD %llu: %s", (unsigned long long)p,
                     strerror(errno));
            return false;
        }
    }
    return true;
}

const char *fk_engine_tree_cgroup(const struct fk_engine *e)
{
    return e->tree_cgroup;
}

bool fk_engine_inherits(const struct fk_engine *e)
{
    return e->evsel[0] && perf_evsel__attr(e->evsel[0])->inherit;
}
