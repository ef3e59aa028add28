/* SPDX-License-Identifier: GPL-2.0-only */
/* Blocking workloads with known answers, for flamekit offcpu's tests and
 * bench/offcpu.sh. Each blocks in functions of its own (noinline, frame
 * pointers) and, at exit, prints what it measured itself around each
 * blocking call ("truth FUNCTION NS COUNT" lines on stdout), so a test
 * compares the profile with the workload's own clock, not with a guess.
 *
 *   offcpu-truth sleeps SECONDS     two threads: truth-a alternates 10 ms and
 *                                   30 ms sleeps (wait_10ms, wait_30ms: 1:3),
 *                                   truth-b sleeps 50 ms (wait_50ms)
 *   offcpu-truth pipe SECONDS       truth-prod writes 64 KiB chunks into a
 *                                   pipe (blocks in pipe_write); truth-cons
 *                                   reads 4 KiB then sleeps 2 ms (slow)
 *   offcpu-truth mutex SECONDS      4 threads take one mutex and sleep 5 ms
 *                                   holding it (hold_lock): one holder at a
 *                                   time, so waiting (take_lock) is 3/4
 *   offcpu-truth fsync SECONDS DIR  write 4 KiB + fdatasync in a loop on a
 *                                   file in DIR (a disk, not tmpfs): [D]
 *   offcpu-truth storm SECONDS      two threads ping-pong a byte through two
 *                                   pipes as fast as they can; prints the
 *                                   round trips per second, and every 100 ms
 *                                   "at REALTIME_NS ROUND_TRIPS CPU_NS" (the
 *                                   process's CPU so far: for a rate over a
 *                                   window of its own, per wall or CPU second)
 *   offcpu-truth bursts SECONDS [TRIPS [REST_MS]]
 *                                   truth-ping and truth-pong ping-pong TRIPS
 *                                   (60) round trips back to back, then
 *                                   truth-ping sleeps REST_MS (75) ms
 *                                   (burst_rest): ~1,500 switch-outs a second
 *                                   in bursts of 120
 *   offcpu-truth phases SECONDS STORM_SECONDS
 *                                   truth-sleep sleeps 1 ms at a time
 *                                   (wait_1ms) throughout, and says every
 *                                   50 ms "sleep_at REALTIME_NS NS" (its time
 *                                   in wait_1ms so far); truth-ping and
 *                                   truth-pong, started at once, wait for a
 *                                   line on stdin, then ping-pong a round
 *                                   trip every 50 us for STORM_SECONDS and
 *                                   stop: a switch rate that jumps and falls
 *                                   within a window
 *   offcpu-truth lull SECONDS [STORM_SECONDS]
 *                                   truth-sleep as in phases throughout;
 *                                   truth-ping and truth-pong ping-pong a
 *                                   round trip every 50 us from the start
 *                                   until a line on stdin (or for
 *                                   STORM_SECONDS), then stop: a rate that
 *                                   falls as a window opens
 *   offcpu-truth spin SECONDS       two threads spin (spin_hot) without
 *                                   blocking: on one CPU (taskset -c 0) each
 *                                   waits runnable [R] half the time; prints
 *                                   "spin_cpu_ns NS", the CPU time they got
 *   offcpu-truth nap SECONDS        one sleep of SECONDS (nap_long), after
 *                                   printing "nap_start_unix_ns NS": when it
 *                                   began, on the clock of the metadata's
 *                                   start_unix_ns (a loaded host starts it
 *                                   late)
 *   offcpu-truth leader SECONDS LEADER_SECONDS [NAME]
 *                                   NAME (default truth-orphan) sleeps 50 ms
 *                                   at a time (wait_50ms) for SECONDS; the
 *                                   main thread (truth-leader) sleeps
 *                                   LEADER_SECONDS (negative: waits for a
 *                                   line on stdin first, then sleeps its
 *                                   size), prints "leader_exit_unix_ns NS"
 *                                   and ends with pthread_exit: the process
 *                                   lives on in NAME, which prints the
 *                                   truths and exits the process
 *   offcpu-truth threads N          N short-lived threads, each sleeping
 *                                   1 ms (tid churn)
 *   offcpu-truth exits MB           two children, each sleeping 50 ms once
 *                                   (wait_50ms): truth-exit-a, the first
 *                                   process of a pid namespace of its own,
 *                                   dies slowly -- after its EXIT record it
 *                                   waits for its own child, which holds MB
 *                                   MiB, to die -- then truth-exit-b is
 *                                   given its pid (clone3 with set_tid),
 *                                   uses 30 ms of CPU and sleeps. Prints
 *                                   "exit_a_pid P", "exit_b_pid P" (or
 *                                   "exit_b_reuse no ERRNO": a pid of its
 *                                   own) and the children's truths
 *   offcpu-truth names SECONDS      threads with hostile names (';', a
 *                                   newline, bytes that are not UTF-8,
 *                                   markup, 15 bytes, longer: cut to 15 by
 *                                   the kernel), each sleeping 7 ms at a
 *                                   time in wait_named
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "offcpu-truth: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t deadline;
static atomic_bool done;

struct truth { const char *name; _Atomic uint64_t ns, n; };
static struct truth truths[12];
static int ntruths;

static struct truth *truth(const char *name)
{
    for (int i = 0; i < ntruths; i++)
        if (!strcmp(truths[i].name, name))
            return &truths[i];
    truths[ntruths].name = name;
    return &truths[ntruths++];
}

static void account(struct truth *t, uint64_t t0)
{
    atomic_fetch_add(&t->ns, now_ns() - t0);
    atomic_fetch_add(&t->n, 1);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void name_thread(const char *name)
{
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* ---- sleeps ---- */

