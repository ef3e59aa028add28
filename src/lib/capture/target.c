/* SPDX-License-Identifier: GPL-2.0-only */
/* Capture targets: resolve what the user named into something the engine
 * can open events on. */
#include "capture/target.h"
#include "util/buf.h"
#include "util/procfs.h"
#include "util/result.h"
#include "util/safeopen.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* The file-name part of a scope: the result contract's word (result.h). */
static char *scope_part(const char *s)
{
    return fk_result_word(s, 64);
}

bool fk_target_host(struct fk_target *t)
{
    memset(t, 0, sizeof *t);
    t->kind = FK_TARGET_HOST;
    t->scope = fk_strdup("host");
    t->desc = fk_strdup("host (all CPUs, all processes)");
    return true;
}

/* Thread group id of pid, or -1 if there is no such task. */
static pid_t tgid_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    unsigned long long tgid = fk_proc_status_last(path, "Tgid");
    return tgid > 0 && tgid <= INT_MAX ? (pid_t)tgid : -1;
}

bool fk_target_pid_list(const char *list, pid_t **pids, size_t *npids, char *err, size_t errlen)
{
    pid_t *v = NULL;
    size_t n = 0, cap = 0;
    char *copy = fk_strdup(list), *save = NULL;
    bool ok = true;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t u;
        if (!fk_parse_u64(tok, &u) || u == 0 || u > INT_MAX) {
            snprintf(err, errlen, "'%s' is not a process id; give PID[,PID...]", tok);
            ok = false;
            break;
        }
        if (pids) {
            v = fk_grow(v, &cap, n + 1, sizeof *v);
            v[n] = (pid_t)u;
        }
        n++;
    }
    free(copy);
    if (ok && n == 0) {
        snprintf(err, errlen, "no process id given; give PID[,PID...]");
        ok = false;
    }
    if (!ok || !pids) {
        free(v);
        return ok;
    }
    *pids = v;
    *npids = n;
    return true;
}

bool fk_target_pids(struct fk_target *t, const char *list, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->kind = FK_TARGET_PID;
    pid_t *given;
    size_t ngiven;
    if (!fk_target_pid_list(list, &given, &ngiven, err, errlen))
        return false;
    struct fk_buf scope = FK_BUF_INIT, desc = FK_BUF_INIT;
    fk_buf_adds(&scope, "pid");
    fk_buf_adds(&desc, "pid");
    size_t cap = 0;
    bool ok = true;
    for (size_t k = 0; k < ngiven; k++) {
        pid_t tgid = tgid_of(given[k]);
        if (tgid <= 0) {
            snprintf(err, errlen, "no process with pid %d; check it with 'ps -p %d'",
                     (int)given[k], (int)given[k]);
            ok = false;
            break;
        }
        bool dup = false;
        for (size_t i = 0; i < t->npids; i++)
            dup |= t->pids[i] == tgid;
        if (dup)
            continue;
        t->pids = fk_grow(t->pids, &cap, t->npids + 1, sizeof *t->pids);
        t->pids[t->npids++] = tgid;
        fk_buf_printf(&scope, "-%d", (int)tgid);
        fk_buf_printf(&desc, "%s%d", t->npids == 1 ? " " : ",", (int)tgid);
    }
    free(given);
    if (!ok) {
        fk_buf_free(&scope);
        fk_buf_free(&desc);
        fk_target_free(t);
        return false;
    }
    fk_buf_adds(&desc, " (all threads, children forked during the capture)");
    t->scope = fk_strdup(fk_buf_cstr(&scope));
    t->desc = fk_strdup(fk_buf_cstr(&desc));
    fk_buf_free(&scope);
    fk_buf_free(&desc);
    return true;
}

