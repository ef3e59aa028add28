/* SPDX-License-Identifier: GPL-2.0-only */
/* The Python stack hook (see pyframes.h). */
#include "engine/pyframes.h"

#include "capture/pygate.h"

#include <string.h>

static struct fk_python *reader(struct fk_pyframes *h, struct fk_engine *e)
{
    if (!h->py) {
        h->py = fk_python_new(fk_engine_symbolizer(e), h->lines, h->max_bytes);
        h->gate = fk_engine_pygate(e);
        if (h->gate)
            fk_python_set_gate(h->py, h->gate);
    }
    return h->py;
}

/* The reader's thread: h->py was made by the first catch_up, before the
 * thread started. The chain the gate's program read at the sample, if it
 * did, is joined to it here (capture/pygate.h). */
static unsigned early(void *state, const struct fk_sample *s)
{
    struct fk_pyframes *h = state;
    if (!h->py)
        return 0;
    struct fk_pygate_chain c;
    bool chain = h->gate && fk_pygate_take(h->gate, s->cpu, s->tid, s->ip, s->time, &c);
    int got = fk_python_early(h->py, s->pid, s->tid, s->time, chain ? &c : NULL);
    /* a read or the program's chain waits in a slot for the sample */
    return (got & FK_PY_EARLY_WAIT ? FK_EARLY_CATCH_UP : 0u) |
           (got & FK_PY_EARLY_READ ? FK_EARLY_FOLLOW : 0u) |
           (chain || (got & FK_PY_EARLY_READ) ? FK_EARLY_HELD : 0u);
}

static void mapped(void *state, pid_t pid, const char *path, uint64_t time)
{
    struct fk_pyframes *h = state;
    if (h->py)
        fk_python_mapped(h->py, pid, path, time);
}

static void forked(void *state, pid_t pid, pid_t ppid, uint64_t time)
{
    struct fk_pyframes *h = state;
    if (h->py)
        fk_python_forked(h->py, pid, ppid, time);
}

static void catch_up(void *state, struct fk_engine *e)
{
    fk_python_catch_up(reader(state, e));
}

static bool catch_up_due(void *state)
{
    const struct fk_pyframes *h = state;
    return !h->py || fk_python_catch_up_due(h->py);
}

static void user_frames(void *state, struct fk_engine *e, const struct fk_sample *s,
                        struct fk_stack_frames *st)
{
    struct fk_pyframes *h = state;
    if (st->user >= st->n) {
        if (fk_engine_pygate(e))
            fk_python_settle(reader(h, e), st->pid);
        return;
    }
    struct fk_python *py = reader(h, e);
    struct fk_py_native nat = {
        .locs = st->locs + st->user, .n = st->n - st->user, .max = st->cap - st->user,
        .complete = true, .time = s->time,
    };
    struct fk_loc trunc = fk_sym_special(fk_engine_symbolizer(e), "[truncated]");
    const struct fk_loc *last = &nat.locs[nat.n - 1];
    if (last->dso == trunc.dso && last->addr == trunc.addr)
        nat.complete = false;
    struct fk_unwinder *uw = fk_engine_unwinder(e);
    if (st->user_unwound && uw) {
        nat.sps = fk_unwind_last_sps(uw, &nat.nsps);
        if (nat.nsps && s->stack) {
            nat.stack = s->stack;
            nat.stack_base = nat.sps[0];
            nat.stack_len = s->stack_dyn;
        }
    }
    fk_python_sample(py, st->pid, st->tid, &nat);
    st->n = st->user + nat.n;
}

static size_t bytes(void *state)
{
    const struct fk_pyframes *h = state;
    return fk_python_bytes(h->py);
}

void fk_pyframes_init(struct fk_pyframes *h, bool lines, uint64_t max_bytes)
{
    memset(h, 0, sizeof *h);
    h->lines = lines;
    h->max_bytes = max_bytes;
    h->hook.name = "python";
    h->hook.state = h;
    h->hook.user_frames = user_frames;
    h->hook.early = early;
    h->hook.catch_up = catch_up;
    h->hook.catch_up_due = catch_up_due;
    h->hook.mapped = mapped;
    h->hook.forked = forked;
    h->hook.bytes = bytes;
}

void fk_pyframes_finish(struct fk_pyframes *h, struct fk_python_stats *out)
{
    memset(out, 0, sizeof *out);
    if (h->py)
        fk_python_stats(h->py, out);
    fk_python_free(h->py);
    h->py = NULL;
}
