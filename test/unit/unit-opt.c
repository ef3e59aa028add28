/* SPDX-License-Identifier: GPL-2.0-only */
/* The option parser (util/opt.h): typed values, operands before and after
 * options, "--", rest-are-operands, uniform errors, generated --help; the
 * library's part writes nothing, the programs' (cmd/term.h) prints. */
#include "unit.h"
#include "util/opt.h"
#include "cmd/term.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

struct o {
    bool quiet;
    const char *out;
    uint64_t dur, mem, n;
    int mode, style;
    struct fk_strv meta;
    const char *presign;
    int width;
    bool all, inl;
};

static bool set_all(void *base, const char *val, char *err, size_t n)
{
    (void)err, (void)n;
    ((struct o *)base)->all = val == NULL;
    return true;
}

static bool parse_presign(void *base, const char *val, char *err, size_t n)
{
    struct o *o = base;
    o->presign = val ? val : "put";
    if (strcmp(o->presign, "put") && strcmp(o->presign, "get")) {
        snprintf(err, n, "put or get");
        return false;
    }
    return true;
}

static const struct fk_opt opts[] = {
    { "quiet", 'q', FK_OPT_FLAG, offsetof(struct o, quiet), NULL, "be quiet", NULL },
    { "output", 'o', FK_OPT_STR, offsetof(struct o, out), "DIR", "write into DIR", "DIR" },
    { "duration", 'd', FK_OPT_DURATION, offsetof(struct o, dur), "DUR", "how long", "30s",
      .max = 300000 },
    { "max-memory", 0, FK_OPT_SIZE, offsetof(struct o, mem), "SIZE", "memory cap", "256M",
      .min = 1 << 20 },
    { "count", 'n', FK_OPT_UINT, offsetof(struct o, n), "N", "how many", "4", .min = 1, .max = 20 },
    { "status", 0, FK_OPT_CHOICE, offsetof(struct o, mode), "MODE", "auto, live or lines",
      "auto", .choices = "auto|live|lines" },
    { "path-style", 0, FK_OPT_SET, offsetof(struct o, style), NULL, "path style", .set = 1 },
    { "meta", 0, FK_OPT_LIST, offsetof(struct o, meta), "K=V", "extra pair (repeatable)", "k=v" },
    { "presign", 0, FK_OPT_CALL, 0, "put|get", "presign", "put", .call = parse_presign,
      .optional = true },
    { "width", 0, FK_OPT_INT, offsetof(struct o, width), "PX", "width", "1200", .min = 100, .max = 5000 },
    { "all", 0, FK_OPT_CALL, 0, NULL, "a flag with a callback", .call = set_all },
    { "no-inline", 0, FK_OPT_FLAG, offsetof(struct o, inl), NULL, "set" },
    { "inline", 0, FK_OPT_CLEAR, offsetof(struct o, inl), NULL, "clear" },
    { "colours", 0, FK_OPT_STR, offsetof(struct o, out), "X", NULL, "x" },   /* hidden alias */
    { NULL },
};

static bool run_rest(const struct fk_args *a)
{
    return a->n >= 1 && !strcmp(a->v[0], "run");
}

static const struct fk_cmdline cl = { "prog [OPTIONS] ARG...", "About.", "Footer.", run_rest };

/* Parse a NULL-terminated vector; stderr (the error line) into err. */
static int parse(struct o *o, struct fk_args *a, char *err, size_t errn, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, errn);
    for (char *s; (s = va_arg(ap, char *));)
        argv[argc++] = s;
    va_end(ap);
    argv[argc] = NULL;
    memset(o, 0, sizeof *o);
    struct fk_optsec secs[] = { { "Options", opts, o }, { NULL } };
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    dup2(fileno(tmp), 2);
    int rc = fk_opt_parse(&cl, secs, argc, argv, a);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t got = fread(err, 1, errn - 1, tmp);
    err[got] = 0;
    fclose(tmp);
    return rc;
}

/* The library's parser on its own (fk_opt_scan): the text comes back in
 * the fk_args, and nothing reaches stdout or stderr. */
