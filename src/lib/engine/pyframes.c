/* SPDX-License-Identifier: GPL-2.0-only */
/* The Python stack hook (see pyframes.h). */
#include "engine/pyframes.h"
#include "capture/bpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- frames read in the kernel at the sample ----
 *
 * Reading a thread's frames with process_vm_readv before it moves on
 * needs the reader woken for each sample: that wake-up, not the read, was
 * most of the cost per Python sample (~16-30 us at 999 Hz). Instead a
 * perf-event program runs on each sampling event as the sample is taken,
 * in the sampled thread's context: it looks the thread up in a table
 * (kernel tid -> PyThreadState address, filled by fk_python the first
 * time it reads a thread), reads tstate->cframe->current_frame and copies
 * the _PyInterpreterFrame chain from there, FK_PY_KDEPTH frames at most
 * (and the first FK_PY_KCODES frames' code object headers with the first
 * bytes of their qualname strings: an import's code objects and names are
 * freed before the record is read), into a BPF ring buffer (struct
 * fk_py_krec), and lets the sample go on.
 * The reader then drains that ring on its own clock (fk_python asks for
 * it when a sample has no record yet): no one is woken per sample. The
 * program reads only what the layout's offsets say and validates nothing;
 * fk_python checks every record's frames and code objects as it checks
 * its own reads. Built for one layout (3.11, the only one in the table). */

/* The ring holds this much per CPU (power of two, at most RING_MAX): at
 * 999 Hz ~10 KB a sample, about 400 ms of one busy CPU's samples. */
#define RING_PER_CPU (4u << 20)
#define RING_MAX (16u << 20)

enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 };

/* The record (R8) at dst gets len bytes of the target's memory at the
 * address the record holds at ptr (zeros if unreadable). */
static void read_pointee(struct fk_bpf_builder *b, int16_t dst, int32_t len, int16_t ptr)
{
    fk_bpf_emit(b, FK_BPF_MOV64_REG(R1, R8));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, R1, dst));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(R2, len));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, R3, R8, ptr));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_user));
}

static void gen_program(struct fk_bpf_builder *b, const struct fk_py_layout *L, int tstates_fd,
                        int ring_fd)
{
    const int16_t f0 = (int16_t)offsetof(struct fk_py_krec, f);
    unsigned out = fk_bpf_label_new(b), submit = fk_bpf_label_new(b);
    unsigned ends[FK_PY_KDEPTH + 1];
    for (unsigned k = 0; k <= FK_PY_KDEPTH; k++)
        ends[k] = fk_bpf_label_new(b);
    /* the thread's state, by its tid (the key on the stack) */
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, R10, R0, -8));
    fk_bpf_emit_ld_map_fd(b, R1, tstates_fd);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(R2, R10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, R2, -8));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
    fk_bpf_jump_imm(b, BPF_JEQ, R0, 0, out);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, R7, R0, 0));
    /* a record */
    fk_bpf_emit_ld_map_fd(b, R1, ring_fd);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(R2, (int32_t)sizeof(struct fk_py_krec)));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(R3, 0));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ringbuf_reserve));
    fk_bpf_jump_imm(b, BPF_JEQ, R0, 0, out);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(R8, R0));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, R1, R10, -8));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, R8, R1, offsetof(struct fk_py_krec, tid)));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, R8, R7, offsetof(struct fk_py_krec, tstate)));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, R8, offsetof(struct fk_py_krec, n), 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, R8, offsetof(struct fk_py_krec, head), 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, R8, offsetof(struct fk_py_krec, cframe), 0));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ktime_get_ns));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, R8, R0, offsetof(struct fk_py_krec, time)));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(R9, 0));
    /* cframe = tstate->cframe; head = cframe->current_frame */
    fk_bpf_emit(b, FK_BPF_MOV64_REG(R1, R8));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, R1, offsetof(struct fk_py_krec, cframe)));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(R2, 8));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(R3, R7));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, R3, L->ts_cframe));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_user));
    fk_bpf_jump_imm(b, BPF_JNE, R0, 0, submit);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, R3, R8, offsetof(struct fk_py_krec, cframe)));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, R3, L->cf_current_frame));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(R1, R8));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, R1, offsetof(struct fk_py_krec, head)));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(R2, 8));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_user));
    fk_bpf_jump_imm(b, BPF_JNE, R0, 0, submit);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, R9, R8, offsetof(struct fk_py_krec, head)));
    /* the chain, unrolled: frame k's bytes, then its previous link; the
     * walk ends at a null link (next 0) or an unreadable frame (next: it,
     * read later by process_vm_readv, as are frames past the last) */
    for (unsigned k = 0; k < FK_PY_KDEPTH; k++) {
        int16_t at = (int16_t)(f0 + (int)k * FK_PY_KSTRIDE);
        fk_bpf_jump_imm(b, BPF_JEQ, R9, 0, ends[k]);
        fk_bpf_emit(b, FK_BPF_MOV64_REG(R1, R8));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, R1, at));
        fk_bpf_emit(b, FK_BPF_MOV64_IMM(R2, L->fr_size));
        fk_bpf_emit(b, FK_BPF_MOV64_REG(R3, R9));
        fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_user));
        fk_bpf_jump_imm(b, BPF_JNE, R0, 0, ends[k]);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, R9, R8, at + L->fr_previous));
        if (k < FK_PY_KCODES) {
            /* its code object's header (a failed read leaves zeros), and
             * the first bytes of its co_qualname str (freed with it) */
            int16_t co = (int16_t)(offsetof(struct fk_py_krec, code) + k * FK_PY_KCODE_BYTES);
            int16_t nm = (int16_t)(offsetof(struct fk_py_krec, name) + k * FK_PY_NAME_BYTES);
            read_pointee(b, co, FK_PY_KCODE_BYTES, (int16_t)(at + L->fr_code));
            read_pointee(b, nm, FK_PY_NAME_BYTES, (int16_t)(co + L->co_qualname));
        }
    }
    /* n = k: frames 0..k-1 read (the last first: the loop falls into it) */
    for (unsigned j = 0; j <= FK_PY_KDEPTH; j++) {
        unsigned k = FK_PY_KDEPTH - j;
        fk_bpf_label_place(b, ends[k]);
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, R8, offsetof(struct fk_py_krec, n), (int32_t)k));
        fk_bpf_goto(b, submit);
    }
    fk_bpf_label_place(b, submit);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, R8, R9, offsetof(struct fk_py_krec, next)));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(R1, R8));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(R2, BPF_RB_NO_WAKEUP));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ringbuf_submit));
    fk_bpf_label_place(b, out);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(R0, 1));    /* the sample is kept */
    fk_bpf_emit(b, FK_BPF_EXIT());
}

