/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* worker.c: a seat-web thread woken by an eventfd (worker.h). */
#include <errno.h>
#include <libwebsockets.h>
#include <poll.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/macro.h"
#include "worker.h"

int worker_start(Worker *w, void *(*fn)(void *), void *arg) {
        w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->wake_fd < 0)
                return negative_errno();
        int r = -pthread_create(&w->thread, NULL, fn, arg);
        if (r < 0)
                return r;
        w->started = true;
        return 0;
}

void worker_wake(Worker *w) {
        uint64_t one = 1;
        (void) !write(w->wake_fd, &one, sizeof(one));
}

int worker_wait(Worker *w, int fd, short events, int timeout_ms) {
        struct pollfd pf[2] = { { .fd = fd, .events = events }, { .fd = w->wake_fd, .events = POLLIN } };
        if (poll(pf, 2, timeout_ms) < 0)
                return errno == EINTR ? 0 : negative_errno();
        if (pf[1].revents & POLLIN) {
                uint64_t v;
                (void) !read(w->wake_fd, &v, sizeof(v));
        }
        return pf[0].revents;
}

int worker_fill(Worker *w, int fd, FrameReader *rd, bool room, int timeout_ms) {
        int ev = worker_wait(w, fd, room ? POLLIN : 0, timeout_ms);
        if (ev < 0)
                return ev;
        if (ev & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t n = frame_reader_fill(rd, fd);
                if (n == 0 || (n < 0 && n != -EAGAIN))
                        return -ECONNRESET;
        }
        return 0;
}

int worker_next_reply(Worker *w, int fd, FrameReader *rd, bool room, int64_t deadline_ms, ControlMsg **ret) {
        const char *frame;
        size_t len;
        int r = room ? frame_reader_next(rd, &frame, &len) : 0;
        if (r < 0)
                return r;
        if (r > 0) {
                ControlParseError perr;
                return control_msg_parse_reply(frame, len, ret, &perr) < 0 ? -EBADMSG : 1;
        }
        int wait = -1;
        if (deadline_ms > 0) {
                int64_t left = deadline_ms - now_monotonic_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                wait = (int) left;
        }
        return worker_fill(w, fd, rd, room, wait);
}

void worker_stop(Worker *w, pthread_mutex_t *lock, bool *stop) {
        if (w->started) {
                pthread_mutex_lock(lock);
                *stop = true;
                pthread_mutex_unlock(lock);
                worker_wake(w);
                (void) pthread_join(w->thread, NULL);
                w->started = false;
        }
        w->wake_fd = safe_close(w->wake_fd);
}

bool worker_seat_fits(const char *socket_path, const char *seat, const char *token) {
        return strlen(socket_path) < sizeof(((WorkerSeat *) NULL)->socket_path) && strlen(seat) <= WEB_SEAT_ID_MAX &&
               strlen(token) <= WEB_TOKEN_HEX;
}

void worker_seat_init(WorkerSeat *s, const char *socket_path, const char *seat, const char *token,
                      struct lws_context *ctx) {
        pthread_mutex_init(&s->lock, NULL);
        s->ctx = ctx;
        snprintf(s->socket_path, sizeof(s->socket_path), "%s", socket_path);
        snprintf(s->seat, sizeof(s->seat), "%s", seat);
        snprintf(s->token, sizeof(s->token), "%s", token);
}

void worker_seat_done(WorkerSeat *s) {
        worker_stop(&s->worker, &s->lock, &s->stop);
        sodium_memzero(s->token, sizeof(s->token));
        pthread_mutex_destroy(&s->lock);
}

void worker_seat_wake_loop(WorkerSeat *s) {
        if (s->ctx)
                lws_cancel_service(s->ctx);
}

void worker_seat_end(WorkerSeat *s, int code, const char *fmt, ...) {
        va_list ap;
        pthread_mutex_lock(&s->lock);
        if (!s->ended) {
                s->ended = true;
                s->code = code;
                va_start(ap, fmt);
                (void) vsnprintf(s->why, sizeof(s->why), fmt, ap);
                va_end(ap);
        }
        pthread_mutex_unlock(&s->lock);
        worker_seat_wake_loop(s);
}

void worker_seat_end_reply(WorkerSeat *s, int r, const WorkerReplyEnds *ends) {
        const char *why = r == -E2BIG ? ends->too_long
                : r == -EBADMSG ? ends->not_reply
                : r == -ETIMEDOUT ? ends->timed_out
                : r == -ECONNRESET ? ends->closed
                : NULL;
        if (why)
                worker_seat_end(s, -1, "%s", why);
        else
                worker_seat_end(s, -1, "poll: %s", strerror(-r));
}
