/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* terminal.c: a browser terminal's seat.exec, run by a thread of its own (see terminal.h). */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "bytes.h"
#include "http-parse.h"
#include "terminal.h"
#include "seatd-socket.h"
#include "worker.h"

/* An output event is a 64 KiB chunk at most, in base64, in a JSON line. */
#define TERMINAL_FRAME_MAX (128u * 1024u)
#define STDIN_CHUNK_MAX (16u * 1024u)
#define EXEC_ID 2

struct Terminal {
        WorkerSeat base; /* its lock: everything below too */
        Bytes out, in;
        int rows, cols; /* the size to send; 0: sent */
};

static const WorkerReplyEnds reply_ends = {
        .too_long = "seatd sent a line too long for a terminal.",
        .not_reply = "seatd sent what a terminal cannot show.",
        .closed = "seatd closed the terminal's connection.",
};

/* hello and the shell, in one round trip. */
static int start_exec(Terminal *t, int fd, int rows, int cols) {
        _cleanup_json_ json_object *hello = json_object_new_object(), *p = json_object_new_object();
        json_object *argv = json_object_new_array(), *env = json_object_new_array(), *pty = json_object_new_object();
        if (!hello || !p || !argv || !env || !pty) {
                json_object_put(argv);
                json_object_put(env);
                json_object_put(pty);
                return -ENOMEM;
        }
        json_object_object_add(hello, "version", json_object_new_int(CONTROL_PROTO_VERSION));
        json_object_array_add(argv, json_object_new_string("/bin/sh"));
        json_object_array_add(argv, json_object_new_string("-l"));
        json_object_array_add(env, json_object_new_string("TERM=xterm-256color"));
        json_object_object_add(pty, "rows", json_object_new_int(rows));
        json_object_object_add(pty, "cols", json_object_new_int(cols));
        json_object_object_add(p, "seat", json_object_new_string(t->base.seat));
        json_object_object_add(p, "token", json_object_new_string(t->base.token));
        json_object_object_add(p, "argv", argv);
        json_object_object_add(p, "env", env);
        json_object_object_add(p, "pty", pty);
        json_object_object_add(p, "stdin_live", json_object_new_boolean(true));
        int r = seatd_socket_send(fd, 1, "hello", hello);
        if (r >= 0)
                r = seatd_socket_send(fd, EXEC_ID, "seat.exec", p);
        /* (the request's copy of the token goes with p) */
        return r;
}

/* A message from seatd: output, the end, or a follow-up's answer. Returns 1 when the
 * terminal has ended, 0 to go on, -EPROTO for what seatd would not send. */
static int on_message(Terminal *t, ControlMsg *m, unsigned *inflight) {
        if (m->id == 1) {
                if (m->kind == CONTROL_ERROR) {
                        worker_seat_end(&t->base, -1, "seatd refused this connection: %s", m->error_message ? m->error_message : "?");
                        return 1;
                }
                return 0;
        }
        if (m->id != EXEC_ID) {
                /* seat.exec.stdin / .resize: an error means the input was not delivered;
                 * the shell's end (or seatd's) follows and says why. */
                if (*inflight > 0 && m->kind != CONTROL_EVENT)
                        (*inflight)--;
                return 0;
        }
        if (m->kind == CONTROL_EVENT) {
                const char *stream = NULL;
                _cleanup_free_ void *data = NULL;
                size_t len = 0;
                if (!m->type || strcmp(m->type, "output") != 0)
                        return 0; /* progress and what comes later */
                if (json_get_string(m->body, "stream", true, 16, &stream) < 0 ||
                    json_get_base64(m->body, "data", true, TERMINAL_FRAME_MAX, &data, &len) < 0)
                        return -EPROTO;
                pthread_mutex_lock(&t->base.lock);
                /* The thread reads seatd only while there is room (see the poll), so this
                 * fits; a chunk larger than the rest of the room still goes in whole. */
                int r = bytes_append(&t->out, data, len, TERMINAL_OUT_CAP + TERMINAL_FRAME_MAX);
                pthread_mutex_unlock(&t->base.lock);
                worker_seat_wake_loop(&t->base);
                return r < 0 ? r : 0;
        }
        if (m->kind == CONTROL_ERROR) {
                if (m->error_code && !strcmp(m->error_code, "denied"))
                        worker_seat_end(&t->base, -1,
                                        "This seat's token no longer opens it (it was reset or released): the terminal has ended.");
                else
                        worker_seat_end(&t->base, -1, "The terminal ended: %s", m->error_message ? m->error_message : "?");
                return 1;
        }
        int64_t code = -1, sig = 0;
        (void) json_get_int64(m->body, "code", false, INT32_MIN, INT32_MAX, &code);
        (void) json_get_int64(m->body, "signal", false, 0, 64, &sig);
        if (sig)
                worker_seat_end(&t->base, (int) code, "The shell was killed by signal %d.", (int) sig);
        else
                worker_seat_end(&t->base, (int) code, "The shell exited with status %d.", (int) code);
        return 1;
}

