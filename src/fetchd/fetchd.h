/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared code of the fetch servers and their clients: repository lookup,
 * the git child, the pack cache, pkt-lines and the two client protocols. */
#ifndef FETCHD_H
#define FETCHD_H

#include "util/fk.h"
#include "util/buf.h"
#include "util/crypto-dyn.h"
#include "util/stopsig.h"
#include <pthread.h>
#include <sys/types.h>

#define FETCHD_GRPC_ADVERTISE "/fetchd.Fetch/Advertise"
#define FETCHD_GRPC_UPLOAD_PACK "/fetchd.Fetch/PostUploadPack"
/* fetchd-sock's request header magic (see fetchd-sock(1)). */
#define FETCHD_SOCK_MAGIC "FETCHD1"
#define FETCHD_MAX_BODY (16u << 20)   /* request bodies larger than this are refused */

enum fetchd_op { FETCHD_OP_ADVERTISE, FETCHD_OP_UPLOAD_PACK };

/* --- repositories (repo.c) --- */
/* Map a client-supplied name to a git directory under root (a realpath).
 * Returns a malloc'd path, or NULL with a message in err (for the client):
 * names that are absolute, contain "..", or resolve outside root are refused;
 * a missing or non-git directory is "repository not found". */
char *fetchd_repo_resolve(const char *root, const char *name, char *err, size_t errlen);
/* Feed the repository's ref state (HEAD, packed-refs, then every loose ref
 * in directory order; names and contents length-prefixed) into a SHA-256
 * context. Allocates nothing. Two different states never feed the same
 * bytes; the same state read in another directory order (a directory
 * rewritten) feeds other bytes: a cache miss, never a wrong hit. */
void fetchd_repo_refstate(struct fk_sha256_ctx *c, const char *gitdir);

/* --- the git child (child.c) --- */
struct fetchd_child {
    pid_t pid;      /* also its process group: we kill the whole group */
    int out;        /* read end of its stdout */
};
/* Start git upload-pack --stateless-rpc [--advertise-refs] GITDIR with
 * body (may be empty) on stdin. false + errno-style message on failure. */
bool fetchd_child_start(struct fetchd_child *c, enum fetchd_op op, const char *gitdir,
                    const void *body, size_t len);
/* Wait for it; returns true when it exited 0. Closes c->out. */
bool fetchd_child_finish(struct fetchd_child *c);
/* Kill its process group (git and its pack-objects) and reap it. */
void fetchd_child_kill(struct fetchd_child *c);

/* --- the pack cache (cache.c) --- */
struct fetchd_cache;
/* dir is created if missing; max_bytes 0 disables the cache (returns NULL).
 * Loads Nettle (util/crypto-dyn) for the keys: a server without a cache
 * never maps it. */
struct fetchd_cache *fetchd_cache_open(const char *dir, uint64_t max_bytes);
void fetchd_cache_close(struct fetchd_cache *c);
/* The key of a response: SHA-256 (hex) of the repository, its ref state and
 * the request body, so a crafted request cannot share another's entry. */
#define FETCHD_CACHE_KEY 65
void fetchd_cache_key(char out[FETCHD_CACHE_KEY], const char *gitdir, const void *body, size_t len);
/* Open the cached response for key: fd (caller closes) and its size, or -1. */
int fetchd_cache_lookup(struct fetchd_cache *c, const char *key, uint64_t *size);
/* Start filling: returns an fd of a temporary file in the cache dir. */
int fetchd_cache_begin(struct fetchd_cache *c, char **tmpname);
/* Publish the temporary under key (rename) and evict LRU entries beyond
 * the size limit; or discard it when ok is false. Closes fd. */
void fetchd_cache_end(struct fetchd_cache *c, int fd, char *tmpname, const char *key, bool ok);
void fetchd_cache_stats(struct fetchd_cache *c, uint64_t *hits, uint64_t *misses, uint64_t *bytes, uint64_t *entries);

/* --- pkt-lines (pkt.c) --- */
struct fetchd_ref { char oid[41]; char *name; };
struct fetchd_refs { struct fetchd_ref *v; size_t n, cap; };
/* Parse an upload-pack advertisement; false on malformed input. */
bool fetchd_parse_advertisement(const char *data, size_t len, struct fetchd_refs *refs, char *err, size_t errlen);
void fetchd_refs_free(struct fetchd_refs *refs);
/* The want/done request for all refs (nwant 0) or the named ones.
 * Returns false (message in err) when a named ref is not advertised. */
