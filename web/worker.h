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

#include "common/control-proto.h"
#include "common/jsonframe.h"

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
 * is buffered; else worker_fill()'s -errno. The owners word each of these their own way. */
int worker_next_reply(Worker *w, int fd, FrameReader *rd, bool room, int64_t deadline_ms, ControlMsg **ret);

/* Sets *stop under lock, wakes and joins the thread, closes the eventfd. */
void worker_stop(Worker *w, pthread_mutex_t *lock, bool *stop);
