/* SPDX-License-Identifier: GPL-2.0-only */
/* The Python wake-up gate (pygate.h): a hash map tgid -> wake, an LRU map
 * tid -> thread state and offsets, two BPF ring buffers of notifications
 * and chains (a small one written first, a large one for what does not
 * fit it: hot_bytes), the perf-event program between them, and the
 * per-CPU queues that hold the chains until their samples take them. */
#include "capture/pygate.h"
#include "capture/bpf.h"
#include "util/bootcache.h"
#include "util/fk.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A record's header (the program writes it; fk_pygate_chain unpacks it),
 * then its n frames, FK_PYGATE_STRIDE bytes each, then its ncodes code
 * headers, FK_PYGATE_CODE_BYTES each (the code objects' addresses at
 * REC_CODES, 0 where the read failed). */
enum {
    REC_WOKE = 0, REC_CPU = 4, REC_TID = 8, REC_N = 12, REC_TIME = 16, REC_IP = 24, REC_TSTATE = 32,
    REC_CFRAME = 40, REC_NTID = 48, REC_HEAD = 56, REC_NEXT = 64, REC_NCODES = 72,
    REC_CODES = 80, REC_HDR = REC_CODES + 8 * FK_PYGATE_CODES
};
#define REC_MAX (REC_HDR + FK_PYGATE_DEPTH * FK_PYGATE_STRIDE + \
                 FK_PYGATE_CODES * FK_PYGATE_CODE_BYTES)
/* The program's per-CPU scratch, in the order a run touches it: the
 * CPU's vouched codes (emit_vouched: VOUCH_SLOTS pairs of a code object
 * and the function the code map named it with, one slot per code
 * address, bits 4 and up); the window of the target's memory its frames
 * are copied from (emit_frame_window: WIN bytes at most, and STRIDE more
 * that a frame's copy at the window's end may touch); the record, at
 * REC_BASE (r9 in the program: the vouched codes and the window lie
 * below it). Why so: at the default 99 Hz a CPU runs the program once
 * every ~10 ms and all it touches is cold; on a VM each 4 KiB page
 * entered costs a TLB miss with a two-level walk. A 1 KiB window keeps
 * the vouched codes, the window and a shallow chain's record within
 * about two pages, where a page's window (4 KiB from the frame's page
 * start) and the record after the deepest chain's room spread a run
 * over three or four; a deep chain reads a window per KiB of frames
 * (~8 frames of 3.11's ~120 bytes), not one a frame. */
#define PAGE_BYTES 4096
#define WIN 1024
#define VOUCH_SLOTS 64
#define VOUCH_BYTES (VOUCH_SLOTS * 16)
#define REC_BASE (VOUCH_BYTES + ((WIN + FK_PYGATE_STRIDE + 7) & ~7))
#define SCRATCH_WIN (VOUCH_BYTES - REC_BASE)
#define SCRATCH_VOUCH (-REC_BASE)
#define SCRATCH_BYTES (REC_BASE + ((REC_MAX + 7) & ~7))
/* The thread map's value: the thread state, then struct fk_pygate_offsets. */
enum { TV_TSTATE = 0, TV_CFRAME = 8, TV_NTID = 10, TV_CURRENT = 12, TV_PREVIOUS = 14,
       TV_FRSIZE = 16, TV_CODE = 18, TV_FUNC = 20, TV_COREAD = 22, TV_BYTES = 24 };
/* The tgid map's value: whether to read the process's samples, then its
 * main thread's (tid = tgid) thread map value (TV_*, tstate 0: none
 * given), so that a single-threaded interpreter's sample takes one
 * lookup, not two. */
enum { PV_WAKE = 0, PV_THREAD = 8, PV_BYTES = PV_THREAD + TV_BYTES };
/* Where the program keeps its copy of the thread's value (emit_chain). */
#define TV_STACK (-128)
/* Why a sample notified (the note's second word). */
enum { NOTE_NEW, NOTE_THREAD, NOTE_MISS, NOTE_FULL };
/* Where the program finds the sampled process's executable's name:
 * task_struct.mm, mm_struct.exe_file, file.f_path.dentry, dentry.d_name.name
 * (byte offsets; mm 0: unknown, every new process wakes the reader). */
struct exe_offsets { int32_t mm, exe_file, dentry, name; };

/* Records drained and waiting for their samples, per CPU, oldest first:
 * each after its slot, packed in a chain of blocks, block data
 * [start, end) (a record takes its chain's bytes, not the deepest
 * chain's, and never spans two blocks). The blocks come from one pool
 * for all CPUs (at most blocks_max, made as needed, never freed before
 * the end): a block whose records all left goes back to it at once, so
 * the memory a burst on one CPU took serves every CPU again as soon as
 * its samples took their records. (Per-CPU buffers that doubled and
 * never shrank did not: after a stalled reader's burst one CPU's buffer
 * kept the whole budget, and the other CPU's queue, stuck at its first
 * 32 KiB, pushed out each pass's records before their samples were read:
 * 273-967 samples of t-python's stalled steady threads read without
 * their record in 9 of 34 runs beside a build.) A record that finds no
 * block left is dropped, counted (queue_dropped). */
struct slot {
    uint64_t pass;          /* the drain that brought it */
    uint32_t size;          /* the record's bytes after the slot */
    uint32_t taken;
};
#define SLOT_BYTES sizeof(struct slot)
struct block {
    struct block *next;
    uint32_t start, end;
    unsigned char data[];
};
#define BLOCK_BYTES (64u << 10)
#define BLOCK_DATA (BLOCK_BYTES - offsetof(struct block, data))
struct queue {
    struct block *head, *tail;  /* NULL when empty */
    unsigned count;
};

#define MISSED 64
struct fk_pygate {
    int pids, hot, ring, prog;  /* hot: the ring written first (hot_bytes) */
    int tids, scratch;          /* the thread map and the program's per-CPU record */
    int codes;                  /* code objects user space has named */
    int lost;                   /* samples the ring had no room for, even a note's */
    int tree_prog, tree_map;    /* the variant with a tree filter (-1: none yet) */
    struct exe_offsets exe;     /* (exe_offsets) */
    bool chains;                /* the program reads chains (else it only notifies:
                                   a kernel that refused the reads) */
    bool heads;                 /* ... and code headers (else the reader reads them:
                                   a kernel that refused those reads) */
    /* rb: the large ring's, made by consume() once large_wanted (a
     * process marked WAKE, a thread given): libbpf maps a ring's data
     * twice and the kernel fills the whole mapping at once, so the large
     * ring mapped from the start cost twice its size in RSS (4 MiB on
     * 2 CPUs, up to 128 MiB on 64) on a host with no Python at all; what
     * the program writes to it meanwhile waits there */
    struct ring_buffer *rb, *rb_hot;
    bool large_wanted, large_failed;
    uint32_t entries, ring_bytes, hot_bytes;
    uint64_t wakeups, marked, full;
    uint64_t no_thread, missed, ring_full, threads;
    uint64_t nchains, joined, unjoined, join_max_ns;
    uint64_t code_wakeups;      /* chains written with a wake-up */
    uint64_t code_headers, code_headers_failed;     /* read by the program; failed */
    struct queue *q;            /* per possible CPU */
    unsigned ncpus;
    struct block *spare;        /* the pool's blocks not in a queue */
    unsigned blocks, blocks_max;    /* made; the most the pool makes */
    uint64_t queue_dropped;     /* records no block was left for */
    uint64_t queue_bytes;       /* the pool's blocks made, together */
    unsigned queue_peak;        /* the most records one queue held */
    uint64_t passes;            /* drains: the queues' clock */
    bool taking;                /* a take is consuming the ring (mid-pass) */
    /* the last records dropped unjoined, and the last samples a take found
     * no record for: which failed to join, and why (fk_pygate_stats) */
    struct missed { uint32_t cpu, tid; uint64_t ip, time; } gone[MISSED], lone[MISSED];
    unsigned ngone, nlone;
    uint64_t expired_early, out_of_window, out_of_window_max_ns;
    uint64_t drained, ring_peak;    /* bytes taken since the drain began; their most */
};

