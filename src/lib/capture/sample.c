/* SPDX-License-Identifier: GPL-2.0-only */
/* Decoding perf ring records (see sample.h). The field order is the
 * kernel's (include/uapi/linux/perf_event.h, PERF_RECORD_SAMPLE): each
 * field is present when its bit is set; every read is checked against the
 * record's end first. */
#include "capture/sample.h"
#include "capture/stackend.h"

#include <linux/perf_event.h>
#include <string.h>

/* Fields this decoder walks, in a sample and in the id trailer. */
#define SAMPLE_KNOWN (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |        \
                      PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |             \
                      PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |     \
                      PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER |  \
                      PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_CGROUP)
#define ID_FIELDS (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | \
                   PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

bool fk_sample_format_init(struct fk_sample_format *f, uint64_t sample_type,
                           uint64_t read_format, uint64_t regs_user_mask, bool sample_id_all)
{
    memset(f, 0, sizeof *f);
    if (sample_type & ~(uint64_t)SAMPLE_KNOWN)
        return false;
    if (sample_type & PERF_SAMPLE_READ) {
        /* one event's read: its value, then the extras read_format asks */
        const uint64_t extras = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                                PERF_FORMAT_ID | PERF_FORMAT_LOST;
        if (read_format & ~extras)
            return false;
        f->read_words = 1 + (unsigned)__builtin_popcountll(read_format);
    }
    f->sample_type = sample_type;
    f->nregs = (sample_type & PERF_SAMPLE_REGS_USER) ? (unsigned)__builtin_popcountll(regs_user_mask) : 0;
    f->sample_id_all = sample_id_all;
    f->id_words = (unsigned)__builtin_popcountll(sample_type & ID_FIELDS);
    /* IDENTIFIER, IP, TID come before TIME */
    if (sample_type & PERF_SAMPLE_TIME)
        f->sample_time_at = (unsigned)(sizeof(struct perf_event_header) +
                            8 * __builtin_popcountll(sample_type & (PERF_SAMPLE_IDENTIFIER |
                                                     PERF_SAMPLE_IP | PERF_SAMPLE_TID)));
    f->fixed_words = f->read_words + (unsigned)__builtin_popcountll(sample_type & (
        PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
        PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
        PERF_SAMPLE_PERIOD));
    return true;
}

/* A cursor over a record's u64 words. */
struct cur {
    const uint64_t *p, *end;
};

static bool take(struct cur *c, uint64_t *v)
{
    if (c->p >= c->end)
        return false;
    *v = *c->p++;
    return true;
}

/* n words as an array (pointer into the record) */
static bool take_n(struct cur *c, uint64_t n, const uint64_t **out)
{
    if (n > (uint64_t)(c->end - c->p))
        return false;
    *out = c->p;
    c->p += n;
    return true;
}

static bool split_tid(struct cur *c, pid_t *pid, pid_t *tid)
{
    uint64_t v;
    if (!take(c, &v))
        return false;
    *pid = (pid_t)(uint32_t)v;
    *tid = (pid_t)(uint32_t)(v >> 32);
    return true;
}

