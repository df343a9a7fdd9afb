/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A thread of seat-web's own that sleeps in poll() on one socket and on its wake eventfd:
 * the event loop queues work under its owner's lock, then wakes it (a browser terminal,
 * a relayed WebSocket). The owner keeps its stop flag under its own lock; worker_stop()
 * sets it, wakes the thread and joins it.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/control-proto.h"
#include "common/jsonframe.h"
#include "common/macro.h"
#include "http-parse.h"

typedef struct Worker {
        pthread_t thread;
        bool started;
        int wake_fd; /* eventfd: the loop queued something, or asks to stop */
} Worker;

/* Opens the wake eventfd and starts fn(arg): 0 or -errno. On failure worker_stop() still
 * has to run (it closes what was opened). */
int worker_start(Worker *w, void *(*fn)(void *), void *arg);

/* From the loop: the thread looks at its queue again. */
void worker_wake(Worker *w);

/* From the thread: poll fd for events and the wake eventfd (drained here) up to timeout_ms
 * (-1: no limit). fd's revents (0 when woken, timed out or interrupted) or -errno. */
int worker_wait(Worker *w, int fd, short events, int timeout_ms);

/* From the thread: worker_wait() on fd (for input only when room), then what came read into
 * rd. 0 to look at rd and the queue again (also when woken or timed out), -ECONNRESET when
 * seatd closed the connection or the read failed, or poll's -errno. */
int worker_fill(Worker *w, int fd, FrameReader *rd, bool room, int timeout_ms);

/* From the thread: the next reply of seatd's, what is already read first, then the socket
 * when there is room (rd full of what the owner has not taken yet: woken only). 1 with *ret
 * set; 0 to look at the queue again; -E2BIG: a line over rd's cap; -EBADMSG: not a reply;
 * -ETIMEDOUT: nothing read by deadline_ms (monotonic; 0: none), checked only when nothing
 * is buffered; else worker_fill()'s -errno (worker_seat_end_reply() words each one). */
int worker_next_reply(Worker *w, int fd, FrameReader *rd, bool room, int64_t deadline_ms, ControlMsg **ret);

/* Sets *stop under lock, wakes and joins the thread, closes the eventfd. */
void worker_stop(Worker *w, pthread_mutex_t *lock, bool *stop);

/* What a browser terminal (terminal.c) and a relayed WebSocket (ws-forward.c) hold alike:
 * a worker that speaks to seatd's participant socket as one seat, with the seat's token
 * until seatd has it, and the end it came to, with why (for the page or the log). */
struct lws_context;

typedef struct WorkerSeat {
        Worker worker;
        struct lws_context *ctx; /* woken when there is something for the loop */
        char socket_path[108];
        char seat[WEB_SEAT_ID_MAX + 1];
        char token[WEB_TOKEN_HEX + 1];

        pthread_mutex_t lock; /* the owner's shared state, and everything below */
        bool stop, ended;
        int code; /* the end's exit code (a terminal's shell's) */
        char why[256];
} WorkerSeat;

/* Whether socket_path, seat and token fit a WorkerSeat: checked before the owner is made. */
bool worker_seat_fits(const char *socket_path, const char *seat, const char *token);
/* The lock made, the strings copied (worker_seat_fits() first). */
void worker_seat_init(WorkerSeat *s, const char *socket_path, const char *seat, const char *token,
                      struct lws_context *ctx);
/* Stops and joins the thread, wipes the token, destroys the lock. */
void worker_seat_done(WorkerSeat *s);
/* From the thread: the loop has something to look at. */
void worker_seat_wake_loop(WorkerSeat *s);
/* From the thread: the end, with code and why; only the first one counts. */
void worker_seat_end(WorkerSeat *s, int code, const char *fmt, ...) _printf_(3, 4);

/* How an owner words each way worker_next_reply() fails: whole sentences, shown or logged as
 * they are. NULL: that way cannot come for this owner ("poll: ERRNO" is said then). */
typedef struct WorkerReplyEnds {
        const char *too_long;  /* -E2BIG */
        const char *not_reply; /* -EBADMSG */
        const char *timed_out; /* -ETIMEDOUT: only with a deadline */
        const char *closed;    /* -ECONNRESET */
} WorkerReplyEnds;

/* From the thread: the end (code -1) for worker_next_reply()'s failure r, in the owner's
 * words; poll's own failure as "poll: ERRNO". */
void worker_seat_end_reply(WorkerSeat *s, int r, const WorkerReplyEnds *ends);
