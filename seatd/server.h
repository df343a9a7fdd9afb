/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * seatd's control socket (docs/protocol-control.md): connections, peer credentials, the
 * method table, and jobs — long operations (import, pull) run on a worker thread and
 * post progress and their final reply back to the loop, never blocking it.
 */

#include <json-c/json.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "common/error.h"
#include "event.h"

typedef struct Server Server;
typedef struct Conn Conn;

typedef struct Request Request;
typedef struct JobInbox JobInbox;
/* Runs on a worker thread. Return 0 with *ret_result set, or < 0 with ret_error set. */
typedef int (*JobFn)(Request *req, void *data, json_object **ret_result, SeatError **ret_error);

struct Request {
        Server *server;
        Conn *conn;
        int64_t id;
        char *method;
        json_object *params;
        uid_t uid;
        bool operator;    /* may touch every seat without its token (operators, and facilitators for their methods) */
        bool facilitator; /* came in on the facilitator socket */
        atomic_bool cancelled; /* the client went away: a job should stop soon */
        bool answered;
        int64_t progress_ms;   /* private: last progress sent */
        void *job_data;        /* private */
        void (*job_free)(void *);
        JobFn job_fn;          /* private */
        JobInbox *inbox;       /* private: follow-up requests for this job (request_open_inbox) */
        Request *inbox_next;   /* private: the next follow-up in that inbox */
};

/* A handler answers at once (request_reply_*) or hands the request to a job. */
typedef int (*MethodFn)(Request *req);
typedef struct Method {
        const char *name;
        MethodFn fn;
        bool operator_only;
        /* Also served on the facilitator socket, with req->operator set: the dashboard's
         * methods. Nothing that runs code in a seat or changes the host is. */
        bool facilitator;
} Method;


int server_new(SeatConfig *config, EventLoop *loop, Server **ret, SeatError **ret_error);
Server *server_free(Server *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Server *, server_free)
/* Listen on config->socket_path (the operator socket: mode 0660, group admin_group when
 * it exists) and config->participant_socket_path (0666: token-scoped methods only, caps
 * per uid, hello and idle timeouts). */
int server_listen(Server *s, SeatError **ret_error);
int server_add_methods(Server *s, const Method *methods, size_t n);
SeatConfig *server_config(Server *s);
EventLoop *server_loop(Server *s);
/* Opaque per-daemon state for the method modules (the image store, the seat manager). */
/* What the method modules share (seatd's Manager), set once before listening. */
void server_set_userdata(Server *s, void *userdata);
void *server_userdata(Server *s);
/* Stop accepting work; returns when every job has ended. */
void server_shutdown(Server *s);

/* Replies (loop thread). Each takes ownership of result. */
int request_reply_result(Request *req, json_object *result);
int request_reply_error(Request *req, const char *code, const char *fmt, ...) _printf_(3, 4);
/* Maps err->code to a protocol code (ENOENT not_found, EEXIST exists, EACCES denied,
 * EINVAL invalid, EBUSY state, EBADMSG/EKEYREJECTED/EKEYEXPIRED verification, ECANCELED
 * cancelled, else io). */
int request_reply_seat_error(Request *req, const SeatError *err);
const char *seat_error_to_code(const SeatError *err);

/* Hand the request to a worker thread; data is freed with free_data after fn returns. */
int request_start_job(Request *req, JobFn fn, void *data, void (*free_data)(void *));
/* From a job: progress (rate-limited to about 10 a second, the last one always sent). */
void job_progress(Request *req, const char *what, uint64_t done, uint64_t total);
bool job_cancelled(Request *req);
/* From a job: an event the client must not miss (exec output); body is not consumed. */
void job_event(Request *req, const char *type, json_object *body);
/* An event that a client reading slowly may miss (like progress): for whole snapshots,
 * where the next one says all; it never grows the client's buffer past OUT_SOFT_CAP. */
void job_event_droppable(Request *req, const char *type, json_object *body);

/*
 * Follow-up requests: a job that takes more requests on its own connection while it runs
 * (seat.exec.stdin for a seat.exec with live stdin). Each follow-up stays in flight (so the
 * connection's cap of requests in flight bounds what waits) until the job answers it.
 *
 * request_open_inbox (loop, before request_start_job) gives req an inbox;
 * request_forward (loop) puts follow into the inbox of the job with id target on the same
 * connection, or answers it (not_found: no such job taking input; state: it has ended);
 * job_inbox_fd (job) is readable when something may be waiting; job_inbox_pop (job) takes
 * the oldest, or NULL; job_inbox_close (job) takes no more (what is still queued is
 * answered `state` when the job's request ends); job_reply / job_reply_error (job) answer a
 * popped follow-up (result is consumed).
 */
int request_open_inbox(Request *req);
int request_forward(Request *follow, int64_t target);
int job_inbox_fd(Request *req);
Request *job_inbox_pop(Request *req);
void job_inbox_close(Request *req);
void job_reply(Request *follow, json_object *result);
void job_reply_error(Request *follow, const char *code, const char *fmt, ...) _printf_(3, 4);
