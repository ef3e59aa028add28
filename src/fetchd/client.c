/* SPDX-License-Identifier: GPL-2.0-only */
/* Clients of fetchd-grpc (grpc core C API) and fetchd-sock (the framing
 * documented in fetchd-sock(1)). A gRPC client runs any number of calls at
 * once on its one connection (HTTP/2 streams), all from the calling thread
 * through one completion queue; a socket client one call at a time, a
 * connection each. */
#include "fetchd/fetchd.h"
#include "fetchd/fetchd.pb-c.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

struct fetchd_client {
    enum fetchd_transport t;
    char *host, *port;
    grpc_channel *chan;
    grpc_completion_queue *cq;  /* of every call on chan: one thread drives them all */
};

uint32_t fetchd_client_window;

static pthread_once_t grpc_once = PTHREAD_ONCE_INIT;
static void grpc_start(void) { grpc_init(); }

struct fetchd_client *fetchd_client_new(enum fetchd_transport t, const char *addr, char *err, size_t errlen)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1]) {
        snprintf(err, errlen, "bad server address '%s' (want HOST:PORT)", addr);
        return NULL;
    }
    struct fetchd_client *c = fk_calloc(1, sizeof *c);
    c->t = t;
    c->host = fk_strndup(addr, (size_t)(colon - addr));
    c->port = fk_strdup(colon + 1);
    if (t == FETCHD_GRPC) {
        pthread_once(&grpc_once, grpc_start);
        /* grpc_arg's key is a char *, which a string literal is not */
        static char max_receive[] = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                    bdp_probe[] = GRPC_ARG_HTTP2_BDP_PROBE,
                    lookahead[] = GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES;
        grpc_arg a[3];
        a[0].type = a[1].type = a[2].type = GRPC_ARG_INTEGER;
        a[0].key = max_receive;
        a[0].value.integer = -1;
        /* A fixed window: no BDP probing, so it is not grown to megabytes. */
        a[1].key = bdp_probe;
        a[1].value.integer = 0;
        a[2].key = lookahead;
        a[2].value.integer = fetchd_client_window > INT32_MAX ? INT32_MAX : (int)fetchd_client_window;
        grpc_channel_args args = { fetchd_client_window ? 3 : 1, a };
        grpc_channel_credentials *cr = grpc_insecure_credentials_create();
        c->chan = grpc_channel_create(addr, cr, &args);
        grpc_channel_credentials_release(cr);
        c->cq = grpc_completion_queue_create_for_next(NULL);
    }
    return c;
}

void fetchd_client_free(struct fetchd_client *c)
{
    if (!c)
        return;
    if (c->chan) {
        grpc_channel_destroy(c->chan);
        grpc_completion_queue_shutdown(c->cq);
        while (grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
            ;
        grpc_completion_queue_destroy(c->cq);
    }
    free(c->host);
    free(c->port);
    free(c);
}

/* ---- gRPC: a Chunk message read where it lies ----
 * Chunk is { bytes data = 1; }. Its bytes go to the sink straight from the
 * received slices: no copy into one contiguous slice (readall) and none
 * into an unpacked message (protobuf-c copies bytes fields). The wire
 * format is protobuf's: a varint key (field << 3 | wire type), then for
 * wire type 2 a varint length and that many bytes. Other fields are
 * skipped, as a protobuf parser would; a second data field is refused
 * (protobuf keeps the last, which a stream cannot: our server sends one). */
struct chunk_rd {
    grpc_byte_buffer_reader r;
    const uint8_t *p, *end;     /* the current slice's unread bytes */
};

static bool rd_more(struct chunk_rd *c)
{
    grpc_slice *s;
    while (c->p == c->end) {
        if (!grpc_byte_buffer_reader_peek(&c->r, &s))
            return false;
        c->p = GRPC_SLICE_START_PTR(*s);
        c->end = c->p + GRPC_SLICE_LENGTH(*s);
    }
    return true;
}

/* 0: the message ended before the varint; -1: malformed; 1: read. */
static int rd_varint(struct chunk_rd *c, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (!rd_more(c))
            return shift ? -1 : 0;
        uint8_t b = *c->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 1;
    }
    return -1;
}

/* n bytes of the message to sink (NULL: skipped); false if fewer remain or
 * the sink refuses (*refused then). */
