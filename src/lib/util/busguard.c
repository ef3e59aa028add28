/* SPDX-License-Identifier: GPL-2.0-only */
/* SIGBUS guards for reads through file mappings: see busguard.h. */
#include "busguard.h"

#include "fk.h"

#include <signal.h>
#include <stddef.h>
#include <string.h>

static struct fk_bus_guard *top;
static volatile sig_atomic_t caught;

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
    }
    g->prev = top;
    top = g;
}

void fk_bus_pop(struct fk_bus_guard *g)
{
    top = g->prev;
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
