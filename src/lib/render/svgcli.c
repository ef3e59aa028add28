/* SPDX-License-Identifier: GPL-2.0-only */
#include "svgcli.h"
#include "stacks/input.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

const char fk_svg_cli_help[] =
    "  -o, --output FILE    write the SVG to FILE (atomically; default stdout)\n"
    "      --title TEXT     title (default \"Flame Graph\")\n"
    "      --subtitle TEXT  second title line\n"
    "      --width PX       image width (default 1200)\n"
    "      --height PX      frame height (default 16)\n"
    "      --minwidth N[%]  omit frames narrower than N pixels or N% of the\n"
    "                       width (default 0.1 pixels, like flamegraph.pl)\n"
    "      --colors NAME    palette: hot (default), mem, io, java, js, perl, red,\n"
    "                       green, blue, aqua, yellow, purple, orange, wakeup, chain\n"
    "      --hash           colour by name (the default: same name, same colour)\n"
    "      --rand           vary colours per frame (still reproducible)\n"
    "      --countname TEXT unit of the counts in tooltips (default \"samples\")\n"
    "      --nametype TEXT  status-bar prefix (default \"Function:\")\n"
    "      --inverted       icicle graph: roots at the top\n"
    "      --reverse        reverse each stack (callers on top)\n"
    "      --flamechart     keep input order, merge only adjacent stacks\n"
    "      --notes TEXT     notes embedded in the SVG\n"
    "      --metadata FILE  JSON object shown in the SVG's Info panel (key i)\n"
    "      --names short|full  C++/Rust names without parameter lists, [clone ...]\n"
    "                       and hashes (short, the default; the full names stay\n"
    "                       in the tooltip) or as they are (full)\n"
    "      --strict         fail on malformed input lines instead of skipping them\n"
    "      --sample-type T  pprof input: the sample type to draw, by name or index\n"
    "                       (e.g. inuse_space; default: the profile's last, like pprof)\n"
    "  -h, --help           this text\n";

enum { O_TITLE = 256, O_SUBTITLE, O_WIDTH, O_HEIGHT, O_MINWIDTH, O_COLORS, O_HASH, O_RAND,
       O_COUNTNAME, O_NAMETYPE, O_INVERTED, O_REVERSE, O_FLAMECHART, O_NOTES, O_METADATA,
       O_STRICT, O_NEGATE, O_NORMALIZE, O_SAMPLE_TYPE, O_NAMES };

static int parse_int(const char *opt, const char *s, int lo, int hi)
{
    uint64_t v;
    if (!fk_parse_u64(s, &v) || v < (uint64_t)lo || v > (uint64_t)hi)
        fk_usage_error("%s wants a whole number from %d to %d, not '%s'", opt, lo, hi, s);
    return (int)v;
}

