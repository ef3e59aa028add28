/* SPDX-License-Identifier: GPL-2.0-only */
/* Debug files by build-id from debuginfod servers (see debuginfod.c). */
#ifndef FK_DEBUGINFOD_H
#define FK_DEBUGINFOD_H

#include "util/fk.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fk_debuginfod;

struct fk_debuginfod_stats {
    uint64_t found, failed, timed_out, skipped, ms;
};

/* A client for the server list urls (the DEBUGINFOD_URLS syntax), or NULL
 * when urls is NULL or empty. Nothing is loaded or sent until the first
 * fk_debuginfod_find. budget_ms bounds the time of all requests together,
 * request_ms each one. warn (NULL: none) hears why it gives up: no
 * libdebuginfod, no client, the budget spent. */
struct fk_debuginfod *fk_debuginfod_new(const char *urls, uint64_t budget_ms, uint64_t request_ms,
                                        fk_warn_fn warn, void *warn_ctx);
void fk_debuginfod_free(struct fk_debuginfod *c);

/* An open fd of the debug file for this build-id (from the client's cache
 * or a server) and its path in the cache (*path, caller frees), or -1. */
int fk_debuginfod_find(struct fk_debuginfod *c, const unsigned char *build_id, size_t len,
                       char **path);

void fk_debuginfod_stats(const struct fk_debuginfod *c, struct fk_debuginfod_stats *out);

#endif
