/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit remote HOST [HOST...] -- CAPTURE-ARGS: the terminal side of
 * deliver/remote.h. The library runs ssh and receives the files; here are
 * the options, the signals, the live lines (on a terminal) or one line per
 * event, the summary and the list of local files on stdout. */
#include "commands.h"
#include "deliver/remote.h"

#include "util/opt.h"
#include "util/outfile.h"
#include "util/result.h"
#include "util/stopsig.h"
#include "term.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct remote_cli {
    struct fk_remote_opts o;
    struct fk_strv ssh_opts;
    int status;
    bool open;                  /* open each SVG with xdg-open/open */
};

#define RO(field) offsetof(struct remote_cli, field)

static bool set_deploy_binary(void *base, const char *val, char *err, size_t n)
{
    (void)err, (void)n;
    struct remote_cli *c = base;
    c->o.deploy = true;
    c->o.deploy_binary = val;
    return true;
}

static const struct fk_opt remote_optset[] = {
    { "output", 'o', FK_OPT_STR, RO(o.outdir), "DIR",
      "local directory (default ~/Downloads if it exists, else .)", "results" },
    { "sudo", 0, FK_OPT_FLAG, RO(o.sudo), NULL, "run the remote flamekit with 'sudo -n'" },
    { "remote-path", 0, FK_OPT_STR, RO(o.remote_path), "PATH",
      "remote flamekit binary (default: flamekit in PATH)", "/opt/flamekit/bin/flamekit" },
    { "deploy", 0, FK_OPT_FLAG, RO(o.deploy), NULL,
      "copy this flamekit binary to a private temporary directory on the host, run it, "
      "remove it" },
    { "deploy-binary", 0, FK_OPT_CALL, 0, "FILE", "deploy FILE instead of this binary (implies --deploy)",
      "flamekit-portable", .call = set_deploy_binary },
    { "ssh-opt", 0, FK_OPT_LIST, RO(ssh_opts), "OPT", "pass '-o OPT' to ssh (repeatable)",
      "ConnectTimeout=5" },
    { "open", 0, FK_OPT_FLAG, RO(open), NULL, "open each SVG (xdg-open or open)" },
    { "status", 0, FK_OPT_CHOICE, RO(status), "MODE",
      "auto, live (TTY lines) or lines (one line per event)", "lines", .choices = "auto|live|lines" },
    { NULL },
};

static const struct fk_cmdline cmdline = {
    "flamekit remote [OPTIONS] HOST [HOST...] -- CAPTURE-COMMAND [ARGS]",
    "Run 'flamekit CAPTURE-COMMAND --stdout ARGS' on each HOST over ssh (in parallel) and "
    "write the results (SVG, folded.gz, JSON) locally.",
    "Environment: FLAMEKIT_SSH = the ssh command (default 'ssh'; words split on\n"
    "blanks, e.g. 'ssh -F ~/.ssh/other_config'). Exit 0 if every host succeeded.\n"
    "Example: flamekit remote db1 db2 -- pid --duration 30s 2997",
    NULL,
};

static char **split_words(const char *s, size_t *n)
{
    char **v = NULL;
    size_t cap = 0;
    *n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        const char *e = s;
        while (*e && *e != ' ' && *e != '\t')
            e++;
        v = fk_grow(v, &cap, *n + 1, sizeof *v);
        v[(*n)++] = fk_strndup(s, (size_t)(e - s));
        s = e;
    }
    return v;
}

/* ---- output: live lines on a terminal, one line per event otherwise ---- */

struct ui {
    bool tty;
    size_t drawn;                 /* lines currently on screen */
    uint64_t last_draw_ns;
    size_t width;
};

static void ui_line(void *ctx, const struct fk_remote_host *h, const char *text)
{
    const struct ui *u = ctx;
    if (!u->tty)
        fprintf(stderr, "%s: %s\n", h->name, text);
}

