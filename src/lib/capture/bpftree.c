/* SPDX-License-Identifier: GPL-2.0-only */
/* The in-kernel process tree of a 'pid' target sampled per CPU over the
 * host (bpftree.h): a hash map tgid -> fork time, kept by a
 * sched_process_fork program, read by a perf-event program on each
 * sampling event. */
#include "capture/bpftree.h"
#include "capture/bpf.h"
#include "capture/tracefs.h"
#include "util/fk.h"

#include <bpf/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct fk_bpftree {
    int map, fork_prog, fork_event, filter_prog;
    uint32_t entries;
};

/* Hash map entry: key, value and the kernel's element header (~48 bytes
 * with its list node and hash), preallocated. */
#define ENTRY_BYTES 64

/* sched_process_fork, current the forking thread: a parent whose tgid is
 * a member puts the child (pid or tid) in with the time; any other parent
 * takes the child's number out (a reused pid). */
static bool load_fork_prog(struct fk_bpftree *t, char *err, size_t errlen)
{
    struct fk_tp_format fork;
    if (!fk_tp_format_load("sched", "sched_process_fork", &fork, err, errlen))
        return false;
    const struct fk_tp_field *child = fk_tp_field(&fork, "child_pid");
    if (!child || child->size != 4 || child->offset < 8 || child->offset % 4) {
        snprintf(err, errlen, "sched:sched_process_fork has no aligned 4-byte child_pid field");
        return false;
    }
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    unsigned out = fk_bpf_label_new(&b), done = fk_bpf_label_new(&b);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_6, BPF_REG_1));
    fk_bpf_emit(&b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_7, BPF_REG_6, (int16_t)child->offset));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_7, -8));      /* key: child */
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -4));      /* parent tgid */
    fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, t->map);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -4));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, out);
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_ktime_get_ns));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_0, -16));
    fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, t->map);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_3, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, -16));
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_ANY));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_map_update_elem));
    fk_bpf_goto(&b, done);
    fk_bpf_label_place(&b, out);
    fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, t->map);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_map_delete_elem));
    fk_bpf_label_place(&b, done);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));     /* nothing for perf */
    fk_bpf_emit(&b, FK_BPF_EXIT());
    bool ok = fk_bpf_prog_load(&b, BPF_PROG_TYPE_TRACEPOINT, "fk_tree_fork", &t->fork_prog, err,
                               errlen);
    fk_bpf_builder_free(&b);
    return ok && fk_bpf_attach_tracepoint(fork.id, t->fork_prog, &t->fork_event, err, errlen);
}

/* On a sample: 1 (keep) if the current tgid is in the map, else 0. */
static bool load_filter_prog(struct fk_bpftree *t, char *err, size_t errlen)
{
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    unsigned no = fk_bpf_label_new(&b);
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -4));
    fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, t->map);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -4));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, no);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 1));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    fk_bpf_label_place(&b, no);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    bool ok = fk_bpf_prog_load(&b, BPF_PROG_TYPE_PERF_EVENT, "fk_tree_filter", &t->filter_prog,
                               err, errlen);
    fk_bpf_builder_free(&b);
    return ok;
}

struct fk_bpftree *fk_bpftree_new(uint32_t max_entries, char *err, size_t errlen)
{
    struct fk_bpftree *t = fk_malloc(sizeof *t);
    *t = (struct fk_bpftree){ .map = -1, .fork_prog = -1, .fork_event = -1, .filter_prog = -1,
                              .entries = max_entries };
    if (!fk_bpf_map_create(BPF_MAP_TYPE_HASH, "fk_tree", 4, 8, max_entries, 0, &t->map, err,
                           errlen) ||
        !load_filter_prog(t, err, errlen) || !load_fork_prog(t, err, errlen)) {
        fk_bpftree_free(t);
        return NULL;
    }
    return t;
}

bool fk_bpftree_filter(struct fk_bpftree *t, int perf_fd, char *err, size_t errlen)
{
    return fk_bpf_attach_perf(perf_fd, t->filter_prog, err, errlen);
}

bool fk_bpftree_add(struct fk_bpftree *t, pid_t pid)
{
    uint32_t k = (uint32_t)pid;
    uint64_t v = 0;
    return pid > 0 && bpf_map_update_elem(t->map, &k, &v, BPF_NOEXIST) == 0;
}

void fk_bpftree_exit(struct fk_bpftree *t, pid_t pid, uint64_t at_ns)
{
    uint32_t k = (uint32_t)pid;
    uint64_t v;
    if (pid > 0 && bpf_map_lookup_elem(t->map, &k, &v) == 0 && v <= at_ns)
        (void)bpf_map_delete_elem(t->map, &k);
}

bool fk_bpftree_has(struct fk_bpftree *t, pid_t pid)
{
    uint32_t k = (uint32_t)pid;
    uint64_t v;
    return pid > 0 && bpf_map_lookup_elem(t->map, &k, &v) == 0;
}

size_t fk_bpftree_bytes(const struct fk_bpftree *t)
{
    return (size_t)t->entries * ENTRY_BYTES;
}

void fk_bpftree_free(struct fk_bpftree *t)
{
    if (!t)
        return;
    int *fds[] = { &t->fork_event, &t->fork_prog, &t->filter_prog, &t->map };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    free(t);
}
