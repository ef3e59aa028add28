/* SPDX-License-Identifier: GPL-2.0-only */
/* capture/bpf: programs built from instructions load, their labels jump
 * where they are placed (forward and back), maps are reached through their
 * fds, a verifier refusal says why, a broken builder refuses to load, and a
 * perf-event program attached to a real sampling event runs on its
 * overflows, and the fork follower keeps a tree over real forks (and
 * capture/bpftree counts what a full map left out), and fk_bpf_usable
 * probes once per process. Socket-filter programs are run with BPF_PROG_TEST_RUN, which
 * gives their return value without any traffic. Needs root (as the suite). */
#include <bpf/bpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/bpf.h"
#include "capture/bpftree.h"
#include "capture/tracefs.h"
#include "unit.h"
#include "util/fk.h"

/* Run a socket filter once (or repeat times) on a zeroed 64-byte packet;
 * its return value, or -1. */
static long run_filter(int prog, unsigned repeat)
{
    unsigned char pkt[64] = { 0 };
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = sizeof pkt,
                .repeat = repeat);
    if (bpf_prog_test_run_opts(prog, &opts) != 0)
        return -1;
    return (long)opts.retval;
}

static int load(struct fk_bpf_builder *b, enum bpf_prog_type type, char *err, size_t errlen)
{
    int fd;
    if (!fk_bpf_prog_load(b, type, "fk_unit", &fd, err, errlen))
        return -1;
    return fd;
}

/* r0 = 0; r1 = 10; goto top; bad: r0 = 999; exit;
 * top: r0 += r1; if (--r1 != 0) goto top; if (r0 != 55) goto bad; exit:
 * returns 55 only if forward and backward labels, plain and conditional,
 * all land where they were placed. */
static void loop_and_skip(void)
{
    struct fk_bpf_builder b;
    char err[256] = "";
    fk_bpf_builder_init(&b);
    unsigned top = fk_bpf_label_new(&b), bad = fk_bpf_label_new(&b);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_1, 10));
    fk_bpf_goto(&b, top);
    fk_bpf_label_place(&b, bad);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 999));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    fk_bpf_label_place(&b, top);
    fk_bpf_emit(&b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_1));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_SUB, BPF_REG_1, 1));
    fk_bpf_jump_imm(&b, BPF_JNE, BPF_REG_1, 0, top);
    fk_bpf_jump_imm(&b, BPF_JNE, BPF_REG_0, 55, bad);
    fk_bpf_emit(&b, FK_BPF_EXIT());
    int fd = load(&b, BPF_PROG_TYPE_SOCKET_FILTER, err, sizeof err);
    UNIT_CHECK("a program with a backward and a forward label loads", fd >= 0);
    if (fd < 0)
        printf("# %s\n", err);
    UNIT_CHECK("the loop runs back to its label and the goto skips to its own: 55",
               fd >= 0 && run_filter(fd, 1) == 55);
    if (fd >= 0)
        close(fd);
    fk_bpf_builder_free(&b);
}

/* r0 = the high half of a 64-bit constant: both slots of ld_imm64 count */
static void imm64(void)
{
    struct fk_bpf_builder b;
    char err[256] = "";
    fk_bpf_builder_init(&b);
    fk_bpf_emit_ld_imm64(&b, BPF_REG_0, 0x12345678deadbeefULL);
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    int fd = load(&b, BPF_PROG_TYPE_SOCKET_FILTER, err, sizeof err);
    UNIT_CHECK("a 64-bit constant keeps its high half", fd >= 0 && run_filter(fd, 1) == 0x12345678);
    if (fd < 0)
        printf("# %s\n", err);
    else
        close(fd);
    fk_bpf_builder_free(&b);
}

/* Emit: value = lookup(map, key 0); if (!value) return 0; *value += add;
 * return 1. The value is a u64 counter. */
