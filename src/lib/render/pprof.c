/* SPDX-License-Identifier: GPL-2.0-only */
/* pprof encoding (see pprof.h). The Profile message goes out a field at a
 * time, each object packed by protobuf-c from a struct on the stack that
 * points into the structured profile's own arrays (location ids, values,
 * strings), and is gzip-compressed as it goes: memory beyond the profile is
 * one object's structs, a 64 KiB staging buffer and the compressed bytes. */
#include "pprof.h"
#include "stacks/profile.pb-c.h"
#include "util/buf.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

/* The metadata leaves worth a comment: pprof prints every comment at the
 * top of its text reports, so a short summary; the .json has the rest. The
 * names are flamekit-metadata(5)'s (a.b = key b of object a). */
static const char *const comment_keys[] = {
    "invocation", "host", "kernel.release", "target.description", "event.name",
    "event.frequency_hz", "faults.period", "start_time", "duration_s", "samples", "lost",
    "faults.summary", "offcpu.one_in", "offcpu.switches_seen", "offcpu.switch_ins_lost",
    "stop_reason",
};
#define COMMENT_MAX 1024

struct comments {
    char **v;
    size_t n, cap;
};

static void comment_add(struct comments *c, const char *key, const char *val)
{
    for (size_t i = 0; i < sizeof comment_keys / sizeof comment_keys[0]; i++)
        if (!strcmp(key, comment_keys[i])) {
            c->v = fk_grow(c->v, &c->cap, c->n + 1, sizeof *c->v);
            char *s = fk_asprintf("%s=%.*s", key, COMMENT_MAX, val);
            for (char *q = s; *q; q++)
                if ((unsigned char)*q < 0x20 || *q == 0x7f)
                    *q = ' ';
            c->v[c->n++] = s;
            return;
        }
}

static void flatten(struct comments *c, const char *prefix, const json_t *v)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            char *key = *prefix ? fk_asprintf("%s.%s", prefix, k) : fk_strdup(k);
            flatten(c, key, x);
            free(key);
        }
    } else if (json_is_string(v)) {
        comment_add(c, prefix, json_string_value(v));
    } else if (!json_is_array(v)) {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
        if (s)
            comment_add(c, prefix, s);
        free(s);
    }
}

/* Where the encoding goes, a piece at a time: appended to out, or (z set)
 * gzip-compressed into out through a staging buffer, so that zlib sees
 * large blocks. base first: protobuf-c packs a message into it. */
struct sink {
    ProtobufCBuffer base;
    struct fk_buf *out;
    z_stream *z;
    struct fk_buf stage;
    bool ok;
};
enum { STAGE_BYTES = 64 << 10 };

/* Compress the staged bytes (flush: Z_NO_FLUSH or Z_FINISH). */
static void sink_deflate(struct sink *s, int flush)
{
    s->z->next_in = (Bytef *)s->stage.data;
    s->z->avail_in = (uInt)s->stage.len;
    for (;;) {
        fk_buf_reserve(s->out, s->stage.len / 2 + 4096);
        size_t room = s->out->cap - 1 - s->out->len;
        if (room > UINT_MAX)
            room = UINT_MAX;
        s->z->next_out = (Bytef *)s->out->data + s->out->len;
        s->z->avail_out = (uInt)room;
        int r = deflate(s->z, flush);
        s->out->len += room - s->z->avail_out;
        if (r == Z_STREAM_ERROR || (r == Z_BUF_ERROR && s->z->avail_out)) {
            s->ok = false;
            break;
        }
        if (flush == Z_FINISH ? r == Z_STREAM_END : !s->z->avail_in && s->z->avail_out)
            break;
    }
    s->stage.len = 0;
}

static void sink_put(struct sink *s, const void *d, size_t n)
{
    if (!s->z) {
        fk_buf_add(s->out, d, n);
        return;
    }
    fk_buf_add(&s->stage, d, n);
    if (s->stage.len >= STAGE_BYTES)
        sink_deflate(s, Z_NO_FLUSH);
}

static void sink_append(ProtobufCBuffer *b, size_t n, const uint8_t *d)
{
    sink_put((struct sink *)b, d, n);
}

/* A length-delimited field (wire type 2) of the Profile: its key and
 * length, then n bytes the caller puts. */
