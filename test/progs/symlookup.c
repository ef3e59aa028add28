/* SPDX-License-Identifier: GPL-2.0-only */
/* Test helper: symbolize addresses of a live process the way a capture
 * does (scan at first sight, locate, name after it may have exited).
 *   symlookup [-M] [-k] [-a] [-w] [-g] [-T BUDGET_MS,REQUEST_MS] PID [PID2:]HEXADDR...
 * -M: never use /proc/PID/map_files; -k: addresses are kernel; -a: annotate;
 * -T: debuginfod time bounds (servers: $DEBUGINFOD_URLS, as in a capture);
 * PID2:HEXADDR: an address in another process (one symbolizer for all);
 * -g: after each name, the debug file it came from (fk_sym_debug_file).
 * With -w: prints "located" once every address is located (their files
 * opened), then reads a line from stdin before naming them. */
#include "symbols/symbols.h"
#include "cmd/term.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct fk_sym_opts o = { .kernel = true, .jit = true,
                             .debuginfod_urls = getenv("DEBUGINFOD_URLS"), .warn = fk_warn_line };
    bool kernel = false, wait_line = false, debug_file = false;
    int opt;
    fk_progname = "symlookup";
    while ((opt = getopt(argc, argv, "MkawgT:")) != -1) {
        switch (opt) {
        case 'M': o.no_map_files = true; break;
        case 'k': kernel = true; break;
        case 'a': o.annotate = true; break;
        case 'w': wait_line = true; break;
        case 'g': debug_file = true; break;
        case 'T':
            if (sscanf(optarg, "%u,%u", &o.debuginfod_budget_ms, &o.debuginfod_request_ms) != 2)
                return 2;
            break;
        default: return 2;
        }
    }
    if (optind + 2 > argc) {
        fprintf(stderr, "usage: symlookup [-M] [-k] [-a] [-w] [-g] [-T BUDGET_MS,REQUEST_MS] PID [PID2:]HEXADDR...\n");
        return 2;
    }
    pid_t pid = (pid_t)atoi(argv[optind]);
    struct fk_symbolizer *s = fk_sym_new(&o);
    fk_sym_scan_pid(s, pid);
    int n = argc - optind - 1;
    struct fk_loc *locs = fk_calloc((size_t)n, sizeof *locs);
    for (int i = 0; i < n; i++) {
        const char *arg = argv[optind + 1 + i], *colon = strchr(arg, ':');
        pid_t p = colon ? (pid_t)atoi(arg) : pid;
        if (colon)
            fk_sym_scan_pid(s, p);
        locs[i] = fk_sym_locate(s, p, strtoull(colon ? colon + 1 : arg, NULL, 16), kernel);
    }
    if (wait_line) {
        printf("located\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            line[0] = 0;
    }
    struct fk_buf b = FK_BUF_INIT;
    for (int i = 0; i < n; i++) {
        fk_buf_reset(&b);
        fk_sym_name(s, locs[i], &b);
        printf("%s\n", fk_buf_cstr(&b));
        int fd = debug_file ? fk_sym_debug_file(s, locs[i].dso) : -1;
        if (fd >= 0) {
            char link[64], path[4096];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t len = readlink(link, path, sizeof path - 1);
            printf("debug file: %.*s\n", len > 0 ? (int)len : 0, path);
            close(fd);
        } else if (debug_file) {
            printf("debug file: none\n");
        }
    }
    fk_buf_free(&b);
    free(locs);
    fk_sym_free(s);
    return 0;
}
