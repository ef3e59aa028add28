/* SPDX-License-Identifier: GPL-2.0-only */
/* One counted event sampled one in N: see evsample.h. */
#include "capture/evsample.h"
#include "capture/period_check.h"
#include "util/buf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <perf/core.h>
#include <perf/cpumap.h>
#include <perf/event.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/mmap.h>
#include <perf/threadmap.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int quiet_print(enum libperf_print_level level, const char *fmt, va_list ap)
{
    (void)level; (void)fmt; (void)ap;
    return 0;
}

/* --- target filters (user, cgroup): one decision per process ---------- */

struct keep_map { pid_t *pid; int8_t *keep; size_t n, mask; };

static int8_t *keep_slot(struct keep_map *m, pid_t pid, bool *fresh)
{
    if (!m->pid || (m->n + 1) * 2 > m->mask + 1) {
        size_t oldn = m->pid ? m->mask + 1 : 0;
        pid_t *op = m->pid;
        int8_t *ok = m->keep;
        m->mask = oldn ? oldn * 2 - 1 : 255;
        m->pid = fk_calloc(m->mask + 1, sizeof *m->pid);
        m->keep = fk_calloc(m->mask + 1, sizeof *m->keep);
        m->n = 0;
        for (size_t i = 0; i < oldn; i++)
            if (op[i]) {
                bool f;
                *keep_slot(m, op[i], &f) = ok[i];
            }
        free(op);
        free(ok);
    }
    size_t i = ((uint32_t)pid * 2654435761u) & m->mask;
    while (m->pid[i] && m->pid[i] != pid)
        i = (i + 1) & m->mask;
    *fresh = !m->pid[i];
    if (*fresh) {
        m->pid[i] = pid;
        m->n++;
    }
    return &m->keep[i];
}

static bool proc_uid_is(pid_t pid, uid_t uid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool yes = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long r, e;
        if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
            yes = r == uid || e == uid;
            break;
        }
    }
    fclose(f);
    return yes;
}

static bool proc_in_cgroup(pid_t pid, const char *cg)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool yes = false;
    size_t n = strlen(cg);
    while (n > 1 && cg[n - 1] == '/')
        n--;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3))
            continue;
        const char *p = line + 3;
        yes = !strncmp(p, cg, n) && (p[n] == '/' || p[n] == '\n' || p[n] == 0 || n == 1);
        break;
    }
    fclose(f);
    return yes;
}

/* --- the capture ---------------------------------------------------------- */

struct cap {
    const struct fk_evs_opts *o;
    const struct fk_evs_target *tg;
    struct fk_minisym *sym;
    struct fk_stacktab *t;
    struct fk_evs_result *r;
    struct keep_map keep;
    struct fk_buf key;
    struct fk_buf pending;  /* this round's sample records */
    uint8_t *ctx;           /* per-callchain-entry context, grown as needed */
    size_t ctxcap;
};

static bool keep_pid(struct cap *c, pid_t pid)
{
    if (c->tg->kind != FK_EVS_USER && c->tg->kind != FK_EVS_CGROUP)
        return true;
    if (pid <= 0)
        return false;       /* the idle task, kernel threads' pid 0 */
    bool fresh;
    int8_t *k = keep_slot(&c->keep, pid, &fresh);
    if (fresh)
        *k = c->tg->kind == FK_EVS_USER ? proc_uid_is(pid, c->tg->uid) : proc_in_cgroup(pid, c->tg->cgroup);
    return *k;
}

