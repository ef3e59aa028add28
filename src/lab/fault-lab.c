/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit-fault-lab: the MADV_FREE vs MADV_DONTNEED experiment.
 *
 * Maps private anonymous memory, writes one byte per page (one minor fault
 * each), releases it with MADV_FREE or MADV_DONTNEED, optionally applies
 * memory pressure, writes it again, and after each step prints RSS, the
 * smaps_rollup Anonymous and LazyFree figures and the getrusage fault counts.
 * The touching functions are noinline with frame pointers, so a page-fault
 * flame graph of this program attributes its faults to them by name; it is
 * also flamekit's test workload with a known number of faults. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_FREE
#define MADV_FREE 8
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define NOINLINE __attribute__((noinline))

static const char *progname = "flamekit-fault-lab";

enum release { REL_FREE, REL_DONTNEED, REL_NONE };
enum format { FMT_TABLE, FMT_KV, FMT_JSON };

struct opts {
    uint64_t size;          /* bytes of the experiment's mapping */
    enum release release;
    uint64_t pressure;      /* bytes of other memory touched after release */
    bool pageout;           /* MADV_PAGEOUT the released range (simulated reclaim) */
    bool kernel_touch;      /* first touch by read() from /dev/zero: kernel-mode faults */
    bool thp;               /* allow transparent huge pages (default: off) */
    const char *file_dir;   /* --file-touch: major faults on a file in this dir */
    uint64_t loops;
    uint64_t delay_ms, hold_ms;
    enum format format;
};

struct snapshot {
    uint64_t rss_kb, anon_kb, lazyfree_kb;
    uint64_t minflt, majflt;
};

__attribute__((format(printf, 1, 2))) static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

__attribute__((format(printf, 1, 2))) static _Noreturn void usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "; see '%s --help'\n", progname);
    exit(2);
}

static void usage(void)
{
    printf("Usage: %s [OPTION]...\n"
           "Map private anonymous memory, touch it (one write per page), release it,\n"
           "touch it again, and print RSS, smaps LazyFree/Anonymous and fault counts\n"
           "after each step.\n"
           "\n"
           "  -s, --size SIZE        mapping size (default 64M; K, M, G suffixes)\n"
           "  -r, --release HOW      free (MADV_FREE, default), dontneed (MADV_DONTNEED)\n"
           "                         or none\n"
           "  -p, --pressure SIZE    after the release, touch and drop SIZE of other\n"
           "                         memory to push the kernel to reclaim\n"
           "      --pageout          after the release, MADV_PAGEOUT the range: the\n"
           "                         reclaim that memory pressure would do, on demand\n"
           "  -k, --kernel-touch     do the first touch with read() from /dev/zero, so\n"
           "                         the faults are taken in kernel mode (copy to user)\n"
           "  -m, --file-touch DIR   instead: write a file of SIZE in DIR, drop it from\n"
           "                         the page cache, map it and read one byte per page:\n"
           "                         one major fault per page (readahead off)\n"
           "      --thp              ask for transparent huge pages (default: MADV_NOHUGEPAGE,\n"
           "                         so each 4K page is one fault)\n"
           "  -n, --loops N          repeat the whole experiment N times (default 1)\n"
           "  -d, --delay MS         sleep MS milliseconds before starting\n"
           "      --hold MS          sleep MS milliseconds before exiting\n"
           "  -f, --format FMT       table (default), kv (key=value lines) or json\n"
           "                         (one object per line)\n"
           "      --kv, --json       short for --format kv / --format json\n"
           "  -h, --help             print this help and exit\n",
           progname);
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    uint64_t mul = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mul = 1ULL << 10; end++; break;
    case 'm': case 'M': mul = 1ULL << 20; end++; break;
    case 'g': case 'G': mul = 1ULL << 30; end++; break;
    default: return false;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || (v && v > UINT64_MAX / mul))
        return false;
    *out = v * mul;
    return true;
}

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* smaps_rollup "Key:   N kB" lines; a missing key (old kernel) reads as 0. */
static void read_smaps_rollup(struct snapshot *s)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f)
        die("cannot open /proc/self/smaps_rollup: %s (needs Linux >= 4.14 and /proc)", strerror(errno));
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char key[64];
        unsigned long long kb;
        if (sscanf(line, "%63[^:]: %llu kB", key, &kb) != 2)
            continue;
        if (!strcmp(key, "Rss"))
            s->rss_kb = kb;
        else if (!strcmp(key, "Anonymous"))
            s->anon_kb = kb;
        else if (!strcmp(key, "LazyFree"))
            s->lazyfree_kb = kb;
    }
    fclose(f);
}

