/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture commands' options: sets of lines bound to the
 * fields of struct fk_profile_request, shared by every capture command
 * (host, pid, user, cgroup, run, faults). A new capture option is one line
 * here plus a field in the request; --help, the errors and bash completion
 * follow from the line. */
#ifndef FK_CMD_CAPTURE_OPTIONS_H
#define FK_CMD_CAPTURE_OPTIONS_H

#include "profile/profile.h"
#include "util/opt.h"

/* Sections of --help; each binds to a struct fk_profile_request. */
extern const struct fk_opt fk_optset_capture[];     /* -d, --no-kernel, --call-graph, ... */
extern const struct fk_opt fk_optset_cpu[];         /* -F */
extern const struct fk_opt fk_optset_limits[];      /* --max-memory, --unsafe-limits */
extern const struct fk_opt fk_optset_output[];      /* -o, --stdout, --no-svg, --title, --upload, -q */

#endif
