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
    char error[512];    /* once failed: the first error, one line, no prefix */
};

/* Each false below: failed, and why in error. */
bool fk_stream_begin(struct fk_stream_writer *w, int fd);
/* One file, its contents given in memory or read from path. */
bool fk_stream_file(struct fk_stream_writer *w, const char *name, const void *data, size_t len);
bool fk_stream_file_path(struct fk_stream_writer *w, const char *name, const char *path);
/* Final record: exit status and a message (shown verbatim by the reader). */
bool fk_stream_end(struct fk_stream_writer *w, int status, const char *message);


/* Reader side. Push parser: feed it bytes as they arrive (from any number
 * of hosts in one poll loop), then finish it. Each file is written to a
 * hidden temporary in the destination directory while it arrives; all of
 * them are renamed to their final names only after a valid end record with
 * status 0, so a cut or corrupted stream leaves no file behind. Memory use
 * is constant; sizes are bounded by the limits below. */
enum fk_stream_state {
    FK_STREAM_RUNNING,      /* more input expected */
    FK_STREAM_ENDED,        /* valid end record seen; finish to commit */
    FK_STREAM_BROKEN,       /* framing, CRC, size or I/O error (see error) */
};

#define FK_STREAM_MAX_FILES 32
#define FK_STREAM_MAX_NAME 255
#define FK_STREAM_MAX_MESSAGE (64u * 1024)
/* Per file and per stream (one host): far above any capture's files
 * (--max-memory's 1G limit bounds the stacks behind them), far below
 * what fills a laptop's disk from a hostile host. */
#define FK_STREAM_MAX_FILE_DEFAULT (1ull << 30)

struct fk_stream_file_rec {
    char *name;         /* as sent by the remote side: a result file name
                         * (fk_result_file_name_ok), nothing else */
    char *tmp;          /* temporary path while uncommitted */
    char *path;         /* final path once committed */
    uint64_t size;
};

struct fk_stream_reader {
    char *dir;
    uint64_t max_file;          /* per-file byte limit */
    uint64_t max_total;         /* limit on the sum of all files */
    enum fk_stream_state state;
    char *error;                /* set when BROKEN: one line, no prefix */
    /* end record */
    int status;
    char *message;
    /* files */
    struct fk_stream_file_rec files[FK_STREAM_MAX_FILES];
    size_t nfiles;
    uint64_t total_bytes;       /* payload bytes received so far */
    uint64_t stream_bytes;      /* all bytes fed */
    /* parser */
    int phase;
    unsigned char hdr[11];
    size_t have;                /* bytes collected in the current phase */
    char type;
    size_t name_len;
    uint64_t data_len, data_left;
    char name[FK_STREAM_MAX_NAME + 1];
    char *msg_buf;
    unsigned long crc;
    unsigned char crc_buf[4];
    int fd;                     /* temporary being written, -1 if none */
};

void fk_stream_reader_init(struct fk_stream_reader *r, const char *dir);
/* Consume bytes; returns the state afterwards. Bytes after the end record
 * make the stream BROKEN (nothing may follow it). */
enum fk_stream_state fk_stream_reader_feed(struct fk_stream_reader *r, const void *data,
                                           size_t len);
/* Input is over (EOF). If the end record was seen and its status is 0, the
 * files are renamed into place (names given a "PREFIX." when any final name
 * already exists and prefix is non-NULL) and true is returned. Otherwise
 * every temporary is removed and false is returned: r->error says why (a
 * cut stream, a bad record) or r->status/r->message carry the remote error. */
bool fk_stream_reader_finish(struct fk_stream_reader *r, const char *prefix);
/* Remove temporaries (if any) and free everything. Safe after finish. */
void fk_stream_reader_free(struct fk_stream_reader *r);

#endif
