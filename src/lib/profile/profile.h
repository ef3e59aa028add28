/* SPDX-License-Identifier: GPL-2.0-only */
/* The profile runner: the one pipeline every capture goes through,
 *     target -> capture -> symbolize -> aggregate -> render -> deliver,
 * for CPU profiles (host, pid, user, cgroup, run) and one-in-N event
 * profiles (faults). Callers fill a request and get files and metadata
 * back; what differs between profiles (event choice, period verification,
 * metadata, SVG titles) is in the profile's hooks (kinds.c).
 *
 * Library contract: nothing here exits (short of fk_die on exhausted
 * memory), installs signal handlers or reads global state beyond
 * fk_progname (message prefix) and the process's environment (TMPDIR,
 * cwd); a request and its result share nothing with another's, so a server
 * may run several (the kernel's perf limits permitting). The caller owns signals: it points rq->stop
 * at a flag its handler sets, and may forward signals to rq->run_pid.
 * Nothing here prints an error: the reason is one line in res->error
 * with the returned exit status, for the caller to print or send; usage
 * problems come back from fk_profile_check as one phrase.
 * Results are complete or absent: files are written under temporary names
 * and renamed, a failed run removes what it wrote and any directory it
 * created. */
#ifndef FK_PROFILE_H
#define FK_PROFILE_H

#include "engine/capture.h"
#include "engine/offcpu.h"
#include "capture/period_check.h"
#include "deliver/upload.h"
#include "unwind/python.h"
#include "util/result.h"

#include <jansson.h>
#include <signal.h>

struct fk_pprof_job;

/* Defaults and safety limits; --unsafe-limits lifts the maximums to the
 * UNSAFE ones (and the period floor to 1). See flamekit-record(1). */
#define FK_PROFILE_DEFAULT_DURATION_MS (60 * 1000ull)
#define FK_PROFILE_MAX_DURATION_MS (300 * 1000ull)
#define FK_PROFILE_UNSAFE_DURATION_MS (24 * 3600 * 1000ull)
#define FK_PROFILE_DEFAULT_FREQ 99
#define FK_PROFILE_MAX_FREQ 999             /* unsafe: the kernel's max sample rate */
#define FK_PROFILE_DEFAULT_PERIOD 100
#define FK_PROFILE_MIN_PERIOD 10            /* unsafe: 1 */
#define FK_PROFILE_DEFAULT_MEM (256ull << 20)
#define FK_PROFILE_MAX_MEM (1024ull << 20)
#define FK_PROFILE_UNSAFE_MEM (16ull << 30)
#define FK_PROFILE_MIN_MEM (1ull << 20)
/* Below this --max-memory, a capture with kernel stacks first checks that
 * the limit holds the kernel's symbol table (~5 MB here; the largest
 * distribution kernels' are under 16 MB) and FK_PROFILE_KERNEL_ROOM more:
 * the capture's own tables beside it (a 'run' capture's took 1.5 MB here,
 * whatever its limit; a busy host's take more and stop at the limit). */
#define FK_PROFILE_KERNEL_CHECK_MEM (64ull << 20)
#define FK_PROFILE_KERNEL_ROOM (2ull << 20)

enum fk_profile_kind {
    FK_PROFILE_CPU,         /* on-CPU stacks at a frequency */
    FK_PROFILE_FAULTS,      /* one software event / tracepoint hit in N, verified */
    FK_PROFILE_OFFCPU,      /* blocked time: switch-out stacks weighted by the ns
                               until the thread runs again (engine/offcpu.h) */
};

/* Off-CPU defaults (flamekit-offcpu(1) gives the measurements behind them). */
#define FK_OFFCPU_DEFAULT_BUDGET 1000       /* recorded switch-outs per second: a storm
                                               profiled alone loses under 3 % (2,000: 3.4 %) */
