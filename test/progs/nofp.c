/* SPDX-License-Identifier: GPL-2.0-only */
/* Workload for the unwinding tests, built -O2 -fomit-frame-pointer like
 * most of a Debian system: main -> nofp_outer -> nofp_middle (recursing
 * DEPTH times) -> nofp_leaf, which burns CPU and calls into libc (qsort,
 * whose comparator calls back in). A frame-pointer walk loses the callers.
 * usage: nofp SECONDS [DEPTH]   (VARIANT=2 builds a copy with a different
 * code layout, for the binary-replaced-on-disk test). SECONDS are wall
 * time, or the process's CPU time with NOFP_CLOCK=cpu: two processes
 * sampled side by side then get shares set by their arguments, not by
 * how the scheduler served them on a loaded host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

/* Global on purpose: the tests look these names up in flame graphs and
 * symbol tables, and the compiler may clone a file-local function under
 * another name (.constprop, .isra) or fold identical ones into one. */
unsigned long nofp_pad(unsigned long x);
unsigned long nofp_leaf(unsigned n);
unsigned long nofp_middle(unsigned depth, unsigned n);
void nofp_outer(double secs, unsigned depth);

#if VARIANT == 2
/* shifts every function below to other addresses */
__attribute__((noinline)) unsigned long nofp_pad(unsigned long x)
{
    for (int i = 0; i < 64; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul + (x >> (i & 31));
    return x;
}
#endif

__attribute__((noinline)) static int nofp_cmp(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) unsigned long nofp_leaf(unsigned n)
{
    unsigned v[256];
    unsigned long h = n;
    for (unsigned i = 0; i < 256; i++) {
        h = h * 2862933555777941757ul + 3037000493ul;
        v[i] = (unsigned)(h >> 33);
    }
    qsort(v, 256, sizeof *v, nofp_cmp);
    for (unsigned i = 0; i < 256; i++)
        h += v[i] * (i + 1);
    return h;
}

__attribute__((noinline)) unsigned long nofp_middle(unsigned depth, unsigned n)
{
    char pad[96];
    memset(pad, (int)depth, sizeof pad);
    unsigned long r = depth ? nofp_middle(depth - 1, n + pad[depth % sizeof pad]) : nofp_leaf(n);
    return r + (unsigned char)pad[n % sizeof pad];
}

__attribute__((noinline)) void nofp_outer(double secs, unsigned depth)
{
    const char *c = getenv("NOFP_CLOCK");
    clockid_t clk = c && !strcmp(c, "cpu") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    struct timespec t0, t;
    clock_gettime(clk, &t0);
    unsigned n = 0;
    do {
        for (int k = 0; k < 50; k++)
            sink += nofp_middle(depth, n++);
        clock_gettime(clk, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2;
    unsigned depth = argc > 2 ? (unsigned)atoi(argv[2]) : 8;
#if VARIANT == 2
    sink = nofp_pad(depth);
#endif
    nofp_outer(secs, depth);
    printf("%lu\n", sink);
    return 0;
}
