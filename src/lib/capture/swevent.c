/* SPDX-License-Identifier: GPL-2.0-only */
/* Software events and tracepoints by name: see swevent.h. */
#include "capture/swevent.h"
#include "capture/tracefs.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name, *alias;
    uint64_t config;
    const char *unit, *countname;
} sw_events[] = {
    { "page-faults", "faults", PERF_COUNT_SW_PAGE_FAULTS, "faults", "page faults" },
    { "minor-faults", NULL, PERF_COUNT_SW_PAGE_FAULTS_MIN, "faults", "minor page faults" },
    { "major-faults", NULL, PERF_COUNT_SW_PAGE_FAULTS_MAJ, "faults", "major page faults" },
    { "context-switches", "cs", PERF_COUNT_SW_CONTEXT_SWITCHES, "switches", "context switches" },
    { "cpu-migrations", "migrations", PERF_COUNT_SW_CPU_MIGRATIONS, "migrations", "CPU migrations" },
    { "alignment-faults", NULL, PERF_COUNT_SW_ALIGNMENT_FAULTS, "faults", "alignment faults" },
    { "emulation-faults", NULL, PERF_COUNT_SW_EMULATION_FAULTS, "faults", "emulation faults" },
};

const char *fk_swevent_list(void)
{
    return "page-faults (faults), minor-faults, major-faults, context-switches (cs), "
           "cpu-migrations (migrations), alignment-faults, emulation-faults, SUBSYSTEM:TRACEPOINT";
}

static bool valid_tp_part(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || s[i] == '-' || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

static bool resolve_tracepoint(const char *spec, const char *colon, struct fk_swevent *out,
                               char *err, size_t errlen)
{
    size_t sn = (size_t)(colon - spec), nn = strlen(colon + 1);
    if (!valid_tp_part(spec, sn) || !valid_tp_part(colon + 1, nn) || sn + nn + 2 > sizeof out->name) {
        snprintf(err, errlen, "bad tracepoint '%s': want SUBSYSTEM:NAME, e.g. sched:sched_switch", spec);
        return false;
    }
    const char *root = fk_tracefs_root();
    if (!root) {
        snprintf(err, errlen, "tracepoint '%s': tracefs is not mounted and could not be "
                 "(mount -t tracefs nodev /sys/kernel/tracing, as root)", spec);
        return false;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/events/%.*s/%s/id", root, (int)sn, spec, colon + 1);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "unknown tracepoint '%s' (%s: %s); list them with: ls %s/events/%.*s",
                 spec, path, strerror(errno), root, (int)sn, spec);
        return false;
    }
    unsigned long long id;
    int ok = fscanf(f, "%llu", &id);
    fclose(f);
    if (ok != 1) {
        snprintf(err, errlen, "tracepoint '%s': cannot read its id from %s", spec, path);
        return false;
    }
    snprintf(out->name, sizeof out->name, "%s", spec);
    out->type = PERF_TYPE_TRACEPOINT;
    out->config = id;
    out->unit = "events";
    out->countname = "events";
    return true;
}

bool fk_swevent_resolve(const char *spec, struct fk_swevent *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *colon = strchr(spec, ':');
    if (colon)
        return resolve_tracepoint(spec, colon, out, err, errlen);
    for (size_t i = 0; i < sizeof sw_events / sizeof sw_events[0]; i++) {
        if (strcmp(spec, sw_events[i].name) && !(sw_events[i].alias && !strcmp(spec, sw_events[i].alias)))
            continue;
        snprintf(out->name, sizeof out->name, "%s", sw_events[i].name);
        out->type = PERF_TYPE_SOFTWARE;
        out->config = sw_events[i].config;
        out->unit = sw_events[i].unit;
        out->countname = sw_events[i].countname;
        return true;
    }
    if (!strcmp(spec, "cpu-clock") || !strcmp(spec, "task-clock"))
        snprintf(err, errlen, "'%s' is a timer, not a counted event: use 'flamekit host' etc. for CPU profiles", spec);
    else
        snprintf(err, errlen, "unknown event '%s': want one of %s", spec, fk_swevent_list());
    return false;
}
