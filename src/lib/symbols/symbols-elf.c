/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbol sources: ELF files (symtab, dynsym, debug files), the vDSO,
 * /proc/kallsyms and perf-PID.map files. */
#include "symbols/symbols-int.h"
#include "unwind/gopclntab.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

void fk_symtab_add(struct fk_symtab *t, uint64_t addr, uint64_t size, const char *name)
{
    t->syms = fk_grow(t->syms, &t->cap, t->n + 1, sizeof *t->syms);
    t->syms[t->n].addr = addr;
    t->syms[t->n].size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    t->syms[t->n].name = (uint32_t)t->strs.len;
    fk_buf_add(&t->strs, name, strlen(name) + 1);
    t->n++;
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

void fk_symtab_sort(struct fk_symtab *t)
{
    if (t->n == 0)
        return;
    qsort(t->syms, t->n, sizeof *t->syms, sym_cmp);
    size_t w = 1;   /* one symbol per address */
    for (size_t r = 1; r < t->n; r++)
        if (t->syms[r].addr != t->syms[w - 1].addr)
            t->syms[w++] = t->syms[r];
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
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->syms[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
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

/* Function symbols of one symbol-table section kind; returns how many. */
static size_t read_syms(Elf *e, Elf64_Word type, struct fk_symtab *t)
{
    size_t added = 0;
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
            int st = GELF_ST_TYPE(sym.st_info);
            if ((st != STT_FUNC && st != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
                sym.st_value == 0)
                continue;
            const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
            if (!name || !*name)
                continue;
            fk_symtab_add(t, sym.st_value, sym.st_size, name);
            added++;
        }
    }
    return added;
}

static bool has_section(Elf *e, Elf64_Word type)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && sh.sh_type == type && sh.sh_size > 0)
            return true;
    }
    return false;
}

/* Try one candidate debug file: it must carry a .symtab and, when both
 * sides have one, the same build-id. */
static bool try_debug_file(struct dso *d, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = false;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (e && elf_kind(e) == ELF_K_ELF && has_section(e, SHT_SYMTAB)) {
        const void *bid;
        ssize_t n = dwelf_elf_gnu_build_id(e, &bid);
        if (d->build_id_len == 0 || n <= 0 ||
            ((size_t)n == d->build_id_len && memcmp(bid, d->build_id, (size_t)n) == 0))
            ok = read_syms(e, SHT_SYMTAB, &d->st) > 0;
    }
    if (e)
        elf_end(e);
    close(fd);
    return ok;
}

/* Debug files: /usr/lib/debug/.build-id/xx/rest.debug, then .gnu_debuglink
 * beside the file, in .debug/ and under /usr/lib/debug; inside the target's
 * root first, then on the host. */
static bool load_debug_file(struct dso *d, Elf *e)
{
    const char *roots[2] = { d->root ? d->root : "", "" };
    int nroots = d->root ? 2 : 1;
    struct fk_buf p = FK_BUF_INIT;
    bool ok = false;
    for (int r = 0; r < nroots && !ok && d->build_id_len > 1; r++) {
        fk_buf_reset(&p);
        fk_buf_printf(&p, "%s/usr/lib/debug/.build-id/%02x/", roots[r], d->build_id[0]);
        for (size_t i = 1; i < d->build_id_len; i++)
            fk_buf_printf(&p, "%02x", d->build_id[i]);
        fk_buf_adds(&p, ".debug");
        ok = try_debug_file(d, fk_buf_cstr(&p));
    }
    GElf_Word crc;
    const char *link = ok ? NULL : dwelf_elf_gnu_debuglink(e, &crc);
    if (link && !strchr(link, '/')) {
        const char *slash = strrchr(d->path, '/');
        int dirlen = slash ? (int)(slash - d->path) : 0;
        for (int r = 0; r < nroots && !ok; r++) {
            static const char *const subdirs[3][2] = { { "", "" }, { "", "/.debug" },
                                                        { "/usr/lib/debug", "" } };
            for (int f = 0; f < 3 && !ok; f++) {
                fk_buf_reset(&p);
                fk_buf_printf(&p, "%s%s%.*s%s/%s", roots[r], subdirs[f][0], dirlen, d->path,
                              subdirs[f][1], link);
                if (strcmp(fk_buf_cstr(&p), d->path) != 0)
                    ok = try_debug_file(d, p.data);
            }
        }
    }
    fk_buf_free(&p);
    return ok;
}

