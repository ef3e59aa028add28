/* SPDX-License-Identifier: GPL-2.0-only */
/* Configuring a capture (the engine's first phase, engine.h): the kernel's
 * limits, the call-graph mode (auto resolved to dwarf or fp, with the note
 * saying why), the ring size, and one perf_event_attr per event of the
 * kind -- the engine's common bits first, then the kind's own. */
#include "engine/engine.h"
#include "engine/capture.h"
#include "capture/bpf.h"
#include "capture/pygate.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* Without CAP_IPC_LOCK (or perf_event_paranoid -1) the kernel limits each
 * user's perf rings to perf_event_mlock_kb per CPU. */
static bool mlock_unlimited(void)
{
    if (fk_perf_paranoid() == -1)
        return true;
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
    if (syscall(SYS_capget, &hdr, caps) != 0)
        return false;
    return caps[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32));
}

/* Data pages per ring, a power of two. Frame-pointer samples are small:
 * 32 or 128 pages. With stack copies, a quarter of a second of samples at
 * the rate (fixed-period events: assume 1000/s), at most 16 MiB: measured
 * (bench/children.sh, 200 busy binaries at load 170 on 2 CPUs, page cache
 * cold, 999 Hz, the reader at the raised priority of capture.c), 0 records
 * were lost with rings of 256 to 4096 pages (0.03 to 0.5 s), 0.4% with
 * 128: 2048 pages, 8 MiB per CPU, keeps a margin of 8 at half the memory
 * of a second's. Unprivileged runs are held to the mlock budget: *limited
 * says so. */
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
        uint64_t pages = rate * sample_bytes / 4 / (uint64_t)page;
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

/* --call-graph auto -> dwarf where the architecture and the kernel allow
 * it, else fp, with r->callgraph_note saying why. false (error printed)
 * when dwarf was asked for and cannot be had. */
static bool choose_callgraph(struct fk_engine *e)
{
    const struct fk_capture_opts *o = e->o;
    struct fk_capture_result *r = e->r;
    e->arch = fk_uw_arch();
    e->mode = o->callgraph;
    e->stack_size = o->stack_size ? o->stack_size : FK_STACK_SIZE_DEFAULT;
    int probe_err = 0;
    if (o->event.no_callchain || o->event.exclude_user) {
        e->mode = FK_CG_FP;     /* no user stacks to unwind */
    } else if (e->mode != FK_CG_FP && !e->arch) {
        if (e->mode == FK_CG_DWARF) {
            fk_engine_fail(e, "--call-graph dwarf is not supported on this architecture yet; use "
                           "--call-graph fp");
            return false;
        }
        snprintf(r->callgraph_note, sizeof r->callgraph_note,
                 "frame pointers: DWARF unwinding is not supported on this architecture");
        e->mode = FK_CG_FP;
    } else if (e->mode != FK_CG_FP && !dwarf_supported(e->arch, e->stack_size, &probe_err)) {
        if (e->mode == FK_CG_DWARF) {
            fk_engine_fail(e, "the kernel refused user register and stack sampling (%s); use --call-graph "
                           "fp", strerror(probe_err));
            return false;
        }
        snprintf(r->callgraph_note, sizeof r->callgraph_note,
                 "frame pointers: the kernel refused user stack sampling (%s)", strerror(probe_err));
        e->mode = FK_CG_FP;
    }
    return true;
}

/* The largest sample with a stack copy: header, ids, period, a kernel
 * callchain, registers, the copy; and one with the kernel's chain alone
 * (frame pointers): ids, period, the chain. */
static uint64_t stack_sample_bytes(uint32_t stack_size)
{
    return 8 + 6 * 8 + 64 * 8 + (1 + FK_UW_NREGS) * 8 + 16 + stack_size;
}
#define FP_SAMPLE_BYTES (8 + 6 * 8 + 128 * 8)

uint64_t fk_engine_ring_samples(uint64_t freq, enum fk_callgraph callgraph, uint32_t stack_size)
{
    struct fk_capture_opts o;
    fk_capture_opts_init(&o);
    o.event.freq = freq;
    bool limited;
    uint64_t bytes = callgraph == FK_CG_FP ? 0 : stack_sample_bytes(stack_size ? stack_size
                                                                               : FK_STACK_SIZE_DEFAULT);
    unsigned pages = ring_pages(&o, bytes, &limited);
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) / (bytes ? bytes : FP_SAMPLE_BYTES);
}

/* The ring size for the mode; auto falls back to fp when the rings cannot
 * hold 8 stack copies (unprivileged, small mlock budget). */
