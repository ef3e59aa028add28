/* SPDX-License-Identifier: GPL-2.0-only */
/* CPython frames for native stacks (see python.h). */
#include "unwind/python.h"
#include "capture/pygate.h"
#include "util/hindex.h"
#include "util/procfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

/* ---- layouts --------------------------------------------------------------
 * 3.11 (Debian 12's python3.11 3.11.2, x86-64). Verified three ways, not
 * taken on trust from py-spy's or the OpenTelemetry profiler's tables:
 *  - offsetof() over Debian's own headers (python3.11-dev, Py_BUILD_CORE,
 *    internal/pycore_{runtime,interp,frame,code}.h) -- the headers the
 *    binary was built from;
 *  - the binary itself (gdb -batch -ex 'disassemble F' /usr/bin/python3.11,
 *    exported accessors): PyInterpreterState_Head reads _PyRuntime+40,
 *    PyInterpreterState_Next (%rdi)+0, PyInterpreterState_ThreadHead +0x10,
 *    PyThreadState_Next +0x8, PyThreadState_GetFrame reads tstate+0x38
 *    (cframe), +0x8 (current_frame), frame+0x45 (owner == 1: generator),
 *    +0x20 (f_code), code+0xa8 (_co_firsttraceable), +0xb8 (co_code_adaptive),
 *    frame+0x38 (prev_instr); init_threadstate stores tstate+0x150
 *    (root_cframe) into tstate+0x38; Py_Version in .rodata holds 0x030b02f0;
 *  - a live python3.11 read through this walker (test/t-python.sh): the
 *    names of the running functions come out.
 * native_thread_id (160) is set by the thread's own bootstrap, so it is the
 * tid in the target's pid namespace.
 *
 * Adding a version (facts from CPython's headers of each version, to be
 * verified against that build's headers and binary as above):
 *  - 3.12 keeps tstate->cframe->current_frame and the data stack fields,
 *    but _PyInterpreterFrame starts with f_code (0) and previous (8), and
 *    is_entry is gone: each _PyEval_EvalFrameDefault call links a shim
 *    frame, a local of its C stack, into the chain (entry_frame: owner
 *    FRAME_OWNED_BY_CSTACK, 3; f_code the interpreter's trampoline code),
 *    so segments end at those shims -- a row plus a "segment ends at an
 *    owner-3 frame, which is not shown" rule in walk_chain; PyCodeObject and
 *    PyThreadState offsets move.
 *  - 3.13 drops _PyCFrame (tstate->current_frame; fk_py_heads_from_copy needs
 *    another anchor: each call's entry_frame, in the stack copy, has the
 *    outer call's head as its previous link), and f_code becomes
 *    f_executable (check its type before naming). 3.14 renumbers the
 *    owners (FRAME_OWNED_BY_INTERPRETER = 3 marks the shim, CSTACK is 4).
 *    3.13's _PyRuntime starts with _Py_DebugOffsets (cookie
 *    "xdebugpy", a version, and per struct a size and the offsets of these
 *    very fields): for 3.13+ fill a layout from that table read out of the
 *    target -- after checking the cookie and the version and bounding every
 *    offset by the size it also gives -- instead of adding rows;
 *    fr_size/co_size/ts_size come from its size fields. A field the table
 *    does not give (the data stack's top and limit for the early window)
 *    stays 0: fk_py_snapshot then copies the chain frame by frame. */
static const struct fk_py_layout layouts[] = {
    {
        .version = 0x030b, .name = "3.11",
        .rt_interp_head = 40, .interp_next = 0, .interp_threads_head = 16,
        .ts_next = 8, .ts_cframe = 56, .ts_native_thread_id = 160, .ts_size = 168,
        .ts_root_cframe = 336,
        .ts_datastack_chunk = 296, .ts_datastack_top = 304, .ts_datastack_limit = 312,
        .chunk_data = 24,
        .cf_current_frame = 8, .cf_previous = 16, .cf_size = 24,
        .fr_func = 0, .fr_globals = 8,
        .fr_code = 32, .fr_previous = 48, .fr_prev_instr = 56, .fr_is_entry = 68,
        .fr_owner = 69, .fr_size = 72, .owner_generator = 1,
        .ob_type = 8, .ob_size = 16,
        .co_firstlineno = 72, .co_filename = 112, .co_qualname = 128, .co_linetable = 136,
        .co_firsttraceable = 168, .co_code = 184, .co_size = 192,
        .str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_compact_data = 72,
        .bytes_size = 16, .bytes_data = 32,
    },
};

const struct fk_py_layout *fk_py_layout_for(uint16_t version)
{
#ifdef __x86_64__
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++)
        if (layouts[i].version == version)
            return &layouts[i];
#else
    (void)layouts;
    (void)version;
#endif
    return NULL;
}

static const char *const status_names[FK_PY_NSTATUS] = {
    "ok", "no-thread", "idle", "bad-read", "invalid", "limit",
};

const char *fk_py_status_name(int status)
{
    return status >= 0 && status < FK_PY_NSTATUS ? status_names[status] : "?";
}

/* ---- the walker ----------------------------------------------------------- */

/* A code object as last read: reused when its address and identity fields
 * still match (code objects are freed and their memory reused). Its
 * header is read again unless a frame runs it with the function and
 * globals it ran with when the header was last read, less than
 * CODE_TRUST_NS ago (code_known). */
struct code_entry {
    uint64_t addr, qualname, filename, linetable;
    uint64_t func, globals;     /* a frame's f_func and f_globals at the last check */
    uint64_t checked;           /* when (the walker's clock); 0: never */
    uint32_t units;             /* code units (validated) */
    int32_t firsttraceable;
    int32_t firstlineno;
    uint32_t name;          /* qualname's id; UINT32_MAX: unreadable */
    uint32_t file;          /* short file name's id (lines) */
    uint32_t lt_off, lt_len;/* line table bytes in w->lt (lines); lt_len 0: none */
    bool told;              /* given in a chain snapshot's named[] (fk_py_snap_chain) */
};

struct tid_entry {
    uint64_t tid, tstate;
    uint64_t wlo, whi;      /* the last window read for it: the next one's guess */
};

/* What the early snapshot reads speculatively (see python.h): the code
 * objects and out-of-window frames the process's walks needed in its last
 * SPEC_AGE snapshots; each thread's window where it was last, WIN_SLACK
 * wider on each side than needed so the next one still holds */
#define SPEC_CODES 16
#define SPEC_FRAMES 8
#define SPEC_AGE 64
#define WIN_SLACK 2048u
struct spec { uint64_t addr, last; };

struct fk_py_walker {
    const struct fk_py_layout *lay;
    uint16_t co_read;       /* bytes of a code object's header read (code_read_len) */
    struct fk_py_where where;
    fk_py_read_fn read;
    fk_py_readv_fn readv;
    void *ctx;
    uint64_t (*now)(void);  /* FK_PY_MAX_NS's clock */
    bool lines;
    uint64_t max_bytes;
    /* tid -> thread state */
    struct tid_entry *tids;
    size_t ntids, captids;
    struct fk_hindex tid_idx;
    /* code objects */
    struct code_entry *codes;
    size_t ncodes, capcodes;
    struct fk_hindex code_idx;
    /* names: NUL-terminated strings at offsets in pool */
    struct fk_buf pool;
    uint32_t *name_off;
    size_t nnames, capnames;
    struct fk_hindex name_idx;
    struct fk_buf lt;       /* line tables of cached code objects */
    struct fk_buf tmp;
    /* a chain's code headers, as the gate's program read them and the
     * rest read in one batch (pre_read): code_hdr takes them while the
     * chain is named */
    uint64_t pre_addr[FK_PYGATE_CODES + FK_PYGATE_DEPTH];
    bool pre_ok[FK_PYGATE_CODES + FK_PYGATE_DEPTH];     /* read (else its read failed) */
    unsigned npre;
    struct fk_buf pre;
    struct code_entry scratch;  /* a code object read past the budget */
    uint64_t refreshes;         /* thread-table walks */
    struct spec spec_code[SPEC_CODES], spec_frame[SPEC_FRAMES];
    unsigned nspec_code, nspec_frame;
    uint64_t nsnaps;            /* snapshots taken: the guesses' clock */
    /* per walk */
    bool suspended;         /* the last entry frame read: a generator's, suspended
                               (3.11 clears a generator frame's previous link when
                               it yields: gen_send_ex2) */
    struct fk_py_stack *cur;
    const struct fk_py_snap *snap;  /* frames as read earlier, or NULL */
    uint64_t t0;
    uint64_t trust_at;      /* the moment code_known's CODE_TRUST_NS counts back
                               from: the walk's start, or a chain's naming */
    bool over;              /* a bound was hit */
};

static size_t walker_bytes(const struct fk_py_walker *w)
{
    return sizeof *w + w->captids * sizeof *w->tids + fk_hindex_bytes(&w->tid_idx) +
           w->capcodes * sizeof *w->codes + fk_hindex_bytes(&w->code_idx) + w->pool.cap +
           w->capnames * sizeof *w->name_off + fk_hindex_bytes(&w->name_idx) + w->lt.cap +
           w->tmp.cap + w->pre.cap;
}

size_t fk_py_walker_bytes(const struct fk_py_walker *w)
{
    return w ? walker_bytes(w) : 0;
}

/* Tables grow by doubling: keep them under half the budget so the next
 * growth cannot pass it. */
static bool room(const struct fk_py_walker *w, size_t more)
{
    return !w->max_bytes || 2 * (walker_bytes(w) + more) <= w->max_bytes;
}

/* The part of a code object's header the walker uses: through the last
 * field it reads (a sample reads every one it runs: 16 bytes less than the
 * whole header on 3.11, times the code objects of each stack). */
static uint16_t code_read_len(const struct fk_py_layout *L)
{
    unsigned end = 0, f[][2] = {
        { L->ob_type, 8 }, { L->ob_size, 8 }, { L->co_firstlineno, 4 }, { L->co_filename, 8 },
        { L->co_qualname, 8 }, { L->co_linetable, 8 }, { L->co_firsttraceable, 4 },
    };
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        end = f[i][0] + f[i][1] > end ? f[i][0] + f[i][1] : end;
    end = (end + 7) & ~7u;
    return (uint16_t)(end < L->co_size ? end : L->co_size);
}

struct fk_py_walker *fk_py_walker_new(const struct fk_py_layout *lay,
                                      const struct fk_py_where *where, fk_py_read_fn read,
                                      void *ctx, bool lines, uint64_t max_bytes)
{
    struct fk_py_walker *w = fk_calloc(1, sizeof *w);
    w->lay = lay;
    w->co_read = code_read_len(lay);
    w->where = *where;
    w->read = read;
    w->ctx = ctx;
    w->now = fk_now_ns;
    w->lines = lines;
    w->max_bytes = max_bytes;
    fk_buf_addc(&w->pool, 0);   /* offset 0: no name */
    /* id 0: what a name past the budget is called */
    w->name_off = fk_grow(w->name_off, &w->capnames, 1, sizeof *w->name_off);
    w->name_off[0] = (uint32_t)w->pool.len;
    fk_buf_adds(&w->pool, "[python: memory limit]");
    fk_buf_addc(&w->pool, 0);
    w->nnames = 1;
    return w;
}

void fk_py_walker_set_readv(struct fk_py_walker *w, fk_py_readv_fn readv)
{
    w->readv = readv;
}

void fk_py_walker_set_clock(struct fk_py_walker *w, uint64_t (*now)(void))
{
    w->now = now ? now : fk_now_ns;
}

void fk_py_walker_free(struct fk_py_walker *w)
{
    if (!w)
        return;
    free(w->tids);
    fk_hindex_free(&w->tid_idx);
    free(w->codes);
    fk_hindex_free(&w->code_idx);
    fk_buf_free(&w->pool);
    free(w->name_off);
    fk_hindex_free(&w->name_idx);
    fk_buf_free(&w->lt);
    fk_buf_free(&w->tmp);
    fk_buf_free(&w->pre);
    free(w);
}

const struct fk_py_layout *fk_py_walker_layout(const struct fk_py_walker *w)
{
    return w->lay;
}

const char *fk_py_name(const struct fk_py_walker *w, uint32_t id, size_t *len)
{
    if (id >= w->nnames) {
        *len = 9;
        return "[unknown]";
    }
    const char *s = w->pool.data + w->name_off[id];
    *len = strlen(s);
    return s;
}

/* The id of name s[0..n) (made on first sight); NAME_NOMEM past the budget. */
#define NAME_NOMEM 0
static uint32_t name_id(struct fk_py_walker *w, const char *s, size_t n)
{
    if (!n) {
        s = "?";    /* an empty name would be an empty frame */
        n = 1;
    }
    uint64_t h = fk_hash(s, n);
    struct fk_hiter it = fk_hindex_find(&w->name_idx, h);
    uint32_t i;
    while (fk_hindex_next(&it, &i)) {
        const char *t = w->pool.data + w->name_off[i];
        if (strlen(t) == n && memcmp(t, s, n) == 0)
            return i;
    }
    if (!room(w, n + 1 + 64))
        return NAME_NOMEM;
    w->name_off = fk_grow(w->name_off, &w->capnames, w->nnames + 1, sizeof *w->name_off);
    w->name_off[w->nnames] = (uint32_t)w->pool.len;
    fk_buf_add(&w->pool, s, n);
    fk_buf_addc(&w->pool, 0);
    fk_hindex_add(&w->name_idx, h, (uint32_t)w->nnames);
    return (uint32_t)w->nnames++;
}