static int ring_record(void *ctx, void *data, size_t len)
{
    fk_python_krec(ctx, data, len);
    return 0;
}

static void kernel_close(struct fk_pyframes *h)
{
    ring_buffer__free(h->ring);
    h->ring = NULL;
    int *fds[] = { &h->prog_fd, &h->tstates_fd, &h->ring_fd };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

/* Before the events open: the maps, the program, the ring's reader. */
static bool in_kernel(void *state)
{
    struct fk_pyframes *h = state;
    const struct fk_py_layout *L = fk_py_layout_for(0x030b);
    char err[256];
    if (!L || L->fr_size > FK_PY_KSTRIDE || L->co_qualname + 8 > FK_PY_KCODE_BYTES) {
        snprintf(h->why, sizeof h->why, "no layout the program reads");
        return false;
    }
    if (!fk_bpf_usable(err, sizeof err)) {
        snprintf(h->why, sizeof h->why, "%s", err);
        return false;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    uint32_t ring = RING_PER_CPU;
    while (ring < RING_MAX && (long)(ring / RING_PER_CPU) < ncpu)
        ring *= 2;
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    bool ok = fk_bpf_map_create(BPF_MAP_TYPE_HASH, "fk_py_tstates", 4, 8, FK_PY_MAX_THREADS, 0,
                                &h->tstates_fd, err, sizeof err) &&
              fk_bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fk_py_frames", 0, 0, ring, 0,
                                &h->ring_fd, err, sizeof err);
    if (ok) {
        gen_program(&b, L, h->tstates_fd, h->ring_fd);
        ok = fk_bpf_prog_load(&b, BPF_PROG_TYPE_PERF_EVENT, "fk_py_frames", &h->prog_fd, err,
                              sizeof err);
    }
    fk_bpf_builder_free(&b);
    if (ok && !(h->ring = ring_buffer__new(h->ring_fd, ring_record, NULL, NULL))) {
        snprintf(err, sizeof err, "ring_buffer__new: %s", strerror(errno));
        ok = false;
    }
    if (!ok) {
        snprintf(h->why, sizeof h->why, "%s", err);
        kernel_close(h);
        return false;
    }
    h->kernel = true;
    return true;
}

static void attach(void *state, int perf_fd)
{
    struct fk_pyframes *h = state;
    char err[256];
    if (h->prog_fd < 0)
        return;
    if (perf_fd < 0) {
        if (!h->refused++)
            snprintf(h->why, sizeof h->why, "the sampling events' fds were not found");
        return;
    }
    if (fk_bpf_attach_perf(perf_fd, h->prog_fd, err, sizeof err)) {
        h->attached++;
        return;
    }
    if (!h->refused++)
        snprintf(h->why, sizeof h->why, "%s", err);
}

static void drain(void *ctx)
{
    struct fk_pyframes *h = ctx;
    ring_buffer__consume(h->ring);
}

static bool put(void *ctx, uint32_t tid, uint64_t tstate)
{
    struct fk_pyframes *h = ctx;
    return bpf_map_update_elem(h->tstates_fd, &tid, &tstate, BPF_ANY) == 0;
}

/* ---- the hook ---- */

static struct fk_python *reader(struct fk_pyframes *h, struct fk_engine *e)
{
    if (!h->py) {
        h->py = fk_python_new(fk_engine_symbolizer(e), h->lines, h->max_bytes);
        if (h->kernel && h->attached) {
            /* the ring's records go to the module that reads them */
            ring_buffer__free(h->ring);
            h->ring = ring_buffer__new(h->ring_fd, ring_record, h->py, NULL);
            if (h->ring)
                fk_python_set_kernel(h->py, fk_py_layout_for(0x030b), drain, put, h);
            else
                snprintf(h->why, sizeof h->why, "ring_buffer__new: %s", strerror(errno));
        }
    }
    return h->py;
}

/* The reader's thread: h->py was made by the first catch_up, before the
 * thread started. */
static unsigned early(void *state, const struct fk_sample *s)
{
    struct fk_pyframes *h = state;
    int got = h->py ? fk_python_early(h->py, s->pid, s->tid, s->time) : 0;
    /* read by the kernel's program: 0; a thread it does not know yet
     * waits, or was read now, on the reader's slower clock (SOON) */
    return (got & FK_PY_EARLY_WAIT ? FK_EARLY_CATCH_UP : 0u) |
           (got & FK_PY_EARLY_READ ? FK_EARLY_FOLLOW : 0u) |
           (got && h->kernel && h->attached ? FK_EARLY_SOON : 0u);
}

static void mapped(void *state, pid_t pid, const char *path, uint64_t time)
{
    struct fk_pyframes *h = state;
    if (h->py)
        fk_python_mapped(h->py, pid, path, time);
}

static void catch_up(void *state, struct fk_engine *e)
{
    fk_python_catch_up(reader(state, e));
}

static void user_frames(void *state, struct fk_engine *e, const struct fk_sample *s,
                        struct fk_stack_frames *st)
{
    struct fk_pyframes *h = state;
    if (st->user >= st->n)
        return;
    struct fk_python *py = reader(h, e);
    struct fk_py_native nat = {
        .locs = st->locs + st->user, .n = st->n - st->user, .max = st->cap - st->user,
        .complete = true, .time = s->time,
    };
    struct fk_loc trunc = fk_sym_special(fk_engine_symbolizer(e), "[truncated]");
    const struct fk_loc *last = &nat.locs[nat.n - 1];
    if (last->dso == trunc.dso && last->addr == trunc.addr)
        nat.complete = false;
    struct fk_unwinder *uw = fk_engine_unwinder(e);
    if (st->user_unwound && uw) {
        nat.sps = fk_unwind_last_sps(uw, &nat.nsps);
        if (nat.nsps && s->stack) {
            nat.stack = s->stack;
            nat.stack_base = nat.sps[0];
            nat.stack_len = s->stack_dyn;
        }
    }
    fk_python_sample(py, st->pid, st->tid, &nat);
    st->n = st->user + nat.n;
}

static size_t bytes(void *state)
{
    const struct fk_pyframes *h = state;
    return fk_python_bytes(h->py);
}

void fk_pyframes_init(struct fk_pyframes *h, bool lines, uint64_t max_bytes)
{
    memset(h, 0, sizeof *h);
    h->lines = lines;
    h->max_bytes = max_bytes;
    h->hook.name = "python";
    h->hook.state = h;
    h->hook.user_frames = user_frames;
    h->hook.early = early;
    h->hook.catch_up = catch_up;
    h->hook.mapped = mapped;
    h->hook.bytes = bytes;
    h->hook.in_kernel = in_kernel;
    h->hook.attach = attach;
    h->prog_fd = h->tstates_fd = h->ring_fd = -1;
}

void fk_pyframes_finish(struct fk_pyframes *h, struct fk_python_stats *out)
{
    memset(out, 0, sizeof *out);
    if (h->py)
        fk_python_stats(h->py, out);
    out->kernel = h->kernel && h->attached && h->ring;
    out->kernel_attached = h->attached;
    out->kernel_refused = h->refused;
    snprintf(out->kernel_why, sizeof out->kernel_why, "%s", h->why);
    fk_python_free(h->py);
    h->py = NULL;
    kernel_close(h);
}
