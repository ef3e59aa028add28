/* SPDX-License-Identifier: GPL-2.0-only */
/* Facts about the running kernel kept between captures, once per boot:
 * the core kernel's symbol table (symbols/kcache.c), offsets into the
 * kernel's structures read from its BTF (capture/swtime.c,
 * capture/pygate.c). Each is a file of its own in one directory, DIR:
 * $FLAMEKIT_KERNEL_CACHE (default /var/cache/flamekit; "off" or empty:
 * no cache).
 *
 * Invariants: only root uses it; the directory is root's, writable by
 * nobody else, never reached through a symlink; a file is root's regular
 * file, not writable by group or others, opened with fk_safe_openat; a
 * file is written whole under a temporary name and renamed into place,
 * so a reader sees an old file or a new one, never half of one. Whether
 * a file's contents are this boot's and sound is its reader's to check
 * (fk_boot_id); nothing here prints or fails a capture: every failure is
 * "no cache". */
#ifndef FK_UTIL_BOOTCACHE_H
#define FK_UTIL_BOOTCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* This boot's id (/proc/sys/kernel/random/boot_id), NUL-padded. */
bool fk_boot_id(char out[40]);

/* Whether the cache is on (FLAMEKIT_KERNEL_CACHE is not "off" or empty). */
bool fk_bootcache_enabled(void);

/* The file name in DIR, read-only (fd, *st filled), when it is root's,
 * within max bytes and not writable by group or others; -1 otherwise. */
int fk_bootcache_open(const char *name, size_t max, struct stat *st);

/* Replace the file name in DIR (made 0700 when missing) with the n parts
 * (parts[i] of sizes[i] bytes) in order; false when it could not. */
bool fk_bootcache_write(const char *name, const void *const *parts, const size_t *sizes,
                        size_t n);

/* A fixed record kept for this boot in the file name: magic (8 bytes),
 * this boot's id (40), the caller's payload (size bytes, a multiple of 8),
 * then fk_hash of all the bytes before it. fk_bootcache_get fills payload
 * when the file holds such a record, with this magic, of this boot, whole
 * (whether the payload is sound stays the caller's to check);
 * fk_bootcache_put writes one (false when the cache is off or it could
 * not). For facts a few bytes long (capture/swtime.c, capture/pygate.c). */
bool fk_bootcache_get(const char *name, const char magic[8], void *payload, size_t size);
bool fk_bootcache_put(const char *name, const char magic[8], const void *payload, size_t size);

#endif