bool fk_sample_parse(const struct fk_sample_format *f, const void *rec, size_t len,
                     struct fk_sample *s)
{
    memset(s, 0, sizeof *s);
    s->period = 1;
    const struct perf_event_header *h = rec;
    if (((uintptr_t)rec & 7) || len < sizeof *h || h->size > len || h->size < sizeof *h)
        return false;
    s->misc = h->misc;
    s->kernel = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
    struct cur c = { (const uint64_t *)(h + 1), (const uint64_t *)((const char *)rec + (h->size & ~7u)) };
    uint64_t st = f->sample_type, v;
    if ((st & PERF_SAMPLE_IDENTIFIER) && !take(&c, &s->identifier))
        return false;
    if ((st & PERF_SAMPLE_IP) && !take(&c, &s->ip))
        return false;
    if ((st & PERF_SAMPLE_TID) && !split_tid(&c, &s->pid, &s->tid))
        return false;
    if ((st & PERF_SAMPLE_TIME) && !take(&c, &s->time))
        return false;
    if ((st & PERF_SAMPLE_ADDR) && !take(&c, &s->addr))
        return false;
    if (st & PERF_SAMPLE_ID) {
        if (!take(&c, &v))
            return false;
        if (!(st & PERF_SAMPLE_IDENTIFIER))
            s->identifier = v;
    }
    if ((st & PERF_SAMPLE_STREAM_ID) && !take(&c, &s->stream_id))
        return false;
    if (st & PERF_SAMPLE_CPU) {
        if (!take(&c, &v))
            return false;
        s->cpu = (uint32_t)v;
    }
    if ((st & PERF_SAMPLE_PERIOD) && !take(&c, &s->period))
        return false;
    if (st & PERF_SAMPLE_READ) {
        const uint64_t *w;
        if (!take_n(&c, f->read_words, &w))
            return false;
        s->count = w[0];
    }
    if (st & PERF_SAMPLE_CALLCHAIN) {
        if (!take(&c, &s->nr) || !take_n(&c, s->nr, &s->ips))
            return false;
    }
    if (st & PERF_SAMPLE_RAW) {
        /* u32 size, then size bytes; the kernel pads so that both end on
         * a u64 boundary */
        if (c.p >= c.end)
            return false;
        uint32_t rs;
        memcpy(&rs, c.p, sizeof rs);
        uint64_t words = ((uint64_t)rs + 4 + 7) / 8;
        const uint64_t *w;
        if (!take_n(&c, words, &w))
            return false;
        s->raw_size = rs;
        s->raw = (const unsigned char *)w + 4;
    }
    if (st & PERF_SAMPLE_REGS_USER) {
        if (!take(&c, &s->regs_abi))
            return false;
        if (s->regs_abi && !take_n(&c, f->nregs, &s->regs))
            return false;
    }
    if (st & PERF_SAMPLE_STACK_USER) {
        if (!take(&c, &s->stack_size))
            return false;
        if (s->stack_size) {
            const uint64_t *w;
            if (s->stack_size % 8 || !take_n(&c, s->stack_size / 8, &w) || !take(&c, &s->stack_dyn))
                return false;
            if (s->stack_dyn > s->stack_size) {
                /* never the kernel's: the reader cut the copy at the
                 * thread's known end (fk_sample_cut_stack) */
                s->stack_cut = true;
                s->stack_dyn = s->stack_size;
            }
            s->stack = (const unsigned char *)w;
        }
    }
    if ((st & PERF_SAMPLE_WEIGHT) && !take(&c, &s->weight))
        return false;
    if ((st & PERF_SAMPLE_CGROUP) && !take(&c, &s->cgroup))
        return false;
    return true;
}

bool fk_sample_id_parse(const struct fk_sample_format *f, const void *rec, size_t len,
                        struct fk_sample_id *id)
{
    memset(id, 0, sizeof *id);
    const struct perf_event_header *h = rec;
    uint64_t st = f->sample_type;
    unsigned n = f->id_words;
    if (!f->sample_id_all || !n || ((uintptr_t)rec & 7) || len < sizeof *h || h->size > len ||
        h->size < sizeof *h + 8 * n)
        return false;
    struct cur c;
    c.end = (const uint64_t *)((const char *)rec + (h->size & ~7u));
    c.p = c.end - n;
    if (c.p < (const uint64_t *)(h + 1))
        return false;
    uint64_t v;
    if (st & PERF_SAMPLE_TID)
        split_tid(&c, &id->pid, &id->tid);
    if (st & PERF_SAMPLE_TIME)
        take(&c, &id->time);
    if (st & PERF_SAMPLE_ID)
        take(&c, &id->id);
    if (st & PERF_SAMPLE_STREAM_ID)
        take(&c, &id->stream_id);
    if ((st & PERF_SAMPLE_CPU) && take(&c, &v))
        id->cpu = (uint32_t)v;
    if (st & PERF_SAMPLE_IDENTIFIER)
        take(&c, &id->identifier);
    else
        id->identifier = id->id;
    return true;
}

