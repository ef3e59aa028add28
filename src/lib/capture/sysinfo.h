/* SPDX-License-Identifier: GPL-2.0-only */
/* Facts about this machine and the kernel's perf limits (sysinfo.c), read
 * by the engine to size its rings and by the runner for metadata. */
#ifndef FK_CAPTURE_SYSINFO_H
#define FK_CAPTURE_SYSINFO_H

#include <jansson.h>
#include <stdint.h>

/* Facts about this machine for metadata: host, kernel, os, cpu, memory,
 * numa, set into the JSON object o. */
void fk_sysinfo_json(json_t *o);

/* Kernel limits read from /proc/sys/kernel. */
uint64_t fk_perf_max_sample_rate(void);
uint64_t fk_perf_mlock_kb(void);
int fk_perf_paranoid(void);

#endif
