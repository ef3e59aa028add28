/* SPDX-License-Identifier: GPL-2.0-only */
/* Clients of fetchd-grpc (grpc core C API) and fetchd-sock (the framing
 * documented in fetchd-sock(1)). One request at a time per client. */
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
    grpc_completion_queue *cq;
    bool borrowed;          /* chan belongs to another client (fetchd_client_share) */
};

bool fetchd_client_small_window;

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
        /* No BDP probing: the window stays at 64K, not grown to megabytes. */
        a[1].key = bdp_probe;
        a[1].value.integer = 0;
        a[2].key = lookahead;
        a[2].value.integer = 64 << 10;
        grpc_channel_args args = { fetchd_client_small_window ? 3 : 1, a };
        grpc_channel_credentials *cr = grpc_insecure_credentials_create();
        c->chan = grpc_channel_create(addr, cr, &args);
        grpc_channel_credentials_release(cr);
        c->cq = grpc_completion_queue_create_for_pluck(NULL);
    }
    return c;
}

struct fetchd_client *fetchd_client_share(struct fetchd_client *c)
{
    struct fetchd_client *s = fk_calloc(1, sizeof *s);
    s->t = c->t;
    s->host = fk_strdup(c->host);
    s->port = fk_strdup(c->port);
    if (c->chan) {
        s->chan = c->chan;
        s->borrowed = true;
        s->cq = grpc_completion_queue_create_for_pluck(NULL);
    }
    return s;
}

void fetchd_client_free(struct fetchd_client *c)
{
    if (!c)
        return;
    if (c->chan) {
        if (!c->borrowed)
            grpc_channel_destroy(c->chan);
        grpc_completion_queue_shutdown(c->cq);
        while (grpc_completion_queue_pluck(c->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
            ;
        grpc_completion_queue_destroy(c->cq);
    }
    free(c->host);
    free(c->port);
    free(c);
}

static bool pluck(struct fetchd_client *c, void *tag)
{
    grpc_event ev = grpc_completion_queue_pluck(c->cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    return ev.type == GRPC_OP_COMPLETE && ev.success;
}

static bool call_grpc(struct fetchd_client *c, enum fetchd_op op, const char *repo,
                      const void *body, size_t len,
                      bool (*sink)(void *, const void *, size_t), void *arg,
                      char *err, size_t errlen)
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
    grpc_slice s = grpc_slice_from_copied_buffer((const char *)pb, plen);
    free(pb);
    grpc_byte_buffer *req = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    grpc_slice method = grpc_slice_from_static_string(op == FETCHD_OP_ADVERTISE ? FETCHD_GRPC_ADVERTISE : FETCHD_GRPC_UPLOAD_PACK);
    grpc_call *call = grpc_channel_create_call(c->chan, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq, method, NULL,
                                               gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_metadata_array imd, tmd;
    grpc_metadata_array_init(&imd);
    grpc_metadata_array_init(&tmd);
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = req;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
    bool ok = grpc_call_start_batch(call, ops, 4, (void *)1, NULL) == GRPC_CALL_OK && pluck(c, (void *)1);
    grpc_byte_buffer_destroy(req);
    bool sink_ok = true;
    while (ok) {
        grpc_byte_buffer *msg = NULL;
        memset(ops, 0, sizeof ops);
        ops[0].op = GRPC_OP_RECV_MESSAGE;
        ops[0].data.recv_message.recv_message = &msg;
        if (grpc_call_start_batch(call, ops, 1, (void *)2, NULL) != GRPC_CALL_OK || !pluck(c, (void *)2) || !msg)
            break;
        grpc_byte_buffer_reader rd;
        if (!grpc_byte_buffer_reader_init(&rd, msg)) {
            grpc_byte_buffer_destroy(msg);
            break;
        }
        grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
        grpc_byte_buffer_reader_destroy(&rd);
        grpc_byte_buffer_destroy(msg);
        Fetchd__Chunk *ch = fetchd__chunk__unpack(NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
        grpc_slice_unref(all);
        if (!ch) {
            snprintf(err, errlen, "malformed message from the server");
            sink_ok = false;
            break;
        }
        if (ch->data.len && !sink(arg, ch->data.data, ch->data.len))
            sink_ok = false;
        fetchd__chunk__free_unpacked(ch, NULL);
        if (!sink_ok)
            break;
    }
    if (!sink_ok)
        grpc_call_cancel(call, NULL);
    grpc_status_code st = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[0].data.recv_status_on_client.trailing_metadata = &tmd;
    ops[0].data.recv_status_on_client.status = &st;
    ops[0].data.recv_status_on_client.status_details = &details;
    bool got = grpc_call_start_batch(call, ops, 1, (void *)3, NULL) == GRPC_CALL_OK && pluck(c, (void *)3);
    bool res = got && st == GRPC_STATUS_OK && sink_ok;
    if (!res && sink_ok) {
        if (!got)
            snprintf(err, errlen, "call failed");
        else
            snprintf(err, errlen, "%.*s (gRPC status %d)", (int)GRPC_SLICE_LENGTH(details),
                     (const char *)GRPC_SLICE_START_PTR(details), (int)st);
    }
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&imd);
    grpc_metadata_array_destroy(&tmd);
    grpc_call_unref(call);
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
        snprintf(err, errlen, "%s", strncmp(buf, "ERR ", 4) == 0 ? buf + 4 : buf);
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

bool fetchd_client_call(struct fetchd_client *c, enum fetchd_op op, const char *repo,
                    const void *body, size_t len,
                    bool (*sink)(void *, const void *, size_t), void *arg,
                    char *err, size_t errlen)
{
    err[0] = 0;
    if (c->t == FETCHD_GRPC)
        return call_grpc(c, op, repo, body, len, sink, arg, err, errlen);
    return call_sock(c, op, repo, body, len, sink, arg, err, errlen);
}
