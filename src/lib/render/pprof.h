/* SPDX-License-Identifier: GPL-2.0-only */
/* pprof output: a structured profile (stacks/prof.h) encoded as a
 * perftools.profiles.Profile protobuf (stacks/profile.proto, through
 * protoc-c), with a capture's metadata as comments ("key=value", nested keys
 * joined with '.'). Files are gzip-compressed, as pprof tools expect. */
#ifndef FK_RENDER_PPROF_H
#define FK_RENDER_PPROF_H

#include "stacks/prof.h"
#include "util/outfile.h"

#include <jansson.h>

/* Where the encoded bytes go; false stops the encoding. */
typedef bool (*fk_pprof_sink)(void *ctx, const void *data, size_t len);

/* Encode p (uncompressed protobuf) into sink; meta may be NULL. */
bool fk_pprof_encode(const struct fk_prof *p, const json_t *meta, fk_pprof_sink sink, void *ctx);
/* Write p gzip-compressed to path atomically (fk_outfile); false after one
 * error line. */
bool fk_pprof_write_file(const char *path, const struct fk_prof *p, const json_t *meta);

#endif