static void ui_draw(struct ui *u, const struct fk_remote *r, bool force)
{
    if (!u->tty)
        return;
    uint64_t now = fk_now_ns();
    if (!force && now - u->last_draw_ns < 100000000ull)
        return;
    u->last_draw_ns = now;
    if (u->drawn)
        fprintf(stderr, "\033[%zuA", u->drawn);
    for (size_t i = 0; i < r->nhosts; i++) {
        char line[1024];
        const struct fk_remote_host *h = &r->hosts[i];
        if (h->finished)
            snprintf(line, sizeof line, "%s: %s", h->name, h->status ? h->status : "");
        else
            snprintf(line, sizeof line, "%s [%llus]: %s", h->name,
                     (unsigned long long)((now - h->start_ns) / 1000000000ull),
                     h->status ? h->status : "");
        size_t max = u->width > 1 ? u->width - 1 : 79;
        if (strlen(line) > max)
            line[max] = '\0';
        fk_text_sanitize(line);     /* the cut may split a UTF-8 sequence */
        fprintf(stderr, "\r\033[K%s\n", line);
    }
    u->drawn = r->nhosts;
    fflush(stderr);
}

static char *default_outdir(void)
{
    const char *home = getenv("HOME");
    if (home && *home) {
        char *d = fk_asprintf("%s/Downloads", home);
        struct stat st;
        if (stat(d, &st) == 0 && S_ISDIR(st.st_mode))
            return d;
        free(d);
    }
    return fk_strdup(".");
}

