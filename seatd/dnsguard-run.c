/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/fileio.h"
#include "common/macro.h"
#include "dnsguard-run.h"

#ifndef SEATD_COLLECT_DIR
#define SEATD_COLLECT_DIR "/usr/libexec/seatd"
#endif

static char guard_path[PATH_MAX];
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

/* Beside seatd (installed), in the build tree's network/ (seatd/seatd), else libexecdir. */
static void guard_find(void) {
        static const char *const rel[] = { "/seat-dnsguard", "/../network/seat-dnsguard" };
        sibling_program_path(rel, ELEMENTSOF(rel), SEATD_COLLECT_DIR "/seat-dnsguard", guard_path, sizeof(guard_path));
}

static void reap(pid_t pid) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

/* Until its pidfd (made at spawn, always there) says it exited, or TIMEOUT_MS. */
static bool exited_within(int pidfd, int timeout_ms) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int64_t end = now_monotonic_ms() + timeout_ms;
        for (;;) {
                int64_t left = end - now_monotonic_ms();
                int k = poll(&p, 1, left > 0 ? (int) left : 0);
                if (k > 0)
                        return true;
                if (k == 0 || errno != EINTR)
                        return false;
        }
}

/* Ends it (SIGTERM, then SIGKILL after grace_ms; at once with 0), reaps it, closes its fds. */
static void stop(DnsGuardProc *p, int grace_ms) {
        if (p->lifeline >= 0)
                close(p->lifeline);
        if (p->pid > 0) {
                bool gone = false;
                if (grace_ms > 0) {
                        (void) kill(p->pid, SIGTERM);
                        gone = p->pidfd >= 0 && exited_within(p->pidfd, grace_ms);
                        if (!gone)
                                log_warning("DNS guard %d did not exit within %d ms of SIGTERM: killed", (int) p->pid,
                                            grace_ms);
                }
                if (!gone)
                        (void) kill(p->pid, SIGKILL);
                reap(p->pid);
        }
        if (p->pidfd >= 0)
                close(p->pidfd);
        if (p->ready >= 0)
                close(p->ready);
        *p = DNSGUARD_PROC_NONE;
}

/* SIGTERM, and SIGKILL after DNSGUARD_STOP_GRACE_MS: a guard that is stopped or stuck must
 * not hold a release, a failed provision or seatd's exit (which all stop guards) forever. */
void dnsguard_run_stop(DnsGuardProc *p) {
        stop(p, DNSGUARD_STOP_GRACE_MS);
}

void dnsguard_run_kill(DnsGuardProc *p) {
        stop(p, 0);
}

int64_t dnsguard_backoff(const int64_t *attempts, size_t n_attempts, unsigned in_a_row, int64_t now_ms) {
        unsigned recent = 0;
        for (size_t i = 0; i < n_attempts; i++)
                if (now_ms - attempts[i] < DNSGUARD_RESTART_WINDOW_MS)
                        recent++;
        if (in_a_row > DNSGUARD_RESTART_CAP)
                return DNSGUARD_GIVE_UP_IN_A_ROW;
        if (recent >= DNSGUARD_RESTART_CAP)
                return DNSGUARD_GIVE_UP_WINDOW;
        unsigned steps = MAX(recent, in_a_row ? in_a_row - 1 : 0);
        int64_t delay = DNSGUARD_BACKOFF_FIRST_MS;
        for (unsigned i = 0; i < steps && delay < DNSGUARD_BACKOFF_MAX_MS; i++)
                delay *= 2;
        return MIN(delay, (int64_t) DNSGUARD_BACKOFF_MAX_MS);
}

void dnsguard_describe_exit(int status, char *buf, size_t size) {
        if (WIFEXITED(status))
                (void) snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
                (void) snprintf(buf, size, "killed by signal %d (%s)%s", WTERMSIG(status), strsignal(WTERMSIG(status)),
                                WCOREDUMP(status) ? ", core dumped" : "");
        else
                (void) snprintf(buf, size, "stopped (wait status 0x%x)", (unsigned) status);
}

int dnsguard_run_reap(DnsGuardProc *p, char *buf, size_t size) {
        int status = 0;
        pid_t r;
        if (p->pid <= 0)
                return -ECHILD;
        while ((r = waitpid(p->pid, &status, WNOHANG)) < 0 && errno == EINTR)
                ;
        if (r == 0)
                return -EAGAIN;
        if (r < 0)
                (void) snprintf(buf, size, "gone (waitpid: %s)", strerror(errno));
        else
                dnsguard_describe_exit(status, buf, size);
        p->pid = 0; /* reaped: stop must not signal a pid that may be reused */
        dnsguard_run_stop(p);
        return 0;
}

