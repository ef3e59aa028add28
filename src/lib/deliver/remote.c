/* SPDX-License-Identifier: GPL-2.0-only */
/* Remote capture: one ssh child per host, all multiplexed in one poll loop.
 * Each child's stdout carries the result stream (fed to a stream reader that
 * commits the files only after a valid end record), its stderr carries the
 * remote progress and errors (handed to the caller verbatim but for control
 * characters, line by line). */
#include "remote.h"
#include "stream.h"
#include "util/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ERR_LINE_MAX 2048

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

/* ---- what the caller is told: events and stderr lines ------------------ */

/* Tell the caller one line about h: it becomes h->status. */
static void say(struct fk_remote *r, struct fk_remote_host *h, const char *fmt, ...) FK_PRINTF(3, 4);
static void say(struct fk_remote *r, struct fk_remote_host *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[1024];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    fk_text_sanitize(tmp);
    free(h->status);
    h->status = fk_strdup(tmp);
    if (r->o->line)
        r->o->line(r->o->ctx, h, tmp);
}

static void err_line(struct fk_remote *r, struct fk_remote_host *h, const char *raw)
{
    /* Verbatim except control characters: a remote host must not be able
     * to send escape sequences to the user's terminal. */
    char *line = fk_strdup(raw);
    fk_text_sanitize(line);
    free(h->err_tail[h->err_n % FK_REMOTE_ERR_TAIL]);
    h->err_tail[h->err_n % FK_REMOTE_ERR_TAIL] = line;
    h->err_n++;
    say(r, h, "%s", line);
}

static void err_bytes(struct fk_remote *r, struct fk_remote_host *h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n' || h->line.len >= ERR_LINE_MAX) {
            if (p[i] != '\n')
                fk_buf_addc(&h->line, p[i]);
            if (h->line.len && h->line.data[h->line.len - 1] == '\r')
                h->line.len--;
            err_line(r, h, fk_buf_cstr(&h->line));
            fk_buf_reset(&h->line);
        } else {
            fk_buf_addc(&h->line, p[i]);
        }
    }
}

static const char *last_err(const struct fk_remote_host *h)
{
    return h->err_n ? h->err_tail[(h->err_n - 1) % FK_REMOTE_ERR_TAIL] : NULL;
}

const char *fk_remote_err_line(const struct fk_remote_host *h, size_t i)
{
    size_t first = h->err_n > FK_REMOTE_ERR_TAIL ? h->err_n - FK_REMOTE_ERR_TAIL : 0;
    return first + i < h->err_n ? h->err_tail[(first + i) % FK_REMOTE_ERR_TAIL] : NULL;
}

