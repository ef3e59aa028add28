/* SPDX-License-Identifier: GPL-2.0-only */
/* Object-storage upload over libcurl's SigV4 signing. libcurl 7.88 signs
 * the request but leaves to us: the payload hash header, sorted and encoded
 * query strings, encoded keys and a known body size (no chunked uploads). */
#include "deliver/upload.h"
#include "deliver/s3creds.h"
#include "deliver/sigv4.h"
#include "util/crypto-dyn.h"
#include "util/buf.h"
#include "util/result.h"

#include "curl-dyn.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024ull * 1024)
#define MIN_PART (5 * MiB)          /* S3's smallest non-final part */
#define MAX_PARTS 10000
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

enum dest_kind { DEST_S3, DEST_GS, DEST_PRESIGNED };

struct up {
    const struct fk_upload_opts *o;
    enum dest_kind kind;
    const char *scheme;         /* "s3" or "gs" for messages */
    char *bucket, *prefix;      /* prefix is "" or ends in '/' */
    char *base;                 /* scheme://host[:port] requests go to */
    char *host;                 /* host[:port] of base */
    bool path_style;
    char *presigned;            /* whole presigned URL */
    char *presigned_noquery;
    struct fk_s3_settings s;
    char *sigv4;                /* "aws:amz:REGION:s3" */
    char *ca_file;
    CURL *curl;
    uint64_t deadline_ns;
    uint64_t timeout_ms, connect_ms, stall_ms;
    int retries;
};

/* ---- destination ---------------------------------------------------- */

/* Plain http is allowed without --allow-http only to this machine: the
 * parsed host, not a text prefix ("127.attacker.example" is a name).
 * host is "name", "name:port" or "[v6]:port"; loopback is 127.0.0.0/8 as
 * a dotted-quad IPv4 address, ::1 (or ::ffff:127.x.y.z), or localhost. */
bool fk_upload_is_loopback(const char *host)
{
    char name[256];
    const char *rest;
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        if (!close || (size_t)(close - host - 1) >= sizeof name)
            return false;
        memcpy(name, host + 1, (size_t)(close - host - 1));
        name[close - host - 1] = '\0';
        rest = close + 1;
    } else {
        size_t n = strcspn(host, ":");
        if (n >= sizeof name)
            return false;
        memcpy(name, host, n);
        name[n] = '\0';
        rest = host + n;
    }
    /* nothing but an optional ":PORT" may follow */
    if (*rest && (rest[0] != ':' || !rest[1] || strspn(rest + 1, "0123456789") != strlen(rest + 1)))
        return false;
    if (host[0] != '[' && !strcasecmp(name, "localhost"))
        return true;
    struct in_addr a4;
    struct in6_addr a6;
    if (host[0] != '[')
        return inet_pton(AF_INET, name, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, name, &a6) != 1)
        return false;
    if (IN6_IS_ADDR_LOOPBACK(&a6))
        return true;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
}

/* Split "scheme://host[:port][/]" into scheme and host; "host" alone
 * means https. Plain http only to loopback or with allow_http: keys and
 * signed requests must not cross a network in clear text. */
