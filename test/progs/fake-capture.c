/* SPDX-License-Identifier: GPL-2.0-only */
/* A stand-in for 'flamekit CAPTURE --stdout' on the remote side of the
 * remote tests: speaks the real result stream (our writer) with known
 * content, and can fail, hang mid-file or corrupt on request.
 *   pid N --stdout             error end record if N does not exist
 *   run [--where F] [--fixed-time] [--wait S] -- CMD...
 *                              runs CMD for up to 1 s (S s), sends SVG/folded/JSON
 *   slow PIDFILE --stdout      half a file, then waits to be killed
 *   garble --stdout            a stream with one corrupted byte */
#include "deliver/stream.h"
#include "render/svg.h"
#include "stacks/folded.h"
#include "util/outfile.h"
#include "cmd/term.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool fixed_time;     /* run --fixed-time: names that clash on purpose */

static char *stamp_name(const char *scope, const char *what)
{
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%d_%H%M%S_UTC", &tm);
    if (fixed_time)
        strcpy(ts, "20261202_000000_UTC");
    return fk_asprintf("%s.%s.%s.%s", host, ts, scope, what);
}

static int send_result(const char *scope, const char *comm)
{
    struct fk_stacktab t;
    fk_stacktab_init(&t);
    char *k1 = fk_asprintf("%s;main;fake_hot_function", comm);
    char *k2 = fk_asprintf("%s;main;fake_cold_function", comm);
    fk_stacktab_add(&t, k1, strlen(k1), 90);
    fk_stacktab_add(&t, k2, strlen(k2), 10);
    char dir[] = "/tmp/fk-fake-capture.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char *svg = fk_asprintf("%s/svg", dir), *fold = fk_asprintf("%s/folded", dir);
    struct fk_outfile o;
    struct fk_svg_opts so;
    fk_svg_opts_init(&so);
    char err[512] = "";
    bool ok = fk_outfile_open(&o, svg, 0600, err, sizeof err) && fk_svg_write(&o, &t, &so) &&
              fk_outfile_commit(&o, err, sizeof err);
    ok = ok && fk_outfile_open_gz(&o, fold, 0600, err, sizeof err) && fk_folded_write(&o, &t) &&
         fk_outfile_commit(&o, err, sizeof err);
    struct fk_stream_writer w = { .fd = -1 };
    char *n1 = stamp_name(scope, "flamegraph.svg"), *n2 = stamp_name(scope, "folded.gz"),
         *n3 = stamp_name(scope, "json");
    char *json = fk_asprintf("{\"scope\": \"%s\", \"samples\": 100}\n", scope);
    ok = ok && fk_stream_begin(&w, 1) && fk_stream_file_path(&w, n1, svg) &&
         fk_stream_file_path(&w, n2, fold) && fk_stream_file(&w, n3, json, strlen(json)) &&
         fk_stream_end(&w, 0, "");
    if (err[0])
        fk_error("%s", err);
    else if (!ok && w.failed)
        fk_error("%s", w.error);
    unlink(svg);
    unlink(fold);
    rmdir(dir);
    return ok ? 0 : 1;
}

static void strip_stdout(int *argc, char **argv)
{
    int j = 0;
    for (int i = 0; i < *argc; i++)
        if (strcmp(argv[i], "--stdout"))
            argv[j++] = argv[i];
    argv[j] = NULL;
    *argc = j;
}

static int fail(int status, const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    struct fk_stream_writer w;
    fk_stream_begin(&w, 1);
    fk_stream_end(&w, status, msg);
    return status;
}

