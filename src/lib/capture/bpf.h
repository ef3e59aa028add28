/* SPDX-License-Identifier: GPL-2.0-only */
/* In-kernel programs for the capture (off-CPU switch timing, Python frames
 * read at sample time, the process tree of a 'pid' target): built from instructions at run time, so a host
 * needs no compiler and no kernel headers, and loaded, given maps and
 * attached to the perf events the capture opened through libbpf's
 * low-level API. Map access and the BPF ring buffer are libbpf's own
 * (bpf_map_update_elem, ring_buffer__new...): this module does not wrap
 * them again.
 *
 * Invariants: a builder that failed (no memory, over FK_BPF_MAX_INSNS, a
 * jump to a label never placed or out of the 16-bit range) refuses to
 * load and says why; a label is resolved only by fk_bpf_prog_load, so
 * forward and backward jumps read the same; every fd returned is the
 * caller's to close. Errors are values (false + one line in err); a
 * verifier rejection carries the log's last line, which names the
 * instruction and the reason. */
#ifndef FK_BPF_H
#define FK_BPF_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct btf;

/* The byte offset of member name in struct sname of btf (the kernel's),
 * looking into its anonymous members (mm_struct's are in one): -1 when it
 * has none, or not at a byte. For the programs that read kernel structures
 * (capture/swtime.c, capture/pygate.c). */
int32_t fk_btf_member_offset(const struct btf *btf, const char *sname, const char *name);

/* Instructions (the encoding of linux/bpf.h; the kernel's own macros are
 * not part of its uapi). size is BPF_B, BPF_H, BPF_W or BPF_DW; op an
 * ALU op (BPF_ADD...) or a jump op (BPF_JEQ...). */
#define FK_BPF_INSN(c, d, s, o, i) \
    ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define FK_BPF_MOV64_IMM(dst, imm)   FK_BPF_INSN(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm)
#define FK_BPF_MOV64_REG(dst, src)   FK_BPF_INSN(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0)
#define FK_BPF_MOV32_IMM(dst, imm)   FK_BPF_INSN(BPF_ALU | BPF_MOV | BPF_K, dst, 0, 0, imm)
#define FK_BPF_ALU64_IMM(op, dst, imm) FK_BPF_INSN(BPF_ALU64 | (op) | BPF_K, dst, 0, 0, imm)
#define FK_BPF_ALU64_REG(op, dst, src) FK_BPF_INSN(BPF_ALU64 | (op) | BPF_X, dst, src, 0, 0)
#define FK_BPF_LDX_MEM(size, dst, src, off) \
    FK_BPF_INSN(BPF_LDX | (size) | BPF_MEM, dst, src, off, 0)
#define FK_BPF_STX_MEM(size, dst, src, off) \
    FK_BPF_INSN(BPF_STX | (size) | BPF_MEM, dst, src, off, 0)
#define FK_BPF_ST_MEM(size, dst, off, imm) \
    FK_BPF_INSN(BPF_ST | (size) | BPF_MEM, dst, 0, off, imm)
/* dst += src at [dst + off], atomically (BPF_ATOMIC, 32 or 64 bits) */
#define FK_BPF_ATOMIC_ADD(size, dst, src, off) \
    FK_BPF_INSN(BPF_STX | (size) | BPF_ATOMIC, dst, src, off, BPF_ADD)
#define FK_BPF_JMP_IMM(op, dst, imm, off) FK_BPF_INSN(BPF_JMP | (op) | BPF_K, dst, 0, off, imm)
#define FK_BPF_JMP_REG(op, dst, src, off) FK_BPF_INSN(BPF_JMP | (op) | BPF_X, dst, src, off, 0)
#define FK_BPF_CALL(helper)          FK_BPF_INSN(BPF_JMP | BPF_CALL, 0, 0, 0, helper)
#define FK_BPF_EXIT()                FK_BPF_INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* The verifier's own limit for unprivileged programs; ours stay far below
 * it, and a generator that runs away is stopped here. */
