/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Running tools: fork with pipes, stream their output as it comes, feed stdin, enforce
 * timeouts and output caps, and make sure an exec's process group does not outlive it.
 */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"
#include "common/fileio.h"
#include "common/log.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

struct Exec {
        Exec *next;
        int64_t id;
        pid_t pid; /* also the process group id */

        int stdin_fd, stdout_fd, stderr_fd; /* our ends, non-blocking, -EBADF when closed */
        int pfd_in, pfd_out, pfd_err;       /* indexes in the current poll set, or -1 */

        uint8_t *stdin_buf; /* pending stdin: stdin_buf[stdin_off..stdin_len) */
        size_t stdin_len, stdin_off;
        bool stdin_eof;     /* the host said no more stdin comes */
        AgentAcks acks;     /* of stdin requests whose data is in stdin_buf */
        bool pty;           /* stdout_fd is the terminal's master, stdin_fd a dup of it */

        uint64_t max_output, sent, stdout_bytes, stderr_bytes;
        bool truncated, timed_out;

        int64_t start_ms, deadline_ms, grace_deadline_ms; /* monotonic; deadline 0: none */
        bool detached;      /* started before the current hello: killed, never reported */
        bool exited;
        int status;
        char *error; /* the tool could not be started */
};

/* What the child reports through the CLOEXEC error pipe when it fails before execve. */
typedef enum ExecStep {
        EXEC_STEP_SETUP,
        EXEC_STEP_CHDIR,
        EXEC_STEP_SETGROUPS,
        EXEC_STEP_SETGID,
        EXEC_STEP_SETUID,
        EXEC_STEP_EXECVE,
} ExecStep;

typedef struct ExecReport {
        int step;
        int error;
} ExecReport;

typedef struct ExecChild {
        char **candidates; /* full paths to try, in PATH order */
        char **argv, **env;
        const char *cwd;
        uid_t uid;
        gid_t gid;
        int stdin_fd, stdout_fd, stderr_fd, report_fd;
        const char *pty_path; /* the terminal's slave: stdin, stdout, stderr and controlling tty */
} ExecChild;

/* Execs of the current host session only: a new host may reuse an old host's ids. */
static Exec *exec_find(Agent *a, int64_t id) {
        for (Exec *e = a->execs; e; e = e->next)
                if (e->id == id && !e->detached)
                        return e;
        return NULL;
}

static Exec *exec_find_pid(Agent *a, pid_t pid) {
        for (Exec *e = a->execs; e; e = e->next)
                if (e->pid == pid && !e->exited)
                        return e;
        return NULL;
}

static void exec_close_stdin(Exec *e) {
        e->stdin_fd = safe_close(e->stdin_fd);
        e->pfd_in = -1;
        free(e->stdin_buf);
        e->stdin_buf = NULL;
        e->stdin_len = e->stdin_off = 0;
}

static Exec *exec_free(Exec *e) {
        if (!e)
                return NULL;
        exec_close_stdin(e);
        safe_close(e->stdout_fd);
        safe_close(e->stderr_fd);
        free(e->error);
        return mfree(e);
}

static void exec_unlink(Agent *a, Exec *e) {
        for (Exec **p = &a->execs; *p; p = &(*p)->next)
                if (*p == e) {
                        *p = e->next;
                        a->n_execs--;
                        return;
                }
}

/* ---- the child ---- */

static _Noreturn void exec_child_fail(int report_fd, ExecStep step, int error) {
        ExecReport rep = { .step = step, .error = error };

        (void) !write(report_fd, &rep, sizeof(rep));
        _exit(127);
}

/* Runs in a vfork() child: it shares the agent's memory until execve, so it makes system
 * calls only, writes nothing but its own stack, and leaves by execve or _exit. */
