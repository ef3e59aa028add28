/* SPDX-License-Identifier: GPL-2.0-only */
/* Off-CPU switch timing in the kernel: see swtime.h. */
#include "capture/swtime.h"
#include "capture/bpf.h"
#include "util/bootcache.h"
#include "util/fk.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Each thread's entry by tid: an array indexed by tid where pid_max is
 * small (the lookup is inlined by the verifier, no hashing: 32768 tids
 * here, 1 MiB; mapped read-only, so the end's walk over every thread and
 * the per-thread reads are loads, not system calls: the walk by batch
 * lookups cost a 2 s capture ~8 % of its CPU), else a hash of this many
 * threads. The processes timed (FK_SWTIME_TGIDS) likewise: an array of a
 * byte per pid (8 bytes each in the kernel: 256 KiB here) -- a member's
 * byte is 1 -- else a hash of HASH_TGIDS. (The hash, preallocated, cost
 * each capture ~7 % of a 2 s run's CPU to make, and each switch of the
 * host a hashed lookup.) */
#define ARRAY_PID_MAX (1u << 18)
#define HASH_THREADS 65536u
#define HASH_TGIDS 16384u

/* A thread's entry: its picked switch-out waiting for its switch-in (0:
 * none), its first switch-out in the window (0: none yet) and its CPU time
 * (sum_exec_runtime) then, and its CPU time at the picked switch-out (0:
 * unknown): a switch-in the kernel does not show is timed from it
 * (FK_SWTIME_UNSEEN_IN). */
struct entry { uint64_t out, t0, cpu0, cpu_out; };

/* cfg's one value: when to stop (0: not yet; STOP_IDLE: before the
 * window), which threads, the pick threshold (a switch-out is picked when
 * bpf_get_prandom_u32() is below it: 2^32 / N), and whether the window has
 * opened (exact totals count from then). */
struct cfg { uint64_t stop_ns, filter, threshold, started; };
#define STOP_IDLE 1

/* Each CPU's counters (fk_sw_stats: an array, one ST_STRIDE-byte entry
 * per possible CPU, its key the CPU's number; mapped, so that reading
 * them, every few ms for the rate, is no system call). Each entry is
 * written by the programs on its CPU alone, which do not nest (the
 * kernel's bpf_prog_active), with the CPU's preemption off: no atomics. */
enum { ST_MAP_FULL, ST_RING_FULL, ST_EXITS, ST_OUTS, ST_PICKED, ST_EXITING, ST_UNWRITTEN, ST_N };
#define ST_STRIDE 64    /* a cache line: no two CPUs' counters in one */
_Static_assert(8 * ST_N <= ST_STRIDE, "each CPU's counters fit its entry");

/* A hit reads the clock (bpf_ktime_get_ns) only for a switch-out it picks,
 * the switch-in that ends one, and once per thread (its first switch-out
 * in the window, its last): on this VM (PVM) every clock read traps to the
 * hypervisor (~190 ns of the ~570 a hit cost when every block was timed,
 * kernel.bpf_stats_enabled; rdtsc ~120 ns from user space). (The
 * scheduler's own clock, rq->clock reached through BTF, was tried instead:
 * no cheaper a hit, and microseconds stale after a wake-up that preempts.) */

struct fk_swtime {
    int prog, outs, cfg, stats, cgrp, tgids, rb;
    int pending;                /* picks waiting for their switch-in (one u64) */
    int samples;                /* PERF_EVENT_ARRAY: each CPU's event for the picks' samples */
    uint32_t ncpus;             /* its entries (possible CPUs) */
    int event;                  /* the switch program's own event */
    int fork_prog, fork_event;  /* FK_SWTIME_TGIDS: new processes followed */
    uint64_t tp_id;             /* sched_switch's */
    struct cfg c;               /* as last written */
    bool array;
    uint32_t entries;
    int32_t cpu_off;            /* task_struct.se.sum_exec_runtime (0: unknown) */
    int32_t flags_off;          /* task_struct.flags (0: unknown: exiting threads'
                                   switch-outs are picked as any other) */
    bool raw;                   /* a raw tracepoint program (else a tracepoint
                                   event's: tracefs' record layout) */
    int32_t pid_off;            /* task_struct.pid (raw: the next thread's tid) */
    uint64_t sched_lo, sched_hi;    /* the kernel's .sched.text (0 0: unknown) */
    const char *cpu_note;
    size_t ring_bytes;
    int cgroup_fd;
    struct ring_buffer *ring;
    void (*fn)(void *ctx, const struct fk_swtime_block *b);
    void *fn_ctx;
    size_t drained;
    const unsigned char *stats_map;     /* fk_sw_stats mapped (read only) */
    size_t stats_len;
    const struct entry *outs_map;       /* fk_sw_out mapped (read only; array only) */
    size_t outs_len;
};

/* Stack slots of the program. */
#define S_KEY     (-4)      /* u32 0: cfg's key */
#define S_SKEY    (-40)     /* u32: stats' key, this CPU's number */
#define S_TID     (-8)      /* u32: an entry's key */
#define S_STOP    (-16)     /* the window's end (0: open) */
#define S_THRESH  (-24)
#define S_STARTED (-32)
#define S_CPU     (-48)     /* a CPU time (or the task's flags) read */
#define S_ENTRY   (-56)     /* the entry in hand */
#define S_NEW     (-88)     /* a new entry (hash): 32 bytes */
#define S_PICK    (-112)    /* a pick's sample's raw part (struct fk_swtime_pick) */

/* The raw tracepoint's arguments (struct bpf_raw_tracepoint_args: u64
 * each), sched_switch's since Linux 5.18 -- (bool preempt, struct
 * task_struct *prev, struct task_struct *next, unsigned int prev_state),
 * checked against the kernel's BTF (btf_trace_sched_switch) before use --
 * and the task states it tests (include/linux/sched.h, the same since
 * Linux 4.14, when TASK_PARKED took 0x40: the tracefs format's letters
 * are checked to be that layout, fk_swtime_new). */
#define RAW_PREEMPT     0
#define RAW_NEXT        16
#define RAW_STATE       24
#define TASK_DEAD       0x80u
#define TASK_NOLOAD_IDLE 0x402u     /* TASK_IDLE: UNINTERRUPTIBLE | NOLOAD */
#define TASK_REPORT     0x7fu
#define TASK_RTLOCK_WAIT 0x1000u
#define TASK_FROZEN     0x8000u

/* stats[this CPU].counter[i] += 1 (see ST_STRIDE: no atomics). Clobbers
 * r0-r5. */
