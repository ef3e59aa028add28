/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading /proc: see procfs.h. */
#include "util/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