/* ---- ssh children ----------------------------------------------------- */

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Start ssh for h; NULL, or why it could not start. */
static char *spawn(const struct fk_remote_opts *o, struct fk_remote_host *h, const char *command)
{
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
        char *why = fk_asprintf("cannot create pipes: %s", strerror(errno));
        int *fds[] = { in, out, err };
        for (size_t i = 0; i < 3; i++)
            close_fd(&fds[i][0]), close_fd(&fds[i][1]);
        return why;
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
        char *why = fk_asprintf("cannot fork: %s", strerror(errno));
        free(argv);
        int *fds[] = { in, out, err };
        for (size_t i = 0; i < 3; i++)
            close_fd(&fds[i][0]), close_fd(&fds[i][1]);
        return why;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
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
    if (fl < 0 || fcntl(h->in_fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return fk_asprintf("cannot set up the pipe to ssh: %s", strerror(errno));
    return NULL;
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
static void finish_host(struct fk_remote *r, struct fk_remote_host *h)
{
    if (h->line.len) {
        err_line(r, h, fk_buf_cstr(&h->line));
        fk_buf_reset(&h->line);
    }
    h->finished = true;
    struct fk_stream_reader *rd = &h->rd;
    bool ended = rd->state == FK_STREAM_ENDED;
    int code = WIFEXITED(h->wstatus) ? WEXITSTATUS(h->wstatus) : -1;
    char *how = describe_exit(h->wstatus);
    if (fk_stream_reader_finish(rd, h->prefix)) {
        h->ok = true;
        if (rd->message && *rd->message)
            err_bytes(r, h, rd->message, strlen(rd->message)), err_bytes(r, h, "\n", 1);
        say(r, h, "done: %zu file%s", rd->nfiles, rd->nfiles == 1 ? "" : "s");
    } else if (ended && rd->status != 0) {
        /* The remote capture reported an error: its own words, verbatim. */
        const char *m = rd->message && *rd->message ? rd->message : "(no message)";
        size_t ml = strlen(m);
        while (ml && m[ml - 1] == '\n')
            ml--;
        h->reason = fk_asprintf("remote capture failed (status %d): %.*s", rd->status, (int)ml, m);
    } else if (rd->stream_bytes == 0 && code == 255) {
        const char *e = last_err(h);
        h->reason = fk_asprintf("ssh failed (exit 255)%s%s", e ? ": " : "", e ? e : "");
    } else if (rd->stream_bytes == 0 && code == 127) {
        h->reason = r->o->deploy
            ? fk_asprintf("cannot run the remote command (exit 127): %s", last_err(h) ? last_err(h) : "not found")
            : fk_asprintf("flamekit not found on the host (exit 127); install it, give "
                          "--remote-path, or use --deploy");
    } else if (rd->stream_bytes == 0 && code != 0) {
        const char *e = last_err(h);
        h->reason = fk_asprintf("remote command failed (%s)%s%s", how, e ? ": " : "", e ? e : "");
    } else {
        h->reason = fk_asprintf("%s (ssh %s)", rd->error ? rd->error : "bad result stream", how);
    }
    if (!h->ok) {
        fk_text_sanitize(h->reason);
        say(r, h, "FAILED: %s", h->reason);
    }
    free(how);
}

static void host_io_done(struct fk_remote *r, struct fk_remote_host *h)
{
    if (h->out_fd >= 0 || h->err_fd >= 0 || h->finished)
        return;
    close_fd(&h->in_fd);
    if (!h->reaped) {
        while (waitpid(h->pid, &h->wstatus, 0) < 0 && errno == EINTR)
            ;
        h->reaped = true;
    }
    finish_host(r, h);
}

static void on_stdout(struct fk_remote *r, struct fk_remote_host *h)
{
    char buf[1 << 16];
    ssize_t n = read(h->out_fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close_fd(&h->out_fd);
        close_fd(&h->in_fd);
        host_io_done(r, h);
        return;
    }
    if (h->rd.state == FK_STREAM_BROKEN)
        return;    /* drain */
    if (!h->receiving) {
        h->receiving = true;
        say(r, h, "receiving results");
    }
    enum fk_stream_state st = fk_stream_reader_feed(&h->rd, buf, (size_t)n);
    while (h->files_seen < h->rd.nfiles) {
        const struct fk_stream_file_rec *f = &h->rd.files[h->files_seen++];
        say(r, h, "receiving %s (%llu bytes)", f->name, (unsigned long long)f->size);
    }
    /* After the end record the capture exits by itself; stdin stays open
     * until stdout ends, so the watcher never signals a finishing capture. */
    if (st == FK_STREAM_BROKEN) {
        say(r, h, "bad result stream: %s; stopping", h->rd.error);
        close_fd(&h->in_fd);
        kill(h->pid, SIGTERM);
    }
}

static void on_stderr(struct fk_remote *r, struct fk_remote_host *h)
{
    char buf[8192];
    ssize_t n = read(h->err_fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close_fd(&h->err_fd);
        host_io_done(r, h);
        return;
    }
    err_bytes(r, h, buf, (size_t)n);
}

static void on_stdin(struct fk_remote *r, struct fk_remote_host *h)
{
    while (h->upload_off < r->bin_len) {
        ssize_t n = write(h->in_fd, r->bin + h->upload_off, r->bin_len - h->upload_off);
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
    say(r, h, "flamekit copied (%zu bytes); capturing", r->bin_len);
}

/* The --deploy binary, whole; NULL with the reason in err. */
static char *read_binary(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot read %s for --deploy: %s", path, strerror(errno));
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
            snprintf(err, errlen, "cannot read %s for --deploy: %s", path,
                     n < 0 ? strerror(errno) : "file shrank");
            close(fd);
            free(buf);
            return NULL;
        }
        got += (size_t)n;
    }
    close(fd);
    if (got < 4 || memcmp(buf, "\177ELF", 4)) {
        snprintf(err, errlen, "%s is not an ELF binary; give the flamekit binary with --deploy-binary", path);
        free(buf);
        return NULL;
    }
    *len = got;
    return buf;
}

bool fk_remote_start(struct fk_remote *r, const struct fk_remote_opts *o, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    if (o->deploy) {
        r->bin = read_binary(o->deploy_binary ? o->deploy_binary : "/proc/self/exe", &r->bin_len,
                             err, errlen);
        if (!r->bin)
            return false;
    }
    r->command = remote_command(o, r->bin_len);
    r->nhosts = o->nhosts;
    r->hosts = fk_calloc(r->nhosts, sizeof *r->hosts);
    r->pfd = fk_calloc(3 * r->nhosts, sizeof *r->pfd);
    for (size_t i = 0; i < r->nhosts; i++) {
        struct fk_remote_host *h = &r->hosts[i];
        h->name = o->hosts[i];
        h->prefix = safe_prefix(h->name);
        h->in_fd = h->out_fd = h->err_fd = -1;
        h->start_ns = fk_now_ns();
        fk_stream_reader_init(&h->rd, o->outdir);
        char *why = spawn(o, h, r->command);
        if (why) {
            h->reason = fk_asprintf("cannot start ssh: %s", why);
            free(why);
            h->finished = true;
            h->reaped = h->pid <= 0;
            close_fd(&h->in_fd);
            close_fd(&h->out_fd);
            close_fd(&h->err_fd);
            if (!h->reaped) {
                kill(h->pid, SIGTERM);
                while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
                    ;
                h->reaped = true;
            }
            say(r, h, "FAILED: %s", h->reason);
            continue;
        }
        h->upload_done = !o->deploy;
        if (o->deploy)
            say(r, h, "connecting; copying flamekit (%zu bytes)", r->bin_len);
        else
            say(r, h, "connecting; running %s", o->ncapture ? o->capture[0] : "");
    }
    return true;
}

bool fk_remote_step(struct fk_remote *r, int timeout_ms, char *err, size_t errlen)
{
    err[0] = '\0';
    size_t np = 0;
    for (size_t i = 0; i < r->nhosts; i++) {
        struct fk_remote_host *h = &r->hosts[i];
        if (h->in_fd >= 0 && !h->upload_done)
            r->pfd[np++] = (struct pollfd){ .fd = h->in_fd, .events = POLLOUT };
        if (h->out_fd >= 0)
            r->pfd[np++] = (struct pollfd){ .fd = h->out_fd, .events = POLLIN };
        if (h->err_fd >= 0)
            r->pfd[np++] = (struct pollfd){ .fd = h->err_fd, .events = POLLIN };
    }
    if (np == 0)
        return false;
    int n = poll(r->pfd, np, timeout_ms);
    if (n < 0 && errno != EINTR) {
        snprintf(err, errlen, "poll: %s", strerror(errno));
        return false;
    }
    for (size_t k = 0; n > 0 && k < np; k++) {
        if (!r->pfd[k].revents)
            continue;
        for (size_t i = 0; i < r->nhosts; i++) {
            struct fk_remote_host *h = &r->hosts[i];
            if (r->pfd[k].fd == h->in_fd && !h->upload_done)
                on_stdin(r, h);
            else if (r->pfd[k].fd == h->out_fd)
                on_stdout(r, h);
            else if (r->pfd[k].fd == h->err_fd)
                on_stderr(r, h);
            else
                continue;
            break;
        }
    }
    return true;
}

void fk_remote_cancel(struct fk_remote *r)
{
    for (size_t i = 0; i < r->nhosts; i++) {
        struct fk_remote_host *h = &r->hosts[i];
        if (h->finished)
            continue;
        close_fd(&h->in_fd);
        close_fd(&h->out_fd);
        close_fd(&h->err_fd);
        kill(h->pid, SIGTERM);
        while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        h->reaped = true;
        fk_stream_reader_free(&h->rd);    /* removes the temporaries */
        h->finished = true;
        h->reason = fk_strdup("interrupted; no files written");
        free(h->status);
        h->status = fk_asprintf("FAILED: %s", h->reason);
    }
}

void fk_remote_free(struct fk_remote *r)
{
    for (size_t i = 0; r->hosts && i < r->nhosts; i++) {
        struct fk_remote_host *h = &r->hosts[i];
        fk_stream_reader_free(&h->rd);
        fk_buf_free(&h->line);
        for (size_t l = 0; l < FK_REMOTE_ERR_TAIL; l++)
            free(h->err_tail[l]);
        free(h->prefix);
        free(h->status);
        free(h->reason);
    }
    free(r->hosts);
    free(r->pfd);
    free(r->command);
    free(r->bin);
    memset(r, 0, sizeof *r);
}
