/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A program run with everything it starts kept in one tree, killed whole at the end.
 *
 * A process group is not enough: any descendant can leave it (setsid, setpgid), and one
 * whose parent died is handed to init, out of reach. So the program runs under a shepherd,
 * a process of seatd's forked for it alone, which is a child subreaper
 * (PR_SET_CHILD_SUBREAPER): every orphan of the tree becomes the shepherd's child whatever
 * group or session it is in. When the program exits, or seatd asks (proc_tree_finish), or
 * seatd dies, the shepherd kills its children until it has none left, and only then
 * exits. seatd itself stays an ordinary parent: it reaps the shepherd and nothing else.
 *
 * Why not a cgroup: under seatd.service /sys/fs/cgroup is read-only (ProtectControlGroups)
 * and not delegated, and hosts still mount cgroup v2 beside v1; the subreaper works the
 * same everywhere seatd runs. What it cannot catch: a process that escapes while the
 * shepherd itself is killed (SIGKILL from outside); the program's user cannot do that to a
 * root process.
 */

#include <stdbool.h>
#include <sys/types.h>

/* Runs in the program's process, forked from a forked seatd: only async-signal-safe calls.
 * It execs, or _exits. */
typedef void (*ProcTreeExec)(void *userdata);

typedef struct ProcTree {
        pid_t pid;                /* the shepherd: it exits only once the tree is gone */
        int ctl;                  /* our end of the socket to it */
        bool finished;
        int status;               /* the program's wait status, once finished */
} ProcTree;

/* Forks the shepherd, which forks the program and runs exec_fn there. -errno. */
int proc_tree_spawn(ProcTreeExec exec_fn, void *userdata, ProcTree *ret);

/* Kills whatever of the tree still runs, waits until all of it is gone, and sets
 * t->status (the shepherd's own status where the program never ran). Takes NULL, and a
 * tree already finished: a _cleanup_ function. */
void proc_tree_finish(ProcTree *t);
