/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatctl exec -i/-t and seatctl shell: a command in a seat with live stdin and, with -t,
 * a terminal. The local terminal goes to raw mode and comes back on every way out: a
 * normal end, "~." (escape.h), and SIGINT/SIGTERM/SIGHUP/SIGQUIT from elsewhere (the
 * handler restores it, then dies of the signal; seatd then kills the command). SIGWINCH
 * becomes seat.exec.resize. Output is written here as it comes; typed input goes out as
 * seat.exec.stdin, at most STDIN_INFLIGHT_MAX requests unanswered, so that a command that
 * does not read makes seatctl stop reading too, and nothing piles up anywhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "escape.h"
#include "seatctl.h"
#include "terminal.h"

#define STDIN_READ_MAX (16u * 1024u)
#define STDIN_INFLIGHT_MAX 8 /* seatd allows 16 requests in flight per connection, the exec is one */

static struct termios saved_termios;
static volatile sig_atomic_t termios_saved;
static int wake_pipe[2] = { -EBADF, -EBADF };

static void terminal_restore(void) {
        if (termios_saved)
                (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_termios);
        termios_saved = 0;
}

/* Async-signal-safe: put the terminal back, then die of the signal as if unhandled. */
static void on_fatal_signal(int sig) {
        if (termios_saved)
                (void) tcsetattr(STDIN_FILENO, TCSANOW, &saved_termios);
        termios_saved = 0;
        signal(sig, SIG_DFL);
        raise(sig);
}

static void on_winch(int sig) {
        int saved = errno;
        (void) !write(wake_pipe[1], "w", 1);
        errno = saved;
}

static int terminal_raw(void) {
        struct termios raw;
        if (tcgetattr(STDIN_FILENO, &saved_termios) < 0)
                return -errno;
        raw = saved_termios;
        cfmakeraw(&raw);
        termios_saved = 1;
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) < 0) { /* not FLUSH: typeahead is kept */
                termios_saved = 0;
                return -errno;
        }
        return 0;
}

