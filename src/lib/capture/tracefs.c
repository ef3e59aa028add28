/* SPDX-License-Identifier: GPL-2.0-only */
/* Tracepoint ids and record layouts from tracefs: see tracefs.h. */
#include "capture/tracefs.h"
#include "util/fk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static bool dir_has(const char *dir, const char *entry)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, entry);
    return stat(p, &st) == 0;
}

const char *fk_tracefs_root(void)
{
    static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (dir_has(roots[i], "events"))
            return roots[i];
    /* Not mounted (perf mounts it the same way); failure just means "not found". */
    if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
        dir_has("/sys/kernel/tracing", "events"))
        return "/sys/kernel/tracing";
    return NULL;
}

/* A number at p (base 10, or 0 for C's 0x/0 prefixes), read no further
 * than end: the text need not be NUL-terminated. *after: where it ended. */
static bool num_at(const char *p, const char *end, int base, unsigned long long *v,
                   const char **after)
{
    char tmp[32];
    size_t n = (size_t)(end - p) < sizeof tmp - 1 ? (size_t)(end - p) : sizeof tmp - 1;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    char *e;
    *v = strtoull(tmp, &e, base);
    *after = p + (e - tmp);
    return e != tmp;
}

/* The number after key ("offset:") in [p, end). */
static bool field_num(const char *p, const char *end, const char *key, unsigned long *v)
{
    size_t kl = strlen(key);
    const char *k = memmem(p, (size_t)(end - p), key, kl);
    unsigned long long x;
    const char *after;
    if (!k || !num_at(k + kl, end, 10, &x, &after) || x > ULONG_MAX)
        return false;
    *v = (unsigned long)x;
    return true;
}

/* One "field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:X;" line. */
static void parse_field(const char *p, const char *end, struct fk_tp_format *fmt)
{
    const char *semi = memchr(p, ';', (size_t)(end - p));
    if (!semi || fmt->n >= FK_TP_MAX_FIELDS)
        return;
    /* the name is the last word before ';', without an array suffix */
    const char *ne = semi;
    const char *br = memchr(p, '[', (size_t)(semi - p));
    if (br)
        ne = br;
    const char *nb = ne;
    while (nb > p && nb[-1] != ' ' && nb[-1] != '\t' && nb[-1] != ':')
        nb--;
    unsigned long off, size, sgn = 0;
    for (const char *c = nb; c < ne; c++)
        if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9')))
            return;     /* a C identifier, or not a field flamekit reads */
    if (nb == ne || (size_t)(ne - nb) >= sizeof fmt->f[0].name ||
        !field_num(semi, end, "offset:", &off) || !field_num(semi, end, "size:", &size) ||
        off > 0xffff || size > 0xffff)
        return;
    field_num(semi, end, "signed:", &sgn);
    struct fk_tp_field *f = &fmt->f[fmt->n++];
    memcpy(f->name, nb, (size_t)(ne - nb));
    f->name[ne - nb] = 0;
    f->offset = (uint16_t)off;
    f->size = (uint16_t)size;
    f->is_signed = sgn != 0;
}

/* __print_flags(..., { 0x00000001, "S" }, ...) pairs of the print format. */
static void parse_flags(const char *p, const char *end, struct fk_tp_format *fmt)
{
    const char *pf = memmem(p, (size_t)(end - p), "__print_flags(", 14);
    if (!pf)
        return;
    for (const char *q = pf; q < end && fmt->nflags < 16;) {
        const char *b = memchr(q, '{', (size_t)(end - q));
        if (!b)
            break;
        const char *e;
        unsigned long long bit;
        if (!num_at(b + 1, end, 0, &bit, &e))
            break;
        const char *quote = e < end ? memchr(e, '"', (size_t)(end - e)) : NULL;
        const char *close = quote ? memchr(quote + 1, '"', (size_t)(end - quote - 1)) : NULL;
        if (!quote || !close || close - quote - 1 >= 4 || close - quote - 1 < 1)
            break;
        /* a state's letters are printable (a NUL would make an empty or
         * cut name, a control byte would reach the folded text) */
        bool printable = true;
        for (const char *c = quote + 1; c < close; c++)
            printable &= *c > ' ' && *c < 0x7f;
        if (!printable)
            break;
        fmt->flags[fmt->nflags].bit = bit;
        memcpy(fmt->flags[fmt->nflags].letter, quote + 1, (size_t)(close - quote - 1));
        fmt->flags[fmt->nflags].letter[close - quote - 1] = 0;
        fmt->nflags++;
        q = close + 1;
        const char *cb = memchr(q, '}', (size_t)(end - q));
        if (!cb)
            break;
        q = cb + 1;
        /* the list ends at the closing parenthesis after the last pair */
        while (q < end && (*q == ' ' || *q == ','))
            q++;
        if (q < end && *q != '{')
            break;
    }
}

