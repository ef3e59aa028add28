/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture commands' front end (capture-cli.h): options -> request,
 * signals, summary, delivery. The work is the profile runner's. */
#include "capture-cli.h"
#include "commands.h"
#include "util/stopsig.h"
#include "term.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --ready-fd: "ready" once the window is open, then the fd is closed (a
 * reader waiting for it sees end of file instead when the capture fails). */
static void say_ready(struct fk_profile_request *rq)
{
    if (rq->ready_fd < 0)
        return;
    static const char line[] = "ready\n";
    struct sigaction ign = { .sa_handler = SIG_IGN }, old;
    sigaction(SIGPIPE, &ign, &old);     /* a reader gone is no reason to die */
    if (write(rq->ready_fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1))
        fk_warn("--ready-fd %d: %s", rq->ready_fd, strerror(errno));
    sigaction(SIGPIPE, &old, NULL);
    close(rq->ready_fd);
    rq->ready_fd = -1;
}

/* The ready signal, and the countdown line on stderr while capturing when
 * it is a terminal. */
static void progress_line(void *ctx, const struct fk_capture_progress *p)
{
    struct fk_profile_request *rq = ctx;
    say_ready(rq);
    if (rq->quiet)
        return;
    static int tty = -1;
    if (tty < 0)
        tty = isatty(STDERR_FILENO);
    if (!tty)
        return;
    if (p->done) {
        fprintf(stderr, "\r\033[K");
        return;
    }
    if (p->duration_ns) {
        uint64_t left = p->duration_ns > p->elapsed_ns ? p->duration_ns - p->elapsed_ns : 0;
        fprintf(stderr, "\r%s: %llu s left, %llu samples, %llu lost \033[K", fk_progname,
                (unsigned long long)((left + 999999999ull) / 1000000000ull),
                (unsigned long long)p->samples_kept, (unsigned long long)p->lost);
    } else {
        fprintf(stderr, "\r%s: %llu s, %llu samples, %llu lost \033[K", fk_progname,
                (unsigned long long)(p->elapsed_ns / 1000000000ull),
                (unsigned long long)p->samples_kept, (unsigned long long)p->lost);
    }
}

int fk_capture_cli_run(struct fk_profile_request *rq, int argc, char **argv)
{
    char err[512];
    if (rq->stream_fd == STDOUT_FILENO && isatty(STDOUT_FILENO))
        return fk_opt_error("--stdout writes a binary result stream: redirect it to a file "
                            "or read it with 'flamekit remote'");
    if (fk_profile_check(rq, err, sizeof err))
        return fk_opt_error("%s", err);
    rq->argc = argc;
    rq->argv = argv;
    rq->stop = &fk_stop_signal;
    rq->run_pid = &fk_stop_forward_pid;
    if (rq->ready_fd >= 0) {
        int fl = fcntl(rq->ready_fd, F_GETFD);
        if (fl < 0)
            return fk_opt_error("--ready-fd %d: not an open file descriptor (say e.g. "
                                "--ready-fd 3 3>FILE)", rq->ready_fd);
        fcntl(rq->ready_fd, F_SETFD, fl | FD_CLOEXEC);     /* not run's command's */
    }
    rq->progress = progress_line;
    rq->progress_ctx = rq;
    rq->warn = fk_warn_line;
    rq->upload_report = fk_upload_print;
    /* Handlers stay through the final writes: a Ctrl-C then only ends
     * the capture, so no *.tmp.* file is left half written. */
    if (!fk_stop_on_signals(0))
        fk_warn("cannot set the signal handlers (%s): a Ctrl-C ends flamekit without its files",
                strerror(errno));
    fk_heap_for_batch();    /* a capture builds big tables and exits */
    struct fk_profile_result res;
    fk_profile_run(rq, &res);
    if (res.error[0])
        fk_error("%s", res.error);
    res.error[0] = 0;
    /* The verdict is shown even with -q: a wrong period must be seen. */
    if (res.checked && res.check.warning[0])
        fk_warn("%s", res.check.warning);
    bool streaming = rq->stream_fd >= 0;
    if (!streaming)
        fk_stop_restore();          /* an upload may be interrupted: the files are complete */
    if (!rq->quiet)
        fk_profile_summary(streaming ? stderr : stdout, rq, &res);
    if (streaming)
        signal(SIGPIPE, SIG_IGN);   /* a reader gone: EPIPE, and the temporary goes */
    int rc = fk_profile_deliver(rq, &res);
    if (res.error[0])
        fk_error("%s", res.error);
    fk_profile_result_free(&res);
    fk_stop_restore();
    return rc;
}

/* ---- TARGET operands (faults, offcpu) -------------------------------- */

const char fk_capture_cli_targets_help[] =
    "Targets:\n"
    "  host                  every process on every CPU\n"
    "  pid PID[,PID...]      these processes (all threads, children included)\n"
    "  user USER|UID         processes of this user (host-wide event, filtered)\n"
    "  cgroup PATH|ID        processes in this cgroup v2 subtree (e.g.\n"
    "                        /system.slice/foo.service) or container\n"
    "  run [--] CMD [ARGS]   run CMD and profile it (children included) until it\n"
    "                        exits; the exit status is CMD's\n";

