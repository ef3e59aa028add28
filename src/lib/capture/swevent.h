/* SPDX-License-Identifier: GPL-2.0-only */
/* Software events and tracepoints by name, for one-in-N sampled profiles
 * (flamekit faults -e): "page-faults", "minor-faults", "context-switches",
 * "sched:sched_switch", ... */
#ifndef FK_SWEVENT_H
#define FK_SWEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fk_swevent {
    char name[128];         /* canonical: "page-faults", "sched:sched_switch" */
    uint32_t type;          /* PERF_TYPE_SOFTWARE or PERF_TYPE_TRACEPOINT */
    uint64_t config;        /* PERF_COUNT_SW_* or the tracepoint id */
    const char *unit;       /* plural noun for one hit: "faults", "switches", "events" */
    const char *countname;  /* SVG count name: "page faults", "context switches" */
};

/* Resolve a name; false with a one-line reason (naming the fix) in err.
 * Tracepoints are looked up in tracefs (/sys/kernel/tracing, mounted on
 * demand like perf does, or /sys/kernel/debug/tracing). Clock events
 * (cpu-clock, task-clock) are refused: they are timers, not counts. */
bool fk_swevent_resolve(const char *spec, struct fk_swevent *out, char *err, size_t errlen);

/* The software events we know, for --help / errors: "page-faults, ...". */
const char *fk_swevent_list(void);

#endif
