/* SPDX-License-Identifier: GPL-2.0-only */
/* The stack walker and the capture's unwinder (see unwind.h). */
#include "unwind/unwind.h"
#include "util/fk.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Signal frames may move the stack pointer down (sigaltstack): allow a few. */
#define MAX_SIGNAL_FRAMES 4
/* A read this far past a full copy is a bad address, not a deep stack. */
#define TRUNC_WINDOW (64ull << 20)

static const char *const reason_names[FK_UW_R_N] = {
    "outermost", "zero-pc", "stack-end", "max-frames", "no-map",
    "no-frame-pointer", "bad-cfi", "bad-read", "no-progress", "time",
};

const char *fk_uw_reason_name(int reason)
{
    return reason >= 0 && reason < FK_UW_R_N ? reason_names[reason] : "?";
}

/* Time per stack is read from the monotonic clock (fk_now_ns): the vDSO
 * answers it without a system call (~25 ns), where this thread's CPU clock
 * is one (~1 us in a VM: it was most of a stack's cost). */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The time limit of one walk is CPU time -- preemption on a busy host is
 * not unwinding cost and must not cut a stack short -- but the CPU clock
 * is only read once a walk has taken SLOW_WALK_NS of wall time (a stack
 * takes microseconds): from then on, CPU time since that first reading
 * counts against the limit (so a walk may run up to SLOW_WALK_NS more).
 * The wall clock is read every CLOCK_FRAMES frames, the first time at
 * frame CLOCK_FRAMES (its time counted from there): each reading is a
 * vDSO call, ~50 ns on this VM (kvm-clock), and a walk read it once and
 * then every 8 frames: 5 readings a python3.11 stack of 36 frames, ~0.25
 * us of the ~5 us flamekit spends a sample. A cached frame costs ~0.1 us,
 * so the frames before a reading take microseconds; what can take longer
 * is a pc's first sighting (a binary's CFI loaded: once per binary), as
 * it could between two readings before. */
#define SLOW_WALK_NS (1000 * 1000ull)
#define CLOCK_FRAMES 32u
struct walk_clock {
    uint64_t wall0, cpu0;       /* wall0 0: not read yet */
    bool slow;
};

static bool walk_over(struct walk_clock *c, uint64_t max_ns)
{
    if (!c->wall0) {
        c->wall0 = fk_now_ns();
        return false;
    }
    if (fk_now_ns() - c->wall0 <= SLOW_WALK_NS)
        return false;
    uint64_t now = cpu_ns();
    if (!c->slow) {
        c->slow = true;
        c->cpu0 = now;
        return false;
    }
    return now - c->cpu0 > max_ns;
}

/* ---- memory and expressions ---- */

enum rd { RD_OK, RD_TRUNC, RD_BAD };

/* inline: ~70 reads a python3.11 stack (the return address and the
 * saved frame pointer of each frame); a call each was ~500 of the
 * engine's ~12,000 instructions a sample (callgrind, bench/replay). */
static inline enum rd mem_read(const struct fk_uw_stack *st, uint64_t addr, uint64_t *out)
{
    if (addr >= st->base && st->len >= 8 && addr - st->base <= st->len - 8) {
        if (st->read_end && addr - st->base + 8 > *st->read_end)
            *st->read_end = addr - st->base + 8;
        memcpy(out, st->data + (addr - st->base), 8);
        return RD_OK;
    }
    if (st->full && addr >= st->base && addr - st->base < st->len + TRUNC_WINDOW)
        return RD_TRUNC;
    return RD_BAD;
}

struct regs {
    uint64_t v[FK_UW_NREGS];
    unsigned valid;     /* bit per register */
};

static int tracked(const struct fk_uw_arch *a, uint64_t dwarf_reg)
{
    for (int i = 0; i < FK_UW_NREGS; i++)
        if ((uint64_t)a->dwarf_reg[i] == dwarf_reg)
            return i;
    return -1;
}

/* A DWARF expression over the tracked registers and the stack copy; no
 * branches, so it ends after its (bounded) operations. */
