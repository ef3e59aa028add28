/* SPDX-License-Identifier: GPL-2.0-only */
/* The stack walker on made-up stacks: frame-pointer chains that complete,
 * loop, leave the copy or exceed the frame limit; then random registers
 * and stacks against a real binary's CFI (test/progs/nofp) must always
 * end, within the limits, with the stack pointer growing at every step. */
#include "unit.h"
#include "unwind/unwind.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define BASE 0x7ff000000000ull
#define TEXT 0x400000ull
#define TEXT_END 0x500000ull

static uint64_t stack[512];

static void put(uint64_t addr, uint64_t v)
{
    stack[(addr - BASE) / 8] = v;
}

/* Text is mapped, without CFI unless ctx holds one. */
struct env {
    struct fk_cfi *cfi;
    uint64_t lo, hi, bias;
};

static void resolve(void *ctx, uint64_t pc, struct fk_uw_code *out)
{
    struct env *e = ctx;
    out->mapped = pc >= e->lo && pc < e->hi;
    out->cfi = out->mapped ? e->cfi : NULL;
    out->vaddr = pc - e->bias;
}

static struct fk_uw_result walk(struct env *e, uint64_t ip, uint64_t sp, uint64_t fp, size_t len,
                                bool full, unsigned max, uint64_t *pcs)
{
    uint64_t regs[FK_UW_NREGS];
    regs[FK_UW_IP] = ip;
    regs[FK_UW_SP] = sp;
    regs[FK_UW_FP] = fp;
    struct fk_uw_stack st = { (const unsigned char *)stack + (sp - BASE), sp, len, full };
    struct fk_uw_result res;
    fk_uw_walk(fk_uw_arch(), regs, &st, resolve, e, max, FK_UW_DEFAULT_MAX_NS, pcs, NULL, &res);
    return res;
}

