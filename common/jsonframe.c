/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <string.h>

#include "base64.h"
#include "jsonframe.h"

struct FrameReader {
        size_t max_frame;
        size_t cap;        /* max_frame + 1: the longest frame plus its newline */
        char *buf;
        size_t start, end; /* unread bytes are buf[start, end) */
        size_t scanned;    /* bytes after start known to hold no newline */
        bool discarding;   /* inside an oversized frame: drop up to the next newline */
};

FrameReader *frame_reader_new(size_t max_frame) {
        if (max_frame == 0 || max_frame > (size_t) INT_MAX)
                return NULL;
        _cleanup_(frame_reader_freep) FrameReader *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        r->max_frame = max_frame;
        r->cap = max_frame + 1;
        r->buf = malloc(r->cap);
        if (!r->buf)
                return NULL;
        return TAKE_PTR(r);
}

FrameReader *frame_reader_free(FrameReader *r) {
        if (!r)
                return NULL;
        free(r->buf);
        return mfree(r);
}

static void frame_reader_compact(FrameReader *r) {
        if (r->start == 0)
                return;
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
}

ssize_t frame_reader_fill(FrameReader *r, int fd) {
        return frame_reader_fill_max(r, fd, SIZE_MAX);
}

ssize_t frame_reader_fill_max(FrameReader *r, int fd, size_t max) {
        size_t space = MIN(r->cap - r->end, max);
        if (space == 0)
                return -ENOBUFS;
        ssize_t n = read(fd, r->buf + r->end, space);
        if (n < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : negative_errno();
        r->end += (size_t) n;
        return n;
}

size_t frame_reader_feed(FrameReader *r, const void *data, size_t len) {
        size_t n = MIN(len, r->cap - r->end);
        memcpy(r->buf + r->end, data, n);
        r->end += n;
        return n;
}

size_t frame_reader_pending(const FrameReader *r) {
        return r->end - r->start;
}

int frame_reader_next(FrameReader *r, const char **ret_frame, size_t *ret_len) {
        for (;;) {
                char *from = r->buf + r->start + r->scanned;
                char *nl = memchr(from, '\n', r->end - r->start - r->scanned);

                if (nl) {
                        size_t len = (size_t) (nl - (r->buf + r->start));
                        const char *frame = r->buf + r->start;
                        r->start += len + 1;
                        r->scanned = 0;
                        if (r->discarding) {
                                r->discarding = false;
                                continue;
                        }
                        *ret_frame = frame;
                        *ret_len = len;
                        return 1;
                }

                if (r->discarding) {
                        r->start = r->end = r->scanned = 0;
                        return 0;
                }
                if (r->end - r->start > r->max_frame) {
                        /* No newline within max_frame bytes: drop it all, up to its end. */
                        r->discarding = true;
                        r->start = r->end = r->scanned = 0;
                        return -E2BIG;
                }
                r->scanned = r->end - r->start;
                frame_reader_compact(r);
                return 0;
        }
}

int json_frame_scan(const char *frame, size_t len, const JsonFrameLimits *limits) {
        size_t containers = 0, values = 1;

        for (size_t i = 0; i < len; i++) {
                switch (frame[i]) {
                case '"':
                        /* Skip the string: up to the next quote that is not escaped. */
                        for (i++; i < len && frame[i] != '"'; i++)
                                if (frame[i] == '\\')
                                        i++;
                        break;
                case '{':
                case '[':
                        if (++containers > limits->max_containers || ++values > limits->max_values)
                                return -E2BIG;
                        break;
                case ',':
                case ':':
                        if (++values > limits->max_values)
                                return -E2BIG;
                        break;
                default:
                        break;
                }
        }
        return 0;
}

int json_frame_parse(const char *frame, size_t len, int max_depth, json_object **ret) {
        const JsonFrameLimits unlimited = { .max_depth = max_depth, .max_containers = SIZE_MAX, .max_values = SIZE_MAX };
        return json_frame_parse_limited(frame, len, &unlimited, ret);
}

int json_frame_parse_limited(const char *frame, size_t len, const JsonFrameLimits *limits, json_object **ret) {
        int max_depth = limits->max_depth;

        if (len > (size_t) INT_MAX || memchr(frame, '\0', len))
                return -EBADMSG;
        if ((limits->max_containers != SIZE_MAX || limits->max_values != SIZE_MAX) && json_frame_scan(frame, len, limits) < 0)
                return -E2BIG;

        json_tokener *tok = json_tokener_new_ex(max_depth);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

        json_object *o = json_tokener_parse_ex(tok, frame, (int) len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);

        if (jerr == json_tokener_error_depth) {
                json_object_put(o);
                return -ELOOP;
        }
        if (!o || jerr != json_tokener_success) {
                json_object_put(o);
                return -EBADMSG;
        }
        for (size_t i = end; i < len; i++)
                if (!strchr(" \t\r", frame[i])) {
                        json_object_put(o);
                        return -EBADMSG;
                }
        if (!json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return -EBADMSG;
        }
        *ret = o;
        return 0;
}

int json_frame_format(json_object *o, size_t max_frame, char **ret, size_t *ret_len) {
        size_t len = 0;
        const char *s = json_object_to_json_string_length(
                o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        if (!s)
                return -ENOMEM;
        if (len > max_frame)
                return -E2BIG;
        char *out = malloc(len + 2);
        if (!out)
                return -ENOMEM;
        memcpy(out, s, len);
        out[len] = '\n';
        out[len + 1] = '\0';
        *ret = out;
        if (ret_len)
                *ret_len = len + 1;
        return 0;
}

static int json_get_typed(json_object *o, const char *key, bool required, json_type type, json_object **ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v))
                return required ? -ENOENT : 0;
        if (!json_object_is_type(v, type))
                return -EINVAL;
        *ret = v;
        return 1;
}