static void install_signals(bool winch) {
        struct sigaction sa = { .sa_handler = on_fatal_signal };
        sigemptyset(&sa.sa_mask);
        int fatal[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
        for (size_t i = 0; i < ELEMENTSOF(fatal); i++)
                (void) sigaction(fatal[i], &sa, NULL);
        if (winch) {
                struct sigaction w = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
                sigemptyset(&w.sa_mask);
                (void) sigaction(SIGWINCH, &w, NULL);
        }
        signal(SIGPIPE, SIG_IGN);
}

static void window_size(int *rows, int *cols) {
        struct winsize ws = {};
        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
                ws = (struct winsize) { .ws_row = 24, .ws_col = 80 };
        *rows = ws.ws_row;
        *cols = ws.ws_col;
}

static json_object *follow_params(int64_t exec_id) {
        json_object *p = json_object_new_object();
        if (p)
                json_object_object_add(p, "exec", json_object_new_int64(exec_id));
        return p;
}

static int send_stdin(CtlClient *c, int64_t exec_id, const uint8_t *data, size_t n, bool eof, SeatError **ret_error) {
        _cleanup_json_ json_object *p = follow_params(exec_id);
        if (ctl_params_add_data(p, data, n, eof) < 0)
                return -ENOMEM;
        return ctl_send(c, "seat.exec.stdin", p, NULL, ret_error);
}

static int send_resize(CtlClient *c, int64_t exec_id, SeatError **ret_error) {
        _cleanup_json_ json_object *p = follow_params(exec_id);
        int rows, cols;
        if (!p)
                return -ENOMEM;
        window_size(&rows, &cols);
        json_object_object_add(p, "rows", json_object_new_int(rows));
        json_object_object_add(p, "cols", json_object_new_int(cols));
        return ctl_send(c, "seat.exec.resize", p, NULL, ret_error);
}

/* The conversation: until the exec's final reply (1, *ret_result), "~." (0), or an error. */
static int terminal_loop(CtlClient *c, int64_t exec_id, bool interactive_tty, bool tty, json_object **ret_result,
                         SeatError **ret_error) {
        EscapeState esc = ESCAPE_STATE_INIT;
        unsigned inflight = 0;
        bool stdin_open = true;

        for (;;) {
                _cleanup_control_msg_ ControlMsg *m = NULL;
                int r = ctl_next(c, false, &m, ret_error);
                if (r < 0)
                        return r;
                if (r == 0) {
                        struct pollfd p[3] = {
                                { .fd = ctl_client_fd(c), .events = POLLIN },
                                { .fd = wake_pipe[0], .events = POLLIN },
                                { .fd = stdin_open && inflight < STDIN_INFLIGHT_MAX ? STDIN_FILENO : -1, .events = POLLIN },
                        };
                        if (poll(p, 3, -1) < 0) {
                                if (errno == EINTR)
                                        continue;
                                return seat_error_set(ret_error, errno, "poll: %m");
                        }
                        if (p[1].revents) {
                                char buf[64];
                                (void) !read(wake_pipe[0], buf, sizeof(buf));
                                if (tty) {
                                        if (send_resize(c, exec_id, ret_error) < 0)
                                                return -EIO;
                                        inflight++;
                                }
                        }
                        if (p[2].revents) {
                                uint8_t in[STDIN_READ_MAX], out[STDIN_READ_MAX + 1];
                                size_t n_out = 0;
                                ssize_t n = read(STDIN_FILENO, in, sizeof(in));
                                if (n < 0 && errno != EINTR && errno != EAGAIN)
                                        n = 0; /* stdin gone: as its end */
                                if (n == 0) {
                                        stdin_open = false;
                                        if (send_stdin(c, exec_id, NULL, 0, true, ret_error) < 0)
                                                return -EIO;
                                        inflight++;
                                } else if (n > 0) {
                                        bool detach = interactive_tty && escape_feed(&esc, in, (size_t) n, out, &n_out) > 0;
                                        if (!interactive_tty) {
                                                memcpy(out, in, (size_t) n);
                                                n_out = (size_t) n;
                                        }
                                        if (n_out > 0) {
                                                if (send_stdin(c, exec_id, out, n_out, false, ret_error) < 0)
                                                        return -EIO;
                                                inflight++;
                                        }
                                        if (detach)
                                                return 0;
                                }
                        }
                        if (p[0].revents) {
                                r = ctl_next(c, true, &m, ret_error);
                                if (r < 0)
                                        return r;
                        }
                        if (!m)
                                continue;
                }
                if (m->id == exec_id) {
                        if (m->kind == CONTROL_EVENT) {
                                r = strcmp(m->type, "output") ? 0 : ctl_write_output(m->body);
                                if (r == -EPROTO)
                                        return seat_error_set(ret_error, EPROTO, "seatd sent bad output");
                                if (r < 0)
                                        return seat_error_set(ret_error, -r, "write the output: %s", strerror(-r));
                                continue;
                        }
                        if (m->kind == CONTROL_ERROR) {
                                _cleanup_free_ char *msg = log_escape(m->error_message, strlen(m->error_message), 2048);
                                return seat_error_set(ret_error, EREMOTEIO, "%s", msg ? msg : m->error_code);
                        }
                        if (m->kind == CONTROL_RESULT) {
                                *ret_result = TAKE_PTR(m->body);
                                return 1;
                        }
                        continue;
                }
                /* The answer to a stdin or resize: one fewer in flight. An error there
                 * (the command ended, or stopped reading) is told by the exec's own end. */
                if (m->kind == CONTROL_RESULT || m->kind == CONTROL_ERROR)
                        inflight = inflight > 0 ? inflight - 1 : 0;
        }
}

int terminal_exec(CtlClient *c, json_object *params, bool tty, json_object **ret_result, SeatError **ret_error) {
        bool local_tty = isatty(STDIN_FILENO);
        int64_t exec_id = 0;
        int r;

        if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return seat_error_set(ret_error, errno, "pipe: %m");
        json_object_object_add(params, "stdin_live", json_object_new_boolean(true));
        if (tty) {
                int rows, cols;
                window_size(&rows, &cols);
                json_object *pty = json_object_new_object();
                json_object_object_add(pty, "rows", json_object_new_int(rows));
                json_object_object_add(pty, "cols", json_object_new_int(cols));
                json_object_object_add(params, "pty", pty);
        }
        install_signals(tty);
        r = ctl_send(c, "seat.exec", params, &exec_id, ret_error);
        if (r < 0)
                return r;
        /* Raw only with a terminal on both ends: keystrokes go to the remote one as typed. */
        if (tty && local_tty && terminal_raw() < 0)
                return seat_error_set(ret_error, errno, "cannot put the terminal in raw mode: %m");
        r = terminal_loop(c, exec_id, tty && local_tty, tty, ret_result, ret_error);
        terminal_restore();
        if (r == 0)
                fprintf(stderr, "\r\nseatctl: disconnected (~.); the command was killed in the guest\n");
        return r;
}
