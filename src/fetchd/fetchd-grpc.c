/* SPDX-License-Identifier: GPL-2.0-only */
/* fetchd-grpc: git upload-pack over gRPC (grpc core's C API, protobuf-c).
 * The main thread drives the server completion queue (new calls); each
 * accepted call gets a thread with its own completion queue that reads
 * git's stdout into Chunk messages, one SEND_MESSAGE in flight at a time.
 * At most --max-conns calls run, --max-per-peer per client address;
 * excess calls get RESOURCE_EXHAUSTED. Every wait on the client (a send
 * held by HTTP/2 flow control, the final status) has a deadline and counts
 * against the minimum rate (fetchd_pace); when either fails the call is
 * cancelled, so a client that stops reading loses its slot. Keepalive
 * pings, a maximum connection age and idle time bound the connections. */
#include "fetchd/fetchd.h"
#include "util/opt.h"
#include "cmd/term.h"
#include "fetchd/fetchd.pb-c.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

static struct fetchd_server_opts opt;
static struct fetchd_cache *cache;
static grpc_server *server;
static grpc_completion_queue *scq;
static void *methods[2];
static struct fetchd_gate gate = FETCHD_GATE_INIT;  /* limits set from the options */

static const struct fk_cmdline cmdline = {
    "fetchd-grpc --repo-root DIR [OPTIONS]",
    "Serve git fetches (git upload-pack --stateless-rpc) over gRPC: service fetchd.Fetch, "
    "methods Advertise and PostUploadPack (server streaming).",
    "See fetchd-grpc(1).",
    NULL,
};

/* A call waiting for (or just given by) grpc_server_request_registered_call. */
struct pending {
    int kind;               /* 0: new call, 2: shutdown */
    enum fetchd_op op;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload;
    grpc_completion_queue *cq;  /* the call's own queue (its batches complete there) */
    char peer[FETCHD_PEER_MAX];     /* client address without the port */
};

static void request_call(enum fetchd_op op)
{
    struct pending *p = fk_calloc(1, sizeof *p);
    p->op = op;
    grpc_metadata_array_init(&p->md);
    p->cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_call_error e = grpc_server_request_registered_call(server, methods[op], &p->call, &p->deadline,
                                                            &p->md, &p->payload, p->cq, scq, p);
    if (e != GRPC_CALL_OK)
        fk_die("grpc_server_request_registered_call: error %d", (int)e);
}