bool fetchd_build_request(const struct fetchd_refs *refs, char **names, size_t nnames,
                      struct fk_buf *req, char *err, size_t errlen);
/* Incremental demultiplexer of an upload-pack response: NAK/ACK lines,
 * then side-band-64k packets; band 1 goes to the sink. */
struct fetchd_demux {
    int state;              /* 0: pkt header, 1: payload */
    char hdr[4]; size_t hlen;
    size_t need;            /* payload bytes still to come */
    int band;               /* band of the current payload (0: before the pack) */
    bool first;             /* first payload byte = band number */
    bool done;              /* final flush seen */
    char err[400];          /* band-3 error or protocol error */
    bool failed;
    uint64_t pack_bytes;
    bool (*sink)(void *arg, const void *data, size_t len);
    void *arg;
    bool in_sideband;
    char line[256]; size_t llen;   /* band-0 line being collected */
};
void fetchd_demux_init(struct fetchd_demux *d, bool (*sink)(void *, const void *, size_t), void *arg);
bool fetchd_demux_feed(struct fetchd_demux *d, const void *data, size_t len);

/* --- clients (client.c) --- */
enum fetchd_transport { FETCHD_GRPC, FETCHD_SOCK };
struct fetchd_client;
/* gRPC clients' HTTP/2 window: 0, gRPC's own (grown from 64K by BDP
 * probing, as far as its estimate of the link says), or a fixed size with
 * no probing (the tests' stalling clients: 64K; fetch-bench
 * --grpc-window). Set before fetchd_client_new. */
extern uint32_t fetchd_client_window;
/* addr: HOST:PORT. NULL with a message on failure. */
struct fetchd_client *fetchd_client_new(enum fetchd_transport t, const char *addr, char *err, size_t errlen);
void fetchd_client_free(struct fetchd_client *c);
/* Perform one request; every response piece goes to sink. Returns true on a
 * complete response; false with the server's error or a transport error. */
bool fetchd_client_call(struct fetchd_client *c, enum fetchd_op op, const char *repo,
                    const void *body, size_t len,
                    bool (*sink)(void *, const void *, size_t), void *arg,
                    char *err, size_t errlen);
/* A gRPC message of the service's Chunk type: its data bytes to sink as
 * they lie in the message's slices. false with err ("malformed message
 * ...") or, when the sink refused, with *refused set and err untouched. */
struct grpc_byte_buffer;
bool fetchd_chunk_feed(struct grpc_byte_buffer *msg, bool (*sink)(void *, const void *, size_t), void *arg,
                       bool *refused, char *err, size_t errlen);
/* Calls of one request, up to n in flight at once, run from the calling
 * thread (gRPC: multiplexed on the connection, one completion queue; a
 * socket client: n must be 1, one call after another). Each call in
 * flight has its args[i]: next(arg) says whether it makes another call
 * (and readies its state), sink gets that call's response pieces, end its
 * result (err "" when the sink refused). Returns when no call is left;
 * false only when the run itself could not go on (err says why). */
struct fetchd_calls {
    int n;
    void **args;
    bool (*next)(void *arg);
    bool (*sink)(void *arg, const void *data, size_t len);
    void (*end)(void *arg, bool ok, const char *err);
};
bool fetchd_client_run(struct fetchd_client *c, enum fetchd_op op, const char *repo, const void *body, size_t len,
                       const struct fetchd_calls *k, char *err, size_t errlen);

/* --- server common (server.c) --- */
struct fetchd_server_opts {
    const char *listen;         /* HOST:PORT */
    const char *repo_root;
    const char *cache_dir;
    uint64_t cache_size;
    int max_conns;
    int max_per_peer;           /* requests in flight from one address */
    uint64_t timeout;           /* ms: a request's overall deadline */
    uint64_t min_rate;          /* bytes/s while waiting on the client; 0: none */
    uint64_t rate_window;       /* ms over which min_rate is measured */
    /* fetchd-grpc only (ms) */
    uint64_t keepalive, keepalive_timeout, max_conn_age, max_conn_idle, handshake_timeout;
    uint64_t chunk;             /* gRPC message size */
    const char *port_file;      /* write the bound port here */
    bool verbose;
};
/* Parse the options both servers share (and grpc's --chunk-size):
 * FK_OPT_CONTINUE, or the exit status after --help or a usage error. */
