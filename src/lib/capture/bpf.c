/* SPDX-License-Identifier: GPL-2.0-only */
/* In-kernel programs built from instructions at run time (see bpf.h). The
 * builder grows its arrays itself and remembers the first failure instead
 * of returning one per call, so a generator emits straight-line code and
 * checks once, at load. Labels are resolved at load: a jump's offset is
 * relative to the instruction after it and must fit the 16 bits of .off. */
#include "capture/bpf.h"
#include "capture/bpf-dyn.h"
#include "capture/tracefs.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct fk_bpf_fixup {
    uint32_t at;     /* the jump instruction */
    uint32_t label;
};

static void fail(struct fk_bpf_builder *b, const char *fmt, ...)
{
    if (b->failed[0])
        return; /* the first failure is the one that explains the rest */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->failed, sizeof b->failed, fmt, ap);
    va_end(ap);
}

/* Grow *arr (elements of size sz) to hold need; false (and the builder
 * failed) when the allocation fails. */
static bool grow(struct fk_bpf_builder *b, void **arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, n * sz);
    if (!p) {
        fail(b, "no memory for a BPF program of %zu instructions", need);
        return false;
    }
    *arr = p;
    *cap = n;
    return true;
}

void fk_bpf_builder_init(struct fk_bpf_builder *b)
{
    memset(b, 0, sizeof *b);
}

void fk_bpf_builder_free(struct fk_bpf_builder *b)
{
    free(b->insn);
    free(b->label_at);
    free(b->fix);
    memset(b, 0, sizeof *b);
}

void fk_bpf_emit(struct fk_bpf_builder *b, struct bpf_insn insn)
{
    if (b->failed[0])
        return;
    if (b->n >= FK_BPF_MAX_INSNS) {
        fail(b, "BPF program longer than %d instructions", FK_BPF_MAX_INSNS);
        return;
    }
    if (!grow(b, (void **)&b->insn, &b->cap, b->n + 1, sizeof *b->insn))
        return;
    b->insn[b->n++] = insn;
}

void fk_bpf_emit_ld_imm64(struct fk_bpf_builder *b, unsigned reg, uint64_t value)
{
    fk_bpf_emit(b, FK_BPF_INSN(BPF_LD | BPF_DW | BPF_IMM, reg, 0, 0, (int32_t)(uint32_t)value));
    fk_bpf_emit(b, FK_BPF_INSN(0, 0, 0, 0, (int32_t)(uint32_t)(value >> 32)));
}

void fk_bpf_emit_ld_map_fd(struct fk_bpf_builder *b, unsigned reg, int map_fd)
{
    fk_bpf_emit(b, FK_BPF_INSN(BPF_LD | BPF_DW | BPF_IMM, reg, BPF_PSEUDO_MAP_FD, 0, map_fd));
    fk_bpf_emit(b, FK_BPF_INSN(0, 0, 0, 0, 0));
}

void fk_bpf_emit_map_lookup(struct fk_bpf_builder *b, int map_fd, int32_t key_off)
{
    fk_bpf_emit_ld_map_fd(b, BPF_REG_1, map_fd);
    fk_bpf_emit(b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, key_off));
    fk_bpf_emit(b, FK_BPF_CALL(BPF_FUNC_map_lookup_elem));
}

unsigned fk_bpf_label_new(struct fk_bpf_builder *b)
{
    if (!grow(b, (void **)&b->label_at, &b->caplabels, b->nlabels + 1, sizeof *b->label_at))
        return 0; /* the builder failed; label 0 is never resolved against it */
    b->label_at[b->nlabels] = -1;
    return (unsigned)b->nlabels++;
}

void fk_bpf_label_place(struct fk_bpf_builder *b, unsigned label)
{
    if (b->failed[0])
        return;
    if (label >= b->nlabels) {
        fail(b, "BPF label %u was never made", label);
        return;
    }
    if (b->label_at[label] >= 0) {
        fail(b, "BPF label %u placed twice", label);
        return;
    }
    b->label_at[label] = (int32_t)b->n;
}