static void library_is_quiet(void)
{
    char path[] = "/tmp/unit-opt.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        UNIT_CHECK("a temporary file", false);
        return;
    }
    unlink(path);
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), err = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    struct o o;
    memset(&o, 0, sizeof o);
    struct fk_optsec secs[] = { { "Options", opts, &o }, { NULL } };
    static const struct fk_opt version[] = { { "version", 0, FK_OPT_VERSION, 0, NULL, "version" },
                                             { NULL } };
    struct fk_optsec vsecs[] = { { "Options", version, NULL }, { NULL } };
    char prog[] = "prog", bad[] = "--count=0", help[] = "-h", ver[] = "--version";
    char *bv[] = { prog, bad, NULL }, *hv[] = { prog, help, NULL }, *vv[] = { prog, ver, NULL };
    struct fk_args a, h, v;
    int brc = fk_opt_scan(&cl, secs, 2, bv, &a);
    int hrc = fk_opt_scan(&cl, secs, 2, hv, &h);
    int vrc = fk_opt_scan(&cl, vsecs, 2, vv, &v);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    struct stat st;
    bool quiet = fstat(fd, &st) == 0 && st.st_size == 0;
    close(fd);
    struct fk_buf want = FK_BUF_INIT;
    fk_opt_help(&want, &cl, secs);
    char *wantv = fk_asprintf("prog (flamekit) %s\n", FK_VERSION);
    UNIT_CHECK("library: a bad value is FK_EXIT_USAGE with its message in error",
               brc == FK_EXIT_USAGE && !a.out && a.error &&
               !strcmp(a.error, "option '--count' wants a whole number from 1 to 20, not '0'"));
    UNIT_CHECK("library: -h is 0 with fk_opt_help's text in out",
               hrc == 0 && !h.error && h.out && !strcmp(h.out, fk_buf_cstr(&want)));
    UNIT_CHECK("library: --version is 0 with the version line in out",
               vrc == 0 && !v.error && v.out && !strcmp(v.out, wantv));
    UNIT_CHECK("library: nothing written to stdout or stderr", quiet);
    free(wantv);
    fk_buf_free(&want);
    fk_args_free(&a);
    fk_args_free(&h);
    fk_args_free(&v);
}

