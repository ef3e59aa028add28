/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit offcpu: where the threads of a host, process, user, cgroup or
 * command wait, weighted by how long (engine/offcpu.h). What is about
 * off-CPU time lives here (its options); the rest is every capture's
 * (capture-cli.c, the profile runner). */
#include "commands.h"
#include "capture-cli.h"
#include "term.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RQ(field) offsetof(struct fk_profile_request, field)

/* --min-block: 0, 500us, 2ms, 1s, 250000ns (a bare number: microseconds) */
static bool parse_min_block(void *base, const char *val, char *err, size_t n)
{
    struct fk_profile_request *rq = base;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    static const struct { const char *suffix; uint64_t ns; } units[] = {
        { "", 1000 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
    };
    for (size_t i = 0; end != val && !errno && val[0] != '-' && i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].suffix) && v <= UINT64_MAX / units[i].ns) {
            rq->min_block_ns = v * units[i].ns;
            return true;
        }
    snprintf(err, n, "--min-block '%s': want a duration such as 0, 50us, 2ms or 1s", val);
    return false;
}

static const struct fk_opt offcpu_optset[] = {
    { "min-block", 0, FK_OPT_CALL, 0, "DUR",
      "drop blocks shorter than DUR (ns, us, ms, s; a bare number is us; default 0: every "
      "block, so each thread's widths add up to the time captured)", "1ms",
      .call = parse_min_block },
    { "wakers", 0, FK_OPT_FLAG, RQ(wakers), NULL,
      "also the stack of the thread that woke each blocked one, above a \"--\" frame "
      "(blocked;--;waker)" },
    { "with-cpu", 0, FK_OPT_FLAG, RQ(with_cpu), NULL,
      "also sample on-CPU stacks (-F Hz, under an [on-CPU] frame): one wall-clock graph, "
      "warm on CPU, cold off it" },
    { "no-bpf", 0, FK_OPT_FLAG, RQ(no_bpf), NULL,
      "time blocks from the kernel's context-switch records instead of the in-kernel "
      "program on sched_switch (used anyway where BPF cannot load; costs the workload more)" },
    { "switch-budget", 0, FK_OPT_UINT, RQ(switch_budget), "N",
      "record about N switch-outs per second at most: one in the rate over N, measured "
      "before the window and followed within it (default 1000, at most 100000)", "5000",
      .min = 1 },
    { "every", 'c', FK_OPT_UINT, RQ(one_in), "N",
      "record one switch-out in N whatever the rate, fixed for the window (instead of "
      "--switch-budget)", "10",
      .min = 1 },
    { NULL },
};

int cmd_offcpu(int argc, char **argv)
{
    struct fk_profile_request rq;
    fk_profile_request_init(&rq);
    rq.kind = FK_PROFILE_OFFCPU;
    rq.command = "offcpu";
    char *footer = fk_asprintf(
        "%s\n"
        "Writes HOST.YYYYMMDD_HHMMSS_UTC.SCOPE.offcpu.{flamegraph.svg,folded.gz,pb.gz,json};\n"
        "folded counts are nanoseconds off CPU; the frame above the process name says\n"
        "why: [S] sleeping, [D] uninterruptible (disk), [R] preempted while runnable.\n"
        "See flamekit-offcpu(1).",
        fk_capture_cli_targets_help);
    const struct fk_cmdline cl = {
        "flamekit offcpu [OPTIONS] TARGET [OPTIONS]",
        "Off-CPU flame graph: each time a thread of the target is switched out, its\n"
        "stack (kernel and user, unwound as in CPU profiles) is weighted by the\n"
        "nanoseconds until it runs again. Busy hosts: one switch-out in N is\n"
        "recorded, N set from the switch rate measured before the window and\n"
        "again as it changes within it (--switch-budget).\n"
        "Options may come before and after TARGET (before run's command).",
        footer, fk_capture_cli_rest_is_command,
    };
    const struct fk_optsec secs[] = {
        { "Off-CPU", offcpu_optset, &rq }, { "Capture", fk_optset_capture, &rq },
        { "Capture", fk_optset_cpu, &rq }, { "Limits", fk_optset_limits, &rq },
        { "Output", fk_optset_output, &rq }, { NULL },
    };
    struct fk_args a;
    int rc = fk_opt_parse(&cl, secs, argc, argv, &a);
    if (rc == FK_OPT_CONTINUE && rq.freq && !rq.with_cpu)
        rc = fk_opt_error("-F sets the on-CPU sampling rate of --with-cpu; add --with-cpu");
    if (rc == FK_OPT_CONTINUE)
        rc = fk_capture_cli_target(&rq, &a);
    if (rc == FK_OPT_CONTINUE)
        rc = fk_capture_cli_run(&rq, argc, argv);
    fk_args_free(&a);
    free(footer);
    return rc;
}
