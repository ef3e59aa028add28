/* SPDX-License-Identifier: GPL-2.0-only */
/* SigV4 pieces and name-derived metadata for uploads. */
#include "deliver/sigv4.h"
#include "deliver/upload.h"
#include "util/crypto-dyn.h"
#include "unit.h"

#include <stdlib.h>

int main(void)
{
    unit_name = "unit-upload";
    char h[65];
    UNIT_CHECK("libcrypto loads at run time", fk_crypto_load());
    fk_sha256_hex("", 0, h);
    UNIT_CHECK("sha256 of nothing", !strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));

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
    return UNIT_END();
}