static NOINLINE void wait_1ms(void) { sleep_ms(1); }
static NOINLINE void wait_10ms(void) { sleep_ms(10); }
static NOINLINE void wait_30ms(void) { sleep_ms(30); }
static NOINLINE void wait_50ms(void) { sleep_ms(50); }

/* The calling thread's time runnable but waiting for a CPU, in ns (the
 * second field of its schedstat; 0 when unreadable): on a loaded host a
 * sleeper is also preempted on its way in or out of a sleep. */
static _Atomic uint64_t run_delay;

static void add_run_delay(void)
{
    unsigned long long run, wait;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (f && fscanf(f, "%llu %llu", &run, &wait) == 2)
        atomic_fetch_add(&run_delay, wait);
    if (f)
        fclose(f);
}

static void *sleeper_a(void *arg)
{
    (void)arg;
    name_thread("truth-a");
    struct truth *a = truth("wait_10ms"), *b = truth("wait_30ms");
    while (now_ns() < deadline) {
        uint64_t t = now_ns();
        wait_10ms();
        account(a, t);
        t = now_ns();
        wait_30ms();
        account(b, t);
    }
    add_run_delay();
    return NULL;
}

/* The calling thread, named name, sleeps 50 ms at a time until the
 * deadline. */
static void naps_50ms(const char *name)
{
    name_thread(name);
    struct truth *c = truth("wait_50ms");
    while (now_ns() < deadline) {
        uint64_t t = now_ns();
        wait_50ms();
        account(c, t);
    }
}

static void *sleeper_b(void *arg)
{
    (void)arg;
    naps_50ms("truth-b");
    add_run_delay();
    return NULL;
}

/* ---- a process whose main thread ends first ---- */

static void print_truths(void);

static uint64_t orphan_t0;
static const char *orphan_name = "truth-orphan";

static void *orphan(void *arg)
{
    (void)arg;
    naps_50ms(orphan_name);
    print_truths();
    printf("wall_ns %llu\n", (unsigned long long)(now_ns() - orphan_t0));
    fflush(stdout);
    exit(0);
}

/* ---- pipe: a fast producer, a slow consumer ---- */

static int pfd[2];

static NOINLINE void produce(const char *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(pfd[1], buf + off, len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;     /* the consumer is gone */
        }
        off += (size_t)n;
    }
}

static void *producer(void *arg)
{
    (void)arg;
    name_thread("truth-prod");
    static char buf[65536];
    memset(buf, 'x', sizeof buf);
    struct truth *p = truth("produce");
    while (now_ns() < deadline) {
        uint64_t t = now_ns();
        produce(buf, sizeof buf);
        account(p, t);
    }
    close(pfd[1]);
    return NULL;
}

static NOINLINE void consume_slowly(void) { sleep_ms(2); }

