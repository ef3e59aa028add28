/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading the kernel's own files under /proc: the processes that exist.
 * What /proc says about a process is made by the kernel, but a process
 * may exit between two reads: every reader reports "gone" as a value. */
#ifndef FK_PROCFS_H
#define FK_PROCFS_H

#include <stdbool.h>
#include <sys/types.h>

/* Call fn(pid, ctx) for every process in /proc, in directory order, until
 * fn returns false. Returns false (errno set) if /proc cannot be listed. */
bool fk_proc_for_each_pid(bool (*fn)(pid_t pid, void *ctx), void *ctx);
/* The same for every thread of process pid (/proc/PID/task); false (errno
 * set) when the process is gone. */
bool fk_proc_for_each_tid(pid_t pid, bool (*fn)(pid_t tid, void *ctx), void *ctx);
/* The last number on the line "KEY:" of a kernel status file (path:
 * /proc/PID/status or /proc/PID/task/TID/status), 0 when the line is
 * missing or the file unreadable (the process gone). For NStgid and NSpid
 * that is the id in the process's own (innermost) pid namespace. */
unsigned long long fk_proc_status_last(const char *path, const char *key);
/* The numbers on that line, in order, into v[0..max): how many were there
 * (0 when the line is missing or the file unreadable). "Uid" gives the
 * real, effective, saved and filesystem uids. */
size_t fk_proc_status_numbers(const char *path, const char *key, unsigned long long *v,
                              size_t max);
/* Thread tid of process pid's context switches so far, voluntary and
 * involuntary (/proc/PID/task/TID/status, one read); false when it is
 * gone or the file unreadable. */
bool fk_proc_task_switches(pid_t pid, pid_t tid, unsigned long long *n);
/* Thread tid's time on CPU so far (the scheduler's sum_exec_runtime, ns:
 * /proc/TID/schedstat): false when it cannot be read (gone, no schedstat). */
bool fk_proc_task_cpu_ns(pid_t tid, unsigned long long *ns);
/* When process pid started (its fork), in nanoseconds of CLOCK_BOOTTIME,
 * to the kernel's clock tick (/proc/PID/stat field 22, rounded down); false
 * when the process is gone or the file unreadable. */
bool fk_proc_start_boot_ns(pid_t pid, unsigned long long *ns);
/* The fields of a stat file the process tree needs: the state letter,
 * the parent and the kernel's task flags (fields 3, 4 and 9). */
struct fk_proc_stat {
    char state;
    pid_t ppid;
    unsigned flags;
};
/* The task has begun to exit (include/linux/sched.h: set by do_exit
 * before it writes perf's EXIT record and long before the task turns
 * zombie). */
#define FK_PF_EXITING 0x4u
/* A kernel thread (PF_KTHREAD): its name is the kernel's, where a user
 * process can take any name. */
#define FK_PF_KTHREAD 0x00200000u
/* Process pid's stat (tid 0: /proc/PID/stat, the leader's) or its thread
 * tid's (/proc/PID/task/TID/stat); false when gone or unreadable. */
bool fk_proc_stat(pid_t pid, pid_t tid, struct fk_proc_stat *st);
/* Thread tid of process pid's state letter (/proc/PID/task/TID/stat: 'R',
 * 'S', 'D', 'Z' for a zombie -- a leader that ended with pthread_exit
 * stays listed so until its process exits -- ...); 0 when it is gone or
 * the file unreadable. */
char fk_proc_task_state(pid_t pid, pid_t tid);

#endif