static void jump(struct fk_bpf_builder *b, struct bpf_insn insn, unsigned label)
{
    if (b->failed[0])
        return;
    if (label >= b->nlabels) {
        fail(b, "BPF jump to label %u, which was never made", label);
        return;
    }
    if (!grow(b, (void **)&b->fix, &b->capfix, b->nfix + 1, sizeof *b->fix))
        return;
    b->fix[b->nfix++] = (struct fk_bpf_fixup){ .at = (uint32_t)b->n, .label = label };
    fk_bpf_emit(b, insn);
}

void fk_bpf_jump_imm(struct fk_bpf_builder *b, unsigned op, unsigned reg, int32_t imm,
                     unsigned label)
{
    jump(b, FK_BPF_JMP_IMM(op, reg, imm, 0), label);
}

void fk_bpf_jump_reg(struct fk_bpf_builder *b, unsigned op, unsigned dst, unsigned src,
                     unsigned label)
{
    jump(b, FK_BPF_JMP_REG(op, dst, src, 0), label);
}

void fk_bpf_goto(struct fk_bpf_builder *b, unsigned label)
{
    jump(b, FK_BPF_INSN(BPF_JMP | BPF_JA, 0, 0, 0, 0), label);
}

/* Give every recorded jump its offset. */
static bool resolve(struct fk_bpf_builder *b)
{
    for (size_t i = 0; i < b->nfix && !b->failed[0]; i++) {
        const struct fk_bpf_fixup *f = &b->fix[i];
        int32_t to = b->label_at[f->label];
        if (to < 0) {
            fail(b, "BPF label %u used by instruction %u but never placed", f->label, f->at);
            break;
        }
        int64_t off = (int64_t)to - ((int64_t)f->at + 1);
        if (off < INT16_MIN || off > INT16_MAX) {
            fail(b, "BPF jump at instruction %u too far (%lld)", f->at, (long long)off);
            break;
        }
        b->insn[f->at].off = (int16_t)off;
    }
    return !b->failed[0];
}

/* The verifier log's line that says why: the last one before its
 * statistics ("processed N insns...", "verification time..."), which
 * names the instruction and the reason. */
static const char *log_reason(char *log)
{
    const char *why = "";
    char *save = NULL;
    for (char *line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "processed ", 10) || !strncmp(line, "verification time", 17)
            || !strncmp(line, "stack depth", 11) || !line[0])
            continue;
        why = line;
    }
    return why;
}

/* libbpf is there (loaded at run time, bpf-dyn.c): else err says which
 * package to install. */
static bool libbpf_ready(char *err, size_t errlen)
{
    return !fk_bpf_lib_load || fk_bpf_lib_load(err, errlen);
}

bool fk_bpf_prog_load(struct fk_bpf_builder *b, enum bpf_prog_type type, const char *name,
                      int *fd, char *err, size_t errlen)
{
    *fd = -1;
    if (!libbpf_ready(err, errlen))
        return false;
    if (!b->failed[0] && b->n == 0)
        fail(b, "empty BPF program");
    if (!resolve(b)) {
        snprintf(err, errlen, "BPF program %s: %s", name, b->failed);
        return false;
    }
    /* First without a log (the verifier runs faster and a program that
     * loads needs none), then once more with one to say why it failed. */
    int p = bpf_prog_load(type, name, "GPL", b->insn, b->n, NULL);
    if (p >= 0) {
        *fd = p;
        return true;
    }
    int e = errno;
    if (e == EPERM) { /* EACCES is the verifier's refusal: its log says why */
        snprintf(err, errlen, "BPF program %s: not permitted (%s); run as root with "
                  "CAP_BPF and CAP_PERFMON, outside kernel lockdown", name, strerror(e));
        return false;
    }
    enum { LOG_SIZE = 1 << 20 };
    char *log = malloc(LOG_SIZE);
    if (!log) {
        snprintf(err, errlen, "BPF program %s: %s", name, strerror(e));
        return false;
    }
    log[0] = '\0';
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_buf = log, .log_size = LOG_SIZE,
                .log_level = 1);
    p = bpf_prog_load(type, name, "GPL", b->insn, b->n, &opts);
    if (p >= 0) { /* loaded the second time: keep it */
        free(log);
        *fd = p;
        return true;
    }
    const char *why = log_reason(log);
    snprintf(err, errlen, "BPF program %s refused by the kernel (%s)%s%s", name,
              strerror(errno), *why ? ": " : "", why);
    free(log);
    return false;
}