static void size_rings(struct fk_engine *e)
{
    const struct fk_capture_opts *o = e->o;
    struct fk_capture_result *r = e->r;
    unsigned page = (unsigned)sysconf(_SC_PAGESIZE);
    if (e->mode != FK_CG_FP) {
        uint64_t sample_bytes = stack_sample_bytes(e->stack_size);
        e->sample_bytes = sample_bytes;
        e->pages = ring_pages(o, sample_bytes, &e->ring_limited);
        uint64_t fits = (uint64_t)e->pages * page / sample_bytes;
        if (e->ring_limited && fits < 8 && e->mode == FK_CG_AUTO) {
            snprintf(r->callgraph_note, sizeof r->callgraph_note,
                     "frame pointers: the perf rings are limited to %u KiB per CPU "
                     "(kernel.perf_event_mlock_kb, no CAP_IPC_LOCK), fewer than 8 stack copies "
                     "of %u bytes", e->pages * page / 1024, e->stack_size);
            e->mode = FK_CG_FP;
        } else if (e->ring_limited) {
            uint64_t rate = o->event.freq ? o->event.freq : 1000;
            fk_engine_warn(e, "unprivileged: perf rings limited to %u KiB per CPU by "
                           "kernel.perf_event_mlock_kb; they hold %.2f s of %u-byte stack copies "
                           "at %llu samples/s (lost records are counted); raise the sysctl, run "
                           "as root, or lower --stack-size", e->pages * page / 1024,
                           (double)fits / (double)rate, e->stack_size, (unsigned long long)rate);
        }
    }
    if (e->mode == FK_CG_FP) {
        e->pages = ring_pages(o, 0, &e->ring_limited);
        e->sample_bytes = FP_SAMPLE_BYTES;
    }
    if (r->callgraph_note[0])
        fk_engine_warn(e, "user stacks by %s", r->callgraph_note);
    if (e->mode == FK_CG_AUTO)
        e->mode = FK_CG_DWARF;      /* resolved */
    r->callgraph = e->mode;
    r->stack_size = e->mode == FK_CG_DWARF ? e->stack_size : 0;
}

/* A stack hook reads the target as samples leave the rings. */
static bool early_hooks(const struct fk_capture_opts *o)
{
    for (size_t k = 0; k < o->nstack_hooks; k++)
        if (o->stack_hooks[k]->early)
            return true;
    return false;
}

/* What every event of the capture shares (evsel__config's common part);
 * the side-band records come from event 0 only. */
static void base_attr(struct fk_engine *e, unsigned i, struct perf_event_attr *a)
{
    const struct fk_capture_opts *o = e->o;
    const struct fk_target *t = o->target;
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = o->event.type;
    a->config = o->event.config;
    a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
    if (e->nevents > 1)
        a->sample_type |= PERF_SAMPLE_IDENTIFIER;
    if (!o->event.no_callchain)
        a->sample_type |= PERF_SAMPLE_CALLCHAIN;
    if (e->mode == FK_CG_DWARF && !o->event.no_callchain) {
        /* as perf's dwarf mode: the kernel's chain for kernel frames only,
         * user frames from the registers and the stack copy */
        a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a->sample_regs_user = fk_uw_perf_mask(e->arch);
        a->sample_stack_user = e->stack_size;
        a->exclude_callchain_user = 1;
    }
    if (t->kind == FK_TARGET_CGROUP)
        a->sample_type |= PERF_SAMPLE_CGROUP;
    /* PERF_FORMAT_LOST: the samples the kernel could not write, exactly,
     * including those not yet reported by a PERF_RECORD_LOST when the
     * capture ends (Linux 6.0; retried without on older kernels). */
    a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                     PERF_FORMAT_LOST;
    if (e->nevents > 1)
        a->read_format |= PERF_FORMAT_ID;
    a->disabled = 1;
    a->sample_id_all = 1;
    if (i == 0) {
        a->mmap = 1;
        a->mmap2 = 1;
        a->comm = 1;
        a->comm_exec = 1;
        a->task = 1;
    }
    a->exclude_kernel = o->event.exclude_kernel;
    a->exclude_callchain_kernel = o->event.exclude_kernel;
    a->exclude_user = o->event.exclude_user;
    a->exclude_hv = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    /* per-task events follow the tree through inherited copies (a RUN
     * target from its exec); cgroup events are per CPU and enabled before
     * the command is let go */
    bool per_task = (t->kind == FK_TARGET_PID || t->kind == FK_TARGET_RUN) && !e->tree_cgroup &&
                    !e->tree_bpf;
    a->inherit = per_task;
    a->enable_on_exec = per_task && t->kind == FK_TARGET_RUN;
    if (e->tree_cgroup || e->tree_bpf || e->pygate)
        a->read_format |= PERF_FORMAT_ID;   /* open.c finds libperf's fds by their ids */
    a->watermark = 1;
    a->wakeup_watermark = (uint32_t)(e->pages * (unsigned)sysconf(_SC_PAGESIZE) / 4);
    if (e->poll_ms) {
        /* the reader's own clock (choose_reads; with the Python gate, and
         * the gate's wake-ups) */
        a->wakeup_watermark = (uint32_t)(e->pages * (unsigned)sysconf(_SC_PAGESIZE));
    } else if (early_hooks(o) && !e->pygate) {
        /* (with the Python gate: the watermark, and the gate's wake-ups)
         * a stack hook that reads the target as samples leave the ring
         * wants them soon: wake up every sample up to 1000 Hz (the limit
         * without --unsafe-limits; beyond, every freq/1000 samples), not
         * at a quarter ring: a Python generator moves on within a
         * millisecond */
        uint64_t rate = o->event.freq ? o->event.freq : 1000;
        a->watermark = 0;
        a->wakeup_events = rate > 1000 ? (uint32_t)(rate / 1000) : 1;
    }
}

