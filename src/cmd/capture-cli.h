/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture commands' shared front end (host, pid, user, cgroup, run,
 * faults): signals, the summary and delivery around the profile runner
 * (profile/profile.h); their options are profile/options.h's sets. */
#ifndef FK_CMD_CAPTURE_CLI_H
#define FK_CMD_CAPTURE_CLI_H

#include "profile/options.h"
#include "profile/profile.h"
#include "util/opt.h"

/* Check rq (usage errors exit 2), run it with SIGINT/SIGTERM/SIGHUP ending
 * the capture (and passed on to run's command), print the summary,
 * deliver. argv/argc: the invocation for the metadata. Returns the exit
 * status. */
int fk_capture_cli_run(struct fk_profile_request *rq, int argc, char **argv);

/* host, pid, user, cgroup, run: the whole command. */
int fk_cpu_command(enum fk_target_kind kind, int argc, char **argv);

#endif
