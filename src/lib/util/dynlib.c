/* SPDX-License-Identifier: GPL-2.0-only */
/* Run-time loading of optional shared libraries (see dynlib.h). The
 * handle is never closed: the slots point into it for the process's life. */
#include "util/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>

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

bool fk_dynlib_once(struct fk_dynlib *l, const struct fk_dynsym *syms, size_t n, char *err,
                    size_t errlen)
{
    if (!l->state) {
        const char *what;
        switch (fk_dynlib_load(l->soname, syms, n, &what)) {
        case FK_DYNLIB_OK:
            l->state = 1;
            break;
        case FK_DYNLIB_NO_LIBRARY:
            l->state = -1;
            snprintf(l->why, sizeof l->why, "%s needs %s (%s); install it: apt-get install %s",
                     l->who, l->soname, what, l->package);
            break;
        default:
            l->state = -1;
            snprintf(l->why, sizeof l->why, "%s lacks %s; install %s", l->soname, what, l->newer);
            break;
        }
    }
    if (l->state < 0 && errlen)
        snprintf(err, errlen, "%s", l->why);
    return l->state > 0;
}