/* Everything after "run" is the command (options may sit between). */
bool fk_capture_cli_rest_is_command(const struct fk_args *a)
{
    return a->n >= 1 && !strcmp(a->v[0], "run");
}

static const struct {
    const char *word;
    enum fk_target_kind kind;
    bool arg;
} target_words[] = {
    { "host", FK_TARGET_HOST, false }, { "pid", FK_TARGET_PID, true },
    { "user", FK_TARGET_USER, true }, { "cgroup", FK_TARGET_CGROUP, true },
    { "run", FK_TARGET_RUN, false },
};

int fk_capture_cli_target(struct fk_profile_request *rq, const struct fk_args *a)
{
    if (!a->n)
        return fk_opt_error("no target: say host, pid PID, user USER, cgroup PATH or run -- CMD");
    size_t i = 0;
    while (i < sizeof target_words / sizeof target_words[0] && strcmp(a->v[0], target_words[i].word))
        i++;
    if (i == sizeof target_words / sizeof target_words[0])
        return fk_opt_error("unknown target '%s': want host, pid, user, cgroup or run", a->v[0]);
    rq->target = target_words[i].kind;
    if (rq->target == FK_TARGET_RUN) {
        if (a->n < 2)
            return fk_opt_error("run: no command; say run -- CMD [ARGS]");
        rq->run_argv = a->v + 1;
        return FK_OPT_CONTINUE;
    }
    if (target_words[i].arg && a->n < 2)
        return fk_opt_error("'%s' needs an argument", a->v[0]);
    int want = target_words[i].arg ? 2 : 1;
    if (a->n > want)
        return fk_opt_error("unexpected argument '%s'", a->v[want]);
    rq->target_arg = target_words[i].arg ? a->v[1] : NULL;
    return FK_OPT_CONTINUE;
}

/* ---- host, pid, user, cgroup, run ----------------------------------- */

static const struct {
    const char *name, *operand, *what;
} cpu_cmds[] = {
    [FK_TARGET_HOST] = { "host", NULL, "every process on every CPU" },
    [FK_TARGET_PID] = { "pid", "PID[,PID...]", "the processes (all threads and children)" },
    [FK_TARGET_USER] = { "user", "USER|UID", "the user's processes" },
    [FK_TARGET_CGROUP] = { "cgroup", "PATH|CONTAINER-ID", "the cgroup (and its descendants)" },
    [FK_TARGET_RUN] = { "run", "[--] CMD [ARGS]", "the command (and its children)" },
};

static bool rest_is_command(const struct fk_args *a)
{
    (void)a;
    return true;
}

int fk_cpu_command(enum fk_target_kind kind, int argc, char **argv)
{
    struct fk_profile_request rq;
    fk_profile_request_init(&rq);
    rq.kind = FK_PROFILE_CPU;
    rq.target = kind;
    rq.command = cpu_cmds[kind].name;
    bool run = kind == FK_TARGET_RUN;
    char *usage = fk_asprintf("flamekit %s [OPTIONS]%s%s", cpu_cmds[kind].name,
                              cpu_cmds[kind].operand ? " " : "",
                              cpu_cmds[kind].operand ? cpu_cmds[kind].operand : "");
    char *about = fk_asprintf(
        "Sample on-CPU stacks (kernel and user) of %s at %d Hz %s, then write "
        "HOST.YYYYMMDD_HHMMSS_UTC.SCOPE.{flamegraph.svg,folded.gz,json} into a new "
        "private directory (or -o DIR) and print a summary.%s",
        cpu_cmds[kind].what, FK_PROFILE_DEFAULT_FREQ,
        run ? "until the command exits" : "for 60 seconds",
        run ? "\nOptions go before CMD; exit status: the command's."
            : cpu_cmds[kind].operand ? "\nOptions may come before or after the operand." : "");
    const struct fk_cmdline cl = {
        usage, about,
        "Ctrl-C or SIGTERM ends the capture early; the files are still complete.\n"
        "See flamekit-record(1).",
        run ? rest_is_command : NULL,
    };
    const struct fk_optsec secs[] = {
        { "Capture", fk_optset_capture, &rq }, { "Capture", fk_optset_cpu, &rq },
        { "Limits", fk_optset_limits, &rq }, { "Output", fk_optset_output, &rq }, { NULL },
    };
    struct fk_args a;
    int rc = fk_opt_parse(&cl, secs, argc, argv, &a);
    if (rc == FK_OPT_CONTINUE) {
        if (run && !a.n)
            rc = fk_opt_error("give the command to run: flamekit run [OPTIONS] -- CMD [ARGS]");
        else if (!run && !cpu_cmds[kind].operand && a.n)
            rc = fk_opt_error("unexpected argument '%s' (%s takes none)", a.v[0],
                              cpu_cmds[kind].name);
        else if (!run && cpu_cmds[kind].operand && a.n != 1)
            rc = fk_opt_error("give exactly one %s", cpu_cmds[kind].operand);
    }
    if (rc == FK_OPT_CONTINUE) {
        if (run)
            rq.run_argv = a.v;
        else if (a.n)
            rq.target_arg = a.v[0];
        rc = fk_capture_cli_run(&rq, argc, argv);
    }
    fk_args_free(&a);
    free(usage);
    free(about);
    return rc;
}