bool fk_bpf_map_create(enum bpf_map_type type, const char *name, uint32_t key_size,
                       uint32_t value_size, uint32_t max_entries, uint32_t flags, int *fd,
                       char *err, size_t errlen)
{
    *fd = -1;
    if (!libbpf_ready(err, errlen))
        return false;
    LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
    *fd = bpf_map_create(type, name, key_size, value_size, max_entries, &opts);
    if (*fd < 0) {
        snprintf(err, errlen, "BPF map %s (%u entries of %u+%u bytes): %s", name, max_entries,
                  key_size, value_size, strerror(errno));
        *fd = -1;
        return false;
    }
    return true;
}

bool fk_bpf_attach_perf(int perf_fd, int prog_fd, char *err, size_t errlen)
{
    if (ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, prog_fd) != 0) {
        snprintf(err, errlen, "attaching a BPF program to a perf event: %s", strerror(errno));
        return false;
    }
    return true;
}

bool fk_bpf_attach_tracepoint(uint64_t tp_id, int prog_fd, int *fd, char *err, size_t errlen)
{
    /* a tracepoint's programs are one array for the tracepoint (run
     * before perf looks for this CPU's events), so a disabled event
     * anywhere keeps them running everywhere */
    struct perf_event_attr attr = {
        .type = PERF_TYPE_TRACEPOINT,
        .size = sizeof attr,
        .config = tp_id,
        .disabled = 1,
    };
    *fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (*fd < 0) {
        snprintf(err, errlen, "perf_event_open on tracepoint %llu for a BPF program: %s",
                 (unsigned long long)tp_id, strerror(errno));
        return false;
    }
    if (!fk_bpf_attach_perf(*fd, prog_fd, err, errlen)) {
        close(*fd);
        *fd = -1;
        return false;
    }
    return true;
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
    return syscall(SYS_bpf, cmd, attr, sizeof *attr);
}

bool fk_bpf_attach_raw_tracepoint(const char *name, int prog_fd, int *fd, char *err,
                                  size_t errlen)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.raw_tracepoint.name = (uint64_t)(uintptr_t)name;
    a.raw_tracepoint.prog_fd = (uint32_t)prog_fd;
    *fd = (int)sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
    if (*fd < 0) {
        snprintf(err, errlen, "attaching a BPF program to the raw tracepoint %s: %s", name,
                 strerror(errno));
        return false;
    }
    return true;
}

int fk_bpf_raw_tracepoint_links(const char *name)
{
    int n = 0;
    uint32_t id = 0;
    for (int looked = 0; looked < 4096; looked++) {
        union bpf_attr a;
        memset(&a, 0, sizeof a);
        a.start_id = id;
        if (sys_bpf(BPF_LINK_GET_NEXT_ID, &a) != 0)
            return errno == ENOENT ? n : -1;
        id = a.next_id;
        memset(&a, 0, sizeof a);
        a.link_id = id;
        int fd = (int)sys_bpf(BPF_LINK_GET_FD_BY_ID, &a);
        if (fd < 0)
            continue;   /* (gone meanwhile) */
        char tp[64] = "";
        struct bpf_link_info info;
        memset(&info, 0, sizeof info);
        info.raw_tracepoint.tp_name = (uint64_t)(uintptr_t)tp;
        info.raw_tracepoint.tp_name_len = sizeof tp;
        memset(&a, 0, sizeof a);
        a.info.bpf_fd = (uint32_t)fd;
        a.info.info_len = sizeof info;
        a.info.info = (uint64_t)(uintptr_t)&info;
        if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 &&
            info.type == BPF_LINK_TYPE_RAW_TRACEPOINT) {
            tp[sizeof tp - 1] = '\0';
            n += !strcmp(tp, name);
        }
        close(fd);
    }
    return n;
}

