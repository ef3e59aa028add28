/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit remote HOST [HOST...] -- CAPTURE-ARGS */
#include "deliver/remote.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: flamekit remote [OPTIONS] HOST [HOST...] -- CAPTURE-COMMAND [ARGS]\n"
            "\n"
            "Run 'flamekit CAPTURE-COMMAND ARGS --stdout' on each HOST over ssh (in\n"
            "parallel) and write the results (SVG, folded.gz, JSON) locally.\n"
            "\n"
            "  -o, --output DIR       local directory (default ~/Downloads if it exists, else .)\n"
            "      --sudo             run the remote flamekit with 'sudo -n'\n"
            "      --remote-path PATH remote flamekit binary (default: flamekit in PATH)\n"
            "      --deploy           copy this flamekit binary to a private temporary\n"
            "                         directory on the host, run it, remove it\n"
            "      --deploy-binary F  deploy F instead of this binary (implies --deploy)\n"
            "      --ssh-opt OPT      pass '-o OPT' to ssh (repeatable)\n"
            "      --open             open each SVG (xdg-open or open)\n"
            "      --status MODE      auto, live (TTY lines) or lines (one line per event)\n"
            "  -h, --help             this text\n"
            "\n"
            "Environment: FLAMEKIT_SSH = the ssh command (default 'ssh'; words split on\n"
            "blanks, e.g. 'ssh -F ~/.ssh/other_config'). Exit 0 if every host succeeded.\n"
            "Example: flamekit remote db1 db2 -- pid --duration 30s 2997\n");
}

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
    struct fk_remote_opts o = { .tty = -1 };
    size_t cap_opts = 0;
    /* Options end at "--"; everything after it is the capture command. */
    int dd = 1;
    while (dd < argc && strcmp(argv[dd], "--"))
        dd++;
    for (int i = 1; i < dd; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return FK_EXIT_OK;
        }
    enum { O_SUDO = 256, O_RPATH, O_DEPLOY, O_DEPLOY_BIN, O_SSHOPT, O_OPEN, O_STATUS };
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "sudo", no_argument, NULL, O_SUDO },
        { "remote-path", required_argument, NULL, O_RPATH },
        { "deploy", no_argument, NULL, O_DEPLOY },
        { "deploy-binary", required_argument, NULL, O_DEPLOY_BIN },
        { "ssh-opt", required_argument, NULL, O_SSHOPT },
        { "open", no_argument, NULL, O_OPEN },
        { "status", required_argument, NULL, O_STATUS },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(dd, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o.outdir = optarg; break;
        case O_SUDO: o.sudo = true; break;
        case O_RPATH: o.remote_path = optarg; break;
        case O_DEPLOY: o.deploy = true; break;
        case O_DEPLOY_BIN: o.deploy = true; o.deploy_binary = optarg; break;
        case O_SSHOPT:
            o.ssh_opts = fk_grow(o.ssh_opts, &cap_opts, o.nssh_opts + 1, sizeof *o.ssh_opts);
            o.ssh_opts[o.nssh_opts++] = optarg;
            break;
        case O_OPEN: o.open = true; break;
        case O_STATUS:
            if (!strcmp(optarg, "auto")) o.tty = -1;
            else if (!strcmp(optarg, "live")) o.tty = 1;
            else if (!strcmp(optarg, "lines")) o.tty = 0;
            else fk_usage_error("--status takes auto, live or lines, not '%s'", optarg);
            break;
        case 'h': usage(stdout); return FK_EXIT_OK;
        case ':': fk_usage_error("option '%s' needs an argument", argv[optind - 1]);
        default: fk_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= dd)
        fk_usage_error("give at least one HOST, then -- and the capture command "
                       "(e.g. 'flamekit remote HOST -- pid 1234')");
    if (dd >= argc)
        fk_usage_error("missing '--' and the capture command after the hosts "
                       "(e.g. 'flamekit remote HOST -- host')");
    if (dd + 1 >= argc)
        fk_usage_error("missing the capture command after '--' (e.g. 'pid 1234')");
    if (o.deploy && o.remote_path)
        fk_usage_error("--deploy and --remote-path exclude each other");
    o.hosts = argv + optind;
    o.nhosts = (size_t)(dd - optind);
    for (size_t i = 0; i < o.nhosts; i++)
        if (o.hosts[i][0] == '-' || !o.hosts[i][0])
            fk_usage_error("bad host '%s' (options go before the hosts)", o.hosts[i]);
    o.capture = argv + dd + 1;
    o.ncapture = (size_t)(argc - dd - 1);
    /* Up to a second "--" (run's command follows it, with its own options). */
    for (size_t i = 0; i < o.ncapture && strcmp(o.capture[i], "--"); i++)
        if (!strcmp(o.capture[i], "--stdout") || !strcmp(o.capture[i], "-o") ||
            !strncmp(o.capture[i], "--output", 8)) {
            fk_usage_error("leave '%s' out of the capture arguments: the result comes back "
                           "over ssh (use -o before the hosts for the local directory)",
                           o.capture[i]);
        }
    const char *ssh = getenv("FLAMEKIT_SSH");
    o.ssh_cmd = split_words(ssh && *ssh ? ssh : "ssh", &o.nssh_cmd);
    if (!o.nssh_cmd)
        fk_usage_error("FLAMEKIT_SSH is blank; unset it or name the ssh command");
    int rc = fk_remote_run(&o);
    for (size_t i = 0; i < o.nssh_cmd; i++)
        free(o.ssh_cmd[i]);
    free(o.ssh_cmd);
    free(o.ssh_opts);
    return rc;
}
