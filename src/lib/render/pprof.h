/* SPDX-License-Identifier: GPL-2.0-only */
/* pprof output: a structured profile (stacks/prof.h) encoded as a
 * perftools.profiles.Profile protobuf (stacks/profile.proto, through
 * protoc-c), with a capture's metadata as comments ("key=value", nested keys
 * joined with '.'). Files are gzip-compressed, as pprof tools expect. */
#ifndef FK_RENDER_PPROF_H
#define FK_RENDER_PPROF_H

#include "stacks/prof.h"
#include "util/buf.h"

#include <jansson.h>

/* Encode p (uncompressed protobuf) into out; meta may be NULL. */
void fk_pprof_encode(const struct fk_prof *p, const json_t *meta, struct fk_buf *out);

/* Encoding and compressing a large profile takes tens of milliseconds: a
 * capture starts it on a second thread (inline if none can be made) before
 * drawing its SVG, and collects the gzip bytes afterwards. p must stay
 * unchanged until then; meta is read here, on the caller's thread. */
struct fk_pprof_job;
struct fk_pprof_job *fk_pprof_gz_start(const struct fk_prof *p, const json_t *meta);
/* Wait and take the gzip bytes (out's buffer is the caller's); false if
 * compression failed. *cpu_ns (if not NULL): the CPU time encoding and
 * compressing took. Frees the job. */
bool fk_pprof_gz_finish(struct fk_pprof_job *j, struct fk_buf *out, uint64_t *cpu_ns);

#endif
