/* SPDX-License-Identifier: GPL-2.0-only */
/* SIGBUS guards for reads through file mappings: see busguard.h. */
#include "busguard.h"

#include "fk.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static struct fk_bus_guard *top;
static volatile sig_atomic_t caught;

#ifdef FK_ASAN
/* Under AddressSanitizer: what a guarded read had allocated and still
 * held when a SIGBUS ended it is out of reach once the read is abandoned
 * (libdw's frame state, malloc'd in dwarf_cfi_addrframe before it reads
 * the FDE's instructions from the mapping), and LeakSanitizer reported it
 * at exit: a host-wide capture failed whenever another process truncated
 * a mapped binary meanwhile (CI, t-install under ASan). The allocator's
 * hooks note the blocks the guarding thread allocates while a guard is up
 * and forget those it frees; a caught SIGBUS has LeakSanitizer ignore the
 * abandoned read's blocks still noted (and what they point to). Reads
 * that end normally are leak-checked as before. (The sanitizers' headers
 * for these are not installed with gcc 12: declared here.) */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
void __lsan_ignore_object(const void *p);
void __lsan_disable(void);

#define NOTED_MAX 16384
static const volatile void *noted[NOTED_MAX];  /* NULL: freed since */
static size_t nnoted;
static bool noted_over;                         /* some were not noted */
static _Thread_local unsigned guards_here;      /* guards up in this thread */

static void note_malloc(const volatile void *p, size_t size)
{
    (void)size;
    if (!guards_here || !p)
        return;
    if (nnoted < NOTED_MAX)
        noted[nnoted++] = p;
    else
        noted_over = true;
}

static void note_free(const volatile void *p)
{
    if (!guards_here || !p)
        return;
    for (size_t i = nnoted; i-- > 0;)
        if (noted[i] == p) {
            noted[i] = NULL;
            /* (freed last: room again, not below the innermost mark) */
            while (nnoted > (top ? top->noted : 0) && !noted[nnoted - 1])
                nnoted--;
            return;
        }
}

static void notes_install(void)
{
    __sanitizer_install_malloc_and_free_hooks(note_malloc, note_free);
}

/* The guard g (the innermost) ended by SIGBUS: what it left is abandoned. */
static void notes_abandon(struct fk_bus_guard *g)
{
    for (size_t i = g->noted; i < nnoted; i++)
        if (noted[i])
            __lsan_ignore_object((const void *)noted[i]);
    nnoted = g->noted;
    if (noted_over)
        __lsan_disable();   /* which ones is not known: no leak report */
    guards_here--;
}

static void notes_push(struct fk_bus_guard *g) { g->noted = nnoted; guards_here++; }
static void notes_pop(struct fk_bus_guard *g) { nnoted = g->noted; guards_here--; }
#else
static void notes_install(void) {}
static void notes_abandon(struct fk_bus_guard *g) { (void)g; }
static void notes_push(struct fk_bus_guard *g) { (void)g; }
static void notes_pop(struct fk_bus_guard *g) { (void)g; }
#endif

static void on_sigbus(int sig)
{
    struct fk_bus_guard *g = top;
    if (!g) {
        /* not ours: the default action, when the fault repeats on return */
        signal(sig, SIG_DFL);
        return;
    }
    top = g->prev;
    caught++;
    notes_abandon(g);
    siglongjmp(g->env, 1);
}

void fk_bus_push(struct fk_bus_guard *g)
{
    static int installed;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigbus;
        sa.sa_flags = SA_NODEFER;   /* left by siglongjmp: must not stay blocked */
        sigemptyset(&sa.sa_mask);
        installed = sigaction(SIGBUS, &sa, NULL) == 0;
        if (installed)
            notes_install();
    }
    g->prev = top;
    notes_push(g);
    top = g;
}

void fk_bus_pop(struct fk_bus_guard *g)
{
    top = g->prev;
    notes_pop(g);
}

int fk_bus_call(bool (*fn)(void *ctx), void *ctx)
{
    struct fk_bus_guard g;
    fk_bus_push(&g);
    if (sigsetjmp(g.env, 0) == 0) {
        bool ok = fn(ctx);
        fk_bus_pop(&g);
        return ok;
    }
    return -1;
}

unsigned long fk_bus_caught(void)
{
    return (unsigned long)caught;
}

static void **abandoned;
static size_t nabandoned, capabandoned;

void fk_bus_abandon(void *p)
{
    if (!p)
        return;
    abandoned = fk_grow(abandoned, &capabandoned, nabandoned + 1, sizeof *abandoned);
    abandoned[nabandoned++] = p;
}
