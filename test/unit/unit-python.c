/* SPDX-License-Identifier: GPL-2.0-only */
/* unit/python: the CPython walker over a fake 3.11 address space (names in
 * every string kind, hostile names, lines, threads, cycles, bad types,
 * bounds, the memory budget) and the splice of its chains into native
 * stacks; the _PyCFrame anchor in a sample's stack copy (and 3.11's
 * root_cframe on Debian's python3.11); finding CPython again when a pid
 * execs, and as soon as its interpreter is mapped. */
#include "fakepy.h"
#include "unit.h"
#include "util/buf.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned char *mem;

/* The chain, root first, ';'-separated. */
static const char *chain(struct fk_py_walker *w, const struct fk_py_stack *s)
{
    static struct fk_buf b;
    fk_buf_reset(&b);
    for (unsigned i = s->n; i-- > 0;) {
        size_t len;
        const char *n = fk_py_name(w, s->f[i].name, &len);
        fk_buf_add(&b, n, len);
        if (s->f[i].entry)
            fk_buf_addc(&b, '!');
        if (i)
            fk_buf_addc(&b, ';');
    }
    return fk_buf_cstr(&b);
}

static struct fk_py_stack st;

/* The walkers' clock (FK_PY_MAX_NS): it moves only when a check moves it,
 * so a walk preempted on a loaded machine is not cut short by the wall
 * clock -- two checks here failed that way at load 20+ -- and the bound
 * itself is checked (test_time_bound). */
static uint64_t clock_ns = 1;
static uint64_t clock_step;     /* added at every look */
static uint64_t test_clock(void)
{
    return clock_ns += clock_step;
}

static struct fk_py_walker *walker_new(const struct fk_py_layout *lay,
                                       const struct fk_py_where *where, fk_py_read_fn read,
                                       void *ctx, bool lines, uint64_t max_bytes)
{
    struct fk_py_walker *w = fk_py_walker_new(lay, where, read, ctx, lines, max_bytes);
    fk_py_walker_set_clock(w, test_clock);
    return w;
}

/* The fake interpreter's first thread state (fakepy_threads made it) and,
 * when cf is not NULL, its _PyCFrame. */
static uint64_t first_tstate(struct fakepy *f, uint64_t *cf)
{
    const struct fk_py_layout *L = f->L;
    uint64_t interp, ts;
    fakepy_read(f, f->where.runtime + L->rt_interp_head, &interp, 8);
    fakepy_read(f, interp + L->interp_threads_head, &ts, 8);
    if (cf)
        fakepy_read(f, ts + L->ts_cframe, cf, 8);
    return ts;
}

static void test_basic(void)
{
    struct fakepy f;
    fakepy_init(&f, mem);
    uint64_t file = fakepy_ascii(&f, "/srv/app/main.py");
    static const unsigned char lt[] = { 0xe9, 0x02, 0xea, 0x04 };  /* +1 x2, +2 x3 */
    uint64_t ltb = fakepy_bytes(&f, lt, sizeof lt);
    uint64_t cmod = fakepy_code(&f, fakepy_ascii(&f, "<module>"), file, 1, ltb, 5);
    uint64_t cf = fakepy_code(&f, fakepy_ascii(&f, "f"), file, 10, ltb, 5);
    uint64_t cg = fakepy_code(&f, fakepy_ascii(&f, "Klass.g"), file, 20, ltb, 5);
    uint64_t f0 = fakepy_frame(&f, cmod, 0, 0, true);
    uint64_t f1 = fakepy_frame(&f, cf, f0, 3, false);
    uint64_t f2 = fakepy_frame(&f, cg, f1, 1, true);    /* called from C: its own segment */
    uint64_t tids[2] = { 100, 101 }, frames[2] = { f2, 0 };
    fakepy_threads(&f, tids, frames, 2);

    struct fk_py_walker *w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 100, &st);
    UNIT_CHECK("a thread's chain is walked to its root", st.status == FK_PY_OK && st.n == 3);
    UNIT_CHECK("names from co_qualname, entry frames marked",
               strcmp(chain(w, &st), "<module>!;f;Klass.g!") == 0);
    UNIT_CHECK("two entry segments", st.segments == 2);
    fk_py_walk(w, 101, &st);
    UNIT_CHECK("a thread without Python code is idle", st.status == FK_PY_IDLE && st.n == 0);
    fk_py_walk(w, 999, &st);
    UNIT_CHECK("an unknown thread has no state", st.status == FK_PY_NO_THREAD);
    fk_py_walker_free(w);

    w = walker_new(f.L, &f.where, fakepy_read, &f, true, 0);
    fk_py_walk(w, 100, &st);
    UNIT_CHECK("lines from the 3.11 location table at prev_instr",
               strcmp(chain(w, &st), "<module> (main.py:2)!;f (main.py:13)!" ) != 0 &&
               strcmp(chain(w, &st), "<module> (main.py:2)!;f (main.py:13);Klass.g (main.py:21)!") == 0);
    fk_py_walker_free(w);

    /* splice: native leaf first: libc, eval(g), ext, eval(<module>, f), main */
    bool ev[5] = { false, true, false, true, false };
    struct fk_py_item it[32];
    enum fk_py_verdict v;
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 100, &st);
    size_t n = fk_py_splice(ev, 5, true, &st, it, 32, &v);
    /* expected leaf first: N0, g, N2, f, <module>, N4 */
    bool ok = n == 6 && v == FK_PY_CONSISTENT && it[0].kind == FK_PY_NATIVE && it[0].index == 0 &&
              it[1].kind == FK_PY_PYFRAME && it[1].index == 0 && it[2].kind == FK_PY_NATIVE &&
              it[2].index == 2 && it[3].kind == FK_PY_PYFRAME && it[3].index == 1 &&
              it[4].kind == FK_PY_PYFRAME && it[4].index == 2 && it[5].kind == FK_PY_NATIVE &&
              it[5].index == 4;
    UNIT_CHECK("each entry segment replaces its eval frame; C frames stay in place", ok);
    bool ev1[3] = { false, true, false };
    n = fk_py_splice(ev1, 3, true, &st, it, 32, &v);
    /* one eval frame, two segments: root pair not trusted either -> changed */
    UNIT_CHECK("fewer eval frames than segments: [python: changed], counted",
               v == FK_PY_CHANGED_STACK && n == 3 && it[1].kind == FK_PY_CHANGED);
    bool ev3[4] = { true, true, true, false };
    n = fk_py_splice(ev3, 4, true, &st, it, 32, &v);
    /* three eval frames, two segments: outermost pair spliced from the root */
    ok = v == FK_PY_CHANGED_STACK && it[0].kind == FK_PY_CHANGED && it[1].kind == FK_PY_CHANGED;
    ok = ok && n == 5 && it[2].kind == FK_PY_PYFRAME && it[2].index == 1 &&
         it[3].kind == FK_PY_PYFRAME && it[3].index == 2 && it[4].kind == FK_PY_NATIVE;
    UNIT_CHECK("more eval frames than segments: root part spliced, the rest marked", ok);
    n = fk_py_splice(ev, 3, false, &st, it, 32, &v);
    ok = v == FK_PY_NATIVE_CUT && n == 3 && it[1].kind == FK_PY_PYFRAME && it[1].index == 0;
    UNIT_CHECK("a cut native stack is spliced from the leaf", ok);
    n = fk_py_splice(ev, 5, true, &st, it, 3, &v);
    UNIT_CHECK("the splice never writes past its room", n == 3);

    /* anchored: each segment from the sample's own head */
    uint64_t heads[2] = { f2, f1 };
    fk_py_walk_from(w, heads, 2, true, &st);
    ok = st.status == FK_PY_OK && st.anchored && st.segments == 2 && !st.stale[0] &&
         !st.stale[1] && st.seg_end[0] == 1 && st.seg_end[1] == 3 &&
         strcmp(chain(w, &st), "<module>!;f;Klass.g!") == 0;
    UNIT_CHECK("an anchored walk follows each segment from its head", ok);
    n = fk_py_splice(ev, 5, true, &st, it, 32, &v);
    ok = n == 6 && v == FK_PY_CONSISTENT && it[1].kind == FK_PY_PYFRAME && it[1].index == 0 &&
         it[3].index == 1 && it[4].index == 2;
    UNIT_CHECK("... and splices one segment per eval frame", ok);
    uint64_t moved[2] = { f2, f0 };     /* f1 returned since the sample */
    fk_py_walk_from(w, moved, 2, true, &st);
    ok = st.status == FK_PY_OK && st.stale[0] && !st.stale[1];
    UNIT_CHECK("a segment that no longer leads to the next head is stale", ok);
    n = fk_py_splice(ev, 5, true, &st, it, 32, &v);
    ok = v == FK_PY_CHANGED_STACK && it[1].kind == FK_PY_CHANGED && it[3].kind == FK_PY_PYFRAME;
    UNIT_CHECK("... shown as [python: changed], the outer segment kept", ok);
    uint64_t bad[2] = { 0xdeadbeef0ull, f1 };
    fk_py_walk_from(w, bad, 2, true, &st);
    UNIT_CHECK("an unreadable head marks its segment and the outer ones stale",
               st.stale[0] && st.stale[1]);
    uint64_t notroot[1] = { f1 };
    fk_py_walk_from(w, notroot, 1, false, &st);
    UNIT_CHECK("a cut native stack: the last segment may have callers", !st.stale[0]);
    uint64_t inner[1] = { f2 };     /* g's segment alone, its caller f1 */
    fk_py_walk_from(w, inner, 1, true, &st);
    UNIT_CHECK("a complete one: the root segment's entry must have no caller", st.stale[0]);
    fk_py_walker_free(w);
}

/* A chain the gate's program read at the sample: walked without a read
 * of frames, the same names as the live walk; a record whose thread
 * state no longer says its tid (a reused tid) is refused; a chain deeper
 * than the program reads goes on from the target. */