static enum rd eval(const struct fk_uw_arch *a, const struct fk_uw_op *ops, unsigned n,
                    const struct regs *r, const uint64_t *cfa, const struct fk_uw_stack *st,
                    uint64_t *out)
{
    uint64_t s[16];
    unsigned sp = 0;
#define PUSH(x) do { uint64_t v_ = (x); if (sp >= 16) return RD_BAD; s[sp++] = v_; } while (0)
#define NEED(k) do { if (sp < (k)) return RD_BAD; } while (0)
    if (n > FK_CFI_MAX_OPS)
        return RD_BAD;
    for (unsigned i = 0; i < n; i++) {
        const struct fk_uw_op *o = &ops[i];
        unsigned at = o->atom;
        if (at >= DW_OP_lit0 && at <= DW_OP_lit31) {
            PUSH(at - DW_OP_lit0);
            continue;
        }
        if ((at >= DW_OP_breg0 && at <= DW_OP_breg31) || at == DW_OP_bregx) {
            uint64_t reg = at == DW_OP_bregx ? o->number : at - DW_OP_breg0;
            int64_t off = (int64_t)(at == DW_OP_bregx ? o->number2 : o->number);
            int t = tracked(a, reg);
            if (t < 0 || !(r->valid & (1u << t)))
                return RD_BAD;
            PUSH(r->v[t] + (uint64_t)off);
            continue;
        }
        uint64_t x, y;
        switch (at) {
        case DW_OP_addr: case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u:
        case DW_OP_const2s: case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u:
        case DW_OP_const8s: case DW_OP_constu: case DW_OP_consts:
            PUSH(o->number);
            break;
        case DW_OP_call_frame_cfa:
            if (!cfa)
                return RD_BAD;
            PUSH(*cfa);
            break;
        case DW_OP_dup: NEED(1); PUSH(s[sp - 1]); break;
        case DW_OP_over: NEED(2); PUSH(s[sp - 2]); break;
        case DW_OP_drop: NEED(1); sp--; break;
        case DW_OP_swap: NEED(2); x = s[sp - 1]; s[sp - 1] = s[sp - 2]; s[sp - 2] = x; break;
        case DW_OP_deref: {
            NEED(1);
            enum rd e = mem_read(st, s[sp - 1], &x);
            if (e != RD_OK)
                return e;
            s[sp - 1] = x;
            break;
        }
        case DW_OP_plus_uconst: NEED(1); s[sp - 1] += o->number; break;
        case DW_OP_neg: NEED(1); s[sp - 1] = (uint64_t)-(int64_t)s[sp - 1]; break;
        case DW_OP_not: NEED(1); s[sp - 1] = ~s[sp - 1]; break;
        case DW_OP_nop: break;
        case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and: case DW_OP_or:
        case DW_OP_xor: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra: case DW_OP_eq:
        case DW_OP_ne: case DW_OP_lt: case DW_OP_gt: case DW_OP_le: case DW_OP_ge:
            NEED(2);
            y = s[--sp];
            x = s[sp - 1];
            switch (at) {
            case DW_OP_plus: x += y; break;
            case DW_OP_minus: x -= y; break;
            case DW_OP_mul: x *= y; break;
            case DW_OP_and: x &= y; break;
            case DW_OP_or: x |= y; break;
            case DW_OP_xor: x ^= y; break;
            case DW_OP_shl: x = y < 64 ? x << y : 0; break;
            case DW_OP_shr: x = y < 64 ? x >> y : 0; break;
            case DW_OP_shra: x = (uint64_t)((int64_t)x >> (y < 63 ? y : 63)); break;
            case DW_OP_eq: x = x == y; break;
            case DW_OP_ne: x = x != y; break;
            case DW_OP_lt: x = (int64_t)x < (int64_t)y; break;
            case DW_OP_gt: x = (int64_t)x > (int64_t)y; break;
            case DW_OP_le: x = (int64_t)x <= (int64_t)y; break;
            default: x = (int64_t)x >= (int64_t)y; break;
            }
            s[sp - 1] = x;
            break;
        default:
            return RD_BAD;      /* branches, calls, typed ops: not in real CFI we need */
        }
    }
#undef PUSH
#undef NEED
    if (!sp)
        return RD_BAD;
    *out = s[sp - 1];
    return RD_OK;
}

/* ---- one step ---- */

bool fk_uw_step_of(const struct fk_uw_row *row, struct fk_uw_step *out)
{
    unsigned sp = row->rule[FK_UW_SP].kind, fp = row->rule[FK_UW_FP].kind;
    if (row->src == FK_SRC_NONE || row->signal || row->cfa_kind != FK_CFA_REG ||
        row->cfa_reg >= FK_UW_NREGS || row->rule[FK_UW_IP].kind != FK_RULE_AT ||
        (sp != FK_RULE_SAME && sp != FK_RULE_VAL) ||
        (fp != FK_RULE_SAME && fp != FK_RULE_AT && fp != FK_RULE_UNDEF))
        return false;
    int64_t off[4] = { row->cfa_off, row->rule[FK_UW_IP].off,
                       sp == FK_RULE_VAL ? row->rule[FK_UW_SP].off : 0,
                       fp == FK_RULE_AT ? row->rule[FK_UW_FP].off : 0 };
    for (int i = 0; i < 4; i++)
        if (off[i] < INT32_MIN || off[i] > INT32_MAX)
            return false;
    *out = (struct fk_uw_step){ (int32_t)off[0], (int32_t)off[1], (int32_t)off[2],
                                (int32_t)off[3], row->cfa_reg, (uint8_t)sp, (uint8_t)fp };
    return true;
}

