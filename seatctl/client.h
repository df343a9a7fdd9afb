/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "common/control-proto.h"
#include "common/error.h"

typedef struct CtlClient CtlClient;

/* Connect to seatd ($SEATD_SOCKET, or path) and say hello. */
int ctl_connect(const char *path, CtlClient **ret, SeatError **ret_error);
/* participant: the participant socket beside path (or $SEATD_PARTICIPANT_SOCKET), for
 * token-scoped calls; seatd serves only those there. */
int ctl_connect_as(const char *path, bool participant, CtlClient **ret, SeatError **ret_error);
CtlClient *ctl_client_free(CtlClient *c);
/* Ends the connection from another thread: a call blocked on it returns ECONNRESET, and
 * seatd cancels what it was doing for it (an exec's process group is killed). */
void ctl_client_shutdown(CtlClient *c);
/* A participant's token: token_file (--token-file), else $SEATD_TOKEN; *ret = NULL when
 * neither is given (the caller is an operator). */
int ctl_load_token(const char *token_file, char **ret, SeatError **ret_error);
/* --user UID[:GID] of exec, shell and mcp: the guest user a command runs as (a UID alone
 * brings the GID of the same number). -EINVAL unless numbers up to 4294967294. */
int ctl_parse_user(const char *s, int64_t *ret_uid, int64_t *ret_gid);
DEFINE_TRIVIAL_CLEANUP_FUNC(CtlClient *, ctl_client_free)

/* Called for progress and other events of the request; < 0 aborts. */
typedef int (*CtlEventFn)(const char *type, json_object *body, void *userdata);

/* One request; params is not consumed. On an error reply returns -EREMOTEIO with the
 * server's message in ret_error and its code in *ret_code (static string, may be NULL). */
int ctl_call(CtlClient *c, const char *method, json_object *params, CtlEventFn on_event, void *userdata,
             json_object **ret_result, const char **ret_code, SeatError **ret_error);

/* For a conversation of several requests at once (seatctl exec -it): the socket, to poll;
 * send a request without waiting (*ret_id: its id); and take the next message: 1 and
 * *ret when one is whole, 0 when none is yet (read: one read() first, for after poll()
 * said the socket is readable), < 0 when the connection failed or ended. */
int ctl_client_fd(CtlClient *c);
int ctl_send(CtlClient *c, const char *method, json_object *params, int64_t *ret_id, SeatError **ret_error);
/* A stream's bytes in a follow-up's params (seat.exec.stdin, seat.forward.send): "data" in
 * base64, and "eof": true when they are the last. -ENOMEM. */
int ctl_params_add_data(json_object *params, const void *data, size_t n, bool eof);
int ctl_next(CtlClient *c, bool read, ControlMsg **ret, SeatError **ret_error);

/* A progress bar on stderr when it is a terminal (a CtlEventFn for "progress"). */
/* An "output" event of seat.exec: its stream ("stdout", "stderr", "pty") and its bytes,
 * decoded (at most 1 MiB). -EPROTO when seatd sent something else. */
int ctl_output_event(json_object *body, const char **ret_stream, void **ret_bytes, size_t *ret_len);
/* The same, written here: stderr's to stderr, the rest to stdout. */
int ctl_write_output(json_object *body);

int ctl_progress_bar(const char *type, json_object *body, void *userdata);
void ctl_progress_end(void);
