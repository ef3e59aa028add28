/* SPDX-License-Identifier: GPL-2.0-only */
/* fetchd-sock: git upload-pack over a plain TCP socket. One thread per
 * connection, at most --max-conns of them (excess connections get an
 * immediate "ERR busy" line); git's stdout goes to the socket with splice(),
 * cached responses with sendfile(). Framing: see fetchd-sock(1). */
#include "fetchd/fetchd.h"
#include "util/opt.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

static struct fd_server_opts opt;
static struct fd_cache *cache;
static struct fd_gate gate = FD_GATE_INIT(0);  /* max set from --max-conns */

static const struct fk_cmdline cmdline = {
    "fetchd-sock --repo-root DIR [OPTIONS]",
    "Serve git fetches (git upload-pack --stateless-rpc) over a plain TCP socket.",
    "Request: \"FETCHD1 OP LENGTH REPO\\n\" + LENGTH body bytes (OP: advertise,\n"
    "upload-pack). Response: \"OK\\n\" + stream to EOF, or \"ERR message\\n\".\n"
    "See fetchd-sock(1).",
    NULL,
};

static bool send_all(int fd, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, s, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        s += w;
        len -= (size_t)w;
    }
    return true;
}

static void send_err(int fd, const char *msg)
{
    char line[600];
    int n = snprintf(line, sizeof line, "ERR %s\n", msg);
    (void)send_all(fd, line, (size_t)n);
}

/* Move exactly n bytes from pipe in to fd out. */
static bool splice_n(int in, int out, size_t n)
{
    while (n > 0) {
        ssize_t m = splice(in, NULL, out, NULL, n, SPLICE_F_MOVE | SPLICE_F_MORE);
        if (m < 0 && errno == EINTR)
            continue;
        if (m <= 0)
            return false;
        n -= (size_t)m;
    }
    return true;
}

/* Stream the child's stdout to the socket (and through tee() into the
 * cache file when tmp >= 0). false when the client went away. */
static bool stream(struct fd_child *ch, int sock, int tmp, bool *tmp_ok)
{
    int cp[2] = { -1, -1 };
    if (tmp >= 0) {
        if (pipe2(cp, O_CLOEXEC) != 0) {
            *tmp_ok = false;
            tmp = -1;
        } else
            (void)fcntl(cp[0], F_SETPIPE_SZ, 1 << 20);
    }
    bool ok = true, need_out = false;
    for (;;) {
        /* Wait for data, or (after EAGAIN from the socket) for room in it. */
        struct pollfd p[2] = { { .fd = ch->out, .events = need_out ? 0 : POLLIN },
                               { .fd = sock, .events = POLLRDHUP | (need_out ? POLLOUT : 0) } };
        int r = poll(p, 2, 1000);
        if (r < 0 && errno == EINTR)
            continue;
        if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
            ok = false;
            break;
        }
        if (r <= 0 || (need_out ? !(p[1].revents & POLLOUT) : !(p[0].revents & (POLLIN | POLLHUP))))
            continue;
        need_out = false;
        ssize_t n;
        if (tmp >= 0 && *tmp_ok) {
            n = tee(ch->out, cp[1], 1 << 20, SPLICE_F_NONBLOCK);
            if (n > 0 && !splice_n(cp[0], tmp, (size_t)n))
                *tmp_ok = false;
            if (n > 0 && !splice_n(ch->out, sock, (size_t)n)) {
                ok = false;
                break;
            }
        } else {
            n = splice(ch->out, NULL, sock, NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_MORE | SPLICE_F_NONBLOCK);
        }
        if (n == 0)
            break;      /* EOF: git closed its stdout */
        if (n < 0) {
            if (errno == EAGAIN && tmp < 0)
                need_out = true;    /* pipe non-empty (poll said so): the socket is full */
            if (errno == EAGAIN || errno == EINTR)
                continue;
            ok = false;     /* EPIPE, ECONNRESET, timeout: the client is gone */
            break;
        }
    }
    if (cp[0] >= 0) {
        close(cp[0]);
        close(cp[1]);
    }
    return ok;
}

static bool read_request(int sock, char *hdr, size_t hdrmax, char **body, size_t *blen,
                         enum fd_op *op, char **repo, char *err, size_t errlen)
{
    size_t have = 0;
    char *nl = NULL;
    while (!nl) {
        ssize_t r = recv(sock, hdr + have, hdrmax - 1 - have, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, errlen, "malformed request: connection closed before the header line");
            return false;
        }
        have += (size_t)r;
        hdr[have] = 0;
        nl = memchr(hdr, '\n', have);
        if (!nl && have >= hdrmax - 1) {
            snprintf(err, errlen, "malformed request: header line too long");
            return false;
        }
    }
    *nl = 0;
    char opname[32];
    unsigned long long len;
    int pos = 0;
    if (strncmp(hdr, FD_SOCK_MAGIC " ", sizeof FD_SOCK_MAGIC) != 0 ||
        sscanf(hdr + sizeof FD_SOCK_MAGIC, "%31s %llu %n", opname, &len, &pos) != 2 || pos == 0) {
        snprintf(err, errlen, "malformed request: want \"%s OP LENGTH REPO\"", FD_SOCK_MAGIC);
        return false;
    }
    if (strcmp(opname, "advertise") == 0)
        *op = FD_OP_ADVERTISE;
    else if (strcmp(opname, "upload-pack") == 0)
        *op = FD_OP_UPLOAD_PACK;
    else {
        snprintf(err, errlen, "malformed request: unknown operation '%s'", opname);
        return false;
    }
    if (len > FD_MAX_BODY) {
        snprintf(err, errlen, "malformed request: body of %llu bytes is too large", len);
        return false;
    }
    *repo = hdr + sizeof FD_SOCK_MAGIC + pos;
    size_t extra = have - (size_t)(nl + 1 - hdr);
    if (extra > len) {
        snprintf(err, errlen, "malformed request: more data than LENGTH");
        return false;
    }
    *blen = (size_t)len;
    *body = fk_malloc(*blen + 1);
    memcpy(*body, nl + 1, extra);
    for (size_t got = extra; got < *blen; ) {
        ssize_t r = recv(sock, *body + got, *blen - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, errlen, "malformed request: body shorter than LENGTH");
            return false;
        }
        got += (size_t)r;
    }
    return true;
}

