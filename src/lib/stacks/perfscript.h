/* SPDX-License-Identifier: GPL-2.0-only */
/* Streaming parser of `perf script` text into the stack table. One pass, no
 * regular expressions; memory is the table plus the largest single sample.
 * Keys are "comm;outer;...;leaf" (root first), like stackcollapse-perf.pl. */
#ifndef FK_PERFSCRIPT_H
#define FK_PERFSCRIPT_H

#include "stacktab.h"
#include "folded.h"
#include "util/buf.h"

struct fk_perfscript_opts {
    bool pid;               /* process name becomes comm-PID */
    bool tid;               /* comm-PID/TID */
    bool kernel;            /* append _[k] to kernel frames */
    bool jit;               /* append _[j] to perf-PID.map frames */
    bool inline_mark;       /* append _[i] to inlined frames */
    bool no_inline;         /* drop frames perf marks "(inlined)" */
    bool addrs;             /* keep +0x offsets, show addresses of unknown frames */
    bool period;            /* weight by the sample period, not 1 per sample */
    const char *event;      /* count only this event; NULL = the first seen */
};

struct fk_perfscript {
    struct fk_perfscript_opts o;
    struct fk_stacktab *tab;
    struct fk_parse_stats *st;
    char *event;                /* the event counted (first seen or o.event) */
    bool event_defaulted;
    char *other_event;          /* first event skipped, for the warning */
    uint64_t samples;           /* samples counted */
    uint64_t skipped_events;    /* samples of other events */
    /* the sample being read */
    bool in_sample, keep;
    uint64_t weight;
    char *stk;                  /* frames, written backwards from the end */
    size_t stk_cap, stk_pos;
    struct fk_buf pname;
    uint64_t nframes;
};

void fk_perfscript_init(struct fk_perfscript *p, const struct fk_perfscript_opts *o,
                        struct fk_stacktab *tab, struct fk_parse_stats *st);
/* Feed one line (without its newline); the line may be modified. */
void fk_perfscript_line(struct fk_perfscript *p, char *line, size_t len, uint64_t lineno);
/* End of input: count the last sample. */
void fk_perfscript_finish(struct fk_perfscript *p);
void fk_perfscript_free(struct fk_perfscript *p);
/* Parse a whole file ("-" = stdin, gzip transparent). false on I/O error
 * (already reported). */
bool fk_perfscript_read(struct fk_perfscript *p, const char *path);
/* The same from an open reader (to its end). */
struct fk_lineread;
bool fk_perfscript_read_lines(struct fk_perfscript *p, struct fk_lineread *r);

#endif
