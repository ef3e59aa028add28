/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading /proc: see procfs.h. */
#include "util/procfs.h"
#include "util/fk.h"

#include <dirent.h>
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

unsigned long long fk_proc_status_last(const char *path, const char *key)
{
    char buf[8192];     /* a status file is about 1.5 KiB */
    if (fk_read_small(path, buf, sizeof buf) <= 0)
        return 0;
    size_t klen = strlen(key);
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            char *last = strrchr(line, '\t');
            return strtoull(last ? last + 1 : line + klen + 1, NULL, 10);
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}