static void bump(struct fk_bpf_builder *b, int stats_fd, int i)
{
    unsigned skip = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_smp_processor_id));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, S_SKEY));
    fk_bpf_emit_map_lookup(b, stats_fd, S_SKEY);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, skip);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, (int16_t)(8 * i)));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, BPF_REG_1, (int16_t)(8 * i)));
    fk_bpf_label_place(b, skip);
}

/* r0 = &entry[tid at S_TID] (or NULL). Clobbers r1-r5. */
static void lookup_entry(struct fk_bpf_builder *b, int outs_fd)
{
    fk_bpf_emit_map_lookup(b, outs_fd, S_TID);
}

/* Write {r9, kind, out_reg, in_reg, the stack's oncpu_slot (0: none, 0
 * written)} to the ring buffer, then goto next. Clobbers r0-r5. */
static void emit_block(struct fk_bpf_builder *b, const struct fk_swtime *t, enum fk_swtime_kind kind,
                       unsigned out_reg, unsigned in_reg, int16_t oncpu_slot, unsigned next)
{
    unsigned full = fk_bpf_label_new(b);
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->rb);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, (int32_t)sizeof(struct fk_swtime_block)));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_3, 0));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ringbuf_reserve));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, full);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_0, BPF_REG_9, 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_0, 4, (int32_t)kind));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, out_reg, 8));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, in_reg, 16));
    if (oncpu_slot) {
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, oncpu_slot));
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, BPF_REG_1, 24));
    } else {
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 24, 0));
    }
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_0));
    /* no wake-up: the reader drains it on its own clock */
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, BPF_RB_NO_WAKEUP));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ringbuf_submit));
    fk_bpf_goto(b, next);
    fk_bpf_label_place(b, full);
    bump(b, t->stats, ST_RING_FULL);
    fk_bpf_goto(b, next);
}

/* r7 = the hit's time (CLOCK_MONOTONIC ns), read once a hit (r7 0: not
 * read yet); then to stopped if the window has ended. Clobbers r0-r5. */
static void emit_now(struct fk_bpf_builder *b, unsigned stopped)
{
    unsigned go = fk_bpf_label_new(b), have = fk_bpf_label_new(b);
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_7, 0, have);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ktime_get_ns));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_7, BPF_REG_0));
    fk_bpf_label_place(b, have);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, S_STOP));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, go);
    fk_bpf_jump_reg(b, BPF_JGE, BPF_REG_7, BPF_REG_1, stopped);
    fk_bpf_label_place(b, go);
}

/* [S_CPU] = size bytes (8 or 4; 0 when unreadable) of the current task at
 * off (the thread switching out: sched_switch runs in it). Clobbers
 * r0-r5. */
static void emit_read_task(struct fk_bpf_builder *b, int32_t off, int32_t size)
{
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, S_CPU, 0));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_current_task));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_3, BPF_REG_0));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, off));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, S_CPU));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, size));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_kernel));
}

/* r7 = now (emit_now), [S_CPU] = the current task's sum_exec_runtime, and
 * r0 = the entry in hand again. Clobbers r1-r5. */
static void emit_times(struct fk_bpf_builder *b, const struct fk_swtime *t, unsigned stopped)
{
    emit_now(b, stopped);
    emit_read_task(b, t->cpu_off, 8);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, S_ENTRY));
}

/* pending += delta (the picks waiting for their switch-in; atomic: picks
 * and their switch-ins are on any CPU). Clobbers r0-r5. */
static void emit_pending_add(struct fk_bpf_builder *b, const struct fk_swtime *t, int32_t delta)
{
    unsigned skip = fk_bpf_label_new(b);
    fk_bpf_emit_map_lookup(b, t->pending, S_KEY);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, skip);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_1, delta));
    fk_bpf_emit(b, FK_BPF_ATOMIC_ADD(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    fk_bpf_label_place(b, skip);
}

/* r9 = the switched-out thread's tid (current is still prev): the
 * record's prev_pid, or (raw) the current task's. Clobbers r0-r5. */
static bool emit_prev_tid(struct fk_bpf_builder *b, const struct fk_swtime *t,
                          const struct fk_tp_field *prev_pid, char *err, size_t errlen)
{
    if (!t->raw)
        return fk_bpf_load_field(b, BPF_REG_9, BPF_REG_6, prev_pid, err, errlen);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(b, FK_BPF_INSN(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_9, BPF_REG_0, 0, 0));
    return true;
}

/* To exiting at the thread's last switch-out (do_task_dead: not
 * preempted, and exiting -- the record's X or Z; raw, TASK_DEAD), else to
 * first. Clobbers r1-r3. */
static bool emit_exit_test(struct fk_bpf_builder *b, const struct fk_swtime *t,
                           const struct fk_tp_field *prev_state, uint64_t exit_bits,
                           uint64_t preempt_bit, unsigned first, unsigned exiting, char *err,
                           size_t errlen)
{
    if (t->raw) {
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_6, RAW_STATE));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_AND, BPF_REG_1, TASK_DEAD));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, first);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_6, RAW_PREEMPT));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_AND, BPF_REG_1, 0xff));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, exiting);
        fk_bpf_goto(b, first);
        return true;
    }
    if (!fk_bpf_load_field(b, BPF_REG_1, BPF_REG_6, prev_state, err, errlen))
        return false;
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_1));
    fk_bpf_emit_ld_imm64(b, BPF_REG_3, exit_bits);
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_AND, BPF_REG_2, BPF_REG_3));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_2, 0, first);
    fk_bpf_emit_ld_imm64(b, BPF_REG_3, preempt_bit);
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_AND, BPF_REG_1, BPF_REG_3));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, exiting);
    fk_bpf_goto(b, first);
    return true;
}

/* r1 = a pick's state (struct fk_swtime_pick.state): the record's
 * prev_state, or (raw) the raw prev_state with the preemption flag in bit
 * 32 (fk_swtime_pick_state turns it into the record's). Clobbers r2. */
static bool emit_pick_state(struct fk_bpf_builder *b, const struct fk_swtime *t,
                            const struct fk_tp_field *prev_state, char *err, size_t errlen)
{
    if (!t->raw)
        return fk_bpf_load_field(b, BPF_REG_1, BPF_REG_6, prev_state, err, errlen);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_1, BPF_REG_6, RAW_STATE));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_B, BPF_REG_2, BPF_REG_6, RAW_PREEMPT));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_AND, BPF_REG_2, 1));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_LSH, BPF_REG_2, 32));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_OR, BPF_REG_1, BPF_REG_2));
    return true;
}

/* r9 = the switched-in thread's tid, [S_TID] too; to done when it cannot
 * be read. Clobbers r0-r5. */