/* User-space pointers only (x86-64: below the canonical hole), aligned. */
static bool ptr_ok(uint64_t p, unsigned align)
{
    return p >= 4096 && p < 0x0000800000000000ull && p % align == 0;
}

/* One bounded read for the current walk. */
static bool rd(struct fk_py_walker *w, uint64_t addr, void *buf, size_t len)
{
    struct fk_py_stack *s = w->cur;
    if (s->reads >= FK_PY_MAX_READS || s->read_bytes + len > FK_PY_MAX_READ_BYTES ||
        ((s->reads & 15) == 15 && w->now() - w->t0 > FK_PY_MAX_NS)) {
        w->over = true;
        return false;
    }
    s->reads++;
    s->read_bytes += (uint32_t)len;
    if (addr + len < addr)
        return false;
    return w->read(w->ctx, addr, buf, len);
}

/* One bounded batch of reads for the current walk (one read toward the
 * bound, whatever its length): how many of iov[0..n) were read, in order. */
static size_t rdv(struct fk_py_walker *w, const struct fk_py_iov *iov, size_t n)
{
    struct fk_py_stack *s = w->cur;
    size_t bytes = 0, m = 0;
    for (; m < n; m++) {
        if (iov[m].addr + iov[m].len < iov[m].addr ||
            s->read_bytes + bytes + iov[m].len > FK_PY_MAX_READ_BYTES)
            break;
        bytes += iov[m].len;
    }
    if (!m || s->reads >= FK_PY_MAX_READS ||
        ((s->reads & 15) == 15 && w->now() - w->t0 > FK_PY_MAX_NS)) {
        w->over = true;
        return 0;
    }
    s->reads++;
    s->read_bytes += (uint32_t)bytes;
    if (w->readv)
        return w->readv(w->ctx, iov, m);
    for (size_t i = 0; i < m; i++)
        if (!w->read(w->ctx, iov[i].addr, iov[i].buf, iov[i].len))
            return i;
    return m;
}

static bool rd_ptr(struct fk_py_walker *w, uint64_t addr, uint64_t *out)
{
    return rd(w, addr, out, sizeof *out);
}

