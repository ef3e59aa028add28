/* SPDX-License-Identifier: GPL-2.0-only */
/* The core kernel's symbol table kept between captures (symbols-int.h).
 *
 * Reading /proc/kallsyms costs a capture about 40 ms of CPU (the kernel
 * formats 120,000 lines, we parse them), the largest part of its fixed
 * cost. The core kernel's text symbols cannot change while the system runs:
 * they are saved once per boot in DIR/kallsyms (util/bootcache.h: DIR is
 * $FLAMEKIT_KERNEL_CACHE, default /var/cache/flamekit; "off" disables it)
 * and read back by the captures after it. Modules, BPF programs and trampolines come and go:
 * they are not saved, and a frame outside the core's span sends the
 * symbolizer to /proc/kallsyms as before.
 *
 * Invariants:
 *   - the file is opened and written as util/bootcache.h says (root's,
 *     within FK_KCACHE_MAX bytes, replaced whole);
 *   - a file is used only when its boot id and the first 64 lines of
 *     /proc/kallsyms as read now (which also shows the addresses are
 *     visible to us now: kptr_restrict) equal what it was made from, its
 *     sizes agree, its contents hash to the value saved, and every entry
 *     is sorted, inside its span, with its name inside the names; anything
 *     else is ignored and the file rewritten from a full read;
 *   - nothing here prints or fails a capture: the cache is an optimisation
 *     and every failure falls back to reading /proc/kallsyms. */
#include "symbols/symbols-int.h"
#include "util/bootcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FK_KCACHE_MAX (64u << 20)
#define KCACHE_NAME "kallsyms"
static const char kcache_magic[8] = "FKKSYM1";

struct kcache_header {
    char magic[8];
    uint32_t header_size, sym_size;
    char boot_id[40];
    uint64_t head_hash, lo, hi, nsyms, strs_len, payload_hash;
};

uint64_t fk_kallsyms_head_hash(const char *text, size_t len, size_t *used)
{
    size_t lines = 0, i = 0;
    while (i < len && lines < FK_KSYMS_HEAD_LINES) {
        const char *nl = memchr(text + i, '\n', len - i);
        if (!nl)
            break;
        i = (size_t)(nl - text) + 1;
        lines++;
    }
    *used = lines == FK_KSYMS_HEAD_LINES ? i : 0;
    return *used ? fk_hash(text, i) : 0;
}

/* The hash of /proc/kallsyms' first lines as we read them now; 0 if
 * unreadable (or shorter than that). */
static uint64_t head_now(void)
{
    char buf[16384];
    int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t have = 0, used = 0;
    uint64_t h = 0;
    while (have < sizeof buf) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
        if ((h = fk_kallsyms_head_hash(buf, have, &used)) && used)
            break;
    }
    close(fd);
    return used ? h : 0;
}

static uint64_t payload_hash(const struct fk_sym *syms, size_t n, const char *strs, size_t len)
{
    return fk_hash(syms, n * sizeof *syms) ^ fk_hash_u64(fk_hash(strs, len) + n);
}

/* The entries as saved: sorted, one per address, inside [lo, hi], named
 * inside the names, which end with a NUL. */
static bool entries_sound(const struct kcache_header *h, const struct fk_sym *syms,
                          const char *strs)
{
    if (!h->strs_len || strs[h->strs_len - 1] != '\0')
        return false;
    for (uint64_t i = 0; i < h->nsyms; i++) {
        const struct fk_sym *y = &syms[i];
        if (y->addr < h->lo || y->addr > h->hi || y->name >= h->strs_len ||
            (i && y->addr <= syms[i - 1].addr))
            return false;
    }
    return h->nsyms && syms[0].addr == h->lo && syms[h->nsyms - 1].addr == h->hi;
}

bool fk_kcache_load(struct fk_symtab *t, uint64_t *lo, uint64_t *hi)
{
    char boot[40];
    struct stat st;
    int fd = fk_bootcache_open(KCACHE_NAME, FK_KCACHE_MAX, &st);
    if (fd < 0)
        return false;
    struct kcache_header h;
    struct fk_symtab tab = { 0 };
    bool ok = fk_read_full(fd, &h, sizeof h) &&
              memcmp(h.magic, kcache_magic, sizeof h.magic) == 0 &&
              h.header_size == sizeof h && h.sym_size == sizeof(struct fk_sym) &&
              h.nsyms && h.nsyms <= FK_KCACHE_MAX / sizeof(struct fk_sym) &&
              h.strs_len <= FK_KCACHE_MAX &&
              (uint64_t)st.st_size == sizeof h + h.nsyms * sizeof(struct fk_sym) + h.strs_len &&
              fk_boot_id(boot) && memcmp(boot, h.boot_id, sizeof boot) == 0 &&
              h.head_hash && h.head_hash == head_now();
    if (ok) {
        tab.n = tab.cap = (size_t)h.nsyms;
        tab.syms = fk_malloc(tab.n * sizeof *tab.syms);
        tab.strs.len = tab.strs.cap = (size_t)h.strs_len;
        tab.strs.data = fk_malloc(tab.strs.len);
        ok = fk_read_full(fd, tab.syms, tab.n * sizeof *tab.syms) &&
             fk_read_full(fd, tab.strs.data, tab.strs.len) &&
             payload_hash(tab.syms, tab.n, tab.strs.data, tab.strs.len) == h.payload_hash &&
             entries_sound(&h, tab.syms, tab.strs.data);
    }
    close(fd);
    if (!ok) {
        fk_symtab_free(&tab);
        return false;
    }
    fk_symtab_free(t);
    *t = tab;
    *lo = h.lo;
    *hi = h.hi;
    return true;
}

void fk_kcache_store(const struct fk_symtab *full, const struct fk_kallsyms_info *info)
{
    if (!info->core_apart || !info->head_hash || info->lo > info->hi || !fk_bootcache_enabled())
        return;
    struct kcache_header h = { .header_size = sizeof h, .sym_size = sizeof(struct fk_sym),
                               .head_hash = info->head_hash, .lo = info->lo, .hi = info->hi };
    memcpy(h.magic, kcache_magic, sizeof h.magic);
    if (!fk_boot_id(h.boot_id))
        return;
    /* the core's entries of the sorted table, their names packed */
    size_t first = fk_count_le(full->syms, full->n, sizeof *full->syms,
                               offsetof(struct fk_sym, addr), info->lo - 1);
    if (info->lo == 0)
        first = 0;
    size_t end = fk_count_le(full->syms, full->n, sizeof *full->syms,
                             offsetof(struct fk_sym, addr), info->hi);
    if (end <= first)
        return;
    struct fk_sym *syms = fk_malloc((end - first) * sizeof *syms);
    struct fk_buf strs = FK_BUF_INIT;
    for (size_t i = first; i < end; i++) {
        syms[i - first] = full->syms[i];
        syms[i - first].name = (uint32_t)strs.len;
        fk_buf_adds(&strs, fk_symtab_name(full, &full->syms[i]));
        fk_buf_addc(&strs, '\0');
    }
    h.nsyms = end - first;
    h.strs_len = strs.len;
    h.payload_hash = payload_hash(syms, (size_t)h.nsyms, strs.data, strs.len);
    if (h.strs_len + h.nsyms * sizeof *syms + sizeof h <= FK_KCACHE_MAX)
        (void)fk_bootcache_write(KCACHE_NAME, (const void *const[]){ &h, syms, strs.data },
                                 (const size_t[]){ sizeof h, (size_t)h.nsyms * sizeof *syms,
                                                   strs.len }, 3);
    free(syms);
    fk_buf_free(&strs);
}