static void on_sample(struct cap *c, const struct perf_event_header *h)
{
    const uint8_t *p = (const uint8_t *)(h + 1), *end = (const uint8_t *)h + h->size;
    if (p + 8 + 8 + 8 > end)
        return;
    uint64_t ip;
    uint32_t pid, tid;
    uint64_t nr;
    memcpy(&ip, p, 8);
    memcpy(&pid, p + 8, 4);
    memcpy(&tid, p + 12, 4);
    memcpy(&nr, p + 16, 8);
    const uint64_t *ips = (const uint64_t *)(p + 24);
    if ((const uint8_t *)(ips + nr) > end)
        nr = (uint64_t)(end - (const uint8_t *)ips) / 8;
    c->r->samples++;
    if (!keep_pid(c, (pid_t)pid))
        return;
    c->r->kept++;

    /* Mark each entry kernel or user from the context markers; the chain is
     * leaf first, kernel part before user part, so walking it backwards
     * gives the folded order: outermost user frame ... kernel leaf. */
    c->ctx = fk_grow(c->ctx, &c->ctxcap, nr + 1, 1);
    uint8_t cur = ip >= 0xffff800000000000ULL ? 1 : 0;
    for (uint64_t i = 0; i < nr; i++) {
        if (ips[i] >= (uint64_t)PERF_CONTEXT_MAX) {
            cur = ips[i] == (uint64_t)PERF_CONTEXT_KERNEL ? 1
                : ips[i] == (uint64_t)PERF_CONTEXT_USER ? 0 : 2;
            c->ctx[i] = 3;      /* marker */
        } else {
            c->ctx[i] = cur;
        }
    }
    fk_buf_reset(&c->key);
    fk_buf_adds(&c->key, fk_minisym_comm_of(c->sym, (pid_t)pid, (pid_t)tid));
    bool any = false;
    for (uint64_t i = nr; i-- > 0;) {
        if (c->ctx[i] >= 2)
            continue;
        fk_buf_addc(&c->key, ';');
        fk_minisym_name(c->sym, (pid_t)pid, ips[i], c->ctx[i] == 1, &c->key);
        any = true;
    }
    if (!any) {                 /* no callchain: the sampled ip alone */
        fk_buf_addc(&c->key, ';');
        fk_minisym_name(c->sym, (pid_t)pid, ip, ip >= 0xffff800000000000ULL, &c->key);
    }
    /* Folded names must not contain the separator or a newline. */
    for (size_t i = 0; i < c->key.len; i++)
        if (c->key.data[i] == '\n')
            c->key.data[i] = ' ';
    fk_stacktab_add(c->t, c->key.data, c->key.len, c->o->period);
}

static void on_event(struct cap *c, union perf_event *ev)
{
    switch (ev->header.type) {
    case PERF_RECORD_SAMPLE:
        /* Later, after every ring's side-band records of this round: a
         * process's MMAP2 may sit in another CPU's ring than its samples. */
        fk_buf_add(&c->pending, ev, ev->header.size);
        break;
    case PERF_RECORD_MMAP2:
        fk_minisym_mmap(c->sym, (pid_t)ev->mmap2.pid, ev->mmap2.start, ev->mmap2.len,
                        ev->mmap2.pgoff, ev->mmap2.prot, ev->mmap2.filename);
        break;
    case PERF_RECORD_MMAP:
        fk_minisym_mmap(c->sym, (pid_t)ev->mmap.pid, ev->mmap.start, ev->mmap.len,
                        ev->mmap.pgoff, 0x4 /* PROT_EXEC: MMAP records are executable maps */, ev->mmap.filename);
        break;
    case PERF_RECORD_COMM:
        fk_minisym_comm(c->sym, (pid_t)ev->comm.pid, (pid_t)ev->comm.tid, ev->comm.comm,
                        (ev->header.misc & PERF_RECORD_MISC_COMM_EXEC) != 0);
        break;
    case PERF_RECORD_FORK:
        c->r->forks++;
        fk_minisym_fork(c->sym, (pid_t)ev->fork.pid, (pid_t)ev->fork.ppid);
        break;
    case PERF_RECORD_EXIT:
        fk_minisym_exit(c->sym, (pid_t)ev->fork.pid, (pid_t)ev->fork.tid);
        break;
    case PERF_RECORD_LOST:
        c->r->lost += ev->lost.lost;
        break;
    case PERF_RECORD_THROTTLE:
        c->r->throttles++;
        break;
    default:
        break;
    }
}

static void drain(struct cap *c, struct perf_evlist *evlist)
{
    struct perf_mmap *map;
    fk_buf_reset(&c->pending);
    perf_evlist__for_each_mmap(evlist, map, false) {
        if (perf_mmap__read_init(map) < 0)
            continue;
        union perf_event *ev;
        while ((ev = perf_mmap__read_event(map))) {
            on_event(c, ev);
            perf_mmap__consume(map);
        }
        perf_mmap__read_done(map);
    }
    for (size_t off = 0; off + sizeof(struct perf_event_header) <= c->pending.len;) {
        struct perf_event_header h;
        memcpy(&h, c->pending.data + off, sizeof h);
        if (h.size < sizeof h || off + h.size > c->pending.len)
            break;
        /* Records are 8-byte multiples and the buffer is malloc-aligned. */
        on_sample(c, (const struct perf_event_header *)(c->pending.data + off));
        off += h.size;
    }
}

/* Every thread of every pid, for per-thread counters (inherit covers later
 * children). */
