/* SPDX-License-Identifier: GPL-2.0-only */
/* Growable byte buffer: building strings and keys without fixed limits. */
#ifndef FK_BUF_H
#define FK_BUF_H

#include "fk.h"

struct fk_buf {
    char *data;
    size_t len;
    size_t cap;
};

#define FK_BUF_INIT { NULL, 0, 0 }

void fk_buf_reserve(struct fk_buf *b, size_t extra);
void fk_buf_add(struct fk_buf *b, const void *data, size_t len);
void fk_buf_addc(struct fk_buf *b, char c);
void fk_buf_adds(struct fk_buf *b, const char *s);
void fk_buf_printf(struct fk_buf *b, const char *fmt, ...) FK_PRINTF(2, 3);
void fk_buf_vprintf(struct fk_buf *b, const char *fmt, va_list ap) FK_PRINTF(2, 0);
/* NUL-terminated view (the NUL is not counted in len). */
const char *fk_buf_cstr(struct fk_buf *b);
static inline void fk_buf_reset(struct fk_buf *b) { b->len = 0; }
void fk_buf_free(struct fk_buf *b);

#endif