static void *consumer(void *arg)
{
    (void)arg;
    name_thread("truth-cons");
    char buf[4096];
    struct truth *c = truth("consume_slowly");
    for (;;) {
        ssize_t n = read(pfd[0], buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
        uint64_t t = now_ns();
        consume_slowly();
        account(c, t);
    }
    return NULL;
}

/* ---- mutex convoy ---- */

static pthread_mutex_t convoy = PTHREAD_MUTEX_INITIALIZER;

static NOINLINE void take_lock(void) { pthread_mutex_lock(&convoy); }
static NOINLINE void hold_lock(void) { sleep_ms(5); }

static void *convoy_thread(void *arg)
{
    (void)arg;
    name_thread("truth-lock");
    struct truth *w = truth("take_lock"), *h = truth("hold_lock");
    while (now_ns() < deadline) {
        uint64_t t = now_ns();
        take_lock();
        account(w, t);
        t = now_ns();
        hold_lock();
        account(h, t);
        pthread_mutex_unlock(&convoy);
    }
    return NULL;
}

/* ---- fsync ---- */

static NOINLINE void sync_write(int fd, const char *buf)
{
    if (pwrite(fd, buf, 4096, 0) != 4096)
        die("pwrite");
    if (fdatasync(fd) < 0)
        die("fdatasync");
}

static void run_fsync(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/offcpu-truth.%ld", dir, (long)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        die(path);
    unlink(path);
    static char buf[4096];
    struct truth *s = truth("sync_write");
    unsigned i = 0;
    while (now_ns() < deadline) {
        buf[0] = (char)i++;
        uint64_t t = now_ns();
        sync_write(fd, buf);
        account(s, t);
    }
    close(fd);
}

/* ---- switch storm ---- */

static int ping[2], pong[2];
static _Atomic uint64_t trips;
static uint64_t storm_deadline;     /* phases: the storm's own end */

static NOINLINE void storm_ping(void)
{
    char c = 0;
    while (!atomic_load(&done)) {
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
            break;
        atomic_fetch_add_explicit(&trips, 1, memory_order_relaxed);
        if ((trips & 1023) == 0 && now_ns() >= (storm_deadline ? storm_deadline : deadline))
            atomic_store(&done, true);
    }
    close(ping[1]);
}

static void *storm_pong(void *arg)
{
    (void)arg;
    name_thread("truth-pong");
    char c;
    while (read(ping[0], &c, 1) == 1)
        if (write(pong[1], &c, 1) != 1)
            break;
    return NULL;
}

/* the round trips so far, every 100 ms, with the wall clock */
static void *storm_report(void *arg)
{
    (void)arg;
    name_thread("truth-report");
    while (!atomic_load(&done)) {
        struct timespec ts, cpu;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t n = atomic_load(&trips);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
        printf("at %llu %llu %llu\n", (unsigned long long)ts.tv_sec * 1000000000ull +
               (unsigned long long)ts.tv_nsec, (unsigned long long)n,
               (unsigned long long)cpu.tv_sec * 1000000000ull + (unsigned long long)cpu.tv_nsec);
        fflush(stdout);
        sleep_ms(100);
    }
    return NULL;
}

/* ---- bursts: a light target whose switches come in bunches ---- */

static int burst_trips = 60;
static unsigned burst_rest_ms = 75;
static NOINLINE void burst_rest(void) { sleep_ms(burst_rest_ms); }

/* truth-ping: burst_trips round trips back to back with truth-pong (two
 * switch-outs each, in a few milliseconds), then burst_rest_ms asleep: by
 * default ~1,500 switch-outs a second, under the default budget, in
 * bursts of 120 that a look of 10 ms sees as 12,000 a second */
static void bursts(void)
{
    char c = 0;
    uint64_t n = 0;
    while (now_ns() < deadline) {
        for (int i = 0; i < burst_trips; i++)
            if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
                die("bursts: pipe");
        burst_rest();
        n++;
    }
    close(ping[1]);
    printf("bursts %llu\nburst_round_trips %d\n", (unsigned long long)n, burst_trips);
}

/* ---- phases: a storm within a quiet run ---- */

static void *phase_sleeper(void *arg)
{
    (void)arg;
    name_thread("truth-sleep");
    struct truth *a = truth("wait_1ms");
    uint64_t report = 0;
    while (now_ns() < deadline) {
        uint64_t t = now_ns();
        wait_1ms();
        account(a, t);
        if (now_ns() >= report) {   /* its time in wait_1ms so far, on the wall clock */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            printf("sleep_at %llu %llu\n", (unsigned long long)ts.tv_sec * 1000000000ull +
                   (unsigned long long)ts.tv_nsec, (unsigned long long)atomic_load(&a->ns));
            fflush(stdout);
            report = now_ns() + 50000000ull;
        }
    }
    return NULL;
}

static double storm_secs;

static void *phase_ping(void *arg)
{
    (void)arg;
    name_thread("truth-ping");
    char line[16];
    if (read(0, line, sizeof line) <= 0) {   /* the go */
        close(ping[1]);
        return NULL;
    }
    uint64_t t0 = now_ns();
    storm_deadline = t0 + (uint64_t)(storm_secs * 1e9);
    /* a round trip every 50 us at most: tens of thousands of switches a
     * second, a storm N must follow, not one that overflows the rings of
     * a profiler slowed by sanitizers */
    char c = 0;
    while (now_ns() < storm_deadline) {
        uint64_t next = now_ns() + 50000;
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
            break;
        atomic_fetch_add_explicit(&trips, 1, memory_order_relaxed);
        while (now_ns() < next)
            ;
    }
    close(ping[1]);
    printf("storm_round_trips %llu\nstorm_ns %llu\n", (unsigned long long)trips,
           (unsigned long long)(now_ns() - t0));
    return NULL;
}

/* ---- lull: the storm first, until told ---- */

static atomic_bool lull_go;

static void *lull_listen(void *arg)
{
    (void)arg;
    name_thread("truth-listen");
    char line[16];
    (void)!read(0, line, sizeof line);  /* the go (or the end of stdin) */
    atomic_store(&lull_go, true);
    return NULL;
}

static void *lull_ping(void *arg)
{
    (void)arg;
    name_thread("truth-ping");
    char c = 0;
    while (!atomic_load(&lull_go) && now_ns() < (storm_deadline ? storm_deadline : deadline)) {
        uint64_t next = now_ns() + 50000;    /* as phases' */
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
            break;
        atomic_fetch_add_explicit(&trips, 1, memory_order_relaxed);
        while (now_ns() < next)
            ;
    }
    close(ping[1]);
    /* when the storm ended, on the clock of the metadata's start_unix_ns:
     * a loaded host may deliver the go after the window has opened */
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end);
    printf("storm_round_trips %llu\nstorm_end_unix_ns %llu\n", (unsigned long long)trips,
           (unsigned long long)end.tv_sec * 1000000000ull + (unsigned long long)end.tv_nsec);
    return NULL;
}

