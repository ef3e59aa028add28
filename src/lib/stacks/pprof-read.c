/* SPDX-License-Identifier: GPL-2.0-only */
/* pprof decoding (see pprof-read.h): a structural walk first (it names
 * truncation precisely), then protobuf-c's unpacker under a memory budget,
 * then every reference checked while the message is copied into a
 * structured profile. */
#include "pprof-read.h"
#include "stacks/profile.pb-c.h"

#include <stdlib.h>
#include <string.h>

/* ---- the protobuf wire format, enough to check structure ---------------- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* Read a varint at *pos; false if it does not end within len (or is longer
 * than 10 bytes). */
static bool varint(const unsigned char *d, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 70 && *pos < len; shift += 7) {
        unsigned char b = d[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

/* Which (field, wire type) pairs each message may have. A bit per wire
 * type (1 << wt) for fields 1..15; unknown fields are refused by the sniffer
 * only (the decoder skips them, as protobuf readers do). */
enum msg_kind { M_PROFILE, M_VALUETYPE, M_SAMPLE, M_MAPPING, M_LOCATION, M_FUNCTION, M_NONE };
#define V (1u << WT_VARINT)
#define L (1u << WT_LEN)
static const unsigned char allowed[M_NONE][16] = {
    [M_PROFILE] = { 0, L, L, L, L, L, L, V, V, V, V, L, V, V | L, V, V },
    [M_VALUETYPE] = { 0, V, V },
    [M_SAMPLE] = { 0, V | L, V | L, L },
    [M_MAPPING] = { 0, V, V, V, V, V, V, V, V, V, V },
    [M_LOCATION] = { 0, V, V, V, L, V },
    [M_FUNCTION] = { 0, V, V, V, V, V },
};
/* The message kind of a Profile field (wire type LEN). */
static const enum msg_kind sub_of_profile[16] = {
    M_NONE, M_VALUETYPE, M_SAMPLE, M_MAPPING, M_LOCATION, M_FUNCTION, M_NONE, M_NONE,
    M_NONE, M_NONE, M_NONE, M_VALUETYPE, M_NONE, M_NONE, M_NONE, M_NONE,
};
#undef V
#undef L

/* Walk the fields of d[0..len). Returns the number of complete fields, or -1
 * on a field that breaks the rules; *cut is set when the last field runs
 * past len (truncated, or the end of a sniffing window). */
static long walk(const unsigned char *d, size_t len, enum msg_kind kind, int depth, bool *cut,
                 size_t *bad_at)
{
    size_t pos = 0;
    long n = 0;
    *cut = false;
    while (pos < len) {
        size_t start = pos;
        uint64_t tag, v;
        if (!varint(d, len, &pos, &tag)) {
            *cut = len - start < 10;
            *bad_at = start;
            return *cut ? n : -1;
        }
        uint64_t field = tag >> 3;
        unsigned wt = (unsigned)(tag & 7);
        if (field == 0 || (kind != M_NONE && (field > 15 || !(allowed[kind][field] & (1u << wt))))) {
            *bad_at = start;
            return -1;
        }
        switch (wt) {
        case WT_VARINT:
            if (!varint(d, len, &pos, &v)) {
                *cut = len - pos < 10;
                *bad_at = start;
                return *cut ? n : -1;
            }
            break;
        case WT_I64:
        case WT_I32: {
            size_t w = wt == WT_I64 ? 8 : 4;
            if (len - pos < w) {
                *cut = true;
                *bad_at = start;
                return n;
            }
            pos += w;
            break;
        }
        case WT_LEN:
            if (!varint(d, len, &pos, &v)) {
                *cut = true;
                *bad_at = start;
                return n;
            }
            if (v > len - pos) {
                *cut = true;
                *bad_at = start;
                return n;
            }
            if (kind == M_PROFILE && depth == 0 && sub_of_profile[field] != M_NONE) {
                bool subcut;
                size_t sub_bad;
                if (walk(d + pos, (size_t)v, sub_of_profile[field], depth + 1, &subcut, &sub_bad) < 0 ||
                    subcut) {
                    *bad_at = pos + sub_bad;
                    return -1;
                }
            }
            pos += (size_t)v;
            break;
        default:    /* groups (3, 4) and 6, 7 do not occur in this format */
            *bad_at = start;
            return -1;
        }
        n++;
    }
    return n;
}

int fk_pprof_sniff(const void *data, size_t len, bool complete)
{
    bool cut;
    size_t bad;
    if (!len)
        return 0;
    long n = walk(data, len, M_PROFILE, 0, &cut, &bad);
    if (n < 0)
        return 0;
    if (cut && complete)
        return n >= 3;  /* a profile cut short: the decoder will say so */
    if (n > 0)
        return 1;       /* every field so far well-typed, nested ones too */
    return cut ? -1 : 0;
}

/* ---- decoding under a memory budget ------------------------------------- */

struct budget {
    size_t used, max;
    bool exceeded;
};

static void *budget_alloc(void *ctx, size_t size)
{
    struct budget *b = ctx;
    if (size > b->max - b->used || size > SIZE_MAX - 16) {
        b->exceeded = true;
        return NULL;
    }
    size_t *p = malloc(size + 16);
    if (!p) {
        b->exceeded = true;
        return NULL;
    }
    b->used += size;
    p[0] = size;
    return (char *)p + 16;
}

static void budget_free(void *ctx, void *ptr)
{
    struct budget *b = ctx;
    if (!ptr)
        return;
    size_t *p = (size_t *)((char *)ptr - 16);
    b->used -= p[0];
    free(p);
}

/* ---- checks and copy ----------------------------------------------------- */

struct dec {
    const char *name;
    char *err;              /* the first error, one line */
    size_t errlen;
    const Perftools__Profiles__Profile *m;
    struct fk_prof *p;
    uint32_t *str;          /* message string index -> our string */
    bool failed;
    /* id -> 1-based index, for mappings, functions, locations */
    struct fk_stacktab ids[3];
    bool dense[3];          /* ids are 1..n in order: no table needed */
};

enum { ID_MAP, ID_FUNC, ID_LOC };
static const char *const id_what[] = { "mapping", "function", "location" };

static bool bad(struct dec *d, const char *fmt, ...) FK_PRINTF(2, 3);
static bool bad(struct dec *d, const char *fmt, ...)
{
    if (d->failed)
        return false;
    d->failed = true;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(d->err, d->errlen, "%s: not a usable pprof profile: %s", d->name, msg);
    return false;
}

static uint32_t str(struct dec *d, int64_t i, const char *what, uint64_t id)
{
    if (i < 0 || (uint64_t)i >= d->m->n_string_table) {
        bad(d, "string index %lld out of range (the string table has %zu entries) in %s %llu",
            (long long)i, d->m->n_string_table, what, (unsigned long long)id);
        return 0;
    }
    return d->str[i];
}

static bool id_add(struct dec *d, int which, uint64_t id, size_t index)
{
    if (id == 0)
        return bad(d, "%s %zu has the reserved id 0", id_what[which], index + 1);
    if (d->dense[which] && id == index + 1)
        return true;
    if (d->dense[which]) {
        /* not 1..n in order after all: index what we have so far */
        d->dense[which] = false;
        for (size_t k = 0; k < index; k++) {
            uint64_t kid = k + 1;
            fk_stacktab_add(&d->ids[which], (const char *)&kid, sizeof kid, 0)->aux = (uint32_t)(k + 1);
        }
    }
    struct fk_stack *e = fk_stacktab_add(&d->ids[which], (const char *)&id, sizeof id, 0);
    if (e->aux)
        return bad(d, "two %ss have the id %llu", id_what[which], (unsigned long long)id);
    e->aux = (uint32_t)(index + 1);
    return true;
}

/* 1-based index of an id, or 0 (error reported) if there is no such object. */
static uint32_t id_get(struct dec *d, int which, uint64_t id, size_t n, const char *where,
                       uint64_t where_id)
{
    if (d->dense[which]) {
        if (id >= 1 && id <= n)
            return (uint32_t)id;
    } else {
        const struct fk_stack *e = fk_stacktab_find(&d->ids[which], (const char *)&id, sizeof id);
        if (e)
            return e->aux;
    }
    bad(d, "%s %llu refers to %s %llu, which does not exist", where,
        (unsigned long long)where_id, id_what[which], (unsigned long long)id);
    return 0;
}

static bool copy(struct dec *d)
{
    const Perftools__Profiles__Profile *m = d->m;
    struct fk_prof *p = d->p;
    if (m->n_string_table && m->string_table[0][0])
        return bad(d, "the string table must start with an empty string");
    if (m->n_sample_type > 4096 || m->n_mapping > UINT32_MAX / 2 || m->n_function > UINT32_MAX / 2 ||
        m->n_location > UINT32_MAX / 2)
        return bad(d, "implausibly many sample types or objects");
    d->str = fk_malloc((m->n_string_table + 1) * sizeof *d->str);
    d->str[0] = 0;
    for (size_t i = 1; i < m->n_string_table; i++)
        d->str[i] = fk_prof_strz(p, m->string_table[i]);

    for (size_t i = 0; i < m->n_sample_type; i++) {
        p->types = fk_realloc(p->types, (p->ntypes + 1) * sizeof *p->types);
        p->types[p->ntypes].type = str(d, m->sample_type[i]->type, "sample type", i + 1);
        p->types[p->ntypes].unit = str(d, m->sample_type[i]->unit, "sample type", i + 1);
        p->ntypes++;
    }
    if (m->period_type) {
        p->period_type.type = str(d, m->period_type->type, "period type", 1);
        p->period_type.unit = str(d, m->period_type->unit, "period type", 1);
    }
    p->period = m->period;
    p->time_nanos = m->time_nanos;
    p->duration_nanos = m->duration_nanos;
    p->default_type = str(d, m->default_sample_type, "default sample type", 1);
    str(d, m->drop_frames, "drop_frames", 1);
    str(d, m->keep_frames, "keep_frames", 1);
    for (size_t i = 0; i < m->n_comment && !d->failed; i++) {
        uint32_t c = str(d, m->comment[i], "comment", i + 1);
        p->comments = fk_grow(p->comments, &p->capcomments, p->ncomments + 1, sizeof *p->comments);
        p->comments[p->ncomments++] = c;
    }
    if (d->failed)
        return false;

    for (int w = 0; w < 3; w++) {
        d->dense[w] = true;
        fk_stacktab_init(&d->ids[w]);
    }
    for (size_t i = 0; i < m->n_mapping && !d->failed; i++) {
        const Perftools__Profiles__Mapping *mp = m->mapping[i];
        if (!id_add(d, ID_MAP, mp->id, i))
            break;
        struct fk_prof_mapping x = {
            .start = mp->memory_start, .limit = mp->memory_limit, .offset = mp->file_offset,
            .file = str(d, mp->filename, "mapping", mp->id),
            .build_id = str(d, mp->build_id, "mapping", mp->id),
            .has_functions = mp->has_functions, .has_filenames = mp->has_filenames,
            .has_lines = mp->has_line_numbers, .has_inline = mp->has_inline_frames,
        };
        fk_prof_add_mapping(p, &x);
    }
    for (size_t i = 0; i < m->n_function && !d->failed; i++) {
        const Perftools__Profiles__Function *f = m->function[i];
        if (!id_add(d, ID_FUNC, f->id, i))
            break;
        fk_prof_add_func(p, str(d, f->name, "function", f->id),
                         str(d, f->system_name, "function", f->id),
                         str(d, f->filename, "function", f->id), f->start_line);
    }
    for (size_t i = 0; i < m->n_location && !d->failed; i++)
        if (!id_add(d, ID_LOC, m->location[i]->id, i))
            break;
    for (size_t i = 0; i < m->n_location && !d->failed; i++) {
        const Perftools__Profiles__Location *l = m->location[i];
        uint32_t map = l->mapping_id ? id_get(d, ID_MAP, l->mapping_id, m->n_mapping, "location",
                                              l->id) : 0;
        if (d->failed)
            break;
        fk_prof_add_loc(p, map, l->address);
        p->locs[p->nlocs - 1].folded = l->is_folded;
        if (l->n_line > UINT32_MAX / 2)
            return bad(d, "location %llu has too many lines", (unsigned long long)l->id);
        for (size_t k = 0; k < l->n_line && !d->failed; k++) {
            uint32_t f = id_get(d, ID_FUNC, l->line[k]->function_id, m->n_function, "location",
                                l->id);
            if (f)
                fk_prof_add_line(p, f, l->line[k]->line);
        }
    }
    uint64_t *ids = NULL;
    size_t capids = 0;
    for (size_t i = 0; i < m->n_sample && !d->failed; i++) {
        const Perftools__Profiles__Sample *s = m->sample[i];
        if (s->n_value != p->ntypes) {
            bad(d, "sample %zu has %zu values for %zu sample types", i + 1, s->n_value, p->ntypes);
            break;
        }
        if (s->n_location_id > UINT32_MAX / 2) {
            bad(d, "sample %zu has too many locations", i + 1);
            break;
        }
        ids = fk_grow(ids, &capids, s->n_location_id + 1, sizeof *ids);
        for (size_t k = 0; k < s->n_location_id && !d->failed; k++)
            ids[k] = id_get(d, ID_LOC, s->location_id[k], m->n_location, "sample", i + 1);
        if (d->failed)
            break;
        fk_prof_add_sample(p, ids, s->n_location_id, s->value);
        for (size_t k = 0; k < s->n_label && !d->failed; k++) {
            const Perftools__Profiles__Label *lb = s->label[k];
            fk_prof_add_label(p, str(d, lb->key, "label of sample", i + 1),
                              str(d, lb->str, "label of sample", i + 1), lb->num,
                              str(d, lb->num_unit, "label of sample", i + 1));
        }
    }
    free(ids);
    return !d->failed;
}

bool fk_pprof_decode(const void *data, size_t len, const char *name,
                     const struct fk_pprof_limits *lim, struct fk_prof *p, char *err,
                     size_t errlen)
{
    fk_prof_init(p);
    size_t max_input = lim && lim->max_input ? lim->max_input : FK_PPROF_MAX_INPUT;
    size_t max_mem = lim && lim->max_mem ? lim->max_mem : FK_PPROF_MAX_MEM;
    if (len > max_input) {
        snprintf(err, errlen, "%s: pprof profile of %zu MB is above the %zu MB limit; cut it "
                 "down first (e.g. go tool pprof -proto -focus=REGEX)", name, len >> 20,
                 max_input >> 20);
        return false;
    }
    bool cut;
    size_t at = 0;
    long n = walk(data, len, M_NONE, 0, &cut, &at);
    if (cut) {
        snprintf(err, errlen, "%s: pprof profile is truncated (the field at byte %zu runs past "
                 "the end, %zu bytes); fetch or copy it again", name, at, len);
        return false;
    }
    if (n < 0) {
        snprintf(err, errlen, "%s: not a pprof profile (bad protobuf data at byte %zu)", name,
                 at);
        return false;
    }
    struct budget b = { 0, max_mem, false };
    ProtobufCAllocator alloc = { budget_alloc, budget_free, &b };
    Perftools__Profiles__Profile *m =
        perftools__profiles__profile__unpack(&alloc, len, (const uint8_t *)data);
    if (!m) {
        if (b.exceeded)
            snprintf(err, errlen, "%s: decoding this pprof profile needs more than %zu MB of "
                     "memory; cut it down first (e.g. go tool pprof -proto -focus=REGEX)", name,
                     max_mem >> 20);
        else
            snprintf(err, errlen, "%s: not a pprof profile (its protobuf data does not decode "
                     "as a perftools.profiles.Profile)", name);
        return false;
    }
    struct dec d = { .name = name, .err = err, .errlen = errlen, .m = m, .p = p };
    bool ok = copy(&d);
    for (int w = 0; w < 3; w++)
        fk_stacktab_free(&d.ids[w]);
    free(d.str);
    perftools__profiles__profile__free_unpacked(m, &alloc);
    return ok;
}