int main(void)
{
    unit_name = "unit-unwind";
    if (!fk_uw_arch()) {
        printf("SKIP: unit-unwind: DWARF unwinding (not supported on this architecture)\n");
        return 0;
    }
    struct env e = { NULL, TEXT, TEXT_END, 0 };
    uint64_t pcs[64];

    /* a frame-pointer chain of three frames ending with a zero return address */
    memset(stack, 0, sizeof stack);
    put(BASE + 0x10, BASE + 0x30);
    put(BASE + 0x18, TEXT + 0x200);
    put(BASE + 0x30, BASE + 0x50);
    put(BASE + 0x38, TEXT + 0x300);
    put(BASE + 0x50, 0);
    put(BASE + 0x58, 0);
    struct fk_uw_result r = walk(&e, TEXT + 0x100, BASE, BASE + 0x10, sizeof stack, true, 64, pcs);
    UNIT_CHECK("fp chain: complete", r.status == FK_UW_COMPLETE && r.reason == FK_UW_R_ZERO_PC);
    UNIT_CHECK("fp chain: three frames, call sites", r.n == 3 && pcs[0] == TEXT + 0x100 &&
               pcs[1] == TEXT + 0x1ff && pcs[2] == TEXT + 0x2ff);
    UNIT_CHECK("fp chain: frame-pointer steps counted", r.fp_frames == 3 && r.cfi_frames == 0);

    /* a frame pointer pointing at itself: a cycle, stopped */
    memset(stack, 0, sizeof stack);
    put(BASE + 0x10, BASE + 0x10);
    put(BASE + 0x18, TEXT + 0x200);
    r = walk(&e, TEXT + 0x100, BASE, BASE + 0x10, sizeof stack, true, 64, pcs);
    UNIT_CHECK("fp cycle: stops, failed", r.status == FK_UW_FAILED && r.n <= 3);

    /* two frames pointing at each other: stops as soon as sp stops growing */
    memset(stack, 0, sizeof stack);
    put(BASE + 0x10, BASE + 0x40);
    put(BASE + 0x18, TEXT + 0x200);
    put(BASE + 0x40, BASE + 0x10);
    put(BASE + 0x48, TEXT + 0x300);
    r = walk(&e, TEXT + 0x100, BASE, BASE + 0x10, sizeof stack, true, 64, pcs);
    UNIT_CHECK("fp loop of two: stops, failed", r.status == FK_UW_FAILED && r.n <= 4);

    /* a frame pointer below the stack pointer or in another mapping */
    memset(stack, 0, sizeof stack);
    r = walk(&e, TEXT + 0x100, BASE + 0x100, BASE, sizeof stack - 0x100, true, 64, pcs);
    UNIT_CHECK("fp below sp: failed at once", r.status == FK_UW_FAILED && r.n == 1);
    r = walk(&e, TEXT + 0x100, BASE, 0x1000, sizeof stack, true, 64, pcs);
    UNIT_CHECK("fp far outside the copy: failed", r.status == FK_UW_FAILED && r.reason == FK_UW_R_NO_FP);

    /* the chain leaves a full copy: truncated; a partial copy: failed */
    memset(stack, 0, sizeof stack);
    put(BASE + 0x10, BASE + 0x80);
    put(BASE + 0x18, TEXT + 0x200);
    r = walk(&e, TEXT + 0x100, BASE, BASE + 0x10, 0x40, true, 64, pcs);
    UNIT_CHECK("past a full copy: truncated", r.status == FK_UW_TRUNCATED && r.reason == FK_UW_R_STACK_END && r.n == 2);
    r = walk(&e, TEXT + 0x100, BASE, BASE + 0x10, 0x40, false, 64, pcs);
    UNIT_CHECK("past a short copy: failed", r.status == FK_UW_FAILED && r.n == 2);

    /* a return address into no mapping: dropped, failed */
    memset(stack, 0, sizeof stack);
    put(BASE + 0x10, BASE + 0x30);
    put(BASE + 0x18, 0xdeadbeef000ull);
    r = walk(&e, TEXT + 0x100, BASE, BASE + 0x10, sizeof stack, true, 64, pcs);
    UNIT_CHECK("return address into nothing: dropped", r.status == FK_UW_FAILED &&
               r.reason == FK_UW_R_NO_MAP && r.n == 1);

    /* a long chain against the frame limit */
    memset(stack, 0, sizeof stack);
    for (uint64_t f = 0; f < 60; f++) {
        put(BASE + 0x10 + f * 0x20, BASE + 0x30 + f * 0x20);
        put(BASE + 0x18 + f * 0x20, TEXT + 0x1000 + f);
    }
    r = walk(&e, TEXT + 0x100, BASE, BASE + 0x10, sizeof stack, true, 8, pcs);
    UNIT_CHECK("frame limit: truncated at the limit", r.status == FK_UW_TRUNCATED &&
               r.reason == FK_UW_R_MAX_FRAMES && r.n == 8);

    /* random registers and stacks against real CFI */
    const char *build = getenv("FK_BUILD");
    char path[4096];
    snprintf(path, sizeof path, "%s/test/progs/nofp", build ? build : ".");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        printf("SKIP: unit-unwind: random stacks against real CFI (no %s)\n", path);
        return UNIT_END();
    }
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    e.cfi = fk_cfi_new(elf);
    UNIT_CHECK("nofp's CFI opens", e.cfi != NULL);
    if (e.cfi) {
        /* nofp is PIE: its text at 0 .. 0x3000 mapped at TEXT */
        e.lo = TEXT;
        e.hi = TEXT + 0x3000;
        e.bias = TEXT;
        srandom(42);
        bool bounded = true, rows = false;
        for (int i = 0; i < 20000; i++) {
            for (size_t k = 0; k < 512; k++) {
                uint64_t v = (uint64_t)random() << 33 ^ (uint64_t)random();
                int kind = random() % 4;
                stack[k] = kind == 0 ? TEXT + v % 0x3000 : kind == 1 ? BASE + v % sizeof stack : v;
            }
            uint64_t ip = TEXT + (uint64_t)random() % 0x3000;
            uint64_t sp = BASE + ((uint64_t)random() % 64) * 8;
            uint64_t fp = random() % 2 ? BASE + (uint64_t)random() % sizeof stack : (uint64_t)random();
            size_t len = sizeof stack - (sp - BASE);
            r = walk(&e, ip, sp, fp, len, random() % 2, 64, pcs);
            bounded &= r.n >= 1 && r.n <= 64 && r.status <= FK_UW_FAILED && r.reason < FK_UW_R_N;
            rows |= r.cfi_frames > 0;
        }
        UNIT_CHECK("random stacks on real CFI: every walk ends within the limits", bounded);
        UNIT_CHECK("random stacks on real CFI: CFI rows were used", rows);
        UNIT_CHECK("row cache bounded", fk_cfi_bytes(e.cfi) < 16u << 20);
        fk_cfi_free(e.cfi);
    }
    elf_end(elf);
    close(fd);
    return UNIT_END();
}
