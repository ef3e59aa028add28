/* SPDX-License-Identifier: GPL-2.0-only */
/* Remote capture: one ssh child per host, all multiplexed in one poll loop.
 * Each child's stdout carries the result stream (fed to a stream reader that
 * commits the files only after a valid end record), its stderr carries the
 * remote progress and errors (shown verbatim, prefixed with the host). */
#include "remote.h"
#include "stream.h"
#include "util/buf.h"
#include "util/outfile.h"
#include "util/result.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ERR_TAIL_LINES 40
#define ERR_LINE_MAX 2048

struct host {
    const char *name;
    char *prefix;                 /* file-name-safe host, for clashing names */
    pid_t pid;
    int in_fd, out_fd, err_fd;
    size_t upload_off;
    bool upload_done;
    struct fk_stream_reader rd;
    size_t files_seen;
    bool receiving;
    struct fk_buf line;           /* partial stderr line */
    char *err_tail[ERR_TAIL_LINES];
    size_t err_n;                 /* lines seen; tail keeps the last ones */
    int wstatus;
    bool reaped, finished, ok;
    uint64_t start_ns;
    char *status;                 /* live status text */
    char *reason;                 /* failure summary */
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

/* POSIX shell single-quoting: safe through the remote login shell. */
static void add_quoted(struct fk_buf *b, const char *s)
{
    fk_buf_addc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            fk_buf_adds(b, "'\\''");
        else
            fk_buf_addc(b, *s);
    }
    fk_buf_addc(b, '\'');
}

/* The remote shell command for one host. */
static char *remote_command(const struct fk_remote_opts *o, uint64_t deploy_size)
{
    /* One line (no newlines: some login shells mishandle them in quotes).
     * The capture runs in the background while a watcher waits for our
     * stdin to close: when the connection is cut, sshd closes it and the
     * watcher stops the capture, so nothing keeps running unobserved. */
    struct fk_buf s = FK_BUF_INIT;
    fk_buf_adds(&s, "set -u; exec 3<&0; ");
    if (o->deploy) {
        fk_buf_printf(&s,
                      "d=$(mktemp -d \"${TMPDIR:-/tmp}/flamekit.XXXXXX\") || exit 125; "
                      "trap 'rm -rf \"$d\"' EXIT; trap 'exit 143' HUP INT TERM PIPE; "
                      "chmod 700 \"$d\" || exit 125; "
                      "head -c %llu > \"$d/flamekit\" || exit 125; "
                      "n=$(wc -c < \"$d/flamekit\"); "
                      "if [ \"$n\" -ne %llu ]; then echo \"flamekit remote: the copy of "
                      "flamekit was cut short ($n of %llu bytes)\" >&2; exit 125; fi; "
                      "chmod 700 \"$d/flamekit\" || exit 125; b=\"$d/flamekit\"; ",
                      (unsigned long long)deploy_size, (unsigned long long)deploy_size,
                      (unsigned long long)deploy_size);
    } else {
        fk_buf_adds(&s, "b=");
        add_quoted(&s, o->remote_path ? o->remote_path : "flamekit");
        fk_buf_adds(&s, "; ");
    }
    if (o->sudo)
        fk_buf_adds(&s, "sudo -n ");
    /* --stdout right after the command name: after the arguments it would
     * land behind "run --" as an argument of the workload. */
    fk_buf_adds(&s, "\"$b\"");
    for (size_t i = 0; i < o->ncapture; i++) {
        fk_buf_addc(&s, ' ');
        add_quoted(&s, o->capture[i]);
        if (i == 0)
            fk_buf_adds(&s, " --stdout");
    }
    /* Background jobs get /dev/null as stdin: the watcher reads a copy. */
    fk_buf_adds(&s, " </dev/null 3<&- & p=$!; "
                    "{ cat <&3 >/dev/null; kill -TERM $p; } >/dev/null 2>&1 & w=$!; exec 3<&-; "
                    "wait $p; rc=$?; kill $w 2>/dev/null; exit $rc");
    struct fk_buf c = FK_BUF_INIT;
    fk_buf_adds(&c, "sh -c ");
    add_quoted(&c, fk_buf_cstr(&s));
    fk_buf_free(&s);
    return (char *)fk_buf_cstr(&c);
}

