/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture engine (see capture.h). */
#include "capture/capture.h"
#include "util/buf.h"
#include "util/hindex.h"
#include "util/procfs.h"

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
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Records newer than this are held back one pass so records from all CPU
 * rings are handled in time order (an exec's MMAP2 on one CPU before the
 * samples that follow on another). */
#define REORDER_SLACK_NS (20 * 1000000ull)
#define POLL_MS 100
#define PRELOAD_NS (20 * 1000000ull)
#define DRAIN_NS (10 * 1000000ull)
#define MAX_FRAMES 512

static uint64_t read_sysctl(const char *name, uint64_t dflt)
{
    char path[128], buf[64];
    snprintf(path, sizeof path, "/proc/sys/kernel/%s", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return dflt;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return dflt;
    buf[n] = 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    return end == buf ? dflt : (uint64_t)v;
}

uint64_t fk_perf_max_sample_rate(void) { return read_sysctl("perf_event_max_sample_rate", 100000); }
uint64_t fk_perf_mlock_kb(void) { return read_sysctl("perf_event_mlock_kb", 516); }
int fk_perf_paranoid(void) { return (int)(int64_t)read_sysctl("perf_event_paranoid", 2); }

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fk_event_cpu_default(struct fk_event *ev, uint64_t freq)
{
    memset(ev, 0, sizeof *ev);
    ev->freq = freq;
    struct perf_event_attr a = { 0 };
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_CPU_CYCLES;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        ev->type = PERF_TYPE_HARDWARE;
        ev->config = PERF_COUNT_HW_CPU_CYCLES;
        snprintf(ev->name, sizeof ev->name, "cycles");
    } else {
        ev->type = PERF_TYPE_SOFTWARE;
        ev->config = PERF_COUNT_SW_CPU_CLOCK;
        snprintf(ev->name, sizeof ev->name, "cpu-clock");
    }
}

const char *fk_callgraph_name(enum fk_callgraph m)
{
    return m == FK_CG_DWARF ? "dwarf" : m == FK_CG_FP ? "fp" : "auto";
}

void fk_capture_opts_init(struct fk_capture_opts *o)
{
    memset(o, 0, sizeof *o);
    fk_event_cpu_default(&o->event, 99);
    o->callgraph = FK_CG_AUTO;
    o->stack_size = FK_STACK_SIZE_DEFAULT;
    o->duration_ms = 60000;
    o->max_mem_bytes = 256ull << 20;
    o->sym.kernel = true;
    o->sym.jit = true;
    o->sym.annotate = true;
    o->sym.debuginfod_urls = getenv("DEBUGINFOD_URLS");   /* like gdb, perf: opt-in by the variable */
}

/* Small u64 -> u64 map: pairs in an array, indexed by util/hindex. */
struct u64map {
    struct u64pair { uint64_t key, val; } *v;
    size_t n, cap;
    struct fk_hindex index;
};

/* key's value (created as 0 with add, else NULL when absent); valid until
 * the next add */
static uint64_t *u64map_slot(struct u64map *m, uint64_t key, bool add)
{
    uint64_t h = fk_hash_u64(key);
    struct fk_hiter it = fk_hindex_find(&m->index, h);
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (m->v[i].key == key)
            return &m->v[i].val;
    if (!add)
        return NULL;
    m->v = fk_grow(m->v, &m->cap, m->n + 1, sizeof *m->v);
    m->v[m->n] = (struct u64pair){ key, 0 };
    fk_hindex_add(&m->index, h, (uint32_t)m->n);
    return &m->v[m->n++].val;
}

static void u64map_free(struct u64map *m)
{
    free(m->v);
    fk_hindex_free(&m->index);
    memset(m, 0, sizeof *m);
}

/* A record copied out of a ring, waiting to be handled in time order. */
struct pending {
    uint64_t time;
    uint64_t seq;       /* ring read order breaks ties */
    size_t off;
    uint32_t len;
};

struct engine {
    const struct fk_capture_opts *o;
    struct fk_capture_result *r;
    struct fk_symbolizer *sym;
    struct fk_unwinder *uw;         /* dwarf mode */
    unsigned nregs;                 /* registers per PERF_SAMPLE_REGS_USER */
    struct fk_loc ulocs[FK_UW_DEFAULT_MAX_FRAMES + 1];
    struct fk_stacktab raw;         /* comm NUL pid locations... -> count */
    uint64_t sample_type;
    struct fk_buf key;
    struct fk_buf pbuf, pbuf2;      /* pending record bytes */
    struct pending *pv;
    size_t npv, cappv;
    uint64_t seq;
    /* USER: pid -> (uid << 1 | 1), refreshed after exec, 0 = unknown */
    struct u64map uids;
    struct u64map uid_checked;      /* pid -> mono ns of last /proc check */
    /* CGROUP: cgroup id -> 1 inside, 2 outside */
    struct u64map cgroups;
    uint64_t cgroup_rescan_ns;
};

/* ---- target filters ---------------------------------------------------- */

static bool proc_euid(pid_t pid, uid_t *uid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = false;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Uid:", 4)) {
            unsigned r, e;
            if (sscanf(line + 4, "%u %u", &r, &e) == 2) {
                *uid = e;
                ok = true;
            }
            break;
        }
    fclose(f);
    return ok;
}

/* USER: decide by effective uid, read from /proc at first sight of a pid and
 * again after exec or a second later (setuid() after fork is not a record);
 * a pid already gone inherits what its parent had at fork time. */
static bool keep_user(struct engine *e, pid_t pid)
{
    uint64_t now = mono_ns();
    uint64_t *v = u64map_slot(&e->uids, (uint64_t)pid, true);
    uint64_t *c = u64map_slot(&e->uid_checked, (uint64_t)pid, true);
    if (!*v || now - *c > 1000000000ull) {
        uid_t uid;
        if (proc_euid(pid, &uid))
            *v = (uint64_t)uid << 1 | 1;
        *c = now;
    }
    return *v && (uid_t)(*v >> 1) == e->o->target->uid;
}

