/* SPDX-License-Identifier: GPL-2.0-only */
#include "fk.h"
#include "buf.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

const char *fk_progname = "flamekit";

/* Length of the valid UTF-8 sequence at s[0..n) (0 when invalid): no
 * overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char b = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf)
        len = 2;
    else if (b >= 0xe0 && b <= 0xef)
        len = 3, lo = b == 0xe0 ? 0xa0 : 0x80, hi = b == 0xed ? 0x9f : 0xbf;
    else if (b >= 0xf0 && b <= 0xf4)
        len = 4, lo = b == 0xf0 ? 0x90 : 0x80, hi = b == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

size_t fk_text_sanitize_n(char *s, size_t n)
{
    unsigned char *p = (unsigned char *)s;
    size_t r = 0, w = 0;
    while (r < n) {
        unsigned char b = p[r];
        if (b < 0x80) {
            p[w++] = (b < 0x20 && b != '\t') || b == 0x7f ? '?' : b;
            r++;
            continue;
        }
        size_t len = utf8_len(p + r, n - r);
        if (!len || (b == 0xc2 && p[r + 1] <= 0x9f)) {    /* invalid, or C1 */
            p[w++] = '?';
            r += len ? len : 1;
            continue;
        }
        memmove(p + w, p + r, len);
        w += len;
        r += len;
    }
    if (w < n)
        p[w] = '\0';
    return w;
}

void fk_text_sanitize(char *s)
{
    fk_text_sanitize_n(s, strlen(s));
}

void fk_format_line(char *line, size_t cap, const char *kind, const char *fmt, va_list ap)
{
    /* Built whole first so concurrent writers never interleave it. */
    int n = snprintf(line, cap, "%s: %s", fk_progname, kind);
    if (n < 0 || (size_t)n >= cap)
        n = 0;
    vsnprintf(line + n, cap - (size_t)n, fmt, ap);
    /* Messages name comms, symbols and paths a profiled process chose. A
     * line cut by the buffer may end mid-sequence: that becomes '?'. */
    fk_text_sanitize(line);
}

void fk_warn_to(fk_warn_fn fn, void *ctx, const char *fmt, ...)
{
    if (!fn)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *msg = fk_vasprintf(fmt, ap);
    va_end(ap);
    fn(ctx, msg);
    free(msg);
}

void fk_die(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    fk_format_line(line, sizeof line, "", fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
    exit(FK_EXIT_ERROR);
}

static _Noreturn void oom(size_t n)
{
    fk_die("out of memory allocating %zu bytes; lower the limits or free memory", n);
}

/* Batch heap (fk_heap_for_batch): the end of the brk heap already marked
 * for huge pages, NULL while the process keeps the default policy. */
static char *huge_end;

enum { HUGE_PAGE = 2 << 20, HUGE_PAD = 64 << 20, MMAP_FROM = 32 << 20 };

/* Mark what the heap grew by since the last look (malloc grows it by at
 * least HUGE_PAD at a time, so this is rare). */
static void huge_follow(void)
{
    char *end = sbrk(0);
    if (end == (char *)-1 || end <= huge_end)
        return;
    /* a hint: without transparent huge pages it fails and nothing changes */
    if (madvise(huge_end, (size_t)(end - huge_end), MADV_HUGEPAGE) != 0 && errno != EINVAL)
        huge_end = NULL;
    else
        huge_end = end;
}

ssize_t fk_read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    int e = errno;
    close(fd);
    errno = e;
    buf[n] = 0;
    return (ssize_t)n;
}

bool fk_read_full(int fd, void *buf, size_t n)
{
    char *c = buf;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = 0;
            return false;
        }
        c += r;
        n -= (size_t)r;
    }
    return true;
}

bool fk_write_full(int fd, const void *buf, size_t n)
{
    const char *c = buf;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = 0;
            return false;
        }
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* Does the kernel give huge pages to a region that asks (the admin's
 * setting is "always" or "madvise")? */
