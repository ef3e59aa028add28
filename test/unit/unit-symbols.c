/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbolizer: own process, deleted/replaced binaries, other mount
 * namespaces, JIT perf maps, kallsyms, hand-fed side-band sequences. */
#include "symbols/symbols-int.h"
#include "symbols/symbols.h"
#include "unit.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static int unit_sym_target(int x)
{
    return x * 3 + 1;
}

static char symprog[PATH_MAX + 32], tmpdir[PATH_MAX];

static char *name_of(struct fk_symbolizer *s, struct fk_loc loc, enum fk_frame_kind *kind)
{
    static struct fk_buf b = FK_BUF_INIT;
    fk_buf_reset(&b);
    enum fk_frame_kind k = fk_sym_name(s, loc, &b);
    if (kind)
        *kind = k;
    return (char *)fk_buf_cstr(&b);
}

static const char *name_at(struct fk_symbolizer *s, pid_t pid, uint64_t ip)
{
    return name_of(s, fk_sym_locate(s, pid, ip, false), NULL);
}

struct child {
    pid_t pid;
    int in, out;    /* its stdin (write end), its stdout (read end) */
};

/* Start argv with pipes; read one line of its output into line. */
static bool spawn(struct child *c, const char *const argv[], char *line, size_t len)
{
    int pin[2], pout[2];
    if (pipe(pin) || pipe(pout))
        return false;
    c->pid = fork();
    if (c->pid == 0) {
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        close(pin[1]);
        close(pout[0]);
        execvp(argv[0], (char *const *)argv);   /* exec's argv type predates const */
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    c->in = pin[1];
    c->out = pout[0];
    size_t n = 0;
    while (n + 1 < len) {
        ssize_t r = read(c->out, line + n, 1);
        if (r <= 0)
            break;
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = 0;
    return n > 0;
}

static void reap(struct child *c)
{
    close(c->in);
    close(c->out);
    int st;
    waitpid(c->pid, &st, 0);
}

static bool copy_file(const char *from, const char *to)
{
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    return system(cmd) == 0;
}

static void test_self(void)
{
    struct fk_sym_opts o = { .kernel = true };
    struct fk_symbolizer *s = fk_sym_new(&o);
    fk_sym_scan_pid(s, getpid());
    UNIT_CHECK("own function by name (PIE)",
               strcmp(name_at(s, getpid(), (uint64_t)(uintptr_t)unit_sym_target + 2),
                      "unit_sym_target") == 0);
    UNIT_CHECK("libc function by name", strstr(name_at(s, getpid(), (uint64_t)(uintptr_t)fopen + 1),
                                                "fopen") != NULL);
    void *vh = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void *vf = vh ? dlsym(vh, "__vdso_clock_gettime") : NULL;
    if (vf)
        UNIT_CHECK("vDSO function by name",
                   strcmp(name_at(s, getpid(), (uint64_t)(uintptr_t)vf + 1), "__vdso_clock_gettime") == 0 ||
                   strcmp(name_at(s, getpid(), (uint64_t)(uintptr_t)vf + 1), "clock_gettime") == 0);
    else
        printf("SKIP: %s: vDSO function (no linux-vdso.so.1 handle)\n", unit_name);
    UNIT_CHECK("own comm", strcmp(fk_sym_comm_of(s, getpid(), gettid()), "unit-symbols") == 0);
    UNIT_CHECK("unmapped address is [unknown]", strcmp(name_at(s, getpid(), 16), "[unknown]") == 0);
    struct fk_sym_stats st;
    fk_sym_stats(s, &st);
    UNIT_CHECK("stats count DSOs and one unknown", st.dsos >= 2 && st.locate_unknown == 1);
    UNIT_CHECK("stats: nothing deleted here", st.deleted_files_kept == 0);
    UNIT_CHECK("bytes accounted", fk_sym_bytes(s) > 1000);
    fk_sym_free(s);

    s = fk_sym_new(&o);     /* no scan: the first locate reads /proc/PID */
    UNIT_CHECK("unseen pid scanned at first locate",
               strcmp(name_at(s, getpid(), (uint64_t)(uintptr_t)unit_sym_target), "unit_sym_target") == 0);
    fk_sym_free(s);
}

/* The binary is deleted (or replaced) after first sight, or before it. */
static void test_deleted(const char *what, bool no_map_files, bool replace, bool scan_after)
{
    char path[PATH_MAX + 32], line[128], msg[160];
    snprintf(path, sizeof path, "%s/prog-%d%d%d", tmpdir, no_map_files, replace, scan_after);
    if (!copy_file(symprog, path)) {
        UNIT_CHECK("copy test binary", 0);
        return;
    }
    struct child c;
    const char *argv[] = { path, "addrs", NULL };
    bool ok = spawn(&c, argv, line, sizeof line);
    unsigned long alpha = 0, beta = 0;
    snprintf(msg, sizeof msg, "%s: child printed addresses", what);
    UNIT_CHECK(msg, ok && sscanf(line, "%lx %lx", &alpha, &beta) == 2);
    struct fk_sym_opts o = { .no_map_files = no_map_files };
    struct fk_symbolizer *s = fk_sym_new(&o);
    if (!scan_after)
        fk_sym_scan_pid(s, c.pid);
    if (replace) {
        char other[PATH_MAX + 40];
        snprintf(other, sizeof other, "%s.new", path);
        copy_file("/bin/true", other);
        rename(other, path);
    } else {
        unlink(path);
    }
    if (scan_after)
        fk_sym_scan_pid(s, c.pid);
    struct fk_loc la = fk_sym_locate(s, c.pid, alpha + 1, false);
    struct fk_loc lb = fk_sym_locate(s, c.pid, beta + 1, false);
    reap(&c);   /* named after the process is gone, like after a capture */
    snprintf(msg, sizeof msg, "%s: names after exit", what);
    char *na = fk_strdup(name_of(s, la, NULL));
    UNIT_CHECK(msg, strcmp(na, "fk_symprog_alpha") == 0 &&
                    strcmp(name_of(s, lb, NULL), "fk_symprog_beta") == 0);
    if (strcmp(na, "fk_symprog_alpha") != 0)
        printf("# got %s\n", na);
    free(na);
    struct fk_sym_stats st;
    fk_sym_stats(s, &st);
    snprintf(msg, sizeof msg, "%s: counted as kept", what);
    UNIT_CHECK(msg, st.deleted_files_kept == 1);
    fk_sym_free(s);
    unlink(path);
}

/* A binary that exists only on a private tmpfs in another mount namespace. */
static void test_mount_ns(void)
{
    if (access("/usr/bin/unshare", X_OK) != 0) {
        printf("SKIP: %s: mount namespace (no unshare)\n", unit_name);
        return;
    }
    char dir[PATH_MAX + 8], script[6 * PATH_MAX], line[128];
    snprintf(dir, sizeof dir, "%s/ns", tmpdir);
    mkdir(dir, 0700);
    snprintf(script, sizeof script,
             "mount -t tmpfs fk-ns '%s' && cp '%s' '%s/inner' && exec '%s/inner' addrs",
             dir, symprog, dir, dir);
    const char *argv[] = { "unshare", "-m", "--propagation", "private", "sh", "-c", script, NULL };
    struct child c;
    unsigned long alpha = 0, beta = 0;
    bool ok = spawn(&c, argv, line, sizeof line) && sscanf(line, "%lx %lx", &alpha, &beta) == 2;
    UNIT_CHECK("mount ns: child started", ok);
    char inner[PATH_MAX + 16];
    snprintf(inner, sizeof inner, "%s/inner", dir);
    UNIT_CHECK("mount ns: binary invisible from here", access(inner, F_OK) != 0);
    struct fk_sym_opts o = { .no_map_files = true };
    struct fk_symbolizer *s = fk_sym_new(&o);
    fk_sym_scan_pid(s, c.pid);
    struct fk_loc la = fk_sym_locate(s, c.pid, alpha + 1, false);
    reap(&c);
    UNIT_CHECK("mount ns: named through /proc/PID/root",
               ok && strcmp(name_of(s, la, NULL), "fk_symprog_alpha") == 0);
    fk_sym_free(s);
    rmdir(dir);
}

static void test_jit(void)
{
    char line[128], map[64];
    const char *argv[] = { symprog, "jit", NULL };
    struct child c;
    unsigned long code = 0;
    bool ok = spawn(&c, argv, line, sizeof line) && sscanf(line, "%lx", &code) == 1;
    UNIT_CHECK("jit: child started", ok);
    struct fk_sym_opts o = { .jit = true, .annotate = true };
    struct fk_symbolizer *s = fk_sym_new(&o);
    fk_sym_scan_pid(s, c.pid);
    struct fk_loc l1 = fk_sym_locate(s, c.pid, code + 4, false);
    struct fk_loc l2 = fk_sym_locate(s, c.pid, code + 0x100 + 2, false);
    struct fk_loc l3 = fk_sym_locate(s, c.pid, code + 0x180, false);
    reap(&c);
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)c.pid);
    unlink(map);    /* the copy read at first sight must do */
    enum fk_frame_kind k;
    UNIT_CHECK("jit: perf map symbol, annotated",
               strcmp(name_of(s, l1, &k), "fk_jit_hot_[j]") == 0 && k == FK_FRAME_JIT);
    UNIT_CHECK("jit: second symbol", strcmp(name_of(s, l2, NULL), "fk_jit_other_[j]") == 0);
    char want[64];
    snprintf(want, sizeof want, "[JIT] tid %d_[j]", (int)c.pid);
    UNIT_CHECK("jit: gap between symbols", strcmp(name_of(s, l3, NULL), want) == 0);
    fk_sym_free(s);

    /* entries the JIT adds after first sight: read again at the end */
    ok = spawn(&c, argv, line, sizeof line) && sscanf(line, "%lx", &code) == 1;
    s = fk_sym_new(&o);
    fk_sym_scan_pid(s, c.pid);
    struct fk_loc late = fk_sym_locate(s, c.pid, code + 0x304, false);
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)c.pid);
    FILE *mf = fopen(map, "a");
    if (mf) {
        fprintf(mf, "%lx 10 fk_jit_late\n", code + 0x300);
        fclose(mf);
    }
    UNIT_CHECK("jit: map re-read at the end while alive",
               ok && strcmp(name_of(s, late, NULL), "fk_jit_late_[j]") == 0);
    reap(&c);
    unlink(map);
    fk_sym_free(s);

    const char *argv2[] = { symprog, "jit", "nomap", NULL };
    ok = spawn(&c, argv2, line, sizeof line) && sscanf(line, "%lx", &code) == 1;
    s = fk_sym_new(&(struct fk_sym_opts){ .jit = true });
    fk_sym_scan_pid(s, c.pid);
    struct fk_loc l4 = fk_sym_locate(s, c.pid, code + 4, false);
    reap(&c);
    snprintf(want, sizeof want, "[JIT] tid %d", (int)c.pid);
    UNIT_CHECK("jit: anonymous code without a perf map", ok && strcmp(name_of(s, l4, NULL), want) == 0);
    fk_sym_free(s);
}

