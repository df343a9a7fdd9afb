/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The control server's own state, shared by its files and nobody else:
 *   server.c         connections, requests, dispatch, the server's life;
 *   server-listen.c  the three sockets: their directory, owner and mode, put in place atomically;
 *   server-jobs.c    jobs (worker threads that post replies to the loop's mailbox) and the
 *                    inboxes of follow-up requests (seat.exec.stdin and the like).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "common/jsonframe.h"
#include "server.h"

#define CONN_MAX 256
#define CONN_RESERVED_CONTROL 32 /* of CONN_MAX, only for the control socket */
#define FACILITATOR_CONN_MAX 64  /* seat-web needs a few: events, one call per worker */
#define CONN_INFLIGHT_MAX 16
#define OUT_SOFT_CAP (4u << 20)  /* above it, progress events are dropped */
#define OUT_HARD_CAP (64u << 20) /* above it, the client is too slow: disconnect */
/* The participant socket is open to every local user: its caps are per uid, so one user
 * cannot take every connection slot or pin seatd's memory with unread output. */
#define PARTICIPANT_OUT_CAP (16u << 20)   /* all buffered output of one uid */
#define HELLO_TIMEOUT_MS 10000            /* a connection that says nothing is closed */
/* One read of at most this much per connection and wakeup: requests are parsed on the
 * event loop, beside tamper detection, so one client streaming lines (5000 one-line
 * errors cost ~12 ms here) cannot hold the loop. The loop is level-triggered: the rest is
 * read on the next round, after the other ready sources. */
#define CONN_READ_MAX (16u * 1024u)
#define SWEEP_INTERVAL_S 1
#define METHODS_MAX 64

typedef struct MailItem {
        Request *req;
        char *line;
        size_t len;
        bool final;
        bool job_end; /* the final reply of a job (not of a follow-up) */
        bool droppable;
        struct MailItem *next;
} MailItem;

struct Conn {
        Server *server;
        int fd;
        EventSource *src;
        FrameReader *reader;
        char *out;
        size_t out_len, out_cap;
        struct ucred cred;
        bool operator;
        bool participant;   /* came in on the participant socket: token-scoped methods only */
        bool facilitator;   /* came in on the facilitator socket: Method.facilitator ones only */
        int64_t accepted_ms, active_ms;
        bool hello;
        bool closed;        /* fd gone; memory kept while requests hold references */
        atomic_bool gone;   /* read by jobs: nobody waits for their replies any more */
        bool close_after_flush;
        unsigned refs;
        unsigned inflight;
        JobInbox *inboxes;  /* jobs on this connection that take follow-ups (loop thread) */
        Conn *prev, *next;
};

struct JobInbox {
        Request *owner;
        int fd;               /* eventfd: written when a follow-up is queued */
        Request *head, **tail; /* under the server's lock */
        bool closed;           /* under the server's lock */
        JobInbox *next;        /* in owner->conn->inboxes */
};

typedef struct Listener {
        Server *server;
        const char *path;
        bool participant;
        bool facilitator;
        int fd;
        EventSource *src;
} Listener;

struct Server {
        SeatConfig *config;
        EventLoop *loop;
        Listener listeners[3]; /* the operator, participant and facilitator sockets */
        int sweep_fd;          /* timerfd: hello and idle timeouts */
        EventSource *sweep_src;
        Conn *conns;
        unsigned n_conns;
        Method methods[METHODS_MAX];
        size_t n_methods;
        void *userdata;

        int wake_fd; /* eventfd: jobs post to the mailbox */
        EventSource *wake_src;
        pthread_mutex_t lock;
        pthread_cond_t jobs_done;
        MailItem *mail_head, **mail_tail;
        unsigned jobs;
        bool shutting_down;
};

/* server.c */
void conn_unref(Conn *c);
void conn_close(Conn *c);
/* Queue a line for the client; droppable lines (progress) go when it reads slowly. */
int conn_queue(Conn *c, const char *line, size_t len, bool droppable);
Request *request_free(Request *req);
int server_accept(EventSource *src, int fd, uint32_t revents, void *userdata);
int server_sweep(EventSource *src, int fd, uint32_t revents, void *userdata);

/* server-jobs.c */
void mail_post_item(Server *s, Request *req, char *line, size_t len, bool final, bool job_end, bool droppable);
int mail_drain(EventSource *src, int fd, uint32_t revents, void *userdata);
/* The owner's request ends: what waits in its inbox is answered, and the inbox goes. */
void inbox_free(Request *req);
