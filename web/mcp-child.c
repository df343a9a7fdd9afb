/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One `seatctl mcp` per MCP session. The child is started with fork+execve (prctl needs
 * the child side, which posix_spawn does not give), dies with seat-web (PDEATHSIG) and
 * with its session (mcp_child_kill), and inherits no fd but its three.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/macro.h"
#include "mcp-child.h"

int mcp_child_spawn(const char *seatctl, const char *participant_socket, const char *user, const char *seat,
                    const char *token, McpChild *ret) {
        _cleanup_free_ char *env_token = NULL, *env_socket = NULL;
        int in[2] = { -1, -1 }, out[2] = { -1, -1 };
        const char *argv[10];
        size_t n = 0;

        /* Everything the child needs is made before fork: after it, only syscalls. */
        if (asprintf(&env_token, "SEATD_TOKEN=%s", token) < 0 ||
            asprintf(&env_socket, "SEATD_PARTICIPANT_SOCKET=%s", participant_socket) < 0)
                return -ENOMEM;
        char *envp[] = { env_token, env_socket, (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *) "LANG=C.UTF-8", NULL };
        argv[n++] = seatctl;
        argv[n++] = "mcp";
        /* forward_port would open its ports here, on seat-web's host, not the remote agent's. */
        argv[n++] = "--no-forward-port";
        if (user) {
                argv[n++] = "--user";
                argv[n++] = user;
        }
        argv[n++] = "--";
        argv[n++] = seat;
        argv[n] = NULL;

        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
                int e = errno;
                safe_close(in[0]);
                safe_close(in[1]);
                return -e;
        }
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                int e = errno;
                safe_close(in[0]);
                safe_close(in[1]);
                safe_close(out[0]);
                safe_close(out[1]);
                explicit_bzero(env_token, strlen(env_token));
                return -e;
        }
        if (pid == 0) {
                /* Dies with seat-web: its seatd connections then close and seatd kills
                 * what ran for them. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                        _exit(127);
                if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
                        _exit(127);
                /* stderr stays seat-web's (the journal); nothing else is inherited. */
                close_range(3, ~0u, 0);
                sigset_t all;
                sigemptyset(&all);
                sigprocmask(SIG_SETMASK, &all, NULL);
                signal(SIGPIPE, SIG_DFL);
                execve(seatctl, (char *const *) argv, envp);
                _exit(127);
        }
        explicit_bzero(env_token, strlen(env_token));
        close(in[0]);
        close(out[1]);
        (void) fcntl(in[1], F_SETFL, O_NONBLOCK);
        (void) fcntl(out[0], F_SETFL, O_NONBLOCK);
        *ret = (McpChild) { .pid = pid, .in_fd = in[1], .out_fd = out[0] };
        return 0;
}

void mcp_child_kill(McpChild *c) {
        if (c->pid > 0) {
                (void) kill(c->pid, SIGKILL);
                while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                c->pid = 0;
        }
        c->in_fd = safe_close(c->in_fd);
        bytes_clear(&c->in);
}

int mcp_child_queue(McpChild *c, const char *line, size_t len, size_t max) {
        return bytes_append(&c->in, line, len, c->in.len == 0 ? MAX(len, max) : max);
}

int mcp_child_flush(McpChild *c) {
        size_t done = 0;
        int r = 0;
        while (done < c->in.len) {
                ssize_t k = write(c->in_fd, c->in.data + done, c->in.len - done);
                if (k > 0) {
                        done += (size_t) k;
                        continue;
                }
                if (k < 0 && errno == EINTR)
                        continue;
                r = k < 0 ? -errno : -EIO;
                break;
        }
        bytes_take(&c->in, done); /* one move for the whole call, not one per write */
        if (r == -EWOULDBLOCK)
                return -EAGAIN;
        return r;
}