static void take_snapshot(struct snapshot *s)
{
    struct rusage ru;
    memset(s, 0, sizeof *s);
    read_smaps_rollup(s);
    /* After the file read, so its own faults land in this step, not the next. */
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        die("getrusage: %s", strerror(errno));
    s->minflt = (uint64_t)ru.ru_minflt;
    s->majflt = (uint64_t)ru.ru_majflt;
}

static void print_header(const struct opts *o, uint64_t pages, long pagesz)
{
    const char *rel = o->release == REL_FREE ? "free" : o->release == REL_DONTNEED ? "dontneed" : "none";
    switch (o->format) {
    case FMT_TABLE:
        printf("# %s: %" PRIu64 " pages of %ld bytes, release=%s, pressure=%" PRIu64
               ", pageout=%s, kernel_touch=%s, thp=%s, loops=%" PRIu64 ", pid=%ld\n",
               progname, pages, pagesz, rel, o->pressure, o->pageout ? "yes" : "no",
               o->kernel_touch ? "yes" : "no", o->thp ? "yes" : "no", o->loops, (long)getpid());
        printf("%-5s %-9s %10s %10s %10s %10s %10s %8s\n", "loop", "step", "rss_kb",
               "anon_kb", "lazyfree_kb", "minflt", "+minflt", "+majflt");
        break;
    case FMT_KV:
        printf("step=config pid=%ld pages=%" PRIu64 " page_size=%ld release=%s pressure=%" PRIu64
               " pageout=%d kernel_touch=%d thp=%d loops=%" PRIu64 "\n",
               (long)getpid(), pages, pagesz, rel, o->pressure, o->pageout, o->kernel_touch,
               o->thp, o->loops);
        break;
    case FMT_JSON:
        printf("{\"step\":\"config\",\"pid\":%ld,\"pages\":%" PRIu64 ",\"page_size\":%ld,"
               "\"release\":\"%s\",\"pressure\":%" PRIu64 ",\"pageout\":%s,\"kernel_touch\":%s,"
               "\"thp\":%s,\"loops\":%" PRIu64 "}\n",
               (long)getpid(), pages, pagesz, rel, o->pressure, o->pageout ? "true" : "false",
               o->kernel_touch ? "true" : "false", o->thp ? "true" : "false", o->loops);
        break;
    }
}

/* One line per step: the state after it and the faults the step itself took. */
static void report(const struct opts *o, uint64_t loop, const char *step,
                   const struct snapshot *prev, const struct snapshot *now)
{
    uint64_t dmin = now->minflt - prev->minflt, dmaj = now->majflt - prev->majflt;
    switch (o->format) {
    case FMT_TABLE:
        printf("%-5" PRIu64 " %-9s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64
               " %10" PRIu64 " %8" PRIu64 "\n",
               loop, step, now->rss_kb, now->anon_kb, now->lazyfree_kb, now->minflt, dmin, dmaj);
        break;
    case FMT_KV:
        printf("step=%s loop=%" PRIu64 " rss_kb=%" PRIu64 " anon_kb=%" PRIu64
               " lazyfree_kb=%" PRIu64 " minflt=%" PRIu64 " majflt=%" PRIu64
               " minflt_delta=%" PRIu64 " majflt_delta=%" PRIu64 "\n",
               step, loop, now->rss_kb, now->anon_kb, now->lazyfree_kb, now->minflt,
               now->majflt, dmin, dmaj);
        break;
    case FMT_JSON:
        printf("{\"step\":\"%s\",\"loop\":%" PRIu64 ",\"rss_kb\":%" PRIu64 ",\"anon_kb\":%" PRIu64
               ",\"lazyfree_kb\":%" PRIu64 ",\"minflt\":%" PRIu64 ",\"majflt\":%" PRIu64
               ",\"minflt_delta\":%" PRIu64 ",\"majflt_delta\":%" PRIu64 "}\n",
               step, loop, now->rss_kb, now->anon_kb, now->lazyfree_kb, now->minflt,
               now->majflt, dmin, dmaj);
        break;
    }
    /* Flush per step so a reader (or a test) sees progress as it happens. */
    fflush(stdout);
}

