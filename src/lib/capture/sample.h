/* SPDX-License-Identifier: GPL-2.0-only */
/* One decoder for perf ring records: a PERF_RECORD_SAMPLE's fields as its
 * event's sample_type lays them out (struct fk_sample), and the sample_id_all
 * trailer every other record carries (struct fk_sample_id).
 *
 * Invariants: nothing is read outside [rec, rec + len); every pointer in the
 * result points into the record (valid as long as it is); a field not in
 * sample_type is zero/NULL. The record must be 8-byte aligned (records in a
 * perf ring are; copies must keep that). The kernel's own records always
 * parse; anything else -- a record too short for its sample_type, a stack
 * copy or raw blob running past its end -- gives false, never a partial
 * read. Bits this decoder does not know (BRANCH_STACK, REGS_INTR, AUX,
 * PERF_SAMPLE_READ of a group...) are refused by fk_sample_format_init, so
 * the engine never asks the kernel for a layout it cannot walk. */
#ifndef FK_CAPTURE_SAMPLE_H
#define FK_CAPTURE_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The layout of one event's records. */
struct fk_sample_format {
    uint64_t sample_type;       /* PERF_SAMPLE_* */
    unsigned nregs;             /* registers in PERF_SAMPLE_REGS_USER (popcount of the mask) */
    unsigned read_words;        /* PERF_SAMPLE_READ: the value and what read_format adds */
    bool sample_id_all;         /* non-sample records carry the id trailer */
    /* the layout, worked out once (every record asks: 130,000/s at a
     * switch storm): words of the id trailer, where a sample's time is */
    unsigned id_words;
    unsigned sample_time_at;    /* byte offset; 0: no time */
    unsigned fixed_words;       /* a sample's words before its callchain */
};

/* false if sample_type holds a field the decoder cannot walk (read_format
 * lays out PERF_SAMPLE_READ; a group read is refused). */
bool fk_sample_format_init(struct fk_sample_format *f, uint64_t sample_type,
                           uint64_t read_format, uint64_t regs_user_mask, bool sample_id_all);

struct fk_sample {
    uint16_t misc;              /* header.misc: PERF_RECORD_MISC_CPUMODE_MASK etc. */
    bool kernel;                /* cpumode is kernel: ip is a kernel address */
    uint64_t identifier;        /* PERF_SAMPLE_IDENTIFIER (or PERF_SAMPLE_ID) */
    uint64_t ip;
    pid_t pid, tid;
    uint64_t time;
    uint64_t addr;
    uint64_t stream_id;
    uint32_t cpu;
    uint64_t period;            /* 1 without PERF_SAMPLE_PERIOD */
    uint64_t count;             /* PERF_SAMPLE_READ: the event's own count at the sample */
    uint64_t nr;                /* callchain entries (PERF_CONTEXT_* markers included) */
    const uint64_t *ips;
    uint32_t raw_size;          /* PERF_SAMPLE_RAW: the tracepoint's bytes */
    const unsigned char *raw;
    uint64_t regs_abi;          /* PERF_SAMPLE_REGS_USER: 0 = none (kernel thread) */
    const uint64_t *regs;       /* nregs values when regs_abi != 0 */
    uint64_t stack_size;        /* PERF_SAMPLE_STACK_USER: bytes asked */
    uint64_t stack_dyn;         /* ... bytes the kernel actually copied (<= stack_size) */
    const unsigned char *stack; /* stack_size bytes from the sampled sp */
    bool stack_cut;             /* the reader cut the copy at the thread's known end
                                 * (capture/stackend.h): more was copied, stack_dyn
                                 * is stack_size */
    uint64_t weight;            /* PERF_SAMPLE_WEIGHT */
    uint64_t cgroup;            /* PERF_SAMPLE_CGROUP */
};

/* Decode a PERF_RECORD_SAMPLE of len bytes (its header.size). */
bool fk_sample_parse(const struct fk_sample_format *f, const void *rec, size_t len,
                     struct fk_sample *s);

/* The sample_id_all trailer of a non-sample record (MMAP2, COMM, SWITCH...). */
struct fk_sample_id {
    pid_t pid, tid;
    uint64_t time;
    uint64_t id;
    uint64_t stream_id;
    uint32_t cpu;
    uint64_t identifier;
};
/* false when the record carries no trailer or is too short for it. */
bool fk_sample_id_parse(const struct fk_sample_format *f, const void *rec, size_t len,
                        struct fk_sample_id *id);

/* Write id as f lays out the trailer (f->id_words words) at out, for a
 * record of the caller's making that travels with the kernel's (e.g.
 * fk_reader_add). Returns the bytes written (0: f has no trailer). */
size_t fk_sample_id_write(const struct fk_sample_format *f, const struct fk_sample_id *id,
                          void *out);

/* A copy of a sample whose user stack copy is cut to the bytes the
 * kernel really copied (and one word more when that was less than asked,
 * so the decoder still tells a stack that ended from one cut short): the
 * same sample for the decoder and the unwinder, often a tenth of the
 * size. With ends (NULL: none), a thread's copy is cut shorter, where
 * its stack is known to end (capture/stackend.h); the dyn word then
 * stays what the kernel copied, more than the copy holds, which the
 * decoder reports as stack_cut. out holds len bytes. Returns the copy's
 * length, or 0 when there is nothing to cut (not a sample, no stack
 * copy, or already tight). */
/* The layout whose samples' stack copies are cut: f, or NULL when its
 * samples carry none, or when several events (an identifier first) may
 * lay samples out differently (only one layout could be cut). */
const struct fk_sample_format *fk_sample_cut_format(const struct fk_sample_format *f);
struct fk_stack_ends;
size_t fk_sample_cut_stack(const struct fk_sample_format *f, const void *rec, size_t len,
                           void *out, const struct fk_stack_ends *ends);

/* A record's time for ordering (samples and trailers alike); 0 when it
 * has none (the record is then handled first). */
uint64_t fk_record_time(const struct fk_sample_format *f, const void *rec, size_t len);

#endif