static uint64_t get_u64(const unsigned char *b, size_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

static int32_t get_i32(const unsigned char *b, size_t off)
{
    int32_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

/* UTF-8 of one code point into out; what a frame name must not carry
 * (controls, surrogates, non-characters past U+10FFFF) becomes '?'. */
static void put_cp(struct fk_buf *out, uint32_t c)
{
    if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || (c >= 0xd800 && c < 0xe000) ||
        c > 0x10ffff || c == ';') {
        fk_buf_addc(out, c == ';' ? ':' : '?');
    } else if (c < 0x80) {
        fk_buf_addc(out, (char)c);
    } else if (c < 0x800) {
        fk_buf_addc(out, (char)(0xc0 | c >> 6));
        fk_buf_addc(out, (char)(0x80 | (c & 0x3f)));
    } else if (c < 0x10000) {
        fk_buf_addc(out, (char)(0xe0 | c >> 12));
        fk_buf_addc(out, (char)(0x80 | (c >> 6 & 0x3f)));
        fk_buf_addc(out, (char)(0x80 | (c & 0x3f)));
    } else {
        fk_buf_addc(out, (char)(0xf0 | c >> 18));
        fk_buf_addc(out, (char)(0x80 | (c >> 12 & 0x3f)));
        fk_buf_addc(out, (char)(0x80 | (c >> 6 & 0x3f)));
        fk_buf_addc(out, (char)(0x80 | (c & 0x3f)));
    }
}

/* A str object's text, as UTF-8, appended to out: compact strings only
 * (code objects' names and file names are), at most FK_PY_NAME_MAX
 * characters ("..." after a cut). False if it is no valid str. */
static bool read_str(struct fk_py_walker *w, uint64_t addr, struct fk_buf *out)
{
    const struct fk_py_layout *L = w->lay;
    unsigned char h[128];
    size_t hl = L->str_compact_data;
    if (!ptr_ok(addr, 8) || hl > sizeof h || !rd(w, addr, h, hl))
        return false;
    if (get_u64(h, L->ob_type) != w->where.unicode_type)
        return false;
    int64_t len = (int64_t)get_u64(h, L->str_length);
    unsigned state = h[L->str_state];
    unsigned kind = state >> 2 & 7, compact = state >> 5 & 1, ascii = state >> 6 & 1;
    if (len < 0 || !compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
        return false;
    uint64_t data = addr + (ascii ? L->str_ascii_data : L->str_compact_data);
    size_t n = len > FK_PY_NAME_MAX ? FK_PY_NAME_MAX : (size_t)len;
    unsigned char raw[FK_PY_NAME_MAX * 4];
    if (n && !rd(w, data, raw, n * kind))
        return false;
    for (size_t i = 0; i < n; i++) {
        uint32_t c;
        if (kind == 1)
            c = raw[i];
        else if (kind == 2)
            c = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
        else
            c = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
                (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
        if (ascii && c >= 0x80)
            c = 0xfffd0000;     /* an ascii string with a high byte: hostile, '?' */
        put_cp(out, c);
    }
    if ((size_t)len > n)
        fk_buf_adds(out, "...");
    return true;
}

/* The last one or two components of a path: "mod.py", or "pkg/__init__.py"
 * when the file alone says little. */
static void short_file(const char *p, size_t n, struct fk_buf *out)
{
    if (!n)     /* (p may be NULL then) */
        return;
    size_t b = n;
    while (b > 0 && p[b - 1] != '/')
        b--;
    if (b > 1 && n - b >= 2 && p[b] == '_' && p[b + 1] == '_') {
        size_t c = b - 1;
        while (c > 0 && p[c - 1] != '/')
            c--;
        b = c;
    }
    fk_buf_add(out, p + b, n - b);
}

/* addr was needed by a walk from a snapshot: guess it in the next ones
 * (the least recently needed guess makes room). */
static void spec_note(struct spec *list, unsigned *n, unsigned cap, uint64_t addr, uint64_t now)
{
    unsigned old = 0;
    for (unsigned i = 0; i < *n; i++) {
        if (list[i].addr == addr) {
            list[i].last = now;
            return;
        }
        if (list[i].last < list[old].last)
            old = i;
    }
    if (*n < cap)
        old = (*n)++;
    list[old] = (struct spec){ addr, now };
}

/* Forget guesses not needed for SPEC_AGE snapshots, and addr (its read
 * failed: freed). */
static void spec_prune(struct spec *list, unsigned *n, uint64_t now, uint64_t addr)
{
    unsigned m = 0;
    for (unsigned i = 0; i < *n; i++)
        if (now - list[i].last <= SPEC_AGE && list[i].addr != addr)
            list[m++] = list[i];
    *n = m;
}

/* The header of the code object at addr: from the snapshot when it holds
 * it, else read now (and guessed in the next snapshots). */
static bool code_hdr(struct fk_py_walker *w, uint64_t addr, unsigned char *hdr)
{
    const struct fk_py_snap *s = w->snap;
    bool got = false;
    for (unsigned i = 0; i < w->npre && !got; i++)
        if (w->pre_addr[i] == addr) {
            if (!w->pre_ok[i])
                return false;   /* read with the batch, and failed (pre_read) */
            memcpy(hdr, w->pre.data + (size_t)i * w->co_read, w->co_read);
            got = true;
        }
    for (unsigned i = 0; s && !s->chain && i < s->ncodes && i < FK_PY_SNAP_CODES && !got; i++)
        if (s->code_addr[i] == addr) {
            memcpy(hdr, s->code_hdr[i], w->co_read);
            got = true;
        }
    if (!got && !rd(w, addr, hdr, w->co_read))
        return false;
    if (s && !s->chain)
        spec_note(w->spec_code, &w->nspec_code, SPEC_CODES, addr, w->nsnaps);
    return true;
}

/* A frame's code object from the cache alone, without its header: when
 * the frame runs it with the function and globals (f_func, f_globals) the
 * cached entry was last checked with, less than CODE_TRUST_NS from the
 * walk (w->trust_at: a chain the gate's program read counts from when it
 * was named, as it left the ring, fk_py_walk_snap), and
 * its prev_instr lies in that code's instructions (or just before them:
 * not started). A frame holds references to all three, so a live frame
 * keeps them from being freed; a new code object at a freed one's address
 * would also need a function object at its function's address and the
 * same globals to be taken for it (a program that compiles code in a
 * loop can do that: the name is then at worst that of the code object
 * freed within CODE_TRUST_NS). Nothing read from the target is followed
 * here; a header is read every CODE_TRUST_NS, and whenever a frame names
 * the code with another function or globals. The check a sample saved
 * was one header read (its own page to pin) per code object of its
 * stack, in the early read. */
#define CODE_TRUST_NS (1000 * 1000000ull)
static const struct code_entry *code_known(const struct fk_py_walker *w, uint64_t addr,
                                           uint64_t func, uint64_t globals, uint64_t pi)
{
    if (!func || !globals)
        return NULL;
    struct fk_hiter it = fk_hindex_find(&w->code_idx, fk_hash_u64(addr));
    uint32_t i;
    while (fk_hindex_next(&it, &i)) {
        const struct code_entry *c = &w->codes[i];
        /* checked before or after trust_at (a chain's naming: another
         * sample's may have checked the code again since) */
        uint64_t apart = c->checked > w->trust_at ? c->checked - w->trust_at : w->trust_at - c->checked;
        if (c->addr != addr || c->func != func || c->globals != globals || !c->checked ||
            apart >= CODE_TRUST_NS)
            continue;
        uint64_t code0 = addr + w->lay->co_code;
        if (pi + 2 < code0 || pi >= code0 + 2 * (uint64_t)c->units)
            return NULL;
        return c;
    }
    return NULL;
}

/* Whether the cached entry of the code object at addr may be taken
 * without its header at a walk soon after now: the early read then does
 * not guess its header. */
static bool code_fresh(const struct fk_py_walker *w, uint64_t addr, uint64_t now)
{
    struct fk_hiter it = fk_hindex_find(&w->code_idx, fk_hash_u64(addr));
    uint32_t i;
    while (fk_hindex_next(&it, &i)) {
        const struct code_entry *c = &w->codes[i];
        if (c->addr == addr && c->func && c->globals && c->checked && now >= c->checked &&
            now - c->checked < CODE_TRUST_NS / 2)
            return true;
    }
    return false;
}

/* The code object at addr, run by a frame with func and globals:
 * validated and named (cached). NULL if invalid. */
static const struct code_entry *code_at(struct fk_py_walker *w, uint64_t addr, uint64_t func,
                                        uint64_t globals, unsigned char *hdr)
{
    const struct fk_py_layout *L = w->lay;
    if (!ptr_ok(addr, 8) || L->co_size > FK_PY_CODE_BYTES || !code_hdr(w, addr, hdr))
        return NULL;
    if (get_u64(hdr, L->ob_type) != w->where.code_type)
        return NULL;
    int64_t units = (int64_t)get_u64(hdr, L->ob_size);
    int32_t ft = get_i32(hdr, L->co_firsttraceable);
    if (units <= 0 || units > (1 << 24) || ft < 0 || ft > units)
        return NULL;
    uint64_t qn = get_u64(hdr, L->co_qualname), fn = get_u64(hdr, L->co_filename);
    uint64_t lt = get_u64(hdr, L->co_linetable);
    int32_t first = get_i32(hdr, L->co_firstlineno);
    uint64_t h = fk_hash_u64(addr);
    struct fk_hiter it = fk_hindex_find(&w->code_idx, h);
    uint32_t i;
    while (fk_hindex_next(&it, &i)) {
        struct code_entry *c = &w->codes[i];
        if (c->addr == addr && c->qualname == qn && c->filename == fn && c->linetable == lt &&
            c->firstlineno == first && c->units == (uint32_t)units && c->firsttraceable == ft) {
            c->func = func;
            c->globals = globals;
            c->checked = w->t0;
            return c;
        }
    }
    /* new (or changed): read its names */
    struct code_entry ce = { .addr = addr, .qualname = qn, .filename = fn, .linetable = lt,
                             .func = func, .globals = globals, .checked = w->t0,
                             .units = (uint32_t)units, .firsttraceable = ft,
                             .firstlineno = first, .file = UINT32_MAX };
    fk_buf_reset(&w->tmp);
    if (!read_str(w, qn, &w->tmp))
        return NULL;
    ce.name = name_id(w, w->tmp.data, w->tmp.len);
    if (w->lines) {
        fk_buf_reset(&w->tmp);
        struct fk_buf full = FK_BUF_INIT;
        if (read_str(w, fn, &full)) {
            short_file(full.data, full.len, &w->tmp);
            ce.file = name_id(w, w->tmp.data, w->tmp.len);
        }
        fk_buf_free(&full);
        unsigned char bh[64];
        if (ptr_ok(lt, 8) && rd(w, lt, bh, L->bytes_data) &&
            get_u64(bh, L->ob_type) == w->where.bytes_type) {
            int64_t bl = (int64_t)get_u64(bh, L->bytes_size);
            if (bl > 0 && bl <= FK_PY_LINETABLE_MAX && room(w, (size_t)bl + sizeof ce)) {
                size_t off = w->lt.len;
                fk_buf_reserve(&w->lt, (size_t)bl);
                if (rd(w, lt + L->bytes_data, w->lt.data + off, (size_t)bl)) {
                    w->lt.len += (size_t)bl;
                    ce.lt_off = (uint32_t)off;
                    ce.lt_len = (uint32_t)bl;
                }
            }
        }
    }
    if (!room(w, sizeof ce + 16)) {
        /* past the budget: used once, not kept (nor trusted) */
        ce.checked = 0;
        w->scratch = ce;
        return &w->scratch;
    }
    w->codes = fk_grow(w->codes, &w->capcodes, w->ncodes + 1, sizeof *w->codes);
    w->codes[w->ncodes] = ce;
    fk_hindex_add(&w->code_idx, h, (uint32_t)w->ncodes);
    return &w->codes[w->ncodes++];
}

/* 3.11 location table (Objects/locations.md): the line of code unit idx,
 * or -1. Entries: a first byte 1CCCCLLL (code C, L+1 code units), then
 * per code: 15 none; 14 long (svarint line delta, 3 varints); 13 no
 * column (svarint line delta); 10-12 one line (delta C-10, 2 bytes);
 * 0-9 short (delta 0, 1 byte). Varints: 6 bits per byte, bit 6 = more. */
static int line_of(const unsigned char *t, size_t n, int first, uint64_t idx)
{
    size_t i = 0;
    int64_t line = first;
    uint64_t unit = 0;
    unsigned steps = 0;
    while (i < n && steps++ < 100000) {
        unsigned b = t[i++];
        if (!(b & 0x80))
            return -1;
        unsigned code = b >> 3 & 15, len = (b & 7) + 1;
        int64_t delta = 0;
        bool none = false;
        /* varint reader */
#define VARINT(out) do { \
            uint64_t v_ = 0; unsigned sh_ = 0, c_; \
            do { if (i >= n || sh_ > 60) return -1; c_ = t[i++]; v_ |= (uint64_t)(c_ & 63) << sh_; sh_ += 6; } \
            while (c_ & 64); \
            (out) = v_; } while (0)
        if (code == 15) {
            none = true;
        } else if (code == 14 || code == 13) {
            uint64_t u;
            VARINT(u);
            delta = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
            if (code == 14) {
                uint64_t skip;
                VARINT(skip);
                VARINT(skip);
                VARINT(skip);
                (void)skip;
            }
        } else if (code >= 10) {
            delta = code - 10;
            i += 2;
        } else {
            i += 1;
        }
#undef VARINT
        line += delta;
        if (idx < unit + len)
            return none || line < 0 || line > 100000000 ? -1 : (int)line;
        unit += len;
    }
    return -1;
}

/* Thread states by native_thread_id, into the cache. */
static void refresh_tids(struct fk_py_walker *w)
{
    const struct fk_py_layout *L = w->lay;
    w->ntids = 0;
    fk_hindex_free(&w->tid_idx);
    uint64_t interp;
    if (!rd_ptr(w, w->where.runtime + L->rt_interp_head, &interp))
        return;
    unsigned nthreads = 0;
    for (unsigned ni = 0; ni < FK_PY_MAX_INTERPS && ptr_ok(interp, 8); ni++) {
        uint64_t ts;
        if (!rd_ptr(w, interp + L->interp_threads_head, &ts))
            return;
        uint64_t first = ts;
        while (ptr_ok(ts, 8) && nthreads++ < FK_PY_MAX_THREADS) {
            unsigned char t[256];
            if (L->ts_size > sizeof t || !rd(w, ts, t, L->ts_size))
                return;
            uint64_t ntid = get_u64(t, L->ts_native_thread_id);
            if (ntid && room(w, sizeof(struct tid_entry) * 2 + 16)) {
                w->tids = fk_grow(w->tids, &w->captids, w->ntids + 1, sizeof *w->tids);
                w->tids[w->ntids] = (struct tid_entry){ ntid, ts };
                fk_hindex_add(&w->tid_idx, fk_hash_u64(ntid), (uint32_t)w->ntids++);
            }
            ts = get_u64(t, L->ts_next);
            if (ts == first)
                break;
        }
        if (!rd_ptr(w, interp + L->interp_next, &interp))
            return;
    }
}

static uint64_t tid_lookup(const struct fk_py_walker *w, uint64_t tid)
{
    struct fk_hiter it = fk_hindex_find(&w->tid_idx, fk_hash_u64(tid));
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (w->tids[i].tid == tid)
            return w->tids[i].tstate;
    return 0;
}

/* The thread state of tid: cached, confirmed by its native_thread_id (the
 * state may have been freed and reused), else the table walked again. */
static uint64_t tstate_of(struct fk_py_walker *w, uint64_t tid, bool *refreshed)
{
    const struct fk_py_layout *L = w->lay;
    uint64_t ts = tid_lookup(w, tid), got;
    if (ts && rd_ptr(w, ts + L->ts_native_thread_id, &got) && got == tid)
        return ts;
    *refreshed = true;
    w->refreshes++;
    refresh_tids(w);
    return tid_lookup(w, tid);
}

static void add_frame(struct fk_py_walker *w, struct fk_py_stack *out,
                      const struct code_entry *c, uint64_t prev_instr, bool entry)
{
    uint32_t name = c->name;
    if (w->lines) {
        int line = -1;
        uint64_t code0 = c->addr + w->lay->co_code;
        if (c->lt_len && prev_instr >= code0 && (prev_instr - code0) % 2 == 0)
            line = line_of((const unsigned char *)w->lt.data + c->lt_off, c->lt_len,
                           c->firstlineno, (prev_instr - code0) / 2);
        size_t nl, fl;
        const char *nm = fk_py_name(w, c->name, &nl);
        const char *fn = c->file != UINT32_MAX ? fk_py_name(w, c->file, &fl) : "?";
        if (c->file == UINT32_MAX)
            fl = 1;
        char num[16];
        if (line >= 0)
            snprintf(num, sizeof num, "%d", line);
        else
            snprintf(num, sizeof num, "?");
        struct fk_buf b = FK_BUF_INIT;
        fk_buf_add(&b, nm, nl);
        fk_buf_adds(&b, " (");
        fk_buf_add(&b, fn, fl);
        fk_buf_addc(&b, ':');
        fk_buf_adds(&b, num);
        fk_buf_addc(&b, ')');
        name = name_id(w, b.data, b.len);
        fk_buf_free(&b);
    }
    out->f[out->n].name = name;
    out->f[out->n].entry = entry;
    out->n++;
    out->segments += entry;
}

enum { SNAP_NONE, SNAP_WINDOW, SNAP_FRAME };
/* The frame at frame as the snapshot holds it: in its window, or among
 * its frames outside it (SNAP_NONE: not held). *at: in, where among them
 * to look first (a chain's frames are walked in order); out, where it
 * was (SNAP_FRAME). */
static int snap_frame(const struct fk_py_walker *w, uint64_t frame, unsigned char *fr,
                      unsigned *at)
{
    const struct fk_py_snap *s = w->snap;
    if (s && !s->chain && s->win_len && frame >= s->win_addr && s->win_len <= FK_PY_SNAP_WINDOW &&
        frame - s->win_addr <= s->win_len && s->win_len - (frame - s->win_addr) >= w->lay->fr_size) {
        memcpy(fr, s->win + (frame - s->win_addr), w->lay->fr_size);
        return SNAP_WINDOW;
    }
    unsigned n = s ? (s->n < FK_PY_SNAP_FRAMES ? s->n : FK_PY_SNAP_FRAMES) : 0;
    unsigned i = *at < n ? *at : 0;
    if (!n || s->addr[i] != frame)
        for (i = 0; i < n && s->addr[i] != frame; i++)
            ;
    if (i >= n)
        return SNAP_NONE;
    memcpy(fr, s->bytes[i], w->lay->fr_size);
    *at = i;
    return SNAP_FRAME;
}

/* A snapshot holding nothing (its arrays are written as far as read):
 * its first FK_PY_SNAP_CHAIN_BYTES, which a chain's is. */
static void snap_clear(struct fk_py_snap *snap)
{
    snap->n = snap->nnamed = 0;
    snap->reads = snap->read_bytes = 0;
    snap->tstate = snap->cframe = snap->head = snap->named_at = 0;
    snap->chain = false;
}

/* The headers of a chain's code objects the cache cannot vouch for
 * (code_known), each once: those the gate's program read at the sample
 * (ch->codes: bytes of the target's like any read's, validated as such
 * by code_at), the rest in one batch read: the naming then reads none of
 * them alone. Most are of code the cache knows run by a new function
 * object -- a lambda's, a generator expression's, a 3.11 comprehension's
 * is made at each call, and a deep chain holds many -- whose header is
 * read again to prove it is the same code (code_at): once a chain, not
 * once a frame (a recursion through a comprehension holds one code object
 * in many frames, each with its own function). The cache's verdicts go
 * to snap->code_of, so the naming does not ask again. A header that
 * cannot be read (a code object freed since the sample: its page gone)
 * ends a process_vm_readv there: it is marked failed, and the rest are
 * read in the next batch. A batch past the budget is left to code_at. */
static void pre_read(struct fk_py_walker *w, struct fk_py_snap *snap,
                     const struct fk_pygate_chain *ch)
{
    const struct fk_py_layout *L = w->lay;
    struct fk_py_iov iov[FK_PYGATE_DEPTH];
    unsigned given = 0, n = 0;
    w->npre = 0;
    for (unsigned j = 0; w->co_read <= FK_PYGATE_CODE_BYTES && j < ch->ncodes &&
                         j < FK_PYGATE_CODES; j++) {
        bool dup = false;
        for (unsigned i = 0; i < given && !dup; i++)
            dup = w->pre_addr[i] == ch->code_addr[j];
        if (!dup && ptr_ok(ch->code_addr[j], 8))    /* 0: the program's read failed */
            w->pre_addr[given++] = ch->code_addr[j];
    }
    for (unsigned i = 0; i < snap->n && i < FK_PYGATE_DEPTH; i++) {
        const unsigned char *fr = snap->bytes[i];
        uint64_t code = get_u64(fr, L->fr_code), pi = get_u64(fr, L->fr_prev_instr);
        uint64_t func = get_u64(fr, L->fr_func), globals = get_u64(fr, L->fr_globals);
        const struct code_entry *c = code_known(w, code, func, globals, pi);
        snap->code_of[i] = c ? (uint32_t)(c - w->codes) + 1 : 0;
        bool dup = false;
        for (unsigned j = 0; j < given + n && !dup && !c; j++)
            dup = w->pre_addr[j] == code;
        if (!c && !dup && ptr_ok(code, 8))
            w->pre_addr[given + n++] = code;
    }
    size_t need = (size_t)(given + n) * w->co_read;
    if (!need || L->co_size > FK_PY_CODE_BYTES || (need > w->pre.cap && !room(w, need - w->pre.cap)))
        return;
    fk_buf_reset(&w->pre);
    fk_buf_reserve(&w->pre, need);
    for (unsigned j = 0; j < given; j++) {
        size_t at = 0;
        for (unsigned i = 0; i < ch->ncodes && i < FK_PYGATE_CODES; i++)
            if (ch->code_addr[i] == w->pre_addr[j])
                at = i;
        memcpy(w->pre.data + (size_t)j * w->co_read, ch->codes + at * FK_PYGATE_CODE_BYTES,
               w->co_read);
        w->pre_ok[j] = true;
    }
    for (unsigned j = 0; j < n; j++) {
        iov[j] = (struct fk_py_iov){ w->pre_addr[given + j],
                                     w->pre.data + (size_t)(given + j) * w->co_read, w->co_read };
        w->pre_ok[given + j] = false;
    }
    unsigned k = 0;
    while (k < n && !w->over) {
        size_t got = rdv(w, iov + k, n - k);
        for (size_t j = 0; j < got; j++)
            w->pre_ok[given + k + j] = true;
        k += (unsigned)got;
        if (k < n && w->cur->read_bytes + iov[k].len > FK_PY_MAX_READ_BYTES)
            break;      /* the bound, not the target: left to code_at */
        k++;            /* iov[k] failed: the rest in the next batch */
    }
    w->npre = given + (k < n ? k : n);
}

_Static_assert(FK_PYGATE_DEPTH <= FK_PY_SNAP_FRAMES && FK_PYGATE_STRIDE <= FK_PY_FRAME_BYTES,
               "a chain the gate's program read fits a snapshot");

bool fk_py_snap_chain(struct fk_py_walker *w, const struct fk_pygate_chain *c, uint64_t tid,
                      struct fk_py_snap *snap)
{
    const struct fk_py_layout *L = w->lay;
    snap_clear(snap);
    if (c->native_tid != tid || !ptr_ok(c->tstate, 8) || c->n > FK_PYGATE_DEPTH ||
        L->fr_size > FK_PYGATE_STRIDE || (c->n && !c->head))
        return false;
    uint64_t at = c->head;
    for (unsigned i = 0; i < c->n; i++) {
        const unsigned char *f = c->frames + (size_t)i * FK_PYGATE_STRIDE;
        snap->addr[i] = at;
        memcpy(snap->bytes[i], f, L->fr_size);
        at = get_u64(f, L->fr_previous);
    }
    snap->n = c->n;
    snap->tstate = c->tstate;
    snap->cframe = c->cframe;
    snap->head = c->head;
    snap->chain = true;
    /* the chain's code objects named now, while they live (a module's
     * code is freed once it ran: a short-lived interpreter's imports),
     * not when the sample is walked, up to a take of the engine's thread
     * later: the cached ones cost nothing, the others (the cache's
     * misses) are read now */
    struct fk_py_stack tmp;
    tmp.reads = tmp.read_bytes = 0;
    const struct fk_py_snap *was = w->snap;
    w->cur = &tmp;
    w->snap = snap;
    w->t0 = w->trust_at = snap->named_at = w->now();
    w->over = false;
    pre_read(w, snap, c);
    for (unsigned i = 0; i < snap->n && !w->over; i++) {
        const unsigned char *fr = snap->bytes[i];
        uint64_t code = get_u64(fr, L->fr_code);
        uint64_t func = get_u64(fr, L->fr_func), globals = get_u64(fr, L->fr_globals);
        unsigned char hdr[FK_PY_CODE_BYTES];
        const struct code_entry *ce = NULL;
        if (snap->code_of[i])
            ce = &w->codes[snap->code_of[i] - 1];   /* vouched for (pre_read) */
        else if ((ce = code_at(w, code, func, globals, hdr)) && ce != &w->scratch)
            snap->code_of[i] = (uint32_t)(ce - w->codes) + 1;
        if (ce && ce != &w->scratch && !ce->told && snap->nnamed < FK_PY_SNAP_CODES) {
            snap->named_func[snap->nnamed] = func;
            snap->named[snap->nnamed++] = code;
            ((struct code_entry *)ce)->told = true;     /* w->codes[]: the walker's own */
        }
    }
    w->npre = 0;
    w->snap = was;
    w->cur = NULL;
    snap->reads = tmp.reads;
    snap->read_bytes = tmp.read_bytes;
    return true;
}

void fk_py_use_snap(struct fk_py_walker *w, const struct fk_py_snap *snap)
{
    w->snap = snap;
}

/* The part of the thread state the snapshot reads, as [*off, *off + *len):
 * its cframe pointer, its native_thread_id (the check that the cached
 * state is still tid's) and, when the layout has them, the data stack's
 * fields -- in one read, so they describe the same moment. */
static void ts_block(const struct fk_py_layout *L, size_t *off, size_t *len)
{
    size_t lo = L->ts_cframe < L->ts_native_thread_id ? L->ts_cframe : L->ts_native_thread_id;
    size_t hi = (L->ts_cframe > L->ts_native_thread_id ? L->ts_cframe : L->ts_native_thread_id) + 8;
    if (L->ts_datastack_limit > L->ts_cframe) {
        size_t f[3] = { L->ts_datastack_chunk, L->ts_datastack_top, L->ts_datastack_limit };
        for (int i = 0; i < 3; i++) {
            lo = f[i] < lo ? f[i] : lo;
            hi = f[i] + 8 > hi ? f[i] + 8 : hi;
        }
    }
    *off = lo;
    *len = hi - lo;
}

/* tid's thread state block (ts_block) into buf: the cached state when
 * its native_thread_id still says tid, else the table is walked again.
 * Returns the state's address, 0 when tid has none. */
static uint64_t read_ts_block(struct fk_py_walker *w, uint64_t tid, unsigned char *buf,
                              size_t off, size_t len)
{
    uint64_t t = tid_lookup(w, tid);
    for (int pass = 0; pass < 2; pass++) {
        if (t && rd(w, t + off, buf, len) &&
            get_u64(buf, w->lay->ts_native_thread_id - off) == tid)
            return t;
        if (pass || w->over)
            break;
        w->refreshes++;
        refresh_tids(w);
        t = tid_lookup(w, tid);
    }
    return 0;
}

/* The top of the thread's data stack as [*lo, *hi), from its thread state
 * block ts (ts_block's, at offset off): inside its chunk, at most
 * FK_PY_SNAP_ABOVE of it above datastack_top. False without one. */
static bool window_of(const struct fk_py_layout *L, const unsigned char *ts, size_t off,
                      uint64_t *lo_out, uint64_t *hi_out, uint64_t *data_out, uint64_t *limit_out)
{
    if (L->ts_datastack_limit <= L->ts_cframe)
        return false;   /* not in the layout */
    uint64_t chunk = get_u64(ts, L->ts_datastack_chunk - off);
    uint64_t top = get_u64(ts, L->ts_datastack_top - off);
    uint64_t limit = get_u64(ts, L->ts_datastack_limit - off);
    uint64_t data = chunk + L->chunk_data;
    if (!ptr_ok(chunk, 8) || !ptr_ok(top, 8) || !ptr_ok(limit, 8) || top < data || limit < top ||
        limit - chunk > (1ull << 32))
        return false;
    /* only the part in use and what a return since the sample can have
     * popped: a read's cost grows with its pages */
    uint64_t hi = limit - top > FK_PY_SNAP_ABOVE ? top + FK_PY_SNAP_ABOVE : limit;
    uint64_t lo = hi - data > FK_PY_SNAP_NEED ? hi - FK_PY_SNAP_NEED : data;
    *data_out = data;
    *limit_out = limit;
    *lo_out = lo;
    *hi_out = hi;
    return hi > lo;
}

static struct tid_entry *tid_entry(struct fk_py_walker *w, uint64_t tid)
{
    struct fk_hiter it = fk_hindex_find(&w->tid_idx, fk_hash_u64(tid));
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (w->tids[i].tid == tid)
            return &w->tids[i];
    return NULL;
}

bool fk_py_snapshot(struct fk_py_walker *w, uint64_t tid, struct fk_py_snap *snap)
{
    const struct fk_py_layout *L = w->lay;
    struct fk_py_stack tmp;     /* only its read counters are used */
    snap_clear(snap);
    snap->ncodes = 0;
    snap->win_len = 0;
    unsigned char ts[512];
    size_t off, tsl;
    ts_block(L, &off, &tsl);
    if (L->fr_size > FK_PY_FRAME_BYTES || L->co_size > FK_PY_CODE_BYTES || tsl > sizeof ts)
        return false;
    w->cur = &tmp;
    tmp.reads = tmp.read_bytes = 0;
    w->t0 = w->now();
    w->over = false;
    uint64_t now = ++w->nsnaps;
    spec_prune(w->spec_code, &w->nspec_code, now, 0);
    spec_prune(w->spec_frame, &w->nspec_frame, now, 0);
    /* one read: the thread state, its window where it was last, and the
     * code objects and frames recent walks needed (these last: one freed
     * since ends the batch, not what comes before it) */
    struct tid_entry *te = tid_entry(w, tid);
    struct fk_py_iov iov[2 + SPEC_CODES + SPEC_FRAMES];
    size_t n = 0, i_win = SIZE_MAX;
    if (te) {
        iov[n++] = (struct fk_py_iov){ te->tstate + off, ts, tsl };
        if (te->whi > te->wlo && te->whi - te->wlo <= FK_PY_SNAP_WINDOW) {
            i_win = n;
            iov[n++] = (struct fk_py_iov){ te->wlo, snap->win, (size_t)(te->whi - te->wlo) };
        }
    }
    size_t c0 = n;
    unsigned nc = 0;
    for (unsigned i = 0; i < w->nspec_code && nc < FK_PY_SNAP_CODES; i++) {
        if (code_fresh(w, w->spec_code[i].addr, w->t0))
            continue;   /* its frames will be named from the cache */
        snap->code_addr[nc] = w->spec_code[i].addr;
        iov[n++] = (struct fk_py_iov){ w->spec_code[i].addr, snap->code_hdr[nc++], w->co_read };
    }
    size_t f0 = n;
    for (unsigned i = 0; i < w->nspec_frame && i < FK_PY_SNAP_FRAMES; i++) {
        snap->addr[i] = w->spec_frame[i].addr;
        iov[n++] = (struct fk_py_iov){ w->spec_frame[i].addr, snap->bytes[i], L->fr_size };
    }
    size_t got = n ? rdv(w, iov, n) : 0;
    snap->ncodes = got > c0 ? (unsigned)((got < f0 ? got : f0) - c0) : 0;
    snap->n = got > f0 ? (unsigned)(got - f0) : 0;
    if (got < n && got >= c0) {
        spec_prune(w->spec_code, &w->nspec_code, now, iov[got].addr);
        spec_prune(w->spec_frame, &w->nspec_frame, now, iov[got].addr);
    }
    uint64_t t = 0;
    if (te && got >= 1 && get_u64(ts, L->ts_native_thread_id - off) == tid) {
        t = te->tstate;
    } else {
        /* a thread not seen yet, or its state gone: the table again */
        i_win = SIZE_MAX;
        t = read_ts_block(w, tid, ts, off, tsl);
        te = t ? tid_entry(w, tid) : NULL;
        if (!t)
            goto out;
    }
    /* the thread's innermost eval call now: what learns where each call
     * keeps its _PyCFrame (fk_python_sample), read this close to the
     * sample */
    snap->tstate = t;
    snap->cframe = get_u64(ts, L->ts_cframe - off);
    uint64_t lo, hi, data, limit;
    if (window_of(L, ts, off, &lo, &hi, &data, &limit)) {
        /* the window the thread needs now: in the guess, or read now */
        uint64_t rlo = lo - data > WIN_SLACK ? lo - WIN_SLACK : data;
        uint64_t rhi = limit - hi > WIN_SLACK ? hi + WIN_SLACK : limit;
        if (i_win != SIZE_MAX && got > i_win && te->wlo <= lo && te->whi >= hi) {
            snap->win_addr = te->wlo;
            snap->win_len = (uint32_t)(te->whi - te->wlo);
            /* a guess from a deeper moment (a program's start, an import)
             * is cut to what is needed now, for the next read */
            if (te->whi - te->wlo > rhi - rlo + 2 * WIN_SLACK) {
                te->wlo = rlo;
                te->whi = rhi;
            }
        } else {
            if (te)
                te->wlo = te->whi = 0;
            if (rd(w, rlo, snap->win, (size_t)(rhi - rlo))) {
                snap->win_addr = rlo;
                snap->win_len = (uint32_t)(rhi - rlo);
                if (te) {
                    te->wlo = rlo;
                    te->whi = rhi;
                }
            }
        }
        goto out;
    }
    /* no window (a layout without the data stack's fields, or hostile
     * ones): the live chain, frame by frame */
    uint64_t cframe = get_u64(ts, L->ts_cframe - off), frame = 0;
    if (!ptr_ok(cframe, 8) || !rd_ptr(w, cframe + L->cf_current_frame, &frame))
        goto out;
    const struct fk_py_snap *was = w->snap;
    w->snap = snap;
    for (unsigned steps = 0, at = 0; frame && ptr_ok(frame, 8) && steps < FK_PY_MAX_DEPTH; steps++) {
        unsigned char fr[FK_PY_FRAME_BYTES];
        if (!snap_frame(w, frame, fr, &at)) {
            if (snap->n >= FK_PY_SNAP_FRAMES || !rd(w, frame, snap->bytes[snap->n], L->fr_size))
                break;
            snap->addr[snap->n] = frame;
            memcpy(fr, snap->bytes[snap->n++], L->fr_size);
        }
        frame = get_u64(fr, L->fr_previous);
    }
    w->snap = was;
out:
    snap->reads = tmp.reads;
    snap->read_bytes = tmp.read_bytes;
    w->cur = NULL;
    return snap->n > 0 || snap->win_len > 0;
}

/* Follow the chain from frame, appending to out; with one_segment, stop
 * after its first entry frame. *next: the caller of the last frame read. */
static uint8_t walk_chain(struct fk_py_walker *w, uint64_t frame, bool one_segment,
                          struct fk_py_stack *out, uint64_t *next)
{
    const struct fk_py_layout *L = w->lay;
    /* Brent's cycle check: a hostile chain may loop */
    uint64_t tortoise = frame, power = 1, lam = 0;
    unsigned steps = 0, at = 0;
    *next = 0;
    while (frame) {
        if (out->n >= FK_PY_MAX_DEPTH || steps++ > 4 * FK_PY_MAX_DEPTH)
            return FK_PY_LIMIT;
        unsigned char fr[128], hdr[256];
        if (!ptr_ok(frame, 8) || L->fr_size > sizeof fr || L->co_size > sizeof hdr)
            return FK_PY_INVALID;
        int held = snap_frame(w, frame, fr, &at);
        if (!held && !rd(w, frame, fr, L->fr_size))
            return w->over ? FK_PY_LIMIT : FK_PY_BAD_READ;
        if (held != SNAP_WINDOW && w->snap && !w->snap->chain)  /* outside the window:
                                                                   guess it next time */
            spec_note(w->spec_frame, &w->nspec_frame, SPEC_FRAMES, frame, w->nsnaps);
        uint64_t code = get_u64(fr, L->fr_code), prev = get_u64(fr, L->fr_previous);
        uint64_t pi = get_u64(fr, L->fr_prev_instr);
        uint64_t func = get_u64(fr, L->fr_func), globals = get_u64(fr, L->fr_globals);
        bool entry = fr[L->fr_is_entry] != 0;
        unsigned owner = fr[L->fr_owner];
        if (fr[L->fr_is_entry] > 1 || owner > 3)
            return FK_PY_INVALID;
        const struct code_entry *c = NULL;
        if (held == SNAP_FRAME && w->snap->chain) {
            /* as the chain's naming found it (fk_py_snap_chain): the
             * cache asked, the header read, once */
            uint32_t ci = w->snap->code_of[at];
            if (ci && ci <= w->ncodes && w->codes[ci - 1].addr == code)
                c = &w->codes[ci - 1];
            at++;   /* the next frame's place, as the chain runs */
        }
        if (!c)
            c = code_known(w, code, func, globals, pi);
        if (!c)
            c = code_at(w, code, func, globals, hdr);
        if (!c)
            return w->over ? FK_PY_LIMIT : FK_PY_INVALID;
        /* a frame pushed but not started (3.11's _PyFrame_IsIncomplete)
         * has run none of its code: not shown, but its entry mark counts */
        uint64_t code0 = code + L->co_code;
        bool incomplete = owner != L->owner_generator &&
                          pi < code0 + 2 * (uint64_t)c->firsttraceable;
        if (!incomplete)
            add_frame(w, out, c, pi, entry);
        else if (entry && out->n && !out->f[out->n - 1].entry)
            out->f[out->n - 1].entry = true, out->segments++;
        *next = prev;
        w->suspended = entry && owner == L->owner_generator && !prev;
        if (entry && one_segment)
            return FK_PY_OK;
        frame = prev;
        if (frame == tortoise)
            return FK_PY_INVALID;
        if (++lam == power) {
            tortoise = frame;
            power *= 2;
            lam = 0;
        }
    }
    return FK_PY_OK;
}

/* A walk of out from nothing; again: one more walk for the same sample,
 * whose reads count toward the same bounds and figures (its time bound
 * starts anew: the first walk may have been preempted on a loaded host). */
static void walk_begin(struct fk_py_walker *w, struct fk_py_stack *out, bool again)
{
    out->n = out->segments = 0;
    out->anchored = false;
    out->cframe = out->tstate = 0;
    w->cur = out;
    w->over = false;
    w->t0 = w->trust_at = w->now();
    if (!again)
        out->reads = out->read_bytes = 0;
}

/* Thread tid's chain as it is now into out (walk_begin done). */
static void walk_thread(struct fk_py_walker *w, uint64_t tid, struct fk_py_stack *out)
{
    const struct fk_py_layout *L = w->lay;
    bool refreshed = false;
    uint64_t ts = tstate_of(w, tid, &refreshed);
    uint8_t st = FK_PY_OK;
    uint64_t cframe, frame = 0, next;
    if (!ts) {
        st = w->over ? FK_PY_LIMIT : FK_PY_NO_THREAD;
        goto done;
    }
    if (!rd_ptr(w, ts + L->ts_cframe, &cframe) || !ptr_ok(cframe, 8) ||
        !rd_ptr(w, cframe + L->cf_current_frame, &frame)) {
        st = w->over ? FK_PY_LIMIT : FK_PY_BAD_READ;
        goto done;
    }
    out->cframe = cframe;
    out->tstate = ts;
    if (!frame) {
        st = FK_PY_IDLE;
        goto done;
    }
    st = walk_chain(w, frame, false, out, &next);
    /* the root frame ends its segment even if its mark was unreadable */
    if (st == FK_PY_OK && out->n && !out->f[out->n - 1].entry) {
        out->f[out->n - 1].entry = true;
        out->segments++;
    }
done:
    out->status = st;
    w->cur = NULL;
}

void fk_py_walk(struct fk_py_walker *w, uint64_t tid, struct fk_py_stack *out)
{
    walk_begin(w, out, false);
    walk_thread(w, tid, out);
}

void fk_py_walk_snap(struct fk_py_walker *w, const struct fk_py_snap *snap,
                     struct fk_py_stack *out)
{
    walk_begin(w, out, false);
    out->cframe = snap->cframe;
    out->tstate = snap->tstate;
    const struct fk_py_snap *was = w->snap;
    w->snap = snap;
    /* a chain's code objects were named (checked, or read) as it left the
     * gate's ring, while they lived: trusted as of then, not of this walk
     * -- up to a take of the engine's thread later, and on a loaded host
     * more than CODE_TRUST_NS, by when a short-lived interpreter's code
     * may be freed or the process gone (the walk was then invalid and
     * retaken from a process that had no frames left: t-children's
     * per-task interpreters under load, 5-12 samples in 2 of 6 runs) */
    if (snap->chain && snap->named_at)
        w->trust_at = snap->named_at;
    uint8_t st = FK_PY_IDLE;
    uint64_t next;
    if (snap->chain && snap->head) {
        st = walk_chain(w, snap->head, false, out, &next);
        /* the root frame ends its segment even if its mark was unreadable */
        if (st == FK_PY_OK && out->n && !out->f[out->n - 1].entry) {
            out->f[out->n - 1].entry = true;
            out->segments++;
        }
    }
    w->snap = was;
    out->status = st;
    w->cur = NULL;
}

bool fk_py_walk_chain(struct fk_py_walker *w, const struct fk_py_snap *snap, uint64_t tid,
                      struct fk_py_stack *out)
{
    fk_py_walk_snap(w, snap, out);
    if (out->status != FK_PY_INVALID || !tid)
        return false;
    walk_begin(w, out, true);
    walk_thread(w, tid, out);
    return true;
}

void fk_py_walk_from(struct fk_py_walker *w, const uint64_t *heads, unsigned nheads,
                     bool last_is_root, struct fk_py_stack *out)
{
    walk_begin(w, out, false);
    out->anchored = true;
    uint8_t st = FK_PY_OK;
    if (nheads > FK_PY_MAX_SEGMENTS)
        nheads = FK_PY_MAX_SEGMENTS;
    unsigned k = 0;
    for (; k < nheads && st == FK_PY_OK; k++) {
        unsigned before = out->n;
        uint64_t next;
        out->stale[k] = false;
        st = walk_chain(w, heads[k], true, out, &next);
        if (st != FK_PY_OK)
            break;
        /* the segment ends at its entry frame; its caller is the next head */
        if (out->n > before && !out->f[out->n - 1].entry) {
            out->f[out->n - 1].entry = true;
            out->segments++;
        }
        /* a generator that yielded since the sample has no caller link
         * left: its frame (in the generator object, its code fixed) is the
         * one that ran, the link to the next head cannot be checked */
        out->stale[k] = out->n == before ||
                        (k + 1 < nheads && next != heads[k + 1] && !w->suspended) ||
                        (k + 1 == nheads && last_is_root && next != 0);
        out->seg_end[k] = (uint16_t)out->n;
    }
    if (st == FK_PY_OK) {
        out->segments = nheads;
    } else {
        /* a failed segment and those outside it are not known */
        for (; k < nheads; k++) {
            out->stale[k] = true;
            out->seg_end[k] = (uint16_t)out->n;
        }
        out->segments = nheads;
        if (st != FK_PY_LIMIT)
            st = FK_PY_OK;      /* the stale marks carry it */
    }
    out->status = st;
    w->cur = NULL;
}

/* ---- splicing ------------------------------------------------------------- */

size_t fk_py_splice(const bool *native_eval, size_t nnative, bool native_complete,
                    const struct fk_py_stack *py, struct fk_py_item *out, size_t max,
                    enum fk_py_verdict *verdict)
{
    size_t nev = 0;
    for (size_t i = 0; i < nnative; i++)
        nev += native_eval[i];
    if (py->anchored && py->segments == nev) {
        /* one segment per eval frame, each from the sample's own head */
        size_t n = 0, k = 0;
        *verdict = FK_PY_CONSISTENT;
        for (size_t i = 0; i < nnative && n < max; i++) {
            if (!native_eval[i]) {
                out[n++] = (struct fk_py_item){ FK_PY_NATIVE, (uint32_t)i };
                continue;
            }
            unsigned a = k ? py->seg_end[k - 1] : 0, b = py->seg_end[k];
            if (py->stale[k] || b <= a) {
                *verdict = FK_PY_CHANGED_STACK;
                out[n++] = (struct fk_py_item){ FK_PY_CHANGED, 0 };
            } else {
                for (unsigned j = a; j < b && n < max; j++)
                    out[n++] = (struct fk_py_item){ FK_PY_PYFRAME, j };
            }
            k++;
        }
        return n;
    }
    /* segments leaf first: seg_start[k] .. seg_end[k] (inclusive) in py->f */
    unsigned seg_start[FK_PY_MAX_DEPTH], seg_end[FK_PY_MAX_DEPTH];
    unsigned m = 0, s0 = 0;
    for (unsigned i = 0; i < py->n && m < FK_PY_MAX_DEPTH; i++)
        if (py->f[i].entry) {
            seg_start[m] = s0;
            seg_end[m] = i;
            m++;
            s0 = i + 1;
        }
    /* which native eval frame (counted leaf first) gets which segment:
     * seg_for(k) = segment index, or -1 for "[python: changed]" */
    long shift;     /* segment = eval index + shift */
    size_t first_ok, last_ok;   /* eval indices spliced: [first_ok, last_ok) */
    if (!native_complete) {
        *verdict = FK_PY_NATIVE_CUT;
        shift = 0;      /* from the leaf: the root part is missing anyway */
        first_ok = 0;
        last_ok = nev < m ? nev : m;
    } else if (nev == m) {
        *verdict = FK_PY_CONSISTENT;
        shift = 0;
        first_ok = 0;
        last_ok = nev;
    } else {
        /* from the root: eval nev-1 <-> segment m-1; the innermost pair
         * of the overlap is not trusted either (its segment may have
         * gained or lost frames) */
        *verdict = FK_PY_CHANGED_STACK;
        shift = (long)m - (long)nev;
        size_t overlap = nev < m ? nev : m;
        last_ok = nev;
        first_ok = nev - overlap + (overlap ? 1 : 0);
        if (first_ok > nev)
            first_ok = nev;
    }
    size_t n = 0, ev = 0;
    for (size_t i = 0; i < nnative && n < max; i++) {
        if (!native_eval[i]) {
            out[n++] = (struct fk_py_item){ FK_PY_NATIVE, (uint32_t)i };
            continue;
        }
        size_t k = ev++;
        if (k < first_ok || k >= last_ok) {
            if (*verdict == FK_PY_NATIVE_CUT)
                out[n++] = (struct fk_py_item){ FK_PY_NATIVE, (uint32_t)i };
            else
                out[n++] = (struct fk_py_item){ FK_PY_CHANGED, 0 };
            continue;
        }
        long sg = (long)k + shift;
        for (unsigned j = seg_start[sg]; j <= seg_end[sg] && n < max; j++)
            out[n++] = (struct fk_py_item){ FK_PY_PYFRAME, j };
    }
    return n;
}

/* ---- anchoring ------------------------------------------------------------ */

bool fk_py_heads_from_copy(const struct fk_py_layout *L, const struct fk_py_native *nat,
                           const bool *evals, unsigned n, int64_t off, uint64_t *heads,
                           unsigned *nheads, uint64_t *outer_link)
{
    unsigned k = 0;
    uint64_t prev_link = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!evals[i])
            continue;
        if (k >= FK_PY_MAX_SEGMENTS || i + 1 >= nat->nsps)
            return false;
        uint64_t addr = nat->sps[i + 1] + (uint64_t)off;
        if (addr < nat->stack_base || addr - nat->stack_base > nat->stack_len ||
            nat->stack_len - (addr - nat->stack_base) < L->cf_size)
            return false;
        const unsigned char *cf = nat->stack + (addr - nat->stack_base);
        if (k && prev_link != addr)
            return false;
        heads[k++] = get_u64(cf, L->cf_current_frame);
        prev_link = get_u64(cf, L->cf_previous);
    }
    *nheads = k;
    *outer_link = prev_link;
    return k > 0;
}