bool fk_tp_format_parse(const char *text, size_t len, struct fk_tp_format *fmt)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *s = p;
        while (s < le && (*s == ' ' || *s == '\t'))
            s++;
        if ((size_t)(le - s) > 6 && !memcmp(s, "field:", 6))
            parse_field(s + 6, le, fmt);
        else if ((size_t)(le - s) > 10 && !memcmp(s, "print fmt:", 10))
            parse_flags(s, le, fmt);
        p = le + (nl != NULL);
    }
    return fmt->n > 0;
}

const struct fk_tp_field *fk_tp_field(const struct fk_tp_format *fmt, const char *name)
{
    for (unsigned i = 0; i < fmt->n; i++)
        if (!strcmp(fmt->f[i].name, name))
            return &fmt->f[i];
    return NULL;
}

bool fk_tp_get(const struct fk_tp_field *f, const void *raw, size_t rawlen, int64_t *v)
{
    if (!f || (size_t)f->offset + f->size > rawlen)
        return false;
    const unsigned char *p = (const unsigned char *)raw + f->offset;
    switch (f->size) {
    case 1: { int8_t s; uint8_t u; memcpy(&u, p, 1); s = (int8_t)u; *v = f->is_signed ? s : u; return true; }
    case 2: { uint16_t u; memcpy(&u, p, 2); *v = f->is_signed ? (int16_t)u : (int64_t)u; return true; }
    case 4: { uint32_t u; memcpy(&u, p, 4); *v = f->is_signed ? (int32_t)u : (int64_t)u; return true; }
    case 8: { uint64_t u; memcpy(&u, p, 8); *v = (int64_t)u; return true; }
    default: return false;
    }
}

bool fk_tp_format_load(const char *system, const char *name, struct fk_tp_format *fmt,
                       char *err, size_t errlen)
{
    memset(fmt, 0, sizeof *fmt);
    snprintf(fmt->name, sizeof fmt->name, "%s:%s", system, name);
    const char *root = fk_tracefs_root();
    if (!root) {
        snprintf(err, errlen, "tracepoint %s: tracefs is not mounted and could not be "
                 "(mount -t tracefs nodev /sys/kernel/tracing, as root)", fmt->name);
        return false;
    }
    char path[512], buf[8192];
    snprintf(path, sizeof path, "%s/events/%s/%s/id", root, system, name);
    if (fk_read_small(path, buf, sizeof buf) <= 0) {
        snprintf(err, errlen, "tracepoint %s: cannot read %s: %s (a kernel without "
                 "CONFIG_TRACEPOINTS?)", fmt->name, path, strerror(errno));
        return false;
    }
    fmt->id = strtoull(buf, NULL, 10);
    snprintf(path, sizeof path, "%s/events/%s/%s/format", root, system, name);
    ssize_t n = fk_read_small(path, buf, sizeof buf);
    if (n <= 0 || !fk_tp_format_parse(buf, (size_t)n, fmt)) {
        snprintf(err, errlen, "tracepoint %s: cannot read its record layout from %s", fmt->name,
                 path);
        return false;
    }
    return true;
}
