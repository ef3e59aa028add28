/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbol sources: ELF files (symtab, dynsym, debug files), the vDSO,
 * /proc/kallsyms and perf-PID.map files. */
#include "symbols/symbols-int.h"
#include "symbols/gopclntab.h"
#include "util/safeopen.h"
#include "util/sort.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

size_t fk_symtab_bytes(const struct fk_symtab *t)
{
    return t->cap * sizeof *t->syms + t->strs.cap + fk_hindex_bytes(&t->names);
}

bool fk_symtab_fits(struct fk_symtab *t, size_t n)
{
    if (t->over)
        return false;
    size_t held = fk_symtab_bytes(t) + t->transient;
    if (!t->budget || (held <= t->budget && n <= t->budget - held))
        return true;
    t->over = true;
    return false;
}

/* The offset of a stored name equal to name[0..len), or UINT32_MAX. */
static uint32_t interned(const struct fk_symtab *t, uint64_t h, const char *name, size_t len)
{
    struct fk_hiter it = fk_hindex_find(&t->names, h);
    uint32_t off;
    while (fk_hindex_next(&it, &off))
        if (memcmp(t->strs.data + off, name, len) == 0 && t->strs.data[off + len] == '\0')
            return off;
    return UINT32_MAX;
}

bool fk_symtab_add(struct fk_symtab *t, uint64_t addr, uint64_t size, const char *name)
{
    if (t->over)
        return false;
    size_t len = strnlen(name, FK_SYM_NAME_MAX), grow = 0;
    uint64_t h = fk_hash(name, len);
    uint32_t off = interned(t, h, name, len);
    if (t->n + 1 > t->cap)
        grow += (fk_grow_cap(t->cap, t->n + 1) - t->cap) * sizeof *t->syms;
    if (off == UINT32_MAX) {
        /* offsets are 32-bit: a table that big is over any budget */
        if (t->strs.len + len + 2 > UINT32_MAX) {
            t->over = true;
            return false;
        }
        grow += fk_grow_cap(t->strs.cap, t->strs.len + len + 2) - t->strs.cap;
        if ((t->names.n + 1) * 4 > (t->names.mask + 1) * 3)     /* (fk_hindex_add grows it) */
            grow += (t->names.slot ? 2 * (t->names.mask + 1) : 64) * sizeof *t->names.slot;
    }
    if (grow && !fk_symtab_fits(t, grow))
        return false;
    if (off == UINT32_MAX) {
        off = (uint32_t)t->strs.len;
        fk_buf_add(&t->strs, name, len);
        fk_buf_addc(&t->strs, '\0');
        fk_hindex_add(&t->names, h, off);
    }
    t->syms = fk_grow(t->syms, &t->cap, t->n + 1, sizeof *t->syms);
    t->syms[t->n].addr = addr;
    t->syms[t->n].size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    t->syms[t->n].name = off;
    t->n++;
    return true;
}