/* Called at the end of each touching function so none of them is a leaf:
 * GCC gives leaf functions no frame even with -fno-omit-frame-pointer, and a
 * frame-pointer unwinder then skips the leaf's caller. */
NOINLINE void touch_done(void)
{
    __asm__ volatile("" ::: "memory");
}

/* One write per page: a fresh private anonymous page costs exactly one
 * minor fault (no read first, which would map the zero page and fault twice). */
NOINLINE void touch_pages(volatile char *p, size_t len, size_t pagesz)
{
    for (size_t off = 0; off < len; off += pagesz)
        p[off] = 1;
    touch_done();
}

/* Same pages, second time round: faults only if the release took them away. */
NOINLINE void retouch_pages(volatile char *p, size_t len, size_t pagesz)
{
    for (size_t off = 0; off < len; off += pagesz)
        p[off] = 2;
    touch_done();
}

/* The first touch done by the kernel: read() copies into the untouched pages,
 * so each fault is taken in kernel mode (perf: not user mode, a kernel stack).
 * On x86-64 the syscall is issued inline so this function, not libc's leaf
 * read(), is the user frame a frame-pointer unwinder reports. */
static ssize_t raw_read(int fd, void *buf, size_t n)
{
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)SYS_read), "D"((long)fd), "S"(buf), "d"(n)
                     : "rcx", "r11", "memory");
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
#else
    return read(fd, buf, n);
#endif
}

NOINLINE void read_into_pages(char *p, size_t len)
{
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open /dev/zero: %s", strerror(errno));
    size_t done = 0;
    while (done < len) {
        size_t n = len - done < (1u << 20) ? len - done : (1u << 20);
        ssize_t r = raw_read(fd, p + done, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("read from /dev/zero: %s", r < 0 ? strerror(errno) : "unexpected end of file");
        done += (size_t)r;
    }
    close(fd);
}

/* Memory pressure: touch other memory, then give it back at once. */
NOINLINE void apply_pressure(uint64_t bytes, size_t pagesz)
{
    char *q = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED)
        die("cannot map the pressure region: %s", strerror(errno));
    touch_pages(q, bytes, pagesz);
    if (munmap(q, bytes) != 0)
        die("munmap: %s", strerror(errno));
}

NOINLINE void release_pages(char *p, size_t len, enum release how)
{
    int advice = how == REL_FREE ? MADV_FREE : MADV_DONTNEED;
    if (how == REL_NONE)
        return;
    if (madvise(p, len, advice) != 0)
        die("madvise: %s", strerror(errno));
}

/* Reads one byte per page of a file mapping that is not in the page cache:
 * with readahead off (MADV_RANDOM) every page is a major fault. */
NOINLINE uint64_t read_file_pages(const volatile char *p, size_t len, size_t pagesz)
{
    uint64_t sum = 0;
    for (size_t off = 0; off < len; off += pagesz)
        sum += (unsigned char)p[off];
    touch_done();
    return sum;
}

static void run_file_experiment(const struct opts *o, uint64_t loop, long pagesz)
{
    struct snapshot prev, now;
    size_t len = (size_t)o->size;
    char *path = malloc(strlen(o->file_dir) + 32);
    if (!path)
        die("out of memory");
    sprintf(path, "%s/fault-lab.XXXXXX", o->file_dir);
    int fd = mkstemp(path);
    if (fd < 0)
        die("cannot create a file in %s: %s", o->file_dir, strerror(errno));
    unlink(path);       /* gone when we close it */
    free(path);
    static char block[1 << 16];
    memset(block, 'x', sizeof block);
    for (size_t done = 0; done < len;) {
        size_t n = len - done < sizeof block ? len - done : sizeof block;
        ssize_t w = write(fd, block, n);
        if (w <= 0)
            die("write: %s", w < 0 ? strerror(errno) : "short write");
        done += (size_t)w;
    }
    /* Written back, then dropped: the next access must read the disk. */
    if (fsync(fd) != 0)
        die("fsync: %s", strerror(errno));
    int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (e)
        die("posix_fadvise: %s", strerror(e));

    take_snapshot(&prev);
    char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        die("cannot map the file: %s", strerror(errno));
    if (madvise(p, len, MADV_RANDOM) != 0)
        die("madvise(MADV_RANDOM): %s", strerror(errno));
    take_snapshot(&now);
    report(o, loop, "map", &prev, &now);
    prev = now;
    if (read_file_pages(p, len, (size_t)pagesz) != (uint64_t)'x' * (len / (size_t)pagesz))
        die("the file does not read back as written");
    take_snapshot(&now);
    report(o, loop, "touch", &prev, &now);
    prev = now;
    if (munmap(p, len) != 0)
        die("munmap: %s", strerror(errno));
    close(fd);
    take_snapshot(&now);
    report(o, loop, "unmap", &prev, &now);
}

