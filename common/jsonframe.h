/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put)
#define _cleanup_json_ _cleanup_(json_object_putp)

/*
 * Line-framed JSON: one object per line, '\n' terminated. A frame (without its '\n')
 * is at most max_frame bytes; a longer one is discarded up to its newline and reported
 * once as -E2BIG, after which reading carries on with the next frame. The reader holds
 * at most max_frame + 1 bytes whatever the peer sends.
 */
typedef struct FrameReader FrameReader;

FrameReader *frame_reader_new(size_t max_frame);
FrameReader *frame_reader_free(FrameReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(FrameReader *, frame_reader_free)

/* One read() from fd into the buffer. Returns bytes read (>0), 0 at EOF, -EAGAIN, -errno.
 * Reads nothing (returns -ENOBUFS) while a complete frame is still waiting: call
 * frame_reader_next() until it returns 0 first. */
ssize_t frame_reader_fill(FrameReader *r, int fd);
/* The same, reading at most max bytes (a daemon bounds the work one wakeup does). */
ssize_t frame_reader_fill_max(FrameReader *r, int fd, size_t max);
/* Feed bytes directly (tests, fuzzing). Returns bytes consumed (may be < len when the
 * buffer holds a complete frame: call next() and feed the rest again). */
size_t frame_reader_feed(FrameReader *r, const void *data, size_t len);
/* Returns 1 with the next frame (not NUL-terminated in general; valid until the next call
 * on r), 0 when no complete frame is buffered, -E2BIG once for each oversized frame. */
int frame_reader_next(FrameReader *r, const char **ret_frame, size_t *ret_len);
/* Bytes buffered of a frame not yet complete (a peer stalled mid-frame has > 0). */
size_t frame_reader_pending(const FrameReader *r);

/*
 * What one frame from a peer may make json-c allocate. json-c spends about 800 bytes on
 * an empty object, 150 on an empty array and 60-100 on a scalar or key, so a 1 MiB line
 * of "[{},{},..." costs some 270 MiB and 0.2 s to parse: the frame cap alone bounds
 * neither. max_values counts every value and every key (an upper bound: each one but the
 * first follows a '{', '[', ',' or ':'), max_containers the objects and arrays among them.
 */
typedef struct JsonFrameLimits {
        int max_depth;
        size_t max_containers;
        size_t max_values;
} JsonFrameLimits;

/*
 * Counts the frame's containers and values without allocating (a linear scan, strings
 * skipped): -E2BIG as soon as either is over its limit, else 0. Malformed input is left
 * to the parser.
 */
int json_frame_scan(const char *frame, size_t len, const JsonFrameLimits *limits);

/*
 * Parse one frame: must be a JSON object, valid UTF-8, no NUL byte, nesting at most
 * max_depth. Returns 0, -EBADMSG (not JSON / not an object / bad UTF-8 / NUL),
 * -ELOOP (too deep). json_frame_parse() is for input seatd trusts (its own files,
 * libnftables); json_frame_parse_limited() scans first and also returns -E2BIG (more
 * containers or values than limits allow) before anything is allocated: every frame from
 * a peer goes through it.
 */
int json_frame_parse(const char *frame, size_t len, int max_depth, json_object **ret);
int json_frame_parse_limited(const char *frame, size_t len, const JsonFrameLimits *limits, json_object **ret);
/* Serialise o compactly plus '\n'. -E2BIG when longer than max_frame (without '\n'). */
int json_frame_format(json_object *o, size_t max_frame, char **ret, size_t *ret_len);

/*
 * Type-checked getters. Missing field: -ENOENT when required, else 0 and *ret unchanged
 * (so callers set defaults first). Wrong type or out of range: -EINVAL. On failure
 * *ret_field (if given) names the field for the error message.
 */
int json_get_string(json_object *o, const char *key, bool required, size_t max_len, const char **ret);
int json_get_int64(json_object *o, const char *key, bool required, int64_t min, int64_t max, int64_t *ret);
int json_get_bool(json_object *o, const char *key, bool required, bool *ret);
int json_get_array(json_object *o, const char *key, bool required, size_t max_items, json_object **ret);
int json_get_object(json_object *o, const char *key, bool required, json_object **ret);
/* Base64 string field decoded; at most max_bytes decoded. -E2BIG beyond. */
int json_get_base64(json_object *o, const char *key, bool required, size_t max_bytes, void **ret, size_t *ret_len);
/* Array of strings, each at most max_len, at most max_items, no NUL inside. NULL-terminated. */
int json_get_strv(json_object *o, const char *key, bool required, size_t max_items, size_t max_len, char ***ret);

/* Builders that take v, so a caller can pass json_object_new_*() straight in: json_add() sets
 * o[key] = v, json_append() appends v to the array arr. -ENOMEM, with v put, when v is NULL
 * (its constructor ran out of memory) or json-c could not add it. */
int json_add(json_object *o, const char *key, json_object *v);
int json_append(json_object *arr, json_object *v);