static void test_kernel(void)
{
    FILE *f = fopen("/proc/kallsyms", "r");
    unsigned long long addr = 0;
    char type, name[256];
    while (f && fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, name) == 3)
        if (strcmp(name, "schedule") == 0 && (type == 'T' || type == 't'))
            break;
    if (f)
        fclose(f);
    if (strcmp(name, "schedule") != 0 || addr == 0) {
        printf("SKIP: %s: kallsyms (no visible schedule address)\n", unit_name);
        return;
    }
    struct fk_symbolizer *s = fk_sym_new(&(struct fk_sym_opts){ .kernel = true, .annotate = true });
    enum fk_frame_kind k;
    UNIT_CHECK("kallsyms: schedule, annotated",
               strcmp(name_of(s, fk_sym_locate(s, 1, addr + 1, true), &k), "schedule_[k]") == 0 &&
                   k == FK_FRAME_KERNEL);
    fk_sym_free(s);
    s = fk_sym_new(&(struct fk_sym_opts){ .kernel = true });
    UNIT_CHECK("kallsyms: plain name",
               strcmp(name_of(s, fk_sym_locate(s, 1, addr, true), NULL), "schedule") == 0);
    UNIT_CHECK("kernel address in a user callchain is [unknown]",
               strcmp(name_of(s, fk_sym_locate(s, getpid(), addr, false), NULL), "[unknown]") == 0);
    fk_sym_free(s);
}