int fk_bpf_tracepoint_programs(int perf_fd)
{
    struct {
        struct perf_event_query_bpf q;
        uint32_t ids[64];
    } query = { .q = { .ids_len = 64 } };
    if (ioctl(perf_fd, PERF_EVENT_IOC_QUERY_BPF, &query) != 0 && errno != ENOSPC)
        return -1;
    return (int)query.q.prog_cnt;
}

bool fk_bpf_load_field(struct fk_bpf_builder *b, unsigned dst, unsigned ctx,
                       const struct fk_tp_field *f, char *err, size_t errlen)
{
    int sz = f->size == 1 ? BPF_B : f->size == 2 ? BPF_H : f->size == 4 ? BPF_W
           : f->size == 8 ? BPF_DW : -1;
    if (sz < 0 || f->offset < 8 || f->offset % f->size) {
        snprintf(err, errlen, "the tracepoint's field %s (offset %u, %u bytes) cannot be read "
                 "by a BPF program", f->name, f->offset, f->size);
        return false;
    }
    fk_bpf_emit(b, FK_BPF_LDX_MEM(sz, dst, ctx, (int16_t)f->offset));
    return true;
}

/* r6 = ctx, r7 = the child; stack: -4 the forking tgid, -8 the child (the
 * key), -16 the value, -20 full_fd's key 0. */
bool fk_bpf_fork_follower(int map_fd, enum fk_bpf_fork_value value,
                          enum fk_bpf_fork_outsiders outsiders, int full_fd, const char *name,
                          int *prog_fd, int *event_fd, char *err, size_t errlen)
{
    *prog_fd = *event_fd = -1;
    struct fk_tp_format fork;
    if (!fk_tp_format_load("sched", "sched_process_fork", &fork, err, errlen))
        return false;
    const struct fk_tp_field *child = fk_tp_field(&fork, "child_pid");
    if (!child || child->size != 4) {
        snprintf(err, errlen, "sched:sched_process_fork has no 4-byte child_pid field");
        return false;
    }
    if (value == FK_BPF_FORK_FLAG_ARRAY && outsiders == FK_BPF_FORK_DELETE) {
        snprintf(err, errlen, "the fork follower deletes outsiders from hashes only");
        return false;
    }
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    unsigned outside = fk_bpf_label_new(&b), done = fk_bpf_label_new(&b);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_6, BPF_REG_1));
    bool ok = fk_bpf_load_field(&b, BPF_REG_7, BPF_REG_6, child, err, errlen);
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_7, -8));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_get_current_pid_tgid));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, -4));
    fk_bpf_emit_map_lookup(&b, map_fd, -4);
    fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, outside);
    if (value == FK_BPF_FORK_FLAG_ARRAY) {     /* every pid has an entry: its byte says */
        fk_bpf_emit(&b, FK_BPF_LDX_MEM(BPF_B, BPF_REG_1, BPF_REG_0, 0));
        fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_1, 0, outside);
    }
    if (value == FK_BPF_FORK_TIME) {
        fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_ktime_get_ns));
        fk_bpf_emit(&b, FK_BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_0, -16));
    } else {
        fk_bpf_emit(&b, FK_BPF_ST_MEM(BPF_B, BPF_REG_10, -16, 1));
    }
    fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, map_fd);
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
    fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_3, BPF_REG_10));
    fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_3, -16));
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_4, BPF_ANY));
    fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_map_update_elem));
    if (full_fd >= 0) {     /* no room (-E2BIG): full_fd[0] += 1 */
        fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, done);
        fk_bpf_emit(&b, FK_BPF_ST_MEM(BPF_W, BPF_REG_10, -20, 0));
        fk_bpf_emit_map_lookup(&b, full_fd, -20);
        fk_bpf_jump_imm(&b, BPF_JEQ, BPF_REG_0, 0, done);
        fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_1, 1));
        fk_bpf_emit(&b, FK_BPF_ATOMIC_ADD(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    }
    fk_bpf_goto(&b, done);
    fk_bpf_label_place(&b, outside);
    if (outsiders == FK_BPF_FORK_DELETE) {
        fk_bpf_emit_ld_map_fd(&b, BPF_REG_1, map_fd);
        fk_bpf_emit(&b, FK_BPF_MOV64_REG(BPF_REG_2, BPF_REG_10));
        fk_bpf_emit(&b, FK_BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
        fk_bpf_emit(&b, FK_BPF_CALL(BPF_FUNC_map_delete_elem));
    }
    fk_bpf_label_place(&b, done);
    /* 1: a tracepoint's programs are ANDed for all of its perf events
     * (bpf_prog_run_array): a 0 would take every other tool's samples of
     * sched_process_fork while the capture runs */
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 1));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    ok = ok && fk_bpf_prog_load(&b, BPF_PROG_TYPE_TRACEPOINT, name, prog_fd, err, errlen);
    fk_bpf_builder_free(&b);
    if (ok && fk_bpf_attach_tracepoint(fork.id, *prog_fd, event_fd, err, errlen))
        return true;
    if (*prog_fd >= 0)
        close(*prog_fd);
    *prog_fd = -1;
    return false;
}

