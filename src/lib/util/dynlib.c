/* SPDX-License-Identifier: GPL-2.0-only */
/* Run-time loading of optional shared libraries (see dynlib.h). The
 * handle is never closed: the slots point into it for the process's life. */
#include "util/dynlib.h"

#include <dlfcn.h>

int fk_dynlib_load(const char *soname, const struct fk_dynsym *syms, size_t n, const char **what)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        *what = dlerror();
        return FK_DYNLIB_NO_LIBRARY;
    }
    for (size_t i = 0; i < n; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            *what = syms[i].name;
            return FK_DYNLIB_NO_SYMBOL;
        }
    }
    return FK_DYNLIB_OK;
}