static int unit_sym_cmp(const void *a, const void *b)
{
    const struct fk_sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

/* fk_symtab_sort's radix sort gives qsort's order (address, larger size,
 * name), ties and all: tables in random order with many equal fields. */
static void test_symtab_sort_order(void)
{
    bool same = true;
    srand(7);
    for (int round = 0; round < 20 && same; round++) {
        size_t n = 1000 + (size_t)rand() % 20000;
        struct fk_sym *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
        for (size_t i = 0; i < n; i++) {
            a[i].addr = round % 2 ? 0x400000 + (uint64_t)(rand() % 5000) * 16
                                  : ((uint64_t)rand() << 33) ^ (uint64_t)rand();
            a[i].size = (uint32_t)(rand() % 4 ? rand() % 64 : 0);
            a[i].name = (uint32_t)(rand() % 300);
        }
        memcpy(b, a, n * sizeof *a);
        struct fk_symtab t = { .syms = a, .n = n, .cap = n };
        fk_buf_add(&t.strs, "", 1);
        qsort(b, n, sizeof *b, unit_sym_cmp);
        size_t w = n ? 1 : 0;       /* one per address, as fk_symtab_sort keeps */
        for (size_t r = 1; r < n; r++)
            if (b[r].addr != b[w - 1].addr)
                b[w++] = b[r];
        fk_symtab_sort(&t);
        /* (then labels inside sized symbols go: compare what is left) */
        size_t j = 0;
        for (size_t i = 0; i < t.n && same; i++) {
            while (j < w && b[j].addr != t.syms[i].addr)
                j++;
            same = j < w && b[j].size == t.syms[i].size && b[j].name == t.syms[i].name;
        }
        fk_symtab_free(&t);
        free(b);
    }
    UNIT_CHECK("symtab sort: the radix sort keeps qsort's order, ties included", same);
}

/* Whether the cache in dir is used now (the table read back). */
static bool kcache_used(void)
{
    struct fk_symtab t = { 0 };
    uint64_t lo, hi;
    bool ok = fk_kcache_load(&t, &lo, &hi);
    fk_symtab_free(&t);
    return ok;
}

/* The core kernel's table kept between captures (symbols/kcache.c): made
 * by a first read, used by the next, names as /proc/kallsyms gives them;
 * ignored when damaged, stale, not root's alone, or reached by a symlink. */
static void test_kernel_cache(void)
{
    char dir[PATH_MAX + 16], file[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/kcache", tmpdir);
    snprintf(file, sizeof file, "%s/kallsyms", dir);
    setenv("FLAMEKIT_KERNEL_CACHE", dir, 1);
    struct fk_symtab full = { 0 }, core = { 0 };
    bool hidden;
    struct fk_kallsyms_info info;
    if (geteuid() != 0 || !fk_kallsyms_load(&full, &hidden, &info)) {
        printf("SKIP: %s: kernel table cache (not root, or kallsyms hidden)\n", unit_name);
        unsetenv("FLAMEKIT_KERNEL_CACHE");
        return;
    }
    struct fk_symbolizer *s = fk_sym_new(&(struct fk_sym_opts){ .kernel = true });
    struct fk_sym_stats st;
    const char *name = name_of(s, fk_sym_locate(s, 1, info.lo, true), NULL);
    fk_sym_stats(s, &st);
    struct stat fs;
    UNIT_CHECK("kernel cache: a first read makes it (root's, 0600)",
               strcmp(st.kernel_table, "kallsyms") == 0 && stat(file, &fs) == 0 &&
                   fs.st_uid == 0 && (fs.st_mode & 0777) == 0600);
    fk_sym_free(s);
    s = fk_sym_new(&(struct fk_sym_opts){ .kernel = true });
    bool same = strcmp(name_of(s, fk_sym_locate(s, 1, info.lo, true), NULL), name) == 0;
    fk_sym_stats(s, &st);
    UNIT_CHECK("kernel cache: the next one uses it", same && strcmp(st.kernel_table, "cache") == 0);
    fk_sym_free(s);

    uint64_t lo = 0, hi = 0;
    size_t diff = 0, n = 0;
    if (fk_kcache_load(&core, &lo, &hi))
        for (size_t i = 0; i < full.n; i++)
            for (uint64_t off = 0; off < 2; off++) {
                uint64_t a = full.syms[i].addr + off;
                if (a < lo || a > hi)
                    continue;
                const struct fk_sym *x = fk_symtab_find(&full, a, 0x10000);
                const struct fk_sym *y = fk_symtab_find(&core, a, 0x10000);
                n++;
                diff += !x != !y || (x && strcmp(fk_symtab_name(&full, x), fk_symtab_name(&core, y)));
            }
    UNIT_CHECK("kernel cache: every core address named as /proc/kallsyms names it",
               n > 1000 && diff == 0 && lo == info.lo && hi == info.hi);
    fk_symtab_free(&core);
    /* outside the core's span: the full table is read for that frame */
    s = fk_sym_new(&(struct fk_sym_opts){ .kernel = true });
    name_of(s, fk_sym_locate(s, 1, info.hi + 0x100000, true), NULL);
    fk_sym_stats(s, &st);
    UNIT_CHECK("kernel cache: a frame past the core reads /proc/kallsyms",
               strcmp(st.kernel_table, "kallsyms") == 0);
    fk_sym_free(s);

    /* damaged, stale, open to others, a symlink: ignored */
    int fd = open(file, O_RDWR);
    char c = 0, boot = 0;
    bool io = fd >= 0 && pread(fd, &c, 1, fs.st_size / 2) == 1 && pwrite(fd, (char[]){ (char)(c ^ 1) }, 1, fs.st_size / 2) == 1;
    UNIT_CHECK("kernel cache: a changed byte is ignored", io && !kcache_used());
    io = io && pwrite(fd, &c, 1, fs.st_size / 2) == 1 && kcache_used();
    io = io && pread(fd, &boot, 1, 16) == 1 && pwrite(fd, (char[]){ (char)(boot ^ 1) }, 1, 16) == 1;
    UNIT_CHECK("kernel cache: another boot's is ignored", io && !kcache_used());
    io = io && pwrite(fd, &boot, 1, 16) == 1 && kcache_used();
    if (fd >= 0)
        close(fd);
    UNIT_CHECK("kernel cache: writable by others, ignored",
               io && chmod(file, 0622) == 0 && !kcache_used() && chmod(file, 0600) == 0 && kcache_used());
    UNIT_CHECK("kernel cache: in a directory writable by others, ignored",
               chmod(dir, 0777) == 0 && !kcache_used() && chmod(dir, 0700) == 0 && kcache_used());
    char moved[PATH_MAX + 48];
    snprintf(moved, sizeof moved, "%s/real", dir);
    UNIT_CHECK("kernel cache: a symlink is not followed",
               rename(file, moved) == 0 && symlink(moved, file) == 0 && !kcache_used());
    unlink(file);
    unlink(moved);
    setenv("FLAMEKIT_KERNEL_CACHE", "off", 1);
    s = fk_sym_new(&(struct fk_sym_opts){ .kernel = true });
    name_of(s, fk_sym_locate(s, 1, info.lo, true), NULL);
    UNIT_CHECK("kernel cache: off, none written", access(file, F_OK) != 0);
    fk_sym_free(s);
    unsetenv("FLAMEKIT_KERNEL_CACHE");
    rmdir(dir);
    fk_symtab_free(&full);
}

/* Fork/exec/exit sequences fed by hand, with our own exe's text mapping. */
static void test_sideband(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024], exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    unsigned long long start = 0, end = 0, off = 0, ino = 0;
    unsigned maj = 0, min = 0;
    uint64_t fn = (uint64_t)(uintptr_t)unit_sym_target;
    while (f && fgets(line, sizeof line, f)) {
        char perms[8], path[PATH_MAX];
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095s", &start, &end, perms, &off,
                   &maj, &min, &ino, path) == 8 && strcmp(path, exe) == 0 && fn >= start && fn < end)
            break;
        start = end = 0;
    }
    if (f)
        fclose(f);
    UNIT_CHECK("side-band: found own text mapping", end > start);
    pid_t P = 4190001, C = 4190002, T = 4190003;   /* near pid_max: not alive */
    struct fk_symbolizer *s = fk_sym_new(&(struct fk_sym_opts){ 0 });
    fk_sym_comm(s, P, P, "fakeparent", false);
    fk_sym_mmap(s, P, start, end - start, off, maj, min, ino, PROT_READ | PROT_EXEC, MAP_PRIVATE,
                exe, NULL, 0);
    UNIT_CHECK("side-band: mmap then name", strcmp(name_at(s, P, fn + 1), "unit_sym_target") == 0);
    fk_sym_fork(s, P, P, T, P);
    UNIT_CHECK("side-band: new thread inherits comm", strcmp(fk_sym_comm_of(s, P, T), "fakeparent") == 0);
    fk_sym_fork(s, C, P, C, P);
    UNIT_CHECK("side-band: forked child has the parent's maps",
               strcmp(name_at(s, C, fn + 1), "unit_sym_target") == 0 &&
                   strcmp(fk_sym_comm_of(s, C, C), "fakeparent") == 0);
    struct fk_loc before = fk_sym_locate(s, C, fn + 1, false);
    fk_sym_comm(s, C, C, "newimage", true);
    UNIT_CHECK("side-band: exec resets maps", strcmp(name_at(s, C, fn + 1), "[unknown]") == 0);
    UNIT_CHECK("side-band: exec sets comm", strcmp(fk_sym_comm_of(s, C, C), "newimage") == 0);
    UNIT_CHECK("side-band: location from before exec still names",
               strcmp(name_of(s, before, NULL), "unit_sym_target") == 0);
    fk_sym_exit(s, P, P);
    UNIT_CHECK("side-band: exit keeps maps", strcmp(name_at(s, P, fn + 1), "unit_sym_target") == 0);
    /* an anonymous mapping over part of the text splits it */
    uint64_t page = (fn & ~0xfffULL) + 0x1000;
    if (page + 0x1000 < end) {
        fk_sym_mmap(s, P, page, 0x1000, 0, 0, 0, 0, PROT_EXEC, MAP_PRIVATE, "//anon", NULL, 0);
        enum fk_frame_kind k;
        name_of(s, fk_sym_locate(s, P, page + 8, false), &k);
        UNIT_CHECK("side-band: overlapping mmap replaces", k == FK_FRAME_JIT);
        UNIT_CHECK("side-band: rest of the text still names",
                   strcmp(name_at(s, P, fn + 1), "unit_sym_target") == 0);
    }
    /* a non-ELF file: basename + offset, never dropped */
    struct stat st;
    if (stat("/etc/passwd", &st) == 0) {
        fk_sym_mmap(s, C, 0x10000, 0x1000, 0, major(st.st_dev), minor(st.st_dev), st.st_ino,
                    PROT_EXEC, MAP_PRIVATE, "/etc/passwd", NULL, 0);
        UNIT_CHECK("side-band: unresolved shows file+offset",
                   strcmp(name_at(s, C, 0x10010), "[passwd+0x10]") == 0);
    }
    fk_sym_free(s);

    /* A tree of 5,000 short children, each forked with the parent's maps,
     * sampled, exited: each is forgotten 256 exits after its own, so what
     * is kept per process stops growing, and what was located names. */
    s = fk_sym_new(&(struct fk_sym_opts){ 0 });
    fk_sym_comm(s, P, P, "fakeparent", false);
    fk_sym_mmap(s, P, start, end - start, off, maj, min, ino, PROT_READ | PROT_EXEC, MAP_PRIVATE,
                exe, NULL, 0);
    for (int i = 0; i < 64; i++)    /* a parent of several mappings (of one file) */
        fk_sym_mmap(s, P, 0x100000000ULL + (uint64_t)i * 0x10000, 0x1000, off, maj, min, ino,
                    PROT_READ | PROT_EXEC, MAP_PRIVATE, exe, NULL, 0);
    struct fk_loc first = { 0, 0 };
    size_t bytes300 = 0, bytes5000 = 0;
    bool located = true;
    const pid_t base = 4100000;
    for (pid_t i = 0; i < 5000; i++) {
        fk_sym_fork(s, base + i, P, base + i, P);
        fk_sym_fork(s, base + i, base + i, base + 100000 + i, base + i);   /* a thread */
        struct fk_loc l = fk_sym_locate(s, base + i, fn + 1, false);
        located &= l.dso != 0;
        if (i == 0)
            first = l;
        fk_sym_exit(s, base + i, base + 100000 + i);
        fk_sym_exit(s, base + i, base + i);
        if (i == 299)
            bytes300 = fk_sym_bytes(s);
    }
    bytes5000 = fk_sym_bytes(s);
    struct fk_sym_gen g;
    fk_sym_proc_gen(s, base, &g);
    UNIT_CHECK("5000 children: each located as it ran", located && first.dso != 0);
    UNIT_CHECK("5000 children: the first is forgotten (256 exits later)", g.image == 0 && !g.exited);
    fk_sym_proc_gen(s, base + 4999, &g);
    UNIT_CHECK("5000 children: the last is kept, exited", g.image != 0 && g.exited &&
               strcmp(name_at(s, base + 4999, fn + 1), "unit_sym_target") == 0);
    UNIT_CHECK("5000 children: the first one's location still names",
               strcmp(name_of(s, first, NULL), "unit_sym_target") == 0);
    UNIT_CHECK("5000 children: the symbolizer's bytes stop growing", bytes5000 <= bytes300 + 4096);
    UNIT_CHECK("5000 children: the parent is kept", strcmp(name_at(s, P, fn + 1), "unit_sym_target") == 0 &&
               strcmp(fk_sym_comm_of(s, P, P), "fakeparent") == 0);
    struct fk_sym_stats sst;
    fk_sym_stats(s, &sst);
    UNIT_CHECK("5000 children: every process counted", sst.processes == 5001);
    fk_sym_fork(s, base, P, base, P);   /* a forgotten pid taken again */
    UNIT_CHECK("5000 children: a forgotten pid taken again has its maps",
               strcmp(name_at(s, base, fn + 1), "unit_sym_target") == 0 &&
               strcmp(fk_sym_comm_of(s, base, base), "fakeparent") == 0);
    fk_sym_free(s);
}

