/* SPDX-License-Identifier: GPL-2.0-only */
/* SigV4 pieces and name-derived metadata for uploads. */
#include "deliver/sigv4.h"
#include "deliver/upload.h"
#include "util/crypto-dyn.h"
#include "util/dynlib.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* What fk_upload_paths reported, one "path|url|err" line each. */
static void collect(void *ctx, const char *path, const char *url, const char *err)
{
    fk_buf_printf(ctx, "%s|%s|%s\n", path ? path : "-", url ? url : "-", err ? err : "-");
}

/* Errors are values: every reason reaches the caller, none the terminal. */
static void errors_as_values(void)
{
    char dir[] = "/tmp/unit-upload.XXXXXX";
    if (!mkdtemp(dir)) {
        UNIT_CHECK("a temporary directory", false);
        return;
    }
    char *file = fk_asprintf("%s/a.svg", dir), *errfile = fk_asprintf("%s/stderr", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    fflush(stderr);
    int saved = dup(STDERR_FILENO), efd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    dup2(efd, STDERR_FILENO);

    struct fk_dynlib none = { .soname = "libfk-absent.so.9", .who = "testing", .package = "fk-absent",
                              .newer = "fk-absent 2" };
    void *slot;
    const struct fk_dynsym sym = { "fk_absent", &slot };
    char err[512] = "", err2[512] = "";
    bool loaded = fk_dynlib_once(&none, &sym, 1, err, sizeof err);
    bool again = fk_dynlib_once(&none, &sym, 1, err2, sizeof err2);

    struct fk_buf got = FK_BUF_INIT;
    struct fk_upload_opts o = { .report = collect, .report_ctx = &got };
    const char *paths[] = { file, "/nonexistent/b.svg" };
    int failed = fk_upload_paths("ftp://bucket/x/", paths, 2, NULL, &o);
    char perr[256] = "";
    char *url = fk_upload_presign("s3://bucket/key", "GET", 0, &o, perr, sizeof perr);

    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    struct stat st;
    bool quiet = efd >= 0 && fstat(efd, &st) == 0 && st.st_size == 0;
    if (efd >= 0)
        close(efd);

    UNIT_CHECK("a missing library: false, the package to install in err",
               !loaded && !strcmp(err, "testing needs libfk-absent.so.9 (libfk-absent.so.9: cannot open "
                                       "shared object file: No such file or directory); install it: "
                                       "apt-get install fk-absent"));
    UNIT_CHECK("a missing library: the same reason on the next call", !again && !strcmp(err, err2));
    char *want = fk_asprintf("-|-|unknown destination 'ftp://bucket/x/': want s3://BUCKET/PREFIX/, "
                             "gs://BUCKET/PREFIX/ or a presigned https URL\n"
                             "%s|-|%s not uploaded; it stays at %s\n"
                             "/nonexistent/b.svg|-|/nonexistent/b.svg not uploaded: No such file or "
                             "directory\n", file, file, file);
    UNIT_CHECK("a bad destination: both files fail", failed == 2);
    UNIT_CHECK("a bad destination: the reason, then each file, through the report hook",
               got.data && !strcmp(fk_buf_cstr(&got), want));
    UNIT_CHECK("presign for 0 s: NULL with the reason in err",
               !url && !strcmp(perr, "presigned URLs live 1 s to 7 days, not 0 s"));
    UNIT_CHECK("nothing written to stderr", quiet);
    free(want);
    fk_buf_free(&got);
    unlink(errfile);
    unlink(file);
    rmdir(dir);
    free(file);
    free(errfile);
}

static bool md_is(const unsigned char md[32], const char *hex)
{
    char h[65];
    for (unsigned i = 0; i < 32; i++)
        snprintf(h + 2 * i, 3, "%02x", md[i]);
    return !strcmp(h, hex);
}

/* The digests against published vectors (FIPS 180-2's SHA-256 examples,
 * RFC 4231's HMAC-SHA256 cases): the pack cache's keys, SigV4 signatures
 * and serve's token digests stay what they were whichever library
 * computes them. */
static void test_digests(void)
{
    char h[65];
    unsigned char md[32];
    fk_sha256_hex("", 0, h);
    UNIT_CHECK("sha256 of nothing", !strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    fk_sha256("abc", 3, md);
    UNIT_CHECK("sha256 of abc (FIPS 180-2)",
               md_is(md, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    fk_sha256(two, strlen(two), md);
    UNIT_CHECK("sha256 of a two-block message (FIPS 180-2)",
               md_is(md, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    /* a million 'a', in updates of uneven sizes that straddle blocks */
    static char a[1000];
    memset(a, 'a', sizeof a);
    struct fk_sha256_ctx c;
    fk_sha256_begin(&c);
    size_t left = 1000000;
    for (size_t step = 1; left > 0; step = step * 7 % 997 + 1) {
        size_t n = step < left ? step : left;
        fk_sha256_update(&c, a, n);
        left -= n;
    }
    fk_sha256_end(&c, md);
    UNIT_CHECK("sha256 of a million a, in uneven updates (FIPS 180-2)",
               md_is(md, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    unsigned char k[131];
    memset(k, 0x0b, 20);
    fk_hmac_sha256(k, 20, "Hi There", 8, md);
    UNIT_CHECK("hmac-sha256, RFC 4231 case 1",
               md_is(md, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
    fk_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, md);
    UNIT_CHECK("hmac-sha256, RFC 4231 case 2",
               md_is(md, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    memset(k, 0xaa, sizeof k);
    const char *big = "Test Using Larger Than Block-Size Key - Hash Key First";
    fk_hmac_sha256(k, sizeof k, big, strlen(big), md);
    UNIT_CHECK("hmac-sha256 with a key longer than a block, RFC 4231 case 6",
               md_is(md, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
}

int main(void)
{
    unit_name = "unit-upload";
    UNIT_CHECK("Nettle loads at run time", fk_crypto_load(NULL, 0));
    test_digests();

    struct fk_buf b = FK_BUF_INIT;
    fk_uri_encode(&b, "a b/c+d~e.f_g-h%ü", true);
    UNIT_CHECK("key encoding keeps / and unreserved, upper-case hex",
               !strcmp(fk_buf_cstr(&b), "a%20b/c%2Bd~e.f_g-h%25%C3%BC"));
    fk_buf_reset(&b);
    fk_uri_encode(&b, "x/y", false);
    UNIT_CHECK("query encoding encodes /", !strcmp(fk_buf_cstr(&b), "x%2Fy"));
    fk_buf_free(&b);

    /* The presigned GET example of AWS's "Authenticating Requests: Using
     * Query Parameters" documentation (public example key). */
    struct fk_sigv4_key k = { "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", NULL,
                              "us-east-1", "s3" };
    char *url = fk_sigv4_presign("GET", "https://examplebucket.s3.amazonaws.com", "examplebucket.s3.amazonaws.com",
                                 "/test.txt", &k, 1369353600 /* 2013-05-24T00:00:00Z */, 86400);
    UNIT_CHECK("presigned URL matches AWS's documented example",
               !strcmp(url, "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                            "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
                            "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                            "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"));
    free(url);

    struct fk_upload_meta m;
    size_t n = fk_upload_meta_from_name("/out/web-1.example.com.20261202_151735_UTC.cgroup-system.slice.flamegraph.svg", &m);
    UNIT_CHECK("metadata from a result name: 3 pairs", n == 3);
    if (n == 3) {
        UNIT_CHECK("host keeps its dots", !strcmp(m.values[0], "web-1.example.com"));
        UNIT_CHECK("scope keeps its dots", !strcmp(m.values[1], "cgroup-system.slice"));
        UNIT_CHECK("start time ISO 8601", !strcmp(m.values[2], "2026-12-02T15:17:35Z"));
    }
    fk_upload_meta_free(&m);
    n = fk_upload_meta_from_name("h.20261202_151735_UTC.host.folded.gz", &m);
    UNIT_CHECK("folded.gz scope", n == 3 && !strcmp(m.values[1], "host"));
    fk_upload_meta_free(&m);
    UNIT_CHECK("other names give no metadata", fk_upload_meta_from_name("notes.txt", &m) == 0);
    UNIT_CHECK("bad stamp gives no metadata", fk_upload_meta_from_name("h.2026120_151735_UTC.x.svg", &m) == 0);
    /* --allow-http's loopback check looks at the parsed host (issue 12) */
    static const char *const lo[] = { "127.0.0.1", "127.0.0.1:9000", "127.1.2.3:80", "localhost",
                                      "LOCALHOST:8080", "[::1]", "[::1]:9000",
                                      "[::ffff:127.0.0.1]:80" };
    static const char *const notlo[] = { "127.attacker.example", "127.attacker.example:80",
                                         "127.0.0.1.attacker.example", "127.0.0.1@evil.example",
                                         "127.0.0.1:80@evil.example", "127.1", "0x7f.0.0.1",
                                         "localhost.attacker.example", "[::1]x", "[::2]:80",
                                         "128.0.0.1", "[127.0.0.1]", "", "127.0.0.1:" };
    int bad = 0;
    for (size_t i = 0; i < sizeof lo / sizeof lo[0]; i++)
        bad += !fk_upload_is_loopback(lo[i]);
    for (size_t i = 0; i < sizeof notlo / sizeof notlo[0]; i++)
        bad += fk_upload_is_loopback(notlo[i]);
    UNIT_CHECK("loopback: 127/8, ::1 and localhost only, by the parsed host", bad == 0);
    errors_as_values();
    return UNIT_END();
}
