/* SPDX-License-Identifier: GPL-2.0-only */
/* CPython frames for native stacks (the unwind stage, above symbols/).
 *
 * A sample of a Python process unwinds to a tower of
 * _PyEval_EvalFrameDefault frames: the interpreter's C loop. Which Python
 * functions ran is in the interpreter's own frame chain, in the target's
 * memory. This module reads that chain after the sample -- with
 * process_vm_readv, never stopping, tracing or signalling the target --
 * and splices it into the native stack: each "entry" segment of the chain
 * (the Python frames one C call of _PyEval_EvalFrameDefault ran) replaces
 * that native frame, so C extensions, the GC and system calls stay where
 * they were called.
 *
 * Layers, each usable alone (tests and the fuzz target use the first two
 * over a fake address space):
 *   - fk_py_layout: one table of struct offsets per CPython version.
 *   - fk_py_walker: one process's interpreter, read through a callback:
 *     thread -> thread state, the frame chain, code objects, names, lines.
 *   - fk_py_splice: native frames + a walked chain -> one mixed stack.
 *   - fk_python: the capture's glue: detection per process through the
 *     symbolizer, process_vm_readv, statistics, memory.
 *
 * The target can fake every byte: every pointer is checked for alignment
 * and range before it is followed, every object's type pointer against the
 * binary's own PyCode_Type/PyUnicode_Type, every size against a bound;
 * chains are cycle-checked and bounded in depth, bytes read and time per
 * sample. Garbage gives a failed or "[python: changed]" sample, never a
 * crash, a hang or memory past the budget. */
#ifndef FK_UNWIND_PYTHON_H
#define FK_UNWIND_PYTHON_H

#include "capture/pygate.h"
#include "symbols/symbols.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- layouts ---- */

/* Offsets (bytes) of what the walker reads, for one CPython version on
 * x86-64 (the only architecture whose layout is in the table). */
struct fk_py_layout {
    uint16_t version;               /* 0x030b: 3.11 */
    const char *name;               /* "3.11" */
    /* _PyRuntimeState, PyInterpreterState, PyThreadState */
    uint16_t rt_interp_head, interp_next, interp_threads_head;
    uint16_t ts_next, ts_cframe, ts_native_thread_id, ts_size;
    /* the thread's own _PyCFrame (3.11: root_cframe): the outermost eval
     * call's cframe.previous points at it */
    uint16_t ts_root_cframe;
    /* the thread's data stack (3.11+): frames not owned by a generator
     * live in chunks [chunk + chunk_data, datastack_limit), pushed at
     * datastack_top and popped by moving it down (their bytes stay) */
    uint16_t ts_datastack_chunk, ts_datastack_top, ts_datastack_limit, chunk_data;
    /* _PyCFrame, _PyInterpreterFrame */
    uint16_t cf_current_frame, cf_previous, cf_size;
    uint16_t fr_func, fr_globals;   /* the function and globals the frame runs with */
    uint16_t fr_code, fr_previous, fr_prev_instr, fr_is_entry, fr_owner, fr_size;
    uint8_t owner_generator;        /* FRAME_OWNED_BY_GENERATOR */
    /* PyObject, PyCodeObject (a PyVarObject: ob_size = code units) */
    uint16_t ob_type, ob_size;
    uint16_t co_firstlineno, co_filename, co_qualname, co_linetable;
    uint16_t co_firsttraceable, co_code, co_size;
    /* PyASCIIObject / PyCompactUnicodeObject, PyBytesObject */
    uint16_t str_length, str_state, str_ascii_data, str_compact_data;
    uint16_t bytes_size, bytes_data;
};

/* The layout of version (PY_VERSION_HEX >> 16, e.g. 0x030b), or NULL:
 * an unknown version is never read with guessed offsets. */
const struct fk_py_layout *fk_py_layout_for(uint16_t version);

/* ---- the walker ---- */

