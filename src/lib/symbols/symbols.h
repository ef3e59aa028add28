/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbolization for captured stacks.
 *
 * Two phases, so processes that exit (or exec, or have their binary deleted)
 * during a capture still symbolize:
 *   1. at sample time, fk_sym_locate() turns (pid, ip) into a stable location
 *      (a DSO in our table + an address relative to it), using the address
 *      space as it was at that moment (seeded from /proc, then kept current
 *      by the MMAP2/COMM/FORK/EXIT side-band records);
 *   2. after the capture, fk_sym_name() names each unique location once.
 * DSOs are identified by (dev, inode, build-id/path); their file is opened at
 * first sight (through /proc/PID/map_files or /proc/PID/root for containers)
 * so a later package upgrade or deletion does not lose it. */
#ifndef FK_SYMBOLS_H
#define FK_SYMBOLS_H

#include "util/buf.h"
#include "util/fk.h"

#include <sys/types.h>

struct fk_symbolizer;
struct fk_pins;

struct fk_sym_opts {
    bool kernel;        /* load /proc/kallsyms + modules */
    bool jit;           /* read /tmp/perf-PID.map (inside the target's root) */
    bool annotate;      /* suffix _[k] for kernel and _[j] for JIT frames */
    bool no_map_files;  /* tests: never open through /proc/PID/map_files */
    bool no_demangle;   /* keep C++ names mangled (default: demangled like perf,
                           when libstdc++.so.6 can be loaded at run time) */
    const char *debuginfod_urls;    /* debuginfod servers (DEBUGINFOD_URLS syntax) to
                                       fetch missing debug files from; NULL or "": never */
    uint32_t debuginfod_budget_ms;  /* all fetches together (0: FK_DEBUGINFOD_BUDGET_MS) */
    uint32_t debuginfod_request_ms; /* each fetch (0: FK_DEBUGINFOD_REQUEST_MS) */
    struct fk_pins *pins;   /* files and JIT /tmp directories pinned as the
                               records left the rings (symbols/pins.h), taken
                               when the records are handled; NULL: none */
    uint64_t max_bytes;     /* --max-memory: symbol tables from files the targets
                               control (binaries, debug files, perf maps) are read
                               only within half of it and what fk_sym_set_other_bytes
                               leaves; 0: no limit */
    fk_warn_fn warn;        /* what was skipped and why (kernel symbols hidden, a
                               perf map refused, a budget spent, a library
                               missing); NULL: none */
    void *warn_ctx;
};

#define FK_DEBUGINFOD_BUDGET_MS 30000
#define FK_DEBUGINFOD_REQUEST_MS 10000

/* Location of one frame: which DSO and where in it. */
struct fk_loc {
    uint32_t dso;       /* index in the symbolizer's DSO table; 0 = unknown */
    uint64_t addr;      /* file offset in the DSO, or the absolute address (kernel, JIT) */
};

enum fk_frame_kind { FK_FRAME_UNKNOWN, FK_FRAME_USER, FK_FRAME_KERNEL, FK_FRAME_JIT,
                     FK_FRAME_PYTHON };

struct fk_symbolizer *fk_sym_new(const struct fk_sym_opts *opts);
void fk_sym_free(struct fk_symbolizer *s);

/* Seed processes that exist now: one (all its threads), or every process. */
void fk_sym_scan_pid(struct fk_symbolizer *s, pid_t pid);
void fk_sym_scan_all(struct fk_symbolizer *s);

/* Side-band records, in ring order. */
void fk_sym_comm(struct fk_symbolizer *s, pid_t pid, pid_t tid, const char *comm, bool exec);
void fk_sym_fork(struct fk_symbolizer *s, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid);
void fk_sym_exit(struct fk_symbolizer *s, pid_t pid, pid_t tid);
void fk_sym_mmap(struct fk_symbolizer *s, pid_t pid, uint64_t start, uint64_t len,
                 uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino,
                 uint32_t prot, uint32_t flags, const char *filename,
                 const unsigned char *build_id, size_t build_id_len);

/* Phase 1. kernel says the ip came from kernel context (PERF_CONTEXT_KERNEL). */
struct fk_loc fk_sym_locate(struct fk_symbolizer *s, pid_t pid, uint64_t ip, bool kernel);
/* A frame named by the capture itself, not by an address: an interpreter's
 * function (unwind/python.c). label names the group in structured output
 * ("[python]"); suffix is the annotation its frames get when annotating
 * ("_[p]"; a static string). One location per (label, name), named as
 * given; names are charged to the symbolizer's bytes. */
