/* SPDX-License-Identifier: GPL-2.0-only */
/* The structured profile (see prof.h): building it, choosing a sample type,
 * and folding it into stacks. */
#include "prof.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

void fk_prof_init(struct fk_prof *p)
{
    memset(p, 0, sizeof *p);
    fk_stacktab_init(&p->strs);
    fk_stacktab_add(&p->strs, "", 0, 0);
}

void fk_prof_free(struct fk_prof *p)
{
    fk_stacktab_free(&p->strs);
    free(p->types);
    free(p->comments);
    free(p->maps);
    free(p->funcs);
    free(p->locs);
    free(p->lines);
    free(p->samples);
    free(p->locids);
    free(p->vals);
    free(p->labels);
    memset(p, 0, sizeof *p);
}

size_t fk_prof_bytes(const struct fk_prof *p)
{
    return fk_stacktab_bytes(&p->strs) + p->ntypes * sizeof *p->types +
           p->capcomments * sizeof *p->comments + p->capmaps * sizeof *p->maps +
           p->capfuncs * sizeof *p->funcs + p->caplocs * sizeof *p->locs +
           p->caplines * sizeof *p->lines + p->capsamples * sizeof *p->samples +
           p->caplocids * sizeof *p->locids + p->capvals * sizeof *p->vals +
           p->caplabels * sizeof *p->labels;
}

uint32_t fk_prof_str(struct fk_prof *p, const char *s, size_t len)
{
    const char *nul = memchr(s, '\0', len);
    if (nul)
        len = (size_t)(nul - s);
    struct fk_stack *e = fk_stacktab_add(&p->strs, s, len, 0);
    return (uint32_t)(e - p->strs.v);
}

void fk_prof_add_type(struct fk_prof *p, const char *type, const char *unit)
{
    if (p->nsamples)
        fk_die("internal error: sample type added after samples");
    p->types = fk_realloc(p->types, (p->ntypes + 1) * sizeof *p->types);
    p->types[p->ntypes].type = fk_prof_strz(p, type);
    p->types[p->ntypes].unit = fk_prof_strz(p, unit);
    p->ntypes++;
}

void fk_prof_add_comment(struct fk_prof *p, const char *text)
{
    p->comments = fk_grow(p->comments, &p->capcomments, p->ncomments + 1, sizeof *p->comments);
    p->comments[p->ncomments++] = fk_prof_strz(p, text);
}

uint32_t fk_prof_add_mapping(struct fk_prof *p, const struct fk_prof_mapping *m)
{
    p->maps = fk_grow(p->maps, &p->capmaps, p->nmaps + 1, sizeof *p->maps);
    p->maps[p->nmaps++] = *m;
    return (uint32_t)p->nmaps;
}

uint32_t fk_prof_add_func(struct fk_prof *p, uint32_t name, uint32_t system_name, uint32_t file,
                          int64_t start_line)
{
    p->funcs = fk_grow(p->funcs, &p->capfuncs, p->nfuncs + 1, sizeof *p->funcs);
    p->funcs[p->nfuncs++] = (struct fk_prof_func){ name, system_name, file, start_line };
    return (uint32_t)p->nfuncs;
}

uint32_t fk_prof_add_loc(struct fk_prof *p, uint32_t mapping, uint64_t addr)
{
    p->locs = fk_grow(p->locs, &p->caplocs, p->nlocs + 1, sizeof *p->locs);
    p->locs[p->nlocs++] = (struct fk_prof_loc){ addr, mapping, (uint32_t)p->nlines, 0, false };
    return (uint32_t)p->nlocs;
}

void fk_prof_add_line(struct fk_prof *p, uint32_t func, int64_t line)
{
    if (!p->nlocs || p->nlines >= UINT32_MAX)
        fk_die("internal error: line without a location");
    p->lines = fk_grow(p->lines, &p->caplines, p->nlines + 1, sizeof *p->lines);
    p->lines[p->nlines++] = (struct fk_prof_line){ func, line };
    p->locs[p->nlocs - 1].nlines++;
}

void fk_prof_add_sample(struct fk_prof *p, const uint64_t *locids, size_t n, const int64_t *vals)
{
    if (n > UINT32_MAX)
        fk_die("internal error: sample with %zu locations", n);
    p->samples = fk_grow(p->samples, &p->capsamples, p->nsamples + 1, sizeof *p->samples);
    p->locids = fk_grow(p->locids, &p->caplocids, p->nlocids + n, sizeof *p->locids);
    p->vals = fk_grow(p->vals, &p->capvals, (p->nsamples + 1) * p->ntypes, sizeof *p->vals);
    p->samples[p->nsamples] = (struct fk_prof_sample){ p->nlocids, (uint32_t)n, 0, p->nlabels };
    if (n)
        memcpy(p->locids + p->nlocids, locids, n * sizeof *locids);
    p->nlocids += n;
    if (p->ntypes)
        memcpy(p->vals + p->nsamples * p->ntypes, vals, p->ntypes * sizeof *vals);
    p->nsamples++;
}