static struct perf_thread_map *threads_of(const pid_t *pids, size_t npids)
{
    pid_t *tids = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < npids; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", (int)pids[i]);
        DIR *d = opendir(path);
        if (!d) {
            fk_error("no process %d (%s): check the PID", (int)pids[i], strerror(errno));
            free(tids);
            return NULL;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            char *end;
            long tid = strtol(e->d_name, &end, 10);
            if (*end || tid <= 0)
                continue;
            tids = fk_grow(tids, &cap, n + 1, sizeof *tids);
            tids[n++] = (pid_t)tid;
        }
        closedir(d);
    }
    struct perf_thread_map *m = perf_thread_map__new_array((int)n, tids);
    free(tids);
    return m;
}

static int paranoid_level(void)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int v = 2;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = 2;
        fclose(f);
    }
    return v;
}

static void open_error(int err, const struct fk_evs_opts *o)
{
    err = err < 0 ? -err : err;
    if (err == EACCES || err == EPERM)
        fk_error("perf_event_open: %s: run as root, or lower kernel.perf_event_paranoid "
                 "(now %d; kernel stacks need <= 1)", strerror(err), paranoid_level());
    else if (err == ENOENT || err == EOPNOTSUPP || err == EINVAL)
        fk_error("perf_event_open: the kernel refuses event type %u config %llu: %s",
                 o->type, (unsigned long long)o->config, strerror(err));
    else if (err == ESRCH)
        fk_error("perf_event_open: the target process is gone");
    else
        fk_error("perf_event_open: %s", strerror(err));
}

static uint64_t now_ms(void)
{
    return fk_now_ns() / 1000000u;
}

bool fk_evs_capture(const struct fk_evs_opts *o, const struct fk_evs_target *tg,
                    struct fk_minisym *sym, struct fk_stacktab *t, struct fk_evs_result *r)
{
    static bool inited;
    if (!inited) {
        libperf_init(quiet_print);
        inited = true;
    }
    memset(r, 0, sizeof *r);
    struct cap c = { .o = o, .tg = tg, .sym = sym, .t = t, .r = r };
    bool ok = false;
    int go[2] = { -1, -1 }, gone[2] = { -1, -1 };
    pid_t child = -1;

    struct perf_event_attr attr = {
        .size = sizeof attr,
        .type = o->type,
        .config = o->config,
        .sample_period = o->period ? o->period : 1,
        /* No PERF_SAMPLE_PERIOD: with a fixed period it would make the
         * kernel take a sample for every hit (period_check.h). */
        .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN,
        .disabled = 1,
        .exclude_kernel = o->exclude_kernel,
        .exclude_user = o->exclude_user,
        .exclude_callchain_kernel = !o->kernel_stacks,
        .mmap = 1,          /* needed too: the kernel counts mmap events by this bit */
        .mmap2 = 1,
        .comm = 1,
        .comm_exec = 1,
        .task = 1,
        .sample_id_all = 1,
        .watermark = 1,
    };
    fk_period_fix_attr(&attr);     /* a no-op here; the guard for future edits */

    struct perf_cpu_map *cpus = perf_cpu_map__new_online_cpus();
    struct perf_thread_map *threads = NULL;
    if (!cpus) {
        fk_error("cannot read the online CPUs");
        return false;
    }
    r->ncpus = (unsigned)perf_cpu_map__nr(cpus);

    switch (tg->kind) {
    case FK_EVS_HOST:
    case FK_EVS_USER:
    case FK_EVS_CGROUP:
        threads = perf_thread_map__new_dummy();
        break;
    case FK_EVS_PIDS:
        attr.inherit = 1;
        threads = threads_of(tg->pids, tg->npids);
        if (!threads)
            goto out;
        break;
    case FK_EVS_RUN:
        attr.inherit = 1;
        attr.enable_on_exec = 1;
        if (pipe2(go, O_CLOEXEC) != 0 || pipe2(gone, O_CLOEXEC) != 0) {
            fk_error("pipe: %s", strerror(errno));
            goto out;
        }
        child = fork();
        if (child < 0) {
            fk_error("fork: %s", strerror(errno));
            goto out;
        }
        if (child == 0) {
            char b;
            close(go[1]);
            close(gone[0]);
            /* Wait until the counters are attached, then become CMD. */
            if (read(go[0], &b, 1) != 1)
                _exit(127);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            execvp(tg->argv[0], tg->argv);
            int e = errno;
            if (write(gone[1], &e, sizeof e) < 0)
                _exit(127);
            _exit(127);
        }
        close(go[0]);
        go[0] = -1;
        close(gone[1]);
        gone[1] = -1;
        r->child_pid = child;
        threads = perf_thread_map__new_array(1, &child);
        break;
    }
    if (!threads) {
        fk_error("cannot build the thread map");
        goto out;
    }