int json_get_string(json_object *o, const char *key, bool required, size_t max_len, const char **ret) {
        json_object *v;
        int r = json_get_typed(o, key, required, json_type_string, &v);
        if (r <= 0)
                return r;
        size_t len = (size_t) json_object_get_string_len(v);
        const char *s = json_object_get_string(v);
        if (len > max_len || memchr(s, '\0', len))
                return -EINVAL;
        *ret = s;
        return 0;
}

int json_get_int64(json_object *o, const char *key, bool required, int64_t min, int64_t max, int64_t *ret) {
        json_object *v;
        int r = json_get_typed(o, key, required, json_type_int, &v);
        if (r <= 0)
                return r;
        errno = 0;
        int64_t i = json_object_get_int64(v);
        /* json-c clamps what does not fit; a clamped value is out of any range we use. */
        if (i < min || i > max || i == INT64_MAX || i == INT64_MIN)
                return -EINVAL;
        *ret = i;
        return 0;
}

int json_get_bool(json_object *o, const char *key, bool required, bool *ret) {
        json_object *v;
        int r = json_get_typed(o, key, required, json_type_boolean, &v);
        if (r <= 0)
                return r;
        *ret = json_object_get_boolean(v);
        return 0;
}

int json_get_array(json_object *o, const char *key, bool required, size_t max_items, json_object **ret) {
        json_object *v;
        int r = json_get_typed(o, key, required, json_type_array, &v);
        if (r <= 0)
                return r;
        if (json_object_array_length(v) > max_items)
                return -E2BIG;
        *ret = v;
        return 0;
}

int json_get_object(json_object *o, const char *key, bool required, json_object **ret) {
        json_object *v;
        int r = json_get_typed(o, key, required, json_type_object, &v);
        if (r <= 0)
                return r;
        *ret = v;
        return 0;
}

int json_get_base64(json_object *o, const char *key, bool required, size_t max_bytes, void **ret, size_t *ret_len) {
        const char *s = NULL;
        size_t max_chars = base64_encoded_len(max_bytes);
        json_object *v;
        int r = json_get_typed(o, key, required, json_type_string, &v);
        if (r <= 0)
                return r;
        size_t len = (size_t) json_object_get_string_len(v);
        if (len > max_chars)
                return -E2BIG;
        s = json_object_get_string(v);
        return base64_decode(s, len, max_bytes, ret, ret_len);
}

int json_get_strv(json_object *o, const char *key, bool required, size_t max_items, size_t max_len, char ***ret) {
        json_object *a = NULL;
        int r = json_get_array(o, key, required, max_items, &a);
        if (r < 0 || !a)
                return r;

        size_t n = json_object_array_length(a);
        _cleanup_strv_free_ char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *v = json_object_array_get_idx(a, i);
                if (!json_object_is_type(v, json_type_string))
                        return -EINVAL;
                size_t len = (size_t) json_object_get_string_len(v);
                const char *s = json_object_get_string(v);
                if (len > max_len || memchr(s, '\0', len))
                        return -EINVAL;
                l[i] = strndup(s, len);
                if (!l[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int json_add(json_object *o, const char *key, json_object *v) {
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int json_append(json_object *arr, json_object *v) {
        if (!v || json_object_array_add(arr, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}