static _Noreturn void exec_child(const ExecChild *c) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t none;
        int error = ENOENT;

        /* Nothing of the agent's signal setup survives: it ignores SIGPIPE only (it takes
         * every other signal through a signalfd, and the mask is reset below). */
        (void) sigaction(SIGPIPE, &sa, NULL);
        /* And whatever our own parent left ignored (a shell's background job ignores
         * SIGINT and SIGQUIT): a terminal's ^C must reach the tool. */
        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGQUIT, &sa, NULL);
        (void) sigaction(SIGHUP, &sa, NULL);
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);

        if (setsid() < 0)
                exec_child_fail(c->report_fd, EXEC_STEP_SETUP, errno);
        if (c->pty_path) {
                /* A session leader without a terminal that opens one (no O_NOCTTY) gets it as
                 * its controlling terminal; TIOCSCTTY says so explicitly. */
                int t = open(c->pty_path, O_RDWR | O_CLOEXEC);
                if (t < 0)
                        exec_child_fail(c->report_fd, EXEC_STEP_SETUP, errno);
                (void) ioctl(t, TIOCSCTTY, 0);
                if (dup2(t, STDIN_FILENO) < 0 || dup2(t, STDOUT_FILENO) < 0 || dup2(t, STDERR_FILENO) < 0)
                        exec_child_fail(c->report_fd, EXEC_STEP_SETUP, errno);
        } else if (dup2(c->stdin_fd, STDIN_FILENO) < 0 || dup2(c->stdout_fd, STDOUT_FILENO) < 0 ||
                   dup2(c->stderr_fd, STDERR_FILENO) < 0)
                exec_child_fail(c->report_fd, EXEC_STEP_SETUP, errno);
        /* Anything we inherited without CLOEXEC (the agent's own fds all have it). */
        (void) syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);

        if (chdir(c->cwd) < 0)
                exec_child_fail(c->report_fd, EXEC_STEP_CHDIR, errno);

        if (geteuid() == 0 && setgroups(0, NULL) < 0)
                exec_child_fail(c->report_fd, EXEC_STEP_SETGROUPS, errno);
        if ((getgid() != c->gid || getegid() != c->gid) && setresgid(c->gid, c->gid, c->gid) < 0)
                exec_child_fail(c->report_fd, EXEC_STEP_SETGID, errno);
        if ((getuid() != c->uid || geteuid() != c->uid) && setresuid(c->uid, c->uid, c->uid) < 0)
                exec_child_fail(c->report_fd, EXEC_STEP_SETUID, errno);

        for (char **p = c->candidates; *p; p++) {
                execve(*p, c->argv, c->env);
                /* Like execvp: remember a permission problem, keep looking otherwise. */
                if (errno == EACCES)
                        error = EACCES;
                else if (error != EACCES && errno != ENOENT && errno != ENOTDIR)
                        error = errno;
        }
        exec_child_fail(c->report_fd, EXEC_STEP_EXECVE, error);
}

/* vfork: under TCG, copying the agent's page tables for fork() was most of an exec's cost.
 * The agent is suspended until the child has exec'd or failed. Kept in a function of its
 * own so that no caller's local can be clobbered by the shared stack. */
static __attribute__((noinline)) pid_t exec_vfork(const ExecChild *c) {
        pid_t pid = vfork();
        if (pid == 0)
                exec_child(c);
        return pid < 0 ? -errno : pid;
}

/* ---- the parent ---- */

static const char *env_get(char **env, const char *key) {
        size_t k = strlen(key);

        for (char **e = env; e && *e; e++)
                if (strncmp(*e, key, k) == 0 && (*e)[k] == '=')
                        return *e + k + 1;
        return NULL;
}