#define FK_BPF_MAX_INSNS 4096

struct fk_bpf_fixup;

struct fk_bpf_builder {
    struct bpf_insn *insn;
    size_t n, cap;
    int32_t *label_at;          /* instruction index per label, -1 until placed */
    size_t nlabels, caplabels;
    struct fk_bpf_fixup *fix;   /* jumps waiting for their label */
    size_t nfix, capfix;
    char failed[96];            /* "" while sound; else why it failed */
};

void fk_bpf_builder_init(struct fk_bpf_builder *b);
void fk_bpf_builder_free(struct fk_bpf_builder *b);

/* Append one instruction. */
void fk_bpf_emit(struct fk_bpf_builder *b, struct bpf_insn insn);
/* reg = a 64-bit constant (the two-slot BPF_LD | BPF_IMM | BPF_DW). */
void fk_bpf_emit_ld_imm64(struct fk_bpf_builder *b, unsigned reg, uint64_t value);
/* reg = the map whose fd is map_fd (the loader turns it into a pointer). */
void fk_bpf_emit_ld_map_fd(struct fk_bpf_builder *b, unsigned reg, int map_fd);
/* r0 = bpf_map_lookup_elem(the map map_fd, r10 + key_off): the key is on
 * the program's stack at key_off (< 0); r0 is NULL when it is absent and
 * r1-r5 are clobbered, as by any call. */
void fk_bpf_emit_map_lookup(struct fk_bpf_builder *b, int map_fd, int32_t key_off);

/* A new label, not yet placed. */
unsigned fk_bpf_label_new(struct fk_bpf_builder *b);
/* The label names the next instruction emitted. */
void fk_bpf_label_place(struct fk_bpf_builder *b, unsigned label);
/* if (reg OP imm) goto label / if (dst OP src) goto label / goto label */
void fk_bpf_jump_imm(struct fk_bpf_builder *b, unsigned op, unsigned reg, int32_t imm,
                     unsigned label);
void fk_bpf_jump_reg(struct fk_bpf_builder *b, unsigned op, unsigned dst, unsigned src,
                     unsigned label);
void fk_bpf_goto(struct fk_bpf_builder *b, unsigned label);

/* Resolve the labels and load the program (license GPL: the helpers that
 * read user memory and emit samples need it). false with one line in err:
 * the builder's failure, or the kernel's refusal with the verifier log's
 * last line. */
bool fk_bpf_prog_load(struct fk_bpf_builder *b, enum bpf_prog_type type, const char *name,
                      int *fd, char *err, size_t errlen);

/* A map (bpf_map_create); name is at most 15 characters. */
bool fk_bpf_map_create(enum bpf_map_type type, const char *name, uint32_t key_size,
                       uint32_t value_size, uint32_t max_entries, uint32_t flags, int *fd,
                       char *err, size_t errlen);

/* Run prog_fd on each overflow of the perf event perf_fd (a sampling or
 * tracepoint event); the program lives as long as the event does. */
bool fk_bpf_attach_perf(int perf_fd, int prog_fd, char *err, size_t errlen);

/* Run the tracepoint program prog_fd (BPF_PROG_TYPE_TRACEPOINT) at every
 * hit of the tracepoint tp_id, on every CPU, whatever else is attached:
 * through an event of its own (*fd, this thread's, disabled, never
 * inherited: it counts nothing); closing *fd detaches the program. Never
 * attach a tracepoint program to an inherited event instead: since Linux
 * 6.10 each inherited copy shares the program, and the first copy freed
 * (the first child or thread created after the event exits) takes it off
 * the tracepoint for every event. *fd -1 on failure. */
bool fk_bpf_attach_tracepoint(uint64_t tp_id, int prog_fd, int *fd, char *err, size_t errlen);
/* The programs on the tracepoint of perf_fd (a tracepoint event), all of
 * them, whoever attached them (PERF_EVENT_IOC_QUERY_BPF); -1 when the
 * kernel does not say. */