bool fk_py_cframe_offset(const struct fk_py_layout *L, const struct fk_py_native *nat,
                         const bool *evals, unsigned n, uint64_t cframe, uint64_t tstate,
                         int64_t *off)
{
    unsigned i0 = 0, nev = 0;
    for (unsigned i = 0; i < n; i++)
        nev += evals[i];
    while (i0 < n && !evals[i0])
        i0++;
    if (!cframe || !nev || i0 + 1 >= nat->nsps)
        return false;
    int64_t cand = (int64_t)(cframe - nat->sps[i0 + 1]);
    if (cand >= 0 || cand < -65536 || cand % 8)
        return false;
    uint64_t heads[FK_PY_MAX_SEGMENTS], outer;
    unsigned nh;
    if (!fk_py_heads_from_copy(L, nat, evals, n, cand, heads, &nh, &outer) || nh != nev)
        return false;
    if (nev < 2 && !(nat->complete && tstate && outer == tstate + L->ts_root_cframe))
        return false;
    *off = cand;
    return true;
}

/* ---- the capture's glue --------------------------------------------------- */

#define HIST_N 4096
#define HIST_NS 100                     /* 0.1 us buckets: 0 .. 409.6 us */
#define MAX_PROCS 65536
#define ITEMS_MAX 1024
/* Early reads wait for their samples to be spliced (the engine's reorder
 * slack, 20 ms, longer on a slow pass): a table of them that starts small
 * and grows while a slot to be taken still serves a sample younger than
 * SNAP_WAIT_NS. Each slot's copy is made at its first use and written only
 * as far as it was read (a first touch of a page is a fault: ~10 us in a
 * VM), so a capture touches the pages of the reads it keeps in flight,
 * not those of the most it could. */
