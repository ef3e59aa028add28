/* SPDX-License-Identifier: GPL-2.0-only */
/* The in-kernel process tree of a 'pid' target sampled per CPU over the
 * host (bpftree.h): a hash map tgid -> fork time, kept by a
 * sched_process_fork program, read by a perf-event program on each
 * sampling event. */
#include "capture/bpftree.h"
#include "capture/bpf.h"
#include "util/fk.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct fk_bpftree {
    int map, fork_prog, fork_event, filter_prog;
    int full;                   /* [0]: children the fork program had no room for */
    uint64_t seed_full;         /* processes from /proc with no room */
    uint32_t entries;
};

/* Hash map entry: key, value and the kernel's element header (~48 bytes
 * with its list node and hash), preallocated. */
#define ENTRY_BYTES 64

/* On a sample: 1 (keep) if the current tgid is in the map, else 0. */
static bool load_filter_prog(struct fk_bpftree *t, char *err, size_t errlen)
{
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    unsigned no = fk_bpf_label_new(&b);
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -4));
    fk_bpf_emit_map_lookup(&b, t->map, -4);
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
                              .full = -1, .entries = max_entries };
    if (!fk_bpf_map_create(BPF_MAP_TYPE_HASH, "fk_tree", 4, 8, max_entries, 0, &t->map, err,
                           errlen) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_tree_full", 4, 8, 1, 0, &t->full, err,
                           errlen) ||
        !load_filter_prog(t, err, errlen) ||
        /* a member's child goes in with its fork time; any other child's
         * number comes out (a reused pid); one with no room is counted */
        !fk_bpf_fork_follower(t->map, FK_BPF_FORK_TIME, FK_BPF_FORK_DELETE, t->full,
                              "fk_tree_fork", &t->fork_prog, &t->fork_event, err, errlen)) {
        fk_bpftree_free(t);
        return NULL;
    }
    return t;
}

bool fk_bpftree_filter(struct fk_bpftree *t, int perf_fd, char *err, size_t errlen)
{
    return fk_bpf_attach_perf(perf_fd, t->filter_prog, err, errlen);
}

int fk_bpftree_map(const struct fk_bpftree *t)
{
    return t->map;
}

bool fk_bpftree_add(struct fk_bpftree *t, pid_t pid)
{
    uint32_t k = (uint32_t)pid;
    uint64_t v = 0;
    if (pid <= 0)
        return false;
    if (bpf_map_update_elem(t->map, &k, &v, BPF_NOEXIST) == 0)
        return true;
    if (errno == E2BIG)         /* (EEXIST: the fork program put it in) */
        t->seed_full++;
    return false;
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

bool fk_bpftree_has_memo(struct fk_bpftree *t, struct fk_bpftree_memo *m, pid_t pid,
                         uint64_t rec_ns)
{
    if (pid != m->pid || rec_ns > m->at_ns) {
        m->at_ns = fk_now_ns();
        m->pid = pid;
        m->member = fk_bpftree_has(t, pid);
    }
    return m->member;
}

uint64_t fk_bpftree_not_followed(const struct fk_bpftree *t)
{
    uint32_t k = 0;
    uint64_t n = 0;
    if (bpf_map_lookup_elem(t->full, &k, &n) != 0)
        n = 0;
    return n + t->seed_full;
}

size_t fk_bpftree_bytes(const struct fk_bpftree *t)
{
    return (size_t)t->entries * ENTRY_BYTES;
}

int fk_bpftree_fork_event(const struct fk_bpftree *t)
{
    return t->fork_event;
}

void fk_bpftree_free(struct fk_bpftree *t)
{
    if (!t)
        return;
    int *fds[] = { &t->fork_event, &t->fork_prog, &t->filter_prog, &t->full, &t->map };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    free(t);
}
