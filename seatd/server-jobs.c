/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* server-jobs.c: jobs on worker threads, their mailbox to the loop, and follow-up inboxes. */
#include "config.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/strprintf.h"
#include "common/log.h"
#include "server-internal.h"

/* ---- jobs ---- */

void mail_post_item(Server *s, Request *req, char *line, size_t len, bool final, bool job_end, bool droppable) {
        MailItem *m = calloc(1, sizeof(*m));
        pthread_mutex_lock(&s->lock);
        if (m) {
                *m = (MailItem) { .req = req, .line = line, .len = len, .final = final, .job_end = job_end,
                                  .droppable = droppable };
                *s->mail_tail = m;
                s->mail_tail = &m->next;
        } else
                free(line); /* out of memory: a final reply is lost, the job still ends below */
        if (job_end)
                s->jobs--;
        /* The loop is woken before the unlock: once a job's end is posted, server_shutdown()
         * may see no jobs left and free s, so this thread must not touch s after the unlock
         * (ASan caught the wake_fd read after the free at seatd's exit). An eventfd write
         * does not block here (the counter is far from overflowing). */
        uint64_t one = 1;
        (void) !write(s->wake_fd, &one, sizeof(one));
        pthread_cond_broadcast(&s->jobs_done);
        pthread_mutex_unlock(&s->lock);
}

static void mail_post(Server *s, Request *req, char *line, size_t len, bool final, bool droppable) {
        mail_post_item(s, req, line, len, final, final, droppable);
}

int mail_drain(EventSource *src, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        uint64_t n;
        (void) !read(fd, &n, sizeof(n));

        pthread_mutex_lock(&s->lock);
        MailItem *m = s->mail_head;
        s->mail_head = NULL;
        s->mail_tail = &s->mail_head;
        pthread_mutex_unlock(&s->lock);

        while (m) {
                MailItem *next = m->next;
                if (m->line)
                        (void) conn_queue(m->req->conn, m->line, m->len, m->droppable);
                if (m->final)
                        request_free(m->req);
                free(m->line);
                free(m);
                m = next;
        }
        return 0;
}

static void *job_thread(void *p) {
        Request *req = p;
        Server *s = req->server;
        _cleanup_error_ SeatError *err = NULL;
        json_object *result = NULL;
        char *line = NULL;
        size_t len = 0;

        int r = req->job_fn(req, req->job_data, &result, &err);
        if (r >= 0)
                r = control_format_result(req->id, result, &line, &len);
        else
                r = control_format_error(req->id, seat_error_to_code(err),
                                         err ? err->message : strerror(-r), &line, &len);
        json_object_put(result);
        if (r < 0)
                (void) control_format_error(req->id, CONTROL_ERR_INTERNAL, "cannot format the reply", &line, &len);
        mail_post(s, req, line, len, true, false);
        return NULL;
}

int request_start_job(Request *req, JobFn fn, void *data, void (*free_data)(void *)) {
        Server *s = req->server;
        pthread_attr_t attr;
        pthread_t t;

        req->job_fn = fn;
        req->job_data = data;
        req->job_free = free_data;
        req->answered = true; /* the job answers */
        pthread_mutex_lock(&s->lock);
        s->jobs++;
        pthread_mutex_unlock(&s->lock);

        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int r = -pthread_create(&t, &attr, job_thread, req);
        pthread_attr_destroy(&attr);
        if (r < 0) {
                pthread_mutex_lock(&s->lock);
                s->jobs--;
                pthread_mutex_unlock(&s->lock);
                req->answered = false;
                return request_reply_error(req, CONTROL_ERR_IO, "cannot start a worker: %s", strerror(-r));
        }
        return 0;
}

void job_progress(Request *req, const char *what, uint64_t done, uint64_t total) {
        int64_t now = now_monotonic_ms();
        if (done != total && now - req->progress_ms < 100)
                return;
        req->progress_ms = now;
        char *line = NULL;
        size_t len;
        if (control_format_progress(req->id, what, done, total, &line, &len) < 0)
                return;
        mail_post(req->server, req, line, len, false, true);
}

static void post_event(Request *req, const char *type, json_object *body, bool droppable) {
        char *line = NULL;
        size_t len;
        if (control_format_event(req->id, type, body, &line, &len) < 0)
                return;
        mail_post(req->server, req, line, len, false, droppable);
}

