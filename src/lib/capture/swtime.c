/* SPDX-License-Identifier: GPL-2.0-only */
/* Off-CPU switch timing in the kernel: see swtime.h. */
#include "capture/swtime.h"
#include "capture/bpf.h"
#include "util/fk.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Switch-out times by tid: an array indexed by tid where pid_max is small
 * (the lookup is inlined by the verifier, no hashing: 32768 tids here,
 * 256 KiB), else a hash of this many threads. */
#define ARRAY_PID_MAX (1u << 18)
#define HASH_THREADS 65536u

/* cfg's one value: when to stop (0: not yet; STOP_IDLE: before the
 * window), which threads */
struct cfg { uint64_t stop_ns, filter; };
#define STOP_IDLE 1

/* A hit reads the clock (bpf_ktime_get_ns) only once it knows a thread
 * it times is switched out or in: on this VM (PVM) every clock read traps
 * to the hypervisor (~190 ns of the program's ~500 a hit at a switch
 * storm, kernel.bpf_stats_enabled; rdtsc ~120 ns from user space), and
 * most hits of a busy host are of threads not timed. (The scheduler's own
 * clock, rq->clock reached through BTF, was tried instead: no cheaper a
 * hit, and microseconds stale after a wake-up that preempts.) */

struct fk_swtime {
    int prog, outs, cfg, stats, cgrp, tgids, rb;
    int event;                  /* the switch program's own event */
    int fork_prog, fork_event;  /* FK_SWTIME_TGIDS: new processes followed */
    uint64_t tp_id;             /* sched_switch's */
    uint64_t filter;
    bool array;
    uint32_t entries;
    size_t ring_bytes;
    int cgroup_fd;
    struct ring_buffer *ring;
    void (*fn)(void *ctx, const struct fk_swtime_block *b);
    void *fn_ctx;
    size_t drained;
};

/* stats[0].counter[i] += 1 (per CPU: no atomics). Clobbers r0-r5. */
static void bump(struct fk_bpf_builder *b, int stats_fd, int i)
{
    unsigned skip = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -4, 0));
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, stats_fd);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -4));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, skip);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, (int16_t)(8 * i)));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, BPF_REG_1, (int16_t)(8 * i)));
    fk_bpf_label_place(b, skip);
}

/* r0 = &outs[tid at r10-8] (or NULL). Clobbers r1-r5. */
static void lookup_out(struct fk_bpf_builder *b, int outs_fd)
{
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, outs_fd);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
}

/* Write the block {r9, kind, out_reg, in_reg} to the ring buffer, then
 * goto next. Clobbers r0-r5. */
static void emit_block(struct fk_bpf_builder *b, const struct fk_swtime *t, enum fk_swtime_kind kind,
                       unsigned out_reg, unsigned in_reg, unsigned next)
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
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_0));
    /* no wake-up: the reader drains it on its own clock */
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, BPF_RB_NO_WAKEUP));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ringbuf_submit));
    fk_bpf_goto(b, next);
    fk_bpf_label_place(b, full);
    bump(b, t->stats, 1);
    fk_bpf_goto(b, next);
}

/* r7 = the hit's time (CLOCK_MONOTONIC ns); then to stopped if the
 * window has ended (its end at [-32]). Clobbers r0-r5. */
static void emit_now(struct fk_bpf_builder *b, unsigned stopped)
{
    unsigned go = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ktime_get_ns));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_7, BPF_REG_0));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, -32));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, go);
    fk_bpf_jump_reg(b, BPF_JGE, BPF_REG_7, BPF_REG_1, stopped);
    fk_bpf_label_place(b, go);
}

/* The program. Registers: r6 ctx, r7 now
 * (0: not read yet: a hit of threads not timed reads no clock), r8 the
 * filter then the block's switch-out, r9 the tid; the stack: [-4] array
 * index, [-8] tid key, [-16] a new entry's value, [-32] the window's
 * end, [-40] the switched-in thread's entry. */