/* Queued input and the latest size to seatd, while fewer than TERMINAL_INFLIGHT_MAX are
 * unanswered. */
static int send_pending(Terminal *t, int fd, int64_t *next_id, unsigned *inflight) {
        while (*inflight < TERMINAL_INFLIGHT_MAX) {
                unsigned char chunk[STDIN_CHUNK_MAX];
                size_t n = 0;
                int rows = 0, cols = 0;
                pthread_mutex_lock(&t->base.lock);
                if (t->rows) {
                        rows = t->rows, cols = t->cols;
                        t->rows = t->cols = 0;
                } else if (t->in.len) {
                        n = MIN(t->in.len, sizeof(chunk));
                        memcpy(chunk, t->in.data, n);
                        bytes_take(&t->in, n);
                }
                pthread_mutex_unlock(&t->base.lock);
                if (!rows && !n)
                        return 0;
                _cleanup_json_ json_object *p = json_object_new_object();
                _cleanup_free_ char *b64 = NULL;
                if (!p)
                        return -ENOMEM;
                json_object_object_add(p, "exec", json_object_new_int64(EXEC_ID));
                if (rows) {
                        json_object_object_add(p, "rows", json_object_new_int(rows));
                        json_object_object_add(p, "cols", json_object_new_int(cols));
                } else {
                        if (base64_encode(chunk, n, &b64, NULL) < 0)
                                return -ENOMEM;
                        json_object_object_add(p, "data", json_object_new_string(b64));
                }
                int r = seatd_socket_send(fd, (*next_id)++, rows ? "seat.exec.resize" : "seat.exec.stdin", p);
                sodium_memzero(chunk, n);
                if (r < 0)
                        return r;
                (*inflight)++;
                if (!rows)
                        worker_seat_wake_loop(&t->base); /* room for more input */
        }
        return 0;
}

static void *terminal_thread(void *p) {
        Terminal *t = p;
        _cleanup_(frame_reader_freep) FrameReader *rd = frame_reader_new(TERMINAL_FRAME_MAX + 4096);
        _cleanup_close_ int fd = -EBADF;
        int64_t next_id = EXEC_ID + 1;
        unsigned inflight = 0;
        int r;

        pthread_mutex_lock(&t->base.lock);
        int rows = t->rows, cols = t->cols;
        t->rows = t->cols = 0;
        pthread_mutex_unlock(&t->base.lock);
        if (!rd)
                return worker_seat_end(&t->base, -1, "out of memory"), NULL;
        fd = seatd_socket_connect(t->base.socket_path, 0);
        if (fd < 0)
                return worker_seat_end(&t->base, -1, "seatd cannot be reached now (%s): try again in a moment.", strerror(-fd)), NULL;
        r = start_exec(t, fd, rows, cols);
        sodium_memzero(t->base.token, sizeof(t->base.token)); /* seatd has it; nothing here needs it again */
        if (r < 0)
                return worker_seat_end(&t->base, -1, "cannot ask seatd for the shell: %s", strerror(-r)), NULL;
        for (;;) {
                pthread_mutex_lock(&t->base.lock);
                bool stop = t->base.stop, room = t->out.len < TERMINAL_OUT_CAP;
                pthread_mutex_unlock(&t->base.lock);
                if (stop)
                        break;
                r = send_pending(t, fd, &next_id, &inflight);
                if (r < 0) {
                        worker_seat_end(&t->base, -1, "seatd closed the terminal's connection (%s).", strerror(-r));
                        break;
                }
                _cleanup_control_msg_ ControlMsg *m = NULL;
                r = worker_next_reply(&t->base.worker, fd, rd, room, 0, &m);
                if (r > 0 && (r = on_message(t, m, &inflight)) < 0)
                        r = -EBADMSG;
                if (r == 0)
                        continue;
                if (r > 0)
                        break;
                worker_seat_end_reply(&t->base, r, &reply_ends);
                break;
        }
        return NULL;
}

