/* SPDX-License-Identifier: GPL-2.0-only */
/* Naming a capture (the engine's last phase, engine.h): one pass over the
 * unique raw stacks. Each new location is named once (fk_sym_name) and
 * becomes a pprof-style location with its function and mapping; each raw
 * stack becomes a sample labelled comm and pid, valued (samples, weight)
 * as the event kind counted them; samples of the same frames in other
 * processes share one location list, and stacks of the same callers (with
 * other leaves) take the callers' location ids from the first such stack's
 * sample instead of looking each frame up again. The folded table is then
 * drawn from that profile, so the two cannot disagree.
 *
 * A raw stack's key is comm NUL pid32 frames-id32, the id an entry of
 * the engine's frame_lists table: callers-id32 and the leaf, a packed u64
 * or (dso u32, addr u64), none for a stack without frames; the callers'
 * id an entry of its callers table: a packed u64 per frame, or (dso u32,
 * addr u64) per frame and a last byte, from the leaf's caller outwards
 * (engine.h; capture.c writes all three). */
#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

struct loc_key {
    uint32_t dso;
    uint64_t addr;
} __attribute__((packed));
_Static_assert(sizeof(struct loc_key) == FK_ENGINE_FRAME_WIDE, "a wide frame is a loc_key");

/* A DSO's pprof mapping and the address range its locations span. */
struct dso_mapping {
    uint32_t id;            /* 0: not made yet */
    uint64_t lo, hi;
    bool file_offsets;
};

struct namer {
    struct fk_engine *e;
    struct fk_prof *p;
    struct fk_stacktab locs;        /* loc_key -> aux = location id */
    struct dso_mapping *maps;       /* by DSO index */
    size_t capmaps;
    struct fk_buf text;
    uint64_t *ids;                  /* one stack's location ids */
    size_t capids;
    size_t *sample_of;              /* by frame list: 1 + the first sample
                                     * with it (0: none yet) */
    size_t *callers_at;             /* by callers list: 1 + where in p->locids
                                     * the first sample with it holds the
                                     * callers' ids (0: none yet) */
    uint32_t comm_key, pid_key;
};

/* samples/count and the kind's value; pprof's period */
static void set_sample_types(struct fk_prof *p, const struct fk_evkind_values *v)
{
    fk_prof_add_type(p, v->count_type ? v->count_type : "samples", "count");
    fk_prof_add_type(p, v->type, v->unit);
    p->period_type = p->types[1];
    p->period = v->period;
}

static void build_id_hex(const struct fk_sym_dso *di, char hex[2 * 64 + 1])
{
    size_t bl = di->build_id_len < 64 ? di->build_id_len : 64;
    for (size_t k = 0; k < bl; k++)
        snprintf(hex + 2 * k, 3, "%02x", di->build_id[k]);
    hex[2 * bl] = 0;
}

/* The mapping of the DSO a location is in (0: none), widened to addr. */
static uint32_t mapping_of(struct namer *n, struct fk_loc loc)
{
    struct fk_sym_dso di;
    if (!fk_sym_dso_info(n->e->sym, loc.dso, &di))
        return 0;
    size_t oldcap = n->capmaps;
    n->maps = fk_grow(n->maps, &n->capmaps, (size_t)loc.dso + 1, sizeof *n->maps);
    memset(n->maps + oldcap, 0, (n->capmaps - oldcap) * sizeof *n->maps);
    struct dso_mapping *dm = &n->maps[loc.dso];
    if (!dm->id) {
        struct fk_prof_mapping m = { 0 };
        char hex[2 * 64 + 1];
        build_id_hex(&di, hex);
        m.file = fk_prof_strz(n->p, di.path);
        m.build_id = fk_prof_strz(n->p, hex);
        m.has_functions = true;
        dm->id = fk_prof_add_mapping(n->p, &m);
        dm->lo = UINT64_MAX;
        dm->hi = 0;
        dm->file_offsets = di.file_offsets;
    }
    if (loc.addr < dm->lo)
        dm->lo = loc.addr;
    if (loc.addr > dm->hi)
        dm->hi = loc.addr;
    return dm->id;
}

/* A new location: its name (the function, resolved to a function id by
 * assign_functions) and mapping. */
static uint32_t add_location(struct namer *n, struct fk_loc loc)
{
    fk_buf_reset(&n->text);
    fk_sym_name(n->e->sym, loc, &n->text);
    if (!n->text.len)
        fk_buf_adds(&n->text, "[unknown]");
    fk_prof_frame_sanitize(n->text.data, n->text.len);
    uint32_t name = fk_prof_str(n->p, n->text.data, n->text.len);
    uint32_t mapping = mapping_of(n, loc);
    uint32_t id = fk_prof_add_loc(n->p, mapping, loc.addr);
    fk_prof_add_line(n->p, 0, 0);
    n->p->lines[n->p->nlines - 1].func = name;  /* a name until assign_functions */
    return id;
}

/* The location id of a frame, named the first time it is seen. */
static uint32_t location_id(struct namer *n, const struct loc_key *k)
{
    struct fk_stack *le = fk_stacktab_add(&n->locs, (const char *)k, sizeof *k, 0);
    if (!le->aux)
        le->aux = add_location(n, (struct fk_loc){ k->dso, k->addr });
    return le->aux;
}

