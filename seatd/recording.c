/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* recording.c: asciicast v2 files of PTY sessions, capped (see recording.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/macro.h"
#include "common/utf8.h"
#include "recording.h"

/* Room kept under the cap for the closing marker, so a capped file still says why. */
#define MARKER_RESERVE 256
#define TITLE_MAX 256

struct Recording {
        int fd;
        char *path;
        int64_t start_ns;
        uint64_t max_bytes, written, dropped;
        bool record_input;
        bool full; /* the cap was reached: nothing more is written but the marker */
        /* the start of a UTF-8 sequence the next chunk completes, per direction */
        uint8_t pend[2][4];
        size_t n_pend[2];
};

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One line, whole or not at all: a reader must never meet half an event. */
static void put_line(Recording *r, const char *line, size_t len, uint64_t raw, bool marker) {
        uint64_t room = r->max_bytes > MARKER_RESERVE ? r->max_bytes - MARKER_RESERVE : 0;
        if (!marker && (r->full || r->written + len + 1 > room)) {
                r->full = true;
                r->dropped += raw;
                return;
        }
        struct iovec v[2] = { { (void *) line, len }, { (void *) "\n", 1 } };
        ssize_t n = writev(r->fd, v, 2);
        if (n != (ssize_t) len + 1) {
                /* The host's disk, not the guest: recorded as left out all the same. */
                r->full = true;
                r->dropped += raw;
                return;
        }
        r->written += (uint64_t) n;
}

static void put_event(Recording *r, const char *type, const char *text, size_t text_len, uint64_t raw, bool marker) {
        _cleanup_json_ json_object *s = json_object_new_string_len(text, (int) text_len);
        if (!s) {
                r->dropped += raw;
                return;
        }
        const char *js = json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        _cleanup_free_ char *line = NULL;
        int64_t t = now_ns() - r->start_ns;
        int n = asprintf(&line, "[%" PRId64 ".%06" PRId64 ", \"%s\", %s]", t / 1000000000, (t % 1000000000) / 1000, type, js);
        if (n < 0) {
                r->dropped += raw;
                return;
        }
        put_line(r, line, (size_t) n, raw, marker);
}

/* Bytes of one direction as text: what a previous chunk left pending goes first, and an
 * incomplete sequence at the end waits for the next chunk. */
static void put_bytes(Recording *r, unsigned dir, const char *type, const void *data, size_t len) {
        if (len == 0)
                return; /* (stdin's end alone: data may be NULL) */
        if (r->full) {
                r->dropped += len;
                return;
        }
        _cleanup_free_ uint8_t *buf = malloc(r->n_pend[dir] + len);
        if (!buf) {
                r->dropped += len;
                return;
        }
        memcpy(buf, r->pend[dir], r->n_pend[dir]);
        memcpy(buf + r->n_pend[dir], data, len);
        size_t total = r->n_pend[dir] + len, keep = utf8_pending_tail(buf, total);
        r->n_pend[dir] = keep;
        memcpy(r->pend[dir], buf + total - keep, keep);
        if (total == keep)
                return;
        size_t tlen = 0;
        _cleanup_free_ char *text = utf8_from_bytes(buf, total - keep, total - keep, &tlen);
        if (!text) {
                r->dropped += total - keep;
                return;
        }
        put_event(r, type, text, tlen, total - keep, false);
}

static Recording *recording_free(Recording *r) {
        if (r) {
                safe_close(r->fd);
                free(r->path);
                free(r);
        }
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Recording *, recording_free)

int recording_open(const char *path, const RecordingSpec *spec, Recording **ret) {
        _cleanup_(recording_freep) Recording *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        *r = (Recording) { .fd = -EBADF, .max_bytes = spec->max_bytes, .record_input = spec->record_input,
                           .start_ns = now_ns(), .path = strdup(path) };
        if (!r->path)
                return -ENOMEM;
        r->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (r->fd < 0)
                return -errno;
        size_t tlen = 0;
        _cleanup_free_ char *title = spec->command ? utf8_from_bytes(spec->command, strlen(spec->command), TITLE_MAX, &tlen) : NULL;
        _cleanup_json_ json_object *h = json_object_new_object(), *env = json_object_new_object();
        if (!h || !env)
                return -ENOMEM;
        json_object_object_add(h, "version", json_object_new_int(2));
        json_object_object_add(h, "width", json_object_new_int64(spec->cols));
        json_object_object_add(h, "height", json_object_new_int64(spec->rows));
        json_object_object_add(h, "timestamp", json_object_new_int64((int64_t) time(NULL)));
        if (title)
                json_object_object_add(h, "title", json_object_new_string_len(title, (int) tlen));
        json_object_object_add(env, "TERM", json_object_new_string("xterm-256color"));
        json_object_object_add(h, "env", json_object_get(env));
        const char *js = json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        put_line(r, js, strlen(js), 0, true);
        *ret = TAKE_PTR(r);
        return 0;
}

void recording_output(Recording *r, const void *data, size_t len) {
        if (r)
                put_bytes(r, 0, "o", data, len);
}

void recording_input(Recording *r, const void *data, size_t len) {
        if (r && r->record_input)
                put_bytes(r, 1, "i", data, len);
}

void recording_resize(Recording *r, int64_t cols, int64_t rows) {
        char size[48];
        if (!r)
                return;
        int n = snprintf(size, sizeof(size), "%" PRId64 "x%" PRId64, cols, rows);
        if (r->full)
                return;
        put_event(r, "r", size, (size_t) n, 0, false);
}

uint64_t recording_close(Recording *r) {
        if (!r)
                return 0;
        /* Bytes still pending at the end were an incomplete sequence: U+FFFD each. */
        for (unsigned dir = 0; dir < 2; dir++)
                if (r->n_pend[dir] && !r->full) {
                        size_t tlen = 0, n = r->n_pend[dir];
                        r->n_pend[dir] = 0;
                        _cleanup_free_ char *text = utf8_from_bytes(r->pend[dir], n, n, &tlen);
                        if (text)
                                put_event(r, dir ? "i" : "o", text, tlen, n, false);
                } else
                        r->dropped += r->n_pend[dir];
        uint64_t dropped = r->dropped;
        if (dropped > 0) {
                char msg[160];
                int n = snprintf(msg, sizeof(msg), "recording truncated: %" PRIu64 " bytes of the session were not recorded (cap %" PRIu64 " bytes)",
                                 dropped, r->max_bytes);
                put_event(r, "m", msg, (size_t) n, 0, true);
                _cleanup_free_ char *side = NULL, *count = NULL;
                if (asprintf(&side, "%s.dropped", r->path) >= 0 && asprintf(&count, "%" PRIu64 "\n", dropped) >= 0)
                        (void) write_file_atomic(side, count, strlen(count), 0600);
        }
        (void) fsync(r->fd);
        recording_free(r);
        return dropped;
}
