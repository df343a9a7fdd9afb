/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "forward-link.h"
#include "jobs.h"
#include "seatd-link.h"

#define JOBS_MAX_WORKERS 16

struct Jobs {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        Job *pending, *pending_tail, *done, *done_tail;
        Job *active; /* taken by a worker, linked by active_next */
        size_t queued, max_queued;
        size_t per_seat_max; /* workers one seat may hold at once; 0: no limit */
        bool stop;
        size_t n_threads;
        pthread_t threads[JOBS_MAX_WORKERS];
        char socket_path[108];
        int timeout_ms;
        struct lws_context *ctx;
};

Job *job_new(JobKind kind, struct lws *wsi, const char *seat, const char *token) {
        Job *job = calloc(1, sizeof(*job));
        if (!job)
                return NULL;
        job->kind = kind;
        job->wsi = wsi;
        snprintf(job->seat, sizeof(job->seat), "%s", seat);
        snprintf(job->token, sizeof(job->token), "%s", token);
        return job;
}

void job_free(Job *job) {
        if (!job)
                return;
        json_object_put(job->rec); /* (NULL is fine) */
        json_object_put(job->params);
        FREE_MANY(job->data, job->resp, job->out);
        sodium_memzero(job, sizeof(*job));
        free(job);
}

/* A file chunk's call: seat.file_put of the job's bytes, or seat.file_get of one chunk. */
static int file_params(Job *job, json_object *params) {
        json_object_object_add(params, "path", json_object_new_string(job->path));
        json_object_object_add(params, "offset", json_object_new_int64((int64_t) job->offset));
        if (job->kind == JOB_FILE_GET) {
                json_object_object_add(params, "length", json_object_new_int64(WEB_FILE_CHUNK_MAX));
                return 0;
        }
        _cleanup_free_ char *b64 = NULL;
        size_t n;
        int r = base64_encode(job->data, job->len, &b64, &n);
        if (r < 0)
                return r;
        json_object_object_add(params, "data", json_object_new_string(b64));
        json_object_object_add(params, "mode", json_object_new_int(0644));
        json_object_object_add(params, "final", json_object_new_boolean(job->final));
        return 0;
}

/* The job's call with its token: -EACCES for seatd's denied (a wrong token, a reset or
 * released seat, one that does not exist: seatd answers them alike). */
static void run(Jobs *j, Job *job) {
        if (job->kind == JOB_FORWARD) {
                ForwardTarget t = { .socket_path = j->socket_path, .seat = job->seat, .token = job->token,
                                    .host = job->host, .port = job->port, .timeout_ms = j->timeout_ms,
                                    .max_response = job->max_response };
                job->r = forward_exchange(&t, job->data, job->len, &job->resp, &job->resp_len, job->code, job->message,
                                          sizeof(job->message));
                return;
        }
        _cleanup_json_ json_object *params = json_object_new_object();
        const char *method = job->kind == JOB_FILE_PUT ? "seat.file_put" : job->kind == JOB_FILE_GET ? "seat.file_get" : "seat.status";
        if (!params) {
                job->r = -ENOMEM;
                return;
        }
        json_object_object_add(params, "seat", json_object_new_string(job->seat));
        json_object_object_add(params, "token", json_object_new_string(job->token));
        if ((job->kind == JOB_FILE_PUT || job->kind == JOB_FILE_GET) && (job->r = file_params(job, params)) < 0)
                return;
        job->r = seatd_call_message(j->socket_path, j->timeout_ms, method, params, &job->rec, job->code, job->message,
                                    sizeof(job->message));
        if (job->r == -EREMOTEIO && (!strcmp(job->code, "denied") || (!strcmp(job->code, "not_found") && job->kind == JOB_STATUS)))
                job->r = -EACCES;
        else if (job->r < 0 && job->r != -EREMOTEIO)
                log_warning("seatd at '%s' did not answer %s (%s): %s", j->socket_path, method,
                            job->code[0] ? job->code : "no reply", strerror(-job->r));
}

/* Under the lock: the first pending job whose seat holds fewer than per_seat_max workers,
 * taken off the queue and marked active; NULL when none may start now. A seat whose
 * server never answers then waits behind its own requests, not everyone's. */
static Job *take_eligible(Jobs *j) {
        Job *prev = NULL;
        for (Job *job = j->pending; job; prev = job, job = job->next) {
                size_t busy = 0;
                for (Job *a = j->active; a && j->per_seat_max; a = a->active_next)
                        busy += !strcmp(a->seat, job->seat);
                if (j->per_seat_max && busy >= j->per_seat_max)
                        continue;
                if (prev)
                        prev->next = job->next;
                else
                        j->pending = job->next;
                if (j->pending_tail == job)
                        j->pending_tail = prev;
                job->next = NULL;
                job->active_next = j->active;
                j->active = job;
                return job;
        }
        return NULL;
}

