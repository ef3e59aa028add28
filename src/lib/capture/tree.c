/* SPDX-License-Identifier: GPL-2.0-only */
/* The process tree followed from FORK/EXIT/COMM records (see tree.h). */
#include "capture/tree.h"
#include "util/procfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- a 32-bit map with removal, on util/hindex ---- */

/* The entry of key (its value may be 0: removed), or SIZE_MAX. Each key
 * has at most one entry: a removed one is reused when the key returns. */
static size_t map_find(const struct fk_tree_map *m, uint32_t key)
{
    struct fk_hiter it = fk_hindex_find(&m->index, fk_hash_u64(key));
    uint32_t i;
    while (fk_hindex_next(&it, &i))
        if (m->v[i].key == key)
            return i;
    return SIZE_MAX;
}

static uint32_t map_get(const struct fk_tree_map *m, uint32_t key)
{
    size_t i = map_find(m, key);
    return i == SIZE_MAX ? 0 : m->v[i].val;
}

/* Removed entries are dropped once they outnumber the live ones: memory
 * follows the live members, and the rebuild's cost is paid for by the
 * removals before it. */
static void map_compact(struct fk_tree_map *m)
{
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].val)
            m->v[k++] = m->v[i];
    m->n = k;
    fk_hindex_free(&m->index);
    for (size_t i = 0; i < m->n; i++)
        fk_hindex_add(&m->index, fk_hash_u64(m->v[i].key), (uint32_t)i);
    size_t want = m->n < 64 ? 64 : m->n * 2;
    if (m->cap > 4 * want) {
        m->v = fk_realloc(m->v, want * sizeof *m->v);
        m->cap = want;
    }
}

static void map_set(struct fk_tree_map *m, uint32_t key, uint32_t val)
{
    size_t i = map_find(m, key);
    if (i == SIZE_MAX) {
        if (!val)
            return;
        m->v = fk_grow(m->v, &m->cap, m->n + 1, sizeof *m->v);
        m->v[m->n] = (struct fk_tree_ent){ key, val };
        fk_hindex_add(&m->index, fk_hash_u64(key), (uint32_t)m->n);
        m->n++;
        m->live++;
        return;
    }
    if (!m->v[i].val && val)
        m->live++;
    else if (m->v[i].val && !val)
        m->live--;
    m->v[i].val = val;
    if (!val && m->n - m->live > m->live + 64)
        map_compact(m);
}

static void map_free(struct fk_tree_map *m)
{
    free(m->v);
    fk_hindex_free(&m->index);
    memset(m, 0, sizeof *m);
}

/* ---- the tree ---- */

void fk_tree_init(struct fk_tree *t)
{
    memset(t, 0, sizeof *t);
}

void fk_tree_free(struct fk_tree *t)
{
    map_free(&t->tasks);
    map_free(&t->procs);
    memset(t, 0, sizeof *t);
}

static void process_born(struct fk_tree *t)
{
    t->st.processes++;
    t->st.live = t->procs.live;
    if (t->st.live > t->st.peak_live)
        t->st.peak_live = t->st.live;
}

/* tid of pid is alive and a member (no-op if already known). */
static void task_add(struct fk_tree *t, pid_t pid, pid_t tid)
{
    uint32_t had = map_get(&t->tasks, (uint32_t)tid);
    if (had == (uint32_t)pid)
        return;
    if (had) {
        /* the tid was another member process's (a record was lost):
         * it is this one's now */
        uint32_t n = map_get(&t->procs, had);
        if (n)
            map_set(&t->procs, had, n - 1);
    }
    map_set(&t->tasks, (uint32_t)tid, (uint32_t)pid);
    uint32_t n = map_get(&t->procs, (uint32_t)pid);
    map_set(&t->procs, (uint32_t)pid, n + 1);
    if (!n)
        process_born(t);
}

void fk_tree_add_task(struct fk_tree *t, pid_t pid, pid_t tid)
{
    if (pid > 0 && tid > 0)
        task_add(t, pid, tid);
}

struct add_ctx {
    struct fk_tree *t;
    pid_t pid;
    bool any;
};

/* A task found in /proc is a member only if it has not begun to exit:
 * the kernel writes its EXIT record (perf_event_exit_task) after setting
 * PF_EXITING and before the task turns zombie (exit_notify), so a task
 * in between, listed as running, may have written its EXIT before the
 * events were on; a leader that ended with pthread_exit stays listed, a
 * zombie, while its threads run. Either, added, would never leave, and
 * the tree never end ("target exited"). */
static bool add_thread(pid_t tid, void *arg)
{
    struct add_ctx *c = arg;
    struct fk_proc_stat st;
    if (!fk_proc_stat(c->pid, tid, &st) || st.state == 'Z' || st.state == 'X' ||
        (st.flags & FK_PF_EXITING))
        return true;
    task_add(c->t, c->pid, tid);
    c->any = true;
    return true;
}

bool fk_tree_add_process(struct fk_tree *t, pid_t pid)
{
    struct add_ctx c = { t, pid, false };
    return fk_proc_for_each_tid(pid, add_thread, &c) && c.any;
}

/* The task left: its process too when it was the last thread. */
static bool task_gone(struct fk_tree *t, pid_t tid)
{
    uint32_t pid = map_get(&t->tasks, (uint32_t)tid);
    if (!pid)
        return false;
    map_set(&t->tasks, (uint32_t)tid, 0);
    uint32_t n = map_get(&t->procs, pid);
    if (n) {
        map_set(&t->procs, pid, n - 1);
        if (n == 1)
            t->st.exits++;
    }
    t->st.live = t->procs.live;
    return true;
}

