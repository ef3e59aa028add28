/* SPDX-License-Identifier: GPL-2.0-only */
/* The SVG option set and the read/render/write steps of 'flamekit svg' and
 * 'flamekit diff' (svg-cli.h). */
#include "svg-cli.h"

#include "util/result.h"
#include "term.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SC(field) offsetof(struct fk_svg_cli, field)

static bool parse_minwidth(void *base, const char *val, char *err, size_t n)
{
    struct fk_svg_cli *c = base;
    if (!fk_svg_minwidth_parse(val, &c->opts)) {
        snprintf(err, n, "pixels (e.g. 0.1) or a percentage (e.g. 0.5%%)");
        return false;
    }
    return true;
}

static bool parse_countname(void *base, const char *val, char *err, size_t n)
{
    struct fk_svg_cli *c = base;
    if (strpbrk(val, "()")) {
        snprintf(err, n, "a name without parentheses");
        return false;
    }
    c->opts.countname = val;
    c->countname_set = true;
    return true;
}

static bool parse_colors(void *base, const char *val, char *err, size_t n)
{
    struct fk_svg_cli *c = base;
    if (!fk_svg_palette_ok(val)) {
        snprintf(err, n, "a palette: hot, mem, io, java, js, perl, red, green, blue, aqua, "
                 "yellow, purple, orange, wakeup or chain");
        return false;
    }
    c->opts.colors = val;
    return true;
}

const struct fk_opt fk_optset_svg[] = {
    { "output", 'o', FK_OPT_STR, SC(output), "FILE", "write the SVG to FILE (atomically; default stdout)", "out.svg" },
    { "title", 0, FK_OPT_STR, SC(opts.title), "TEXT", "title (default \"Flame Graph\")", "'db1 at peak'" },
    { "subtitle", 0, FK_OPT_STR, SC(opts.subtitle), "TEXT", "second title line", "'60 s, 99 Hz'" },
    { "width", 0, FK_OPT_INT, SC(opts.width), "PX", "image width (default 1200)", "1200", .min = 100, .max = 1000000 },
    { "height", 0, FK_OPT_INT, SC(opts.height), "PX", "frame height (default 16)", "16", .min = 2, .max = 1000 },
    { "minwidth", 0, FK_OPT_CALL, 0, "N[%]",
      "omit frames narrower than N pixels or N% of the width (default 0.1 pixels, like flamegraph.pl)",
      "0.5%", .call = parse_minwidth },
    { "colors", 0, FK_OPT_CALL, 0, "NAME",
      "palette: hot (default), mem, io, java, js, perl, red, green, blue, aqua, yellow, purple, "
      "orange, wakeup, chain, cold (off-CPU; on-CPU warm)", "mem", .call = parse_colors },
    { "colours", 0, FK_OPT_CALL, 0, "NAME", NULL, "mem", .call = parse_colors },
    { "hash", 0, FK_OPT_FLAG, SC(opts.hash), NULL, "colour by name (the default: same name, same colour)" },
    { "rand", 0, FK_OPT_FLAG, SC(opts.rand), NULL, "vary colours per frame (still reproducible)" },
    { "countname", 0, FK_OPT_CALL, 0, "TEXT", "unit of the counts in tooltips (default \"samples\"; ns, us, ms or s: shown as durations)", "faults",
      .call = parse_countname },
    { "nametype", 0, FK_OPT_STR, SC(opts.nametype), "TEXT", "status-bar prefix (default \"Function:\")", "Frame:" },
    { "inverted", 0, FK_OPT_FLAG, SC(opts.inverted), NULL, "icicle graph: roots at the top" },
    { "reverse", 0, FK_OPT_FLAG, SC(opts.reverse), NULL, "reverse each stack (callers on top)" },
    { "flamechart", 0, FK_OPT_FLAG, SC(opts.flamechart), NULL, "keep input order, merge only adjacent stacks" },
    { "notes", 0, FK_OPT_STR, SC(opts.notes), "TEXT", "notes embedded in the SVG", "'after the fix'" },
    { "metadata", 0, FK_OPT_STR, SC(metadata_path), "FILE", "JSON object shown in the SVG's Info panel (key i)", "capture.json" },
    { "names", 0, FK_OPT_CHOICE, SC(names), "short|full",
      "C++/Rust names without parameter lists, [clone ...] and hashes (short, the default; "
      "the full names stay in the tooltip) or as they are (full)", "full", .choices = "short|full" },
    { "strict", 0, FK_OPT_FLAG, SC(strict), NULL, "fail on malformed input lines instead of skipping them" },
    { "sample-type", 0, FK_OPT_STR, SC(sample_type), "T",
      "pprof input: the sample type to draw, by name or index (e.g. inuse_space; default: the "
      "profile's last, like pprof)", "inuse_space" },
    { NULL },
};

