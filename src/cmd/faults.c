/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit faults: where a host, process, user, cgroup or command takes page
 * faults (or hits another software event or tracepoint), sampled one in N
 * and verified against the event's own count. What is about faults lives
 * here (the event options, the TARGET words); the rest is every capture's
 * (capture-cli.c, the profile runner). */
#include "commands.h"
#include "capture-cli.h"
#include "capture/swevent.h"
#include "term.h"

#include <stdlib.h>
#include <string.h>

struct faults_opts {
    struct fk_profile_request rq;
    bool minor, major;
};

#define FO(field) offsetof(struct faults_opts, field)

static const struct fk_opt faults_optset[] = {
    { "every", 'c', FK_OPT_UINT, FO(rq.period), "N",
      "sample one hit in N (default 100; at least 10)", "100", .min = 1 },
    { "minor", 0, FK_OPT_FLAG, FO(minor), NULL, "minor faults only (PERF_COUNT_SW_PAGE_FAULTS_MIN)" },
    { "major", 0, FK_OPT_FLAG, FO(major), NULL, "major faults only (PERF_COUNT_SW_PAGE_FAULTS_MAJ)" },
    { "event", 'e', FK_OPT_STR, FO(rq.event), "EVENT",
      "another software event or a tracepoint (list below)", "context-switches" },
    { "user-only", 0, FK_OPT_FLAG, FO(rq.no_kernel), NULL,
      "only faults taken in user mode (not those the kernel takes copying to user "
      "memory); no kernel stacks" },
    { "strict", 0, FK_OPT_FLAG, FO(rq.strict), NULL,
      "exit 1 if samples x N disagrees with the count" },
    { NULL },
};

int cmd_faults(int argc, char **argv)
{
    struct faults_opts o;
    memset(&o, 0, sizeof o);
    fk_profile_request_init(&o.rq);
    o.rq.kind = FK_PROFILE_FAULTS;
    o.rq.command = "faults";
    char *footer = fk_asprintf(
        "%s\n"
        "Events for -e: %s (e.g. sched:sched_switch).\n"
        "\n"
        "Writes HOST.YYYYMMDD_HHMMSS_UTC.SCOPE.faults.{flamegraph.svg,folded.gz,json};\n"
        "folded counts are samples x N (estimated events). See flamekit-faults(1).",
        fk_capture_cli_targets_help, fk_swevent_list());
    const struct fk_cmdline cl = {
        "flamekit faults [OPTIONS] TARGET [OPTIONS]",
        "Page-fault flame graph: sample one page fault in N (default 100) with user\n"
        "and kernel stacks, weight each sample by N, and check the estimate against\n"
        "the event's own count. Options may come before and after TARGET (before\n"
        "run's command).",
        footer, fk_capture_cli_rest_is_command,
    };
    const struct fk_optsec secs[] = {
        { "Faults", faults_optset, &o }, { "Capture", fk_optset_capture, &o.rq },
        { "Limits", fk_optset_limits, &o.rq }, { "Output", fk_optset_output, &o.rq }, { NULL },
    };
    struct fk_args a;
    int rc = fk_opt_parse(&cl, secs, argc, argv, &a);
    if (rc == FK_OPT_CONTINUE && o.minor + o.major + (o.rq.event != NULL) > 1)
        rc = fk_opt_error("one event per capture: --minor, --major and -e exclude each other");
    if (rc == FK_OPT_CONTINUE)
        rc = fk_capture_cli_target(&o.rq, &a);
    if (rc == FK_OPT_CONTINUE) {
        if (o.minor)
            o.rq.event = "minor-faults";
        if (o.major)
            o.rq.event = "major-faults";
        rc = fk_capture_cli_run(&o.rq, argc, argv);
    }
    fk_args_free(&a);
    free(footer);
    return rc;
}
