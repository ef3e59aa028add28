/* SPDX-License-Identifier: GPL-2.0-only */
/* Safe opening of process-controlled files, with openat2 and with the
 * manual walk: a directory stands in for a container's root, planted with
 * FIFOs, devices, symlinks out of it, big files and foreign owners. And
 * the SIGBUS guard for a mapped file truncated under a read. */
#include "util/busguard.h"
#include "util/procfs.h"
#include "util/safeopen.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char top[] = "/tmp/fk-unit-safeopen.XXXXXX";

static void put(const char *rel, const char *text)
{
    char *p = fk_asprintf("%s/%s", top, rel);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
    free(p);
}

static void mk(const char *kind, const char *rel, const char *target)
{
    char *p = fk_asprintf("%s/%s", top, rel);
    int rc = !strcmp(kind, "dir")    ? mkdir(p, 0755)
             : !strcmp(kind, "fifo") ? mkfifo(p, 0666)
             : !strcmp(kind, "null") ? mknod(p, S_IFCHR | 0666, makedev(1, 3))
                                     : symlink(target, p);
    if (rc != 0 && strcmp(kind, "null"))
        abort();
    free(p);
}

/* Open path inside the jail; returns the file's first byte, or the reason.
 * CHECK_OPEN's expect NULL: any refusal. */
static const char *try_open(int root, const char *path, unsigned flags, uint64_t max,
                            const uid_t *owners, size_t nowners)
{
    static char got[2];
    struct fk_safe_opts o = { flags, max, owners, nowners };
    const char *why = NULL;
    int fd = fk_safe_openat(root, path, &o, NULL, &why);
    if (fd < 0)
        return why ? why : "?";
    got[0] = '?';
    if (read(fd, got, 1) != 1)
        got[0] = '!';
    got[1] = 0;
    close(fd);
    return got;
}

/* A read like libdw's: a block allocated and held (only here: nothing
 * else points to it once the SIGBUS leaves this frame), then the mapping
 * read past its file's end. */
static __attribute__((noinline)) int read_holding_block(volatile const unsigned char *past_end)
{
    unsigned char *volatile block = malloc(224);
    if (!block)
        return -1;
    memset(block, 0xa5, 224);
    int v = *past_end + block[0];
    free(block);
    return v;
}

static void run(int root, const char *mode)
{
    char w[160];
#define CHECK_OPEN(what, expect, ...) do { \
        snprintf(w, sizeof w, "%s: %s", mode, what); \
        const char *got_ = try_open(root, __VA_ARGS__), *want_ = expect; \
        UNIT_CHECK(w, want_ ? !strcmp(got_, want_) : strlen(got_) > 1); \
    } while (0)
    CHECK_OPEN("regular file", "x", "/tmp/reg", 0, 0, NULL, 0);
    CHECK_OPEN("relative path", "x", "tmp/reg", 0, 0, NULL, 0);
    CHECK_OPEN("FIFO refused without blocking", "not a regular file", "/tmp/fifo", 0, 0, NULL, 0);
    CHECK_OPEN("directory refused", "not a regular file", "/tmp", 0, 0, NULL, 0);
    CHECK_OPEN("final symlink refused", "a symbolic link", "/tmp/in", 0, 0, NULL, 0);
    CHECK_OPEN("final symlink followed inside the root", "x", "/tmp/in", FK_SAFE_FOLLOW, 0, NULL, 0);
    CHECK_OPEN("intermediate symlink resolved inside the root", "x", "/alias/reg", 0, 0, NULL, 0);
    CHECK_OPEN("no symlinks at all", "a symbolic link on the way", "/alias/reg",
               FK_SAFE_NO_SYMLINKS, 0, NULL, 0);
    /* the jail's own /secret is "j": the host's secret ("s") never appears */
    CHECK_OPEN("absolute symlink out stays inside", "j", "/tmp/out", FK_SAFE_FOLLOW, 0, NULL, 0);
    CHECK_OPEN("relative ../ symlink out stays inside", "j", "/tmp/up", FK_SAFE_FOLLOW, 0, NULL, 0);
    CHECK_OPEN("../ in the path stays inside", "j", "/tmp/../../../secret", 0, 0, NULL, 0);
    CHECK_OPEN("symlink to a device outside resolves inside", "No such file or directory",
               "/tmp/zero", FK_SAFE_FOLLOW, 0, NULL, 0);
    CHECK_OPEN("symlink loop refused", NULL, "/tmp/loop", FK_SAFE_FOLLOW, 0,
               NULL, 0);
    CHECK_OPEN("size within the limit", "b", "/tmp/big", 0, 4096, NULL, 0);
    CHECK_OPEN("size beyond the limit", "larger than the size limit", "/tmp/big", 0, 4095, NULL, 0);
    uid_t nobody = 65534, other = 4242;
    CHECK_OPEN("owner allowed", "n", "/tmp/nobody", 0, 0, &nobody, 1);
    CHECK_OPEN("owner refused", "not owned by the process's user or root", "/tmp/nobody", 0, 0,
               &other, 1);
    CHECK_OPEN("root-owned always allowed", "x", "/tmp/reg", 0, 0, &other, 1);
    struct stat st;
    char *p = fk_asprintf("%s/jail/tmp/null", top);
    if (stat(p, &st) == 0)
        CHECK_OPEN("device refused", "not a regular file", "/tmp/null", 0, 0, NULL, 0);
    free(p);