static void emit_count(struct fk_bpf_builder *b, int map, int32_t add)
{
    unsigned out = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -4, 0));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -4));
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, map);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, out);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_1, add));
    fk_bpf_emit(b, FK_BPF_ATOMIC_ADD(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    fk_bpf_label_place(b, out);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
    fk_bpf_emit(b, FK_BPF_EXIT());
}

static uint64_t counter(int map)
{
    uint32_t key = 0;
    uint64_t v = 0;
    if (bpf_map_lookup_elem(map, &key, &v) != 0)
        return UINT64_MAX;
    return v;
}

static void map_by_fd(void)
{
    char err[256] = "";
    int map;
    bool made = fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_unit", 4, 8, 1, 0, &map, err, sizeof err);
    UNIT_CHECK("an array map is made", made);
    if (!made) {
        printf("# %s\n", err);
        return;
    }
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    emit_count(&b, map, 7);
    int fd = load(&b, BPF_PROG_TYPE_SOCKET_FILTER, err, sizeof err);
    UNIT_CHECK("a program reaching a map by its fd loads", fd >= 0);
    if (fd >= 0) {
        run_filter(fd, 3);
        UNIT_CHECK("three runs added 7 each to the map's counter", counter(map) == 21);
        close(fd);
    } else {
        printf("# %s\n", err);
    }
    fk_bpf_builder_free(&b);
    close(map);
}

/* Load b as a socket filter: true when it is refused, fd is left at -1
 * and the error contains want. The builder is freed. */
static bool refused_saying(struct fk_bpf_builder *b, const char *want, char *err, size_t errlen)
{
    int fd;
    err[0] = '\0';
    bool refused = !fk_bpf_prog_load(b, BPF_PROG_TYPE_SOCKET_FILTER, "fk_bad", &fd, err, errlen);
    fk_bpf_builder_free(b);
    printf("# %s\n", err);
    return refused && fd == -1 && strstr(err, want);
}

static void refusals(void)
{
    char err[256];
    struct fk_bpf_builder b;

    /* the verifier's reason reaches the caller */
    fk_bpf_builder_init(&b);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_0, BPF_REG_2));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    UNIT_CHECK("a program reading an unset register is refused by the kernel",
               refused_saying(&b, "refused by the kernel", err, sizeof err));
    UNIT_CHECK("the refusal carries the verifier's reason (R2 !read_ok)", strstr(err, "R2 !read_ok"));

    fk_bpf_builder_init(&b);
    unsigned never = fk_bpf_label_new(&b);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
    fk_bpf_goto(&b, never);
    fk_bpf_emit(&b, FK_BPF_EXIT());
    UNIT_CHECK("a jump to a label never placed is refused before the kernel sees it",
               refused_saying(&b, "never placed", err, sizeof err));

    fk_bpf_builder_init(&b);
    for (int i = 0; i < FK_BPF_MAX_INSNS + 5; i++)
        fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    UNIT_CHECK("a generator that runs away is stopped at the limit",
               b.n == FK_BPF_MAX_INSNS && refused_saying(&b, "longer than", err, sizeof err));

    fk_bpf_builder_init(&b);
    unsigned l = fk_bpf_label_new(&b);
    fk_bpf_label_place(&b, l);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
    fk_bpf_label_place(&b, l);
    fk_bpf_emit(&b, FK_BPF_EXIT());
    UNIT_CHECK("a label placed twice is refused", refused_saying(&b, "placed twice", err, sizeof err));
}

/* Spin for ms of this thread's own CPU (not wall time: a loaded host
 * would stretch it). */
static void spin_cpu_ms(long ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 10000; i++)
            x += (unsigned long)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

/* A perf-event program on this thread's task-clock at 1 kHz runs on each
 * overflow: 100 ms of spinning gives about 100 runs. */
