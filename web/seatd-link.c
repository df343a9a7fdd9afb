/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "seatd-link.h"
#include "seatd-socket.h"

/* seatd's replies: a status record, or a file chunk of 512 KiB in base64 (under seatd's 1 MiB line cap). */
#define LINK_MAX_FRAME (1024u * 1024u)

#define CANCEL_POLL_MS 250 /* how often a cancellable call asks whether to give up */

/* Wait for the next message of request id, until deadline_ms (monotonic), or until cancel
 * (may be NULL) says to give up. */
static int read_reply(int fd, FrameReader *rd, int64_t id, int64_t deadline_ms, const SeatdCancel *cancel,
                      ControlMsg **ret) {
        for (;;) {
                const char *frame;
                size_t len;
                int r = frame_reader_next(rd, &frame, &len);
                if (r < 0)
                        return -EPROTO;
                if (r > 0) {
                        ControlParseError perr;
                        _cleanup_control_msg_ ControlMsg *m = NULL;
                        if (control_msg_parse_reply(frame, len, &m, &perr) < 0 || m->id != id || m->kind == CONTROL_REQUEST)
                                return -EPROTO;
                        if (m->kind == CONTROL_EVENT)
                                continue; /* progress: nothing for a status page */
                        *ret = TAKE_PTR(m);
                        return 0;
                }
                if (cancel && cancel->cancelled(cancel->userdata))
                        return -ECANCELED;
                /* A cancellable call waits in slices, to ask again after each. */
                int64_t until = cancel ? MIN(deadline_ms, now_monotonic_ms() + CANCEL_POLL_MS) : deadline_ms;
                r = seatd_socket_fill(fd, rd, until);
                if (r == -ETIMEDOUT && now_monotonic_ms() < deadline_ms)
                        continue;
                if (r < 0)
                        return r;
        }
}

int seatd_call(const char *socket_path, int timeout_ms, const char *method, json_object *params,
               json_object **ret_result, char ret_code[32]) {
        return seatd_call_message(socket_path, timeout_ms, method, params, ret_result, ret_code, NULL, 0);
}

int seatd_call_message(const char *socket_path, int timeout_ms, const char *method, json_object *params,
                       json_object **ret_result, char ret_code[32], char *ret_message, size_t message_size) {
        return seatd_call_cancellable(socket_path, timeout_ms, NULL, method, params, ret_result, ret_code, ret_message,
                                      message_size);
}

int seatd_call_cancellable(const char *socket_path, int timeout_ms, const SeatdCancel *cancel, const char *method,
                           json_object *params, json_object **ret_result, char ret_code[32], char *ret_message,
                           size_t message_size) {
        int64_t deadline = now_monotonic_ms() + timeout_ms;
        _cleanup_(frame_reader_freep) FrameReader *rd = frame_reader_new(LINK_MAX_FRAME);
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!rd)
                return -ENOMEM;
        /* Writes are a few hundred bytes into an empty socket; the timeout only guards a
         * seatd that stopped reading. */
        fd = seatd_socket_connect(socket_path, timeout_ms);
        if (fd < 0)
                return fd;

        _cleanup_json_ json_object *hello = json_object_new_object();
        if (!hello)
                return -ENOMEM;
        json_object_object_add(hello, "version", json_object_new_int(CONTROL_PROTO_VERSION));
        /* Both requests at once: one round trip. */
        if ((r = seatd_socket_send(fd, 1, "hello", hello)) < 0 || (r = seatd_socket_send(fd, 2, method, params)) < 0)
                return r;
        for (int64_t id = 1; id <= 2; id++) {
                _cleanup_control_msg_ ControlMsg *m = NULL;
                r = read_reply(fd, rd, id, deadline, cancel, &m);
                if (r < 0)
                        return r;
                if (m->kind == CONTROL_ERROR) {
                        snprintf(ret_code, 32, "%s", m->error_code);
                        if (ret_message && message_size > 0)
                                snprintf(ret_message, message_size, "%s", m->error_message ? m->error_message : "");
                        return -EREMOTEIO;
                }
                if (id == 2 && ret_result)
                        *ret_result = TAKE_PTR(m->body);
        }
        return 0;
}
