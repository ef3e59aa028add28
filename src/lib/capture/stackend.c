/* SPDX-License-Identifier: GPL-2.0-only */
/* Where threads' stacks end (see stackend.h). */
#include "capture/stackend.h"

#include "util/fk.h"

#include <stdatomic.h>
#include <stdlib.h>

/* Complete walks that must agree, one after the other, before an end is
 * used; walks that end elsewhere than the one before them, at most
 * (a program's start in the dynamic loader is one). */
#define AGREE 2
#define DISAGREE_MAX 3

struct slot {
    _Atomic int32_t tid;        /* 0: empty */
    _Atomic uint64_t end;       /* in use; 0: none */
    /* the engine's thread alone */
    uint64_t cand;              /* the end the last walks agreed on */
    uint8_t agreed;             /* how many, up to AGREE */
    uint8_t disagreed;          /* walks that ended elsewhere than the one before */
    bool varying;
};

struct fk_stack_ends {
    unsigned sp_word;
    struct fk_stack_ends_stats st;
    struct slot slots[FK_STACK_ENDS_SLOTS];
};

struct fk_stack_ends *fk_stack_ends_new(unsigned sp_word)
{
    struct fk_stack_ends *t = fk_calloc(1, sizeof *t);
    t->sp_word = sp_word;
    return t;
}

void fk_stack_ends_free(struct fk_stack_ends *t)
{
    free(t);
}

size_t fk_stack_ends_bytes(const struct fk_stack_ends *t)
{
    return t ? sizeof *t : 0;
}

unsigned fk_stack_ends_sp_word(const struct fk_stack_ends *t)
{
    return t->sp_word;
}

static inline struct slot *slot_of(const struct fk_stack_ends *t, pid_t tid)
{
    return (struct slot *)&t->slots[fk_hash_u64((uint64_t)(uint32_t)tid) % FK_STACK_ENDS_SLOTS];
}

uint64_t fk_stack_ends_get(const struct fk_stack_ends *t, pid_t tid)
{
    if (!t || tid <= 0)
        return 0;
    struct slot *s = slot_of(t, tid);
    if (atomic_load(&s->tid) != tid)
        return 0;
    uint64_t end = atomic_load(&s->end);
    /* still tid's: the end read was not written for a new owner */
    return atomic_load(&s->tid) == tid ? end : 0;
}

/* The slot made tid's, empty (its end withdrawn before the owner changes). */
static struct slot *claim(struct fk_stack_ends *t, pid_t tid)
{
    struct slot *s = slot_of(t, tid);
    if (atomic_load(&s->tid) != tid) {
        atomic_store(&s->end, 0);
        atomic_store(&s->tid, tid);
        s->cand = 0;
        s->agreed = s->disagreed = 0;
        s->varying = false;
    }
    return s;
}

void fk_stack_ends_learn(struct fk_stack_ends *t, pid_t tid, uint64_t end)
{
    if (!t || tid <= 0 || !end)
        return;
    struct slot *s = claim(t, tid);
    if (s->varying)
        return;
    if (s->agreed && s->cand != end) {
        /* withdrawn until walks agree again; after DISAGREE_MAX, the
         * thread is taken to switch stacks: never cut */
        atomic_store(&s->end, 0);
        s->agreed = 0;
        if (++s->disagreed >= DISAGREE_MAX) {
            s->varying = true;
            t->st.varying++;
            return;
        }
    }
    s->cand = end;
    if (s->agreed < AGREE && ++s->agreed == AGREE) {
        atomic_store(&s->end, end);
        t->st.learned++;
    }
}

void fk_stack_ends_wrong(struct fk_stack_ends *t, pid_t tid)
{
    if (!t || tid <= 0)
        return;
    struct slot *s = claim(t, tid);
    s->varying = true;
    atomic_store(&s->end, 0);
    t->st.wrong++;
}

void fk_stack_ends_forget(struct fk_stack_ends *t, pid_t tid)
{
    if (!t || tid <= 0)
        return;
    struct slot *s = slot_of(t, tid);
    if (atomic_load(&s->tid) != tid)
        return;
    atomic_store(&s->end, 0);
    atomic_store(&s->tid, 0);
}

void fk_stack_ends_stats(const struct fk_stack_ends *t, struct fk_stack_ends_stats *out)
{
    if (t)
        *out = t->st;
    else
        *out = (struct fk_stack_ends_stats){ 0 };
}