/* How the reader learns of records: on its own clock, every
 * struct fk_evkind.poll_ms, with the kernel waking no one (the watermark
 * at a full ring; the engine's thread then takes the copies every
 * take_ms, evkind.h), or at the kernel's wake-ups (a quarter ring, or every
 * sample for an early stack hook) -- each one a switch to the reader's
 * thread and often on to the engine's, ~16 us apiece on this VM. The
 * kind's clock is not used
 *  - with an early stack hook, when the kind keeps the kernel's wake-ups
 *    for it (early_wakeups: the CPU kind; Python's frames are read as
 *    the sample leaves the ring) and the Python gate could not be made:
 *    with the gate the rings are read on the clock, and the gate's
 *    program wakes the reader for the samples that need it at once
 *    (choose_wakeups);
 *  - when the kind samples at a frequency and the rings hold less than 4
 *    polls of its largest samples at that rate (an mlock budget, a rate
 *    past --unsafe-limits): the kernel then wakes the reader at a quarter
 *    ring, before the ring can overflow. A kind sampling one in N has no
 *    such bound; it chose its poll_ms knowing that, and the reader reads
 *    sooner when a pass found a ring more than a quarter full (reader.c,
 *    next_timeout). */
static void choose_reads(struct fk_engine *e)
{
    const struct fk_capture_opts *o = e->o;
    e->poll_ms = e->kind->poll_ms;
    if (!e->poll_ms)
        return;
    if (e->kind->early_wakeups && early_hooks(o) && !e->pygate) {
        e->poll_ms = 0;
        return;
    }
    if (o->event.freq && e->sample_bytes) {
        uint64_t ring = (uint64_t)e->pages * (uint64_t)sysconf(_SC_PAGESIZE);
        uint64_t ring_ms = ring * 1000 / (o->event.freq * e->sample_bytes);
        if (ring_ms < 4ull * e->poll_ms)
            e->poll_ms = 0;
    }
}

bool fk_engine_runs_pygate(const struct fk_evkind *kind, bool early_hook)
{
    return early_hook && (kind->early_wakeups || !kind->poll_ms);
}

/* The Python-on path: an early stack hook with the kernel's wake-ups
 * (fk_evkind.early_wakeups) wakes the reader only for the samples of
 * Python processes that need it at once, through the gate's program on
 * the sampling events (capture/pygate.h): the rings are then read on the
 * reader's clock (choose_reads, after this) and wake no one before their
 * watermark.
 * Woken at every sample instead (wakeup_events, base_attr), the reader
 * preempted every sampled task ~2,000 times a second on 2 CPUs at 999 Hz,
 * and an interpreter beside busy processes got 0.76-0.80 of its share of
 * samples (bench/python.sh part bias). In a pid's BPF tree mode the
 * gate's program is the tree's filter too (an event holds one program:
 * open.c attach_bpftree). Without BPF or a BPF ring buffer (Linux 5.8) it
 * is every sample as before, the reason in the result. */
static void choose_wakeups(struct fk_engine *e)
{
    struct fk_capture_result *r = e->r;
    if (!fk_engine_runs_pygate(e->kind, early_hooks(e->o)))
        return;
    char why[160];
    r->reader_wakeups = "every sample";
    /* its ring holds as many chains a CPU as the perf rings hold samples
     * (size_rings ran) */
    uint64_t held = (uint64_t)e->pages * (uint64_t)sysconf(_SC_PAGESIZE) / e->sample_bytes;
    if (fk_bpf_usable(why, sizeof why))
        e->pygate = fk_pygate_new(FK_ENGINE_PYGATE_ENTRIES, held, e->o->event.freq, why,
                                  sizeof why);
    if (e->pygate)
        r->reader_wakeups = "python gate";
    else
        snprintf(r->reader_wakeups_note, sizeof r->reader_wakeups_note, "%s", why);
}