int main(int argc, char **argv)
{
    fk_progname = "flamekit";
    strip_stdout(&argc, argv);
    if (argc < 2)
        return fail(2, "flamekit: no capture command");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "pid") && argc == 3) {
        char *p = fk_asprintf("/proc/%s/comm", argv[2]);
        FILE *f = fopen(p, "r");
        if (!f) {
            char *m = fk_asprintf("flamekit pid: no process with PID %s; check it with 'ps -p %s'",
                                  argv[2], argv[2]);
            return fail(1, m);
        }
        char comm[64] = "";
        if (!fgets(comm, sizeof comm, f))
            strcpy(comm, "unknown");
        comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        char *scope = fk_asprintf("pid-%s", argv[2]);
        fprintf(stderr, "flamekit pid: capturing PID %s (%s)\n", argv[2], comm);
        return send_result(scope, comm);
    }
    if (!strcmp(cmd, "run")) {
        int i = 2;
        const char *where = NULL;
        if (i + 1 < argc && !strcmp(argv[i], "--where"))
            where = argv[i + 1], i += 2;
        if (i < argc && !strcmp(argv[i], "--fixed-time"))
            fixed_time = true, i++;
        int waits = 100;    /* 10 ms each */
        if (i + 1 < argc && !strcmp(argv[i], "--wait"))
            waits = 100 * atoi(argv[i + 1]), i += 2;
        if (i >= argc || strcmp(argv[i], "--"))
            return fail(2, "flamekit run: usage: run [--where FILE] [--fixed-time] [--wait S] -- CMD");
        i++;
        if (where) {
            /* Where we run from and that directory's mode, for the deploy test. */
            char self[PATH_MAX];
            ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
            if (n < 0)
                return fail(1, "readlink failed");
            self[n] = '\0';
            *strrchr(self, '/') = '\0';
            struct stat st;
            stat(self, &st);
            FILE *f = fopen(where, "w");
            if (f) {
                fprintf(f, "%s %o\n", self, (unsigned)(st.st_mode & 07777));
                fclose(f);
            }
        }
        pid_t pid = fork();
        if (pid == 0) {
            dup2(2, 1);
            execvp(argv[i], argv + i);
            _exit(127);
        }
        for (int t = 0; t < waits; t++) {
            if (waitpid(pid, NULL, WNOHANG) == pid) {
                pid = 0;
                break;
            }
            usleep(10000);
        }
        if (pid) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        const char *b = strrchr(argv[i], '/');
        b = b ? b + 1 : argv[i];
        char *scope = fk_asprintf("run-%s", b);
        return send_result(scope, b);
    }
    if (!strcmp(cmd, "slow") && argc == 3) {
        FILE *f = fopen(argv[2], "w");
        if (f) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
        /* A file header promising 1 MiB, then 1000 bytes, then silence. */
        static const unsigned char head[] =
            "FKS1F\0\x1f\0\0\0\0\0\x10\0\0s.20261202_000000_UTC.slow.json";
        if (write(1, head, 4 + 11 + 31) != 46)
            return 1;
        char junk[1000];
        memset(junk, 'x', sizeof junk);
        if (write(1, junk, sizeof junk) != (ssize_t)sizeof junk)
            return 1;
        fprintf(stderr, "flamekit slow: sent 1000 bytes, waiting\n");
        sleep(60);
        return 0;
    }
    if (!strcmp(cmd, "evil"))
        return fail(1, "flamekit evil: bad\033[2J\xc2\x9b" "2J\x9bthing \xc3\xa9");
    if (!strcmp(cmd, "garble")) {
        /* Valid framing, bad CRC in the second record's payload. */
        char path[] = "/tmp/fk-fake-garble.XXXXXX";
        int fd = mkstemp(path);
        struct fk_stream_writer w;
        fk_stream_begin(&w, fd);
        fk_stream_file(&w, "g.20261202_000000_UTC.garble.flamegraph.svg",
                       "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n", 41);
        fk_stream_file(&w, "g.20261202_000000_UTC.garble.folded.gz",
                       "abcdefghijklmnopqrstuvwxyz", 26);
        fk_stream_end(&w, 0, "");
        off_t n = lseek(fd, 0, SEEK_END);
        char *buf = fk_malloc((size_t)n);
        if (pread(fd, buf, (size_t)n, 0) != n)
            return 1;
        close(fd);
        unlink(path);
        buf[n - 40] ^= 1;
        return write(1, buf, (size_t)n) == n ? 0 : 1;
    }
    if (!strcmp(cmd, "plant")) {
        /* A well-formed, successful stream that plants a file no capture
         * writes (argv[2], e.g. Makefile) beside a real result name. */
        struct fk_stream_writer w;
        bool ok = fk_stream_begin(&w, 1) &&
                  fk_stream_file(&w, "p.20261202_000000_UTC.plant.json", "{}\n", 3) &&
                  fk_stream_file(&w, argc > 2 ? argv[2] : "Makefile", "all:\n\ttrue\n", 11) &&
                  fk_stream_end(&w, 0, "");
        if (!ok)
            fk_error("%s", w.error);
        return ok ? 0 : 1;
    }
    return fail(2, "flamekit: unknown fake capture command");
}