int terminal_start(const TerminalSpec *spec, Terminal **ret) {
        if (spec->rows < 1 || spec->rows > TERMINAL_DIM_MAX || spec->cols < 1 || spec->cols > TERMINAL_DIM_MAX ||
            !worker_seat_fits(spec->socket_path, spec->seat, spec->token))
                return -EINVAL;
        _cleanup_(terminal_freep) Terminal *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        worker_seat_init(&t->base, spec->socket_path, spec->seat, spec->token, spec->ctx);
        t->rows = spec->rows;
        t->cols = spec->cols;
        int r = worker_start(&t->base.worker, terminal_thread, t);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(t);
        return 0;
}

Terminal *terminal_free(Terminal *t) {
        if (!t)
                return NULL;
        worker_seat_done(&t->base);
        if (t->in.data)
                sodium_memzero(t->in.data, t->in.cap); /* typed input: passwords too */
        free(t->in.data);
        free(t->out.data);
        return mfree(t);
}

int terminal_input(Terminal *t, const void *data, size_t len) {
        pthread_mutex_lock(&t->base.lock);
        int r = t->base.ended ? -EPIPE : bytes_append(&t->in, data, len, TERMINAL_IN_CAP);
        pthread_mutex_unlock(&t->base.lock);
        if (r >= 0)
                worker_wake(&t->base.worker);
        return r;
}

bool terminal_input_room(Terminal *t) {
        pthread_mutex_lock(&t->base.lock);
        bool room = t->in.len < TERMINAL_IN_CAP / 2;
        pthread_mutex_unlock(&t->base.lock);
        return room;
}

int terminal_resize(Terminal *t, int rows, int cols) {
        if (rows < 1 || rows > TERMINAL_DIM_MAX || cols < 1 || cols > TERMINAL_DIM_MAX)
                return -EINVAL;
        pthread_mutex_lock(&t->base.lock);
        t->rows = rows;
        t->cols = cols;
        pthread_mutex_unlock(&t->base.lock);
        worker_wake(&t->base.worker);
        return 0;
}

size_t terminal_take_output(Terminal *t, void *buf, size_t max) {
        pthread_mutex_lock(&t->base.lock);
        size_t n = MIN(max, t->out.len);
        bool was_full = t->out.len >= TERMINAL_OUT_CAP;
        if (n > 0) {
                memcpy(buf, t->out.data, n);
                bytes_take(&t->out, n);
        }
        bool room = t->out.len < TERMINAL_OUT_CAP;
        pthread_mutex_unlock(&t->base.lock);
        if (was_full && room)
                worker_wake(&t->base.worker); /* it may read seatd again */
        return n;
}

bool terminal_has_output(Terminal *t) {
        pthread_mutex_lock(&t->base.lock);
        bool has = t->out.len > 0;
        pthread_mutex_unlock(&t->base.lock);
        return has;
}

bool terminal_ended(Terminal *t, int *ret_code, char *msg, size_t size) {
        pthread_mutex_lock(&t->base.lock);
        bool ended = t->base.ended && t->out.len == 0;
        if (ended) {
                *ret_code = t->base.code;
                snprintf(msg, size, "%s", t->base.why);
        }
        pthread_mutex_unlock(&t->base.lock);
        return ended;
}