#define SNAP_MIN 16
#define SNAP_MAX 1024
#define SNAP_WAIT_NS (100 * 1000000ull)
#define SNAP_TIMES 8                    /* samples one read serves */
#define SNAP_BACK 4                     /* slots looked back for a read to share */
#define DELAY_N 10000
#define DELAY_NS 100000                 /* 0.1 ms buckets: 0 .. 1 s */
#define SWEEP_NS (10 * 1000000ull)      /* exited processes dropped at most this often */
#define PENDING_MAX 256                 /* samples waiting for their process to be looked at */
/* how long after an interpreter's mapping left the ring its samples ask
 * for the engine's thread (the symbolizer handles the exec's records
 * REORDER_SLACK, 20 ms, after they left the ring, and the engine's
 * thread wakes at least every 50 ms meanwhile) */
#define SOON_NS (250 * 1000000ull)

enum py_state { PS_NONE, PS_PYTHON, PS_UNKNOWN_VERSION };

struct py_proc {
    pid_t pid;
    uint8_t state;
    bool early_checked;     /* looked for once as its first sample left the ring */
    uint8_t gate;           /* what the gate was last told (enum fk_pygate_mark; 0: nothing) */
    bool relook;            /* asked the engine's thread to look again and settle it */
    uint64_t checked;       /* the time of the sample it was first looked at for
                               (of its fork, when it was taken as its parent) */
    pid_t ppid;             /* its parent, from its fork record (fk_python_forked) */
    /* an executable file named like CPython's was mapped (its record left
     * the ring at this time; 0: none since CPython was last found): the
     * exec of an interpreter the symbolizer has not handled yet */
    uint64_t soon;
    bool other_ns;          /* its pid namespace is not ours: tids translated */
    /* the address space looked at (fk_sym_proc_gen): what was found holds
     * while its image does; without Python, looked at again when a
     * mapping was added (an exec's own mmaps come after its COMM record) */
    bool looked;
    struct fk_sym_gen gen;
    uint32_t dso;           /* the binary holding the interpreter */
    uint64_t eval_lo, eval_hi;  /* _PyEval_EvalFrameDefault, as fk_loc addresses */
    /* where each eval call keeps its _PyCFrame: CFA + cf_off (a constant
     * of the binary's code generation), learned from tstate->cframe as
     * read soon after a sample and confirmed by its copy (learn_cframe) */
    bool cf_known;
    int64_t cf_off;
    struct fk_py_walker *w;
    struct fk_loc *loc_of;  /* name id -> named location (dso 0: not made yet) */
    size_t caploc;
    struct u64pairs { uint64_t k, v; } *nstids;     /* tid -> tid in its namespace */
    size_t nnstids, capnstids;
    struct fk_hindex nstid_idx;
};

