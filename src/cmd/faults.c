/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit faults: where a host, process, user, cgroup or command takes page
 * faults (or hits another software event or tracepoint), sampled one in N
 * and verified against the event's own count. What is about faults lives
 * here (the event options, the TARGET words); the rest is every capture's
 * (capture-cli.c, the profile runner). */
#include "capture-cli.h"
#include "capture/swevent.h"

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

/* Everything after "run" is the command (options may sit between). */
static bool rest_is_command(const struct fk_args *a)
{
    return a->n >= 1 && !strcmp(a->v[0], "run");
}

static const struct {
    const char *word;
    enum fk_target_kind kind;
    bool arg;
} targets[] = {
    { "host", FK_TARGET_HOST, false }, { "pid", FK_TARGET_PID, true },
    { "user", FK_TARGET_USER, true }, { "cgroup", FK_TARGET_CGROUP, true },
    { "run", FK_TARGET_RUN, false },
};

/* TARGET operands -> rq; FK_OPT_CONTINUE or a usage error. */
static int parse_target(struct fk_profile_request *rq, const struct fk_args *a)
{
    if (!a->n)
        return fk_opt_error("no target: say host, pid PID, user USER, cgroup PATH or run -- CMD");
    size_t i = 0;
    while (i < sizeof targets / sizeof targets[0] && strcmp(a->v[0], targets[i].word))
        i++;
    if (i == sizeof targets / sizeof targets[0])
        return fk_opt_error("unknown target '%s': want host, pid, user, cgroup or run", a->v[0]);
    rq->target = targets[i].kind;
    if (rq->target == FK_TARGET_RUN) {
        if (a->n < 2)
            return fk_opt_error("run: no command; say run -- CMD [ARGS]");
        rq->run_argv = a->v + 1;
        return FK_OPT_CONTINUE;
    }
    if (targets[i].arg && a->n < 2)
        return fk_opt_error("'%s' needs an argument", a->v[0]);
    int want = targets[i].arg ? 2 : 1;
    if (a->n > want)
        return fk_opt_error("unexpected argument '%s'", a->v[want]);
    rq->target_arg = targets[i].arg ? a->v[1] : NULL;
    return FK_OPT_CONTINUE;
}

int cmd_faults(int argc, char **argv)
{
    struct faults_opts o;
    memset(&o, 0, sizeof o);
    fk_profile_request_init(&o.rq);
    o.rq.kind = FK_PROFILE_FAULTS;
    o.rq.command = "faults";
    char *footer = fk_asprintf(
        "Targets:\n"
        "  host                  every process on every CPU\n"
        "  pid PID[,PID...]      these processes (all threads, children included)\n"
        "  user USER|UID         processes of this user (host-wide event, filtered)\n"
        "  cgroup PATH|ID        processes in this cgroup v2 subtree (e.g.\n"
        "                        /system.slice/foo.service) or container\n"
        "  run [--] CMD [ARGS]   run CMD and profile it (children included) until it\n"
        "                        exits; the exit status is CMD's\n"
        "\n"
        "Events for -e: %s (e.g. sched:sched_switch).\n"
        "\n"
        "Writes HOST.YYYYMMDD_HHMMSS_UTC.SCOPE.faults.{flamegraph.svg,folded.gz,json};\n"
        "folded counts are samples x N (estimated events). See flamekit-faults(1).",
        fk_swevent_list());
    const struct fk_cmdline cl = {
        "flamekit faults [OPTIONS] TARGET [OPTIONS]",
        "Page-fault flame graph: sample one page fault in N (default 100) with user\n"
        "and kernel stacks, weight each sample by N, and check the estimate against\n"
        "the event's own count. Options may come before and after TARGET (before\n"
        "run's command).",
        footer, rest_is_command,
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
        rc = parse_target(&o.rq, &a);
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