/* Stripped Go binaries (-ldflags=-s) keep their function table in
 * .gopclntab (unwind/gopclntab.h). */
static size_t read_gopclntab(Elf *e, struct fk_symtab *t)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        return 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        const char *name;
        if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
            strcmp(name, ".gopclntab") != 0)
            continue;
        Elf_Data *data = elf_rawdata(scn, NULL);
        struct fk_gopcln g;
        if (!data || !fk_gopcln_open(&g, data->d_buf, data->d_size))
            return 0;
        size_t added = 0;
        for (uint64_t i = 0; i < g.nfunc; i++) {
            uint64_t entry, end, func;
            const char *fname;
            if (!fk_gopcln_func(&g, i, &entry, &end, &func) || !(fname = fk_gopcln_name(&g, func)))
                continue;
            fk_symtab_add(t, entry, end - entry, fname);
            added++;
        }
        return added;
    }
    return 0;
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

void fk_dso_load_elf(struct dso *d, bool keep_elf)
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
        if (!(has_section(e, SHT_SYMTAB) && read_syms(e, SHT_SYMTAB, &d->st) > 0) &&
            !load_debug_file(d, e) && read_gopclntab(e, &d->st) == 0)
            read_syms(e, SHT_DYNSYM, &d->st);
        fk_symtab_sort(&d->st);
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

bool fk_kallsyms_load(struct fk_symtab *t, bool *hidden)
{
    FILE *lr = fopen("/proc/kallsyms", "re");
    *hidden = false;
    if (!lr)
        return false;
    char *line = NULL;
    size_t cap = 0;
    uint64_t nonzero = 0, total = 0;
    while (getline(&line, &cap, lr) > 0) {
        line[strcspn(line, "\n")] = 0;
        char *end;
        uint64_t addr = strtoull(line, &end, 16);
        if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
            continue;
        char type = end[1];
        const char *name = end + 3;
        total++;
        if (addr)
            nonzero++;
        if (type != 't' && type != 'T' && type != 'w' && type != 'W')
            continue;
        /* "name\t[module]": keep the name */
        size_t nlen = strcspn(name, "\t ");
        char tmp[512];
        if (nlen >= sizeof tmp)
            nlen = sizeof tmp - 1;
        memcpy(tmp, name, nlen);
        tmp[nlen] = 0;
        fk_symtab_add(t, addr, 0, tmp);
    }
    free(line);
    fclose(lr);
    if (total > 0 && nonzero == 0) {
        *hidden = true;
        fk_symtab_free(t);
        return false;
    }
    fk_symtab_sort(t);
    return true;
}

bool fk_perfmap_load(struct fk_symtab *t, const char *path)
{
    FILE *lr = fopen(path, "re");
    if (!lr)
        return false;
    struct fk_symtab fresh = { 0 };
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, lr) > 0) {
        line[strcspn(line, "\n")] = 0;
        char *end, *end2;
        uint64_t start = strtoull(line, &end, 16);
        if (end == line || *end != ' ')
            continue;
        uint64_t size = strtoull(end + 1, &end2, 16);
        if (end2 == end + 1 || *end2 != ' ' || !end2[1])
            continue;
        fk_symtab_add(&fresh, start, size ? size : 1, end2 + 1);
    }
    free(line);
    fclose(lr);
    fk_symtab_sort(&fresh);
    fk_symtab_free(t);
    *t = fresh;
    return true;
}
