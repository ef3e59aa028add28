/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for the process tree followed from FORK/EXIT/COMM records. */
#include "unit.h"
#include "capture/tree.h"

#include <sys/wait.h>
#include <unistd.h>

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
    fk_tree_free(&r);
    fk_tree_free(&t);
    return UNIT_END();
}