static char *safe_prefix(const char *host)
{
    char *p = fk_strdup(host);
    for (char *q = p; *q; q++)
        if (*q == '/' || (unsigned char)*q < 0x20 || *q == 0x7f)
            *q = '_';
    if (p[0] == '.')
        p[0] = '_';
    return p;
}

static void set_status(struct host *h, const char *fmt, ...) FK_PRINTF(2, 3);
static void set_status(struct host *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(h->status);
    h->status = fk_vasprintf(fmt, ap);
    va_end(ap);
}

/* ---- output: live lines on a TTY, one line per event otherwise -------- */

struct ui {
    bool tty;
    size_t drawn;                 /* lines currently on screen */
    uint64_t last_draw_ns;
    size_t width;
};

static void ui_event(struct ui *u, struct host *h, const char *fmt, ...) FK_PRINTF(3, 4);
static void ui_event(struct ui *u, struct host *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[1024];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    fk_text_sanitize(tmp);
    free(h->status);
    h->status = fk_strdup(tmp);
    if (!u->tty)
        fprintf(stderr, "%s: %s\n", h->name, tmp);
}

static void ui_draw(struct ui *u, struct host *hosts, size_t n, bool force)
{
    if (!u->tty)
        return;
    uint64_t now = fk_now_ns();
    if (!force && now - u->last_draw_ns < 100000000ull)
        return;
    u->last_draw_ns = now;
    if (u->drawn)
        fprintf(stderr, "\033[%zuA", u->drawn);
    for (size_t i = 0; i < n; i++) {
        char line[1024];
        const struct host *h = &hosts[i];
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
    u->drawn = n;
    fflush(stderr);
}

/* ---- remote stderr ---------------------------------------------------- */

static void err_line(struct ui *u, struct host *h, const char *raw)
{
    /* Verbatim except control characters: a remote host must not be able
     * to send escape sequences to our terminal. */
    char *line = fk_strdup(raw);
    fk_text_sanitize(line);
    free(h->err_tail[h->err_n % ERR_TAIL_LINES]);
    h->err_tail[h->err_n % ERR_TAIL_LINES] = line;
    h->err_n++;
    if (u->tty)
        set_status(h, "%s", line);
    else
        fprintf(stderr, "%s: %s\n", h->name, line);
}

static void err_bytes(struct ui *u, struct host *h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n' || h->line.len >= ERR_LINE_MAX) {
            if (p[i] != '\n')
                fk_buf_addc(&h->line, p[i]);
            if (h->line.len && h->line.data[h->line.len - 1] == '\r')
                h->line.len--;
            err_line(u, h, fk_buf_cstr(&h->line));
            fk_buf_reset(&h->line);
        } else {
            fk_buf_addc(&h->line, p[i]);
        }
    }
}

static const char *last_err(const struct host *h)
{
    return h->err_n ? h->err_tail[(h->err_n - 1) % ERR_TAIL_LINES] : NULL;
}

/* ---- ssh children ----------------------------------------------------- */

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static bool spawn(const struct fk_remote_opts *o, struct host *h, const char *command)
{
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
        fk_error("cannot create pipes: %s", strerror(errno));
        return false;
    }
    size_t argc = 0;
    const char **argv = fk_calloc(o->nssh_cmd + 2 * o->nssh_opts + 5, sizeof *argv);
    for (size_t i = 0; i < o->nssh_cmd; i++)
        argv[argc++] = o->ssh_cmd[i];
    for (size_t i = 0; i < o->nssh_opts; i++) {
        argv[argc++] = "-o";
        argv[argc++] = o->ssh_opts[i];
    }
    argv[argc++] = "-T";
    argv[argc++] = "--";
    argv[argc++] = h->name;
    argv[argc++] = command;
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fk_error("cannot fork: %s", strerror(errno));
        free(argv);
        return false;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
            _exit(126);
        execvp(argv[0], (char *const *)argv);   /* exec's argv type predates const; it writes nothing */
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    free(argv);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    h->pid = pid;
    h->in_fd = in[1];
    h->out_fd = out[0];
    h->err_fd = err[0];
    int fl = fcntl(h->in_fd, F_GETFL);
    if (fl < 0 || fcntl(h->in_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        fk_error("cannot set up the pipe to ssh: %s", strerror(errno));
        return false;
    }
    return true;
}

