/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ws-forward.c: one WebSocket relayed to a server in the seat (ws-forward.h). */
#include <errno.h>
#include <openssl/evp.h>
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
#include "forward-link.h"
#include "forward-parse.h"
#include "bytes.h"
#include "ws-forward.h"
#include "seatd-socket.h"
#include "worker.h"

typedef struct Msg {
        struct Msg *next;
        bool binary;
        uint8_t *data;
        size_t len;
} Msg;

struct WsForward {
        WorkerSeat base; /* its lock: the queues below too */
        char host[64];
        unsigned port;
        char target[WEB_FORWARD_PATH_MAX * 3 + 1];
        int timeout_ms;

        Bytes to_guest;       /* the upgrade, then frames (masked), waiting for seat.forward.send */
        size_t preupgrade;    /* bytes of to_guest that may go before the guest's 101: the upgrade's */
        Msg *msgs, *msgs_tail;
        size_t msgs_bytes;
        bool upgraded;
};

static const WorkerReplyEnds reply_ends = {
        .too_long = "seatd sent a line too long",
        .not_reply = "seatd sent what is not a reply",
        .timed_out = "the server in the seat did not answer the WebSocket upgrade in time",
        .closed = "seatd closed the connection",
};

/* The queue to the guest: its callers bound it (ws_forward_send, the pongs, the upgrade). */
#define TO_GUEST_MAX SIZE_MAX
/* The guest's bytes not yet parsed: at most a message and a head (on_guest_bytes). */
#define RAW_MAX (WS_FORWARD_MESSAGE_MAX + WEB_FORWARD_HEAD_MAX)

/* A frame to the guest, masked with a fresh key, queued (the lock held). */
static int queue_frame(WsForward *f, unsigned opcode, const void *data, size_t len) {
        uint8_t h[14], mask[4];
        randombytes_buf(mask, sizeof(mask));
        size_t hl = web_ws_frame_header(h, opcode, true, len, mask);
        size_t at = f->to_guest.len;
        int r = bytes_append(&f->to_guest, h, hl, TO_GUEST_MAX);
        if (r >= 0 && len)
                r = bytes_append(&f->to_guest, data, len, TO_GUEST_MAX);
        if (r < 0)
                return r;
        web_ws_mask(f->to_guest.data + at + hl, len, mask, 0);
        return 0;
}

/* The upgrade request, first on the stream; accept gets what the guest must answer. */
static int queue_upgrade(WsForward *f, char accept[64]) {
        static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
        uint8_t raw[16], md[EVP_MAX_MD_SIZE];
        char key[32], both[80], req[WEB_FORWARD_PATH_MAX * 3 + 512];
        unsigned mdlen = 0;
        randombytes_buf(raw, sizeof(raw));
        base64_encode_to(raw, sizeof(raw), key);
        key[base64_encoded_len(sizeof(raw))] = '\0';
        snprintf(both, sizeof(both), "%s%s", key, guid);
        if (EVP_Digest(both, strlen(both), md, &mdlen, EVP_sha1(), NULL) != 1 || mdlen != 20)
                return -EIO;
        base64_encode_to(md, 20, accept);
        accept[base64_encoded_len(20)] = '\0';
        bool v6 = strchr(f->host, ':');
        int n = snprintf(req, sizeof(req),
                         "GET %s HTTP/1.1\r\nHost: %s%s%s:%u\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
                         f->target, v6 ? "[" : "", f->host, v6 ? "]" : "", f->port, key);
        if (n < 0 || (size_t) n >= sizeof(req))
                return -E2BIG;
        pthread_mutex_lock(&f->base.lock);
        /* First in the queue: the browser may have sent messages already; they wait for the
         * guest's 101 (a client sends no frame before it). */
        int r = bytes_append(&f->to_guest, req, (size_t) n, TO_GUEST_MAX);
        if (r >= 0 && f->to_guest.len > (size_t) n) {
                memmove(f->to_guest.data + n, f->to_guest.data, f->to_guest.len - (size_t) n);
                memcpy(f->to_guest.data, req, (size_t) n);
        }
        f->preupgrade = (size_t) n;
        pthread_mutex_unlock(&f->base.lock);
        return r;
}

typedef struct Rx {
        Bytes raw;   /* the guest's bytes not yet parsed */
        Bytes msg;   /* the message being assembled */
        unsigned msg_op;
        bool in_msg;
        char accept[64];
} Rx;