static bool huge_pages_allowed(void)
{
    char buf[128];
    if (fk_read_small("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) <= 0)
        return false;
    return strstr(buf, "[always]") || strstr(buf, "[madvise]");
}

void fk_heap_for_batch(void)
{
#ifdef FK_ASAN
    return;     /* ASan's malloc takes none of these hints (and would keep
                 * the big block below in its quarantine) */
#endif
    if (huge_end || !huge_pages_allowed())
        return;
    /* What the heap holds free now (the rest of the first 132 KB malloc
     * took with small pages) goes back first: malloc would otherwise
     * serve the next small blocks from it, below the huge pages, and a
     * table zeroed there (collapse's 96 KB of caches) is a fault per
     * small page, 23 on an empty input. */
    (void)mallopt(M_TOP_PAD, 0);
    (void)malloc_trim(0);
    char *start = sbrk(0);
    long small = sysconf(_SC_PAGESIZE);
    if (start == (char *)-1 || small < 4096 || small >= HUGE_PAGE)
        return;
    /* The heap goes on from a huge-page boundary, so its pages are whole
     * huge pages (peak RSS is the heap rounded up once, and the same in
     * every run). The break is set a small page short of the boundary:
     * malloc writes its headers there, in one small page, and the first
     * huge page is untouched when it is marked (else it stays small
     * pages, 512 faults, or costs a collapse). The gap is address space
     * only, never touched; glibc's malloc allows another user of sbrk. */
    uintptr_t at = ((uintptr_t)start + (uintptr_t)small + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (sbrk((intptr_t)(at - (uintptr_t)small - (uintptr_t)start)) == (void *)-1)
        return;     /* no address space to spare: keep the default */
    /* Big tables stay in the heap (not one mmap each, unmapped and faulted
     * in again when they grow or are freed), freed memory is kept for
     * reuse, and the heap grows HUGE_PAD at a time (address space only:
     * pages are touched as used). 32 MB is glibc's largest mmap threshold
     * on 64-bit. Each setting is a hint: a malloc that ignores it (ASan's)
     * only misses the speed-up. */
    (void)mallopt(M_MMAP_THRESHOLD, MMAP_FROM);
    (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
    (void)mallopt(M_TOP_PAD, HUGE_PAD);
    /* threads too (the kernel symbol reader's 5 MB table): a thread's
     * own arena is mmap'd 4 KiB pages */
    (void)mallopt(M_ARENA_MAX, 1);
    huge_end = (char *)at;
    /* Grow the heap now, so the first tables land on marked pages. A
     * block this big comes from the top of the heap (not a free list): its
     * header goes in the small page below the boundary.
     * (volatile: a compiler may drop a malloc whose block is unused) */
    void *volatile grow = malloc(MMAP_FROM - 2 * HUGE_PAGE);
    free(grow);
    huge_follow();
    /* Freed, the block is the top chunk's free space (its header below the
     * boundary): nothing lives above the boundary yet. Pages malloc wrote
     * there before they were marked -- the header after the block, 28 MB
     * on -- are small pages in a huge-page region, and khugepaged
     * (max_ptes_none 511 by default) collapses such a range into a whole
     * huge page at some point of the capture: 2 MB of RSS for one header
     * (bench/children.sh part 5 saw a round's peak RSS +1.8 MB). Drop
     * them: the next touch of each 2 MB range faults in a huge page. */
    char *end = sbrk(0);
    if (huge_end && end != (char *)-1 && end > (char *)at)
        (void)madvise((void *)at, (size_t)(end - (char *)at), MADV_DONTNEED);
}

void *fk_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    if (huge_end)
        huge_follow();
    return p;
}

void *fk_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    if (huge_end)
        huge_follow();
    return p;
}

void *fk_realloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        oom(n);
    if (huge_end)
        huge_follow();
    return p;
}

size_t fk_grow_cap(size_t cap, size_t need)
{
    if (need <= cap)
        return cap;
    size_t c = cap ? cap : 16;
    while (c < need && c <= SIZE_MAX / 2)
        c *= 2;
    return c < need ? SIZE_MAX : c;
}

void *fk_grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = fk_grow_cap(*cap, need);
    if (c > SIZE_MAX / size)
        oom(SIZE_MAX);
    p = fk_realloc(p, c * size);
    *cap = c;
    return p;
}

char *fk_strdup(const char *s)
{
    return fk_strndup(s, strlen(s));
}

char *fk_strndup(const char *s, size_t n)
{
    char *d = fk_malloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *fk_vasprintf(const char *fmt, va_list ap)
{
    struct fk_buf b = FK_BUF_INIT;
    fk_buf_vprintf(&b, fmt, ap);
    fk_buf_reserve(&b, 0);      /* "" has a buffer too */
    b.data[b.len] = '\0';
    return b.data;
}

char *fk_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = fk_vasprintf(fmt, ap);
    va_end(ap);
    return s;
}

bool fk_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Split "123abc" into number and suffix. */
static bool split_num(const char *s, uint64_t *v, const char **suffix)
{
    char buf[32];
    size_t i = 0;
    while (s[i] >= '0' && s[i] <= '9' && i < sizeof buf - 1) {
        buf[i] = s[i];
        i++;
    }
    buf[i] = '\0';
    if (i == 0 || (s[i] >= '0' && s[i] <= '9'))
        return false;
    *suffix = s + i;
    return fk_parse_u64(buf, v);
}

static bool mul_ok(uint64_t v, uint64_t m, uint64_t *out)
{
    if (m && v > UINT64_MAX / m)
        return false;
    *out = v * m;
    return true;
}

bool fk_parse_duration_ms(const char *s, uint64_t *out_ms)
{
    uint64_t v;
    const char *suf;
    if (!s || !split_num(s, &v, &suf))
        return false;
    if (!*suf || !strcmp(suf, "s"))
        return mul_ok(v, 1000, out_ms);
    if (!strcmp(suf, "ms"))
        return mul_ok(v, 1, out_ms);
    if (!strcmp(suf, "m") || !strcmp(suf, "min"))
        return mul_ok(v, 60000, out_ms);
    if (!strcmp(suf, "h"))
        return mul_ok(v, 3600000, out_ms);
    return false;
}

bool fk_parse_size(const char *s, uint64_t *out)
{
    uint64_t v;
    const char *suf;
    if (!s || !split_num(s, &v, &suf))
        return false;
    uint64_t m = 1;
    switch (*suf) {
    case '\0': m = 1; break;
    case 'k': case 'K': m = 1ULL << 10; break;
    case 'm': case 'M': m = 1ULL << 20; break;
    case 'g': case 'G': m = 1ULL << 30; break;
    default: return false;
    }
    if (*suf && suf[1] && strcmp(suf + 1, "B") && strcmp(suf + 1, "iB") && strcmp(suf + 1, "b"))
        return false;
    return mul_ok(v, m, out);
}

uint64_t fk_now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        fk_die("clock_gettime: %s", strerror(errno));
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