int fk_bpf_tracepoint_programs(int perf_fd);

/* Run the raw tracepoint program prog_fd (BPF_PROG_TYPE_RAW_TRACEPOINT) at
 * every hit of the tracepoint name ("sched_switch"), on every CPU, through
 * a BPF link (*fd; closing it, and every copy, detaches the program). No
 * perf event: the kernel builds no tracepoint record for it and runs the
 * program with the tracepoint's own arguments (struct
 * bpf_raw_tracepoint_args). *fd -1 on failure. */
bool fk_bpf_attach_raw_tracepoint(const char *name, int prog_fd, int *fd, char *err,
                                  size_t errlen);
/* The raw tracepoint links on tracepoint name, whoever made them (the
 * kernel's link table, at most the first 4,096 links looked at); -1 when
 * the kernel does not say. */
int fk_bpf_raw_tracepoint_links(const char *name);

struct fk_tp_field;

/* dst = the tracepoint record's field f, read by a tracepoint program
 * through its context ctx (aligned, past the first 8 bytes of common
 * fields, 1, 2, 4 or 8 bytes); false with the reason in err when the
 * field cannot be read that way. */
bool fk_bpf_load_field(struct fk_bpf_builder *b, unsigned dst, unsigned ctx,
                       const struct fk_tp_field *f, char *err, size_t errlen);

/* The fork follower (fk_bpf_fork_follower): what it stores for a child of
 * a member -- a flag byte 1 (a hash of 1-byte values; FK_BPF_FORK_FLAG_ARRAY:
 * an array of 1-byte values indexed by pid, where a member is an entry whose
 * byte is not 0) or the fork time in CLOCK_MONOTONIC ns (8-byte values) --
 * and what it does with the number of any other child: nothing, or delete
 * it (a reused pid must not stay a member; hashes only). */
enum fk_bpf_fork_value { FK_BPF_FORK_FLAG, FK_BPF_FORK_TIME, FK_BPF_FORK_FLAG_ARRAY };
enum fk_bpf_fork_outsiders { FK_BPF_FORK_KEEP, FK_BPF_FORK_DELETE };

/* Keep the map map_fd (4-byte tgid keys) a process tree: a program on
 * sched:sched_process_fork (current: the forking thread) puts the child's
 * pid in the map, with value, before the child first runs when the forking
 * tgid is in the map. A new thread's tid goes in too (the tracepoint does
 * not say which it is): callers forget it at its exit. A child the map
 * has no room for (full) adds 1 to entry 0 of full_fd (an array of 8-byte
 * counters), so a full map is counted, never silent; full_fd -1: not
 * counted. Loaded as name and attached through an event of its own
 * (fk_bpf_attach_tracepoint); *prog_fd and *event_fd are the caller's to
 * close, both -1 on failure. */
bool fk_bpf_fork_follower(int map_fd, enum fk_bpf_fork_value value,
                          enum fk_bpf_fork_outsiders outsiders, int full_fd, const char *name,
                          int *prog_fd, int *event_fd, char *err, size_t errlen);

/* Can this process load a program of type BPF_PROG_TYPE_PERF_EVENT and
 * attach it to a perf event on this kernel (permissions, lockdown, a
 * seccomp filter, a kernel without BPF)? The probe takes the whole path a
 * capture takes: a perf-event program on a software event of this thread.
 * Probed once and cached (any thread); false with the reason in err.
 * Only perf-event programs: a probe of a tracepoint program would wait
 * when its event closes for an RCU tasks-trace grace period (Linux 6.18's
 * perf_event_detach_bpf_prog; 15 s seen with both CPUs busy), so a
 * capture that needs one attaches its real program instead and keeps its
 * event until its results are written (capture/swtime.h). */
bool fk_bpf_usable(char *err, size_t errlen);

#endif
