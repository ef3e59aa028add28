/* SPDX-License-Identifier: GPL-2.0-only */
/* The result stream of 'flamekit CAPTURE --stdout', read by 'flamekit remote':
 * a framed, checksummed sequence of named files followed by an end record
 * with the remote exit status, so a cut connection can never look like a
 * complete result. Format: see stream.c and flamekit-remote(1). */
#ifndef FK_STREAM_H
#define FK_STREAM_H

#include "util/fk.h"

struct fk_stream_writer {
    int fd;
    bool failed;
};

bool fk_stream_begin(struct fk_stream_writer *w, int fd);
/* One file, its contents given in memory or read from path. */
bool fk_stream_file(struct fk_stream_writer *w, const char *name, const void *data, size_t len);
bool fk_stream_file_path(struct fk_stream_writer *w, const char *name, const char *path);
/* Final record: exit status and a message (shown verbatim by the reader). */
bool fk_stream_end(struct fk_stream_writer *w, int status, const char *message);

#endif
