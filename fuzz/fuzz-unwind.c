/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: the stack walker (unwind/unwind.h) with random
 * registers and stacks against real binaries' CFI (python3.11, libc, xz,
 * liblzma: whichever are installed), mapped at made-up addresses; stack
 * words can be steered into the mapped text and the stack itself so the
 * walk goes deep. A second mode patches the input's bytes into a copy of
 * xz's .eh_frame_hdr/.eh_frame and walks with that hostile CFI (parsed by
 * libdw). Every walk must end within its limits. */
#include "fuzz.h"
#include "unwind/unwind.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STACK_BASE 0x7ff000000000ull

struct mod {
    Elf *elf;
    struct fk_cfi *cfi;
    uint64_t base, lo, span;    /* exec segment: vaddr lo .. lo + span at base */
};

static struct mod mods[8];
static int nmods;
static unsigned char *xz_image;     /* a pristine copy for the corrupt-CFI mode */
static size_t xz_size;
static size_t cfi_off, cfi_len;     /* .eh_frame_hdr .. end of .eh_frame in the file */

static bool exec_segment(Elf *e, uint64_t *lo, uint64_t *span)
{
    size_t n;
    if (elf_getphdrnum(e, &n) != 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            *lo = ph.p_vaddr;
            *span = ph.p_memsz;
            return ph.p_memsz > 0;
        }
    }
    return false;
}

static void add_mod(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    struct mod *m = &mods[nmods];
    if (e && elf_cntl(e, ELF_C_FDDONE) == 0 && exec_segment(e, &m->lo, &m->span) &&
        (m->cfi = fk_cfi_new(e))) {
        m->elf = e;
        m->base = 0x100000000ull * (uint64_t)(nmods + 1);
        nmods++;
    } else if (e) {
        elf_end(e);
    }
    close(fd);
}

static void load_xz(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (64 << 20)) {
        if (fd >= 0)
            close(fd);
        return;
    }
    xz_size = (size_t)st.st_size;
    xz_image = malloc(xz_size);
    if (!xz_image || read(fd, xz_image, xz_size) != (ssize_t)xz_size) {
        free(xz_image);
        xz_image = NULL;
        close(fd);
        return;
    }
    close(fd);
    Elf *e = elf_memory((char *)xz_image, xz_size);
    size_t shstrndx;
    Elf_Scn *scn = NULL;
    uint64_t lo = UINT64_MAX, hi = 0;
    if (e && elf_getshdrstrndx(e, &shstrndx) == 0)
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            const char *name;
            if (gelf_getshdr(scn, &sh) && (name = elf_strptr(e, shstrndx, sh.sh_name)) &&
                (!strcmp(name, ".eh_frame_hdr") || !strcmp(name, ".eh_frame"))) {
                lo = sh.sh_offset < lo ? sh.sh_offset : lo;
                hi = sh.sh_offset + sh.sh_size > hi ? sh.sh_offset + sh.sh_size : hi;
            }
        }
    if (e)
        elf_end(e);
    if (hi > lo && hi <= xz_size) {
        cfi_off = lo;
        cfi_len = hi - lo;
    }
}

static void init(void)
{
    elf_version(EV_CURRENT);
    const char *paths[] = { "/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                            "/usr/bin/xz", "/usr/lib/x86_64-linux-gnu/liblzma.so.5" };
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        add_mod(paths[i]);
    load_xz("/usr/bin/xz");
}

struct env { struct mod *m; int n; };

static const struct fk_uw_code *resolve(void *ctx, uint64_t pc)
{
    struct env *e = ctx;
    static struct fk_uw_code code;
    struct fk_uw_code *out = &code;
    *out = (struct fk_uw_code){ 0 };
    for (int i = 0; i < e->n; i++) {
        struct mod *m = &e->m[i];
        if (pc >= m->base && pc - m->base < m->span) {
            out->mapped = true;
            out->cfi = m->cfi;
            out->vaddr = pc - m->base + m->lo;
            return out;
        }
    }
    return out;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void run_walk(struct mod *m, int n, const uint8_t *data, size_t size, uint64_t *stack,
                     size_t words)
{
    /* header: module, ip offset, sp slot, fp choice, flags */
    struct mod *im = &m[data[0] % n];
    uint64_t ip = im->base + rd64(data + 1) % im->span;
    size_t spw = data[9] % (words ? words : 1);
    uint64_t fpv = rd64(data + 10);
    uint8_t flags = data[18];
    data += 19;
    size -= 19;
    memset(stack, 0, words * 8);
    memcpy(stack, data, size < words * 8 ? size : words * 8);
    if (flags & 1)      /* steer words into the text and the stack */
        for (size_t i = 0; i < words; i++) {
            uint64_t w = stack[i];
            switch (w & 3) {
            case 1: { struct mod *t = &m[(w >> 2) % n]; stack[i] = t->base + (w >> 8) % t->span; break; }
            case 2: stack[i] = STACK_BASE + ((w >> 8) % words) * 8; break;
            default: break;
            }
        }
    uint64_t regs[FK_UW_NREGS];
    regs[FK_UW_IP] = ip;
    regs[FK_UW_SP] = STACK_BASE + spw * 8;
    regs[FK_UW_FP] = flags & 2 ? STACK_BASE + (fpv % (words * 8)) : fpv;
    struct fk_uw_stack st = { (const unsigned char *)(stack + spw), regs[FK_UW_SP],
                              (words - spw) * 8, (flags & 4) != 0 };
    uint64_t pcs[64];
    struct fk_uw_result res;
    struct env e = { m, n };
    fk_uw_walk(fk_uw_arch(), regs, &st, resolve, &e, 64, FK_UW_DEFAULT_MAX_NS, pcs, NULL, &res);
    if (res.n < 1 || res.n > 64 || res.status > FK_UW_FAILED || res.reason >= FK_UW_R_N)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool inited;
    if (!inited) {
        init();
        inited = true;
    }
    if (!fk_uw_arch() || size < 20)
        return 0;
    static uint64_t stack[8192];
    if (!(data[0] & 0x80) || !xz_image || !cfi_len) {
        if (nmods)
            run_walk(mods, nmods, data + 1, size - 1, stack, sizeof stack / 8);
        return 0;
    }
    /* hostile CFI: (offset, value) pairs patched into xz's CFI sections */
    unsigned char *img = malloc(xz_size);
    memcpy(img, xz_image, xz_size);
    size_t npatch = data[1] % 64;
    const uint8_t *p = data + 2;
    for (size_t i = 0; i < npatch && p + 3 <= data + size; i++, p += 3)
        img[cfi_off + ((size_t)p[0] << 8 | p[1]) % cfi_len] = p[2];
    Elf *e = elf_memory((char *)img, xz_size);
    struct mod m = { .elf = e, .base = 0x100000000ull };
    if (e && exec_segment(e, &m.lo, &m.span) && (m.cfi = fk_cfi_new(e))) {
        size_t rest = (size_t)(data + size - p);
        if (rest >= 20)
            run_walk(&m, 1, p, rest, stack, 1024);
        /* and lookups all over the text */
        for (uint64_t a = m.lo; a < m.lo + m.span; a += m.span / 97 + 1)
            fk_cfi_find(m.cfi, a);
        fk_cfi_free(m.cfi);
    }
    if (e)
        elf_end(e);
    free(img);
    return 0;
}
