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

struct fk_pyframes {
    struct fk_stack_hook hook;
    struct fk_python *py;
    struct fk_pygate *gate;     /* the engine's Python gate, or NULL */
    bool lines;
    uint64_t max_bytes;
};

/* lines: "qualname (file.py:LINE)"; max_bytes: what the reader's caches
 * may hold (its share of --max-memory). */
void fk_pyframes_init(struct fk_pyframes *h, bool lines, uint64_t max_bytes);
/* After fk_capture_run: the statistics (zero when no sample came), then
 * the reader is freed. */
void fk_pyframes_finish(struct fk_pyframes *h, struct fk_python_stats *out);

#endif
