/* SPDX-License-Identifier: GPL-2.0-only */
/* The fetch servers' defences against hostile clients (issue 12): the
 * pace of a request (deadline, minimum rate), per-peer admission, cache
 * keys, repositories that point out of the root; and the client's reader
 * of the server's Chunk messages, slice by slice. */
#include "fetchd/fetchd.h"
#include "unit.h"

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/slice.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void mkfile(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        fk_die("cannot write %s", path);
}

/* A minimal git directory: what fetchd_repo_resolve looks for. */
static void mkgit(const char *dir)
{
    char p[4096];
    if (mkdir(dir, 0755) != 0)
        fk_die("mkdir %s", dir);
    snprintf(p, sizeof p, "%s/HEAD", dir);
    mkfile(p, "ref: refs/heads/main\n");
    snprintf(p, sizeof p, "%s/objects", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/objects/info", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/refs", dir);
    mkdir(p, 0755);
}

static void test_pace(void)
{
    struct fetchd_server_opts o = { .timeout = 60000, .min_rate = 1000, .rate_window = 2000 };
    struct fetchd_pace p;
    fetchd_pace_init(&p, &o);
    UNIT_CHECK("pace: within the first window", fetchd_pace_check(&p, 1000000000ull) == NULL);
    const char *why = fetchd_pace_check(&p, 1100000000ull);
    UNIT_CHECK("pace: nothing moved in a window of waiting: too slow", why && strstr(why, "--min-rate"));
    fetchd_pace_init(&p, &o);
    fetchd_pace_moved(&p, 5000);
    UNIT_CHECK("pace: enough moved: a new window", fetchd_pace_check(&p, 2500000000ull) == NULL);
    UNIT_CHECK("pace: the next window starts from zero", fetchd_pace_check(&p, 2000000000ull) != NULL);
    fetchd_pace_init(&p, &o);
    fetchd_pace_moved(&p, 1999);
    UNIT_CHECK("pace: one byte short of --min-rate x --rate-window", fetchd_pace_check(&p, 2000000000ull) != NULL);
    /* The response: what fills the socket buffers before the first wait
     * does not pay for a window of a client that does not read. */
    fetchd_pace_init(&p, &o);
    fetchd_pace_moved(&p, 100);
    fetchd_pace_check(&p, 1000000000ull);
    fetchd_pace_respond(&p);
    fetchd_pace_moved(&p, 8000000);
    why = fetchd_pace_check(&p, 2000000000ull);
    UNIT_CHECK("pace: the response's buffer fill before its first wait does not count", why && strstr(why, "--min-rate"));
    fetchd_pace_init(&p, &o);
    fetchd_pace_respond(&p);
    fetchd_pace_moved(&p, 8000000);
    UNIT_CHECK("pace: the response's window is new (the request's waiting is not in it)",
               fetchd_pace_check(&p, 1000000000ull) == NULL);
    fetchd_pace_moved(&p, 2000);
    UNIT_CHECK("pace: what moves after the response's first wait counts", fetchd_pace_check(&p, 1000000000ull) == NULL);
    UNIT_CHECK("pace: ... and only once: the next window starts from zero", fetchd_pace_check(&p, 2000000000ull) != NULL);
    UNIT_CHECK("pace: waiting for git (0 ns on the client) never fails the rate",
               (fetchd_pace_init(&p, &o), fetchd_pace_check(&p, 0) == NULL && fetchd_pace_check(&p, 0) == NULL));
    int ms = fetchd_pace_wait_ms(&p);
    UNIT_CHECK("pace: waits are at most 1 s (SIGTERM is noticed)", ms >= 1 && ms <= 1000);
    o.min_rate = 0;
    fetchd_pace_init(&p, &o);
    UNIT_CHECK("pace: --min-rate 0: no minimum", fetchd_pace_check(&p, 3600000000000ull) == NULL);
    o.timeout = 1;
    fetchd_pace_init(&p, &o);
    nanosleep(&(struct timespec){ 0, 3000000 }, NULL);
    why = fetchd_pace_check(&p, 0);
    UNIT_CHECK("pace: the overall deadline", why && strstr(why, "--timeout"));
}