static bool parse_endpoint(const char *ep, bool allow_http, char **scheme, char **host, char *err,
                           size_t errlen)
{
    const char *p = strstr(ep, "://");
    if (p) {
        *scheme = fk_strndup(ep, (size_t)(p - ep));
        p += 3;
    } else {
        *scheme = fk_strdup("https");
        p = ep;
    }
    for (char *c = *scheme; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    size_t n = strcspn(p, "/?#");
    if (n == 0 || (strcmp(*scheme, "http") && strcmp(*scheme, "https")) ||
        (p[n] && strspn(p + n, "/") != strlen(p + n))) {
        snprintf(err, errlen, "bad endpoint '%s': want https://HOST[:PORT] (no path)", ep);
        free(*scheme);
        return false;
    }
    *host = fk_strndup(p, n);
    if (!strcmp(*scheme, "http") && !fk_upload_is_loopback(*host) && !allow_http) {
        snprintf(err, errlen, "refusing plain http to %s: use https, or --allow-http on a trusted "
                 "network", *host);
        free(*scheme);
        free(*host);
        *host = NULL;
        return false;
    }
    return true;
}

static bool dns_bucket(const char *b)
{
    size_t n = strlen(b);
    if (n < 3 || n > 63)
        return false;
    for (const char *p = b; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
            return false;
    return b[0] != '-' && b[n - 1] != '-';
}

static void up_free(struct up *u)
{
    free(u->bucket);
    free(u->prefix);
    free(u->base);
    free(u->host);
    free(u->presigned);
    free(u->presigned_noquery);
    free(u->sigv4);
    free(u->ca_file);
    fk_s3_settings_free(&u->s);
    if (u->curl)
        curl_easy_cleanup(u->curl);
    memset(u, 0, sizeof *u);
}

static char *dup_or(const char *s)
{
    return s ? fk_strdup(s) : NULL;
}

static bool curl_ready(char *err, size_t errlen)
{
    static int state;   /* curl_global_init: 0 untried, 1 ok, -1 failed */
    if (!fk_curl_load(err, errlen) || !fk_crypto_load(err, errlen))
        return false;   /* err names the package to install */
    if (!state)
        state = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 1 : -1;
    if (state < 0)
        snprintf(err, errlen, "libcurl initialisation failed");
    return state > 0;
}

/* Parse dest and load credentials/settings; false with the reason in err.
 * object_key: dest names one object (presign) rather than a prefix. */
static bool up_init(struct up *u, const char *dest, const struct fk_upload_opts *o, bool object_key,
                    char *err, size_t errlen)
{
    memset(u, 0, sizeof *u);
    u->o = o;
    u->timeout_ms = o->timeout_ms ? o->timeout_ms : 600000;
    u->connect_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 10000;
    u->stall_ms = o->stall_timeout_ms ? o->stall_timeout_ms : 30000;
    u->retries = o->retries < 0 ? 0 : o->retries ? o->retries : 4;
    if (!curl_ready(err, errlen))
        return false;

    char *scheme = NULL;
    if (!strncmp(dest, "s3://", 5) || !strncmp(dest, "gs://", 5)) {
        u->kind = dest[0] == 's' ? DEST_S3 : DEST_GS;
        u->scheme = u->kind == DEST_S3 ? "s3" : "gs";
        const char *b = dest + 5;
        size_t bn = strcspn(b, "/");
        if (bn == 0) {
            snprintf(err, errlen, "no bucket in '%s': want %s://BUCKET/PREFIX/", dest, u->scheme);
            return false;
        }
        u->bucket = fk_strndup(b, bn);
        const char *pre = b[bn] ? b + bn + 1 : "";
        if (object_key) {
            if (!*pre || pre[strlen(pre) - 1] == '/') {
                snprintf(err, errlen, "'%s' names no object: want %s://BUCKET/KEY", dest, u->scheme);
                return false;
            }
            u->prefix = fk_strdup(pre);
        } else {
            /* A prefix is a directory: add the missing slash. */
            u->prefix = *pre && pre[strlen(pre) - 1] != '/' ? fk_asprintf("%s/", pre) : fk_strdup(pre);
        }
        if (strchr(u->bucket, '?') || strchr(u->bucket, '#') || strchr(u->bucket, ':')) {
            snprintf(err, errlen, "bad bucket name '%s'", u->bucket);
            return false;
        }
    } else if (!strncmp(dest, "https://", 8) || !strncmp(dest, "http://", 7)) {
        if (!strstr(dest, "X-Amz-Signature=") || !strchr(dest, '?')) {
            snprintf(err, errlen, "'%.*s' is not a presigned URL (no X-Amz-Signature): give "
                     "s3://BUCKET/PREFIX/ or a presigned URL", (int)strcspn(dest, "?"), dest);
            return false;
        }
        u->kind = DEST_PRESIGNED;
        u->presigned = fk_strdup(dest);
        u->presigned_noquery = fk_strndup(dest, strcspn(dest, "?"));
        char *ep = fk_strndup(dest, strcspn(dest + 8, "/?") + 8);
        bool ok = parse_endpoint(ep, o->allow_http, &scheme, &u->host, err, errlen);
        free(ep);
        if (!ok)
            return false;
        free(scheme);
        u->ca_file = o->ca_file ? fk_strdup(o->ca_file) : NULL;
        return true;
    } else {
        snprintf(err, errlen, "unknown destination '%s': want s3://BUCKET/PREFIX/, gs://BUCKET/PREFIX/ "
                 "or a presigned https URL", dest);
        return false;
    }

    if (!fk_s3_settings_load(&u->s, o, err, errlen))
        return false;
    const char *region = u->s.region;
    if (!region)
        region = u->kind == DEST_GS ? "auto" : "us-east-1";
    u->sigv4 = fk_asprintf("aws:amz:%s:s3", region);
    u->ca_file = o->ca_file ? fk_strdup(o->ca_file) : dup_or(u->s.ca_file);

    const char *ep = o->endpoint ? o->endpoint : u->s.endpoint;
    char *epbuf = NULL;
    if (!ep)
        ep = epbuf = u->kind == DEST_GS ? fk_strdup("https://storage.googleapis.com")
                                        : fk_asprintf("https://s3.%s.amazonaws.com", region);
    bool ok = parse_endpoint(ep, o->allow_http, &scheme, &u->host, err, errlen);
    free(epbuf);
    if (!ok)
        return false;
    int addressing = o->addressing ? o->addressing : u->s.addressing;
    if (addressing == 0)
        /* AWS prefers virtual hosts; custom endpoints and GCS work path style. */
        addressing = (u->kind == DEST_S3 && !o->endpoint && !u->s.endpoint && dns_bucket(u->bucket)) ? 2 : 1;
    u->path_style = addressing == 1;
    if (!u->path_style) {
        if (strchr(u->bucket, '.') && !strcmp(scheme, "https"))
            fk_warn_to(o->warn, o->warn_ctx, "bucket '%s' has dots: its virtual-host TLS certificate "
                       "may not match; try --path-style", u->bucket);
        char *h = fk_asprintf("%s.%s", u->bucket, u->host);
        free(u->host);
        u->host = h;
    }
    u->base = fk_asprintf("%s://%s", scheme, u->host);
    free(scheme);
    return true;
}

/* ---- HTTP ---------------------------------------------------------- */

struct body {
    int fd;
    const char *mem;
    uint64_t off, len, pos;
};

struct resp {
    long status;
    CURLcode cc;
    char err[CURL_ERROR_SIZE];
    struct fk_buf body;
    char *etag;
    int attempts;
};

static void resp_clear(struct resp *r)
{
    fk_buf_free(&r->body);
    free(r->etag);
    memset(r, 0, sizeof *r);
}

static size_t read_cb(char *dst, size_t size, size_t nmemb, void *arg)
{
    struct body *b = arg;
    uint64_t want = (uint64_t)size * nmemb, left = b->len - b->pos;
    if (want > left)
        want = left;
    if (!want)
        return 0;
    if (b->mem) {
        memcpy(dst, b->mem + b->pos, (size_t)want);
    } else {
        ssize_t r;
        do
            r = pread(b->fd, dst, (size_t)want, (off_t)(b->off + b->pos));
        while (r < 0 && errno == EINTR);
        if (r <= 0)
            return CURL_READFUNC_ABORT;
        want = (uint64_t)r;
    }
    b->pos += want;
    return (size_t)want;
}

static int seek_cb(void *arg, curl_off_t off, int origin)
{
    struct body *b = arg;
    if (origin != SEEK_SET || off < 0 || (uint64_t)off > b->len)
        return CURL_SEEKFUNC_CANTSEEK;
    b->pos = (uint64_t)off;
    return CURL_SEEKFUNC_OK;
}

static size_t write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    size_t n = size * nmemb;
    if (r->body.len < 1024 * 1024)   /* error documents and XML replies are small */
        fk_buf_add(&r->body, data, n);
    return n;
}

static size_t header_cb(char *data, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    size_t n = size * nmemb;
    if (n > 5 && !strncasecmp(data, "etag:", 5)) {
        const char *v = data + 5;
        size_t vn = n - 5;
        while (vn && isspace((unsigned char)*v))
            v++, vn--;
        while (vn && isspace((unsigned char)v[vn - 1]))
            vn--;
        free(r->etag);
        r->etag = fk_strndup(v, vn);
    }
    return n;
}

static bool transient(const struct resp *r)
{
    switch (r->cc) {
    case CURLE_OK:
        break;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
    if (r->status >= 500 || r->status == 429)
        return true;
    /* S3's "your socket was idle too long" comes as 400 RequestTimeout. */
    return r->status == 400 && r->body.data && strstr(fk_buf_cstr((struct fk_buf *)&r->body), "<Code>RequestTimeout<");
}

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One request with retries for transient failures within u->deadline_ns.
 * method: PUT/POST (with body b), GET, HEAD, DELETE. hdrs: extra headers
 * (not consumed). Returns true when the final answer is 2xx. */
static bool request(struct up *u, const char *method, const char *url, struct body *b,
                    const char *sha, const struct curl_slist *hdrs, struct resp *r)
{
    uint64_t backoff_ms = 500;
    char agent[80];
    snprintf(agent, sizeof agent, "flamekit/%s", FK_VERSION);
    for (int attempt = 1;; attempt++) {
        resp_clear(r);
        r->attempts = attempt;
        uint64_t now = fk_now_ns();
        if (now >= u->deadline_ns) {
            r->cc = CURLE_OPERATION_TIMEDOUT;
            snprintf(r->err, sizeof r->err, "time budget used up");
            return false;
        }
        uint64_t left_ms = (u->deadline_ns - now) / 1000000 + 1;
        CURL *c = u->curl;
        curl_easy_reset(c);
        struct curl_slist *h = NULL;
        if (u->kind != DEST_PRESIGNED) {
            char *x = fk_asprintf("x-amz-content-sha256: %s", sha ? sha : EMPTY_SHA256);
            h = curl_slist_append(h, x);
            free(x);
            if (u->s.token) {
                x = fk_asprintf("x-amz-security-token: %s", u->s.token);
                h = curl_slist_append(h, x);
                explicit_bzero(x, strlen(x));
                free(x);
            }
        }
        for (const struct curl_slist *p = hdrs; p; p = p->next)
            h = curl_slist_append(h, p->data);
        if (!h && hdrs)
            fk_die("out of memory");

        curl_easy_setopt(c, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
        curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->err);
        curl_easy_setopt(c, CURLOPT_USERAGENT, agent);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(u->connect_ms < left_ms ? u->connect_ms : left_ms));
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(left_ms > LONG_MAX ? LONG_MAX : left_ms));
        /* A server that accepts and then goes quiet must not hang us. */
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)((u->stall_ms + 999) / 1000));
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        if (u->ca_file)
            curl_easy_setopt(c, CURLOPT_CAINFO, u->ca_file);
        if (u->kind != DEST_PRESIGNED) {
            curl_easy_setopt(c, CURLOPT_AWS_SIGV4, u->sigv4);
            curl_easy_setopt(c, CURLOPT_USERNAME, u->s.key_id);
            curl_easy_setopt(c, CURLOPT_PASSWORD, u->s.secret);
        }
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
        if (b) {
            b->pos = 0;
            curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
            curl_easy_setopt(c, CURLOPT_READDATA, b);
            curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, seek_cb);
            curl_easy_setopt(c, CURLOPT_SEEKDATA, b);
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)b->len);
            if (strcmp(method, "PUT"))
                curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        } else if (!strcmp(method, "HEAD")) {
            curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        } else if (strcmp(method, "GET")) {
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        }
        r->cc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        curl_slist_free_all(h);
        if (r->cc == CURLE_OK && r->status >= 200 && r->status < 300)
            return true;
        if (!transient(r) || attempt > u->retries)
            return false;
        uint64_t jitter = (uint64_t)(fk_now_ns() % (backoff_ms / 4 + 1));
        uint64_t wait = backoff_ms + jitter;
        now = fk_now_ns();
        if (now + wait * 1000000 >= u->deadline_ns)
            return false;
        if (!u->o->quiet) {
            if (r->cc != CURLE_OK)
                fk_warn_to(u->o->warn, u->o->warn_ctx, "%s from %s; retrying in %.1f s (attempt %d of %d)",
                           r->err[0] ? r->err : curl_easy_strerror(r->cc), u->host, wait / 1000.0,
                           attempt + 1, u->retries + 1);
            else
                fk_warn_to(u->o->warn, u->o->warn_ctx, "HTTP %ld from %s; retrying in %.1f s (attempt %d "
                           "of %d)", r->status, u->host, wait / 1000.0, attempt + 1, u->retries + 1);
        }
        sleep_ms(wait);
        backoff_ms = backoff_ms * 2 > 8000 ? 8000 : backoff_ms * 2;
    }
}