/* Hash map entry with the kernel's element header, preallocated. */
#define ENTRY_BYTES 64
#define THREADS_MAX 4096
#define THREAD_BYTES (64 + TV_BYTES)
#define CODES_MAX 16384
#define CODE_BYTES (64 + 16)
/* Notifications are 16 bytes with their header, chains up to REC_MAX;
 * the reader takes them at each pass (at least every 50 ms): at 999 Hz
 * on a CPU ~50 chains of 30 frames (2.5 KB) a pass. The ring is one for
 * all CPUs, so it is sized by them (RING_PER_CPU each, a power of two at
 * least RING_MIN, at most RING_MAX): the stall it must survive is the
 * perf rings' own -- a reader given no CPU until a perf ring is full (a
 * ring of 2,048 pages holds ~255 samples with 32 KiB stack copies, a
 * quarter of a second at 999 Hz), after which that CPU's samples are lost
 * with or without their records. 255 chains of 46 frames are 0.96 MB:
 * with 2 MiB for both CPUs here a 1 s stall filled the ring about when
 * the perf rings filled (ring_full 26, ring_lost 2). One ring of 2 MiB
 * for 64 CPUs would hold 9 ms of their chains: less than a pass.
 * So each CPU gets room for as many whole chains as its perf ring holds
 * samples (at 999 Hz ~250, 1.3 MB: capped at RING_PER_CPU, 1 MiB as
 * before; at the default 99 Hz ~31, 161 KB), a power of two for all of
 * them: 1 MiB a CPU at 99 Hz was ~8 times what a 1 s stall filled (250 KB
 * for 2 CPUs), and on 64 CPUs reserved a 64 MiB ring and up to 136 MiB
 * of queues out of --max-memory before the capture began. */
#define RING_PER_CPU (1u << 20)
#define RING_MIN (256u << 10)
#define RING_MAX (64u << 20)
/* The pool's blocks at most, for rings of ring bytes together and ncpus
 * queues. A drain brings at most the rings' bytes (a slot is 8 bytes
 * more than a record's ring header), and records are kept for two passes: twice the
 * ring holds every record a burst brings, on any number of CPUs (the ring
 * is one for all) -- in blocks filled to within a record of their end
 * (the next did not fit), plus each queue's first and last block, partly
 * used. 128 records a CPU, as before, dropped records whose samples were
 * still waiting in the perf rings after a stalled reader (a perf ring
 * holds ~250 samples with 32 KiB stack copies): read from the target
 * instead, late. */
static unsigned pool_blocks(uint32_t ring, unsigned ncpus)
{
    size_t filled = BLOCK_DATA - (SLOT_BYTES + REC_MAX - 1);
    return (unsigned)((2 * (size_t)ring + filled - 1) / filled) + 2 * ncpus;
}

/* The ring the program writes first, hot_bytes (one for all CPUs, a
 * power of two, HOT_PER_HZ bytes a CPU for each sample a second -- at
 * least HOT_MIN, at most HOT_PER_CPU a CPU and the large ring's size);
 * what does not fit it goes to the large ring (ring_bytes:
 * the room a stalled reader needs). Why two: the ring's pages are mapped
 * by the kernel a page at a time (vmap), and on this VM a write to one
 * not written for about a second costs 10-35 us (a fault the program
 * pays in the sampled task's context). With one 2 MiB ring a lap took
 * ~2 s at 999 Hz on busy.py, so every page the program entered was
 * cold: its ring output took 8 us a run on average (28 % of runs over
 * 8 us) against 0.55 us in a 64 KiB ring (scratch instrumented build,
 * 2 s captures beside a build). The reader drains the rings every 50 ms
 * or sooner: a pass's chains, ~100 KB on two busy CPUs, fit the small
 * ring, whose lap is then a fraction of a second; the large one is
 * written only behind a stalled reader, as the one ring before. Sized
 * by the rate: at the default 99 Hz a ring of 256 KiB for 2 CPUs took
 * ~1 s a lap with chains of ~1 KiB, and its pages were cold again (the
 * program's ring output 2.5-5 us a run; instrumented build). A pass
 * (50 ms) brings ~5 chains a CPU at 99 Hz, ~2.5 KiB each on 30 frames:
 * HOT_PER_HZ is twice that, 64 KiB for 2 CPUs at 99 Hz; at 999 Hz the
 * 128 KiB a CPU it had. */
#define HOT_PER_CPU (128u << 10)
#define HOT_PER_HZ 256u
#define HOT_MIN (16u << 10)
static uint32_t hot_bytes(unsigned ncpus, uint32_t ring, uint64_t rate)
{
    uint64_t want = (uint64_t)ncpus * (rate ? rate : 1000) * HOT_PER_HZ;
    if (want > (uint64_t)ncpus * HOT_PER_CPU)
        want = (uint64_t)ncpus * HOT_PER_CPU;
    uint32_t size = HOT_MIN;
    while (size < ring && size < want)
        size *= 2;
    return size < ring ? size : ring;
}

static unsigned gate_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

unsigned fk_pygate_cpus(void)
{
    return gate_cpus();
}

/* The large ring's size for ncpus CPUs whose perf rings hold held
 * samples each, or FLAMEKIT_PYGATE_RING bytes (a power of two from a page
 * up to that size; anything else is ignored; the hot ring is no larger:
 * hot_bytes) -- a knob for t-python's check of the ring-full fallback
 * alone, not for users: the full-size ring fills only behind a reader
 * stalled for about half a second, which a test cannot cause without losing samples and records
 * besides (the unjoined fallback, checked apart). */
static uint32_t ring_bytes(unsigned ncpus, uint64_t held)
{
    uint64_t chain = BPF_RINGBUF_HDR_SZ + ((REC_MAX + 7) & ~7ull);
    uint64_t per = held < RING_PER_CPU / chain ? held * chain : RING_PER_CPU;
    uint32_t size = RING_MIN;
    while (size < RING_MAX && size < (uint64_t)ncpus * per)
        size *= 2;
    const char *v = getenv("FLAMEKIT_PYGATE_RING");
    char *end;
    unsigned long n = v ? strtoul(v, &end, 10) : 0;
    long page = sysconf(_SC_PAGESIZE);
    if (!v || *end || page <= 0 || n < (unsigned long)page || n > size || (n & (n - 1)))
        return size;
    return (uint32_t)n;
}

/* Emit: ring output of *(fp-16) (8 bytes: the CPU, reason) with a
 * wake-up, to the hot ring or else the large one (which wakes no one:
 * the reader's next pass reads it); where neither has room even for
 * that, lost[0] += 1 (the sample then wakes no one and has no record:
 * the reader reads its chain from the target at its next pass, late).
 * r7 holds the reason. */
static void emit_note(struct fk_pygate *g, struct fk_bpf_builder *b)
{
    unsigned done = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_smp_processor_id));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -16));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_7, -12));
    int rings[] = { g->hot, g->ring };
    for (int i = 0; i < 2; i++) {
        fk_bpf_emit_ld_map_fd(b, BPF_REG_1, rings[i]);
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -16));
        fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_3, 8));
        fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_RB_FORCE_WAKEUP));
        fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ringbuf_output));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, done);
    }
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -32, 0));
    fk_bpf_emit_map_lookup(b, g->lost, -32);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, done);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_1, 1));
    fk_bpf_emit(b, FK_BPF_ATOMIC_ADD(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    fk_bpf_label_place(b, done);
}

/* Emit: bpf_probe_read_user(r9 + dst, 8, r3); on failure to miss. */
static void emit_read8(struct fk_bpf_builder *b, int dst, unsigned miss)
{
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_9));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, dst));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, 8));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_user));
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 0, miss);
}