/* One step with a compact row: apply_row's answers for the same row,
 * without its loop and switches. */
static inline enum rd apply_step(const struct fk_uw_step *s, const struct regs *r,
                                 const struct fk_uw_stack *st, struct regs *nr)
{
    if (!(r->valid & (1u << s->cfa_reg)))
        return RD_BAD;
    uint64_t cfa = r->v[s->cfa_reg] + (uint64_t)(int64_t)s->cfa_off;
    enum rd e = mem_read(st, cfa + (uint64_t)(int64_t)s->ra_off, &nr->v[FK_UW_IP]);
    if (e != RD_OK)
        return e;
    nr->v[FK_UW_SP] = s->sp_kind == FK_RULE_SAME ? cfa : cfa + (uint64_t)(int64_t)s->sp_off;
    nr->valid = 1u << FK_UW_IP | 1u << FK_UW_SP;
    switch (s->fp_kind) {
    case FK_RULE_SAME:
        if (r->valid & (1u << FK_UW_FP)) {
            nr->v[FK_UW_FP] = r->v[FK_UW_FP];
            nr->valid |= 1u << FK_UW_FP;
        }
        break;
    case FK_RULE_AT:
        if (mem_read(st, cfa + (uint64_t)(int64_t)s->fp_off, &nr->v[FK_UW_FP]) == RD_OK)
            nr->valid |= 1u << FK_UW_FP;
        break;
    default:
        break;
    }
    return RD_OK;
}

static enum rd apply_row(const struct fk_uw_arch *a, const struct fk_cfi *c,
                         const struct fk_uw_row *row, const struct regs *r,
                         const struct fk_uw_stack *st, struct regs *nr)
{
    struct fk_uw_step step;
    if (fk_uw_step_of(row, &step))
        return apply_step(&step, r, st, nr);
    const struct fk_uw_op *pool = fk_cfi_ops(c);
    uint64_t cfa;
    switch (row->cfa_kind) {
    case FK_CFA_REG:
        if (!(r->valid & (1u << row->cfa_reg)))
            return RD_BAD;
        cfa = r->v[row->cfa_reg] + (uint64_t)row->cfa_off;
        break;
    case FK_CFA_EXPR: {
        enum rd e = eval(a, pool + row->cfa_expr, row->cfa_nops, r, NULL, st, &cfa);
        if (e != RD_OK)
            return e;
        break;
    }
    default:
        return RD_BAD;
    }
    nr->valid = 0;
    for (int i = 0; i < FK_UW_NREGS; i++) {
        const struct fk_uw_rule *u = &row->rule[i];
        uint64_t v = 0, addr;
        enum rd e = RD_OK;
        bool ok = true;
        switch (u->kind) {
        case FK_RULE_SAME:
            if (i == FK_UW_SP)
                v = cfa;            /* the CFA is the caller's stack pointer */
            else if (r->valid & (1u << i))
                v = r->v[i];
            else
                ok = false;
            break;
        case FK_RULE_AT:
            e = mem_read(st, cfa + (uint64_t)u->off, &v);
            break;
        case FK_RULE_VAL:
            v = cfa + (uint64_t)u->off;
            break;
        case FK_RULE_REG:
            ok = u->reg < FK_UW_NREGS && (r->valid & (1u << u->reg));
            if (ok)
                v = r->v[u->reg];
            break;
        case FK_RULE_EXPR_AT:
            e = eval(a, pool + u->expr, u->nops, r, &cfa, st, &addr);
            if (e == RD_OK)
                e = mem_read(st, addr, &v);
            break;
        case FK_RULE_EXPR_VAL:
            e = eval(a, pool + u->expr, u->nops, r, &cfa, st, &v);
            break;
        default:
            ok = false;
        }
        if (e != RD_OK) {
            /* the frame pointer is optional; the pc and sp are not */
            if (i != FK_UW_FP)
                return e;
            ok = false;
        }
        if (ok) {
            nr->v[i] = v;
            nr->valid |= 1u << i;
        }
    }
    if (!(nr->valid & (1u << FK_UW_IP)) || !(nr->valid & (1u << FK_UW_SP)))
        return RD_BAD;
    return RD_OK;
}

