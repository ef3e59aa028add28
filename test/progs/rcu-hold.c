/* SPDX-License-Identifier: GPL-2.0-only */
/* Holds every RCU tasks-trace grace period on the host for a while, so a
 * test can show that a command does not wait for one (t-offcpu: closing a
 * tracepoint event with a BPF program attached waits for one in
 * perf_event_detach_bpf_prog, and one took 15 s with both CPUs busy).
 *
 *   rcu-hold MAX_SECS
 *
 * A sleepable BPF program (BPF_PROG_TYPE_SYSCALL, run by BPF_PROG_TEST_RUN
 * inside rcu_read_lock_trace) copies 8 bytes from a page registered with
 * userfaultfd: the copy's fault waits for this process to fill the page,
 * and every synchronize_rcu_tasks_trace() on the host waits for that
 * reader. Prints "held" once the program is blocked; fills the page (the
 * grace period ends) when stdin reaches EOF or after MAX_SECS, whichever
 * comes first, then prints "released" and exits 0. Exit 2 with
 * "unsupported: WHY" when the kernel cannot (no syscall programs, no
 * userfaultfd): the caller skips. Killed, it releases too: closing the
 * userfaultfd wakes the fault with an error. Raw bpf(2): no libbpf. */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int prog = -1;
static void *page;

static int sys_bpf(int cmd, union bpf_attr *a)
{
    return (int)syscall(SYS_bpf, cmd, a, sizeof *a);
}

static int unsupported(const char *what)
{
    printf("unsupported: %s: %s\n", what, strerror(errno));
    return 2;
}

static void *run(void *arg)
{
    (void)arg;
    uint64_t ctx = (uint64_t)(uintptr_t)page;
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.test.prog_fd = (uint32_t)prog;
    a.test.ctx_in = (uint64_t)(uintptr_t)&ctx;
    a.test.ctx_size_in = sizeof ctx;
    if (sys_bpf(BPF_PROG_TEST_RUN, &a) != 0)
        fprintf(stderr, "rcu-hold: running the program: %s\n", strerror(errno));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || atoi(argv[1]) <= 0) {
        fprintf(stderr, "usage: rcu-hold MAX_SECS\n");
        return 1;
    }
    int max_secs = atoi(argv[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* r3 = *(u64 *)ctx; r1 = fp - 8; r2 = 8; bpf_copy_from_user; r0 = 0 */
    struct bpf_insn insns[] = {
        { .code = BPF_LDX | BPF_MEM | BPF_DW, .dst_reg = 3, .src_reg = 1 },
        { .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = 1, .src_reg = 10 },
        { .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = 1, .imm = -8 },
        { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 2, .imm = 8 },
        { .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_copy_from_user },
        { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
        { .code = BPF_JMP | BPF_EXIT },
    };
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_SYSCALL;
    a.insns = (uint64_t)(uintptr_t)insns;
    a.insn_cnt = sizeof insns / sizeof *insns;
    a.license = (uint64_t)(uintptr_t)"GPL";
    a.prog_flags = BPF_F_SLEEPABLE;
    prog = sys_bpf(BPF_PROG_LOAD, &a);
    if (prog < 0)
        return unsupported("loading a sleepable syscall program");
    int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    struct uffdio_api api = { .api = UFFD_API };
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0)
        return unsupported("userfaultfd");
    long ps = sysconf(_SC_PAGESIZE);
    page = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return unsupported("mmap");
    struct uffdio_register reg = {
        .range = { (uint64_t)(uintptr_t)page, (uint64_t)ps }, .mode = UFFDIO_REGISTER_MODE_MISSING,
    };
    if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0)
        return unsupported("registering a page with userfaultfd");
    pthread_t t;
    if (pthread_create(&t, NULL, run, NULL) != 0) {
        fprintf(stderr, "rcu-hold: no thread\n");
        return 1;
    }
    struct pollfd p = { uffd, POLLIN, 0 };
    struct uffd_msg m;
    if (poll(&p, 1, 10000) != 1 || read(uffd, &m, sizeof m) != (ssize_t)sizeof m ||
        m.event != UFFD_EVENT_PAGEFAULT) {
        printf("unsupported: the program's copy never faulted on the page\n");
        _exit(2);   /* (the thread may still be in the kernel) */
    }
    printf("held\n");
    /* until stdin's EOF or max_secs */
    time_t end = time(NULL) + max_secs;
    for (time_t now; (now = time(NULL)) < end;) {
        struct pollfd in = { 0, POLLIN, 0 };
        int n = poll(&in, 1, (int)(end - now) * 1000);
        char buf[64];
        if (n > 0 && read(0, buf, sizeof buf) <= 0)
            break;
        if (n < 0 && errno != EINTR)
            break;
    }
    static char src[65536] __attribute__((aligned(65536)));
    struct uffdio_copy c = { .dst = (uint64_t)(uintptr_t)page, .src = (uint64_t)(uintptr_t)src,
                             .len = (uint64_t)ps };
    if (ioctl(uffd, UFFDIO_COPY, &c) != 0) {
        fprintf(stderr, "rcu-hold: filling the page: %s\n", strerror(errno));
        return 1;
    }
    pthread_join(t, NULL);
    printf("released\n");
    return 0;
}