/* Emit: read the thread state's field at the offset the thread's map
 * value holds at tv (r8) into the record at dst. */
static void emit_ts_read(struct fk_bpf_builder *b, int tv, int dst, unsigned miss)
{
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_8, TV_TSTATE));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_H, BPF_REG_1, BPF_REG_8, tv));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_1));
    emit_read8(b, dst, miss);
}

/* Emit, after a frame's code map lookup (r0: its value, the function
 * object user space named the code with, or NULL): whether user space
 * can vouch for the frame's code from its cache -- named, and run by the
 * function it was named with (the frame's fr_func, at fp-88) -- else
 * mark it not named (NULL) and note the code (fp-24) as wanted: at the
 * record's REC_CODES[REC_NCODES], REC_NCODES + 1, unless it is wanted
 * already (one code in every other frame of a recursion through a
 * comprehension) or FK_PYGATE_CODES are (the rest are read by user
 * space). The count is kept in the record, not a register: a register
 * is a constant on each path the verifier follows, and with five of
 * them at every frame the program's load took 22 ms instead of 4.5. */
static void emit_want_code(struct fk_bpf_builder *b, unsigned vouched, unsigned named)
{
    unsigned unnamed = fk_bpf_label_new(b), want = fk_bpf_label_new(b), add = fk_bpf_label_new(b);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, unnamed);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_2, BPF_REG_10, -88));
    fk_bpf_jump_reg(b, BPF_JEQ, BPF_REG_1, BPF_REG_2, vouched);
    fk_bpf_goto(b, want);
    fk_bpf_label_place(b, unnamed);
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -28, 1));
    fk_bpf_label_place(b, want);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, -24));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_3, BPF_REG_9, REC_NCODES));
    for (int j = 0; j < FK_PYGATE_CODES; j++) {
        fk_bpf_jump_imm(b, BPF_JLE, BPF_REG_3, j, add);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_2, BPF_REG_9, REC_CODES + 8 * j));
        fk_bpf_jump_reg(b, BPF_JEQ, BPF_REG_1, BPF_REG_2, named);
    }
    fk_bpf_goto(b, named);
    fk_bpf_label_place(b, add);
    fk_bpf_jump_imm(b, BPF_JGE, BPF_REG_3, FK_PYGATE_CODES, named);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_3));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_LSH, BPF_REG_2, 3));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_2, BPF_REG_9));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_2, BPF_REG_1, REC_CODES));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, 1));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_9, BPF_REG_3, REC_NCODES));
}

/* Emit: the frame at REC_NEXT (r6: its index) into its record slot (r7), fr_size bytes
 * (STRIDE copied), from the window -- the bytes of the target read last,
 * up to a frame's end from WIN bytes before it or its page's start,
 * whichever is later (fp-56 where they start, fp-64 how many; 0: none
 * yet) -- or, when the frame is not in it, after reading the window
 * anew for it. A thread's frames lie on its data stack one after the
 * other, a caller below its callee: one read serves the frames of a
 * window (about 8 of a recursion) where a read a frame cost each its
 * own bpf_probe_read_user. The window stays inside the frame's own
 * page, so it fails only where the frame's own read would (to miss, as
 * that did). Out: r1-r5 clobbered. */
static void emit_frame_window(struct fk_bpf_builder *b, unsigned miss)
{
    unsigned reread = fk_bpf_label_new(b), sized = fk_bpf_label_new(b),
             copy = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_9, REC_NEXT));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_H, BPF_REG_4, BPF_REG_8, TV_FRSIZE));
    fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_4, FK_PYGATE_STRIDE, miss);
    /* the first frame has no window yet (said so to the verifier too:
     * it follows one path there, not one more each turn) */
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_6, 0, reread);
    /* in the window: start <= frame, frame + fr_size <= start + bytes */
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_3));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, -56));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_SUB, BPF_REG_2, BPF_REG_1));
    fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_2, WIN, reread);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_5, BPF_REG_2));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_5, BPF_REG_4));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, -64));
    fk_bpf_jump_reg(b, BPF_JGT, BPF_REG_5, BPF_REG_1, reread);
    fk_bpf_goto(b, copy);
    /* a new window: up to the frame's end, from its page's start or WIN
     * bytes before its end */
    fk_bpf_label_place(b, reread);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_3));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_AND, BPF_REG_2, PAGE_BYTES - 1));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_2, BPF_REG_4));
    fk_bpf_jump_imm(b, BPF_JLE, BPF_REG_2, WIN, sized);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, WIN));
    fk_bpf_label_place(b, sized);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_2, -64));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_4));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_SUB, BPF_REG_3, BPF_REG_2));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_3, -56));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_9));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, SCRATCH_WIN));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_user));
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 0, miss);
    /* the frame is the window's last fr_size bytes */
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_2, BPF_REG_10, -64));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_H, BPF_REG_4, BPF_REG_8, TV_FRSIZE));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_SUB, BPF_REG_2, BPF_REG_4));
    /* r2: the frame's offset in the window */
    fk_bpf_label_place(b, copy);
    fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_2, WIN, miss);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_9));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_1, BPF_REG_2));
    for (int i = 0; i < FK_PYGATE_STRIDE; i += 8) {
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_1, SCRATCH_WIN + i));
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_7, BPF_REG_3, REC_HDR + i));
    }
}

/* Emit, after the frames (r3: their end in the record): the
 * REC_NCODES code headers wanted, co_read bytes each (the thread map's), read after the
 * frames; one that cannot be read has its address zeroed (user space
 * reads it, as any it was not given); none when co_read is 0 or more
 * than FK_PYGATE_CODE_BYTES (REC_NCODES 0 then). Out: r3 the record's
 * bytes. */
static void emit_code_heads(struct fk_bpf_builder *b, unsigned miss)
{
    unsigned none = fk_bpf_label_new(b), done = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_3, -48));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_7, BPF_REG_9, REC_NCODES));
    fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_7, FK_PYGATE_CODES, none);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_H, BPF_REG_1, BPF_REG_8, TV_COREAD));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, none);
    fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_1, FK_PYGATE_CODE_BYTES, none);
    for (int j = 0; j < FK_PYGATE_CODES; j++) {
        unsigned read = fk_bpf_label_new(b);
        fk_bpf_jump_imm(b, BPF_JLE, BPF_REG_7, j, done);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_2, BPF_REG_10, -48));
        fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_2, REC_HDR + FK_PYGATE_DEPTH * FK_PYGATE_STRIDE, miss);
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_9));
        fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_1, BPF_REG_2));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, j * FK_PYGATE_CODE_BYTES));
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_H, BPF_REG_2, BPF_REG_8, TV_COREAD));
        fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_2, FK_PYGATE_CODE_BYTES, none);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_9, REC_CODES + 8 * j));
        fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_user));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, read);
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_9, REC_CODES + 8 * j, 0));
        fk_bpf_label_place(b, read);
    }
    fk_bpf_goto(b, done);
    fk_bpf_label_place(b, none);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_7, 0));
    fk_bpf_label_place(b, done);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_9, BPF_REG_7, REC_NCODES));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_10, -48));
    fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_3, REC_HDR + FK_PYGATE_DEPTH * FK_PYGATE_STRIDE, miss);
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_MUL, BPF_REG_7, FK_PYGATE_CODE_BYTES));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_7));
}

/* Emit, at a frame whose code (r1, fp-24) and function (r4, fp-88) the
 * previous frame's do not vouch for: to named when the CPU's vouched
 * slot of the code (SCRATCH_VOUCH) holds this code and function -- the
 * code map named them at an earlier sample, as its lookup would now,
 * without touching the map's bucket and element, cold in cache at 99 Hz.
 * The slot's address is kept at fp-96 (emit_vouch). r2, r3 clobbered. */
