/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for the process tree followed from FORK/EXIT/COMM records. */
#include "unit.h"
#include "capture/tree.h"
#include "util/procfs.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A child whose leader ends with pthread_exit while its thread reads
 * go[0] until the parent closes go[1]. */
static int zombie_go[2];

static void *zombie_thread(void *arg)
{
    (void)arg;
    char b;
    (void)!read(zombie_go[0], &b, 1);
    _exit(0);
}

/* The first thread of pid that is not tid (0: none listed). */
static pid_t other_thread(pid_t pid, pid_t tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    pid_t found = 0;
    struct dirent *de;
    while (d && !found && (de = readdir(d)))
        if (atoi(de->d_name) > 0 && atoi(de->d_name) != tid)
            found = atoi(de->d_name);
    if (d)
        closedir(d);
    return found;
}

int main(void)
{
    unit_name = "unit-tree";
    struct fk_tree t;
    fk_tree_init(&t);

    /* a target process 100 with threads 100 and 101 */
    fk_tree_add_task(&t, 100, 100);
    fk_tree_add_task(&t, 100, 101);
    fk_tree_add_task(&t, 100, 101);     /* seen in /proc and by a FORK: once */
    UNIT_CHECK("given process is a member", fk_tree_has(&t, 100));
    UNIT_CHECK("others are not", !fk_tree_has(&t, 99) && !fk_tree_has(&t, 0) && !fk_tree_has(&t, -1));
    UNIT_CHECK("one process, two threads", t.st.processes == 1 && t.st.live == 1);

    /* a child forked by thread 101, then its own child; an outsider's fork */
    UNIT_CHECK("child of a member thread is a member", fk_tree_fork(&t, 200, 100, 200, 101));
    UNIT_CHECK("grandchild is a member", fk_tree_fork(&t, 300, 200, 300, 200));
    UNIT_CHECK("outsider's child is not", !fk_tree_fork(&t, 400, 50, 400, 50) && !fk_tree_has(&t, 400));
    UNIT_CHECK("new thread of a member process", fk_tree_fork(&t, 200, 200, 201, 200));
    UNIT_CHECK("counts: 3 processes, 2 forks, 1 thread",
               t.st.processes == 3 && t.st.forks == 2 && t.st.threads == 1 && t.st.peak_live == 3);

    /* exits: a thread first (its process stays), then the last thread */
    UNIT_CHECK("thread exit is a member's", fk_tree_exit(&t, 200, 201));
    UNIT_CHECK("process with a thread left stays", fk_tree_has(&t, 200) && t.st.exits == 0);
    UNIT_CHECK("last thread's exit", fk_tree_exit(&t, 200, 200) && !fk_tree_has(&t, 200) && t.st.exits == 1);
    UNIT_CHECK("an outsider's exit is not counted", !fk_tree_exit(&t, 400, 400) && t.st.exits == 1);
    UNIT_CHECK("a second EXIT of the same task is ignored", !fk_tree_exit(&t, 200, 200) && t.st.exits == 1);
    /* its last switch-out comes after its EXIT record: still the tree's */
    UNIT_CHECK("an exited member's last samples are the tree's", fk_tree_owns(&t, 200) && fk_tree_owns(&t, 100));
    UNIT_CHECK("an outsider's are not, exited or not", !fk_tree_owns(&t, 400) && !fk_tree_owns(&t, 50));
    UNIT_CHECK("a thread's exit leaves no exited process", !fk_tree_owns(&t, 201));

    /* pid reuse: 200 comes back as an outsider's child, then as a member's */
    UNIT_CHECK("reused pid by an outsider: not a member", !fk_tree_fork(&t, 200, 50, 200, 50) && !fk_tree_has(&t, 200));
    UNIT_CHECK("... and its samples are not the tree's", !fk_tree_owns(&t, 200));
    UNIT_CHECK("reused pid by a member: a member again", fk_tree_fork(&t, 200, 300, 200, 300) && fk_tree_has(&t, 200));
    /* an EXIT lost: tid 300 reused by an outsider drops the stale member */
    UNIT_CHECK("stale member's tid reused by an outsider", !fk_tree_fork(&t, 300, 50, 300, 50) && !fk_tree_has(&t, 300));

    /* exec from a non-leader thread: 500 with threads 500, 501; 501 execs */
    fk_tree_add_task(&t, 500, 500);
    fk_tree_add_task(&t, 500, 501);
    fk_tree_exit(&t, 500, 500);                /* de_thread: the leader goes */
    fk_tree_exec(&t, 500, 500);                /* 501 goes on as 500 */
    UNIT_CHECK("process survives its leader's exit through exec", fk_tree_has(&t, 500));
    UNIT_CHECK("and ends with its exit", fk_tree_exit(&t, 500, 500) && !fk_tree_has(&t, 500));

    /* the tree empties when everything is gone */
    fk_tree_exit(&t, 100, 100);
    fk_tree_exit(&t, 100, 101);
    fk_tree_exit(&t, 200, 200);
    UNIT_CHECK("empty when every member exited", fk_tree_empty(&t) && t.st.live == 0);

    /* 10,000 short children, 1 alive at a time: memory follows the live ones */
    fk_tree_add_task(&t, 1000, 1000);
    size_t small = 0;
    for (int i = 0; i < 100000; i++) {
        pid_t c = 2000 + (i % 300000);
        fk_tree_fork(&t, c, 1000, c, 1000);
        fk_tree_exit(&t, c, c);
        if (i == 99)
            small = fk_tree_bytes(&t);
    }
    UNIT_CHECK("100,000 children counted", t.st.forks >= 100000 && fk_tree_has(&t, 1000) && t.st.live == 1);
    UNIT_CHECK("memory bounded by the live members", fk_tree_bytes(&t) <= small * 2 + 4096);
    UNIT_CHECK("the last children to exit are remembered, the first are not",
               fk_tree_owns(&t, 2000 + 99999) && fk_tree_owns(&t, 2000 + 99999 - (FK_TREE_EXITED - 1)) &&
               !fk_tree_owns(&t, 2000 + 99999 - FK_TREE_EXITED) && !fk_tree_owns(&t, 2000));

    /* real processes: this one is found in /proc; a reaped child is resynced away */
    struct fk_tree r;
    fk_tree_init(&r);
    UNIT_CHECK("add_process reads /proc/PID/task", fk_tree_add_process(&r, getpid()) && fk_tree_has(&r, getpid()));
    pid_t k = fork();
    if (k == 0)
        _exit(0);
    waitpid(k, NULL, 0);
    fk_tree_add_task(&r, k, k);     /* as if its EXIT record had been lost */
    fk_tree_resync(&r);
    UNIT_CHECK("resync drops a process /proc no longer has", !fk_tree_has(&r, k) && fk_tree_has(&r, getpid()));
    UNIT_CHECK("add_process of a gone pid is false", !fk_tree_add_process(&r, k));
    /* a child whose FORK record was lost is found by its parent */
    int go[2];
    if (pipe(go) == 0) {
        pid_t c = fork();
        if (c == 0) {
            char b;
            close(go[1]);
            (void)!read(go[0], &b, 1);
            _exit(0);
        }
        close(go[0]);
        fk_tree_resync(&r);
        UNIT_CHECK("resync adds a live child of a member", fk_tree_has(&r, c));
        close(go[1]);
        waitpid(c, NULL, 0);
    }
    /* a zombie leader (pthread_exit) is not a member task: it wrote its
     * EXIT record before the capture, and would keep its process (and the
     * tree) alive after its last thread's EXIT */
    if (pipe(zombie_go) == 0) {
        pid_t z = fork();
        if (z == 0) {
            pthread_t th;
            close(zombie_go[1]);
            if (pthread_create(&th, NULL, zombie_thread, NULL))
                _exit(2);
            pthread_exit(NULL);
        }
        close(zombie_go[0]);
        char state = 0;
        for (int i = 0; i < 400 && state != 'Z'; i++) {     /* up to 2 s */
            struct timespec ms5 = { 0, 5000000 };
            nanosleep(&ms5, NULL);
            state = fk_proc_task_state(z, z);
        }
        pid_t zt = other_thread(z, z);
        if (state == 'Z' && zt > 0) {
            struct fk_tree zr;
            fk_tree_init(&zr);
            fk_tree_add_task(&zr, getpid(), getpid());
            UNIT_CHECK("a zombie leader's process is found by its parent by its live thread",
                       fk_tree_add_descendants(&zr) >= 1 && fk_tree_has(&zr, z));
            fk_tree_exit(&zr, z, zt);
            UNIT_CHECK("... and leaves the tree at that thread's EXIT (the leader's came before)",
                       !fk_tree_has(&zr, z) && fk_tree_has(&zr, getpid()));
            fk_tree_free(&zr);
            fk_tree_init(&zr);      /* the same process as the target */
            UNIT_CHECK("a target with a zombie leader is added by its live thread",
                       fk_tree_add_process(&zr, z) && fk_tree_has(&zr, z));
            fk_tree_exit(&zr, z, zt);
            UNIT_CHECK("... and the tree is empty at that thread's EXIT", fk_tree_empty(&zr));
            fk_tree_free(&zr);
        } else {
            UNIT_CHECK("a leader that ended with pthread_exit is listed as a zombie", false);
        }
        close(zombie_go[1]);
        waitpid(z, NULL, 0);
    }
    fk_tree_free(&r);
    fk_tree_free(&t);
    return UNIT_END();
}