/* The paths execve() tries for file: file itself when it has a '/', else PATH's dirs. */
static int exec_candidates(const char *file, char **env, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        const char *path, *p;
        size_t n = 0, max;

        if (strchr(file, '/')) {
                l = calloc(2, sizeof(char *));
                if (!l || !(l[0] = strdup(file)))
                        return -ENOMEM;
                *ret = TAKE_PTR(l);
                return 0;
        }

        path = env_get(env, "PATH") ?: strchr(AGENT_DEFAULT_PATH, '=') + 1;
        max = 2;
        for (p = path; *p; p++)
                if (*p == ':')
                        max++;
        l = calloc(max, sizeof(char *));
        if (!l)
                return -ENOMEM;

        if (*file) {
                p = path;
                for (;;) {
                        size_t dlen = strcspn(p, ":");
                        char *c;

                        if (dlen == 0)
                                c = strdup(file); /* empty element: the cwd */
                        else if (asprintf(&c, "%.*s/%s", (int) dlen, p, file) < 0)
                                c = NULL;
                        if (!c)
                                return -ENOMEM;
                        l[n++] = c;
                        if (p[dlen] == '\0')
                                break;
                        p += dlen + 1;
                }
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static char *exec_report_to_string(const ExecReport *rep, const char *argv0, const char *cwd) {
        char *s = NULL;
        int r;

        switch (rep->step) {
        case EXEC_STEP_CHDIR:
                r = asprintf(&s, "chdir '%s': %s", cwd, strerror(rep->error));
                break;
        case EXEC_STEP_SETGROUPS:
                r = asprintf(&s, "setgroups: %s", strerror(rep->error));
                break;
        case EXEC_STEP_SETGID:
                r = asprintf(&s, "setgid: %s", strerror(rep->error));
                break;
        case EXEC_STEP_SETUID:
                r = asprintf(&s, "setuid: %s", strerror(rep->error));
                break;
        case EXEC_STEP_EXECVE:
                r = asprintf(&s, "execve '%s': %s", argv0, strerror(rep->error));
                break;
        default:
                r = asprintf(&s, "setup: %s", strerror(rep->error));
                break;
        }
        return r < 0 ? NULL : s;
}

static void close_pair(int p[2]) {
        p[0] = safe_close(p[0]);
        p[1] = safe_close(p[1]);
}

/* A new pseudo-terminal of the asked size: its master (close-on-exec) and its slave's path. */
static int exec_open_pty(const AgentMsg *m, int *ret_master, char *path, size_t path_size) {
        struct winsize ws = { .ws_row = (unsigned short) m->exec.pty_rows, .ws_col = (unsigned short) m->exec.pty_cols };
        _cleanup_close_ int fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (grantpt(fd) < 0 || unlockpt(fd) < 0 || ptsname_r(fd, path, path_size) != 0)
                return -errno ?: -EIO;
        if (ioctl(fd, TIOCSWINSZ, &ws) < 0)
                return -errno;
        *ret_master = TAKE_FD(fd);
        return 0;
}

static int exec_spawn(Agent *a, const AgentMsg *m, Exec *e) {
        static char *default_env[] = { AGENT_DEFAULT_PATH, NULL };
        _cleanup_strv_free_ char **candidates = NULL;
        int in[2] = { -EBADF, -EBADF }, out[2] = { -EBADF, -EBADF }, err[2] = { -EBADF, -EBADF },
            rep[2] = { -EBADF, -EBADF };
        char pty_path[64];
        ExecChild c;
        ExecReport report;
        ssize_t n;
        pid_t pid;
        int r;

        c = (ExecChild) {
                .argv = m->exec.argv,
                .env = m->exec.env ?: default_env,
                .cwd = m->exec.cwd ?: "/",
                .uid = (uid_t) m->exec.uid,
                .gid = (gid_t) m->exec.gid,
        };

        r = exec_candidates(m->exec.argv[0], c.env, &candidates);
        if (r < 0)
                return r;
        c.candidates = candidates;

        if (m->exec.has_pty) {
                /* The terminal: out[0] is its master (read: output; written: input through
                 * in[1], a dup); the child opens the slave by name. */
                r = exec_open_pty(m, &out[0], pty_path, sizeof(pty_path));
                if (r < 0)
                        goto fail;
                in[1] = fcntl(out[0], F_DUPFD_CLOEXEC, 3);
                if (in[1] < 0 || pipe2(rep, O_CLOEXEC) < 0) {
                        r = -errno;
                        goto fail;
                }
                c.pty_path = pty_path;
                c.stdin_fd = c.stdout_fd = c.stderr_fd = -EBADF;
        } else {
                if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
                    pipe2(rep, O_CLOEXEC) < 0) {
                        r = -errno;
                        goto fail;
                }
                c.stdin_fd = in[0];
                c.stdout_fd = out[1];
                c.stderr_fd = err[1];
        }
        c.report_fd = rep[1];

        pid = exec_vfork(&c);
        if (pid < 0) {
                r = pid;
                goto fail;
        }

        in[0] = safe_close(in[0]);
        out[1] = safe_close(out[1]);
        err[1] = safe_close(err[1]);
        rep[1] = safe_close(rep[1]);

        e->pid = pid;
        e->start_ms = now_monotonic_ms();
        e->stdin_fd = TAKE_FD(in[1]);
        e->stdout_fd = TAKE_FD(out[0]);
        e->stderr_fd = TAKE_FD(err[0]);

        /* The child either execs (EOF: the pipe was close-on-exec) or reports and exits. */
        do
                n = read(rep[0], &report, sizeof(report));
        while (n < 0 && errno == EINTR);
        rep[0] = safe_close(rep[0]);
        if (n == (ssize_t) sizeof(report)) {
                e->error = exec_report_to_string(&report, m->exec.argv[0], c.cwd);
                if (!e->error)
                        e->error = strdup("cannot start");
        }

        (void) fd_set_nonblock(e->stdin_fd, 1);
        (void) fd_set_nonblock(e->stdout_fd, 1);
        if (e->stderr_fd >= 0)
                (void) fd_set_nonblock(e->stderr_fd, 1);
        return 0;

fail:
        close_pair(in);
        close_pair(out);
        close_pair(err);
        close_pair(rep);
        return r;
}

/* Answer the deferred stdin requests: ok when the tool took their bytes, else why not. */
static void exec_flush_acks(Agent *a, Exec *e, const char *code, const char *message) {
        agent_acks_flush(a, &e->acks, e->detached, "exec", e->id, code, message);
}

static void exec_write_stdin(Agent *a, Exec *e) {
        while (e->stdin_fd >= 0 && e->stdin_off < e->stdin_len) {
                ssize_t n = write(e->stdin_fd, e->stdin_buf + e->stdin_off, e->stdin_len - e->stdin_off);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return;
                        /* EPIPE: the tool closed its stdin; what is pending is lost. */
                        log_debug_errno(errno, "Exec %" PRId64 ": stdin closed: %m", e->id);
                        exec_flush_acks(a, e, AGENT_ERR_IO, "closed its stdin");
                        exec_close_stdin(e);
                        return;
                }
                e->stdin_off += (size_t) n;
        }
        if (e->acks.n > 0 && e->stdin_len - e->stdin_off <= AGENT_STDIN_ACK_WATER)
                exec_flush_acks(a, e, NULL, NULL);
        if (e->stdin_off == e->stdin_len) {
                free(e->stdin_buf);
                e->stdin_buf = NULL;
                e->stdin_len = e->stdin_off = 0;
                if (e->stdin_eof && e->stdin_fd >= 0)
                        exec_close_stdin(e);
        }
}