static void emit_vouched(struct fk_bpf_builder *b, unsigned named)
{
    unsigned other = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_1));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_2, 4));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_AND, BPF_REG_2, VOUCH_SLOTS - 1));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_LSH, BPF_REG_2, 4));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_2, BPF_REG_9));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_2, -96));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_2, SCRATCH_VOUCH));
    fk_bpf_jump_reg(b, BPF_JNE, BPF_REG_3, BPF_REG_1, other);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_2, SCRATCH_VOUCH + 8));
    fk_bpf_jump_reg(b, BPF_JEQ, BPF_REG_3, BPF_REG_4, named);
    fk_bpf_label_place(b, other);
}

/* Emit, where the code map named the frame's code (fp-24) with its
 * function (fp-88): both into the slot at fp-96 (emit_vouched). r1, r2
 * clobbered. */
static void emit_vouch(struct fk_bpf_builder *b)
{
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_2, BPF_REG_10, -96));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, -24));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_2, BPF_REG_1, SCRATCH_VOUCH));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_10, -88));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_2, BPF_REG_1, SCRATCH_VOUCH + 8));
}

/* Emit: reg = the word of the frame in its record slot (r7) at the
 * offset the thread's map value (r8) holds at tv (<= STRIDE - 8, else to
 * miss). r2 clobbered. */
static void emit_frame_word(struct fk_bpf_builder *b, int tv, int reg, unsigned miss)
{
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_H, reg, BPF_REG_8, tv));
    fk_bpf_jump_imm(b, BPF_JGT, reg, FK_PYGATE_STRIDE - 8, miss);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_7));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_2, reg));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, reg, BPF_REG_2, REC_HDR));
}

/* The chain of a Python thread in the thread map (the tid at fp-8):
 * read into the per-CPU record and written to the ring without a
 * wake-up -- unless a frame runs a code object not in the code map (one
 * user space has not named yet: a module's code may be freed once it
 * ran, so it is named while it lives), which wakes the reader. With
 * g->heads, the headers of the code objects user space cannot vouch for
 * (emit_want_code) are read after the frames (emit_code_heads).
 * Registers: r6 ctx, then the frame's index; r7 its slot, then (to
 * note_thread, miss, full) the reason of a note; r8 the thread's map
 * value (its copy at TV_STACK), r9 the record. Stack: -24 a code pointer, -28 "a code object
 * not named", -40 the record's bytes (its output), -48 the frames' end,
 * -56/-64 the window (emit_frame_window), -80/-88 the previous frame's
 * code and function. The frames are a
 * bounded loop (the verifier walks its 64 turns; a kernel with the BPF
 * ring buffer, 5.8, takes bounded loops, 5.3): unrolled, 64 copies of a
 * frame's code did not fit in the 4,096 instructions with the window. */
static void emit_chain(struct fk_pygate *g, struct fk_bpf_builder *b, unsigned note,
                       unsigned keep)
{
    unsigned no_thread = fk_bpf_label_new(b), miss = fk_bpf_label_new(b),
             full = fk_bpf_label_new(b), out = fk_bpf_label_new(b),
             lookup_thread = fk_bpf_label_new(b), thread = fk_bpf_label_new(b);
    /* r0: the process's tgid map value; its main thread's there */
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_1, BPF_REG_10, -8));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_2, BPF_REG_10, -4));
    fk_bpf_jump_reg(b, BPF_JNE, BPF_REG_1, BPF_REG_2, lookup_thread);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, PV_THREAD + TV_TSTATE));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, lookup_thread);
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_0, PV_THREAD));
    fk_bpf_goto(b, thread);
    fk_bpf_label_place(b, lookup_thread);
    fk_bpf_emit_map_lookup(b, g->tids, -8);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, no_thread);
    /* r0: the thread's value, in either map: copied to the stack (r8),
     * so that the verifier walks what follows once, not once a map */
    fk_bpf_label_place(b, thread);
    for (int i = 0; i < TV_BYTES; i += 8) {
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_0, i));
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_1, TV_STACK + i));
    }
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_8, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_8, TV_STACK));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -12, 0));
    fk_bpf_emit_map_lookup(b, g->scratch, -12);
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, miss);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_9, BPF_REG_0));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_9, REC_BASE));
    /* the header: cpu, tid, n = 0, time, ip, tstate */
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_smp_processor_id));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_9, BPF_REG_0, REC_CPU));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_1, BPF_REG_10, -8));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_9, BPF_REG_1, REC_TID));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_9, REC_N, 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_9, 0, 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_9, REC_NCODES, 0));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ktime_get_ns));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_9, BPF_REG_0, REC_TIME));
    /* struct bpf_perf_event_data: regs first; x86-64 pt_regs' ip is word 16 */
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_6, 16 * 8));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_9, BPF_REG_1, REC_IP));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_8, TV_TSTATE));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_9, BPF_REG_1, REC_TSTATE));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_9, REC_HEAD, 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_9, REC_NEXT, 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -28, 0));
    /* no window yet; no previous frame's code */
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, -56, 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, -64, 0));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, -80, -1));
    fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_DW, BPF_REG_10, -88, 0));
    /* tstate->cframe, tstate->native_thread_id */
    emit_ts_read(b, TV_CFRAME, REC_CFRAME, miss);
    emit_ts_read(b, TV_NTID, REC_NTID, miss);
    /* cframe->current_frame: the head (0: no Python frame now) */
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_9, REC_CFRAME));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_3, 0, out);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_H, BPF_REG_1, BPF_REG_8, TV_CURRENT));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_1));
    emit_read8(b, REC_HEAD, miss);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_1, BPF_REG_9, REC_HEAD));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_9, BPF_REG_1, REC_NEXT));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, out);
    /* the frames, a bounded loop (ctx is done with): r6 the frame's
     * index k, r7 the record + k * STRIDE (its slot at r7 + REC_HDR) */
    unsigned frame = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_6, 0));
    fk_bpf_label_place(b, frame);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_7, BPF_REG_6));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_MUL, BPF_REG_7, FK_PYGATE_STRIDE));
    fk_bpf_emit(b, FK_BPF_ALU64_REG(BPF_ADD, BPF_REG_7, BPF_REG_9));
    emit_frame_window(b, miss);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_6));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_9, BPF_REG_1, REC_N));
    /* its code (fp-24) and function (fp-88): the previous frame's (a
     * recursion) have the same verdict, taken already */
    unsigned named = fk_bpf_label_new(b), lookup = fk_bpf_label_new(b);
    emit_frame_word(b, TV_CODE, BPF_REG_1, miss);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_10, -80));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_1, -80));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_1, -24));
    if (g->heads) {
        emit_frame_word(b, TV_FUNC, BPF_REG_4, miss);
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_5, BPF_REG_10, -88));
        fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_4, -88));
        fk_bpf_jump_reg(b, BPF_JNE, BPF_REG_4, BPF_REG_5, lookup);
    }
    fk_bpf_jump_reg(b, BPF_JEQ, BPF_REG_1, BPF_REG_3, named);
    fk_bpf_label_place(b, lookup);
    unsigned vouched = fk_bpf_label_new(b);
    if (g->heads)
        emit_vouched(b, named);
    fk_bpf_emit_map_lookup(b, g->codes, -24);
    if (g->heads) {
        emit_want_code(b, vouched, named);
        fk_bpf_goto(b, named);
        fk_bpf_label_place(b, vouched);
        emit_vouch(b);
        fk_bpf_goto(b, named);
    } else {
        fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 0, named);
        fk_bpf_emit(b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -28, 1));
    }
    fk_bpf_label_place(b, named);
    emit_frame_word(b, TV_PREVIOUS, BPF_REG_1, miss);
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_9, BPF_REG_1, REC_NEXT));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_1, 0, out);
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_6, 1));
    fk_bpf_jump_imm(b, BPF_JLT, BPF_REG_6, FK_PYGATE_DEPTH, frame);
    fk_bpf_label_place(b, out);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_3, BPF_REG_9, REC_N));
    fk_bpf_jump_imm(b, BPF_JGT, BPF_REG_3, FK_PYGATE_DEPTH, miss);
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_MUL, BPF_REG_3, FK_PYGATE_STRIDE));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, REC_HDR));
    if (g->heads)
        emit_code_heads(b, miss);   /* r3: the record's bytes with them */
    unsigned quiet = fk_bpf_label_new(b);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_RB_NO_WAKEUP));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_5, BPF_REG_10, -28));
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_W, BPF_REG_9, BPF_REG_5, REC_WOKE));   /* said in the record */
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_5, 0, quiet);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_RB_FORCE_WAKEUP));
    fk_bpf_label_place(b, quiet);
    /* to the hot ring; else to the large one, without a wake-up (the
     * reader waits on the hot ring: its next pass, 50 ms at most, reads
     * it) */
    fk_bpf_emit(b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_3, -40));
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, g->hot);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_9));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ringbuf_output));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, keep);
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, g->ring);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_9));
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_10, -40));
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_RB_NO_WAKEUP));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_ringbuf_output));
    fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_0, 0, keep);
    fk_bpf_goto(b, full);
    fk_bpf_label_place(b, no_thread);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_7, NOTE_THREAD));
    fk_bpf_goto(b, note);
    fk_bpf_label_place(b, miss);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_7, NOTE_MISS));
    fk_bpf_goto(b, note);
    fk_bpf_label_place(b, full);
    fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_7, NOTE_FULL));
    fk_bpf_goto(b, note);
}

