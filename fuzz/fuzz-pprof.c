/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: hostile bytes -> the pprof reader. Whatever the input,
 * the sniffer and decoder must not crash or overrun their limits; a profile
 * they accept must keep the structured profile's invariants (every
 * reference in range), fold, and survive a round trip: encoded again by the
 * pprof writer and decoded, it must fold to the very same stacks. */
#include "fuzz.h"
#include "render/pprof.h"
#include "stacks/pprof-read.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

static const struct fk_pprof_limits lim = { 1u << 20, 64u << 20 };
#define FOLD_MAX (16u << 20)

static void check_invariants(const struct fk_prof *p)
{
    size_t ns = p->strs.n;
    if (!ns || p->strs.v[0].len)
        abort();
    for (size_t i = 0; i < p->ntypes; i++)
        if (p->types[i].type >= ns || p->types[i].unit >= ns)
            abort();
    for (size_t i = 0; i < p->nmaps; i++)
        if (p->maps[i].file >= ns || p->maps[i].build_id >= ns)
            abort();
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].name >= ns || p->funcs[i].system_name >= ns || p->funcs[i].file >= ns)
            abort();
    for (size_t i = 0; i < p->nlocs; i++) {
        const struct fk_prof_loc *l = &p->locs[i];
        if (l->mapping > p->nmaps || (size_t)l->line0 + l->nlines > p->nlines)
            abort();
    }
    for (size_t i = 0; i < p->nlines; i++)
        if (!p->lines[i].func || p->lines[i].func > p->nfuncs)
            abort();
    for (size_t i = 0; i < p->nsamples; i++) {
        const struct fk_prof_sample *s = &p->samples[i];
        if (s->loc0 + s->nlocs > p->nlocids || s->label0 + s->nlabels > p->nlabels)
            abort();
        for (uint32_t k = 0; k < s->nlocs; k++)
            if (!p->locids[s->loc0 + k] || p->locids[s->loc0 + k] > p->nlocs)
                abort();
    }
    for (size_t i = 0; i < p->nlabels; i++)
        if (p->labels[i].key >= ns || p->labels[i].str >= ns || p->labels[i].unit >= ns)
            abort();
}

static bool same(const struct fk_stacktab *a, const struct fk_stacktab *b)
{
    if (a->n != b->n || a->total != b->total)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const struct fk_stack *e = fk_stacktab_find(b, a->v[i].key, a->v[i].len);
        if (!e || e->count != a->v[i].count)
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t n = 0; n <= size && n < 64; n += 7)
        (void)fk_pprof_sniff(data, n, n == size);
    (void)fk_pprof_sniff(data, size, true);

    struct fk_prof p;
    char err[512] = "";
    bool decoded = fk_pprof_decode(data, size, "fuzz", &lim, &p, err, sizeof err);
    if (!decoded && strncmp(err, "fuzz: ", 6))
        abort();    /* a refusal always says why, naming the input */
    if (decoded) {
        check_invariants(&p);
        for (size_t t = 0; t < p.ntypes; t++) {
            struct fk_stacktab a, b;
            fk_stacktab_init(&a);
            fk_stacktab_init(&b);
            bool fa = fk_prof_fold(&p, (int)t, FOLD_MAX, &a, NULL);
            struct fk_buf enc = FK_BUF_INIT;
            if (fa) {
                fk_pprof_encode(&p, NULL, &enc);
                struct fk_prof q;
                struct fk_pprof_limits big = { 64u << 20, 512u << 20 };
                if (!fk_pprof_decode(enc.data, enc.len, "round trip", &big, &q, err, sizeof err))
                    abort();
                check_invariants(&q);
                if (!fk_prof_fold(&q, (int)t, FOLD_MAX * 2, &b, NULL) || !same(&a, &b))
                    abort();
                fk_prof_free(&q);
            }
            fk_buf_free(&enc);
            fk_stacktab_free(&a);
            fk_stacktab_free(&b);
            if (t >= 3)
                break;
        }
    }
    fk_prof_free(&p);
    return 0;
}