void job_event(Request *req, const char *type, json_object *body) {
        post_event(req, type, body, false);
}

void job_event_droppable(Request *req, const char *type, json_object *body) {
        post_event(req, type, body, true);
}

bool job_cancelled(Request *req) {
        return atomic_load(&req->cancelled) || atomic_load(&req->conn->gone);
}

/* ---- follow-up requests ---- */

int request_open_inbox(Request *req) {
        _cleanup_free_ JobInbox *b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (b->fd < 0)
                return -errno;
        b->owner = req;
        b->tail = &b->head;
        b->next = req->conn->inboxes;
        req->conn->inboxes = b;
        req->inbox = TAKE_PTR(b);
        return 0;
}

/* The owner's request ends (loop thread, its job has finished): whatever still waits in
 * its inbox is answered, and the inbox goes. */
void inbox_free(Request *req) {
        JobInbox *b = req->inbox;
        if (!b)
                return;
        for (JobInbox **p = &req->conn->inboxes; *p; p = &(*p)->next)
                if (*p == b) {
                        *p = b->next;
                        break;
                }
        req->inbox = NULL;
        pthread_mutex_lock(&req->server->lock);
        Request *f = b->head;
        b->head = NULL;
        b->closed = true;
        pthread_mutex_unlock(&req->server->lock);
        while (f) {
                Request *next = f->inbox_next;
                f->inbox_next = NULL;
                (void) request_reply_error(f, CONTROL_ERR_STATE, "request %lld has ended: this was not delivered",
                                           (long long) req->id);
                f = next;
        }
        safe_close(b->fd);
        free(b);
}

int request_forward(Request *follow, int64_t target) {
        JobInbox *b = NULL;
        for (JobInbox *i = follow->conn->inboxes; i; i = i->next)
                if (i->owner->id == target) {
                        b = i;
                        break;
                }
        if (!b)
                return request_reply_error(follow, CONTROL_ERR_NOT_FOUND,
                                           "no request %lld taking input on this connection (see seat.exec 'stdin_live')",
                                           (long long) target);
        Server *s = follow->server;
        pthread_mutex_lock(&s->lock);
        bool closed = b->closed;
        if (!closed) {
                follow->answered = true; /* the job answers */
                follow->inbox_next = NULL;
                *b->tail = follow;
                b->tail = &follow->inbox_next;
        }
        pthread_mutex_unlock(&s->lock);
        if (closed)
                return request_reply_error(follow, CONTROL_ERR_STATE, "request %lld has ended: this was not delivered",
                                           (long long) target);
        uint64_t one = 1;
        (void) !write(b->fd, &one, sizeof(one));
        return 0;
}

int job_inbox_fd(Request *req) {
        return req->inbox ? req->inbox->fd : -EBADF;
}

Request *job_inbox_pop(Request *req) {
        JobInbox *b = req->inbox;
        uint64_t n;
        if (!b)
                return NULL;
        (void) !read(b->fd, &n, sizeof(n)); /* before looking: a later push writes again */
        pthread_mutex_lock(&req->server->lock);
        Request *f = b->head;
        if (f) {
                b->head = f->inbox_next;
                if (!b->head)
                        b->tail = &b->head;
                f->inbox_next = NULL;
        }
        pthread_mutex_unlock(&req->server->lock);
        return f;
}

void job_inbox_close(Request *req) {
        if (!req->inbox)
                return;
        pthread_mutex_lock(&req->server->lock);
        req->inbox->closed = true;
        pthread_mutex_unlock(&req->server->lock);
}

void job_reply(Request *follow, json_object *result) {
        char *line = NULL;
        size_t len = 0;
        _cleanup_json_ json_object *o = result ? result : json_object_new_object();
        if (!o || control_format_result(follow->id, o, &line, &len) < 0)
                (void) control_format_error(follow->id, CONTROL_ERR_INTERNAL, "cannot format the reply", &line, &len);
        mail_post_item(follow->server, follow, line, len, true, false, false);
}

void job_reply_error(Request *follow, const char *code, const char *fmt, ...) {
        _cleanup_free_ char *message = NULL;
        char *line = NULL;
        size_t len = 0;
        va_list ap;
        va_start(ap, fmt);
        message = vstrprintf(fmt, ap);
        va_end(ap);
        (void) control_format_error(follow->id, code, message ? message : "failed", &line, &len);
        mail_post_item(follow->server, follow, line, len, true, false, false);
}