/* pid is no longer an exited member's: a FORK made it another process. */
static void exited_forget(struct fk_tree *t, pid_t pid)
{
    for (unsigned i = 0; i < FK_TREE_EXITED; i++)
        if (t->exited[i] == (uint32_t)pid)
            t->exited[i] = 0;
}

bool fk_tree_fork(struct fk_tree *t, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid)
{
    if (pid <= 0 || tid <= 0)
        return false;
    if (pid != ppid)
        exited_forget(t, pid);
    /* the creator decides: a member thread, or any thread of a member
     * process (its own FORK record may have been lost) */
    bool member = map_get(&t->tasks, (uint32_t)ptid) || map_get(&t->procs, (uint32_t)ppid);
    if (!member) {
        /* a reused tid that was a member's (its EXIT was lost) is not */
        if (map_get(&t->tasks, (uint32_t)tid))
            task_gone(t, tid);
        return false;
    }
    bool new_process = pid != ppid;
    if (new_process && map_get(&t->procs, (uint32_t)pid)) {
        /* a reused pid whose old process's EXIT was lost: start afresh */
        map_set(&t->procs, (uint32_t)pid, 0);
    }
    task_add(t, pid, tid);
    if (new_process)
        t->st.forks++;
    else if (pid == ppid)
        t->st.threads++;
    return true;
}

bool fk_tree_exit(struct fk_tree *t, pid_t pid, pid_t tid)
{
    (void)pid;
    if (tid <= 0)
        return false;
    uint32_t owner = map_get(&t->tasks, (uint32_t)tid);
    if (!task_gone(t, tid))
        return false;
    if (owner && !map_get(&t->procs, owner)) {
        t->exited[t->exited_next] = owner;
        t->exited_next = (t->exited_next + 1) % FK_TREE_EXITED;
    }
    return true;
}

void fk_tree_exec(struct fk_tree *t, pid_t pid, pid_t tid)
{
    if (pid <= 0 || !map_get(&t->procs, (uint32_t)pid))
        return;
    /* A thread other than the leader exec'd: the leader's EXIT came first,
     * and the thread goes on with the leader's tid (the record says so).
     * Its old tid is unknown here: that entry stays, counted for this
     * process, until the process exits or the tid is created again. */
    if (tid == pid && !map_get(&t->tasks, (uint32_t)pid))
        map_set(&t->tasks, (uint32_t)pid, (uint32_t)pid);
}

bool fk_tree_has(const struct fk_tree *t, pid_t pid)
{
    return pid > 0 && map_get(&t->procs, (uint32_t)pid) != 0;
}

bool fk_tree_owns(const struct fk_tree *t, pid_t pid)
{
    if (fk_tree_has(t, pid))
        return true;
    for (unsigned i = 0; pid > 0 && i < FK_TREE_EXITED; i++)
        if (t->exited[i] == (uint32_t)pid)
            return true;
    return false;
}

void fk_tree_resync(struct fk_tree *t)
{
    t->st.resyncs++;
    /* a FORK that gave an exited member's pid away may be among the lost */
    memset(t->exited, 0, sizeof t->exited);
    /* collect first: removals may compact the array being read */
    size_t ngone = 0, cap = 0;
    uint32_t *gone = NULL;
    for (size_t i = 0; i < t->tasks.n; i++) {
        const struct fk_tree_ent *e = &t->tasks.v[i];
        if (!e->val)
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%u/task/%u", e->val, e->key);
        if (access(path, F_OK) < 0 && errno == ENOENT) {
            gone = fk_grow(gone, &cap, ngone + 1, sizeof *gone);
            gone[ngone++] = e->key;
        }
    }
    for (size_t i = 0; i < ngone; i++)
        task_gone(t, (pid_t)gone[i]);
    free(gone);
    /* children whose FORK record was lost */
    fk_tree_add_descendants(t);
}

/* One /proc pass of fk_tree_add_descendants. */
struct desc_pass {
    struct fk_tree *t;
    size_t added;
};

/* (a child with no thread left that has not begun to exit is not added:
 * add_thread) */
static bool add_if_child(pid_t pid, void *arg)
{
    struct desc_pass *p = arg;
    struct fk_proc_stat st;
    if (fk_tree_has(p->t, pid) || !fk_proc_stat(pid, 0, &st) || st.ppid <= 0 ||
        !fk_tree_has(p->t, st.ppid))
        return true;
    if (fk_tree_add_process(p->t, pid)) {
        p->t->st.forks++;
        p->added++;
    }
    return true;
}

size_t fk_tree_add_descendants(struct fk_tree *t)
{
    /* a process whose parent is a member; a few passes for grandchildren
     * listed before their parents (one /proc walk each) */
    size_t total = 0;
    for (int pass = 0; pass < 4; pass++) {
        struct desc_pass p = { t, 0 };
        if (!fk_proc_for_each_pid(add_if_child, &p) || !p.added)
            break;
        total += p.added;
    }
    return total;
}

size_t fk_tree_bytes(const struct fk_tree *t)
{
    return t->tasks.cap * sizeof *t->tasks.v + fk_hindex_bytes(&t->tasks.index) +
           t->procs.cap * sizeof *t->procs.v + fk_hindex_bytes(&t->procs.index);
}
