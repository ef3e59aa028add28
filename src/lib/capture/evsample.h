/* SPDX-License-Identifier: GPL-2.0-only */
/* One counted event sampled one in N with callchains, through libperf:
 * the engine of flamekit faults (page faults, other software events,
 * tracepoints). Fixed period, PERF_SAMPLE_PERIOD left out (see
 * period_check.h), the event's own count read after disabling, side-band
 * records fed to a symbolizer, stacks folded into a stack table with
 * weight = period. */
#ifndef FK_EVSAMPLE_H
#define FK_EVSAMPLE_H

#include "stacks/stacktab.h"
#include "capture/minisym.h"

#include <sys/types.h>

enum fk_evs_target_kind { FK_EVS_HOST, FK_EVS_PIDS, FK_EVS_RUN, FK_EVS_USER, FK_EVS_CGROUP };

struct fk_evs_target {
    enum fk_evs_target_kind kind;
    pid_t *pids;            /* FK_EVS_PIDS */
    size_t npids;
    char **argv;            /* FK_EVS_RUN: NULL-terminated */
    uid_t uid;              /* FK_EVS_USER: samples of this user's processes */
    const char *cgroup;     /* FK_EVS_CGROUP: cgroup v2 path relative to the root, "/a/b" */
};

struct fk_evs_opts {
    uint32_t type;          /* PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT */
    uint64_t config;
    uint64_t period;        /* fixed sample period, >= 1 */
    bool exclude_kernel;    /* only hits taken in user mode */
    bool exclude_user;
    bool kernel_stacks;     /* kernel part of callchains (needs root or paranoid <= 1) */
    uint64_t duration_ms;   /* 0: until the targets are gone (run, pids) */
    int ring_pages;         /* per CPU, power of two; 0 = 128 */
    volatile int *stop;     /* set by a signal handler: end early, keep results */
    void (*tick)(void *ctx, uint64_t elapsed_ms);   /* once a ~100 ms, may be NULL */
    void *tick_ctx;
};

struct fk_evs_result {
    uint64_t samples;       /* sample records of the event (before target filters) */
    uint64_t kept;          /* samples of the target (user/cgroup filters) */
    uint64_t lost;          /* records lost (PERF_RECORD_LOST) */
    uint64_t throttles;
    uint64_t count;         /* the event's own count, summed over counters */
    bool have_count;
    uint64_t instances;     /* counters (fds) + inherited copies (forks x CPUs) */
    uint64_t forks;
    uint64_t elapsed_ms;
    bool stopped;           /* ended by *stop */
    int child_status;       /* FK_EVS_RUN: waitpid status */
    bool child_exited;
    pid_t child_pid;
    unsigned ncpus;
};

/* Capture into t (folded "comm;outer;...;leaf" keys, each sample weighted
 * by the period). Returns false after reporting an error. */
bool fk_evs_capture(const struct fk_evs_opts *o, const struct fk_evs_target *tg,
                    struct fk_minisym *sym, struct fk_stacktab *t, struct fk_evs_result *r);

#endif