/* Text between <tag> and </tag> in an XML reply, or NULL. */
static char *xml_get(const struct fk_buf *body, const char *tag)
{
    if (!body->data)
        return NULL;
    const char *s = fk_buf_cstr((struct fk_buf *)body);
    char *open = fk_asprintf("<%s>", tag), *close = fk_asprintf("</%s>", tag);
    char *v = NULL;
    const char *a = strstr(s, open);
    if (a) {
        a += strlen(open);
        const char *e = strstr(a, close);
        if (e)
            v = fk_strndup(a, (size_t)(e - a));
    }
    free(open);
    free(close);
    return v;
}

/* One line saying why a request failed, never with secrets in it. */
static char *describe(struct up *u, const struct resp *r)
{
    char *code = r->cc == CURLE_OK ? xml_get(&r->body, "Code") : NULL;
    char *m;
    char *after = r->attempts > 1 ? fk_asprintf(" (after %d attempts)", r->attempts) : fk_strdup("");
    if (r->cc == CURLE_COULDNT_CONNECT) {
        m = fk_asprintf("cannot connect to %s: %s: is the endpoint right and the server up?", u->host,
                        r->err[0] ? r->err : curl_easy_strerror(r->cc));
    } else if (r->cc == CURLE_COULDNT_RESOLVE_HOST) {
        m = fk_asprintf("cannot resolve %s: check the endpoint/bucket name", u->host);
    } else if (r->cc == CURLE_OPERATION_TIMEDOUT) {
        m = fk_asprintf("timed out talking to %s%s: %s (server stalled or unreachable; --timeout and "
                        "--stall-timeout bound the wait)", u->host, after, r->err[0] ? r->err : "timeout");
    } else if (r->cc == CURLE_PEER_FAILED_VERIFICATION || r->cc == CURLE_SSL_CACERT_BADFILE ||
               r->cc == CURLE_SSL_CONNECT_ERROR) {
        m = fk_asprintf("TLS with %s failed: %s (for a private CA give --ca-file)", u->host,
                        r->err[0] ? r->err : curl_easy_strerror(r->cc));
    } else if (r->cc != CURLE_OK) {
        m = fk_asprintf("transfer to %s failed%s: %s", u->host, after,
                        r->err[0] ? r->err : curl_easy_strerror(r->cc));
    } else if (r->status == 403 && u->kind == DEST_PRESIGNED) {
        m = fk_asprintf("access denied by %s (HTTP 403%s%s): the presigned URL is expired, for another "
                        "method or object, or badly copied", u->host, code ? " " : "", code ? code : "");
    } else if (r->status == 403 && code && !strcmp(code, "QuotaExceeded")) {
        m = fk_asprintf("quota of bucket '%s' or its owner exceeded (HTTP 403 QuotaExceeded): free space or "
                        "raise the quota", u->bucket);
    } else if (r->status == 403 && code && !strcmp(code, "RequestTimeTooSkewed")) {
        m = fk_asprintf("the server rejects this host's clock (HTTP 403 RequestTimeTooSkewed): fix the time "
                        "(NTP) and retry");
    } else if (r->status == 403) {
        char *hint = fk_s3_key_hint(u->s.key_id);
        m = fk_asprintf("access denied (HTTP 403%s%s): check credentials (key id %s from %s) and the "
                        "bucket policy", code ? " " : "", code ? code : "", hint, u->s.source);
        free(hint);
    } else if (r->status == 404 && code && !strcmp(code, "NoSuchBucket")) {
        m = fk_asprintf("bucket '%s' does not exist at %s (NoSuchBucket): create it or fix the URL",
                        u->bucket, u->host);
    } else if (r->status == 400 && code && !strcmp(code, "EntityTooSmall")) {
        m = fk_asprintf("server refused a multipart part as too small (EntityTooSmall): raise --part-size");
    } else {
        char *msg = xml_get(&r->body, "Message");
        m = fk_asprintf("HTTP %ld from %s%s%s%s%s%s", r->status, u->host, code ? " " : "", code ? code : "",
                        msg && *msg ? ": " : "", msg && *msg ? msg : "", after);
        free(msg);
    }
    free(after);
    free(code);
    return m;
}