static void test_scan_all(void)
{
    uint64_t t0 = fk_now_ns();
    struct fk_symbolizer *s = fk_sym_new(&(struct fk_sym_opts){ .kernel = true, .jit = true });
    fk_sym_scan_all(s);
    uint64_t t1 = fk_now_ns();
    struct fk_sym_stats st;
    fk_sym_stats(s, &st);
    /* locate is the hot path: time it over our own text */
    uint64_t fn = (uint64_t)(uintptr_t)unit_sym_target, sink = 0;
    pid_t me = getpid();
    for (int i = 0; i < 1000000; i++)
        sink += fk_sym_locate(s, me, fn + (i & 63), false).addr;
    uint64_t t2 = fk_now_ns();
    printf("# scan_all: %llu processes, %llu DSOs, %.1f ms, %zu KiB held; locate %.0f ns/call\n",
           (unsigned long long)st.processes, (unsigned long long)st.dsos, (t1 - t0) / 1e6,
           fk_sym_bytes(s) / 1024, sink ? (t2 - t1) / 1e6 : 0.0);
    UNIT_CHECK("scan_all sees processes", st.processes > 5 && st.dsos > 3);
    UNIT_CHECK("scan_all: own function", strcmp(name_at(s, me, fn), "unit_sym_target") == 0);
    fk_sym_free(s);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

/* With few file descriptors allowed, DSOs past the cap are read at first
 * sight and closed; names must not change. */
static void test_fd_cap(void)
{
    struct rlimit rl = { 40, 40 };   /* the symbolizer keeps half: 20 */
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        printf("SKIP: %s: fd cap (setrlimit)\n", unit_name);
        return;
    }
    int before = count_fds();
    struct fk_symbolizer *s = fk_sym_new(&(struct fk_sym_opts){ 0 });
    fk_sym_scan_all(s);
    struct fk_sym_stats st;
    fk_sym_stats(s, &st);
    int during = count_fds();
    uint64_t fn = (uint64_t)(uintptr_t)unit_sym_target;
    printf("# fd cap: %llu DSOs, %d fds held\n", (unsigned long long)st.dsos, during - before);
    if (st.dsos > 20)
        UNIT_CHECK("fd cap: held fds bounded", during - before <= 20);
    else
        printf("SKIP: %s: fd cap (only %llu DSOs on this host)\n", unit_name, (unsigned long long)st.dsos);
    UNIT_CHECK("fd cap: names still resolve", strcmp(name_at(s, getpid(), fn), "unit_sym_target") == 0);
    fk_sym_free(s);
    UNIT_CHECK("fd cap: all closed on free", count_fds() == before);
}

