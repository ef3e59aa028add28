/* SPDX-License-Identifier: GPL-2.0-only */
/* Capture targets: what the user named (host, pids, a user, a cgroup, a
 * command) resolved into something the engine can open events on, and the
 * filters that keep the samples of host-wide events that belong to the
 * target (a user's processes, a cgroup's tasks). The filters read /proc
 * and the cgroup tree; the engine feeds them the side-band records that
 * change the answer (fork, exec). */
#ifndef FK_CAPTURE_TARGET_H
#define FK_CAPTURE_TARGET_H

#include "util/fk.h"
#include "util/hindex.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum fk_target_kind {
    FK_TARGET_HOST,     /* all CPUs, every process */
    FK_TARGET_PID,      /* listed processes, all threads, children via inherit */
    FK_TARGET_USER,     /* all CPUs, samples of processes whose effective uid matches */
    FK_TARGET_CGROUP,   /* all CPUs, samples whose cgroup v2 is the dir or below it */
    FK_TARGET_RUN,      /* a child stopped before exec (see fk_target_run_*) */
};

struct fk_target {
    enum fk_target_kind kind;
    pid_t *pids;        /* PID: the processes; RUN: pids[0] = the child */
    size_t npids;
    uid_t uid;          /* USER */
    char *user;         /* USER: name (or the number as given) */
    char *cgroup_dir;   /* CGROUP: absolute path of the cgroup v2 directory */
    char *cgroup_rel;   /* CGROUP: path below the cgroup2 mount ("/a/b") */
    char *scope;        /* file-name part: host, pid-1234, user-www, cgroup-NAME, run-CMD */
    char *desc;         /* one line for humans and metadata */
    int run_go, run_err;    /* RUN: pipes to the waiting child (-1: closed) */
    char *run_cgroup;       /* RUN: the cgroup v2 directory made for the command
                               (the child is in it before its exec); NULL: none */
    char *run_cgroup_note;  /* RUN: why there is none (one phrase); NULL: there is */
};

/* Resolve a target from the command line; on error put one line saying
 * what is wrong and how to fix it into err (no program name: the caller
 * prints it or sends it to a client) and return false. */
bool fk_target_host(struct fk_target *t);
bool fk_target_pids(struct fk_target *t, const char *list, char *err, size_t errlen);  /* "12,34" */
/* The pids of a list "12,34" as written, looked up nowhere: true with a
 * fk_grow'n array in *pids (pids NULL: only check), false with err when
 * the list itself is malformed (a word that is no pid, no pid at all),
 * which fk_target_pids reports the same way before it looks for any. */
bool fk_target_pid_list(const char *list, pid_t **pids, size_t *npids, char *err, size_t errlen);
bool fk_target_user(struct fk_target *t, const char *user, char *err, size_t errlen);  /* name or uid */
bool fk_target_cgroup(struct fk_target *t, const char *arg, char *err, size_t errlen); /* path or container id */
/* Fork argv[0] stopped before exec; fk_target_run_exec lets it go once the
 * events are open (called by the engine). stdout_to_stderr: the command's
 * stdout goes to stderr (a result stream owns stdout). False, the reason
 * in err, on error. */
bool fk_target_run(struct fk_target *t, char **argv, bool stdout_to_stderr, char *err,
                   size_t errlen);
/* Releases the child: it execs. false if exec failed (*exec_errno set,
 * the reason in err). */
bool fk_target_run_exec(struct fk_target *t, int *exec_errno, char *err, size_t errlen);
/* PID: the cgroup v2 directory the processes share, when it is small
 * enough to sample per CPU in cgroup mode and keep the target's tree by
 * its FORK/EXIT records (a service's or a container's cgroup): not the
 * root, at most FK_TARGET_TREE_CGROUP_MAX processes in it and below.
 * NULL with why (one phrase) otherwise. The target is never moved. */
#define FK_TARGET_TREE_CGROUP_MAX 64
char *fk_target_pid_cgroup(const struct fk_target *t, char *why, size_t whylen);
/* A cgroup v2 of its own for the process pid (all its threads), made below
 * this process's cgroup as NAME.OURPID.PID: run's command, fetch-bench's
 * servers. NULL with *note (one allocated phrase) when it cannot be. */
char *fk_cgroup_make(pid_t pid, const char *name, char **note);
/* Remove such a cgroup and those made below it, moving what still runs
 * there to its parent; false with errno when it stays. */
bool fk_cgroup_remove(const char *dir);
/* RUN: remove the command's cgroup once the capture is over (the runner
 * does, after the command exits); one that stays is said through warn
 * (NULL: not said), with how to remove it. */
void fk_target_remove_cgroup(struct fk_target *t, fk_warn_fn warn, void *warn_ctx);
/* Frees; a RUN cgroup still there is removed unsaid. */
void fk_target_free(struct fk_target *t);

/* ---- filters (engine side) ---- */

struct fk_target_filter {
    const struct fk_target *t;
    struct fk_u64map uids;          /* USER: pid -> (uid << 1 | 1), 0 = unknown */
    struct fk_u64map uid_checked;   /* USER: pid -> mono ns of the last /proc check */
    struct fk_u64map cgroups;       /* CGROUP: cgroup id -> 1 inside, 2 outside */
    uint64_t cgroup_rescan_ns;
};
void fk_target_filter_init(struct fk_target_filter *f, const struct fk_target *t);
void fk_target_filter_free(struct fk_target_filter *f);
/* Does a sample of pid (in cgroup, PERF_SAMPLE_CGROUP) belong to the target? */
bool fk_target_keep(struct fk_target_filter *f, pid_t pid, uint64_t cgroup);
/* Side-band: pid exec'ed (a setuid binary changes uid); pid forked from ppid. */
void fk_target_filter_exec(struct fk_target_filter *f, pid_t pid);
void fk_target_filter_fork(struct fk_target_filter *f, pid_t pid, pid_t ppid);

#endif