static bool emit_next_tid(struct fk_bpf_builder *b, const struct fk_swtime *t,
                          const struct fk_tp_field *next_pid, unsigned done, char *err,
                          size_t errlen)
{
    if (!t->raw) {
        if (!fk_bpf_load_field(b, BPF_REG_9, BPF_REG_6, next_pid, err, errlen))
            return false;
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_9, S_TID));
        return true;
    }
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, S_TID));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, 4));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_6, RAW_NEXT));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, t->pid_off));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_kernel));
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 0, done);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_9, BPF_REG_10, S_TID));
    return true;
}

/* The program. Registers: r6 ctx, r7 now (0: not read yet: most hits
 * read no clock), r8 the filter then an entry's field, r9 the tid; the
 * stack: the S_ slots above. */
static bool generate(struct fk_bpf_builder *b, const struct fk_swtime *t,
                     const struct fk_tp_format *sw, uint64_t exit_bits, uint64_t preempt_bit,
                     char *err, size_t errlen)
{
    const struct fk_tp_field *prev_pid = fk_tp_field(sw, "prev_pid");
    const struct fk_tp_field *prev_state = fk_tp_field(sw, "prev_state");
    const struct fk_tp_field *next_pid = fk_tp_field(sw, "next_pid");
    if (!t->raw && (!prev_pid || !prev_state || !next_pid)) {
        snprintf(err, errlen, "sched:sched_switch has no prev_pid/prev_state/next_pid field");
        return false;
    }
    unsigned in = fk_bpf_label_new(b), done = fk_bpf_label_new(b), stopped = fk_bpf_label_new(b);
    unsigned by_tgid = fk_bpf_label_new(b), keep = fk_bpf_label_new(b);
    unsigned have = fk_bpf_label_new(b), exiting = fk_bpf_label_new(b);
    unsigned first = fk_bpf_label_new(b), pick = fk_bpf_label_new(b);

    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_6, BPF_REG_1));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_7, 0));
    /* stopped? which threads? (no clock read: most hits of a busy host are
     * of threads not timed, or not picked) */
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, S_KEY, 0));
    fk_bpf_emit_map_lookup(b, t->cfg, S_KEY);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, done);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, STOP_IDLE, done);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_1, S_STOP));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 16));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_1, S_THRESH));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 24));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_1, S_STARTED));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_8, BPF_REG_0, 8));

    /* which threads: the filter first (a busy host's switches are mostly
     * of others), then the thread switched out (current is still prev) */
    unsigned get_tid = fk_bpf_label_new(b), have_tid = fk_bpf_label_new(b);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_8, FK_SWTIME_ALL, get_tid);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_8, FK_SWTIME_TGIDS, by_tgid);
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->cgrp);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, 0));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_current_task_under_cgroup));
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 1, in);
    fk_bpf_goto(b, get_tid);
    fk_bpf_label_place(b, by_tgid);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    if (t->raw)         /* (one call: the tid too) */
        fk_bpf_emit(b, FK_BPF_INSN(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_9, BPF_REG_0, 0, 0));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, S_TID));
    fk_bpf_emit_map_lookup(b, t->tgids, S_TID);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, in);
    if (t->array) {     /* every pid has an entry: its byte says */
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_B, BPF_REG_1, BPF_REG_0, 0));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, in);
    }
    if (t->raw)
        fk_bpf_goto(b, have_tid);
    fk_bpf_label_place(b, get_tid);
    if (!emit_prev_tid(b, t, prev_pid, err, errlen))
        return false;
    fk_bpf_label_place(b, have_tid);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_9, 0, in);     /* the idle task */

    /* the target's switch-out: none counted or picked before the window
     * opens (fk_swtime_start): the capture's events are not on yet (its
     * symbols loading, a command not yet exec'd), so a pick then made no
     * sample while its switch-out counted as seen -- 2 of 1,320 picks in
     * a 4 s capture, 30 % of the switch-outs seen of a command's threads
     * under ASan */
    fk_bpf_label_place(b, keep);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, S_STARTED));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, in);
    bump(b, t->stats, ST_OUTS);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_9, S_TID));
    lookup_entry(b, t->outs);
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 0, have);
    if (!t->array) {
        unsigned full = fk_bpf_label_new(b);
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, S_NEW, 0));
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, S_NEW + 8, 0));
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, S_NEW + 16, 0));
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, S_NEW + 24, 0));
        fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->outs);
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, S_TID));
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_3, BPF_REG_10));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, S_NEW));
        fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_NOEXIST));
        fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_update_elem));
        fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 0, full);
        lookup_entry(b, t->outs);
        fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 0, have);
        fk_bpf_label_place(b, full);
    }
    bump(b, t->stats, ST_MAP_FULL);     /* no room (or a tid past the array) */
    fk_bpf_goto(b, in);

    fk_bpf_label_place(b, have);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_0, S_ENTRY));
    /* a picked switch-out with no switch-in seen since (the kernel ran the
     * thread again without a sched_switch hit: seen on Linux 6.18, by
     * bpftrace too): said with both times and the CPU time the thread
     * used between (its sum_exec_runtime now less at the pick; all ones
     * when unknown). Switch-outs are all seen, so it was off CPU once
     * between, for the time elapsed less that CPU time */
    unsigned no_gap = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_8, BPF_REG_0, 0));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_8, 0, no_gap);
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 0, 0));
    emit_pending_add(b, t, -1);
    emit_now(b, stopped);
    if (t->cpu_off) {
        unsigned unknown = fk_bpf_label_new(b), write = fk_bpf_label_new(b);
        emit_read_task(b, t->cpu_off, 8);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, S_ENTRY));
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 24));
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_2, BPF_REG_10, S_CPU));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, unknown);
        fk_bpf_jump_reg(b, BPF_JLT, BPF_REG_2, BPF_REG_1, unknown);
        fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_SUB, BPF_REG_2, BPF_REG_1));
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_2, S_CPU));
        fk_bpf_goto(b, write);
        fk_bpf_label_place(b, unknown);
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, S_CPU, -1));
        fk_bpf_label_place(b, write);
        emit_block(b, t, FK_SWTIME_UNSEEN_IN, BPF_REG_8, BPF_REG_7, S_CPU, no_gap);
    } else {
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, S_CPU, -1));
        emit_block(b, t, FK_SWTIME_UNSEEN_IN, BPF_REG_8, BPF_REG_7, S_CPU, no_gap);
    }
    fk_bpf_label_place(b, no_gap);
    /* its last switch-out (exiting, not preempted)? */
    if (!emit_exit_test(b, t, prev_state, exit_bits, preempt_bit, first, exiting, err, errlen))
        return false;

    /* its first switch-out in the window: where its exact total starts */
    fk_bpf_label_place(b, first);
    if (t->cpu_off) {
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, S_ENTRY));
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
        fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_1, 0, pick);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, S_STARTED));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, pick);
        emit_times(b, t, stopped);
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, BPF_REG_7, 8));
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, S_CPU));
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, BPF_REG_1, 16));
    }
    /* one in N, each switch-out alike */
    fk_bpf_label_place(b, pick);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_prandom_u32));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, S_THRESH));
    fk_bpf_jump_reg(b, BPF_JGE, BPF_REG_0, BPF_REG_1, in);
    if (t->flags_off) {
        /* not a thread on its way out (PF_EXITING): perf takes a thread's
         * per-task events away in do_exit, and a switch-out after that
         * makes no sample (~5 % of a shell loop's picks). Counted apart;
         * its time is not the profile's (see calibrate in offcpu.c) */
        unsigned alive = fk_bpf_label_new(b);
        emit_read_task(b, t->flags_off, 4);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_1, BPF_REG_10, S_CPU));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_AND, BPF_REG_1, FK_SWTIME_PF_EXITING));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, alive);
        bump(b, t->stats, ST_EXITING);
        fk_bpf_goto(b, in);
        fk_bpf_label_place(b, alive);
    }
    emit_now(b, stopped);
    if (t->cpu_off) {
        /* its CPU time now, for a switch-in the kernel may not show
         * (no clock read: a load through the task) */
        emit_read_task(b, t->cpu_off, 8);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, S_ENTRY));
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, S_CPU));
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, BPF_REG_1, 24));
    }
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, S_ENTRY));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, BPF_REG_7, 0));
    emit_pending_add(b, t, 1);
    bump(b, t->stats, ST_PICKED);
    /* its sample, written by the program (bpf_perf_event_output to this
     * CPU's event of the capture's: the stacks as perf takes them from the
     * tracepoint's registers), never by letting perf sample the
     * tracepoint: the kernel runs every program on a tracepoint and
     * samples its perf events only if all of them return non-zero, so a
     * filter's 0 would take other tools' and captures' samples too. Not
     * written (no event on this CPU, its ring full): counted, and the
     * switch-out no more a pick (no block without a sample) */
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_9, S_PICK));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, S_PICK + 4, 0));
    if (!emit_pick_state(b, t, prev_state, err, errlen))
        return false;
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_1, S_PICK + 8));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_7, S_PICK + 16));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_6));
    fk_bpf_emit_ld_map_fd(b, BPF_REG_2, t->samples);
    fk_bpf_emit(b, FK_BPF_MOV32_IMM(BPF_REG_3, -1));    /* BPF_F_CURRENT_CPU */
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_4, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_4, S_PICK));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_5, (int32_t)sizeof(struct fk_swtime_pick)));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_perf_event_output));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, in);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, S_ENTRY));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 0, 0));
    emit_pending_add(b, t, -1);
    bump(b, t->stats, ST_UNWRITTEN);
    fk_bpf_goto(b, in);

    /* its last switch-out: its exact total (from its first switch-out in
     * the window), and its entry cleared */
    fk_bpf_label_place(b, exiting);
    bump(b, t->stats, ST_EXITS);
    unsigned clear = fk_bpf_label_new(b);
    if (t->cpu_off) {
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, S_ENTRY));
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_8, BPF_REG_0, 8));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_8, 0, clear);
        emit_times(b, t, stopped);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 16));
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_2, BPF_REG_10, S_CPU));
        fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_SUB, BPF_REG_2, BPF_REG_1));
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_2, S_CPU));
        emit_block(b, t, FK_SWTIME_EXIT, BPF_REG_8, BPF_REG_7, S_CPU, clear);
    }
    fk_bpf_label_place(b, clear);
    if (t->array) {
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, S_ENTRY));
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 0, 0));
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 8, 0));
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 16, 0));
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 24, 0));
    } else {
        fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->outs);
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, S_TID));
        fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_delete_elem));
    }

    /* the thread switched in: its block, if its switch-out was picked --
     * looked up only while a pick waits for its switch-in (most switches
     * of a storm under the budget, and of a host whose target sleeps
     * little, find none: no read of the next thread, no lookup) */
    fk_bpf_label_place(b, in);
    fk_bpf_emit_map_lookup(b, t->pending, S_KEY);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, done);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, done);
    if (!emit_next_tid(b, t, next_pid, done, err, errlen))
        return false;
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_9, 0, done);
    lookup_entry(b, t->outs);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, done);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_8, BPF_REG_0, 0));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_8, 0, done);     /* not picked */
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 0, 0));
    emit_pending_add(b, t, -1);
    emit_now(b, stopped);
    emit_block(b, t, FK_SWTIME_BLOCK, BPF_REG_8, BPF_REG_7, 0, done);
    /* 1 for every hit: the program decides no other event's samples (a
     * tracepoint's programs are ANDed for all of its perf events) */
    fk_bpf_label_place(b, stopped);
    fk_bpf_label_place(b, done);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_0, 1));
    fk_bpf_emit(b, FK_BPF_EXIT());
    return true;
}