static bool rd_bytes(struct chunk_rd *c, uint64_t n, bool (*sink)(void *, const void *, size_t), void *arg,
                     bool *refused)
{
    while (n > 0) {
        if (!rd_more(c))
            return false;
        size_t k = (size_t)(c->end - c->p) < n ? (size_t)(c->end - c->p) : (size_t)n;
        if (sink && !sink(arg, c->p, k)) {
            *refused = true;
            return false;
        }
        c->p += k;
        n -= k;
    }
    return true;
}

bool fetchd_chunk_feed(grpc_byte_buffer *msg, bool (*sink)(void *, const void *, size_t), void *arg,
                       bool *refused, char *err, size_t errlen)
{
    struct chunk_rd c = { .p = NULL, .end = NULL };
    if (!grpc_byte_buffer_reader_init(&c.r, msg)) {
        snprintf(err, errlen, "malformed message from the server (compressed?)");
        return false;
    }
    bool ok = true, seen = false;
    for (;;) {
        uint64_t key, len;
        int k = rd_varint(&c, &key);
        if (k == 0)
            break;
        ok = k > 0;
        if (ok) {
            switch (key & 7) {
            case 0: ok = rd_varint(&c, &len) > 0; break;
            case 1: ok = rd_bytes(&c, 8, NULL, NULL, refused); break;
            case 5: ok = rd_bytes(&c, 4, NULL, NULL, refused); break;
            case 2: {
                bool data = key >> 3 == 1;
                ok = rd_varint(&c, &len) > 0 && !(data && seen) &&
                     rd_bytes(&c, len, data ? sink : NULL, arg, refused);
                seen |= data;
                break;
            }
            default: ok = false;
            }
        }
        if (!ok)
            break;
    }
    grpc_byte_buffer_reader_destroy(&c.r);
    if (!ok && !*refused)
        snprintf(err, errlen, "malformed message from the server");
    return ok;
}

/* ---- gRPC: calls driven from one completion queue ----
 * Each call is three batches: its request (initial metadata, the message,
 * half-close, the server's initial metadata), its status, and one
 * message receive at a time. It ends when all three have completed. */
struct slot {
    grpc_call *call;
    grpc_byte_buffer *req, *msg;
    grpc_metadata_array imd, tmd;
    grpc_status_code st;
    grpc_slice details;
    int pending;                /* batches not yet completed */
    bool sent, failed, refused;
    char err[256];
    void *arg;                  /* the caller's */
};

enum { TAG_SEND, TAG_STATUS, TAG_MSG };
#define TAG(s, k) ((void *)((uintptr_t)(s) | (uintptr_t)(k)))

static bool slot_recv(struct slot *s)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &s->msg;
    s->msg = NULL;
    if (grpc_call_start_batch(s->call, &op, 1, TAG(s, TAG_MSG), NULL) != GRPC_CALL_OK)
        return false;
    s->pending++;
    return true;
}

