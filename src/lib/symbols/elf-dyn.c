/* SPDX-License-Identifier: GPL-2.0-only */
/* libelf, libdw and liblzma, loaded with dlopen() when a capture starts
 * (fk_elf_preload) or the first time a symbol table, CFI or
 * .gnu_debugdata is read.
 *
 * Linked, they are loaded by every flamekit command: libdw's ~2700
 * relocations, its libraries (libelf, liblzma, libbz2) and their page
 * faults cost ~0.9 ms of start-up CPU (quiet machine), an eighth of a
 * `flamekit collapse` of 2 MB that never reads an ELF file. So these definitions of the entry
 * points symbols/ and unwind/ call forward to the real ones (flamekit
 * exports no symbols, so the libraries' own calls never reach these).
 * They are in their own archive (libfkelfdyn.a), which flamekit-portable
 * does not link: it has the libraries linked statically instead.
 * When a library is missing, fk_elf_preload says which package to
 * install, and the entry points fail as the library does on bad input (NULL,
 * -1): symbols stay unresolved, nothing is lost. */
#include "symbols/elf-dyn.h"
#include "util/dynlib.h"
#include "util/fk.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>

static struct fk_dynlib libelf = {
    .soname = "libelf.so.1", .who = "reading symbols", .package = "libelf1",
    .newer = "libelf1 0.186 or newer",
};
static struct fk_dynlib libdw = {
    .soname = "libdw.so.1", .who = "reading symbols and unwinding", .package = "libdw1",
    .newer = "libdw1 0.186 or newer",
};
static struct fk_dynlib liblzma = {
    .soname = "liblzma.so.5", .who = "reading compressed symbol tables (.gnu_debugdata)",
    .package = "liblzma5", .newer = "liblzma5 5.2 or newer",
};

static struct {
    Elf *(*begin)(int, Elf_Cmd, Elf *);
    int (*cntl)(Elf *, Elf_Cmd);
    int (*end)(Elf *);
    Elf_Data *(*getdata)(Elf_Scn *, Elf_Data *);
    char *(*getident)(Elf *, size_t *);
    int (*getphdrnum)(Elf *, size_t *);
    Elf_Scn *(*getscn)(Elf *, size_t);
    int (*getshdrstrndx)(Elf *, size_t *);
    Elf_Kind (*kind)(Elf *);
    Elf *(*memory)(char *, size_t);
    Elf_Scn *(*nextscn)(Elf *, Elf_Scn *);
    Elf_Data *(*rawdata)(Elf_Scn *, Elf_Data *);
    char *(*rawfile)(Elf *, size_t *);
    char *(*strptr)(Elf *, size_t, size_t);
    unsigned int (*version)(unsigned int);
    int (*getclass)(Elf *);
    GElf_Ehdr *(*getehdr)(Elf *, GElf_Ehdr *);
    GElf_Phdr *(*getphdr)(Elf *, int, GElf_Phdr *);
    GElf_Shdr *(*getshdr)(Elf_Scn *, GElf_Shdr *);
    GElf_Sym *(*getsym)(Elf_Data *, int, GElf_Sym *);
    GElf_Dyn *(*getdyn)(Elf_Data *, int, GElf_Dyn *);
} el;

static struct {
    Dwarf *(*begin_elf)(Elf *, Dwarf_Cmd, Elf_Scn *);
    int (*cfi_addrframe)(Dwarf_CFI *, Dwarf_Addr, Dwarf_Frame **);
    int (*cfi_end)(Dwarf_CFI *);
    int (*end)(Dwarf *);
    int (*frame_cfa)(Dwarf_Frame *, Dwarf_Op **, size_t *);
    int (*frame_info)(Dwarf_Frame *, Dwarf_Addr *, Dwarf_Addr *, bool *);
    int (*frame_register)(Dwarf_Frame *, int, Dwarf_Op *, Dwarf_Op **, size_t *);
    Dwarf_CFI *(*getcfi)(Dwarf *);
    Dwarf_CFI *(*getcfi_elf)(Elf *);
    int (*next_cfi)(const unsigned char *, Elf_Data *, bool, Dwarf_Off, Dwarf_Off *,
                    Dwarf_CFI_Entry *);
    ssize_t (*build_id)(Elf *, const void **);
    const char *(*debuglink)(Elf *, GElf_Word *);
} dw;

static struct {
    lzma_ret (*code)(lzma_stream *, lzma_action);
    void (*end)(lzma_stream *);
    lzma_ret (*stream_decoder)(lzma_stream *, uint64_t, uint32_t);
} xz;

#define SYM(prefix, name, slot) { prefix #name, (void **)&slot }