void fk_prof_add_sample_like(struct fk_prof *p, size_t like, const int64_t *vals)
{
    if (like >= p->nsamples)
        fk_die("internal error: sample like %zu of %zu", like, p->nsamples);
    p->samples = fk_grow(p->samples, &p->capsamples, p->nsamples + 1, sizeof *p->samples);
    p->vals = fk_grow(p->vals, &p->capvals, (p->nsamples + 1) * p->ntypes, sizeof *p->vals);
    const struct fk_prof_sample *l = &p->samples[like];
    p->samples[p->nsamples] = (struct fk_prof_sample){ l->loc0, l->nlocs, 0, p->nlabels };
    if (p->ntypes)
        memcpy(p->vals + p->nsamples * p->ntypes, vals, p->ntypes * sizeof *vals);
    p->nsamples++;
}

void fk_prof_add_label(struct fk_prof *p, uint32_t key, uint32_t str, int64_t num, uint32_t unit)
{
    if (!p->nsamples)
        fk_die("internal error: label without a sample");
    p->labels = fk_grow(p->labels, &p->caplabels, p->nlabels + 1, sizeof *p->labels);
    p->labels[p->nlabels++] = (struct fk_prof_label){ key, str, unit, num };
    p->samples[p->nsamples - 1].nlabels++;
}

/* "libc.so.6", "x.so", "[vdso]", "": not a program's main executable. */
static bool lib_or_pseudo(const char *f)
{
    if (!*f || *f == '[')
        return true;
    for (const char *q = strstr(f, ".so"); q; q = strstr(q + 1, ".so"))
        if (!q[3] || ((q[3] == '.' || q[3] == '_') && q[4] >= '0' && q[4] <= '9'))
            return true;
    return false;
}

void fk_prof_main_mapping_first(struct fk_prof *p)
{
    if (p->nmaps < 2 || !p->ntypes)
        return;
    uint64_t *w = fk_calloc(p->nmaps, sizeof *w);
    for (size_t s = 0; s < p->nsamples; s++) {
        const struct fk_prof_sample *sm = &p->samples[s];
        int64_t v = fk_prof_vals(p, s)[0];
        for (uint32_t k = 0; k < sm->nlocs && v > 0; k++) {
            uint32_t m = p->locs[p->locids[sm->loc0 + k] - 1].mapping;
            if (m)
                w[m - 1] += (uint64_t)v;
        }
    }
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < p->nmaps; i++)
        if (w[i] && !lib_or_pseudo(fk_prof_s(p, p->maps[i].file)) &&
            (best == SIZE_MAX || w[i] > w[best]))
            best = i;
    free(w);
    if (best == SIZE_MAX || best == 0)
        return;
    struct fk_prof_mapping t = p->maps[0];
    p->maps[0] = p->maps[best];
    p->maps[best] = t;
    for (size_t i = 0; i < p->nlocs; i++)
        if (p->locs[i].mapping == 1)
            p->locs[i].mapping = (uint32_t)best + 1;
        else if (p->locs[i].mapping == best + 1)
            p->locs[i].mapping = 1;
}

static bool str_is(const struct fk_prof *p, uint32_t i, const char *s)
{
    size_t n = strlen(s);
    return fk_prof_slen(p, i) == n && !memcmp(fk_prof_s(p, i), s, n);
}

int fk_prof_type_index(const struct fk_prof *p, const char *want)
{
    if (!p->ntypes)
        return -1;
    if (!want || !*want) {
        if (p->default_type)
            for (size_t i = 0; i < p->ntypes; i++)
                if (p->types[i].type == p->default_type ||
                    str_is(p, p->types[i].type, fk_prof_s(p, p->default_type)))
                    return (int)i;
        return (int)p->ntypes - 1;
    }
    for (size_t i = 0; i < p->ntypes; i++)
        if (str_is(p, p->types[i].type, want))
            return (int)i;
    uint64_t n;
    if (fk_parse_u64(want, &n) && n < p->ntypes)
        return (int)n;
    return -1;
}

char *fk_prof_type_list(const struct fk_prof *p)
{
    struct fk_buf b = FK_BUF_INIT;
    for (size_t i = 0; i < p->ntypes; i++)
        fk_buf_printf(&b, "%s%s (%s)", i ? ", " : "", fk_prof_s(p, p->types[i].type),
                      fk_prof_s(p, p->types[i].unit));
    if (!b.len)
        fk_buf_adds(&b, "none");
    char *s = fk_strdup(fk_buf_cstr(&b));
    fk_buf_free(&b);
    return s;
}

