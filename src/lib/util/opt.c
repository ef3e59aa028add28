/* SPDX-License-Identifier: GPL-2.0-only */
/* The declarative command-line parser (opt.h): tables -> getopt_long,
 * typed values, uniform errors, --help. It writes nothing: the text to
 * print goes back in struct fk_args. */
#include "opt.h"
#include "buf.h"

#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HELP_COL 25     /* help text starts here unless the option is longer */
#define HELP_WIDTH 79

static const struct fk_opt help_opt = {
    "help", 'h', FK_OPT_FLAG, 0, NULL, "this text", NULL, 0, 0, 0, NULL, NULL, false,
};

void fk_strv_free(struct fk_strv *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* A usage error: its message into a->error; returns FK_EXIT_USAGE. */
static int usage(struct fk_args *a, const char *fmt, ...) FK_PRINTF(2, 3);
static int usage(struct fk_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(a->error);
    a->error = fk_vasprintf(fmt, ap);
    va_end(ap);
    return FK_EXIT_USAGE;
}

void fk_opt_fmt_ms(uint64_t ms, char *buf, size_t n)
{
    if (ms && ms % 3600000 == 0)
        snprintf(buf, n, "%lluh", (unsigned long long)(ms / 3600000));
    else if (ms && ms % 60000 == 0)
        snprintf(buf, n, "%llum", (unsigned long long)(ms / 60000));
    else if (ms % 1000 == 0)
        snprintf(buf, n, "%llus", (unsigned long long)(ms / 1000));
    else
        snprintf(buf, n, "%llums", (unsigned long long)ms);
}

static void fmt_size(uint64_t v, char *buf, size_t n)
{
    if (v && v % (1ull << 30) == 0)
        snprintf(buf, n, "%lluG", (unsigned long long)(v >> 30));
    else if (v && v % (1ull << 20) == 0)
        snprintf(buf, n, "%lluM", (unsigned long long)(v >> 20));
    else if (v && v % 1024 == 0)
        snprintf(buf, n, "%lluK", (unsigned long long)(v >> 10));
    else
        snprintf(buf, n, "%llu", (unsigned long long)v);
}

/* "--name" or "-k" as the user may have typed it, for messages. */
static void opt_label(const struct fk_opt *o, bool shortform, char *buf, size_t n)
{
    if (shortform && o->key)
        snprintf(buf, n, "-%c", o->key);
    else
        snprintf(buf, n, "--%s", o->name);
}

/* "NOUN from LO to HI, like EX" (or "NOUN like EX"): what a value must be. */
static void bounded(char *buf, size_t n, const char *noun, const char *like, uint64_t min,
                    uint64_t max, const char *lo, const char *hi)
{
    const char *sep = *like ? (min || max ? ", " : " ") : "";
    if (max)
        snprintf(buf, n, "%s from %s to %s%s%s", noun, lo, hi, sep, like);
    else if (min)
        snprintf(buf, n, "%s of at least %s%s%s", noun, lo, sep, like);
    else
        snprintf(buf, n, "%s%s%s", noun, sep, like);
}

/* "a whole number from 1 to 999" etc.: what an option wants. */
static void wants(const struct fk_opt *o, char *buf, size_t n)
{
    char lo[32], hi[32];
    switch (o->type) {
    case FK_OPT_UINT:
    case FK_OPT_INT:
        snprintf(lo, sizeof lo, "%llu", (unsigned long long)o->min);
        snprintf(hi, sizeof hi, "%llu", (unsigned long long)o->max);
        bounded(buf, n, "a whole number", "", o->min, o->max, lo, hi);
        break;
    case FK_OPT_DURATION:
        fk_opt_fmt_ms(o->min ? o->min : 1, lo, sizeof lo);
        fk_opt_fmt_ms(o->max, hi, sizeof hi);
        bounded(buf, n, "a duration", "like 30s, 2m or 500ms", o->min, o->max, lo, hi);
        break;
    case FK_OPT_SIZE:
        fmt_size(o->min, lo, sizeof lo);
        fmt_size(o->max, hi, sizeof hi);
        bounded(buf, n, "a size", "like 256M (suffixes K, M, G)", o->min, o->max, lo, hi);
        break;
    case FK_OPT_CHOICE: {
        struct fk_buf b = FK_BUF_INIT;
        fk_buf_adds(&b, "one of ");
        for (const char *p = o->choices; *p; p++)
            if (*p == '|')
                fk_buf_adds(&b, ", ");
            else
                fk_buf_addc(&b, *p);
        snprintf(buf, n, "%s", fk_buf_cstr(&b));
        fk_buf_free(&b);
        break;
    }
    default:
        snprintf(buf, n, "%s", o->example ? o->example : "a value");
    }
}

/* Index of val in "a|b|c", -1 if absent. */
static int choice_index(const char *choices, const char *val)
{
    size_t vl = strlen(val);
    int i = 0;
    for (const char *p = choices;; i++) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == vl && !strncmp(p, val, l))
            return i;
        if (!e)
            return -1;
        p = e + 1;
    }
}

