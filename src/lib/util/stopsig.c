/* SPDX-License-Identifier: GPL-2.0-only */
/* The stop flag of a long-running command: see stopsig.h. */
#include "stopsig.h"

#include <string.h>

volatile sig_atomic_t fk_stop_signal;
volatile pid_t fk_stop_forward_pid;

static const int stop_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define NSIGS (sizeof stop_sigs / sizeof stop_sigs[0])
static struct sigaction saved[NSIGS];
static bool installed[NSIGS];

static void on_stop(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    fk_stop_signal = sig;
    if (fk_stop_forward_pid > 0 && (!si || si->si_code != SI_KERNEL))
        kill(fk_stop_forward_pid, sig);
}

bool fk_stop_on_signals(unsigned flags)
{
    struct sigaction sa, ign;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    for (size_t i = 0; i < NSIGS; i++) {
        int sig = stop_sigs[i];
        if (sig == SIGPIPE && !(flags & FK_STOP_IGNORE_SIGPIPE))
            continue;
        if (sigaction(sig, NULL, &saved[i]) != 0)
            return false;
        if (sig == SIGHUP && saved[i].sa_handler == SIG_IGN)
            continue;       /* nohup: a hangup is not a stop */
        if (sigaction(sig, sig == SIGPIPE ? &ign : &sa, NULL) != 0)
            return false;
        installed[i] = true;
    }
    return true;
}

void fk_stop_restore(void)
{
    for (size_t i = 0; i < NSIGS; i++)
        if (installed[i]) {
            sigaction(stop_sigs[i], &saved[i], NULL);
            installed[i] = false;
        }
}