/* Zero-sized labels (an untyped _start, asm labels) reach to the next
 * symbol, except inside a sized function, which keeps its own name. */
static void test_symtab_labels(void)
{
    struct fk_symtab t = { 0 };
    fk_symtab_add(&t, 0x1000, 0x100, "sized");
    fk_symtab_add(&t, 0x1040, 0, "inner_label");
    fk_symtab_add(&t, 0x2000, 0, "_start");
    fk_symtab_add(&t, 0x2008, 0, "_start_user");
    fk_symtab_sort(&t);
    const struct fk_sym *y = fk_symtab_find(&t, 0x1080, 0);
    UNIT_CHECK("symtab: a label inside a sized function does not take it over",
               y && !strcmp(fk_symtab_name(&t, y), "sized"));
    y = fk_symtab_find(&t, 0x2007, 0);
    UNIT_CHECK("symtab: an untyped entry label covers up to the next symbol",
               y && !strcmp(fk_symtab_name(&t, y), "_start"));
    y = fk_symtab_find(&t, 0x1100, 0);
    UNIT_CHECK("symtab: past a sized function, no name", y == NULL);
    fk_symtab_free(&t);
}

/* Names a hostile file repeats are stored once, long ones cut, and a
 * table with a budget refuses what would pass it. */
static void test_symtab_budget(void)
{
    size_t big = 1 << 20;
    char *name = malloc(big + 1);
    memset(name, 'x', big);
    name[big] = 0;
    struct fk_symtab t = { 0 };
    for (uint64_t i = 0; i < 5000; i++)
        fk_symtab_add(&t, 0x1000 + i, 1, name);
    UNIT_CHECK("symtab: 5000 symbols naming one 1 MiB string hold one name",
               t.strs.len == FK_SYM_NAME_MAX + 1);
    UNIT_CHECK("symtab: ... cut at FK_SYM_NAME_MAX", strlen(t.strs.data) == FK_SYM_NAME_MAX);
    UNIT_CHECK("symtab: ... and under 256 KiB", fk_symtab_bytes(&t) < 256 * 1024);
    fk_symtab_sort(&t);
    UNIT_CHECK("symtab: sorted: every symbol kept, the interning index dropped",
               t.n == 5000 && t.names.slot == NULL);
    fk_symtab_free(&t);
    struct fk_symtab b = { .budget = 64 * 1024 };
    size_t added = 0;
    for (uint64_t i = 0; i < 5000 && fk_symtab_add(&b, 0x1000 + i, 1, name + i); i++)
        added++;
    UNIT_CHECK("symtab: distinct names stop at the budget", b.over && added > 0 && added < 5000);
    UNIT_CHECK("symtab: ... within it", fk_symtab_bytes(&b) <= 64 * 1024);
    UNIT_CHECK("symtab: ... and refuse every later add", !fk_symtab_add(&b, 1, 1, "x") && b.n == added);
    fk_symtab_free(&b);
    free(name);
}

int main(void)
{
    unit_name = "unit-symbols";
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    *strrchr(self, '/') = 0;
    snprintf(symprog, sizeof symprog, "%s/progs/symprog", self);
    snprintf(tmpdir, sizeof tmpdir, "%s/fk-unit-symbols.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir))
        return 1;
    signal(SIGPIPE, SIG_IGN);

    test_symtab_labels();
    test_symtab_budget();
    test_self();
    test_deleted("deleted after first sight, fd kept", true, false, false);
    test_deleted("replaced after first sight, fd kept", true, true, false);
    test_deleted("deleted before first sight, map_files", false, false, true);
    test_deleted("replaced before first sight, map_files", false, true, true);
    test_mount_ns();
    test_jit();
    test_kernel();
    test_kernel_cache();
    test_symtab_sort_order();
    test_sideband();
    test_scan_all();
    test_fd_cap();
    rmdir(tmpdir);
    return UNIT_END();
}
