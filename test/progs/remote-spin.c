/* SPDX-License-Identifier: GPL-2.0-only */
/* Workload for the remote tests: burns CPU in remote_spin_hot for the
 * given number of milliseconds of its own CPU time (default 2000), so a
 * capture of it at 99 Hz holds about ms / 10 samples of it however loaded
 * the host is. */
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long remote_spin_hot(double until)
{
    volatile unsigned long x = 0;
    while (now() < until)
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i * 2654435761u;
    return x;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 2000;
    return remote_spin_hot(now() + ms / 1000) == 1 ? 1 : 0;
}
