/* SPDX-License-Identifier: GPL-2.0-only */
/* Test workload of known shape: for ARG milliseconds of CPU, main calls
 * spin_outer, which spends 2/3 of its work in spin_twice and 1/3 in
 * spin_once (same loop, run twice vs once). */
#include <stdlib.h>
#include <time.h>

/* ~10 ms of work: much longer than a 999 Hz sampling period, so the
 * sampling clock cannot alias with the twice/once rhythm. */
#define SPIN_UNIT 5000000UL

static volatile unsigned long sink;

/* Global on purpose: the tests look these names up in flame graphs and
 * symbol tables, and the compiler may clone a file-local function under
 * another name (.constprop, .isra) or fold identical ones into one. */
void spin_loop(unsigned long n);
void spin_twice(void);
void spin_once(void);
void spin_outer(double ms);

/* noinline/noclone and the work after each call keep every function a real
 * frame at -O2 (no inlining, no tail calls). */
/* The alloca forces a frame pointer even in this leaf function, so its
 * caller shows in frame-pointer call chains. */
__attribute__((noinline, noclone)) void spin_loop(unsigned long n)
{
    volatile char *pad = __builtin_alloca(16 + (n & 1));
    pad[0] = 0;
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x + (unsigned long)pad[0];
}

__attribute__((noinline, noclone)) void spin_twice(void) { spin_loop(SPIN_UNIT); spin_loop(SPIN_UNIT); sink++; }
__attribute__((noinline, noclone)) void spin_once(void) { spin_loop(SPIN_UNIT); sink++; }

__attribute__((noinline)) void spin_outer(double ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    do {
        spin_twice();
        spin_once();
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
    sink++;
}

int main(int argc, char **argv)
{
    spin_outer(argc > 1 ? atof(argv[1]) : 1000);
    return (int)(sink & 0);
}
