/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: the CPython walker (unwind/python.c) over a hostile
 * address space. A valid 3.11 world (two threads, nested entry segments,
 * names in every str kind, line tables) is built, then the input patches
 * it: [flags][budget][patch: 3-byte offset, 1-byte length, bytes]... so
 * the fuzzer reaches pointers, sizes, type fields and string states
 * directly; flags 32 and 64 take the early snapshot first and batch the
 * reads; flag 128 walks the chain the gate's program would read, with
 * the code headers it reads when data[1] is odd. Every walk must end within its bounds; names must come out as
 * valid UTF-8 without ';' or control characters; the caches must stay in
 * their budget; the splice must stay in its room and point at real
 * frames. */
#include "fuzz.h"
#include "../test/unit/fakepy.h"
#include "util/buf.h"

#include <stdlib.h>

static bool name_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == ';' || c < 0x20 || c == 0x7f)
            return false;
        size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!k || i + k > n)
            return false;
        for (size_t j = 1; j < k; j++)
            if (((unsigned char)s[i + j] & 0xc0) != 0x80)
                return false;
        i += k;
    }
    return true;
}

static unsigned char *mem;

/* Batched reads as process_vm_readv makes them: whole elements, in order. */
static size_t fake_readv(void *ctx, const struct fk_py_iov *iov, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!fakepy_read(ctx, iov[i].addr, iov[i].buf, iov[i].len))
            return i;
    return n;
}