static void scan_cgroup_tree(struct engine *e, const char *dir, int depth)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return;
    *u64map_slot(&e->cgroups, (uint64_t)st.st_ino, true) = 1;
    if (depth > 64)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        char *sub = fk_asprintf("%s/%s", dir, de->d_name);
        scan_cgroup_tree(e, sub, depth + 1);
        free(sub);
    }
    closedir(d);
}

/* CGROUP: a sample's cgroup id is in the target if it is the directory's
 * inode or one below it; unknown ids trigger a (rate-limited) rescan so
 * cgroups created during the capture count. */
static bool keep_cgroup(struct engine *e, uint64_t id)
{
    uint64_t *v = u64map_slot(&e->cgroups, id, false);
    if (v)
        return *v == 1;
    uint64_t now = mono_ns();
    if (now - e->cgroup_rescan_ns > 50000000ull) {
        e->cgroup_rescan_ns = now;
        scan_cgroup_tree(e, e->o->target->cgroup_dir, 0);
        v = u64map_slot(&e->cgroups, id, false);
        if (v)
            return *v == 1;
        *u64map_slot(&e->cgroups, id, true) = 2;
    }
    return false;
}

/* ---- record handling ---------------------------------------------------- */

static void add_frame(struct engine *e, struct fk_loc loc, bool kernel)
{
    fk_buf_add(&e->key, &loc.dso, sizeof loc.dso);
    fk_buf_add(&e->key, &loc.addr, sizeof loc.addr);
    if (kernel)
        e->r->kernel_frames++;
    else
        e->r->user_frames++;
}