bool fk_target_user(struct fk_target *t, const char *user, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->kind = FK_TARGET_USER;
    struct passwd *pw = getpwnam(user);
    uint64_t v;
    if (pw) {
        t->uid = pw->pw_uid;
        t->user = fk_strdup(pw->pw_name);
    } else if (fk_parse_u64(user, &v) && v < UINT32_MAX) {
        t->uid = (uid_t)v;
        pw = getpwuid(t->uid);
        t->user = fk_strdup(pw ? pw->pw_name : user);
    } else {
        snprintf(err, errlen, "no user '%s'; give a user name or a numeric uid", user);
        return false;
    }
    char *part = scope_part(t->user);
    t->scope = fk_asprintf("user-%s", part);
    free(part);
    t->desc = fk_asprintf("user %s (uid %u; processes with that effective uid, all CPUs)",
                          t->user, (unsigned)t->uid);
    return true;
}

/* Mount point of the cgroup2 hierarchy, from /proc/self/mountinfo. */
static char *cgroup2_mount(void)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return NULL;
    char *line = NULL, *found = NULL;
    size_t cap = 0;
    while (!found && getline(&line, &cap, f) > 0) {
        char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
            continue;
        /* fields: id parent maj:min root mountpoint ... */
        char *save = NULL, *fld = strtok_r(line, " ", &save);
        for (int i = 0; fld && i < 4; i++)
            fld = strtok_r(NULL, " ", &save);
        if (fld)
            found = fk_strdup(fld);
    }
    free(line);
    fclose(f);
    return found;
}

static bool is_cgroup2_dir(const char *path)
{
    struct statfs sf;
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && statfs(path, &sf) == 0 &&
           sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* Whether the cgroup path component c[0..n) names id: the component
 * itself, or a full container id (64 hex digits) in it as runtimes write
 * it, between a non-alphanumeric byte or its start and ".scope" or its
 * end (docker-ID.scope, libpod-ID.scope, cri-containerd-ID.scope, ID).
 * Never a part of a name: "slice" names no "system.slice". */
static bool component_names(const char *c, size_t n, const char *id)
{
    size_t il = strlen(id);
    if (n == il && !memcmp(c, id, n))
        return true;
    if (il != 64 || strspn(id, "0123456789abcdef") != 64)
        return false;
    for (size_t i = 0; i + il <= n; i++) {
        if (memcmp(c + i, id, il) || (i && isalnum((unsigned char)c[i - 1])))
            continue;
        const char *rest = c + i + il;
        size_t left = n - i - il;
        if (!left || (left == 6 && !memcmp(rest, ".scope", 6)))
            return true;
    }
    return false;
}

/* The cgroup v2 path of pid ("/a/b", below the cgroup2 mount) from
 * /proc/PID/cgroup's "0::" line (0 for self), or NULL. Whole lines: the
 * kernel bounds them by PATH_MAX, and a fixed buffer would split a long
 * path, whose rest could pose as a line. */
static char *proc_cgroup2_path(pid_t pid)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/cgroup");
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *line = NULL, *found = NULL;
    size_t cap = 0;
    while (!found && getline(&line, &cap, f) > 0)
        if (!strncmp(line, "0::/", 4)) {
            line[strcspn(line, "\n")] = 0;
            found = fk_strdup(line + 3);
        }
    free(line);
    fclose(f);
    return found;
}

/* Container id -> the cgroup path down to the component naming it
 * (component_names), from /proc/ANY/cgroup. */
struct container_search {
    const char *id;
    char *found;
};

/* fk_proc_for_each_pid's step: the cgroup of pid, cut after the first
 * component named by the id, if one is. */
static bool container_step(pid_t pid, void *ctx)
{
    struct container_search *cs = ctx;
    char *p = proc_cgroup2_path(pid);
    for (char *c = p; c && *c == '/' && !cs->found;) {
        size_t n = strcspn(c + 1, "/");
        if (component_names(c + 1, n, cs->id))
            cs->found = fk_strndup(p, (size_t)(c + 1 + n - p));
        c += 1 + n;
    }
    free(p);
    return !cs->found;
}

