/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/*
 * seat.exec's optional "tool" object: the front end that asked for this exec on behalf of
 * someone else (seatctl mcp: an agent's MCP tool call) says which tool, with which
 * arguments, for which client. It is the caller's word, recorded as such: the exec record
 * beside it is seatd's own. The arguments are kept up to EXEC_TOOL_ARGS_KEEP bytes, cut at
 * a UTF-8 boundary; their BLAKE2b-512 and length bind the whole.
 */
#define EXEC_TOOL_NAME_MAX 64
#define EXEC_TOOL_CLIENT_MAX 256
#define EXEC_TOOL_REQUEST_MAX 64
#define EXEC_TOOL_ARGS_KEEP (4u * 1024u)

/* *ret = NULL when params has no "tool"; -EINVAL with a message naming the field. */
int exec_tool_record(json_object *params, json_object **ret, SeatError **ret_error);

/* The "tool.call" audit record of a front end's call that runs nothing of its own in the
 * guest (seat.status, seat.forward): who, the session it was authorised for, the method and
 * the tool record; the caller adds what else the method knows. NULL: out of memory. */
json_object *exec_tool_call_record(json_object *tool, int64_t uid, bool operator, int64_t generation, const char *method);

/* seat.exec's optional "uid" and "gid" (default 0, the agent's default: the guest is the
 * participant's, root in it included); at most 4294967294 ((uid_t) -1 means "none"). */
int exec_guest_user(json_object *params, int64_t *ret_uid, int64_t *ret_gid, SeatError **ret_error);