static void perf_attach(void)
{
    char err[256] = "";
    bool usable = fk_bpf_usable(err, sizeof err);
    UNIT_CHECK("BPF is usable here (root, perf-event programs)", usable);
    if (!usable) {
        printf("# %s\n", err);
        return;
    }
    int map, prog;
    if (!fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_unit", 4, 8, 1, 0, &map, err, sizeof err)) {
        UNIT_CHECK("a map for the perf-event program", false);
        printf("# %s\n", err);
        return;
    }
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    emit_count(&b, map, 1);
    bool loaded = fk_bpf_prog_load(&b, BPF_PROG_TYPE_PERF_EVENT, "fk_unit", &prog, err, sizeof err);
    fk_bpf_builder_free(&b);
    UNIT_CHECK("a perf-event program loads", loaded);
    if (!loaded) {
        printf("# %s\n", err);
        close(map);
        return;
    }
    struct perf_event_attr attr = {
        .type = PERF_TYPE_SOFTWARE,
        .size = sizeof attr,
        .config = PERF_COUNT_SW_TASK_CLOCK,
        .sample_period = 1000000, /* ns: 1 kHz of this thread's CPU */
        .disabled = 1,
    };
    int ev = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    UNIT_CHECK("a task-clock sampling event opens", ev >= 0);
    if (ev >= 0) {
        bool attached = fk_bpf_attach_perf(ev, prog, err, sizeof err);
        UNIT_CHECK("the program attaches to the event", attached);
        if (!attached)
            printf("# %s\n", err);
        ioctl(ev, PERF_EVENT_IOC_ENABLE, 0);
        spin_cpu_ms(100);
        ioctl(ev, PERF_EVENT_IOC_DISABLE, 0);
        uint64_t runs = counter(map);
        printf("# runs for 100 ms of task-clock at 1 kHz: %llu\n", (unsigned long long)runs);
        /* 100 expected: the event and the spin both count this thread's
         * CPU, so host load cannot move it; only the attachment can */
        UNIT_CHECK("the program ran on the event's overflows (50..150 of 100)",
                   runs >= 50 && runs <= 150);
        close(ev);
    }
    close(prog);
    close(map);
}

/* fk_bpf_usable probes once per process: a child that has dropped its
 * capabilities, so that a probe of its own would fail, still gets the
 * answer (and reason) probed before. */
static void usable_cached(void)
{
    char err[256] = "";
    bool ok = fk_bpf_usable(err, sizeof err);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
        struct __user_cap_data_struct caps[2];
        if (syscall(SYS_capget, &hdr, caps) != 0)
            _exit(3);
        caps[0].effective = caps[1].effective = 0;
        if (syscall(SYS_capset, &hdr, caps) != 0)
            _exit(3);
        struct fk_bpf_builder b;
        fk_bpf_builder_init(&b);
        fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
        fk_bpf_emit(&b, FK_BPF_EXIT());
        int prog;
        char why[256] = "", again[256] = "";
        bool loads = fk_bpf_prog_load(&b, BPF_PROG_TYPE_PERF_EVENT, "fk_unit_nocap", &prog, why,
                                      sizeof why);
        if (loads)
            _exit(2);   /* a probe would not fail here: the check proves nothing */
        bool cached = fk_bpf_usable(again, sizeof again);
        _exit(cached == ok && (ok || !strcmp(err, again)) ? 0 : 1);
    }
    int st = 0;
    bool reaped = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st);
    int code = reaped ? WEXITSTATUS(st) : -1;
    printf("# usable %d; child without capabilities: exit %d (0 cached answer, 1 probed anew, "
           "2 loads a program anyway, 3 capset failed)\n", (int)ok, code);
    UNIT_CHECK("the answer is probed once: kept after the capabilities to probe are gone",
               code == 0);
}

/* fork() a child that exits at once; its pid after reaping, or -1 */
static pid_t fork_one(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return pid;
}

