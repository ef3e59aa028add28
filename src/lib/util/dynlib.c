/* SPDX-License-Identifier: GPL-2.0-only */
/* Run-time loading of optional shared libraries (see dynlib.h). The
 * handle is never closed: the slots point into it for the process's life.
 *
 * Captures may start on several threads at once (serve's), each reaching
 * the first use of a library. A library is loaded once under one lock for
 * all of them (loading is rare: once per library and process); its state
 * is published with release order only after its slots and why are
 * written, so a thread that reads a non-zero state (acquire) without the
 * lock also sees those. */
#include "util/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

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
    int state = atomic_load_explicit(&l->state, memory_order_acquire);
    if (!state) {
        pthread_mutex_lock(&load_lock);
        state = atomic_load_explicit(&l->state, memory_order_relaxed);
        if (!state) {
            const char *what;
            switch (fk_dynlib_load(l->soname, syms, n, &what)) {
            case FK_DYNLIB_OK:
                state = 1;
                break;
            case FK_DYNLIB_NO_LIBRARY:
                state = -1;
                snprintf(l->why, sizeof l->why, "%s needs %s (%s); install it: apt-get install %s",
                         l->who, l->soname, what, l->package);
                break;
            default:
                state = -1;
                snprintf(l->why, sizeof l->why, "%s lacks %s; install %s", l->soname, what,
                         l->newer);
                break;
            }
            atomic_store_explicit(&l->state, state, memory_order_release);
        }
        pthread_mutex_unlock(&load_lock);
    }
    if (state < 0 && errlen)
        snprintf(err, errlen, "%s", l->why);
    return state > 0;
}
