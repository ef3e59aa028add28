/* SPDX-License-Identifier: GPL-2.0-only */
/* Format detection and reading of stack input (see input.h). */
#include "input.h"

#include <stdlib.h>
#include <string.h>

/* How much decompressed input decides the format. */
#define SNIFF_BYTES (64u << 10)
#define SNIFF_MORE (16u << 20)
/* Folded text a pprof profile may expand to. */
#define FOLD_MAX_BYTES (1024u << 20)

/* Text has next to no control bytes; ELF, images and archives have many. */
static bool looks_binary(const unsigned char *d, size_t n)
{
    size_t ctl = 0;
    for (size_t i = 0; i < n; i++) {
        if (!d[i])
            return true;
        if ((d[i] < 0x20 && d[i] != '\t' && d[i] != '\n' && d[i] != '\r' && d[i] != '\f' &&
             d[i] != '\v' && d[i] != 0x1b) || d[i] == 0x7f)
            ctl++;
    }
    return ctl * 10 >= n && n;
}

enum fk_input_kind fk_input_open(struct fk_lineread *r, const char *path, bool *binary)
{
    if (binary)
        *binary = false;
    if (!fk_lineread_open(r, path))
        return FK_INPUT_ERROR;
    size_t n;
    bool eof;
    const char *d = fk_lineread_peek(r, SNIFF_BYTES, &n, &eof);
    int s = d ? fk_pprof_sniff(d, n, eof) : 0;
    if (d && s < 0) {
        d = fk_lineread_peek(r, SNIFF_MORE, &n, &eof);
        s = d ? fk_pprof_sniff(d, n, eof) : 0;
    }
    if (!d) {
        fk_lineread_close(r);
        return FK_INPUT_ERROR;
    }
    if (s > 0)
        return FK_INPUT_PPROF;
    if (binary)
        *binary = looks_binary((const unsigned char *)d, n < SNIFF_BYTES ? n : SNIFF_BYTES);
    return FK_INPUT_TEXT;
}

bool fk_input_pprof(struct fk_lineread *r, const struct fk_input_opts *o, struct fk_stacktab *t,
                    struct fk_input_info *info)
{
    struct fk_input_info dummy;
    if (!info)
        info = &dummy;
    memset(info, 0, sizeof *info);
    info->pprof = true;
    size_t max = o && o->limits.max_input ? o->limits.max_input : FK_PPROF_MAX_INPUT;
    size_t len;
    char *data = fk_lineread_slurp(r, max, &len);
    if (!data)
        return false;
    struct fk_prof p;
    bool ok = fk_pprof_decode(data, len, r->name, o ? &o->limits : NULL, &p, r->error,
                              sizeof r->error);
    free(data);
    if (ok) {
        const char *want = o ? o->sample_type : NULL;
        int ti = fk_prof_type_index(&p, want);
        if (ti < 0) {
            char *list = fk_prof_type_list(&p);
            if (want && *want)
                snprintf(r->error, sizeof r->error, "%s: no sample type '%s' in this profile "
                         "(it has: %s); choose one with --sample-type", r->name, want, list);
            else
                snprintf(r->error, sizeof r->error, "%s: the pprof profile has no sample "
                         "types: nothing to draw", r->name);
            free(list);
            ok = false;
        } else {
            snprintf(info->type, sizeof info->type, "%s", fk_prof_s(&p, p.types[ti].type));
            snprintf(info->unit, sizeof info->unit, "%s", fk_prof_s(&p, p.types[ti].unit));
            if (!fk_prof_fold(&p, ti, FOLD_MAX_BYTES, t, &info->skipped)) {
                snprintf(r->error, sizeof r->error, "%s: this pprof profile unfolds into more "
                         "than %u MB of stacks; cut it down first (e.g. go tool pprof -proto "
                         "-focus=REGEX)", r->name, FOLD_MAX_BYTES >> 20);
                ok = false;
            } else if (info->skipped && o && o->warn) {
                char *msg = fk_asprintf("%s: skipped %llu samples whose %s is negative (a "
                                        "difference profile? draw the two profiles with "
                                        "flamekit diff)", r->name,
                                        (unsigned long long)info->skipped, info->type);
                o->warn(o->warn_ctx, msg);
                free(msg);
            }
        }
    }
    fk_prof_free(&p);
    return ok;
}

bool fk_input_foreach(const char *path, const struct fk_input_opts *o, struct fk_parse_stats *st,
                      fk_folded_fn fn, void *ctx, struct fk_input_info *info, char *err,
                      size_t errlen)
{
    struct fk_lineread r;
    bool binary;
    if (info)
        memset(info, 0, sizeof *info);
    switch (fk_input_open(&r, path, &binary)) {
    case FK_INPUT_ERROR:
        snprintf(err, errlen, "%s", r.error);
        return false;
    case FK_INPUT_TEXT: {
        uint64_t bad0 = st->bad, lines0 = st->lines;
        bool ok = fk_folded_foreach_lines(&r, o && o->two_counts, st, fn, ctx);
        /* binary data, mostly not folded lines: say what it is not, once */
        uint64_t bad = st->bad - bad0, lines = st->lines - lines0;
        if (!ok)
            snprintf(err, errlen, "%s", r.error);
        else if (binary && bad && bad * 2 > lines) {
            snprintf(err, errlen, "%s: binary data that is neither folded stacks nor a pprof "
                     "profile (gzip-compressed or not)", r.name);
            ok = false;
        }
        fk_lineread_close(&r);
        return ok;
    }
    case FK_INPUT_PPROF:
        break;
    }
    struct fk_stacktab t;
    fk_stacktab_init(&t);
    bool ok = fk_input_pprof(&r, o, &t, info);
    if (!ok)
        snprintf(err, errlen, "%s", r.error);
    fk_lineread_close(&r);
    for (size_t i = 0; ok && i < t.n; i++)
        fn(ctx, t.v[i].key, t.v[i].len, t.v[i].count, 0, false);
    fk_stacktab_free(&t);
    return ok;
}

bool fk_input_read(const char *path, const struct fk_input_opts *o, struct fk_stacktab *t,
                   struct fk_parse_stats *st, struct fk_input_info *info, char *err,
                   size_t errlen)
{
    return fk_input_foreach(path, o, st, fk_folded_to_table, t, info, err, errlen);
}

const char *fk_input_countname(const struct fk_input_info *info, char *buf, size_t n)
{
    const char *cn = strcmp(info->unit, "count") && info->unit[0] ? info->unit : info->type;
    size_t k = 0;
    for (const char *q = cn; *q && k + 1 < n; q++)
        if (*q != '(' && *q != ')')
            buf[k++] = *q;
    if (n)
        buf[k] = 0;
    return k ? buf : NULL;
}
