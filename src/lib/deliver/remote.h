/* SPDX-License-Identifier: GPL-2.0-only */
/* Remote capture ('flamekit remote'): run a capture on hosts over the
 * user's own ssh and receive each result stream (stream.h) into a local
 * directory. The library runs the ssh children and their pipes; it never
 * writes to the terminal: every event and every line a host's stderr
 * carries goes to the caller's line hook, and the caller draws, prints the
 * summary, lists the files and handles signals (cmd/remote.c), as git's
 * builtin/fetch.c does above transport.c.
 *
 * Use: fk_remote_start, then fk_remote_step until it returns false (or
 * fk_remote_cancel when asked to stop), read hosts[], fk_remote_free. */
#ifndef FK_REMOTE_H
#define FK_REMOTE_H

#include "deliver/stream.h"
#include "util/buf.h"
#include "util/fk.h"

#include <sys/types.h>

#define FK_REMOTE_ERR_TAIL 40   /* stderr lines kept per host */

struct fk_remote_host;

struct fk_remote_opts {
    char **hosts;
    size_t nhosts;
    char **capture;             /* capture command and its arguments */
    size_t ncapture;
    char **ssh_cmd;             /* the ssh program and its own arguments */
    size_t nssh_cmd;
    char **ssh_opts;            /* each passed as "-o OPT" */
    size_t nssh_opts;
    bool sudo;                  /* prefix the remote command with sudo -n */
    const char *remote_path;    /* remote flamekit; default "flamekit" */
    bool deploy;                /* copy a local binary and run that */
    const char *deploy_binary;  /* default: this program (/proc/self/exe) */
    const char *outdir;         /* where the files land (checked by the caller) */
    /* Each event ("receiving results", "done: 3 files", "FAILED: why") and
     * each line of a host's stderr, made safe for a terminal; h->status
     * already holds it. May be NULL. */
    void (*line)(void *ctx, const struct fk_remote_host *h, const char *text);
    void *ctx;
};

/* One host. The caller reads name, status, start_ns, finished, ok,
 * reason, the stderr tail (fk_remote_err_line) and rd.files[0..rd.nfiles)
 * (the local paths, once ok); the rest is the library's. */
struct fk_remote_host {
    const char *name;
    char *status;                 /* the latest event or stderr line */
    uint64_t start_ns;
    bool finished, ok;
    char *reason;                 /* why it failed: one line, terminal-safe */
    size_t err_n;                 /* stderr lines seen; the last FK_REMOTE_ERR_TAIL kept */
    struct fk_stream_reader rd;
    /* the library's */
    char *prefix;                 /* file-name-safe host, for clashing names */
    pid_t pid;
    int in_fd, out_fd, err_fd;
    size_t upload_off;
    bool upload_done, receiving, reaped;
    size_t files_seen;
    struct fk_buf line;           /* partial stderr line */
    char *err_tail[FK_REMOTE_ERR_TAIL];
    int wstatus;
};

struct fk_remote {
    struct fk_remote_host *hosts;
    size_t nhosts;
    /* the library's */
    const struct fk_remote_opts *o;
    char *bin;                    /* --deploy: the binary copied to each host */
    size_t bin_len;
    char *command;
    struct pollfd *pfd;
};

/* Read the --deploy binary and start ssh for every host (a host whose ssh
 * cannot start is finished at once, with its reason). False when nothing
 * could start, the reason in err. */
bool fk_remote_start(struct fk_remote *r, const struct fk_remote_opts *o, char *err,
                     size_t errlen);
/* Wait at most timeout_ms (-1: until something arrives) and handle what
 * arrived. False once every host has finished, or when poll failed (the
 * reason in err, err[0] is 0 otherwise). */
bool fk_remote_step(struct fk_remote *r, int timeout_ms, char *err, size_t errlen);
/* Stop every host still running (ssh gets SIGTERM, its temporaries go):
 * each is finished with the reason "interrupted; no files written". */
void fk_remote_cancel(struct fk_remote *r);
/* Line i (0 = oldest kept) of the host's stderr tail; there are
 * min(err_n, FK_REMOTE_ERR_TAIL). */
const char *fk_remote_err_line(const struct fk_remote_host *h, size_t i);
void fk_remote_free(struct fk_remote *r);

#endif