/* One early read and the samples it serves until they are spliced: a
 * sample of a thread read again before its own turn came (wake-ups every
 * few samples, or a ring pass that met several) is served by that read --
 * it came after the sample, as a fresh one would, only sooner. */
struct snap_slot {
    struct fk_py_snap *s;       /* NULL until first used */
    size_t bytes;               /* of s allocated: FK_PY_SNAP_CHAIN_BYTES until
                                   a read of the target needs the whole */
    uint64_t tid, image;        /* whose, read through which image's tables */
    uint64_t taken, done;       /* when the read began and ended (CLOCK_MONOTONIC,
                                   as samples' times) */
    uint64_t times[SNAP_TIMES]; /* the samples it serves; 0 once spliced */
    unsigned ntimes;
};

/* A sample fk_python_early left to the engine's thread. */
struct pending { pid_t pid, tid; uint64_t time; };

/* Shared by the reader's thread (fk_python_early) and the engine's (the
 * rest): every public function holds lock throughout; the symbolizer is
 * the engine thread's alone, so the reader's thread never looks a process
 * up: it leaves such samples in pending for fk_python_catch_up. */
struct fk_python {
    pthread_mutex_t lock;
    struct fk_symbolizer *sym;
    bool lines;
    uint64_t max_bytes;
    struct py_proc **procs;     /* each its own allocation: walkers point at them */
    size_t nprocs, capprocs;
    struct fk_hindex proc_idx;
    uint64_t ns_ino;        /* our pid namespace */
    struct fk_python_stats st;
    uint32_t hist[HIST_N];
    struct fk_py_stack stack;
    struct fk_py_item items[ITEMS_MAX];
    bool evals[ITEMS_MAX];
    struct fk_loc tmp[ITEMS_MAX];
    struct fk_loc changed;
    struct snap_slot *slots;    /* a ring: slot_next is the oldest */
    unsigned nslots, slot_next;
    size_t snapmem;             /* the slots' copies, together */
    uint32_t delay[DELAY_N];    /* sample -> chain read */
    uint64_t ndelay, delay_max;
    uint64_t exits_seen, last_sweep;    /* fk_sym_exits at the last sweep */
    struct pending pending[PENDING_MAX];
    unsigned npending;
    uint64_t handled;       /* the latest sample handled: records are handled
                               in time order, so all before it were too */
    struct fk_pygate *gate;                         /* fk_python_set_gate */
};

static bool ns_inode(pid_t pid, uint64_t *ino)
{
    char p[64];
    struct stat st;
    if (pid)
        snprintf(p, sizeof p, "/proc/%d/ns/pid", (int)pid);
    else
        snprintf(p, sizeof p, "/proc/self/ns/pid");
    if (stat(p, &st) != 0)
        return false;
    *ino = (uint64_t)st.st_ino;
    return true;
}

struct fk_python *fk_python_new(struct fk_symbolizer *sym, bool lines, uint64_t max_bytes)
{
    struct fk_python *p = fk_calloc(1, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->sym = sym;
    p->lines = lines;
    p->max_bytes = max_bytes;
    ns_inode(0, &p->ns_ino);
    p->changed = fk_sym_special(sym, FK_PY_CHANGED_NAME);
    return p;
}

static void proc_clear(struct py_proc *pp)
{
    fk_py_walker_free(pp->w);
    free(pp->loc_of);
    free(pp->nstids);
    fk_hindex_free(&pp->nstid_idx);
    pid_t pid = pp->pid;
    uint64_t soon = pp->soon;
    uint8_t gate = pp->gate;
    memset(pp, 0, sizeof *pp);
    pp->pid = pid;
    pp->soon = soon;
    pp->gate = gate;    /* the gate's map still holds it */
}

/* Tell the wake-up gate what pp's samples need now: the reader at once (a
 * CPython process), nothing (looked at, settled: none), or to be looked
 * at (never looked at, an interpreter's exec on its way: out of the map,
 * whose absent processes wake the reader). Once per change. Under lock. */
static void gate_sync(struct fk_python *p, struct py_proc *pp, bool gone, bool settled)
{
    if (!p->gate)
        return;
    enum fk_pygate_mark want = gone ? FK_PYGATE_FORGET
                             : pp->state == PS_PYTHON ? FK_PYGATE_WAKE
                             : pp->looked && !pp->soon && settled ? FK_PYGATE_QUIET
                                                                  : FK_PYGATE_FORGET;
    if (pp->gate == want || (!pp->gate && want == FK_PYGATE_FORGET))
        return;
    fk_pygate_mark(p->gate, pp->pid, want);
    pp->gate = (uint8_t)want;
}

void fk_python_set_gate(struct fk_python *p, struct fk_pygate *gate)
{
    pthread_mutex_lock(&p->lock);
    p->gate = gate;
    pthread_mutex_unlock(&p->lock);
}

void fk_python_free(struct fk_python *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nprocs; i++) {
        proc_clear(p->procs[i]);
        free(p->procs[i]);
    }
    free(p->procs);
    for (unsigned i = 0; i < p->nslots; i++)
        free(p->slots[i].s);
    free(p->slots);
    fk_hindex_free(&p->proc_idx);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static size_t python_bytes(const struct fk_python *p)
{
    size_t b = sizeof *p + p->capprocs * sizeof *p->procs + fk_hindex_bytes(&p->proc_idx);
    b += p->nslots * sizeof *p->slots + p->snapmem;
    for (size_t i = 0; i < p->nprocs; i++) {
        const struct py_proc *pp = p->procs[i];
        b += sizeof *pp + fk_py_walker_bytes(pp->w) + pp->caploc * sizeof *pp->loc_of +
             pp->capnstids * sizeof *pp->nstids + fk_hindex_bytes(&pp->nstid_idx);
    }
    return b;
}

size_t fk_python_bytes(struct fk_python *p)
{
    if (!p)
        return 0;
    pthread_mutex_lock(&p->lock);
    size_t b = python_bytes(p);
    pthread_mutex_unlock(&p->lock);
    return b;
}

/* process_vm_readv: the target runs on; a page that is gone fails the read. */
static bool vm_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const struct py_proc *pp = ctx;
    struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
    ssize_t n = process_vm_readv(pp->pid, &local, 1, &remote, 1, 0);
    return n == (ssize_t)len;
}

/* Several reads in one process_vm_readv: a whole element or none, and
 * the first that fails ends the batch (process_vm_readv(2)). */
static size_t vm_readv(void *ctx, const struct fk_py_iov *iov, size_t n)
{
    const struct py_proc *pp = ctx;
    struct iovec local[64], remote[64];
    size_t done = 0;
    while (done < n) {
        size_t m = n - done < 64 ? n - done : 64, want = 0;
        for (size_t i = 0; i < m; i++) {
            local[i] = (struct iovec){ iov[done + i].buf, iov[done + i].len };
            remote[i] = (struct iovec){ (void *)(uintptr_t)iov[done + i].addr, iov[done + i].len };
            want += iov[done + i].len;
        }
        ssize_t got = process_vm_readv(pp->pid, local, m, remote, m, 0);
        if (got == (ssize_t)want) {
            done += m;
            continue;
        }
        for (size_t i = 0; got > 0 && i < m && (size_t)got >= iov[done].len; i++) {
            got -= (ssize_t)iov[done].len;
            done++;
        }
        break;
    }
    return done;
}

/* python3.11, python3, libpython3.11.so.1.0, ... */
static bool python_path(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return strncmp(b, "python", 6) == 0 || strncmp(b, "libpython", 9) == 0;
}

/* Find CPython in pid as the symbolizer knows it now: its binary,
 * version, tables; a layout or a note. */
static void detect(struct fk_python *p, struct py_proc *pp)
{
    pp->looked = true;
    fk_sym_proc_gen(p->sym, pp->pid, &pp->gen);
    if (p->max_bytes && python_bytes(p) >= p->max_bytes / 2)
        return;
    struct fk_sym_file files[4];
    size_t nf = fk_sym_proc_files(p->sym, pp->pid, python_path, files, 4);
    for (size_t i = 0; i < nf; i++) {
        uint64_t rt, rts, ver = 0, vs, vsz, lo, los;
        uint32_t d = files[i].dso;
        if (!fk_sym_dso_lookup(p->sym, d, "_PyRuntime", &rt, &rts) ||
            !fk_sym_dso_lookup(p->sym, d, "_PyEval_EvalFrameDefault", &lo, &los) || !los)
            continue;
        /* Py_Version (3.11+): PY_VERSION_HEX, from the file */
        uint16_t version = 0;
        if (fk_sym_dso_lookup(p->sym, d, "Py_Version", &vs, &vsz) &&
            fk_sym_dso_read(p->sym, d, vs, &ver, sizeof ver))
            version = (uint16_t)(ver >> 16);
        const struct fk_py_layout *lay = version ? fk_py_layout_for(version) : NULL;
        if (!lay) {
            pp->state = PS_UNKNOWN_VERSION;
            pp->soon = 0;
            p->st.unknown_version++;
            char v[16];
            if (version)
                snprintf(v, sizeof v, "%u.%u?", version >> 8, version & 0xff);
            else
                snprintf(v, sizeof v, "<3.11?");
            if (!strstr(p->st.versions, v) &&
                strlen(p->st.versions) + strlen(v) + 2 < sizeof p->st.versions) {
                if (p->st.versions[0])
                    strcat(p->st.versions, " ");
                strcat(p->st.versions, v);
            }
            return;
        }
        struct fk_py_where wh = { .runtime = rt + files[i].bias };
        uint64_t a, sz;
        if (!fk_sym_dso_lookup(p->sym, d, "PyCode_Type", &a, &sz))
            continue;
        wh.code_type = a + files[i].bias;
        if (!fk_sym_dso_lookup(p->sym, d, "PyUnicode_Type", &a, &sz))
            continue;
        wh.unicode_type = a + files[i].bias;
        if (!fk_sym_dso_lookup(p->sym, d, "PyBytes_Type", &a, &sz))
            continue;
        wh.bytes_type = a + files[i].bias;
        uint64_t l0, l1;
        if (!fk_sym_dso_loc_addr(p->sym, d, lo, &l0) ||
            !fk_sym_dso_loc_addr(p->sym, d, lo + los - 1, &l1))
            continue;
        pp->dso = d;
        pp->eval_lo = l0;
        pp->eval_hi = l1 + 1;
        pp->w = fk_py_walker_new(lay, &wh, vm_read, pp, p->lines, p->max_bytes);
        fk_py_walker_set_readv(pp->w, vm_readv);
        uint64_t ino;
        pp->other_ns = ns_inode(pp->pid, &ino) && ino != p->ns_ino;
        pp->state = PS_PYTHON;
        pp->soon = 0;
        p->st.processes++;
        if (!strstr(p->st.versions, lay->name) &&
            strlen(p->st.versions) + strlen(lay->name) + 2 < sizeof p->st.versions) {
            if (p->st.versions[0])
                strcat(p->st.versions, " ");
            strcat(p->st.versions, lay->name);
        }
        return;
    }
}