size_t fk_sample_id_write(const struct fk_sample_format *f, const struct fk_sample_id *id,
                          void *out)
{
    uint64_t st = f->sample_type, w[8];
    unsigned n = 0;
    if (!f->sample_id_all || !f->id_words || f->id_words > 8)
        return 0;
    if (st & PERF_SAMPLE_TID)
        w[n++] = (uint64_t)(uint32_t)id->pid | (uint64_t)(uint32_t)id->tid << 32;
    if (st & PERF_SAMPLE_TIME)
        w[n++] = id->time;
    if (st & PERF_SAMPLE_ID)
        w[n++] = id->id;
    if (st & PERF_SAMPLE_STREAM_ID)
        w[n++] = id->stream_id;
    if (st & PERF_SAMPLE_CPU)
        w[n++] = id->cpu;
    if (st & PERF_SAMPLE_IDENTIFIER)
        w[n++] = id->identifier;
    if (n != f->id_words)
        return 0;
    memcpy(out, w, 8 * n);
    return 8 * n;
}

uint64_t fk_record_time(const struct fk_sample_format *f, const void *rec, size_t len)
{
    const struct perf_event_header *h = rec;
    if (!(f->sample_type & PERF_SAMPLE_TIME) || len < sizeof *h || h->size > len)
        return 0;
    uint64_t t = 0;
    if (h->type == PERF_RECORD_SAMPLE) {
        if (f->sample_time_at + 8u <= h->size)
            memcpy(&t, (const char *)rec + f->sample_time_at, sizeof t);
        return t;
    }
    /* the trailer: TID, then TIME */
    unsigned n = f->id_words;
    if (!f->sample_id_all || h->size < sizeof *h + 8 * (size_t)n)
        return 0;
    size_t at = (size_t)h->size - 8 * (size_t)n + ((f->sample_type & PERF_SAMPLE_TID) ? 8 : 0);
    memcpy(&t, (const char *)rec + at, sizeof t);
    return t;
}

const struct fk_sample_format *fk_sample_cut_format(const struct fk_sample_format *f)
{
    return (f->sample_type & PERF_SAMPLE_STACK_USER) && !(f->sample_type & PERF_SAMPLE_IDENTIFIER)
           ? f : NULL;
}

/* Where a sample's user stack copy lies: its size word's offset; false
 * when it has none or the record is too short for it. The ring reader
 * asks this of every sample, and the engine decodes the copy once after
 * (fk_sample_parse): only the variable-length fields before the stack are
 * walked, each checked against the end as fk_sample_parse checks it. */
static bool stack_at(const struct fk_sample_format *f, const void *rec, size_t len, size_t *at,
                     size_t *regs_at)
{
    *regs_at = 0;
    const struct perf_event_header *h = rec;
    if (((uintptr_t)rec & 7) || len < sizeof *h || h->size > len || h->size < sizeof *h ||
        h->type != PERF_RECORD_SAMPLE)
        return false;
    const uint64_t *p = (const uint64_t *)(h + 1);
    const uint64_t *end = (const uint64_t *)((const char *)rec + (h->size & ~7u));
    uint64_t st = f->sample_type;
    if (f->fixed_words > (size_t)(end - p))
        return false;
    p += f->fixed_words;
    if (st & PERF_SAMPLE_CALLCHAIN) {
        if (p >= end || p[0] > (uint64_t)(end - p - 1))
            return false;
        p += 1 + p[0];
    }
    if (st & PERF_SAMPLE_RAW) {
        if (p >= end)
            return false;
        uint32_t rs;
        memcpy(&rs, p, sizeof rs);
        uint64_t words = ((uint64_t)rs + 4 + 7) / 8;
        if (words > (uint64_t)(end - p))
            return false;
        p += words;
    }
    if (st & PERF_SAMPLE_REGS_USER) {
        if (p >= end)
            return false;
        uint64_t abi = *p++;
        if (abi) {
            if (f->nregs > (size_t)(end - p))
                return false;
            *regs_at = (size_t)((const char *)p - (const char *)rec);
            p += f->nregs;
        }
    }
    if (p >= end)
        return false;
    *at = (size_t)((const char *)p - (const char *)rec);
    return true;
}

