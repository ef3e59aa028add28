/* SPDX-License-Identifier: GPL-2.0-only */
/* The git upload-pack child: its own process group (so a disconnect kills
 * pack-objects too), stdin from a memfd holding the request body. */
#include "fetchd/fetchd.h"
#include "cmd/term.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

bool fetchd_child_start(struct fetchd_child *c, enum fetchd_op op, const char *gitdir,
                    const void *body, size_t len)
{
    c->pid = -1;
    c->out = -1;
    int in = memfd_create("fetchd-body", MFD_CLOEXEC);
    if (in < 0) {
        fk_error("memfd_create: %s", strerror(errno));
        return false;
    }
    const char *p = body;
    for (size_t off = 0; off < len; ) {
        ssize_t w = write(in, p + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            fk_error("writing request body: %s", strerror(errno));
            close(in);
            return false;
        }
        off += (size_t)w;
    }
    if (lseek(in, 0, SEEK_SET) < 0) {
        close(in);
        return false;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        fk_error("pipe: %s", strerror(errno));
        close(in);
        return false;
    }
    /* A large pipe lets splice()/tee() move big pieces at once. */
    (void)fcntl(pfd[0], F_SETPIPE_SZ, 1 << 20);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in, 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawnattr_init(&at);
    posix_spawnattr_setpgroup(&at, 0);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    posix_spawnattr_setsigdefault(&at, &def);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    const char *argv[6];
    int i = 0;
    argv[i++] = "git";
    argv[i++] = "upload-pack";
    argv[i++] = "--stateless-rpc";
    if (op == FETCHD_OP_ADVERTISE)
        argv[i++] = "--advertise-refs";
    argv[i++] = gitdir;
    argv[i] = NULL;
    pid_t pid;
    /* exec's argv type predates const; it writes nothing */
    int rc = posix_spawnp(&pid, "git", &fa, &at, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(in);
    close(pfd[1]);
    if (rc != 0) {
        fk_error("cannot run git: %s", strerror(rc));
        close(pfd[0]);
        return false;
    }
    c->pid = pid;
    c->out = pfd[0];
    return true;
}

static int reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return st;
}

bool fetchd_child_finish(struct fetchd_child *c)
{
    if (c->out >= 0)
        close(c->out);
    c->out = -1;
    if (c->pid <= 0)
        return false;
    int st = reap(c->pid);
    c->pid = -1;
    return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

void fetchd_child_kill(struct fetchd_child *c)
{
    if (c->out >= 0)
        close(c->out);
    c->out = -1;
    if (c->pid > 0) {
        kill(-c->pid, SIGKILL);
        reap(c->pid);
        c->pid = -1;
    }
}
