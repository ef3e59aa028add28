/* SPDX-License-Identifier: GPL-2.0-only */
/* The time-ordering queue (capture/ring.h): records pushed as passes over
 * several rings read them (each ring in time order, sometimes going back;
 * the rings interleaved in time) come out in (time, read order) exactly
 * as a full sort would give, each once, across many deliveries with a
 * moving cutoff; what is kept is kept whole (the record's bytes); a
 * record pushed by reference (as a pass over the rings does) holds its
 * owner's count until it is handed on: the place a pass's records lay in
 * is overwritten and freed as soon as that count is 0, so a record read
 * after it was released is seen; and the buffer stays bounded by what is
 * pending, not by what went through. */
#include "unit.h"
#include "capture/ring.h"
#include "capture/sample.h"
#include "capture/stackend.h"

#include <linux/perf_event.h>
#include <stdlib.h>

#define NRINGS 4
#define PASSES 4000

/* a record as a pass reads it: a context-switch record with its trailer
 * (tid, time), plus padding up to a varying size; a word of its own */
struct rec {
    struct perf_event_header h;
    uint32_t pid, tid;
    uint64_t time;
    uint64_t serial;
    uint64_t pad[6];
};

struct seen {
    uint64_t last_time, last_serial;
    uint64_t n, bad_order, bad_bytes, beyond_cutoff;
    uint64_t cutoff;
    unsigned char *got;     /* by serial */
};

/* serial -> time and push order (read order) as pushed */
static uint64_t *times, *order;

static void take(void *ctx, const union perf_event *ev)
{
    struct seen *s = ctx;
    const struct rec *r = (const void *)ev;
    uint64_t t = r->time;
    /* the trailer's time is what ordering used; the body must be intact */
    if (r->serial >= (uint64_t)NRINGS * PASSES * 64 || times[r->serial] != t ||
        r->pad[0] != (r->serial ^ 0x5a5a5a5a5a5a5a5aull))
        s->bad_bytes++;
    else {
        if (s->n && (t < s->last_time || (t == s->last_time && order[r->serial] < s->last_serial))) {
            s->bad_order++;
        }
        if (s->got[r->serial]++)
            s->bad_order++;     /* twice */
        s->last_serial = order[r->serial];
    }
    if (t > s->cutoff)
        s->beyond_cutoff++;
    s->last_time = t;
    s->n++;
}

/* A sample with user registers (ip, sp, bp) and a 256-byte stack copy of
 * which the kernel filled 200, cut by fk_sample_cut_stack with ends;
 * returns the copy's length (0: not cut), *smp its decoding. */
#define SP 0x7ffd0000ull
static size_t cut_sample(const struct fk_stack_ends *ends, uint64_t *out, struct fk_sample *smp)
{
    struct fk_sample_format f;
    fk_sample_format_init(&f, PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER |
                          PERF_SAMPLE_STACK_USER, 0, 0x7, true);
    /* header, pid/tid, time, abi, 3 regs, size, 32 words, dyn */
    uint64_t rec[1 + 2 + 1 + 3 + 1 + 32 + 1];
    struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, sizeof rec };
    memcpy(rec, &h, sizeof h);
    rec[1] = (42ull << 32) | 41;
    rec[2] = 1000;
    rec[3] = PERF_SAMPLE_REGS_ABI_64;
    rec[4] = 0x401000;
    rec[5] = SP;
    rec[6] = SP + 512;
    rec[7] = 256;
    for (unsigned i = 0; i < 32; i++)
        rec[8 + i] = 0x1000 + i;
    rec[40] = 200;
    size_t n = fk_sample_cut_stack(&f, rec, sizeof rec, out, ends);
    memset(smp, 0, sizeof *smp);
    if (!n || !fk_sample_parse(&f, out, n, smp) || smp->tid != 42 || smp->regs[1] != SP ||
        (smp->stack_dyn && ((const uint64_t *)smp->stack)[smp->stack_dyn / 8 - 1] !=
                           0x1000 + smp->stack_dyn / 8 - 1))
        return 0;
    return n;
}