/* The pending and the done queues: singly linked by next, appended at the tail. */
static void queue_append(Job **head, Job **tail, Job *job) {
        job->next = NULL;
        if (*tail)
                (*tail)->next = job;
        else
                *head = job;
        *tail = job;
}

static void job_list_free(Job *l) {
        for (Job *n; l; l = n) {
                n = l->next;
                job_free(l);
        }
}

static void active_remove(Jobs *j, Job *job) {
        for (Job **pp = &j->active; *pp; pp = &(*pp)->active_next)
                if (*pp == job) {
                        *pp = job->active_next;
                        job->active_next = NULL;
                        return;
                }
}

static void *worker(void *arg) {
        Jobs *j = arg;
        pthread_mutex_lock(&j->lock);
        for (;;) {
                Job *job = NULL;
                while (!j->stop && !(job = take_eligible(j)))
                        pthread_cond_wait(&j->cond, &j->lock);
                if (j->stop)
                        break;
                bool skip = job->abandoned;
                pthread_mutex_unlock(&j->lock);
                if (!skip && job->work)
                        job->work(job);
                else if (!skip)
                        run(j, job);
                pthread_mutex_lock(&j->lock);
                active_remove(j, job);
                j->queued--;
                if (j->per_seat_max)
                        pthread_cond_broadcast(&j->cond); /* a seat under its share again */
                queue_append(&j->done, &j->done_tail, job);
                pthread_mutex_unlock(&j->lock);
                if (j->ctx) /* (none in the unit test) */
                        lws_cancel_service(j->ctx); /* thread-safe: wakes the loop */
                pthread_mutex_lock(&j->lock);
        }
        pthread_mutex_unlock(&j->lock);
        return NULL;
}

Jobs *jobs_new(const char *socket_path, int timeout_ms, size_t workers, size_t max_queued, struct lws_context *ctx) {
        if (workers == 0 || workers > JOBS_MAX_WORKERS || strlen(socket_path) >= sizeof(((Jobs *) 0)->socket_path))
                return NULL;
        _cleanup_(jobs_freep) Jobs *j = calloc(1, sizeof(*j));
        if (!j)
                return NULL;
        pthread_mutex_init(&j->lock, NULL);
        pthread_cond_init(&j->cond, NULL);
        snprintf(j->socket_path, sizeof(j->socket_path), "%s", socket_path);
        j->timeout_ms = timeout_ms;
        j->max_queued = max_queued;
        j->ctx = ctx;
        for (size_t i = 0; i < workers; i++) {
                if (pthread_create(&j->threads[i], NULL, worker, j) != 0)
                        return NULL;
                j->n_threads++;
        }
        return TAKE_PTR(j);
}

void jobs_free(Jobs *j) {
        if (!j)
                return;
        pthread_mutex_lock(&j->lock);
        j->stop = true;
        pthread_cond_broadcast(&j->cond);
        pthread_mutex_unlock(&j->lock);
        for (size_t i = 0; i < j->n_threads; i++)
                pthread_join(j->threads[i], NULL);
        job_list_free(j->pending);
        job_list_free(j->done);
        pthread_cond_destroy(&j->cond);
        pthread_mutex_destroy(&j->lock);
        free(j);
}

void jobs_set_per_seat_max(Jobs *j, size_t max) {
        pthread_mutex_lock(&j->lock);
        j->per_seat_max = max;
        pthread_mutex_unlock(&j->lock);
}

int jobs_submit(Jobs *j, Job *job) {
        pthread_mutex_lock(&j->lock);
        if (j->queued >= j->max_queued) {
                pthread_mutex_unlock(&j->lock);
                return -EBUSY;
        }
        j->queued++;
        queue_append(&j->pending, &j->pending_tail, job);
        pthread_cond_signal(&j->cond);
        pthread_mutex_unlock(&j->lock);
        return 0;
}

bool jobs_stopping(Jobs *j) {
        pthread_mutex_lock(&j->lock);
        bool stop = j->stop;
        pthread_mutex_unlock(&j->lock);
        return stop;
}

void jobs_abandon(Jobs *j, Job *job) {
        pthread_mutex_lock(&j->lock);
        job->abandoned = true;
        pthread_mutex_unlock(&j->lock);
}

Job *jobs_done(Jobs *j) {
        pthread_mutex_lock(&j->lock);
        Job *l = j->done;
        j->done = j->done_tail = NULL;
        pthread_mutex_unlock(&j->lock);
        return l;
}