/* Emit, for a sample of a process not in the map: to keep (no note, no
 * wake-up) when its executable's name does not start with "python" (a
 * kernel thread, with no mm, neither), else to note. The reader sees the
 * sample at its next pass (50 ms at most), and user space looks at the
 * process then as at a wake-up and marks it: a new process woke the
 * reader at its first sample, before its fork record was read -- gcc's
 * cc1 and as, a shell's commands: ~40 wake-ups a second on a build, each
 * a switch to the reader's thread (and the engine's) on a host with no
 * Python at all. An interpreter's samples still wake it at once, however
 * it was started (a script's comm is its own name; its executable is
 * the interpreter); a program embedding libpython is found by its
 * mapping at the next pass (unwind/python.c). Where a read fails or a
 * pointer is NULL there is no such name either: no wake-up (user space
 * leaves a process without such files out of the map: python.c
 * gate_sync; a note here would wake the reader at its every sample).
 * Stack: -144 a word read. */
static void emit_exe_check(const struct fk_pygate *g, struct fk_bpf_builder *b, unsigned note,
                           unsigned keep)
{
    const int32_t offs[] = { g->exe.mm, g->exe.exe_file, g->exe.dentry, g->exe.name };
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_get_current_task));
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_3, BPF_REG_0));
    for (int i = 0; i < 5; i++) {
        /* task->mm->exe_file->f_path.dentry->d_name.name, then its first 8 bytes */
        if (i < 4)
            fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, offs[i]));
        fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_1, BPF_REG_10));
        fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_1, -144));
        fk_bpf_emit(b, FK_BPF_MOV64_IMM(BPF_REG_2, 8));
        fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_probe_read_kernel));
        fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_0, 0, keep);
        if (i == 4)
            break;
        fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_DW, BPF_REG_3, BPF_REG_10, -144));
        fk_bpf_jump_imm(b, BPF_JEQ, BPF_REG_3, 0, keep);
    }
    /* "python", little-endian: "pyth", then "on" */
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_1, BPF_REG_10, -144));
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_1, 0x68747970, keep);
    fk_bpf_emit(b, FK_BPF_LDX_MEM(BPF_H, BPF_REG_1, BPF_REG_10, -140));
    fk_bpf_jump_imm(b, BPF_JNE, BPF_REG_1, 0x6e6f, keep);
    fk_bpf_goto(b, note);
}

/* On a sample: the tgid. tgid 0 (a CPU's idle task) and a process marked
 * 0 write nothing; a process not in the map notifies (its CPU's number),
 * waking the reader; one marked 1 has its thread's chain read
 * (emit_chain), or notifies where that fails. Returns 1 (the sample is
 * kept) -- with tree_map >= 0 (a 'pid' target's tree,
 * capture/bpftree.h), 0 for a process outside it, whose sample is
 * dropped as the tree's own filter drops it (an event holds one
 * program). Without g->chains, a Python process's samples notify (the
 * gate as it was before the program read chains). Stack: -4 the tgid, -8
 * the tid, -12 the per-CPU key, -16 the notification, -32 the lost
 * counter's key (emit_chain's below). */
static bool load_prog(struct fk_pygate *g, int tree_map, int *prog, char *err, size_t errlen)
{
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    unsigned keep = fk_bpf_label_new(&b), note = fk_bpf_label_new(&b),
             drop = tree_map >= 0 ? fk_bpf_label_new(&b) : 0,
             absent = g->exe.mm ? fk_bpf_label_new(&b) : note;
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_6, BPF_REG_1));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -8));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -4));
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_7, NOTE_NEW));
    if (tree_map >= 0) {
        fk_bpf_emit_map_lookup(&b, tree_map, -4);
        fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, drop);
        fk_bpf_emit(&b, FK_BPF_LDX_MEM(BPF_W, BPF_REG_0, BPF_REG_10, -4));
    }
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, keep);
    fk_bpf_emit_map_lookup(&b, g->pids, -4);
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, absent);
    fk_bpf_emit(&b, FK_BPF_LDX_MEM(BPF_B, BPF_REG_1, BPF_REG_0, 0));
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_1, 0, keep);
    if (g->chains)
        emit_chain(g, &b, note, keep);
    fk_bpf_label_place(&b, note);
    emit_note(g, &b);
    fk_bpf_label_place(&b, keep);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 1));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    if (tree_map >= 0) {
        fk_bpf_label_place(&b, drop);
        fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
        fk_bpf_emit(&b, FK_BPF_EXIT());
    }
    if (g->exe.mm) {
        fk_bpf_label_place(&b, absent);
        emit_exe_check(g, &b, note, keep);
    }
    bool ok = fk_bpf_prog_load(&b, BPF_PROG_TYPE_PERF_EVENT,
                               tree_map >= 0 ? "fk_py_gate_tree" : "fk_py_gate", prog, err, errlen);
    fk_bpf_builder_free(&b);
    return ok;
}

/* A record's header as the REC_* offsets lay it out. */
struct rec {
    uint32_t woke, cpu, tid, n;     /* woke: written with a wake-up (a code object not named) */
    uint64_t time, ip, tstate, cframe, ntid, head, next;
    uint32_t ncodes, pad;
    uint64_t codes[FK_PYGATE_CODES];
};
_Static_assert(sizeof(struct rec) == REC_HDR && offsetof(struct rec, next) == REC_NEXT &&
               offsetof(struct rec, cpu) == REC_CPU && offsetof(struct rec, time) == REC_TIME &&
               offsetof(struct rec, woke) == REC_WOKE && offsetof(struct rec, ncodes) == REC_NCODES &&
               offsetof(struct rec, codes) == REC_CODES && FK_PYGATE_CODE_BYTES % 8 == 0,
               "the program's record layout");

static struct rec rec_of(const unsigned char *p)
{
    struct rec r;
    memcpy(&r, p, sizeof r);
    return r;
}

static struct slot *slot_at(const struct block *b, size_t off)
{
    return (struct slot *)(void *)((unsigned char *)b->data + off);
}

