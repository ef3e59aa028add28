/* SPDX-License-Identifier: GPL-2.0-only */
/* A process tree followed from the side-band records: the processes given
 * (all their threads), and every task they create during the capture,
 * however short-lived.
 *
 * PID targets also take the descendants running at the start (read from
 * /proc): a compiler a build forked just before the capture is the
 * build's.
 *
 * Why: per-task inherited counters start from zero in every child, so a
 * child that never runs a whole period is never sampled (a shell loop of
 * /bin/true: 0 samples for 7 s of CPU). 'pid' therefore samples per CPU in
 * its target's cgroup when that is small (a service's; the kernel filters
 * to the cgroup, fk_target_pid_cgroup) and keeps the samples whose task is
 * in this tree; the decision is made on the sample's pid before any
 * unwinding is paid. ('run' needs no tree: its cgroup is the command's.)
 *
 * Invariants:
 *  - a task is a member from its FORK record (its creator was a member)
 *    until its EXIT record; the records are handled in time order, so a
 *    sample is judged by the tree as it was when the sample was taken;
 *  - a FORK record decides the new task's membership afresh, so a reused
 *    pid or tid never inherits an old member's place;
 *  - memory is proportional to the live members (dead entries are
 *    compacted away), not to the number of tasks ever seen: a tree of
 *    10,000 short children costs what its widest moment costs;
 *  - a thread that execs takes its process's pid (the kernel gives it the
 *    leader's tid): its old tid is dropped at the exec's COMM record. */
#ifndef FK_TREE_H
#define FK_TREE_H

#include "util/hindex.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* One map: 32-bit key -> non-zero 32-bit value, with removal. */
struct fk_tree_map {
    struct fk_tree_ent { uint32_t key, val; } *v;   /* val 0: removed */
    size_t n, cap, live;
    struct fk_hindex index;
};

struct fk_tree_stats {
    uint64_t processes;     /* processes that were members (given + forked) */
    uint64_t forks;         /* of those, created during the capture */
    uint64_t threads;       /* threads created in member processes */
    uint64_t exits;         /* member processes whose last thread exited */
    uint64_t live;          /* member processes alive now */
    uint64_t peak_live;     /* most member processes alive at once */
    uint64_t resyncs;       /* checks against /proc after lost records */
    uint64_t not_followed;  /* BPF tree (capture/bpftree.h): tasks its full map
                             * had no room for, their samples dropped */
};

/* Member processes whose last thread's EXIT record was the latest: the
 * kernel writes a task's EXIT record before its last switch-out (and a
 * sample may land in between), so those samples are still the tree's. */
#define FK_TREE_EXITED 64

struct fk_tree {
    struct fk_tree_map tasks;   /* live member tid -> its pid */
    struct fk_tree_map procs;   /* live member pid -> its live threads */
    uint32_t exited[FK_TREE_EXITED];    /* the last exited member pids (0: none) */
    unsigned exited_next;
    struct fk_tree_stats st;
};

void fk_tree_init(struct fk_tree *t);
void fk_tree_free(struct fk_tree *t);

/* A process present when the capture starts: it and the threads listed in
 * /proc/PID/task (call after the events are enabled: a thread created in
 * between is then seen twice, which is harmless, rather than never) but
 * those that have begun to exit (a zombie leader, PF_EXITING: their EXIT
 * record may be written already). False if no thread was added. */
bool fk_tree_add_process(struct fk_tree *t, pid_t pid);
/* Processes whose parent is a member, from /proc (their children too):
 * the descendants of the given processes running when the capture starts,
 * or children whose FORK record was lost. Counted as forks. Returns how
 * many were added. */
size_t fk_tree_add_descendants(struct fk_tree *t);
/* Add one task directly (tests, and the child of 'run' before its exec). */
void fk_tree_add_task(struct fk_tree *t, pid_t pid, pid_t tid);

/* PERF_RECORD_FORK: tid (of process pid) was created by ptid (of ppid).
 * Returns whether the new task is a member. */
bool fk_tree_fork(struct fk_tree *t, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid);
/* PERF_RECORD_EXIT of a task. Returns whether it was a member. */
bool fk_tree_exit(struct fk_tree *t, pid_t pid, pid_t tid);
/* PERF_RECORD_COMM with PERF_RECORD_MISC_COMM_EXEC. */
void fk_tree_exec(struct fk_tree *t, pid_t pid, pid_t tid);

/* Is this process a member now? */
bool fk_tree_has(const struct fk_tree *t, pid_t pid);
/* Is a sample of this process the tree's: a member, or one of the last
 * FK_TREE_EXITED members to exit whose pid no FORK record has given to
 * another process since (its last switch-out comes after its EXIT). */
bool fk_tree_owns(const struct fk_tree *t, pid_t pid);
/* No member left: the whole tree has exited. */
static inline bool fk_tree_empty(const struct fk_tree *t) { return t->procs.live == 0; }

/* After lost records: drop members that /proc no longer has (an EXIT was
 * lost: the capture still ends when the tree is gone), and add processes
 * whose parent is a member (a FORK was lost). */
void fk_tree_resync(struct fk_tree *t);

size_t fk_tree_bytes(const struct fk_tree *t);

#endif