/* One raw stack -> one sample labelled comm and pid. */
static void add_stack_sample(struct namer *n, const struct fk_stack *s)
{
    size_t cl = strnlen(s->key, s->len);
    int32_t pid;
    uint32_t fid;
    memcpy(&pid, s->key + cl + 1, sizeof pid);
    memcpy(&fid, s->key + cl + 1 + sizeof pid, sizeof fid);
    int64_t v[2] = { (int64_t)s->count, (int64_t)s->count2 };
    if (n->sample_of[fid]) {       /* the same frames in another process */
        fk_prof_add_sample_like(n->p, n->sample_of[fid] - 1, v);
    } else {
        const struct fk_stack *f = &n->e->frame_lists.v[fid];
        uint32_t cid;
        memcpy(&cid, f->key, sizeof cid);
        const struct fk_stack *c = &n->e->callers.v[cid];
        const char *frames = c->key;
        bool wide = c->len % sizeof(uint64_t) != 0;
        size_t leaf = f->len > sizeof cid;
        size_t nloc = leaf + (wide ? c->len / FK_ENGINE_FRAME_WIDE : c->len / sizeof(uint64_t));
        n->ids = fk_grow(n->ids, &n->capids, nloc ? nloc : 1, sizeof *n->ids);
        struct loc_key k;
        if (leaf) {
            if (f->len == sizeof cid + FK_ENGINE_FRAME_WIDE) {
                memcpy(&k, f->key + sizeof cid, sizeof k);
            } else {
                uint64_t w;
                memcpy(&w, f->key + sizeof cid, sizeof w);
                struct fk_loc l = fk_engine_frame_unpack(w);
                k = (struct loc_key){ l.dso, l.addr };
            }
            n->ids[0] = location_id(n, &k);
        }
        size_t ncallers = nloc - leaf;
        if (ncallers && n->callers_at[cid]) {
            /* every caller named already (the leaf's id came first, as
             * when they were looked up one by one) */
            memcpy(n->ids + leaf, n->p->locids + n->callers_at[cid] - 1, ncallers * sizeof *n->ids);
        } else {
            for (size_t j = leaf; j < nloc; j++) {
                if (wide) {
                    memcpy(&k, frames + (j - leaf) * FK_ENGINE_FRAME_WIDE, sizeof k);
                } else {
                    uint64_t w;
                    memcpy(&w, frames + (j - leaf) * sizeof w, sizeof w);
                    struct fk_loc l = fk_engine_frame_unpack(w);
                    k = (struct loc_key){ l.dso, l.addr };
                }
                n->ids[j] = location_id(n, &k);
            }
        }
        fk_prof_add_sample(n->p, n->ids, nloc, v);
        n->sample_of[fid] = n->p->nsamples;
        if (ncallers && !n->callers_at[cid])
            n->callers_at[cid] = 1 + n->p->nlocids - ncallers;
    }
    fk_buf_reset(&n->text);
    fk_buf_add(&n->text, s->key, cl);
    fk_prof_frame_sanitize(n->text.data, n->text.len);
    fk_prof_add_label(n->p, n->comm_key, fk_prof_str(n->p, n->text.data, n->text.len), 0, 0);
    fk_prof_add_label(n->p, n->pid_key, 0, pid, 0);
}

/* One function per distinct name (lines held the name until now). */
static void assign_functions(struct fk_prof *p)
{
    size_t cap = 0;
    uint32_t *func_of = fk_grow(NULL, &cap, p->strs.n + 1, sizeof *func_of);
    memset(func_of, 0, cap * sizeof *func_of);
    for (size_t i = 0; i < p->nlines; i++) {
        uint32_t name = p->lines[i].func;
        if (!func_of[name])
            func_of[name] = fk_prof_add_func(p, name, name, 0, 0);
        p->lines[i].func = func_of[name];
    }
    free(func_of);
}

/* Each mapping spans the addresses its locations used. */
static void set_mapping_ranges(struct namer *n)
{
    for (size_t d = 0; d < n->capmaps; d++) {
        struct dso_mapping *dm = &n->maps[d];
        if (!dm->id)
            continue;
        struct fk_prof_mapping *m = &n->p->maps[dm->id - 1];
        m->start = dm->lo;
        m->limit = dm->hi == UINT64_MAX ? UINT64_MAX : dm->hi + 1;
        m->offset = dm->file_offsets ? dm->lo : 0;
    }
}

void fk_engine_name(struct fk_engine *e)
{
    struct fk_prof *p = &e->r->prof;
    fk_prof_init(p);
    set_sample_types(p, &e->values);
    p->time_nanos = (int64_t)e->r->start_realtime_ns;
    p->duration_nanos = (int64_t)e->r->duration_ns;
    struct namer n = { .e = e, .p = p };
    fk_stacktab_init(&n.locs);
    n.comm_key = fk_prof_strz(p, "comm");
    n.pid_key = fk_prof_strz(p, "pid");
    n.sample_of = fk_calloc(e->frame_lists.n + 1, sizeof *n.sample_of);
    n.callers_at = fk_calloc(e->callers.n + 1, sizeof *n.callers_at);
    for (size_t i = 0; i < e->raw.n; i++)
        if (e->raw.v[i].count || e->raw.v[i].count2)    /* interned, never weighed: none */
            add_stack_sample(&n, &e->raw.v[i]);
    assign_functions(p);
    set_mapping_ranges(&n);
    fk_prof_main_mapping_first(p);
    fk_prof_fold(p, e->values.fold_weight ? 1 : 0, SIZE_MAX, &e->r->stacks, NULL);
    free(n.ids);
    free(n.sample_of);
    free(n.callers_at);
    free(n.maps);
    fk_buf_free(&n.text);
    fk_stacktab_free(&n.locs);
}