static void put_len_key(struct sink *s, uint32_t field, size_t n)
{
    uint8_t hdr[20];
    size_t h = 0;
    for (uint64_t v = (uint64_t)field << 3 | 2;; v >>= 7) {
        hdr[h++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        if (v <= 0x7f)
            break;
    }
    for (uint64_t v = n;; v >>= 7) {
        hdr[h++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        if (v <= 0x7f)
            break;
    }
    sink_put(s, hdr, h);
}

static void put_message(struct sink *s, uint32_t field, const ProtobufCMessage *m)
{
    put_len_key(s, field, protobuf_c_message_get_packed_size(m));
    protobuf_c_message_pack_to_buffer(m, &s->base);
}

/* Pack p (and the comment lines cm) into the sink. The Profile's fields go
 * out in field order one object at a time -- the bytes protobuf-c packs
 * for the whole message, without its tree of one struct per sample, label,
 * location and line (~200 B a sample: a tree of 10,000 children has a
 * sample per (pid, stack)) or the whole encoding held before compression.
 * Fields: 1 sample_type, 2 sample, 3 mapping, 4 location, 5 function,
 * 6 string_table, then the scalars and comments (9-14). */
static void encode(const struct fk_prof *p, const struct comments *c, struct sink *s)
{
    struct comments none = { 0 };
    const struct comments cm = c ? *c : none;

    Perftools__Profiles__Profile head = PERFTOOLS__PROFILES__PROFILE__INIT;
    Perftools__Profiles__ValueType *vt = fk_calloc(p->ntypes + 1, sizeof *vt);
    Perftools__Profiles__ValueType **vtp = fk_calloc(p->ntypes + 1, sizeof *vtp);
    for (size_t i = 0; i < p->ntypes; i++) {
        perftools__profiles__value_type__init(&vt[i]);
        vt[i].type = p->types[i].type;
        vt[i].unit = p->types[i].unit;
        vtp[i] = &vt[i];
    }
    head.n_sample_type = p->ntypes;
    head.sample_type = vtp;
    protobuf_c_message_pack_to_buffer(&head.base, &s->base);
    free(vt), free(vtp);

    size_t caplb = 0;
    Perftools__Profiles__Label *lb = NULL;
    Perftools__Profiles__Label **lbp = NULL;
    for (size_t i = 0; i < p->nsamples; i++) {
        const struct fk_prof_sample *x = &p->samples[i];
        if (x->nlabels > caplb) {
            size_t cap = caplb;
            lb = fk_grow(lb, &caplb, x->nlabels, sizeof *lb);
            lbp = fk_grow(lbp, &cap, x->nlabels, sizeof *lbp);
        }
        for (uint32_t k = 0; k < x->nlabels; k++) {
            const struct fk_prof_label *l = &p->labels[x->label0 + k];
            perftools__profiles__label__init(&lb[k]);
            lb[k].key = l->key;
            lb[k].str = l->str;
            lb[k].num = l->num;
            lb[k].num_unit = l->unit;
            lbp[k] = &lb[k];
        }
        Perftools__Profiles__Sample sm = PERFTOOLS__PROFILES__SAMPLE__INIT;
        sm.n_location_id = x->nlocs;
        sm.location_id = p->locids + x->loc0;
        sm.n_value = p->ntypes;
        sm.value = (int64_t *)fk_prof_vals(p, i);
        sm.n_label = x->nlabels;
        sm.label = lbp;
        put_message(s, 2, &sm.base);
    }
    free(lb), free(lbp);

    for (size_t i = 0; i < p->nmaps; i++) {
        const struct fk_prof_mapping *m = &p->maps[i];
        Perftools__Profiles__Mapping mp = PERFTOOLS__PROFILES__MAPPING__INIT;
        mp.id = i + 1;
        mp.memory_start = m->start;
        mp.memory_limit = m->limit;
        mp.file_offset = m->offset;
        mp.filename = m->file;
        mp.build_id = m->build_id;
        mp.has_functions = m->has_functions;
        mp.has_filenames = m->has_filenames;
        mp.has_line_numbers = m->has_lines;
        mp.has_inline_frames = m->has_inline;
        put_message(s, 3, &mp.base);
    }

    size_t capln = 0;
    Perftools__Profiles__Line *ln = NULL;
    Perftools__Profiles__Line **lnp = NULL;
    for (size_t i = 0; i < p->nlocs; i++) {
        const struct fk_prof_loc *l = &p->locs[i];
        if (l->nlines > capln) {
            size_t cap = capln;
            ln = fk_grow(ln, &capln, l->nlines, sizeof *ln);
            lnp = fk_grow(lnp, &cap, l->nlines, sizeof *lnp);
        }
        for (uint32_t k = 0; k < l->nlines; k++) {
            perftools__profiles__line__init(&ln[k]);
            ln[k].function_id = p->lines[l->line0 + k].func;
            ln[k].line = p->lines[l->line0 + k].line;
            lnp[k] = &ln[k];
        }
        Perftools__Profiles__Location lc = PERFTOOLS__PROFILES__LOCATION__INIT;
        lc.id = i + 1;
        lc.mapping_id = l->mapping;
        lc.address = l->addr;
        lc.n_line = l->nlines;
        lc.line = lnp;
        lc.is_folded = l->folded;
        put_message(s, 4, &lc.base);
    }
    free(ln), free(lnp);

    for (size_t i = 0; i < p->nfuncs; i++) {
        const struct fk_prof_func *f = &p->funcs[i];
        Perftools__Profiles__Function fn = PERFTOOLS__PROFILES__FUNCTION__INIT;
        fn.id = i + 1;
        fn.name = f->name;
        fn.system_name = f->system_name != f->name ? f->system_name : 0;
        fn.filename = f->file;
        fn.start_line = f->start_line;
        put_message(s, 5, &fn.base);
    }

    for (size_t i = 0; i < p->strs.n + cm.n; i++) {
        const char *str = i < p->strs.n ? p->strs.v[i].key : cm.v[i - p->strs.n];
        size_t n = i < p->strs.n ? p->strs.v[i].len : strlen(str);
        put_len_key(s, 6, n);
        sink_put(s, str, n);
    }

    Perftools__Profiles__Profile tail = PERFTOOLS__PROFILES__PROFILE__INIT;
    Perftools__Profiles__ValueType period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    if (p->period_type.type) {
        period_type.type = p->period_type.type;
        period_type.unit = p->period_type.unit;
        tail.period_type = &period_type;
    }
    tail.period = p->period;
    tail.time_nanos = p->time_nanos;
    tail.duration_nanos = p->duration_nanos;
    tail.default_sample_type = p->default_type;
    int64_t *comments = fk_malloc((p->ncomments + cm.n + 1) * sizeof *comments);
    for (size_t i = 0; i < p->ncomments; i++)
        comments[i] = p->comments[i];
    for (size_t i = 0; i < cm.n; i++)
        comments[p->ncomments + i] = (int64_t)(p->strs.n + i);
    tail.n_comment = p->ncomments + cm.n;
    tail.comment = comments;
    protobuf_c_message_pack_to_buffer(&tail.base, &s->base);
    free(comments);
}

static void sink_init(struct sink *s, struct fk_buf *out, z_stream *z)
{
    memset(s, 0, sizeof *s);
    s->base.append = sink_append;
    s->out = out;
    s->z = z;
    s->ok = true;
}

static void comments_free(struct comments *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i]);
    free(c->v);
    memset(c, 0, sizeof *c);
}

