/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading /proc: see procfs.h. */
#include "util/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

bool fk_proc_for_each_pid(bool (*fn)(pid_t pid, void *ctx), void *ctx)
{
    DIR *dir = opendir("/proc");
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