/* The guest's bytes: the upgrade's answer, then frames. 1 when it ended, 0 to go on. */
static int on_guest_bytes(WsForward *f, Rx *rx, const void *data, size_t len) {
        int a = bytes_append(&rx->raw, data, len, RAW_MAX);
        if (a == -ENOBUFS)
                return worker_seat_end(&f->base, -1, "the server in the seat sent more than a message's cap at once"), 1;
        if (a < 0)
                return worker_seat_end(&f->base, -1, "out of memory"), 1;
        if (!f->upgraded) {
                size_t head = 0;
                int r = web_ws_upgrade_parse((const char *) rx->raw.data, rx->raw.len, rx->accept, &head);
                if (r == -EAGAIN)
                        return 0;
                if (r < 0) {
                        /* what it said instead, for the log (escaped by the caller's log) */
                        size_t show = 0; /* raw holds no NUL: bounded by its length */
                        while (show < rx->raw.len && show < 80 && rx->raw.data[show] != '\r' && rx->raw.data[show] != '\n')
                                show++;
                        return worker_seat_end(&f->base, -1, "the server in the seat did not accept the WebSocket (%s: '%.*s')",
                                               r == -EPROTO ? "not a 101 with our Sec-WebSocket-Accept" : "a malformed answer",
                                               (int) show, (const char *) rx->raw.data), 1;
                }
                bytes_take(&rx->raw, head);
                pthread_mutex_lock(&f->base.lock);
                f->upgraded = true;
                pthread_mutex_unlock(&f->base.lock);
        }
        /* The frames parsed are taken off once, at the end: taking each one as it came
         * moved the rest of the buffer per frame, quadratic in a guest's small frames (a
         * flood of 1400 pings in one event moved 124 MB; TSan took minutes over 28000). */
        for (size_t done = 0;; ) {
                WebWsFrame fr;
                if (done == rx->raw.len) { /* (raw.data may be NULL: no offset to it) */
                        bytes_take(&rx->raw, done);
                        return 0;
                }
                int r = web_ws_frame_parse(rx->raw.data + done, rx->raw.len - done, WS_FORWARD_MESSAGE_MAX, &fr);
                if (r == -EAGAIN) {
                        bytes_take(&rx->raw, done);
                        return 0;
                }
                if (r < 0)
                        return worker_seat_end(&f->base, -1, "the server in the seat sent a %s WebSocket frame",
                                               r == -E2BIG ? "too large" : "malformed"), 1;
                int q = 0;
                if (fr.opcode == WEB_WS_OP_PING) {
                        /* A pong only while the queue to the guest has room: a guest that
                         * floods pings (and leaves its side unread) would grow it without
                         * bound. A ping left unanswered then is the guest's own doing. */
                        pthread_mutex_lock(&f->base.lock);
                        if (f->to_guest.len + fr.payload_len + 14 <= WS_FORWARD_QUEUE_MAX)
                                q = queue_frame(f, WEB_WS_OP_PONG, fr.payload, fr.payload_len);
                        pthread_mutex_unlock(&f->base.lock);
                } else if (fr.opcode == WEB_WS_OP_CLOSE) {
                        return worker_seat_end(&f->base, -1, "the server in the seat closed the WebSocket"), 1;
                } else if (fr.opcode != WEB_WS_OP_PONG) {
                        /* a message's frames: the first says text or binary, the rest continue */
                        if ((fr.opcode == WEB_WS_OP_CONT) != rx->in_msg)
                                return worker_seat_end(&f->base, -1, "the server in the seat sent frames out of order"), 1;
                        if (!rx->in_msg)
                                rx->msg_op = fr.opcode;
                        rx->in_msg = true;
                        if (rx->msg.len + fr.payload_len > WS_FORWARD_MESSAGE_MAX)
                                return worker_seat_end(&f->base, -1, "the server in the seat sent a message over the cap"), 1;
                        q = bytes_append(&rx->msg, fr.payload, fr.payload_len, WS_FORWARD_MESSAGE_MAX);
                        if (q >= 0 && fr.fin) {
                                Msg *m = calloc(1, sizeof(*m));
                                if (!m)
                                        q = -ENOMEM;
                                else {
                                        m->binary = rx->msg_op == WEB_WS_OP_BINARY;
                                        m->data = rx->msg.data ? rx->msg.data : malloc(1);
                                        m->len = rx->msg.len;
                                        rx->msg = (Bytes) {};
                                        rx->in_msg = false;
                                        pthread_mutex_lock(&f->base.lock);
                                        if (f->msgs_tail)
                                                f->msgs_tail->next = m;
                                        else
                                                f->msgs = m;
                                        f->msgs_tail = m;
                                        f->msgs_bytes += m->len;
                                        pthread_mutex_unlock(&f->base.lock);
                                        worker_seat_wake_loop(&f->base);
                                }
                        }
                }
                if (q < 0)
                        return worker_seat_end(&f->base, -1, "out of memory"), 1;
                done += fr.frame_len;
        }
}

