/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture commands' shared front end (host, pid, user, cgroup, run,
 * faults): signals, the summary and delivery around the profile runner
 * (profile/profile.h); their options are capture-options.h's sets. */
#ifndef FK_CMD_CAPTURE_CLI_H
#define FK_CMD_CAPTURE_CLI_H

#include "capture-options.h"
#include "profile/profile.h"
#include "util/opt.h"

/* Check rq (usage errors exit 2), run it with SIGINT/SIGTERM/SIGHUP ending
 * the capture (and passed on to run's command), print the summary,
 * deliver. argv/argc: the invocation for the metadata. Returns the exit
 * status. */
int fk_capture_cli_run(struct fk_profile_request *rq, int argc, char **argv);

/* Commands with a TARGET operand (faults, offcpu): "host", "pid PID",
 * "user USER", "cgroup PATH" or "run CMD..." -> rq (FK_OPT_CONTINUE or a
 * usage error); the --help text for them; the parser's rest_is_command. */
int fk_capture_cli_target(struct fk_profile_request *rq, const struct fk_args *a);
extern const char fk_capture_cli_targets_help[];
bool fk_capture_cli_rest_is_command(const struct fk_args *a);

/* host, pid, user, cgroup, run: the whole command. */
int fk_cpu_command(enum fk_target_kind kind, int argc, char **argv);

#endif