static void handle_sample(struct engine *e, const union perf_event *ev)
{
    const uint64_t *p = (const uint64_t *)ev->sample.array;
    const uint64_t *end = (const uint64_t *)((const char *)ev + ev->header.size);
    uint64_t st = e->sample_type;
    size_t fixed = 4 + !!(st & PERF_SAMPLE_PERIOD) + !!(st & PERF_SAMPLE_CALLCHAIN);
    if (p + fixed > end)
        goto malformed;
    uint64_t ip = *p++;
    pid_t pid = (pid_t)(uint32_t)*p, tid = (pid_t)(uint32_t)(*p >> 32);
    p++;
    p++;    /* time */
    p++;    /* cpu */
    uint64_t period = 1;
    if (st & PERF_SAMPLE_PERIOD)
        period = *p++;
    uint64_t nr = 0;
    const uint64_t *ips = NULL;
    if (st & PERF_SAMPLE_CALLCHAIN) {
        nr = *p++;
        if (nr > (uint64_t)(end - p))
            goto malformed;
        ips = p;
        p += nr;
    }
    /* dwarf mode: the user registers (abi 0: none, a kernel thread) and
     * the stack copy (size asked, data, bytes actually copied) */
    const uint64_t *uregs = NULL;
    if (st & PERF_SAMPLE_REGS_USER) {
        if (p >= end)
            goto malformed;
        uint64_t abi = *p++;
        if (abi) {
            if (e->nregs > (uint64_t)(end - p))
                goto malformed;
            if (abi == PERF_SAMPLE_REGS_ABI_64)
                uregs = p;
            p += e->nregs;
        }
    }
    const unsigned char *stack = NULL;
    uint64_t ssize = 0, dyn = 0;
    if (st & PERF_SAMPLE_STACK_USER) {
        if (p >= end)
            goto malformed;
        ssize = *p++;
        if (ssize) {
            if (ssize % 8 || ssize / 8 + 1 > (uint64_t)(end - p))
                goto malformed;
            stack = (const unsigned char *)p;
            p += ssize / 8;
            dyn = *p++;
        }
    }
    uint64_t cgroup = 0;
    if (st & PERF_SAMPLE_CGROUP) {
        if (p >= end)
            goto malformed;
        cgroup = *p++;
    }
    e->r->samples++;
    e->r->period_sum += period;

    const struct fk_target *t = e->o->target;
    if (t->kind == FK_TARGET_USER && !keep_user(e, pid))
        return;
    if (t->kind == FK_TARGET_CGROUP && !keep_cgroup(e, cgroup))
        return;
    e->r->samples_kept++;

    fk_buf_reset(&e->key);
    const char *comm = pid == 0 ? "swapper" : fk_sym_comm_of(e->sym, pid, tid);
    fk_buf_adds(&e->key, comm);
    fk_buf_addc(&e->key, 0);
    int32_t pid32 = (int32_t)pid;
    fk_buf_add(&e->key, &pid32, sizeof pid32);

    unsigned nframes = 0;
    bool kernel = (ev->header.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
    if (!ips && !e->uw) {
        add_frame(e, fk_sym_locate(e->sym, pid, ip, kernel), kernel);
        nframes = 1;
    } else if (ips) {
        bool first = true, skip = false;
        bool kctx = kernel;
        for (uint64_t i = 0; i < nr && nframes < MAX_FRAMES; i++) {
            uint64_t a = ips[i];
            if (a >= (uint64_t)PERF_CONTEXT_MAX) {
                kctx = a == (uint64_t)PERF_CONTEXT_KERNEL;
                skip = a != (uint64_t)PERF_CONTEXT_KERNEL && a != (uint64_t)PERF_CONTEXT_USER;
                first = true;
                continue;
            }
            /* dwarf: user frames come from the unwinder */
            if (skip || (e->uw && !kctx))
                continue;
#ifdef __x86_64__
            /* a frame-pointer walk through code without frame pointers ends
             * on garbage; a user "address" in the kernel half is one */
            if (!kctx && a >= 0x0000800000000000ull)
                continue;
#endif
            /* return addresses point after the call: look up the call */
            add_frame(e, fk_sym_locate(e->sym, pid, first ? a : a - 1, kctx), kctx);
            first = false;
            nframes++;
        }
    }
    if (e->uw) {
        if (uregs && pid > 0) {
            unsigned n = fk_unwind_sample(e->uw, pid, uregs, stack, ssize, dyn, e->ulocs);
            for (unsigned i = 0; i < n && nframes < MAX_FRAMES; i++, nframes++)
                add_frame(e, e->ulocs[i], false);
        } else {
            fk_unwind_no_regs(e->uw);
            if (!kernel || !nframes) {
                /* a user ip we cannot unwind: keep the leaf */
                add_frame(e, fk_sym_locate(e->sym, pid, ip, kernel), kernel);
                nframes++;
            }
        }
    }
    uint64_t w = e->o->weight_by_period && !e->o->event.freq ? e->o->event.period : 1;
    fk_stacktab_add(&e->raw, e->key.data, e->key.len, w);
    return;
malformed:
    /* the kernel sent it: count it (one-in-N checks count samples) */
    e->r->samples++;
    e->r->malformed++;
}

static void handle_record(struct engine *e, const union perf_event *ev)
{
    switch (ev->header.type) {
    case PERF_RECORD_SAMPLE:
        handle_sample(e, ev);
        break;
    case PERF_RECORD_MMAP2: {
        const struct perf_record_mmap2 *m = &ev->mmap2;
        char name[4096];
        size_t max = ev->header.size - offsetof(struct perf_record_mmap2, filename);
        if (ev->header.size < offsetof(struct perf_record_mmap2, filename))
            break;
        if (max >= sizeof name)
            max = sizeof name - 1;
        memcpy(name, m->filename, max);
        name[max] = 0;
        if (ev->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
            fk_sym_mmap(e->sym, (pid_t)m->pid, m->start, m->len, m->pgoff, 0, 0, 0, m->prot,
                        m->flags, name, m->build_id,
                        m->build_id_size <= 20 ? m->build_id_size : 20);
        else
            fk_sym_mmap(e->sym, (pid_t)m->pid, m->start, m->len, m->pgoff, m->maj, m->min,
                        m->ino, m->prot, m->flags, name, NULL, 0);
        break;
    }
    case PERF_RECORD_COMM: {
        char comm[17];
        memcpy(comm, ev->comm.comm, 16);
        comm[16] = 0;
        bool exec = ev->header.misc & PERF_RECORD_MISC_COMM_EXEC;
        fk_sym_comm(e->sym, (pid_t)ev->comm.pid, (pid_t)ev->comm.tid, comm, exec);
        if (exec && e->o->target->kind == FK_TARGET_USER) {
            uint64_t *c = u64map_slot(&e->uid_checked, ev->comm.pid, false);
            if (c)
                *c = 0;     /* setuid binaries change uid at exec */
        }
        break;
    }
    case PERF_RECORD_FORK:
        e->r->forks++;
        fk_sym_fork(e->sym, (pid_t)ev->fork.pid, (pid_t)ev->fork.ppid, (pid_t)ev->fork.tid,
                    (pid_t)ev->fork.ptid);
        if (e->o->target->kind == FK_TARGET_USER && ev->fork.pid != ev->fork.ppid) {
            uint64_t *pv = u64map_slot(&e->uids, ev->fork.ppid, false);
            if (pv && *pv) {
                uint64_t uid = *pv;
                *u64map_slot(&e->uids, ev->fork.pid, true) = uid;
                *u64map_slot(&e->uid_checked, ev->fork.pid, true) = mono_ns();
            }
        }
        break;
    case PERF_RECORD_EXIT:
        fk_sym_exit(e->sym, (pid_t)ev->fork.pid, (pid_t)ev->fork.tid);
        break;
    case PERF_RECORD_LOST:
        e->r->lost += ev->lost.lost;
        e->r->lost_events++;
        break;
    case PERF_RECORD_THROTTLE:
        e->r->throttled++;
        break;
    case PERF_RECORD_UNTHROTTLE:
        e->r->unthrottled++;
        break;
    default:
        break;
    }
}

/* Every record carries sample_id_all's TID, TIME, CPU; samples have TIME
 * third (IP, TID, TIME), other records 16 bytes before their end. */
static uint64_t record_time(const union perf_event *ev)
{
    if (ev->header.size < sizeof ev->header + 24)
        return 0;
    if (ev->header.type == PERF_RECORD_SAMPLE)
        return ev->sample.array[2];
    const char *end = (const char *)ev + ev->header.size;
    uint64_t t;
    memcpy(&t, end - 16, sizeof t);
    return t;
}

static int cmp_pending(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Copy everything out of the rings, then handle what is older than cutoff
 * in time order; keep the rest for the next pass. */
static void read_rings(struct engine *e, struct perf_evlist *evlist, uint64_t cutoff)
{
    struct perf_mmap *map;
    perf_evlist__for_each_mmap(evlist, map, false) {
        if (perf_mmap__read_init(map) < 0)
            continue;
        union perf_event *ev;
        while ((ev = perf_mmap__read_event(map)) != NULL) {
            e->pv = fk_grow(e->pv, &e->cappv, e->npv + 1, sizeof *e->pv);
            struct pending *pe = &e->pv[e->npv++];
            pe->time = record_time(ev);
            pe->seq = e->seq++;
            pe->off = e->pbuf.len;
            pe->len = ev->header.size;
            e->r->ring_bytes += ev->header.size;
            fk_buf_add(&e->pbuf, ev, ev->header.size);
            perf_mmap__consume(map);
        }
        perf_mmap__read_done(map);
    }
    if (!e->npv)
        return;
    qsort(e->pv, e->npv, sizeof *e->pv, cmp_pending);
    size_t i = 0;
    union perf_event *tmp = NULL;
    size_t tmpcap = 0;
    for (; i < e->npv && e->pv[i].time <= cutoff; i++) {
        /* the buffer holds records unaligned: copy to an aligned one */
        if (e->pv[i].len > tmpcap) {
            tmpcap = e->pv[i].len < 4096 ? 4096 : e->pv[i].len;
            free(tmp);
            tmp = fk_malloc(tmpcap);
        }
        memcpy(tmp, e->pbuf.data + e->pv[i].off, e->pv[i].len);
        handle_record(e, tmp);
    }
    free(tmp);
    fk_buf_reset(&e->pbuf2);
    size_t keep = 0;
    for (; i < e->npv; i++) {
        struct pending pe = e->pv[i];
        size_t off = e->pbuf2.len;
        fk_buf_add(&e->pbuf2, e->pbuf.data + pe.off, pe.len);
        pe.off = off;
        e->pv[keep++] = pe;
    }
    e->npv = keep;
    struct fk_buf swap = e->pbuf;
    e->pbuf = e->pbuf2;
    e->pbuf2 = swap;
}

/* Every process that exists now, read from /proc, the rings copied out
 * (not handled: a sample's process may not be read yet) every DRAIN_NS
 * meanwhile: on a busy host or in a slow build reading /proc takes seconds,
 * and rings left alone that long overflow, the event counted but its
 * samples lost. The copies are bounded by half the memory limit. */
struct scan_ctx {
    struct engine *e;
    struct perf_evlist *evlist;
    uint64_t last_drain;
};

static bool scan_one(pid_t pid, void *arg)
{
    struct scan_ctx *c = arg;
    fk_sym_scan_pid(c->e->sym, pid);
    uint64_t now = mono_ns();
    if (now - c->last_drain >= DRAIN_NS &&
        (!c->e->o->max_mem_bytes || c->e->pbuf.len < c->e->o->max_mem_bytes / 2)) {
        read_rings(c->e, c->evlist, 0);
        c->last_drain = now;
    }
    return true;
}

static void scan_all_draining(struct engine *e, struct perf_evlist *evlist)
{
    struct scan_ctx c = { e, evlist, mono_ns() };
    if (!fk_proc_for_each_pid(scan_one, &c))
        fk_warn("cannot list /proc: %s", strerror(errno));
}

/* ---- opening ------------------------------------------------------------ */

static int libperf_print(enum libperf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    (void)fmt;
    (void)ap;
    return 0;   /* we report errors from return codes, in our words */
}

static void open_error(const struct fk_capture_opts *o, int err)
{
    int paranoid = fk_perf_paranoid();
    switch (err) {
    case EACCES:
    case EPERM:
        fk_error("not allowed to open perf events (/proc/sys/kernel/perf_event_paranoid is %d): "
                 "run as root, or give CAP_PERFMON, or lower it with "
                 "'sysctl kernel.perf_event_paranoid=%d'",
                 paranoid, o->target->kind == FK_TARGET_PID || o->target->kind == FK_TARGET_RUN ? 1 : -1);
        break;
    case ESRCH:
        fk_error("the target process exited before the capture started");
        break;
    case EMFILE:
    case ENFILE:
        fk_error("out of file descriptors (one per thread per CPU): raise 'ulimit -n'");
        break;
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
        fk_error("the event %s is not supported on this machine", o->event.name);
        break;
    case EINVAL:
        fk_error("the kernel refused the event %s (invalid argument): frequency %llu Hz "
                 "against perf_event_max_sample_rate %llu?",
                 o->event.name, (unsigned long long)o->event.freq,
                 (unsigned long long)fk_perf_max_sample_rate());
        break;
    default:
        fk_error("perf_event_open: %s", strerror(err));
    }
}

/* Can this kernel (and our privileges) sample user registers and stacks?
 * Probed on ourselves with a user-only software event, like perf. */
static bool dwarf_supported(const struct fk_uw_arch *arch, uint32_t stack_size, int *err)
{
    struct perf_event_attr a = { 0 };
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = fk_uw_perf_mask(arch);
    a.sample_stack_user = stack_size;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        /* not allowed at all: let the real open report it in its words */
        return errno == EACCES || errno == EPERM;
    }
    close(fd);
    return true;
}

static bool add_tids(pid_t pid, pid_t **tids, size_t *n, size_t *cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        *tids = fk_grow(*tids, cap, *n + 1, sizeof **tids);
        (*tids)[(*n)++] = (pid_t)atoi(de->d_name);
    }
    closedir(d);
    return true;
}

/* Without CAP_IPC_LOCK (or perf_event_paranoid -1) the kernel limits each
 * user's perf rings to perf_event_mlock_kb per CPU. */
static bool mlock_unlimited(void)
{
    if (fk_perf_paranoid() == -1)
        return true;
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return false;
    char line[256];
    bool yes = false;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "CapEff:", 7) == 0) {
            unsigned long long caps = strtoull(line + 7, NULL, 16);
            yes = caps & (1ull << 14);      /* CAP_IPC_LOCK */
            break;
        }
    fclose(f);
    return yes;
}