static char *describe_exit(int ws)
{
    if (WIFEXITED(ws))
        return fk_asprintf("exit %d", WEXITSTATUS(ws));
    if (WIFSIGNALED(ws))
        return fk_asprintf("killed by signal %d", WTERMSIG(ws));
    return fk_strdup("unknown status");
}

/* Everything from this host has arrived: commit or explain. */
static void finish_host(const struct fk_remote_opts *o, struct ui *u, struct host *h)
{
    if (h->line.len) {
        err_line(u, h, fk_buf_cstr(&h->line));
        fk_buf_reset(&h->line);
    }
    h->finished = true;
    struct fk_stream_reader *r = &h->rd;
    bool ended = r->state == FK_STREAM_ENDED;
    int code = WIFEXITED(h->wstatus) ? WEXITSTATUS(h->wstatus) : -1;
    char *how = describe_exit(h->wstatus);
    if (fk_stream_reader_finish(r, h->prefix)) {
        h->ok = true;
        if (r->message && *r->message)
            err_bytes(u, h, r->message, strlen(r->message)), err_bytes(u, h, "\n", 1);
        ui_event(u, h, "done: %zu file%s", r->nfiles, r->nfiles == 1 ? "" : "s");
    } else if (ended && r->status != 0) {
        /* The remote capture reported an error: its own words, verbatim. */
        const char *m = r->message && *r->message ? r->message : "(no message)";
        size_t ml = strlen(m);
        while (ml && m[ml - 1] == '\n')
            ml--;
        h->reason = fk_asprintf("remote capture failed (status %d): %.*s", r->status, (int)ml, m);
    } else if (r->stream_bytes == 0 && code == 255) {
        const char *e = last_err(h);
        h->reason = fk_asprintf("ssh failed (exit 255)%s%s", e ? ": " : "", e ? e : "");
    } else if (r->stream_bytes == 0 && code == 127) {
        h->reason = o->deploy
            ? fk_asprintf("cannot run the remote command (exit 127): %s", last_err(h) ? last_err(h) : "not found")
            : fk_asprintf("flamekit not found on the host (exit 127); install it, give "
                          "--remote-path, or use --deploy");
    } else if (r->stream_bytes == 0 && code != 0) {
        const char *e = last_err(h);
        h->reason = fk_asprintf("remote command failed (%s)%s%s", how, e ? ": " : "", e ? e : "");
    } else {
        h->reason = fk_asprintf("%s (ssh %s)", r->error ? r->error : "bad result stream", how);
    }
    if (!h->ok) {
        fk_text_sanitize(h->reason);
        ui_event(u, h, "FAILED: %s", h->reason);
    }
    free(how);
}

static void host_io_done(const struct fk_remote_opts *o, struct ui *u, struct host *h)
{
    if (h->out_fd >= 0 || h->err_fd >= 0 || h->finished)
        return;
    close_fd(&h->in_fd);
    if (!h->reaped) {
        while (waitpid(h->pid, &h->wstatus, 0) < 0 && errno == EINTR)
            ;
        h->reaped = true;
    }
    finish_host(o, u, h);
}

static void on_stdout(const struct fk_remote_opts *o, struct ui *u, struct host *h)
{
    char buf[1 << 16];
    ssize_t n = read(h->out_fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close_fd(&h->out_fd);
        close_fd(&h->in_fd);
        host_io_done(o, u, h);
        return;
    }
    if (h->rd.state == FK_STREAM_BROKEN)
        return;    /* drain */
    if (!h->receiving) {
        h->receiving = true;
        ui_event(u, h, "receiving results");
    }
    enum fk_stream_state st = fk_stream_reader_feed(&h->rd, buf, (size_t)n);
    while (h->files_seen < h->rd.nfiles) {
        const struct fk_stream_file_rec *f = &h->rd.files[h->files_seen++];
        ui_event(u, h, "receiving %s (%llu bytes)", f->name, (unsigned long long)f->size);
    }
    /* After the end record the capture exits by itself; stdin stays open
     * until stdout ends, so the watcher never signals a finishing capture. */
    if (st == FK_STREAM_BROKEN) {
        ui_event(u, h, "bad result stream: %s; stopping", h->rd.error);
        close_fd(&h->in_fd);
        kill(h->pid, SIGTERM);
    }
}