/* The number of the last pid given out in this pid namespace, or -1. */
static long last_pid(void)
{
    FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* The next 64 pids marked with marker in map, a child forked until one is
 * among them (5 tries): its pid (the first marked in *first), or -1. No
 * pid at or past limit is marked (0: none). */
static pid_t marked_child(int map, const void *marker, long limit, long *first)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        long last = last_pid();
        if (last < 0 || (limit > 0 && last + 64 >= limit))
            return -1;
        for (long p = last + 1; p <= last + 64; p++) {
            uint32_t k = (uint32_t)p;
            bpf_map_update_elem(map, &k, marker, BPF_ANY);
        }
        pid_t child = fork_one();
        *first = last + 1;
        if (child > last && child <= last + 64)
            return child;
    }
    return -1;
}

/* fk_bpf_fork_follower on real forks of this process: while this tgid is
 * in the map, the child goes in with its fork time (or a flag 1); once
 * this tgid is out, the child's number -- put in beforehand, with a
 * marker, for the next pids -- comes out (DELETE) or keeps its marker
 * (KEEP). */
static void fork_follower(enum fk_bpf_fork_value value, enum fk_bpf_fork_outsiders outsiders)
{
    bool timed = value == FK_BPF_FORK_TIME, del = outsiders == FK_BPF_FORK_DELETE;
    char what[160], err[256] = "";
    const char *mode = timed ? (del ? "time, delete" : "time, keep")
                             : (del ? "flag, delete" : "flag, keep");
    int map, prog, ev;
    uint32_t vsize = timed ? 8 : 1;
    if (!fk_bpf_map_create(BPF_MAP_TYPE_HASH, "fk_unit_tree", 4, vsize, 1024, 0, &map, err,
                           sizeof err)) {
        UNIT_CHECK("a hash map for the fork follower", false);
        printf("# %s\n", err);
        return;
    }
    bool made = fk_bpf_fork_follower(map, value, outsiders, -1, "fk_unit_fork", &prog, &ev, err,
                                     sizeof err);
    snprintf(what, sizeof what, "fork follower (%s): loads and attaches", mode);
    UNIT_CHECK(what, made && prog >= 0 && ev >= 0);
    if (!made) {
        printf("# %s\n", err);
        close(map);
        return;
    }
    /* a member's child */
    uint32_t k = (uint32_t)getpid();
    uint64_t v = 0, marker = timed ? 7 : 2;
    bpf_map_update_elem(map, &k, &v, BPF_ANY);
    uint64_t t0 = fk_now_ns();
    pid_t child = fork_one();
    uint64_t t1 = fk_now_ns();
    k = (uint32_t)child;
    v = 0;
    bool in = child > 0 && bpf_map_lookup_elem(map, &k, &v) == 0;
    printf("# %s: member's child %d %s, value %llu (forked within [%llu, %llu])\n", mode,
           (int)child, in ? "in" : "absent", (unsigned long long)v, (unsigned long long)t0,
           (unsigned long long)t1);
    snprintf(what, sizeof what, "fork follower (%s): a member's child goes in with %s", mode,
             timed ? "its fork time" : "the flag 1");
    UNIT_CHECK(what, in && (timed ? v >= t0 && v <= t1 : v == 1));
    /* an outsider's child (this process, once out of the map) */
    k = (uint32_t)getpid();
    bpf_map_delete_elem(map, &k);
    k = (uint32_t)child;
    bpf_map_delete_elem(map, &k);
    long first = 0;
    child = marked_child(map, &marker, 0, &first);
    bool ranged = child > 0;
    k = (uint32_t)child;
    v = 0;
    bool gone = bpf_map_lookup_elem(map, &k, &v) != 0;
    printf("# %s: outsider's child %d (marked %ld..%ld): %s, value %llu\n", mode, (int)child,
           first, first + 63, gone ? "absent" : "in", (unsigned long long)v);
    snprintf(what, sizeof what, "fork follower (%s): an outsider's child's number %s", mode,
             del ? "comes out" : "keeps its marker");
    UNIT_CHECK(what, ranged && (del ? gone : !gone && v == marker));
    close(ev);
    close(prog);
    close(map);
}