    struct perf_evlist *evlist = perf_evlist__new();
    struct perf_evsel *evsel = perf_evsel__new(&attr);
    if (!evlist || !evsel) {
        fk_error("out of memory creating the event");
        goto out;
    }
    perf_evlist__add(evlist, evsel);
    perf_evlist__set_maps(evlist, cpus, threads);

    int err = perf_evlist__open(evlist);
    if (err) {
        open_error(err, o);
        goto out_evlist;
    }
    int pages = o->ring_pages ? o->ring_pages : 128;
    while ((err = perf_evlist__mmap(evlist, pages)) && pages > 8)
        pages /= 2;         /* perf_event_mlock_kb for non-root */
    if (err) {
        fk_error("cannot map the perf ring buffers: %s (perf_event_mlock_kb?)", strerror(err < 0 ? -err : err));
        goto out_evlist;
    }
    r->instances = (uint64_t)r->ncpus * (uint64_t)perf_thread_map__nr(threads);

    /* Processes that exist now are not reported by side-band records. */
    if (tg->kind == FK_EVS_PIDS)
        for (size_t i = 0; i < tg->npids; i++)
            fk_minisym_scan_pid(sym, tg->pids[i]);
    else if (tg->kind != FK_EVS_RUN)
        fk_minisym_scan_all(sym);

    uint64_t t0 = now_ms(), last_tick = t0;
    if (tg->kind == FK_EVS_RUN) {
        if (write(go[1], "g", 1) != 1) {
            fk_error("cannot start the command: %s", strerror(errno));
            goto out_evlist;
        }
        close(go[1]);
        go[1] = -1;
        int e;
        ssize_t n = read(gone[0], &e, sizeof e);   /* EOF: exec succeeded */
        if (n == (ssize_t)sizeof e) {
            fk_error("cannot run '%s': %s", tg->argv[0], strerror(e));
            waitpid(child, NULL, 0);
            child = -1;
            goto out_evlist;
        }
    } else {
        perf_evlist__enable(evlist);
    }

    for (;;) {
        if (perf_evlist__poll(evlist, 100) > 0)
            perf_evlist__filter_pollfd(evlist, POLLHUP | POLLERR);
        drain(&c, evlist);
        uint64_t now = now_ms();
        r->elapsed_ms = now - t0;
        if (o->tick && now - last_tick >= 100) {
            o->tick(o->tick_ctx, r->elapsed_ms);
            last_tick = now;
        }
        if (o->stop && *o->stop) {
            r->stopped = true;
            break;
        }
        if (o->duration_ms && r->elapsed_ms >= o->duration_ms)
            break;
        if (tg->kind == FK_EVS_RUN) {
            int st;
            pid_t w = waitpid(child, &st, WNOHANG);
            if (w == child) {
                r->child_exited = true;
                r->child_status = st;
                child = -1;
                break;
            }
        } else if (tg->kind == FK_EVS_PIDS) {
            size_t alive = 0;
            for (size_t i = 0; i < tg->npids; i++)
                if (kill(tg->pids[i], 0) == 0 || errno == EPERM)
                    alive++;
            if (!alive)
                break;
        }
    }
    perf_evlist__disable(evlist);
    drain(&c, evlist);
    r->elapsed_ms = now_ms() - t0;

    /* The event's own count: after disabling, so no sample can follow it. */
    r->have_count = true;
    for (int ci = 0; ci < perf_cpu_map__nr(cpus); ci++)
        for (int ti = 0; ti < perf_thread_map__nr(threads); ti++) {
            struct perf_counts_values cv = { 0 };
            if (perf_evsel__read(evsel, ci, ti, &cv) != 0) {
                r->have_count = false;
                continue;
            }
            r->count += cv.val;
        }
    /* Each inherited copy keeps its own remainder too. */
    if (attr.inherit)
        r->instances += r->forks * r->ncpus;
    ok = true;

out_evlist:
    /* Unmaps, closes, deletes the evsel and drops its references to the maps. */
    perf_evlist__delete(evlist);
out:
    if (child > 0) {
        /* Stopped early (Ctrl-C): the command ends with us. */
        if (!r->child_exited) {
            kill(child, SIGTERM);
            int st;
            if (waitpid(child, &st, 0) == child) {
                r->child_exited = true;
                r->child_status = st;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        if (go[i] >= 0)
            close(go[i]);
        if (gone[i] >= 0)
            close(gone[i]);
    }
    perf_cpu_map__put(cpus);
    perf_thread_map__put(threads);
    free(c.keep.pid);
    free(c.keep.keep);
    fk_buf_free(&c.key);
    fk_buf_free(&c.pending);
    free(c.ctx);
    return ok;
}