/* What the program needs of the running kernel that tracefs does not say:
 * task_struct's fields (BTF), whether sched_switch's raw arguments are the
 * ones the raw program reads (BTF), and where the scheduler's text lies
 * (kallsyms: a raw program's picks' kernel stacks start in the program
 * and the tracepoint's glue, cut off up to the first frame there). */
struct kfacts {
    int32_t cpu;            /* task_struct.se.sum_exec_runtime (0: unknown) */
    int32_t flags;          /* task_struct.flags (0: unknown) */
    int32_t pid;            /* task_struct.pid (0: unknown) */
    uint32_t raw_args;      /* 1: btf_trace_sched_switch is (void *, bool, task *,
                               task *, unsigned int), as RAW_* read it */
    uint64_t sched_lo, sched_hi;    /* [__sched_text_start, __sched_text_end) */
};

/* The type id behind typedefs and qualifiers. */
static const struct btf_type *btf_resolved(const struct btf *btf, uint32_t id)
{
    const struct btf_type *ty = btf__type_by_id(btf, id);
    for (int i = 0; ty && i < 8 && (btf_is_typedef(ty) || btf_is_mod(ty)); i++)
        ty = btf__type_by_id(btf, ty->type);
    return ty;
}

/* Whether sched_switch's probe takes (void *, bool, struct task_struct *,
 * struct task_struct *, unsigned int): the raw program's arguments. */
