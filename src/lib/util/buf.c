/* SPDX-License-Identifier: GPL-2.0-only */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

void fk_buf_reserve(struct fk_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        fk_die("buffer size overflow");
    b->data = fk_grow(b->data, &b->cap, b->len + extra + 1, 1);
}

void fk_buf_add(struct fk_buf *b, const void *data, size_t len)
{
    fk_buf_reserve(b, len);
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
}

void fk_buf_addc(struct fk_buf *b, char c)
{
    if (b->len + 2 > b->cap)
        fk_buf_reserve(b, 1);
    b->data[b->len++] = c;
}

void fk_buf_adds(struct fk_buf *b, const char *s)
{
    fk_buf_add(b, s, strlen(s));
}

void fk_buf_vprintf(struct fk_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        fk_die("formatting failed");
    fk_buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    va_end(again);
    b->len += (size_t)n;
}

void fk_buf_printf(struct fk_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fk_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *fk_buf_cstr(struct fk_buf *b)
{
    fk_buf_reserve(b, 0);
    b->data[b->len] = '\0';
    return b->data;
}

void fk_buf_free(struct fk_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
