/* SPDX-License-Identifier: GPL-2.0-only */
/* Test workload with known CPU proportions: hot_three() gets 3 units of
 * work for every 1 of hot_one() (in random order), until SECONDS have passed.
 * usage: hot SECONDS [fork]   (fork: a child forked after 0.3 s runs
 * child_burn() for the rest of the time)
 * With FK_HOT_CPU=FILE in the environment it writes the CPU seconds it and
 * its child used to FILE at exit: tests compare samples with the CPU time the
 * workload really got, which a loaded machine makes smaller than SECONDS.
 * With FK_HOT_START=FILE it sleeps until FILE is non-empty (a profiler's
 * --ready-fd output) before its clock starts, so the fork and the exit fall
 * inside the capture however slowly the profiler starts (a sanitizer build
 * on a loaded host takes seconds); with FK_HOT_END=FILE it writes the
 * CLOCK_REALTIME nanoseconds of its end to FILE, so a test can time the
 * profiler's reaction to the exit from the exit itself. With
 * FK_HOT_MIN_CPU=S it goes on past SECONDS (for at most 60 s of wall time)
 * until it has used S CPU seconds: a share checked with a fixed tolerance
 * needs its number of samples, which a loaded host would otherwise cut. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

/* Global on purpose: the tests look these names up in flame graphs and
 * symbol tables, and the compiler may clone a file-local function under
 * another name (.constprop, .isra) or fold identical ones into one. */
void hot_three(void);
void hot_one(void);
void child_burn(double until);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The loop is written out in each function so the sampled leaf is the
 * function itself. */
#define SPIN(n) do { \
        unsigned long x_ = sink; \
        for (unsigned long i_ = 0; i_ < (n); i_++) \
            x_ = x_ * 6364136223846793005ul + 1442695040888963407ul; \
        sink = x_; \
    } while (0)

__attribute__((noinline)) void hot_three(void) { SPIN(40000); }
__attribute__((noinline)) void hot_one(void) { SPIN(40000); }
__attribute__((noinline)) void child_burn(double until)
{
    while (now() < until)
        SPIN(100000);
}

/* Sleep until PATH is a non-empty file, for at most 60 s (then false). */
static bool wait_nonempty(const char *path)
{
    struct stat st;
    for (int i = 0; i < 6000; i++) {
        if (stat(path, &st) == 0 && st.st_size > 0)
            return true;
        usleep(10000);
    }
    return false;
}

/* CPU seconds used by WHO (RUSAGE_SELF or RUSAGE_CHILDREN); -1 on error. */
static double cpu_seconds(int who)
{
    struct rusage ru;
    if (getrusage(who, &ru))
        return -1;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    bool do_fork = argc > 2 && !strcmp(argv[2], "fork");
    const char *start_file = getenv("FK_HOT_START");
    if (start_file && !wait_nonempty(start_file))
        return 2;
    double start = now(), end = start + secs;
    pid_t child = -1;
    unsigned long long rnd = (unsigned long long)getpid();
    const char *min_cpu_env = getenv("FK_HOT_MIN_CPU");
    double min_cpu = min_cpu_env ? atof(min_cpu_env) : 0;
    while (now() < end || (min_cpu > 0 && cpu_seconds(RUSAGE_SELF) < min_cpu && now() < start + 60)) {
        if (do_fork && child < 0 && now() - start > 0.3) {
            child = fork();
            if (child == 0) {
                child_burn(end);
                _exit(0);
            }
        }
        /* equal units in random order, 3 of 4 to hot_three: no period
         * the sampling clock could alias with */
        rnd = rnd * 6364136223846793005ull + 1;
        if ((rnd >> 33) % 4 != 0)
            hot_three();
        else
            hot_one();
    }
    if (child > 0)
        waitpid(child, NULL, 0);
    const char *end_file = getenv("FK_HOT_END");
    if (end_file) {
        struct timespec ts;
        FILE *f = fopen(end_file, "w");
        if (clock_gettime(CLOCK_REALTIME, &ts) || !f ||
            fprintf(f, "%lld%09ld\n", (long long)ts.tv_sec, ts.tv_nsec) < 0 || fclose(f))
            return 1;
    }
    const char *cpu_file = getenv("FK_HOT_CPU");
    if (cpu_file) {
        double self = cpu_seconds(RUSAGE_SELF), kids = cpu_seconds(RUSAGE_CHILDREN);
        if (self < 0 || kids < 0)
            return 1;
        double cpu = self + kids;
        FILE *f = fopen(cpu_file, "w");
        if (!f || fprintf(f, "%.6f\n", cpu) < 0 || fclose(f))
            return 1;
    }
    return 0;
}