static void test_chain(void)
{
    static struct fk_py_snap snap;
    static unsigned char frames[FK_PYGATE_DEPTH * FK_PYGATE_STRIDE];
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    uint64_t file = fakepy_ascii(&f, "c.py");
    uint64_t ca = fakepy_code(&f, fakepy_ascii(&f, "root"), file, 1, 0, 4);
    uint64_t cb = fakepy_code(&f, fakepy_ascii(&f, "rec"), file, 1, 0, 4);
    uint64_t f0 = fakepy_frame(&f, ca, 0, 1, true), top = f0;
    for (int i = 0; i < FK_PYGATE_DEPTH + 6; i++)
        top = fakepy_frame(&f, cb, top, 1, i == 2);
    uint64_t tid = 9;
    fakepy_threads(&f, &tid, &top, 1);
    uint64_t ts = first_tstate(&f, NULL);
    struct fk_py_walker *w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, tid, &st);
    char live[4096];
    snprintf(live, sizeof live, "%s", chain(w, &st));
    unsigned live_n = st.n;
    struct fk_pygate_chain c;
    bool ok = fakepy_chain(&f, ts, frames, &c);
    UNIT_CHECK("the program's chain stops at its depth", ok && c.n == FK_PYGATE_DEPTH && c.next);
    UNIT_CHECK("a chain is taken for its own thread", fk_py_snap_chain(w, &c, tid, &snap));
    /* the thread moved on after the sample: the chain is its own moment */
    uint64_t cf;
    fakepy_read(&f, ts + L->ts_cframe, &cf, 8);
    fakepy_u64(&f, cf, L->cf_current_frame, f0);
    fk_py_walk_snap(w, &snap, &st);
    UNIT_CHECK("walked from the chain: the names at the sample, the frames past the depth read",
               st.status == FK_PY_OK && st.n == live_n && strcmp(chain(w, &st), live) == 0);
    UNIT_CHECK("a chain of another thread (a reused tid) is refused",
               !fk_py_snap_chain(w, &c, tid + 1, &snap) && !snap.chain);
    c.n = 0;
    c.head = 0;
    fk_py_snap_chain(w, &c, tid, &snap);
    fk_py_walk_snap(w, &snap, &st);
    UNIT_CHECK("a chain without frames is an idle thread", st.status == FK_PY_IDLE && !st.n);
    c.n = FK_PYGATE_DEPTH + 1;
    UNIT_CHECK("a record with more frames than the program reads is refused",
               !fk_py_snap_chain(w, &c, tid, &snap));
    fk_py_walker_free(w);
}

/* A chain whose code object was freed before it was named (code an
 * import runs once, then drops) no longer validates: it is read again
 * from the target as it is now (fk_py_walk_chain), and the sample's reads
 * are both walks' -- the second walk used to start from zero and
 * python.reads left the first walk's out. */
static void test_chain_retaken(void)
{
    static struct fk_py_snap snap;
    static unsigned char frames[FK_PYGATE_DEPTH * FK_PYGATE_STRIDE];
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    uint64_t file = fakepy_ascii(&f, "m.py");
    uint64_t cm = fakepy_code(&f, fakepy_ascii(&f, "<module>"), file, 1, 0, 4);
    uint64_t ci = fakepy_code(&f, fakepy_ascii(&f, "imported"), file, 1, 0, 4);
    uint64_t cn = fakepy_code(&f, fakepy_ascii(&f, "later"), file, 1, 0, 4);
    uint64_t root = fakepy_frame(&f, cm, 0, 1, true), top = fakepy_frame(&f, ci, root, 1, false);
    uint64_t tid = 11;
    fakepy_threads(&f, &tid, &top, 1);
    uint64_t cf, ts = first_tstate(&f, &cf);
    struct fk_py_walker *w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    struct fk_pygate_chain c;
    bool ok = fakepy_chain(&f, ts, frames, &c);
    UNIT_CHECK("a valid chain is walked once, not read again",
               ok && fk_py_snap_chain(w, &c, tid, &snap) && !fk_py_walk_chain(w, &snap, tid, &st) &&
               st.status == FK_PY_OK && strcmp(chain(w, &st), "<module>!;imported") == 0);
    /* at the next sample the import's code is freed before its chain is
     * named; the thread has moved on to later() */
    fakepy_chain(&f, ts, frames, &c);
    fakepy_u64(&f, ci, L->ob_type, 0);
    fakepy_u64(&f, cf, L->cf_current_frame, fakepy_frame(&f, cn, root, 1, false));
    fk_py_snap_chain(w, &c, tid, &snap);
    fk_py_walk_snap(w, &snap, &st);
    uint32_t r1 = st.reads, b1 = st.read_bytes;
    bool invalid = st.status == FK_PY_INVALID;
    fk_py_walk(w, tid, &st);
    fk_py_walk(w, tid, &st);    /* the thread's state and codes known, as below */
    uint32_t r2 = st.reads, b2 = st.read_bytes;
    bool retaken = fk_py_walk_chain(w, &snap, tid, &st);
    UNIT_CHECK("a chain that no longer validates is read again from the target, as it is now",
               invalid && retaken && st.status == FK_PY_OK &&
               strcmp(chain(w, &st), "<module>!;later") == 0);
    printf("# retaken: first walk %u reads (%u B), the read again %u (%u B), counted %u (%u B)\n",
           r1, b1, r2, b2, st.reads, st.read_bytes);
    UNIT_CHECK("... and its reads count both walks",
               r1 > 0 && st.reads == r1 + r2 && st.read_bytes == b1 + b2);
    UNIT_CHECK("... not without the target's tid",
               !fk_py_walk_chain(w, &snap, 0, &st) && st.status == FK_PY_INVALID);
    fk_py_walker_free(w);
}

/* A chain named as it left the gate's ring and walked more than
 * CODE_TRUST_NS later (a loaded host's engine thread), by when the
 * interpreter has freed its code and has no frame left (it was ending):
 * its codes are trusted as of their naming, not read again at the walk. */
static void test_chain_named_then_gone(void)
{
    static struct fk_py_snap snap;
    static unsigned char frames[FK_PYGATE_DEPTH * FK_PYGATE_STRIDE];
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    uint64_t file = fakepy_ascii(&f, "s.py");
    uint64_t cm = fakepy_code(&f, fakepy_ascii(&f, "<module>"), file, 1, 0, 4);
    uint64_t cs = fakepy_code(&f, fakepy_ascii(&f, "spin"), file, 1, 0, 4);
    uint64_t root = fakepy_frame(&f, cm, 0, 1, true), top = fakepy_frame(&f, cs, root, 1, false);
    /* a real frame's function and globals: what lets a code be trusted */
    fakepy_u64(&f, root, L->fr_func, 0x70000);
    fakepy_u64(&f, root, L->fr_globals, 0x71000);
    fakepy_u64(&f, top, L->fr_func, 0x72000);
    fakepy_u64(&f, top, L->fr_globals, 0x71000);
    uint64_t tid = 12;
    fakepy_threads(&f, &tid, &top, 1);
    uint64_t cf, ts = first_tstate(&f, &cf);
    struct fk_py_walker *w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    struct fk_pygate_chain c;
    bool ok = fakepy_chain(&f, ts, frames, &c) && fk_py_snap_chain(w, &c, tid, &snap);
    clock_ns += 2000 * 1000000ull;      /* twice CODE_TRUST_NS */
    fakepy_u64(&f, cs, L->ob_type, 0);
    fakepy_u64(&f, cm, L->ob_type, 0);
    fakepy_u64(&f, cf, L->cf_current_frame, 0);
    bool retaken = fk_py_walk_chain(w, &snap, tid, &st);
    UNIT_CHECK("a chain walked 2 s after it was named, its code since freed: named as it was",
               ok && !retaken && st.status == FK_PY_OK && strcmp(chain(w, &st), "<module>!;spin") == 0);
    fk_py_walker_free(w);
}

/* A batched read over the fake address space that counts its calls and
 * fails at fail_at as a freed page would; and the single reads. */
static unsigned nbatches, nreads;
static uint64_t fail_at;
static size_t counted_readv(void *ctx, const struct fk_py_iov *iov, size_t n)
{
    nbatches++;
    for (size_t i = 0; i < n; i++)
        if ((fail_at && iov[i].addr == fail_at) ||
            !fakepy_read(ctx, iov[i].addr, iov[i].buf, iov[i].len))
            return i;
    return n;
}

static bool counted_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    nreads++;
    return !(fail_at && addr == fail_at) && fakepy_read(ctx, addr, buf, len);
}

/* busy.py's Node(80, 1) in small for thread tid: <module>, then 8 x
 * (Node.__init__, its <listcomp>); __init__ runs a list comprehension,
 * which 3.11 runs by a function object made at each call -- one code
 * object in many frames of a chain, each with its own function. */
struct node_world {
    uint64_t cm, ci, cl, root, inits[8], comps[8], ts;
};
static void node_world(struct fakepy *f, const char *file_name, uint64_t tid, struct node_world *nw)
{
    const struct fk_py_layout *L = f->L;
    uint64_t file = fakepy_ascii(f, file_name);
    nw->cm = fakepy_code(f, fakepy_ascii(f, "<module>"), file, 1, 0, 4);
    nw->ci = fakepy_code(f, fakepy_ascii(f, "Node.__init__"), file, 1, 0, 4);
    nw->cl = fakepy_code(f, fakepy_ascii(f, "<listcomp>"), file, 1, 0, 4);
    uint64_t top = nw->root = fakepy_frame(f, nw->cm, 0, 1, true);
    fakepy_u64(f, top, L->fr_func, 0x60000);
    fakepy_u64(f, top, L->fr_globals, 0x61000);
    for (int i = 0; i < 8; i++) {
        nw->inits[i] = top = fakepy_frame(f, nw->ci, top, 1, false);
        fakepy_u64(f, top, L->fr_func, 0x62000);
        fakepy_u64(f, top, L->fr_globals, 0x61000);
        nw->comps[i] = top = fakepy_frame(f, nw->cl, top, 1, false);
        fakepy_u64(f, top, L->fr_func, 0x63000 + 0x100 * (uint64_t)i);
        fakepy_u64(f, top, L->fr_globals, 0x61000);
    }
    fakepy_threads(f, &tid, &top, 1);
    nw->ts = first_tstate(f, NULL);
}

