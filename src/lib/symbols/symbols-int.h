/* SPDX-License-Identifier: GPL-2.0-only */
/* Private structures shared by the symbols stage's files. */
#ifndef FK_SYMBOLS_INT_H
#define FK_SYMBOLS_INT_H

#include "symbols/debuginfod.h"
#include "symbols/symbols.h"
#include "util/hindex.h"

#include <libelf.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

enum dso_kind { DSO_UNKNOWN, DSO_KERNEL, DSO_FILE, DSO_ANON, DSO_VDSO, DSO_SPECIAL, DSO_NAMED };

/* Reserved DSO indices. */
enum { DSO_IDX_UNKNOWN = 0, DSO_IDX_KERNEL = 1 };

struct fk_sym {
    uint64_t addr;
    uint32_t size;      /* 0: unknown, reaches to the next symbol */
    uint32_t name;      /* offset in the owner's string pool */
};

/* A sorted symbol table with its names. Names are interned while it is
 * filled (equal names stored once: a hostile file may point thousands of
 * symbols at one long string) and cut at FK_SYM_NAME_MAX bytes. A table
 * filled from what a process controls has a budget: every byte it would
 * hold, and what is read to fill it (transient), counted before it is
 * allocated; an add past it is refused and marks the table over. */
#define FK_SYM_NAME_MAX 4096
struct fk_symtab {
    struct fk_sym *syms;
    size_t n, cap;
    struct fk_buf strs;
    struct fk_hindex names;     /* while filling: fk_hash(name) -> its offset in strs */
    size_t budget;              /* bytes it may take while filled; 0: no limit */
    size_t transient;           /* bytes read to fill it, held now (counted in budget) */
    bool over;                  /* an add was refused for the budget */
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
    const char *suffix;     /* DSO_NAMED: the annotation its names get ("_[p]") */
    enum fk_frame_kind named_kind;  /* DSO_NAMED: what its frames are */
    pid_t root_pid;         /* opened inside this process's root (not ours), or 0 */
    uint64_t root_dev, root_ino;    /* that root, to tell a reused pid */
    uid_t uid;              /* owner of the file: debug files must be its or root's */
    uint64_t dev, ino, key;
    unsigned char build_id[20];
    size_t build_id_len;
    int fd;                 /* DSO_FILE: pinned file until loaded; DSO_ANON: the
                               process's /tmp when it is not ours; -1 */
    Elf *elf;               /* DSO_FILE: the pinned file mapped (fk_dso_elf), kept
                               while its CFI is used */
    struct fk_cfi *cfi;     /* unwind rows (symbols/cfi.h), made on first unwind */
    bool cfi_tried;
    bool loaded, elf_ok, via_map_files, deleted;
    pid_t pid;              /* DSO_ANON: the process owning the region */
    pid_t nspid;            /* its pid inside its own pid namespace (perf map name) */
    /* UNKNOWN: gone before we saw it; NONE: its /tmp is no directory of its root */
    enum { JIT_TMP_UNKNOWN, JIT_TMP_OURS, JIT_TMP_OTHER, JIT_TMP_NONE } jit_tmp;
    uid_t uids[2];          /* DSO_ANON: the process's real and effective uid */
    size_t nuids;           /* (0: unknown, then only a map owned by root is read) */
    unsigned long long start_ns; /* DSO_ANON: the process's start (boot ns); 0: unknown */
    bool sampled;           /* a sample fell in it (DSO_ANON: map re-read at the end) */
    bool map_warned;        /* DSO_ANON: its map was refused or cut (said once) */
    struct load_seg *loads;
    size_t nloads;
    struct fk_symtab st;
    char *debug_path;       /* the separate debug file its symbols came from, or NULL */
    bool debug_in_root;     /* debug_path is inside root_pid's root (else ours) */
    uint64_t debug_dev, debug_ino;
    struct fde_range *fdes; /* sorted by start; only when st lacks local symbols */
    size_t nfdes;
    bool over_budget;       /* its symbols would pass their memory budget: none read */
};

/* symtab helpers (symbols-elf.c) */
/* False (nothing added, t->over set) when it would pass t's budget. */
bool fk_symtab_add(struct fk_symtab *t, uint64_t addr, uint64_t size, const char *name);
/* Whether n more bytes held elsewhere for the table fit its budget now. */
bool fk_symtab_fits(struct fk_symtab *t, size_t n);
/* Bytes held (syms, names, the interning index). */
size_t fk_symtab_bytes(const struct fk_symtab *t);
/* Sorts, one symbol per address, drops the interning index and slack: the
 * table is final. */
void fk_symtab_sort(struct fk_symtab *t);
const struct fk_sym *fk_symtab_find(const struct fk_symtab *t, uint64_t addr, uint64_t slack);
void fk_symtab_free(struct fk_symtab *t);
static inline const char *fk_symtab_name(const struct fk_symtab *t, const struct fk_sym *y)
{
    return t->strs.data + y->name;
}

