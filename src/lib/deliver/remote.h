/* SPDX-License-Identifier: GPL-2.0-only */
/* 'flamekit remote': run a capture on hosts over the user's own ssh and
 * receive its result stream (stream.h) into a local directory. */
#ifndef FK_REMOTE_H
#define FK_REMOTE_H

#include "util/fk.h"

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
    const char *outdir;         /* NULL: ~/Downloads if it exists, else . */
    bool open;                  /* open each SVG with xdg-open/open */
    int tty;                    /* -1 auto, 0 event lines, 1 live lines */
};

/* Runs everything; returns the exit code (0 only if every host succeeded). */
int fk_remote_run(const struct fk_remote_opts *o);

#endif