/* The frame-pointer step: [fp] = caller's fp, [fp + ptr] = return address. */
static enum rd fp_step(const struct fk_uw_arch *a, const struct regs *r,
                       const struct fk_uw_stack *st, struct regs *nr)
{
    const unsigned need = 1u << FK_UW_FP | 1u << FK_UW_SP;
    if ((r->valid & need) != need || r->v[FK_UW_FP] < r->v[FK_UW_SP] || r->v[FK_UW_FP] % a->ptr_size)
        return RD_BAD;
    uint64_t fp = r->v[FK_UW_FP], nfp, ra;
    enum rd e = mem_read(st, fp + a->ptr_size, &ra);
    if (e != RD_OK)
        return e;
    e = mem_read(st, fp, &nfp);
    if (e != RD_OK)
        return e;
    nr->v[FK_UW_IP] = ra;
    nr->v[FK_UW_SP] = fp + 2 * a->ptr_size;
    nr->v[FK_UW_FP] = nfp;
    nr->valid = 1u << FK_UW_IP | 1u << FK_UW_SP | 1u << FK_UW_FP;
    return RD_OK;
}

/* fk_uw_walk's body, inlined where it is called: with a resolver known
 * at the call (the capture's, resolve_sym) its cache-hit path is inlined
 * into the loop -- an indirect call a frame, and the callee's saving and
 * restoring of registers, were ~25 of the ~300 instructions a frame
 * (callgrind, bench/replay, python3.11 stacks). */
static inline __attribute__((always_inline)) void
walk(const struct fk_uw_arch *arch, const uint64_t regs[FK_UW_NREGS],
     const struct fk_uw_stack *st, fk_uw_resolve_fn resolve, void *ctx,
     unsigned max_frames, uint64_t max_ns, uint64_t *pcs, uint64_t *sps,
     struct fk_uw_result *res)
{
    memset(res, 0, sizeof *res);
    struct regs r = { .valid = (1u << FK_UW_NREGS) - 1 };
    memcpy(r.v, regs, sizeof r.v);
    struct walk_clock clk = { 0, 0, false };
    bool exact = true;
    unsigned signals = 0;
    res->status = FK_UW_FAILED;
    for (;;) {
        if (res->n >= max_frames) {
            res->status = FK_UW_TRUNCATED;
            res->reason = FK_UW_R_MAX_FRAMES;
            return;
        }
        uint64_t pc = r.v[FK_UW_IP];
        uint64_t look = exact ? pc : pc - 1;
        if (sps)
            sps[res->n] = r.v[FK_UW_SP];
        pcs[res->n++] = look;
        if (max_ns && res->n % CLOCK_FRAMES == 0 && walk_over(&clk, max_ns)) {
            res->reason = FK_UW_R_TIME;
            return;
        }
        const struct fk_uw_code *code = resolve(ctx, look);
        if (!code->mapped) {
            /* a return address into nothing came from a bad step: drop it */
            if (res->n > 1)
                res->n--;
            res->reason = FK_UW_R_NO_MAP;
            return;
        }
        const struct fk_uw_row *row = code->step || code->row ? code->row
                                      : code->cfi ? fk_cfi_find(code->cfi, code->vaddr) : NULL;
        struct regs nr;
        enum rd e;
        bool signal = false;
        if (code->step) {
            e = apply_step(code->step, &r, st, &nr);
            res->cfi_frames++;
            if (e == RD_BAD) {
                res->reason = FK_UW_R_BAD_CFI;
                return;
            }
        } else if (row && row->src != FK_SRC_NONE) {
            if (row->rule[FK_UW_IP].kind == FK_RULE_UNDEF) {
                res->status = FK_UW_COMPLETE;
                res->reason = FK_UW_R_OUTERMOST;
                return;
            }
            e = apply_row(arch, code->cfi, row, &r, st, &nr);
            signal = row->signal;
            res->cfi_frames++;
            if (e == RD_BAD) {
                res->reason = FK_UW_R_BAD_CFI;
                return;
            }
        } else {
            e = fp_step(arch, &r, st, &nr);
            res->fp_frames++;
            if (e == RD_BAD) {
                res->reason = FK_UW_R_NO_FP;
                return;
            }
        }
        if (e == RD_TRUNC) {
            res->status = FK_UW_TRUNCATED;
            res->reason = FK_UW_R_STACK_END;
            return;
        }
        if (nr.v[FK_UW_IP] == 0) {
            res->status = FK_UW_COMPLETE;
            res->reason = FK_UW_R_ZERO_PC;
            return;
        }
        if (nr.v[FK_UW_SP] <= r.v[FK_UW_SP] && !(signal && ++signals <= MAX_SIGNAL_FRAMES)) {
            res->reason = FK_UW_R_NO_PROGRESS;
            return;
        }
        exact = signal;
        r = nr;
    }
}

void fk_uw_walk(const struct fk_uw_arch *arch, const uint64_t regs[FK_UW_NREGS],
                const struct fk_uw_stack *st, fk_uw_resolve_fn resolve, void *ctx,
                unsigned max_frames, uint64_t max_ns, uint64_t *pcs, uint64_t *sps,
                struct fk_uw_result *res)
{
    walk(arch, regs, st, resolve, ctx, max_frames, max_ns, pcs, sps, res);
}

/* ---- the capture's unwinder ---- */

