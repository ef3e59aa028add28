/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit collapse: `perf script` text (or a pprof profile) -> folded stacks. */
#include "stacks/input.h"
#include "stacks/folded.h"
#include "stacks/perfscript.h"
#include "util/outfile.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: flamekit collapse [OPTIONS] [FILE|-]\n"
            "Read `perf script` output (FILE, or stdin; gzip is detected) and write folded\n"
            "stacks \"comm;outer;...;leaf COUNT\", sorted. COUNT is the number of samples\n"
            "(stackcollapse-perf.pl sums periods instead; use --period for that).\n"
            "A pprof profile (Go's runtime/pprof, flamekit's .pb.gz; gzip or not) is\n"
            "recognised by its content and folded from one sample type.\n"
            "  -o, --output FILE     write to FILE (atomically; gzip if it ends in .gz)\n"
            "      --period          weight each sample by its period\n"
            "      --event-filter=EV count only event EV (default: the first event seen)\n"
            "      --pid             name processes comm-PID\n"
            "      --tid             name processes comm-PID/TID\n"
            "      --kernel          append _[k] to kernel frames\n"
            "      --jit             append _[j] to JIT (perf-PID.map) frames\n"
            "      --all             --kernel --jit, and _[i] on inlined frames\n"
            "      --inline          keep frames perf marks (inlined) (default)\n"
            "      --no-inline       drop them\n"
            "      --addrs           keep +0x offsets; show addresses of unknown frames\n"
            "      --strict          malformed lines are an error, not a warning\n"
            "      --sample-type T   pprof input: the sample type, by name or index\n"
            "                        (default: the profile's last, like pprof)\n"
            "  -h, --help            this text\n");
}

static bool outfile_sink(void *ctx, const void *data, size_t len)
{
    return fk_outfile_write(ctx, data, len);
}

int cmd_collapse(int argc, char **argv)
{
    enum { O_PID = 256, O_TID, O_KERNEL, O_JIT, O_ALL, O_ADDRS, O_EVENT, O_INLINE,
           O_NOINLINE, O_PERIOD, O_STRICT, O_SAMPLE_TYPE };
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { "pid", no_argument, NULL, O_PID },
        { "tid", no_argument, NULL, O_TID },
        { "kernel", no_argument, NULL, O_KERNEL },
        { "jit", no_argument, NULL, O_JIT },
        { "all", no_argument, NULL, O_ALL },
        { "addrs", no_argument, NULL, O_ADDRS },
        { "event-filter", required_argument, NULL, O_EVENT },
        { "inline", no_argument, NULL, O_INLINE },
        { "no-inline", no_argument, NULL, O_NOINLINE },
        { "period", no_argument, NULL, O_PERIOD },
        { "strict", no_argument, NULL, O_STRICT },
        { "sample-type", required_argument, NULL, O_SAMPLE_TYPE },
        { NULL, 0, NULL, 0 },
    };
    struct fk_perfscript_opts o = { 0 };
    const char *out = "-";
    bool strict = false;
    struct fk_input_opts io = { 0 };
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'h': usage(stdout); return FK_EXIT_OK;
        case O_PID: o.pid = true; break;
        case O_TID: o.tid = true; break;
        case O_KERNEL: o.kernel = true; break;
        case O_JIT: o.jit = true; break;
        case O_ALL: o.kernel = o.jit = o.inline_mark = true; break;
        case O_ADDRS: o.addrs = true; break;
        case O_EVENT:
            if (!*optarg)
                fk_usage_error("--event-filter needs an event name, e.g. cpu-clock");
            o.event = optarg;
            break;
        case O_INLINE: o.no_inline = false; break;
        case O_NOINLINE: o.no_inline = true; break;
        case O_PERIOD: o.period = true; break;
        case O_STRICT: strict = true; break;
        case O_SAMPLE_TYPE: io.sample_type = optarg; break;
        case ':':
            fk_usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            fk_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind > 1)
        fk_usage_error("one input file at most (got %d)", argc - optind);
    const char *in = optind < argc ? argv[optind] : "-";

    struct fk_parse_stats st = { 0 };
    struct fk_perfscript ps;
    struct fk_stacktab tab;     /* pprof input only: perf script text stays in ps */
    fk_stacktab_init(&tab);
    fk_perfscript_init(&ps, &o, NULL, &st);
    int rc = FK_EXIT_OK;
    const char *inname = strcmp(in, "-") ? in : "<stdin>";
    struct fk_lineread r;
    bool binary;    /* perf script parsing reports malformed lines itself */
    enum fk_input_kind kind = fk_input_open(&r, in, &binary);
    bool rok = kind == FK_INPUT_PPROF ? fk_input_pprof(&r, &io, &tab, NULL)
             : kind == FK_INPUT_TEXT ? fk_perfscript_read_lines(&ps, &r) : false;
    if (kind != FK_INPUT_ERROR)
        fk_lineread_close(&r);
    if (!rok) {
        rc = FK_EXIT_ERROR;
        goto done;
    }
    if (kind == FK_INPUT_PPROF)
        goto write;
    if (!fk_parse_stats_report(&st, inname, strict)) {
        rc = FK_EXIT_ERROR;
        goto done;
    }
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
    if (!(gz ? fk_outfile_open_gz(&of, out, 0644) : fk_outfile_open(&of, out, 0644))) {
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
    if (!fk_outfile_commit(&of))
        rc = FK_EXIT_ERROR;
done:
    fk_perfscript_free(&ps);
    fk_parse_stats_free(&st);
    fk_stacktab_free(&tab);
    return rc;
}
