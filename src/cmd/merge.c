/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit merge [--host-prefix] [-o OUT] [--svg OUT.svg] FILE|HOST=FILE... */
#include "deliver/merge.h"
#include "render/svg.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: flamekit merge [OPTIONS] FILE|HOST=FILE...\n"
            "\n"
            "Combine folded profiles or pprof profiles (plain or .gz; '-' = stdin) into\n"
            "one folded profile, counts of equal stacks summed.\n"
            "\n"
            "  -p, --host-prefix    start each stack with a frame naming its host: the\n"
            "                       HOST of HOST=FILE, else the part of the file name\n"
            "                       before .YYYYMMDD_HHMMSS_UTC. (flamekit's names)\n"
            "  -o, --output OUT     folded output (default stdout; OUT.gz is gzipped)\n"
            "      --svg OUT.svg    also render one flame graph of the merged profile\n"
            "      --title TEXT     the SVG's title (default \"Merged Flame Graph\")\n"
            "      --sample-type T  pprof inputs: the sample type to merge, by name or\n"
            "                       index (default: each profile's last, like pprof)\n"
            "  -h, --help           this text\n"
            "\n"
            "Example: flamekit merge -p --svg all.svg -o all.folded.gz db1.*.folded.gz db2.*.folded.gz\n");
}

static bool ends_with(const char *s, const char *sfx)
{
    size_t a = strlen(s), b = strlen(sfx);
    return a >= b && !strcmp(s + a - b, sfx);
}

int cmd_merge(int argc, char **argv)
{
    bool prefix = false;
    struct fk_input_opts io = { 0 };
    const char *out = NULL, *svg = NULL, *title = "Merged Flame Graph";
    static const struct option longopts[] = {
        { "host-prefix", no_argument, NULL, 'p' },
        { "output", required_argument, NULL, 'o' },
        { "svg", required_argument, NULL, 'S' },
        { "title", required_argument, NULL, 'T' },
        { "sample-type", required_argument, NULL, 'Y' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":po:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': prefix = true; break;
        case 'o': out = optarg; break;
        case 'S': svg = optarg; break;
        case 'T': title = optarg; break;
        case 'Y': io.sample_type = optarg; break;
        case 'h': usage(stdout); return FK_EXIT_OK;
        case ':': fk_usage_error("option '%s' needs an argument", argv[optind - 1]);
        default: fk_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        fk_usage_error("give the folded files to merge (e.g. 'flamekit merge -p a.folded.gz b.folded.gz')");
    if (!out)
        out = svg ? NULL : "-";
    if (out && svg && !strcmp(svg, "-") && !strcmp(out, "-"))
        fk_usage_error("-o and --svg cannot both be stdout");

    struct fk_stacktab t;
    fk_stacktab_init(&t);
    int rc = FK_EXIT_ERROR;
    for (int i = optind; i < argc; i++) {
        const char *arg = argv[i], *path = arg;
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
        bool ok = fk_merge_add_file(&t, path, frame, &io, &ps);
        if (ok)
            fk_parse_stats_report(&ps, path, false);
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
        if (!(ends_with(out, ".gz") ? fk_outfile_open_gz(&fo, out, 0644)
                                    : fk_outfile_open(&fo, out, 0644)))
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
        if (!fk_outfile_open(&so, svg, 0644)) {
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
        if (!fk_outfile_commit(&so)) {
            if (have_fo)
                fk_outfile_abort(&fo);
            goto done;
        }
    }
    if (have_fo && !fk_outfile_commit(&fo))
        goto done;
    rc = FK_EXIT_OK;
done:
    fk_stacktab_free(&t);
    return rc;
}