#define HIST_NS 50
#define HIST_N 4096
/* bytes complete walks read, FK_UW_WALKED_STEP buckets: a copy holds at
 * most 65528 bytes (FK_STACK_SIZE_MAX) */
#define WALKED_N (65536 / FK_UW_WALKED_STEP)
/* Set-associative, 2048 sets of 4 ways, replaced in turn: python3.11's
 * deep stacks touch a few hundred pcs per process, a busy host thousands.
 * With 256 sets (1,024 entries), two python3.11 workers on a host capture
 * (~700 pcs each, keyed per address space) and flamekit's own stacks
 * already overflowed it: each worker's pcs missed 3-4 times over an 8 s
 * window, 3.5 misses a stack in all under a build's load (2.2 with 2048
 * sets; what is left are first sightings: new processes). It was
 * direct-mapped (1024 slots, as framehop's 509), and two hot pcs of one
 * stack that hash to one slot evicted each other at every frame: in a
 * bench/replay recording of two python3.11 workers (about 2 misses a
 * sample), two such call sites in python3.11 made 43 % of the misses, and
 * a 4x larger table only moved such pairs elsewhere. With 4 ways, what is
 * left are first sightings (each pc of each address space once).
 * A lookup reads one 16-byte fingerprint set (all sets' fit in 4 KiB,
 * which stays cached between batches) and only the entry whose
 * fingerprint matched: one cache line holding its exact key, location
 * and, for the common row, its compact step. Live, the entries have gone
 * cold between batches: the 96-byte tag sets and 136-byte entries before
 * (not line-aligned) cost 4-6 cache lines a lookup. 512 KiB of entries,
 * 32 KiB of tags and ~1 MiB of the rest (pc_slow, written and read for
 * uncommon rows only), allocated with the unwinder. The key is the
 * address space (fk_sym_gen.space): a fork's copy shares its parent's
 * entries (a shell's forks, a server's workers). */
#define PC_CACHE_WAYS 4
#define PC_CACHE_SETS 2048

/* The second level, behind the per-pc cache: what a code address of one
 * binary (its CFI, so one file: fk_sym_cfi_at's DSO) resolves to, in
 * whatever address space it is mapped -- its row and its location, both
 * fixed by (DSO, vaddr). A first miss in a new address space (a second
 * python3.11 worker, each short-lived cc1 of a build) still maps the pc
 * (fk_sym_cfi_at), and is spared the row's search (fk_cfi_find, a binary
 * search over tens of thousands of rows, cold) and the second map lookup
 * (fk_sym_locate). 1024 sets of 4 ways, ~512 KiB, allocated with the
 * unwinder (touched as it fills). */
#define PC2_WAYS 4
#define PC2_SETS 1024

struct pc2_tags {
    const struct fk_cfi *cfi[PC2_WAYS];     /* NULL: empty */
    uint64_t vaddr[PC2_WAYS];
    unsigned next;
};

struct pc2_entry {
    struct fk_uw_row row;       /* when has_row and not has_step */
    struct fk_loc loc;
    bool has_row;               /* fk_cfi_find found one */
    bool has_step;              /* that row is of the common shape: step */
    struct fk_uw_step step;
};

#define MEMO_N 16

static inline unsigned memo_slot(uint64_t pc)
{
    return (unsigned)((pc * 0x9e3779b97f4a7c15ull) >> 60);
}

/* A 32-bit fingerprint of each way's (address space, pc) per set; 0: empty. */
struct pc_tags {
    uint32_t fp[PC_CACHE_WAYS];
};

/* What one pc of one address space (fk_sym_gen.space) resolves to, in
 * one cache line. has_step: the row is of the common shape, kept here;
 * otherwise the walker's answer is in the pc_slow of the same index. */
struct pc_entry {
    uint64_t pc, space, pad_;
    uint64_t loc_addr;          /* fk_sym_locate's answer */
    uint32_t loc_dso;
    bool has_step;
    struct fk_uw_step step;
};
#define PC_ENTRY_ALIGN 64
_Static_assert(sizeof(struct pc_entry) == PC_ENTRY_ALIGN, "a pc cache entry is one cache line");

/* The rest of an entry: fk_sym_cfi_at's answer and the row as found. */
struct pc_slow {
    struct fk_uw_code code;     /* code.row: &row or NULL */
    struct fk_uw_row row;       /* fk_cfi_find(code.cfi, code.vaddr) */
};