/* busy.py's Node(80, 1) (node_world): a code object in many frames of a
 * chain, each with its own function, which the cache cannot
 * vouch for (code_known). The chain's naming reads that header once, in
 * one batch; the walk from the chain takes the naming's verdicts and
 * reads nothing (it asked the cache again and read the header alone in
 * each such frame: ~4.4 process_vm_readv a sample in the engine's thread
 * on busy.py). A header whose read fails (its code freed) ends a
 * process_vm_readv: the rest are read in the next batch, none alone. */
static void test_chain_verdicts(void)
{
    static struct fk_py_snap snap;
    static unsigned char frames[FK_PYGATE_DEPTH * FK_PYGATE_STRIDE];
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    struct node_world nw;
    uint64_t tid = 13;
    node_world(&f, "v.py", tid, &nw);
    uint64_t ci = nw.ci, root = nw.root, ts = nw.ts, *inits = nw.inits, *comps = nw.comps;
    struct fk_py_walker *w = walker_new(L, &f.where, counted_read, &f, false, 0);
    fk_py_walker_set_readv(w, counted_readv);
    struct fk_pygate_chain c;
    bool ok = fakepy_chain(&f, ts, frames, &c) && fk_py_snap_chain(w, &c, tid, &snap);
    fk_py_walk_snap(w, &snap, &st);
    char want[1024];
    snprintf(want, sizeof want, "%s", chain(w, &st));
    ok = ok && st.status == FK_PY_OK && st.n == 17;
    /* the next sample: new comprehension functions */
    for (int i = 0; i < 8; i++)
        fakepy_u64(&f, comps[i], L->fr_func, 0x64000 + 0x100 * (uint64_t)i);
    nbatches = nreads = 0;
    ok = ok && fakepy_chain(&f, ts, frames, &c) && fk_py_snap_chain(w, &c, tid, &snap);
    printf("# verdicts: naming %u batches, %u single reads\n", nbatches, nreads);
    UNIT_CHECK("one code in 8 frames run by 8 new functions: its header read once, in one batch",
               ok && nbatches == 1 && nreads == 0 && snap.reads == 1);
    fk_py_walk_snap(w, &snap, &st);
    printf("# verdicts: the walk %u reads\n", st.reads);
    UNIT_CHECK("... and the walk from the chain reads nothing, its names as before",
               st.status == FK_PY_OK && st.reads == 0 && nreads == 0 &&
               strcmp(chain(w, &st), want) == 0);
    /* the next: every code unvouched (new functions throughout), and
     * __init__'s header unreadable (leaf first, the batch is
     * <listcomp>, __init__, <module>) */
    fakepy_u64(&f, root, L->fr_func, 0x65000);
    for (int i = 0; i < 8; i++) {
        fakepy_u64(&f, inits[i], L->fr_func, 0x66000 + 0x100 * (uint64_t)i);
        fakepy_u64(&f, comps[i], L->fr_func, 0x67000 + 0x100 * (uint64_t)i);
    }
    fail_at = ci;
    nbatches = nreads = 0;
    ok = fakepy_chain(&f, ts, frames, &c) && fk_py_snap_chain(w, &c, tid, &snap);
    printf("# failed header: naming %u batches, %u single reads\n", nbatches, nreads);
    UNIT_CHECK("a header that cannot be read ends a batch: the rest in the next, none alone",
               ok && nbatches == 2 && nreads == 0 && snap.reads == 2);
    fail_at = 0;
    fk_py_walker_free(w);
}

/* The code headers the gate's program read at the sample (pygate.h):
 * busy.py's Node(80, 1) as above. Each sample's chain carries the
 * headers of the codes not named with the frame's function (the gate's
 * code map: what the namings told it), and its naming reads none of them
 * from the target -- on busy.py that batch was ~0.6 process_vm_readv a
 * sample, the reader's largest Python cost. A header the program could
 * not read is read in the batch; header bytes that do not validate vouch
 * for nothing (judged as a read's). */
static void test_chain_heads(void)
{
    static struct fk_py_snap snap;
    static unsigned char frames[FK_PYGATE_DEPTH * FK_PYGATE_STRIDE];
    static unsigned char codes[FK_PYGATE_CODES * FK_PYGATE_CODE_BYTES];
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    struct node_world nw;
    uint64_t tid = 14;
    node_world(&f, "h.py", tid, &nw);
    uint64_t cl = nw.cl, ts = nw.ts, *comps = nw.comps;
    struct fk_py_walker *w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, tid, &st);
    char want[1024];
    snprintf(want, sizeof want, "%s", chain(w, &st));
    fk_py_walker_free(w);
    w = walker_new(L, &f.where, counted_read, &f, false, 0);
    fk_py_walker_set_readv(w, counted_readv);
    /* the gate's code map, as the namings tell it */
    uint64_t named[8] = { 0 }, named_func[8] = { 0 };
    unsigned nnamed = 0;
    struct fk_pygate_chain c;
    nbatches = nreads = 0;
    bool ok = fakepy_chain(&f, ts, frames, &c);
    fakepy_chain_codes(&f, &c, codes, named, named_func, nnamed);
    ok = ok && c.ncodes == 3 && fk_py_snap_chain(w, &c, tid, &snap);
    for (unsigned i = 0; i < snap.nnamed && nnamed < 8; i++, nnamed++) {
        named[nnamed] = snap.named[i];
        named_func[nnamed] = snap.named_func[i];
    }
    fk_py_walk_snap(w, &snap, &st);
    printf("# heads: first chain %u headers given, %u batches, %u single reads (names)\n",
           c.ncodes, nbatches, nreads);
    UNIT_CHECK("a first chain's headers given by the program: no batch, its names as a live walk's",
               ok && nbatches == 0 && st.status == FK_PY_OK && st.reads == 0 &&
               strcmp(chain(w, &st), want) == 0 && nnamed == 3);
    /* the next samples: new comprehension functions; the map holds the
     * functions each code was named with */
    for (int i = 0; i < 8; i++)
        fakepy_u64(&f, comps[i], L->fr_func, 0x64000 + 0x100 * (uint64_t)i);
    nbatches = nreads = 0;
    ok = fakepy_chain(&f, ts, frames, &c);
    fakepy_chain_codes(&f, &c, codes, named, named_func, nnamed);
    ok = ok && c.ncodes == 1 && c.code_addr[0] == cl && fk_py_snap_chain(w, &c, tid, &snap);
    fk_py_walk_snap(w, &snap, &st);
    printf("# heads: next chain %u given, naming %u batches %u reads, walk %u reads\n", c.ncodes,
           nbatches, nreads, st.reads);
    UNIT_CHECK("one code in 8 frames run by new functions: its header given once, nothing read",
               ok && nbatches == 0 && nreads == 0 && snap.reads == 0 && st.status == FK_PY_OK &&
               st.reads == 0 && strcmp(chain(w, &st), want) == 0);
    for (int i = 0; i < 8; i++)
        fakepy_u64(&f, comps[i], L->fr_func, 0x65000 + 0x100 * (uint64_t)i);
    nbatches = nreads = 0;
    ok = fakepy_chain(&f, ts, frames, &c);
    fakepy_chain_codes(&f, &c, codes, named, named_func, nnamed);
    c.code_addr[0] = 0;     /* the program's read failed */
    ok = ok && fk_py_snap_chain(w, &c, tid, &snap);
    UNIT_CHECK("a header the program could not read: read in the batch",
               ok && nbatches == 1 && nreads == 0 && snap.reads == 1);
    for (int i = 0; i < 8; i++)
        fakepy_u64(&f, comps[i], L->fr_func, 0x66000 + 0x100 * (uint64_t)i);
    nbatches = nreads = 0;
    ok = fakepy_chain(&f, ts, frames, &c);
    fakepy_chain_codes(&f, &c, codes, named, named_func, nnamed);
    memset(codes + L->ob_type, 0, 8);   /* the bytes say: no code object */
    ok = ok && c.ncodes == 1 && fk_py_snap_chain(w, &c, tid, &snap);
    bool vouched = false;
    for (unsigned i = 0; i < snap.n; i++) {
        uint64_t code;
        memcpy(&code, snap.bytes[i] + L->fr_code, 8);
        vouched = vouched || (code == cl && snap.code_of[i]);
    }
    fk_py_walk_snap(w, &snap, &st);
    printf("# heads: a header that is no code's: naming %u batches %u reads, walk %u reads\n",
           nbatches, nreads, st.reads);
    UNIT_CHECK("header bytes that do not validate vouch for nothing (the walk reads the target)",
               ok && !vouched && st.status == FK_PY_OK && st.reads > 0 &&
               strcmp(chain(w, &st), want) == 0);
    fk_py_walker_free(w);
}

/* A generator that yielded since the sample: 3.11 clears its frame's
 * previous link (gen_send_ex2), so its segment cannot be linked to the
 * next head -- its frame, in the generator object, is still the one that
 * ran. Any other entry frame without its caller is stale. */
static void test_suspended(void)
{
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    uint64_t file = fakepy_ascii(&f, "gen.py");
    uint64_t cmain = fakepy_code(&f, fakepy_ascii(&f, "consume"), file, 1, 0, 5);
    uint64_t cgen = fakepy_code(&f, fakepy_ascii(&f, "gen"), file, 5, 0, 5);
    uint64_t cspin = fakepy_code(&f, fakepy_ascii(&f, "spin"), file, 9, 0, 5);
    uint64_t fmain = fakepy_frame(&f, cmain, 0, 2, true);
    uint64_t fgen = fakepy_frame(&f, cgen, 0, 2, true);     /* yielded: no caller */
    uint64_t fspin = fakepy_frame(&f, cspin, fgen, 2, false);
    unsigned char owner = L->owner_generator;
    fakepy_put(&f, fgen, L->fr_owner, &owner, 1);
    uint64_t tid = 3;
    fakepy_threads(&f, &tid, &fmain, 1);
    struct fk_py_walker *w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    uint64_t heads[2] = { fspin, fmain };
    fk_py_walk_from(w, heads, 2, true, &st);
    UNIT_CHECK("a generator suspended since the sample: its segment is kept",
               st.status == FK_PY_OK && !st.stale[0] && !st.stale[1] &&
               strcmp(chain(w, &st), "consume!;gen!;spin") == 0);
    owner = 0;
    fakepy_put(&f, fgen, L->fr_owner, &owner, 1);
    fk_py_walk_from(w, heads, 2, true, &st);
    UNIT_CHECK("a thread's entry frame without its caller is stale", st.stale[0] && !st.stale[1]);
    fakepy_put(&f, fgen, L->fr_owner, &(unsigned char){ L->owner_generator }, 1);
    fakepy_u64(&f, fgen, L->fr_previous, fspin);
    fk_py_walk_from(w, heads, 2, true, &st);
    UNIT_CHECK("a generator resumed from elsewhere is stale", st.stale[0]);
    fk_py_walker_free(w);
}