static void on_stderr(const struct fk_remote_opts *o, struct ui *u, struct host *h)
{
    char buf[8192];
    ssize_t n = read(h->err_fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close_fd(&h->err_fd);
        host_io_done(o, u, h);
        return;
    }
    err_bytes(u, h, buf, (size_t)n);
}

static void on_stdin(struct ui *u, struct host *h, const char *bin, size_t len)
{
    while (h->upload_off < len) {
        ssize_t n = write(h->in_fd, bin + h->upload_off, len - h->upload_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0) {
            /* The remote side is gone; its stdout/stderr tell why. */
            close_fd(&h->in_fd);
            h->upload_done = true;
            return;
        }
        h->upload_off += (size_t)n;
    }
    h->upload_done = true;
    ui_event(u, h, "flamekit copied (%zu bytes); capturing", len);
}

static char *read_binary(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fk_error("cannot read %s for --deploy: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = fk_malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fk_error("cannot read %s for --deploy: %s", path, n < 0 ? strerror(errno) : "file shrank");
            close(fd);
            free(buf);
            return NULL;
        }
        got += (size_t)n;
    }
    close(fd);
    if (got < 4 || memcmp(buf, "\177ELF", 4)) {
        fk_error("%s is not an ELF binary; give the flamekit binary with --deploy-binary", path);
        free(buf);
        return NULL;
    }
    *len = got;
    return buf;
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