static bool generate(struct fk_bpf_builder *b, const struct fk_swtime *t,
                     const struct fk_tp_format *sw, uint64_t exit_bits, uint64_t preempt_bit,
                     char *err, size_t errlen)
{
    const struct fk_tp_field *prev_pid = fk_tp_field(sw, "prev_pid");
    const struct fk_tp_field *prev_state = fk_tp_field(sw, "prev_state");
    const struct fk_tp_field *next_pid = fk_tp_field(sw, "next_pid");
    if (!prev_pid || !prev_state || !next_pid) {
        snprintf(err, errlen, "sched:sched_switch has no prev_pid/prev_state/next_pid field");
        return false;
    }
    unsigned in = fk_bpf_label_new(b), out = fk_bpf_label_new(b);
    unsigned by_tgid = fk_bpf_label_new(b), keep = fk_bpf_label_new(b);
    unsigned store = fk_bpf_label_new(b), insert = fk_bpf_label_new(b);

    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_6, BPF_REG_1));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_7, 0));
    /* stopped? which threads? (no clock read yet: most hits of a busy
     * host are of threads not timed) */
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -4, 0));
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->cfg);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -4));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, out);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, STOP_IDLE, out);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_1, -32));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_8, BPF_REG_0, 8));

    /* the thread switched out (current is still prev) */
    if (!fk_bpf_load_field(b, BPF_REG_9, BPF_REG_6, prev_pid, err, errlen))
        return false;
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_9, 0, in);     /* the idle task */
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_8, FK_SWTIME_ALL, keep);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_8, FK_SWTIME_TGIDS, by_tgid);
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->cgrp);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, 0));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_current_task_under_cgroup));
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 1, in);
    fk_bpf_goto(b, keep);
    fk_bpf_label_place(b, by_tgid);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -8));
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->tgids);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, in);
    fk_bpf_label_place(b, keep);
    emit_now(b, out);
    /* its last switch-out (exiting, not preempted): forget it */
    if (!fk_bpf_load_field(b, BPF_REG_1, BPF_REG_6, prev_state, err, errlen))
        return false;
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_1));
    fk_bpf_emit_ld_imm64(b, BPF_REG_3, exit_bits);
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_AND, BPF_REG_2, BPF_REG_3));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_2, 0, store);
    fk_bpf_emit_ld_imm64(b, BPF_REG_3, preempt_bit);
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_AND, BPF_REG_1, BPF_REG_3));
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_1, 0, store);
    bump(b, t->stats, 2);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_9, -8));
    lookup_out(b, t->outs);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, in);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_8, BPF_REG_0, 0));
    if (t->array) {
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 0, 0));     /* (r9 is kept) */
    } else {
        fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->outs);
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
        fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_delete_elem));
    }
    /* a switch-out kept with no switch-in seen since: said as a gap
     * bounded by this one, as at any later switch-out (cleared silently,
     * the block holding a recorded switch-out was lost with no count
     * moving: CI run 15) */
    fk_bpf_jump_imm(b, BPF_JLE, BPF_REG_8, FK_SWTIME_RUNNING, in);
    emit_block(b, t, FK_SWTIME_UNSEEN_IN, BPF_REG_8, BPF_REG_7, in);
    /* off CPU from now: in place when the thread has an entry */
    fk_bpf_label_place(b, store);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_9, -8));
    lookup_out(b, t->outs);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, insert);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_8, BPF_REG_0, 0));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_0, BPF_REG_7, 0));
    fk_bpf_jump_imm(b, BPF_JLE, BPF_REG_8, FK_SWTIME_RUNNING, in);
    /* switched out again with no switch-in seen since (the kernel ran
     * the thread again without a sched_switch hit: seen on Linux 6.18,
     * by bpftrace too): off CPU for at most the time until now, said
     * with both times */
    emit_block(b, t, FK_SWTIME_UNSEEN_IN, BPF_REG_8, BPF_REG_7, in);
    fk_bpf_label_place(b, insert);
    if (!t->array) {
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_7, -16));
        fk_bpf_emit_ld_map_fd(b, BPF_REG_1, t->outs);
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_3, BPF_REG_10));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, -16));
        fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_ANY));
        fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_update_elem));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, in);
    }
    bump(b, t->stats, 0);       /* no room (or a tid past the array) */

    /* the thread switched in: its block, if its switch-out was kept */
    fk_bpf_label_place(b, in);
    if (!fk_bpf_load_field(b, BPF_REG_9, BPF_REG_6, next_pid, err, errlen))
        return false;
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_9, 0, out);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_9, -8));
    lookup_out(b, t->outs);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, out);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_8, BPF_REG_0, 0));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_8, 0, out);     /* not seen yet */
    unsigned timed = fk_bpf_label_new(b);
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_7, 0, timed);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_0, -40));
    emit_now(b, out);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_0, BPF_REG_10, -40));
    fk_bpf_label_place(b, timed);
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_0, 0, FK_SWTIME_RUNNING));
    /* a block; or (RUNNING) a switch-in with no switch-out seen since the
     * last one: said as such, from RUNNING */
    unsigned whole = fk_bpf_label_new(b);
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_8, FK_SWTIME_RUNNING, whole);
    emit_block(b, t, FK_SWTIME_UNSEEN_OUT, BPF_REG_8, BPF_REG_7, out);
    fk_bpf_label_place(b, whole);
    emit_block(b, t, FK_SWTIME_BLOCK, BPF_REG_8, BPF_REG_7, out);
    fk_bpf_label_place(b, out);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_0, 1));     /* perf records as it would */
    fk_bpf_emit(b, FK_BPF_EXIT());
    return true;
}