/* Load "r0 = 0; exit" as a perf-event program and attach it to a
 * software event of this thread: the whole path a capture takes (its
 * close waits for nothing: only tracing events detach through
 * perf_event_detach_bpf_prog). */
static bool probe(char *err, size_t errlen)
{
    struct fk_bpf_builder b;
    fk_bpf_builder_init(&b);
    fk_bpf_emit(&b, FK_BPF_MOV64_IMM(BPF_REG_0, 0));
    fk_bpf_emit(&b, FK_BPF_EXIT());
    int prog;
    bool ok = fk_bpf_prog_load(&b, BPF_PROG_TYPE_PERF_EVENT, "fk_probe", &prog, err, errlen);
    fk_bpf_builder_free(&b);
    if (!ok)
        return false;
    struct perf_event_attr attr = {
        .type = PERF_TYPE_SOFTWARE,
        .size = sizeof attr,
        .config = PERF_COUNT_SW_DUMMY,
        .sample_period = 1,
        .disabled = 1,
    };
    int ev = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (ev < 0) {
        snprintf(err, errlen, "perf_event_open for the BPF probe: %s", strerror(errno));
        close(prog);
        return false;
    }
    ok = fk_bpf_attach_perf(ev, prog, err, errlen);
    close(ev);
    close(prog);
    return ok;
}

/* The probe's answer, made once per process (captures may start on
 * several threads, e.g. serve's). */
static pthread_mutex_t usable_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { bool probed, ok; char why[256]; } usable;

bool fk_bpf_usable(char *err, size_t errlen)
{
    pthread_mutex_lock(&usable_lock);
    if (!usable.probed) {
        usable.ok = probe(usable.why, sizeof usable.why);
        usable.probed = true;
    }
    bool ok = usable.ok;
    if (!ok)
        snprintf(err, errlen, "%s", usable.why);
    pthread_mutex_unlock(&usable_lock);
    return ok;
}

/* fk_btf_member_offset's walk: member name in the struct or union of
 * BTF id id, or in its anonymous members (at most 4 deep). */
static int32_t btf_offset_in(const struct btf *btf, uint32_t id, const char *name, int depth)
{
    const struct btf_type *ty = btf__type_by_id(btf, id);
    if (!ty || !btf_is_composite(ty) || depth > 4)
        return -1;
    const struct btf_member *m = btf_members(ty);
    for (int i = 0; i < btf_vlen(ty); i++) {
        uint32_t bits = btf_member_bit_offset(ty, (uint32_t)i);
        const char *n = btf__name_by_offset(btf, m[i].name_off);
        int32_t in = !n || !*n ? btf_offset_in(btf, m[i].type, name, depth + 1)
                     : !strcmp(n, name) ? 0 : -1;
        if (in >= 0)
            return bits % 8 ? -1 : (int32_t)(bits / 8) + in;
    }
    return -1;
}

int32_t fk_btf_member_offset(const struct btf *btf, const char *sname, const char *name)
{
    int id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
    return id > 0 ? btf_offset_in(btf, (uint32_t)id, name, 0) : -1;
}