static bool elf_load_now(void)
{
    const struct fk_dynsym syms[] = {
        SYM("elf_", begin, el.begin), SYM("elf_", cntl, el.cntl), SYM("elf_", end, el.end),
        SYM("elf_", getdata, el.getdata), SYM("elf_", getident, el.getident),
        SYM("elf_", getphdrnum, el.getphdrnum), SYM("elf_", getscn, el.getscn),
        SYM("elf_", getshdrstrndx, el.getshdrstrndx), SYM("elf_", kind, el.kind),
        SYM("elf_", memory, el.memory), SYM("elf_", nextscn, el.nextscn),
        SYM("elf_", rawdata, el.rawdata), SYM("elf_", rawfile, el.rawfile),
        SYM("elf_", strptr, el.strptr), SYM("elf_", version, el.version),
        SYM("gelf_", getclass, el.getclass), SYM("gelf_", getehdr, el.getehdr),
        SYM("gelf_", getphdr, el.getphdr), SYM("gelf_", getshdr, el.getshdr),
        SYM("gelf_", getsym, el.getsym), SYM("gelf_", getdyn, el.getdyn),
    };
    return fk_dynlib_once(&libelf, syms, sizeof syms / sizeof syms[0], NULL, 0);
}

static bool dw_load_now(void)
{
    const struct fk_dynsym syms[] = {
        SYM("dwarf_", begin_elf, dw.begin_elf), SYM("dwarf_", cfi_addrframe, dw.cfi_addrframe),
        SYM("dwarf_", cfi_end, dw.cfi_end), SYM("dwarf_", end, dw.end),
        SYM("dwarf_", frame_cfa, dw.frame_cfa), SYM("dwarf_", frame_info, dw.frame_info),
        SYM("dwarf_", frame_register, dw.frame_register), SYM("dwarf_", getcfi, dw.getcfi),
        SYM("dwarf_", getcfi_elf, dw.getcfi_elf), SYM("dwarf_", next_cfi, dw.next_cfi),
        SYM("dwelf_elf_gnu_", build_id, dw.build_id),
        SYM("dwelf_elf_gnu_", debuglink, dw.debuglink),
    };
    return fk_dynlib_once(&libdw, syms, sizeof syms / sizeof syms[0], NULL, 0);
}

static bool xz_load_now(void)
{
    const struct fk_dynsym syms[] = {
        SYM("lzma_", code, xz.code), SYM("lzma_", end, xz.end),
        SYM("lzma_", stream_decoder, xz.stream_decoder),
    };
    return fk_dynlib_once(&liblzma, syms, sizeof syms / sizeof syms[0], NULL, 0);
}

/* Loaded already (the entry points' path: one test), or load now. */
static inline bool elf_load(void) { return libelf.state > 0 || elf_load_now(); }
static inline bool dw_load(void) { return libdw.state > 0 || dw_load_now(); }
static inline bool xz_load(void) { return liblzma.state > 0 || xz_load_now(); }

bool fk_elf_preload(fk_warn_fn warn, void *warn_ctx)
{
    bool ok = true;
    struct fk_dynlib *libs[] = { &libelf, &libdw, &liblzma };
    bool loaded[] = { elf_load(), dw_load(), xz_load() };
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (!loaded[i]) {
            fk_warn_to(warn, warn_ctx, "%s", libs[i]->why);
            ok = false;
        }
    return ok;
}

/* libelf: every descriptor comes from elf_begin or elf_memory, so the
 * others are only reached once it is loaded. */