static uint32_t pid_max(void)
{
    char buf[32];
    if (fk_read_small("/proc/sys/kernel/pid_max", buf, sizeof buf) <= 0)
        return 0;
    unsigned long v = strtoul(buf, NULL, 10);
    return v > 0 && v <= 0x400000 ? (uint32_t)v : 0;
}

static bool set_cfg(struct fk_swtime *t, uint64_t stop_ns, uint64_t filter)
{
    uint32_t k = 0;
    struct cfg c = { stop_ns, filter };
    return bpf_map_update_elem(t->cfg, &k, &c, BPF_ANY) == 0;
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

bool fk_swtime_new(const struct fk_tp_format *sw, uint64_t exit_bits, uint64_t preempt_bit,
                   size_t ring_bytes, struct fk_swtime **out, char *err, size_t errlen)
{
    *out = NULL;
    struct fk_swtime *t = fk_calloc(1, sizeof *t);
    t->prog = t->outs = t->cfg = t->stats = t->cgrp = t->tgids = t->rb = t->cgroup_fd = -1;
    t->event = t->fork_prog = t->fork_event = -1;
    t->tp_id = sw->id;
    uint32_t pm = pid_max();
    t->array = pm && pm <= ARRAY_PID_MAX;
    t->entries = t->array ? pm : HASH_THREADS;
    t->ring_bytes = ring_bytes;
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    bool ok = fk_bpf_map_create(t->array ? BPF_MAP_TYPE_ARRAY : BPF_MAP_TYPE_HASH, "fk_sw_out", 4, 8,
                                t->entries, 0, &t->outs, err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_sw_cfg", 4, sizeof(struct cfg), 1, 0,
                                &t->cfg, err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "fk_sw_stats", 4, 24, 1, 0, &t->stats,
                                err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_CGROUP_ARRAY, "fk_sw_cgroup", 4, 4, 1, 0, &t->cgrp,
                                err, errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_HASH, "fk_sw_tgids", 4, 1, 16384, 0, &t->tgids, err,
                                errlen) &&
              fk_bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fk_sw_blocks", 0, 0, (uint32_t)ring_bytes, 0,
                                &t->rb, err, errlen) &&
              generate(&b, t, sw, exit_bits, preempt_bit, err, errlen) &&
              fk_bpf_prog_load(&b, BPF_PROG_TYPE_TRACEPOINT, "fk_switch_time", &t->prog, err,
                               errlen);
    fk_bpf_builder_free(&b);
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
    if (ok && !set_cfg(t, STOP_IDLE, FK_SWTIME_ALL)) {
        snprintf(err, errlen, "setting the BPF program's configuration: %s", strerror(errno));
        ok = false;
    }
    ok = ok && fk_bpf_attach_tracepoint(t->tp_id, t->prog, &t->event, err, errlen);
    if (!ok) {
        fk_swtime_free(t);
        return false;
    }
    *out = t;
    return true;
}