/* Data pages per ring, a power of two. Frame-pointer samples are small:
 * 32 or 128 pages. With stack copies, at least a second of samples at the
 * rate (fixed-period events: assume 1000/s), at most 16 MiB: the reader
 * also scans /proc and loads symbols, and a busy host delays it. Unprivileged
 * runs are held to the mlock budget: *limited says so. */
static unsigned ring_pages(const struct fk_capture_opts *o, uint64_t sample_bytes, bool *limited)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t budget = fk_perf_mlock_kb() * 1024 / (uint64_t)page;
    unsigned want;
    if (o->ring_pages)
        want = o->ring_pages;
    else if (!sample_bytes)
        want = (o->event.freq && o->event.freq <= 200) ? 32 : 128;
    else {
        uint64_t rate = o->event.freq ? o->event.freq : 1000;
        uint64_t pages = rate * sample_bytes / (uint64_t)page;
        want = pages < 32 ? 32 : pages > 4096 ? 4096 : (unsigned)pages;
    }
    unsigned p = 1;
    while (p < want && p < 4096)
        p *= 2;
    if (p > want && !sample_bytes)
        p /= 2;     /* the fp sizes were floors of the request */
    unsigned asked = p;
    if (!sample_bytes || !mlock_unlimited())
        while (p > 1 && p + 1 > budget)
            p /= 2;
    *limited = sample_bytes && p < asked;
    return p;
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* ---- naming ------------------------------------------------------------- */