static uint64_t apart(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

/* A record dropped unjoined: if a sample of its CPU, thread and ip found
 * no record, their times were more than FK_PYGATE_JOIN_NS apart
 * (out_of_window); kept among the last dropped (fk_pygate_take). */
static void note_gone(struct fk_pygate *g, const struct rec *h)
{
    uint64_t far = 0;
    for (unsigned i = 0; i < MISSED && i < g->nlone; i++) {
        const struct missed *m = &g->lone[i];
        if (m->cpu == h->cpu && m->tid == h->tid && m->ip == h->ip &&
            (!far || apart(m->time, h->time) < far))
            far = apart(m->time, h->time);
    }
    if (far) {
        __atomic_add_fetch(&g->out_of_window, 1, __ATOMIC_RELAXED);
        if (far > g->out_of_window_max_ns)
            __atomic_store_n(&g->out_of_window_max_ns, far, __ATOMIC_RELAXED);
    }
    g->gone[g->ngone++ % MISSED] = (struct missed){ h->cpu, h->tid, h->ip, h->time };
}

/* A sample that found no record: if one of its CPU, thread and ip
 * within FK_PYGATE_JOIN_NS was dropped unjoined, it expired before the
 * sample was read (expired_early); kept among the last such samples. */
static void note_lone(struct fk_pygate *g, uint32_t cpu, uint32_t tid, uint64_t ip, uint64_t time)
{
    for (unsigned i = 0; i < MISSED && i < g->ngone; i++) {
        const struct missed *m = &g->gone[i];
        if (m->cpu == cpu && m->tid == tid && m->ip == ip &&
            apart(m->time, time) <= FK_PYGATE_JOIN_NS) {
            __atomic_add_fetch(&g->expired_early, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    g->lone[g->nlone++ % MISSED] = (struct missed){ cpu, tid, ip, time };
}

/* The oldest record out of q: unjoined unless a sample took it; its
 * block back to the pool once its last record left. */
static void queue_pop(struct fk_pygate *g, struct queue *q)
{
    struct block *b = q->head;
    const struct slot *sl = slot_at(b, b->start);
    if (!sl->taken) {
        __atomic_add_fetch(&g->unjoined, 1, __ATOMIC_RELAXED);
        struct rec h = rec_of(b->data + b->start + SLOT_BYTES);
        note_gone(g, &h);
    }
    b->start += (uint32_t)(SLOT_BYTES + sl->size);
    q->count--;
    if (b->start < b->end)
        return;
    q->head = b->next;
    if (!q->head)
        q->tail = NULL;
    b->next = g->spare;
    g->spare = b;
}

/* A block for q's end: the pool's spare, or a new one while the pool
 * has made fewer than blocks_max; NULL when none is left. */
static struct block *block_get(struct fk_pygate *g, struct queue *q)
{
    struct block *b = g->spare;
    if (b)
        g->spare = b->next;
    else if (g->blocks < g->blocks_max) {
        b = fk_malloc(BLOCK_BYTES);
        g->blocks++;
        __atomic_add_fetch(&g->queue_bytes, BLOCK_BYTES, __ATOMIC_RELAXED);
    } else
        return NULL;
    b->next = NULL;
    b->start = b->end = 0;
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
    return b;
}

/* A chain record into its CPU's queue. */
static void queue_chain(struct fk_pygate *g, const unsigned char *rec, size_t size)
{
    struct rec h = rec_of(rec);
    uint32_t cpu = h.cpu, n = h.n, m = h.ncodes;
    if (cpu >= g->ncpus || n > FK_PYGATE_DEPTH || m > FK_PYGATE_CODES ||
        size != REC_HDR + (size_t)n * FK_PYGATE_STRIDE + (size_t)m * FK_PYGATE_CODE_BYTES)
        return;
    __atomic_add_fetch(&g->nchains, 1, __ATOMIC_RELAXED);
    if (h.woke)
        __atomic_add_fetch(&g->code_wakeups, 1, __ATOMIC_RELAXED);
    unsigned failed = 0;
    for (uint32_t j = 0; j < m; j++)
        failed += !h.codes[j];
    __atomic_add_fetch(&g->code_headers, m - failed, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g->code_headers_failed, failed, __ATOMIC_RELAXED);
    struct queue *q = &g->q[cpu];
    struct block *b = q->tail;
    if ((!b || BLOCK_DATA - b->end < SLOT_BYTES + size) && !(b = block_get(g, q))) {
        __atomic_add_fetch(&g->queue_dropped, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&g->unjoined, 1, __ATOMIC_RELAXED);
        return;
    }
    /* a take's records count from the next pass: the rings this pass read
     * before it held none of their samples */
    struct slot sl = { .pass = g->passes + g->taking, .size = (uint32_t)size };
    memcpy(b->data + b->end, &sl, sizeof sl);
    memcpy(b->data + b->end + SLOT_BYTES, rec, size);
    b->end += (uint32_t)(SLOT_BYTES + size);
    if (++q->count > g->queue_peak)
        g->queue_peak = q->count;
}

static int on_note(void *ctx, void *data, size_t size)
{
    struct fk_pygate *g = ctx;
    g->drained += BPF_RINGBUF_HDR_SZ + ((size + 7) & ~(size_t)7);   /* as the ring holds it */
    if (size >= REC_HDR) {
        queue_chain(g, data, size);
        return 0;
    }
    __atomic_add_fetch(&g->wakeups, 1, __ATOMIC_RELAXED);
    uint32_t why = NOTE_NEW;    /* a note: the CPU, then the reason */
    if (size >= 8)
        memcpy(&why, (const unsigned char *)data + 4, sizeof why);
    uint64_t *count = why == NOTE_THREAD ? &g->no_thread : why == NOTE_MISS ? &g->missed
                      : why == NOTE_FULL ? &g->ring_full : NULL;
    if (count)
        __atomic_add_fetch(count, 1, __ATOMIC_RELAXED);
    return 0;
}

/* exe_offsets from the kernel's BTF, kept for this boot (util/bootcache.h:
 * loading the BTF costs a capture ~8 ms of CPU and ~2 MB of RSS,
 * capture/swtime.c); zeros where it has none of them. */
#define EXE_CACHE_NAME "pygate-exe"
static const char exe_cache_magic[8] = "FKEXE1";

static bool exe_sound(const struct exe_offsets *o)
{
    const int32_t v[] = { o->mm, o->exe_file, o->dentry, o->name };
    for (size_t i = 0; i < 4; i++)
        if (v[i] < 0 || v[i] >= (1 << 16) || v[i] % 8)
            return false;
    return o->mm > 0;
}

static struct exe_offsets exe_offsets(void)
{
    struct exe_offsets o;
    if (fk_bootcache_get(EXE_CACHE_NAME, exe_cache_magic, &o, sizeof o) && exe_sound(&o))
        return o;
    memset(&o, 0, sizeof o);
    struct btf *btf = btf__load_vmlinux_btf();
    if (!btf)
        return o;
    int32_t path = fk_btf_member_offset(btf, "file", "f_path");
    int32_t dentry = fk_btf_member_offset(btf, "path", "dentry");
    int32_t d_name = fk_btf_member_offset(btf, "dentry", "d_name");
    int32_t name = fk_btf_member_offset(btf, "qstr", "name");
    o.mm = fk_btf_member_offset(btf, "task_struct", "mm");
    o.exe_file = fk_btf_member_offset(btf, "mm_struct", "exe_file");
    o.dentry = path >= 0 && dentry >= 0 ? path + dentry : -1;
    o.name = d_name >= 0 && name >= 0 ? d_name + name : -1;
    btf__free(btf);
    if (!exe_sound(&o))
        return (struct exe_offsets){ 0 };
    (void)fk_bootcache_put(EXE_CACHE_NAME, exe_cache_magic, &o, sizeof o);
    return o;
}

struct fk_pygate *fk_pygate_new(uint32_t max_entries, uint64_t held, uint64_t rate, char *err,
                                size_t errlen)
{
    struct fk_pygate *g = fk_calloc(1, sizeof *g);
    g->pids = g->hot = g->ring = g->prog = g->tids = g->scratch = g->codes = g->lost = g->tree_prog =
        g->tree_map = -1;
    g->entries = max_entries;
    g->ring_bytes = ring_bytes(gate_cpus(), held);
    g->hot_bytes = hot_bytes(gate_cpus(), g->ring_bytes, rate);
    int ncpus = libbpf_num_possible_cpus();
    if (ncpus <= 0) {
        snprintf(err, errlen, "the possible CPUs for the Python gate: %s", strerror(-ncpus));
        free(g);
        return NULL;
    }
    g->ncpus = (unsigned)ncpus;
    g->blocks_max = pool_blocks(g->ring_bytes + g->hot_bytes, gate_cpus());
    g->q = fk_calloc(g->ncpus, sizeof *g->q);
    if (!fk_bpf_map_create(BPF_MAP_TYPE_HASH, "fk_py_pids", 4, PV_BYTES, max_entries, 0,
                           &g->pids, err, errlen) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "fk_py_tids", 4, TV_BYTES, THREADS_MAX, 0,
                           &g->tids, err, errlen) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "fk_py_chain", 4, SCRATCH_BYTES, 1, 0,
                           &g->scratch, err, errlen) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "fk_py_codes", 8, 8, CODES_MAX, 0, &g->codes,
                           err, errlen) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_ARRAY, "fk_py_lost", 4, 8, 1, 0, &g->lost, err,
                           errlen) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fk_py_notes", 0, 0, g->ring_bytes, 0,
                           &g->ring, err, errlen) ||
        !fk_bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fk_py_hot", 0, 0, g->hot_bytes, 0,
                           &g->hot, err, errlen)) {
        fk_pygate_free(g);
        return NULL;
    }
    /* a kernel whose verifier refuses the code headers' reads leaves them
     * to the reader; one that refuses the chains' keeps the wake-ups; one
     * that refuses the task's reads wakes the reader for every new
     * process */
    g->chains = g->heads = true;
    g->exe = exe_offsets();
    bool loaded = load_prog(g, -1, &g->prog, err, errlen);
    if (!loaded && g->exe.mm) {
        g->exe = (struct exe_offsets){ 0 };
        loaded = load_prog(g, -1, &g->prog, err, errlen);
    }
    if (!loaded) {
        g->heads = false;
        if (!load_prog(g, -1, &g->prog, err, errlen)) {
            g->chains = false;
            if (!load_prog(g, -1, &g->prog, err, errlen)) {
                fk_pygate_free(g);
                return NULL;
            }
        }
    }
    g->rb_hot = ring_buffer__new(g->hot, on_note, g, NULL);
    if (!g->rb_hot) {
        snprintf(err, errlen, "BPF ring buffer for Python wake-ups: %s", strerror(errno));
        fk_pygate_free(g);
        return NULL;
    }
    return g;
}