static void test_strings(void)
{
    struct fakepy f;
    fakepy_init(&f, mem);
    uint32_t latin[] = { 'c', 0xe9 }, ucs2[] = { 0x20ac, 'x' }, ucs4[] = { 0x1f40d };
    uint32_t evil[] = { 'a', ';', '\n', 0x85, 'b' };
    uint32_t surro[] = { 0xd800, 'z' }, big4[] = { 0x110000 };
    uint64_t names[] = {
        fakepy_str(&f, latin, 2, 1, false), fakepy_str(&f, ucs2, 2, 2, false),
        fakepy_str(&f, ucs4, 1, 4, false), fakepy_str(&f, evil, 5, 1, false),
        fakepy_str(&f, surro, 2, 2, false), fakepy_str(&f, big4, 1, 4, false),
    };
    const char *want[] = { "c\xc3\xa9", "\xe2\x82\xac" "x", "\xf0\x9f\x90\x8d", "a:??b", "?z", "?" };
    uint32_t hi[] = { 'o', 0xff };
    uint64_t bad_ascii = fakepy_str(&f, hi, 2, 1, true);
    uint64_t file = fakepy_ascii(&f, "x.py");
    size_t nn = sizeof names / sizeof *names;
    uint64_t prev = 0;
    for (size_t i = nn; i-- > 0;)
        prev = fakepy_frame(&f, fakepy_code(&f, names[i], file, 1, 0, 4), prev, 0, i == nn - 1);
    uint64_t leaf = fakepy_frame(&f, fakepy_code(&f, bad_ascii, file, 1, 0, 4), prev, 0, false);
    uint64_t tid = 7;
    fakepy_threads(&f, &tid, &leaf, 1);
    struct fk_py_walker *w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 7, &st);
    bool ok = st.status == FK_PY_OK && st.n == nn + 1;
    UNIT_CHECK("latin-1, UCS-2 and UCS-4 names walk", ok);
    for (size_t i = 0; ok && i < nn; i++) {
        size_t len;
        const char *s = fk_py_name(w, st.f[i + 1].name, &len);
        if (strcmp(s, want[i]) != 0) {
            printf("# name %zu: '%s' want '%s'\n", i, s, want[i]);
            ok = false;
        }
    }
    UNIT_CHECK("names become UTF-8; ';', controls, surrogates and bad code points are replaced", ok);
    size_t len;
    UNIT_CHECK("an 'ascii' string with a high byte is not trusted",
               ok && strcmp(fk_py_name(w, st.f[0].name, &len), "o?") == 0);
    fk_py_walker_free(w);

    /* a giant name: capped */
    fakepy_init(&f, mem);
    static uint32_t many[100000];
    for (size_t i = 0; i < 100000; i++)
        many[i] = 'n';
    uint64_t giant = fakepy_str(&f, many, 100000, 1, true);
    /* claims far more than the memory holds */
    fakepy_u64(&f, giant, f.L->str_length, 1ull << 40);
    leaf = fakepy_frame(&f, fakepy_code(&f, giant, fakepy_ascii(&f, "x.py"), 1, 0, 4), 0, 0, true);
    fakepy_threads(&f, &tid, &leaf, 1);
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 7, &st);
    ok = st.status == FK_PY_OK && st.n == 1;
    const char *g = ok ? fk_py_name(w, st.f[0].name, &len) : "";
    UNIT_CHECK("a giant name is cut at FK_PY_NAME_MAX characters with '...'",
               ok && len == FK_PY_NAME_MAX + 3 && strcmp(g + FK_PY_NAME_MAX, "...") == 0);
    fk_py_walker_free(w);
}

static void test_hostile(void)
{
    struct fakepy f;
    fakepy_init(&f, mem);
    uint64_t file = fakepy_ascii(&f, "x.py");
    uint64_t c = fakepy_code(&f, fakepy_ascii(&f, "loop"), file, 1, 0, 4);
    /* a cycle of three frames, none an entry */
    uint64_t a = fakepy_frame(&f, c, 0, 0, false);
    uint64_t b = fakepy_frame(&f, c, a, 0, false);
    uint64_t d = fakepy_frame(&f, c, b, 0, false);
    fakepy_u64(&f, a, f.L->fr_previous, d);
    uint64_t tid = 9;
    fakepy_threads(&f, &tid, &d, 1);
    struct fk_py_walker *w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 9, &st);
    UNIT_CHECK("a cycle in previous ends the walk (invalid)", st.status == FK_PY_INVALID);
    UNIT_CHECK("... after a bounded number of frames", st.n <= 16);
    fk_py_walker_free(w);

    /* a self-loop */
    fakepy_u64(&f, d, f.L->fr_previous, d);
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 9, &st);
    UNIT_CHECK("a frame that is its own caller is invalid", st.status == FK_PY_INVALID);
    fk_py_walker_free(w);

    /* a deep chain: cut at FK_PY_MAX_DEPTH */
    fakepy_init(&f, mem);
    c = fakepy_code(&f, fakepy_ascii(&f, "rec"), fakepy_ascii(&f, "x.py"), 1, 0, 4);
    uint64_t prev = 0;
    for (int i = 0; i < FK_PY_MAX_DEPTH + 50; i++)
        prev = fakepy_frame(&f, c, prev, 0, i == 0);
    fakepy_threads(&f, &tid, &prev, 1);
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 9, &st);
    UNIT_CHECK("a chain deeper than the bound is cut (limit)",
               st.status == FK_PY_LIMIT && st.n == FK_PY_MAX_DEPTH);
    fk_py_walker_free(w);

    /* a code object whose type is not PyCode_Type */
    fakepy_init(&f, mem);
    c = fakepy_code(&f, fakepy_ascii(&f, "fake"), fakepy_ascii(&f, "x.py"), 1, 0, 4);
    fakepy_u64(&f, c, f.L->ob_type, f.where.unicode_type);
    a = fakepy_frame(&f, c, 0, 0, true);
    fakepy_threads(&f, &tid, &a, 1);
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 9, &st);
    UNIT_CHECK("a code object of the wrong type is invalid", st.status == FK_PY_INVALID && !st.n);
    fk_py_walker_free(w);

    /* unmapped and misaligned pointers */
    fakepy_init(&f, mem);
    a = fakepy_frame(&f, 0xdead0000ull, 0, 0, true);
    fakepy_threads(&f, &tid, &a, 1);
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 9, &st);
    UNIT_CHECK("an unmapped code pointer fails the walk", st.status == FK_PY_INVALID);
    fk_py_walker_free(w);
    fakepy_init(&f, mem);
    uint64_t odd = FAKE_BASE + 4099;
    fakepy_threads(&f, &tid, &odd, 1);
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 9, &st);
    UNIT_CHECK("a misaligned frame pointer is invalid", st.status == FK_PY_INVALID);
    fk_py_walker_free(w);

    /* a thread list that loops: the refresh is bounded */
    fakepy_init(&f, mem);
    uint64_t tids[2] = { 1, 2 }, fr[2] = { 0, 0 };
    fakepy_threads(&f, tids, fr, 2);
    uint64_t interp, ts1, ts2;
    memcpy(&interp, f.mem + (f.where.runtime - FAKE_BASE) + f.L->rt_interp_head, 8);
    memcpy(&ts1, f.mem + (interp - FAKE_BASE) + f.L->interp_threads_head, 8);
    memcpy(&ts2, f.mem + (ts1 - FAKE_BASE) + f.L->ts_next, 8);
    fakepy_u64(&f, ts2, f.L->ts_next, ts2);     /* the second thread loops on itself */
    fakepy_u64(&f, interp, f.L->interp_next, interp);  /* and so do the interpreters */
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 3, &st);
    UNIT_CHECK("looping thread and interpreter lists end (bounded)",
               st.status == FK_PY_NO_THREAD || st.status == FK_PY_LIMIT);
    fk_py_walker_free(w);
}

/* A frame of code in a fake data stack slot at a. */
static void put_frame(struct fakepy *f, uint64_t a, uint64_t code, uint64_t previous, bool entry)
{
    const struct fk_py_layout *L = f->L;
    memset(f->mem + (a - FAKE_BASE), 0, L->fr_size);
    fakepy_u64(f, a, L->fr_code, code);
    fakepy_u64(f, a, L->fr_previous, previous);
    fakepy_u64(f, a, L->fr_prev_instr, code + L->co_code + 2);
    unsigned char e = entry;
    fakepy_put(f, a, L->fr_is_entry, &e, 1);
}

/* The early snapshot: the data stack's top in one read, so the walk from
 * the sample's head sees the frames as they were then, whatever the
 * thread did before the sample was spliced. */
