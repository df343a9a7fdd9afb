/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dashboard's live feed: ONE events.subscribe on seatd's facilitator socket per
 * seat-web (seatd allows few), held by a thread that keeps only the latest snapshot, fanned
 * out to every dashboard's WebSocket (/ws/facilitator/events, subprotocol
 * "seat-dashboard"). A snapshot is the whole room, so a dashboard that falls behind just
 * gets the newest one when it can take a write: nothing queues per browser but the one
 * message being written (drop to latest), and at most max_dashboards are open.
 * The handshake needs a facilitator's session cookie and seat-web's own Origin: a
 * browser sends cookies with any site's WebSocket, so without the Origin check another
 * site's page could watch the room.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "fac-events.h"
#include "fac-session.h"
#include "seatd-socket.h"

#define EVENTS_FRAME_MAX (4u * 1024u * 1024u) /* a snapshot of a large room */
#define RETRY_MAX_MS 10000

struct FacEvents {
        pthread_mutex_t lock;
        pthread_t thread;
        bool started, stop;
        int fd;                  /* the subscription's socket, shut down to stop the thread */
        char socket_path[108];
        struct lws_context *ctx;
        char *latest;            /* the newest snapshot as the dashboards get it (LWS_PRE + len) */
        size_t latest_len;
        uint64_t seq;            /* bumped with each snapshot */
        bool connected;
};

static void publish(FacEvents *e, json_object *snapshot, bool connected) {
        char *copy = NULL;
        size_t len = 0;
        if (snapshot) {
                _cleanup_json_ json_object *msg = json_object_new_object();
                if (!msg)
                        return;
                json_object_object_add(msg, "type", json_object_new_string("snapshot"));
                json_object_object_add(msg, "snapshot", json_object_get(snapshot));
                const char *s = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
                len = strlen(s);
                copy = malloc(LWS_PRE + len);
                if (!copy)
                        return;
                memcpy(copy + LWS_PRE, s, len);
        }
        pthread_mutex_lock(&e->lock);
        if (copy) {
                free(e->latest);
                e->latest = copy;
                e->latest_len = len;
        }
        e->connected = connected;
        e->seq++;
        pthread_mutex_unlock(&e->lock);
        if (e->ctx) /* none in the unit test */
                lws_cancel_service(e->ctx);
}

static int send_line(int fd, int64_t id, const char *method) {
        _cleanup_json_ json_object *p = json_object_new_object();
        if (!p)
                return -ENOMEM;
        if (!strcmp(method, "hello"))
                json_object_object_add(p, "version", json_object_new_int(CONTROL_PROTO_VERSION));
        return seatd_socket_send(fd, id, method, p);
}

/* One subscription until it fails or seat-web stops. */
static int subscribe_once(FacEvents *e) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_(frame_reader_freep) FrameReader *rd = frame_reader_new(EVENTS_FRAME_MAX);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;
        if (fd < 0 || !rd) {
                if (fd >= 0)
                        close(fd);
                return -ENOMEM;
        }
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e->socket_path);
        pthread_mutex_lock(&e->lock);
        e->fd = e->stop ? -1 : fd;
        bool stop = e->stop;
        pthread_mutex_unlock(&e->lock);
        if (stop || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r = stop ? -ECANCELED : -errno;
                goto out;
        }
        if ((r = send_line(fd, 1, "hello")) < 0 || (r = send_line(fd, 2, "events.subscribe")) < 0)
                goto out;
        for (;;) {
                const char *frame;
                size_t len;
                r = frame_reader_next(rd, &frame, &len);
                if (r < 0) {
                        r = -EPROTO;
                        goto out;
                }
                if (r == 0) {
                        ssize_t n = frame_reader_fill(rd, fd);
                        if (n == 0) {
                                r = -ECONNRESET;
                                goto out;
                        }
                        if (n < 0 && n != -EAGAIN) {
                                r = (int) n;
                                goto out;
                        }
                        continue;
                }
                ControlParseError perr;
                _cleanup_control_msg_ ControlMsg *m = NULL;
                if (control_msg_parse_reply(frame, len, &m, &perr) < 0) {
                        r = -EPROTO;
                        goto out;
                }
                if (m->kind == CONTROL_ERROR) {
                        log_warning("seatd refused the dashboard's events.subscribe (%s): %s", m->error_code,
                                    m->error_message ? m->error_message : "");
                        r = -EREMOTEIO;
                        goto out;
                }
                if (m->id != 2 || m->kind != CONTROL_EVENT)
                        continue; /* hello's reply */
                if (!m->type || strcmp(m->type, "snapshot") != 0 || !json_object_is_type(m->body, json_type_object))
                        continue;
                fac_strip_tokens(m->body);
                publish(e, m->body, true);
        }
