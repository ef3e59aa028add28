/* SPDX-License-Identifier: GPL-2.0-only */
/* libcurl, loaded with dlopen() the first time an upload needs it.
 *
 * Linking libcurl pulls ~30 shared libraries (TLS, Kerberos, LDAP, ...) into
 * every flamekit command: ~5 ms of start-up CPU for collapse/svg, and a
 * dependency that 'remote --deploy' hosts may lack. Only upload uses it, so
 * these definitions of the libcurl entry points forward to the real ones. */
/* Our definitions of the entry points must not meet curl's type-check macros. */
#define CURL_DISABLE_TYPECHECK 1
#include "curl-dyn.h"
#include "util/dynlib.h"
#include "util/fk.h"

#include <stdarg.h>

static struct fk_dynlib libcurl = {
    .soname = "libcurl.so.4", .who = "uploading", .package = "libcurl4",
    .newer = "libcurl4 7.75 or newer",
};
static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} lib;

bool fk_curl_load(char *err, size_t errlen)
{
    const struct fk_dynsym syms[] = {
        { "curl_global_init", (void **)&lib.global_init },
        { "curl_easy_init", (void **)&lib.easy_init },
        { "curl_easy_cleanup", (void **)&lib.easy_cleanup },
        { "curl_easy_reset", (void **)&lib.easy_reset },
        { "curl_easy_perform", (void **)&lib.easy_perform },
        { "curl_easy_setopt", (void **)&lib.easy_setopt },
        { "curl_easy_getinfo", (void **)&lib.easy_getinfo },
        { "curl_easy_strerror", (void **)&lib.easy_strerror },
        { "curl_slist_append", (void **)&lib.slist_append },
        { "curl_slist_free_all", (void **)&lib.slist_free_all },
    };
    return fk_dynlib_once(&libcurl, syms, sizeof syms / sizeof syms[0], err, errlen);
}

CURLcode curl_global_init(long flags)
{
    return fk_curl_load(NULL, 0) ? lib.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
    return fk_curl_load(NULL, 0) ? lib.easy_init() : NULL;
}

void curl_easy_cleanup(CURL *c)
{
    if (libcurl.state > 0)
        lib.easy_cleanup(c);
}

void curl_easy_reset(CURL *c)
{
    if (libcurl.state > 0)
        lib.easy_reset(c);
}

CURLcode curl_easy_perform(CURL *c)
{
    return libcurl.state > 0 ? lib.easy_perform(c) : CURLE_FAILED_INIT;
}

/* The argument's type follows from the option's number range, as in curl. */
CURLcode curl_easy_setopt(CURL *c, CURLoption opt, ...)
{
    if (libcurl.state <= 0)
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, opt);
    CURLcode rc;
    if (opt < CURLOPTTYPE_OBJECTPOINT)
        rc = lib.easy_setopt(c, opt, va_arg(ap, long));
    else if (opt < CURLOPTTYPE_OFF_T)
        rc = lib.easy_setopt(c, opt, va_arg(ap, void *));   /* objects and functions */
    else if (opt < CURLOPTTYPE_BLOB)
        rc = lib.easy_setopt(c, opt, va_arg(ap, curl_off_t));
    else
        rc = lib.easy_setopt(c, opt, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

CURLcode curl_easy_getinfo(CURL *c, CURLINFO info, ...)
{
    if (libcurl.state <= 0)
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    CURLcode rc = lib.easy_getinfo(c, info, va_arg(ap, void *));   /* always a pointer */
    va_end(ap);
    return rc;
}

const char *curl_easy_strerror(CURLcode code)
{
    return libcurl.state > 0 ? lib.easy_strerror(code) : "libcurl is not available";
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
    return fk_curl_load(NULL, 0) ? lib.slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
    if (libcurl.state > 0)
        lib.slist_free_all(l);
}
