/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The shepherd of a program's process tree (seatd/proc-tree.h). Everything the shepherd
 * does runs in a fork of the multi-threaded seatd, so it uses async-signal-safe calls only:
 * no malloc, no stdio, no opendir (getdents64 on a buffer of the stack instead).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/macro.h"
#include "proc-tree.h"

/* The shepherd's exit status when it could not start the program (collect.c reads 126 as
 * "could not be run"). */
#define SHEPHERD_FAILED 126

static pid_t parse_pid(const char *s) {
        long v = 0;
        if (!*s)
                return -1;
        for (; *s; s++) {
                if (*s < '0' || *s > '9' || v > 1L << 30)
                        return -1;
                v = v * 10 + (*s - '0');
        }
        return (pid_t) v;
}

/* The parent of pid, from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold
 * spaces and parentheses, so the last ')' ends it). -1: gone or unreadable. */
static pid_t parent_of(const char *pid) {
        char path[64] = "/proc/", buf[256];
        size_t l = strlen(pid);
        if (l > sizeof(path) - sizeof("/proc//stat"))
                return -1;
        memcpy(path + 6, pid, l);
        memcpy(path + 6 + l, "/stat", sizeof("/stat"));
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
                return -1;
        p += 4;
        char *end = strchr(p, ' ');
        if (!end)
                return -1;
        *end = '\0';
        return parse_pid(p);
}

/* SIGKILL to each child of the shepherd's. A child stays ours (its pid unreused) until we
 * reap it, so what we read in /proc is what we kill. */
static void children_kill(pid_t self) {
        int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        char buf[8192] __attribute__((aligned(8)));
        ssize_t n;
        while ((n = getdents64(fd, buf, sizeof(buf))) > 0)
                for (ssize_t off = 0; off < n;) {
                        struct dirent64 *de = (struct dirent64 *) (void *) (buf + off);
                        pid_t pid = parse_pid(de->d_name);
                        if (pid > 0 && pid != self && parent_of(de->d_name) == self)
                                (void) kill(pid, SIGKILL);
                        off += de->d_reclen;
                }
        close(fd);
}

/* Kills the tree until the shepherd has no child left: each round kills its children and
 * reaps one; the orphans of those killed become its children for the next round. */
static int tree_kill(pid_t program) {
        pid_t self = getpid();
        int status = W_EXITCODE(0, SIGKILL), st;
        bool program_reaped = false;
        /* The program's group in one go (its QEMU and helpers, normally), while its
         * unreaped pid cannot name another group. */
        (void) kill(-program, SIGKILL);
        for (;;) {
                children_kill(self);
                pid_t p = waitpid(-1, &st, __WALL);
                if (p < 0 && errno == EINTR)
                        continue;
                if (p < 0)
                        break; /* ECHILD: the tree is gone */
                if (p == program && !program_reaped) {
                        status = st;
                        program_reaped = true;
                }
                /* the rest of those already dead, before scanning /proc again */
                while ((p = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
                        if (p == program && !program_reaped) {
                                status = st;
                                program_reaped = true;
                        }
        }
        return status;
}

__attribute__((noreturn)) static void shepherd(int ctl, ProcTreeExec exec_fn, void *userdata) {
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        /* Its own group (no terminal's signal reaches it), the default SIGCHLD (children
         * are reaped by waitpid, never discarded), and the orphans of the tree. */
        if (setpgid(0, 0) < 0 || sigaction(SIGCHLD, &dfl, NULL) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                _exit(SHEPHERD_FAILED);
        pid_t program = fork();
        if (program < 0)
                _exit(SHEPHERD_FAILED);
        if (program == 0) {
                close(ctl); /* the program never speaks for the shepherd */
                exec_fn(userdata);
                _exit(127);
        }
        /* Nothing of seatd's but the socket: the program's pipes must close when it does. */
        if (ctl != 3 && dup3(ctl, 3, O_CLOEXEC) < 0) {
                (void) tree_kill(program);
                _exit(SHEPHERD_FAILED);
        }
        ctl = 3;
        (void) close_range(4, ~0U, 0);
        int pidfd = (int) syscall(SYS_pidfd_open, program, 0);
        if (pidfd < 0)
                (void) kill(program, SIGKILL); /* it could not be watched: it does not run */
        /* Until it exits, or seatd shuts its end (done, the deadline) or dies. */
        struct pollfd p[2] = { { .fd = ctl, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
        while (pidfd >= 0 && poll(p, 2, -1) < 0 && errno == EINTR)
                ;
        int status = tree_kill(program);
        (void) send(ctl, &status, sizeof(status), MSG_NOSIGNAL);
        _exit(0);
}

int proc_tree_spawn(ProcTreeExec exec_fn, void *userdata, ProcTree *ret) {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int e = -errno;
                close(sp[0]);
                close(sp[1]);
                return e;
        }
        if (pid == 0) {
                close(sp[0]);
                shepherd(sp[1], exec_fn, userdata);
        }
        close(sp[1]);
        (void) setpgid(pid, pid); /* whichever of the two runs first */
        *ret = (ProcTree) { .pid = pid, .ctl = sp[0] };
        return 0;
}

void proc_tree_finish(ProcTree *t) {
        int st = 0, status;
        if (!t || t->pid <= 0 || t->finished)
                return;
        (void) shutdown(t->ctl, SHUT_WR);
        while (waitpid(t->pid, &st, 0) < 0 && errno == EINTR)
                ;
        /* The shepherd has exited: its report is there or never comes; this cannot block. */
        ssize_t n;
        while ((n = read(t->ctl, &status, sizeof(status))) < 0 && errno == EINTR)
                ;
        t->status = n == (ssize_t) sizeof(status) && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? status : st;
        t->ctl = safe_close(t->ctl);
        t->finished = true;
}