struct fk_cmdline;
int fetchd_server_parse(int argc, char **argv, struct fetchd_server_opts *o, const struct fk_cmdline *cl,
                    bool grpc);
/* Write the bound port to o->port_file (atomically) and announce it. */
void fetchd_server_ready(const struct fetchd_server_opts *o, int port);
/* Admission and drain, shared by both servers: a slot per request in
 * flight (bounded by --max-conns, and per client address by
 * --max-per-peer) and a count of live worker threads, so SIGTERM can wait
 * for in-flight work. A worker may free its slot before it ends (the
 * client's next request then fits). */
#define FETCHD_PEER_MAX 80
struct fetchd_peer { char addr[FETCHD_PEER_MAX]; unsigned n; };
struct fetchd_gate {
    pthread_mutex_t mu;
    pthread_cond_t idle;
    unsigned active, threads, max, max_peer;
    struct fetchd_peer *peers;      /* addresses with requests in flight */
    size_t npeers, cap;
};
#define FETCHD_GATE_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, NULL, 0, 0 }
enum fetchd_admit { FETCHD_ADMIT, FETCHD_BUSY, FETCHD_PEER_BUSY };
/* Take a slot (counted against peer, a client address) and a thread. */
enum fetchd_admit fetchd_gate_enter(struct fetchd_gate *g, const char *peer);
/* The line a refused client gets. */
void fetchd_gate_busy_msg(const struct fetchd_gate *g, enum fetchd_admit why, const char *what, char *out, size_t n);
/* Undo fetchd_gate_enter when the worker thread could not be started. */
void fetchd_gate_cancel(struct fetchd_gate *g, const char *peer);
void fetchd_gate_release_slot(struct fetchd_gate *g, const char *peer);
/* The worker thread ends; wakes fetchd_gate_drain when it was the last. */
void fetchd_gate_thread_done(struct fetchd_gate *g);
unsigned fetchd_gate_active(struct fetchd_gate *g);
/* Wait until every worker thread has ended. */
void fetchd_gate_drain(struct fetchd_gate *g);
/* A request's time budget: the overall deadline (--timeout) and the
 * minimum rate (--min-rate over --rate-window) of the time the server
 * spends waiting on the client (for request bytes, or for room to send):
 * a client that trickles its request or stops reading loses its slot. */
struct fetchd_pace {
    uint64_t deadline;          /* fk_now_ns() value */
    uint64_t window, min_bytes; /* ns; bytes per window (0: no minimum) */
    uint64_t waited, moved;     /* in the current window */
    bool fresh;                 /* the response has not waited on the client yet:
                                   what it moved went into buffers with room */
};
void fetchd_pace_init(struct fetchd_pace *p, const struct fetchd_server_opts *o);
/* Milliseconds to wait on the client before fetchd_pace_check is due (>= 1). */
int fetchd_pace_wait_ms(const struct fetchd_pace *p);
/* The response begins: a new window. What moves before the first wait on
 * the client fills socket buffers with room (megabytes, for a client that
 * stops reading) and says nothing of its pace: it does not count, so a
 * client that never reads is dropped one window after they are full, not
 * two (the first paid for by the buffers). */
void fetchd_pace_respond(struct fetchd_pace *p);
void fetchd_pace_moved(struct fetchd_pace *p, uint64_t bytes);
/* Account waited_ns spent waiting on the client; NULL, or why the request
 * is dropped ("request deadline passed (--timeout)", "client too slow
 * (--min-rate)"). */
const char *fetchd_pace_check(struct fetchd_pace *p, uint64_t waited_ns);
/* SIGTERM/SIGINT/SIGHUP set fk_stop_signal (util/stopsig.h); servers poll it. */
void fetchd_server_signals(void);
/* Validate an upload-pack request body (pkt-lines with wants and done). */
bool fetchd_check_request(const char *body, size_t len, char *err, size_t errlen);

#endif