/* The same with an array of a byte per pid (FK_BPF_FORK_FLAG_ARRAY, as
 * capture/swtime.c keeps the processes it times): every pid has an entry,
 * so a member is one whose byte is not 0 -- this process with its byte 0
 * is an outsider, and its child keeps its marker -- and deleting
 * outsiders is refused (an array's entries cannot be deleted). */
static void fork_follower_array(void)
{
    char err[256] = "";
    long max = -1;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = -1;
        fclose(f);
    }
    if (max <= 0 || max > (1l << 22)) {
        UNIT_CHECK("fork follower (array): pid_max read", false);
        return;
    }
    int map, prog, ev;
    if (!fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_unit_pids", 4, 1, (uint32_t)max, 0, &map, err,
                           sizeof err)) {
        UNIT_CHECK("an array of a byte per pid for the fork follower", false);
        printf("# %s\n", err);
        return;
    }
    UNIT_CHECK("fork follower (array): deleting outsiders is refused",
               !fk_bpf_fork_follower(map, FK_BPF_FORK_FLAG_ARRAY, FK_BPF_FORK_DELETE, -1,
                                     "fk_unit_fork", &prog, &ev, err, sizeof err) &&
               prog < 0 && ev < 0 && strstr(err, "hashes only"));
    err[0] = 0;
    bool made = fk_bpf_fork_follower(map, FK_BPF_FORK_FLAG_ARRAY, FK_BPF_FORK_KEEP, -1,
                                     "fk_unit_fork", &prog, &ev, err, sizeof err);
    UNIT_CHECK("fork follower (array): loads and attaches", made && prog >= 0 && ev >= 0);
    if (!made) {
        printf("# %s\n", err);
        close(map);
        return;
    }
    uint32_t k = (uint32_t)getpid();
    uint8_t v = 1, marker = 2;
    bpf_map_update_elem(map, &k, &v, BPF_ANY);
    pid_t child = fork_one();
    k = (uint32_t)child;
    v = 0;
    bool looked = child > 0 && bpf_map_lookup_elem(map, &k, &v) == 0;
    printf("# array: member's child %d, byte %u\n", (int)child, v);
    UNIT_CHECK("fork follower (array): a member's child's byte is 1", looked && v == 1);
    k = (uint32_t)getpid();
    v = 0;
    bpf_map_update_elem(map, &k, &v, BPF_ANY);     /* out: its byte 0 */
    long first = 0;
    child = marked_child(map, &marker, max, &first);
    bool ranged = child > 0;
    k = (uint32_t)child;
    v = 0;
    bool kept = ranged && bpf_map_lookup_elem(map, &k, &v) == 0 && v == marker;
    printf("# array: outsider's child %d (marked %ld..%ld): byte %u\n", (int)child, first,
           first + 63, v);
    UNIT_CHECK("fork follower (array): an outsider (byte 0) is no member: its child keeps its "
               "marker", ranged && kept);
    close(ev);
    close(prog);
    close(map);
}

/* A map with no room for a member's child: the child is counted in the
 * full counter, not silently left out. */
static void fork_follower_full(void)
{
    char err[256] = "";
    int map, full, prog, ev;
    if (!fk_bpf_map_create(BPF_MAP_TYPE_HASH, "fk_unit_tree", 4, 8, 1, 0, &map, err, sizeof err) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_unit_full", 4, 8, 1, 0, &full, err,
                           sizeof err)) {
        UNIT_CHECK("maps for the full fork follower", false);
        printf("# %s\n", err);
        return;
    }
    bool made = fk_bpf_fork_follower(map, FK_BPF_FORK_TIME, FK_BPF_FORK_DELETE, full,
                                     "fk_unit_fork", &prog, &ev, err, sizeof err);
    UNIT_CHECK("fork follower with a full counter: loads and attaches", made);
    if (!made) {
        printf("# %s\n", err);
        close(map);
        close(full);
        return;
    }
    uint32_t k = (uint32_t)getpid();
    uint64_t v = 0;
    bpf_map_update_elem(map, &k, &v, BPF_ANY);      /* the map's one entry */
    pid_t a = fork_one(), b = fork_one();
    uint32_t ka = (uint32_t)a, kb = (uint32_t)b, zero = 0;
    uint64_t n = 0;
    bool absent = bpf_map_lookup_elem(map, &ka, &v) != 0 && bpf_map_lookup_elem(map, &kb, &v) != 0;
    bool read = bpf_map_lookup_elem(full, &zero, &n) == 0;
    printf("# a full map of 1: children %d %d %s, counted %llu\n", (int)a, (int)b,
           absent ? "absent" : "in", (unsigned long long)n);
    UNIT_CHECK("a full map: a member's two children are counted, not put in",
               absent && read && n == 2);
    close(ev);
    close(prog);
    close(full);
    close(map);
}

