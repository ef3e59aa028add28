/* SPDX-License-Identifier: GPL-2.0-only */
/* A fake CPython 3.11 address space for the walker's unit test and fuzz
 * target: objects are laid out with the layout table's offsets in one
 * buffer that stands for target memory at FAKE_BASE. */
#ifndef FK_FAKEPY_H
#define FK_FAKEPY_H

#include "unwind/python.h"

#include <stdint.h>
#include <string.h>

#define FAKE_BASE 0x10000000ull
#define FAKE_SIZE (1u << 20)

struct fakepy {
    unsigned char *mem;
    size_t size, used;
    const struct fk_py_layout *L;
    struct fk_py_where where;
};

static bool fakepy_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const struct fakepy *f = ctx;
    if (addr < FAKE_BASE || addr - FAKE_BASE > f->size || len > f->size - (addr - FAKE_BASE))
        return false;
    memcpy(buf, f->mem + (addr - FAKE_BASE), len);
    return true;
}

static uint64_t fakepy_alloc(struct fakepy *f, size_t n)
{
    size_t at = (f->used + 15) & ~(size_t)15;
    if (at + n > f->size)
        return 0;
    f->used = at + n;
    memset(f->mem + at, 0, n);
    return FAKE_BASE + at;
}

static void fakepy_put(struct fakepy *f, uint64_t addr, size_t off, const void *v, size_t n)
{
    memcpy(f->mem + (addr - FAKE_BASE) + off, v, n);
}

static void fakepy_u64(struct fakepy *f, uint64_t addr, size_t off, uint64_t v)
{
    fakepy_put(f, addr, off, &v, 8);
}

static void fakepy_i32(struct fakepy *f, uint64_t addr, size_t off, int32_t v)
{
    fakepy_put(f, addr, off, &v, 4);
}

/* f->mem must hold FAKE_SIZE bytes; the type objects come first. */
static void fakepy_init(struct fakepy *f, unsigned char *mem)
{
    f->mem = mem;
    f->size = FAKE_SIZE;
    f->used = 0;
    f->L = fk_py_layout_for(0x030b);
    f->where.code_type = fakepy_alloc(f, 64);
    f->where.unicode_type = fakepy_alloc(f, 64);
    f->where.bytes_type = fakepy_alloc(f, 64);
    f->where.runtime = fakepy_alloc(f, 256);
}

/* A str of n code points of kind 1, 2 or 4 (ascii: kind 1, all < 128). */
static uint64_t fakepy_str(struct fakepy *f, const uint32_t *cp, size_t n, unsigned kind, bool ascii)
{
    const struct fk_py_layout *L = f->L;
    size_t data = ascii ? L->str_ascii_data : L->str_compact_data;
    uint64_t a = fakepy_alloc(f, data + n * kind + 4);
    fakepy_u64(f, a, L->ob_type, f->where.unicode_type);
    fakepy_u64(f, a, L->str_length, n);
    unsigned char st = (unsigned char)(kind << 2 | 1 << 5 | (ascii ? 1 << 6 : 0) | 1 << 7);
    fakepy_put(f, a, L->str_state, &st, 1);
    for (size_t i = 0; i < n; i++)
        fakepy_put(f, a, data + i * kind, &cp[i], kind);     /* little-endian */
    return a;
}

static uint64_t fakepy_ascii(struct fakepy *f, const char *s)
{
    uint32_t cp[512];
    size_t n = strlen(s) < 512 ? strlen(s) : 512;
    for (size_t i = 0; i < n; i++)
        cp[i] = (unsigned char)s[i];
    return fakepy_str(f, cp, n, 1, true);
}

static uint64_t fakepy_bytes(struct fakepy *f, const unsigned char *b, size_t n)
{
    const struct fk_py_layout *L = f->L;
    uint64_t a = fakepy_alloc(f, L->bytes_data + n + 1);
    fakepy_u64(f, a, L->ob_type, f->where.bytes_type);
    fakepy_u64(f, a, L->bytes_size, n);
    fakepy_put(f, a, L->bytes_data, b, n);
    return a;
}

/* A code object named qualname in file, units code units long. */
static uint64_t fakepy_code(struct fakepy *f, uint64_t qualname, uint64_t file, int first,
                            uint64_t linetable, int64_t units)
{
    const struct fk_py_layout *L = f->L;
    uint64_t a = fakepy_alloc(f, L->co_size + 2 * (size_t)units);
    fakepy_u64(f, a, L->ob_type, f->where.code_type);
    fakepy_u64(f, a, L->ob_size, (uint64_t)units);
    fakepy_u64(f, a, L->co_qualname, qualname);
    fakepy_u64(f, a, L->co_filename, file);
    fakepy_u64(f, a, L->co_linetable, linetable);
    fakepy_i32(f, a, L->co_firstlineno, first);
    return a;
}

