/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forward-link.c: one HTTP exchange through seat.forward (forward-link.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "forward-link.h"
#include "seatd-socket.h"

typedef struct Exchange {
        const ForwardTarget *t;
        int fd;
        FrameReader *rd;
        int64_t deadline;
        const uint8_t *req;
        size_t req_len, req_off;
        int64_t next_id, send_id; /* the send in flight (0: none) */
        bool opened, ended;
        uint8_t *out;
        size_t out_len, out_cap;
        char *code, *message;
        size_t message_size;
} Exchange;

static void set_message(Exchange *e, const ControlMsg *m) {
        snprintf(e->code, 32, "%s", m->error_code ? m->error_code : "");
        if (e->message && e->message_size)
                snprintf(e->message, e->message_size, "%s", m->error_message ? m->error_message : "");
}

static int append(Exchange *e, const void *data, size_t n) {
        if (n > e->t->max_response - e->out_len)
                return -EFBIG;
        if (e->out_len + n + 1 > e->out_cap) {
                size_t cap = MAX(e->out_cap * 2, e->out_len + n + 1);
                cap = MIN(cap, e->t->max_response + 1);
                uint8_t *p = realloc(e->out, MAX(cap, e->out_len + n + 1));
                if (!p)
                        return -ENOMEM;
                e->out = p;
                e->out_cap = MAX(cap, e->out_len + n + 1);
        }
        memcpy(e->out + e->out_len, data, n);
        e->out_len += n;
        e->out[e->out_len] = 0;
        return 0;
}

int forward_link_open(int fd, const char *seat, const char *token, const char *host, unsigned port) {
        _cleanup_json_ json_object *hello = json_object_new_object(), *tun = json_object_new_object(),
                                   *open = json_object_new_object();
        if (!hello || !tun || !open)
                return -ENOMEM;
        json_object_object_add(hello, "version", json_object_new_int(CONTROL_PROTO_VERSION));
        json_object_object_add(tun, "seat", json_object_new_string(seat));
        json_object_object_add(tun, "token", json_object_new_string(token));
        json_object_object_add(tun, "host", json_object_new_string(host));
        json_object_object_add(tun, "port", json_object_new_int((int) port));
        json_object_object_add(open, "forward", json_object_new_int64(FORWARD_ID_TUNNEL));
        int r = seatd_socket_send(fd, FORWARD_ID_HELLO, "hello", hello);
        if (r >= 0)
                r = seatd_socket_send(fd, FORWARD_ID_TUNNEL, "seat.forward", tun);
        if (r >= 0)
                r = seatd_socket_send(fd, FORWARD_ID_OPEN, "seat.forward.open", open);
        return r;
}

json_object *forward_link_send_params(const void *data, size_t n) {
        _cleanup_json_ json_object *p = json_object_new_object();
        _cleanup_free_ char *b64 = NULL;
        if (!p || base64_encode(data, n, &b64, NULL) < 0)
                return NULL;
        json_object_object_add(p, "forward", json_object_new_int64(FORWARD_ID_TUNNEL));
        json_object_object_add(p, "stream", json_object_new_int64(FORWARD_ID_OPEN));
        json_object_object_add(p, "data", json_object_new_string(b64));
        return TAKE_PTR(p);
}

int forward_link_event(const ControlMsg *m, void **ret_data, size_t *ret_len) {
        if (m->kind != CONTROL_EVENT || !m->type)
                return FORWARD_LINK_NONE;
        if (!strcmp(m->type, "data"))
                return json_get_base64(m->body, "data", true, FORWARD_LINK_FRAME_MAX, ret_data, ret_len) < 0
                               ? -EPROTO
                               : FORWARD_LINK_DATA;
        if (!strcmp(m->type, "eof") || !strcmp(m->type, "closed"))
                return FORWARD_LINK_END;
        return FORWARD_LINK_NONE;
}

/* The next chunk of the request, the last one with eof (the guest then sees a FIN). */
static int send_next(Exchange *e) {
        size_t n = MIN(e->req_len - e->req_off, (size_t) FORWARD_LINK_SEND_CHUNK);
        _cleanup_json_ json_object *p = forward_link_send_params(e->req + e->req_off, n);
        if (!p)
                return -ENOMEM;
        e->req_off += n;
        json_object_object_add(p, "eof", json_object_new_boolean(e->req_off == e->req_len));
        e->send_id = e->next_id++;
        return seatd_socket_send(e->fd, e->send_id, "seat.forward.send", p);
}

/* One message from seatd: 0 to go on, 1 when the stream is over, < 0 for a failure. */
static int on_message(Exchange *e, ControlMsg *m) {
        if (m->id == FORWARD_ID_HELLO) {
                if (m->kind == CONTROL_ERROR) {
                        set_message(e, m);
                        return -EREMOTEIO;
                }
                return 0;
        }
        if (m->id == FORWARD_ID_TUNNEL) {
                if (m->kind == CONTROL_ERROR) {
                        set_message(e, m);
                        return m->error_code && !strcmp(m->error_code, "denied") ? -EACCES : -EREMOTEIO;
                }
                if (m->kind == CONTROL_RESULT)
                        return 1; /* the tunnel ended: whatever came, came */
                _cleanup_free_ void *d = NULL;
                size_t n = 0;
                int r = forward_link_event(m, &d, &n);
                if (r == FORWARD_LINK_DATA)
                        return append(e, d, n);
                if (r == FORWARD_LINK_END)
                        return 1; /* Connection: close: the guest's end is the response's end */
                return r; /* -EPROTO, or 0: nothing to act on */
        }
        if (m->id == FORWARD_ID_OPEN) {
                if (m->kind == CONTROL_ERROR) {
                        set_message(e, m);
                        return m->error_code && !strcmp(m->error_code, "io") ? -ECONNREFUSED : -EREMOTEIO;
                }
                e->opened = true;
                return 0;
        }
        if (m->id == e->send_id && m->kind != CONTROL_EVENT) {
                e->send_id = 0;
                if (m->kind == CONTROL_ERROR)
                        return 1; /* the guest's end came first: what it sent is the answer */
        }
        return 0;
}

static int start(Exchange *e) {
        /* Writes are small; the timeout only guards a seatd that stopped reading. */
        e->fd = seatd_socket_connect(e->t->socket_path, e->t->timeout_ms);
        if (e->fd < 0)
                return e->fd;
        return forward_link_open(e->fd, e->t->seat, e->t->token, e->t->host, e->t->port);
}

static int run(Exchange *e) {
        int r = start(e);
        if (r < 0)
                return r;
        for (;;) {
                if (e->opened && !e->send_id && e->req_off < e->req_len && (r = send_next(e)) < 0)
                        return r;
                const char *frame;
                size_t len;
                r = frame_reader_next(e->rd, &frame, &len);
                if (r < 0)
                        return -EPROTO;
                if (r > 0) {
                        ControlParseError perr;
                        _cleanup_control_msg_ ControlMsg *m = NULL;
                        if (control_msg_parse_reply(frame, len, &m, &perr) < 0)
                                return -EPROTO;
                        r = on_message(e, m);
                        if (r != 0)
                                return r < 0 ? r : 0;
                        continue;
                }
                r = seatd_socket_fill(e->fd, e->rd, e->deadline);
                if (r < 0)
                        return r;
        }
}

int forward_exchange(const ForwardTarget *t, const void *request, size_t request_len, uint8_t **ret_response,
                     size_t *ret_len, char ret_code[32], char *message, size_t message_size) {
        Exchange e = {
                .t = t, .fd = -EBADF, .deadline = now_monotonic_ms() + t->timeout_ms, .req = request,
                .req_len = request_len, .next_id = FORWARD_ID_OPEN + 1, .code = ret_code, .message = message,
                .message_size = message_size,
        };
        ret_code[0] = '\0';
        e.rd = frame_reader_new(FORWARD_LINK_FRAME_MAX + 4096);
        int r = e.rd ? run(&e) : -ENOMEM;
        /* Closing the connection ends the tunnel: seatd resets the guest's connection if it
         * is still open and records forward.end. */
        safe_close(e.fd);
        frame_reader_free(e.rd);
        if (r < 0) {
                free(e.out);
                return r;
        }
        if (!e.out && append(&e, "", 0) < 0)
                return -ENOMEM;
        *ret_response = e.out;
        *ret_len = e.out_len;
        return 0;
}
