/* SPDX-License-Identifier: GPL-2.0-only */
/* The Python wake-up gate (pygate.h): a hash map tgid -> wake, a BPF ring
 * buffer of notifications, and the perf-event program between them. */
#include "capture/pygate.h"
#include "capture/bpf.h"
#include "util/fk.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fk_pygate {
    int pids, ring, prog;
    int tree_prog, tree_map;    /* the variant with a tree filter (-1: none yet) */
    struct ring_buffer *rb;
    uint32_t entries;
    uint64_t wakeups, marked, full;
};

/* Hash map entry with the kernel's element header, preallocated. */
#define ENTRY_BYTES 64
/* Notifications are 16 bytes with their header; the reader takes them at
 * each wake-up, so a few pages hold thousands. */
#define RING_BYTES (64u << 10)

/* On a sample: the tgid. tgid 0 (a CPU's idle task) and a process marked
 * 0 write nothing; a process marked 1 or not in the map writes its CPU's
 * number, waking the reader. Returns 1 (the sample is kept) -- with
 * tree_map >= 0 (a 'pid' target's tree, capture/bpftree.h), 0 for a
 * process outside it, whose sample is dropped as the tree's own filter
 * drops it (an event holds one program). Stack: -4 the key, -16 the
 * notification. */
static bool load_prog(struct fk_pygate *g, int tree_map, int *prog, char *err, size_t errlen)
{
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    unsigned keep = fk_bpf_label_new(&b), note = fk_bpf_label_new(&b),
             drop = tree_map >= 0 ? fk_bpf_label_new(&b) : 0;
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -4));
    if (tree_map >= 0) {
        fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, tree_map);
        fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
        fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -4));
        fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
        fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, drop);
        fk_bpf_emit(&b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_0, BPF_REG_10, -4));
    }
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, keep);
    fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, g->pids);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -4));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, note);
    fk_bpf_emit(&b, FK_BPF_LDX_MEM(BPF_B, BPF_REG_1, BPF_REG_0, 0));
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_1, 0, keep);
    fk_bpf_label_place(&b, note);
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_get_smp_processor_id));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_0, -16));
    fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, g->ring);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -16));
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_3, 8));
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_RB_FORCE_WAKEUP));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_ringbuf_output));
    fk_bpf_label_place(&b, keep);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 1));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    if (tree_map >= 0) {
        fk_bpf_label_place(&b, drop);
        fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
        fk_bpf_emit(&b, FK_BPF_EXIT());
    }
    bool ok = fk_bpf_prog_load(&b, BPF_PROG_TYPE_PERF_EVENT,
                               tree_map >= 0 ? "fk_py_gate_tree" : "fk_py_gate", prog, err, errlen);
    fk_bpf_builder_free(&b);
    return ok;
}

static int on_note(void *ctx, void *data, size_t size)
{
    (void)data;
    (void)size;
    struct fk_pygate *g = ctx;
    __atomic_add_fetch(&g->wakeups, 1, __ATOMIC_RELAXED);
    return 0;
}

struct fk_pygate *fk_pygate_new(uint32_t max_entries, char *err, size_t errlen)
{
    struct fk_pygate *g = fk_calloc(1, sizeof *g);
    g->pids = g->ring = g->prog = g->tree_prog = g->tree_map = -1;
    g->entries = max_entries;
    if (!fk_bpf_map_create(BPF_MAP_TYPE_HASH, "fk_py_pids", 4, 1, max_entries, 0, &g->pids, err,
                           errlen) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fk_py_notes", 0, 0, RING_BYTES, 0, &g->ring,
                           err, errlen) ||
        !load_prog(g, -1, &g->prog, err, errlen)) {
        fk_pygate_free(g);
        return NULL;
    }
    g->rb = ring_buffer__new(g->ring, on_note, g, NULL);
    if (!g->rb) {
        snprintf(err, errlen, "BPF ring buffer for Python wake-ups: %s", strerror(errno));
        fk_pygate_free(g);
        return NULL;
    }
    return g;
}

bool fk_pygate_attach(struct fk_pygate *g, int perf_fd, int tree_map, char *err, size_t errlen)
{
    if (tree_map < 0)
        return fk_bpf_attach_perf(perf_fd, g->prog, err, errlen);
    if (g->tree_prog >= 0 && g->tree_map != tree_map) {
        snprintf(err, errlen, "the Python gate serves one tree");
        return false;
    }
    if (g->tree_prog < 0 && !load_prog(g, tree_map, &g->tree_prog, err, errlen))
        return false;
    g->tree_map = tree_map;
    return fk_bpf_attach_perf(perf_fd, g->tree_prog, err, errlen);
}

void fk_pygate_mark(struct fk_pygate *g, pid_t pid, enum fk_pygate_mark m)
{
    uint32_t k = (uint32_t)pid;
    if (pid <= 0)
        return;
    if (m == FK_PYGATE_FORGET) {
        (void)bpf_map_delete_elem(g->pids, &k);
        return;
    }
    uint8_t v = m == FK_PYGATE_WAKE;
    if (bpf_map_update_elem(g->pids, &k, &v, BPF_ANY) == 0)
        __atomic_add_fetch(&g->marked, 1, __ATOMIC_RELAXED);
    else if (errno == E2BIG)
        __atomic_add_fetch(&g->full, 1, __ATOMIC_RELAXED);
}

int fk_pygate_fd(const struct fk_pygate *g)
{
    return g->ring;
}

uint64_t fk_pygate_drain(struct fk_pygate *g)
{
    int n = ring_buffer__consume(g->rb);
    return n > 0 ? (uint64_t)n : 0;
}

void fk_pygate_stats(const struct fk_pygate *g, struct fk_pygate_stats *out)
{
    out->wakeups = __atomic_load_n(&g->wakeups, __ATOMIC_RELAXED);
    out->marked = __atomic_load_n(&g->marked, __ATOMIC_RELAXED);
    out->full = __atomic_load_n(&g->full, __ATOMIC_RELAXED);
}

size_t fk_pygate_bytes(const struct fk_pygate *g)
{
    return g ? (size_t)g->entries * ENTRY_BYTES + RING_BYTES : 0;
}

void fk_pygate_free(struct fk_pygate *g)
{
    if (!g)
        return;
    ring_buffer__free(g->rb);
    int *fds[] = { &g->tree_prog, &g->prog, &g->ring, &g->pids };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    free(g);
}
