/* SPDX-License-Identifier: GPL-2.0-only */
/* A process tree kept in the kernel, for 'pid' targets whose cgroup is the
 * host's root (or too large to sample in cgroup mode): per-CPU sampling
 * events over the whole host, each with a perf-event program that drops
 * (returns 0 for) every sample whose current process is not in the tree
 * map, before the kernel writes it. A tracepoint program on
 * sched:sched_process_fork puts each child of a member in the map before
 * it first runs, so a child sampled per CPU is the tree's from its first
 * instruction (per-task inherited events start from zero in every child:
 * one that never runs a whole period is never sampled).
 *
 * Invariants:
 *  - The map is a superset of the engine's tree (capture/tree.h), which
 *    stays the authority on each sample: it only lets through what may be
 *    the tree's, never decides alone.
 *  - A child whose parent is not a member is taken out of the map: a
 *    reused pid never inherits a dead member's place.
 *  - Each entry's value is its fork time (bpf_ktime_get_ns, the records'
 *    CLOCK_MONOTONIC; 0 for the processes seeded from /proc): an EXIT
 *    record removes a pid only if the entry is older than the exit, so a
 *    pid reused after it stays. A new thread's tid is put in too (the
 *    tracepoint does not tell threads from processes): harmless, as no
 *    process has that tgid while the thread lives, and removed at its EXIT.
 *  - The fields' offsets come from the running kernel's tracefs format.
 *  - Map memory is fixed at creation (fk_bpftree_bytes, charged by the
 *    caller); a full map leaves a child out (its samples are dropped), and
 *    each one left out is counted (fk_bpftree_not_followed): the size is
 *    the caller's to choose generously, a full map is never silent. */
#ifndef FK_CAPTURE_BPFTREE_H
#define FK_CAPTURE_BPFTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fk_bpftree;

/* The map (max_entries processes and threads at once) and both programs,
 * the fork program attached. NULL with one line in err. */
struct fk_bpftree *fk_bpftree_new(uint32_t max_entries, char *err, size_t errlen);
/* Drop the samples of processes outside the tree on the sampling event
 * perf_fd (one per CPU). */
bool fk_bpftree_filter(struct fk_bpftree *t, int perf_fd, char *err, size_t errlen);
/* The tree map's fd, for a program that filters by it itself (the Python
 * wake-up gate, capture/pygate.h: an event holds one program). */
int fk_bpftree_map(const struct fk_bpftree *t);
/* A process present at the start (seeded from /proc after the fork program
 * was attached: a child forked in between is then seen twice, never lost). */
bool fk_bpftree_add(struct fk_bpftree *t, pid_t pid);
/* The EXIT record of pid (a process, or a thread's tid) at at_ns. */
void fk_bpftree_exit(struct fk_bpftree *t, pid_t pid, uint64_t at_ns);
/* Is pid in the map now (any thread may ask)? */
bool fk_bpftree_has(struct fk_bpftree *t, pid_t pid);
/* One process's membership as last looked up, for a reader asking per
 * record (an exec writes a dozen MMAP2s; one look-up is a system call). */
struct fk_bpftree_memo {
    pid_t pid;          /* 0: none yet */
    bool member;
    uint64_t at_ns;     /* CLOCK_MONOTONIC just before the look-up */
};
/* Is the process pid of a record written at rec_ns (CLOCK_MONOTONIC, the
 * records' clock) in the map: the memo's answer when it is pid's and was
 * looked up after the record was written -- the map then had that
 * process from its fork on -- else a look-up, remembered. A record
 * written after the look-up may be a new process with the pid (its FORK
 * in another CPU's ring, not read yet). */
bool fk_bpftree_has_memo(struct fk_bpftree *t, struct fk_bpftree_memo *m, pid_t pid,
                         uint64_t rec_ns);
/* Processes and threads the map had no room for (children of members
 * at their fork, processes from /proc at fk_bpftree_add): their samples
 * were dropped. 0 unless the map was full. */
uint64_t fk_bpftree_not_followed(const struct fk_bpftree *t);
size_t fk_bpftree_bytes(const struct fk_bpftree *t);
/* The fork program's event. Its close waits for an RCU tasks-trace grace
 * period (seconds on a busy host: capture/bpf.h), so the caller keeps a
 * copy (dup) open until its results are written; fk_bpftree_free closes
 * this one. */
int fk_bpftree_fork_event(const struct fk_bpftree *t);
void fk_bpftree_free(struct fk_bpftree *t);

#endif