static struct py_proc *proc_find(struct fk_python *p, pid_t pid)
{
    struct fk_hiter it = fk_hindex_find(&p->proc_idx, fk_hash_u64((uint32_t)pid));
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (p->procs[i]->pid == pid)
            return p->procs[i];
    return NULL;
}

static struct py_proc *proc_of(struct fk_python *p, pid_t pid)
{
    uint64_t h = fk_hash_u64((uint32_t)pid);
    struct py_proc *found = proc_find(p, pid);
    if (found)
        return found;
    if (p->nprocs >= MAX_PROCS)
        return NULL;
    p->procs = fk_grow(p->procs, &p->capprocs, p->nprocs + 1, sizeof *p->procs);
    struct py_proc *pp = fk_calloc(1, sizeof *pp);
    p->procs[p->nprocs] = pp;
    pp->pid = pid;
    fk_hindex_add(&p->proc_idx, h, (uint32_t)p->nprocs++);
    return pp;
}

/* tid as the target sees it: the last NSpid field of its status. */
static uint64_t ns_tid(struct py_proc *pp, pid_t tid)
{
    if (!pp->other_ns)
        return (uint64_t)tid;
    uint64_t h = fk_hash_u64((uint32_t)tid);
    struct fk_hiter it = fk_hindex_find(&pp->nstid_idx, h);
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (pp->nstids[i].k == (uint64_t)tid)
            return pp->nstids[i].v;
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pp->pid, (int)tid);
    uint64_t v = fk_proc_status_last(path, "NSpid");
    if (v) {
        pp->nstids = fk_grow(pp->nstids, &pp->capnstids, pp->nnstids + 1, sizeof *pp->nstids);
        pp->nstids[pp->nnstids] = (struct u64pairs){ (uint64_t)tid, v };
        fk_hindex_add(&pp->nstid_idx, h, (uint32_t)pp->nnstids++);
    }
    return v;
}

static struct fk_loc named_loc(struct fk_python *p, struct py_proc *pp, uint32_t id)
{
    if (id >= pp->caploc) {
        size_t old = pp->caploc;
        pp->loc_of = fk_grow(pp->loc_of, &pp->caploc, (size_t)id + 1, sizeof *pp->loc_of);
        memset(pp->loc_of + old, 0, (pp->caploc - old) * sizeof *pp->loc_of);
    }
    if (!pp->loc_of[id].dso) {
        size_t len;
        const char *name = fk_py_name(pp->w, id, &len);
        pp->loc_of[id] = fk_sym_named(p->sym, "[python]", FK_PY_SUFFIX, FK_FRAME_PYTHON, name, len);
    }
    return pp->loc_of[id];
}

/* Learn pp's _PyCFrame offset (fk_py_cframe_offset) from cframe and
 * tstate, the thread's innermost _PyCFrame and its thread state as read
 * soon after the sample. */
static void learn_cframe(struct fk_python *p, struct py_proc *pp, const struct fk_py_native *nat,
                         unsigned n, uint64_t cframe, uint64_t tstate)
{
    int64_t off;
    if (!fk_py_cframe_offset(fk_py_walker_layout(pp->w), nat, p->evals, n, cframe, tstate, &off))
        return;
    pp->cf_known = true;
    pp->cf_off = off;
    p->st.cframe_learned++;
}

static void note_delay(struct fk_python *p, uint64_t time, uint64_t now)
{
    if (!time || now < time)
        return;
    uint64_t d = now - time;
    p->delay[d / DELAY_NS < DELAY_N ? d / DELAY_NS : DELAY_N - 1]++;
    p->ndelay++;
    if (d > p->delay_max)
        p->delay_max = d;
}

/* pid as the records handled so far describe it: another program there
 * (an exec, a reused pid) is looked at afresh, as is one without Python
 * once a mapping was added; otherwise what was found holds. */
static void refresh(struct fk_python *p, struct py_proc *pp)
{
    struct fk_sym_gen g;
    fk_sym_proc_gen(p->sym, pp->pid, &g);
    if (pp->looked && g.image != pp->gen.image)
        proc_clear(pp);
    if (pp->state == PS_NONE && (!pp->looked || g.maps != pp->gen.maps))
        detect(p, pp);
    /* looked at with its records handled: its samples need no early look
     * (proc_clear made them ask for one, a take of the engine's each) */
    pp->early_checked = true;
    gate_sync(p, pp, false, true);
}

/* Drop what is kept for processes whose exit was handled -- their walker,
 * names, tid table and entry: samples are handled in time order, so none
 * of theirs follows, and a pid taken again is a new process, looked at
 * afresh. Without this, a long host-wide capture kept every process it
 * ever met, and after MAX_PROCS pids found no new interpreter. */
static void sweep(struct fk_python *p, uint64_t now)
{
    uint64_t exits = fk_sym_exits(p->sym);
    if (exits == p->exits_seen || now - p->last_sweep < SWEEP_NS)
        return;
    p->exits_seen = exits;
    p->last_sweep = now;
    size_t keep = 0;
    for (size_t i = 0; i < p->nprocs; i++) {
        struct py_proc *pp = p->procs[i];
        struct fk_sym_gen g;
        fk_sym_proc_gen(p->sym, pp->pid, &g);
        /* (a process looked at that the symbolizer no longer knows: it
         * was forgotten after its exit; one taken as its parent at its
         * fork that the symbolizer does not know SOON_NS after: likewise,
         * or a fork never handled, outside the target) */
        if (g.exited || (pp->looked && pp->gen.image && !g.image) ||
            (pp->ppid && !pp->gen.image && !g.image && p->handled > pp->checked + SOON_NS)) {
            p->st.forgotten += pp->state == PS_PYTHON;
            gate_sync(p, pp, true, true);
            proc_clear(pp);
            free(pp);
            continue;
        }
        p->procs[keep++] = pp;
    }
    if (keep == p->nprocs)
        return;
    p->nprocs = keep;
    fk_hindex_free(&p->proc_idx);
    for (size_t i = 0; i < keep; i++)
        fk_hindex_add(&p->proc_idx, fk_hash_u64((uint32_t)p->procs[i]->pid), (uint32_t)i);
}

/* A recent read of thread tid (image) that came after a sample at time. */
static struct snap_slot *shared_read(struct fk_python *p, pid_t tid, uint64_t image, uint64_t time)
{
    for (unsigned i = 1; i <= SNAP_BACK && i <= p->nslots; i++) {
        struct snap_slot *sl = &p->slots[(p->slot_next + p->nslots - i) % p->nslots];
        if (sl->ntimes && sl->tid == (uint64_t)tid && sl->image == image && time &&
            time <= sl->taken && sl->ntimes < SNAP_TIMES)
            return sl;
    }
    return NULL;
}

static bool slot_waits(const struct snap_slot *sl, uint64_t time)
{
    for (unsigned j = 0; j < sl->ntimes; j++)
        if (sl->times[j] && sl->times[j] + SNAP_WAIT_NS > time)
            return true;
    return false;
}

/* The slot for a new read at sample time: the oldest, unless it still
 * serves a sample that waits to be spliced (the table then doubles, in
 * the budget); its copy sized for a chain the gate's program read, or
 * (whole) for a read of the target: each sample of a stalled reader's
 * burst has its own chain until spliced, and a whole copy (a 16 KiB
 * window chains never use) made the memory after a 0.5 s stop 1.38
 * times what it was. NULL without memory for it. */
static struct snap_slot *next_slot(struct fk_python *p, uint64_t time, bool whole)
{
    size_t one = sizeof(struct snap_slot) + FK_PY_SNAP_CHAIN_BYTES;
    if (!p->nslots || (p->nslots < SNAP_MAX && slot_waits(&p->slots[p->slot_next], time))) {
        unsigned n = p->nslots ? 2 * p->nslots : SNAP_MIN;
        if (p->max_bytes && python_bytes(p) + (n - p->nslots) * one > p->max_bytes) {
            if (!p->nslots)
                return NULL;
        } else {
            /* oldest first, the new slots after the newest */
            struct snap_slot *v = fk_calloc(n, sizeof *v);
            for (unsigned i = 0; i < p->nslots; i++)
                v[i] = p->slots[(p->slot_next + i) % p->nslots];
            free(p->slots);
            p->slot_next = p->nslots;
            p->slots = v;
            p->nslots = n;
        }
    }
    struct snap_slot *sl = &p->slots[p->slot_next];
    sl->ntimes = 0;
    size_t need = whole ? sizeof *sl->s : FK_PY_SNAP_CHAIN_BYTES;
    if (sl->bytes < need) {
        if (p->max_bytes && python_bytes(p) + need - sl->bytes > p->max_bytes)
            return NULL;
        sl->s = fk_realloc(sl->s, need);    /* written as far as read */
        p->snapmem += need - sl->bytes;
        sl->bytes = need;
    }
    return sl;
}

/* Read thread tid of pp (a Python process) for its sample at time, or
 * let a read of it made after that sample serve it. t0: when the sample
 * was met. Under lock. */
static void take_early(struct fk_python *p, struct py_proc *pp, pid_t tid, uint64_t time,
                       uint64_t t0)
{
    struct snap_slot *sl = shared_read(p, tid, pp->gen.image, time);
    if (sl) {
        sl->times[sl->ntimes++] = time;
        p->st.snapshots_shared++;
        note_delay(p, time, sl->done);
        return;
    }
    uint64_t ntid = ns_tid(pp, tid);
    sl = ntid ? next_slot(p, time, true) : NULL;
    if (!sl)
        return;
    bool ok = fk_py_snapshot(pp->w, ntid, sl->s);
    if (ok && p->gate && sl->s->tstate) {
        /* the gate's program reads this thread's next samples itself */
        const struct fk_py_layout *L = fk_py_walker_layout(pp->w);
        struct fk_pygate_offsets o = { .ts_cframe = L->ts_cframe,
                                       .ts_native_thread_id = L->ts_native_thread_id,
                                       .cf_current_frame = L->cf_current_frame,
                                       .fr_previous = L->fr_previous, .fr_size = L->fr_size,
                                       .fr_code = L->fr_code, .fr_func = L->fr_func,
                                       .co_read = code_read_len(L) };
        (void)fk_pygate_thread(p->gate, pp->pid, tid, sl->s->tstate, &o);
    }
    uint64_t now = fk_now_ns();
    p->st.early_ns += now - t0;
    p->st.snapshot_reads += sl->s->reads;
    p->st.snapshot_read_bytes += sl->s->read_bytes;
    if (!ok)
        return;     /* the slot serves nothing: taken again next time */
    sl->tid = (uint64_t)tid;
    sl->image = pp->gen.image;
    sl->taken = t0;
    sl->done = now;
    sl->times[0] = time;
    sl->ntimes = 1;
    p->slot_next = (p->slot_next + 1) % p->nslots;
    p->st.snapshots++;
    p->st.snapshot_windows += sl->s->win_len > 0;
    note_delay(p, time, now);
}

/* The chain the gate's program read at tid's sample at time, as its early
 * read; false when it is not tid's (its thread state gone, the tid
 * reused), so the target is read instead. Under lock. */
static bool take_chain(struct fk_python *p, struct py_proc *pp, pid_t tid, uint64_t time,
                       const struct fk_pygate_chain *c, uint64_t t0)
{
    uint64_t ntid = ns_tid(pp, tid);
    struct snap_slot *sl = ntid ? next_slot(p, time, false) : NULL;
    if (!sl)
        return false;
    if (!fk_py_snap_chain(pp->w, c, ntid, sl->s)) {
        p->st.chains_refused++;
        return false;
    }
    sl->tid = (uint64_t)tid;
    sl->image = pp->gen.image;
    sl->taken = c->time;    /* the chain's moment: it serves no later sample */
    sl->times[0] = time;
    sl->ntimes = 1;
    p->slot_next = (p->slot_next + 1) % p->nslots;
    p->st.chains++;
    for (unsigned i = 0; i < sl->s->nnamed && p->gate; i++)
        fk_pygate_code(p->gate, sl->s->named[i], sl->s->named_func[i]);
    sl->done = fk_now_ns();
    p->st.early_ns += sl->done - t0;
    p->st.snapshot_reads += sl->s->reads;
    p->st.snapshot_read_bytes += sl->s->read_bytes;
    note_delay(p, time, time);
    return true;
}

/* Whether pp's samples wait for the engine's thread: never looked at,
 * or an interpreter exec'd into it that the symbolizer has not handled
 * yet. Under lock. */
static bool needs_engine(struct fk_python *p, struct py_proc *pp, uint64_t time)
{
    if (pp->soon && time > pp->soon && time - pp->soon > SOON_NS) {
        pp->soon = 0;   /* handled long since: not an interpreter after all */
        gate_sync(p, pp, false, true);
    }
    return (pp->state == PS_NONE && !pp->early_checked) || (pp->soon && pp->state != PS_PYTHON);
}