void fk_svg_cli_parse(struct fk_svg_cli *c, int argc, char **argv, bool diff,
                      void (*usage)(FILE *out))
{
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "title", required_argument, NULL, O_TITLE },
        { "subtitle", required_argument, NULL, O_SUBTITLE },
        { "width", required_argument, NULL, O_WIDTH },
        { "height", required_argument, NULL, O_HEIGHT },
        { "minwidth", required_argument, NULL, O_MINWIDTH },
        { "colors", required_argument, NULL, O_COLORS },
        { "colours", required_argument, NULL, O_COLORS },
        { "hash", no_argument, NULL, O_HASH },
        { "rand", no_argument, NULL, O_RAND },
        { "countname", required_argument, NULL, O_COUNTNAME },
        { "nametype", required_argument, NULL, O_NAMETYPE },
        { "inverted", no_argument, NULL, O_INVERTED },
        { "reverse", no_argument, NULL, O_REVERSE },
        { "flamechart", no_argument, NULL, O_FLAMECHART },
        { "notes", required_argument, NULL, O_NOTES },
        { "metadata", required_argument, NULL, O_METADATA },
        { "strict", no_argument, NULL, O_STRICT },
        { "names", required_argument, NULL, O_NAMES },
        { "sample-type", required_argument, NULL, O_SAMPLE_TYPE },
        { "negate", no_argument, NULL, O_NEGATE },
        { "normalize", no_argument, NULL, O_NORMALIZE },
        { "normalise", no_argument, NULL, O_NORMALIZE },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    memset(c, 0, sizeof *c);
    fk_svg_opts_init(&c->opts);
    c->output = "-";
    c->opts.diff = diff;
    opterr = 0;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'o': c->output = optarg; break;
        case O_TITLE: c->opts.title = optarg; break;
        case O_SUBTITLE: c->opts.subtitle = optarg; break;
        case O_WIDTH: c->opts.width = parse_int("--width", optarg, 100, 1000000); break;
        case O_HEIGHT: c->opts.height = parse_int("--height", optarg, 2, 1000); break;
        case O_MINWIDTH: {
            char *end;
            errno = 0;
            double v = strtod(optarg, &end);
            bool pct = *end == '%';
            if (pct)
                end++;
            if (errno || end == optarg || *end || !(v >= 0) || (pct && v > 100) || v > 1e6)
                fk_usage_error("--minwidth wants pixels (e.g. 0.1) or a percentage (e.g. 0.5%%), not '%s'",
                               optarg);
            c->opts.minwidth = v;
            c->opts.minwidth_pct = pct;
            break;
        }
        case O_COLORS:
            if (!fk_svg_palette_ok(optarg))
                fk_usage_error("unknown palette '%s' (try hot, mem, io, java, js, perl, red, green, blue, aqua, yellow, purple, orange, wakeup, chain)",
                               optarg);
            c->opts.colors = optarg;
            break;
        case O_HASH: c->opts.hash = true; break;
        case O_RAND: c->opts.rand = true; break;
        case O_COUNTNAME: c->opts.countname = optarg; c->countname_set = true; break;
        case O_NAMETYPE: c->opts.nametype = optarg; break;
        case O_INVERTED: c->opts.inverted = true; break;
        case O_REVERSE: c->opts.reverse = true; break;
        case O_FLAMECHART: c->opts.flamechart = true; break;
        case O_NOTES: c->opts.notes = optarg; break;
        case O_METADATA: c->metadata_path = optarg; break;
        case O_STRICT: c->strict = true; break;
        case O_NAMES:
            if (strcmp(optarg, "short") && strcmp(optarg, "full"))
                fk_usage_error("--names wants short or full, not '%s'", optarg);
            c->opts.full_names = !strcmp(optarg, "full");
            break;
        case O_SAMPLE_TYPE: c->sample_type = optarg; break;
        case O_NEGATE:
        case O_NORMALIZE:
            if (!diff)
                fk_usage_error("%s is an option of 'flamekit diff'", argv[optind - 1]);
            if (ch == O_NEGATE)
                c->opts.negate = true;
            else
                c->opts.normalize = true;
            break;
        case 'h': usage(stdout); exit(FK_EXIT_OK);
        case ':':
            fk_usage_error("option '%s' needs an argument", argv[optind - 1]);
        default:
            if (optopt && optopt < 256)
                fk_usage_error("unknown option '-%c'", optopt);
            fk_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (c->opts.countname && strpbrk(c->opts.countname, "()"))
        fk_usage_error("--countname must not contain parentheses");
    c->first_arg = optind;
    if (c->metadata_path) {
        json_error_t e;
        c->metadata = json_load_file(c->metadata_path, JSON_REJECT_DUPLICATES, &e);
        if (!c->metadata)
            fk_die("%s:%d: bad JSON: %s (--metadata wants a JSON object)", c->metadata_path,
                   e.line, e.text);
        if (!json_is_object(c->metadata))
            fk_die("%s: --metadata wants a JSON object ({...}), not another JSON value",
                   c->metadata_path);
        c->opts.metadata = c->metadata;
    }
}

bool fk_svg_cli_read(struct fk_svg_cli *c, const char *path, struct fk_stacktab *t)
{
    struct fk_parse_stats st;
    memset(&st, 0, sizeof st);
    struct fk_input_opts io = { .sample_type = c->sample_type };
    struct fk_input_info info;
    bool ok = fk_input_read(path, &io, t, &st, &info);
    /* pprof: the sample type's unit names the counts unless --countname did */
    if (ok && info.pprof && !c->countname_set) {
        const char *cn = strcmp(info.unit, "count") && info.unit[0] ? info.unit : info.type;
        size_t k = 0;
        for (const char *q = cn; *q && k + 1 < sizeof c->countname_buf; q++)
            if (*q != '(' && *q != ')')
                c->countname_buf[k++] = *q;
        c->countname_buf[k] = 0;
        if (k)
            c->opts.countname = c->countname_buf;
    }
    const char *name = strcmp(path, "-") ? path : "stdin";
    if (ok)
        ok = fk_parse_stats_report(&st, name, c->strict);
    fk_parse_stats_free(&st);
    if (ok && t->overflow)
        fk_warn("%s: some counts add up beyond 2^64 and were capped", name);
    return ok;
}

bool fk_svg_cli_write(struct fk_svg_cli *c, const struct fk_stacktab *t)
{
    struct fk_outfile out;
    if (!fk_outfile_open(&out, c->output, 0644))
        return false;
    if (!fk_svg_write(&out, t, &c->opts)) {
        fk_error("%s: write failed: %s", strcmp(c->output, "-") ? c->output : "stdout",
                 strerror(errno));
        fk_outfile_abort(&out);
        return false;
    }
    return fk_outfile_commit(&out);
}

void fk_svg_cli_free(struct fk_svg_cli *c)
{
    if (c->metadata)
        json_decref(c->metadata);
    c->metadata = NULL;
}