static char *cgroup_of_container(const char *id)
{
    struct container_search cs = { id, NULL };
    fk_proc_for_each_pid(container_step, &cs);
    return cs.found;
}

bool fk_target_cgroup(struct fk_target *t, const char *arg, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->kind = FK_TARGET_CGROUP;
    char *mnt = cgroup2_mount();
    if (!mnt) {
        snprintf(err, errlen, "no cgroup2 file system is mounted; mount one with "
                 "'mount -t cgroup2 none /sys/fs/cgroup' or use 'flamekit pid'");
        return false;
    }
    char *dir = NULL;
    const char *how = "path";
    char real[PATH_MAX];
    if (arg[0] == '/' && is_cgroup2_dir(arg) && realpath(arg, real)) {
        dir = fk_strdup(real);
    } else {
        char *rel = fk_asprintf("%s/%s", mnt, arg[0] == '/' ? arg + 1 : arg);
        if (is_cgroup2_dir(rel) && realpath(rel, real)) {
            dir = fk_strdup(real);
        } else {
            char *c = strchr(arg, '/') ? NULL : cgroup_of_container(arg);
            if (c) {
                free(rel);
                rel = fk_asprintf("%s%s", mnt, c);
                free(c);
                if (is_cgroup2_dir(rel) && realpath(rel, real)) {
                    dir = fk_strdup(real);
                    how = "container";
                }
            }
        }
        free(rel);
    }
    size_t ml = strlen(mnt);
    if (!dir || strncmp(dir, mnt, ml) || (dir[ml] && dir[ml] != '/')) {
        snprintf(err, errlen, "'%s' is neither a cgroup v2 directory (under %s) nor a running "
                 "container's id; see /proc/PID/cgroup of a process in it", arg, mnt);
        free(dir);
        free(mnt);
        return false;
    }
    t->cgroup_dir = dir;
    t->cgroup_rel = fk_strdup(dir[ml] ? dir + ml : "/");
    const char *base = strrchr(t->cgroup_rel, '/');
    base = base && base[1] ? base + 1 : "root";
    char *part = scope_part(base);
    t->scope = fk_asprintf("cgroup-%s", part);
    free(part);
    t->desc = fk_asprintf("cgroup %s (%s %s; it and its descendants, all CPUs)",
                          t->cgroup_rel, how, arg);
    free(mnt);
    return true;
}

char *fk_cgroup_make(pid_t child, const char *name, char **note)
{
    char *mnt = cgroup2_mount();
    char *own = mnt ? proc_cgroup2_path(0) : NULL;
    if (!mnt || !own) {
        *note = fk_strdup(mnt ? "flamekit's own cgroup v2 is not in /proc/self/cgroup"
                              : "no cgroup2 file system is mounted");
        free(mnt);
        return NULL;
    }
    char *dir = fk_asprintf("%s%s/%s.%d.%d", mnt, strcmp(own, "/") ? own : "", name, (int)getpid(),
                            (int)child);
    free(mnt);
    free(own);
    if (mkdir(dir, 0755) < 0) {
        *note = fk_asprintf("cannot make the cgroup %s: %s", dir, strerror(errno));
        free(dir);
        return NULL;
    }
    char *procs = fk_asprintf("%s/cgroup.procs", dir);
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    free(procs);
    char num[32];
    int len = snprintf(num, sizeof num, "%d", (int)child);
    bool joined = fd >= 0 && write(fd, num, (size_t)len) == len;
    int err = errno;
    if (fd >= 0)
        close(fd);
    if (!joined) {
        *note = fk_asprintf("cannot move process %d into the cgroup %s: %s", (int)child, dir, strerror(err));
        rmdir(dir);
        free(dir);
        return NULL;
    }
    return dir;
}

/* Move every process listed in dir/cgroup.procs to the cgroup to (a
 * cgroup.procs file open for writing). Returns how many were listed. */
