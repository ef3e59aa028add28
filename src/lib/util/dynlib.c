/* SPDX-License-Identifier: GPL-2.0-only */
/* Run-time loading of optional shared libraries (see dynlib.h). The
 * handle is never closed: the slots point into it for the process's life. */
#include "util/dynlib.h"
#include "util/fk.h"

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

bool fk_dynlib_once(struct fk_dynlib *l, const struct fk_dynsym *syms, size_t n)
{
    if (l->state)
        return l->state > 0;
    l->state = -1;
    const char *what;
    char msg[512];
    switch (fk_dynlib_load(l->soname, syms, n, &what)) {
    case FK_DYNLIB_OK:
        l->state = 1;
        return true;
    case FK_DYNLIB_NO_LIBRARY:
        snprintf(msg, sizeof msg, "%s needs %s (%s); install it: apt-get install %s", l->who,
                 l->soname, what, l->package);
        break;
    default:
        snprintf(msg, sizeof msg, "%s lacks %s; install %s", l->soname, what, l->newer);
        break;
    }
    if (l->warn)
        fk_warn("%s", msg);
    else
        fk_error("%s", msg);
    return false;
}
