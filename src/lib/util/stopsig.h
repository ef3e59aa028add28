/* SPDX-License-Identifier: GPL-2.0-only */
/* How a long-running command (a capture, remote, serve, the fetch servers)
 * is asked to stop: SIGINT, SIGTERM or SIGHUP sets one flag, which its loop
 * reads, so it ends the way it ends on any other stop (files complete,
 * connections closed, temporaries gone). The flag holds the signal's
 * number, 0 before. One setup for every command; commands, never the
 * library, install it.
 *
 * Invariants: SIGHUP is left alone when it was ignored (nohup); a signal
 * that did not come from the terminal is passed on to fk_stop_forward_pid
 * when that is set (run's command, which shares the terminal's process
 * group and so gets the terminal's signals itself); fk_stop_restore puts
 * back what was there before. */
#ifndef FK_STOPSIG_H
#define FK_STOPSIG_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

extern volatile sig_atomic_t fk_stop_signal;
/* A child that gets the stop signals too (0: none). */
extern volatile pid_t fk_stop_forward_pid;

enum {
    /* Also ignore SIGPIPE, so a peer that went away is an EPIPE where the
     * write is, not a silent death (servers, remote). Not for a command
     * that starts a workload: an ignored SIGPIPE survives exec. */
    FK_STOP_IGNORE_SIGPIPE = 1,
};

/* Install the handlers (flags: FK_STOP_*). False (errno set) if the system
 * refused one. */
bool fk_stop_on_signals(unsigned flags);
/* Put back the dispositions found by fk_stop_on_signals. */
void fk_stop_restore(void);

#endif