/* A frame running code at code unit unit. */
static uint64_t fakepy_frame(struct fakepy *f, uint64_t code, uint64_t previous, unsigned unit,
                             bool entry)
{
    const struct fk_py_layout *L = f->L;
    uint64_t a = fakepy_alloc(f, L->fr_size + 8);
    fakepy_u64(f, a, L->fr_code, code);
    fakepy_u64(f, a, L->fr_previous, previous);
    fakepy_u64(f, a, L->fr_prev_instr, code + L->co_code + 2 * unit);
    unsigned char e = entry;
    fakepy_put(f, a, L->fr_is_entry, &e, 1);
    return a;
}

/* One interpreter; threads[i] (native id tids[i]) runs frames[i]
 * (0: idle). Returns nothing; the runtime points at it. */
static void fakepy_threads(struct fakepy *f, const uint64_t *tids, const uint64_t *frames, size_t n)
{
    const struct fk_py_layout *L = f->L;
    uint64_t interp = fakepy_alloc(f, 128);
    fakepy_u64(f, f->where.runtime, L->rt_interp_head, interp);
    uint64_t prev = 0;
    for (size_t i = n; i-- > 0;) {
        uint64_t ts = fakepy_alloc(f, (size_t)L->ts_datastack_limit + 8);
        uint64_t cf = fakepy_alloc(f, 32);
        fakepy_u64(f, cf, L->cf_current_frame, frames[i]);
        fakepy_u64(f, ts, L->ts_cframe, cf);
        fakepy_u64(f, ts, L->ts_native_thread_id, tids[i]);
        fakepy_u64(f, ts, L->ts_next, prev);
        prev = ts;
    }
    fakepy_u64(f, interp, L->interp_threads_head, prev);
}

/* What the Python gate's program (capture/pygate.c) writes for a sample
 * of thread tid whose state is tstate, from the fake memory as it is:
 * false where one of its reads fails (it then notifies instead). frames
 * holds FK_PYGATE_DEPTH frames. */
static bool fakepy_chain(struct fakepy *f, uint64_t tstate, unsigned char *frames,
                         struct fk_pygate_chain *c)
{
    const struct fk_py_layout *L = f->L;
    *c = (struct fk_pygate_chain){ .tstate = tstate, .frames = frames };
    if (!fakepy_read(f, tstate + L->ts_cframe, &c->cframe, 8) ||
        !fakepy_read(f, tstate + L->ts_native_thread_id, &c->native_tid, 8))
        return false;
    if (!c->cframe)
        return true;
    if (!fakepy_read(f, c->cframe + L->cf_current_frame, &c->head, 8))
        return false;
    uint64_t at = c->head;
    for (; at && c->n < FK_PYGATE_DEPTH; c->n++) {
        unsigned char *fr = frames + (size_t)c->n * FK_PYGATE_STRIDE;
        if (!fakepy_read(f, at, fr, L->fr_size))
            return false;
        memcpy(&at, fr + L->fr_previous, 8);
    }
    c->next = at;
    return true;
}

/* The code headers the gate's program reads after c's frames (pygate.h):
 * a frame whose code is not among the n named (named_code[i], with
 * named_func[i] the function it was named with) or runs it with another
 * function is wanted, unless it is wanted already or FK_PYGATE_CODES
 * are; headers into codes (FK_PYGATE_CODE_BYTES apart), an unreadable
 * one's address 0. */
static void fakepy_chain_codes(struct fakepy *f, struct fk_pygate_chain *c, unsigned char *codes,
                               const uint64_t *named_code, const uint64_t *named_func,
                               unsigned n)
{
    const struct fk_py_layout *L = f->L;
    c->ncodes = 0;
    c->codes = codes;
    for (unsigned k = 0; k < c->n; k++) {
        uint64_t code, func;
        memcpy(&code, c->frames + (size_t)k * FK_PYGATE_STRIDE + L->fr_code, 8);
        memcpy(&func, c->frames + (size_t)k * FK_PYGATE_STRIDE + L->fr_func, 8);
        bool skip = false;
        for (unsigned i = 0; i < n && !skip; i++)
            skip = named_code[i] == code && named_func[i] == func;
        for (unsigned j = 0; j < c->ncodes && !skip; j++)
            skip = c->code_addr[j] == code;
        if (!skip && c->ncodes < FK_PYGATE_CODES)
            c->code_addr[c->ncodes++] = code;
    }
    for (unsigned j = 0; j < c->ncodes; j++)
        if (!fakepy_read(f, c->code_addr[j], codes + (size_t)j * FK_PYGATE_CODE_BYTES,
                         FK_PYGATE_CODE_BYTES))
            c->code_addr[j] = 0;
}

#endif
