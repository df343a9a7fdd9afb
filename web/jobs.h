/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* seatd calls off the event loop: a few worker threads make them (seatd-link.c) while
 * libwebsockets keeps serving every other participant; the loop is woken
 * (lws_cancel_service) to finish each request when its answer is in. A slow seatd then
 * slows only the requests that wait for it. Only the loop thread touches connections and
 * frees jobs; a connection that closes while its call runs marks its job abandoned. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"
#include "http-parse.h"

struct lws;
struct lws_context;

/* seat.status, but JOB_FILE_PUT (seat.file_put) and JOB_FILE_GET (seat.file_get): a
 * chunk of an upload or a download (files.c). JOB_MCP_CHECK is seat-web's own check of an
 * idle MCP session (no connection waits for it). */
/* JOB_FORWARD: one proxied HTTP exchange with a server in the seat (forward-link.c), run by
 * a pool of its own (a slow guest must not hold up status pages). */
typedef enum JobKind { JOB_LOGIN, JOB_STATUS, JOB_MCP, JOB_MCP_CHECK, JOB_FILE_PUT, JOB_FILE_GET, JOB_FORWARD, JOB_FAC } JobKind;

typedef struct Job {
        struct Job *next;
        struct Job *active_next; /* jobs.c: while a worker has it */
        JobKind kind;
        struct lws *wsi;  /* valid while !abandoned; loop thread only */
        bool abandoned;   /* under the queue's lock */
        char seat[WEB_SEAT_ID_MAX + 1];
        char token[WEB_TOKEN_HEX + 1];
        char session[WEB_SESSION_ID_LEN + 1]; /* JOB_STATUS, JOB_MCP*: whose session */
        char peer[64];
        /* JOB_LOGIN by a one-time link: its id and expiry, to put it back when seatd
         * could not be asked (the link was taken before the call) */
        char link_id[WEB_SESSION_ID_LEN + 1];
        int64_t link_expires;
        /* JOB_FILE_*: the guest path, the chunk's offset; a put's bytes and whether it is
         * the last (data is the job's, freed with it) */
        char path[WEB_FILE_PATH_MAX + 1];
        uint64_t offset;
        bool final;
        unsigned char *data;
        size_t len;
        /* JOB_FORWARD: the target as the guest sees it, the cap on what comes back; the
         * request's bytes are data/len, the guest's come back in resp */
        char host[64];
        unsigned port;
        size_t max_response;
        uint8_t *resp;
        size_t resp_len;
        /* the answer */
        int r;            /* 0, -EACCES (seatd refused the token), -EREMOTEIO (seatd refused the
                           * request: code, message), or why seatd could not be asked */
        json_object *rec; /* the seat record (the call's result) when r == 0 */
        char code[32];
        char message[256];
        /* JOB_FAC (fac-http.c): the facilitator's side runs work on the worker in place of
         * a participant call; ctx, params, out and the strings are its own (params and
         * out freed with the job; secret wiped with it). */
        void (*work)(struct Job *job);
        void *ctx;
        int fac_route;
        json_object *params;
        char *out;
        size_t out_len;
        char method[40];
        char secret[1100];
} Job;

typedef struct Jobs Jobs;

/* workers threads calling seatd at socket_path, at most max_queued calls waiting. */
Jobs *jobs_new(const char *socket_path, int timeout_ms, size_t workers, size_t max_queued, struct lws_context *ctx);
void jobs_free(Jobs *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Jobs *, jobs_free)
/* Queue a call for seat/token; -EBUSY when the queue is full. The job then belongs to
 * the queue until jobs_done() hands it back. */
int jobs_submit(Jobs *j, Job *job);
/* At most max workers on one seat's jobs at once (its later jobs wait their turn while
 * other seats' go ahead); 0: no limit. */
void jobs_set_per_seat_max(Jobs *j, size_t max);
/* jobs_free() has begun: a job of many calls (a handout) stops making more. */
bool jobs_stopping(Jobs *j);
/* Mark a job whose connection closed: its answer is dropped when it comes back. */
void jobs_abandon(Jobs *j, Job *job);
/* The finished jobs, oldest first; the caller frees each with job_free(). */
Job *jobs_done(Jobs *j);
Job *job_new(JobKind kind, struct lws *wsi, const char *seat, const char *token);
void job_free(Job *job);
DEFINE_TRIVIAL_CLEANUP_FUNC(Job *, job_free)