NOINLINE static void run_experiment(const struct opts *o, uint64_t loop, long pagesz)
{
    struct snapshot prev, now;
    size_t len = (size_t)o->size;

    take_snapshot(&prev);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("cannot map the experiment's memory: %s (try a smaller --size)", strerror(errno));
    /* Huge pages would make one fault per 2M and hide the per-page story. */
    if (madvise(p, len, o->thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0 && errno != EINVAL)
        die("madvise(hugepage setting): %s", strerror(errno));
    take_snapshot(&now);
    report(o, loop, "map", &prev, &now);

    prev = now;
    if (o->kernel_touch)
        read_into_pages(p, len);
    else
        touch_pages(p, len, (size_t)pagesz);
    take_snapshot(&now);
    report(o, loop, "touch", &prev, &now);

    prev = now;
    release_pages(p, len, o->release);
    take_snapshot(&now);
    report(o, loop, "release", &prev, &now);

    if (o->pageout) {
        prev = now;
        /* EINVAL: kernel older than 5.4. */
        if (madvise(p, len, MADV_PAGEOUT) != 0)
            die("madvise(MADV_PAGEOUT): %s (needs Linux >= 5.4)", strerror(errno));
        take_snapshot(&now);
        report(o, loop, "pageout", &prev, &now);
    }
    if (o->pressure) {
        prev = now;
        apply_pressure(o->pressure, (size_t)pagesz);
        take_snapshot(&now);
        report(o, loop, "pressure", &prev, &now);
    }

    prev = now;
    retouch_pages(p, len, (size_t)pagesz);
    take_snapshot(&now);
    report(o, loop, "retouch", &prev, &now);

    prev = now;
    if (munmap(p, len) != 0)
        die("munmap: %s", strerror(errno));
    take_snapshot(&now);
    report(o, loop, "unmap", &prev, &now);
}

int main(int argc, char **argv)
{
    enum { OPT_PAGEOUT = 256, OPT_THP, OPT_HOLD, OPT_KV, OPT_JSON };
    static const struct option longopts[] = {
        { "size", required_argument, NULL, 's' },
        { "release", required_argument, NULL, 'r' },
        { "pressure", required_argument, NULL, 'p' },
        { "pageout", no_argument, NULL, OPT_PAGEOUT },
        { "kernel-touch", no_argument, NULL, 'k' },
        { "thp", no_argument, NULL, OPT_THP },
        { "file-touch", required_argument, NULL, 'm' },
        { "loops", required_argument, NULL, 'n' },
        { "delay", required_argument, NULL, 'd' },
        { "hold", required_argument, NULL, OPT_HOLD },
        { "format", required_argument, NULL, 'f' },
        { "kv", no_argument, NULL, OPT_KV },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct opts o = { .size = 64ULL << 20, .release = REL_FREE, .loops = 1, .format = FMT_TABLE };
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":s:r:p:km:n:d:f:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (!parse_size(optarg, &o.size) || o.size == 0)
                usage_error("bad --size '%s': want a positive size like 64M", optarg);
            break;
        case 'r':
            if (!strcmp(optarg, "free"))
                o.release = REL_FREE;
            else if (!strcmp(optarg, "dontneed"))
                o.release = REL_DONTNEED;
            else if (!strcmp(optarg, "none"))
                o.release = REL_NONE;
            else
                usage_error("bad --release '%s': want free, dontneed or none", optarg);
            break;
        case 'p':
            if (!parse_size(optarg, &o.pressure) || o.pressure == 0)
                usage_error("bad --pressure '%s': want a positive size like 1G", optarg);
            break;
        case OPT_PAGEOUT: o.pageout = true; break;
        case 'k': o.kernel_touch = true; break;
        case OPT_THP: o.thp = true; break;
        case 'm': o.file_dir = optarg; break;
        case 'n':
            if (!parse_u64(optarg, &o.loops) || o.loops == 0)
                usage_error("bad --loops '%s': want a positive integer", optarg);
            break;
        case 'd':
            if (!parse_u64(optarg, &o.delay_ms))
                usage_error("bad --delay '%s': want milliseconds", optarg);
            break;
        case OPT_HOLD:
            if (!parse_u64(optarg, &o.hold_ms))
                usage_error("bad --hold '%s': want milliseconds", optarg);
            break;
        case 'f':
            if (!strcmp(optarg, "table"))
                o.format = FMT_TABLE;
            else if (!strcmp(optarg, "kv"))
                o.format = FMT_KV;
            else if (!strcmp(optarg, "json"))
                o.format = FMT_JSON;
            else
                usage_error("bad --format '%s': want table, kv or json", optarg);
            break;
        case OPT_KV: o.format = FMT_KV; break;
        case OPT_JSON: o.format = FMT_JSON; break;
        case 'h': usage(); return 0;
        case ':': usage_error("option '%s' needs an argument", argv[optind - 1]);
        default:
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);

    long pagesz = sysconf(_SC_PAGESIZE);
    if (pagesz <= 0)
        die("sysconf(_SC_PAGESIZE) failed");
    /* Whole pages, so "pages" is exactly the faults a touch takes. */
    o.size = (o.size + (uint64_t)pagesz - 1) / (uint64_t)pagesz * (uint64_t)pagesz;
    if (o.size > SIZE_MAX / 2)
        usage_error("--size too large for this machine");
    uint64_t pages = o.size / (uint64_t)pagesz;

    if (o.delay_ms)
        sleep_ms(o.delay_ms);
    print_header(&o, pages, pagesz);
    struct snapshot end;
    struct timespec t0, t1;
    if (clock_gettime(CLOCK_MONOTONIC, &t0) != 0)
        die("clock_gettime: %s", strerror(errno));
    for (uint64_t i = 1; i <= o.loops; i++) {
        if (o.file_dir)
            run_file_experiment(&o, i, pagesz);
        else
            run_experiment(&o, i, pagesz);
    }
    if (clock_gettime(CLOCK_MONOTONIC, &t1) != 0)
        die("clock_gettime: %s", strerror(errno));
    take_snapshot(&end);
    /* The process's CPU time (user + system: faults are system time), less
     * disturbed by other load than wall time. */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        die("getrusage: %s", strerror(errno));
    uint64_t cpu_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec
                    + (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
    /* The experiment's own wall time, for overhead benchmarks. */
    uint64_t elapsed_us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000u
                        + (uint64_t)(t1.tv_nsec / 1000) - (uint64_t)(t0.tv_nsec / 1000);
    /* Whole-process totals (including startup), for comparison with a profiler. */
    switch (o.format) {
    case FMT_TABLE:
        printf("# total: minflt=%" PRIu64 " majflt=%" PRIu64 " (process lifetime), expected touch faults=%" PRIu64
               " per loop, elapsed %" PRIu64 " us, cpu %" PRIu64 " us\n", end.minflt, end.majflt, pages,
               elapsed_us, cpu_us);
        break;
    case FMT_KV:
        printf("step=total minflt=%" PRIu64 " majflt=%" PRIu64 " expected_touch_faults=%" PRIu64
               " elapsed_us=%" PRIu64 " cpu_us=%" PRIu64 "\n", end.minflt, end.majflt, pages,
               elapsed_us, cpu_us);
        break;
    case FMT_JSON:
        printf("{\"step\":\"total\",\"minflt\":%" PRIu64 ",\"majflt\":%" PRIu64
               ",\"expected_touch_faults\":%" PRIu64 ",\"elapsed_us\":%" PRIu64
               ",\"cpu_us\":%" PRIu64 "}\n", end.minflt, end.majflt, pages, elapsed_us, cpu_us);
        break;
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        die("cannot write the report: %s", strerror(errno));
    if (o.hold_ms)
        sleep_ms(o.hold_ms);
    return 0;
}
