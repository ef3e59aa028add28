/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit remote HOST [HOST...] -- CAPTURE-ARGS */
#include "commands.h"
#include "deliver/remote.h"

#include "util/opt.h"

#include <stdlib.h>
#include <string.h>

struct remote_cli {
    struct fk_remote_opts o;
    struct fk_strv ssh_opts;
    int status;
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
    { "open", 0, FK_OPT_FLAG, RO(o.open), NULL, "open each SVG (xdg-open or open)" },
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

int cmd_remote(int argc, char **argv)
{
    struct remote_cli c = { .o = { .tty = -1 } };
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
    o.tty = tty_modes[c.status];
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
    rc = fk_remote_run(&o);
    for (size_t i = 0; i < o.nssh_cmd; i++)
        free(o.ssh_cmd[i]);
    free(o.ssh_cmd);
out:
    fk_strv_free(&c.ssh_opts);
    fk_args_free(&a);
    return rc;
}