static int sym_cmp(const void *a, const void *b)
{
    const struct fk_sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    /* at one address keep the sized symbol first */
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

/* /proc/kallsyms (120,000 symbols) comes in address order but for a few
 * aliases at one address: an insertion sort that gives up (false, the
 * array still a permutation) once it has moved more than a few entries.
 * sym_cmp orders all but identical entries, so this sorts exactly as
 * the radix sort by the same fields would. */
static bool sort_nearly_sorted(struct fk_sym *v, size_t n)
{
    size_t moves = 0, limit = n / 16 + 64;
    for (size_t i = 1; i < n; i++) {
        if (sym_cmp(&v[i - 1], &v[i]) <= 0)
            continue;
        struct fk_sym x = v[i];
        size_t j = i;
        while (j > 0 && sym_cmp(&v[j - 1], &x) > 0) {
            v[j] = v[j - 1];
            j--;
            if (++moves > limit) {
                v[j] = x;
                return false;
            }
        }
        v[j] = x;
    }
    return true;
}

void fk_symtab_sort(struct fk_symtab *t)
{
    fk_hindex_free(&t->names);
    if (t->n == 0)
        return;
    /* sym_cmp's order: address, the larger size, the name's offset */
    static const struct fk_sort_field by[] = {
        { offsetof(struct fk_sym, addr), 8, false },
        { offsetof(struct fk_sym, size), 4, true },
        { offsetof(struct fk_sym, name), 4, false },
    };
    if (!sort_nearly_sorted(t->syms, t->n))
        fk_sort_fields(t->syms, t->n, sizeof *t->syms, by, 3);
    size_t w = 1;   /* one symbol per address */
    for (size_t r = 1; r < t->n; r++)
        if (t->syms[r].addr != t->syms[w - 1].addr)
            t->syms[w++] = t->syms[r];
    t->n = w;
    /* A zero-sized label inside a sized function would take over the rest
     * of that function (it "reaches to the next symbol"): drop it. */
    uint64_t cover_end = 0;
    w = 0;
    for (size_t r = 0; r < t->n; r++) {
        const struct fk_sym *y = &t->syms[r];
        if (!y->size && y->addr < cover_end)
            continue;
        if (y->size && y->addr + y->size > cover_end)
            cover_end = y->addr + y->size;
        t->syms[w++] = *y;
    }
    t->n = w;
    /* tables live until the end: give back the growth slack */
    t->syms = fk_realloc(t->syms, t->n * sizeof *t->syms);
    t->cap = t->n;
    if (t->strs.cap > t->strs.len + 1) {
        t->strs.data = fk_realloc(t->strs.data, t->strs.len + 1);
        t->strs.cap = t->strs.len + 1;
    }
}

/* Nearest preceding symbol covering addr. Sized symbols must contain it;
 * zero-sized ones reach to the next symbol, or `slack` past the last. */
const struct fk_sym *fk_symtab_find(const struct fk_symtab *t, uint64_t addr, uint64_t slack)
{
    size_t lo = fk_count_le(t->syms, t->n, sizeof *t->syms, offsetof(struct fk_sym, addr), addr);
    if (lo == 0)
        return NULL;
    const struct fk_sym *y = &t->syms[lo - 1];
    if (y->size) {
        if (addr - y->addr < y->size)
            return y;
        /* an enclosing larger symbol just before (e.g. aliases) */
        if (lo >= 2 && addr - t->syms[lo - 2].addr < t->syms[lo - 2].size)
            return &t->syms[lo - 2];
        return NULL;
    }
    if (lo == t->n && addr - y->addr > slack)
        return NULL;
    return y;
}

void fk_symtab_free(struct fk_symtab *t)
{
    free(t->syms);
    fk_buf_free(&t->strs);
    fk_hindex_free(&t->names);
    memset(t, 0, sizeof *t);
}

static void elf_init(void)
{
    static bool done;
    if (!done) {
        elf_version(EV_CURRENT);
        done = true;
    }
}

/* Function symbols of one symbol-table section kind; returns how many.
 * The section and its string table count toward t's budget while read
 * (libelf may copy them); t->over: stopped there. */
static size_t read_syms(Elf *e, Elf64_Word type, struct fk_symtab *t)
{
    size_t added = 0;
    Elf_Scn *scn = NULL;
    while (!t->over && (scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh, ssh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize == 0)
            continue;
        Elf_Scn *strs = elf_getscn(e, sh.sh_link);
        uint64_t read = sh.sh_size;
        if (strs && gelf_getshdr(strs, &ssh) && ssh.sh_type != SHT_NOBITS)
            read += ssh.sh_size;
        if (read > SIZE_MAX / 2 || !fk_symtab_fits(t, (size_t)read))
            break;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (!data)
            continue;
        t->transient += (size_t)read;
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n && !t->over; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(data, (int)i, &sym))
                break;
            int st = GELF_ST_TYPE(sym.st_info);
            if ((st != STT_FUNC && st != STT_GNU_IFUNC && st != STT_NOTYPE) ||
                sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || sym.st_value == 0)
                continue;
            const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
            if (!name || !*name)
                continue;
            /* Untyped symbols are assembly entry points (ld.so's and a
             * program's _start) when they label code; never local labels
             * (.L*) or mapping symbols ($x, $d). */
            if (st == STT_NOTYPE) {
                GElf_Shdr ts;
                Elf_Scn *text = elf_getscn(e, sym.st_shndx);
                if (name[0] == '$' || (name[0] == '.' && name[1] == 'L') || !text ||
                    !gelf_getshdr(text, &ts) || !(ts.sh_flags & SHF_EXECINSTR))
                    continue;
            }
            added += fk_symtab_add(t, sym.st_value, sym.st_size, name);
        }
        t->transient -= (size_t)read;
    }
    return added;
}

/* The first non-empty section of a type, its header in *sh. */
static Elf_Scn *section_typed(Elf *e, Elf64_Word type, GElf_Shdr *sh)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn)))
        if (gelf_getshdr(scn, sh) && sh->sh_type == type && sh->sh_size > 0)
            return scn;
    return NULL;
}

static bool has_section(Elf *e, Elf64_Word type)
{
    GElf_Shdr sh;
    return section_typed(e, type, &sh) != NULL;
}

/* The code the loader runs once per file, DT_INIT and DT_FINI in the
 * dynamic section (.init and .fini: a few instructions with no FDE and no
 * .dynsym entry, sampled now and then as a process starts or exits),
 * named _init and _fini when a stripped file has no symbol there. Sized
 * by the executable section that starts at the address; with none (no
 * section headers) left unnamed: a zero-sized symbol would reach over
 * the PLT and the functions that follow. The dynamic section counts
 * toward t's budget while read, like a symbol table. */
static void read_init_fini(Elf *e, struct fk_symtab *t)
{
    static const struct { Elf64_Sxword tag; const char *name; } entry[] = {
        { DT_INIT, "_init" }, { DT_FINI, "_fini" },
    };
    uint64_t addr[2] = { 0, 0 };
    GElf_Shdr sh;
    Elf_Scn *scn = section_typed(e, SHT_DYNAMIC, &sh);
    if (!scn || sh.sh_entsize == 0 || sh.sh_size > SIZE_MAX / 2 || !fk_symtab_fits(t, (size_t)sh.sh_size))
        return;
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data)
        return;
    t->transient += (size_t)sh.sh_size;
    uint64_t n = sh.sh_size / sh.sh_entsize;    /* gelf_getdyn checks each against the data */
    for (uint64_t i = 0; i < n && i < INT_MAX; i++) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
            break;
        for (int k = 0; k < 2; k++)
            if (dyn.d_tag == entry[k].tag)
                addr[k] = dyn.d_un.d_ptr;
    }
    t->transient -= (size_t)sh.sh_size;
    for (int k = 0; k < 2 && !t->over; k++) {
        uint64_t size = 0;
        scn = NULL;
        while (addr[k] && !size && (scn = elf_nextscn(e, scn)))
            if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS && sh.sh_addr == addr[k] &&
                (sh.sh_flags & SHF_EXECINSTR))
                size = sh.sh_size;
        bool named = false;     /* an exported symbol there keeps its name */
        for (size_t i = 0; size && i < t->n && !named; i++)
            named = t->syms[i].addr == addr[k];
        if (size && !named)
            fk_symtab_add(t, addr[k], size, entry[k].name);
    }
}

