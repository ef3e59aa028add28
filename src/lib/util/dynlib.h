/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared libraries loaded at run time, only when a feature needs them
 * (libcurl to upload, libdebuginfod to fetch debug files), so flamekit
 * does not depend on them at link time. */
#ifndef FK_DYNLIB_H
#define FK_DYNLIB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct fk_dynsym {
    const char *name;
    void **slot;        /* receives the address (a function pointer's storage) */
};

enum { FK_DYNLIB_OK = 0, FK_DYNLIB_NO_LIBRARY = -1, FK_DYNLIB_NO_SYMBOL = -2 };

/* dlopen(soname) (RTLD_NOW | RTLD_LOCAL) and fill every slot. On failure
 * *what is dlerror()'s text (no library) or the missing symbol's name. */
int fk_dynlib_load(const char *soname, const struct fk_dynsym *syms, size_t n, const char **what);

/* An optional library loaded once, on first use. state: 0 untried, 1
 * loaded, -1 unavailable, why then saying so: "WHO needs SONAME (dlerror);
 * install it: apt-get install PACKAGE" or "SONAME lacks SYMBOL; install
 * NEWER". Once state is non-zero it never changes, and the slots and why
 * are set before it is (a plain read of state > 0 is a valid fast path). */
struct fk_dynlib {
    const char *soname, *who, *package, *newer;
    _Atomic int state;
    char why[512];
};
/* Load l (the first call) and say whether it is loaded; when it is not,
 * err gets its why on every call (the caller decides whether that is an
 * error or a warning). Safe to call from several threads at once: the
 * library is loaded by one of them, and every caller gets the same result
 * and why (the others wait for the load). */
bool fk_dynlib_once(struct fk_dynlib *l, const struct fk_dynsym *syms, size_t n, char *err,
                    size_t errlen);

#endif
