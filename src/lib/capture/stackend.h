/* SPDX-License-Identifier: GPL-2.0-only */
/* Where each thread's stack ends, as far as unwinding ever reads it: the
 * ring reader cuts a sample's user stack copy there instead of at what
 * the kernel copied (fk_sample_cut_stack).
 *
 * The kernel copies up to the asked size from the sampled sp, so a main
 * thread's copy carries its argv, environment and auxiliary vector
 * (about 4 KiB of every python3.11 sample, 44 % of its copy) and a
 * pthread's the area above its start frame: bytes the reader copies, the
 * queue holds and the engine fetches, for nothing. The engine learns a
 * thread's end from its complete walks (the highest byte the walk read,
 * fk_unwind_last_read_end); the reader uses it once two complete walks
 * in a row agreed on it, and not after a walk that ended elsewhere until
 * two agree again. A thread whose walks keep ending at different places
 * (user-space stack switching: Go's goroutines, coroutines) is marked
 * varying and never cut; so is one whose cut copy turned out too short
 * (the engine sees its walk run out of the copy: one sample truncated,
 * then whole copies). An exited thread's entry is forgotten, an exec's
 * too (its number may come back with another stack).
 *
 * Threads: the engine's thread alone writes, the reader's thread reads
 * (fk_stack_ends_get) while it does; a slot is read as tid, end, tid
 * again, so an entry being replaced is never taken for its new owner's.
 * A fixed table (FK_STACK_ENDS_SLOTS, direct-mapped by tid: a clash only
 * costs the cut), allocated whole and charged to --max-memory by its
 * owner (fk_stack_ends_bytes). */
#ifndef FK_CAPTURE_STACKEND_H
#define FK_CAPTURE_STACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FK_STACK_ENDS_SLOTS 4096

struct fk_stack_ends;

/* sp_word: the sampled sp's index among PERF_SAMPLE_REGS_USER's words. */
struct fk_stack_ends *fk_stack_ends_new(unsigned sp_word);
void fk_stack_ends_free(struct fk_stack_ends *t);
size_t fk_stack_ends_bytes(const struct fk_stack_ends *t);
unsigned fk_stack_ends_sp_word(const struct fk_stack_ends *t);

/* The reader's side: where tid's copies may be cut (an address past the
 * last byte unwinding reads), or 0: keep what the kernel copied. */
uint64_t fk_stack_ends_get(const struct fk_stack_ends *t, pid_t tid);

/* The engine's side. A complete walk of tid read up to end (exclusive). */
void fk_stack_ends_learn(struct fk_stack_ends *t, pid_t tid, uint64_t end);
/* A walk of tid's cut copy ran out of it: never cut tid again. */
void fk_stack_ends_wrong(struct fk_stack_ends *t, pid_t tid);
/* tid exited. */
void fk_stack_ends_forget(struct fk_stack_ends *t, pid_t tid);

struct fk_stack_ends_stats {
    uint64_t cut;           /* samples whose copies were cut at an end (the engine counts) */
    uint64_t learned;       /* ends taken into use (published) */
    uint64_t varying;       /* threads marked varying (walks ended apart) */
    uint64_t wrong;         /* cut copies found too short */
};
void fk_stack_ends_stats(const struct fk_stack_ends *t, struct fk_stack_ends_stats *out);

#endif