int agent_pending_append(uint8_t **buf, size_t *off, size_t *len, const uint8_t *data, size_t n) {
        size_t pending = *len - *off;
        uint8_t *b;

        if (n == 0)
                return 0;
        if (pending + n > AGENT_STDIN_PENDING_MAX)
                return -ENOBUFS;

        b = malloc(pending + n);
        if (!b)
                return -ENOMEM;
        if (pending > 0)
                memcpy(b, *buf + *off, pending);
        memcpy(b + pending, data, n);
        free(*buf);
        *buf = b;
        *off = 0;
        *len = pending + n;
        return 0;
}

static int exec_append_stdin(Exec *e, const uint8_t *data, size_t len) {
        return agent_pending_append(&e->stdin_buf, &e->stdin_off, &e->stdin_len, data, len);
}

int exec_handle_exec(Agent *a, const AgentMsg *m) {
        _cleanup_free_ char *argv0 = NULL;
        AgentMsg started = { .type = AGENT_MSG_STARTED, .id = m->id };
        Exec *e;
        int r;

        if (exec_find(a, m->id))
                return agent_send_error(a, m->id, AGENT_ERR_STATE, "exec %" PRId64 " is still running", m->id);
        if (a->n_execs >= a->limits.max_execs)
                return agent_send_error(a, m->id, AGENT_ERR_LIMIT, "already %u execs running (max_execs)",
                                        a->n_execs);
        if (!m->exec.argv || !m->exec.argv[0])
                return agent_send_error(a, m->id, AGENT_ERR_INVALID, "field 'argv' must not be empty");

        e = calloc(1, sizeof(*e));
        if (!e)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "out of memory");
        *e = (Exec) {
                .id = m->id,
                .stdin_fd = -EBADF, .stdout_fd = -EBADF, .stderr_fd = -EBADF,
                .pfd_in = -1, .pfd_out = -1, .pfd_err = -1,
                .stdin_eof = m->exec.stdin_eof,
                .pty = m->exec.has_pty,
                .max_output = m->exec.max_output > 0 ? (uint64_t) m->exec.max_output : a->limits.max_output,
        };

        r = exec_append_stdin(e, m->exec.stdin_data, m->exec.stdin_len);
        if (r < 0) {
                exec_free(e);
                return agent_send_error(a, m->id, AGENT_ERR_LIMIT, "field 'stdin' is larger than %u bytes",
                                        AGENT_STDIN_PENDING_MAX);
        }

        r = exec_spawn(a, m, e);
        if (r < 0) {
                exec_free(e);
                log_warning_errno(r, "Exec %" PRId64 ": cannot fork: %m", m->id);
                return agent_send_error(a, m->id, AGENT_ERR_IO, "cannot start the process: %s", strerror(-r));
        }

        {
                int64_t t = m->exec.timeout_ms > 0 ? m->exec.timeout_ms : a->limits.default_timeout_ms;
                if (t > 0)
                        e->deadline_ms = e->start_ms + t;
        }

        e->next = a->execs;
        a->execs = e;
        a->n_execs++;

        argv0 = log_escape(m->exec.argv[0], strlen(m->exec.argv[0]), 256);
        log_info("Exec %" PRId64 ": '%s' pid %d%s%s", e->id, argv0 ?: "?", (int) e->pid,
                 e->error ? ": " : "", e->error ?: "");

        started.started.pid = e->pid;
        r = agent_send(a, &started);

        exec_write_stdin(a, e);
        return r;
}

