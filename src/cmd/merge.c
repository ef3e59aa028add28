/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit merge: several folded profiles (e.g. one per host) into one, and
 * optionally one SVG of it (stacks/merge.h). */
#include "commands.h"
#include "render/svg.h"
#include "stacks/merge.h"
#include "util/opt.h"
#include "term.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct merge_opts {
    bool prefix;
    const char *out, *svg, *title;
    struct fk_input_opts io;
};

#define MO(field) offsetof(struct merge_opts, field)

static const struct fk_opt merge_optset[] = {
    { "host-prefix", 'p', FK_OPT_FLAG, MO(prefix), NULL,
      "start each stack with a frame naming its host: the HOST of HOST=FILE, else the "
      "HOST of a result name HOST.YYYYMMDD_HHMMSS_UTC.SCOPE... (flamekit-metadata(5)), "
      "else the file name" },
    { "output", 'o', FK_OPT_STR, MO(out), "OUT", "folded output (default stdout; OUT.gz is gzipped)", "all.folded.gz" },
    { "svg", 0, FK_OPT_STR, MO(svg), "OUT.svg", "also render one flame graph of the merged profile", "all.svg" },
    { "title", 0, FK_OPT_STR, MO(title), "TEXT", "the SVG's title (default \"Merged Flame Graph\")", "'all hosts'" },
    { "sample-type", 0, FK_OPT_STR, MO(io.sample_type), "T",
      "pprof inputs: the sample type to merge, by name or index (default: each profile's last, "
      "like pprof)", "inuse_space" },
    { NULL },
};

static const struct fk_cmdline cmdline = {
    "flamekit merge [OPTIONS] FILE|HOST=FILE...",
    "Combine folded profiles or pprof profiles (plain or .gz; '-' = stdin) into one folded profile, "
    "counts of equal stacks summed.",
    "Example: flamekit merge -p --svg all.svg -o all.folded.gz db1.*.folded.gz db2.*.folded.gz",
    NULL,
};

int cmd_merge(int argc, char **argv)
{
    struct merge_opts mo = { .title = "Merged Flame Graph" };
    const struct fk_optsec secs[] = { { "Options", merge_optset, &mo }, { NULL } };
    struct fk_args a;
    int rc = fk_opt_parse(&cmdline, secs, argc, argv, &a);
    if (rc == FK_OPT_CONTINUE && !a.n)
        rc = fk_opt_error("give the folded files to merge (e.g. 'flamekit merge -p a.folded.gz b.folded.gz')");
    if (rc != FK_OPT_CONTINUE) {
        fk_args_free(&a);
        return rc;
    }
    fk_heap_for_batch();
    bool prefix = mo.prefix;
    const char *out = mo.out, *svg = mo.svg, *title = mo.title;
    struct fk_input_opts io = mo.io;
    io.warn = fk_warn_line;
    if (!out)
        out = svg ? NULL : "-";
    if (out && svg && !strcmp(svg, "-") && !strcmp(out, "-")) {
        fk_args_free(&a);
        return fk_opt_error("-o and --svg cannot both be stdout");
    }

    struct fk_stacktab t;
    fk_stacktab_init(&t);
    char err[512] = "";     /* an input's or output file's error, printed at done */
    rc = FK_EXIT_ERROR;
    for (int i = 0; i < a.n; i++) {
        const char *arg = a.v[i], *path = arg;
        char *host = NULL;
        const char *eq = strchr(arg, '=');
        struct stat st;
        /* HOST=FILE, unless the whole argument names an existing file. */
        if (eq && eq > arg && stat(arg, &st) != 0) {
            host = fk_strndup(arg, (size_t)(eq - arg));
            path = eq + 1;
        } else if (prefix) {
            host = fk_merge_host_from_name(arg);
        }
        char *frame = prefix && host ? fk_merge_frame(host) : NULL;
        struct fk_parse_stats ps = { 0 };
        bool ok = fk_merge_add_file(&t, path, frame, &io, &ps, err, sizeof err);
        if (ok) {
            fk_parse_stats_report(&ps, path, false, err, sizeof err);   /* a warning */
            if (err[0])
                fk_warn("%s", err);
            err[0] = 0;
        }
        fk_parse_stats_free(&ps);
        free(frame);
        free(host);
        if (!ok)
            goto done;
    }
    if (!t.n || !t.total) {
        fk_error("no stacks with a count above zero in the inputs; nothing to merge "
                 "(inputs should be folded lines like 'main;f;g 12')");
        goto done;
    }
    if (t.overflow)
        fk_warn("some merged counts exceeded 2^64-1 and were capped");
    struct fk_outfile fo, so;
    bool have_fo = false;
    if (out) {
        if (!(fk_ends_with(out, strlen(out), ".gz") ? fk_outfile_open_gz(&fo, out, 0644, err, sizeof err)
                                    : fk_outfile_open(&fo, out, 0644, err, sizeof err)))
            goto done;
        have_fo = true;
        if (!fk_folded_write(&fo, &t)) {
            fk_error("cannot write %s", out);
            fk_outfile_abort(&fo);
            goto done;
        }
    }
    if (svg) {
        struct fk_svg_opts so_opts;
        fk_svg_opts_init(&so_opts);
        so_opts.title = title;
        if (!fk_outfile_open(&so, svg, 0644, err, sizeof err)) {
            if (have_fo)
                fk_outfile_abort(&fo);
            goto done;
        }
        if (!fk_svg_write(&so, &t, &so_opts)) {
            fk_error("cannot write %s", svg);
            fk_outfile_abort(&so);
            if (have_fo)
                fk_outfile_abort(&fo);
            goto done;
        }
        if (!fk_outfile_commit(&so, err, sizeof err)) {
            if (have_fo)
                fk_outfile_abort(&fo);
            goto done;
        }
    }
    if (have_fo && !fk_outfile_commit(&fo, err, sizeof err))
        goto done;
    rc = FK_EXIT_OK;
done:
    if (err[0])
        fk_error("%s", err);
    fk_stacktab_free(&t);
    fk_args_free(&a);
    return rc;
}