struct fk_unwinder {
    struct fk_symbolizer *sym;
    const struct fk_uw_arch *arch;
    pid_t pid;
    struct fk_sym_gen gen;      /* pid's address space, for this sample; space 0: no caching */
    unsigned resolved;          /* resolve calls in this walk: pcs[i]'s is i */
    struct fk_unwind_stats st;
    uint32_t hist[HIST_N];      /* unwind time per sample, 50 ns buckets */
    uint32_t walked[WALKED_N];  /* complete walks by bytes read, rounded up to a step */
    uint64_t pcs[FK_UW_DEFAULT_MAX_FRAMES];
    uint64_t sps[FK_UW_DEFAULT_MAX_FRAMES];
    /* pcs[i]'s location, when locs_ok[i]: the caller's array (room for
     * FK_UW_DEFAULT_MAX_FRAMES + 1), written as the walk resolves each
     * frame, not copied after it */
    struct fk_loc *locs;
    bool locs_ok[FK_UW_DEFAULT_MAX_FRAMES];
    unsigned nsps;
    uint64_t read_end;          /* the last walk's (fk_unwind_last_read_end) */
    bool ran_out;
    struct fk_uw_code uncached;     /* the answer when it is not kept */
    /* The entries this walk already hit, by pc: a deep stack comes back to
     * the same call sites (recursion; python3.11's frames: 2 of 3 a
     * sample), and a repeat then costs one compare, not the set's hash
     * and tags. Valid while memo_gen[i] == walk_gen: a new walk, or an
     * entry replaced, moves walk_gen on. */
    uint64_t memo_pc[MEMO_N];
    const struct pc_entry *memo[MEMO_N];
    uint32_t memo_gen[MEMO_N];
    uint32_t walk_gen;
    struct fk_uw_code hit;          /* the answer for an entry with a step */
    struct pc_tags tags[PC_CACHE_SETS];
    uint8_t next_way[PC_CACHE_SETS];    /* the way replaced next */
    struct pc_entry *cache;         /* [set * PC_CACHE_WAYS + way], in cache_mem, line-aligned */
    struct pc_slow slow[PC_CACHE_SETS * PC_CACHE_WAYS];
    unsigned char cache_mem[PC_CACHE_SETS * PC_CACHE_WAYS * PC_ENTRY_ALIGN + PC_ENTRY_ALIGN];
    struct pc2_tags tags2[PC2_SETS];
    struct pc2_entry cache2[PC2_SETS][PC2_WAYS];
};

struct fk_unwinder *fk_unwinder_new(struct fk_symbolizer *s)
{
    const struct fk_uw_arch *a = fk_uw_arch();
    if (!a)
        return NULL;
    struct fk_unwinder *u = fk_calloc(1, sizeof *u);
    u->sym = s;
    u->arch = a;
    uintptr_t at = ((uintptr_t)u->cache_mem + PC_ENTRY_ALIGN - 1) & ~(uintptr_t)(PC_ENTRY_ALIGN - 1);
    u->cache = (struct pc_entry *)at;
    u->hit.mapped = true;
    return u;
}

void fk_unwinder_free(struct fk_unwinder *u)
{
    free(u);
}

/* Every memo slot stale: slots of an older walk_gen never match (after
 * a wrap, all are reset to 0, which walk_gen then skips). */
static void memo_forget(struct fk_unwinder *u)
{
    if (++u->walk_gen == 0) {
        memset(u->memo_gen, 0, sizeof u->memo_gen);
        u->walk_gen = 1;
    }
}

/* The second level's entry for (cfi, vaddr): found, or made now (the row
 * searched and pc located in the sampled process). A location found in
 * one process holds in another: fk_sym_locate gives an ELF file's code
 * as (its DSO, the file offset), and cfi is that DSO's (one each), vaddr
 * the offset's ELF address (one to one). */
static const struct pc2_entry *pc2_lookup(struct fk_unwinder *u, struct fk_cfi *cfi,
                                          uint64_t vaddr, uint64_t pc)
{
    unsigned set = (unsigned)(fk_hash_u64((uint64_t)(uintptr_t)cfi ^ vaddr) & (PC2_SETS - 1));
    struct pc2_tags *t = &u->tags2[set];
    for (unsigned w = 0; w < PC2_WAYS; w++)
        if (t->cfi[w] == cfi && t->vaddr[w] == vaddr) {
            u->st.pc_cache2_hits++;
            return &u->cache2[set][w];
        }
    unsigned w = t->next;
    t->next = (w + 1) % PC2_WAYS;
    struct pc2_entry *c = &u->cache2[set][w];
    t->cfi[w] = cfi;
    t->vaddr[w] = vaddr;
    const struct fk_uw_row *row = fk_cfi_find(cfi, vaddr);
    c->has_row = row != NULL;
    c->has_step = row && fk_uw_step_of(row, &c->step);
    if (row && !c->has_step)
        c->row = *row;
    c->loc = fk_sym_locate(u->sym, u->pid, pc, false);
    return c;
}