/* A message from seatd: 1 when the WebSocket ended, 0 to go on. */
static int on_message(WsForward *f, Rx *rx, ControlMsg *m, bool *opened, int64_t *send_id) {
        if (m->id == FORWARD_ID_HELLO || m->id == FORWARD_ID_TUNNEL || m->id == FORWARD_ID_OPEN) {
                if (m->kind == CONTROL_ERROR) {
                        if (m->error_code && !strcmp(m->error_code, "denied"))
                                return worker_seat_end(&f->base, -1, "seatd no longer accepts this session's token"), 1;
                        return worker_seat_end(&f->base, -1, "%s", m->error_message ? m->error_message : "seatd refused the forward"), 1;
                }
                if (m->id == FORWARD_ID_OPEN)
                        *opened = true;
                if (m->id != FORWARD_ID_TUNNEL)
                        return 0;
                if (m->kind == CONTROL_RESULT)
                        return worker_seat_end(&f->base, -1, "seatd ended the forward"), 1;
                _cleanup_free_ void *d = NULL;
                size_t n = 0;
                int r = forward_link_event(m, &d, &n);
                if (r < 0)
                        return worker_seat_end(&f->base, -1, "seatd sent bad data"), 1;
                if (r == FORWARD_LINK_DATA)
                        return on_guest_bytes(f, rx, d, n);
                if (r == FORWARD_LINK_END)
                        return worker_seat_end(&f->base, -1, "the server in the seat closed the connection"), 1;
                return 0;
        }
        if (m->id == *send_id && m->kind != CONTROL_EVENT) {
                *send_id = 0;
                if (m->kind == CONTROL_ERROR)
                        return worker_seat_end(&f->base, -1, "the connection to the server in the seat is gone"), 1;
        }
        return 0;
}

static int send_pending(WsForward *f, int fd, int64_t *next_id, int64_t *send_id) {
        uint8_t chunk[FORWARD_LINK_SEND_CHUNK];
        pthread_mutex_lock(&f->base.lock);
        size_t n = MIN(f->upgraded ? f->to_guest.len : f->preupgrade, sizeof(chunk));
        memcpy(chunk, f->to_guest.data, n);
        bytes_take(&f->to_guest, n);
        if (!f->upgraded)
                f->preupgrade -= n;
        pthread_mutex_unlock(&f->base.lock);
        if (n == 0)
                return 0;
        _cleanup_json_ json_object *p = forward_link_send_params(chunk, n);
        if (!p)
                return -ENOMEM;
        *send_id = (*next_id)++;
        worker_seat_wake_loop(&f->base); /* room for more from the browser */
        return seatd_socket_send(fd, *send_id, "seat.forward.send", p);
}

static void *ws_forward_thread(void *p) {
        WsForward *f = p;
        _cleanup_(frame_reader_freep) FrameReader *rd = frame_reader_new(FORWARD_LINK_FRAME_MAX + 4096);
        _cleanup_close_ int fd = -EBADF;
        Rx rx = {};
        int64_t next_id = FORWARD_ID_OPEN + 1, send_id = 0, deadline = now_monotonic_ms() + f->timeout_ms;
        bool opened = false;
        int r;

        if (!rd)
                return worker_seat_end(&f->base, -1, "out of memory"), NULL;
        fd = seatd_socket_connect(f->base.socket_path, 0);
        if (fd < 0)
                return worker_seat_end(&f->base, -1, "seatd cannot be reached (%s)", strerror(-fd)), NULL;
        r = forward_link_open(fd, f->base.seat, f->base.token, f->host, f->port);
        sodium_memzero(f->base.token, sizeof(f->base.token));
        if (r < 0 || (r = queue_upgrade(f, rx.accept)) < 0) {
                worker_seat_end(&f->base, -1, "cannot ask seatd for the forward: %s", strerror(-r));
                goto out;
        }
        for (;;) {
                pthread_mutex_lock(&f->base.lock);
                bool stop = f->base.stop, upgraded = f->upgraded, room = f->msgs_bytes < WS_FORWARD_QUEUE_MAX;
                pthread_mutex_unlock(&f->base.lock);
                if (stop)
                        break;
                if (opened && !send_id && (r = send_pending(f, fd, &next_id, &send_id)) < 0) {
                        worker_seat_end(&f->base, -1, "seatd closed the connection (%s)", strerror(-r));
                        break;
                }
                /* Until the guest's upgrade answer, the whole of it is bounded in time. */
                _cleanup_control_msg_ ControlMsg *m = NULL;
                r = worker_next_reply(&f->base.worker, fd, rd, room, upgraded ? 0 : deadline, &m);
                if (r == 0)
                        continue;
                if (r > 0) {
                        if (on_message(f, &rx, m, &opened, &send_id) > 0)
                                break;
                        continue;
                }
                worker_seat_end_reply(&f->base, r, &reply_ends);
                break;
        }
out:
        free(rx.raw.data);
        free(rx.msg.data);
        return NULL;
}