static bool raw_args_btf(const struct btf *btf)
{
    int id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
    const struct btf_type *ty = id > 0 ? btf_resolved(btf, (uint32_t)id) : NULL;
    if (ty && btf_is_ptr(ty))
        ty = btf_resolved(btf, ty->type);
    if (!ty || !btf_is_func_proto(ty) || btf_vlen(ty) != 5)
        return false;
    const struct btf_param *p = btf_params(ty);
    const struct btf_type *pre = btf_resolved(btf, p[1].type);
    const struct btf_type *st = btf_resolved(btf, p[4].type);
    for (int i = 2; i <= 3; i++) {
        const struct btf_type *q = btf_resolved(btf, p[i].type);
        const struct btf_type *task = q && btf_is_ptr(q) ? btf_resolved(btf, q->type) : NULL;
        const char *n = task && btf_is_struct(task) ? btf__name_by_offset(btf, task->name_off)
                                                    : NULL;
        if (!n || strcmp(n, "task_struct"))
            return false;
    }
    return pre && btf_is_int(pre) && pre->size == 1 && st && btf_is_int(st) && st->size == 4 &&
           !(btf_int_encoding(st) & BTF_INT_SIGNED);
}

/* [__sched_text_start, __sched_text_end) from /proc/kallsyms, read until
 * both are seen (once a boot: kept with the offsets); 0 0 when hidden. */
static void sched_text(uint64_t *lo, uint64_t *hi)
{
    *lo = *hi = 0;
    FILE *f = fopen("/proc/kallsyms", "re");
    if (!f)
        return;
    char line[512];
    for (unsigned n = 0; n < (1u << 22) && fgets(line, sizeof line, f) && !(*lo && *hi); n++) {
        unsigned long long a;
        char type, name[256];
        if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
            continue;
        if (!strcmp(name, "__sched_text_start"))
            *lo = a;
        else if (!strcmp(name, "__sched_text_end"))
            *hi = a;
    }
    fclose(f);
    if (!*lo || *hi <= *lo)
        *lo = *hi = 0;
}

/* The facts from the kernel's BTF and kallsyms (0 each, with *note saying
 * why, when not found). */
static void facts_now(struct kfacts *k, const char **note)
{
    memset(k, 0, sizeof *k);
    struct btf *btf = btf__load_vmlinux_btf();
    if (!btf) {
        *note = "no kernel BTF (/sys/kernel/btf/vmlinux)";
        return;
    }
    int32_t se = fk_btf_member_offset(btf, "task_struct", "se");
    int32_t sum = fk_btf_member_offset(btf, "sched_entity", "sum_exec_runtime");
    if (se >= 0 && sum >= 0)
        k->cpu = se + sum;
    else
        *note = "the kernel's BTF has no task_struct.se.sum_exec_runtime";
    int32_t f = fk_btf_member_offset(btf, "task_struct", "flags");
    k->flags = f > 0 ? f : 0;
    int32_t pid = fk_btf_member_offset(btf, "task_struct", "pid");
    k->pid = pid > 0 ? pid : 0;
    k->raw_args = raw_args_btf(btf);
    btf__free(btf);
    sched_text(&k->sched_lo, &k->sched_hi);
}

/* The facts kept for this boot (util/bootcache.h): loading the kernel's
 * BTF (5.4 MB here, read 4 KiB a read(2)) cost each capture ~8 ms of CPU,
 * ~45 ms of its start's wall time and ~2 MB of RSS (measured in 2811975),
 * reading kallsyms to the scheduler's text ~30 ms, and none of them can
 * change while the kernel runs. */
#define BTF_CACHE_NAME "btf-offsets"
static const char btf_cache_magic[8] = "FKBTF3";
struct btf_facts {
    int32_t sum_exec_runtime;
    int32_t task_flags;     /* task_struct.flags (0: unknown) */
    int32_t task_pid;       /* task_struct.pid (0: unknown) */
    uint32_t raw_args;
    uint64_t sched_lo, sched_hi;
};

/* A sound offset: inside task_struct's first 64 KiB, aligned to its
 * size (8: sum_exec_runtime, 4: flags, pid). */
static bool offset_sound(int32_t off, int32_t align)
{
    return off > 0 && off < (1 << 16) && off % align == 0;
}

static void kernel_facts(struct kfacts *k, const char **note)
{
    struct btf_facts c;
    if (fk_bootcache_get(BTF_CACHE_NAME, btf_cache_magic, &c, sizeof c) &&
        offset_sound(c.sum_exec_runtime, 8) && (!c.task_flags || offset_sound(c.task_flags, 4)) &&
        (!c.task_pid || offset_sound(c.task_pid, 4)) && c.raw_args <= 1 &&
        c.sched_lo <= c.sched_hi) {
        *k = (struct kfacts){ c.sum_exec_runtime, c.task_flags, c.task_pid, c.raw_args,
                              c.sched_lo, c.sched_hi };
        return;
    }
    facts_now(k, note);
    if (k->flags && !offset_sound(k->flags, 4))
        k->flags = 0;
    if (k->pid && !offset_sound(k->pid, 4))
        k->pid = 0;
    if (k->cpu && !offset_sound(k->cpu, 8)) {
        *note = "the kernel's BTF puts task_struct.se.sum_exec_runtime at an unexpected offset";
        k->cpu = 0;
    }
    if (!k->cpu)
        return;
    c = (struct btf_facts){ k->cpu, k->flags, k->pid, k->raw_args, k->sched_lo, k->sched_hi };
    (void)fk_bootcache_put(BTF_CACHE_NAME, btf_cache_magic, &c, sizeof c);
}

int32_t fk_swtime_cpu_offset(const char **note, int32_t *flags_off)
{
    struct kfacts k;
    kernel_facts(&k, note);
    if (flags_off)
        *flags_off = k.flags;
    return k.cpu;
}

static uint32_t pid_max(void)
{
    char buf[32];
    if (fk_read_small("/proc/sys/kernel/pid_max", buf, sizeof buf) <= 0)
        return 0;
    unsigned long v = strtoul(buf, NULL, 10);
    return v > 0 && v <= 0x400000 ? (uint32_t)v : 0;
}

/* t->c to the program (one writer at a time: the caller's). */
static bool set_cfg(struct fk_swtime *t)
{
    uint32_t k = 0;
    return bpf_map_update_elem(t->cfg, &k, &t->c, BPF_ANY) == 0;
}

/* The pick threshold for one in n: 2^32 / n (n 1: every switch-out). */
static uint64_t threshold_for(uint64_t n)
{
    return n > 1 ? (1ull << 32) / n : 1ull << 32;
}

