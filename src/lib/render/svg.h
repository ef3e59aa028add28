/* SPDX-License-Identifier: GPL-2.0-only */
/* Interactive SVG flame graphs from a stack table. The SVG carries its own
 * script and style (share/flamegraph.{js,css}, compiled in), so one file is
 * all a user needs; every name from the input is escaped as text. */
#ifndef FK_RENDER_SVG_H
#define FK_RENDER_SVG_H

#include "stacks/stacktab.h"
#include "util/outfile.h"

#include <jansson.h>

struct fk_svg_opts {
    const char *title;      /* default "Flame Graph" ("Icicle Graph" inverted,
                               "Differential Flame Graph" with diff) */
    const char *subtitle;   /* NULL: none */
    const char *countname;  /* default "samples"; "ns", "us", "ms" or "s": the
                               counts are times, shown as durations (12.5 ms) */
    const char *nametype;   /* default "Function:" (status-bar prefix) */
    const char *colors;     /* palette: hot (default), mem, io, java, js, perl,
                               red, green, blue, aqua, yellow, purple, orange,
                               wakeup, chain, cold (off-CPU: blue; frames above
                               "--", the wakers, aqua; above "[on-CPU]" warm);
                               fk_svg_palette_ok() checks */
    int width;              /* image width in px, default 1200 */
    int height;             /* frame height in px, default 16 */
    double minwidth;        /* prune frames narrower than this, default 0.1 */
    bool minwidth_pct;      /* minwidth is a percentage of the total width */
    bool hash;              /* colour by name hash (the default; kept for
                               flamegraph.pl compatibility) */
    bool rand;              /* vary colour per frame (seeded: deterministic) */
    bool inverted;          /* icicle graph: root at the top */
    bool reverse;           /* reverse every stack before merging */
    bool flamechart;        /* keep input order, merge only adjacent stacks;
                               pass an insertion-ordered table */
    bool full_names;        /* show names as they are; default: the short form
                               (fk_name_short: no C++ parameter lists, clone
                               suffixes, Rust hashes), full names kept for the
                               script's details line */
    const char *notes;      /* free text embedded as <desc>, may be NULL */
    const json_t *metadata; /* JSON object shown in the Info panel, may be NULL */
    /* Differential: t->v[i].count is BEFORE, .count2 is AFTER. Width from
     * AFTER, colour from AFTER - BEFORE (red grew, blue shrank). */
    bool diff;
    bool negate;            /* width from BEFORE, colours swapped */
    bool normalize;         /* scale BEFORE to AFTER's total first (with negate:
                               AFTER to BEFORE's) */
};

void fk_svg_opts_init(struct fk_svg_opts *o);
/* True if name is a palette we know. */
bool fk_svg_palette_ok(const char *name);

/* Where bytes go: returns false on error (rendering stops). */
typedef bool (*fk_svg_sink)(void *ctx, const void *data, size_t len);

/* Render t (t->v[i].count, plus count2 with diff) as SVG through sink. An
 * empty table gives a valid SVG saying there were no samples. Returns false
 * only if the sink failed. Does not modify t. */
bool fk_svg_render(const struct fk_stacktab *t, const struct fk_svg_opts *o,
                   fk_svg_sink sink, void *ctx);
/* Same, into an open fk_outfile (the caller commits or aborts it). */
bool fk_svg_write(struct fk_outfile *out, const struct fk_stacktab *t,
                  const struct fk_svg_opts *o);

/* The same from stacks given one at a time, which are not kept (only the
 * frame tree is): for input too big to hold as a table. Stacks merge as
 * in a table, except with flamechart (adjacent ones only: pass a table).
 * o must stay valid until render. */
struct fk_svg_builder;
/* "N" pixels or "N%" of the width (at most 100 %, 1e6 px) into o's
 * minwidth; false when s is neither. */
bool fk_svg_minwidth_parse(const char *s, struct fk_svg_opts *o);
struct fk_svg_builder *fk_svg_builder_new(const struct fk_svg_opts *o);
void fk_svg_builder_add(struct fk_svg_builder *b, const char *stack, size_t len, uint64_t count,
                        uint64_t count2);
/* A folded reader's callback (stacks/folded.h fk_folded_fn): ctx is the
 * builder. */
void fk_svg_builder_add_folded(void *ctx, const char *stack, size_t len, uint64_t count,
                               uint64_t count2, bool has2);
/* Every stack of t, in its order (--flamechart merges adjacent ones). */
void fk_svg_builder_add_table(struct fk_svg_builder *b, const struct fk_stacktab *t);
/* The sum of the counts added so far (capped at 2^64-1: *overflow). */
uint64_t fk_svg_builder_total(const struct fk_svg_builder *b, bool *overflow);
/* Render once (as fk_svg_render); false only if the sink failed. */
bool fk_svg_builder_render(struct fk_svg_builder *b, fk_svg_sink sink, void *ctx);
bool fk_svg_builder_write(struct fk_outfile *out, struct fk_svg_builder *b);
void fk_svg_builder_free(struct fk_svg_builder *b);

#endif