int ws_forward_start(const WsForwardSpec *spec, WsForward **ret) {
        if (!worker_seat_fits(spec->socket_path, spec->seat, spec->token) ||
            strlen(spec->host) >= sizeof(((WsForward *) NULL)->host) ||
            strlen(spec->target) >= sizeof(((WsForward *) NULL)->target))
                return -EINVAL;
        _cleanup_(ws_forward_freep) WsForward *f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        worker_seat_init(&f->base, spec->socket_path, spec->seat, spec->token, spec->ctx);
        f->port = spec->port;
        f->timeout_ms = spec->timeout_ms;
        snprintf(f->host, sizeof(f->host), "%s", spec->host);
        snprintf(f->target, sizeof(f->target), "%s", spec->target);
        int r = worker_start(&f->base.worker, ws_forward_thread, f);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

WsForward *ws_forward_free(WsForward *f) {
        if (!f)
                return NULL;
        worker_seat_done(&f->base);
        free(f->to_guest.data);
        for (Msg *m = f->msgs, *n; m; m = n) {
                n = m->next;
                free(m->data);
                free(m);
        }
        return mfree(f);
}

int ws_forward_send(WsForward *f, bool binary, const void *data, size_t len) {
        if (len > WS_FORWARD_MESSAGE_MAX)
                return -EMSGSIZE;
        pthread_mutex_lock(&f->base.lock);
        int r = f->base.ended ? -EPIPE
                : f->to_guest.len + len > WS_FORWARD_QUEUE_MAX ? -ENOBUFS
                : queue_frame(f, binary ? WEB_WS_OP_BINARY : WEB_WS_OP_TEXT, data, len);
        pthread_mutex_unlock(&f->base.lock);
        if (r >= 0)
                worker_wake(&f->base.worker);
        return r;
}

size_t ws_forward_to_guest_bytes(WsForward *f) {
        pthread_mutex_lock(&f->base.lock);
        size_t n = f->to_guest.len;
        pthread_mutex_unlock(&f->base.lock);
        return n;
}

bool ws_forward_room(WsForward *f) {
        pthread_mutex_lock(&f->base.lock);
        bool room = f->to_guest.len < WS_FORWARD_QUEUE_MAX / 2;
        pthread_mutex_unlock(&f->base.lock);
        return room;
}

bool ws_forward_take(WsForward *f, bool *ret_binary, uint8_t **ret_data, size_t *ret_len) {
        pthread_mutex_lock(&f->base.lock);
        Msg *m = f->msgs;
        bool was_full = f->msgs_bytes >= WS_FORWARD_QUEUE_MAX;
        if (m) {
                f->msgs = m->next;
                if (!f->msgs)
                        f->msgs_tail = NULL;
                f->msgs_bytes -= m->len;
        }
        pthread_mutex_unlock(&f->base.lock);
        if (!m)
                return false;
        if (was_full)
                worker_wake(&f->base.worker); /* it may read seatd again */
        *ret_binary = m->binary;
        *ret_data = m->data;
        *ret_len = m->len;
        free(m);
        return true;
}

bool ws_forward_has_message(WsForward *f) {
        pthread_mutex_lock(&f->base.lock);
        bool has = f->msgs != NULL;
        pthread_mutex_unlock(&f->base.lock);
        return has;
}

bool ws_forward_ended(WsForward *f, char *why, size_t size) {
        pthread_mutex_lock(&f->base.lock);
        bool ended = f->base.ended && !f->msgs;
        if (ended)
                snprintf(why, size, "%s", f->base.why);
        pthread_mutex_unlock(&f->base.lock);
        return ended;
}
