/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture commands' shared front end: options, safety limits, output
 * files (folded.gz, flamegraph.svg, json), --stdout stream, summary. */
#ifndef FK_RECORD_H
#define FK_RECORD_H

#include "capture/capture.h"

#include <jansson.h>

/* Safety limits; --unsafe-limits lifts the first three to the kernel's. */
#define FK_REC_MAX_DURATION_MS (300 * 1000ull)
#define FK_REC_MAX_FREQ 999
#define FK_REC_MAX_MEM (1024ull << 20)
#define FK_REC_DEFAULT_MEM (256ull << 20)
#define FK_REC_DEFAULT_FREQ 99
#define FK_REC_DEFAULT_DURATION_MS (60 * 1000ull)

/* What a capture command is; faults (or any other profile) can reuse the
 * front end by passing its own event. */
struct fk_record_spec {
    const char *name;           /* "host", "pid", ... (usage and messages) */
    enum fk_target_kind kind;
    const char *operand;        /* usage text: "PID[,PID...]", NULL for host */
    const char *profile;        /* "cpu"; other profiles prefix SCOPE ("faults-host") */
    const char *title;          /* SVG title */
    const char *countname;      /* SVG count name, "samples" */
    const char *colors;         /* SVG palette, "hot" */
    const struct fk_event *event;   /* NULL: the CPU default (cycles / cpu-clock) */
    bool weight_by_period;
};

int fk_record_main(const struct fk_record_spec *spec, int argc, char **argv);

/* --call-graph MODE and --stack-size SIZE (either may be NULL: default)
 * into co; a bad value is a usage error (exit 2). */
void fk_record_callgraph_opts(struct fk_capture_opts *co, const char *mode, const char *stack_size);
/* Metadata object "callgraph": mode asked and used, why auto chose frame
 * pointers, stack size, unwind statistics (complete, truncated, failed...). */
json_t *fk_record_callgraph_json(const struct fk_capture_opts *co, const struct fk_capture_result *r);
/* Summary line(s) about user stacks, with the given prefix. */
void fk_record_callgraph_summary(FILE *out, const char *prefix, const struct fk_capture_result *r);

/* Host facts (hostname, kernel, os, cpu, memory, numa) into object o. */
void fk_sysinfo_json(json_t *o);

/* The written files of the last fk_record_main run, for --upload. */
struct fk_record_files {
    char *paths[4];
    size_t n;
};
extern struct fk_record_files fk_record_written;

#endif