/* false when nothing of the call is pending (it has ended at once). */
static bool slot_start(struct fetchd_client *c, struct slot *s, grpc_slice method, grpc_slice req)
{
    void *arg = s->arg;
    memset(s, 0, sizeof *s);
    s->arg = arg;
    s->st = GRPC_STATUS_UNKNOWN;
    s->details = grpc_empty_slice();
    s->call = grpc_channel_create_call(c->chan, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq, method, NULL,
                                       gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    s->req = grpc_raw_byte_buffer_create(&req, 1);
    grpc_metadata_array_init(&s->imd);
    grpc_metadata_array_init(&s->tmd);
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = s->req;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->imd;
    bool ok = grpc_call_start_batch(s->call, ops, 4, TAG(s, TAG_SEND), NULL) == GRPC_CALL_OK;
    s->pending += ok;
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[0].data.recv_status_on_client.trailing_metadata = &s->tmd;
    ops[0].data.recv_status_on_client.status = &s->st;
    ops[0].data.recv_status_on_client.status_details = &s->details;
    if (ok) {
        ok = grpc_call_start_batch(s->call, ops, 1, TAG(s, TAG_STATUS), NULL) == GRPC_CALL_OK;
        s->pending += ok;
    }
    ok = ok && slot_recv(s);
    if (!ok) {
        snprintf(s->err, sizeof s->err, "cannot start the call");
        s->failed = true;
        grpc_call_cancel(s->call, NULL);
    }
    return ok;
}

/* The call in s has ended: ok, or why not (into s->err). */
static bool slot_end(struct slot *s)
{
    bool ok = !s->failed && !s->refused && s->sent && s->st == GRPC_STATUS_OK;
    if (!ok && !s->failed && !s->refused) {
        if (!s->sent || (s->st == GRPC_STATUS_UNKNOWN && !GRPC_SLICE_LENGTH(s->details)))
            snprintf(s->err, sizeof s->err, "call failed");
        else
            snprintf(s->err, sizeof s->err, "%.*s (gRPC status %d)", (int)GRPC_SLICE_LENGTH(s->details),
                     (const char *)GRPC_SLICE_START_PTR(s->details), (int)s->st);
    }
    grpc_slice_unref(s->details);
    grpc_metadata_array_destroy(&s->imd);
    grpc_metadata_array_destroy(&s->tmd);
    grpc_byte_buffer_destroy(s->req);
    grpc_call_unref(s->call);
    return ok;
}

/* The slot's next call, if the caller wants one: true when it is under
 * way (a call that fails to start has ended, and the next is asked for). */
static bool slot_launch(struct fetchd_client *c, struct slot *s, const struct fetchd_calls *k, grpc_slice method,
                        grpc_slice req)
{
    while (k->next(s->arg)) {
        slot_start(c, s, method, req);
        if (s->pending > 0)
            return true;
        k->end(s->arg, slot_end(s), s->err);
    }
    return false;
}

static bool run_grpc(struct fetchd_client *c, enum fetchd_op op, const char *repo, const void *body, size_t len,
                     const struct fetchd_calls *k, char *err, size_t errlen)
{
    size_t plen;
    uint8_t *pb;
    if (op == FETCHD_OP_ADVERTISE) {
        Fetchd__AdvertiseRequest m = FETCHD__ADVERTISE_REQUEST__INIT;
        m.repository = (char *)repo;
        plen = fetchd__advertise_request__get_packed_size(&m);
        pb = fk_malloc(plen + 1);
        fetchd__advertise_request__pack(&m, pb);
    } else {
        Fetchd__UploadPackRequest m = FETCHD__UPLOAD_PACK_REQUEST__INIT;
        m.repository = (char *)repo;
        m.body.data = (uint8_t *)body;
        m.body.len = len;
        plen = fetchd__upload_pack_request__get_packed_size(&m);
        pb = fk_malloc(plen + 1);
        fetchd__upload_pack_request__pack(&m, pb);
    }
    grpc_slice req = grpc_slice_from_copied_buffer((const char *)pb, plen);
    free(pb);
    grpc_slice method = grpc_slice_from_static_string(op == FETCHD_OP_ADVERTISE ? FETCHD_GRPC_ADVERTISE : FETCHD_GRPC_UPLOAD_PACK);
    struct slot *sl = fk_calloc((size_t)k->n, sizeof *sl);
    int active = 0;
    bool res = true;
    for (int i = 0; i < k->n; i++) {
        sl[i].arg = k->args[i];
        active += slot_launch(c, &sl[i], k, method, req);
    }
    while (active > 0) {
        grpc_event ev = grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type != GRPC_OP_COMPLETE) {
            snprintf(err, errlen, "the completion queue ended (%d)", (int)ev.type);
            res = false;    /* cannot happen while calls are pending: their memory stays */
            break;
        }
        struct slot *s = (struct slot *)((uintptr_t)ev.tag & ~(uintptr_t)3);
        int kind = (int)((uintptr_t)ev.tag & 3);
        s->pending--;
        if (kind == TAG_SEND)
            s->sent = ev.success;
        else if (kind == TAG_MSG && ev.success && s->msg) {
            bool more = fetchd_chunk_feed(s->msg, k->sink, s->arg, &s->refused, s->err, sizeof s->err);
            grpc_byte_buffer_destroy(s->msg);
            s->msg = NULL;
            if (!more) {
                s->failed |= !s->refused;
                grpc_call_cancel(s->call, NULL);
            } else if (!slot_recv(s)) {
                s->failed = true;
                snprintf(s->err, sizeof s->err, "cannot receive a message");
                grpc_call_cancel(s->call, NULL);
            }
        }
        if (s->pending > 0)
            continue;
        bool ok = slot_end(s);
        k->end(s->arg, ok, s->refused ? "" : s->err);
        active -= !slot_launch(c, s, k, method, req);
    }
    grpc_slice_unref(req);
    free(sl);
    return res;
}

