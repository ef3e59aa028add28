/* SPDX-License-Identifier: GPL-2.0-only */
/* The stack walker on made-up stacks: frame-pointer chains that complete,
 * loop, leave the copy or exceed the frame limit; the capture's unwinder's
 * per-pc cache, which must never answer for an address space that changed
 * (exec, a mapping replaced, a fork into a known pid, another process);
 * then random registers and stacks against a real binary's CFI
 * (test/progs/nofp) must always end, within the limits, with the stack
 * pointer growing at every step. */
#include "unit.h"
#include "unwind/unwind.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

static const struct fk_uw_code *resolve(void *ctx, uint64_t pc)
{
    struct env *e = ctx;
    static struct fk_uw_code out;
    out.mapped = pc >= e->lo && pc < e->hi;
    out.cfi = out.mapped ? e->cfi : NULL;
    out.vaddr = pc - e->bias;
    out.row = NULL;
    return &out;
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

/* ---- the capture's unwinder and its per-pc cache ---- */

#define CODE 0x10000000ull
#define CSTACK 0x7ffd00000000ull

static uint64_t cstack[16];

/* Map a plain file (no ELF: no CFI, frame-pointer steps) as pid's code. */
static bool map_file(struct fk_symbolizer *s, pid_t pid, const char *path, uint64_t pgoff)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return false;
    fk_sym_mmap(s, pid, CODE, 0x100000, pgoff, major(st.st_dev), minor(st.st_dev), st.st_ino,
                PROT_READ | PROT_EXEC, MAP_PRIVATE, path, NULL, 0);
    return true;
}

/* Unwind pid's three-frame chain (CODE+0x100, called from +0x200, from
 * +0x300); locs gets the frames. */
static unsigned unwind3(struct fk_unwinder *u, pid_t pid, struct fk_loc *locs)
{
    memset(cstack, 0, sizeof cstack);
    cstack[2] = CSTACK + 0x30;      /* [sp + 0x10]: fp chain */
    cstack[3] = CODE + 0x201;
    cstack[6] = CSTACK + 0x50;
    cstack[7] = CODE + 0x301;
    cstack[10] = 0;
    cstack[11] = 0;                 /* a zero return address ends it */
    const struct fk_uw_arch *a = fk_uw_arch();
    uint64_t want[FK_UW_NREGS], regs[FK_UW_NREGS];
    want[FK_UW_IP] = CODE + 0x100;
    want[FK_UW_SP] = CSTACK;
    want[FK_UW_FP] = CSTACK + 0x10;
    for (int i = 0; i < FK_UW_NREGS; i++) {     /* perf's order: by register number */
        unsigned pos = 0;
        for (int j = 0; j < FK_UW_NREGS; j++)
            pos += a->perf_reg[j] < a->perf_reg[i];
        regs[pos] = want[i];
    }
    return fk_unwind_sample(u, pid, regs, (const unsigned char *)cstack, sizeof cstack,
                            sizeof cstack, locs);
}

static bool same_locs(const struct fk_loc *x, const struct fk_loc *y, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (x[i].dso != y[i].dso || x[i].addr != y[i].addr)
            return false;
    return true;
}

