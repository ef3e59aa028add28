/* SPDX-License-Identifier: GPL-2.0-only */
/* util/dynlib.c from several threads at once, as serve's captures reach
 * the first use of a library (libbpf, libelf, libcurl...) together: every
 * caller must get the same result and the same why, whole. Half the
 * threads call as soon as they are released, half wait until the library's
 * state turns non-zero and call then, the moment a caller could see a
 * state published before its why was written (the old unlocked code set
 * state -1, then wrote why: those callers got an empty or cut why). */
#include "util/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "unit.h"

enum { THREADS = 4, ROUNDS = 300 };

/* A long WHO makes writing why take a while (the window above). */
#define WHO "unit-dynlib, loading a library from several threads at once, with a long "    \
            "description of who needs it so that the message takes a while to write: "     \
            "serve starts captures on threads, and each may be the first to need it; "      \
            "every one of them must be told the same reason, whole, never a part of it"

static struct fk_dynlib lib;
static const struct fk_dynsym *lib_syms;
static size_t lib_nsyms;
static pthread_barrier_t start;

struct caller {
    int late;           /* waits for the state to turn non-zero */
    bool ok;
    char err[600];
};

static void *call(void *arg)
{
    struct caller *c = arg;
    pthread_barrier_wait(&start);
    /* spin (on another CPU the store is seen within a few ns), yielding now
     * and then so the loader gets a CPU on a busy host */
    for (unsigned spins = 1; c->late && !atomic_load(&lib.state); spins++)
        if (spins % 4096 == 0)
            sched_yield();
    c->ok = fk_dynlib_once(&lib, lib_syms, lib_nsyms, c->err, sizeof c->err);
    return NULL;
}

/* ROUNDS (or fewer) rounds of THREADS callers, each on a fresh lib: in how many every
 * caller got WANT_OK and the error WANT (the first odd one of a round is
 * printed). */
static int agree(int rounds, const char *soname, const struct fk_dynsym *syms, size_t n, bool want_ok,
                 const char *want)
{
    int good = 0;
    for (int r = 0; r < rounds; r++) {
        lib = (struct fk_dynlib){ .soname = soname, .who = WHO, .package = "unit-package",
                                  .newer = "unit-package 2 or newer" };
        lib_syms = syms, lib_nsyms = n;
        struct caller c[THREADS] = { 0 };
        pthread_t t[THREADS];
        pthread_barrier_init(&start, NULL, THREADS);
        for (int i = 0; i < THREADS; i++) {
            c[i].late = i % 2;
            if (pthread_create(&t[i], NULL, call, &c[i]) != 0) {
                /* the threads started wait at the barrier for ever */
                printf("FAIL: %s: pthread_create\n", unit_name);
                exit(1);
            }
        }
        bool same = true;
        for (int i = 0; i < THREADS; i++) {
            pthread_join(t[i], NULL);
            if (c[i].ok != want_ok || strcmp(c[i].err, want) != 0) {
                if (same)
                    printf("    round %d, thread %d (%s): %s, err \"%s\"\n", r, i,
                           c[i].late ? "late" : "at once", c[i].ok ? "loaded" : "not loaded",
                           c[i].err);
                same = false;
            }
        }
        pthread_barrier_destroy(&start);
        good += same;
    }
    return good;
}

int main(void)
{
    unit_name = "unit-dynlib";
    char want[600];

    /* a library that is there: loaded in every thread, the slots filled */
    static void *cos_slot, *sin_slot;
    const struct fk_dynsym libm[] = { { "cos", &cos_slot }, { "sin", &sin_slot } };
    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    UNIT_CHECK("libm.so.6 opens", h != NULL);
    UNIT_CHECK("threads at once: a library that is there is loaded in every one",
               agree(20, "libm.so.6", libm, 2, true, "") == 20);
    UNIT_CHECK("... and its slots hold its functions",
               h && cos_slot == dlsym(h, "cos") && sin_slot == dlsym(h, "sin"));

    /* a library that is missing: every thread told the same whole reason */
    const char *what = NULL;
    static void *none_slot;
    const struct fk_dynsym none[] = { { "nothing", &none_slot } };
    UNIT_CHECK("a missing library is missing",
               fk_dynlib_load("libfk-unit-missing.so.7", none, 1, &what) ==
                   FK_DYNLIB_NO_LIBRARY && what);
    snprintf(want, sizeof want, "%s needs %s (%s); install it: apt-get install %s", WHO,
             "libfk-unit-missing.so.7", what ? what : "", "unit-package");
    want[sizeof lib.why - 1] = 0;   /* why's size */
    int good = agree(ROUNDS, "libfk-unit-missing.so.7", none, 1, false, want);
    printf("    %d of %d rounds: all %d threads got the whole reason\n", good, ROUNDS, THREADS);
    UNIT_CHECK("threads at once: a missing library gives every thread the same whole reason",
               good == ROUNDS);

    /* a symbol that is missing: the same */
    static void *gone_slot;
    const struct fk_dynsym gone[] = { { "cos", &cos_slot }, { "fk_unit_no_such_symbol", &gone_slot } };
    snprintf(want, sizeof want, "libm.so.6 lacks fk_unit_no_such_symbol; install unit-package 2 or newer");
    good = agree(ROUNDS, "libm.so.6", gone, 2, false, want);
    printf("    %d of %d rounds: all %d threads got the whole reason\n", good, ROUNDS, THREADS);
    UNIT_CHECK("threads at once: a missing symbol gives every thread the same whole reason",
               good == ROUNDS);
    if (h)
        dlclose(h);
    return UNIT_END();
}
