/* SPDX-License-Identifier: GPL-2.0-only */
/* seccomp-deny WHAT CMD [ARGS...]: run CMD with one kernel facility
 * refused (EPERM) by a seccomp filter, as a locked-down host refuses it:
 *   set-bpf   ioctl(PERF_EVENT_IOC_SET_BPF): BPF programs load, but none can
 *             be attached to a perf event
 *   bpf       the bpf(2) system call: no map, no program
 * For the fallback tests of flamekit offcpu (its switch-ins then come
 * from the kernel's switch records, and the metadata says why). The
 * filter is inherited by CMD and everything it starts. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp-deny: add this architecture's AUDIT_ARCH"
#endif

#define DENY BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "set-bpf") && strcmp(argv[1], "bpf"))) {
        fprintf(stderr, "usage: seccomp-deny set-bpf|bpf CMD [ARGS...]\n");
        return 2;
    }
    bool by_ioctl = !strcmp(argv[1], "set-bpf");
    struct sock_filter filter[] = {
        LOAD(arch),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        ALLOW,
        LOAD(nr),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, by_ioctl ? __NR_ioctl : __NR_bpf, 1, 0),
        ALLOW,
        /* bpf(2): refused; ioctl: only PERF_EVENT_IOC_SET_BPF (the
         * request's low 32 bits: all of it) */
        BPF_JUMP(BPF_JMP | BPF_JA, by_ioctl ? 0 : 2, 0, 0),
        LOAD(args[1]),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)PERF_EVENT_IOC_SET_BPF, 0, 1),
        DENY,
        ALLOW,
    };
    struct sock_fprog prog = { .len = sizeof filter / sizeof *filter, .filter = filter };
    /* (no_new_privs: allowed without CAP_SYS_ADMIN, and harmless here) */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
        fprintf(stderr, "seccomp-deny: installing the filter: %s\n", strerror(errno));
        return 1;
    }
    execvp(argv[2], argv + 2);
    fprintf(stderr, "seccomp-deny: %s: %s\n", argv[2], strerror(errno));
    return 127;
}