static void test_pc_cache(void)
{
    pid_t P = 4190011, Q = 4190012, C = 4190013;    /* near pid_max: not alive */
    const char *f1 = "/etc/passwd", *f2 = "/etc/group";
    struct fk_symbolizer *s = fk_sym_new(&(struct fk_sym_opts){ 0 });
    struct fk_unwinder *u = fk_unwinder_new(s);
    struct fk_loc a[FK_UW_DEFAULT_MAX_FRAMES + 1], b[FK_UW_DEFAULT_MAX_FRAMES + 1];
    struct fk_unwind_stats st0, st1;
    if (!map_file(s, P, f1, 0) || !map_file(s, Q, f2, 0)) {
        printf("SKIP: unit-unwind: the per-pc cache (no %s or %s)\n", f1, f2);
        fk_unwinder_free(u);
        fk_sym_free(s);
        return;
    }
    unsigned n = unwind3(u, P, a);
    UNIT_CHECK("cache: a three-frame chain unwinds through a mapped file",
               n == 3 && a[0].addr == 0x100 && a[1].addr == 0x200 && a[2].addr == 0x300);
    fk_unwinder_stats(u, &st0);
    unsigned n2 = unwind3(u, P, b);
    fk_unwinder_stats(u, &st1);
    UNIT_CHECK("cache: the same stack again is answered from the cache, unchanged",
               n2 == n && same_locs(a, b, n) && st0.pc_cache_misses == n &&
               st1.pc_cache_hits - st0.pc_cache_hits == n && st1.pc_cache_misses == st0.pc_cache_misses);

    /* another process, the same addresses, another file */
    n2 = unwind3(u, Q, b);
    UNIT_CHECK("cache: another process's same pcs are its own",
               n2 == 3 && b[0].dso != a[0].dso && b[0].addr == 0x100);

    /* a mapping replaced (munmap + mmap, as MMAP2 records show it) */
    map_file(s, P, f1, 0x1000);
    n2 = unwind3(u, P, b);
    UNIT_CHECK("cache: a replaced mapping is seen at once",
               n2 == 3 && b[0].dso == a[0].dso && b[0].addr == 0x1100 && b[2].addr == 0x1300);

    /* exec: the old image's answers must go */
    fk_sym_comm(s, P, P, "newimage", true);
    map_file(s, P, f2, 0x2000);
    n2 = unwind3(u, P, b);
    UNIT_CHECK("cache: after exec, the new image's frames",
               n2 == 3 && b[0].dso != a[0].dso && b[0].addr == 0x2100);
    fk_sym_comm(s, P, P, "empty", true);
    n2 = unwind3(u, P, b);
    UNIT_CHECK("cache: after exec into nothing mapped, no frame from before",
               n2 >= 1 && b[0].dso != a[0].dso && b[0].addr != 0x2100);

    /* a pid seen before, forked anew from Q: Q's maps */
    n = unwind3(u, Q, a);
    map_file(s, C, f1, 0x3000);
    unwind3(u, C, b);
    fk_sym_exit(s, C, C);
    fk_sym_fork(s, C, Q, C, Q);
    n2 = unwind3(u, C, b);
    UNIT_CHECK("cache: a reused pid gets its new parent's frames", n2 == n && same_locs(a, b, n));

    /* a fork's copy is answered by its parent's entries while neither
     * maps anything; then each by its own maps */
    pid_t D = 4190014;
    n = unwind3(u, Q, a);
    fk_unwinder_stats(u, &st0);
    fk_sym_fork(s, D, Q, D, Q);
    n2 = unwind3(u, D, b);
    fk_unwinder_stats(u, &st1);
    UNIT_CHECK("cache: a fork's copy hits its parent's entries",
               n2 == n && same_locs(a, b, n) && st1.pc_cache_misses == st0.pc_cache_misses);
    map_file(s, D, f1, 0x4000);
    n2 = unwind3(u, D, b);
    UNIT_CHECK("cache: a fork's copy that maps anew has its own frames",
               n2 == 3 && b[0].dso != a[0].dso && b[0].addr == 0x4100);
    n2 = unwind3(u, Q, b);
    UNIT_CHECK("cache: ... and its parent keeps its own", n2 == n && same_locs(a, b, n));
    fk_unwinder_free(u);
    fk_sym_free(s);
}

/* The second level: one binary's code in a second process is answered by
 * (binary, address), the same rows and locations, after the first level
 * missed (another address space). The test binary itself is the ELF with
 * CFI, mapped at one place in two processes. */
