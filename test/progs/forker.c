/* SPDX-License-Identifier: GPL-2.0-only */
/* Trees of short-lived processes for t-children.
 *
 *   forker kids N US
 *       N children one after another, each named fkkid, spinning US
 *       microseconds of its own CPU time and exiting; then prints the
 *       tree's CPU seconds (its own and its reaped children's, rusage).
 *   forker member GO PFILE DONE
 *       waits for file GO; a child fkfirst spins 150 ms and exits (pid P,
 *       written to PFILE); waits for file DONE (an outsider had P); then
 *       makes P again for a child fkagain (150 ms) through
 *       /proc/sys/kernel/ns_last_pid (root); exits 0, or 3 when P could
 *       not be had again.
 *   forker outsider PFILE DONE
 *       waits for PFILE, makes its pid P for a child fkreuse (150 ms),
 *       writes "1" (had it) or "0" to DONE.
 *   forker zleader GO S
 *       its leader ends at once (pthread_exit: a zombie while the process
 *       lives); its other thread, fkzthread, waits for file GO (non-empty),
 *       spins S seconds of its own CPU time and ends the process (0).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile unsigned long sink;

static void spin(double s)
{
    double end = cpu_now() + s;
    while (cpu_now() < end)
        for (int i = 0; i < 1000; i++)
            sink = sink * 31 + (unsigned long)i;
}

static void wait_file(const char *path)
{
    while (access(path, F_OK) != 0)
        usleep(10000);
}

static void write_file(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        exit(2);
    }
}

/* A child named NAME spinning S seconds; its pid. */
static pid_t child(const char *name, double s, pid_t want)
{
    pid_t c = fork();
    if (c < 0) {
        perror("fork");
        exit(2);
    }
    if (c == 0) {
        if (want > 0 && getpid() != want)
            _exit(0);
        prctl(PR_SET_NAME, name);
        spin(s);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    return c;
}

/* A child with pid P, named NAME, spinning S seconds: true if had. */
static bool child_with_pid(pid_t p, const char *name, double s)
{
    for (int i = 0; i < 2000; i++) {
        int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return false;
        char b[32];
        int n = snprintf(b, sizeof b, "%d", (int)p - 1);
        bool ok = write(fd, b, (size_t)n) == n;
        close(fd);
        if (!ok)
            return false;
        if (child(name, s, p) == p)
            return true;
    }
    return false;
}

static const char *zl_go;
static double zl_secs;

static void *zl_thread(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "fkzthread");
    struct stat st;
    while (stat(zl_go, &st) != 0 || st.st_size == 0)
        usleep(10000);
    spin(zl_secs);
    exit(0);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "kids") == 0) {
        long n = atol(argv[2]);
        double s = atof(argv[3]) / 1e6;
        for (long i = 0; i < n; i++)
            child("fkkid", s, 0);
        struct rusage self, kids;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &kids);
        double t = 0;
        const struct rusage *r[] = { &self, &kids };
        for (int i = 0; i < 2; i++)
            t += (double)(r[i]->ru_utime.tv_sec + r[i]->ru_stime.tv_sec) +
                 (double)(r[i]->ru_utime.tv_usec + r[i]->ru_stime.tv_usec) / 1e6;
        printf("%.3f\n", t);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "member") == 0) {
        wait_file(argv[2]);
        pid_t p = child("fkfirst", 0.15, 0);
        char b[32];
        snprintf(b, sizeof b, "%d\n", (int)p);
        write_file(argv[3], b);
        wait_file(argv[4]);
        return child_with_pid(p, "fkagain", 0.15) ? 0 : 3;
    }
    if (argc == 4 && strcmp(argv[1], "outsider") == 0) {
        wait_file(argv[2]);
        FILE *f = fopen(argv[2], "r");
        int p = 0;
        if (!f || fscanf(f, "%d", &p) != 1)
            return 2;
        fclose(f);
        write_file(argv[3], child_with_pid(p, "fkreuse", 0.15) ? "1\n" : "0\n");
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "zleader") == 0) {
        zl_go = argv[2];
        zl_secs = atof(argv[3]);
        pthread_t th;
        if (pthread_create(&th, NULL, zl_thread, NULL) != 0)
            return 2;
        pthread_exit(NULL);
    }
    fprintf(stderr, "usage: forker kids N US | member GO PFILE DONE | outsider PFILE DONE | zleader GO S\n");
    return 2;
}