struct loc_key {
    uint32_t dso;
    uint64_t addr;
} __attribute__((packed));

/* One pass over the unique raw stacks: each new location is named once
 * (fk_sym_name) and becomes a pprof-style location with its function and
 * mapping; each raw stack becomes a sample labelled comm and pid. The
 * folded table is then drawn from that profile. */
static void build_prof(struct engine *e)
{
    const struct fk_capture_opts *o = e->o;
    struct fk_prof *p = &e->r->prof;
    fk_prof_init(p);
    uint64_t period = o->event.period ? o->event.period : 1;
    bool freq = o->event.freq != 0;
    int fold_type = 0;
    fk_prof_add_type(p, "samples", "count");
    if (freq) {
        fk_prof_add_type(p, "cpu", "nanoseconds");
        p->period_type = p->types[1];
        p->period = (int64_t)(1000000000ull / o->event.freq);
    } else {
        const char *name = o->value_name ? o->value_name : o->event.name;
        fk_prof_add_type(p, name, "count");
        p->period_type = p->types[1];
        p->period = (int64_t)period;
        fold_type = o->weight_by_period ? 1 : 0;
    }
    p->time_nanos = (int64_t)e->r->start_realtime_ns;
    p->duration_nanos = (int64_t)e->r->duration_ns;
    uint32_t comm_k = fk_prof_strz(p, "comm"), pid_k = fk_prof_strz(p, "pid");

    struct fk_stacktab locmap;  /* loc_key -> aux = location id */
    fk_stacktab_init(&locmap);
    uint32_t *func_of = NULL;   /* name string -> function id */
    size_t capfunc = 0;
    struct dso_map { uint32_t id; uint64_t lo, hi; bool offsets; } *dmap = NULL;
    size_t capdmap = 0;
    struct fk_buf one = FK_BUF_INIT;
    uint64_t *ids = NULL;
    size_t capids = 0;
    bool weighted = !freq && o->weight_by_period;

    for (size_t i = 0; i < e->raw.n; i++) {
        const struct fk_stack *s = &e->raw.v[i];
        size_t cl = strnlen(s->key, s->len);
        int32_t pid;
        memcpy(&pid, s->key + cl + 1, sizeof pid);
        const char *lk = s->key + cl + 1 + sizeof pid;
        size_t nloc = (s->len - cl - 1 - sizeof pid) / sizeof(struct loc_key);
        ids = fk_grow(ids, &capids, nloc ? nloc : 1, sizeof *ids);
        for (size_t j = 0; j < nloc; j++) {
            struct loc_key lkj;
            memcpy(&lkj, lk + j * sizeof lkj, sizeof lkj);
            struct fk_stack *le = fk_stacktab_add(&locmap, (const char *)&lkj, sizeof lkj, 0);
            if (!le->aux) {
                fk_buf_reset(&one);
                struct fk_loc loc = { lkj.dso, lkj.addr };
                fk_sym_name(e->sym, loc, &one);
                if (!one.len)
                    fk_buf_adds(&one, "[unknown]");
                fk_prof_frame_sanitize(one.data, one.len);
                uint32_t name = fk_prof_str(p, one.data, one.len);
                uint32_t mapping = 0;
                struct fk_sym_dso di;
                if (fk_sym_dso_info(e->sym, lkj.dso, &di)) {
                    size_t oldcap = capdmap;
                    dmap = fk_grow(dmap, &capdmap, (size_t)lkj.dso + 1, sizeof *dmap);
                    memset(dmap + oldcap, 0, (capdmap - oldcap) * sizeof *dmap);
                    struct dso_map *dm = &dmap[lkj.dso];
                    if (!dm->id) {
                        struct fk_prof_mapping m = { 0 };
                        m.file = fk_prof_strz(p, di.path);
                        char hex[2 * 64 + 1];
                        size_t bl = di.build_id_len < 64 ? di.build_id_len : 64;
                        for (size_t k = 0; k < bl; k++)
                            snprintf(hex + 2 * k, 3, "%02x", di.build_id[k]);
                        hex[2 * bl] = 0;
                        m.build_id = fk_prof_strz(p, hex);
                        m.has_functions = true;
                        dm->id = fk_prof_add_mapping(p, &m);
                        dm->lo = UINT64_MAX;
                        dm->hi = 0;
                        dm->offsets = di.file_offsets;
                    }
                    if (lkj.addr < dm->lo)
                        dm->lo = lkj.addr;
                    if (lkj.addr > dm->hi)
                        dm->hi = lkj.addr;
                    mapping = dm->id;
                }
                le->aux = fk_prof_add_loc(p, mapping, lkj.addr);
                fk_prof_add_line(p, 0, 0);
                p->lines[p->nlines - 1].func = name;    /* resolved below */
            }
            ids[j] = le->aux;
        }
        int64_t v[2];
        uint64_t c = s->count;
        if (freq) {
            v[0] = (int64_t)c;
            v[1] = (int64_t)(c * (uint64_t)p->period);
        } else if (weighted) {
            v[0] = (int64_t)(c / period);
            v[1] = (int64_t)c;
        } else {
            v[0] = (int64_t)c;
            v[1] = (int64_t)(c * period);
        }
        fk_prof_add_sample(p, ids, nloc, v);
        fk_buf_reset(&one);
        fk_buf_add(&one, s->key, cl);
        fk_prof_frame_sanitize(one.data, one.len);
        fk_prof_add_label(p, comm_k, fk_prof_str(p, one.data, one.len), 0, 0);
        fk_prof_add_label(p, pid_k, 0, pid, 0);
    }
    /* functions: one per distinct name (lines held the name until now) */
    func_of = fk_grow(func_of, &capfunc, p->strs.n + 1, sizeof *func_of);
    memset(func_of, 0, capfunc * sizeof *func_of);
    for (size_t i = 0; i < p->nlines; i++) {
        uint32_t name = p->lines[i].func;
        if (!func_of[name])
            func_of[name] = fk_prof_add_func(p, name, name, 0, 0);
        p->lines[i].func = func_of[name];
    }
    for (size_t d = 0; d < capdmap && dmap; d++) {
        struct dso_map *dm = &dmap[d];
        if (!dm->id)
            continue;
        struct fk_prof_mapping *m = &p->maps[dm->id - 1];
        m->start = dm->lo;
        m->limit = dm->hi == UINT64_MAX ? UINT64_MAX : dm->hi + 1;
        m->offset = dm->offsets ? dm->lo : 0;
    }
    fk_prof_main_mapping_first(p);
    fk_prof_fold(p, fold_type, SIZE_MAX, &e->r->stacks, NULL);
    free(ids);
    free(func_of);
    free(dmap);
    fk_buf_free(&one);
    fk_stacktab_free(&locmap);
}