static void test_gate(void)
{
    struct fetchd_gate g = FETCHD_GATE_INIT;
    g.max = 3;
    g.max_peer = 2;
    UNIT_CHECK("gate: first from A", fetchd_gate_enter(&g, "10.0.0.1") == FETCHD_ADMIT);
    UNIT_CHECK("gate: second from A", fetchd_gate_enter(&g, "10.0.0.1") == FETCHD_ADMIT);
    UNIT_CHECK("gate: third from A refused (--max-per-peer 2)", fetchd_gate_enter(&g, "10.0.0.1") == FETCHD_PEER_BUSY);
    UNIT_CHECK("gate: B still gets the last slot", fetchd_gate_enter(&g, "10.0.0.2") == FETCHD_ADMIT);
    UNIT_CHECK("gate: C refused (--max-conns 3)", fetchd_gate_enter(&g, "10.0.0.3") == FETCHD_BUSY);
    char m[200];
    fetchd_gate_busy_msg(&g, FETCHD_PEER_BUSY, "calls", m, sizeof m);
    UNIT_CHECK("gate: the per-peer refusal names --max-per-peer", strstr(m, "--max-per-peer") != NULL);
    fetchd_gate_release_slot(&g, "10.0.0.1");
    UNIT_CHECK("gate: a released slot of A goes to C", fetchd_gate_enter(&g, "10.0.0.3") == FETCHD_ADMIT);
    fetchd_gate_release_slot(&g, "10.0.0.1");
    fetchd_gate_release_slot(&g, "10.0.0.2");
    fetchd_gate_cancel(&g, "10.0.0.3");
    UNIT_CHECK("gate: all released: no peers, no slots", g.npeers == 0 && fetchd_gate_active(&g) == 0);
    free(g.peers);
}