const struct fk_opt fk_optset_diff[] = {
    { "normalize", 0, FK_OPT_FLAG, SC(opts.normalize), NULL,
      "scale BEFORE to AFTER's total first (compare shapes of profiles of different length)" },
    { "normalise", 0, FK_OPT_FLAG, SC(opts.normalize), NULL, NULL },
    { "negate", 0, FK_OPT_FLAG, SC(opts.negate), NULL,
      "widths from BEFORE, colours inverted (red = shrank): shows what disappeared" },
    { NULL },
};

void fk_svg_cli_init(struct fk_svg_cli *c, bool diff)
{
    memset(c, 0, sizeof *c);
    fk_svg_opts_init(&c->opts);
    c->output = "-";
    c->opts.diff = diff;
}

int fk_svg_cli_finish(struct fk_svg_cli *c)
{
    c->opts.full_names = c->names == 1;
    char err[512];
    if (c->metadata_path && !(c->opts.metadata = c->metadata =
                              fk_result_meta_object(c->metadata_path, err, sizeof err))) {
        fk_error("%s", err);
        return FK_EXIT_ERROR;
    }
    return FK_OPT_CONTINUE;
}

/* Read path's stacks into fn; reports as fk_svg_cli_read. */
static bool read_stacks(struct fk_svg_cli *c, const char *path, fk_folded_fn fn, void *ctx)
{
    struct fk_parse_stats st;
    memset(&st, 0, sizeof st);
    struct fk_input_opts io = { .sample_type = c->sample_type, .two_counts = c->two_counts,
                                .warn = fk_warn_line };
    struct fk_input_info info;
    char msg[512];
    bool ok = fk_input_foreach(path, &io, &st, fn, ctx, &info, msg, sizeof msg);
    /* pprof: the sample type's unit names the counts unless --countname did */
    const char *cn;
    if (ok && info.pprof && !c->countname_set &&
        (cn = fk_input_countname(&info, c->countname_buf, sizeof c->countname_buf)))
        c->opts.countname = cn;
    if (ok)
        ok = fk_parse_stats_report(&st, strcmp(path, "-") ? path : "stdin", c->strict, msg,
                                   sizeof msg);
    if (!ok)
        fk_error("%s", msg);
    else if (msg[0])
        fk_warn("%s", msg);
    fk_parse_stats_free(&st);
    return ok;
}

static void warn_capped(const char *path)
{
    fk_warn("%s: some counts add up beyond 2^64 and were capped", strcmp(path, "-") ? path : "stdin");
}

bool fk_svg_cli_read(struct fk_svg_cli *c, const char *path, struct fk_stacktab *t)
{
    bool ok = read_stacks(c, path, fk_folded_to_table, t);
    if (ok && t->overflow)
        warn_capped(path);
    return ok;
}

/* Open c->output, render into it, commit; false (reported) on failure. */
static bool write_svg(struct fk_svg_cli *c, const struct fk_stacktab *t, struct fk_svg_builder *b)
{
    struct fk_outfile out;
    char err[512];
    bool ok = fk_outfile_open(&out, c->output, 0644, err, sizeof err);
    if (ok && !(b ? fk_svg_builder_write(&out, b) : fk_svg_write(&out, t, &c->opts))) {
        fk_error("%s: write failed: %s", strcmp(c->output, "-") ? c->output : "stdout",
                 strerror(errno));
        fk_outfile_abort(&out);
        return false;
    }
    if (ok && fk_outfile_commit(&out, err, sizeof err))
        return true;
    fk_error("%s", err);
    return false;
}

bool fk_svg_cli_write(struct fk_svg_cli *c, const struct fk_stacktab *t)
{
    return write_svg(c, t, NULL);
}

bool fk_svg_cli_draw(struct fk_svg_cli *c, const char *path)
{
    struct fk_svg_builder *b = fk_svg_builder_new(&c->opts);
    bool ok, capped = false;
    if (c->opts.flamechart) {
        /* it merges adjacent stacks only, of the input's distinct stacks
         * in first-seen order: those of a table */
        struct fk_stacktab t;
        fk_stacktab_init(&t);
        if ((ok = read_stacks(c, path, fk_folded_to_table, &t)))
            fk_svg_builder_add_table(b, &t);
        capped = t.overflow;
        fk_stacktab_free(&t);
    } else {
        ok = read_stacks(c, path, fk_svg_builder_add_folded, b);
    }
    bool capped_sum;
    uint64_t total = fk_svg_builder_total(b, &capped_sum);
    if (ok && (capped || capped_sum))
        warn_capped(path);
    if (ok && !total) {
        fk_error("%s: no stacks with a count above zero; nothing to draw (input should be "
                 "folded lines like 'main;f;g 12')", strcmp(path, "-") ? path : "stdin");
        ok = false;
    }
    if (ok)
        ok = write_svg(c, NULL, b);
    fk_svg_builder_free(b);
    return ok;
}

void fk_svg_cli_free(struct fk_svg_cli *c)
{
    if (c->metadata)
        json_decref(c->metadata);
    c->metadata = NULL;
}