int exec_handle_stdin(Agent *a, const AgentMsg *m) {
        Exec *e = exec_find(a, m->stdin_msg.exec);
        int r;

        if (!e)
                return agent_send_error(a, m->id, AGENT_ERR_NOT_FOUND, "no running exec %" PRId64,
                                        m->stdin_msg.exec);
        if (e->stdin_eof)
                return agent_send_error(a, m->id, AGENT_ERR_STATE, "stdin of exec %" PRId64 " is already closed",
                                        e->id);
        if (e->stdin_fd < 0) {
                if (m->stdin_msg.len == 0) {
                        e->stdin_eof = e->stdin_eof || m->stdin_msg.eof;
                        return agent_send_ok(a, m->id, -1);
                }
                return agent_send_error(a, m->id, AGENT_ERR_IO, "exec %" PRId64 " closed its stdin", e->id);
        }

        if (e->acks.n >= AGENT_STDIN_ACKS_MAX)
                return agent_send_error(a, m->id, AGENT_ERR_LIMIT,
                                        "exec %" PRId64 " has %u stdin requests waiting for the tool to read", e->id,
                                        e->acks.n);
        r = exec_append_stdin(e, m->stdin_msg.data, m->stdin_msg.len);
        /* A terminal has no end of input but its EOF character (VEOF, ^D by default): the
         * line discipline turns it into a read of 0 bytes for the tool. */
        if (r >= 0 && e->pty && m->stdin_msg.eof)
                r = exec_append_stdin(e, (const uint8_t *) "\x04", 1);
        if (r == -ENOBUFS)
                return agent_send_error(a, m->id, AGENT_ERR_LIMIT,
                                        "exec %" PRId64 " has more than %u bytes of stdin pending", e->id,
                                        AGENT_STDIN_PENDING_MAX);
        if (r < 0)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "out of memory");

        if (m->stdin_msg.eof)
                e->stdin_eof = true;
        if (e->stdin_len - e->stdin_off > AGENT_STDIN_ACK_WATER) {
                e->acks.ids[e->acks.n++] = m->id; /* answered by exec_write_stdin() */
                exec_write_stdin(a, e);
                return 0;
        }
        exec_write_stdin(a, e);
        return agent_send_ok(a, m->id, -1);
}

int exec_handle_kill(Agent *a, const AgentMsg *m) {
        Exec *e = exec_find(a, m->kill.exec);
        int sig = (int) m->kill.signal;

        if (!e)
                return agent_send_error(a, m->id, AGENT_ERR_NOT_FOUND, "no running exec %" PRId64, m->kill.exec);
        if (sig < 0 || sig >= NSIG)
                return agent_send_error(a, m->id, AGENT_ERR_INVALID, "field 'signal' is out of range");

        /* Once the main process is gone its group has been killed already. */
        if (!e->exited && kill(-e->pid, sig) < 0 && errno != ESRCH)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "kill exec %" PRId64 ": %s", e->id, strerror(errno));

        log_info("Exec %" PRId64 ": sent signal %d", e->id, sig);
        return agent_send_ok(a, m->id, -1);
}

