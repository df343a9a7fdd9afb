/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The control protocol (docs/protocol-control.md): seatctl <-> seatd, JSON lines. A pure
 * codec of buffers; the method's own params are checked by its handler with the
 * jsonframe.h getters. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define CONTROL_PROTO_VERSION 1
#define CONTROL_MAX_FRAME (1024u * 1024u)
#define CONTROL_MAX_DEPTH 16
/* What one frame a client sends may hold (jsonframe.h JsonFrameLimits), checked before
 * json-c allocates anything. The largest request, seat.exec with AGENT_ARGV_MAX +
 * AGENT_ENV_MAX strings, has about 2100 values and 4 containers. seatd parses requests on
 * its event loop, beside tamper detection: at these caps a 1 MiB frame costs json-c under
 * 1 MiB and at most ~12 ms here (a 1 MiB frame of '{},' cost 270 MiB and 0.3 s). */
#define CONTROL_MAX_CONTAINERS 64
#define CONTROL_MAX_VALUES 4096
#define CONTROL_METHOD_MAX 64

#define CONTROL_ERR_MALFORMED "malformed"
#define CONTROL_ERR_TOO_LARGE "too_large"
#define CONTROL_ERR_UNKNOWN_METHOD "unknown_method"
#define CONTROL_ERR_INVALID "invalid"
#define CONTROL_ERR_STATE "state"
#define CONTROL_ERR_DENIED "denied"
#define CONTROL_ERR_NOT_FOUND "not_found"
#define CONTROL_ERR_EXISTS "exists"
#define CONTROL_ERR_VERIFICATION "verification"
#define CONTROL_ERR_VERSION "unsupported_version"
#define CONTROL_ERR_IO "io"
#define CONTROL_ERR_CANCELLED "cancelled"
#define CONTROL_ERR_INTERNAL "internal"
#define CONTROL_ERR_UNSUPPORTED "unsupported" /* the seat's image cannot do this (e.g. no terminal support) */

typedef enum ControlKind {
        CONTROL_REQUEST,  /* has method, body = params (an object, empty when omitted) */
        CONTROL_RESULT,   /* body = result */
        CONTROL_ERROR,    /* error_code, error_message */
        CONTROL_EVENT,    /* progress and streamed events: type names it, body = its payload */
} ControlKind;

typedef struct ControlMsg {
        int64_t id;
        ControlKind kind;
        char *method;        /* CONTROL_REQUEST */
        char *type;          /* CONTROL_EVENT: "progress", "output", "exit", … */
        json_object *body;   /* owned reference; never NULL after a successful parse */
        char *error_code;    /* CONTROL_ERROR */
        char *error_message; /* CONTROL_ERROR */
} ControlMsg;

typedef struct ControlParseError {
        int64_t id;
        const char *code;
        char message[192];
} ControlParseError;

ControlMsg *control_msg_free(ControlMsg *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(ControlMsg *, control_msg_free)
#define _cleanup_control_msg_ _cleanup_(control_msg_freep)

/* One frame without its '\n', from a peer seatd does not trust (a client's request):
 * -EBADMSG malformed, -E2BIG over CONTROL_MAX_CONTAINERS / CONTROL_MAX_VALUES (code
 * too_large), -EINVAL bad field, with err filled in. */
int control_msg_parse(const char *frame, size_t len, ControlMsg **ret, ControlParseError *err);
/* The same for seatctl reading seatd's replies, which it trusts and which may be large (a
 * list of 10000 archives): only the depth is capped. */
int control_msg_parse_reply(const char *frame, size_t len, ControlMsg **ret, ControlParseError *err);

/* Formatting; each returns one line ending in '\n'. body may be NULL ({}); it is not
 * consumed (the caller keeps its reference). */
int control_format_request(int64_t id, const char *method, json_object *params, char **ret, size_t *ret_len);
int control_format_result(int64_t id, json_object *result, char **ret, size_t *ret_len);
int control_format_event(int64_t id, const char *type, json_object *body, char **ret, size_t *ret_len);
int control_format_error(int64_t id, const char *code, const char *message, char **ret, size_t *ret_len);
int control_format_progress(int64_t id, const char *what, uint64_t done, uint64_t total, char **ret, size_t *ret_len);