/* ---- objects ------------------------------------------------------- */

static const char *content_type(const char *path)
{
    static const struct { const char *ext, *type; } types[] = {
        { ".svg", "image/svg+xml" }, { ".gz", "application/gzip" }, { ".json", "application/json" },
        { ".txt", "text/plain; charset=utf-8" }, { ".folded", "text/plain; charset=utf-8" },
        { ".log", "text/plain; charset=utf-8" }, { ".html", "text/html; charset=utf-8" },
    };
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t e = strlen(types[i].ext);
        if (n >= e && !strcasecmp(path + n - e, types[i].ext))
            return types[i].type;
    }
    return "application/octet-stream";
}

static char *object_url(struct up *u, const char *key, const char *query)
{
    struct fk_buf b = FK_BUF_INIT;
    fk_buf_adds(&b, u->base);
    fk_buf_addc(&b, '/');
    if (u->path_style) {
        fk_uri_encode(&b, u->bucket, false);
        fk_buf_addc(&b, '/');
    }
    fk_uri_encode(&b, key, true);
    if (query) {
        fk_buf_addc(&b, '?');
        fk_buf_adds(&b, query);
    }
    fk_buf_cstr(&b);
    return b.data;
}

/* Header-safe metadata: key [a-z0-9-], value printable ASCII. */
static struct curl_slist *meta_headers(struct curl_slist *h, const struct fk_upload_meta *m)
{
    for (size_t i = 0; m && i < m->n; i++) {
        struct fk_buf b = FK_BUF_INIT;
        fk_buf_adds(&b, "x-amz-meta-");
        for (const char *p = m->keys[i]; *p; p++) {
            char c = (char)tolower((unsigned char)*p);
            fk_buf_addc(&b, isalnum((unsigned char)c) || c == '-' ? c : '-');
        }
        fk_buf_adds(&b, ": ");
        for (const char *p = m->values[i]; *p; p++)
            fk_buf_addc(&b, *p >= 0x20 && *p < 0x7f ? *p : '_');
        h = curl_slist_append(h, fk_buf_cstr(&b));
        fk_buf_free(&b);
    }
    return h;
}