#define FK_OFFCPU_MAX_BUDGET 100000         /* unsafe: any */
#define FK_OFFCPU_DEFAULT_MIN_BLOCK_NS 0
#define FK_OFFCPU_RATE_PROBE_MS 200         /* the rate measured before the window */
#define FK_OFFCPU_STACK_SIZE (16 * 1024)    /* blocked stacks: 98.7% complete on python3
                                               (bench/offcpu.sh), half of 32K's bytes */

/* Bit of one output kind in fk_profile_request.outputs. */
#define FK_OUTPUT(kind) (1u << (kind))

struct fk_profile_request {
    /* what */
    enum fk_profile_kind kind;
    enum fk_target_kind target;
    const char *target_arg;     /* PID[,PID...], user, cgroup path or container id */
    char **run_argv;            /* RUN: the command, NULL-terminated */
    /* how; zero means the default */
    uint64_t duration_ms;       /* 60 s; RUN: until the command exits, within the limit */
    uint64_t freq;              /* CPU: samples per second per CPU (99) */
    uint64_t period;            /* FAULTS: one hit in N (100) */
    const char *event;          /* FAULTS: software event or tracepoint (page-faults) */
    bool no_kernel;             /* user space only: no kernel stacks; faults: user-mode hits */
    int callgraph;              /* user stacks: enum fk_callgraph (auto, dwarf, fp) */
    uint64_t stack_size;        /* dwarf: stack bytes copied per sample (32K) */
    int python;                 /* CPython frames: FK_PYTHON_ON (default), _LINES, _OFF */
    bool strict;                /* FAULTS: a failed one-in-N check is an error */
    /* OFFCPU */
    uint64_t min_block_ns;      /* drop blocks shorter than this */
    bool wakers;                /* also the waker's stack: blocked;--;waker */
    bool with_cpu;              /* also on-CPU samples at freq: one wall-clock tree */
    bool no_bpf;                /* switch-ins from the kernel's switch records, not
                                   the in-kernel program (--no-bpf) */
    uint64_t switch_budget;     /* switch-outs recorded per second at most (1,000):
                                   N = the measured rate / budget, rounded up */
    uint64_t one_in;            /* > 0: sample one switch-out in N, whatever the rate */
    const char *debuginfod;     /* debuginfod servers for missing debug files;
                                   NULL: $DEBUGINFOD_URLS (unset: none) */
    bool no_debuginfod;         /* none, whatever $DEBUGINFOD_URLS says */
    bool no_priority;           /* the capture's threads not raised (engine_priority) */
    bool redact_args;           /* metadata and descriptions: command lines cut to
                                 * their first word, no working directory */
    uint64_t max_mem_bytes;     /* stacks + symbols (256M) */
    bool unsafe_limits;
    /* outputs */
    unsigned outputs;           /* FK_OUTPUT(FK_RESULT_...) bits; 0: all */
    bool no_svg;                /* all outputs but the SVG */
    const char *outdir;         /* write here (created 0700 if missing); NULL: a new
                                   directory HOST.STAMP.SCOPE in the current one */
    bool temp_dir;              /* write into a new private temporary directory that
                                   fk_profile_result_free removes (--stdout, servers) */
    const char *title;          /* SVG title; NULL: the profile's */
    /* delivery (fk_profile_deliver) */
    const char *upload;         /* s3://BUCKET/PREFIX/ or gs://BUCKET/PREFIX/ */
    fk_upload_report_fn upload_report;  /* each file's URL or why it stays (upload.h);
                                           retries go to warn; NULL: none */
    void *upload_report_ctx;
    int stream_fd;              /* >= 0: send the files as a result stream (stream.h)
                                   on this fd; RUN's stdout then goes to stderr */
    bool quiet;                 /* no progress line */
    int ready_fd;               /* >= 0: the command says "ready" on it when the
                                   window opens (--ready-fd); -1: none */
    fk_capture_progress_fn progress;    /* the command's status line and ready signal
                                           (capture.h), also when quiet; NULL: none */
    void *progress_ctx;
    fk_warn_fn warn;            /* warnings while it runs (util/fk.h), unless quiet;
                                   NULL: none */
    void *warn_ctx;
    /* context, for metadata and messages */
    const char *command;        /* "host", "faults", "serve" */
    int argc;                   /* the invocation (argv[0] = the command) */
    char **argv;
    volatile sig_atomic_t *stop;    /* non-zero ends the capture early; may be NULL */
    volatile pid_t *run_pid;    /* RUN: set to the command's pid while it may run */
};

