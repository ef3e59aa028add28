/* SPDX-License-Identifier: GPL-2.0-only */
/* pprof encoding (see pprof.h). The protobuf-c message tree points into the
 * structured profile's own arrays (location ids, values, strings); only the
 * per-object structs protobuf-c wants are allocated, in one array each; the
 * message is packed into one buffer and gzip-compressed in one call. */
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

/* Pack p (and the comment lines cm) into out. */
static void encode(const struct fk_prof *p, const struct comments *c, struct fk_buf *out)
{
    struct comments none = { 0 };
    const struct comments *cmp = c ? c : &none;
    const struct comments cm = *cmp;
    Perftools__Profiles__Profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
    size_t nstr = p->strs.n + cm.n;
    char **strs = fk_malloc(nstr * sizeof *strs);
    for (size_t i = 0; i < p->strs.n; i++)
        strs[i] = (char *)p->strs.v[i].key;
    for (size_t i = 0; i < cm.n; i++)
        strs[p->strs.n + i] = cm.v[i];
    msg.n_string_table = nstr;
    msg.string_table = strs;

    Perftools__Profiles__ValueType *vt = fk_calloc(p->ntypes + 1, sizeof *vt);
    Perftools__Profiles__ValueType **vtp = fk_calloc(p->ntypes + 1, sizeof *vtp);
    for (size_t i = 0; i < p->ntypes; i++) {
        perftools__profiles__value_type__init(&vt[i]);
        vt[i].type = p->types[i].type;
        vt[i].unit = p->types[i].unit;
        vtp[i] = &vt[i];
    }
    msg.n_sample_type = p->ntypes;
    msg.sample_type = vtp;
    Perftools__Profiles__ValueType period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    if (p->period_type.type) {
        period_type.type = p->period_type.type;
        period_type.unit = p->period_type.unit;
        msg.period_type = &period_type;
    }
    msg.period = p->period;
    msg.time_nanos = p->time_nanos;
    msg.duration_nanos = p->duration_nanos;
    msg.default_sample_type = p->default_type;

    int64_t *comments = fk_malloc((p->ncomments + cm.n + 1) * sizeof *comments);
    for (size_t i = 0; i < p->ncomments; i++)
        comments[i] = p->comments[i];
    for (size_t i = 0; i < cm.n; i++)
        comments[p->ncomments + i] = (int64_t)(p->strs.n + i);
    msg.n_comment = p->ncomments + cm.n;
    msg.comment = comments;

    Perftools__Profiles__Label *lb = fk_malloc((p->nlabels + 1) * sizeof *lb);
    Perftools__Profiles__Label **lbp = fk_malloc((p->nlabels + 1) * sizeof *lbp);
    for (size_t i = 0; i < p->nlabels; i++) {
        perftools__profiles__label__init(&lb[i]);
        lb[i].key = p->labels[i].key;
        lb[i].str = p->labels[i].str;
        lb[i].num = p->labels[i].num;
        lb[i].num_unit = p->labels[i].unit;
        lbp[i] = &lb[i];
    }
    Perftools__Profiles__Sample *sm = fk_malloc((p->nsamples + 1) * sizeof *sm);
    Perftools__Profiles__Sample **smp = fk_malloc((p->nsamples + 1) * sizeof *smp);
    for (size_t i = 0; i < p->nsamples; i++) {
        const struct fk_prof_sample *s = &p->samples[i];
        perftools__profiles__sample__init(&sm[i]);
        sm[i].n_location_id = s->nlocs;
        sm[i].location_id = p->locids + s->loc0;
        sm[i].n_value = p->ntypes;
        sm[i].value = (int64_t *)fk_prof_vals(p, i);
        sm[i].n_label = s->nlabels;
        sm[i].label = lbp + s->label0;
        smp[i] = &sm[i];
    }
    msg.n_sample = p->nsamples;
    msg.sample = smp;

    Perftools__Profiles__Mapping *mp = fk_malloc((p->nmaps + 1) * sizeof *mp);
    Perftools__Profiles__Mapping **mpp = fk_malloc((p->nmaps + 1) * sizeof *mpp);
    for (size_t i = 0; i < p->nmaps; i++) {
        const struct fk_prof_mapping *m = &p->maps[i];
        perftools__profiles__mapping__init(&mp[i]);
        mp[i].id = i + 1;
        mp[i].memory_start = m->start;
        mp[i].memory_limit = m->limit;
        mp[i].file_offset = m->offset;
        mp[i].filename = m->file;
        mp[i].build_id = m->build_id;
        mp[i].has_functions = m->has_functions;
        mp[i].has_filenames = m->has_filenames;
        mp[i].has_line_numbers = m->has_lines;
        mp[i].has_inline_frames = m->has_inline;
        mpp[i] = &mp[i];
    }
    msg.n_mapping = p->nmaps;
    msg.mapping = mpp;

    Perftools__Profiles__Line *ln = fk_malloc((p->nlines + 1) * sizeof *ln);
    Perftools__Profiles__Line **lnp = fk_malloc((p->nlines + 1) * sizeof *lnp);
    for (size_t i = 0; i < p->nlines; i++) {
        perftools__profiles__line__init(&ln[i]);
        ln[i].function_id = p->lines[i].func;
        ln[i].line = p->lines[i].line;
        lnp[i] = &ln[i];
    }
    Perftools__Profiles__Location *lc = fk_malloc((p->nlocs + 1) * sizeof *lc);
    Perftools__Profiles__Location **lcp = fk_malloc((p->nlocs + 1) * sizeof *lcp);
    for (size_t i = 0; i < p->nlocs; i++) {
        const struct fk_prof_loc *l = &p->locs[i];
        perftools__profiles__location__init(&lc[i]);
        lc[i].id = i + 1;
        lc[i].mapping_id = l->mapping;
        lc[i].address = l->addr;
        lc[i].n_line = l->nlines;
        lc[i].line = lnp + l->line0;
        lc[i].is_folded = l->folded;
        lcp[i] = &lc[i];
    }
    msg.n_location = p->nlocs;
    msg.location = lcp;

    Perftools__Profiles__Function *fn = fk_malloc((p->nfuncs + 1) * sizeof *fn);
    Perftools__Profiles__Function **fnp = fk_malloc((p->nfuncs + 1) * sizeof *fnp);
    for (size_t i = 0; i < p->nfuncs; i++) {
        const struct fk_prof_func *f = &p->funcs[i];
        perftools__profiles__function__init(&fn[i]);
        fn[i].id = i + 1;
        fn[i].name = f->name;
        fn[i].system_name = f->system_name != f->name ? f->system_name : 0;
        fn[i].filename = f->file;
        fn[i].start_line = f->start_line;
        fnp[i] = &fn[i];
    }
    msg.n_function = p->nfuncs;
    msg.function = fnp;

    size_t len = protobuf_c_message_get_packed_size(&msg.base);
    fk_buf_reserve(out, len);
    out->len += protobuf_c_message_pack(&msg.base, (uint8_t *)out->data + out->len);

    free(fn), free(fnp), free(lc), free(lcp), free(ln), free(lnp), free(mp), free(mpp);
    free(sm), free(smp), free(lb), free(lbp), free(comments), free(vt), free(vtp), free(strs);
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
    encode(p, &cm, out);
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

/* gzip (level 1, as Go's runtime/pprof writes) of the encoded profile. */
static void *job_run(void *arg)
{
    struct fk_pprof_job *j = arg;
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    struct fk_buf raw = FK_BUF_INIT;
    encode(j->p, &j->cm, &raw);
    z_stream z;
    memset(&z, 0, sizeof z);
    j->ok = deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    if (j->ok) {
        uLong bound = deflateBound(&z, (uLong)raw.len);
        fk_buf_reserve(&j->gz, bound);
        z.next_in = (Bytef *)raw.data;
        z.avail_in = (uInt)raw.len;
        z.next_out = (Bytef *)j->gz.data;
        z.avail_out = (uInt)bound;
        j->ok = raw.len <= UINT_MAX && deflate(&z, Z_FINISH) == Z_STREAM_END;
        j->gz.len = z.total_out;
        deflateEnd(&z);
    }
    fk_buf_free(&raw);
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
