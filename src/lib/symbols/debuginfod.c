/* SPDX-License-Identifier: GPL-2.0-only */
/* Debug files by build-id from debuginfod servers, through elfutils'
 * libdebuginfod loaded with dlopen() at the first lookup: only when the user
 * asked for it ($DEBUGINFOD_URLS or --debuginfod), so flamekit links neither
 * it nor the libcurl it brings. Its cache ($DEBUGINFOD_CACHE_PATH, default
 * ~/.cache/debuginfod_client) answers repeated lookups, misses included.
 * Time is bounded per request and for all requests of one symbolizer (one
 * capture): the progress callback cancels a transfer past its deadline
 * (libdebuginfod calls it about once a second while it waits). */
#include "symbols/debuginfod.h"
#include "util/dynlib.h"
#include "util/fk.h"

#include <elfutils/debuginfod.h>
#include <stdlib.h>
#include <string.h>

static struct fk_dynlib libdebuginfod = {
    .soname = DEBUGINFOD_SONAME, .who = "debuginfod", .package = "libdebuginfod1 (or unset "
    DEBUGINFOD_URLS_ENV_VAR ")", .newer = "elfutils 0.179 or newer",
};
static struct {
    debuginfod_client *(*begin)(void);
    void (*end)(debuginfod_client *);
    int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
    void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
    void (*set_user_data)(debuginfod_client *, void *);
    void *(*get_user_data)(debuginfod_client *);
} lib;

struct fk_debuginfod {
    debuginfod_client *client;      /* started at the first lookup */
    bool unavailable;
    uint64_t budget_ns, request_ns, used_ns, deadline_ns;
    bool cancelled, warned;
    struct fk_debuginfod_stats st;
    fk_warn_fn warn;
    void *warn_ctx;
};

struct fk_debuginfod *fk_debuginfod_new(const char *urls, uint64_t budget_ms, uint64_t request_ms,
                                        fk_warn_fn warn, void *warn_ctx)
{
    if (!urls || !urls[strspn(urls, " \t")])
        return NULL;
    /* libdebuginfod reads its server list from the environment only */
    const char *env = getenv(DEBUGINFOD_URLS_ENV_VAR);
    if ((!env || strcmp(env, urls) != 0) && setenv(DEBUGINFOD_URLS_ENV_VAR, urls, 1) != 0) {
        fk_warn_to(warn, warn_ctx, "debuginfod: cannot set %s; not using %s", DEBUGINFOD_URLS_ENV_VAR,
                   urls);
        return NULL;
    }
    struct fk_debuginfod *c = fk_calloc(1, sizeof *c);
    c->budget_ns = budget_ms * 1000000ull;
    c->request_ns = request_ms * 1000000ull;
    c->warn = warn;
    c->warn_ctx = warn_ctx;
    return c;
}

static bool lib_load(char *err, size_t errlen)
{
    const struct fk_dynsym syms[] = {
        { "debuginfod_begin", (void **)&lib.begin },
        { "debuginfod_end", (void **)&lib.end },
        { "debuginfod_find_debuginfo", (void **)&lib.find_debuginfo },
        { "debuginfod_set_progressfn", (void **)&lib.set_progressfn },
        { "debuginfod_set_user_data", (void **)&lib.set_user_data },
        { "debuginfod_get_user_data", (void **)&lib.get_user_data },
    };
    return fk_dynlib_once(&libdebuginfod, syms, sizeof syms / sizeof syms[0], err, errlen);
}

static bool start(struct fk_debuginfod *c)
{
    if (c->client)
        return true;
    if (c->unavailable)
        return false;
    char err[512];
    if (!lib_load(err, sizeof err)) {
        fk_warn_to(c->warn, c->warn_ctx, "%s", err);
        c->unavailable = true;
        return false;
    }
    c->client = lib.begin();
    if (!c->client) {
        fk_warn_to(c->warn, c->warn_ctx, "debuginfod: cannot start a client");
        c->unavailable = true;
        return false;
    }
    lib.set_user_data(c->client, c);
    return true;
}

/* Called while a request waits or transfers; non-zero cancels it. */
static int progress(debuginfod_client *dc, long done, long total)
{
    (void)done;
    (void)total;
    struct fk_debuginfod *c = lib.get_user_data(dc);
    if (!c || fk_now_ns() < c->deadline_ns)
        return 0;
    c->cancelled = true;
    return 1;
}

int fk_debuginfod_find(struct fk_debuginfod *c, const unsigned char *build_id, size_t len,
                       char **path)
{
    *path = NULL;
    if (!c || len == 0 || len > 64 || !start(c))
        return -1;
    if (c->used_ns >= c->budget_ns) {
        c->st.skipped++;
        if (!c->warned)
            fk_warn_to(c->warn, c->warn_ctx, "debuginfod: the %.1f s for this capture are spent; "
                       "binaries still without debug info are named by address",
                       (double)c->budget_ns / 1e9);
        c->warned = true;
        return -1;
    }
    uint64_t start = fk_now_ns(), left = c->budget_ns - c->used_ns;
    c->deadline_ns = start + (left < c->request_ns ? left : c->request_ns);
    c->cancelled = false;
    lib.set_progressfn(c->client, progress);    /* after begin(): DEBUGINFOD_PROGRESS sets its own */
    int fd = lib.find_debuginfo(c->client, build_id, (int)len, path);
    uint64_t took = fk_now_ns() - start;
    c->used_ns += took;
    c->st.ms += took / 1000000ull;
    if (fd >= 0) {
        c->st.found++;
        return fd;
    }
    free(*path);
    *path = NULL;
    c->st.failed++;
    if (c->cancelled)
        c->st.timed_out++;
    return -1;
}

void fk_debuginfod_stats(const struct fk_debuginfod *c, struct fk_debuginfod_stats *out)
{
    memset(out, 0, sizeof *out);
    if (c)
        *out = c->st;
}

void fk_debuginfod_free(struct fk_debuginfod *c)
{
    if (!c)
        return;
    if (c->client)
        lib.end(c->client);
    free(c);
}