static void test_window(void)
{
    static struct fk_py_snap snap;
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    uint64_t file = fakepy_ascii(&f, "w.py");
    uint64_t ca = fakepy_code(&f, fakepy_ascii(&f, "outer"), file, 1, 0, 4);
    uint64_t cb = fakepy_code(&f, fakepy_ascii(&f, "inner"), file, 1, 0, 4);
    uint64_t cc = fakepy_code(&f, fakepy_ascii(&f, "other"), file, 1, 0, 4);
    uint64_t chunk = fakepy_alloc(&f, 8192), data = chunk + L->chunk_data;
    uint64_t f0 = data, f1 = data + 128, f2 = data + 256;    /* f2: popped */
    put_frame(&f, f0, ca, 0, true);
    put_frame(&f, f1, cb, f0, false);
    put_frame(&f, f2, cc, f1, false);
    uint64_t tid = 7;
    fakepy_threads(&f, &tid, &f1, 1);
    uint64_t cf, ts = first_tstate(&f, &cf);
    fakepy_u64(&f, ts, L->ts_datastack_chunk, chunk);
    fakepy_u64(&f, ts, L->ts_datastack_top, f1 + 128);
    fakepy_u64(&f, ts, L->ts_datastack_limit, chunk + 8192);

    struct fk_py_walker *w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    bool ok = fk_py_snapshot(w, 7, &snap);
    UNIT_CHECK("a snapshot holds the data stack's top in one window",
               ok && snap.win_len > 0 && snap.win_addr <= f0 && snap.n == 0);
    /* after the sample: inner returned, other was called in its slot
     * with a link into the middle of outer's frame, outer's link torn */
    put_frame(&f, f1, cc, f0 + 8, false);
    fakepy_u64(&f, f0, L->fr_previous, f0 + 40);
    fakepy_u64(&f, f2, L->fr_code, 0x5555);
    uint64_t head = f1;
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("read live, the moved-on chain is stale", st.stale[0]);
    fk_py_use_snap(w, &snap);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("read from the snapshot, the sample's own chain, consistent",
               st.status == FK_PY_OK && !st.stale[0] && strcmp(chain(w, &st), "outer!;inner") == 0);
    head = f2;
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("a frame popped before the snapshot is read from the window above the top",
               !st.stale[0] && strcmp(chain(w, &st), "outer!;inner;other") == 0);
    fk_py_use_snap(w, NULL);

    /* batched: a walk from a snapshot reads the code objects it was not
     * given and the next snapshot guesses them, with the window, in the
     * thread state's read: one read, and the walk then reads nothing; a
     * code object changed after the snapshot is named as it was then */
    fk_py_walker_set_readv(w, counted_readv);
    head = f1;
    put_frame(&f, f0, ca, 0, true);
    put_frame(&f, f1, cb, f0, false);
    fk_py_snapshot(w, 7, &snap);
    fk_py_use_snap(w, &snap);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("a first snapshot: the walk reads what it was not given",
               !st.stale[0]);
    nbatches = 0;
    ok = fk_py_snapshot(w, 7, &snap);
    UNIT_CHECK("the next snapshot: one read, window and code objects guessed",
               ok && nbatches == 1 && snap.reads == 1 && snap.ncodes >= 2 && snap.win_len > 0);
    fakepy_u64(&f, cb, L->ob_type, 0x1234);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("the walk from it reads nothing and names what the snapshot read",
               st.reads == 0 && !st.stale[0] && strcmp(chain(w, &st), "outer!;inner") == 0);
    fk_py_use_snap(w, NULL);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("read live, the changed code object fails validation", st.stale[0]);
    fakepy_u64(&f, cb, L->ob_type, f.where.code_type);
    /* a guess that can no longer be read ends the batch there, and the
     * snapshot is still whole; the walk reads that one */
    fail_at = ca;   /* guessed after cb: the walk needed it second */
    ok = fk_py_snapshot(w, 7, &snap);
    fail_at = 0;
    fk_py_use_snap(w, &snap);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("an unreadable guess: the window is kept, that code read at the walk",
               ok && snap.win_len > 0 && snap.ncodes == 1 && !st.stale[0] && st.reads == 1 &&
               strcmp(chain(w, &st), "outer!;inner") == 0);
    /* the top moved past the guessed window: one more read, up to the
     * chunk's end now */
    fakepy_u64(&f, ts, L->ts_datastack_top, f1 + 128 + 6144);
    nbatches = 0;
    ok = fk_py_snapshot(w, 7, &snap);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("a window past its guess is read again",
               ok && snap.reads == 2 && snap.win_addr + snap.win_len == chunk + 8192 &&
               !st.stale[0] && st.reads == 0);
    fakepy_u64(&f, ts, L->ts_datastack_top, f1 + 128);
    fk_py_use_snap(w, NULL);
    fk_py_walker_set_readv(w, NULL);

    /* hostile data stack fields: no window, never a read past them */
    uint64_t bad[][3] = {
        { chunk, data - 8, chunk + 8192 },          /* top below the chunk's data */
        { chunk, f1 + 128, f1 },                    /* limit below top */
        { chunk, f1 + 128, chunk + (1ull << 40) },  /* a chunk of a terabyte */
        { 0, f1, chunk + 8192 },                    /* no chunk */
        { chunk + 3, f1 + 128, chunk + 8192 },      /* misaligned */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fakepy_u64(&f, ts, L->ts_datastack_chunk, bad[i][0]);
        fakepy_u64(&f, ts, L->ts_datastack_top, bad[i][1]);
        fakepy_u64(&f, ts, L->ts_datastack_limit, bad[i][2]);
        fk_py_snapshot(w, 7, &snap);
        UNIT_CHECK("hostile data stack bounds give no window", snap.win_len == 0);
    }
    /* a cycle inside the window: the snapshot and the walk both end */
    fakepy_u64(&f, ts, L->ts_datastack_chunk, chunk);
    fakepy_u64(&f, ts, L->ts_datastack_top, f1 + 128);
    fakepy_u64(&f, ts, L->ts_datastack_limit, chunk + 8192);
    put_frame(&f, f0, ca, f1, false);
    put_frame(&f, f1, cb, f0, false);
    ok = fk_py_snapshot(w, 7, &snap);
    fk_py_use_snap(w, &snap);
    head = f1;
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("a cycle in the window: the snapshot ends, the walk marks it",
               ok && snap.win_len > 0 && (st.status == FK_PY_LIMIT || st.stale[0]));
    fk_py_use_snap(w, NULL);
    fk_py_walker_free(w);
}

/* A cached code object's header is not read again while frames run it
 * with the function and globals it was last checked with, for up to a
 * second (code_known): then, with another function or globals, or with a
 * prev_instr outside its instructions, it is read and validated again;
 * early reads do not guess the headers of code objects checked lately. */
static void test_code_trust(void)
{
    static struct fk_py_snap snap;
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    uint64_t file = fakepy_ascii(&f, "t.py");
    uint64_t ca = fakepy_code(&f, fakepy_ascii(&f, "outer"), file, 1, 0, 4);
    uint64_t cb = fakepy_code(&f, fakepy_ascii(&f, "inner"), file, 1, 0, 4);
    uint64_t f0 = fakepy_frame(&f, ca, 0, 1, true);
    uint64_t f1 = fakepy_frame(&f, cb, f0, 1, false);
    fakepy_u64(&f, f0, L->fr_func, 0x70000);
    fakepy_u64(&f, f0, L->fr_globals, 0x71000);
    fakepy_u64(&f, f1, L->fr_func, 0x72000);
    fakepy_u64(&f, f1, L->fr_globals, 0x71000);
    uint64_t tid = 5;
    fakepy_threads(&f, &tid, &f1, 1);
    struct fk_py_walker *w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    uint64_t head = f1;
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("code trust: a first walk reads the frames, headers and names",
               st.status == FK_PY_OK && !st.stale[0] && st.reads > 4 &&
               strcmp(chain(w, &st), "outer!;inner") == 0);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("the next one reads the two frames alone",
               !st.stale[0] && st.reads == 2 && strcmp(chain(w, &st), "outer!;inner") == 0);
    fakepy_u64(&f, cb, L->ob_type, 0x1234);
    fakepy_u64(&f, f1, L->fr_func, 0x73000);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("run with another function: the header is read and validated", st.stale[0]);
    fakepy_u64(&f, cb, L->ob_type, f.where.code_type);
    fk_py_walk_from(w, &head, 1, true, &st);
    fakepy_u64(&f, f1, L->fr_prev_instr, cb + L->co_code + 2 * 9);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("a prev_instr past the cached code's instructions: the header is read",
               !st.stale[0] && st.reads == 3);
    fakepy_u64(&f, f1, L->fr_prev_instr, cb + L->co_code + 2);
    clock_ns += 1000 * 1000000ull;
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("a second after their last check, both headers are read again",
               !st.stale[0] && st.reads == 4);
    fk_py_walker_free(w);

    /* early reads (no data stack fields: the chain frame by frame) */
    w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walker_set_readv(w, counted_readv);
    fk_py_snapshot(w, 5, &snap);
    fk_py_use_snap(w, &snap);
    fk_py_walk_from(w, &head, 1, true, &st);
    bool ok = fk_py_snapshot(w, 5, &snap);
    UNIT_CHECK("code objects just checked are not guessed by the next early read",
               ok && snap.ncodes == 0 && snap.n == 2);
    fk_py_walk_from(w, &head, 1, true, &st);
    UNIT_CHECK("... and the walk from it reads nothing",
               !st.stale[0] && st.reads == 0 && strcmp(chain(w, &st), "outer!;inner") == 0);
    clock_ns += 500 * 1000000ull;
    ok = fk_py_snapshot(w, 5, &snap);
    UNIT_CHECK("half a second later, they are guessed again", ok && snap.ncodes == 2);
    fk_py_use_snap(w, NULL);
    fk_py_walker_free(w);
}

/* The window guessed for a thread follows its stack back down: one read
 * from a deep moment (a program's start) does not make every later read
 * as wide. */
