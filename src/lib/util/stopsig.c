/* SPDX-License-Identifier: GPL-2.0-only */
/* The stop flag of a long-running program: see stopsig.h. */
#include "stopsig.h"

#include <string.h>

volatile sig_atomic_t fk_stop_signal;

static void on_stop(int sig)
{
    fk_stop_signal = sig;
}

bool fk_stop_on_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    return sigaction(SIGINT, &sa, NULL) == 0 && sigaction(SIGTERM, &sa, NULL) == 0
           && sigaction(SIGPIPE, &ign, NULL) == 0;
}