static void abort_multipart(struct up *u, const char *key, const char *enc_id)
{
    /* Its own small budget: the main one may be what ran out. */
    uint64_t saved = u->deadline_ns;
    u->deadline_ns = fk_now_ns() + 10ull * 1000000000;
    int saved_retries = u->retries;
    u->retries = 1;
    char *q = fk_asprintf("uploadId=%s", enc_id);
    char *url = object_url(u, key, q);
    struct resp r = { 0 };
    if (!request(u, "DELETE", url, NULL, NULL, NULL, &r) && !u->o->quiet) {
        char *why = describe(u, &r);
        fk_warn_to(u->o->warn, u->o->warn_ctx, "could not abort the multipart upload of %s://%s/%s (%s); "
                   "a bucket lifecycle rule should remove leftover parts", u->scheme, u->bucket, key, why);
        free(why);
    }
    resp_clear(&r);
    free(url);
    free(q);
    u->deadline_ns = saved;
    u->retries = saved_retries;
}

static bool put_multipart(struct up *u, int fd, uint64_t size, const char *key,
                          const struct curl_slist *objhdrs, char **why)
{
    uint64_t part = u->o->part_size ? u->o->part_size : 8 * MiB;
    if ((size + part - 1) / part > MAX_PARTS)
        part = (size + MAX_PARTS - 1) / MAX_PARTS;
    struct resp r = { 0 };
    char *url = object_url(u, key, "uploads=");
    struct body empty = { .mem = "", .len = 0 };
    bool ok = request(u, "POST", url, &empty, EMPTY_SHA256, objhdrs, &r);
    free(url);
    if (!ok) {
        *why = describe(u, &r);
        resp_clear(&r);
        return false;
    }
    char *id = xml_get(&r.body, "UploadId");
    resp_clear(&r);
    if (!id || !*id) {
        *why = fk_asprintf("no UploadId in the server's answer to the multipart start");
        free(id);
        return false;
    }
    struct fk_buf encid = FK_BUF_INIT, done = FK_BUF_INIT;
    fk_uri_encode(&encid, id, false);
    free(id);
    fk_buf_adds(&done, "<CompleteMultipartUpload>");
    uint64_t nparts = (size + part - 1) / part;
    for (uint64_t i = 0; i < nparts && ok; i++) {
        uint64_t off = i * part, len = size - off < part ? size - off : part;
        char sha[65];
        if (!fk_sha256_file_hex(fd, off, len, sha)) {
            *why = fk_asprintf("read error: %s", strerror(errno));
            ok = false;
            break;
        }
        /* Query parameters in byte order: partNumber < uploadId. */
        char *q = fk_asprintf("partNumber=%llu&uploadId=%s", (unsigned long long)i + 1, fk_buf_cstr(&encid));
        url = object_url(u, key, q);
        free(q);
        struct body b = { .fd = fd, .off = off, .len = len };
        ok = request(u, "PUT", url, &b, sha, NULL, &r);
        free(url);
        if (!ok) {
            char *d = describe(u, &r);
            *why = fk_asprintf("part %llu of %llu: %s", (unsigned long long)i + 1, (unsigned long long)nparts, d);
            free(d);
        } else if (!r.etag) {
            *why = fk_asprintf("no ETag for part %llu", (unsigned long long)i + 1);
            ok = false;
        } else {
            fk_buf_printf(&done, "<Part><PartNumber>%llu</PartNumber><ETag>%s</ETag></Part>",
                          (unsigned long long)i + 1, r.etag);
        }
        resp_clear(&r);
    }
    if (ok) {
        fk_buf_adds(&done, "</CompleteMultipartUpload>");
        char sha[65];
        fk_sha256_hex(done.data, done.len, sha);
        char *q = fk_asprintf("uploadId=%s", fk_buf_cstr(&encid));
        url = object_url(u, key, q);
        free(q);
        struct body b = { .mem = done.data, .len = done.len };
        struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/xml");
        ok = request(u, "POST", url, &b, sha, h, &r);
        curl_slist_free_all(h);
        free(url);
        /* Completion can fail after a 200: the error is in the body. */
        if (ok && r.body.data && strstr(fk_buf_cstr(&r.body), "<Error>")) {
            ok = false;
            r.status = 500;
        }
        if (!ok)
            *why = describe(u, &r);
        resp_clear(&r);
    }
    if (!ok)
        abort_multipart(u, key, fk_buf_cstr(&encid));
    fk_buf_free(&encid);
    fk_buf_free(&done);
    return ok;
}