static int on_block(void *ctx, void *data, size_t size)
{
    struct fk_swtime *t = ctx;
    if (size >= sizeof(struct fk_swtime_block)) {
        struct fk_swtime_block b;
        memcpy(&b, data, sizeof b);
        t->fn(t->fn_ctx, &b);
        t->drained++;
    }
    return 0;
}

/* An array map made BPF_F_MMAPABLE, of bytes bytes (its entries from the
 * mapping's start, each its value's size rounded up to 8), mapped
 * read-only: *len the mapping's length. NULL with err set on failure. */
static const void *map_array(int fd, const char *name, size_t bytes, size_t *len, char *err,
                             size_t errlen)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pg = page > 0 ? (size_t)page : 4096;
    *len = (bytes + pg - 1) / pg * pg;
    void *m = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "mapping the BPF map %s (%zu bytes): %s", name, *len,
                 strerror(errno));
        return NULL;
    }
    return m;
}

static bool map_stats(struct fk_swtime *t, char *err, size_t errlen)
{
    t->stats_map = map_array(t->stats, "fk_sw_stats", (size_t)t->ncpus * ST_STRIDE,
                             &t->stats_len, err, errlen);
    return t->stats_map != NULL;
}

/* fk_sw_out mapped, where it is an array (t->array): t->outs_map. */
static bool map_outs(struct fk_swtime *t, char *err, size_t errlen)
{
    if (!t->array)
        return true;
    t->outs_map = map_array(t->outs, "fk_sw_out", (size_t)t->entries * sizeof(struct entry),
                            &t->outs_len, err, errlen);
    return t->outs_map != NULL;
}

/* tid's entry as the program last wrote it: from the mapping (array) or
 * by a lookup (hash); false when it has none. The fields are read one by
 * one (the program writes them so: an entry changing meanwhile may mix
 * two moments, as a lookup's copy may). */
static bool entry_of(const struct fk_swtime *t, pid_t tid, struct entry *e)
{
    if (tid <= 0)
        return false;
    uint32_t k = (uint32_t)tid;
    if (!t->outs_map)
        return bpf_map_lookup_elem(t->outs, &k, e) == 0;
    if (k >= t->entries)
        return false;
    const struct entry *m = &t->outs_map[k];
    e->out = __atomic_load_n(&m->out, __ATOMIC_RELAXED);
    e->t0 = __atomic_load_n(&m->t0, __ATOMIC_RELAXED);
    e->cpu0 = __atomic_load_n(&m->cpu0, __ATOMIC_RELAXED);
    e->cpu_out = __atomic_load_n(&m->cpu_out, __ATOMIC_RELAXED);
    return true;
}

/* Whether the record's prev_state letters are the task states' own bits
 * of Linux 4.14 and later (S 0x1 ... P 0x40, I 0x80, preempted 0x100): the
 * layout fk_swtime_pick_state rebuilds from a raw program's prev_state. */
static bool states_known(const struct fk_tp_format *sw, uint64_t preempt_bit)
{
    static const char letters[] = "SDTtXZPI";
    unsigned seen = 0;
    for (unsigned i = 0; i < sw->nflags; i++) {
        const char *l = sw->flags[i].letter;
        const char *at = l[0] && !l[1] ? strchr(letters, l[0]) : NULL;
        if (!at || sw->flags[i].bit != 1ull << (at - letters))
            return false;
        seen |= 1u << (at - letters);
    }
    return (seen & 3) == 3 && preempt_bit == 0x100;
}

uint64_t fk_swtime_pick_state(const struct fk_swtime *t, uint64_t state)
{
    return t->raw ? fk_swtime_raw_state(state) : state;
}

uint64_t fk_swtime_raw_state(uint64_t state)
{
    if (state >> 32 & 1)
        return 0x100;       /* preempted (TASK_REPORT_MAX) */
    uint32_t s = (uint32_t)state;
    /* __task_state_index's report: TASK_IDLE as I, an rtlock's wait and a
     * frozen task as D, else the highest reported bit (a dying task: its
     * exit state, Z) */
    if ((s & TASK_NOLOAD_IDLE) == TASK_NOLOAD_IDLE)
        return 0x80;
    if (s & (TASK_RTLOCK_WAIT | TASK_FROZEN))
        return 0x2;
    if (s & TASK_DEAD)
        return 0x20;
    s &= TASK_REPORT;
    uint64_t top = 0;
    for (uint32_t bit = 1; bit <= TASK_REPORT; bit <<= 1)
        if (s & bit)
            top = bit;
    return top;
}

bool fk_swtime_sched_text(const struct fk_swtime *t, uint64_t *lo, uint64_t *hi)
{
    *lo = t->sched_lo;
    *hi = t->sched_hi;
    return t->raw && t->sched_lo < t->sched_hi;
}

bool fk_swtime_is_raw(const struct fk_swtime *t)
{
    return t->raw;
}

/* Load the program (raw, else a tracepoint event's) into t->prog and
 * attach it. */
static bool load_attach(struct fk_swtime *t, const struct fk_tp_format *sw, uint64_t exit_bits,
                        uint64_t preempt_bit, char *err, size_t errlen)
{
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    bool ok = generate(&b, t, sw, exit_bits, preempt_bit, err, errlen) &&
              fk_bpf_prog_load(&b, t->raw ? BPF_PROG_TYPE_RAW_TRACEPOINT : BPF_PROG_TYPE_TRACEPOINT,
                               "fk_switch_time", &t->prog, err, errlen);
    fk_bpf_builder_free(&b);
    if (ok && t->raw)
        ok = fk_bpf_attach_raw_tracepoint("sched_switch", t->prog, &t->event, err, errlen);
    else if (ok)
        ok = fk_bpf_attach_tracepoint(t->tp_id, t->prog, &t->event, err, errlen);
    if (!ok && t->prog >= 0) {
        close(t->prog);
        t->prog = -1;
    }
    return ok;
}

