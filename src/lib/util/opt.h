/* SPDX-License-Identifier: GPL-2.0-only */
/* One declarative command-line parser for every flamekit command and the
 * fetchd programs. A command describes its options as static tables
 * (struct fk_opt), binds each table to the struct it fills (a section of
 * --help), and fk_opt_parse drives getopt_long, stores typed values,
 * prints --help from the same tables and reports every mistake the same
 * way, e.g.
 *     flamekit host: option '--max-memory' needs a value (e.g. 256M); see 'flamekit host --help'
 *
 * Invariants: a value is stored only after it parsed and passed its bounds;
 * options may come before and after operands unless the command says the
 * rest are operands (run's command); "--" ends the options; the parser
 * never exits and never writes to the terminal: it returns an exit status
 * for the caller to return, and the text to print in struct fk_args.
 *
 * Adding an option is one table line, e.g. in a capture command's set:
 *     { "stack-size", 0, FK_OPT_SIZE, offsetof(struct fk_profile_request, stack_size),
 *       "SIZE", "user stack bytes copied per sample (default 16K)", "16K", .min = 1024 },
 */
#ifndef FK_OPT_H
#define FK_OPT_H

#include "fk.h"
#include "buf.h"

#include <stddef.h>

enum fk_opt_type {
    FK_OPT_FLAG,        /* bool field = true */
    FK_OPT_CLEAR,       /* bool field = false (--inline against --no-inline) */
    FK_OPT_SET,         /* int field = .set (e.g. --path-style: addressing = 1) */
    FK_OPT_STR,         /* const char * field = the value (points into argv) */
    FK_OPT_LIST,        /* struct fk_strv field: each use appends the value */
    FK_OPT_UINT,        /* uint64_t field, decimal, in [min, max] (max 0: none) */
    FK_OPT_INT,         /* int field, decimal, in [min, max] (max 0: INT_MAX) */
    FK_OPT_DURATION,    /* uint64_t milliseconds: 30, 30s, 2m, 500ms; > 0, in [min, max] */
    FK_OPT_SIZE,        /* uint64_t bytes: 4096, 64K, 256M, 1G; in [min, max] */
    FK_OPT_CHOICE,      /* int field = index of the value in .choices "a|b|c" */
    FK_OPT_CALL,        /* .call parses the value (none when .arg is NULL) */
    FK_OPT_VERSION,     /* print "PROG (flamekit) VERSION" and return 0 */
};

struct fk_opt {
    const char *name;       /* long name without "--"; NULL ends a table */
    char key;               /* short option letter, 0 for none */
    enum fk_opt_type type;
    size_t off;             /* offsetof the field in the struct the section fills */
    const char *arg;        /* value placeholder in --help ("DUR"); NULL for flags */
    const char *help;       /* --help text ('\n' breaks the line); NULL: not listed (an alias) */
    const char *example;    /* a valid value, shown when the value is missing: "256M" */
    uint64_t min, max;      /* bounds of UINT, INT, DURATION (ms), SIZE; max 0: none */
    int set;                /* FK_OPT_SET: the value stored */
    const char *choices;    /* FK_OPT_CHOICE: "auto|live|lines" */
    /* FK_OPT_CALL: parse val (NULL when an optional value is absent) into
     * the struct at base; on a bad value return false and put what the
     * option wants into err ("KEY=VALUE"): the parser says the rest. */
    bool (*call)(void *base, const char *val, char *err, size_t errlen);
    bool optional;          /* the value is optional: --presign[=put] */
};

/* A repeatable option's values (FK_OPT_LIST); free with fk_strv_free. */
struct fk_strv {
    const char **v;         /* point into argv */
    size_t n, cap;
};
void fk_strv_free(struct fk_strv *s);

/* One --help section: a table and the struct its fields live in. */
struct fk_optsec {
    const char *title;      /* "Options", "Output", ...; NULL ends an array */
    const struct fk_opt *opts;
    void *base;
};

struct fk_args;

/* What a command is, for parsing and --help. */
struct fk_cmdline {
    const char *usage;      /* "flamekit host [OPTIONS]"; '\n' separates alternatives */
    const char *about;      /* paragraph after the usage line (may be NULL) */
    const char *footer;     /* text after the options (may be NULL) */
    /* Called before each operand is taken (NULL: never): true means this
     * operand and everything after it are operands, not options (the
     * command of 'run', the capture command of 'remote'). */
    bool (*rest_are_operands)(const struct fk_args *sofar);
};

/* Operands, in order, pointing into argv. */
struct fk_args {
    char **v;
    int n;
    int dashdash;           /* index in v of the first operand after "--"; -1: no "--" */
    const struct fk_opt **seen;     /* options given, in order */
    size_t nseen;
    char *out;              /* --help's or --version's text, for stdout; else NULL */
    char *error;            /* a usage error's message, without the program name
                               or the "see --help" (fk_opt_error adds them); else NULL */
};

#define FK_OPT_CONTINUE (-1)

/* Parse argv[1..] (argv[0] is the command name). Returns FK_OPT_CONTINUE
 * when the command should go on; 0 after --help or --version (their text in
 * a->out); FK_EXIT_USAGE after a mistake (its message in a->error). a is
 * filled (and must be freed with fk_args_free) whatever the result. */
int fk_opt_scan(const struct fk_cmdline *cl, const struct fk_optsec *secs, int argc,
                char **argv, struct fk_args *a);
/* Was the option with this long name given? */
bool fk_args_seen(const struct fk_args *a, const char *name);
void fk_args_free(struct fk_args *a);

/* The --help text: usage, about, every section's options, footer. */
void fk_opt_help(struct fk_buf *out, const struct fk_cmdline *cl, const struct fk_optsec *secs);

/* "5m", "30s", "500ms": a duration in milliseconds as a user writes it. */
void fk_opt_fmt_ms(uint64_t ms, char *buf, size_t n);

#endif