static Elf_Scn *section_named(Elf *e, const char *want, GElf_Shdr *sh)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        return NULL;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        const char *name;
        if (gelf_getshdr(scn, sh) && (name = elf_strptr(e, shstrndx, sh->sh_name)) &&
            strcmp(name, want) == 0)
            return scn;
    }
    return NULL;
}

/* A table about to be filled from a file of `size` bytes, under `share`
 * (what the caller's --max-memory share leaves; SIZE_MAX: no limit). */
static void set_budget(struct fk_symtab *t, size_t share, uint64_t size)
{
    size_t own = size > SIZE_MAX / 8 ? SIZE_MAX : FK_SYM_FILE_BUDGET(size);
    t->budget = share < own ? share : own;
    if (!t->budget)
        t->over = true;     /* (0 would mean no limit) */
}

/* Take one candidate debug file (fd, consumed): it must carry a .symtab
 * and, when both sides have one, the same build-id. */
static bool try_debug_fd(struct dso *d, int fd, const char *path, bool in_root, size_t share)
{
    if (fd < 0)
        return false;
    bool ok = false;
    struct stat st;
    Elf *e = fstat(fd, &st) == 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    if (e && elf_kind(e) == ELF_K_ELF && has_section(e, SHT_SYMTAB)) {
        const void *bid;
        ssize_t n = dwelf_elf_gnu_build_id(e, &bid);
        if (d->build_id_len == 0 || n <= 0 ||
            ((size_t)n == d->build_id_len && memcmp(bid, d->build_id, (size_t)n) == 0)) {
            set_budget(&d->st, share, (uint64_t)st.st_size);
            ok = read_syms(e, SHT_SYMTAB, &d->st) > 0;
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    if (ok) {
        d->debug_path = fk_strdup(path);
        d->debug_in_root = in_root;
        d->debug_dev = (uint64_t)st.st_dev;
        d->debug_ino = (uint64_t)st.st_ino;
    }
    return ok;
}

/* path inside rootfd, through the safe-open helper (util/safeopen.h),
 * owned by root, the binary's owner or us: paths beside the binary are its
 * owner's to plant. */
static bool try_debug_file(struct dso *d, int rootfd, bool in_root, const char *path, unsigned flags,
                           size_t share)
{
    const uid_t owners[2] = { d->uid, geteuid() };
    const struct fk_safe_opts o = { .flags = flags, .owners = owners, .nowners = 2 };
    return rootfd >= 0 &&
           try_debug_fd(d, fk_safe_openat(rootfd, path, &o, NULL, NULL), path, in_root, share);
}

int fk_dso_root_open(const struct dso *d)
{
    int fd = fk_root_open(d->root_pid, NULL);
    struct stat st;
    if (fd >= 0 && d->root_pid &&
        (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != d->root_dev || (uint64_t)st.st_ino != d->root_ino)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* By build-id from debuginfod, within its time budget. */
static bool load_debuginfod(struct dso *d, struct fk_debuginfod *dbg, size_t share)
{
    char *path = NULL;
    int fd = dbg && d->build_id_len ? fk_debuginfod_find(dbg, d->build_id, d->build_id_len, &path) : -1;
    bool ok = try_debug_fd(d, fd, path ? path : "", false, share);
    free(path);
    return ok;
}

/* Debug files: /usr/lib/debug/.build-id/xx/rest.debug, then .gnu_debuglink
 * beside the file, in .debug/ and under /usr/lib/debug; inside the target's
 * root first. Our own root is searched for a process in another root only
 * under /usr/lib/debug (ours to manage, where the build-id is checked):
 * the paths beside its binary are its own, not ours. /usr/lib/debug trees
 * hold symlinks (.build-id): followed, inside the root; beside the binary
 * none is (the kernel named it by its resolved path). */
static bool load_debug_file(struct dso *d, Elf *e, size_t share)
{
    int roots[2] = { -1, -1 };
    bool in_root[2] = { false, false };
    int nroots = 0;
    if (d->root_pid) {
        roots[nroots] = fk_dso_root_open(d);
        in_root[nroots++] = true;
    }
    roots[nroots++] = fk_root_open(0, NULL);
    struct fk_buf p = FK_BUF_INIT;
    bool ok = false;
    for (int r = 0; r < nroots && !ok && !d->st.over && d->build_id_len > 1; r++) {
        fk_buf_reset(&p);
        fk_buf_printf(&p, "/usr/lib/debug/.build-id/%02x/", d->build_id[0]);
        for (size_t i = 1; i < d->build_id_len; i++)
            fk_buf_printf(&p, "%02x", d->build_id[i]);
        fk_buf_adds(&p, ".debug");
        ok = try_debug_file(d, roots[r], in_root[r], fk_buf_cstr(&p), FK_SAFE_FOLLOW, share);
    }
    GElf_Word crc;
    const char *link = ok || d->st.over ? NULL : dwelf_elf_gnu_debuglink(e, &crc);
    if (link && !strchr(link, '/')) {
        const char *slash = strrchr(d->path, '/');
        int dirlen = slash ? (int)(slash - d->path) : 0;
        for (int r = 0; r < nroots && !ok && !d->st.over; r++) {
            static const char *const subdirs[3][2] = { { "", "" }, { "", "/.debug" },
                                                        { "/usr/lib/debug", "" } };
            for (int f = 0; f < 3 && !ok && !d->st.over; f++) {
                bool beside = f < 2;
                if (beside && d->root_pid && !in_root[r])
                    continue;
                fk_buf_reset(&p);
                fk_buf_printf(&p, "%s%.*s%s/%s", subdirs[f][0], dirlen, d->path, subdirs[f][1], link);
                if (strcmp(fk_buf_cstr(&p), d->path) != 0)
                    ok = try_debug_file(d, roots[r], in_root[r], p.data,
                                        beside ? FK_SAFE_NO_SYMLINKS : FK_SAFE_FOLLOW, share);
            }
        }
    }
    for (int r = 0; r < nroots; r++)
        if (roots[r] >= 0)
            close(roots[r]);
    fk_buf_free(&p);
    return ok;
}

static uint64_t rd_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Stripped Go binaries (-ldflags=-s) keep their function table in
 * .gopclntab (symbols/gopclntab.h). */
static size_t read_gopclntab(Elf *e, struct fk_symtab *t)
{
    GElf_Shdr sh;
    Elf_Scn *scn = section_named(e, ".gopclntab", &sh);
    if (!scn)
        return 0;
    Elf_Data *data = elf_rawdata(scn, NULL);
    struct fk_gopcln g;
    if (!data || !fk_gopcln_open(&g, data->d_buf, data->d_size))
        return 0;
    size_t added = 0;
    for (uint64_t i = 0; i < g.nfunc && !t->over; i++) {
        uint64_t entry, end, func;
        const char *fname;
        if (!fk_gopcln_func(&g, i, &entry, &end, &func) || !(fname = fk_gopcln_name(&g, func)))
            continue;
        added += fk_symtab_add(t, entry, end - entry, fname);
    }
    return added;
}

/* ---- function ranges from CFI: names for stripped code ----
 * libdw splits .eh_frame/.debug_frame into CIEs and FDEs (dwarf_next_cfi)
 * but does not decode an FDE's address range: that is the CIE's pointer
 * encoding ('R' augmentation), read here with bounds on every byte. */

#define FDE_MAX (1u << 21)      /* 32 MiB of ranges; libxul has ~2e5 */

static bool rd_uint(const uint8_t **pp, const uint8_t *end, int n, bool be, uint64_t *v)
{
    if (end - *pp < n)
        return false;
    uint64_t x = 0;
    if (be)
        for (int i = 0; i < n; i++)
            x = x << 8 | (*pp)[i];
    else
        x = rd_le(*pp, n);
    *pp += n;
    *v = x;
    return true;
}

static bool rd_leb(const uint8_t **pp, const uint8_t *end, bool sign, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; *pp < end && shift < 64; shift += 7) {
        uint8_t b = *(*pp)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (sign && shift + 7 < 64 && (b & 0x40))
                x |= ~(uint64_t)0 << (shift + 7);
            *v = x;
            return true;
        }
    }
    return false;
}

/* One DW_EH_PE-encoded pointer at *pp; `here` is its own address (pcrel).
 * Only the applications a linker emits for FDEs: absolute and pc-relative. */
static bool rd_encoded(uint8_t enc, const uint8_t **pp, const uint8_t *end, int asize, bool be,
                       uint64_t here, uint64_t *v)
{
    if (enc == DW_EH_PE_omit)
        return false;
    int n;
    switch (enc & 0x0f) {
    case DW_EH_PE_absptr: n = asize; break;
    case DW_EH_PE_udata2: case DW_EH_PE_sdata2: n = 2; break;
    case DW_EH_PE_udata4: case DW_EH_PE_sdata4: n = 4; break;
    case DW_EH_PE_udata8: case DW_EH_PE_sdata8: n = 8; break;
    case DW_EH_PE_uleb128: case DW_EH_PE_sleb128:
        if (!rd_leb(pp, end, (enc & 0x0f) == DW_EH_PE_sleb128, v))
            return false;
        n = 0;
        break;
    default: return false;
    }
    if (n && !rd_uint(pp, end, n, be, v))
        return false;
    if (n && n < 8 && (enc & DW_EH_PE_signed) && (*v >> (8 * n - 1)) & 1)
        *v |= ~(uint64_t)0 << 8 * n;
    switch (enc & 0x70) {
    case DW_EH_PE_absptr: break;
    case DW_EH_PE_pcrel: *v += here; break;
    default: return false;
    }
    if (asize == 4)
        *v &= 0xffffffffu;
    return true;
}

/* The FDE pointer encoding a CIE announces; -1 if we cannot tell. */
static int cie_fde_encoding(const Dwarf_CIE *cie, int asize, bool be)
{
    const char *a = cie->augmentation;
    if (!a || !a[0])
        return DW_EH_PE_absptr;
    if (a[0] != 'z' || !cie->augmentation_data)
        return -1;
    const uint8_t *p = cie->augmentation_data, *end = p + cie->augmentation_data_size;
    for (a++; *a; a++) {
        uint64_t ignored;
        switch (*a) {
        case 'L': if (p >= end) return -1; p++; break;
        case 'R': return p < end ? *p : -1;
        case 'P':   /* personality: its own encoding, then the pointer */
            if (p >= end)
                return -1;
            uint8_t penc = *p++;
            if (!rd_encoded(penc & 0x7f, &p, end, asize, be, 0, &ignored))
                return -1;
            break;
        case 'S': case 'B': break;
        default: return -1;
        }
    }
    return DW_EH_PE_absptr;
}

void fk_dso_load_fde_names(struct dso *d, Elf *e)
{
    GElf_Shdr sh;
    bool eh = true;
    Elf_Scn *scn = section_named(e, ".eh_frame", &sh);
    if (!scn || sh.sh_type != SHT_PROGBITS) {
        eh = false;
        scn = section_named(e, ".debug_frame", &sh);
    }
    const unsigned char *ident = (const unsigned char *)elf_getident(e, NULL);
    Elf_Data *data = scn && sh.sh_type == SHT_PROGBITS ? elf_rawdata(scn, NULL) : NULL;
    if (!ident || !data || !data->d_buf || data->d_size == 0)
        return;
    int asize = ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
    bool be = ident[EI_DATA] == ELFDATA2MSB;
    const uint8_t *base = data->d_buf;
    size_t cap = 0;
    Dwarf_Off off = 0, next, cie_off = (Dwarf_Off)-1;
    int enc = -1;
    Dwarf_CFI_Entry ent;
    while (off < data->d_size && d->nfdes < FDE_MAX &&
           dwarf_next_cfi(ident, data, eh, off, &next, &ent) == 0 && next > off) {
        off = next;
        if (dwarf_cfi_cie_p(&ent))
            continue;
        if (ent.fde.CIE_pointer != cie_off) {   /* consecutive FDEs share their CIE */
            Dwarf_CFI_Entry c;
            Dwarf_Off cnext;
            cie_off = ent.fde.CIE_pointer;
            enc = dwarf_next_cfi(ident, data, eh, cie_off, &cnext, &c) == 0 && dwarf_cfi_cie_p(&c)
                      ? cie_fde_encoding(&c.cie, asize, be) : -1;
        }
        const uint8_t *p = ent.fde.start, *end = ent.fde.end;
        uint64_t start, len;
        if (enc < 0 || p < base || end > base + data->d_size || p >= end ||
            !rd_encoded((uint8_t)enc, &p, end, asize, be, sh.sh_addr + (uint64_t)(ent.fde.start - base),
                        &start) ||
            !rd_encoded((uint8_t)(enc & 0x0f), &p, end, asize, be, 0, &len) ||
            start == 0 || len == 0 || len > UINT32_MAX)
            continue;
        if (d->nfdes + 1 > cap) {   /* held with the symbols: within their budget */
            size_t more = (fk_grow_cap(cap, d->nfdes + 1) - cap) * sizeof *d->fdes;
            if (!fk_symtab_fits(&d->st, more))
                break;
            d->st.transient += more;
            d->fdes = fk_grow(d->fdes, &cap, d->nfdes + 1, sizeof *d->fdes);
        }
        d->fdes[d->nfdes++] = (struct fde_range){ start, (uint32_t)len };
    }
    d->st.transient -= cap * sizeof *d->fdes;
    if (d->st.over) {
        free(d->fdes);
        d->fdes = NULL;
        d->nfdes = 0;
    }
    if (d->nfdes == 0)
        return;
    static const struct fk_sort_field by[] = {    /* start, then the longest */
        { offsetof(struct fde_range, start), 8, false },
        { offsetof(struct fde_range, len), 4, true },
    };
    fk_sort_fields(d->fdes, d->nfdes, sizeof *d->fdes, by, 2);
    size_t w = 1;   /* one range per start: the longest */
    for (size_t r = 1; r < d->nfdes; r++)
        if (d->fdes[r].start != d->fdes[w - 1].start)
            d->fdes[w++] = d->fdes[r];
    d->nfdes = w;
    d->fdes = fk_realloc(d->fdes, w * sizeof *d->fdes);
}

const struct fde_range *fk_dso_fde_find(const struct dso *d, uint64_t vaddr)
{
    size_t lo = fk_count_le(d->fdes, d->nfdes, sizeof *d->fdes, offsetof(struct fde_range, start),
                            vaddr);
    if (lo == 0)
        return NULL;
    const struct fde_range *f = &d->fdes[lo - 1];
    return vaddr - f->start < f->len ? f : NULL;
}

/* ---- MiniDebugInfo ----
 * .gnu_debugdata (Fedora, RHEL, CentOS...): an xz-compressed ELF whose
 * .symtab holds the function symbols .dynsym lacks. Decompressed in memory
 * within a decoder memory limit and an output cap, read, then freed; the
 * output counts toward the table's budget as it grows (a few KiB of xz
 * can decompress to 64 MiB), the decoder toward the share. */

#define MINIDEBUG_MEMLIMIT (64u << 20)
#define MINIDEBUG_MAX_OUT (64u << 20)

bool fk_dso_load_minidebuginfo(struct dso *d, Elf *e, size_t share)
{
    GElf_Shdr sh;
    Elf_Scn *scn = section_named(e, ".gnu_debugdata", &sh);
    Elf_Data *data = scn && sh.sh_type == SHT_PROGBITS ? elf_rawdata(scn, NULL) : NULL;
    if (!data || !data->d_buf || data->d_size == 0)
        return false;
    struct fk_symtab *t = &d->st;
    /* the decoder's own memory (its dictionary, as the stream announces:
     * xz's default is 8 MiB, whatever the size) within what the share
     * leaves; its output within the table's budget */
    size_t held = fk_symtab_bytes(t) + t->transient, memlimit = MINIDEBUG_MEMLIMIT;
    if (share < held + memlimit)
        memlimit = share > held ? share - held : 0;
    lzma_stream z = LZMA_STREAM_INIT;
    if (!memlimit || !fk_symtab_fits(t, 0)) {
        t->over = true;
        return false;
    }
    if (lzma_stream_decoder(&z, memlimit, 0) != LZMA_OK)
        return false;
    z.next_in = data->d_buf;
    z.avail_in = data->d_size;
    unsigned char *out = NULL;
    size_t cap = 0, len = 0, base = t->transient;
    lzma_ret r = LZMA_OK;
    while (r == LZMA_OK) {
        if (len == cap) {
            size_t more = cap ? cap : 64 * 1024;
            if (cap + more > MINIDEBUG_MAX_OUT)
                more = MINIDEBUG_MAX_OUT - cap;
            if (!more)
                break;
            if (!fk_symtab_fits(t, more)) {
                /* the output alone would pass the file's budget: this
                 * section is given up (counted and said, as a file over
                 * its budget is), the file's cheaper sources (.dynsym,
                 * function starts) stay within what it has */
                t->over = false;
                d->over_budget = true;
                break;
            }
            cap += more;
            out = fk_realloc(out, cap);
        }
        z.next_out = out + len;
        z.avail_out = cap - len;
        r = lzma_code(&z, LZMA_FINISH);
        len = cap - z.avail_out;
        t->transient = base + cap;
        if (!fk_symtab_fits(t, 0))
            break;
    }
    lzma_end(&z);
    if (r == LZMA_MEMLIMIT_ERROR && memlimit < MINIDEBUG_MEMLIMIT)
        t->over = true;     /* (over 64 MiB: no MiniDebugInfo, not a budget matter) */
    t->transient = base + cap;
    bool ok = false;
    if (r == LZMA_STREAM_END && !t->over) {
        Elf *in = elf_memory((char *)out, len);
        if (in && elf_kind(in) == ELF_K_ELF)
            ok = read_syms(in, SHT_SYMTAB, t) > 0;
        if (in)
            elf_end(in);
    }
    free(out);
    t->transient = base;
    if (ok)     /* it holds only what .dynsym lacks */
        read_syms(e, SHT_DYNSYM, t);
    return ok && !t->over;
}

Elf *fk_dso_elf(struct dso *d)
{
    if (d->elf || d->fd < 0)
        return d->elf;
    elf_init();
    Elf *e = elf_begin(d->fd, ELF_C_READ_MMAP, NULL);
    if (e && elf_kind(e) != ELF_K_ELF) {
        elf_end(e);
        e = NULL;
    }
    /* everything comes from the mapping from now on: the fd may close */
    if (e && elf_cntl(e, ELF_C_FDDONE) != 0) {
        elf_end(e);
        e = NULL;
    }
    d->elf = e;
    return e;
}

void fk_dso_load_elf(struct dso *d, struct fk_debuginfod *dbg, bool keep_elf, size_t budget)
{
    d->loaded = true;
    Elf *e = fk_dso_elf(d);
    if (e) {
        size_t phnum = 0;
        if (elf_getphdrnum(e, &phnum) == 0) {
            d->loads = fk_calloc(phnum ? phnum : 1, sizeof *d->loads);
            for (size_t i = 0; i < phnum; i++) {
                GElf_Phdr ph;
                if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
                    d->loads[d->nloads].off = ph.p_offset;
                    d->loads[d->nloads].filesz = ph.p_filesz;
                    d->loads[d->nloads].vaddr = ph.p_vaddr;
                    d->nloads++;
                }
            }
        }
        if (d->build_id_len == 0) {
            const void *bid;
            ssize_t n = dwelf_elf_gnu_build_id(e, &bid);
            if (n > 0 && (size_t)n <= sizeof d->build_id) {
                memcpy(d->build_id, bid, (size_t)n);
                d->build_id_len = (size_t)n;
            }
        }
        d->elf_ok = d->nloads > 0;
        /* each source within the budget of the file it reads; the first
         * one over it ends the search (struct fk_symtab) */
        size_t size = 0;
        elf_rawfile(e, &size);
        struct fk_symtab *t = &d->st;
        set_budget(t, budget, size);
        bool got = has_section(e, SHT_SYMTAB) && read_syms(e, SHT_SYMTAB, t) > 0;
        if (!got && !t->over)
            got = load_debug_file(d, e, budget);
        if (!got && !t->over) {
            set_budget(t, budget, size);
            got = fk_dso_load_minidebuginfo(d, e, budget) || (!t->over && read_gopclntab(e, t) > 0);
        }
        if (!got && !t->over)
            got = load_debuginfod(d, dbg, budget);
        if (!got && !t->over) {
            /* exported names only: the rest is named by function start */
            set_budget(t, budget, size);
            read_syms(e, SHT_DYNSYM, t);
            if (!t->over)
                read_init_fini(e, t);
            if (!t->over)
                fk_dso_load_fde_names(d, e);
        }
        if (t->over) {
            d->over_budget = true;
            fk_symtab_free(t);
            free(d->fdes);
            d->fdes = NULL;
            d->nfdes = 0;
        }
        fk_symtab_sort(t);
    }
    if (e && !keep_elf && !d->cfi) {
        elf_end(e);
        d->elf = NULL;
    }
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

Elf *fk_vdso_elf(void)
{
    static Elf *e;
    static bool tried;
    if (tried)
        return e;
    tried = true;
    unsigned long base = getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return NULL;
    elf_init();
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
        return NULL;
    size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    e = elf_memory((char *)base, size);
    return e;
}

void fk_vdso_load(struct fk_symtab *t)
{
    Elf *e = fk_vdso_elf();
    if (!e)
        return;
    /* vDSO symbol values are relative to its first PT_LOAD's vaddr */
    uint64_t bias = 0;
    size_t phnum = 0;
    if (elf_getphdrnum(e, &phnum) == 0)
        for (size_t i = 0; i < phnum; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
                bias = ph.p_vaddr - ph.p_offset;
                break;
            }
        }
    struct fk_symtab tmp = { 0 };
    read_syms(e, SHT_DYNSYM, &tmp);
    for (size_t i = 0; i < tmp.n; i++)
        fk_symtab_add(t, tmp.syms[i].addr - bias, tmp.syms[i].size, fk_symtab_name(&tmp, &tmp.syms[i]));
    fk_symtab_free(&tmp);
    fk_symtab_sort(t);
}

/* One /proc/kallsyms line, "ADDR T NAME[\tMODULE]" (no newline), into t
 * when it is a text symbol; false when it is not a symbol line at all. */
struct kallsyms_span {
    uint64_t lo, hi, other_lo, other_hi;
    size_t others;
};

static bool kallsyms_line(struct fk_symtab *t, const char *line, const char *end, uint64_t *addr,
                          struct kallsyms_span *sp)
{
    const char *p = line;
    uint64_t a = 0;
    for (; p < end; p++) {
        unsigned c = (unsigned char)*p, v;
        if (c - '0' < 10)
            v = c - '0';
        else if ((c | 0x20) - 'a' < 6)
            v = (c | 0x20) - 'a' + 10;
        else
            break;
        a = a << 4 | v;
    }
    if (p == line || end - p < 3 || p[0] != ' ' || p[2] != ' ' || p - line > 16)
        return false;
    *addr = a;
    char type = p[1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W')
        return true;
    /* "name\t[module]": keep the name, cut as names are (at most 511) */
    const char *name = p + 3, *q = name;
    while (q < end && *q != '\t' && *q != ' ')
        q++;
    size_t nlen = (size_t)(q - name);
    if (q < end && *q == '\t') {     /* a module's, BPF's, trampoline's */
        sp->other_lo = sp->others++ ? (a < sp->other_lo ? a : sp->other_lo) : a;
        sp->other_hi = a > sp->other_hi ? a : sp->other_hi;
    } else {
        sp->lo = a < sp->lo ? a : sp->lo;
        sp->hi = a > sp->hi ? a : sp->hi;
    }
    if (nlen > 511)
        nlen = 511;
    t->syms = fk_grow(t->syms, &t->cap, t->n + 1, sizeof *t->syms);
    t->syms[t->n].addr = a;
    t->syms[t->n].size = 0;
    t->syms[t->n].name = (uint32_t)t->strs.len;
    t->n++;
    fk_buf_add(&t->strs, name, nlen);
    fk_buf_addc(&t->strs, '\0');
    return true;
}

/* The kernel's own text (a trusted source): read in large pieces and
 * parsed in place, names stored as they come (not interned: the few
 * repeated static names cost less than hashing 120,000). Aliases at one
 * address keep the first in the file. */
bool fk_kallsyms_load(struct fk_symtab *t, bool *hidden, struct fk_kallsyms_info *info)
{
    enum { CHUNK = 1 << 20 };
    *hidden = false;
    struct kallsyms_span sp = { .lo = UINT64_MAX };
    uint64_t head = 0;
    bool first = true;
    int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char *buf = fk_malloc(CHUNK);
    size_t have = 0;
    uint64_t nonzero = 0, total = 0;
    bool skipping = false;      /* the rest of a line longer than CHUNK */
    for (;;) {
        ssize_t n = read(fd, buf + have, CHUNK - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (have && !skipping) {
                buf[have] = '\n';    /* (a last line without its newline; room: have < CHUNK) */
                have++;
            } else
                break;
        } else
            have += (size_t)n;
        if (first) {
            size_t used;
            head = fk_kallsyms_head_hash(buf, have, &used);
            first = false;
        }
        char *line = buf, *stop = buf + have, *nl;
        while ((nl = memchr(line, '\n', (size_t)(stop - line)))) {
            uint64_t addr;
            if (!skipping && kallsyms_line(t, line, nl, &addr, &sp)) {
                total++;
                nonzero += addr != 0;
            }
            skipping = false;
            line = nl + 1;
        }
        have = (size_t)(stop - line);
        memmove(buf, line, have);
        if (have == CHUNK) {
            skipping = true;
            have = 0;
        }
        if (n <= 0)
            break;
    }
    free(buf);
    close(fd);
    if (total > 0 && nonzero == 0) {
        *hidden = true;
        fk_symtab_free(t);
        return false;
    }
    fk_symtab_sort(t);
    if (info) {
        info->lo = sp.lo;
        info->hi = sp.hi;
        info->head_hash = head;
        info->core_apart = sp.lo <= sp.hi && (!sp.others || sp.other_lo > sp.hi || sp.other_hi < sp.lo);
    }
    return true;
}

static void perfmap_line(struct fk_symtab *t, char *line)
{
    char *end, *end2;
    uint64_t start = strtoull(line, &end, 16);
    if (end == line || *end != ' ')
        return;
    uint64_t size = strtoull(end + 1, &end2, 16);
    if (end2 == end + 1 || *end2 != ' ' || !end2[1])
        return;
    fk_symtab_add(t, start, size ? size : 1, end2 + 1);
}

enum fk_perfmap_rc fk_perfmap_load(struct fk_symtab *t, int fd, uint64_t max_read, size_t max_mem)
{
    /* the table as it grows, and this buffer */
    struct fk_symtab fresh = { .budget = max_mem - FK_PERFMAP_LINE_MAX,
                               .over = max_mem <= FK_PERFMAP_LINE_MAX };
    char *buf = fk_malloc(FK_PERFMAP_LINE_MAX + 1);
    size_t have = 0;
    uint64_t total = 0;
    bool skipping = false, eof = false;     /* skipping: the rest of an overlong line */
    enum fk_perfmap_rc rc = FK_PERFMAP_OK;
    while (!eof && rc == FK_PERFMAP_OK) {
        size_t want = FK_PERFMAP_LINE_MAX - have;
        if (total + want > max_read)
            want = (size_t)(max_read - total);
        ssize_t n = want ? read(fd, buf + have, want) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = FK_PERFMAP_ERROR;
            break;
        }
        if (n == 0) {
            eof = true;
            if (want == 0) {
                rc = FK_PERFMAP_TRUNCATED;     /* max_read: the file is still longer */
                char c;
                if (read(fd, &c, 1) == 0)
                    rc = FK_PERFMAP_OK;
            }
            if (have && !skipping && rc == FK_PERFMAP_OK)
                buf[have++] = '\n';   /* a last line without its newline */
        }
        total += (uint64_t)n;
        have += (size_t)n;
        size_t pos = 0;
        for (;;) {
            char *nl = memchr(buf + pos, '\n', have - pos);
            if (!nl)
                break;
            *nl = '\0';
            if (!skipping) {
                perfmap_line(&fresh, buf + pos);
                if (fresh.over) {
                    rc = FK_PERFMAP_TRUNCATED;
                    break;
                }
            }
            skipping = false;
            pos = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + pos, have - pos);
        have -= pos;
        if (have == FK_PERFMAP_LINE_MAX) {    /* no newline in a whole buffer */
            skipping = true;
            have = 0;
        }
    }
    free(buf);
    if (rc == FK_PERFMAP_ERROR) {
        fk_symtab_free(&fresh);
        return rc;
    }
    fk_symtab_sort(&fresh);
    fresh.budget = 0;
    fresh.over = false;
    fk_symtab_free(t);
    *t = fresh;
    return rc;
}

static bool symbol_in(Elf *e, Elf64_Word type, const char *name, uint64_t *vaddr, uint64_t *size)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize == 0)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (!data)
            continue;
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(data, (int)i, &sym))
                break;
            if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
                continue;
            const char *nm = elf_strptr(e, sh.sh_link, sym.st_name);
            if (nm && strcmp(nm, name) == 0) {
                *vaddr = sym.st_value;
                *size = sym.st_size;
                return true;
            }
        }
    }
    return false;
}

bool fk_elf_symbol(Elf *e, const char *name, uint64_t *vaddr, uint64_t *size)
{
    return symbol_in(e, SHT_SYMTAB, name, vaddr, size) ||
           symbol_in(e, SHT_DYNSYM, name, vaddr, size);
}

bool fk_elf_read_vaddr(Elf *e, uint64_t vaddr, void *buf, size_t len)
{
    size_t fsize = 0, phnum = 0;
    const char *raw = elf_rawfile(e, &fsize);
    if (!raw || elf_getphdrnum(e, &phnum) != 0)
        return false;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz ||
            len > ph.p_filesz - (vaddr - ph.p_vaddr))
            continue;
        uint64_t off = ph.p_offset + (vaddr - ph.p_vaddr);
        if (off > fsize || len > fsize - off)
            return false;
        memcpy(buf, raw + off, len);
        return true;
    }
    return false;
}
