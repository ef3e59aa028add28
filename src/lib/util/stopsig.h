/* SPDX-License-Identifier: GPL-2.0-only */
/* How a long-running program (serve, the fetch servers) is asked to stop:
 * SIGINT or SIGTERM sets one flag, which its loop reads, so it ends the
 * way it ends on any other stop (connections closed, temporaries gone);
 * SIGPIPE is ignored, so a peer that went away is an EPIPE where the write
 * is, not a silent death. The flag holds the signal's number, 0 before. */
#ifndef FK_STOPSIG_H
#define FK_STOPSIG_H

#include <signal.h>
#include <stdbool.h>

extern volatile sig_atomic_t fk_stop_signal;

/* Install the handlers. False (errno set) if the system refused one. */
bool fk_stop_on_signals(void);

#endif
