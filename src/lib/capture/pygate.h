/* SPDX-License-Identifier: GPL-2.0-only */
/* The Python wake-up gate: the ring reader woken for the samples whose
 * frames must be read as soon as they are taken (a CPython process's),
 * and for no other.
 *
 * Python frames are read from the target as the sample leaves its ring
 * (unwind/python.h): a generator's frames change within a millisecond.
 * Waking the reader at every sample for that (wakeup_events = 1) woke it
 * ~2,000 times a second on a busy 2-CPU host at 999 Hz, for every
 * process's samples, and each wake-up preempted the sampled task: an
 * interpreter beside busy processes got 0.76-0.80 of its CPU time's
 * samples host-wide (bench/python.sh part bias). With the gate the rings
 * wake no one before their watermark; a perf-event program on each
 * sampling event (PERF_EVENT_IOC_SET_BPF) looks the sampled process up in
 * a hash map the Python reader keeps (tgid -> 1: read its samples at
 * once, 0: not Python) and, for a Python process or one not decided yet
 * (its first samples ask the engine's thread to look for CPython), writes
 * the CPU's number to a BPF ring buffer with a forced wake-up; the reader
 * polls that buffer beside the rings (fk_reader_opts.wake_fd) and reads
 * the rings at once.
 *
 * Invariants: the program returns 1 whatever it finds, so every sample is
 * written as without it; a process the map has no room for is left out
 * (its samples wake the reader, as before the gate) and counted; the
 * maps' kernel memory is fixed at creation (fk_pygate_bytes, charged by
 * the caller). Errors are values: NULL or false with one line in err, and
 * the caller keeps the per-sample wake-ups instead. */
#ifndef FK_CAPTURE_PYGATE_H
#define FK_CAPTURE_PYGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fk_pygate;

/* The maps (max_entries processes) and the program, loaded; nothing
 * attached yet. NULL with one line in err (no BPF, no ring buffer: Linux
 * 5.8, a program refused). */
struct fk_pygate *fk_pygate_new(uint32_t max_entries, char *err, size_t errlen);
/* Run the gate on each sample of the sampling event perf_fd. tree_map
 * >= 0: a 'pid' target's tree map (capture/bpftree.h), whose filter the
 * gate then is too (an event holds one program): samples of processes
 * outside it are dropped. One tree per gate. */
bool fk_pygate_attach(struct fk_pygate *g, int perf_fd, int tree_map, char *err, size_t errlen);
/* What pid's samples do from now on: wake the reader (a CPython process,
 * FK_PYGATE_WAKE), or not (FK_PYGATE_QUIET: looked at, no CPython), or
 * forget it (FK_PYGATE_FORGET: it exited; a process not in the map wakes
 * the reader, so a new one is looked at at once). Any thread. */
enum fk_pygate_mark { FK_PYGATE_WAKE = 1, FK_PYGATE_QUIET, FK_PYGATE_FORGET };  /* 0: none told */
void fk_pygate_mark(struct fk_pygate *g, pid_t pid, enum fk_pygate_mark m);
/* The ring buffer's fd: readable when a notification waits. */
int fk_pygate_fd(const struct fk_pygate *g);
/* Take the notifications waiting (the reader's thread): how many. */
uint64_t fk_pygate_drain(struct fk_pygate *g);

struct fk_pygate_stats {
    uint64_t wakeups;       /* notifications taken */
    uint64_t marked;        /* processes put in the map */
    uint64_t full;          /* ... it had no room for */
};
void fk_pygate_stats(const struct fk_pygate *g, struct fk_pygate_stats *out);
size_t fk_pygate_bytes(const struct fk_pygate *g);
void fk_pygate_free(struct fk_pygate *g);

#endif