static void test_pc_cache2(void)
{
    pid_t R1 = 4190021, R2 = 4190022;
    char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    struct fk_symbolizer *s = fk_sym_new(&(struct fk_sym_opts){ 0 });
    struct fk_unwinder *u = fk_unwinder_new(s);
    struct fk_loc a[FK_UW_DEFAULT_MAX_FRAMES + 1], b[FK_UW_DEFAULT_MAX_FRAMES + 1];
    struct fk_unwind_stats st0, st1;
    if (k <= 0) {
        printf("SKIP: unit-unwind: the second pc cache level (no /proc/self/exe)\n");
        fk_unwinder_free(u);
        fk_sym_free(s);
        return;
    }
    self[k] = 0;
    map_file(s, R1, self, 0);
    map_file(s, R2, self, 0);
    uint64_t vaddr = 0;
    bool mapped = false;
    bool cfi = fk_sym_cfi_at(s, R1, CODE + 0x100, &vaddr, &mapped) != NULL;
    unsigned n = unwind3(u, R1, a);
    fk_unwinder_stats(u, &st0);
    unsigned n2 = unwind3(u, R2, b);
    fk_unwinder_stats(u, &st1);
    uint64_t miss = st1.pc_cache_misses - st0.pc_cache_misses;
    uint64_t hit2 = st1.pc_cache2_hits - st0.pc_cache2_hits;
    UNIT_CHECK("cache, second level: the test binary has CFI at the leaf", cfi && mapped);
    UNIT_CHECK("cache, second level: nothing answered it within the first process",
               n >= 1 && st0.pc_cache2_hits == 0);
    UNIT_CHECK("cache, second level: a second process's misses are its hits, the same frames",
               n2 == n && same_locs(a, b, n) && miss >= 1 && hit2 == miss && a[0].addr == 0x100);
    fk_unwinder_free(u);
    fk_sym_free(s);
}

static bool same_row(const struct fk_uw_row *a, const struct fk_uw_row *b)
{
    if (a->cfa_kind != b->cfa_kind || a->cfa_reg != b->cfa_reg || a->cfa_off != b->cfa_off ||
        a->src != b->src || a->signal != b->signal)
        return false;
    for (int i = 0; i < FK_UW_NREGS; i++)
        if (a->rule[i].kind != b->rule[i].kind || a->rule[i].reg != b->rule[i].reg ||
            a->rule[i].off != b->rule[i].off)
            return false;
    return true;
}

/* The row cache answers alike whatever order its rows were found in: one
 * object asked for every address of nofp's text in a random order (rows
 * then wait in the recent run and are merged many times), one in
 * address order; every answer covers its address, and asking again
 * finds every row (both runs searched right). */
static void check_row_order(Elf *elf)
{
    enum { NOFP_TEXT = 0x3000 };
    struct fk_cfi *shuffled = fk_cfi_new(elf), *ordered = fk_cfi_new(elf);
    static uint32_t order[NOFP_TEXT];
    for (uint32_t i = 0; i < NOFP_TEXT; i++)
        order[i] = i;
    for (uint32_t i = NOFP_TEXT - 1; i > 0; i--) {
        uint32_t j = (uint32_t)random() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    bool covers = true, same = true;
    for (uint32_t i = 0; i < NOFP_TEXT; i++) {
        const struct fk_uw_row *r = fk_cfi_find(shuffled, order[i]);
        covers &= r->start <= order[i] && order[i] < r->end;
    }
    size_t rows = fk_cfi_rows(shuffled);
    for (uint32_t v = 0; v < NOFP_TEXT; v++) {
        struct fk_uw_row a = *fk_cfi_find(ordered, v);
        const struct fk_uw_row *b = fk_cfi_find(shuffled, v);
        covers &= a.start <= v && v < a.end && b->start <= v && v < b->end;
        same &= same_row(&a, b);
    }
    /* a row found for one address serves the others of its range (rows
     * start where libdw's do when that is checked good): each must be
     * the row a fresh object finds for that address alone */
    bool fresh_same = true;
    for (uint32_t v = 0; v < NOFP_TEXT; v += 3) {
        struct fk_cfi *fresh = fk_cfi_new(elf);
        fresh_same &= same_row(fk_cfi_find(fresh, v), fk_cfi_find(shuffled, v));
        fk_cfi_free(fresh);
    }
    UNIT_CHECK("row cache: every answer covers its address, found in any order", covers);
    UNIT_CHECK("row cache: a row found for another address is the address's own", fresh_same);
    UNIT_CHECK("row cache: the same rows whatever order they were found in", same);
    UNIT_CHECK("row cache: an address asked again is found, not read again",
               rows > 1000 && fk_cfi_rows(shuffled) == rows);
    fk_cfi_free(shuffled);
    fk_cfi_free(ordered);
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

    test_pc_cache();
    test_pc_cache2();

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
        check_row_order(elf);
    }
    elf_end(elf);
    close(fd);
    return UNIT_END();
}