struct fk_loc fk_sym_named(struct fk_symbolizer *s, const char *label, const char *suffix,
                           enum fk_frame_kind kind, const char *name, size_t len);
/* A location for a synthetic frame, e.g. "[truncated]" (named as given). */
struct fk_loc fk_sym_special(struct fk_symbolizer *s, const char *name);

/* For the unwinder (unwind/unwind.h): the CFI of the code at ip in pid's
 * address space as fk_sym_locate sees it, with ip translated into the
 * binary's ELF address space (*vaddr). *mapped is false when ip is in no
 * executable mapping. NULL when the code has no CFI (anonymous/JIT memory,
 * [vsyscall], a file that could not be kept open). The CFI is parsed once
 * per DSO -- a DSO is one file (dev, inode, build-id), so a binary
 * replaced on disk gets its own -- and lives until the capture ends (the
 * first fk_sym_name). */
struct fk_cfi;
struct fk_cfi *fk_sym_cfi_at(struct fk_symbolizer *s, pid_t pid, uint64_t ip, uint64_t *vaddr,
                             bool *mapped);

/* Current command name of a thread (falls back to the process's, then "[unknown]"). */
const char *fk_sym_comm_of(struct fk_symbolizer *s, pid_t pid, pid_t tid);

/* Not thread-safe: call everything from one thread.
 * fk_sym_locate's addr is private to the symbolizer (a file offset for ELF
 * DSOs); only pass it back to fk_sym_name. Callchain return addresses are
 * looked up as given (callers may pass ip - 1 for non-leaf frames).
 * The first fk_sym_name call ends the capture phase: perf maps of processes
 * still alive are read again then. */

/* Phase 2: append the frame's name to out (e.g. "do_work", "[libfoo.so+0x1a2b]",
 * "schedule_[k]") and return its kind. Never appends nothing. Code without a
 * symbol is named by its file and the ELF address of the function holding it
 * (from the FDE covering it), or of the address itself when no FDE does. */
enum fk_frame_kind fk_sym_name(struct fk_symbolizer *s, struct fk_loc loc, struct fk_buf *out);

/* Start reading /proc/kallsyms now, during the capture, on a thread of its
 * own, rather than at the first kernel frame named: ~0.1 s less between
 * the window's end and the files, and on a loaded host the seconds it may
 * take are not the engine thread's (its samples, and the Python chains
 * read as they leave the rings, would wait). The first kernel name waits
 * for it. */
void fk_sym_preload_kernel(struct fk_symbolizer *s);
/* The bytes the kernel's symbol table takes in a capture (what the preload
 * reads: the core kernel's table from the cache, else /proc/kallsyms in
 * full), measured by reading it now (~5 ms from the cache, ~40 ms without);
 * 0 when the kernel hides its addresses. */
uint64_t fk_sym_kernel_bytes(void);
/* In the capture window: read the symbols of DSOs that samples fell in,
 * until budget_ns has passed (at least one DSO per call), so naming after
 * the window only formats. Returns how many were read. */
size_t fk_sym_preload(struct fk_symbolizer *s, uint64_t budget_ns);

/* The DSO behind a location, for structured output (pprof mappings). Call
 * it after fk_sym_name named a location in that DSO (its file is read then,
 * build-id included). False for the unknown DSO. */
struct fk_sym_dso {
    const char *path;       /* file as mapped, or "[kernel.kallsyms]", "[vdso]",
                               "[jit pid N]", "[vsyscall]"... */
    const unsigned char *build_id;
    size_t build_id_len;
    enum fk_frame_kind kind;
    bool file_offsets;      /* its locations' addr are file offsets, not addresses */
    bool deleted;           /* the path was gone or replaced: named from a kept file */
};
bool fk_sym_dso_info(struct fk_symbolizer *s, uint32_t dso, struct fk_sym_dso *out);