void fk_pprof_encode(const struct fk_prof *p, const json_t *meta, struct fk_buf *out)
{
    struct comments cm = { 0 };
    if (meta)
        flatten(&cm, "", meta);
    struct sink s;
    sink_init(&s, out, NULL);
    encode(p, &cm, &s);
    comments_free(&cm);
}

/* ---- gzip, on a second thread when there is one -------------------------- */

struct fk_pprof_job {
    const struct fk_prof *p;
    struct comments cm;
    struct fk_buf gz;
    uint64_t cpu_ns;        /* encoding + compression, CPU time */
    bool ok, threaded;
    pthread_t thread;
};

/* gzip (level 1, as Go's runtime/pprof writes) of the encoded profile,
 * compressed as it is encoded. */
static void *job_run(void *arg)
{
    struct fk_pprof_job *j = arg;
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    z_stream z;
    memset(&z, 0, sizeof z);
    j->ok = deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    if (j->ok) {
        struct sink s;
        sink_init(&s, &j->gz, &z);
        encode(j->p, &j->cm, &s);
        sink_deflate(&s, Z_FINISH);
        j->ok = s.ok;
        fk_buf_free(&s.stage);
        deflateEnd(&z);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    j->cpu_ns = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec));
    return NULL;
}

struct fk_pprof_job *fk_pprof_gz_start(const struct fk_prof *p, const json_t *meta)
{
    struct fk_pprof_job *j = fk_calloc(1, sizeof *j);
    j->p = p;
    if (meta)
        flatten(&j->cm, "", meta);     /* jansson stays on the caller's thread */
    j->threaded = pthread_create(&j->thread, NULL, job_run, j) == 0;
    if (!j->threaded)
        job_run(j);
    return j;
}

bool fk_pprof_gz_finish(struct fk_pprof_job *j, struct fk_buf *out, uint64_t *cpu_ns)
{
    if (j->threaded)
        pthread_join(j->thread, NULL);
    bool ok = j->ok;
    if (cpu_ns)
        *cpu_ns = j->cpu_ns;
    if (ok) {
        *out = j->gz;
        memset(&j->gz, 0, sizeof j->gz);
    }
    fk_buf_free(&j->gz);
    comments_free(&j->cm);
    free(j);
    return ok;
}