/* capture/bpftree with room for two: this process (from /proc) and its
 * first child fit; its next two children and one more process seeded
 * are counted as not followed. */
static void bpftree_full(void)
{
    char err[256] = "";
    struct fk_bpftree *t = fk_bpftree_new(2, err, sizeof err);
    UNIT_CHECK("bpftree: a tree of 2 is made", t);
    if (!t) {
        printf("# %s\n", err);
        return;
    }
    bool seeded = fk_bpftree_add(t, getpid());
    pid_t a = fork_one(), b = fork_one(), c = fork_one();
    bool in = fk_bpftree_has(t, a), out = !fk_bpftree_has(t, b) && !fk_bpftree_has(t, c);
    bool refused = !fk_bpftree_add(t, 1);
    uint64_t n = fk_bpftree_not_followed(t);
    printf("# bpftree of 2: seeded %d, child %d %s, children %d %d %s, pid 1 %s; not followed "
           "%llu\n", (int)seeded, (int)a, in ? "in" : "absent", (int)b, (int)c,
           out ? "absent" : "in", refused ? "refused" : "added", (unsigned long long)n);
    UNIT_CHECK("bpftree full: what had no room is counted (2 children, 1 seeded), the rest in",
               seeded && in && out && refused && n == 3);
    fk_bpftree_free(t);
}

/* capture/bpftree's memo: an answer serves the records written before
 * its look-up; a later record of the same pid (a new process may have it)
 * is looked up again. */
static void bpftree_memo(void)
{
    char err[256] = "";
    struct fk_bpftree *t = fk_bpftree_new(64, err, sizeof err);
    UNIT_CHECK("bpftree memo: a tree is made", t);
    if (!t) {
        printf("# %s\n", err);
        return;
    }
    struct fk_bpftree_memo m = { 0 };
    pid_t self = getpid();
    uint64_t before = fk_now_ns();
    bool out = !fk_bpftree_has_memo(t, &m, self, before);
    fk_bpftree_add(t, self);    /* as a member's fork would have, after the look-up */
    bool old = !fk_bpftree_has_memo(t, &m, self, before);
    bool again = fk_bpftree_has_memo(t, &m, self, fk_now_ns());
    bool other = !fk_bpftree_has_memo(t, &m, 1, 0);
    printf("# bpftree memo: outside %d, an earlier record %d, a later record %d, pid 1 %d\n",
           (int)out, (int)old, (int)again, (int)other);
    UNIT_CHECK("bpftree memo: an earlier record keeps the answer, a later one is looked up again",
               out && old && again && other);
    fk_bpftree_free(t);
}

int main(void)
{
    unit_name = "unit-bpf";
    loop_and_skip();
    imm64();
    map_by_fd();
    refusals();
    perf_attach();
    usable_cached();
    fork_follower(FK_BPF_FORK_TIME, FK_BPF_FORK_DELETE);
    fork_follower(FK_BPF_FORK_FLAG, FK_BPF_FORK_KEEP);
    fork_follower_array();
    fork_follower_full();
    bpftree_full();
    bpftree_memo();
    return UNIT_END();
}