static size_t cgroup_move_procs(const char *dir, int to)
{
    char *procs = fk_asprintf("%s/cgroup.procs", dir);
    FILE *f = fopen(procs, "re");
    free(procs);
    if (!f)
        return 0;
    size_t n = 0;
    char line[32];
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        n++;
        if (to >= 0 && write(to, line, len) < 0)
            continue;   /* it exited meanwhile: rmdir waits for its reaping */
    }
    fclose(f);
    return n;
}

/* Remove a cgroup flamekit made and the cgroups the command made below it
 * (depth-bounded), moving what still runs there to parent_procs: the
 * command's leftovers keep running where flamekit runs. Exited tasks
 * leave a cgroup when reaped, so an EBUSY is retried for a second. */
static bool cgroup_remove(const char *dir, int parent_procs, int depth)
{
    if (depth < 16) {
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_type != DT_DIR || de->d_name[0] == '.')
                continue;
            char *sub = fk_asprintf("%s/%s", dir, de->d_name);
            cgroup_remove(sub, parent_procs, depth + 1);
            free(sub);
        }
        if (d)
            closedir(d);
    }
    for (int tries = 0; tries < 100; tries++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return true;
        if (errno != EBUSY)
            return false;
        if (!cgroup_move_procs(dir, parent_procs) || tries > 0) {
            struct timespec ts = { 0, 10 * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    return false;
}

bool fk_cgroup_remove(const char *dir)
{
    char *parent = fk_strdup(dir);
    *strrchr(parent, '/') = 0;
    char *procs = fk_asprintf("%s/cgroup.procs", parent);
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    bool ok = cgroup_remove(dir, fd, 0);
    int err = errno;
    if (fd >= 0)
        close(fd);
    free(procs);
    free(parent);
    errno = err;
    return ok;
}

void fk_target_remove_cgroup(struct fk_target *t, fk_warn_fn warn, void *warn_ctx)
{
    if (!t->run_cgroup)
        return;
    if (!fk_cgroup_remove(t->run_cgroup))
        fk_warn_to(warn, warn_ctx, "cannot remove the command's cgroup %s: %s; remove it with "
                   "'rmdir %s' once its processes have exited", t->run_cgroup, strerror(errno),
                   t->run_cgroup);
    free(t->run_cgroup);
    t->run_cgroup = NULL;
}

/* RUN: the child blocks reading run_go until we write; exec errors come
 * back through run_err (close-on-exec, so EOF means exec worked). */
bool fk_target_run(struct fk_target *t, char **argv, bool stdout_to_stderr, char *err,
                   size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->kind = FK_TARGET_RUN;
    t->run_go = t->run_err = -1;
    int go[2], ep[2];
    if (pipe2(go, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return false;
    }
    if (pipe2(ep, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        close(go[0]);
        close(go[1]);
        return false;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(go[0]);
        close(go[1]);
        close(ep[0]);
        close(ep[1]);
        return false;
    }
    if (pid == 0) {
        close(go[1]);
        close(ep[0]);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        char c;
        ssize_t n;
        do
            n = read(go[0], &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1)
            _exit(127);     /* the profiler gave up before starting us */
        if (stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
            _exit(126);
        execvp(argv[0], argv);
        int e = errno;
        if (write(ep[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(e == ENOENT ? 127 : 126);
    }
    close(go[0]);
    close(ep[1]);
    t->run_go = go[1];
    t->run_err = ep[0];
    t->run_cgroup = fk_cgroup_make(pid, "flamekit-run", &t->run_cgroup_note);
    t->pids = fk_malloc(sizeof *t->pids);
    t->pids[0] = pid;
    t->npids = 1;
    const char *base = strrchr(argv[0], '/');
    char *part = scope_part(base ? base + 1 : argv[0]);
    t->scope = fk_asprintf("run-%s", part);
    free(part);
    struct fk_buf d = FK_BUF_INIT;
    fk_buf_adds(&d, "command:");
    for (char **a = argv; *a; a++)
        fk_buf_printf(&d, " %s", *a);
    t->desc = fk_strdup(fk_buf_cstr(&d));
    fk_buf_free(&d);
    return true;
}

bool fk_target_run_exec(struct fk_target *t, int *exec_errno, char *err, size_t errlen)
{
    *exec_errno = 0;
    if (t->run_go < 0)
        return false;
    char c = 'g';
    ssize_t n = write(t->run_go, &c, 1);
    close(t->run_go);
    t->run_go = -1;
    if (n != 1) {
        snprintf(err, errlen, "cannot start the command: %s", strerror(errno));
        return false;
    }
    int e = 0;
    do
        n = read(t->run_err, &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close(t->run_err);
    t->run_err = -1;
    if (n == (ssize_t)sizeof e) {
        *exec_errno = e;
        snprintf(err, errlen, "cannot run %s: %s", t->desc + strlen("command: "), strerror(e));
        return false;
    }
    return true;
}

/* Processes in dir and the cgroups below it, counting up to max + 1. */
static size_t cgroup_nprocs(const char *dir, size_t max, int depth)
{
    char *procs = fk_asprintf("%s/cgroup.procs", dir);
    FILE *f = fopen(procs, "re");
    free(procs);
    size_t n = 0;
    char line[32];
    while (f && n <= max && fgets(line, sizeof line, f))
        n++;
    if (f)
        fclose(f);
    DIR *d = depth < 16 && n <= max ? opendir(dir) : NULL;
    struct dirent *de;
    while (d && n <= max && (de = readdir(d))) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        char *sub = fk_asprintf("%s/%s", dir, de->d_name);
        n += cgroup_nprocs(sub, max - n, depth + 1);
        free(sub);
    }
    if (d)
        closedir(d);
    return n;
}

char *fk_target_pid_cgroup(const struct fk_target *t, char *why, size_t whylen)
{
    char *mnt = cgroup2_mount();
    if (!mnt) {
        snprintf(why, whylen, "no cgroup2 file system is mounted");
        return NULL;
    }
    char *rel = NULL;
    for (size_t i = 0; i < t->npids; i++) {
        char *r = proc_cgroup2_path(t->pids[i]);
        if (!r || (rel && strcmp(r, rel))) {
            snprintf(why, whylen, r ? "the processes are in different cgroups"
                                    : "process %d has no cgroup v2", (int)t->pids[i]);
            free(r);
            free(rel);
            free(mnt);
            return NULL;
        }
        free(rel);
        rel = r;
    }
    char *dir = NULL;
    if (!rel || !strcmp(rel, "/")) {
        snprintf(why, whylen, "the target is in the root cgroup (the whole host)");
    } else {
        dir = fk_asprintf("%s%s", mnt, rel);
        size_t n = cgroup_nprocs(dir, FK_TARGET_TREE_CGROUP_MAX, 0);
        if (n > FK_TARGET_TREE_CGROUP_MAX) {
            snprintf(why, whylen, "its cgroup %s holds more than %d processes", rel,
                     FK_TARGET_TREE_CGROUP_MAX);
            free(dir);
            dir = NULL;
        } else if (!n) {
            snprintf(why, whylen, "cannot read the processes of its cgroup %s", rel);
            free(dir);
            dir = NULL;
        }
    }
    free(rel);
    free(mnt);
    return dir;
}

void fk_target_free(struct fk_target *t)
{
    if (t->kind == FK_TARGET_RUN && t->run_go >= 0) {
        close(t->run_go);   /* the waiting child exits 127 */
        t->run_go = -1;
        if (t->npids)
            waitpid(t->pids[0], NULL, 0);
    }
    if (t->kind == FK_TARGET_RUN && t->run_err >= 0)
        close(t->run_err);
    fk_target_remove_cgroup(t, NULL, NULL);
    free(t->run_cgroup_note);
    free(t->pids);
    free(t->user);
    free(t->cgroup_dir);
    free(t->cgroup_rel);
    free(t->scope);
    free(t->desc);
    memset(t, 0, sizeof *t);
}

/* ---- filters ------------------------------------------------------------ */

void fk_target_filter_init(struct fk_target_filter *f, const struct fk_target *t)
{
    memset(f, 0, sizeof *f);
    f->t = t;
}

void fk_target_filter_free(struct fk_target_filter *f)
{
    fk_u64map_free(&f->uids);
    fk_u64map_free(&f->uid_checked);
    fk_u64map_free(&f->cgroups);
}

/* USER: decide by effective uid, read from /proc at first sight of a pid and
 * again after exec or a second later (setuid() after fork is not a record);
 * a pid already gone inherits what its parent had at fork time. */
static bool keep_user(struct fk_target_filter *f, pid_t pid)
{
    uint64_t now = fk_now_ns();
    uint64_t *v = fk_u64map_slot(&f->uids, (uint64_t)pid, true);
    uint64_t *c = fk_u64map_slot(&f->uid_checked, (uint64_t)pid, true);
    if (!*v || now - *c > 1000000000ull) {
        uid_t uids[2];
        if (fk_proc_uids(pid, uids) == 2)
            *v = (uint64_t)uids[1] << 1 | 1;
        *c = now;
    }
    return *v && (uid_t)(*v >> 1) == f->t->uid;
}

static void scan_cgroup_tree(struct fk_target_filter *f, const char *dir, int depth)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return;
    *fk_u64map_slot(&f->cgroups, (uint64_t)st.st_ino, true) = 1;
    if (depth > 64)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        char *sub = fk_asprintf("%s/%s", dir, de->d_name);
        scan_cgroup_tree(f, sub, depth + 1);
        free(sub);
    }
    closedir(d);
}

/* CGROUP: a sample's cgroup id is in the target if it is the directory's
 * inode or one below it; unknown ids trigger a (rate-limited) rescan so
 * cgroups created during the capture count. */
static bool keep_cgroup(struct fk_target_filter *f, uint64_t id)
{
    uint64_t *v = fk_u64map_slot(&f->cgroups, id, false);
    if (v)
        return *v == 1;
    uint64_t now = fk_now_ns();
    if (now - f->cgroup_rescan_ns > 50000000ull) {
        f->cgroup_rescan_ns = now;
        scan_cgroup_tree(f, f->t->cgroup_dir, 0);
        v = fk_u64map_slot(&f->cgroups, id, false);
        if (v)
            return *v == 1;
        *fk_u64map_slot(&f->cgroups, id, true) = 2;
    }
    return false;
}

bool fk_target_keep(struct fk_target_filter *f, pid_t pid, uint64_t cgroup)
{
    switch (f->t->kind) {
    case FK_TARGET_USER:
        return keep_user(f, pid);
    case FK_TARGET_CGROUP:
        return keep_cgroup(f, cgroup);
    default:
        return true;    /* the events themselves are limited to the target */
    }
}

void fk_target_filter_exec(struct fk_target_filter *f, pid_t pid)
{
    if (f->t->kind != FK_TARGET_USER)
        return;
    uint64_t *c = fk_u64map_slot(&f->uid_checked, (uint64_t)pid, false);
    if (c)
        *c = 0;     /* setuid binaries change uid at exec */
}

void fk_target_filter_fork(struct fk_target_filter *f, pid_t pid, pid_t ppid)
{
    if (f->t->kind != FK_TARGET_USER || pid == ppid)
        return;
    uint64_t *pv = fk_u64map_slot(&f->uids, (uint64_t)ppid, false);
    if (pv && *pv) {
        uint64_t uid = *pv;
        *fk_u64map_slot(&f->uids, (uint64_t)pid, true) = uid;
        *fk_u64map_slot(&f->uid_checked, (uint64_t)pid, true) = fk_now_ns();
    }
}
