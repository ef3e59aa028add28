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
 * the CPU's number to a BPF ring buffer with a forced wake-up; the reader,
 * which reads the rings on its own clock, waits on that buffer's
 * wake-ups alone (fk_reader_opts.wake_fd, edge-triggered: the chains
 * below, written without one, do not end its wait) and reads the rings
 * at once.
 *
 * Frames read at the sample: for a thread of a CPython process whose
 * thread state user space put in the gate's thread map
 * (fk_pygate_thread; a main thread's in its process's entry of the tgid
 * map too, so that its sample takes one lookup), the program itself
 * follows tstate->cframe->
 * current_frame and each frame's previous link with bpf_probe_read_user,
 * at most FK_PYGATE_DEPTH frames, and writes the frames' bytes to a ring
 * buffer WITHOUT a wake-up (a small ring first, a large one when it is
 * full: pygate.c hot_bytes): the reader takes them at its next pass, and
 * the sample's Python chain is the one its thread ran at the sample,
 * with no read of the target and no wake-up per sample. Where the program
 * cannot read (a thread not in the map yet, a page not resident: such a
 * read cannot fault, the ring full) it notifies and wakes the reader as
 * above, which reads the target then (counted by reason).
 *
 * A frame's code object is vouched for by the code map (user space
 * named it, with that function), or by the CPU's last such answer for
 * its slot, kept in the program's per-CPU scratch: at the default 99 Hz
 * a CPU runs the program once every ~10 ms, everything it touches is
 * cold, and a map lookup a frame cost ~0.5 us where the slot is on a
 * page the run touches anyway (pygate.c, SCRATCH_VOUCH).
 *
 * Code headers read at the sample: the frames whose code object user
 * space cannot vouch for from its cache -- a code not named yet, or run
 * by another function object than the one it was named with (3.11's
 * comprehensions, lambdas and generator expressions make a new one at
 * each call) -- have their code object's header read by the program too
 * (fk_pygate_offsets.co_read bytes, at most FK_PYGATE_CODES distinct
 * ones a chain, the same code in consecutive such frames once): the
 * naming then validates them with no read of the target (it read them
 * in one process_vm_readv a chain, ~0.6 a sample on busy.py, the
 * largest Python cost left in the reader). The header's bytes are the
 * target's as any read's, checked as such; a header the program could
 * not read, or past FK_PYGATE_CODES, is read from the target as before.
 *
 * Joining a record to its sample (fk_pygate_take): records and samples
 * of one CPU come in the same order; a record carries the CPU, the tid,
 * the sampled instruction pointer (the regs the program and the sample
 * share) and bpf_ktime_get_ns, the clock of the samples' times
 * (use_clockid CLOCK_MONOTONIC: both are the kernel's mono fast clock, the
 * program's time a little before the sample's). A sample takes the oldest
 * record of its CPU with its tid and ip within FK_PYGATE_JOIN_NS of its
 * time; records no sample took (a sample lost in its ring, or dropped
 * after the program) are dropped two reader passes after they were
 * drained (a sample is read in the pass that drained its record or the
 * next; a record a take pulls in mid-pass counts from the next pass: the
 * rings that pass read before it held none of its samples -- 239 of
 * 93,266 joins by hand came a pass after such a pull, 238 of them after
 * a SIGSTOP between two rings' reads); the queues take their memory from one pool for all CPUs that
 * holds twice the ring's bytes, so the burst a stalled reader drains at
 * once finds room, and gets it back as the burst's samples take their
 * records (a queue of 128 records a CPU dropped the oldest, whose samples
 * were still waiting in the perf rings: 143-254 of them read from the
 * target late after a 0.5-1 s stall; per-CPU buffers that never shrank
 * left the other CPUs no room after a burst on one). The ring is one for
 * all CPUs and sized by them (1 MiB each, 2 to 64 MiB). A
 * sample without a record (the BPF ring was full) is read from the
 * target like a notified one -- at the reader's next pass, not at once,
 * where the ring had no room even for the notification (counted:
 * ring_lost).
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
 * attached yet. held: the samples each CPU's perf ring holds -- the
 * ring buffer has room for as many whole chains a CPU (at most 1 MiB a
 * CPU): a reader stalled longer loses the samples in the perf rings,
 * with or without their chains. rate: the samples a second a CPU (0:
 * not known, 1000 assumed), which the ring written first is sized by.
 * NULL with one line in err (no BPF, no ring buffer: Linux 5.8, a
 * program refused). */
struct fk_pygate *fk_pygate_new(uint32_t max_entries, uint64_t held, uint64_t rate, char *err,
                                size_t errlen);
/* The memory a gate of max_entries processes, perf rings of held
 * samples and rate samples a second may hold: the kernel's (maps and
 * ring) from its start, and its queues' at most (they grow with the
 * records a pass brings): what a memory limit must leave it before the
 * capture starts. */
size_t fk_pygate_fixed_bytes(uint32_t max_entries, uint64_t held, uint64_t rate);
/* The CPUs the ring and the queues' pool are sized for: those online (a
 * VM's possible CPUs may be many more, never sampled). */
unsigned fk_pygate_cpus(void);
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

/* Where the program finds a thread's chain (bytes): tstate + ts_cframe
 * holds its _PyCFrame *, tstate + ts_native_thread_id its tid as the
 * process sees it, cframe + cf_current_frame the innermost frame, frame +
 * fr_previous the caller; fr_size bytes of each frame are read; frame +
 * fr_code its code object, frame + fr_func its function object; co_read
 * bytes of a code object's header are read where user space cannot vouch
 * for it (0: none, as when more than FK_PYGATE_CODE_BYTES). */
struct fk_pygate_offsets {
    uint16_t ts_cframe, ts_native_thread_id, cf_current_frame, fr_previous, fr_size, fr_code;
    uint16_t fr_func, co_read;
};
#define FK_PYGATE_DEPTH 64      /* frames the program reads per sample */
#define FK_PYGATE_STRIDE 80     /* bytes per frame in a record (fr_size at most) */
#define FK_PYGATE_CODES 4       /* code headers the program reads per sample */
#define FK_PYGATE_CODE_BYTES 176    /* bytes per code header in a record (co_read at most) */
#define FK_PYGATE_JOIN_NS (1000 * 1000ull)
/* Read thread tid's (global tid) chain at its samples from now on, at
 * tstate (in its process); false when the map refused (full: least
 * recently used threads make room, so only on an error). Any thread. */
bool fk_pygate_thread(struct fk_pygate *g, pid_t pid, pid_t tid, uint64_t tstate,
                      const struct fk_pygate_offsets *o);

/* The code object at code (a frame's f_code) is named, run by the
 * function object func: a chain whose frames all run named ones is
 * written without a wake-up; one with a code object not named yet wakes
 * the reader, which names it while it lives (a module's code is freed
 * once it ran). A frame running it with another function has its header
 * read by the program. Any thread. */
void fk_pygate_code(struct fk_pygate *g, uint64_t code, uint64_t func);

/* A chain as the program read it at one sample. */
struct fk_pygate_chain {
    uint32_t cpu, tid, n;           /* n frames read */
    uint64_t time, ip;              /* bpf_ktime_get_ns; the sampled ip */
    uint64_t tstate, cframe, native_tid;
    uint64_t head;                  /* cframe->current_frame (0: no Python frame) */
    uint64_t next;                  /* the last frame's previous link (0: root reached) */
    const unsigned char *frames;    /* n frames, FK_PYGATE_STRIDE bytes apart */
    unsigned ncodes;                /* code headers read (FK_PYGATE_CODES at most) */
    uint64_t code_addr[FK_PYGATE_CODES];    /* their code objects (0: the read failed) */
    const unsigned char *codes;     /* ncodes headers, FK_PYGATE_CODE_BYTES bytes apart,
                                       each co_read bytes from its code_addr */
};
/* The record of the sample of tid at time on cpu, sampled at ip, into out
 * (its frames valid until the next call or drain); false when there is
 * none (the reader's thread). */
bool fk_pygate_take(struct fk_pygate *g, uint32_t cpu, pid_t tid, uint64_t ip, uint64_t time,
                    struct fk_pygate_chain *out);

struct fk_pygate_stats {
    uint64_t wakeups;       /* notifications taken */
    uint64_t marked;        /* processes put in the map */
    uint64_t full;          /* ... it had no room for */
    uint64_t chains;        /* chains read by the program (records taken in) */
    uint64_t code_wakeups;  /* ... written with a wake-up: a code object
                               not named yet (fk_pygate_code) */
    uint64_t code_headers;  /* code headers read by the program (in chains read) */
    uint64_t code_headers_failed;   /* ... it could not read (read by user space) */
    uint64_t joined;        /* ... taken by their sample */
    uint64_t unjoined;      /* ... dropped: no sample took them (those of
                               unjoined_at_end too: read = joined + unjoined) */
    uint64_t unjoined_at_end;   /* ... still queued when the statistics were taken */
    uint64_t expired_early; /* samples read after their record was dropped
                               unjoined (the same CPU, thread and ip within
                               FK_PYGATE_JOIN_NS: it expired too soon) */
    uint64_t out_of_window; /* records dropped unjoined whose sample was read
                               and found none: the same CPU, thread and ip,
                               times further apart than FK_PYGATE_JOIN_NS */
    uint64_t out_of_window_max_ns;  /* ... the largest such |sample - record| */
    uint64_t queue_peak;    /* the most records one CPU's queue held */
    uint64_t queue_bytes;   /* the queues' blocks made (a pool for all CPUs) */
    uint64_t queue_dropped; /* records dropped as they came: no block left
                               in the pool (counted unjoined too) */
    uint64_t ring_bytes;    /* the rings' size together (hot and large) */
    uint64_t ring_peak;     /* the most bytes one drain took out of it (how
                               full it was as the reader came) */
    uint64_t no_thread;     /* notifications: a Python thread not in the map */
    uint64_t missed;        /* ... a read the program could not make */
    uint64_t ring_full;     /* ... the record did not fit in the ring */
    uint64_t ring_lost;     /* samples the program wrote nothing for: no room
                               in the ring even for a notification */
    uint64_t threads;       /* threads put in the thread map */
    uint64_t join_max_ns;   /* the largest |sample time - record time| joined */
    bool reads;             /* the program reads chains (the kernel took it) */
    bool reads_codes;       /* ... and code headers (the kernel took that too) */
};
void fk_pygate_stats(const struct fk_pygate *g, struct fk_pygate_stats *out);
size_t fk_pygate_bytes(const struct fk_pygate *g);
void fk_pygate_free(struct fk_pygate *g);

#endif