static void test_cache_key(const char *gitdir)
{
    char a[FETCHD_CACHE_KEY], b[FETCHD_CACHE_KEY], c[FETCHD_CACHE_KEY];
    fetchd_cache_key(a, gitdir, "0009done\n", 9);
    fetchd_cache_key(b, gitdir, "0009done\n", 9);
    fetchd_cache_key(c, gitdir, "0009dona\n", 9);
    UNIT_CHECK("cache key: 64 hex digits (SHA-256)",
               strlen(a) == 64 && strspn(a, "0123456789abcdef") == 64);
    UNIT_CHECK("cache key: same request, same key", strcmp(a, b) == 0);
    UNIT_CHECK("cache key: another body, another key", strcmp(a, c) != 0);
    char p[4096];
    snprintf(p, sizeof p, "%s/refs/heads", gitdir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/refs/heads/main", gitdir);
    mkfile(p, "0123456789012345678901234567890123456789\n");
    fetchd_cache_key(b, gitdir, "0009done\n", 9);
    UNIT_CHECK("cache key: a ref update changes the key", strcmp(a, b) != 0);
}

static void test_resolve(const char *top)
{
    char root[2048], out[2048], p[8300], err[512];
    snprintf(root, sizeof root, "%s/root", top);
    snprintf(out, sizeof out, "%s/outside", top);
    mkdir(root, 0755);
    mkdir(out, 0755);
    snprintf(p, sizeof p, "%s/secret.git", out);
    mkgit(p);
    snprintf(p, sizeof p, "%s/in.git", root);
    mkgit(p);
    char *g = fetchd_repo_resolve(root, "in.git", err, sizeof err);
    UNIT_CHECK("resolve: a repository under the root", g != NULL);
    free(g);
    snprintf(p, sizeof p, "%s/wt", root);
    mkdir(p, 0755);
    char target[4200];
    snprintf(target, sizeof target, "%s/secret.git", out);
    snprintf(p, sizeof p, "%s/wt/.git", root);
    if (symlink(target, p) != 0)
        fk_die("symlink %s", p);
    g = fetchd_repo_resolve(root, "wt", err, sizeof err);
    UNIT_CHECK("resolve: a .git symlink out of the root is refused",
               !g && strstr(err, "wt/.git resolves outside it"));
    free(g);
    snprintf(p, sizeof p, "%s/alt.git", root);
    mkgit(p);
    snprintf(p, sizeof p, "%s/alt.git/objects/info/alternates", root);
    snprintf(target, sizeof target, "%s/secret.git/objects\n", out);
    mkfile(p, target);
    g = fetchd_repo_resolve(root, "alt.git", err, sizeof err);
    UNIT_CHECK("resolve: alternates out of the root are refused",
               !g && strstr(err, "objects/info/alternates"));
    free(g);
    snprintf(p, sizeof p, "%s/alt.git/objects/info/alternates", root);
    mkfile(p, "../../in.git/objects\n");
    g = fetchd_repo_resolve(root, "alt.git", err, sizeof err);
    UNIT_CHECK("resolve: relative alternates inside the root are fine", g != NULL);
    free(g);
}

struct got { char buf[64]; size_t n, pieces; int refuse_after; };

static bool got_sink(void *arg, const void *data, size_t len)
{
    struct got *g = arg;
    if (g->refuse_after >= 0 && g->n + len > (size_t)g->refuse_after)
        return false;
    if (g->n + len > sizeof g->buf)
        return false;
    memcpy(g->buf + g->n, data, len);
    g->n += len;
    g->pieces++;
    return true;
}

/* msg (len bytes) as a byte buffer of one-byte slices (every field and
 * varint split; slices of their own memory, since gRPC merges small inline
 * and static ones), fed to a sink; 1 ok, 0 malformed, -1 refused. */
static int feed(const char *msg, size_t len, struct got *g, int refuse_after)
{
    grpc_slice sl[64];
    for (size_t i = 0; i < len; i++) {
        sl[i] = grpc_slice_malloc_large(1);
        GRPC_SLICE_START_PTR(sl[i])[0] = (uint8_t)msg[i];
    }
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(sl, len);
    for (size_t i = 0; i < len; i++)
        grpc_slice_unref(sl[i]);
    memset(g, 0, sizeof *g);
    g->refuse_after = refuse_after;
    char err[128] = "";
    bool refused = false;
    bool ok = fetchd_chunk_feed(bb, got_sink, g, &refused, err, sizeof err);
    grpc_byte_buffer_destroy(bb);
    if (!ok && !refused && strncmp(err, "malformed message", 17) != 0)
        return -2;
    return ok ? 1 : refused ? -1 : 0;
}

static void test_chunk(void)
{
    grpc_init();
    struct got g;
    /* data = "hello" */
    UNIT_CHECK("chunk: data field", feed("\x0a\x05hello", 7, &g, -1) == 1 && g.n == 5 && memcmp(g.buf, "hello", 5) == 0);
    UNIT_CHECK("chunk: data across slices, a piece per slice", g.pieces == 5);
    UNIT_CHECK("chunk: empty message: no data", feed("", 0, &g, -1) == 1 && g.n == 0);
    /* unknown fields of each wire type around the data: varint 2 (300),
     * fixed64 3, bytes 4, fixed32 5 */
    static const char skip[] = "\x10\xac\x02" "\x19" "12345678" "\x0a\x03" "abc" "\x22\x02" "zz" "\x2d" "1234";
    UNIT_CHECK("chunk: unknown fields skipped", feed(skip, sizeof skip - 1, &g, -1) == 1 && g.n == 3 &&
               memcmp(g.buf, "abc", 3) == 0);
    UNIT_CHECK("chunk: data longer than the message: malformed", feed("\x0a\x09hello", 7, &g, -1) == 0);
    UNIT_CHECK("chunk: a second data field: malformed", feed("\x0a\x01x\x0a\x01y", 6, &g, -1) == 0);
    UNIT_CHECK("chunk: a key's varint cut short: malformed", feed("\x0a\x05hello\x80", 8, &g, -1) == 0);
    UNIT_CHECK("chunk: a length's varint cut short: malformed", feed("\x0a\x85", 2, &g, -1) == 0);
    UNIT_CHECK("chunk: a varint of 11 bytes: malformed",
               feed("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, &g, -1) == 0);
    UNIT_CHECK("chunk: wire types 3, 4, 6, 7: malformed", feed("\x0b", 1, &g, -1) == 0 && feed("\x0c", 1, &g, -1) == 0 &&
               feed("\x0e", 1, &g, -1) == 0 && feed("\x0f", 1, &g, -1) == 0);
    UNIT_CHECK("chunk: fixed64 cut short: malformed", feed("\x19" "1234", 5, &g, -1) == 0);
    UNIT_CHECK("chunk: the sink refuses: refused, not malformed", feed("\x0a\x05hello", 7, &g, 2) == -1 && g.n == 2);
    grpc_shutdown();
}

int main(void)
{
    unit_name = "unit-fetchd";
    fk_progname = "unit-fetchd";
    char top[1024];
    const char *tmp = getenv("TMPDIR");
    snprintf(top, sizeof top, "%s/unit-fetchd.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(top))
        fk_die("mkdtemp");
    test_pace();
    test_gate();
    test_chunk();
    char gitdir[2048];
    snprintf(gitdir, sizeof gitdir, "%s/k.git", top);
    mkgit(gitdir);
    test_cache_key(gitdir);
    test_resolve(top);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    if (system(cmd) != 0)
        fprintf(stderr, "unit-fetchd: cannot remove %s\n", top);
    return UNIT_END();
}
