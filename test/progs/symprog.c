/* SPDX-License-Identifier: GPL-2.0-only */
/* Workload for the symbolizer tests.
 *   symprog addrs        print "ALPHA BETA" addresses, wait for stdin EOF
 *   symprog jit [nomap]  put code in an anonymous executable mapping, write
 *                        /tmp/perf-PID.map for it (unless nomap), print its
 *                        address, wait for stdin EOF
 *   symprog spin SECS    burn CPU: fk_symprog_alpha 3 : 1 fk_symprog_beta
 *   symprog jitspin SECS [atexit]
 *                        burn CPU inside the JIT region; its perf map is
 *                        written at start, or only at exit (like java's
 *                        -XX:+DumpPerfMapAtExit); prints "jit pid PID at ADDR"
 *   symprog replace SECS DIR fifo|ptmx
 *                        hostile: map files DIR/lib-N.so executable, unmap
 *                        each, put a FIFO or a symlink to /dev/ptmx at its
 *                        path, burn CPU in between; prints "ready" first
 *   symprog truncate SECS FILE
 *                        hostile: copy our own binary to FILE, map it, run
 *                        a loop placed in its text for SECS of CPU time,
 *                        then truncate FILE to the loop's page (a profiler
 *                        reading the rest through a mapping takes SIGBUS)
 *                        and run it SECS of CPU time more */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

volatile uint64_t fk_symprog_sink;

/* Global on purpose: the tests look these names up in flame graphs and
 * symbol tables, and the compiler may clone a file-local function under
 * another name (.constprop, .isra) or fold identical ones into one. */
void fk_symprog_alpha(uint64_t n);
void fk_symprog_beta(uint64_t n);

__attribute__((noinline)) void fk_symprog_alpha(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        fk_symprog_sink += i * 7;
}

__attribute__((noinline)) void fk_symprog_beta(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        fk_symprog_sink += i * 3;
}

static double clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* the process's own CPU seconds: a workload whose sample count is checked
 * runs for CPU time, which a loaded host does not shrink */
static double cpu_now(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static void wait_eof(void)
{
    char c;
    while (read(0, &c, 1) > 0)
        ;
}

static void write_map(unsigned char *p)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "%lx 40 fk_jit_hot\n", (unsigned long)(uintptr_t)(p + 0x100));
    fprintf(f, "%lx 10 fk_jit_other\n", (unsigned long)(uintptr_t)(p + 0x200));
    fclose(f);
}

/* movabs rcx, N; dec rcx; jnz .-3; ret */
static void *make_jit(int with_map, uint64_t loops)
{
    unsigned char code[] = { 0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3 };
    memcpy(code + 2, &loops, 8);
    unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memcpy(p + 0x100, code, sizeof code);
    if (with_map)
        write_map(p);
    return p + 0x100;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "addrs";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (strcmp(mode, "addrs") == 0) {
        printf("%lx %lx\n", (unsigned long)(uintptr_t)fk_symprog_alpha,
               (unsigned long)(uintptr_t)fk_symprog_beta);
        wait_eof();
    } else if (strcmp(mode, "jit") == 0) {
        void *p = make_jit(!(argc > 2 && strcmp(argv[2], "nomap") == 0), 1);
        printf("%lx\n", (unsigned long)(uintptr_t)p);
        wait_eof();
    } else if (strcmp(mode, "spin") == 0 || strcmp(mode, "jitspin") == 0) {
        double secs = argc > 2 ? atof(argv[2]) : 1.0, end = now() + secs;
        void (*jit)(void) = NULL;
        bool atexit_map = argc > 3 && strcmp(argv[3], "atexit") == 0;
        if (strcmp(mode, "jitspin") == 0) {
            jit = (void (*)(void))make_jit(!atexit_map, 1000000);
            printf("jit pid %d at %lx\n", (int)getpid(), (unsigned long)(uintptr_t)jit);   /* tests remove its map */
        }
        while (now() < end) {
            if (jit) {
                jit();
                continue;
            }
            fk_symprog_alpha(3000000);
            fk_symprog_beta(1000000);
        }
        if (atexit_map)
            write_map((unsigned char *)(void *)jit - 0x100);
    } else if (strcmp(mode, "replace") == 0 && argc > 4) {
        double end = now() + atof(argv[2]);
        bool fifo = strcmp(argv[4], "fifo") == 0;
        printf("ready\n");
        for (int i = 0; now() < end; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/lib-%d.so", argv[3], i);
            int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
            if (fd < 0 || ftruncate(fd, 8192) != 0) {
                perror(path);
                return 1;
            }
            void *p = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                perror("mmap");
                return 1;
            }
            close(fd);
            munmap(p, 8192);
            /* the path the kernel reported now leads elsewhere */
            if (unlink(path) != 0 || (fifo ? mkfifo(path, 0644) : symlink("/dev/ptmx", path)) != 0) {
                perror(path);
                return 1;
            }
            fk_symprog_alpha(3000000);
        }
    } else if (strcmp(mode, "truncate") == 0 && argc > 3) {
        double secs = atof(argv[2]);
        FILE *in = fopen("/proc/self/exe", "rb"), *out = fopen(argv[3], "wb");
        /* not on main's stack: untouched stack pages are a hole the
         * kernel's stack copy stops at (unwinding tests use main) */
        static char buf[65536];
        size_t n;
        while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0)
            fwrite(buf, 1, n, out);
        if (!in || !out || fclose(out) != 0) {
            perror(argv[3]);
            return 1;
        }
        fclose(in);
        int fd = open(argv[3], O_RDWR | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0)
            return 1;
        /* in the file's second page: movabs rcx, N; 3000 nops; dec rcx;
         * jnz (to the nops); ret -- samples at many pcs, each looked up */
        static unsigned char code[3100];
        uint64_t loops = 20000;
        code[0] = 0x48, code[1] = 0xb9;
        memcpy(code + 2, &loops, 8);
        memset(code + 10, 0x90, 3000);
        unsigned char tail[] = { 0x48, 0xff, 0xc9, 0x0f, 0x85, 0, 0, 0, 0, 0xc3 };
        int32_t rel = 10 - (3010 + 9);
        memcpy(tail + 5, &rel, 4);
        memcpy(code + 3010, tail, sizeof tail);
        if (pwrite(fd, code, 3010 + sizeof tail, 0x1000) != (ssize_t)(3010 + sizeof tail))
            return 1;
        unsigned char *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            return 1;
        void (*loop)(void) = (void (*)(void))(void *)(p + 0x1000);
        printf("ready\n");
        double end = cpu_now() + secs;
        while (cpu_now() < end)
            loop();
        /* keep the loop's page: run on in it, past the new end of file */
        if (ftruncate(fd, 0x2000) != 0)
            return 1;
        end = cpu_now() + secs;
        while (cpu_now() < end)
            loop();
    } else {
        fprintf(stderr, "usage: symprog addrs|jit [nomap]|spin SECS|jitspin SECS [atexit]|"
                "replace SECS DIR fifo|ptmx|truncate SECS FILE\n");
        return 2;
    }
    return 0;
}
