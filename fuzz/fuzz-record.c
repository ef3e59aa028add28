/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: the ring-record decoder (capture/sample.h) and the
 * time-ordering queue (capture/ring.h) on raw perf records.
 *
 * Input: u64 sample_type (masked to the fields the decoder knows), u64
 * user-register mask, one flags byte (bit 0: sample_id_all; bits 1-4: the
 * read_format of PERF_SAMPLE_READ: times enabled, running, id, lost), then records
 * as they sit in a ring (perf_event_header, body; a header's size is
 * taken as given, clamped to what is left). Every record is decoded as a
 * sample and as a trailer, copied aligned as the ring reader keeps them;
 * each pointer the decoder returns must lie inside its record (ASan sees
 * any read past it: the copy is exactly the record's size). The queue
 * must deliver every record once, in time order; every other record is
 * pushed by reference (as a pass over the rings does) with a hold count
 * of its own, and its copy freed after the first delivery that lowered
 * that count to 0, so ASan sees the queue read one it handed on already.
 * A sample whose stack copy is cut (as the ring reader cuts it; every
 * other one also where its thread's stack is known to end) must decode
 * to the same fields with the stack it kept. */
#include "fuzz.h"
#include "capture/ring.h"
#include "capture/sample.h"
#include "capture/stackend.h"

#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#define KNOWN (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |  \
               PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |   \
               PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | \
               PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT |          \
               PERF_SAMPLE_CGROUP)

static void inside(const void *p, size_t n, const void *rec, size_t len)
{
    const char *a = p, *r = rec;
    if (n && (a < r || a + n > r + len))
        abort();
}

static uint64_t sum, last_time;

static void deliver(void *ctx, const union perf_event *ev)
{
    const struct fk_sample_format *f = ctx;
    const struct perf_event_header *h = (const void *)ev;
    /* the queue hands records on in time order, whatever order they came */
    uint64_t t = fk_record_time(f, ev, h->size);
    if (t < last_time)
        abort();
    last_time = t;
    struct fk_sample s;
    if (fk_sample_parse(f, ev, h->size, &s))
        sum += s.ip + s.time + s.nr + s.count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 17)
        return 0;
    uint64_t st, mask;
    memcpy(&st, data, 8);
    memcpy(&mask, data + 8, 8);
    bool id_all = data[16] & 1;
    uint64_t rf = (uint64_t)(data[16] >> 1) & (PERF_FORMAT_TOTAL_TIME_ENABLED |
                                               PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID);
    if (data[16] & 16)
        rf |= PERF_FORMAT_LOST;
    struct fk_sample_format f;
    if (!fk_sample_format_init(&f, st & KNOWN, rf, mask, id_all))
        abort();
    if (fk_sample_format_init(&f, st | ~(uint64_t)KNOWN, rf, mask, id_all))
        abort();    /* unknown fields are refused */
    if ((st & PERF_SAMPLE_READ) && fk_sample_format_init(&f, st & KNOWN, PERF_FORMAT_GROUP, mask, id_all))
        abort();    /* so is a group's read */
    fk_sample_format_init(&f, st & KNOWN, rf, mask, id_all);
    struct fk_ringq q = { 0 };
    last_time = 0;
    uint64_t **refs = NULL;
    size_t nrefs = 0, caprefs = 0, nrec = 0;
    uint32_t *holds = calloc(size / 8 + 1, sizeof *holds);  /* one per record at most */
    uint64_t *cut = malloc(65536 + 8);
    data += 17;
    size -= 17;
    while (size >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        memcpy(&h, data, sizeof h);
        size_t len = h.size < sizeof h ? sizeof h : h.size;
        if (len > size)
            len = size;
        /* an aligned copy of exactly the record */
        uint64_t *copy = malloc((len + 7) / 8 * 8);
        memcpy(copy, data, len);
        struct fk_sample s;
        if (fk_sample_parse(&f, copy, len, &s)) {
            inside(s.ips, s.nr * 8, copy, len);
            inside(s.raw, s.raw_size, copy, len);
            if (s.regs)
                inside(s.regs, f.nregs * 8ull, copy, len);
            inside(s.stack, s.stack_size, copy, len);
            if (s.stack_dyn > s.stack_size)
                abort();
            /* every other sample's thread has a known stack end (its sp
             * word 0, halfway into what was copied): the copy is cut there */
            static struct fk_stack_ends *known;
            bool end = s.regs && f.nregs && nrec % 2;
            if (end) {
                if (!known)
                    known = fk_stack_ends_new(0);
                fk_stack_ends_learn(known, s.tid, s.regs[0] + s.stack_dyn / 2);
                fk_stack_ends_learn(known, s.tid, s.regs[0] + s.stack_dyn / 2);
            }
            size_t n = fk_sample_cut_stack(&f, copy, len, cut, end ? known : NULL);
            if (end)
                fk_stack_ends_forget(known, s.tid);
            struct fk_sample c;
            if (n && (n > len || !fk_sample_parse(&f, cut, n, &c) || c.pid != s.pid ||
                      c.time != s.time || c.nr != s.nr || c.stack_size > s.stack_size ||
                      c.regs_abi != s.regs_abi || c.cgroup != s.cgroup || c.weight != s.weight ||
                      (c.stack_cut ? c.stack_dyn != c.stack_size || c.stack_dyn >= s.stack_dyn
                                   : c.stack_dyn != s.stack_dyn) ||
                      memcmp(c.stack, s.stack, c.stack_dyn)))
                abort();    /* the cut copy decodes to the same sample (its stack cut shorter) */
            for (uint64_t i = 0; i < s.nr; i++)
                sum += s.ips[i];
            for (uint32_t i = 0; i < s.raw_size; i++)
                sum += s.raw[i];
        }
        struct fk_sample_id id;
        if (fk_sample_id_parse(&f, copy, len, &id))
            sum += id.time;
        sum += fk_record_time(&f, copy, len);
        bool whole = h.size >= sizeof h && h.size <= len;
        if (whole && nrec++ % 2 == 0) {
            refs = fk_grow(refs, &caprefs, nrefs + 1, sizeof *refs);
            fk_ringq_push_ref(&q, copy, h.size, &f, &holds[nrefs]);
            refs[nrefs++] = copy;       /* freed once handed on */
            copy = NULL;
        } else if (whole) {
            fk_ringq_push(&q, copy, h.size, &f);
        }
        free(copy);
        data += len;
        size -= len;
    }
    fk_ringq_deliver(&q, UINT64_MAX / 2, deliver, &f);
    for (size_t i = 0; i < nrefs; i++)
        if (!holds[i]) {
            free(refs[i]);
            refs[i] = NULL;
        }
    fk_ringq_deliver(&q, UINT64_MAX, deliver, &f);
    if (q.n)
        abort();    /* everything was delivered */
    for (size_t i = 0; i < nrefs; i++) {
        if (holds[i])
            abort();    /* ... and its hold lowered */
        free(refs[i]);
    }
    free(refs);
    free(holds);
    free(cut);
    fk_ringq_free(&q);
    return 0;
}