/* PID, RUN: per-CPU events in the target's cgroup (fk_target_run made
 * one for the command; a pid's own when small, fk_target_pid_cgroup)
 * where there is one, for every kind (off-CPU's switch records come
 * CPU-wide then, for the cgroup's tasks only). The mode and why are in
 * the result. */
static void choose_tree_mode(struct fk_engine *e)
{
    const struct fk_target *t = e->o->target;
    struct fk_capture_result *r = e->r;
    if (t->kind != FK_TARGET_PID && t->kind != FK_TARGET_RUN)
        return;
    r->tree_mode = "per-task";
    if (t->kind == FK_TARGET_RUN && !t->run_cgroup)
        snprintf(r->tree_note, sizeof r->tree_note, "%s",
                 t->run_cgroup_note ? t->run_cgroup_note : "no cgroup for the command");
    else if (t->kind == FK_TARGET_PID) {
        /* never moved: its own cgroup, if small, and the tree kept by pid */
        char why[256];
        e->pid_cgroup = fk_target_pid_cgroup(t, why, sizeof why);
        if (!e->pid_cgroup) {
            snprintf(r->tree_note, sizeof r->tree_note, "%s", why);
            /* the CPU clock over the whole host, filtered in the kernel by
             * the tree (the other kinds' per-task events stay: their
             * counts are the target's) */
            char bpf_why[160];
            if (e->kind != &fk_evkind_clock)
                return;
            if (!fk_bpf_usable(bpf_why, sizeof bpf_why)) {
                size_t len = strlen(r->tree_note);
                snprintf(r->tree_note + len, sizeof r->tree_note - len, "; no BPF tree filter: %s",
                         bpf_why);
                return;
            }
            e->tree_bpf = true;
            e->follow_tree = true;
            r->tree_mode = "bpf";
            return;
        }
        e->tree_cgroup = e->pid_cgroup;
        e->follow_tree = true;
        r->tree_mode = "cgroup";
    } else {
        e->tree_cgroup = t->run_cgroup;
        r->tree_mode = "cgroup";
    }
}

bool fk_engine_configure(struct fk_engine *e)
{
    const struct fk_capture_opts *o = e->o;
    if (!choose_callgraph(e))
        return false;
    size_rings(e);
    e->kind = o->kind ? o->kind : o->event.freq ? &fk_evkind_clock : &fk_evkind_counted;
    choose_tree_mode(e);
    choose_wakeups(e);
    choose_reads(e);
    if (!e->r->reader_wakeups)
        e->r->reader_wakeups = e->poll_ms ? "clock" : "watermark";
    char err[256] = "";
    e->nevents = 1;
    if (e->kind->start && !e->kind->start(o, &e->kind_state, &e->nevents, err, sizeof err)) {
        fk_engine_fail(e, "%s", err);
        return false;
    }
    if (e->nevents < 1 || e->nevents > FK_EVKIND_MAX_EVENTS) {
        fk_engine_fail(e, "event kind %s asks for %u events (1 to %d)", e->kind->name, e->nevents,
                       FK_EVKIND_MAX_EVENTS);
        return false;
    }
    for (unsigned i = 0; i < e->nevents; i++) {
        struct perf_event_attr *a = &e->attr[i];
        base_attr(e, i, a);
        if (e->kind->config && !e->kind->config(e->kind_state, o, i, a, err, sizeof err)) {
            fk_engine_fail(e, "%s", err);
            return false;
        }
        /* one trailer layout for all: a record's time is read before
         * knowing which event wrote it */
        const uint64_t id_bits = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                                 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
        if ((a->sample_type & id_bits) != (e->attr[0].sample_type & id_bits) || !a->sample_id_all) {
            fk_engine_fail(e, "event kind %s: event %u changed the sample id fields", e->kind->name, i);
            return false;
        }
        if (!fk_sample_format_init(&e->fmt[i], a->sample_type, a->read_format,
                                   a->sample_regs_user, a->sample_id_all)) {
            fk_engine_fail(e, "event kind %s: sample_type %#llx has fields the decoder cannot read",
                           e->kind->name, (unsigned long long)a->sample_type);
            return false;
        }
    }
    e->kind->values(e->kind_state, o, &e->values);
    return true;
}
