/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared basics for every flamekit stage: errors, allocation, versions. */
#ifndef FK_H
#define FK_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

/* This build's version ("0.1.0", "0.1.0-3-gabc1234") and what its libperf
 * was built from, in a file generated at build time (src/lib/util/local.mk)
 * so a new commit relinks instead of recompiling. FK_VERSION is a string
 * variable, not a literal: no "..." FK_VERSION concatenation. */
extern const char fk_version[];
extern const char fk_libperf_source[];
#define FK_VERSION fk_version

/* FK_ASAN: built with AddressSanitizer (gcc or clang), whose allocator
 * some code must treat differently. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FK_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FK_ASAN)
#define FK_ASAN 1
#endif

/* Exit codes shared by all commands (documented in flamekit(1)). */
enum {
    FK_EXIT_OK = 0,
    FK_EXIT_ERROR = 1,   /* runtime failure: I/O, permissions, bad data */
    FK_EXIT_USAGE = 2,   /* bad command line */
};

/* "flamekit collapse" etc.; set by the dispatcher, used in every message. */
extern const char *fk_progname;

#define FK_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* The library never writes to the terminal. An error is a value: false or
 * NULL, and one line naming the problem and the fix in the caller's
 * char *err, size_t errlen (or an object's error field). A warning (the
 * work goes on, degraded) goes to an fk_warn_fn the caller gave, one line
 * without the program name. Commands print both (src/cmd/term.h: fk_error,
 * fk_warn, fk_warn_line). */
typedef void (*fk_warn_fn)(void *ctx, const char *msg);
/* The library's way to warn: format one line and hand it to fn (nothing
 * when fn is NULL). */
void fk_warn_to(fk_warn_fn fn, void *ctx, const char *fmt, ...) FK_PRINTF(3, 4);

/* A diagnostic line without its newline: "PROG: KIND" and the message,
 * cut to cap - 1 bytes, made safe for a terminal (fk_text_sanitize). */
void fk_format_line(char *line, size_t cap, const char *kind, const char *fmt, va_list ap)
    FK_PRINTF(4, 0);
/* The one exception to "never writes": a process that cannot go on (out of
 * memory, an internal limit or bug) ends with FK_EXIT_ERROR after
 * fk_format_line's line on stderr. Never for what input or a user did. */
_Noreturn void fk_die(const char *fmt, ...) FK_PRINTF(1, 2);

/* Text a profiled process or a remote host can name (comm, symbol names,
 * paths, remote messages) made safe for a terminal, in place: C0 controls
 * (tab kept), DEL, C1 controls (U+0080-U+009F, as UTF-8 or as raw bytes)
 * and any byte of invalid UTF-8 become one '?' each; valid UTF-8 is kept.
 * Never grows the text; returns the new length (s[0..n) stays
 * NUL-terminated only if it was). fk_format_line applies it to every
 * diagnostic; summaries and status lines call it themselves. */
size_t fk_text_sanitize_n(char *s, size_t n);
void fk_text_sanitize(char *s);

/* Allocation that cannot fail: on exhaustion we die with a clear message. */
void *fk_malloc(size_t n);
void *fk_calloc(size_t n, size_t size);
void *fk_realloc(void *p, size_t n);
/* Grow an array to hold at least `need` elements of `size` bytes. */
void *fk_grow(void *p, size_t *cap, size_t need, size_t size);
/* The capacity fk_grow would give (for callers that bound memory before growing). */
size_t fk_grow_cap(size_t cap, size_t need);
/* For commands that build big tables and exit (collapse, svg, diff, merge,
 * the capture commands; not serve, which lives on): keep freed memory, one
 * malloc arena for every thread, and put the heap on transparent huge pages
 * where the admin allows them ("always" or "madvise"; with "never" nothing
 * changes). A first touch of a 4 KiB page costs ~11 us in a VM, and svg
 * touches thousands (a capture: 4,000-5,000, the kernel's symbol table
 * alone 1,200); one 2 MiB page replaces 512 faults.
 * Peak RSS can grow by up to a few MiB (whole 2 MiB pages). Call once,
 * before the tables are built. */
void fk_heap_for_batch(void);
char *fk_strdup(const char *s);
char *fk_strndup(const char *s, size_t n);
char *fk_asprintf(const char *fmt, ...) FK_PRINTF(1, 2);
char *fk_vasprintf(const char *fmt, va_list ap) FK_PRINTF(1, 0);

/* Whether the n bytes at s end with the string suf. */
static inline bool fk_ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && !memcmp(s + n - k, suf, k);
}

/* The value of one hexadecimal digit (either case), or -1. */
static inline int fk_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Parse an unsigned decimal with optional bounds; false on garbage/overflow. */
/* A small file (/proc, /sys, tracefs) read whole into buf, NUL-terminated,
 * at most cap - 1 bytes: the bytes read, or -1 (errno set). */
ssize_t fk_read_small(const char *path, char *buf, size_t cap);
/* Exactly n bytes from / to fd, retried across EINTR and short transfers;
 * false on an error (errno set) or an early end of file (errno 0). */
bool fk_read_full(int fd, void *buf, size_t n);
bool fk_write_full(int fd, const void *buf, size_t n);

bool fk_parse_u64(const char *s, uint64_t *out);
/* Durations: "30", "30s", "2m", "500ms" -> milliseconds. */
bool fk_parse_duration_ms(const char *s, uint64_t *out_ms);
/* Sizes: "64", "64K", "16M", "1G" -> bytes. */
bool fk_parse_size(const char *s, uint64_t *out);

/* The hash family for table keys (util/hindex.h), all with a full final
 * mix. Not stable across versions: never store one.
 * fk_hash_u64: one integer (pids, inodes, packed pairs). */
static inline uint64_t fk_hash_u64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* fk_hash: bytes. Keys are often long (whole stacks, frame lines: the
 * collapse hot path), so two independent lanes of one multiply per word. */
static inline uint64_t fk_hash(const void *data, size_t len)
{
    const uint64_t k1 = 0x9fb21c651e98df25ULL, k2 = 0xc2b2ae3d27d4eb4fULL;
    const unsigned char *s = data;
    uint64_t a = 0x9e3779b97f4a7c15ULL ^ len, b = 0x165667b19e3779f9ULL;
    size_t n = len;
    while (n >= 16) {
        uint64_t w, x;
        memcpy(&w, s, 8);
        memcpy(&x, s + 8, 8);
        a = (a ^ w) * k1;
        b = (b ^ x) * k2;
        a ^= a >> 29;
        b ^= b >> 31;
        s += 16;
        n -= 16;
    }
    if (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        a = (a ^ w) * k1;
        a ^= a >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t tail = 0;
    if (n && len >= 8)
        memcpy(&tail, s + n - 8, 8);    /* the key's last 8 bytes: one load */
    else
        memcpy(&tail, s, n);
    b = (b ^ tail ^ ((uint64_t)n << 56)) * k2;
    return fk_hash_u64(a ^ (b >> 32 | b << 32));
}

/* Monotonic and wall clocks. */
uint64_t fk_now_ns(void);

/* In an array sorted by the uint64_t at byte offset `off` of each `size`-byte
 * element: how many elements have it <= key (binary search). */
static inline size_t fk_count_le(const void *v, size_t n, size_t size, size_t off, uint64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t k;
        memcpy(&k, (const char *)v + mid * size + off, sizeof k);
        if (k <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