/* Store one option's value; FK_OPT_CONTINUE or FK_EXIT_USAGE (reported). */
static int store(struct fk_args *a, const struct fk_opt *o, void *base, const char *val,
                 bool shortform)
{
    void *field = (char *)base + o->off;
    char label[80], want[256], err[256] = "";
    opt_label(o, shortform, label, sizeof label);
    uint64_t v = 0;
    bool ok = true;
    if (!val && o->type != FK_OPT_CALL)
        val = "";       /* an optional value left out */
    switch (o->type) {
    case FK_OPT_FLAG:
    case FK_OPT_CLEAR:
        *(bool *)field = o->type == FK_OPT_FLAG;
        return FK_OPT_CONTINUE;
    case FK_OPT_SET:
        *(int *)field = o->set;
        return FK_OPT_CONTINUE;
    case FK_OPT_STR:
        if (!*val && !o->optional)
            return usage(a, "option '%s' needs a value (e.g. %s)", label,
                                o->example ? o->example : o->arg);
        *(const char **)field = val;
        return FK_OPT_CONTINUE;
    case FK_OPT_LIST: {
        struct fk_strv *s = field;
        if (!*val)
            return usage(a, "option '%s' needs a value (e.g. %s)", label,
                                o->example ? o->example : o->arg);
        s->v = fk_grow(s->v, &s->cap, s->n + 1, sizeof *s->v);
        s->v[s->n++] = val;
        return FK_OPT_CONTINUE;
    }
    case FK_OPT_UINT:
        ok = fk_parse_u64(val, &v);
        break;
    case FK_OPT_INT:
        ok = fk_parse_u64(val, &v) && v <= INT_MAX;
        break;
    case FK_OPT_DURATION:
        ok = fk_parse_duration_ms(val, &v) && v > 0;
        break;
    case FK_OPT_SIZE:
        ok = fk_parse_size(val, &v);
        break;
    case FK_OPT_CHOICE: {
        int i = choice_index(o->choices, val);
        if (i < 0) {
            wants(o, want, sizeof want);
            return usage(a, "option '%s' wants %s, not '%s'", label, want, val);
        }
        *(int *)field = i;
        return FK_OPT_CONTINUE;
    }
    case FK_OPT_CALL:
        if (!o->call(base, val, err, sizeof err))
            return usage(a, "option '%s' wants %s, not '%s'", label,
                                err[0] ? err : "another value", val ? val : "");
        return FK_OPT_CONTINUE;
    case FK_OPT_VERSION:
        return FK_OPT_CONTINUE;
    }
    if (ok && (v < o->min || (o->max && v > o->max)))
        ok = false;
    if (!ok) {
        wants(o, want, sizeof want);
        return usage(a, "option '%s' wants %s, not '%s'", label, want, val);
    }
    if (o->type == FK_OPT_INT)
        *(int *)field = (int)v;
    else
        *(uint64_t *)field = v;
    return FK_OPT_CONTINUE;
}

struct flat {
    const struct fk_opt *opt;
    void *base;
};

static bool has_value(const struct fk_opt *o)
{
    if (o->type == FK_OPT_CALL)
        return o->arg != NULL;      /* a callback flag has no placeholder */
    return o->type != FK_OPT_FLAG && o->type != FK_OPT_CLEAR && o->type != FK_OPT_SET &&
           o->type != FK_OPT_VERSION;
}