/* The root directory d's file was found in (root_pid's, checked to be the
 * same directory: pids are reused; ours when root_pid is 0), O_PATH; -1
 * when it is gone. */
int fk_dso_root_open(const struct dso *d);

/* The DSO's file as a read-only ELF mapping (made from d->fd once, which
 * stays open); NULL if it is not an ELF file or was never pinned. */
Elf *fk_dso_elf(struct dso *d);
/* Read the ELF behind d->fd (program headers and symbols), then close the
 * fd; the mapping is dropped too unless keep_elf or its CFI uses it.
 * Symbols: .symtab, else a local debug file, MiniDebugInfo, .gopclntab, a
 * debug file from debuginfod (dbg may be NULL), else .dynsym + FDE ranges.
 * Memory: what one source's table (and what is read to fill it) may take
 * is the smaller of `budget` (0: no limit) and FK_SYM_FILE_BUDGET of the
 * file it is read from; a source over it ends the load with no symbols
 * and d->over_budget set (frames are named by file and offset). */
#define FK_SYM_FILE_BUDGET(size) (4 * (size_t)(size) + ((size_t)1 << 20))
void fk_dso_load_elf(struct dso *d, struct fk_debuginfod *dbg, bool keep_elf, size_t budget);
/* A symbol of any type by name: .symtab, else .dynsym (fk_sym_dso_lookup). */
bool fk_elf_symbol(Elf *e, const char *name, uint64_t *vaddr, uint64_t *size);
/* len bytes at vaddr from the file part of a PT_LOAD segment. */
bool fk_elf_read_vaddr(Elf *e, uint64_t vaddr, void *buf, size_t len);
/* Our own vDSO image (same kernel: the same as every 64-bit task's). */
Elf *fk_vdso_elf(void);
/* Function ranges of d's ELF from its .eh_frame (else .debug_frame) FDEs,
 * into d->fdes; and the range covering vaddr, or NULL. */
void fk_dso_load_fde_names(struct dso *d, Elf *e);
const struct fde_range *fk_dso_fde_find(const struct dso *d, uint64_t vaddr);
/* Symbols from .gnu_debugdata (xz-compressed ELF) plus .dynsym, within
 * d->st's budget (the decoder within share, SIZE_MAX: no limit); false
 * (nothing added) when there is none, it is unreadable or over budget
 * (d->st.over then). */
bool fk_dso_load_minidebuginfo(struct dso *d, Elf *e, size_t share);
/* Symbols of this process's vDSO (same kernel: same image for 64-bit tasks). */
void fk_vdso_load(struct fk_symtab *t);
/* What a full read of /proc/kallsyms tells the cache (kcache.c): the
 * core kernel's text symbols span [lo, hi], and whether every other one
 * (modules, BPF, trampolines) lies outside that span; the hash of the
 * file's first FK_KSYMS_HEAD_LINES lines (0: fewer). */
#define FK_KSYMS_HEAD_LINES 64
struct fk_kallsyms_info {
    uint64_t lo, hi, head_hash;
    bool core_apart;
};
/* /proc/kallsyms; returns false when addresses are hidden. info may be NULL. */
bool fk_kallsyms_load(struct fk_symtab *t, bool *hidden, struct fk_kallsyms_info *info);
/* fk_hash of text's first FK_KSYMS_HEAD_LINES lines, *used their length;
 * 0 (and *used 0) when text holds fewer. */
uint64_t fk_kallsyms_head_hash(const char *text, size_t len, size_t *used);
/* The core kernel's table saved by an earlier capture of this boot (see
 * kcache.c for when it is trusted) into t, its span in [*lo, *hi]; false:
 * none usable, read /proc/kallsyms. */
bool fk_kcache_load(struct fk_symtab *t, uint64_t *lo, uint64_t *hi);
/* Save the core part of a full, sorted table for the next captures. */
void fk_kcache_store(const struct fk_symtab *full, const struct fk_kallsyms_info *info);
/* A perf-PID.map (fd stays the caller's) into t, replacing what it held.
 * Bounded: at most max_read bytes are read, lines of FK_PERFMAP_LINE_MAX
 * bytes or more are skipped, and the table (with the read buffer) stops
 * growing before it would pass max_mem bytes: TRUNCATED then, with the
 * symbols read so far. ERROR (a read error) leaves t as it was. */
#define FK_PERFMAP_LINE_MAX 4096
enum fk_perfmap_rc { FK_PERFMAP_OK, FK_PERFMAP_TRUNCATED, FK_PERFMAP_ERROR };
enum fk_perfmap_rc fk_perfmap_load(struct fk_symtab *t, int fd, uint64_t max_read, size_t max_mem);

#endif
