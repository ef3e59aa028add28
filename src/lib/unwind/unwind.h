/* SPDX-License-Identifier: GPL-2.0-only */
/* Online user-stack unwinding from a sample's registers and stack copy
 * (PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER), during the capture:
 * each sample is unwound as it is read and its copy dropped.
 *
 * The walker (fk_uw_walk) steps frame by frame with the binary's CFI rows
 * (cfi.h) and falls back to the frame-pointer chain where no CFI covers the
 * pc (JIT code, hand-written assembly). It only reads the stack copy, never
 * the target's memory. Every bound is explicit: frames per stack, DWARF
 * operations per expression (FK_CFI_MAX_OPS), time per sample; the stack
 * pointer must grow at each step (signal frames aside, at most a few), so
 * hostile CFI or stacks give a short stack, never a loop.
 *
 * fk_unwinder ties the walker to the symbolizer's address spaces and
 * keeps the statistics the metadata reports. What it learns about a pc --
 * its location, its CFI row -- is cached per (address space, pc), as
 * samply's framehop caches rules per address: a stack's frames are mostly
 * the same few hundred pcs, each otherwise looked up twice (map, CFI row;
 * map, location) per sample. The symbolizer names a new address space
 * whenever an answer could change (exec, a mapping added or replaced, a
 * reused pid: fk_sym_proc_gen), so an entry of an older one is never used. */
#ifndef FK_UNWIND_H
#define FK_UNWIND_H

#include "symbols/symbols.h"
#include "symbols/cfi.h"

#include <sys/types.h>

/* The stack copy: data[0] is at user address base (the sampled sp). */
struct fk_uw_stack {
    const unsigned char *data;
    uint64_t base;
    uint64_t len;       /* bytes the kernel copied */
    bool full;          /* it copied all it was asked for: needing more is truncation */
    uint64_t *read_end; /* non-NULL: raised to past the highest byte read (from base) */
};

enum fk_uw_status { FK_UW_COMPLETE, FK_UW_TRUNCATED, FK_UW_FAILED };

enum fk_uw_reason {
    FK_UW_R_OUTERMOST,      /* complete: CFI says the return address is undefined */
    FK_UW_R_ZERO_PC,        /* complete: the chain ends with a zero return address */
    FK_UW_R_STACK_END,      /* truncated: the caller's frame is past the copy */
    FK_UW_R_MAX_FRAMES,     /* truncated: frame limit */
    FK_UW_R_NO_MAP,         /* failed: a return address in no executable mapping */
    FK_UW_R_NO_FP,          /* failed: no CFI and no usable frame pointer */
    FK_UW_R_BAD_CFI,        /* failed: CFA or rule not computable (expression, register) */
    FK_UW_R_BAD_READ,       /* failed: a read outside the copied stack */
    FK_UW_R_NO_PROGRESS,    /* failed: the stack pointer did not grow */
    FK_UW_R_TIME,           /* failed: time limit per sample */
    FK_UW_R_N
};
/* "outermost", "stack-end", ... for metadata. */
const char *fk_uw_reason_name(int reason);

/* A row of the common shape in 20 bytes (compilers' prologues; nearly
 * every frame of python3.11's deep stacks): the CFA a tracked register
 * plus cfa_off, the return address saved at CFA + ra_off, the stack
 * pointer the CFA (sp_kind FK_RULE_SAME) or CFA + sp_off (FK_RULE_VAL),
 * the frame pointer unchanged (fp_kind FK_RULE_SAME), saved at CFA +
 * fp_off (FK_RULE_AT) or lost (FK_RULE_UNDEF); not a signal frame. The
 * walker steps with it without the general rule loop, and a cache can
 * keep it beside its key in one cache line. */
struct fk_uw_step {
    int32_t cfa_off, ra_off, sp_off, fp_off;
    uint8_t cfa_reg, sp_kind, fp_kind;
};
/* row as a step; false when the row is not of that shape (or an offset
 * does not fit in 32 bits). */
bool fk_uw_step_of(const struct fk_uw_row *row, struct fk_uw_step *out);

/* Where the code at a pc is, as the caller's address space knows it. */
struct fk_uw_code {
    struct fk_cfi *cfi;     /* NULL: no CFI (anonymous/JIT memory, no ELF) */
    uint64_t vaddr;         /* pc in the cfi's ELF address space */
    bool mapped;            /* false: the pc is in no executable mapping */
    /* fk_cfi_find(cfi, vaddr) when the resolver has it at hand (a cache),
     * valid until its next call; NULL: the walker looks it up */
    const struct fk_uw_row *row;
    /* non-NULL: that row is this step (the resolver compacted it; cfi,
     * vaddr and row are then not read), valid until its next call */
    const struct fk_uw_step *step;
};
/* The resolver's answer for pc, never NULL, valid until its next call (a
 * pointer, not a copy: on a cache hit nothing is copied). */