int main(void)
{
    unit_name = "unit-opt";
    fk_progname = "prog";
    struct o o;
    struct fk_args a;
    char err[1024];

    int rc = parse(&o, &a, err, sizeof err, "prog", "-q", "x", "-d", "2m", "y", "--max-memory=64M",
                   "-n3", "--status", "live", "--path-style", "--meta", "a=1", "--meta", "b=2", NULL);
    UNIT_CHECK("options before, between and after operands", rc == FK_OPT_CONTINUE && o.quiet &&
               a.n == 2 && !strcmp(a.v[0], "x") && !strcmp(a.v[1], "y") && a.dashdash == -1);
    UNIT_CHECK("duration in ms", o.dur == 120000);
    UNIT_CHECK("size in bytes", o.mem == 64ull << 20);
    UNIT_CHECK("number", o.n == 3);
    UNIT_CHECK("choice index", o.mode == 1);
    UNIT_CHECK("set value", o.style == 1);
    UNIT_CHECK("list in order", o.meta.n == 2 && !strcmp(o.meta.v[1], "b=2"));
    UNIT_CHECK("seen", fk_args_seen(&a, "duration") && !fk_args_seen(&a, "output"));
    fk_strv_free(&o.meta);
    fk_args_free(&a);

    rc = parse(&o, &a, err, sizeof err, "prog", "-q", "--", "-o", "z", NULL);
    UNIT_CHECK("-- ends options", rc == FK_OPT_CONTINUE && a.n == 2 && a.dashdash == 0 &&
               !strcmp(a.v[0], "-o") && !o.out);
    fk_args_free(&a);

    rc = parse(&o, &a, err, sizeof err, "prog", "run", "-o", "D", "--", "cmd", "-o", "x", NULL);
    UNIT_CHECK("options after 'run' until --", rc == FK_OPT_CONTINUE && o.out && !strcmp(o.out, "D") &&
               a.n == 4 && a.dashdash == 1 && !strcmp(a.v[1], "cmd") && !strcmp(a.v[3], "x"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "-q", "run", "cmd", "-q", NULL);
    UNIT_CHECK("rest are operands after run's first operand", rc == FK_OPT_CONTINUE && a.n == 3 &&
               !strcmp(a.v[2], "-q") && a.dashdash == -1);
    fk_args_free(&a);

    rc = parse(&o, &a, err, sizeof err, "prog", "--max-memory", NULL);
    UNIT_CHECK("missing value: usage error", rc == FK_EXIT_USAGE);
    UNIT_CHECK("missing value: named, with an example",
               strstr(err, "prog: option '--max-memory' needs a value (e.g. 256M); see 'prog --help'") != NULL);
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "x", "-d", NULL);
    UNIT_CHECK("missing short value", rc == FK_EXIT_USAGE && strstr(err, "option '-d' needs a value (e.g. 30s)"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--bogus", NULL);
    UNIT_CHECK("unknown long", rc == FK_EXIT_USAGE && strstr(err, "unknown option '--bogus'"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "-x", NULL);
    UNIT_CHECK("unknown short", rc == FK_EXIT_USAGE && strstr(err, "unknown option '-x'"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--quiet=1", NULL);
    UNIT_CHECK("flag with a value", rc == FK_EXIT_USAGE && strstr(err, "option '--quiet' takes no value"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--p", NULL);
    UNIT_CHECK("ambiguous prefix named", rc == FK_EXIT_USAGE && strstr(err, "'--p' is ambiguous: --path-style, --presign"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--dur", "5s", NULL);
    UNIT_CHECK("unique prefix accepted", rc == FK_OPT_CONTINUE && o.dur == 5000);
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "-d", "10x", NULL);
    UNIT_CHECK("bad duration", rc == FK_EXIT_USAGE && strstr(err, "option '-d' wants a duration from 1ms to 5m, like 30s, 2m or 500ms, not '10x'"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "-d", "6m", NULL);
    UNIT_CHECK("duration above max", rc == FK_EXIT_USAGE && o.dur == 0);
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--count", "21", NULL);
    UNIT_CHECK("number out of range", rc == FK_EXIT_USAGE && strstr(err, "wants a whole number from 1 to 20, not '21'"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--max-memory", "512K", NULL);
    UNIT_CHECK("size below min", rc == FK_EXIT_USAGE && strstr(err, "at least 1M"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--status", "loud", NULL);
    UNIT_CHECK("bad choice lists the choices", rc == FK_EXIT_USAGE && strstr(err, "wants one of auto, live, lines, not 'loud'"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--presign", NULL);
    UNIT_CHECK("optional value absent", rc == FK_OPT_CONTINUE && o.presign && !strcmp(o.presign, "put"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--presign=del", NULL);
    UNIT_CHECK("callback error", rc == FK_EXIT_USAGE && strstr(err, "option '--presign' wants put or get, not 'del'"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "-o", "", NULL);
    UNIT_CHECK("empty value refused", rc == FK_EXIT_USAGE && strstr(err, "needs a value"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--colours", "x", NULL);
    UNIT_CHECK("hidden alias works", rc == FK_OPT_CONTINUE && o.out && !strcmp(o.out, "x"));
    fk_args_free(&a);

    rc = parse(&o, &a, err, sizeof err, "prog", "--width", "300", "--all", "--no-inline", "--inline", NULL);
    UNIT_CHECK("int, callback flag, clear", rc == FK_OPT_CONTINUE && o.width == 300 && o.all && !o.inl);
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--all=x", NULL);
    UNIT_CHECK("callback flag takes no value", rc == FK_EXIT_USAGE && strstr(err, "'--all' takes no value"));
    fk_args_free(&a);
    rc = parse(&o, &a, err, sizeof err, "prog", "--width", "99999999999", NULL);
    UNIT_CHECK("int out of range", rc == FK_EXIT_USAGE && o.width == 0);
    fk_args_free(&a);

    /* --help: generated from the table, exit status 0, aliases hidden */
    char buf[8192] = "";
    fflush(stdout);
    FILE *tmp = tmpfile();
    int saved = dup(1);
    dup2(fileno(tmp), 1);
    char prog[] = "prog", x[] = "x", help[] = "--help";
    char *hv[] = { prog, x, help, NULL };
    memset(&o, 0, sizeof o);
    struct fk_optsec secs[] = { { "Options", opts, &o }, { NULL } };
    rc = fk_opt_parse(&cl, secs, 3, hv, &a);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    rewind(tmp);
    buf[fread(buf, 1, sizeof buf - 1, tmp)] = 0;
    fclose(tmp);
    fk_args_free(&a);
    UNIT_CHECK("--help returns 0", rc == 0);
    UNIT_CHECK("--help usage line", !strncmp(buf, "usage: prog [OPTIONS] ARG...\n\nAbout.\n", 37));
    UNIT_CHECK("--help option line", strstr(buf, "\n  -d, --duration DUR     how long\n") != NULL);
    UNIT_CHECK("--help long-only line", strstr(buf, "\n      --max-memory SIZE  memory cap\n") != NULL);
    UNIT_CHECK("--help optional value", strstr(buf, "--presign[=put|get]") != NULL);
    UNIT_CHECK("--help hides aliases", strstr(buf, "colours") == NULL);
    UNIT_CHECK("--help lists -h", strstr(buf, "  -h, --help") != NULL);
    UNIT_CHECK("--help footer", strstr(buf, "\nFooter.\n") != NULL);
    library_is_quiet();
    return UNIT_END();
}