static void test_window_fit(void)
{
    static struct fk_py_snap snap;
    struct fakepy f;
    fakepy_init(&f, mem);
    const struct fk_py_layout *L = f.L;
    uint64_t code = fakepy_code(&f, fakepy_ascii(&f, "f"), fakepy_ascii(&f, "f.py"), 1, 0, 4);
    uint64_t chunk = fakepy_alloc(&f, 32768), data = chunk + L->chunk_data;
    put_frame(&f, data, code, 0, true);
    uint64_t tid = 9;
    fakepy_threads(&f, &tid, &data, 1);
    uint64_t ts = first_tstate(&f, NULL);
    fakepy_u64(&f, ts, L->ts_datastack_chunk, chunk);
    fakepy_u64(&f, ts, L->ts_datastack_limit, chunk + 32768);
    struct fk_py_walker *w = walker_new(L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walker_set_readv(w, counted_readv);
    fakepy_u64(&f, ts, L->ts_datastack_top, data + 10000);     /* deep */
    fk_py_snapshot(w, 9, &snap);
    uint32_t deep = snap.win_len;
    fakepy_u64(&f, ts, L->ts_datastack_top, data + 256);       /* back down */
    nbatches = 0;
    fk_py_snapshot(w, 9, &snap);
    bool ok = nbatches == 1 && snap.win_len == deep;
    fk_py_snapshot(w, 9, &snap);
    printf("# windows: deep %u, then %u\n", deep, snap.win_len);
    UNIT_CHECK("a stack back from deep: its wide guess serves once, then a narrow one",
               ok && nbatches == 2 && snap.win_len + 4096 < deep && snap.win_addr == data &&
               snap.win_addr + snap.win_len >= data + 256 + FK_PY_SNAP_ABOVE);
    fk_py_walker_free(w);
}

static void test_budget(void)
{
    struct fakepy f;
    fakepy_init(&f, mem);
    uint64_t file = fakepy_ascii(&f, "x.py");
    uint64_t prev = 0;
    char nm[32];
    for (int i = 0; i < 200; i++) {
        snprintf(nm, sizeof nm, "function_%d", i);
        prev = fakepy_frame(&f, fakepy_code(&f, fakepy_ascii(&f, nm), file, 1, 0, 4), prev, 0,
                            i == 0);
    }
    uint64_t tid = 5;
    fakepy_threads(&f, &tid, &prev, 1);
    size_t cap = 8192;
    struct fk_py_walker *w = walker_new(f.L, &f.where, fakepy_read, &f, false, cap);
    for (int k = 0; k < 3; k++)
        fk_py_walk(w, 5, &st);
    printf("# walker bytes %zu of %zu, status %s, %u frames\n", fk_py_walker_bytes(w), cap,
           fk_py_status_name(st.status), st.n);
    UNIT_CHECK("under a small budget the walker's caches stay within it",
               fk_py_walker_bytes(w) <= cap);
    size_t len;
    UNIT_CHECK("... and the walk still completes, names past it shown as the limit",
               st.status == FK_PY_OK && st.n == 200 &&
               strcmp(fk_py_name(w, st.f[st.n - 1].name, &len), "[python: memory limit]") == 0);
    fk_py_walker_free(w);
    UNIT_CHECK("3.11 has a layout; 3.12 and 3.10 have none (never guessed)",
               fk_py_layout_for(0x030b) && !fk_py_layout_for(0x030c) && !fk_py_layout_for(0x030a));
}

/* A fake sample for the cframe anchor: native frames leaf first
 * (0 libc, 1 eval, 2 extension, 3 eval, 4 main), frame i's stack pointer
 * sps[i] = STACK_LO + 0x100 * i, so eval frame i's CFA is sps[i + 1] and
 * its _PyCFrame sits at CFA + CF_OFF in the stack copy. */
#define STACK_LO 0x7ffd00000000ull
#define CF_OFF (-0x58)
static unsigned char stack_copy[0x800];
static uint64_t sps[6];

static uint64_t cf_at(unsigned frame)
{
    return sps[frame + 1] + (uint64_t)(int64_t)CF_OFF;
}

static void put_cf(const struct fk_py_layout *L, unsigned frame, uint64_t current,
                   uint64_t previous)
{
    unsigned char *c = stack_copy + (cf_at(frame) - STACK_LO);
    memcpy(c + L->cf_current_frame, &current, 8);
    memcpy(c + L->cf_previous, &previous, 8);
}

/* The _PyCFrame offset is learned from the thread's cframe only where the
 * sample's own copy confirms it: two eval calls' cframes link, or one
 * call's links to its thread state's root_cframe (3.11: tstate + 336). */
static void test_cframe_anchor(void)
{
    const struct fk_py_layout *L = fk_py_layout_for(0x030b);
    for (unsigned i = 0; i < 6; i++)
        sps[i] = STACK_LO + 0x100 * i;
    memset(stack_copy, 0, sizeof stack_copy);
    uint64_t tstate = 0x5600001000ull, root = tstate + 336;
    uint64_t head_in = 0x7f0000001000ull, head_out = 0x7f0000000800ull;
    put_cf(L, 1, head_in, cf_at(3));
    put_cf(L, 3, head_out, root);
    struct fk_py_native nat = { .complete = true, .sps = sps, .nsps = 6, .stack = stack_copy,
                                .stack_base = STACK_LO, .stack_len = sizeof stack_copy };
    bool two[5] = { false, true, false, true, false };
    int64_t off = 0;
    bool ok = fk_py_cframe_offset(L, &nat, two, 5, cf_at(1), 0, &off);
    UNIT_CHECK("cframe: two linked eval calls confirm the offset", ok && off == CF_OFF);
    uint64_t heads[FK_PY_MAX_SEGMENTS], outer = 0;
    unsigned nh = 0;
    ok = fk_py_heads_from_copy(L, &nat, two, 5, CF_OFF, heads, &nh, &outer);
    UNIT_CHECK("cframe: each call's head from the copy, leaf first; the outer link",
               ok && nh == 2 && heads[0] == head_in && heads[1] == head_out && outer == root);
    UNIT_CHECK("cframe: the thread's cframe read after the inner call returned is refuted",
               !fk_py_cframe_offset(L, &nat, two, 5, cf_at(3), 0, &off));
    UNIT_CHECK("cframe: ... and one read in a call made since (below the copy)",
               !fk_py_cframe_offset(L, &nat, two, 5, sps[0] - 0x200, 0, &off));
    put_cf(L, 1, head_in, cf_at(3) + 8);
    UNIT_CHECK("cframe: two calls whose cframes do not link refute it",
               !fk_py_cframe_offset(L, &nat, two, 5, cf_at(1), 0, &off) &&
               !fk_py_heads_from_copy(L, &nat, two, 5, CF_OFF, heads, &nh, &outer));

    /* one eval call: its link must be the thread state's root_cframe */
    bool one[5] = { false, false, false, true, false };
    ok = fk_py_cframe_offset(L, &nat, one, 5, cf_at(3), tstate, &off);
    UNIT_CHECK("cframe: a single call linked to tstate+336 (root_cframe) confirms it",
               ok && off == CF_OFF);
    put_cf(L, 3, head_out, tstate + 328);
    UNIT_CHECK("cframe: ... linked elsewhere in the thread state, it does not",
               !fk_py_cframe_offset(L, &nat, one, 5, cf_at(3), tstate, &off));
    put_cf(L, 3, head_out, root);
    UNIT_CHECK("cframe: ... nor with another thread state",
               !fk_py_cframe_offset(L, &nat, one, 5, cf_at(3), tstate + 0x1000, &off) &&
               !fk_py_cframe_offset(L, &nat, one, 5, cf_at(3), 0, &off));
    nat.complete = false;
    UNIT_CHECK("cframe: ... nor when the native stack did not reach its root",
               !fk_py_cframe_offset(L, &nat, one, 5, cf_at(3), tstate, &off));
    nat.complete = true;
    /* a cframe that is no local of the eval frame's own */
    UNIT_CHECK("cframe: an offset at or above the CFA, or misaligned, is refused",
               !fk_py_cframe_offset(L, &nat, one, 5, sps[4], tstate, &off) &&
               !fk_py_cframe_offset(L, &nat, one, 5, cf_at(3) + 4, tstate, &off));
    nat.stack_len = cf_at(3) - STACK_LO + 8;    /* the copy ends inside the cframe */
    UNIT_CHECK("cframe: a cframe not wholly inside the copy is refused",
               !fk_py_cframe_offset(L, &nat, one, 5, cf_at(3), tstate, &off));
    nat.stack_len = sizeof stack_copy;
    nat.nsps = 3;       /* the unwind stopped before the eval frame's CFA */
    UNIT_CHECK("cframe: an eval frame without its CFA is refused",
               !fk_py_cframe_offset(L, &nat, one, 5, cf_at(3), tstate, &off));
}

/* A live python3.11 asleep in one eval call (<module> calling wait(),
 * which sleeps): its pid once it is there, 0 when it could not start, -1
 * when there is no python3.11 (what is skipped is printed). */
static pid_t start_sleeper(const char *what)
{
    const char *python = "/usr/bin/python3.11";
    if (access(python, X_OK) != 0) {
        printf("SKIP: unit-python: %s (no %s)\n", what, python);
        return -1;
    }
    int ready[2];
    if (pipe(ready) != 0)
        return 0;
    pid_t P = fork();
    if (P == 0) {
        dup2(ready[1], 1);
        execl(python, python, "-c", "import time\ndef wait():\n"
              "    print('ready', flush=True)\n    time.sleep(30)\nwait()\n", (char *)NULL);
        _exit(127);
    }
    close(ready[1]);
    char buf[8];
    bool up = P > 0 && read(ready[0], buf, sizeof buf) > 0;
    close(ready[0]);
    if (P > 0 && !up) {
        kill(P, SIGKILL);
        waitpid(P, NULL, 0);
    }
    return up ? P : 0;
}

static void stop_sleeper(pid_t P)
{
    kill(P, SIGKILL);
    waitpid(P, NULL, 0);
}

/* 3.11's root_cframe at tstate + 336, checked on Debian's binary: a live
 * python3.11 asleep in one eval call -- its thread's cframe is that call's,
 * whose previous link is the thread state's root_cframe, whose own links
 * are empty. */
static bool want_python(const char *path)
{
    const char *b = strrchr(path, '/');
    return strncmp(b ? b + 1 : path, "python3", 7) == 0;
}

static bool live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
    return process_vm_readv(*(pid_t *)ctx, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static void test_root_cframe_live(void)
{
    pid_t P = start_sleeper("root_cframe");
    if (P < 0)
        return;
    bool up = P > 0;
    struct fk_symbolizer *sym = fk_sym_new(&(struct fk_sym_opts){ 0 });
    struct fk_sym_file files[4];
    size_t nf = 0;
    if (up) {
        fk_sym_scan_pid(sym, P);
        nf = fk_sym_proc_files(sym, P, want_python, files, 4);
    }
    struct fk_py_where wh = { 0 };
    const char *names[] = { "_PyRuntime", "PyCode_Type", "PyUnicode_Type", "PyBytes_Type" };
    uint64_t *where[] = { &wh.runtime, &wh.code_type, &wh.unicode_type, &wh.bytes_type };
    bool found = nf > 0;
    for (size_t i = 0; found && i < 4; i++) {
        uint64_t a, sz;
        found = fk_sym_dso_lookup(sym, files[0].dso, names[i], &a, &sz);
        *where[i] = a + files[0].bias;
    }
    UNIT_CHECK("root_cframe: python3.11 started, its tables found", found);
    if (found) {
        const struct fk_py_layout *L = fk_py_layout_for(0x030b);
        struct fk_py_walker *w = walker_new(L, &wh, live_read, &P, false, 0);
        fk_py_walk(w, (uint64_t)P, &st);
        uint64_t link = 0, root[3] = { 1, 1, 1 };
        bool ok = st.status == FK_PY_OK && st.segments == 1 && st.tstate &&
                  live_read(&P, st.cframe + L->cf_previous, &link, 8) &&
                  live_read(&P, st.tstate + 336, root, sizeof root);
        printf("# root_cframe: tstate %#llx, cframe %#llx, its link %#llx, chain %s\n",
               (unsigned long long)st.tstate, (unsigned long long)st.cframe,
               (unsigned long long)link, chain(w, &st));
        UNIT_CHECK("root_cframe: one eval call's cframe links to tstate+336 (Debian's binary)",
                   ok && link == st.tstate + 336 && L->ts_root_cframe == 336);
        UNIT_CHECK("root_cframe: ... whose own frame and link are empty",
                   ok && root[L->cf_current_frame / 8] == 0 && root[L->cf_previous / 8] == 0);
        fk_py_walker_free(w);
    }
    if (up)
        stop_sleeper(P);
    fk_sym_free(sym);
}

/* The files of two programs for symbolizer records of a fake pid:
 * python (stat into *ps) and this test's own binary (its path into self,
 * PATH_MAX bytes, stat into *ss); false, printing a SKIP without python. */
static bool two_programs(const char *what, const char *python, struct stat *ps, char *self,
                         struct stat *ss)
{
    ssize_t n = readlink("/proc/self/exe", self, PATH_MAX - 1);
    if (n <= 0 || stat(python, ps) != 0 || !S_ISREG(ps->st_mode)) {
        printf("SKIP: unit-python: %s (no %s)\n", what, python);
        return false;
    }
    self[n] = 0;
    return stat(self, ss) == 0;
}

/* fk_python_mapped: a CPython file mapped into a process already looked at
 * (an exec the symbolizer has not handled yet) makes its samples wait for
 * the engine's thread, which looks at it again; other files do not; the
 * mark lapses after 250 ms without CPython found. */
static void test_mapped(void)
{
    const char *python = "/usr/bin/python3.11";
    char self[PATH_MAX];
    struct stat ps, ss;
    if (!two_programs("mapped", python, &ps, self, &ss))
        return;
    pid_t P = 4190021, Q = 4190022;     /* not alive: files found by inode */
    struct fk_symbolizer *sym = fk_sym_new(&(struct fk_sym_opts){ 0 });
    struct fk_python *py = fk_python_new(sym, false, 0);
    struct fk_python_stats pst;
    const uint64_t ms = 1000000;
#define MAP(pid, path, s) fk_sym_mmap(sym, pid, 0x400000, 0x1000, 0, major((s).st_dev), \
                                      minor((s).st_dev), (s).st_ino, PROT_READ | PROT_EXEC, \
                                      MAP_PRIVATE, path, NULL, 0)
    for (pid_t q = P; q <= Q; q++) {
        fk_sym_comm(sym, q, q, "sh", false);
        MAP(q, self, ss);
    }
    bool first = fk_python_early(py, P, P, 1 * ms, NULL) == FK_PY_EARLY_WAIT;
    fk_python_catch_up(py);
    bool after = fk_python_early(py, P, P, 2 * ms, NULL);
    UNIT_CHECK("mapped: a process is looked at once; without CPython its samples then pass",
               first && !after);
    fk_python_mapped(py, P, "/usr/bin/dash", 3 * ms);
    fk_python_mapped(py, P, "/usr/lib/x86_64-linux-gnu/libc.so.6", 3 * ms);
    UNIT_CHECK("mapped: a file not named like CPython marks nothing",
               !fk_python_early(py, P, P, 4 * ms, NULL));
    fk_python_mapped(py, P, python, 5 * ms);
    UNIT_CHECK("mapped: python3.11 mapped: the samples wait for the engine's thread",
               fk_python_early(py, P, P, 6 * ms, NULL) == FK_PY_EARLY_WAIT);
    fk_python_catch_up(py);     /* the exec's records not handled yet */
    fk_python_stats(py, &pst);
    UNIT_CHECK("mapped: ... which finds no CPython before the symbolizer has the exec, "
               "and the mark holds",
               pst.processes == 0 && fk_python_early(py, P, P, 7 * ms, NULL) == FK_PY_EARLY_WAIT);
    fk_sym_comm(sym, P, P, "python3.11", true);
    MAP(P, python, ps);
    fk_python_catch_up(py);
    fk_python_stats(py, &pst);
    UNIT_CHECK("mapped: once it has, the engine's thread finds CPython; its samples are read",
               pst.processes == 1 && fk_python_early(py, P, P, 8 * ms, NULL) == FK_PY_EARLY_READ);
    fk_python_early(py, Q, Q, 1 * ms, NULL);
    fk_python_catch_up(py);
    fk_python_mapped(py, Q, "/opt/lib/libpython3.11.so.1.0", 10 * ms);
    bool soon = fk_python_early(py, Q, Q, 200 * ms, NULL) == FK_PY_EARLY_WAIT;
    bool lapsed = !fk_python_early(py, Q, Q, 261 * ms, NULL) && !fk_python_early(py, Q, Q, 262 * ms, NULL);
    UNIT_CHECK("mapped: libpython marks too; without CPython the mark lapses after 250 ms",
               soon && lapsed);
#undef MAP
    fk_python_free(py);
    fk_sym_free(sym);
}

/* fk_python_forked: a child of a process looked at and found without
 * CPython is taken as its parent -- its samples pass with no look of its
 * own -- until an interpreter is mapped into it; a child of a process
 * never looked at waits for its own look, which looks at the parent too,
 * whose next child is then taken as it; a thread's fork record marks
 * nothing. */
static void test_forked(void)
{
    const char *python = "/usr/bin/python3.11";
    char self[PATH_MAX];
    struct stat ps, ss;
    if (!two_programs("forked", python, &ps, self, &ss))
        return;
    pid_t P = 4190031, C = 4190032, Q = 4190033, D1 = 4190034, D2 = 4190035, T = 4190036;
    struct fk_symbolizer *sym = fk_sym_new(&(struct fk_sym_opts){ 0 });
    struct fk_python *py = fk_python_new(sym, false, 0);
    const uint64_t ms = 1000000;
    for (pid_t q = P; q <= Q; q += Q - P) {
        fk_sym_comm(sym, q, q, "sh", false);
        fk_sym_mmap(sym, q, 0x400000, 0x1000, 0, major(ss.st_dev), minor(ss.st_dev), ss.st_ino,
                    PROT_READ | PROT_EXEC, MAP_PRIVATE, self, NULL, 0);
    }
    bool looked = fk_python_early(py, P, P, 1 * ms, NULL) == FK_PY_EARLY_WAIT;
    fk_python_catch_up(py);
    fk_python_forked(py, C, P, 2 * ms);
    UNIT_CHECK("forked: a child of a process without CPython needs no look of its own",
               looked && fk_python_early(py, C, C, 3 * ms, NULL) == 0);
    fk_python_mapped(py, C, python, 4 * ms);
    UNIT_CHECK("forked: ... until an interpreter is mapped into it",
               fk_python_early(py, C, C, 5 * ms, NULL) == FK_PY_EARLY_WAIT);
    fk_python_forked(py, D1, Q, 6 * ms);
    bool waits = fk_python_early(py, D1, D1, 7 * ms, NULL) == FK_PY_EARLY_WAIT;
    fk_python_catch_up(py);
    fk_python_forked(py, D2, Q, 8 * ms);
    UNIT_CHECK("forked: a child of a process never looked at waits for its look, which looks "
               "at the parent too: the parent's next child needs none",
               waits && fk_python_early(py, D2, D2, 9 * ms, NULL) == 0);
    fk_python_forked(py, P, P, 10 * ms);    /* a thread's: pid == ppid */
    fk_python_forked(py, T, C, 10 * ms);    /* C's interpreter not found yet */
    UNIT_CHECK("forked: a child of a process with an interpreter's mapping pending waits for "
               "its own look",
               fk_python_early(py, T, T, 11 * ms, NULL) == FK_PY_EARLY_WAIT);
    /* a child's sample read before its fork record (from another ring, in
     * the same pass) asks for the engine's thread; the record, from P,
     * takes that back by the pass's end (fk_python_catch_up_due); from a
     * parent never looked at (R), it does not */
    pid_t E = 4190037, F = 4190038, R = 4190039;
    fk_python_catch_up(py);
    bool none = !fk_python_catch_up_due(py);
    bool asks = fk_python_early(py, E, E, 13 * ms, NULL) == FK_PY_EARLY_WAIT &&
                fk_python_catch_up_due(py);
    fk_python_forked(py, E, P, 12 * ms);
    UNIT_CHECK("forked: a child's sample before its fork record asks for the engine's thread; "
               "the record from a parent without CPython takes that back",
               none && asks && !fk_python_catch_up_due(py));
    bool waits_f = fk_python_early(py, F, F, 15 * ms, NULL) == FK_PY_EARLY_WAIT;
    fk_python_forked(py, F, R, 14 * ms);
    UNIT_CHECK("forked: ... not from a parent never looked at",
               waits_f && fk_python_catch_up_due(py));
    fk_python_catch_up(py);
    UNIT_CHECK("forked: no catch-up due once caught up", !fk_python_catch_up_due(py));
    fk_python_free(py);
    fk_sym_free(sym);
}

/* One sample of pid P through fk_python_sample; the stats after it. */
static void sample_of(struct fk_python *py, struct fk_symbolizer *sym, pid_t P,
                      struct fk_python_stats *out)
{
    struct fk_loc loc = fk_sym_special(sym, "[unit]");
    struct fk_py_native nat = { .locs = &loc, .n = 1, .max = 1, .complete = true };
    fk_python_sample(py, P, P, &nat);
    fk_python_stats(py, out);
}

/* What was found in a pid holds for the image it was found in: a process
 * that execs CPython is looked at as soon as the interpreter is mapped
 * (the exec's COMM record comes before its mmaps, and a sample may fall
 * between them), and one that execs away from it is no longer read with
 * the old image's tables. Symbolizer records as the capture hands them. */
static void test_exec(void)
{
    const char *python = "/usr/bin/python3.11";
    char self[PATH_MAX];
    struct stat ps, ss;
    if (!two_programs("exec", python, &ps, self, &ss))
        return;
    pid_t P = 4190011;      /* near pid_max: not alive, files found by inode */
    struct fk_symbolizer *sym = fk_sym_new(&(struct fk_sym_opts){ 0 });
    struct fk_python *py = fk_python_new(sym, false, 0);
    struct fk_python_stats pst;
    uint64_t base = 0x400000;
#define MAP(path, s) fk_sym_mmap(sym, P, base, 0x1000, 0, major((s).st_dev), minor((s).st_dev), \
                                 (s).st_ino, PROT_READ | PROT_EXEC, MAP_PRIVATE, path, NULL, 0)
    fk_sym_comm(sym, P, P, "sh", false);
    MAP(self, ss);
    sample_of(py, sym, P, &pst);
    UNIT_CHECK("exec: a process without CPython is not one", pst.processes == 0 && pst.samples == 0);
    fk_sym_comm(sym, P, P, "python3.11", true);
    sample_of(py, sym, P, &pst);     /* in the exec: the interpreter not mapped yet */
    UNIT_CHECK("exec: not yet mapped, not yet found", pst.processes == 0);
    MAP(python, ps);
    sample_of(py, sym, P, &pst);
    UNIT_CHECK("exec: CPython found at the first sample after its mmap",
               pst.processes == 1 && pst.samples == 1);
    fk_sym_comm(sym, P, P, "sh", true);
    MAP(self, ss);
    sample_of(py, sym, P, &pst);
    UNIT_CHECK("exec away: no longer read as CPython", pst.samples == 1);
    fk_sym_comm(sym, P, P, "python3.11", true);
    MAP(python, ps);
    sample_of(py, sym, P, &pst);
    UNIT_CHECK("exec back: found again in the new image", pst.processes == 2 && pst.samples == 2);
    /* it exits: what was kept for it is freed at the next sample handled
     * (of any process), and its pid taken again is a new process */
    size_t held = fk_python_bytes(py);
    fk_sym_exit(sym, P, P);
    sample_of(py, sym, P + 1, &pst);
    UNIT_CHECK("exit: the process's state is freed", pst.forgotten == 1 &&
               fk_python_bytes(py) + 512 < held);
    fk_sym_comm(sym, P, P, "python3.11", true);
    MAP(python, ps);
    sample_of(py, sym, P, &pst);
    UNIT_CHECK("exit: the pid taken again is found as a new process",
               pst.processes == 3 && pst.samples == 3);
    /* a host where interpreters come and go: what is held stays that of
     * the live ones */
    fk_sym_exit(sym, P, P);
    usleep(11000);
    sample_of(py, sym, P + 1, &pst);
    size_t base_bytes = fk_python_bytes(py);
    for (pid_t q = P + 2; q < P + 202; q++) {
        fk_sym_comm(sym, q, q, "python3.11", true);
        fk_sym_mmap(sym, q, base, 0x1000, 0, major(ps.st_dev), minor(ps.st_dev), ps.st_ino,
                    PROT_READ | PROT_EXEC, MAP_PRIVATE, python, NULL, 0);
        sample_of(py, sym, q, &pst);
        fk_sym_exit(sym, q, q);
    }
    usleep(11000);
    sample_of(py, sym, P + 1, &pst);
    /* (the table of processes keeps the room it grew to: 8 KiB) */
    UNIT_CHECK("200 interpreters started and exited: their state is gone",
               pst.processes == 203 && pst.forgotten == 202 &&
               fk_python_bytes(py) <= base_bytes + 8192);
#undef MAP
    fk_python_free(py);
    fk_sym_free(sym);
}

