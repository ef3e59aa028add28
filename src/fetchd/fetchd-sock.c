/* SPDX-License-Identifier: GPL-2.0-only */
/* fetchd-sock: git upload-pack over a plain TCP socket. One thread per
 * connection, at most --max-conns of them and --max-per-peer per client
 * address (excess connections get an immediate "ERR busy" line); git's
 * stdout goes to the socket with splice(), cached responses with
 * sendfile(). Sockets are non-blocking so every wait on the client runs
 * through wait_client() and its deadline and minimum rate (fetchd_pace): a
 * client that trickles its request or stops reading loses its slot.
 * Framing: see fetchd-sock(1). */
#include "fetchd/fetchd.h"
#include "util/opt.h"
#include "cmd/term.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

static struct fetchd_server_opts opt;
static struct fetchd_cache *cache;
static struct fetchd_gate gate = FETCHD_GATE_INIT;  /* limits set from the options */

static const struct fk_cmdline cmdline = {
    "fetchd-sock --repo-root DIR [OPTIONS]",
    "Serve git fetches (git upload-pack --stateless-rpc) over a plain TCP socket.",
    "Request: \"FETCHD1 OP LENGTH REPO\\n\" + LENGTH body bytes (OP: advertise,\n"
    "upload-pack). Response: \"OK\\n\" + stream to EOF, or \"ERR message\\n\".\n"
    "See fetchd-sock(1).",
    NULL,
};

/* One connection: its socket (non-blocking), the client's address (for
 * --max-per-peer and logs) and its time budget. */
struct conn {
    int sock;
    char peer[FETCHD_PEER_MAX];
    struct fetchd_pace pace;
    const char *why;        /* set when the client is dropped */
};

/* Wait until the socket is ready for events, counting the time against the
 * client's pace. false (why set) when the client is dropped. */
static bool wait_client(struct conn *c, short events)
{
    for (;;) {
        struct pollfd p = { .fd = c->sock, .events = events };
        uint64_t t0 = fk_now_ns();
        int r = poll(&p, 1, fetchd_pace_wait_ms(&c->pace));
        if (r < 0 && errno != EINTR) {
            c->why = "poll failed";
            return false;
        }
        if ((c->why = fetchd_pace_check(&c->pace, fk_now_ns() - t0)))
            return false;
        if (r > 0)
            return true;
    }
}

static bool send_all(struct conn *c, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t w = send(c->sock, s, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN && wait_client(c, POLLOUT))
                continue;
            return false;
        }
        fetchd_pace_moved(&c->pace, (uint64_t)w);
        s += w;
        len -= (size_t)w;
    }
    return true;
}

/* One attempt, never waiting: the error line is best effort. */
static void send_err(int fd, const char *msg)
{
    char line[600];
    int n = snprintf(line, sizeof line, "ERR %s\n", msg);
    (void)!send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Move exactly n bytes from pipe in to the cache file out. */
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

/* Move exactly n bytes (already in pipe in) to the client. */
static bool splice_sock(struct conn *c, int in, size_t n)
{
    while (n > 0) {
        ssize_t m = splice(in, NULL, c->sock, NULL, n, SPLICE_F_MOVE | SPLICE_F_MORE | SPLICE_F_NONBLOCK);
        if (m < 0 && (errno == EINTR || (errno == EAGAIN && wait_client(c, POLLOUT))))
            continue;
        if (m <= 0)
            return false;
        fetchd_pace_moved(&c->pace, (uint64_t)m);
        n -= (size_t)m;
    }
    return true;
}

/* Stream the child's stdout to the socket (and through tee() into the
 * cache file when tmp >= 0). false when the client went away or was
 * dropped (c->why). */
static bool stream(struct conn *c, struct fetchd_child *ch, int tmp, bool *tmp_ok)
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
    int sock = c->sock;
    for (;;) {
        /* Wait for data, or (after EAGAIN from the socket) for room in it:
         * only that second wait counts against the client's rate. */
        struct pollfd p[2] = { { .fd = ch->out, .events = need_out ? 0 : POLLIN },
                               { .fd = sock, .events = POLLRDHUP | (need_out ? POLLOUT : 0) } };
        uint64_t t0 = fk_now_ns();
        int r = poll(p, 2, fetchd_pace_wait_ms(&c->pace));
        if (r < 0 && errno == EINTR)
            continue;
        if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
            ok = false;
            break;
        }
        if ((c->why = fetchd_pace_check(&c->pace, need_out ? fk_now_ns() - t0 : 0))) {
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
            if (n > 0 && !splice_sock(c, ch->out, (size_t)n)) {
                ok = false;
                break;
            }
        } else {
            n = splice(ch->out, NULL, sock, NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_MORE | SPLICE_F_NONBLOCK);
            if (n > 0)
                fetchd_pace_moved(&c->pace, (uint64_t)n);
        }
        if (n == 0)
            break;      /* EOF: git closed its stdout */
        if (n < 0) {
            if (errno == EAGAIN && tmp < 0)
                need_out = true;    /* pipe non-empty (poll said so): the socket is full */
            if (errno == EAGAIN || errno == EINTR)
                continue;
            ok = false;     /* EPIPE, ECONNRESET: the client is gone */
            break;
        }
    }
    if (cp[0] >= 0) {
        close(cp[0]);
        close(cp[1]);
    }
    return ok;
}