unsigned int elf_version(unsigned int v) { return elf_load() ? el.version(v) : EV_NONE; }
Elf *elf_begin(int fd, Elf_Cmd cmd, Elf *ref) { return elf_load() ? el.begin(fd, cmd, ref) : NULL; }
Elf *elf_memory(char *image, size_t size) { return elf_load() ? el.memory(image, size) : NULL; }
int elf_cntl(Elf *e, Elf_Cmd cmd) { return elf_load() ? el.cntl(e, cmd) : -1; }
int elf_end(Elf *e) { return elf_load() ? el.end(e) : 0; }
Elf_Data *elf_getdata(Elf_Scn *s, Elf_Data *d) { return elf_load() ? el.getdata(s, d) : NULL; }
char *elf_getident(Elf *e, size_t *n) { return elf_load() ? el.getident(e, n) : NULL; }
int elf_getphdrnum(Elf *e, size_t *n) { return elf_load() ? el.getphdrnum(e, n) : -1; }
Elf_Scn *elf_getscn(Elf *e, size_t i) { return elf_load() ? el.getscn(e, i) : NULL; }
int elf_getshdrstrndx(Elf *e, size_t *n) { return elf_load() ? el.getshdrstrndx(e, n) : -1; }
Elf_Kind elf_kind(Elf *e) { return elf_load() ? el.kind(e) : ELF_K_NONE; }
Elf_Scn *elf_nextscn(Elf *e, Elf_Scn *s) { return elf_load() ? el.nextscn(e, s) : NULL; }
Elf_Data *elf_rawdata(Elf_Scn *s, Elf_Data *d) { return elf_load() ? el.rawdata(s, d) : NULL; }
char *elf_rawfile(Elf *e, size_t *n) { return elf_load() ? el.rawfile(e, n) : NULL; }
char *elf_strptr(Elf *e, size_t i, size_t off) { return elf_load() ? el.strptr(e, i, off) : NULL; }
int gelf_getclass(Elf *e) { return elf_load() ? el.getclass(e) : ELFCLASSNONE; }
GElf_Ehdr *gelf_getehdr(Elf *e, GElf_Ehdr *h) { return elf_load() ? el.getehdr(e, h) : NULL; }
GElf_Phdr *gelf_getphdr(Elf *e, int i, GElf_Phdr *h) { return elf_load() ? el.getphdr(e, i, h) : NULL; }
GElf_Shdr *gelf_getshdr(Elf_Scn *s, GElf_Shdr *h) { return elf_load() ? el.getshdr(s, h) : NULL; }
GElf_Sym *gelf_getsym(Elf_Data *d, int i, GElf_Sym *s) { return elf_load() ? el.getsym(d, i, s) : NULL; }
GElf_Dyn *gelf_getdyn(Elf_Data *d, int i, GElf_Dyn *y) { return elf_load() ? el.getdyn(d, i, y) : NULL; }

/* libdw */
Dwarf *dwarf_begin_elf(Elf *e, Dwarf_Cmd cmd, Elf_Scn *g)
{
    return dw_load() ? dw.begin_elf(e, cmd, g) : NULL;
}
int dwarf_end(Dwarf *d) { return dw_load() ? dw.end(d) : -1; }
Dwarf_CFI *dwarf_getcfi(Dwarf *d) { return dw_load() ? dw.getcfi(d) : NULL; }
Dwarf_CFI *dwarf_getcfi_elf(Elf *e) { return dw_load() ? dw.getcfi_elf(e) : NULL; }
int dwarf_cfi_end(Dwarf_CFI *c) { return dw_load() ? dw.cfi_end(c) : -1; }
int dwarf_cfi_addrframe(Dwarf_CFI *c, Dwarf_Addr a, Dwarf_Frame **f)
{
    return dw_load() ? dw.cfi_addrframe(c, a, f) : -1;
}
int dwarf_frame_cfa(Dwarf_Frame *f, Dwarf_Op **ops, size_t *n)
{
    return dw_load() ? dw.frame_cfa(f, ops, n) : -1;
}
int dwarf_frame_info(Dwarf_Frame *f, Dwarf_Addr *start, Dwarf_Addr *end, bool *sig)
{
    return dw_load() ? dw.frame_info(f, start, end, sig) : -1;
}
int dwarf_frame_register(Dwarf_Frame *f, int reg, Dwarf_Op ops_mem[3], Dwarf_Op **ops, size_t *n)
{
    return dw_load() ? dw.frame_register(f, reg, ops_mem, ops, n) : -1;
}
int dwarf_next_cfi(const unsigned char e_ident[], Elf_Data *d, bool eh, Dwarf_Off off,
                   Dwarf_Off *next, Dwarf_CFI_Entry *entry)
{
    return dw_load() ? dw.next_cfi(e_ident, d, eh, off, next, entry) : -1;
}
ssize_t dwelf_elf_gnu_build_id(Elf *e, const void **id)
{
    return dw_load() ? dw.build_id(e, id) : -1;
}
const char *dwelf_elf_gnu_debuglink(Elf *e, GElf_Word *crc)
{
    return dw_load() ? dw.debuglink(e, crc) : NULL;
}

/* liblzma: a stream is only decoded after lzma_stream_decoder succeeded. */
lzma_ret lzma_stream_decoder(lzma_stream *s, uint64_t memlimit, uint32_t flags)
{
    return xz_load() ? xz.stream_decoder(s, memlimit, flags) : LZMA_MEM_ERROR;
}
lzma_ret lzma_code(lzma_stream *s, lzma_action a) { return xz_load() ? xz.code(s, a) : LZMA_PROG_ERROR; }
void lzma_end(lzma_stream *s)
{
    if (xz_load())
        xz.end(s);
}