typedef const struct fk_uw_code *(*fk_uw_resolve_fn)(void *ctx, uint64_t pc);

struct fk_uw_result {
    unsigned n;             /* frames in pcs[] */
    uint8_t status, reason;
    unsigned cfi_frames, fp_frames;
};

/* Limits; FK_UW_DEFAULT_* unless a caller has a reason. */
#define FK_UW_DEFAULT_MAX_FRAMES 256
#define FK_UW_DEFAULT_MAX_NS (10 * 1000 * 1000ull)     /* CPU time */

/* Walk one stack. pcs[0] is regs' ip; pcs[i > 0] are call sites (return
 * address - 1; the exact pc of a frame interrupted by a signal), ready for
 * fk_sym_locate. pcs has room for max_frames; so has sps unless NULL:
 * sps[i] is frame i's stack pointer (sps[i + 1] its CFA). */
void fk_uw_walk(const struct fk_uw_arch *arch, const uint64_t regs[FK_UW_NREGS],
                const struct fk_uw_stack *st, fk_uw_resolve_fn resolve, void *ctx,
                unsigned max_frames, uint64_t max_ns, uint64_t *pcs, uint64_t *sps,
                struct fk_uw_result *res);

/* ---- the capture's unwinder ---- */

#define FK_UW_WALKED_STEP 256
#define FK_UW_WALKED_SIZES 5
/* 4, 8, 16, 32, 64 KiB for i = 0..4 (the last: anything a copy can hold) */
uint64_t fk_uw_walked_size(unsigned i);

struct fk_unwind_stats {
    uint64_t samples;           /* user stacks unwound */
    uint64_t complete, truncated, failed;
    uint64_t no_regs;           /* samples without user registers (kernel threads, 32-bit tasks) */
    uint64_t frames, cfi_frames, fp_frames;
    uint64_t reasons[FK_UW_R_N];
    uint64_t stack_bytes;       /* stack bytes copied by the kernel */
    uint64_t pc_cache_hits, pc_cache_misses;    /* frames answered by the per-pc cache, or asked */
    uint64_t pc_cache2_hits;    /* ... of its misses, those the (binary, address) level answered */
    uint64_t ns_total;
    double median_us;           /* unwind time per sample (monotonic clock) */
    /* How much of the copy complete walks read, from the sampled sp to past
     * the highest byte read: what --stack-size needs to keep them. Median
     * and 99th percentile to the next FK_UW_WALKED_STEP bytes, the largest
     * exact; complete_within[i]: complete walks that read at most
     * fk_uw_walked_size(i) bytes (would have been complete with a copy of
     * that size). */
    uint64_t walked_median, walked_p99, walked_max;
    uint64_t complete_within[FK_UW_WALKED_SIZES];
};

struct fk_unwinder;
struct fk_unwinder *fk_unwinder_new(struct fk_symbolizer *s);
void fk_unwinder_free(struct fk_unwinder *u);

/* Unwind pid's user stack. regs: the sample's PERF_SAMPLE_REGS_USER values
 * (abi != 0, in the arch's perf-register order); stack: its copy of `size`
 * bytes asked, `dyn` copied. Writes locations leaf first into locs (room
 * for FK_UW_DEFAULT_MAX_FRAMES + 1), a final "[truncated]" location when
 * the walk stopped at the copy's end or the frame limit; returns how many. */
unsigned fk_unwind_sample(struct fk_unwinder *u, pid_t pid, const uint64_t *regs,
                          const unsigned char *stack, uint64_t size, uint64_t dyn,
                          struct fk_loc *locs);
/* The stack pointers of the last fk_unwind_sample's unwound frames
 * (sps[i] for locs[i]; frame i's CFA is sps[i + 1]) and how many: for
 * readers of interpreter state kept in native frames (unwind/python.h). */
const uint64_t *fk_unwind_last_sps(const struct fk_unwinder *u, unsigned *n);
/* Of the last fk_unwind_sample: past the highest stack address its walk
 * read when the walk was complete (where the thread's stack ends as far
 * as unwinding goes: capture/stackend.h), else 0; and whether the walk
 * ran out of the copy (it was truncated where the copy ended). */
uint64_t fk_unwind_last_read_end(const struct fk_unwinder *u);
bool fk_unwind_last_ran_out(const struct fk_unwinder *u);
/* A sample that had no user registers. */
void fk_unwind_no_regs(struct fk_unwinder *u);
void fk_unwinder_stats(const struct fk_unwinder *u, struct fk_unwind_stats *out);

#endif