/* Its argv: the path, the seat's arguments, then ours. */
static int make_argv(const NetSeat *ns, char ***ret) {
        _cleanup_strv_free_ char **args = NULL;
        int r = netdef_guard_argv(ns, &args);
        if (r < 0)
                return r;
        size_t n = 0;
        while (args[n])
                n++;
        char **argv = calloc(n + 8, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        size_t k = 0;
        argv[k++] = strdup(guard_path);
        for (size_t i = 0; i < n; i++)
                argv[k++] = TAKE_PTR(args[i]);
        argv[k++] = strdup("--user");
        argv[k++] = strdup(DNSGUARD_USER);
        argv[k++] = strdup("--lifeline-fd");
        argv[k++] = strdup("3");
        argv[k++] = strdup("--ready-fd");
        argv[k++] = strdup("4");
        for (size_t i = 0; i < k; i++)
                if (!argv[i]) {
                        strv_free(argv);
                        return -ENOMEM;
                }
        *ret = argv;
        return 0;
}

int dnsguard_run_spawn(const NetSeat *ns, const char *seat_id, DnsGuardProc *ret, SeatError **ret_error) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_close_ int life_r = -EBADF, life_w = -EBADF, ready_r = -EBADF, ready_w = -EBADF;
        int life[2], ready[2];
        char *envp[] = { NULL };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        pid_t pid = 0;

        pthread_once(&guard_once, guard_find);
        int r = make_argv(ns, &argv);
        if (r < 0)
                return seat_error_set(ret_error, -r, "the DNS guard's arguments: %s", strerror(-r));
        if (pipe2(life, O_CLOEXEC) < 0)
                return seat_error_set(ret_error, errno, "a pipe for the DNS guard: %m");
        life_r = life[0], life_w = life[1];
        if (pipe2(ready, O_CLOEXEC) < 0)
                return seat_error_set(ret_error, errno, "a pipe for the DNS guard: %m");
        ready_r = ready[0], ready_w = ready[1];

        /* Only fds 0-4 pass (everything of seatd's is O_CLOEXEC); default signals, none
         * blocked; a process group of its own, away from a terminal's Ctrl-C. */
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, life_r, 3);
        posix_spawn_file_actions_adddup2(&fa, ready_w, 4);
        posix_spawnattr_init(&attr);
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
        r = posix_spawn(&pid, guard_path, &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r != 0)
                return seat_error_set(ret_error, r, "cannot start the DNS guard '%s': %s", guard_path, strerror(r));
        /* Its exit, for the event loop (not reaped before: the pid is still ours). */
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                r = errno;
                (void) kill(pid, SIGKILL);
                reap(pid);
                return seat_error_set(ret_error, r, "pidfd_open for the DNS guard: %s", strerror(r));
        }
        (void) fcntl(pidfd, F_SETFD, FD_CLOEXEC); /* pidfds are close-on-exec; to be sure */
        (void) fd_set_nonblock(ready_r, true); /* read by the event loop too */
        log_debug("seat '%s': DNS guard %d started", seat_id, (int) pid);
        *ret = (DnsGuardProc) { .pid = pid, .lifeline = TAKE_FD(life_w), .pidfd = pidfd, .ready = TAKE_FD(ready_r) };
        return 0;
}

int dnsguard_run_ready(DnsGuardProc *p) {
        char c = 0;
        ssize_t k;
        if (p->ready < 0)
                return 0;
        while ((k = read(p->ready, &c, 1)) < 0 && errno == EINTR)
                ;
        if (k < 0 && errno == EAGAIN)
                return -EAGAIN;
        if (k != 1 || c != '1') /* EOF: it exited before it was ready */
                return -EIO;
        safe_close(p->ready);
        p->ready = -1;
        return 0;
}

int dnsguard_run_start(const NetSeat *ns, const char *seat_id, DnsGuardProc *ret, SeatError **ret_error) {
        DnsGuardProc g = DNSGUARD_PROC_NONE;
        int r = dnsguard_run_spawn(ns, seat_id, &g, ret_error);
        if (r < 0)
                return r;
        /* Ready: one byte once bound and unprivileged; EOF: it exited. */
        struct pollfd p = { .fd = g.ready, .events = POLLIN };
        int64_t end = now_monotonic_ms() + DNSGUARD_READY_TIMEOUT_MS;
        int k = 0;
        for (;;) {
                int64_t left = end - now_monotonic_ms();
                k = poll(&p, 1, left > 0 ? (int) left : 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0 || (r = dnsguard_run_ready(&g)) != -EAGAIN)
                        break;
        }
        if (k <= 0 || r < 0) {
                int poll_errno = k < 0 ? errno : 0;
                dnsguard_run_kill(&g);
                char addr[INET_ADDRSTRLEN];
                netdef_guard_address(ns, addr);
                /* What the operator needs: hung (killed here) or gone by itself (it logged why). */
                if (k < 0)
                        return seat_error_set(ret_error, poll_errno,
                                              "cannot wait for its DNS guard (seat-dnsguard on %s:53) to be ready: %s: "
                                              "the seat's names could not be resolved",
                                              addr, strerror(poll_errno));
                if (k == 0)
                        return seat_error_set(ret_error, ETIMEDOUT,
                                              "its DNS guard (seat-dnsguard on %s:53) was not ready within %d ms and "
                                              "was killed: the seat's names could not be resolved",
                                              addr, DNSGUARD_READY_TIMEOUT_MS);
                return seat_error_set(ret_error, EIO,
                                      "its DNS guard (seat-dnsguard on %s:53) exited before it said it was ready, or "
                                      "said something else (see seatd's log): the seat's names could not be resolved",
                                      addr);
        }
        *ret = g;
        return 0;
}
