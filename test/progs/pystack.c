/* SPDX-License-Identifier: GPL-2.0-only */
/* Test helper: print the Python chains of a running CPython process's
 * threads as unwind/python.c reads them (root first, ';'-separated), one
 * line per thread: "TID STATUS CHAIN". usage: pystack [--lines] PID [COUNT [INTERVAL_MS]]
 * Reads COUNT times (default 1), INTERVAL_MS apart (default 10). */
#include "unwind/python.h"
#include "util/buf.h"
#include "cmd/term.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    bool lines = argc > 1 && strcmp(argv[1], "--lines") == 0;
    if (lines) {
        argv++;
        argc--;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: pystack [--lines] PID [COUNT [INTERVAL_MS]]\n");
        return 2;
    }
    pid_t pid = (pid_t)atoi(argv[1]);
    int count = argc > 2 ? atoi(argv[2]) : 1;
    int ms = argc > 3 ? atoi(argv[3]) : 10;
    struct fk_sym_opts so = { .annotate = true, .warn = fk_warn_line };
    struct fk_symbolizer *s = fk_sym_new(&so);
    fk_sym_scan_pid(s, pid);
    struct fk_python *py = fk_python_new(s, lines, 64u << 20);
    struct fk_buf b = FK_BUF_INIT;
    for (int k = 0; k < count; k++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        if (!d)
            break;
        struct dirent *de;
        while ((de = readdir(d))) {
            pid_t tid = (pid_t)atoi(de->d_name);
            if (tid <= 0)
                continue;
            fk_buf_reset(&b);
            int st = fk_python_thread(py, pid, tid, &b);
            printf("%d %s %.*s\n", (int)tid, fk_py_status_name(st), (int)b.len, b.data ? b.data : "");
        }
        closedir(d);
        struct timespec ts = { 0, ms * 1000000L };
        if (k + 1 < count)
            nanosleep(&ts, NULL);
    }
    struct fk_python_stats st;
    fk_python_stats(py, &st);
    fprintf(stderr, "versions: %s; processes %llu, unknown %llu\n", st.versions,
            (unsigned long long)st.processes, (unsigned long long)st.unknown_version);
    fk_buf_free(&b);
    fk_python_free(py);
    fk_sym_free(s);
    return 0;
}