/* FK_PY_MAX_NS: a walk whose clock passes the bound stops at its next
 * look (every 16th read) with FK_PY_LIMIT; the same walk on a clock that
 * stands still is whole. */
static void test_time_bound(void)
{
    struct fakepy f;
    fakepy_init(&f, mem);
    uint64_t file = fakepy_ascii(&f, "x.py");
    uint64_t c = fakepy_code(&f, fakepy_ascii(&f, "deep"), file, 1, 0, 4);
    uint64_t prev = 0, tid = 9;
    for (int i = 0; i < 40; i++)
        prev = fakepy_frame(&f, c, prev, 0, i == 0);
    fakepy_threads(&f, &tid, &prev, 1);
    struct fk_py_walker *w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    fk_py_walk(w, 9, &st);
    UNIT_CHECK("time bound: a 40-frame walk whose clock stands still is whole",
               st.status == FK_PY_OK && st.n == 40 && st.reads > 16);
    fk_py_walker_free(w);
    w = walker_new(f.L, &f.where, fakepy_read, &f, false, 0);
    clock_step = FK_PY_MAX_NS + 1;
    fk_py_walk(w, 9, &st);
    clock_step = 0;
    UNIT_CHECK("time bound: past FK_PY_MAX_NS the walk stops at its next look (limit)",
               st.status == FK_PY_LIMIT && st.n < 40 && st.reads == 15);
    printf("# time bound: %u frames, %u reads before the look that stopped it\n", st.n, st.reads);
    fk_py_walker_free(w);
}