bool fk_pygate_attach(struct fk_pygate *g, int perf_fd, int tree_map, char *err, size_t errlen)
{
    if (tree_map < 0)
        return fk_bpf_attach_perf(perf_fd, g->prog, err, errlen);
    if (g->tree_prog >= 0 && g->tree_map != tree_map) {
        snprintf(err, errlen, "the Python gate serves one tree");
        return false;
    }
    if (g->tree_prog < 0 && !load_prog(g, tree_map, &g->tree_prog, err, errlen))
        return false;
    g->tree_map = tree_map;
    return fk_bpf_attach_perf(perf_fd, g->tree_prog, err, errlen);
}

void fk_pygate_mark(struct fk_pygate *g, pid_t pid, enum fk_pygate_mark m)
{
    uint32_t k = (uint32_t)pid;
    if (pid <= 0)
        return;
    if (m == FK_PYGATE_FORGET) {
        (void)bpf_map_delete_elem(g->pids, &k);
        return;
    }
    /* a process marked again keeps its main thread (fk_pygate_thread) */
    unsigned char v[PV_BYTES] = { 0 };
    if (m != FK_PYGATE_WAKE || bpf_map_lookup_elem(g->pids, &k, v) != 0)
        memset(v, 0, sizeof v);
    v[PV_WAKE] = m == FK_PYGATE_WAKE;
    if (v[PV_WAKE])
        __atomic_store_n(&g->large_wanted, true, __ATOMIC_RELEASE);
    if (bpf_map_update_elem(g->pids, &k, v, BPF_ANY) == 0)
        __atomic_add_fetch(&g->marked, 1, __ATOMIC_RELAXED);
    else if (errno == E2BIG)
        __atomic_add_fetch(&g->full, 1, __ATOMIC_RELAXED);
}

bool fk_pygate_thread(struct fk_pygate *g, pid_t pid, pid_t tid, uint64_t tstate,
                      const struct fk_pygate_offsets *o)
{
    if (!g->chains)
        return false;
    unsigned char v[TV_BYTES] = { 0 };
    uint16_t co_read = o->co_read <= FK_PYGATE_CODE_BYTES ? o->co_read : 0;
    uint16_t f[8] = { o->ts_cframe, o->ts_native_thread_id, o->cf_current_frame, o->fr_previous,
                      o->fr_size, o->fr_code, o->fr_func, co_read };
    uint32_t k = (uint32_t)tid;
    if (tid <= 0 || !tstate || o->fr_size > FK_PYGATE_STRIDE ||
        o->fr_previous > FK_PYGATE_STRIDE - 8 || o->fr_code > FK_PYGATE_STRIDE - 8 ||
        o->fr_func > FK_PYGATE_STRIDE - 8)
        return false;
    memcpy(v + TV_TSTATE, &tstate, 8);
    memcpy(v + TV_CFRAME, f, sizeof f);
    __atomic_store_n(&g->large_wanted, true, __ATOMIC_RELEASE);
    if (bpf_map_update_elem(g->tids, &k, v, BPF_ANY) != 0)
        return false;
    if (tid == pid) {   /* the main thread's in its process's entry too, if it has one */
        unsigned char pv[PV_BYTES] = { [PV_WAKE] = 1 };
        memcpy(pv + PV_THREAD, v, TV_BYTES);
        (void)bpf_map_update_elem(g->pids, &k, pv, BPF_EXIST);
    }
    __atomic_add_fetch(&g->threads, 1, __ATOMIC_RELAXED);
    return true;
}

void fk_pygate_code(struct fk_pygate *g, uint64_t code, uint64_t func)
{
    if (g->chains)
        (void)bpf_map_update_elem(g->codes, &code, &func, BPF_ANY);
}

bool fk_pygate_quiet_by_name(const struct fk_pygate *g)
{
    return g->exe.mm != 0;
}

int fk_pygate_fd(const struct fk_pygate *g)
{
    return g->hot;
}

/* q's oldest record (q not empty). */
static const struct slot *queue_front(const struct queue *q)
{
    return slot_at(q->head, q->head->start);
}

/* Records no sample took within two passes of their drain are dropped. */
static void queue_expire(struct fk_pygate *g, struct queue *q)
{
    while (q->count && (queue_front(q)->taken || queue_front(q)->pass + 2 <= g->passes))
        queue_pop(g, q);
}

/* A drain's bytes, counted when the next begins (the takes between them
 * read what the drain missed, fk_pygate_take). */
static void drained_count(struct fk_pygate *g)
{
    if (g->drained > g->ring_peak)
        __atomic_store_n(&g->ring_peak, g->drained, __ATOMIC_RELAXED);
    g->drained = 0;
}

/* Both rings' records into the queues, the hot ring's first (a record
 * is found by its sample wherever it stands in its queue: find); the
 * records taken, or < 0 when neither ring could be read. */
static int consume(struct fk_pygate *g)
{
    if (!g->rb && !g->large_failed && __atomic_load_n(&g->large_wanted, __ATOMIC_ACQUIRE)) {
        /* once (a failure leaves its records unread: their samples are
         * read from the target, as when the rings were full) */
        g->rb = ring_buffer__new(g->ring, on_note, g, NULL);
        g->large_failed = !g->rb;
    }
    int hot = ring_buffer__consume(g->rb_hot), large = g->rb ? ring_buffer__consume(g->rb) : 0;
    if (hot < 0 && large < 0)
        return hot;
    return (hot > 0 ? hot : 0) + (large > 0 ? large : 0);
}