#undef CHECK_OPEN
}

int main(void)
{
    unit_name = "unit-safeopen";
    if (!mkdtemp(top))
        return 1;
    put("secret", "s");
    mk("dir", "jail", NULL);
    mk("dir", "jail/tmp", NULL);
    mk("dir", "jail/proc", NULL);
    put("jail/secret", "j");
    put("jail/tmp/reg", "x");
    mk("fifo", "jail/tmp/fifo", NULL);
    mk("link", "jail/tmp/in", "/tmp/reg");
    mk("link", "jail/alias", "tmp");
    char *host_secret = fk_asprintf("%s/secret", top);
    mk("link", "jail/tmp/out", "/secret");
    mk("link", "jail/tmp/up", "../../../../../../secret");
    mk("link", "jail/tmp/zero", "/dev/zero");
    mk("link", "jail/tmp/loop", "/tmp/loop");
    mk("null", "jail/tmp/null", NULL);
    char big[4096];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\n';
    put("jail/tmp/big", "");
    char *bp = fk_asprintf("%s/jail/tmp/big", top);
    FILE *f = fopen(bp, "w");
    if (!f || fwrite(big, 1, sizeof big, f) != sizeof big || fclose(f) != 0)
        abort();
    put("jail/tmp/nobody", "n");
    char *np = fk_asprintf("%s/jail/tmp/nobody", top);
    if (chown(np, 65534, 65534) != 0)
        printf("SKIP: unit-safeopen: owner checks (chown: %s)\n", strerror(errno));
    char *jail = fk_asprintf("%s/jail", top);
    int root = open(jail, O_PATH | O_DIRECTORY | O_CLOEXEC);
    UNIT_CHECK("jail opens", root >= 0);
    run(root, "openat2");
    fk_safe_open_walk_only = true;
    run(root, "walk");
    fk_safe_open_walk_only = false;

    /* A magic link inside the root (/proc mounted in the jail, as in a
     * container): /proc/self/fd/N of the host's secret must not lead there. */
    char *jproc = fk_asprintf("%s/jail/proc", top);
    if (unshare(CLONE_NEWNS) == 0 && mount("", "/", NULL, MS_PRIVATE | MS_REC, NULL) == 0 &&
        mount("proc", jproc, "proc", 0, NULL) == 0) {
        int hs = open(host_secret, O_RDONLY | O_CLOEXEC);
        char mp[64];
        snprintf(mp, sizeof mp, "/proc/self/fd/%d", hs);
        for (int walk = 0; walk < 2; walk++) {
            fk_safe_open_walk_only = walk;
            char w[96];
            snprintf(w, sizeof w, "%s: magic link to a host file not followed",
                     walk ? "walk" : "openat2");
            UNIT_CHECK(w, strcmp(try_open(root, mp, FK_SAFE_FOLLOW, 0, NULL, 0), "s") != 0);
        }
        fk_safe_open_walk_only = false;
        close(hs);
        umount(jproc);
    } else {
        printf("SKIP: unit-safeopen: magic link inside the root (cannot mount proc: %s)\n",
               strerror(errno));
    }
    free(jproc);

    /* pinned files (/proc/PID/map_files): regular ones only */
    bool host = false;
    int r = fk_root_open(getpid(), &host);
    UNIT_CHECK("own root is the host root", r >= 0 && host);
    if (r >= 0)
        close(r);

    /* a status file's last number: the id in the innermost pid namespace */
    char sp[64];
    snprintf(sp, sizeof sp, "/proc/%d/status", (int)getpid());
    UNIT_CHECK("status NStgid: our pid", fk_proc_status_last(sp, "NStgid") == (unsigned long long)getpid());
    UNIT_CHECK("status PPid: a key matched whole", fk_proc_status_last(sp, "PPid") == (unsigned long long)getppid());
    UNIT_CHECK("status: a missing key gives 0", fk_proc_status_last(sp, "NSpi") == 0);
    UNIT_CHECK("status: a missing file gives 0", fk_proc_status_last("/proc/0/status", "NSpid") == 0);
    put("status", "Name:\tx\nNStgid:\t41\t7\t3\n");
    char *fake = fk_asprintf("%s/status", top);
    UNIT_CHECK("status: the last field of the line", fk_proc_status_last(fake, "NStgid") == 3);
    unsigned long long ids[4];
    UNIT_CHECK("status: every number of the line, in order",
               fk_proc_status_numbers(fake, "NStgid", ids, 4) == 3 && ids[0] == 41 &&
               ids[1] == 7 && ids[2] == 3);
    UNIT_CHECK("status: at most max numbers", fk_proc_status_numbers(fake, "NStgid", ids, 2) == 2);
    free(fake);
    unsigned long long sw0 = 0, sw1 = 0;
    bool sw_read = fk_proc_task_switches(getpid(), getpid(), &sw0);
    usleep(1000);       /* one voluntary switch at least */
    sw_read = sw_read && fk_proc_task_switches(getpid(), getpid(), &sw1);
    UNIT_CHECK("task switches: ours, rising with a sleep", sw_read && sw1 > sw0);
    UNIT_CHECK("task switches: a thread gone gives false",
               !fk_proc_task_switches(getpid(), 0, &sw0));
    uid_t uids[2];
    UNIT_CHECK("fk_proc_uids: our real and effective uid",
               fk_proc_uids(getpid(), uids) == 2 && uids[0] == getuid() && uids[1] == geteuid());
    UNIT_CHECK("fk_proc_uids: a process gone gives 0", fk_proc_uids(0, uids) == 0);
    char fp[64];
    char *fifo = fk_asprintf("%s/jail/tmp/fifo", top);
    int ff = open(fifo, O_RDWR | O_NONBLOCK);
    free(fifo);
    snprintf(fp, sizeof fp, "/proc/self/fd/%d", ff);
    const char *why = NULL;
    UNIT_CHECK("pinned FIFO refused", fk_safe_open_pinned(fp, NULL, NULL, &why) < 0 &&
                                          why && !strcmp(why, "not a regular file"));
    int rf = open(host_secret, O_RDONLY);
    snprintf(fp, sizeof fp, "/proc/self/fd/%d", rf);
    struct fk_safe_opts small = { .max_size = 0 };
    int fd = fk_safe_open_pinned(fp, &small, NULL, &why);
    UNIT_CHECK("pinned regular file opens", fd >= 0);
    if (fd >= 0)
        close(fd);
    close(ff);
    close(rf);

    /* a mapping whose file shrinks: the read past the end is caught by the
     * innermost guard, the outer one still works after */
    char *tp = fk_asprintf("%s/shrinks", top);
    int tf = open(tp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    long page = sysconf(_SC_PAGESIZE);
    volatile unsigned char *m = NULL;
    if (tf >= 0 && ftruncate(tf, 2 * page) == 0)
        m = mmap(NULL, (size_t)(2 * page), PROT_READ, MAP_SHARED, tf, 0);
    UNIT_CHECK("mapping for the SIGBUS guard", m && m != MAP_FAILED && ftruncate(tf, page) == 0);
    if (m && m != MAP_FAILED) {
        struct fk_bus_guard outer, inner;
        volatile int got = 0;
        unsigned long before = fk_bus_caught();
        fk_bus_push(&outer);
        if (sigsetjmp(outer.env, 0) == 0) {
            fk_bus_push(&inner);
            if (sigsetjmp(inner.env, 0) == 0) {
                got = m[page];          /* past the end: SIGBUS */
                fk_bus_pop(&inner);
            } else {
                got = 1;
            }
            got += m[0] == 0;           /* still inside the file */
            fk_bus_pop(&outer);
        } else {
            got = -1;
        }
        UNIT_CHECK("SIGBUS past a truncated mapping's end: caught by the guard",
                   got == 2 && fk_bus_caught() == before + 1);
        /* a read that allocated before the SIGBUS ended it (libdw's frame
         * state in dwarf_cfi_addrframe): its block is abandoned, and an
         * AddressSanitizer build's leak check at exit must not report it
         * (t-unit's ASan run fails on any leak report) */
        struct fk_bus_guard g;
        fk_bus_push(&g);
        if (sigsetjmp(g.env, 0) == 0) {
            got = read_holding_block(m + page);
            fk_bus_pop(&g);
        } else {
            got = -2;
        }
        UNIT_CHECK("SIGBUS in a read holding a block: caught (the block abandoned)",
                   got == -2 && fk_bus_caught() == before + 2);
        munmap((void *)m, (size_t)(2 * page));
    }
    if (tf >= 0)
        close(tf);
    free(tp);

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    if (system(cmd) != 0)
        printf("FAIL: unit-safeopen: cleanup\n");
    free(host_secret);
    free(bp);
    free(np);
    free(jail);
    return UNIT_END();
}
