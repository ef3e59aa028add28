/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading /proc: see procfs.h. */
#include "util/procfs.h"
#include "util/fk.h"

#include <dirent.h>
#include <unistd.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every numeric entry of dir, in directory order, until fn says stop. */
static bool for_each_number(const char *path, bool (*fn)(pid_t id, void *ctx), void *ctx)
{
    DIR *dir = opendir(path);
    if (!dir)
        return false;
    struct dirent *de;
    while ((de = readdir(dir))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || pid > INT32_MAX)
            continue;
        if (!fn((pid_t)pid, ctx))
            break;
    }
    int saved = errno;
    closedir(dir);
    errno = saved;
    return true;
}

bool fk_proc_for_each_pid(bool (*fn)(pid_t pid, void *ctx), void *ctx)
{
    return for_each_number("/proc", fn, ctx);
}

bool fk_proc_for_each_tid(pid_t pid, bool (*fn)(pid_t tid, void *ctx), void *ctx)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    return for_each_number(path, fn, ctx);
}

/* The text after "KEY:" on its line of a status file's text (the key
 * matched whole, at a line's start), up to and with its newline; NULL
 * when the line is missing. */
static char *status_find(char *buf, const char *key)
{
    size_t klen = strlen(key);
    for (char *line = buf; line && *line;) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':')
            return line + klen + 1;
        char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : NULL;
    }
    return NULL;
}

/* The same, the line cut at its newline. */
static char *status_line(char *buf, const char *key)
{
    char *v = status_find(buf, key);
    char *nl = v ? strchr(v, '\n') : NULL;
    if (nl)
        *nl = 0;
    return v;
}

/* A status file is about 1.5 KiB. */
#define STATUS_MAX 8192

unsigned long long fk_proc_status_last(const char *path, const char *key)
{
    char buf[STATUS_MAX];
    char *line = fk_read_small(path, buf, sizeof buf) > 0 ? status_line(buf, key) : NULL;
    if (!line)
        return 0;
    char *last = strrchr(line, '\t');
    return strtoull(last ? last + 1 : line, NULL, 10);
}

size_t fk_proc_status_numbers(const char *path, const char *key, unsigned long long *v,
                              size_t max)
{
    char buf[STATUS_MAX];
    char *line = fk_read_small(path, buf, sizeof buf) > 0 ? status_line(buf, key) : NULL;
    size_t n = 0;
    while (line && n < max) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(line, &end, 10);
        if (end == line || errno)
            break;
        v[n++] = x;
        line = end;
    }
    return n;
}

bool fk_proc_task_switches(pid_t pid, pid_t tid, unsigned long long *n)
{
    char path[80], buf[STATUS_MAX];
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, (int)tid);
    if (fk_read_small(path, buf, sizeof buf) <= 0)
        return false;
    char *v = status_find(buf, "voluntary_ctxt_switches");
    char *nv = status_find(buf, "nonvoluntary_ctxt_switches");
    if (!v && !nv)
        return false;
    *n = (v ? strtoull(v, NULL, 10) : 0) + (nv ? strtoull(nv, NULL, 10) : 0);
    return true;
}

bool fk_proc_task_cpu_ns(pid_t tid, unsigned long long *ns)
{
    /* /proc/TID (a thread's own directory, listed or not): its schedstat
     * opens with the scheduler's sum_exec_runtime, in ns */
    char path[48], buf[128];
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)tid);
    if (tid <= 0 || fk_read_small(path, buf, sizeof buf) <= 0)
        return false;
    char *end;
    errno = 0;
    *ns = strtoull(buf, &end, 10);
    return end != buf && !errno;
}

/* A stat file ("pid (comm) state ...") read into buf: where its fields
 * after the comm begin (at the ')' that ends it: the comm may hold
 * anything, the last ')' is its end), or NULL when it cannot be read. */
static char *read_stat(const char *path, char *buf, size_t size)
{
    if (fk_read_small(path, buf, size) <= 0)
        return NULL;
    char *p = strrchr(buf, ')');
    return p ? p + 1 : NULL;
}

bool fk_proc_start_boot_ns(pid_t pid, unsigned long long *ns)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    /* starttime is the 20th field after the comm */
    char *p = read_stat(path, buf, sizeof buf);
    if (!p)
        return false;
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return false;
    }
    char *end;
    errno = 0;
    unsigned long long ticks = strtoull(p + 1, &end, 10);
    long hz = sysconf(_SC_CLK_TCK);
    if (end == p + 1 || errno || hz <= 0 || ticks > UINT64_MAX / 1000000000ull)
        return false;
    *ns = ticks * (1000000000ull / (unsigned long long)hz);
    return true;
}

bool fk_proc_stat(pid_t pid, pid_t tid, struct fk_proc_stat *st)
{
    char path[80], buf[1024];
    if (tid > 0)
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    else
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    /* " state ppid pgrp session tty_nr tpgid flags ..." */
    char *p = read_stat(path, buf, sizeof buf);
    char state;
    long ppid;
    unsigned flags;
    if (!p || sscanf(p, " %c %ld %*d %*d %*d %*d %u", &state, &ppid, &flags) != 3 || state <= ' ' ||
        ppid < 0 || ppid > INT32_MAX)
        return false;
    *st = (struct fk_proc_stat){ state, (pid_t)ppid, flags };
    return true;
}

char fk_proc_task_state(pid_t pid, pid_t tid)
{
    struct fk_proc_stat st;
    return fk_proc_stat(pid, tid, &st) ? st.state : 0;
}