/* Early reads of a live python3.11 (sleeping in a function): a sample of
 * a thread read after it for an earlier sample shares that read; reads
 * whose samples wait longer than the table first holds are all found at
 * splice time (the table grows). */
static void test_early(void)
{
    pid_t P = start_sleeper("early reads");
    if (P < 0)
        return;
    if (!P) {
        UNIT_CHECK("early reads: python3.11 started", false);
        return;
    }
    struct fk_symbolizer *sym = fk_sym_new(&(struct fk_sym_opts){ 0 });
    struct fk_python *py = fk_python_new(sym, false, 0);
    struct fk_python_stats pst;
    fk_sym_scan_pid(sym, P);
    uint64_t t1 = fk_now_ns();
    bool waits = fk_python_early(py, P, P, t1, NULL) == FK_PY_EARLY_WAIT;
    fk_python_stats(py, &pst);
    UNIT_CHECK("early: a process never looked at waits for the engine's thread (no read)",
               waits && pst.processes == 0 && pst.snapshots == 0);
    fk_python_catch_up(py);
    fk_python_stats(py, &pst);
    uint64_t reads = pst.snapshot_reads;
    int got = fk_python_early(py, P, P, t1 + 1, NULL);     /* before that read: shared */
    fk_python_stats(py, &pst);
    UNIT_CHECK("early: a Python process's samples are read in the reader's thread",
               got == FK_PY_EARLY_READ);
    UNIT_CHECK("early: a thread's read serves its samples taken before it",
               pst.processes == 1 && pst.snapshots == 1 && pst.snapshots_shared == 1 &&
               reads && pst.snapshot_reads == reads);
    /* Sample times 1 us apart from a minute ahead: each is later than
     * every read the loop makes (so each gets a read of its own), and all
     * 40 lie within SNAP_WAIT_NS of each other however slowly the reads
     * run. With the clock's own times, 40 reads that took over 100 ms (an
     * ASan build at load 20) let the table reuse the oldest slots instead
     * of growing: 32 of 40 found. */
    uint64_t times[40], ahead = fk_now_ns() + 60 * 1000000000ull;
    for (int i = 0; i < 40; i++) {
        times[i] = ahead + (uint64_t)i * 1000;
        fk_python_early(py, P, P, times[i], NULL);
    }
    fk_python_stats(py, &pst);
    bool ok = pst.snapshots == 41 && pst.snapshots_shared == 1;
    struct fk_loc loc = fk_sym_special(sym, "[unit]");
    for (int i = 0; i < 40; i++) {
        struct fk_py_native nat = { .locs = &loc, .n = 1, .max = 1, .complete = true,
                                    .time = times[i] };
        fk_python_sample(py, P, P, &nat);
    }
    fk_python_stats(py, &pst);
    printf("# early: %llu reads, %llu shared, %llu found at splice time\n",
           (unsigned long long)pst.snapshots, (unsigned long long)pst.snapshots_shared,
           (unsigned long long)pst.snapshots_used);
    UNIT_CHECK("early: 40 reads waiting at once are all found when spliced",
               ok && pst.snapshots_used == 40);
    stop_sleeper(P);
    fk_python_free(py);
    fk_sym_free(sym);
}

int main(void)
{
    unit_name = "unit-python";
    mem = calloc(1, FAKE_SIZE);
    if (!fk_py_layout_for(0x030b)) {
        printf("SKIP: unit-python: no CPython layout on this architecture\n");
        free(mem);
        return 0;
    }
    test_basic();
    test_suspended();
    test_chain();
    test_chain_retaken();
    test_chain_named_then_gone();
    test_chain_verdicts();
    test_chain_heads();
    test_strings();
    test_hostile();
    test_time_bound();
    test_budget();
    test_window();
    test_window_fit();
    test_code_trust();
    test_cframe_anchor();
    test_root_cframe_live();
    test_exec();
    test_mapped();
    test_forked();
    test_early();
    free(mem);
    return UNIT_END();
}