void fk_prof_frame_sanitize(char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == ';')
            s[i] = ':';
        else if (s[i] == '\n' || s[i] == '\r' || s[i] == '\t')
            s[i] = ' ';
}

/* A location's frames, caller first, ';'-separated: text appended to b. */
static void loc_frames(const struct fk_prof *p, const struct fk_prof_loc *l, struct fk_buf *b)
{
    size_t start = b->len;
    for (uint32_t k = l->nlines; k-- > 0;) {
        const struct fk_prof_line *ln = &p->lines[l->line0 + k];
        const struct fk_prof_func *f = ln->func ? &p->funcs[ln->func - 1] : NULL;
        uint32_t name = f ? (f->name ? f->name : f->system_name) : 0;
        if (b->len > start)
            fk_buf_addc(b, ';');
        size_t ns = b->len;
        if (name)
            fk_buf_add(b, fk_prof_s(p, name), fk_prof_slen(p, name));
        else
            fk_buf_adds(b, "[unknown]");
        fk_prof_frame_sanitize(b->data + ns, b->len - ns);
    }
    if (b->len > start)
        return;
    const struct fk_prof_mapping *m = l->mapping ? &p->maps[l->mapping - 1] : NULL;
    if (m && m->file) {
        const char *f = fk_prof_s(p, m->file), *base = strrchr(f, '/');
        fk_buf_printf(b, "[%s+0x%llx]", base && base[1] ? base + 1 : f,
                      (unsigned long long)(l->addr - m->start + m->offset));
        fk_prof_frame_sanitize(b->data + start, b->len - start);
    } else {
        fk_buf_adds(b, "[unknown]");
    }
}

bool fk_prof_fold(const struct fk_prof *p, int type, size_t max_bytes, struct fk_stacktab *out,
                  uint64_t *skipped)
{
    /* each location's text once: stacks share locations */
    struct fk_buf text = FK_BUF_INIT, key = FK_BUF_INIT;
    size_t *off = fk_malloc((p->nlocs + 1) * sizeof *off);
    for (size_t i = 0; i < p->nlocs; i++) {
        off[i] = text.len;
        loc_frames(p, &p->locs[i], &text);
    }
    off[p->nlocs] = text.len;
    uint32_t comm_key = 0;
    for (uint32_t i = 1; i < p->strs.n && !comm_key; i++)
        if (str_is(p, i, "comm"))
            comm_key = i;
    bool ok = true;
    uint64_t skip = 0;
    for (size_t s = 0; s < p->nsamples && ok; s++) {
        const struct fk_prof_sample *sm = &p->samples[s];
        int64_t v = fk_prof_vals(p, s)[type];
        if (v <= 0) {
            skip += v < 0;
            continue;
        }
        fk_buf_reset(&key);
        for (uint32_t k = 0; comm_key && k < sm->nlabels; k++) {
            const struct fk_prof_label *lb = &p->labels[sm->label0 + k];
            if (lb->key == comm_key && lb->str) {
                fk_buf_add(&key, fk_prof_s(p, lb->str), fk_prof_slen(p, lb->str));
                fk_prof_frame_sanitize(key.data, key.len);
                break;
            }
        }
        /* the key's length first, then its frames copied into one
         * reservation (a deep stack is tens of frames) */
        size_t len = key.len;
        for (uint32_t k = sm->nlocs; k-- > 0;) {
            uint64_t id = p->locids[sm->loc0 + k];
            len += (len > 0) + (off[id] - off[id - 1]);
        }
        ok = len <= max_bytes;
        if (ok && len > key.len) {
            fk_buf_reserve(&key, len - key.len);
            char *d = key.data + key.len;
            for (uint32_t k = sm->nlocs; k-- > 0;) {
                uint64_t id = p->locids[sm->loc0 + k];
                if (d > key.data)
                    *d++ = ';';
                memcpy(d, text.data + off[id - 1], off[id] - off[id - 1]);
                d += off[id] - off[id - 1];
            }
            key.len = len;
        }
        if (!key.len)
            fk_buf_adds(&key, "[no stack]");
        if (!ok || fk_stacktab_bytes(out) + key.len > max_bytes) {
            ok = false;
            break;
        }
        fk_stacktab_add(out, key.data, key.len, (uint64_t)v);
    }
    if (skipped)
        *skipped = skip;
    free(off);
    fk_buf_free(&text);
    fk_buf_free(&key);
    return ok;
}