uint64_t fk_pygate_drain(struct fk_pygate *g)
{
    g->passes++;
    for (unsigned c = 0; c < g->ncpus; c++)
        queue_expire(g, &g->q[c]);
    drained_count(g);
    int n = consume(g);
    return n > 0 ? (uint64_t)n : 0;
}

/* The oldest record of q for tid at ip within FK_PYGATE_JOIN_NS of time;
 * the records taken at q's front leave it (their bytes stay until the
 * next record comes in). */
static bool find(struct fk_pygate *g, struct queue *q, pid_t tid, uint64_t ip, uint64_t time,
                 struct fk_pygate_chain *out)
{
    for (struct block *b = q->head; b; b = b->next) {
        for (size_t off = b->start; off < b->end; off += SLOT_BYTES + slot_at(b, off)->size) {
            struct slot *sl = slot_at(b, off);
            const unsigned char *r = b->data + off + SLOT_BYTES;
            struct rec h = rec_of(r);
            uint64_t t = h.time;
            if (sl->taken || h.tid != (uint32_t)tid || h.ip != ip ||
                (t > time ? t - time : time - t) > FK_PYGATE_JOIN_NS)
                continue;
            sl->taken = 1;
            *out = (struct fk_pygate_chain){
                .cpu = h.cpu, .tid = (uint32_t)tid, .n = h.n, .time = t, .ip = ip,
                .tstate = h.tstate, .cframe = h.cframe, .native_tid = h.ntid, .head = h.head,
                .next = h.next, .frames = r + REC_HDR, .ncodes = h.ncodes,
                .codes = r + REC_HDR + (size_t)h.n * FK_PYGATE_STRIDE,
            };
            for (unsigned j = 0; j < FK_PYGATE_CODES; j++)
                out->code_addr[j] = j < h.ncodes ? h.codes[j] : 0;
            uint64_t d = time > t ? time - t : t - time;
            if (d > g->join_max_ns)
                __atomic_store_n(&g->join_max_ns, d, __ATOMIC_RELAXED);
            __atomic_add_fetch(&g->joined, 1, __ATOMIC_RELAXED);
            while (q->count && queue_front(q)->taken)
                queue_pop(g, q);
            return true;
        }
    }
    return false;
}

bool fk_pygate_take(struct fk_pygate *g, uint32_t cpu, pid_t tid, uint64_t ip, uint64_t time,
                    struct fk_pygate_chain *out)
{
    if (cpu >= g->ncpus || tid <= 0)
        return false;
    struct queue *q = &g->q[cpu];
    if (find(g, q, tid, ip, time, out))
        return true;
    /* a sample written after this pass drained the rings: its record too */
    g->taking = true;
    int n = consume(g);
    g->taking = false;
    if (n <= 0 || !find(g, q, tid, ip, time, out)) {
        note_lone(g, cpu, (uint32_t)tid, ip, time);
        return false;
    }
    return true;
}

void fk_pygate_stats(const struct fk_pygate *g, struct fk_pygate_stats *out)
{
    out->wakeups = __atomic_load_n(&g->wakeups, __ATOMIC_RELAXED);
    out->marked = __atomic_load_n(&g->marked, __ATOMIC_RELAXED);
    out->full = __atomic_load_n(&g->full, __ATOMIC_RELAXED);
    out->chains = __atomic_load_n(&g->nchains, __ATOMIC_RELAXED);
    out->code_wakeups = __atomic_load_n(&g->code_wakeups, __ATOMIC_RELAXED);
    out->code_headers = __atomic_load_n(&g->code_headers, __ATOMIC_RELAXED);
    out->code_headers_failed = __atomic_load_n(&g->code_headers_failed, __ATOMIC_RELAXED);
    out->joined = __atomic_load_n(&g->joined, __ATOMIC_RELAXED);
    /* records still queued untaken (the capture's end: the reader's last
     * pass is over) count as unjoined, so that read = joined + unjoined */
    out->unjoined_at_end = 0;
    for (unsigned c = 0; c < g->ncpus; c++) {
        for (const struct block *b = g->q[c].head; b; b = b->next)
            for (size_t off = b->start; off < b->end; off += SLOT_BYTES + slot_at(b, off)->size)
                out->unjoined_at_end += !slot_at(b, off)->taken;
    }
    out->unjoined = __atomic_load_n(&g->unjoined, __ATOMIC_RELAXED) + out->unjoined_at_end;
    out->queue_peak = g->queue_peak;
    out->queue_bytes = __atomic_load_n(&g->queue_bytes, __ATOMIC_RELAXED);
    out->queue_dropped = __atomic_load_n(&g->queue_dropped, __ATOMIC_RELAXED);
    out->ring_bytes = (uint64_t)g->ring_bytes + g->hot_bytes;
    out->ring_peak = __atomic_load_n(&g->ring_peak, __ATOMIC_RELAXED);
    out->no_thread = __atomic_load_n(&g->no_thread, __ATOMIC_RELAXED);
    out->missed = __atomic_load_n(&g->missed, __ATOMIC_RELAXED);
    out->ring_full = __atomic_load_n(&g->ring_full, __ATOMIC_RELAXED);
    out->threads = __atomic_load_n(&g->threads, __ATOMIC_RELAXED);
    uint32_t zero = 0;
    uint64_t lost = 0;
    out->ring_lost = bpf_map_lookup_elem(g->lost, &zero, &lost) == 0 ? lost : 0;
    out->join_max_ns = __atomic_load_n(&g->join_max_ns, __ATOMIC_RELAXED);
    out->expired_early = __atomic_load_n(&g->expired_early, __ATOMIC_RELAXED);
    out->out_of_window = __atomic_load_n(&g->out_of_window, __ATOMIC_RELAXED);
    out->out_of_window_max_ns = __atomic_load_n(&g->out_of_window_max_ns, __ATOMIC_RELAXED);
    out->reads = g->chains;
    out->reads_codes = g->chains && g->heads;
}

/* The maps' fixed kernel memory: the tgid map's entries, the rings, the
 * thread and code maps, the per-CPU record scratch (one per CPU) and the
 * lost counter. */
static size_t maps_bytes(uint32_t entries, uint32_t ring, unsigned ncpus)
{
    return (size_t)entries * (ENTRY_BYTES + PV_BYTES) + ring + (size_t)THREADS_MAX * THREAD_BYTES +
           (size_t)CODES_MAX * CODE_BYTES + (size_t)ncpus * SCRATCH_BYTES + ENTRY_BYTES;
}

size_t fk_pygate_fixed_bytes(uint32_t max_entries, uint64_t held, uint64_t rate)
{
    int ncpus = libbpf_num_possible_cpus();
    uint32_t ring = ring_bytes(gate_cpus(), held);
    ring += hot_bytes(gate_cpus(), ring, rate);
    return maps_bytes(max_entries, ring, ncpus > 0 ? (unsigned)ncpus : 1) +
           (size_t)pool_blocks(ring, gate_cpus()) * BLOCK_BYTES;
}

/* The maps' fixed kernel memory and the per-CPU queues made so far. */
size_t fk_pygate_bytes(const struct fk_pygate *g)
{
    if (!g)
        return 0;
    return maps_bytes(g->entries, g->ring_bytes + g->hot_bytes, g->ncpus) +
           (size_t)__atomic_load_n(&g->queue_bytes, __ATOMIC_RELAXED);
}

void fk_pygate_free(struct fk_pygate *g)
{
    if (!g)
        return;
    ring_buffer__free(g->rb);
    ring_buffer__free(g->rb_hot);
    int *fds[] = { &g->tree_prog, &g->prog, &g->hot, &g->ring, &g->codes, &g->lost, &g->scratch,
                   &g->tids, &g->pids };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    for (unsigned c = 0; c < g->ncpus && g->q; c++)
        for (struct block *b = g->q[c].head, *next; b; b = next) {
            next = b->next;
            free(b);
        }
    for (struct block *b = g->spare, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(g->q);
    free(g);
}
