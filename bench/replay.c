/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture engine's per-sample cost without perf's timing noise: a
 * window's raw ring records are recorded once (bench input, not a product
 * format), then replayed on one core through what the capture does to each
 * -- decode, unwind, locate (symbolize), aggregate -- and the symbol
 * loading of its wake-ups, then named as at a capture's end.
 *
 *   replay record FILE SECS [HZ [PIDS]]  capture host-wide (as 'flamekit
 *                                    host -F HZ', dwarf stacks) or the
 *                                    processes PIDS ("12,34"), saving every
 *                                    record in the order it was handled
 *   replay run FILE [REPEAT [FOLDED [PPROF]]]  replay FILE REPEAT times (default 1)
 *                                    into one engine, streamed through a
 *                                    1 MB buffer; prints samples/s of
 *                                    CPU (less the file's reads), median
 *                                    and p99 us per sample
 *                                    (wall time), naming ms, peak RSS;
 *                                    writes the folded stacks to FOLDED
 *                                    (to check that a change keeps every
 *                                    output byte: cmp two builds' files);
 *                                    with PPROF, the profile as pprof
 *                                    (uncompressed, no metadata comments)
 *                                    too, and the encoding's ms
 *
 * FK_REPLAY_EVICT_KB=N: after each read of the recording (about every
 * 80 python3.11 samples), write over N KiB, so that the engine finds the
 * records and its own tables as cold as a live capture of busy CPUs does
 * (its thread wakes every 50-100 ms after the workload ran); that time is
 * not counted. Warm (2026-12-05, host input, not quiet) a replayed
 * sample's median was 2.0 us wall, while a live capture's engine thread
 * spent ~7.8 us of CPU a sample on the same workload.
 *
 * The recorded processes must still run when replaying: the engine seeds
 * address spaces from /proc, as a capture does at its start.
 * File: "FKREPLAY", u64 sample_type, then the records as in the ring. */
#include "engine/capture.h"
#include "capture/sample.h"
#include "stacks/folded.h"
#include "util/fk.h"
#include "util/outfile.h"
#include "render/pprof.h"
#include "cmd/term.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "FKREPLAY"
#define WAKEUP_NS (100 * 1000000ull)    /* the live loop's poll interval */

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

struct rec_out {
    FILE *f;
    bool header;
    bool failed;
    unsigned char cut[65536];   /* a record's largest size */
};

static void tap(void *ctx, const struct fk_sample_format *fmt, const void *rec, size_t len)
{
    struct rec_out *o = ctx;
    if (!o->header) {
        o->header = true;
        if (fwrite(MAGIC, 8, 1, o->f) != 1 || fwrite(&fmt->sample_type, 8, 1, o->f) != 1)
            o->failed = true;
    }
    /* records are handed on where they lie in the ring, stack copies
     * whole: the file keeps what the kernel filled, as a kept record */
    size_t cut = (fmt->sample_type & PERF_SAMPLE_IDENTIFIER)
                 ? 0 : fk_sample_cut_stack(fmt, rec, len, o->cut, NULL);
    if (cut) {
        rec = o->cut;
        len = cut;
    }
    if (fwrite(rec, len, 1, o->f) != 1)
        o->failed = true;
}

static void opts_host(struct fk_capture_opts *o, struct fk_target *t, uint64_t hz)
{
    fk_target_host(t);
    fk_capture_opts_init(o);
    fk_event_cpu_default(&o->event, hz);
    o->target = t;
    o->quiet = true;
    o->max_mem_bytes = 1ull << 30;
}

static int record(const char *path, uint64_t secs, uint64_t hz, const char *pids)
{
    struct fk_target t;
    struct fk_capture_opts o;
    opts_host(&o, &t, hz);
    if (pids) {
        fk_target_free(&t);
        char err[256];
        if (!fk_target_pids(&t, pids, err, sizeof err)) {
            fk_error("%s", err);
            return 1;
        }
    }
    o.duration_ms = secs * 1000;
    struct rec_out *out = fk_calloc(1, sizeof *out);
    out->f = fopen(path, "we");
    if (!out->f) {
        fk_error("%s: %s", path, strerror(errno));
        free(out);
        return 1;
    }
    o.record_tap = tap;
    o.record_tap_ctx = out;
    struct fk_capture_result r;
    char err[512];
    int rc = fk_capture_run(&o, &r, err, sizeof err);
    if (rc != 0)
        fk_error("%s", err);
    bool failed = out->failed;
    if (fclose(out->f) != 0)
        failed = true;
    free(out);
    if (failed) {
        fk_error("%s: write failed", path);
        rc = 1;
    }
    if (rc == 0)
        printf("recorded %llu samples (%llu kept, %llu lost), %llu ring bytes into %s\n",
               (unsigned long long)r.samples, (unsigned long long)r.samples_kept,
               (unsigned long long)r.lost, (unsigned long long)r.ring_bytes, path);
    fk_capture_result_free(&r);
    fk_target_free(&t);
    return rc;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The recording, streamed through a fixed buffer: replaying a 60-second
 * window must not hold it in memory (the RSS figure is the engine's).
 * Records are handed on in place when 8-byte aligned, as the ring reader
 * keeps them; reading costs this thread's CPU, counted apart (read_s) so
 * that samples/s is the engine's alone. */
#define STREAM_BUF (1u << 20)
#define REC_MAX 65536u          /* a record's largest size (u16) */

struct stream {
    int fd;
    unsigned char *buf;         /* STREAM_BUF + REC_MAX bytes, 8-byte aligned */
    size_t pos, end;
    bool failed;                /* a read error (not the end of the file) */
    double read_s;              /* this thread's CPU time in read() */
    unsigned char *evict;       /* written over after each read (FK_REPLAY_EVICT_KB) */
    size_t evict_len;
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* At least want bytes buffered from pos on (fewer at the end of the file). */
static void stream_fill(struct stream *st, size_t want)
{
    if (st->end - st->pos >= want || st->failed)
        return;
    double t0 = thread_cpu_s();
    /* keep the unread tail, moved to the start: offsets keep their
     * alignment when pos is a multiple of 8 */
    size_t shift = st->pos & ~(size_t)7;
    memmove(st->buf, st->buf + shift, st->end - shift);
    st->pos -= shift;
    st->end -= shift;
    while (st->end < STREAM_BUF) {
        ssize_t k = read(st->fd, st->buf + st->end, STREAM_BUF + REC_MAX - st->end);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            st->failed = true;
        if (k <= 0)
            break;
        st->end += (size_t)k;
    }
    if (st->evict_len) {
        /* what stays in the caches between two wake-ups of a live capture
         * of busy CPUs: little (FK_REPLAY_EVICT_KB) */
        for (size_t i = 0; i < st->evict_len; i += 64)
            st->evict[i]++;
    }
    st->read_s += thread_cpu_s() - t0;
}

/* From the start of the records (just after the file header). */
static bool stream_rewind(struct stream *st)
{
    if (lseek(st->fd, 16, SEEK_SET) != 16) {
        st->failed = true;
        return false;
    }
    st->pos = st->end = 0;
    return true;
}

/* path <- the len bytes at data (bench output: the caller names the file) */
static bool write_file(const char *path, const void *data, size_t len)
{
    struct fk_outfile of;
    char err[512] = "";
    bool ok = fk_outfile_open(&of, path, 0644, err, sizeof err);
    if (ok && !fk_outfile_write(&of, data, len)) {
        fk_outfile_abort(&of);
        ok = false;
    } else if (ok) {
        ok = fk_outfile_commit(&of, err, sizeof err);
    }
    if (err[0])
        fk_error("%s", err);
    return ok;
}

static int run(const char *path, unsigned repeat, const char *folded, const char *pprof)
{
    struct stream st = { .fd = open(path, O_RDONLY | O_CLOEXEC) };
    char head[16];
    if (st.fd < 0 || read(st.fd, head, sizeof head) != (ssize_t)sizeof head || memcmp(head, MAGIC, 8)) {
        fk_error("%s: not a replay recording (make one with 'replay record')", path);
        if (st.fd >= 0)
            close(st.fd);
        return 1;
    }
    uint64_t stype;
    memcpy(&stype, head + 8, 8);
    st.buf = fk_malloc(STREAM_BUF + REC_MAX);     /* malloc's alignment: at least 8 */
    const char *ev = getenv("FK_REPLAY_EVICT_KB");
    if (ev && atol(ev) > 0) {
        st.evict_len = (size_t)atol(ev) << 10;
        st.evict = fk_calloc(1, st.evict_len);
    }
    struct fk_target t;
    struct fk_capture_opts o;
    opts_host(&o, &t, 999);
    struct fk_capture_result r;
    double c0 = cpu_s();
    char err[512];
    struct fk_replay *p = fk_replay_new(&o, &r, err, sizeof err);
    if (!p) {
        fk_error("%s", err);
        return 1;
    }
    if (fk_replay_format(p)->sample_type != stype) {
        fk_error("%s: recorded with sample_type %#llx, this build configures %#llx", path,
                 (unsigned long long)stype, (unsigned long long)fk_replay_format(p)->sample_type);
        return 1;
    }
    double c1 = cpu_s();
    uint64_t *lat = NULL;
    size_t nlat = 0, caplat = 0;
    uint64_t *rec, recbuf[REC_MAX / 8];     /* an aligned copy of a record that is not */
    uint64_t next_wakeup = 0;
    for (unsigned round = 0; round < repeat && (round == 0 || stream_rewind(&st)); round++) {
        for (;;) {
            struct perf_event_header h;
            stream_fill(&st, sizeof h);
            if (st.end - st.pos < sizeof h)
                break;
            memcpy(&h, st.buf + st.pos, sizeof h);
            stream_fill(&st, h.size);
            if (h.size < sizeof h || st.end - st.pos < h.size)
                break;
            if ((st.pos & 7) == 0) {
                rec = (uint64_t *)(st.buf + st.pos);    /* as the ring reader keeps them */
            } else {
                rec = recbuf;
                memcpy(rec, st.buf + st.pos, h.size);
            }
            st.pos += h.size;
            if (st.end - st.pos >= sizeof h) {
                /* as the engine's delivery in time order (fk_ringq_deliver)
                 * does: the next record fetched while this one is handled */
                uint16_t next;
                memcpy(&next, st.buf + st.pos + offsetof(struct perf_event_header, size), 2);
                for (size_t off = 0; off < next && off < st.end - st.pos; off += 64)
                    __builtin_prefetch(st.buf + st.pos + off);
            }
            uint64_t tm = fk_record_time(fk_replay_format(p), rec, h.size);
            if (tm >= next_wakeup) {
                fk_replay_wakeup(p);
                next_wakeup = tm + WAKEUP_NS;
            }
            if (h.type != PERF_RECORD_SAMPLE) {
                fk_replay_record(p, rec, h.size);
                continue;
            }
            uint64_t t0 = fk_now_ns();
            fk_replay_record(p, rec, h.size);
            lat = fk_grow(lat, &caplat, nlat + 1, sizeof *lat);
            lat[nlat++] = fk_now_ns() - t0;
        }
        next_wakeup = 0;
    }
    /* the engine's CPU: the process's (the replaying thread and the
     * kallsyms reader) less the recording's reads */
    double c2 = cpu_s() - st.read_s;
    bool read_failed = st.failed;
    close(st.fd);
    free(st.buf);
    uint64_t n0 = fk_now_ns();
    fk_replay_finish(p);
    double naming_ms = (double)(fk_now_ns() - n0) / 1e6;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    qsort(lat, nlat, sizeof *lat, cmp_u64);
    double med = nlat ? (double)lat[nlat / 2] / 1e3 : 0, p99 = nlat ? (double)lat[nlat * 99 / 100] / 1e3 : 0;
    /* samples/s is CPU time; median and p99 per sample are wall time */
    printf("replay: %zu samples x%u in %.3f s CPU: %.0f samples/s/core; per sample (wall) median "
           "%.2f us, p99 %.2f us; setup (/proc scan) %.3f s; naming %.1f ms; %llu unique stacks; "
           "unwind median %.2f us; pc cache %llu hits, %llu misses (%llu second-level hits); peak RSS "
           "%ld MB\n",
           nlat, repeat, c2 - c1, nlat ? (double)nlat / (c2 - c1) : 0, med, p99, c1 - c0, naming_ms,
           (unsigned long long)r.unique_stacks, r.unwind.median_us,
           (unsigned long long)r.unwind.pc_cache_hits, (unsigned long long)r.unwind.pc_cache_misses,
           (unsigned long long)r.unwind.pc_cache2_hits, ru.ru_maxrss / 1024);
    printf("replay-figures: samples=%zu cpu_s=%.4f rate=%.0f median_us=%.3f p99_us=%.3f rss_mb=%ld "
           "complete=%llu unwound=%llu pc_misses=%.3f pc2_hits=%.3f\n",
           nlat, c2 - c1, nlat ? (double)nlat / (c2 - c1) : 0, med, p99, ru.ru_maxrss / 1024,
           (unsigned long long)r.unwind.complete, (unsigned long long)r.unwind.samples,
           r.unwind.samples ? (double)r.unwind.pc_cache_misses / (double)r.unwind.samples : 0,
           r.unwind.samples ? (double)r.unwind.pc_cache2_hits / (double)r.unwind.samples : 0);
    int rc = 0;
    if (read_failed) {
        fk_error("%s: read failed: the figures cover only the records before the error", path);
        rc = 1;
    }
    if (folded) {
        struct fk_outfile of;
        err[0] = 0;
        if (!fk_outfile_open(&of, folded, 0644, err, sizeof err))
            rc = 1;
        else if (!fk_folded_write(&of, &r.stacks)) {
            fk_outfile_abort(&of);
            rc = 1;
        } else if (!fk_outfile_commit(&of, err, sizeof err)) {
            rc = 1;
        }
        if (err[0])
            fk_error("%s", err);
    }
    if (pprof) {
        struct fk_buf pb = FK_BUF_INIT;
        uint64_t e0 = fk_now_ns();
        fk_pprof_encode(&r.prof, NULL, &pb);
        printf("replay-pprof: encode %.2f ms, %zu bytes\n", (double)(fk_now_ns() - e0) / 1e6, pb.len);
        if (!write_file(pprof, pb.data, pb.len))
            rc = 1;
        fk_buf_free(&pb);
    }
    fk_capture_result_free(&r);
    fk_target_free(&t);
    free(lat);
    return rc;
}

int main(int argc, char **argv)
{
    fk_progname = "replay";
    if (argc >= 4 && !strcmp(argv[1], "record"))
        return record(argv[2], strtoull(argv[3], NULL, 10), argc > 4 ? strtoull(argv[4], NULL, 10) : 999,
                      argc > 5 ? argv[5] : NULL);
    if (argc >= 3 && !strcmp(argv[1], "run"))
        return run(argv[2], argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1, argc > 4 ? argv[4] : NULL,
                   argc > 5 ? argv[5] : NULL);
    fprintf(stderr, "usage: replay record FILE SECS [HZ [PIDS]] | replay run FILE [REPEAT [FOLDED [PPROF]]]\n");
    return 2;
}
