/* SPDX-License-Identifier: GPL-2.0-only */
/* The built-in event kinds (evkind.h): a clock sampled at a frequency, and
 * a counted event sampled one hit in N. Both weigh a sample at once. */
#include "engine/evkind.h"
#include "engine/capture.h"
#include "capture/period_check.h"

#include <linux/perf_event.h>

/* A sample of a fixed-rate kind weighs one period (ns of the clock, N
 * events), now. */
static void weigh_now(void *state, struct fk_engine *e, unsigned event,
                      const struct fk_sample *s, const struct fk_stack_frames *st)
{
    (void)state;
    (void)event;
    (void)s;
    fk_engine_add(e, st, 1, (uint64_t)fk_engine_values(e)->period);
}

/* ---- clock: cpu-clock or cycles at o->event.freq Hz ------------------- */

static bool clock_config(void *state, const struct fk_capture_opts *o, unsigned i,
                         struct perf_event_attr *a, char *err, size_t errlen)
{
    (void)state;
    (void)i;
    if (!o->event.freq) {
        snprintf(err, errlen, "the clock kind needs a frequency");
        return false;
    }
    a->freq = 1;
    a->sample_freq = o->event.freq;
    a->sample_type |= PERF_SAMPLE_PERIOD;
    return true;
}

/* Each sample stands for one nominal period of the clock: pprof's
 * cpu/nanoseconds = samples x 1e9 / Hz, as Go's profiles count. */
static void clock_values(void *state, const struct fk_capture_opts *o, struct fk_evkind_values *v)
{
    (void)state;
    v->type = "cpu";
    v->unit = "nanoseconds";
    v->period = (int64_t)(1000000000ull / o->event.freq);
    v->fold_weight = false;
}

const struct fk_evkind fk_evkind_clock = {
    .name = "clock",
    .config = clock_config,
    .values = clock_values,
    .sample = weigh_now,
    /* The rings are read every 50 ms on the reader's clock, the kernel
     * waking no one: the reader's thread already read them at least that
     * often (reader.c READER_POLL_MS), so the files of short-lived
     * processes are pinned as soon as before. What goes is the kernel's
     * wake-up at each quarter ring and the engine's thread woken with
     * it. The rings hold a quarter of a second of the largest samples at
     * the rate (config.c), 5 polls. The Python hook's samples wake the
     * reader through the Python gate, the rings still on this clock; its
     * per-sample wake-ups only without the gate. */
    .poll_ms = 50,
    .early_wakeups = true,
    /* The engine's thread takes the copies every 300 ms, not 100: quiet,
     * 'host -F 999' on two busy python3.11 workers (dwarf), its CPU per
     * sample fell 5.0 -> 4.4 us (steady window, 4 alternating rounds),
     * the whole run's 12.2 -> 10.9 us, from starting cold 3 times a
     * second instead of 10 (bench/engine.sh). */
    .take_ms = 300,
};

/* ---- counted: a software event or tracepoint, one hit in N ------------ */

static bool counted_config(void *state, const struct fk_capture_opts *o, unsigned i,
                           struct perf_event_attr *a, char *err, size_t errlen)
{
    (void)state;
    (void)i;
    (void)err;
    (void)errlen;
    a->freq = 0;
    a->sample_period = o->event.period ? o->event.period : 1;
    /* the talk's trap: with PERIOD in sample_type every hit is a sample */
    fk_period_fix_attr(a);
    /* each sample carries its counter's count: a sample the kernel
     * counted but never wrote shows as a gap (capture.h,
     * samples_unwritten). Per-CPU counters only: an inherited per-task
     * one's read is refused before Linux 6.12. */
    if (!a->inherit && a->sample_period > 1)
        a->sample_type |= PERF_SAMPLE_READ;
    return true;
}

static void counted_values(void *state, const struct fk_capture_opts *o,
                           struct fk_evkind_values *v)
{
    (void)state;
    v->type = o->value_name ? o->value_name : o->event.name;
    v->unit = "count";
    v->period = (int64_t)(o->event.period ? o->event.period : 1);
    v->fold_weight = o->weight_by_period;
}

const struct fk_evkind fk_evkind_counted = {
    .name = "counted",
    .config = counted_config,
    .values = counted_values,
    .sample = weigh_now,
    /* The rings are read on the reader's own clock, not at a wake-up from
     * the sample (one per sample with the Python hook's early reads, the
     * default): a counter counts every task's hits on its CPU, and a
     * reader woken by a sample runs there before the sampled task does
     * -- its own page faults (copying the sample, handling it) then came
     * right after each sample, moved the counter's next sample on by
     * that many and over-sampled the sampled task. A lab's 30,720 faults
     * at one in 100 got 312-375 samples with flamekit on its CPU, 303-317
     * on the other (307 expected); 308-313 with this poll. The rings hold
     * a quarter of a second at 1000 samples/s (config.c), 25 polls; at
     * higher rates the reader polls sooner (reader.c, next_timeout). */
    .poll_ms = 10,
};
