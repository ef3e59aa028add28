/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit collapse: `perf script` text (or a pprof profile) -> folded stacks. */
#include "commands.h"
#include "stacks/input.h"
#include "stacks/folded.h"
#include "stacks/perfscript.h"
#include "util/opt.h"
#include "util/outfile.h"
#include "term.h"

#include <stdlib.h>
#include <string.h>

struct collapse_opts {
    struct fk_perfscript_opts ps;
    struct fk_input_opts io;
    const char *out;
    bool strict;
};

#define CO(field) offsetof(struct collapse_opts, field)

static bool set_all(void *base, const char *val, char *err, size_t n)
{
    (void)val, (void)err, (void)n;
    struct collapse_opts *o = base;
    o->ps.kernel = o->ps.jit = true;
    return true;
}

static const struct fk_opt collapse_optset[] = {
    { "output", 'o', FK_OPT_STR, CO(out), "FILE", "write to FILE (atomically; gzip if it ends in .gz)", "out.folded.gz" },
    { "period", 0, FK_OPT_FLAG, CO(ps.period), NULL, "weight each sample by its period" },
    { "event-filter", 0, FK_OPT_STR, CO(ps.event), "EV", "count only event EV (default: the first event seen)", "cpu-clock" },
    { "pid", 0, FK_OPT_FLAG, CO(ps.pid), NULL, "name processes comm-PID" },
    { "tid", 0, FK_OPT_FLAG, CO(ps.tid), NULL, "name processes comm-PID/TID" },
    { "kernel", 0, FK_OPT_FLAG, CO(ps.kernel), NULL, "append _[k] to kernel frames (vmlinux, modules)" },
    { "jit", 0, FK_OPT_FLAG, CO(ps.jit), NULL, "append _[j] to JIT frames (perf-PID.map, jitted-*.so)" },
    { "all", 0, FK_OPT_CALL, 0, NULL, "--kernel --jit", .call = set_all },
    { "tag-inlined", 0, FK_OPT_FLAG, CO(ps.tag_inlined), NULL, "append _[i] to frames perf marks (inlined)" },
    { "inline", 0, FK_OPT_CLEAR, CO(ps.no_inline), NULL, "keep frames perf marks (inlined) (default)" },
    { "no-inline", 0, FK_OPT_FLAG, CO(ps.no_inline), NULL, "drop them" },
    { "addrs", 0, FK_OPT_FLAG, CO(ps.addrs), NULL, "name unknown symbols [object <ADDRESS>]" },
    { "offsets", 0, FK_OPT_FLAG, CO(ps.offsets), NULL, "keep +0x symbol offsets (a frame per call site)" },
    { "strict", 0, FK_OPT_FLAG, CO(strict), NULL, "malformed lines are an error, not a warning" },
    { "sample-type", 0, FK_OPT_STR, CO(io.sample_type), "T",
      "pprof input: the sample type, by name or index (default: the profile's last, like pprof)",
      "inuse_space" },
    { NULL },
};

static const struct fk_cmdline cmdline = {
    "flamekit collapse [OPTIONS] [FILE|-]",
    "Read `perf script` output (FILE, or stdin; gzip is detected) and write folded "
    "stacks \"comm;outer;...;leaf COUNT\", sorted. COUNT is the number of samples "
    "(stackcollapse-perf.pl sums periods instead; use --period for that). A pprof "
    "profile (Go's runtime/pprof, flamekit's .pb.gz; gzip or not) is recognised by its "
    "content and folded from one sample type.",
    "See flamekit-collapse(1).",
    NULL,
};

static bool outfile_sink(void *ctx, const void *data, size_t len)
{
    return fk_outfile_write(ctx, data, len);
}