/* ---- the run ------------------------------------------------------------ */

static void progress(const struct fk_capture_opts *o, struct engine *e, uint64_t start,
                     uint64_t now, bool tty)
{
    if (!tty)
        return;
    uint64_t el = (now - start) / 1000000000ull;
    if (o->duration_ms)
        fprintf(stderr, "\r%s: %llu s left, %llu samples, %llu lost \033[K",
                o->progress_label ? o->progress_label : "flamekit",
                (unsigned long long)(o->duration_ms * 1000000ull > now - start
                                         ? (o->duration_ms * 1000000ull - (now - start) + 999999999ull) / 1000000000ull
                                         : 0),
                (unsigned long long)e->r->samples_kept, (unsigned long long)e->r->lost);
    else
        fprintf(stderr, "\r%s: %llu s, %llu samples, %llu lost \033[K",
                o->progress_label ? o->progress_label : "flamekit", (unsigned long long)el,
                (unsigned long long)e->r->samples_kept, (unsigned long long)e->r->lost);
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

static void cgroup_counters_close(int *fds, int n)
{
    for (int i = 0; fds && i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
}

int fk_capture_run(const struct fk_capture_opts *o, struct fk_capture_result *r)
{
    static bool inited;
    if (!inited) {
        libperf_init(libperf_print);
        inited = true;
    }
    memset(r, 0, sizeof *r);
    fk_stacktab_init(&r->stacks);
    const struct fk_target *t = o->target;
    struct engine e = { .o = o, .r = r };
    fk_stacktab_init(&e.raw);

    /* user stacks: resolve auto, size the rings for the stack copies */
    const struct fk_uw_arch *arch = fk_uw_arch();
    enum fk_callgraph mode = o->callgraph;
    uint32_t stack_size = o->stack_size ? o->stack_size : FK_STACK_SIZE_DEFAULT;
    int probe_err = 0;
    if (o->event.no_callchain || o->event.exclude_user) {
        mode = FK_CG_FP;    /* no user stacks to unwind */
    } else if (mode != FK_CG_FP && !arch) {
        if (mode == FK_CG_DWARF) {
            fk_error("--call-graph dwarf is not supported on this architecture yet; use --call-graph fp");
            return FK_EXIT_ERROR;
        }
        snprintf(r->callgraph_note, sizeof r->callgraph_note,
                 "frame pointers: DWARF unwinding is not supported on this architecture");
        mode = FK_CG_FP;
    } else if (mode != FK_CG_FP && !dwarf_supported(arch, stack_size, &probe_err)) {
        if (mode == FK_CG_DWARF) {
            fk_error("the kernel refused user register and stack sampling (%s); use --call-graph fp",
                     strerror(probe_err));
            return FK_EXIT_ERROR;
        }
        snprintf(r->callgraph_note, sizeof r->callgraph_note,
                 "frame pointers: the kernel refused user stack sampling (%s)", strerror(probe_err));
        mode = FK_CG_FP;
    }
    long page = sysconf(_SC_PAGESIZE);
    uint64_t sample_bytes = 0;
    bool limited = false;
    unsigned pages;
    if (mode != FK_CG_FP) {
        /* header, ids, period, a kernel callchain, registers, stack copy */
        sample_bytes = 8 + 6 * 8 + 64 * 8 + (1 + FK_UW_NREGS) * 8 + 16 + stack_size;
        pages = ring_pages(o, sample_bytes, &limited);
        uint64_t fits = (uint64_t)pages * (uint64_t)page / sample_bytes;
        if (limited && fits < 8 && mode == FK_CG_AUTO) {
            snprintf(r->callgraph_note, sizeof r->callgraph_note,
                     "frame pointers: the perf rings are limited to %u KiB per CPU "
                     "(kernel.perf_event_mlock_kb, no CAP_IPC_LOCK), fewer than 8 stack copies "
                     "of %u bytes", pages * (unsigned)page / 1024, stack_size);
            mode = FK_CG_FP;
        } else if (limited && !o->quiet) {
            uint64_t rate = o->event.freq ? o->event.freq : 1000;
            fk_warn("unprivileged: perf rings limited to %u KiB per CPU by kernel.perf_event_mlock_kb; "
                    "they hold %.2f s of %u-byte stack copies at %llu samples/s (lost records are "
                    "counted); raise the sysctl, run as root, or lower --stack-size",
                    pages * (unsigned)page / 1024, (double)fits / (double)rate, stack_size,
                    (unsigned long long)rate);
        }
    }
    if (mode == FK_CG_FP)
        pages = ring_pages(o, 0, &limited);
    if (r->callgraph_note[0] && !o->quiet)
        fk_warn("user stacks by %s", r->callgraph_note);
    if (mode == FK_CG_AUTO)
        mode = FK_CG_DWARF;     /* resolved */
    r->callgraph = mode;
    r->stack_size = mode == FK_CG_DWARF ? stack_size : 0;

    struct perf_event_attr attr = { 0 };
    attr.size = sizeof attr;
    attr.type = o->event.type;
    attr.config = o->event.config;
    e.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
    if (!o->event.no_callchain)
        e.sample_type |= PERF_SAMPLE_CALLCHAIN;
    if (mode == FK_CG_DWARF) {
        /* as perf's dwarf mode: the kernel's chain for kernel frames only,
         * user frames from the registers and the stack copy */
        e.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        attr.sample_regs_user = fk_uw_perf_mask(arch);
        attr.sample_stack_user = stack_size;
        attr.exclude_callchain_user = 1;
        e.nregs = FK_UW_NREGS;
    }
    if (o->event.freq) {
        attr.freq = 1;
        attr.sample_freq = o->event.freq;
        e.sample_type |= PERF_SAMPLE_PERIOD;
    } else {
        attr.sample_period = o->event.period ? o->event.period : 1;
    }
    if (t->kind == FK_TARGET_CGROUP)
        e.sample_type |= PERF_SAMPLE_CGROUP;
    attr.sample_type = e.sample_type;
    /* PERF_FORMAT_LOST: the samples the kernel could not write, exactly,
     * including those not yet reported by a PERF_RECORD_LOST when the
     * capture ends (Linux 6.0; retried without on older kernels). */
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                       PERF_FORMAT_LOST;
    attr.disabled = 1;
    attr.sample_id_all = 1;
    attr.mmap = 1;
    attr.mmap2 = 1;
    attr.comm = 1;
    attr.comm_exec = 1;
    attr.task = 1;
    attr.exclude_kernel = o->event.exclude_kernel;
    attr.exclude_callchain_kernel = o->event.exclude_kernel;
    attr.exclude_user = o->event.exclude_user;
    attr.exclude_hv = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    bool per_task = t->kind == FK_TARGET_PID || t->kind == FK_TARGET_RUN;
    attr.inherit = per_task;
    attr.enable_on_exec = t->kind == FK_TARGET_RUN;
    attr.watermark = 1;
    attr.wakeup_watermark = (uint32_t)(pages * (unsigned)sysconf(_SC_PAGESIZE) / 4);

    int rc = FK_EXIT_ERROR;
    int *cgfds = NULL;          /* CGROUP: the target's own counters */
    bool cg_counting = false;
    struct perf_cpu_map *cpus = perf_cpu_map__new_online_cpus();
    struct perf_thread_map *threads = NULL;
    struct perf_evlist *evlist = NULL;
    struct perf_evsel *evsel = NULL;
    if (!cpus) {
        fk_error("cannot read the online CPUs");
        goto out;
    }
    r->ncpus = perf_cpu_map__nr(cpus);
    if (per_task) {
        pid_t *tids = NULL;
        size_t n = 0, cap = 0;
        for (size_t i = 0; i < t->npids; i++)
            if (!add_tids(t->pids[i], &tids, &n, &cap)) {
                fk_error("process %d exited before the capture started", (int)t->pids[i]);
                free(tids);
                goto out;
            }
        threads = perf_thread_map__new_array((int)n, tids);
        free(tids);
        raise_nofile();
    } else {
        threads = perf_thread_map__new_dummy();
    }
    evlist = perf_evlist__new();
    evsel = perf_evsel__new(&attr);
    if (!threads || !evlist || !evsel) {
        fk_error("out of memory setting up the capture");
        goto out;
    }
    perf_evlist__add(evlist, evsel);
    perf_evlist__set_maps(evlist, cpus, threads);
    int err = perf_evlist__open(evlist);
    if (err == -EINVAL) {
        perf_evsel__attr(evsel)->read_format &= ~(uint64_t)PERF_FORMAT_LOST;
        err = perf_evlist__open(evlist);
    }
    if (err < 0) {
        open_error(o, -err);
        goto out;
    }
    /* the user's locked-memory budget may be partly used by other perf
     * sessions: halve until it fits, and say so */
    for (;;) {
        errno = 0;
        err = perf_evlist__mmap(evlist, (int)pages);
        int me = errno ? errno : -err;
        if (err >= 0)
            break;
        perf_evlist__munmap(evlist);
        if (me != EPERM || pages <= 8) {
            fk_error("cannot map the perf ring buffers (%u pages per CPU): %s; "
                     "see /proc/sys/kernel/perf_event_mlock_kb", pages, strerror(me));
            goto out;
        }
        pages /= 2;
        if (!o->quiet)
            fk_warn("locked memory for perf rings exhausted (kernel.perf_event_mlock_kb): "
                    "retrying with %u KiB per CPU; records may be lost (they are counted)",
                    pages * (unsigned)page / 1024);
    }
    r->ring_pages = pages;

    struct fk_sym_opts so = o->sym;
    so.max_bytes = o->max_mem_bytes;
    e.sym = fk_sym_new(&so);
    if (t->kind == FK_TARGET_CGROUP)
        cgfds = open_cgroup_counters(&attr, t->cgroup_dir, cpus);
    if (mode == FK_CG_DWARF)
        e.uw = fk_unwinder_new(e.sym);
    /* side-band first, then /proc: nothing between them is missed */
    if (t->kind != FK_TARGET_RUN)
        perf_evlist__enable(evlist);
    cg_counting = cgfds && cgroup_counters_ioctl(cgfds, r->ncpus, PERF_EVENT_IOC_ENABLE);
    if (t->kind == FK_TARGET_PID)
        for (size_t i = 0; i < t->npids; i++)
            fk_sym_scan_pid(e.sym, t->pids[i]);
    else if (t->kind == FK_TARGET_RUN)
        fk_sym_scan_pid(e.sym, t->pids[0]);
    else
        scan_all_draining(&e, evlist);
    if (t->kind == FK_TARGET_RUN) {
        int xe;
        if (!fk_target_run_exec((struct fk_target *)t, &xe)) {
            int st;
            waitpid(t->pids[0], &st, 0);
            r->child_exited = true;
            r->child_status = st;
            rc = xe == ENOENT ? 127 : 126;
            goto out;
        }
    }
    uint64_t start = mono_ns();
    r->start_realtime_ns = real_ns();
    bool preloaded = o->event.exclude_kernel;
    uint64_t deadline = o->duration_ms ? start + o->duration_ms * 1000000ull : UINT64_MAX;
    bool tty = o->progress && !o->quiet && isatty(STDERR_FILENO);
    uint64_t last_progress = 0;
    for (;;) {
        uint64_t now = mono_ns();
        if (o->stop && *o->stop) {
            r->stop_reason = "signal";
            break;
        }
        if (now >= deadline) {
            r->stop_reason = "duration";
            break;
        }
        uint64_t wait = (deadline - now) / 1000000ull;
        int n = perf_evlist__poll(evlist, wait < POLL_MS ? (int)wait + 1 : POLL_MS);
        if (n < 0 && errno != EINTR) {
            fk_error("poll: %s", strerror(errno));
            goto out;
        }
        now = mono_ns();
        read_rings(&e, evlist, now > REORDER_SLACK_NS ? now - REORDER_SLACK_NS : 0);
        if (!preloaded) {
            /* in the window, not after it; once the rings were drained
             * (and after a run target's exec, which it must not delay) */
            fk_sym_preload_kernel(e.sym);
            preloaded = true;
        }
        /* symbols read in the window, not after it (a slice per wake-up:
         * the rings hold a second) */
        fk_sym_preload(e.sym, PRELOAD_NS);
        fk_sym_set_other_bytes(e.sym, fk_stacktab_bytes(&e.raw));
        uint64_t mem = fk_stacktab_bytes(&e.raw) + fk_sym_bytes(e.sym);
        if (mem > r->mem_bytes)
            r->mem_bytes = mem;
        if (o->max_mem_bytes && mem > o->max_mem_bytes) {
            r->stop_reason = "memory limit";
            r->mem_limited = true;
            break;
        }
        if (now - last_progress >= 1000000000ull) {
            progress(o, &e, start, now, tty);
            last_progress = now;
        }
        if (t->kind == FK_TARGET_RUN) {
            int st;
            pid_t w = waitpid(t->pids[0], &st, WNOHANG);
            if (w == t->pids[0]) {
                r->child_exited = true;
                r->child_status = st;
                r->stop_reason = "command exited";
                break;
            }
        }
        if (t->kind == FK_TARGET_PID && n > 0 &&
            perf_evlist__filter_pollfd(evlist, POLLHUP | POLLERR) == 0) {
            r->stop_reason = "target exited";
            break;
        }
    }
    r->duration_ns = mono_ns() - start;
    perf_evlist__disable(evlist);
    cg_counting = cg_counting && cgroup_counters_ioctl(cgfds, r->ncpus, PERF_EVENT_IOC_DISABLE);
    if (tty)
        fprintf(stderr, "\r\033[K");

    /* the event's own count, summed over every CPU and thread */
    int ncpu = perf_cpu_map__nr(cpus), nthr = perf_thread_map__nr(threads);
    r->counters = (uint64_t)ncpu * (uint64_t)nthr;
    for (int c = 0; c < ncpu; c++)
        for (int th = 0; th < nthr; th++) {
            struct perf_counts_values cv;
            if (perf_evsel__read(evsel, c, th, &cv) == 0) {
                r->event_count += cv.val;
                r->lost_samples += cv.lost;
                r->time_enabled += cv.ena;
                r->time_running += cv.run;
            }
        }
    for (int c = 0; cg_counting && c < r->ncpus; c++) {
        uint64_t v;
        cg_counting = read(cgfds[c], &v, sizeof v) == (ssize_t)sizeof v;
        r->target_count += cg_counting ? v : 0;
    }
    r->have_target_count = cg_counting;
    /* Drain the rings after the counts: a sample being written when the
     * disable IPI arrived is in the count and must be read too. */
    read_rings(&e, evlist, UINT64_MAX);
    r->unique_stacks = e.raw.n;
    fk_sym_set_other_bytes(e.sym, fk_stacktab_bytes(&e.raw));
    uint64_t mem = fk_stacktab_bytes(&e.raw) + fk_sym_bytes(e.sym);
    if (mem > r->mem_bytes)
        r->mem_bytes = mem;
    uint64_t t_name = mono_ns();
    build_prof(&e);
    r->naming_ns = mono_ns() - t_name;
    mem = fk_stacktab_bytes(&e.raw) + fk_sym_bytes(e.sym);    /* with maps read again */
    if (mem > r->mem_bytes)
        r->mem_bytes = mem;
    fk_sym_stats(e.sym, &r->sym);
    if (e.uw)
        fk_unwinder_stats(e.uw, &r->unwind);
    rc = FK_EXIT_OK;
out:
    if (evlist)
        perf_evlist__delete(evlist);    /* unmaps, closes, deletes its evsels */
    else if (evsel)
        perf_evsel__delete(evsel);
    perf_thread_map__put(threads);
    perf_cpu_map__put(cpus);
    fk_unwinder_free(e.uw);
    if (e.sym)
        fk_sym_free(e.sym);
    cgroup_counters_close(cgfds, r->ncpus);
    fk_stacktab_free(&e.raw);
    fk_buf_free(&e.key);
    fk_buf_free(&e.pbuf);
    fk_buf_free(&e.pbuf2);
    free(e.pv);
    u64map_free(&e.uids);
    u64map_free(&e.uid_checked);
    u64map_free(&e.cgroups);
    if (rc != FK_EXIT_OK) {
        fk_stacktab_free(&r->stacks);
        fk_prof_free(&r->prof);
    }
    return rc;
}

void fk_capture_result_free(struct fk_capture_result *r)
{
    fk_stacktab_free(&r->stacks);
    fk_prof_free(&r->prof);
}
