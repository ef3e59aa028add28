/* SPDX-License-Identifier: GPL-2.0-only */
/* Opening files a profiled process controls: its perf-PID.map, the files
 * it mapped, debug files inside its root. flamekit runs as root and any
 * such path may be a FIFO (a blocking open hangs the capture), a device
 * (opening /dev/watchdog has effects), a symlink out of a container into
 * the host, or a huge or endless file.
 *
 * Invariants of every fd this returns:
 *   - the path was resolved inside the given root (openat2 RESOLVE_IN_ROOT
 *     with RESOLVE_NO_MAGICLINKS; a lexical walk that never leaves the root
 *     where openat2 is missing), never through a magic link;
 *   - nothing but a regular file was ever opened for reading: the path is
 *     first opened O_PATH (no side effects, no blocking), checked with
 *     fstat, and only then reopened O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC;
 *   - its size is within max_size, its owner within the allowed ones. */
#ifndef FK_SAFEOPEN_H
#define FK_SAFEOPEN_H

#include "fk.h"

#include <sys/stat.h>
#include <sys/types.h>

enum {
    FK_SAFE_FOLLOW = 1,        /* the last component may be a symlink (resolved in the root) */
    FK_SAFE_NO_SYMLINKS = 2,   /* no symlink anywhere (paths the kernel printed, e.g. maps) */
};

struct fk_safe_opts {
    unsigned flags;
    uint64_t max_size;         /* larger files are refused; 0: no limit */
    const uid_t *owners;       /* when non-NULL: owner must be root or one of these */
    size_t nowners;
};

/* A process's root directory as an O_PATH fd: /proc/PID/root (a magic
 * link we follow on purpose: it is the kernel's record of that root), or
 * our own "/" when pid is 0. -1 when the process is gone. *host (may be
 * NULL) tells whether it is the same directory as our own root. */
int fk_root_open(pid_t pid, bool *host);

/* Open path (absolute or relative, as the process sees it) inside rootfd
 * under the invariants above. Returns a read-only fd, or -1 with errno set
 * and *why (may be NULL) a short static reason for a message. st (may be
 * NULL) receives the file's status. */
int fk_safe_openat(int rootfd, const char *path, const struct fk_safe_opts *o,
                   struct stat *st, const char **why);

/* Open a path that is a magic link by design, such as
 * /proc/PID/map_files/START-END: the kernel pins the mapped file there,
 * which is how a deleted or replaced binary stays readable. Same checks as
 * fk_safe_openat (O_PATH first, regular files only, size, owners). */
int fk_safe_open_pinned(const char *procpath, const struct fk_safe_opts *o, struct stat *st,
                        const char **why);

/* The real and effective uid of a running process (from /proc/PID/status):
 * the owners allowed for a file it writes for us, such as its perf map
 * (the rule perf applies: the process's user or root). Returns how many
 * were stored in uids[0..1]; 0 when the process is gone. */
size_t fk_proc_uids(pid_t pid, uid_t uids[2]);

/* Tests: never use openat2 (exercise the manual walk). */
extern bool fk_safe_open_walk_only;

#endif