/* "--d" matches several long names? Then say so instead of "unknown". */
static int unknown_long(struct fk_args *a, const struct flat *f, size_t n, const char *arg)
{
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    struct fk_buf b = FK_BUF_INIT;
    int hits = 0;
    for (size_t i = 0; i < n; i++)
        if (!strncmp(f[i].opt->name, name, len) && f[i].opt->help) {
            fk_buf_printf(&b, "%s--%s", hits ? ", " : "", f[i].opt->name);
            hits++;
        }
    int rc;
    if (hits > 1)
        rc = usage(a, "option '--%.*s' is ambiguous: %s", (int)len, name, fk_buf_cstr(&b));
    else
        rc = usage(a, "unknown option '--%.*s'", (int)len, name);
    fk_buf_free(&b);
    return rc;
}

int fk_opt_scan(const struct fk_cmdline *cl, const struct fk_optsec *secs, int argc,
                char **argv, struct fk_args *a)
{
    memset(a, 0, sizeof *a);
    a->dashdash = -1;
    a->v = fk_calloc((size_t)argc + 1, sizeof *a->v);
    size_t n = 0;
    for (const struct fk_optsec *s = secs; s && s->title; s++)
        for (const struct fk_opt *o = s->opts; o->name; o++)
            n++;
    struct flat *f = fk_calloc(n + 1, sizeof *f);
    struct option *lo = fk_calloc(n + 2, sizeof *lo);
    struct fk_buf so = FK_BUF_INIT;
    fk_buf_adds(&so, "+:h");
    size_t k = 0;
    for (const struct fk_optsec *s = secs; s && s->title; s++)
        for (const struct fk_opt *o = s->opts; o->name; o++, k++) {
            f[k].opt = o;
            f[k].base = s->base;
            lo[k].name = o->name;
            lo[k].has_arg = !has_value(o) ? no_argument
                            : o->optional ? optional_argument : required_argument;
            lo[k].val = 256 + (int)k;
            if (o->key) {
                fk_buf_addc(&so, o->key);
                if (has_value(o))
                    fk_buf_adds(&so, o->optional ? "::" : ":");
            }
        }
    lo[k].name = "help";
    lo[k].val = 'h';
    a->seen = fk_calloc((size_t)argc + 1, sizeof *a->seen);
    int rc = FK_OPT_CONTINUE;
    bool only_operands = false;
    opterr = 0;
    optind = 0;     /* full re-initialisation (a process may parse twice) */
    for (int i = 1; i < argc && rc == FK_OPT_CONTINUE;) {
        if (only_operands) {
            a->v[a->n++] = argv[i++];
            continue;
        }
        int before = optind ? optind : 1;
        int c = getopt_long(argc, argv, fk_buf_cstr(&so), lo, NULL);
        if (c == -1) {
            i = optind;
            if (i > before && !strcmp(argv[before], "--")) {
                a->dashdash = a->n;
                only_operands = true;
                continue;
            }
            if (i >= argc)
                break;
            if (cl->rest_are_operands && cl->rest_are_operands(a)) {
                only_operands = true;
                continue;
            }
            a->v[a->n++] = argv[i++];
            optind = i;
            continue;
        }
        i = optind;
        if (c == 'h') {
            struct fk_buf h = FK_BUF_INIT;
            fk_opt_help(&h, cl, secs);
            a->out = (char *)fk_buf_cstr(&h);
            rc = 0;
            break;
        }
        const struct flat *hit = NULL;
        bool shortform = false;
        if (c >= 256 && c < 256 + (int)n) {
            hit = &f[c - 256];
        } else if (c != '?' && c != ':') {
            for (size_t j = 0; j < n && !hit; j++)
                if (f[j].opt->key == c)
                    hit = &f[j], shortform = true;
        }
        if (c == ':' || c == '?') {
            /* optopt: the short letter or the long option's val (0: unknown long) */
            const char *typed = argv[optind - 1];
            if (optopt >= 256 && optopt < 256 + (int)n)
                hit = &f[optopt - 256];
            else if (optopt > 0 && optopt < 256)
                for (size_t j = 0; j < n && !hit; j++)
                    if (f[j].opt->key == optopt)
                        hit = &f[j], shortform = true;
            char label[80];
            if (hit)
                opt_label(hit->opt, shortform, label, sizeof label);
            if (c == ':' && hit)
                rc = usage(a, "option '%s' needs a value (e.g. %s)", label,
                                  hit->opt->example ? hit->opt->example : hit->opt->arg);
            else if (hit && !has_value(hit->opt))
                rc = usage(a, "option '%s' takes no value", label);
            else if (optopt > 0 && optopt < 256)
                rc = usage(a, "unknown option '-%c'", optopt);
            else if (!strncmp(typed, "--", 2))
                rc = unknown_long(a, f, n, typed);
            else
                rc = usage(a, "unknown option '%s'", typed);
            break;
        }
        if (!hit)
            continue;
        if (hit->opt->type == FK_OPT_VERSION) {
            a->out = fk_asprintf("%s (flamekit) %s\n", fk_progname, FK_VERSION);
            rc = 0;
            break;
        }
        a->seen[a->nseen++] = hit->opt;
        rc = store(a, hit->opt, hit->base, has_value(hit->opt) ? optarg : NULL, shortform);
    }
    optind = 1;
    a->v[a->n] = NULL;
    free(f);
    free(lo);
    fk_buf_free(&so);
    return rc;
}