int fk_remote_run(const struct fk_remote_opts *o)
{
    char *outdir = o->outdir ? fk_strdup(o->outdir) : default_outdir();
    if (!fk_outdir_check(outdir, true)) {
        free(outdir);
        return FK_EXIT_ERROR;
    }
    if (access(outdir, W_OK | X_OK) != 0) {
        fk_error("output directory %s is not a writable directory; create it or choose "
                 "another with -o", outdir);
        free(outdir);
        return FK_EXIT_ERROR;
    }
    char *bin = NULL;
    size_t bin_len = 0;
    if (o->deploy) {
        bin = read_binary(o->deploy_binary ? o->deploy_binary : "/proc/self/exe", &bin_len);
        if (!bin) {
            free(outdir);
            return FK_EXIT_ERROR;
        }
    }
    char *command = remote_command(o, bin_len);

    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int, old_term, old_hup, old_pipe;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    struct sigaction ign = { .sa_handler = SIG_IGN };
    sigaction(SIGPIPE, &ign, &old_pipe);

    struct ui u = { .tty = o->tty < 0 ? isatty(STDERR_FILENO) : o->tty, .width = 80 };
    struct winsize ws;
    if (u.tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
        u.width = ws.ws_col;

    size_t n = o->nhosts;
    struct host *hosts = fk_calloc(n, sizeof *hosts);
    for (size_t i = 0; i < n; i++) {
        struct host *h = &hosts[i];
        h->name = o->hosts[i];
        h->prefix = safe_prefix(h->name);
        h->in_fd = h->out_fd = h->err_fd = -1;
        h->start_ns = fk_now_ns();
        fk_stream_reader_init(&h->rd, outdir);
        if (!spawn(o, h, command)) {
            h->reason = fk_strdup("cannot start ssh");
            h->finished = true;
            h->reaped = true;
            close_fd(&h->in_fd);
            close_fd(&h->out_fd);
            close_fd(&h->err_fd);
            continue;
        }
        h->upload_done = !o->deploy;
        if (o->deploy)
            ui_event(&u, h, "connecting; copying flamekit (%zu bytes)", bin_len);
        else
            ui_event(&u, h, "connecting; running %s", o->ncapture ? o->capture[0] : "");
    }
    ui_draw(&u, hosts, n, true);

    struct pollfd *pfd = fk_calloc(3 * n, sizeof *pfd);
    for (;;) {
        size_t np = 0;
        for (size_t i = 0; i < n; i++) {
            struct host *h = &hosts[i];
            if (h->in_fd >= 0 && !h->upload_done)
                pfd[np++] = (struct pollfd){ .fd = h->in_fd, .events = POLLOUT };
            if (h->out_fd >= 0)
                pfd[np++] = (struct pollfd){ .fd = h->out_fd, .events = POLLIN };
            if (h->err_fd >= 0)
                pfd[np++] = (struct pollfd){ .fd = h->err_fd, .events = POLLIN };
        }
        if (np == 0 || interrupted)
            break;
        int r = poll(pfd, np, u.tty ? 200 : -1);
        if (r < 0 && errno != EINTR) {
            fk_error("poll: %s", strerror(errno));
            break;
        }
        for (size_t k = 0; r > 0 && k < np; k++) {
            if (!pfd[k].revents)
                continue;
            for (size_t i = 0; i < n; i++) {
                struct host *h = &hosts[i];
                if (pfd[k].fd == h->in_fd && !h->upload_done)
                    on_stdin(&u, h, bin, bin_len);
                else if (pfd[k].fd == h->out_fd)
                    on_stdout(o, &u, h);
                else if (pfd[k].fd == h->err_fd)
                    on_stderr(o, &u, h);
                else
                    continue;
                break;
            }
        }
        ui_draw(&u, hosts, n, false);
    }

    if (interrupted) {
        for (size_t i = 0; i < n; i++) {
            struct host *h = &hosts[i];
            if (h->finished)
                continue;
            close_fd(&h->in_fd);
            close_fd(&h->out_fd);
            close_fd(&h->err_fd);
            kill(h->pid, SIGTERM);
            while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
                ;
            fk_stream_reader_free(&h->rd);    /* removes the temporaries */
            h->finished = true;
            h->reason = fk_strdup("interrupted; no files written");
            set_status(h, "FAILED: %s", h->reason);
        }
    }
    ui_draw(&u, hosts, n, true);

    /* Summary: on a TTY the live lines already show it; the remote error
     * output of failed hosts follows, verbatim. */
    size_t nok = 0;
    for (size_t i = 0; i < n; i++) {
        struct host *h = &hosts[i];
        if (h->ok) {
            nok++;
            continue;
        }
        if (u.tty && h->err_n) {
            size_t first = h->err_n > ERR_TAIL_LINES ? h->err_n - ERR_TAIL_LINES : 0;
            for (size_t l = first; l < h->err_n; l++)
                fprintf(stderr, "%s: %s\n", h->name, h->err_tail[l % ERR_TAIL_LINES]);
        }
    }
    if (n > 1 || nok < n) {
        fprintf(stderr, "%zu of %zu host%s succeeded\n", nok, n, n == 1 ? "" : "s");
        for (size_t i = 0; i < n; i++)
            if (!hosts[i].ok)
                fprintf(stderr, "%s: FAILED: %s\n", hosts[i].name,
                        hosts[i].reason ? hosts[i].reason : "unknown");
    }
    for (size_t i = 0; i < n; i++) {
        struct host *h = &hosts[i];
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
        if (o->open && svg) {
            fflush(stdout);
            open_file(svg);
        }
    }
    fflush(stdout);

    for (size_t i = 0; i < n; i++) {
        struct host *h = &hosts[i];
        fk_stream_reader_free(&h->rd);
        fk_buf_free(&h->line);
        for (size_t l = 0; l < ERR_TAIL_LINES; l++)
            free(h->err_tail[l]);
        free(h->prefix);
        free(h->status);
        free(h->reason);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    int sig = interrupted;
    free(pfd);
    free(hosts);
    free(command);
    free(bin);
    free(outdir);
    if (sig)
        return 128 + sig;
    return nok == n ? FK_EXIT_OK : FK_EXIT_ERROR;
}