static void exec_mark_exited(Agent *a, Exec *e, int status) {
        e->exited = true;
        e->status = status;
        e->grace_deadline_ms = now_monotonic_ms() + AGENT_EXEC_GRACE_MS;
        /* Before its `exit`: a host waits for these replies first. */
        exec_flush_acks(a, e, AGENT_ERR_STATE, "has exited: its stdin was not read");
        exec_close_stdin(e);
}

int exec_handle_resize(Agent *a, const AgentMsg *m) {
        Exec *e = exec_find(a, m->resize.exec);
        struct winsize ws = { .ws_row = (unsigned short) m->resize.rows, .ws_col = (unsigned short) m->resize.cols };

        if (!e)
                return agent_send_error(a, m->id, AGENT_ERR_NOT_FOUND, "no running exec %" PRId64, m->resize.exec);
        if (!e->pty)
                return agent_send_error(a, m->id, AGENT_ERR_STATE, "exec %" PRId64 " has no terminal", e->id);
        /* The kernel sends SIGWINCH to the terminal's foreground process group. */
        if (e->stdout_fd >= 0 && ioctl(e->stdout_fd, TIOCSWINSZ, &ws) < 0)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "resize exec %" PRId64 ": %s", e->id, strerror(errno));
        return agent_send_ok(a, m->id, -1);
}

void exec_reap_children(Agent *a) {
        for (;;) {
                siginfo_t si = {};
                int status;
                Exec *e;

                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != ECHILD)
                                log_warning_errno(errno, "waitid() failed: %m");
                        return;
                }
                if (si.si_pid <= 0)
                        return;

                /* Kill the rest of the group while the zombie still holds its pgid. */
                e = exec_find_pid(a, si.si_pid);
                if (e)
                        (void) kill(-e->pid, SIGKILL);

                if (waitpid(si.si_pid, &status, 0) < 0) {
                        if (errno == EINTR)
                                continue;
                        log_warning_errno(errno, "waitpid(%d) failed: %m", (int) si.si_pid);
                        return;
                }
                if (e) {
                        log_debug("Exec %" PRId64 ": pid %d exited (status 0x%x)", e->id, (int) e->pid, status);
                        exec_mark_exited(a, e, status);
                } else
                        log_debug("Reaped process %d", (int) si.si_pid);
        }
}

int exec_add_pollfds(Agent *a, PollSet *s) {
        for (Exec *e = a->execs; e; e = e->next) {
                bool read_output = !agent_stream_backpressured(a, e->id);
                e->pfd_in = e->pfd_out = e->pfd_err = -1;

                if (read_output && e->stdout_fd >= 0 && (e->pfd_out = poll_set_add(s, e->stdout_fd, POLLIN)) < 0)
                        return e->pfd_out;
                if (read_output && e->stderr_fd >= 0 && (e->pfd_err = poll_set_add(s, e->stderr_fd, POLLIN)) < 0)
                        return e->pfd_err;
                if (e->stdin_fd >= 0 && e->stdin_off < e->stdin_len &&
                    (e->pfd_in = poll_set_add(s, e->stdin_fd, POLLOUT)) < 0)
                        return e->pfd_in;
        }
        return 0;
}

static void exec_read_stream(Agent *a, Exec *e, bool is_stderr) {
        static uint8_t buf[AGENT_PIPE_READ_MAX];
        int *fd = is_stderr ? &e->stderr_fd : &e->stdout_fd;
        size_t want = MIN(sizeof(buf), agent_chunk_max(a)), send;
        ssize_t n;

        n = read(*fd, buf, want);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                /* EIO: every process let go of the terminal's slave (the terminal's EOF). */
                if (!(e->pty && errno == EIO))
                        log_warning_errno(errno, "Exec %" PRId64 ": cannot read %s: %m", e->id,
                                          is_stderr ? "stderr" : "stdout");
                *fd = safe_close(*fd);
                return;
        }
        if (n == 0) {
                *fd = safe_close(*fd);
                return;
        }

        if (is_stderr)
                e->stderr_bytes += (uint64_t) n;
        else
                e->stdout_bytes += (uint64_t) n;

        send = (size_t) MIN((uint64_t) n, e->max_output - MIN(e->sent, e->max_output));
        if (send < (size_t) n)
                e->truncated = true;
        if (send == 0 || e->detached)
                return;
        e->sent += send;

        (void) agent_send_output(a, e->id, e->pty ? AGENT_STREAM_PTY : is_stderr ? AGENT_STREAM_STDERR : AGENT_STREAM_STDOUT,
                                 buf, send);
}