int cmd_collapse(int argc, char **argv)
{
    struct collapse_opts co = { .out = "-" };
    const struct fk_optsec secs[] = { { "Options", collapse_optset, &co }, { NULL } };
    struct fk_args a;
    int rc = fk_opt_parse(&cmdline, secs, argc, argv, &a);
    if (rc == FK_OPT_CONTINUE && a.n > 1)
        rc = fk_opt_error("one input file at most (got %d)", a.n);
    if (rc != FK_OPT_CONTINUE) {
        fk_args_free(&a);
        return rc;
    }
    fk_heap_for_batch();
    const char *in = a.n ? a.v[0] : "-", *out = co.out;
    bool strict = co.strict;
    struct fk_perfscript_opts o = co.ps;
    struct fk_input_opts io = co.io;
    io.warn = fk_warn_line;
    fk_args_free(&a);     /* in and out point into argv, not into a */

    struct fk_parse_stats st = { 0 };
    struct fk_perfscript ps;
    struct fk_stacktab tab;     /* pprof input only: perf script text stays in ps */
    fk_stacktab_init(&tab);
    fk_perfscript_init(&ps, &o, NULL, &st);
    rc = FK_EXIT_OK;
    const char *inname = strcmp(in, "-") ? in : "<stdin>";
    struct fk_lineread r;
    /* not asked whether the text looks binary: perf script parsing reports
     * malformed lines itself (the scan was 10 % of a small input's
     * instructions) */
    enum fk_input_kind kind = fk_input_open(&r, in, NULL);
    if (kind == FK_INPUT_TEXT)
        fk_perfscript_expect(&ps, fk_lineread_plain_size(&r));
    bool rok = kind == FK_INPUT_PPROF ? fk_input_pprof(&r, &io, &tab, NULL)
             : kind == FK_INPUT_TEXT ? fk_perfscript_read_lines(&ps, &r) : false;
    if (kind != FK_INPUT_ERROR)
        fk_lineread_close(&r);
    if (!rok) {
        fk_error("%s", r.error);
        rc = FK_EXIT_ERROR;
        goto done;
    }
    if (kind == FK_INPUT_PPROF)
        goto write;
    char msg[512];
    if (!fk_parse_stats_report(&st, inname, strict, msg, sizeof msg)) {
        fk_error("%s", msg);
        rc = FK_EXIT_ERROR;
        goto done;
    }
    if (msg[0])
        fk_warn("%s", msg);
    if (fk_perfscript_overflow(&ps)) {
        fk_error("%s: a stack's count exceeds 2^64-1 (periods too large to sum); "
                 "drop --period to count samples", inname);
        rc = FK_EXIT_ERROR;
        goto done;
    }
    if (ps.skipped_events && ps.event_defaulted)
        fk_warn("%s: several events; counted only '%s' (%llu samples of '%s' and others "
                "skipped; choose with --event-filter)", inname, ps.event,
                (unsigned long long)ps.skipped_events, ps.other_event);
    else if (ps.skipped_events && !ps.samples)
        fk_warn("%s: no samples of event '%s' (input has '%s')", inname, ps.event,
                ps.other_event);
    if (st.lines == 0)
        fk_warn("%s: empty input", inname);
    else if (!ps.samples && !ps.skipped_events)
        fk_warn("%s: no perf script samples found (expected output of 'perf script')", inname);

write:;
    struct fk_outfile of;
    size_t ol = strlen(out);
    bool gz = ol > 3 && !strcmp(out + ol - 3, ".gz");
    char err[512];
    if (!(gz ? fk_outfile_open_gz(&of, out, 0644, err, sizeof err)
             : fk_outfile_open(&of, out, 0644, err, sizeof err))) {
        fk_error("%s", err);
        rc = FK_EXIT_ERROR;
        goto done;
    }
    if (!(kind == FK_INPUT_PPROF ? fk_folded_write(&of, &tab)
                                 : fk_perfscript_write(&ps, outfile_sink, &of))) {
        fk_error("cannot write %s", strcmp(out, "-") ? out : "<stdout>");
        fk_outfile_abort(&of);
        rc = FK_EXIT_ERROR;
        goto done;
    }
    if (!fk_outfile_commit(&of, err, sizeof err)) {
        fk_error("%s", err);
        rc = FK_EXIT_ERROR;
    }
done:
    fk_perfscript_free(&ps);
    fk_parse_stats_free(&st);
    fk_stacktab_free(&tab);
    return rc;
}
