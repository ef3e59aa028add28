/* SPDX-License-Identifier: GPL-2.0-only */
/* Pins: what a process's MMAP2 records name, held open as the records
 * leave the rings (the ring reader's thread, capture/reader.h), while the
 * process still lives, for the symbolizer, which handles the same records
 * later -- seconds later on a loaded host or behind a cold page cache, when
 * a short-lived process, its private /tmp and the binary it ran may all
 * be gone:
 *  - the file of an executable mapping, through /proc/PID/map_files (the
 *    very file mapped, even deleted or replaced on disk since);
 *  - for a process with anonymous executable memory (a JIT), where its
 *    perf map will be: its /tmp, held open (that keeps a private tmpfs
 *    and its files reachable after its mount namespace is gone), its pid
 *    in its own pid namespace and its uids (fk_jit_where).
 *
 * Invariants: thread-safe (one lock); at most max_fds fds and FK_PINS_MAX
 * pins held at once (beyond, nothing is pinned: the symbolizer opens late,
 * as without pins, and the refusal is counted); each pin is taken (its fd
 * the taker's) or dropped (closed) exactly once: a file's when its record
 * was handled, a JIT's when taken or at its process's exit; a file pinned
 * once (same path and inode, or build-id) is not pinned again, the
 * symbolizer holding it from the first. */
#ifndef FK_SYMBOLS_PINS_H
#define FK_SYMBOLS_PINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define FK_PINS_MAX 4096

/* Where a process's perf map will be (see symbols.c, read_perf_map). */
struct fk_jit_where {
    pid_t nspid;            /* its pid in its own pid namespace; 0: unknown */
    uid_t uids[2];          /* its real and effective uid */
    size_t nuids;           /* 0: unknown */
    unsigned long long start_ns; /* its start, CLOCK_BOOTTIME ns; 0: unknown */
    int tmp_fd;             /* its /tmp, O_PATH; -1 */
    bool gone;              /* tmp_fd is -1 because the process is gone */
};
/* Read now from /proc (the process must still live). */
void fk_jit_where(pid_t pid, struct fk_jit_where *w);
/* The /tmp directory of a process, O_PATH: one component below its root
 * (fk_root_open), not followed if it is a symlink, so it cannot lead out.
 * -1 with *gone set when the process is gone. */
int fk_proc_tmp_open(pid_t pid, bool *gone);

struct fk_pins_stats {
    uint64_t files, jits;   /* pinned */
    uint64_t used;          /* taken by the symbolizer */
    uint64_t refused;       /* not pinned: the bounds */
};

struct fk_pins;
struct fk_pins *fk_pins_new(size_t max_fds, bool jit);
void fk_pins_free(struct fk_pins *p);

/* The reader's thread: an MMAP2 record's mapping (time: the record's);
 * also the symbolizer's scan of a process present at the start, for its
 * JIT code (time 0). */
void fk_pins_mmap(struct fk_pins *p, pid_t pid, uint64_t start, uint64_t len, uint32_t prot,
                  uint32_t maj, uint32_t min, uint64_t ino, const unsigned char *build_id,
                  size_t build_id_len, const char *filename, uint64_t time);
/* ... a COMM record of an exec: the pid is another program (its JIT
 * memory, if any, is pinned again). */
void fk_pins_exec(struct fk_pins *p, pid_t pid);
/* ... a FORK record of a new process (pid != ppid): a copy of its
 * parent's memory, JIT code included, with no MMAP2 record of its own:
 * when the parent's JIT facts were pinned, the child's are pinned now
 * (a forked worker may be gone, its /tmp with it, by the time the
 * symbolizer handles the record). */
void fk_pins_fork(struct fk_pins *p, pid_t pid, pid_t ppid, uint64_t time);

/* The symbolizer: the file pinned for pid's mapping [start, end), its fd
 * (now the caller's) and status; -1 when none was pinned. */
int fk_pins_take_file(struct fk_pins *p, pid_t pid, uint64_t start, uint64_t end,
                      struct stat *st);
/* ... the oldest JIT facts pinned for pid; false when none. */
bool fk_pins_take_jit(struct fk_pins *p, pid_t pid, struct fk_jit_where *w);

/* The engine, once it handled the record: its file pin, if not taken. */
void fk_pins_drop_file(struct fk_pins *p, pid_t pid, uint64_t start, uint64_t end);
/* ... the exit of pid at time: its pins from records before it. */
void fk_pins_drop_exit(struct fk_pins *p, pid_t pid, uint64_t time);

size_t fk_pins_bytes(struct fk_pins *p);
void fk_pins_stats(struct fk_pins *p, struct fk_pins_stats *out);

#endif