/* --python MODE, in the order of its choices "on|lines|off". */
enum { FK_PYTHON_ON, FK_PYTHON_LINES, FK_PYTHON_OFF };
/* The request's --python as a word. */
const char *fk_python_mode_name(int mode);

/* Zero the request, with stream_fd and ready_fd -1. */
void fk_profile_request_init(struct fk_profile_request *rq);

struct fk_profile_result {
    int status;                 /* exit status: 0; 1 error; RUN: the command's, 125
                                   flamekit failed, 126/127 the command could not run */
    /* Why it failed, one line without the program name, for the caller to
     * print or send (serve); empty when there was no failure or the
     * failure is the result's own (a one-in-N verdict, the command's exit
     * status). fk_profile_deliver puts its own failure here too. */
    char error[512];
    bool bad_target;            /* error: the target named does not exist (a
                                   malformed one is fk_profile_check's usage error) */
    char *dir;                  /* where the files are */
    bool dir_is_temp;
    char *base;                 /* HOST.STAMP.SCOPE[.PROFILE] (result.h) */
    char *files[FK_RESULT_NKINDS];  /* paths written; NULL: not written */
    json_t *meta;               /* what the .json says (flamekit-metadata(5)) */
    char *host;
    struct fk_target target;
    struct fk_event event;
    struct fk_capture_result cap;   /* stacks, counts (valid when captured) */
    struct fk_pprof_job *pprof_job; /* the .pb.gz being made on a second thread */
    uint64_t pprof_wait_ns, pprof_cpu_ns;
    bool captured;
    const char *unit;           /* what the folded counts count: "samples", "faults" */
    const char *countname;      /* the same for the SVG ("page faults") */
    struct fk_period_result check;  /* FAULTS: one in N verified */
    bool checked;
    struct fk_python_stats python;  /* CPython frames read (zero: off or none) */
    struct fk_offcpu_stats offcpu;  /* OFFCPU: switches, blocks, states, N */
    struct fk_offcpu_opts offcpu_opts;  /* OFFCPU: the event kind's options */
    int64_t offcpu_rate_before;     /* OFFCPU: switches/s measured before (-1: unknown) */
};

/* Fill in defaults and check the request against the limits: 0, or
 * FK_EXIT_USAGE with one phrase in err ("duration 10m is above ...").
 * Reads kernel limits and resolves the event; starts nothing. */
int fk_profile_check(struct fk_profile_request *rq, char *err, size_t errlen);

/* Resolve the target, capture, write the files: returns res->status (also
 * set). Call fk_profile_check first. Release res with
 * fk_profile_result_free even after a failure. */
int fk_profile_run(const struct fk_profile_request *rq, struct fk_profile_result *res);

/* The human summary: target, event, lost/throttled, verification, top
 * frames, and the paths (unless streamed). */
void fk_profile_summary(FILE *out, const struct fk_profile_request *rq,
                        const struct fk_profile_result *res);

/* Upload (rq->upload) and/or stream (rq->stream_fd) the written files;
 * updates and returns res->status. */
int fk_profile_deliver(const struct fk_profile_request *rq, struct fk_profile_result *res);

/* Free everything; removes the directory when it is temporary. */
void fk_profile_result_free(struct fk_profile_result *res);

/* Metadata of a capture (schema FK_RESULT_SCHEMA, flamekit-metadata(5)). */
json_t *fk_profile_metadata(const struct fk_profile_request *rq,
                            const struct fk_profile_result *res);

#endif
