/* SPDX-License-Identifier: GPL-2.0-only */
/* The Python stack hook (engine/evkind.h's struct fk_stack_hook): CPython
 * frames read from the target (unwind/python.h) spliced into every kept
 * sample's user stack, whatever the event kind. The runner owns one per
 * capture: fk_pyframes_init before fk_capture_run, fk_pyframes_finish
 * after it (statistics, then everything freed). The reader itself is made
 * at the first sample, when the engine's symbolizer exists. */
#ifndef FK_ENGINE_PYFRAMES_H
#define FK_ENGINE_PYFRAMES_H

#include "engine/evkind.h"
#include "unwind/python.h"
#include "unwind/unwind.h"

struct ring_buffer;

struct fk_pyframes {
    struct fk_stack_hook hook;
    struct fk_python *py;
    bool lines;
    uint64_t max_bytes;
    /* frames read in the kernel at the sample (fk_python_set_kernel) */
    bool kernel;                /* the program is loaded (in_kernel said true) */
    unsigned attached, refused; /* sampling events given it / that refused it */
    char why[256];              /* why not (or why one refused) */
    int prog_fd, tstates_fd, ring_fd;   /* -1: none */
    struct ring_buffer *ring;
};

/* lines: "qualname (file.py:LINE)"; max_bytes: what the reader's caches
 * may hold (its share of --max-memory). */
void fk_pyframes_init(struct fk_pyframes *h, bool lines, uint64_t max_bytes);
/* After fk_capture_run: the statistics (zero when no sample came), then
 * the reader is freed. */
void fk_pyframes_finish(struct fk_pyframes *h, struct fk_python_stats *out);

#endif