int fk_python_early(struct fk_python *p, pid_t pid, pid_t tid, uint64_t time,
                    const struct fk_pygate_chain *chain)
{
    uint64_t t0 = fk_now_ns();
    int got = 0;
    pthread_mutex_lock(&p->lock);
    struct py_proc *pp = pid > 0 ? proc_of(p, pid) : NULL;
    /* a process whose samples are not handled (outside a user's or a
     * cgroup's filter: no handled sample settles it, refresh) and that
     * still wakes the reader at each sample: once the records up to its
     * first sample are handled, looked at again with them and settled by
     * the engine's thread (fk_python_catch_up) -- 20-70 ms after that
     * sample, where SOON_NS alone took 250 ms; SOON_NS still settles it
     * when no sample is handled at all */
    bool unsettled = p->gate && pp && pp->early_checked && pp->state != PS_PYTHON &&
                     pp->gate != FK_PYGATE_QUIET && !pp->soon;
    if (unsettled && time > pp->checked + SOON_NS)
        gate_sync(p, pp, false, true);
    else if (unsettled && p->handled > pp->checked && !pp->relook && p->npending < PENDING_MAX) {
        pp->relook = true;
        p->pending[p->npending++] = (struct pending){ pid, tid, time };
        got = FK_PY_EARLY_WAIT;
    }
    if (pp && needs_engine(p, pp, time)) {
        /* by the engine's thread, soon (a short-lived interpreter may be
         * gone when its first sample is handled) */
        if (p->npending < PENDING_MAX)
            p->pending[p->npending++] = (struct pending){ pid, tid, time };
        got = FK_PY_EARLY_WAIT;
    } else if (pp && pp->state == PS_PYTHON && !(chain && take_chain(p, pp, tid, time, chain, t0))) {
        take_early(p, pp, tid, time, t0);
        got = FK_PY_EARLY_READ;
    }
    pthread_mutex_unlock(&p->lock);
    return got;
}

void fk_python_mapped(struct fk_python *p, pid_t pid, const char *path, uint64_t time)
{
    if (pid <= 0 || !python_path(path))
        return;
    pthread_mutex_lock(&p->lock);
    struct py_proc *pp = proc_of(p, pid);
    if (pp) {
        pp->soon = time ? time : 1;
        gate_sync(p, pp, false, false);
    }
    pthread_mutex_unlock(&p->lock);
}

void fk_python_forked(struct fk_python *p, pid_t pid, pid_t ppid, uint64_t time)
{
    if (pid <= 0 || ppid <= 0 || pid == ppid)
        return;
    pthread_mutex_lock(&p->lock);
    const struct py_proc *par = proc_find(p, ppid);
    bool plain = par && par->looked && par->state == PS_NONE && !par->soon;
    struct py_proc *pp = proc_of(p, pid);
    if (pp && !pp->looked && !pp->early_checked && pp->state == PS_NONE && !pp->soon) {
        pp->ppid = ppid;
        pp->checked = time;
        if (plain) {
            pp->early_checked = pp->looked = true;
            gate_sync(p, pp, false, true);
        }
    }
    pthread_mutex_unlock(&p->lock);
}

void fk_python_catch_up(struct fk_python *p)
{
    pthread_mutex_lock(&p->lock);
    for (unsigned i = 0; i < p->npending; i++) {
        const struct pending *q = &p->pending[i];
        uint64_t t0 = fk_now_ns();
        struct py_proc *pp = proc_of(p, q->pid);
        if (pp && pp->state == PS_NONE && !pp->early_checked) {
            /* once, and settled by it when no CPython is found and no
             * interpreter's mapping was seen (soon): an exec's mapping
             * of one still in a ring un-settles it as the reader copies
             * it (fk_python_mapped), within a pass of the reader's clock
             * (50 ms at most; by then, in each ring's order, before that
             * process's later samples). Left unsettled until a handled
             * sample looked again (refresh), every new process's samples
             * woke the reader for the 20-300 ms until then: gcc's cc1, as
             * and gzip on a host with no Python at all cost a 999 Hz
             * capture ~3,000 wake-ups and ~30 takes more in 6 s */
            pp->early_checked = true;
            pp->checked = q->time;
            detect(p, pp);
            gate_sync(p, pp, false, true);
            /* and its parent, once, whose next children then need no
             * look of their own (fk_python_forked) */
            struct py_proc *par = pp->ppid ? proc_of(p, pp->ppid) : NULL;
            if (par && par->state == PS_NONE && !par->looked && !par->early_checked &&
                !par->soon) {
                par->early_checked = true;
                par->checked = q->time;
                detect(p, par);
                gate_sync(p, par, false, true);
            }
        } else if (pp && pp->soon && pp->state != PS_PYTHON) {
            refresh(p, pp);     /* once the symbolizer handled the exec */
        } else if (pp && pp->relook) {
            pp->relook = false;
            refresh(p, pp);     /* settled: quiet, or CPython found after all */
        }
        if (pp && pp->state == PS_PYTHON)
            take_early(p, pp, q->tid, q->time, t0);
    }
    p->npending = 0;
    pthread_mutex_unlock(&p->lock);
}

/* The sample's early read, if it was made with the walker of the image its
 * process still runs (not one read through a pre-exec image's tables);
 * the slot no longer waits for it. *shared: the read was made for
 * another sample (times[0]: the one it was made for) -- for a chain, one
 * the gate's program read at a later sample of the thread, which served
 * this one, read without a record of its own, as a read after it would. */
static const struct fk_py_snap *snap_of(struct fk_python *p, const struct py_proc *pp, pid_t tid,
                                        uint64_t time, bool *shared)
{
    *shared = false;
    for (unsigned i = 1; time && i <= p->nslots; i++) {
        struct snap_slot *sl = &p->slots[(p->slot_next + p->nslots - i) % p->nslots];
        if (sl->tid != (uint64_t)tid || !sl->ntimes)
            continue;
        for (unsigned j = 0; j < sl->ntimes; j++)
            if (sl->times[j] == time) {
                sl->times[j] = 0;
                *shared = j > 0;
                return sl->image == pp->gen.image ? sl->s : NULL;
            }
    }
    return NULL;
}

static void sample_locked(struct fk_python *p, pid_t pid, pid_t tid, struct fk_py_native *nat)
{
    if (nat->time > p->handled)
        p->handled = nat->time;
    if (pid <= 0 || !nat->n)
        return;
    uint64_t t0 = fk_now_ns();
    sweep(p, t0);
    struct py_proc *pp = proc_of(p, pid);
    if (!pp)
        return;
    refresh(p, pp);
    if (pp->state != PS_PYTHON)
        return;
    p->st.samples++;
    unsigned nn = nat->n < ITEMS_MAX ? nat->n : ITEMS_MAX;
    unsigned nev = 0;
    for (unsigned i = 0; i < nn; i++) {
        p->evals[i] = nat->locs[i].dso == pp->dso && nat->locs[i].addr >= pp->eval_lo &&
                      nat->locs[i].addr < pp->eval_hi;
        nev += p->evals[i];
    }
    bool shared;
    const struct fk_py_snap *snap = snap_of(p, pp, tid, nat->time, &shared);
    p->st.snapshots_used += snap != NULL;
    /* no chain the gate's program read at this sample: a fallback (its
     * chain read from the target, or the one the program read at a later
     * sample of its thread) */
    bool fallback = !snap || !snap->chain || shared, spliced = false, frameless = !nev;
    if (nev) {
        struct fk_py_stack *s = &p->stack;
        uint64_t heads[FK_PY_MAX_SEGMENTS];
        unsigned nh = 0;
        s->n = 0;
        s->status = FK_PY_NO_THREAD;
        s->reads = s->read_bytes = 0;
        s->anchored = false;
        if (!snap)
            note_delay(p, nat->time, t0);
        if (!pp->cf_known && nat->sps && snap)
            learn_cframe(p, pp, nat, nn, snap->cframe, snap->tstate);
        uint64_t outer;
        if (snap && snap->chain) {
            /* read at the sample: no head to anchor, nothing moved */
            p->st.chain_walks++;
            p->st.chains_retaken += fk_py_walk_chain(pp->w, snap, ns_tid(pp, tid), s);
        } else if (pp->cf_known && nat->sps &&
            fk_py_heads_from_copy(fk_py_walker_layout(pp->w), nat, p->evals, nn, pp->cf_off,
                                  heads, &nh, &outer) && nh == nev) {
            fk_py_use_snap(pp->w, snap);
            fk_py_walk_from(pp->w, heads, nh, nat->complete, s);
            p->st.anchored++;
        } else {
            /* the chain as it is now, all of it: a head read now with
             * frames from the snapshot (the sample's moment) would name
             * whatever that memory then held */
            uint64_t ntid = ns_tid(pp, tid);
            if (ntid)
                fk_py_walk(pp->w, ntid, s);
            if (!pp->cf_known && nat->sps)
                learn_cframe(p, pp, nat, nn, s->cframe, s->tstate);
        }
        fk_py_use_snap(pp->w, NULL);
        p->st.status[s->status]++;
        p->st.reads += s->reads;
        p->st.read_bytes += s->read_bytes;
        /* eval entered, its frame not linked yet (or, read late, the
         * thread's frames gone) */
        frameless = (s->status == FK_PY_OK || s->status == FK_PY_LIMIT) && !s->n;
        if ((s->status == FK_PY_OK || s->status == FK_PY_LIMIT) && s->n) {
            enum fk_py_verdict v;
            size_t ni = fk_py_splice(p->evals, nn, nat->complete && s->status == FK_PY_OK, s,
                                     p->items, ITEMS_MAX, &v);
            unsigned out = 0;
            for (size_t i = 0; i < ni && out < nat->max && out < ITEMS_MAX; i++) {
                const struct fk_py_item *it = &p->items[i];
                if (it->kind == FK_PY_NATIVE)
                    p->tmp[out++] = nat->locs[it->index];
                else if (it->kind == FK_PY_CHANGED)
                    p->tmp[out++] = p->changed;
                else {
                    p->tmp[out++] = named_loc(p, pp, s->f[it->index].name);
                    p->st.frames++;
                }
            }
            memcpy(nat->locs, p->tmp, out * sizeof *nat->locs);
            nat->n = out;
            p->st.spliced++;
            spliced = true;
            if (v == FK_PY_CONSISTENT)
                p->st.consistent++;
            else if (v == FK_PY_CHANGED_STACK)
                p->st.changed++;
            else
                p->st.native_cut++;
        }
    }
    p->st.fallbacks += fallback;
    p->st.fallbacks_spliced += fallback && spliced;
    p->st.fallbacks_frameless += fallback && frameless;
    uint64_t ns = fk_now_ns() - t0;
    p->st.ns_total += ns;
    p->hist[ns / HIST_NS < HIST_N ? ns / HIST_NS : HIST_N - 1]++;
}

void fk_python_settle(struct fk_python *p, pid_t pid)
{
    pthread_mutex_lock(&p->lock);
    struct py_proc *pp = pid > 0 ? proc_of(p, pid) : NULL;
    if (pp)
        refresh(p, pp);
    pthread_mutex_unlock(&p->lock);
}

void fk_python_sample(struct fk_python *p, pid_t pid, pid_t tid, struct fk_py_native *nat)
{
    pthread_mutex_lock(&p->lock);
    sample_locked(p, pid, tid, nat);
    pthread_mutex_unlock(&p->lock);
}

void fk_python_stats(struct fk_python *p, struct fk_python_stats *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->st;
    uint64_t seen = 0;
    out->delay_median_ms = out->delay_p90_ms = 0;
    for (size_t i = 0; i < DELAY_N && p->ndelay; i++) {
        seen += p->delay[i];
        double ms = ((double)i + 0.5) * DELAY_NS / 1e6;
        if (!out->delay_median_ms && seen * 2 >= p->ndelay)
            out->delay_median_ms = ms;
        if (seen * 10 >= p->ndelay * 9) {
            out->delay_p90_ms = ms;
            break;
        }
    }
    out->delay_max_ms = (double)p->delay_max / 1e6;
    for (size_t i = 0; i < p->nprocs; i++)
        if (p->procs[i]->w)
            out->tid_refreshes += p->procs[i]->w->refreshes;
    out->median_us = 0;
    uint64_t half = (p->st.samples + 1) / 2;
    seen = 0;
    for (size_t i = 0; i < HIST_N && p->st.samples; i++) {
        seen += p->hist[i];
        if (seen >= half) {
            out->median_us = ((double)i + 0.5) * HIST_NS / 1000.0;
            break;
        }
    }
    pthread_mutex_unlock(&p->lock);
}

static int thread_locked(struct fk_python *p, pid_t pid, pid_t tid, struct fk_buf *out)
{
    struct py_proc *pp = proc_of(p, pid);
    if (pp)
        refresh(p, pp);
    if (!pp || pp->state != PS_PYTHON)
        return FK_PY_NO_THREAD;
    struct fk_py_stack *s = &p->stack;
    uint64_t ntid = ns_tid(pp, tid);
    if (!ntid)
        return FK_PY_NO_THREAD;
    fk_py_walk(pp->w, ntid, s);
    for (unsigned i = s->n; i-- > 0;) {
        size_t len;
        const char *name = fk_py_name(pp->w, s->f[i].name, &len);
        fk_buf_add(out, name, len);
        if (i)
            fk_buf_addc(out, ';');
    }
    return s->status;
}

int fk_python_thread(struct fk_python *p, pid_t pid, pid_t tid, struct fk_buf *out)
{
    pthread_mutex_lock(&p->lock);
    int st = thread_locked(p, pid, tid, out);
    pthread_mutex_unlock(&p->lock);
    return st;
}
