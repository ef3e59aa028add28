/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture engine: one sampling event opened through libperf on a target
 * (host, pids, user, cgroup, a command), per-CPU rings read in time order,
 * side-band records fed to the symbolizer, stacks aggregated at sample time
 * into a table keyed by (comm, pid, locations) -- memory grows with unique
 * stacks, not samples -- and named once at the end into a structured profile
 * (locations, mappings, functions: what pprof needs) from which the folded
 * stack table is drawn.
 *
 * Used by 'flamekit host|pid|user|cgroup|run' (record.c) and by any other
 * profile kind (page faults) that only needs a different event. */
#ifndef FK_CAPTURE_H
#define FK_CAPTURE_H

#include "stacks/prof.h"
#include "stacks/stacktab.h"
#include "symbols/symbols.h"
#include "util/fk.h"

#include <jansson.h>
#include <signal.h>
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
};

/* Resolve a target from the command line; on error print one line and
 * return false. arg is NULL for host. */
bool fk_target_host(struct fk_target *t);
bool fk_target_pids(struct fk_target *t, const char *list);      /* "12,34" */
bool fk_target_user(struct fk_target *t, const char *user);      /* name or uid */
bool fk_target_cgroup(struct fk_target *t, const char *arg);     /* path or container id */
/* Fork argv[0] stopped before exec; fk_target_run_exec lets it go once the
 * events are open (called by the engine). stdout_to_stderr: the command's
 * stdout goes to stderr (a result stream owns stdout). Returns false on
 * error. */
bool fk_target_run(struct fk_target *t, char **argv, bool stdout_to_stderr);
/* Releases the child: it execs. false if exec failed (error printed,
 * *exec_errno set). */
bool fk_target_run_exec(struct fk_target *t, int *exec_errno);
void fk_target_free(struct fk_target *t);

/* The sampling event. */
struct fk_event {
    uint32_t type;          /* PERF_TYPE_* */
    uint64_t config;        /* PERF_COUNT_* */
    uint64_t freq;          /* samples per second per CPU; 0 = fixed period */
    uint64_t period;        /* one sample every `period` events (freq == 0);
                               PERF_SAMPLE_PERIOD is then left out of
                               sample_type, or software events sample every hit */
    bool exclude_kernel;
    bool exclude_user;
    bool no_callchain;      /* leaf ip only */
    char name[48];          /* "cpu-clock", "cycles", "page-faults" */
};
/* Hardware cycles if this machine has a PMU, else cpu-clock (like perf). */
void fk_event_cpu_default(struct fk_event *ev, uint64_t freq);

struct fk_capture_opts {
    struct fk_event event;
    struct fk_target *target;
    uint64_t duration_ms;           /* 0 = until stopped / the targets exit */
    uint64_t max_mem_bytes;         /* stack table + symbolizer; stop cleanly beyond */
    unsigned ring_pages;            /* data pages per CPU ring, power of two; 0 = auto */
    bool weight_by_period;          /* fixed period: count += period per sample */
    const char *value_name;         /* fixed period: what one event is, in the
                                       structured profile ("faults"); NULL = the
                                       event's name */
    bool progress;                  /* countdown line on stderr (only if a TTY) */
    bool quiet;
    const char *progress_label;     /* e.g. "flamekit host" */
    volatile sig_atomic_t *stop;    /* non-zero: end the capture (signal handlers) */
    struct fk_sym_opts sym;         /* symbolizer options */
};
void fk_capture_opts_init(struct fk_capture_opts *o);

struct fk_capture_result {
    struct fk_stacktab stacks;      /* folded "comm;root;...;leaf" -> count */
    struct fk_prof prof;            /* the same stacks with locations, mappings,
                                       comm/pid labels; sample types: frequency
                                       mode samples/count + cpu/nanoseconds,
                                       fixed period samples/count + NAME/count */
    uint64_t samples;               /* samples read */
    uint64_t samples_kept;          /* ... that belonged to the target */
    uint64_t lost;                  /* records the kernel dropped (ring full) */
    uint64_t lost_events;           /* PERF_RECORD_LOST records */
    uint64_t throttled, unthrottled;/* PERF_RECORD_THROTTLE / UNTHROTTLE */
    uint64_t period_sum;            /* sum of sample periods (frequency mode) */
    uint64_t event_count;           /* the event's own total (read()) */
    uint64_t time_enabled, time_running;
    uint64_t start_realtime_ns;     /* wall clock at enable */
    uint64_t duration_ns;           /* enable .. disable */
    uint64_t unique_stacks;         /* raw (location) stacks */
    uint64_t mem_bytes;             /* peak table + symbolizer bytes */
    uint64_t kernel_frames, user_frames;
    uint64_t naming_ns;             /* after the capture: naming the unique
                                       locations and folding (benchmarks) */
    const char *stop_reason;        /* "duration", "signal", "target exited", "memory limit" */
    bool mem_limited;
    bool child_exited;              /* RUN */
    int child_status;               /* RUN: wait status */
    unsigned ring_pages;
    int ncpus;
    struct fk_sym_stats sym;
    /* For one-in-N verification (capture/period_check.h): counters opened
     * (CPUs x threads) and tasks forked under inherited counters, each of
     * which keeps its own remainder below the period. */
    uint64_t counters;
    uint64_t forks;
};

/* Run the capture. Returns FK_EXIT_OK, or FK_EXIT_ERROR after one error line
 * (e.g. perf_event_paranoid). r->stacks and r->prof are valid on success; release the
 * result with fk_capture_result_free. */
int fk_capture_run(const struct fk_capture_opts *o, struct fk_capture_result *r);
void fk_capture_result_free(struct fk_capture_result *r);

/* Facts about this machine for metadata (sysinfo.c): host, kernel, os,
 * cpu, memory, numa, set into the JSON object o. */
void fk_sysinfo_json(json_t *o);

/* Kernel limits read from /proc/sys/kernel. */
uint64_t fk_perf_max_sample_rate(void);
uint64_t fk_perf_mlock_kb(void);
int fk_perf_paranoid(void);

#endif