/* The walker's answer for entry c (pcs[i]'s), its location noted. */
static inline const struct fk_uw_code *entry_answer(struct fk_unwinder *u,
                                                    const struct pc_entry *c, unsigned i)
{
    u->locs[i] = (struct fk_loc){ c->loc_dso, c->loc_addr };
    u->locs_ok[i] = true;
    if (c->has_step) {
        u->hit.step = &c->step;
        return &u->hit;
    }
    return &u->slow[c - u->cache].code;
}

static const struct fk_uw_code *resolve_miss(struct fk_unwinder *u, uint64_t pc, unsigned i,
                                             struct pc_tags *t, unsigned set, uint32_t fp,
                                             unsigned m);

/* The walker's question about pc, and the location of the frame: from the
 * cache (inlined into the walk), or asked of the symbolizer and kept
 * (resolve_miss). */
static inline const struct fk_uw_code *resolve_sym(void *ctx, uint64_t pc)
{
    struct fk_unwinder *u = ctx;
    unsigned i = u->resolved++;
    struct pc_tags *t = NULL;
    unsigned set = 0;
    uint32_t fp = 0;
    unsigned m = memo_slot(pc);
    if (u->memo_gen[m] == u->walk_gen && u->memo_pc[m] == pc) {
        u->st.pc_cache_hits++;
        return entry_answer(u, u->memo[m], i);
    }
    if (u->gen.space) {
        uint64_t h = fk_hash_u64(u->gen.space * 0x9e3779b97f4a7c15ull ^ pc);
        set = (unsigned)(h & (PC_CACHE_SETS - 1));
        fp = (uint32_t)(h >> 32) | 1;
        t = &u->tags[set];
        for (unsigned w = 0; w < PC_CACHE_WAYS; w++) {
            const struct pc_entry *c = &u->cache[set * PC_CACHE_WAYS + w];
            if (t->fp[w] == fp && c->pc == pc && c->space == u->gen.space) {
                u->memo_pc[m] = pc;
                u->memo[m] = c;
                u->memo_gen[m] = u->walk_gen;
                u->st.pc_cache_hits++;
                return entry_answer(u, c, i);
            }
        }
    }
    return resolve_miss(u, pc, i, t, set, fp, m);
}

/* resolve_sym's pc not in the cache: asked of the symbolizer and kept in
 * way next_way of set (t NULL: no caching), unless it is in no mapping
 * (the answer then depends on JIT maps, and such walks end there). */
static __attribute__((noinline)) const struct fk_uw_code *
resolve_miss(struct fk_unwinder *u, uint64_t pc, unsigned i, struct pc_tags *t, unsigned set,
             uint32_t fp, unsigned m)
{
    struct fk_uw_code *out = &u->uncached;
    *out = (struct fk_uw_code){ 0 };
    out->cfi = fk_sym_cfi_at(u->sym, u->pid, pc, &out->vaddr, &out->mapped);
    u->locs_ok[i] = false;
    if (!t || !out->mapped)
        return out;
    u->st.pc_cache_misses++;
    unsigned w = u->next_way[set];
    u->next_way[set] = (uint8_t)((w + 1) % PC_CACHE_WAYS);
    struct pc_entry *c = &u->cache[set * PC_CACHE_WAYS + w];
    struct pc_slow *sl = &u->slow[set * PC_CACHE_WAYS + w];
    memo_forget(u);     /* an entry this walk hit may be replaced */
    t->fp[w] = fp;
    c->pc = pc;
    c->space = u->gen.space;
    c->has_step = false;
    struct fk_loc loc;
    if (out->cfi) {
        /* the common row's step is copied (24 bytes), not the row (80):
         * pc_slow is then never touched */
        const struct pc2_entry *c2 = pc2_lookup(u, out->cfi, out->vaddr, pc);
        if (c2->has_step) {
            c->step = c2->step;
            c->has_step = true;
        } else {
            sl->code = *out;
            sl->code.row = NULL;
            if (c2->has_row) {
                sl->row = c2->row;
                sl->code.row = &sl->row;
            }
        }
        loc = c2->loc;
    } else {
        sl->code = *out;
        sl->code.row = NULL;
        loc = fk_sym_locate(u->sym, u->pid, pc, false);
    }
    c->loc_dso = loc.dso;
    c->loc_addr = loc.addr;
    u->memo_pc[m] = pc;
    u->memo[m] = c;
    u->memo_gen[m] = u->walk_gen;
    return entry_answer(u, c, i);
}

uint64_t fk_uw_walked_size(unsigned i)
{
    return i < FK_UW_WALKED_SIZES ? 4096ull << i : 0;
}

/* A complete walk that read bytes of its copy (0: only registers). */
static void note_walked(struct fk_unwinder *u, uint64_t bytes)
{
    u->walked[bytes ? (bytes - 1) / FK_UW_WALKED_STEP % WALKED_N : 0]++;
    if (bytes > u->st.walked_max)
        u->st.walked_max = bytes;
    for (unsigned i = 0; i < FK_UW_WALKED_SIZES; i++)
        u->st.complete_within[i] += bytes <= fk_uw_walked_size(i);
}