/* ---- runnable, never blocking ---- */

static NOINLINE void spin_hot(void)
{
    volatile uint64_t x = 0;
    while (now_ns() < deadline)
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
}

/* its truth: the thread's lifetime, on and off CPU */
static void *spinner(void *arg)
{
    (void)arg;
    name_thread("truth-spin");
    uint64_t t = now_ns();
    spin_hot();
    account(truth("spin_hot"), t);
    return NULL;
}

/* ---- one long sleep ---- */

static NOINLINE void nap_long(double secs)
{
    struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* ---- thread churn ---- */

static NOINLINE void *short_thread(void *arg)
{
    (void)arg;
    sleep_ms(1);
    return NULL;
}

/* ---- hostile thread names ---- */

static const char *const hostile[] = {
    "semi;colon", "new\nline", "bad\xff\xfe\xc3", "<b>&amp;\"'", "exactly15bytes!",
    "longer-than-fifteen-bytes", " spaced 7",
};
#define NHOSTILE (sizeof hostile / sizeof hostile[0])

static NOINLINE void wait_named(void) { sleep_ms(7); }

static void *named_thread(void *arg)
{
    name_thread(arg);
    while (now_ns() < deadline)
        wait_named();
    return NULL;
}

static void start(pthread_t *t, void *(*fn)(void *))
{
    int e = pthread_create(t, NULL, fn, NULL);
    if (e) {
        errno = e;
        die("pthread_create");
    }
}

/* "KEY NS": the wall clock now, on the clock of the metadata's
 * start_unix_ns, printed at once */
static void print_unix_now(const char *key)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("%s %llu\n", key,
           (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
    fflush(stdout);
}

static void print_truths(void)
{
    if (atomic_load(&run_delay))
        printf("run_delay_ns %llu\n", (unsigned long long)atomic_load(&run_delay));
    for (int i = 0; i < ntruths; i++)
        if (truths[i].n)
            printf("truth %s %llu %llu\n", truths[i].name, (unsigned long long)truths[i].ns,
               (unsigned long long)truths[i].n);
}

/* ---- exits: a child's slow death, and its pid given again ---- */

/* A child of this process (0 in it): with flags (CLONE_NEWPID: the first
 * process of a new pid namespace), the pid asked (0: any). */
static pid_t child(uint64_t flags, pid_t want)
{
#ifdef SYS_clone3
    struct {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
            set_tid, set_tid_size, cgroup;
    } args;
    memset(&args, 0, sizeof args);
    args.flags = flags;
    args.exit_signal = SIGCHLD;
    if (want) {
        args.set_tid = (uint64_t)(uintptr_t)&want;
        args.set_tid_size = 1;
    }
    return (pid_t)syscall(SYS_clone3, &args, sizeof args);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* In a child: wait_50ms, its own time (ns) written to fd; under a
 * function of each child's own (their names may not tell them apart: the
 * same pid) */
static void timed_sleep(int fd)
{
    uint64_t t = now_ns();
    wait_50ms();
    t = now_ns() - t;
    if (write(fd, &t, sizeof t) != (ssize_t)sizeof t)
        _exit(1);
}
static NOINLINE void exit_a_sleep(int fd) { timed_sleep(fd); }
static NOINLINE void exit_b_sleep(int fd) { timed_sleep(fd); __asm__ volatile("nop"); }

static void run_exits(size_t mb)
{
    int p[2];
    if (pipe(p) < 0)
        die("pipe");
    sleep_ms(100);      /* (the window opens) */
    pid_t a = child(CLONE_NEWPID, 0);
    if (a < 0)
        die("clone3 CLONE_NEWPID");
    if (!a) {
        /* its namespace's first process: its exit kills the others and
         * waits for them, after its EXIT record (zap_pid_ns_processes) */
        int ready[2];
        if (pipe(ready) < 0)
            _exit(1);
        pid_t c = fork();
        if (c < 0)
            _exit(1);
        if (!c) {
            name_thread("truth-exit-c");
            size_t len = mb << 20;
            char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
            if (m == MAP_FAILED)
                _exit(1);
            if (write(ready[1], "x", 1) != 1)
                _exit(1);
            for (;;)
                pause();
        }
        name_thread("truth-exit-a");
        char x;
        if (read(ready[0], &x, 1) != 1)
            _exit(1);
        exit_a_sleep(p[1]);
        _exit(0);
    }
    uint64_t a_ns = 0, b_ns = 0;
    if (read(p[0], &a_ns, sizeof a_ns) != (ssize_t)sizeof a_ns || waitpid(a, NULL, 0) != a)
        die("exits: the first child");
    sleep_ms(20);
    printf("exit_a_pid %d\n", (int)a);
    pid_t b = child(0, a);
    if (b < 0) {
        printf("exit_b_reuse no %d\n", errno);
        b = fork();
    }
    if (b < 0)
        die("fork");
    if (!b) {
        name_thread("truth-exit-b");
        struct timespec cpu;
        do
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
        while (cpu.tv_sec == 0 && cpu.tv_nsec < 30000000L);
        exit_b_sleep(p[1]);
        _exit(0);
    }
    if (read(p[0], &b_ns, sizeof b_ns) != (ssize_t)sizeof b_ns || waitpid(b, NULL, 0) != b)
        die("exits: the second child");
    printf("exit_b_pid %d\nexit_a_sleep_ns %llu\nexit_b_sleep_ns %llu\n", (int)b,
           (unsigned long long)a_ns, (unsigned long long)b_ns);
    sleep_ms(100);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: offcpu-truth sleeps|pipe|mutex|storm|bursts|spin|names SECONDS | fsync SECONDS DIR"
                        " | bursts SECONDS [TRIPS [REST_MS]] | phases SECONDS STORM_SECONDS | lull SECONDS [STORM_SECONDS]"
                        " | nap SECONDS | leader SECONDS LEADER_SECONDS [NAME] | threads N | exits MB\n");
        return 2;
    }
    const char *mode = argv[1];
    double secs = atof(argv[2]);
    uint64_t t0 = now_ns();
    deadline = t0 + (uint64_t)(secs * 1e9);
    /* the truths exist before any thread looks them up */
    static const char *const names[] = { "wait_1ms", "wait_10ms", "wait_30ms", "wait_50ms", "produce",
                                         "consume_slowly", "take_lock", "hold_lock", "sync_write",
                                         "spin_hot" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        truth(names[i]);
    pthread_t th[4];
    if (!strcmp(mode, "sleeps")) {
        start(&th[0], sleeper_a);
        start(&th[1], sleeper_b);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
    } else if (!strcmp(mode, "pipe")) {
        if (pipe(pfd) < 0)
            die("pipe");
        start(&th[0], producer);
        start(&th[1], consumer);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
    } else if (!strcmp(mode, "mutex")) {
        for (int i = 0; i < 4; i++)
            start(&th[i], convoy_thread);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
    } else if (!strcmp(mode, "fsync")) {
        if (argc < 4) {
            fprintf(stderr, "offcpu-truth: fsync needs a directory on a disk\n");
            return 2;
        }
        run_fsync(argv[3]);
    } else if (!strcmp(mode, "storm")) {
        if (pipe(ping) < 0 || pipe(pong) < 0)
            die("pipe");
        name_thread("truth-ping");
        /* when its threads start (a run target's window opens before
         * the exec: 0.5 s before, for an ASan build at load) */
        print_unix_now("storm_start_unix_ns");
        start(&th[0], storm_pong);
        start(&th[1], storm_report);
        storm_ping();
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
        double el = (double)(now_ns() - t0) / 1e9;
        printf("round_trips %llu\nround_trips_per_s %.0f\n", (unsigned long long)trips,
               (double)trips / el);
    } else if (!strcmp(mode, "bursts")) {
        if (argc > 3)
            burst_trips = atoi(argv[3]);
        if (argc > 4)
            burst_rest_ms = (unsigned)atoi(argv[4]);
        if (pipe(ping) < 0 || pipe(pong) < 0)
            die("pipe");
        name_thread("truth-ping");
        start(&th[0], storm_pong);
        bursts();
        pthread_join(th[0], NULL);
    } else if (!strcmp(mode, "phases")) {
        storm_secs = argc > 3 ? atof(argv[3]) : 1;
        if (pipe(ping) < 0 || pipe(pong) < 0)
            die("pipe");
        start(&th[0], phase_sleeper);
        start(&th[1], storm_pong);
        start(&th[2], phase_ping);
        pthread_join(th[2], NULL);
        pthread_join(th[1], NULL);
        pthread_join(th[0], NULL);
    } else if (!strcmp(mode, "lull")) {
        if (pipe(ping) < 0 || pipe(pong) < 0)
            die("pipe");
        start(&th[0], phase_sleeper);
        start(&th[1], storm_pong);
        if (argc > 3)
            storm_deadline = t0 + (uint64_t)(atof(argv[3]) * 1e9);
        start(&th[2], lull_ping);
        if (!storm_deadline)
            start(&th[3], lull_listen);
        pthread_join(th[2], NULL);
        pthread_join(th[1], NULL);
        pthread_join(th[0], NULL);
        if (!storm_deadline)
            pthread_detach(th[3]);  /* (blocked on stdin until the end) */
    } else if (!strcmp(mode, "spin")) {
        start(&th[0], spinner);
        start(&th[1], spinner);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
        struct timespec cpu;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
        printf("spin_cpu_ns %llu\n",
               (unsigned long long)cpu.tv_sec * 1000000000ull + (unsigned long long)cpu.tv_nsec);
    } else if (!strcmp(mode, "names")) {
        pthread_t nt[NHOSTILE];
        for (size_t i = 0; i < NHOSTILE; i++)
            if ((errno = pthread_create(&nt[i], NULL, named_thread, (void *)hostile[i])))
                die("pthread_create");
        for (size_t i = 0; i < NHOSTILE; i++)
            pthread_join(nt[i], NULL);
    } else if (!strcmp(mode, "nap")) {
        print_unix_now("nap_start_unix_ns");
        nap_long(secs);
    } else if (!strcmp(mode, "leader")) {
        double lead = argc > 3 ? atof(argv[3]) : secs / 2;
        if (argc > 4)
            orphan_name = argv[4];
        orphan_t0 = t0;
        start(&th[0], orphan);
        name_thread("truth-leader");
        if (lead < 0) {
            char line[64];
            if (!fgets(line, sizeof line, stdin))
                die("leader: stdin closed");
            lead = -lead;
        }
        nap_long(lead);
        print_unix_now("leader_exit_unix_ns");
        pthread_exit(NULL);
    } else if (!strcmp(mode, "exits")) {
        run_exits((size_t)atoi(argv[2]));
    } else if (!strcmp(mode, "threads")) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            start(&th[0], short_thread);
            pthread_join(th[0], NULL);
        }
    } else {
        fprintf(stderr, "offcpu-truth: unknown mode '%s'\n", mode);
        return 2;
    }
    print_truths();
    printf("wall_ns %llu\n", (unsigned long long)(now_ns() - t0));
    return 0;
}