bool fk_args_seen(const struct fk_args *a, const char *name)
{
    for (size_t i = 0; i < a->nseen; i++)
        if (!strcmp(a->seen[i]->name, name))
            return true;
    return false;
}

void fk_args_free(struct fk_args *a)
{
    free(a->v);
    free(a->seen);
    free(a->out);
    free(a->error);
    memset(a, 0, sizeof *a);
}

/* Print text from column col, wrapped at HELP_WIDTH; '\n' breaks lines. */
static void print_wrapped(struct fk_buf *out, const char *text, int col, int at)
{
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        int room = HELP_WIDTH - col;
        bool cut = false;
        if ((int)len > room) {
            size_t c = (size_t)room;
            while (c > 0 && p[c] != ' ')
                c--;
            if (c > 0) {
                len = c;
                nl = p + c;
                cut = true;
            }
        }
        fk_buf_printf(out, "%*s%.*s\n", col - at, "", (int)len, p);
        at = 0;
        if (!nl)
            break;
        p = nl + 1;
        while (cut && *p == ' ')    /* a wrapped line starts at a word */
            p++;
    }
}

static void print_opt(struct fk_buf *out, const struct fk_opt *o)
{
    char left[128];
    int l;
    if (o->key)
        l = snprintf(left, sizeof left, "  -%c, --%s", o->key, o->name);
    else
        l = snprintf(left, sizeof left, "      --%s", o->name);
    if (o->arg && l > 0 && (size_t)l < sizeof left)
        l += snprintf(left + l, sizeof left - (size_t)l, o->optional ? "[=%s]" : " %s", o->arg);
    fk_buf_adds(out, left);
    if (l + 2 > HELP_COL) {
        fk_buf_addc(out, '\n');
        l = 0;
    }
    print_wrapped(out, o->help, HELP_COL, l);
}

void fk_opt_help(struct fk_buf *out, const struct fk_cmdline *cl, const struct fk_optsec *secs)
{
    const char *u = cl->usage;
    for (bool first = true; *u; first = false) {
        const char *nl = strchr(u, '\n');
        size_t len = nl ? (size_t)(nl - u) : strlen(u);
        fk_buf_printf(out, "%s%.*s\n", first ? "usage: " : "       ", (int)len, u);
        u += len + (nl ? 1 : 0);
    }
    if (cl->about) {
        fk_buf_addc(out, '\n');
        print_wrapped(out, cl->about, 0, 0);
    }
    const char *last = NULL;
    for (const struct fk_optsec *s = secs; s && s->title; s++) {
        bool any = false;
        for (const struct fk_opt *o = s->opts; o->name; o++)
            any |= o->help != NULL;
        if (!any)
            continue;
        if (!last || strcmp(last, s->title))     /* same title: one section */
            fk_buf_printf(out, "\n%s:\n", s->title);
        last = s->title;
        for (const struct fk_opt *o = s->opts; o->name; o++)
            if (o->help)
                print_opt(out, o);
    }
    print_opt(out, &help_opt);
    if (cl->footer) {
        fk_buf_addc(out, '\n');
        print_wrapped(out, cl->footer, 0, 0);
    }
}