/* Stack copies cut where the thread's stack is known to end
 * (capture/stackend.h): only once two complete walks agreed, never for a
 * thread whose walks end apart or whose cut copy proved too short, and
 * not after its exit; the decoder tells a cut copy. */
static void stack_ends(void)
{
    struct fk_stack_ends *t = fk_stack_ends_new(1);
    uint64_t out[64];
    struct fk_sample smp;
    UNIT_CHECK("ends: unknown, the copy is cut to what the kernel filled (and a word)",
               cut_sample(t, out, &smp) && smp.stack_size == 208 && smp.stack_dyn == 200 &&
               !smp.stack_cut);
    fk_stack_ends_learn(t, 42, SP + 60);
    UNIT_CHECK("ends: one walk is not enough", fk_stack_ends_get(t, 42) == 0);
    fk_stack_ends_learn(t, 42, SP + 60);
    UNIT_CHECK("ends: two agreeing walks set it", fk_stack_ends_get(t, 42) == SP + 60 &&
               fk_stack_ends_get(t, 43) == 0);
    UNIT_CHECK("ends: the copy is cut there (to the word), the decoder tells it",
               cut_sample(t, out, &smp) && smp.stack_size == 64 && smp.stack_dyn == 64 &&
               smp.stack_cut);
    fk_stack_ends_learn(t, 42, SP + 300);
    UNIT_CHECK("ends: a walk that ends elsewhere withdraws it",
               fk_stack_ends_get(t, 42) == 0 && cut_sample(t, out, &smp) && !smp.stack_cut);
    fk_stack_ends_learn(t, 42, SP + 300);
    UNIT_CHECK("ends: until two agree again", fk_stack_ends_get(t, 42) == SP + 300);
    fk_stack_ends_learn(t, 42, SP + 60);
    fk_stack_ends_learn(t, 42, SP + 60);
    fk_stack_ends_learn(t, 42, SP + 300);
    fk_stack_ends_learn(t, 42, SP + 300);
    UNIT_CHECK("ends: walks that keep ending apart (stacks switched): never cut again",
               fk_stack_ends_get(t, 42) == 0);
    fk_stack_ends_forget(t, 42);
    fk_stack_ends_learn(t, 42, SP + 400);
    fk_stack_ends_learn(t, 42, SP + 400);
    UNIT_CHECK("ends: after an exit, learnt anew; an end past what was copied cuts nothing more",
               fk_stack_ends_get(t, 42) == SP + 400 && cut_sample(t, out, &smp) &&
               smp.stack_size == 208 && !smp.stack_cut);
    fk_stack_ends_wrong(t, 42);
    fk_stack_ends_learn(t, 42, SP + 400);
    fk_stack_ends_learn(t, 42, SP + 400);
    struct fk_stack_ends_stats st;
    fk_stack_ends_stats(t, &st);
    UNIT_CHECK("ends: a copy found too short: never cut again, counted",
               fk_stack_ends_get(t, 42) == 0 && st.wrong == 1 && st.varying == 1 && st.learned == 4);
    UNIT_CHECK("ends: charged as allocated", fk_stack_ends_bytes(t) > FK_STACK_ENDS_SLOTS * 16);
    fk_stack_ends_free(t);
}