bool fk_swtime_new(const struct fk_tp_format *sw, uint64_t exit_bits, uint64_t preempt_bit,
                   size_t ring_bytes, struct fk_swtime **out, char *err, size_t errlen)
{
    *out = NULL;
    struct fk_swtime *t = fk_calloc(1, sizeof *t);
    t->prog = t->outs = t->cfg = t->stats = t->cgrp = t->tgids = t->rb = t->cgroup_fd = -1;
    t->samples = t->pending = -1;
    int ncpus = libbpf_num_possible_cpus();
    t->ncpus = ncpus > 0 ? (uint32_t)ncpus : 1;
    t->event = t->fork_prog = t->fork_event = -1;
    t->tp_id = sw->id;
    uint32_t pm = pid_max();
    t->array = pm && pm <= ARRAY_PID_MAX;
    t->entries = t->array ? pm : HASH_THREADS;
    t->ring_bytes = ring_bytes;
    struct kfacts kf;
    kernel_facts(&kf, &t->cpu_note);
    t->cpu_off = kf.cpu;
    t->flags_off = kf.flags;
    t->pid_off = kf.pid;
    t->sched_lo = kf.sched_lo;
    t->sched_hi = kf.sched_hi;
    /* a raw tracepoint program where the kernel's arguments and states are
     * the ones it reads: no tracepoint record built at every switch of the
     * host (a tracepoint event's program runs after perf has built one) */
    t->raw = kf.raw_args && kf.pid && states_known(sw, preempt_bit);
    bool ok = fk_bpf_map_create(t->array ? BPF_MAP_TYPE_ARRAY : BPF_MAP_TYPE_HASH, "fk_sw_out", 4,
                                sizeof(struct entry), t->entries, t->array ? BPF_F_MMAPABLE : 0,
                                &t->outs, err, errlen) &&
              map_outs(t, err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_sw_cfg", 4, sizeof(struct cfg), 1, 0,
                                &t->cfg, err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_sw_stats", 4, ST_STRIDE, t->ncpus,
                                BPF_F_MMAPABLE, &t->stats, err, errlen) &&
              map_stats(t, err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_CGROUP_ARRAY, "fk_sw_cgroup", 4, 4, 1, 0, &t->cgrp,
                                err, errlen) &&
              fk_bpf_map_create(t->array ? BPF_MAP_TYPE_ARRAY : BPF_MAP_TYPE_HASH, "fk_sw_tgids",
                                4, 1, t->array ? pm : HASH_TGIDS, 0, &t->tgids, err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fk_sw_blocks", 0, 0, (uint32_t)ring_bytes, 0,
                                &t->rb, err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "fk_sw_samples", 4, 4, t->ncpus, 0,
                                &t->samples, err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_sw_pending", 4, 8, 1, 0, &t->pending, err,
                                errlen);
    if (ok) {
        t->ring = ring_buffer__new(t->rb, on_block, t, NULL);
        if (!t->ring) {
            snprintf(err, errlen, "BPF ring buffer of %zu bytes: %s", ring_bytes, strerror(errno));
            ok = false;
        }
    }
    /* attached last, idle (stopped at 1 ns) until fk_swtime_filter: the
     * attachment is what tells whether the capture can time switches in
     * the kernel. No probe of its own: an event with a program attached
     * waits when closed for an RCU tasks-trace grace period (Linux 6.18's
     * perf_event_detach_bpf_prog), which took 15 s before a window with
     * both CPUs busy; this one is kept until the files are written. */
    t->c = (struct cfg){ STOP_IDLE, FK_SWTIME_ALL, threshold_for(1), 0 };
    if (ok && !set_cfg(t)) {
        snprintf(err, errlen, "setting the BPF program's configuration: %s", strerror(errno));
        ok = false;
    }
    if (ok && !load_attach(t, sw, exit_bits, preempt_bit, err, errlen)) {
        /* (a kernel that refuses the raw program: the tracepoint's) */
        ok = t->raw;
        t->raw = false;
        ok = ok && load_attach(t, sw, exit_bits, preempt_bit, err, errlen);
    }
    if (!ok) {
        fk_swtime_free(t);
        return false;
    }
    *out = t;
    return true;
}

bool fk_swtime_filter(struct fk_swtime *t, enum fk_swtime_filter f, const char *cgroup_dir,
                      uint64_t n, char *err, size_t errlen)
{
    if (f == FK_SWTIME_CGROUP) {
        t->cgroup_fd = open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint32_t k = 0;
        if (t->cgroup_fd < 0 || bpf_map_update_elem(t->cgrp, &k, &t->cgroup_fd, BPF_ANY) != 0) {
            snprintf(err, errlen, "the cgroup %s for the BPF program: %s", cgroup_dir,
                     strerror(errno));
            return false;
        }
    }
    t->c.filter = (uint64_t)f;
    t->c.threshold = threshold_for(n);
    t->c.stop_ns = 0;
    if (!set_cfg(t)) {
        snprintf(err, errlen, "setting the BPF program's filter: %s", strerror(errno));
        return false;
    }
    return true;
}

bool fk_swtime_set_n(struct fk_swtime *t, uint64_t n)
{
    t->c.threshold = threshold_for(n);
    return set_cfg(t);
}

bool fk_swtime_start(struct fk_swtime *t)
{
    t->c.started = 1;
    return set_cfg(t);
}

bool fk_swtime_exact(const struct fk_swtime *t, const char **note)
{
    *note = t->cpu_off ? NULL : t->cpu_note;
    return t->cpu_off != 0;
}

bool fk_swtime_thread(struct fk_swtime *t, pid_t tid, uint64_t *t0, uint64_t *cpu0)
{
    struct entry e;
    if (!entry_of(t, tid, &e) || !e.t0)
        return false;
    *t0 = e.t0;
    *cpu0 = e.cpu0;
    return true;
}

int fk_swtime_others(const struct fk_swtime *t)
{
    int n = t->event < 0 ? -1
          : t->raw ? fk_bpf_raw_tracepoint_links("sched_switch")
          : fk_bpf_tracepoint_programs(t->event);
    return n > 0 ? n - 1 : n;
}

/* Every entry with a first switch-out, in batches (one system call a
 * THREADS_BATCH entries: the array holds pid_max of them, 32768 here);
 * one entry at a time where the kernel has no batch lookup. */
#define THREADS_BATCH 4096u

size_t fk_swtime_threads(struct fk_swtime *t, bool (*fn)(void *ctx, pid_t tid), void *ctx)
{
    if (t->outs_map) {      /* the array, mapped: loads */
        size_t n = 0;
        for (uint32_t k = 1; k < t->entries; k++) {
            if (!__atomic_load_n(&t->outs_map[k].t0, __ATOMIC_RELAXED))
                continue;
            n++;
            if (!fn(ctx, (pid_t)k))
                break;
        }
        return n;
    }
    uint32_t *keys = fk_calloc(THREADS_BATCH, sizeof *keys);
    struct entry *vals = fk_calloc(THREADS_BATCH, sizeof *vals);
    size_t n = 0;
    uint32_t next = 0;
    bool first = true, more = true;
    while (more) {
        uint32_t count = THREADS_BATCH;
        LIBBPF_OPTS(bpf_map_batch_opts, opts);
        int rc = bpf_map_lookup_batch(t->outs, first ? NULL : &next, &next, keys, vals, &count,
                                      &opts);
        if (rc != 0 && errno != ENOENT) {
            if (!first)
                goto out;   /* (a later batch failed: what was seen) */
            break;          /* no batch lookup: one at a time, below */
        }
        more = rc == 0;
        first = false;
        for (uint32_t i = 0; i < count; i++) {
            if (!vals[i].t0 || !keys[i])
                continue;
            n++;
            if (!fn(ctx, (pid_t)keys[i]))
                goto out;
        }
        if (!more)
            goto out;
    }
    uint32_t k, prev;
    struct entry e;
    for (int rc = bpf_map_get_next_key(t->outs, NULL, &k); rc == 0;
         prev = k, rc = bpf_map_get_next_key(t->outs, &prev, &k)) {
        if (!k || bpf_map_lookup_elem(t->outs, &k, &e) != 0 || !e.t0)
            continue;
        n++;
        if (!fn(ctx, (pid_t)k))
            break;
    }
out:
    free(keys);
    free(vals);
    return n;
}

