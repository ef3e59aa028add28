/* SPDX-License-Identifier: GPL-2.0-only */
/* A small symbolizer for one-event captures (flamekit faults) until the
 * full one (symbols/symbols.h) is available to it: kernel frames from
 * /proc/kallsyms, user frames from ELF .symtab/.dynsym of the mapped file.
 * Address spaces are seeded from /proc/PID/maps and kept current from the
 * MMAP2/COMM/FORK/EXIT side-band records; names are resolved at sample time
 * (one binary search per frame), so processes that exit mid-capture keep
 * their names. Unresolved frames read "[file+0xOFF]" or "[unknown]". */
#ifndef FK_MINISYM_H
#define FK_MINISYM_H

#include "util/buf.h"
#include "util/fk.h"

#include <sys/types.h>

struct fk_minisym;

struct fk_minisym *fk_minisym_new(bool kernel);
void fk_minisym_free(struct fk_minisym *s);

void fk_minisym_scan_pid(struct fk_minisym *s, pid_t pid);
void fk_minisym_scan_all(struct fk_minisym *s);

void fk_minisym_comm(struct fk_minisym *s, pid_t pid, pid_t tid, const char *comm, bool exec);
void fk_minisym_fork(struct fk_minisym *s, pid_t pid, pid_t ppid);
void fk_minisym_exit(struct fk_minisym *s, pid_t pid, pid_t tid);
void fk_minisym_mmap(struct fk_minisym *s, pid_t pid, uint64_t start, uint64_t len,
                     uint64_t pgoff, uint32_t prot, const char *filename);

/* Thread's command name (falls back to the process's, /proc, "[unknown]"). */
const char *fk_minisym_comm_of(struct fk_minisym *s, pid_t pid, pid_t tid);
/* Append a frame's name; kernel frames get the "_[k]" suffix. */
void fk_minisym_name(struct fk_minisym *s, pid_t pid, uint64_t ip, bool kernel, struct fk_buf *out);

struct fk_minisym_stats { uint64_t dsos, processes, unresolved; };
void fk_minisym_stats(const struct fk_minisym *s, struct fk_minisym_stats *out);

#endif