static void build(struct fakepy *f)
{
    fakepy_init(f, mem);
    uint64_t file = fakepy_ascii(f, "/usr/lib/python3.11/pkg/__init__.py");
    static const unsigned char lt[] = { 0xe9, 0x02, 0xea, 0x04, 0xf2, 0x03, 0x02, 0x05, 0x07, 0xf8 };
    uint64_t ltb = fakepy_bytes(f, lt, sizeof lt);
    uint32_t u2[] = { 0x20ac, 'f' }, u4[] = { 0x1f40d, 'g' }, l1[] = { 0xe9, 'h' };
    uint64_t c0 = fakepy_code(f, fakepy_ascii(f, "<module>"), file, 1, ltb, 8);
    uint64_t c1 = fakepy_code(f, fakepy_str(f, u2, 2, 2, false), file, 10, ltb, 8);
    uint64_t c2 = fakepy_code(f, fakepy_str(f, u4, 1, 4, false), file, 20, ltb, 8);
    uint64_t c3 = fakepy_code(f, fakepy_str(f, l1, 2, 1, false), file, 30, ltb, 8);
    uint64_t a = fakepy_frame(f, c0, 0, 1, true);
    uint64_t b = fakepy_frame(f, c1, a, 3, false);
    uint64_t c = fakepy_frame(f, c2, b, 4, true);
    uint64_t d = fakepy_frame(f, c3, c, 6, false);
    uint64_t e = fakepy_frame(f, c1, 0, 2, true);
    uint64_t tids[3] = { 11, 12, 13 }, frames[3] = { d, e, 0 };
    fakepy_threads(f, tids, frames, 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!mem)
        mem = malloc(FAKE_SIZE);
    if (size < 2)
        return 0;
    struct fakepy f;
    build(&f);
    bool lines = data[0] & 1;
    uint64_t budget = data[0] & 2 ? (uint64_t)data[1] * 256 : 0;
    size_t i = 2;
    while (i + 4 <= size) {
        size_t off = (size_t)data[i] | (size_t)data[i + 1] << 8 | (size_t)data[i + 2] << 16;
        size_t len = data[i + 3];
        i += 4;
        if (len > size - i)
            len = size - i;
        off %= f.used + 64;
        if (off + len <= FAKE_SIZE)
            memcpy(mem + off, data + i, len);
        i += len;
    }
    struct fk_py_walker *w = fk_py_walker_new(f.L, &f.where, fakepy_read, &f, lines, budget);
    if (data[0] & 64)
        fk_py_walker_set_readv(w, fake_readv);
    static struct fk_py_stack st;
    static struct fk_py_snap snap;
    for (uint64_t tid = 10; tid <= 14; tid++)
        for (int again = 0; again < 2; again++) {
            /* the early snapshot over the same hostile memory, then the
             * walk through it */
            if (data[0] & 32) {
                fk_py_snapshot(w, tid, &snap);
                if (snap.n > FK_PY_SNAP_FRAMES || snap.ncodes > FK_PY_SNAP_CODES ||
                    snap.win_len > FK_PY_SNAP_WINDOW || snap.reads > FK_PY_MAX_READS)
                    abort();
                fk_py_use_snap(w, &snap);
            }
            if (data[0] & 128) {
                /* what the gate's program would read of tid's thread at a
                 * sample, from the same hostile memory */
                static unsigned char frames[FK_PYGATE_DEPTH * FK_PYGATE_STRIDE];
                static unsigned char codes[FK_PYGATE_CODES * FK_PYGATE_CODE_BYTES];
                static struct fk_py_snap chain;
                struct fk_pygate_chain c;
                uint64_t interp = 0, ts = 0;
                fakepy_read(&f, f.where.runtime + f.L->rt_interp_head, &interp, 8);
                fakepy_read(&f, interp + f.L->interp_threads_head, &ts, 8);
                for (uint64_t k = 10; k < tid && ts; k++)
                    if (!fakepy_read(&f, ts + f.L->ts_next, &ts, 8))
                        ts = 0;
                bool got = fakepy_chain(&f, ts, frames, &c);
                if (got && data[1] & 1)     /* and the code headers it reads */
                    fakepy_chain_codes(&f, &c, codes, NULL, NULL, 0);
                if (got && fk_py_snap_chain(w, &c, tid, &chain)) {
                    if (chain.n > FK_PY_SNAP_FRAMES)
                        abort();
                    fk_py_walk_snap(w, &chain, &st);
                } else {
                    fk_py_walk(w, tid, &st);
                }
            } else if (again && data[0] & 8) {
                uint64_t heads[3] = { 0, 0, 0 };
                for (int k = 0; k < 3; k++)
                    memcpy(&heads[k], data + (2 + 8 * k + tid) % (size > 8 ? size - 8 : 1),
                           size >= 8 ? 8 : 0);
                fk_py_walk_from(w, heads, 1 + tid % 3, data[0] & 16, &st);
            } else {
                fk_py_walk(w, tid, &st);
            }
            fk_py_use_snap(w, NULL);
            if (st.status >= FK_PY_NSTATUS || st.n > FK_PY_MAX_DEPTH || st.reads > FK_PY_MAX_READS ||
                st.read_bytes > FK_PY_MAX_READ_BYTES)
                abort();
            unsigned segs = 0;
            for (unsigned k = 0; k < st.n; k++) {
                size_t len;
                const char *s = fk_py_name(w, st.f[k].name, &len);
                if (!name_ok(s, len) || s[len] != 0 || len > 4 * FK_PY_NAME_MAX + 64 + 3)
                    abort();
                segs += st.f[k].entry;
            }
            /* an anchored walk has one segment per head (an eval frame of
             * the native stack), some of them empty and marked stale */
            if (st.anchored ? segs > st.segments : segs != st.segments)
                abort();
            bool ev[12];
            for (int k = 0; k < 12; k++)
                ev[k] = (data[(k + tid) % size] >> (k % 8)) & 1;
            struct fk_py_item it[24];
            enum fk_py_verdict v;
            size_t n = fk_py_splice(ev, 12, data[0] & 4, &st, it, 24, &v);
            if (n > 24 || v >= FK_PY_NVERDICT)
                abort();
            for (size_t k = 0; k < n; k++)
                if ((it[k].kind == FK_PY_NATIVE && it[k].index >= 12) ||
                    (it[k].kind == FK_PY_PYFRAME && it[k].index >= st.n))
                    abort();
        }
    if (budget && fk_py_walker_bytes(w) > budget && fk_py_walker_bytes(w) > 4096)
        abort();
    fk_py_walker_free(w);
    return 0;
}