bool fk_swtime_sample_event(struct fk_swtime *t, int cpu, int fd)
{
    uint32_t k = (uint32_t)cpu;
    uint32_t v = (uint32_t)fd;
    return cpu >= 0 && (uint32_t)cpu < t->ncpus && fd >= 0 &&
           bpf_map_update_elem(t->samples, &k, &v, BPF_ANY) == 0;
}

bool fk_swtime_add_tgid(struct fk_swtime *t, pid_t tgid)
{
    uint32_t k = (uint32_t)tgid;
    uint8_t v = 1;
    return tgid > 0 && bpf_map_update_elem(t->tgids, &k, &v, BPF_ANY) == 0;
}

void fk_swtime_forget_tgid(struct fk_swtime *t, pid_t tgid)
{
    uint32_t k = (uint32_t)tgid;
    uint8_t v = 0;
    if (t->array)   /* (an array's entries cannot be deleted: its byte 0) */
        (void)bpf_map_update_elem(t->tgids, &k, &v, BPF_ANY);
    else
        (void)bpf_map_delete_elem(t->tgids, &k);
}

bool fk_swtime_follow_forks(struct fk_swtime *t, char *err, size_t errlen)
{
    /* the child of a process whose tgid is in tgids is put in it before
     * it first runs, so a new process's first switches are timed -- not
     * only those after its FORK record reached user space, tens of ms
     * later. A new thread's tid goes in too: harmless, as no process has
     * that tgid while the thread lives, and forgotten at its EXIT
     * (fk_swtime_forget_tgid). */
    return t->c.filter != FK_SWTIME_TGIDS ||
           fk_bpf_fork_follower(t->tgids, t->array ? FK_BPF_FORK_FLAG_ARRAY : FK_BPF_FORK_FLAG,
                                FK_BPF_FORK_KEEP, -1, "fk_switch_fork",
                                &t->fork_prog, &t->fork_event, err, errlen);
}

size_t fk_swtime_events(const struct fk_swtime *t, int fds[2])
{
    size_t n = 0;
    if (t->event >= 0)
        fds[n++] = t->event;
    if (t->fork_event >= 0)
        fds[n++] = t->fork_event;
    return n;
}

void fk_swtime_stop(struct fk_swtime *t, uint64_t at_ns)
{
    t->c.stop_ns = at_ns ? at_ns : STOP_IDLE;
    t->c.threshold = 0;     /* nothing picked from now: no sample past the end */
    (void)set_cfg(t);
}

size_t fk_swtime_drain(struct fk_swtime *t, void (*fn)(void *ctx, const struct fk_swtime_block *b),
                       void *ctx)
{
    t->fn = fn;
    t->fn_ctx = ctx;
    t->drained = 0;
    (void)ring_buffer__consume(t->ring);
    return t->drained;
}

bool fk_swtime_pending(struct fk_swtime *t, pid_t tid, uint64_t *out)
{
    struct entry e;
    if (!entry_of(t, tid, &e) || !e.out)
        return false;
    *out = e.out;
    return true;
}

/* Counter i summed over the CPUs, from the mapped stats. */
static uint64_t stat_sum(const struct fk_swtime *t, int i)
{
    uint64_t sum = 0;
    for (uint32_t c = 0; c < t->ncpus; c++)
        sum += __atomic_load_n((const uint64_t *)(const void *)
                               (t->stats_map + (size_t)c * ST_STRIDE + 8 * (size_t)i),
                               __ATOMIC_RELAXED);
    return sum;
}

uint64_t fk_swtime_outs(struct fk_swtime *t)
{
    return stat_sum(t, ST_OUTS);
}

void fk_swtime_stats(struct fk_swtime *t, struct fk_swtime_stats *st)
{
    memset(st, 0, sizeof *st);
    st->map_full = stat_sum(t, ST_MAP_FULL);
    st->ring_full = stat_sum(t, ST_RING_FULL);
    st->exits = stat_sum(t, ST_EXITS);
    st->outs = stat_sum(t, ST_OUTS);
    st->picked = stat_sum(t, ST_PICKED);
    st->exiting = stat_sum(t, ST_EXITING);
    st->unwritten = stat_sum(t, ST_UNWRITTEN);
    struct bpf_prog_info info;
    uint32_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (bpf_obj_get_info_by_fd(t->prog, &info, &len) == 0)
        st->missed = info.recursion_misses;
}

/* The threads' and the processes' maps' size: arrays of pid_max entries
 * (a byte per process rounded to 8, as the kernel keeps it), or hashes
 * (preallocated: an element's header with its key and value). */
static size_t maps_bytes(bool array, uint32_t entries)
{
    return array ? (size_t)entries * (sizeof(struct entry) + 8)
                 : (size_t)entries * (64 + sizeof(struct entry)) + (size_t)HASH_TGIDS * (64 + 8);
}

size_t fk_swtime_bytes(const struct fk_swtime *t)
{
    return t->ring_bytes + maps_bytes(t->array, t->entries);
}

size_t fk_swtime_bytes_for(size_t ring_bytes)
{
    uint32_t pm = pid_max();
    bool array = pm && pm <= ARRAY_PID_MAX;
    return ring_bytes + maps_bytes(array, array ? pm : HASH_THREADS);
}

void fk_swtime_free(struct fk_swtime *t)
{
    if (!t)
        return;
    ring_buffer__free(t->ring);
    int *fds[] = { &t->event, &t->fork_event, &t->prog, &t->fork_prog, &t->outs, &t->cfg,
                   &t->stats, &t->cgrp, &t->tgids, &t->rb, &t->samples, &t->cgroup_fd,
                   &t->pending };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    if (t->stats_map)
        munmap((void *)t->stats_map, t->stats_len);
    if (t->outs_map)
        munmap((void *)t->outs_map, t->outs_len);
    free(t);
}