static void open_file(const char *path)
{
#ifdef __APPLE__
    const char *opener = "open";
#else
    const char *opener = "xdg-open";
#endif
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fk_warn("cannot open %s: %s", path, strerror(errno));
        return;
    }
    if (pid == 0) {
        /* Double fork: the viewer may outlive us; nobody waits for it. */
        if (fork() != 0)
            _exit(0);
        setsid();
        int dn = open("/dev/null", O_RDWR);
        if (dn >= 0) {
            dup2(dn, 0);
            dup2(dn, 1);
        }
        execlp(opener, opener, path, (char *)NULL);
        dprintf(2, "%s: cannot run %s to open %s: %s\n", fk_progname, opener, path, strerror(errno));
        _exit(127);
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Summary: on a terminal the live lines already show it; the remote
 * error output of failed hosts follows, verbatim. Then the local files,
 * one per line on stdout. */
static void report(const struct ui *u, const struct fk_remote *r, bool open, size_t *nok)
{
    size_t n = r->nhosts;
    *nok = 0;
    for (size_t i = 0; i < n; i++) {
        const struct fk_remote_host *h = &r->hosts[i];
        if (h->ok) {
            ++*nok;
            continue;
        }
        const char *l;
        for (size_t k = 0; u->tty && (l = fk_remote_err_line(h, k)); k++)
            fprintf(stderr, "%s: %s\n", h->name, l);
    }
    if (n > 1 || *nok < n) {
        fprintf(stderr, "%zu of %zu host%s succeeded\n", *nok, n, n == 1 ? "" : "s");
        for (size_t i = 0; i < n; i++)
            if (!r->hosts[i].ok)
                fprintf(stderr, "%s: FAILED: %s\n", r->hosts[i].name,
                        r->hosts[i].reason ? r->hosts[i].reason : "unknown");
    }
    for (size_t i = 0; i < n; i++) {
        const struct fk_remote_host *h = &r->hosts[i];
        if (!h->ok)
            continue;
        const char *svg = NULL;
        for (size_t f = 0; f < h->rd.nfiles; f++) {
            printf("%s\n", h->rd.files[f].path);
            struct fk_result_name rn;
            if (!svg && fk_result_parse(h->rd.files[f].path, &rn)) {
                if (rn.kind == FK_RESULT_SVG)
                    svg = h->rd.files[f].path;
                fk_result_name_free(&rn);
            }
        }
        if (open && svg) {
            fflush(stdout);
            open_file(svg);
        }
    }
    fflush(stdout);
}

/* Run every host to the end (or the first stop signal); the exit code. */
static int run_hosts(struct fk_remote_opts *o, int tty, bool open)
{
    char *outdir = o->outdir ? fk_strdup(o->outdir) : default_outdir();
    char err[512];
    if (!fk_outdir_check(outdir, true, err, sizeof err)) {
        fk_error("%s", err);
        free(outdir);
        return FK_EXIT_ERROR;
    }
    if (access(outdir, W_OK | X_OK) != 0) {
        fk_error("output directory %s is not a writable directory; create it or choose "
                 "another with -o", outdir);
        free(outdir);
        return FK_EXIT_ERROR;
    }
    o->outdir = outdir;
    struct ui u = { .tty = tty < 0 ? isatty(STDERR_FILENO) : tty, .width = 80 };
    struct winsize ws;
    if (u.tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
        u.width = ws.ws_col;
    o->line = ui_line;
    o->ctx = &u;
    if (!fk_stop_on_signals(FK_STOP_IGNORE_SIGPIPE))
        fk_warn("cannot set the signal handlers (%s): a Ctrl-C leaves the hosts' captures "
                "to their watchers", strerror(errno));
    struct fk_remote r;
    if (!fk_remote_start(&r, o, err, sizeof err)) {
        fk_error("%s", err);
        fk_stop_restore();
        free(outdir);
        return FK_EXIT_ERROR;
    }
    ui_draw(&u, &r, true);
    while (!fk_stop_signal && fk_remote_step(&r, u.tty ? 200 : -1, err, sizeof err))
        ui_draw(&u, &r, false);
    if (err[0])
        fk_error("%s", err);
    if (fk_stop_signal)
        fk_remote_cancel(&r);
    ui_draw(&u, &r, true);
    size_t nok;
    report(&u, &r, open, &nok);
    int sig = fk_stop_signal;
    bool all = nok == r.nhosts;
    fk_remote_free(&r);
    fk_stop_restore();
    free(outdir);
    if (sig)
        return 128 + sig;
    return all ? FK_EXIT_OK : FK_EXIT_ERROR;
}

int cmd_remote(int argc, char **argv)
{
    struct remote_cli c = { 0 };
    const struct fk_optsec secs[] = { { "Options", remote_optset, &c }, { NULL } };
    struct fk_args a;
    int rc = fk_opt_parse(&cmdline, secs, argc, argv, &a);
    if (rc != FK_OPT_CONTINUE)
        goto out;
    rc = FK_EXIT_USAGE;
    int nhosts = a.dashdash < 0 ? a.n : a.dashdash;
    if (!nhosts) {
        fk_opt_error("give at least one HOST, then -- and the capture command "
                     "(e.g. 'flamekit remote HOST -- pid 1234')");
        goto out;
    }
    if (a.dashdash < 0) {
        fk_opt_error("missing '--' and the capture command after the hosts "
                     "(e.g. 'flamekit remote HOST -- host')");
        goto out;
    }
    if (a.dashdash == a.n) {
        fk_opt_error("missing the capture command after '--' (e.g. 'pid 1234')");
        goto out;
    }
    struct fk_remote_opts o = c.o;
    static const int tty_modes[] = { -1, 1, 0 };   /* auto, live, lines */
    o.ssh_opts = (char **)c.ssh_opts.v;
    o.nssh_opts = c.ssh_opts.n;
    if (o.deploy && o.remote_path) {
        fk_opt_error("--deploy and --remote-path exclude each other");
        goto out;
    }
    o.hosts = a.v;
    o.nhosts = (size_t)nhosts;
    for (size_t i = 0; i < o.nhosts; i++)
        if (!o.hosts[i][0]) {
            fk_opt_error("bad host '%s'", o.hosts[i]);
            goto out;
        }
    o.capture = a.v + a.dashdash;
    o.ncapture = (size_t)(a.n - a.dashdash);
    /* Up to a second "--" (run's command follows it, with its own options). */
    for (size_t i = 0; i < o.ncapture && strcmp(o.capture[i], "--"); i++)
        if (!strcmp(o.capture[i], "--stdout") || !strcmp(o.capture[i], "-o") ||
            !strncmp(o.capture[i], "--output", 8)) {
            fk_opt_error("leave '%s' out of the capture arguments: the result comes back "
                         "over ssh (use -o before the hosts for the local directory)",
                         o.capture[i]);
            goto out;
        }
    const char *ssh = getenv("FLAMEKIT_SSH");
    o.ssh_cmd = split_words(ssh && *ssh ? ssh : "ssh", &o.nssh_cmd);
    if (!o.nssh_cmd) {
        fk_opt_error("FLAMEKIT_SSH is blank; unset it or name the ssh command");
        goto out;
    }
    rc = run_hosts(&o, tty_modes[c.status], c.open);
    for (size_t i = 0; i < o.nssh_cmd; i++)
        free(o.ssh_cmd[i]);
    free(o.ssh_cmd);
out:
    fk_strv_free(&c.ssh_opts);
    fk_args_free(&a);
    return rc;
}