int main(void)
{
    unit_name = "unit-ring";
    struct fk_sample_format f;
    /* the trailer is TID TIME: what sample_id_all gives for TID|TIME */
    fk_sample_format_init(&f, PERF_SAMPLE_TID | PERF_SAMPLE_TIME, 0, 0, true);
    size_t max = (size_t)NRINGS * PASSES * 64;
    times = calloc(max, sizeof *times);
    order = calloc(max, sizeof *order);
    struct seen s = { .got = calloc(max, 1) };
    struct fk_ringq q = { 0 };
    uint64_t clock[NRINGS] = { 0 }, serial = 0, pushed = 0, now = 100000;
    size_t peak_buf = 0;
    /* a pass's records pushed by reference lie in an arena of its own (a
     * reader's chunk), released when its count is 0 */
    struct arena {
        uint64_t *data;
        size_t used;
        uint32_t hold;
    } arenas[PASSES];
    size_t peak_arenas = 0, nlive = 0, released_late = 0;
    const size_t arena_bytes = NRINGS * 40 * (sizeof(struct rec) + 16);
    srand(7);
    for (int pass = 0; pass < PASSES; pass++) {
        struct arena *a = &arenas[pass];
        bool by_ref = pass % 3 != 0;
        *a = (struct arena){ by_ref ? malloc(arena_bytes) : NULL, 0, 0 };
        nlive += by_ref;
        now += 1000 + (uint64_t)(rand() % 3000);
        for (int ring = 0; ring < NRINGS; ring++) {
            int k = rand() % 40;
            for (int i = 0; i < k; i++) {
                /* mostly forward, now and then a step back (an NMI's
                 * record written before the one it interrupted), equal
                 * times across rings */
                uint64_t t = clock[ring] < now - 5000 ? now - 5000 : clock[ring];
                t += (uint64_t)(rand() % 100);
                if (rand() % 50 == 0 && t > 300)
                    t -= 300;
                if (rand() % 10 == 0)
                    t = now;
                clock[ring] = t;
                struct rec r = { .h = { PERF_RECORD_SWITCH, 0, 0 } };
                size_t words = (size_t)(rand() % 7);
                r.h.size = (uint16_t)(offsetof(struct rec, pad) + 8 * (words ? words : 1) + 16);
                r.pad[0] = serial ^ 0x5a5a5a5a5a5a5a5aull;
                r.serial = serial;
                /* the trailer sits at the end: move tid/time there */
                unsigned char buf[sizeof r + 16];
                memcpy(buf, &r, r.h.size - 16);
                uint32_t ids[2] = { 1, 1 };
                memcpy(buf + r.h.size - 16, ids, 8);
                memcpy(buf + r.h.size - 8, &t, 8);
                /* the record as the decoder sees it: time in the trailer,
                 * and the same value in the body for the check */
                ((struct rec *)buf)->time = t;
                times[serial] = t;
                order[serial] = pushed++;
                if (by_ref) {
                    memcpy((char *)a->data + a->used, buf, r.h.size);
                    fk_ringq_push_ref(&q, (char *)a->data + a->used, r.h.size, &f, &a->hold);
                    a->used += (r.h.size + 7u) & ~7u;
                } else {
                    fk_ringq_push(&q, buf, r.h.size, &f);
                }
                serial++;
            }
        }
        /* deliver up to a while ago (the reorder slack), now and then
         * nothing new or everything */
        s.cutoff = rand() % 20 == 0 ? 0 : now - 8000;
        if (pass == PASSES / 2) {
            s.cutoff = UINT64_MAX;      /* everything (what comes next is newer) */
            now += 10000;
        }
        fk_ringq_deliver(&q, s.cutoff, take, &s);
        /* released arenas overwritten, then freed */
        for (int k = 0; k <= pass; k++)
            if (arenas[k].data && !arenas[k].hold) {
                memset(arenas[k].data, 0xa5, arenas[k].used);
                free(arenas[k].data);
                arenas[k].data = NULL;
                nlive--;
                released_late += k < pass - 1;
            }
        if (nlive > peak_arenas)
            peak_arenas = nlive;
        if (q.buf.cap > peak_buf)
            peak_buf = q.buf.cap;
    }
    s.cutoff = UINT64_MAX;
    fk_ringq_deliver(&q, UINT64_MAX, take, &s);
    size_t held_at_end = 0;
    for (int k = 0; k < PASSES; k++) {
        held_at_end += arenas[k].data && arenas[k].hold;
        free(arenas[k].data);
    }
    printf("# %llu records, %llu bytes read, peak buffer %zu bytes, %zu arenas held at most, "
           "%zu released after a later pass\n", (unsigned long long)serial,
           (unsigned long long)q.bytes, peak_buf, peak_arenas, released_late);
    UNIT_CHECK("every record delivered", s.n == serial && q.n == 0);
    UNIT_CHECK("each once, in (time, read order) across rings and deliveries", s.bad_order == 0);
    UNIT_CHECK("no record newer than its delivery's cutoff", s.beyond_cutoff == 0);
    UNIT_CHECK("records kept across deliveries keep their bytes", s.bad_bytes == 0);
    UNIT_CHECK("every hold count back to 0 once all is handed on", held_at_end == 0);
    UNIT_CHECK("records by reference wait where they lie (some held past their pass), "
               "and their places are released", released_late > 0 && peak_arenas < 16);
    UNIT_CHECK("the buffer is bounded by what is pending, not by what went through",
               peak_buf * 8 < q.bytes);
    fk_ringq_free(&q);

    /* one ring read backwards (every record older than the last): still
     * sorted, one run per record */
    struct fk_ringq b = { 0 };
    free(s.got);
    memset(&s, 0, sizeof s);
    s.got = calloc(max, 1);
    s.cutoff = UINT64_MAX;
    for (uint64_t i = 0; i < 1000; i++) {
        struct rec r = { .h = { PERF_RECORD_SWITCH, 0, (uint16_t)(sizeof r) } };
        uint64_t t = 1000000 - i;
        r.serial = i;
        r.pad[0] = i ^ 0x5a5a5a5a5a5a5a5aull;
        r.time = t;
        memcpy((char *)&r + sizeof r - 8, &t, 8);
        times[i] = t;
        order[i] = i;
        fk_ringq_push(&b, &r, sizeof r, &f);
    }
    fk_ringq_deliver(&b, UINT64_MAX, take, &s);
    UNIT_CHECK("a ring read backwards comes out sorted", s.n == 1000 && s.bad_order == 0 && s.bad_bytes == 0);
    fk_ringq_free(&b);
    free(s.got);
    free(times);
    free(order);

    /* PERF_SAMPLE_READ: one event's count, laid out by read_format, between
     * CPU and CALLCHAIN (the engine's check for samples never written) */
    struct fk_sample_format rf;
    const uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                        PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN;
    const uint64_t fmt = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                         PERF_FORMAT_LOST;
    UNIT_CHECK("READ: one event's read is walked", fk_sample_format_init(&rf, st, fmt, 0, true));
    UNIT_CHECK("READ: a group's read is refused",
               !fk_sample_format_init(&rf, st, fmt | PERF_FORMAT_GROUP, 0, true));
    fk_sample_format_init(&rf, st, fmt, 0, true);
    /* header, ip, pid/tid, time, cpu, value enabled running lost, nr, 2 ips */
    uint64_t rec[1 + 4 + 4 + 3];
    struct perf_event_header rh = { PERF_RECORD_SAMPLE, 0, sizeof rec };
    memcpy(rec, &rh, sizeof rh);
    uint64_t body[] = { 0x401000, (7ull << 32) | 7, 12345, 1, 4200, 9, 9, 0, 2, 0x401000, 0x402000 };
    memcpy(rec + 1, body, sizeof body);
    struct fk_sample smp;
    UNIT_CHECK("READ: the sample parses", fk_sample_parse(&rf, rec, sizeof rec, &smp));
    UNIT_CHECK("READ: the count is the read's value", smp.count == 4200 && smp.cpu == 1);
    UNIT_CHECK("READ: the fields after it stay in place", smp.nr == 2 && smp.ips[1] == 0x402000);
    rh.size = (uint16_t)(sizeof rec - 4 * 8);
    memcpy(rec, &rh, sizeof rh);
    UNIT_CHECK("READ: a record too short for its read is refused",
               !fk_sample_parse(&rf, rec, rh.size, &smp));
    stack_ends();
    return UNIT_END();
}