static int dial(struct fetchd_client *c, char *err, size_t errlen)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
    int rc = getaddrinfo(c->host, c->port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", c->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        e = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        snprintf(err, errlen, "cannot connect to %s:%s: %s", c->host, c->port, strerror(e));
    return fd;
}

static bool write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        p += w;
        len -= (size_t)w;
    }
    return true;
}

static bool call_sock(struct fetchd_client *c, enum fetchd_op op, const char *repo,
                      const void *body, size_t len,
                      bool (*sink)(void *, const void *, size_t), void *arg,
                      char *err, size_t errlen)
{
    int fd = dial(c, err, errlen);
    if (fd < 0)
        return false;
    char *hdr = fk_asprintf("%s %s %zu %s\n", FETCHD_SOCK_MAGIC,
                            op == FETCHD_OP_ADVERTISE ? "advertise" : "upload-pack", len, repo);
    bool ok = write_all(fd, hdr, strlen(hdr)) && write_all(fd, body, len);
    free(hdr);
    if (!ok) {
        snprintf(err, errlen, "sending the request: %s", strerror(errno));
        close(fd);
        return false;
    }
    /* No shutdown(SHUT_WR): the server reads our EOF as a disconnect. */
    static __thread char buf[256 << 10];
    /* The status line: "OK" or "ERR message". */
    size_t have = 0;
    char *nl = NULL;
    while (!nl) {
        ssize_t r = read(fd, buf + have, 512 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, errlen, "connection closed before a status line");
            close(fd);
            return false;
        }
        have += (size_t)r;
        nl = memchr(buf, '\n', have);
        if (!nl && have >= 512) {
            snprintf(err, errlen, "malformed status line from the server");
            close(fd);
            return false;
        }
    }
    *nl = 0;
    if (strcmp(buf, "OK") != 0) {
        snprintf(err, errlen, "%.500s", strncmp(buf, "ERR ", 4) == 0 ? buf + 4 : buf);
        close(fd);
        return false;
    }
    size_t rest = have - (size_t)(nl + 1 - buf);
    ok = rest == 0 || sink(arg, nl + 1, rest);
    while (ok) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "receiving: %s", strerror(errno));
            ok = false;
            break;
        }
        if (r == 0)
            break;
        ok = sink(arg, buf, (size_t)r);
    }
    close(fd);
    return ok;
}

bool fetchd_client_run(struct fetchd_client *c, enum fetchd_op op, const char *repo, const void *body, size_t len,
                       const struct fetchd_calls *k, char *err, size_t errlen)
{
    err[0] = 0;
    if (c->t == FETCHD_GRPC)
        return run_grpc(c, op, repo, body, len, k, err, errlen);
    if (k->n != 1) {
        snprintf(err, errlen, "one call at a time on a fetchd-sock connection (asked for %d)", k->n);
        return false;
    }
    char e[512];
    while (k->next(k->args[0])) {
        e[0] = 0;
        bool ok = call_sock(c, op, repo, body, len, k->sink, k->args[0], e, sizeof e);
        k->end(k->args[0], ok, e);
    }
    return true;
}

/* fetchd_client_call as one run of one call. */
struct one_call {
    bool (*sink)(void *, const void *, size_t);
    void *arg;
    bool started, ok;
    char *err;
    size_t errlen;
};

static bool one_next(void *arg)
{
    struct one_call *o = arg;
    bool first = !o->started;
    o->started = true;
    return first;
}

static bool one_sink(void *arg, const void *data, size_t len)
{
    struct one_call *o = arg;
    return o->sink(o->arg, data, len);
}

static void one_end(void *arg, bool ok, const char *err)
{
    struct one_call *o = arg;
    o->ok = ok;
    snprintf(o->err, o->errlen, "%s", err);
}

bool fetchd_client_call(struct fetchd_client *c, enum fetchd_op op, const char *repo,
                    const void *body, size_t len,
                    bool (*sink)(void *, const void *, size_t), void *arg,
                    char *err, size_t errlen)
{
    struct one_call o = { .sink = sink, .arg = arg, .err = err, .errlen = errlen };
    void *args[1] = { &o };
    const struct fetchd_calls k = { 1, args, one_next, one_sink, one_end };
    return fetchd_client_run(c, op, repo, body, len, &k, err, errlen) && o.ok;
}