/* Read len bytes of the target at addr; false unless all were read. */
typedef bool (*fk_py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
/* Several reads at once (one process_vm_readv): how many of iov[0..n)
 * were read whole, in order -- the first that fails ends the batch. A
 * read costs about as much as a system call whatever its size, so the
 * early snapshot gathers what it needs into as few batches as it can. */
struct fk_py_iov {
    uint64_t addr;
    void *buf;
    size_t len;
};
typedef size_t (*fk_py_readv_fn)(void *ctx, const struct fk_py_iov *iov, size_t n);

/* Bounds per sample (and per thread-table refresh). */
#define FK_PY_MAX_DEPTH 256         /* Python frames kept per stack */
#define FK_PY_MAX_READS 2048        /* reads per sample */
#define FK_PY_MAX_READ_BYTES (256u << 10)
/* A backstop behind the read and byte bounds, on the wall clock: a
 * process's first walk fills the caches (thread table, names), and a
 * sanitizer build runs several times slower; 2 ms cut those short */
#define FK_PY_MAX_NS (20 * 1000 * 1000ull)
#define FK_PY_MAX_THREADS 4096      /* thread states walked per refresh */
#define FK_PY_MAX_INTERPS 64
#define FK_PY_NAME_MAX 256          /* characters of a name kept ("..." beyond) */
#define FK_PY_LINETABLE_MAX (64u << 10)
#define FK_PY_MAX_SEGMENTS 64       /* _PyEval_EvalFrameDefault calls per stack */

struct fk_py_where {
    uint64_t runtime;               /* &_PyRuntime in the target */
    uint64_t code_type;             /* &PyCode_Type */
    uint64_t unicode_type;          /* &PyUnicode_Type */
    uint64_t bytes_type;            /* &PyBytes_Type */
};

/* Why a walk gave no (or a partial) chain. */
enum fk_py_status {
    FK_PY_OK,               /* frames[] holds the chain, root reached */
    FK_PY_NO_THREAD,        /* the thread has no Python thread state */
    FK_PY_IDLE,             /* it has one, but runs no Python code now */
    FK_PY_BAD_READ,         /* memory that could not be read (freed, unmapped) */
    FK_PY_INVALID,          /* an object failed validation (type, bounds, cycle) */
    FK_PY_LIMIT,            /* depth, bytes or time bound: the chain is cut */
    FK_PY_NSTATUS
};
const char *fk_py_status_name(int status);  /* "ok", "no-thread", ... */

struct fk_py_frame {
    uint32_t name;          /* fk_py_name id */
    bool entry;             /* outermost frame of its _PyEval_EvalFrameDefault call */
};

struct fk_py_stack {
    struct fk_py_frame f[FK_PY_MAX_DEPTH];  /* leaf first */
    unsigned n;
    unsigned segments;      /* entry frames in f[] */
    uint8_t status;
    bool anchored;          /* walked from the sample's own heads (fk_py_walk_from) */
    bool stale[FK_PY_MAX_SEGMENTS];     /* anchored: segment k's chain no longer
                                           led to segment k+1's head when read */
    uint16_t seg_end[FK_PY_MAX_SEGMENTS];   /* anchored: f[] index after segment k */
    uint64_t cframe;        /* fk_py_walk: the thread's _PyCFrame when read */
    uint64_t tstate;        /* ... and its thread state */
    uint32_t reads;
    uint32_t read_bytes;
};

struct fk_py_walker;
/* lines: name frames "qualname (file.py:LINE)" instead of "qualname".
 * max_bytes: what the walker's caches may hold (0: no limit); beyond it
 * names are no longer cached (each walk then costs more, nothing grows). */
struct fk_py_walker *fk_py_walker_new(const struct fk_py_layout *lay,
                                      const struct fk_py_where *where, fk_py_read_fn read,
                                      void *ctx, bool lines, uint64_t max_bytes);
void fk_py_walker_free(struct fk_py_walker *w);
/* Batched reads (NULL: each is made with the read function alone). */
void fk_py_walker_set_readv(struct fk_py_walker *w, fk_py_readv_fn readv);
/* The clock FK_PY_MAX_NS is measured on (default fk_now_ns, monotonic
 * ns): a fake address space's checks give one that moves only when they
 * say, so a walk preempted under load is not cut short (and the bound
 * itself can be checked). */
void fk_py_walker_set_clock(struct fk_py_walker *w, uint64_t (*now)(void));
/* Walk thread tid's chain (tid as the target sees it: its own pid
 * namespace). */
void fk_py_walk(struct fk_py_walker *w, uint64_t tid, struct fk_py_stack *out);
/* Walk from the sample's own segment heads: heads[k] is the current frame
 * of the k-th _PyEval_EvalFrameDefault call (leaf first) as its _PyCFrame
 * in the sampled stack copy held it -- the state at the sample, not at the
 * read. Segment k is followed from heads[k] to its entry frame, whose
 * caller must be heads[k + 1]: where it is not, the thread moved on since
 * the sample and segment k is marked stale. last_is_root: the last head's
 * segment is the thread's first (the native stack reached its root), so
 * its entry frame must have no caller. out->segments == nheads. */
void fk_py_walk_from(struct fk_py_walker *w, const uint64_t *heads, unsigned nheads,
                     bool last_is_root, struct fk_py_stack *out);
/* A thread's frames as they were when its sample was read out of the
 * ring, before it waits its turn to be unwound:
 *  - window: the top of the thread's data stack in one read -- the live
 *    frames below datastack_top and, above it, the frames popped since the
 *    sample, whose bytes stay until a call reuses them. One copy, so a
 *    thread that runs on meanwhile cannot tear it as frame-by-frame reads
 *    can (a chain read 30 frames deep took ~50 us: a return and a new call
 *    in between left a link into the middle of a newer frame);
 *  - addr/bytes: frames of the live chain outside the window (generators'
 *    frames live in their generator objects, deep stacks in older
 *    chunks);
 *  - code_addr/code_hdr: the headers of the code objects the chain runs,
 *    so the walk validates and names them without reading the target
 *    again (a code object's memory may be freed and reused: its header is
 *    read for every sample, never trusted from an earlier one).
 * One read in the steady state: the thread state together with guesses --
 * the thread's window where it was last (2 KiB wider on each side than it
 * needed), the code objects and out-of-window frames the process's walks
 * needed lately (bytes read at an address are that address's bytes
 * whatever they turn out to be, and are used only where a chain leads to
 * them). A window that moved past its guess costs one more read; a code
 * object or frame not guessed is read when the sample is spliced, and
 * guessed from then on. */
#define FK_PY_SNAP_FRAMES 64
#define FK_PY_FRAME_BYTES 80
#define FK_PY_SNAP_CODES 32
#define FK_PY_CODE_BYTES 192
#define FK_PY_SNAP_NEED (12u << 10)     /* bytes of data stack a sample needs, at most */
#define FK_PY_SNAP_ABOVE (4u << 10)     /* ... of them above datastack_top */
#define FK_PY_SNAP_WINDOW (16u << 10)   /* read: that and 2 KiB either side */
struct fk_py_snap {
    unsigned n;
    uint64_t addr[FK_PY_SNAP_FRAMES];
    unsigned char bytes[FK_PY_SNAP_FRAMES][FK_PY_FRAME_BYTES];
    uint32_t reads, read_bytes; /* what taking it cost */
    uint64_t tstate, cframe;    /* the thread state read, its _PyCFrame then (0: none) */
    bool chain;                 /* read at the sample by the gate's program
                                   (fk_py_snap_chain): addr[]/bytes[] are the
                                   chain from head, as it was then */
    uint64_t head;              /* chain: the innermost frame (0: none) */
    unsigned nnamed;            /* chain: code objects named for the first time */
    uint64_t named_at;          /* chain: when they were (the walker's clock) */
    uint64_t named[FK_PY_SNAP_CODES];
    uint64_t named_func[FK_PY_SNAP_CODES];  /* ... the function each was named with */
    /* chain: frame i's code object as its naming found it (validated,
     * or vouched for by the cache): the walker's code entry + 1, 0 when
     * none was (the walk then judges that frame itself) */
    uint32_t code_of[FK_PY_SNAP_FRAMES];
    /* A read of the target's only (fk_py_snapshot): a chain's snapshot
     * may be allocated without these (FK_PY_SNAP_CHAIN_BYTES: 6.5 KB of
     * 29.3), which nothing reads where chain is set. */
    unsigned ncodes;
    uint64_t code_addr[FK_PY_SNAP_CODES];
    unsigned char code_hdr[FK_PY_SNAP_CODES][FK_PY_CODE_BYTES];
    uint64_t win_addr;          /* the window's address in the target */
    uint32_t win_len;           /* 0: none */
    unsigned char win[FK_PY_SNAP_WINDOW];
};
#define FK_PY_SNAP_CHAIN_BYTES offsetof(struct fk_py_snap, ncodes)
/* Record tid's data stack window and live chain into snap; false when
 * there is neither. */
bool fk_py_snapshot(struct fk_py_walker *w, uint64_t tid, struct fk_py_snap *snap);
/* The chain the gate's program read at a sample (capture/pygate.h) as
 * snap (FK_PY_SNAP_CHAIN_BYTES of it are written and read): false unless
 * it is thread tid's (its native_thread_id, as the target sees it) and
 * fits. Its code objects are named now, while they
 * live (read only where the cache misses); those named for the first
 * time are listed in snap->named (for the gate's code map). */
bool fk_py_snap_chain(struct fk_py_walker *w, const struct fk_pygate_chain *c, uint64_t tid,
                      struct fk_py_snap *snap);
/* Walk a chain snapshot (snap->chain) from its head: the thread's chain
 * at the sample, validated and named as any walk (code objects from the
 * cache, read when not known); frames past the program's depth are read
 * from the target. */
void fk_py_walk_snap(struct fk_py_walker *w, const struct fk_py_snap *snap,
                     struct fk_py_stack *out);
/* fk_py_walk_snap, and where the chain does not validate -- a code object
 * freed before it was named (code a module's import runs once, then
 * drops) -- thread tid's chain (as the target sees it; 0: none) read again
 * from the target as it is now, judged like any read made after the
 * sample: true when so. out's reads and read bytes count both walks, which
 * share the sample's bounds on reads. */
bool fk_py_walk_chain(struct fk_py_walker *w, const struct fk_py_snap *snap, uint64_t tid,
                      struct fk_py_stack *out);
/* Walks read frames from snap where it holds them (NULL: from the target). */
void fk_py_use_snap(struct fk_py_walker *w, const struct fk_py_snap *snap);
/* A name by id (NUL-terminated, UTF-8, no ';' or control characters). */
const char *fk_py_name(const struct fk_py_walker *w, uint32_t id, size_t *len);
size_t fk_py_walker_bytes(const struct fk_py_walker *w);
const struct fk_py_layout *fk_py_walker_layout(const struct fk_py_walker *w);

/* ---- splicing ---- */

/* One frame of the mixed stack, leaf first. An anchored walk has one
 * segment per eval frame by construction: stale segments become
 * "[python: changed]". */
struct fk_py_item {
    enum { FK_PY_NATIVE, FK_PY_PYFRAME, FK_PY_CHANGED } kind;
    uint32_t index;         /* NATIVE: native frame index; PYFRAME: index in the py stack */
};

enum fk_py_verdict {
    FK_PY_CONSISTENT,       /* one entry segment per native eval frame */
    FK_PY_CHANGED_STACK,    /* counts disagree: the outer agreeing part is spliced,
                               the rest is "[python: changed]" */
    FK_PY_NATIVE_CUT,       /* the native stack did not reach its root: spliced
                               from the leaf, as far as it goes */
    FK_PY_NVERDICT
};

/* native_eval[i]: native frame i (leaf first) is _PyEval_EvalFrameDefault.
 * native_complete: the native stack reached its root. py: a walk with
 * status FK_PY_OK or FK_PY_LIMIT. Writes at most max items; returns how
 * many, *verdict says how the two agreed. */
size_t fk_py_splice(const bool *native_eval, size_t nnative, bool native_complete,
                    const struct fk_py_stack *py, struct fk_py_item *out, size_t max,
                    enum fk_py_verdict *verdict);

/* ---- the capture's glue ---- */

struct fk_python_stats {
    uint64_t processes;             /* processes found running CPython */
    uint64_t forgotten;             /* ... whose state was freed at their exit */
    uint64_t anchored;              /* walks from the sample's own _PyCFrame heads */
    uint64_t cframe_learned;        /* processes whose _PyCFrame offset was learned */
    uint64_t unknown_version;       /* ... of a version without a layout */
    uint64_t samples;               /* samples of those processes */
    uint64_t spliced;               /* samples with Python frames spliced in */
    uint64_t consistent;            /* ... every entry segment matched */
    uint64_t changed;               /* ... "[python: changed]" */
    uint64_t native_cut;            /* ... native stack did not reach its root */
    uint64_t status[FK_PY_NSTATUS]; /* walks by outcome */
    uint64_t frames;                /* Python frames spliced */
    uint64_t reads, read_bytes;
    uint64_t tid_refreshes;         /* thread-table walks (a tid not cached) */
    uint64_t ns_total;              /* CPU time walking and splicing */
    double median_us;               /* per sample of a Python process */
    uint64_t snapshots;             /* chains read as the sample left the ring */
    uint64_t snapshot_windows;      /* ... with the data stack's top in one read */
    uint64_t snapshots_used;        /* ... found again when the sample was spliced */
    uint64_t snapshots_shared;      /* samples served by a read of their thread made
                                       after them for an earlier sample */
    uint64_t snapshot_reads, snapshot_read_bytes;   /* ... what taking them read */
    uint64_t chains;                /* samples whose chain the gate's program read */
    uint64_t chains_refused;        /* ... records not their thread's (a reused tid) */
    uint64_t chain_walks;           /* walks of such chains (samples with eval frames) */
    uint64_t fallbacks;             /* samples with no chain the program read at them
                                       (read from the target, or served by the chain
                                       read at a later sample of their thread) */
    uint64_t fallbacks_spliced;     /* ... spliced */
    uint64_t fallbacks_frameless;   /* ... with no Python frame to splice: no eval
                                       frame in the native stack, or none linked
                                       on the chain read */
    uint64_t chains_retaken;        /* ... invalid (a code object freed before it was
                                       named): read again from the target */
    uint64_t early_ns;              /* CPU time taking them */
    double delay_median_ms, delay_p90_ms, delay_max_ms; /* sample -> chain read */
    char versions[64];              /* "3.11" ... as found; unknown ones as "3.12?" */
};

struct fk_python;
/* lines: "qualname (file.py:LINE)"; max_bytes: the capture's budget share. */
struct fk_python *fk_python_new(struct fk_symbolizer *sym, bool lines, uint64_t max_bytes);
void fk_python_free(struct fk_python *p);
/* One sample's native user stack as the unwinder left it. */
struct fk_py_native {
    struct fk_loc *locs;        /* leaf first; rewritten in place */
    unsigned n, max;            /* frames, room */
    bool complete;              /* the walk reached the root (no "[truncated]") */
    const uint64_t *sps;        /* DWARF mode: sps[i] is frame i's stack pointer
                                   (fk_unwind_last_sps); NULL otherwise */
    unsigned nsps;
    const unsigned char *stack; /* the sample's stack copy, from stack_base */
    uint64_t stack_base, stack_len;
    uint64_t time;              /* the sample's (CLOCK_MONOTONIC): its snapshot */
};

/* Each eval call keeps its _PyCFrame (a local of _PyEval_EvalFrameDefault)
 * at a constant offset from its frame's CFA, a fact of the binary's code
 * generation; from it, the sample's own stack copy says where each call's
 * Python chain stood at the sample.
 *
 * The sample's segment heads from its stack copy: evals[i] says native
 * frame i (leaf first, i < n) is _PyEval_EvalFrameDefault, whose
 * _PyCFrame is at nat->sps[i + 1] (its CFA) + off. False unless every one
 * lies inside the copy and each links to the next (cframe.previous);
 * *outer_link: the outermost one's previous link (the thread state's
 * root_cframe when that call is the thread's first). */
bool fk_py_heads_from_copy(const struct fk_py_layout *L, const struct fk_py_native *nat,
                           const bool *evals, unsigned n, int64_t off, uint64_t *heads,
                           unsigned *nheads, uint64_t *outer_link);
/* The offset the innermost eval frame's CFA and cframe -- the thread's
 * current _PyCFrame as read from its thread state tstate soon after the
 * sample -- give, into *off, only when the sample's own copy confirms it:
 * with two or more eval frames, their cframes link one to the next; with
 * one in a stack that reached its root (nat->complete), its link is
 * tstate's root_cframe. A cframe read after the thread left or entered an
 * eval call (a late read) gives an offset the copy refutes: false. */
bool fk_py_cframe_offset(const struct fk_py_layout *L, const struct fk_py_native *nat,
                         const bool *evals, unsigned n, uint64_t cframe, uint64_t tstate,
                         int64_t *off);
/* Threads: fk_python_early is called from the ring reader's thread while
 * the engine's thread makes the other calls; every call holds the
 * module's lock throughout (the two meet rarely: a read takes a few
 * microseconds).
 *
 * As soon as a sample of pid/tid is copied out of its ring (time: the
 * sample's, CLOCK_MONOTONIC), in the reader's thread: snapshot the
 * thread's chain now, for fk_python_sample later: one read in the steady
 * state, none when a read of that thread was made after the sample (for
 * an earlier one: several of its samples in one pass over the rings).
 * Returns FK_PY_EARLY_WAIT when the sample waits for the engine's thread
 * instead (its process was never looked at for CPython, which takes the
 * symbolizer, the engine thread's alone: fk_python_catch_up does it), or
 * FK_PY_EARLY_READ when it is a Python process's (read now, or served by a
 * read made after it), else 0. */
enum { FK_PY_EARLY_WAIT = 1, FK_PY_EARLY_READ = 2 };
/* The ring reader's wake-up gate (capture/pygate.h), told (with the
 * module's lock held, from either thread) as each process is found to run
 * CPython (FK_PYGATE_WAKE: its samples wake the reader), found not to
 * (QUIET), or is to be looked at again or exited (FORGET: a process the
 * gate does not know wakes the reader, so that its first samples ask for
 * the engine's thread at once); and, as each thread's state is read from
 * the target, given the thread (fk_pygate_thread), so that its program
 * reads that thread's chain at its next samples. */
void fk_python_set_gate(struct fk_python *p, struct fk_pygate *gate);
/* A handled sample of pid with no user frames to splice (a kernel
 * thread's): pid looked at as its handled samples are, so that the gate
 * is told (a process never told stays one whose samples wake the reader). */
void fk_python_settle(struct fk_python *p, pid_t pid);
/* chain: the sample's chain as the gate's program read it (NULL: none);
 * a Python process's sample with one needs no read (returns 0). */
int fk_python_early(struct fk_python *p, pid_t pid, pid_t tid, uint64_t time,
                    const struct fk_pygate_chain *chain);
/* From the engine's thread, before the samples fk_python_early met are
 * handled: a process seen for the first time is looked for CPython
 * (its binary's symbols, once), so short-lived interpreters are read
 * before they exit, and the samples that waited for it are read. */
void fk_python_catch_up(struct fk_python *p);
/* In the reader's thread, at the end of a pass over the rings in which
 * fk_python_early returned FK_PY_EARLY_WAIT: whether a sample waiting
 * still needs the engine's thread soon -- not when the pass's later
 * records settled its process (a fork record read from another ring
 * after the child's first sample: fk_python_forked took it as its
 * parent), which then waits for the engine's own clock. */
bool fk_python_catch_up_due(struct fk_python *p);
/* In the reader's thread, as an executable mapping's record leaves the
 * ring: a file named like CPython's (python3.11, libpython3.11.so...)
 * mapped into pid, likely an exec the symbolizer will handle only later;
 * until it has and pid is found to run CPython, pid's samples wait for
 * the engine's thread (fk_python_early), which looks at pid again as soon
 * as it has. */
void fk_python_mapped(struct fk_python *p, pid_t pid, const char *path, uint64_t time);
/* In the reader's thread, as a process's fork record leaves the ring
 * (ppid forked pid; not a thread's): a child of a process looked at and
 * found without CPython, with no interpreter's mapping seen since, is
 * taken as its parent -- settled, no look of its own; its exec of an
 * interpreter un-settles it as that mapping leaves the ring
 * (fk_python_mapped) -- so that the short-lived processes of a build or
 * a shell loop (gcc's cc1 and as) cost the engine's thread no look and
 * no take each. A child of a process not looked at yet remembers it: the
 * child's first look (fk_python_catch_up) looks at the parent too. */
void fk_python_forked(struct fk_python *p, pid_t pid, pid_t ppid, uint64_t time);
/* Rewrite one sample's user frames in place when pid runs CPython: Python
 * frames become locations of the symbolizer's named frames,
 * "qualname_[p]". With the stack copy and frame stack pointers, each
 * eval call's _PyCFrame is read from the copy, so the chain starts where
 * it was at the sample; otherwise the live chain is read. What was found
 * in a pid holds while its image (fk_sym_proc_gen) does: after an exec or
 * a pid's reuse it is looked for afresh. */
void fk_python_sample(struct fk_python *p, pid_t pid, pid_t tid, struct fk_py_native *nat);
/* Thread tid's Python chain alone, root first, ';'-separated, into out
 * (tests, diagnostics); returns the walk's status, FK_PY_NO_THREAD when
 * pid runs no known CPython. */
int fk_python_thread(struct fk_python *p, pid_t pid, pid_t tid, struct fk_buf *out);
void fk_python_stats(struct fk_python *p, struct fk_python_stats *out);
size_t fk_python_bytes(struct fk_python *p);

/* The suffix marking Python frames in folded output (like "_[j]" for JIT
 * frames); flamegraph.pl shows it as part of the name. */
#define FK_PY_SUFFIX "_[p]"
#define FK_PY_CHANGED_NAME "[python: changed]"

#endif