bool fk_swtime_filter(struct fk_swtime *t, enum fk_swtime_filter f, const char *cgroup_dir,
                      char *err, size_t errlen)
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
    t->filter = (uint64_t)f;
    if (!set_cfg(t, 0, (uint64_t)f)) {
        snprintf(err, errlen, "setting the BPF program's filter: %s", strerror(errno));
        return false;
    }
    return true;
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
    return t->filter != FK_SWTIME_TGIDS ||
           fk_bpf_fork_follower(t->tgids, FK_BPF_FORK_FLAG, FK_BPF_FORK_KEEP, -1, "fk_switch_fork",
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
    uint32_t k = 0;
    struct cfg c;
    if (bpf_map_lookup_elem(t->cfg, &k, &c) == 0) {
        c.stop_ns = at_ns ? at_ns : STOP_IDLE;
        (void)bpf_map_update_elem(t->cfg, &k, &c, BPF_ANY);
    }
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
    uint32_t k = (uint32_t)tid;
    uint64_t v = 0;
    if (tid <= 0 || bpf_map_lookup_elem(t->outs, &k, &v) != 0 || v <= FK_SWTIME_RUNNING)
        return false;
    *out = v;
    return true;
}

void fk_swtime_stats(struct fk_swtime *t, struct fk_swtime_stats *st)
{
    memset(st, 0, sizeof *st);
    int n = libbpf_num_possible_cpus();
    if (n <= 0)
        return;
    uint64_t *v = fk_calloc((size_t)n * 3, sizeof *v);
    uint32_t k = 0;
    if (bpf_map_lookup_elem(t->stats, &k, v) == 0)
        for (int i = 0; i < n; i++) {
            st->map_full += v[3 * i];
            st->ring_full += v[3 * i + 1];
            st->exits += v[3 * i + 2];
        }
    free(v);
    struct bpf_prog_info info;
    uint32_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (bpf_obj_get_info_by_fd(t->prog, &info, &len) == 0)
        st->missed = info.recursion_misses;
}

/* The switch-out map's size: an array of pid_max entries, or a hash. */
static size_t outs_bytes(bool array, uint32_t entries)
{
    return (size_t)entries * (array ? 8 : 64);
}

size_t fk_swtime_bytes(const struct fk_swtime *t)
{
    return t->ring_bytes + outs_bytes(t->array, t->entries);
}

size_t fk_swtime_bytes_for(size_t ring_bytes)
{
    uint32_t pm = pid_max();
    bool array = pm && pm <= ARRAY_PID_MAX;
    return ring_bytes + outs_bytes(array, array ? pm : HASH_THREADS);
}

void fk_swtime_free(struct fk_swtime *t)
{
    if (!t)
        return;
    ring_buffer__free(t->ring);
    int *fds[] = { &t->event, &t->fork_event, &t->prog, &t->fork_prog, &t->outs, &t->cfg,
                   &t->stats, &t->cgrp, &t->tgids, &t->rb, &t->cgroup_fd };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    free(t);
}