/* recv into buf, waiting (within the client's pace) for data. */
static ssize_t recv_some(struct conn *c, char *buf, size_t len)
{
    for (;;) {
        ssize_t r = recv(c->sock, buf, len, 0);
        if (r >= 0) {
            fetchd_pace_moved(&c->pace, (uint64_t)r);
            return r;
        }
        if (errno == EINTR || (errno == EAGAIN && wait_client(c, POLLIN)))
            continue;
        return -1;
    }
}

static bool read_request(struct conn *c, char *hdr, size_t hdrmax, char **body, size_t *blen,
                         enum fetchd_op *op, char **repo, char *err, size_t errlen)
{
    size_t have = 0;
    char *nl = NULL;
    while (!nl) {
        ssize_t r = recv_some(c, hdr + have, hdrmax - 1 - have);
        if (r <= 0) {
            snprintf(err, errlen, "%s", c->why ? c->why : "malformed request: connection closed before the header line");
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
    if (strncmp(hdr, FETCHD_SOCK_MAGIC " ", sizeof FETCHD_SOCK_MAGIC) != 0 ||
        sscanf(hdr + sizeof FETCHD_SOCK_MAGIC, "%31s %llu %n", opname, &len, &pos) != 2 || pos == 0) {
        snprintf(err, errlen, "malformed request: want \"%s OP LENGTH REPO\"", FETCHD_SOCK_MAGIC);
        return false;
    }
    if (strcmp(opname, "advertise") == 0)
        *op = FETCHD_OP_ADVERTISE;
    else if (strcmp(opname, "upload-pack") == 0)
        *op = FETCHD_OP_UPLOAD_PACK;
    else {
        snprintf(err, errlen, "malformed request: unknown operation '%s'", opname);
        return false;
    }
    if (len > FETCHD_MAX_BODY) {
        snprintf(err, errlen, "malformed request: body of %llu bytes is too large", len);
        return false;
    }
    *repo = hdr + sizeof FETCHD_SOCK_MAGIC + pos;
    size_t extra = have - (size_t)(nl + 1 - hdr);
    if (extra > len) {
        snprintf(err, errlen, "malformed request: more data than LENGTH");
        return false;
    }
    *blen = (size_t)len;
    *body = fk_malloc(*blen + 1);
    memcpy(*body, nl + 1, extra);
    for (size_t got = extra; got < *blen; ) {
        ssize_t r = recv_some(c, *body + got, *blen - got);
        if (r <= 0) {
            snprintf(err, errlen, "%s", c->why ? c->why : "malformed request: body shorter than LENGTH");
            return false;
        }
        got += (size_t)r;
    }
    return true;
}

static void serve(struct conn *c)
{
    char hdr[2048], err[512];
    char *body = NULL, *repo = NULL, *gitdir = NULL;
    size_t blen = 0;
    enum fetchd_op op;
    int sock = c->sock;
    fetchd_pace_init(&c->pace, &opt);
    if (!read_request(c, hdr, sizeof hdr, &body, &blen, &op, &repo, err, sizeof err))
        goto fail;
    fetchd_pace_respond(&c->pace);
    if (!(gitdir = fetchd_repo_resolve(opt.repo_root, repo, err, sizeof err)))
        goto fail;
    if (op == FETCHD_OP_UPLOAD_PACK && !fetchd_check_request(body, blen, err, sizeof err))
        goto fail;
    char key[FETCHD_CACHE_KEY];
    if (cache && op == FETCHD_OP_UPLOAD_PACK) {
        fetchd_cache_key(key, gitdir, body, blen);
        uint64_t size;
        int cf = fetchd_cache_lookup(cache, key, &size);
        if (cf >= 0) {
            off_t off = 0;
            bool ok = send_all(c, "OK\n", 3);
            while (ok && (uint64_t)off < size) {
                ssize_t m = sendfile(sock, cf, &off, size - (uint64_t)off);
                if (m < 0 && (errno == EINTR || (errno == EAGAIN && wait_client(c, POLLOUT))))
                    continue;
                ok = m > 0;
                if (ok)
                    fetchd_pace_moved(&c->pace, (uint64_t)m);
            }
            close(cf);
            if (opt.verbose)
                fk_error("%s: cache hit, %s", repo, ok ? "sent" : c->why ? c->why : "client went away");
            goto out;
        }
    }
    struct fetchd_child ch;
    if (!fetchd_child_start(&ch, op, gitdir, body, blen)) {
        snprintf(err, sizeof err, "cannot run git upload-pack");
        goto fail;
    }
    if (!send_all(c, "OK\n", 3)) {
        fetchd_child_kill(&ch);
        goto out;
    }
    char *tmpname = NULL;
    int tmp = cache && op == FETCHD_OP_UPLOAD_PACK ? fetchd_cache_begin(cache, &tmpname) : -1;
    bool tmp_ok = true;
    if (stream(c, &ch, tmp, &tmp_ok)) {
        bool git_ok = fetchd_child_finish(&ch);
        if (!git_ok)
            fk_warn("%s: git upload-pack failed; response truncated", repo);
        if (tmp >= 0)
            fetchd_cache_end(cache, tmp, tmpname, key, git_ok && tmp_ok);
        if (opt.verbose)
            fk_error("%s: %s served", repo, op == FETCHD_OP_ADVERTISE ? "advertisement" : "pack");
    } else {
        fetchd_child_kill(&ch);
        if (tmp >= 0)
            fetchd_cache_end(cache, tmp, tmpname, key, false);
        if (opt.verbose)
            fk_error("%s: %s; git killed", repo, c->why ? c->why : "client went away");
    }
    goto out;
fail:
    if (opt.verbose)
        fk_error("request refused: %s", err);
    send_err(sock, err);
out:
    if (c->why && opt.verbose)
        fk_error("%s: dropped: %s", c->peer, c->why);
    free(body);
    free(gitdir);
}

static void *conn_thread(void *arg)
{
    struct conn *c = arg;
    serve(c);
    /* Free the slot before the client sees EOF, so its next request fits. */
    fetchd_gate_release_slot(&gate, c->peer);
    close(c->sock);
    free(c);
    fetchd_gate_thread_done(&gate);
    return NULL;
}

/* The client's address without its port: what --max-per-peer counts. */
static void peer_name(const struct sockaddr_storage *ss, char *out, size_t n)
{
    const void *a = ss->ss_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
                                              : (const void *)&((const struct sockaddr_in *)ss)->sin_addr;
    if (!inet_ntop(ss->ss_family, a, out, (socklen_t)n))
        snprintf(out, n, "unknown");
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
    int prc = fetchd_server_parse(argc, argv, &opt, &cmdline, false);
    if (prc != FK_OPT_CONTINUE)
        return prc;
    gate.max = (unsigned)opt.max_conns;
    gate.max_peer = (unsigned)opt.max_per_peer;
    cache = fetchd_cache_open(opt.cache_dir, opt.cache_size);
    fetchd_server_signals();
    int port;
    int lfd = listen_on(opt.listen, &port);
    fetchd_server_ready(&opt, port);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 << 10);
    while (!fk_stop_signal) {
        struct pollfd p = { .fd = lfd, .events = POLLIN };
        if (poll(&p, 1, 200) <= 0)
            continue;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int s = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (s < 0)
            continue;
        struct conn *c = fk_calloc(1, sizeof *c);
        c->sock = s;
        peer_name(&ss, c->peer, sizeof c->peer);
        enum fetchd_admit adm = fetchd_gate_enter(&gate, c->peer);
        if (adm != FETCHD_ADMIT) {
            char m[160];
            fetchd_gate_busy_msg(&gate, adm, "connections", m, sizeof m);
            send_err(s, m);
            if (opt.verbose)
                fk_error("%s: refused: %s", c->peer, m);
            close(s);
            free(c);
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, &at, conn_thread, c) != 0) {
            send_err(s, "server out of threads");
            fetchd_gate_cancel(&gate, c->peer);
            close(s);
            free(c);
        }
    }
    /* Drain: no new connections; in-flight ones finish. */
    close(lfd);
    if (opt.verbose)
        fk_error("stopping: waiting for %u connection(s)", fetchd_gate_active(&gate));
    fetchd_gate_drain(&gate);
    fetchd_cache_close(cache);
    return 0;
}