static void serve(int sock)
{
    char hdr[2048], err[512];
    char *body = NULL, *repo = NULL, *gitdir = NULL;
    size_t blen = 0;
    enum fd_op op;
    struct timeval tv = { .tv_sec = 30 };
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    tv.tv_sec = 120;   /* a stalled reader cannot hold a slot forever */
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (!read_request(sock, hdr, sizeof hdr, &body, &blen, &op, &repo, err, sizeof err))
        goto fail;
    if (!(gitdir = fd_repo_resolve(opt.repo_root, repo, err, sizeof err)))
        goto fail;
    if (op == FD_OP_UPLOAD_PACK && !fd_check_request(body, blen, err, sizeof err))
        goto fail;
    char key[64];
    if (cache && op == FD_OP_UPLOAD_PACK) {
        fd_cache_key(key, gitdir, body, blen);
        uint64_t size;
        int cf = fd_cache_lookup(cache, key, &size);
        if (cf >= 0) {
            off_t off = 0;
            bool ok = send_all(sock, "OK\n", 3);
            while (ok && (uint64_t)off < size) {
                ssize_t m = sendfile(sock, cf, &off, size - (uint64_t)off);
                if (m < 0 && errno == EINTR)
                    continue;
                ok = m > 0;
            }
            close(cf);
            if (opt.verbose)
                fd_log("%s: cache hit, %s", repo, ok ? "sent" : "client went away");
            goto out;
        }
    }
    struct fd_child ch;
    if (!fd_child_start(&ch, op, gitdir, body, blen)) {
        snprintf(err, sizeof err, "cannot run git upload-pack");
        goto fail;
    }
    if (!send_all(sock, "OK\n", 3)) {
        fd_child_kill(&ch);
        goto out;
    }
    char *tmpname = NULL;
    int tmp = cache && op == FD_OP_UPLOAD_PACK ? fd_cache_begin(cache, &tmpname) : -1;
    bool tmp_ok = true;
    if (stream(&ch, sock, tmp, &tmp_ok)) {
        bool git_ok = fd_child_finish(&ch);
        if (!git_ok)
            fk_warn("%s: git upload-pack failed; response truncated", repo);
        if (tmp >= 0)
            fd_cache_end(cache, tmp, tmpname, key, git_ok && tmp_ok);
        if (opt.verbose)
            fd_log("%s: %s served", repo, op == FD_OP_ADVERTISE ? "advertisement" : "pack");
    } else {
        fd_child_kill(&ch);
        if (tmp >= 0)
            fd_cache_end(cache, tmp, tmpname, key, false);
        if (opt.verbose)
            fd_log("%s: client went away; git killed", repo);
    }
    goto out;
fail:
    if (opt.verbose)
        fd_log("request refused: %s", err);
    send_err(sock, err);
out:
    free(body);
    free(gitdir);
}

static void *conn_thread(void *arg)
{
    int sock = (int)(intptr_t)arg;
    serve(sock);
    /* Free the slot before the client sees EOF, so its next request fits. */
    fd_gate_release_slot(&gate);
    close(sock);
    fd_gate_thread_done(&gate);
    return NULL;
}

static int listen_on(const char *addr, int *port)
{
    const char *colon = strrchr(addr, ':');
    char *host = fk_strndup(addr, (size_t)(colon - addr));
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
    int rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
    if (rc != 0)
        fk_die("cannot resolve --listen %s: %s", addr, gai_strerror(rc));
    free(host);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0)
        fk_die("cannot listen on %s: %s", addr, strerror(errno));
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int main(int argc, char **argv)
{
    fk_progname = "fetchd-sock";
    int prc = fd_server_parse(argc, argv, &opt, &cmdline, false);
    if (prc != FK_OPT_CONTINUE)
        return prc;
    gate.max = opt.max_conns;
    cache = fd_cache_open(opt.cache_dir, opt.cache_size);
    fd_server_signals();
    int port;
    int lfd = listen_on(opt.listen, &port);
    fd_server_ready(&opt, port);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 << 10);
    while (!fd_stopping) {
        struct pollfd p = { .fd = lfd, .events = POLLIN };
        if (poll(&p, 1, 200) <= 0)
            continue;
        int s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0)
            continue;
        if (!fd_gate_enter(&gate)) {
            char m[128];
            snprintf(m, sizeof m, "busy: %u connections in flight (--max-conns); retry later", opt.max_conns);
            send_err(s, m);
            close(s);
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, &at, conn_thread, (void *)(intptr_t)s) != 0) {
            send_err(s, "server out of threads");
            close(s);
            fd_gate_cancel(&gate);
        }
    }
    /* Drain: no new connections; in-flight ones finish. */
    close(lfd);
    if (opt.verbose)
        fd_log("stopping: waiting for %u connection(s)", fd_gate_active(&gate));
    fd_gate_drain(&gate);
    fd_cache_close(cache);
    return 0;
}