/* Counters for the capture summary/metadata. */
struct fk_sym_stats {
    uint64_t dsos, processes, locate_unknown, names_unresolved;
    uint64_t names_function_start;  /* of those, named by the start of the function
                                       holding them (FDE), "[lib+0xSTART]" */
    uint64_t deleted_files_kept;    /* DSOs named from a kept file whose path was gone or replaced */
    uint64_t files_shrunk;          /* reads through a mapping ended by SIGBUS (util/busguard.h) */
    uint64_t files_over_budget;     /* files whose symbols were skipped: over their memory
                                       budget (symbols-int.h, FK_SYM_FILE_BUDGET) */
    /* where the kernel's names came from: "cache" (the core kernel's table
     * saved by an earlier capture of this boot, symbols/kcache.c),
     * "kallsyms" (read now), "hidden" (addresses hidden from us), "none" (no kernel frame named) */
    const char *kernel_table;
    bool debuginfod;                /* asked for ($DEBUGINFOD_URLS, --debuginfod) */
    uint64_t debuginfod_found, debuginfod_failed, debuginfod_timed_out;
    uint64_t debuginfod_skipped;    /* not asked: the time budget was spent */
    uint64_t debuginfod_ms;
};
void fk_sym_stats(const struct fk_symbolizer *s, struct fk_sym_stats *out);
/* The separate debug file a file DSO's symbols came from (debug directories,
 * .gnu_debuglink or debuginfod), opened read-only for the caller, who closes
 * it: e.g. for its .debug_frame. Reads the DSO's symbols first if that was
 * not done yet. -1 when its symbols came from the binary itself (which then
 * carries its own .debug_frame, if any) or no debug file was found. */
int fk_sym_debug_file(struct fk_symbolizer *s, uint32_t dso);

/* ---- for readers of a process's runtime (unwind/python.c) ----
 * They find an interpreter's tables through its binary's symbols, then read
 * the process's memory themselves. */

/* The file DSOs with an executable mapping in pid whose path want()
 * accepts (want(NULL-terminated path)), each once, with its load bias:
 * ELF vaddr + bias = address in pid. Returns how many were written (at
 * most max). */
struct fk_sym_file {
    uint32_t dso;
    const char *path;       /* valid until fk_sym_free */
    uint64_t bias;
};
size_t fk_sym_proc_files(struct fk_symbolizer *s, pid_t pid, bool (*want)(const char *path),
                         struct fk_sym_file *out, size_t max);
/* Which address space of pid the records handled so far describe: image
 * changes when the pid becomes another program (a new process, pid reuse,
 * an exec), maps whenever a mapping is added (the exec's own mmaps follow
 * its COMM record; dlopen) or the maps are read again from /proc. What was
 * found in pid holds while both stay -- so do fk_sym_locate's and
 * fk_sym_cfi_at's answers for its addresses, until the capture ends (the
 * CFI is given back then). image is unique across processes; 0, 0: never
 * heard of, or forgotten: a process is forgotten 256 exits after its own
 * (its maps freed). exited: that image's process exited (its EXIT record
 * was handled: records come in time order, so none of its samples
 * follow). space: the contents of the maps -- new whenever they change,
 * unique across processes but for a fork's copy, which keeps its
 * parent's while neither changes (no JIT code of the parent's: the
 * child's is its own DSO) -- so answers found for one pc hold for every
 * process of that space; 0: never heard of, or forgotten. */
struct fk_sym_gen {
    uint64_t image, maps, space;
    bool capture_ended, exited;
};
void fk_sym_proc_gen(struct fk_symbolizer *s, pid_t pid, struct fk_sym_gen *out);
/* Processes whose exit was handled so far: who keeps state per process
 * looks for the exited ones (fk_sym_proc_gen) when it changes. */
uint64_t fk_sym_exits(const struct fk_symbolizer *s);
/* A symbol of any type (data too) by name in a file DSO: its .symtab,
 * else its .dynsym. False when absent or the file is unreadable. */
bool fk_sym_dso_lookup(struct fk_symbolizer *s, uint32_t dso, const char *name,
                       uint64_t *vaddr, uint64_t *size);
/* len bytes of a file DSO's image at ELF vaddr, from the file's part of a
 * PT_LOAD segment (initialised data, code): false past it. */
bool fk_sym_dso_read(struct fk_symbolizer *s, uint32_t dso, uint64_t vaddr, void *buf, size_t len);
/* fk_loc.addr of a file DSO's ELF vaddr (a file offset), to compare
 * locations with a symbol's range. */
bool fk_sym_dso_loc_addr(struct fk_symbolizer *s, uint32_t dso, uint64_t vaddr, uint64_t *addr);

/* Bytes held (for the memory cap). */
size_t fk_sym_bytes(const struct fk_symbolizer *s);
/* The capture's other tables (stacks), so what a perf map may add keeps
 * the sum below fk_sym_opts.max_bytes. */
void fk_sym_set_other_bytes(struct fk_symbolizer *s, uint64_t bytes);

#endif