static void free_pending(struct pending *p)
{
    grpc_metadata_array_destroy(&p->md);
    if (p->payload)
        grpc_byte_buffer_destroy(p->payload);
    if (p->call)
        grpc_call_unref(p->call);
    grpc_completion_queue_shutdown(p->cq);
    while (grpc_completion_queue_pluck(p->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(p->cq);
    free(p);
}

/* Per-call state of a worker thread. */
struct worker {
    struct pending *p;
    grpc_completion_queue *cq;
    int cancelled;
    bool closed;            /* RECV_CLOSE_ON_SERVER completed */
    bool sent_md;
    bool released;          /* slot given back */
    char peer[FETCHD_PEER_MAX];
    struct fetchd_pace pace;
    const char *why;        /* set when the call was cancelled by us */
};

/* Give the slot back before the final status reaches the client, so its
 * next call (e.g. the pack after the advertisement) is admitted. */
static void release_slot(struct worker *w)
{
    if (w->released)
        return;
    w->released = true;
    fetchd_gate_release_slot(&gate, w->peer);
}

#define TAG_CLOSE ((void *)1)
#define TAG_SEND ((void *)2)
#define TAG_STATUS ((void *)3)

static _Thread_local bool plucked_timeout;   /* the last pluck timed out */

static bool pluck(struct worker *w, void *tag, gpr_timespec until)
{
    grpc_event ev = grpc_completion_queue_pluck(w->cq, tag, until, NULL);
    plucked_timeout = ev.type == GRPC_QUEUE_TIMEOUT;
    if (ev.type != GRPC_OP_COMPLETE)
        return false;
    if (tag == TAG_CLOSE)
        w->closed = true;
    return ev.success;
}

static gpr_timespec forever(void) { return gpr_inf_future(GPR_CLOCK_REALTIME); }

static gpr_timespec in_ms(int ms)
{
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* Drop the client: cancel the call (its pending batches then complete at
 * once, failed). */
static void drop(struct worker *w, const char *why)
{
    if (w->why)
        return;
    w->why = why;
    grpc_call_cancel_with_status(w->p->call, GRPC_STATUS_DEADLINE_EXCEEDED, why, NULL);
    if (opt.verbose)
        fk_error("%s: dropped: %s", w->peer, why);
}

/* Wait for the batch tagged tag, which waits on the client (flow control,
 * the final status), within the client's deadline and minimum rate. */
static bool wait_client(struct worker *w, void *tag)
{
    for (;;) {
        uint64_t t0 = fk_now_ns();
        bool ok = pluck(w, tag, w->why ? forever() : in_ms(fetchd_pace_wait_ms(&w->pace)));
        bool done = !plucked_timeout;
        const char *why = w->why ? NULL : fetchd_pace_check(&w->pace, fk_now_ns() - t0);
        if (why) {
            drop(w, why);
            if (done)
                return false;
            continue;       /* the cancel completes the batch at once */
        }
        if (done)
            return ok;      /* (failed, once cancelled) */
    }
}

/* Has the client cancelled or gone away? Polls without blocking. */
static bool client_gone(struct worker *w)
{
    if (!w->closed)
        pluck(w, TAG_CLOSE, gpr_time_0(GPR_CLOCK_REALTIME));
    return w->closed && w->cancelled;
}

static bool send_chunk(struct worker *w, const uint8_t *data, size_t len)
{
    Fetchd__Chunk m = FETCHD__CHUNK__INIT;
    m.data.data = (uint8_t *)data;
    m.data.len = len;
    size_t n = fetchd__chunk__get_packed_size(&m);
    grpc_slice s = grpc_slice_malloc(n);
    fetchd__chunk__pack(&m, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    size_t k = 0;
    if (!w->sent_md) {
        ops[k++].op = GRPC_OP_SEND_INITIAL_METADATA;
        w->sent_md = true;
    }
    ops[k].op = GRPC_OP_SEND_MESSAGE;
    ops[k++].data.send_message.send_message = bb;
    bool ok = grpc_call_start_batch(w->p->call, ops, k, TAG_SEND, NULL) == GRPC_CALL_OK &&
              wait_client(w, TAG_SEND);
    grpc_byte_buffer_destroy(bb);
    if (ok)
        fetchd_pace_moved(&w->pace, len);
    return ok;
}

static void send_status(struct worker *w, grpc_status_code code, const char *msg)
{
    release_slot(w);
    grpc_slice details = grpc_slice_from_copied_string(msg);
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    size_t k = 0;
    if (!w->sent_md) {
        ops[k++].op = GRPC_OP_SEND_INITIAL_METADATA;
        w->sent_md = true;
    }
    ops[k].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[k].data.send_status_from_server.status = code;
    ops[k++].data.send_status_from_server.status_details = &details;
    if (grpc_call_start_batch(w->p->call, ops, k, TAG_STATUS, NULL) == GRPC_CALL_OK)
        wait_client(w, TAG_STATUS);
    grpc_slice_unref(details);
}

/* Read up to len bytes, waiting for a full chunk unless EOF comes first.
 * Returns -1 on error, -2 when the client went away meanwhile. */
static ssize_t read_chunk(struct worker *w, int fd, uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, 100);
        if (r == 0) {
            if (client_gone(w))
                return -2;
            const char *why = fetchd_pace_check(&w->pace, 0);   /* the deadline */
            if (why) {
                drop(w, why);
                return -2;
            }
            continue;
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

static void handle(struct worker *w)
{
    struct pending *p = w->p;
    char err[512];
    const char *name;
    const uint8_t *body = NULL;
    size_t blen = 0;
    Fetchd__AdvertiseRequest *ar = NULL;
    Fetchd__UploadPackRequest *ur = NULL;
    grpc_slice all = grpc_empty_slice();
    if (p->payload) {
        grpc_byte_buffer_reader rd;
        if (grpc_byte_buffer_reader_init(&rd, p->payload)) {
            all = grpc_byte_buffer_reader_readall(&rd);
            grpc_byte_buffer_reader_destroy(&rd);
        }
    }
    size_t alen = GRPC_SLICE_LENGTH(all);
    const uint8_t *adata = GRPC_SLICE_START_PTR(all);
    if (p->op == FETCHD_OP_ADVERTISE)
        ar = fetchd__advertise_request__unpack(NULL, alen, adata);
    else
        ur = fetchd__upload_pack_request__unpack(NULL, alen, adata);
    if (!ar && !ur) {
        send_status(w, GRPC_STATUS_INVALID_ARGUMENT, "malformed request: not a valid protobuf message");
        goto out;
    }
    name = ar ? ar->repository : ur->repository;
    if (ur) {
        body = ur->body.data;
        blen = ur->body.len;
    }
    char *gitdir = fetchd_repo_resolve(opt.repo_root, name, err, sizeof err);
    if (!gitdir) {
        send_status(w, strncmp(err, "repository not found", 20) == 0 ? GRPC_STATUS_NOT_FOUND
                                                                     : GRPC_STATUS_INVALID_ARGUMENT, err);
        goto out;
    }
    if (ur && !fetchd_check_request((const char *)body, blen, err, sizeof err)) {
        send_status(w, GRPC_STATUS_INVALID_ARGUMENT, err);
        free(gitdir);
        goto out;
    }
    uint8_t *buf = fk_malloc(opt.chunk);
    char key[FETCHD_CACHE_KEY];
    if (cache && ur) {
        fetchd_cache_key(key, gitdir, body, blen);
        uint64_t size;
        int cf = fetchd_cache_lookup(cache, key, &size);
        if (cf >= 0) {
            bool ok = true;
            ssize_t n;
            while (ok && (n = read(cf, buf, opt.chunk)) > 0)
                ok = send_chunk(w, buf, (size_t)n);
            close(cf);
            if (ok)
                send_status(w, GRPC_STATUS_OK, "");
            if (opt.verbose)
                fk_error("%s: cache hit, %s", name, ok ? "sent" : w->why ? w->why : "client went away");
            free(buf);
            free(gitdir);
            goto out;
        }
    }
    struct fetchd_child ch;
    if (!fetchd_child_start(&ch, p->op, gitdir, body, blen)) {
        send_status(w, GRPC_STATUS_INTERNAL, "cannot run git upload-pack");
        free(buf);
        free(gitdir);
        goto out;
    }
    char *tmpname = NULL;
    int tmp = cache && ur ? fetchd_cache_begin(cache, &tmpname) : -1;
    bool tmp_ok = true, gone = false;
    for (;;) {
        const char *why = fetchd_pace_check(&w->pace, 0);   /* the deadline, also while git keeps up */
        if (why)
            drop(w, why);
        ssize_t n = w->why ? -2 : read_chunk(w, ch.out, buf, opt.chunk);
        if (n == -2 || (n > 0 && !send_chunk(w, buf, (size_t)n))) {
            gone = true;
            break;
        }
        if (n < 0) {
            tmp_ok = false;
            break;
        }
        if (n == 0)
            break;
        if (tmp >= 0 && tmp_ok) {
            for (ssize_t off = 0; off < n; ) {
                ssize_t m = write(tmp, buf + off, (size_t)(n - off));
                if (m < 0 && errno == EINTR)
                    continue;
                if (m <= 0) {
                    tmp_ok = false;
                    break;
                }
                off += m;
            }
        }
    }
    if (gone) {
        fetchd_child_kill(&ch);
        if (tmp >= 0)
            fetchd_cache_end(cache, tmp, tmpname, key, false);
        if (opt.verbose)
            fk_error("%s: %s; git killed", name, w->why ? w->why : "client went away");
    } else {
        bool git_ok = fetchd_child_finish(&ch) && tmp_ok;
        if (tmp >= 0)
            fetchd_cache_end(cache, tmp, tmpname, key, git_ok);
        send_status(w, git_ok ? GRPC_STATUS_OK : GRPC_STATUS_INTERNAL, git_ok ? "" : "git upload-pack failed");
        if (opt.verbose)
            fk_error("%s: %s served", name, ar ? "advertisement" : "pack");
    }
    free(buf);
    free(gitdir);
out:
    grpc_slice_unref(all);
    if (ar)
        fetchd__advertise_request__free_unpacked(ar, NULL);
    if (ur)
        fetchd__upload_pack_request__free_unpacked(ur, NULL);
}

static void *worker_thread(void *arg)
{
    struct worker w = { .p = arg };
    w.cq = w.p->cq;
    snprintf(w.peer, sizeof w.peer, "%s", w.p->peer);
    fetchd_pace_init(&w.pace, &opt);
    /* The client's own deadline, when earlier, is the call's deadline. */
    gpr_timespec cd = gpr_convert_clock_type(w.p->deadline, GPR_CLOCK_MONOTONIC);
    gpr_timespec left = gpr_time_sub(cd, gpr_now(GPR_CLOCK_MONOTONIC));
    if (gpr_time_cmp(cd, gpr_inf_future(GPR_CLOCK_MONOTONIC)) != 0 &&
        gpr_time_cmp(left, gpr_time_from_millis((int64_t)opt.timeout, GPR_TIMESPAN)) < 0) {
        int64_t ms = gpr_time_to_millis(left);
        w.pace.deadline = fk_now_ns() + (uint64_t)(ms > 0 ? ms : 0) * 1000000ull;
    }
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &w.cancelled;
    if (grpc_call_start_batch(w.p->call, &op, 1, TAG_CLOSE, NULL) == GRPC_CALL_OK) {
        handle(&w);
        if (!w.closed)
            wait_client(&w, TAG_CLOSE);
    }
    free_pending(w.p);
    release_slot(&w);
    fetchd_gate_thread_done(&gate);
    return NULL;
}

/* Calls answered RESOURCE_EXHAUSTED whose batch has not completed: the
 * main thread never waits on a client (one that does not read would stall
 * admission for everyone); reap_rejects() frees them, and cancels those
 * still pending after a second. */
struct rejecting {
    struct pending *p;
    grpc_slice details;
    int cancelled;          /* RECV_CLOSE_ON_SERVER writes here until completion */
    uint64_t since;
    bool cancel_sent;
    struct rejecting *next;
};
static struct rejecting *rejecting;

/* Too many calls: answer at once from the main thread. */
static void reject(struct pending *p, enum fetchd_admit why)
{
    char m[160];
    if (why == FETCHD_ADMIT)
        snprintf(m, sizeof m, "server out of threads");
    else
        fetchd_gate_busy_msg(&gate, why, "calls", m, sizeof m);
    if (opt.verbose)
        fk_error("%s: refused: %s", p->peer, m);
    struct rejecting *r = fk_calloc(1, sizeof *r);
    r->p = p;
    r->details = grpc_slice_from_copied_string(m);
    r->since = fk_now_ns();
    grpc_op ops[3];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[1].data.send_status_from_server.status = GRPC_STATUS_RESOURCE_EXHAUSTED;
    ops[1].data.send_status_from_server.status_details = &r->details;
    ops[2].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[2].data.recv_close_on_server.cancelled = &r->cancelled;
    if (grpc_call_start_batch(p->call, ops, 3, p, NULL) != GRPC_CALL_OK) {
        grpc_slice_unref(r->details);
        free(r);
        free_pending(p);
        return;
    }
    r->next = rejecting;
    rejecting = r;
}

static void reap_rejects(void)
{
    uint64_t now = fk_now_ns();
    for (struct rejecting **rp = &rejecting; *rp; ) {
        struct rejecting *r = *rp;
        grpc_event ev = grpc_completion_queue_pluck(r->p->cq, r->p, gpr_time_0(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_OP_COMPLETE) {
            *rp = r->next;
            grpc_slice_unref(r->details);
            free_pending(r->p);
            free(r);
            continue;
        }
        if (!r->cancel_sent && now - r->since > 1000000000ull) {
            grpc_call_cancel(r->p->call, NULL);     /* completes the batch soon */
            r->cancel_sent = true;
        }
        rp = &r->next;
    }
}

/* "ipv4:10.0.0.1:5000" -> "ipv4:10.0.0.1": what --max-per-peer counts. */
static void peer_name(struct pending *p)
{
    char *s = grpc_call_get_peer(p->call);
    snprintf(p->peer, sizeof p->peer, "%s", s ? s : "unknown");
    gpr_free(s);
    char *colon = strrchr(p->peer, ':');
    if (colon && (strncmp(p->peer, "ipv4:", 5) == 0 || strncmp(p->peer, "ipv6:", 5) == 0) &&
        colon > p->peer + 4)
        *colon = 0;
}

static int clamp_ms(uint64_t ms)
{
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

int main(int argc, char **argv)
{
    fk_progname = "fetchd-grpc";
    int prc = fetchd_server_parse(argc, argv, &opt, &cmdline, true);
    if (prc != FK_OPT_CONTINUE)
        return prc;
    gate.max = (unsigned)opt.max_conns;
    gate.max_peer = (unsigned)opt.max_per_peer;
    cache = fetchd_cache_open(opt.cache_dir, opt.cache_size);
    fetchd_server_signals();
    grpc_init();
    /* Connections are bounded too: keepalive pings find dead peers (also
     * while a stream is blocked and no data flows), an age limit recycles
     * them (calls in flight get --timeout), idle ones and ones that never
     * finish the handshake are closed. */
    struct { const char *key; int val; } ia[] = {
        { GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, FETCHD_MAX_BODY + 4096 },
        { GRPC_ARG_ALLOW_REUSEPORT, 0 },
        { GRPC_ARG_KEEPALIVE_TIME_MS, clamp_ms(opt.keepalive) },
        { GRPC_ARG_KEEPALIVE_TIMEOUT_MS, clamp_ms(opt.keepalive_timeout) },
        { GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1 },
        { GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0 },
        { GRPC_ARG_MAX_CONNECTION_AGE_MS, clamp_ms(opt.max_conn_age) },
        { GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, clamp_ms(opt.timeout) },
        { GRPC_ARG_MAX_CONNECTION_IDLE_MS, clamp_ms(opt.max_conn_idle) },
        { GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, clamp_ms(opt.handshake_timeout) },
    };
    enum { NARGS = sizeof ia / sizeof ia[0] };
    grpc_arg a[NARGS];
    for (size_t i = 0; i < NARGS; i++) {
        a[i].type = GRPC_ARG_INTEGER;
        a[i].key = (char *)ia[i].key;
        a[i].value.integer = ia[i].val;
    }
    grpc_channel_args args = { NARGS, a };
    server = grpc_server_create(&args, NULL);
    scq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(server, scq, NULL);
    methods[FETCHD_OP_ADVERTISE] = grpc_server_register_method(server, FETCHD_GRPC_ADVERTISE, NULL,
                                                           GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    methods[FETCHD_OP_UPLOAD_PACK] = grpc_server_register_method(server, FETCHD_GRPC_UPLOAD_PACK, NULL,
                                                             GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    grpc_server_credentials *cr = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(server, opt.listen, cr);
    grpc_server_credentials_release(cr);
    if (port == 0)
        fk_die("cannot listen on %s (address in use or invalid)", opt.listen);
    grpc_server_start(server);
    fetchd_server_ready(&opt, port);
    request_call(FETCHD_OP_ADVERTISE);
    request_call(FETCHD_OP_UPLOAD_PACK);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    struct pending shutdown_tag = { .kind = 2 };
    bool shutting = false;
    for (;;) {
        if (fk_stop_signal && !shutting) {
            /* Drain: stop accepting; in-flight calls finish first. */
            if (opt.verbose)
                fk_error("stopping: waiting for %u call(s)", fetchd_gate_active(&gate));
            grpc_server_shutdown_and_notify(server, scq, &shutdown_tag);
            shutting = true;
        }
        reap_rejects();
        grpc_event ev = grpc_completion_queue_next(scq, in_ms(rejecting ? 50 : 200), NULL);
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        struct pending *p = ev.tag;
        if (p->kind == 2)
            break;
        if (!ev.success) {
            free_pending(p);    /* server shutting down */
            continue;
        }
        enum fetchd_op op = p->op;
        peer_name(p);
        pthread_t t;
        enum fetchd_admit adm = fetchd_gate_enter(&gate, p->peer);
        if (adm == FETCHD_ADMIT && opt.verbose)
            fk_error("%s: %s call admitted", p->peer, op == FETCHD_OP_ADVERTISE ? "advertise" : "upload-pack");
        if (adm != FETCHD_ADMIT)
            reject(p, adm);
        else if (pthread_create(&t, &at, worker_thread, p) != 0) {
            fetchd_gate_cancel(&gate, p->peer);
            reject(p, FETCHD_ADMIT);
        }
        if (!shutting)
            request_call(op);
    }
    while (rejecting) {
        reap_rejects();
        if (rejecting)
            gpr_sleep_until(in_ms(20));
    }
    fetchd_gate_drain(&gate);
    grpc_server_destroy(server);
    grpc_completion_queue_shutdown(scq);
    while (grpc_completion_queue_next(scq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(scq);
    fetchd_cache_close(cache);
    grpc_shutdown();
    return 0;
}
