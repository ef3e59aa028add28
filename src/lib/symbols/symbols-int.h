/* SPDX-License-Identifier: GPL-2.0-only */
/* Private structures shared by the symbols stage's files. */
#ifndef FK_SYMBOLS_INT_H
#define FK_SYMBOLS_INT_H

#include "symbols/symbols.h"

#include <libelf.h>
#include <sys/types.h>

enum dso_kind { DSO_UNKNOWN, DSO_KERNEL, DSO_FILE, DSO_ANON, DSO_VDSO, DSO_SPECIAL };

/* Reserved DSO indices. */
enum { DSO_IDX_UNKNOWN = 0, DSO_IDX_KERNEL = 1 };

struct fk_sym {
    uint64_t addr;
    uint32_t size;      /* 0: unknown, reaches to the next symbol */
    uint32_t name;      /* offset in the owner's string pool */
};

/* A sorted symbol table with its names. */
struct fk_symtab {
    struct fk_sym *syms;
    size_t n, cap;
    struct fk_buf strs;
};

struct load_seg { uint64_t off, filesz, vaddr; };

/* A function's extent from its FDE: names stripped code by its start. */
struct fde_range {
    uint64_t start;
    uint32_t len;
};

struct dso {
    enum dso_kind kind;
    char *path;             /* as mapped, " (deleted)" stripped */
    char *root;             /* "/proc/PID/root" it was opened through, or NULL */
    uint64_t dev, ino, key;
    unsigned char build_id[20];
    size_t build_id_len;
    int fd;                 /* pinned file until loaded; -1 */
    bool loaded, elf_ok, via_map_files, deleted;
    pid_t pid;              /* DSO_ANON: the process owning the region */
    pid_t nspid;            /* its pid inside its own pid namespace (perf map name) */
    bool jit_read, jit_same_root;
    struct load_seg *loads;
    size_t nloads;
    struct fk_symtab st;
    struct fde_range *fdes; /* sorted by start; only when st lacks local symbols */
    size_t nfdes;
};

/* symtab helpers (symbols-elf.c) */
void fk_symtab_add(struct fk_symtab *t, uint64_t addr, uint64_t size, const char *name);
void fk_symtab_sort(struct fk_symtab *t);
const struct fk_sym *fk_symtab_find(const struct fk_symtab *t, uint64_t addr, uint64_t slack);
void fk_symtab_free(struct fk_symtab *t);
static inline const char *fk_symtab_name(const struct fk_symtab *t, const struct fk_sym *y)
{
    return t->strs.data + y->name;
}

/* Read the ELF behind d->fd (program headers and symbols), then close it. */
void fk_dso_load_elf(struct dso *d);
/* Function ranges of d's ELF from its .eh_frame (else .debug_frame) FDEs,
 * into d->fdes; and the range covering vaddr, or NULL. */
void fk_dso_load_fde_names(struct dso *d, Elf *e);
const struct fde_range *fk_dso_fde_find(const struct dso *d, uint64_t vaddr);
/* Symbols from .gnu_debugdata (xz-compressed ELF) plus .dynsym; false
 * (nothing added) when there is none or it is unreadable. */
bool fk_dso_load_minidebuginfo(struct dso *d, Elf *e);
/* Symbols of this process's vDSO (same kernel: same image for 64-bit tasks). */
void fk_vdso_load(struct fk_symtab *t);
/* /proc/kallsyms; returns false when addresses are hidden. */
bool fk_kallsyms_load(struct fk_symtab *t, bool *hidden);
/* perf-PID.map at path; false if it could not be opened. */
bool fk_perfmap_load(struct fk_symtab *t, const char *path);

#endif