/* Where the sampled thread's copies may be cut (fk_stack_ends_get), as
 * a length from the sampled sp that is less than dyn; 0: none known. */
static uint64_t known_end(const struct fk_sample_format *f, const struct fk_stack_ends *ends,
                          const unsigned char *r, size_t regs_at, uint64_t dyn)
{
    uint64_t st = f->sample_type;
    unsigned sp_word = ends ? fk_stack_ends_sp_word(ends) : 0;
    if (!ends || !regs_at || !(st & PERF_SAMPLE_TID) || sp_word >= f->nregs)
        return 0;
    /* TID follows IDENTIFIER and IP (the fixed words stack_at checked) */
    size_t tid_at = sizeof(struct perf_event_header) +
                    8 * (size_t)(!!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_IP));
    uint64_t pid_tid, sp;
    memcpy(&pid_tid, r + tid_at, 8);
    memcpy(&sp, r + regs_at + 8 * (size_t)sp_word, 8);
    uint64_t end = fk_stack_ends_get(ends, (pid_t)(uint32_t)(pid_tid >> 32));
    if (end <= sp)
        return 0;
    uint64_t keep = (end - sp + 7) & ~(uint64_t)7;
    return keep < dyn ? keep : 0;
}

size_t fk_sample_cut_stack(const struct fk_sample_format *f, const void *rec, size_t len,
                           void *out, const struct fk_stack_ends *ends)
{
    size_t at, regs_at;
    if (!(f->sample_type & PERF_SAMPLE_STACK_USER) || !stack_at(f, rec, len, &at, &regs_at))
        return 0;
    const struct perf_event_header *h = rec;
    const unsigned char *r = rec;
    uint64_t size, dyn;
    memcpy(&size, r + at, 8);
    size_t words_left = ((h->size & ~7u) - at) / 8 - 1;    /* after the size word */
    if (!size || size % 8 || size / 8 >= words_left)    /* the dyn word follows */
        return 0;
    const unsigned char *data = r + at + 8;
    memcpy(&dyn, data + size, 8);
    if (dyn > size)
        return 0;
    /* keep what the kernel copied, and one word more when it copied less
     * than asked, so "copied < asked" (the stack ended) stays true */
    uint64_t keep = known_end(f, ends, r, regs_at, dyn);
    if (!keep) {
        keep = (dyn + 7) & ~(uint64_t)7;
        if (dyn < size)
            keep += 8;
    }
    /* else the dyn word kept says more than keep: the decoder tells a cut
     * copy by it (struct fk_sample.stack_cut) */
    if (keep >= size)
        return 0;
    size_t head = at;                       /* up to the size word */
    size_t tail_at = at + 8 + size;         /* the dyn word and after */
    size_t tail = len - tail_at;
    size_t n = head + 8 + keep + tail;
    unsigned char *o = out;
    memcpy(o, r, head);
    memcpy(o + head, &keep, 8);
    memcpy(o + head + 8, data, keep);
    memcpy(o + head + 8 + keep, r + tail_at, tail);
    struct perf_event_header nh = *h;
    nh.size = (uint16_t)n;
    memcpy(o, &nh, sizeof nh);
    return n;
}
