/* SPDX-License-Identifier: GPL-2.0-only */
/* fetchd-malloc.so: an LD_PRELOAD shim counting allocation calls and bytes
 * of one process (fetch-bench loads it into the server it measures). The
 * counters live in a shared file named by FETCHD_MALLOC_STATS, read by the
 * bench while the server runs; the shim removes itself from the environment
 * so git children are not counted. Allocation itself is glibc's. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void __libc_free(void *);

/* Layout shared with fetch-bench: { magic, calls, bytes }. */
struct counters { uint64_t magic, calls, bytes; };
static struct counters early, *cnt = &early;

static inline void count(size_t n)
{
    __atomic_fetch_add(&cnt->calls, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&cnt->bytes, n, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void init(void)
{
    const char *path = getenv("FETCHD_MALLOC_STATS");
    if (path) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0 && ftruncate(fd, 4096) == 0) {
            void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED) {
                struct counters *c = m;
                c->calls = early.calls;
                c->bytes = early.bytes;
                c->magic = 0x636f756e74657273ULL;
                cnt = c;
            }
        }
        if (fd >= 0)
            close(fd);
    }
    unsetenv("FETCHD_MALLOC_STATS");
    unsetenv("LD_PRELOAD");
}

void *malloc(size_t n) { count(n); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { count(a * b); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count(n); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t al, size_t n) { count(n); return __libc_memalign(al, n); }
void *aligned_alloc(size_t al, size_t n) { count(n); return __libc_memalign(al, n); }
void *valloc(size_t n) { count(n); return __libc_valloc(n); }
int posix_memalign(void **out, size_t al, size_t n)
{
    count(n);
    void *p = __libc_memalign(al, n);
    if (!p)
        return 12;  /* ENOMEM */
    *out = p;
    return 0;
}