static char *abs_path(const char *p)
{
    char *r = realpath(p, NULL);
    return r ? r : fk_strdup(p);
}

/* What the caller hears about one file or the destination (no report
 * hook: nothing). */
static void report(const struct up *u, const char *path, const char *url, const char *fmt, ...)
    FK_PRINTF(4, 5);
static void report(const struct up *u, const char *path, const char *url, const char *fmt, ...)
{
    if (!u->o->report)
        return;
    char *err = NULL;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        err = fk_vasprintf(fmt, ap);
        va_end(ap);
    }
    u->o->report(u->o->report_ctx, path, url, err);
    free(err);
}

static bool upload_one(struct up *u, const char *path, const struct fk_upload_meta *meta)
{
    char *why = NULL, *shown = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    bool ok = false;
    if (fd < 0) {
        report(u, path, NULL, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        report(u, path, NULL, "%s is not a regular file", path);
        close(fd);
        return false;
    }
    uint64_t size = (uint64_t)st.st_size;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *key = u->kind == DEST_PRESIGNED ? NULL : fk_asprintf("%s%s", u->prefix, base);
    u->deadline_ns = fk_now_ns() + u->timeout_ms * 1000000;

    struct fk_upload_meta derived = { 0 };
    if (!meta && u->kind != DEST_PRESIGNED) {
        fk_upload_meta_from_name(path, &derived);
        meta = &derived;
    }
    char *ct = fk_asprintf("Content-Type: %s", content_type(path));
    struct curl_slist *h = curl_slist_append(NULL, ct);
    free(ct);
    /* A presigned URL signs only the host: unsigned x-amz-* headers would be refused. */
    if (u->kind != DEST_PRESIGNED)
        h = meta_headers(h, meta);

    uint64_t threshold = u->o->multipart_threshold ? u->o->multipart_threshold : 16 * MiB;
    if (u->kind != DEST_PRESIGNED && size > threshold) {
        ok = put_multipart(u, fd, size, key, h, &why);
    } else {
        char sha[65];
        struct resp r = { 0 };
        if (u->kind != DEST_PRESIGNED && !fk_sha256_file_hex(fd, 0, size, sha)) {
            why = fk_asprintf("read error: %s", strerror(errno));
        } else {
            char *url = u->kind == DEST_PRESIGNED ? fk_strdup(u->presigned) : object_url(u, key, NULL);
            struct body b = { .fd = fd, .len = size };
            ok = request(u, "PUT", url, &b, sha, h, &r);
            if (!ok)
                why = describe(u, &r);
            free(url);
        }
        resp_clear(&r);
    }
    curl_slist_free_all(h);
    fk_upload_meta_free(&derived);
    close(fd);
    if (u->kind == DEST_PRESIGNED)
        shown = fk_strdup(u->presigned_noquery);
    else
        shown = object_url(u, key, NULL);
    if (ok) {
        report(u, path, shown, NULL);
    } else {
        char *ap = abs_path(path);
        if (u->kind == DEST_PRESIGNED)
            report(u, path, NULL, "%s not uploaded to %s: %s; the file stays at %s", base, shown, why, ap);
        else
            report(u, path, NULL, "%s not uploaded to %s://%s/%s: %s; the file stays at %s", base,
                   u->scheme, u->bucket, key, why, ap);
        free(ap);
    }
    free(why);
    free(shown);
    free(key);
    return ok;
}

int fk_upload_paths(const char *dest, const char *const *paths, size_t n,
                    const struct fk_upload_meta *meta, const struct fk_upload_opts *opts)
{
    static const struct fk_upload_opts defaults;
    struct up u;
    if (!opts)
        opts = &defaults;
    char err[512];
    bool ready = up_init(&u, dest, opts, false, err, sizeof err);
    if (ready && !(u.curl = curl_easy_init())) {
        snprintf(err, sizeof err, "libcurl cannot start a transfer (out of memory?)");
        ready = false;
    }
    if (!ready) {
        report(&u, NULL, NULL, "%s", err);
        for (size_t i = 0; i < n; i++) {
            char *ap = abs_path(paths[i]);
            if (access(paths[i], F_OK) == 0)
                report(&u, paths[i], NULL, "%s not uploaded; it stays at %s", paths[i], ap);
            else
                report(&u, paths[i], NULL, "%s not uploaded: %s", paths[i], strerror(errno));
            free(ap);
        }
        up_free(&u);
        return (int)n;
    }
    if (u.kind == DEST_PRESIGNED && n != 1) {
        report(&u, NULL, NULL, "a presigned URL names one object: give exactly one file (got %zu)", n);
        up_free(&u);
        return (int)n;
    }
    int failed = 0;
    for (size_t i = 0; i < n; i++)
        failed += !upload_one(&u, paths[i], meta);
    up_free(&u);
    return failed;
}

char *fk_upload_presign(const char *object, const char *method, uint64_t expires_s,
                        const struct fk_upload_opts *opts, char *err, size_t errlen)
{
    static const struct fk_upload_opts defaults;
    struct up u;
    if (!opts)
        opts = &defaults;
    if (expires_s == 0 || expires_s > 604800) {
        snprintf(err, errlen, "presigned URLs live 1 s to 7 days, not %llu s", (unsigned long long)expires_s);
        return NULL;
    }
    if (!up_init(&u, object, opts, true, err, errlen)) {
        up_free(&u);
        return NULL;
    }
    if (u.kind == DEST_PRESIGNED) {
        snprintf(err, errlen, "'%s' is already a presigned URL", u.presigned_noquery);
        up_free(&u);
        return NULL;
    }
    struct fk_buf path = FK_BUF_INIT;
    fk_buf_addc(&path, '/');
    if (u.path_style) {
        fk_uri_encode(&path, u.bucket, false);
        fk_buf_addc(&path, '/');
    }
    fk_uri_encode(&path, u.prefix, true);
    const char *region = u.s.region ? u.s.region : u.kind == DEST_GS ? "auto" : "us-east-1";
    struct fk_sigv4_key k = { u.s.key_id, u.s.secret, u.s.token, region, "s3" };
    char *url = fk_sigv4_presign(method, u.base, u.host, fk_buf_cstr(&path), &k, time(NULL), expires_s);
    fk_buf_free(&path);
    up_free(&u);
    return url;
}

/* ---- metadata from names ------------------------------------------- */

size_t fk_upload_meta_from_name(const char *path, struct fk_upload_meta *out)
{
    memset(out, 0, sizeof *out);
    struct fk_result_name rn;
    if (!fk_result_parse(path, &rn))
        return 0;
    const char **k = fk_calloc(8, sizeof *k), **v = fk_calloc(8, sizeof *v);
    size_t n = 0;
    k[n] = fk_strdup("host"), v[n++] = fk_strdup(rn.host);
    k[n] = fk_strdup("scope"), v[n++] = fk_strdup(rn.scope);
    k[n] = fk_strdup("start-time"), v[n++] = fk_strdup(rn.start_time);
    if (strcmp(rn.profile, "cpu"))
        k[n] = fk_strdup("profile"), v[n++] = fk_strdup(rn.profile);
    /* The capture's metadata beside the file adds what a bucket search wants. */
    char *jpath = fk_result_sibling(path, FK_RESULT_JSON);
    struct fk_result_meta m;
    if (jpath && fk_result_meta_load(jpath, &m)) {
        if (m.event)
            k[n] = fk_strdup("event"), v[n++] = fk_strdup(m.event);
        if (m.duration_s >= 0)
            k[n] = fk_strdup("duration-s"), v[n++] = fk_asprintf("%.1f", m.duration_s);
        if (m.samples >= 0)
            k[n] = fk_strdup("samples"), v[n++] = fk_asprintf("%lld", (long long)m.samples);
        if (m.kernel_release)
            k[n] = fk_strdup("kernel"), v[n++] = fk_strdup(m.kernel_release);
        fk_result_meta_free(&m);
    }
    free(jpath);
    fk_result_name_free(&rn);
    out->keys = k;
    out->values = v;
    out->n = n;
    return n;
}

void fk_upload_meta_free(struct fk_upload_meta *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free((char *)m->keys[i]);
        free((char *)m->values[i]);
    }
    free((void *)m->keys);
    free((void *)m->values);
    memset(m, 0, sizeof *m);
}