void exec_dispatch_pollfds(Agent *a, const PollSet *s) {
        for (Exec *e = a->execs; e; e = e->next) {
                if (e->pfd_out >= 0 && e->stdout_fd >= 0 && s->fds[e->pfd_out].fd == e->stdout_fd &&
                    s->fds[e->pfd_out].revents)
                        exec_read_stream(a, e, false);
                if (e->pfd_err >= 0 && e->stderr_fd >= 0 && s->fds[e->pfd_err].fd == e->stderr_fd &&
                    s->fds[e->pfd_err].revents)
                        exec_read_stream(a, e, true);
                if (e->pfd_in >= 0 && e->stdin_fd >= 0 && s->fds[e->pfd_in].fd == e->stdin_fd &&
                    s->fds[e->pfd_in].revents)
                        exec_write_stdin(a, e);
                e->pfd_in = e->pfd_out = e->pfd_err = -1;
        }
}

int64_t exec_next_deadline(const Agent *a) {
        int64_t d = INT64_MAX;

        for (const Exec *e = a->execs; e; e = e->next) {
                if (e->exited) {
                        if (e->stdout_fd < 0 && e->stderr_fd < 0)
                                return 0; /* finish it right away */
                        d = MIN(d, e->grace_deadline_ms);
                } else if (e->deadline_ms > 0 && !e->timed_out)
                        d = MIN(d, e->deadline_ms);
        }
        return d;
}

static void exec_finish(Agent *a, Exec *e) {
        AgentMsg m = { .type = AGENT_MSG_EXIT, .id = e->id };

        if (e->detached) {
                log_info("Exec %" PRId64 " of an earlier host session ended", e->id);
                return;
        }

        if (WIFEXITED(e->status)) {
                m.exit.code = WEXITSTATUS(e->status);
                m.exit.signal = 0;
        } else {
                m.exit.code = -1;
                m.exit.signal = WIFSIGNALED(e->status) ? WTERMSIG(e->status) : 0;
        }
        m.exit.duration_ms = now_monotonic_ms() - e->start_ms;
        m.exit.timed_out = e->timed_out;
        m.exit.truncated = e->truncated;
        m.exit.stdout_bytes = (int64_t) e->stdout_bytes;
        m.exit.stderr_bytes = (int64_t) e->stderr_bytes;
        m.exit.error = e->error;

        log_info("Exec %" PRId64 ": exit code %" PRId64 " signal %" PRId64 "%s after %" PRId64 " ms", e->id,
                 m.exit.code, m.exit.signal, e->timed_out ? " (timed out)" : "", m.exit.duration_ms);
        (void) agent_send(a, &m);
}

void exec_process_timers(Agent *a) {
        int64_t now = now_monotonic_ms();
        Exec *e, *next;

        for (e = a->execs; e; e = next) {
                next = e->next;

                if (!e->exited && e->deadline_ms > 0 && !e->timed_out && now >= e->deadline_ms) {
                        log_info("Exec %" PRId64 ": timed out, killing its process group", e->id);
                        e->timed_out = true;
                        (void) kill(-e->pid, SIGKILL);
                }

                if (e->exited && ((e->stdout_fd < 0 && e->stderr_fd < 0) || now >= e->grace_deadline_ms)) {
                        exec_finish(a, e);
                        exec_unlink(a, e);
                        exec_free(e);
                }
        }
}

void exec_detach_all(Agent *a) {
        for (Exec *e = a->execs; e; e = e->next) {
                if (e->detached)
                        continue;
                log_info("Exec %" PRId64 " belongs to an earlier host session: killing it", e->id);
                e->detached = true;
                if (!e->exited)
                        (void) kill(-e->pid, SIGKILL);
        }
}

void exec_kill_all(Agent *a) {
        for (Exec *e = a->execs; e; e = e->next)
                if (!e->exited)
                        (void) kill(-e->pid, SIGKILL);
}

void exec_free_all(Agent *a) {
        exec_kill_all(a);
        while (a->execs) {
                Exec *e = a->execs;
                a->execs = e->next;
                exec_free(e);
        }
        a->n_execs = 0;
}