out:
        pthread_mutex_lock(&e->lock);
        e->fd = -1;
        pthread_mutex_unlock(&e->lock);
        close(fd);
        return r;
}

static void *events_thread(void *arg) {
        FacEvents *e = arg;
        int delay = 500;
        for (;;) {
                int64_t t0 = now_monotonic_ms();
                int r = subscribe_once(e);
                pthread_mutex_lock(&e->lock);
                bool stop = e->stop;
                pthread_mutex_unlock(&e->lock);
                if (stop)
                        break;
                publish(e, NULL, false);
                log_debug("the dashboard's event stream ended (%s): again in %d ms", strerror(-r), delay);
                /* Back off while seatd is away; a stream that lived a while restarts fast. */
                delay = now_monotonic_ms() - t0 > 30000 ? 500 : delay * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : delay * 2;
                for (int waited = 0; waited < delay; waited += 100) {
                        usleep(100 * 1000);
                        pthread_mutex_lock(&e->lock);
                        stop = e->stop;
                        pthread_mutex_unlock(&e->lock);
                        if (stop)
                                return NULL;
                }
        }
        return NULL;
}

FacEvents *fac_events_new(const char *socket_path, struct lws_context *ctx) {
        if (strlen(socket_path) >= sizeof(((FacEvents *) NULL)->socket_path))
                return NULL;
        _cleanup_(fac_events_freep) FacEvents *e = calloc(1, sizeof(*e));
        if (!e)
                return NULL;
        pthread_mutex_init(&e->lock, NULL);
        snprintf(e->socket_path, sizeof(e->socket_path), "%s", socket_path);
        e->ctx = ctx;
        e->fd = -1;
        if (pthread_create(&e->thread, NULL, events_thread, e) != 0)
                return NULL;
        e->started = true;
        return TAKE_PTR(e);
}

void fac_events_free(FacEvents *e) {
        if (!e)
                return;
        pthread_mutex_lock(&e->lock);
        e->stop = true;
        if (e->fd >= 0)
                shutdown(e->fd, SHUT_RDWR); /* wakes its read */
        pthread_mutex_unlock(&e->lock);
        if (e->started)
                pthread_join(e->thread, NULL);
        free(e->latest);
        pthread_mutex_destroy(&e->lock);
        free(e);
}

uint64_t fac_events_seq(FacEvents *e) {
        pthread_mutex_lock(&e->lock);
        uint64_t s = e->seq;
        pthread_mutex_unlock(&e->lock);
        return s;
}

int fac_events_latest(FacEvents *e, char **ret, size_t *ret_len, uint64_t *ret_seq, bool *ret_connected) {
        int r = 0;
        pthread_mutex_lock(&e->lock);
        *ret_seq = e->seq;
        *ret_connected = e->connected;
        if (!e->latest)
                r = -ENODATA;
        else if (!(*ret = malloc(LWS_PRE + e->latest_len)))
                r = -ENOMEM;
        else {
                memcpy(*ret, e->latest, LWS_PRE + e->latest_len);
                *ret_len = e->latest_len;
        }
        pthread_mutex_unlock(&e->lock);
        return r;
}