/* The smallest step bound holding at least share (of 1000) of the
 * complete walks, at most the largest. */
static uint64_t walked_at(const struct fk_unwinder *u, uint64_t share)
{
    uint64_t want = (u->st.complete * share + 999) / 1000, seen = 0;
    for (unsigned i = 0; i < WALKED_N && want; i++) {
        seen += u->walked[i];
        if (seen >= want) {
            uint64_t b = (uint64_t)(i + 1) * FK_UW_WALKED_STEP;
            return b < u->st.walked_max ? b : u->st.walked_max;
        }
    }
    return 0;
}

unsigned fk_unwind_sample(struct fk_unwinder *u, pid_t pid, const uint64_t *regs,
                          const unsigned char *stack, uint64_t size, uint64_t dyn,
                          struct fk_loc *locs)
{
    uint64_t t0 = fk_now_ns();
    /* perf delivers the registers in bit order of the mask */
    uint64_t want[FK_UW_NREGS];
    for (int i = 0; i < FK_UW_NREGS; i++) {
        unsigned pos = 0;
        for (int j = 0; j < FK_UW_NREGS; j++)
            pos += u->arch->perf_reg[j] < u->arch->perf_reg[i];
        want[i] = regs[pos];
    }
    if (dyn > size)
        dyn = size;
    uint64_t read_end = 0;
    u->locs = locs;
    struct fk_uw_stack st = { stack, want[FK_UW_SP], dyn, dyn == size, &read_end };
    for (uint64_t off = 0; off < dyn; off += 64)
        __builtin_prefetch(stack + off);
    u->pid = pid;
    fk_sym_proc_gen(u->sym, pid, &u->gen);
    if (u->gen.capture_ended)
        u->gen.space = 0;       /* the CFI the entries point to is given back */
    u->resolved = 0;
    memo_forget(u);
    struct fk_uw_result res;
    walk(u->arch, want, &st, resolve_sym, u, FK_UW_DEFAULT_MAX_FRAMES, FK_UW_DEFAULT_MAX_NS,
         u->pcs, u->sps, &res);
    u->nsps = res.n;
    u->read_end = res.status == FK_UW_COMPLETE && read_end ? want[FK_UW_SP] + read_end : 0;
    if (res.status == FK_UW_COMPLETE)
        note_walked(u, read_end);
    u->ran_out = res.reason == FK_UW_R_STACK_END;
    for (unsigned i = 0; i < res.n; i++)
        if (i >= u->resolved || !u->locs_ok[i])
            locs[i] = fk_sym_locate(u->sym, pid, u->pcs[i], false);
    unsigned n = res.n;
    if (res.status == FK_UW_TRUNCATED)
        locs[n++] = fk_sym_special(u->sym, "[truncated]");
    u->st.samples++;
    u->st.complete += res.status == FK_UW_COMPLETE;
    u->st.truncated += res.status == FK_UW_TRUNCATED;
    u->st.failed += res.status == FK_UW_FAILED;
    u->st.reasons[res.reason]++;
    u->st.frames += res.n;
    u->st.cfi_frames += res.cfi_frames;
    u->st.fp_frames += res.fp_frames;
    u->st.stack_bytes += dyn;
    uint64_t ns = fk_now_ns() - t0;  /* wall: a preempted stack counts its wait (rare: the median holds) */
    u->st.ns_total += ns;
    u->hist[ns / HIST_NS < HIST_N ? ns / HIST_NS : HIST_N - 1]++;
    return n;
}

const uint64_t *fk_unwind_last_sps(const struct fk_unwinder *u, unsigned *n)
{
    *n = u->nsps;
    return u->sps;
}

uint64_t fk_unwind_last_read_end(const struct fk_unwinder *u)
{
    return u->read_end;
}

bool fk_unwind_last_ran_out(const struct fk_unwinder *u)
{
    return u->ran_out;
}

void fk_unwind_no_regs(struct fk_unwinder *u)
{
    u->nsps = 0;
    u->read_end = 0;
    u->ran_out = false;
    u->st.no_regs++;
}

void fk_unwinder_stats(const struct fk_unwinder *u, struct fk_unwind_stats *out)
{
    *out = u->st;
    out->median_us = 0;
    uint64_t half = (u->st.samples + 1) / 2, seen = 0;
    for (unsigned i = 0; i < HIST_N && u->st.samples; i++) {
        seen += u->hist[i];
        if (seen >= half) {
            out->median_us = ((double)i + 0.5) * HIST_NS / 1000.0;
            break;
        }
    }
    out->walked_median = walked_at(u, 500);
    out->walked_p99 = walked_at(u, 990);
}
