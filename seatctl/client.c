/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "client.h"
#include "common/base64.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"

#define DEFAULT_SOCKET "/run/seatd/control.sock"
#define PARTICIPANT_SOCKET_NAME "participant.sock"
#define TOKEN_MAX 256

struct CtlClient {
        int fd;
        FrameReader *reader;
        int64_t next_id;
};

int ctl_parse_user(const char *s, int64_t *ret_uid, int64_t *ret_gid) {
        char *end = NULL;
        errno = 0;
        unsigned long long u = strtoull(s, &end, 10), g;
        /* strtoull takes "-1" as ULLONG_MAX and leading blanks: digits only */
        if (errno || end == s || *s < '0' || *s > '9' || u > 4294967294ULL)
                return -EINVAL;
        g = u;
        if (*end == ':') {
                const char *gs = end + 1;
                g = strtoull(gs, &end, 10);
                if (errno || end == gs || *gs < '0' || *gs > '9' || g > 4294967294ULL)
                        return -EINVAL;
        }
        if (*end)
                return -EINVAL;
        *ret_uid = (int64_t) u;
        *ret_gid = (int64_t) g;
        return 0;
}

/* A participant's token comes from a file or the environment, never from argv (argv is
 * visible to every user of the host in /proc). */
int ctl_load_token(const char *token_file, char **ret, SeatError **ret_error) {
        const char *env = getenv("SEATD_TOKEN");
        *ret = NULL;
        if (token_file) {
                _cleanup_free_ char *t = NULL;
                size_t n = 0;
                int r = read_file_capped(token_file, TOKEN_MAX, &t, &n);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "read token file '%s': %s", token_file, strerror(-r));
                while (n > 0 && strchr("\r\n \t", t[n - 1]))
                        t[--n] = '\0';
                *ret = TAKE_PTR(t);
        } else if (env && *env && !(*ret = strdup(env)))
                return -ENOMEM;
        return 0;
}

void ctl_client_shutdown(CtlClient *c) {
        if (c && c->fd >= 0)
                (void) shutdown(c->fd, SHUT_RDWR);
}

CtlClient *ctl_client_free(CtlClient *c) {
        if (!c)
                return NULL;
        safe_close(c->fd);
        frame_reader_free(c->reader);
        return mfree(c);
}

/* The next message, waiting for it (ctl_next() reads at most once a call). */
static int read_msg(CtlClient *c, ControlMsg **ret, SeatError **ret_error) {
        for (;;) {
                int r = ctl_next(c, true, ret, ret_error);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
}

int ctl_call(CtlClient *c, const char *method, json_object *params, CtlEventFn on_event, void *userdata,
             json_object **ret_result, const char **ret_code, SeatError **ret_error) {
        int64_t id;
        int r = ctl_send(c, method, params, &id, ret_error);
        if (r < 0)
                return r;

        for (;;) {
                _cleanup_control_msg_ ControlMsg *m = NULL;
                r = read_msg(c, &m, ret_error);
                if (r < 0)
                        return r;
                if (m->id != id)
                        return seat_error_set(ret_error, EPROTO, "seatd answered request %lld, expected %lld",
                                              (long long) m->id, (long long) id);
                switch (m->kind) {
                case CONTROL_RESULT:
                        if (ret_result)
                                *ret_result = TAKE_PTR(m->body);
                        return 0;
                case CONTROL_ERROR: {
                        static _Thread_local char code[64]; /* seatctl mcp calls from threads */
                        snprintf(code, sizeof(code), "%s", m->error_code);
                        if (ret_code)
                                *ret_code = code;
                        _cleanup_free_ char *msg = log_escape(m->error_message, strlen(m->error_message), 2048);
                        return seat_error_set(ret_error, EREMOTEIO, "%s", msg ? msg : m->error_code);
                }
                case CONTROL_EVENT:
                        if (on_event && (r = on_event(m->type, m->body, userdata)) < 0)
                                return seat_error_set(ret_error, -r, "handling '%s' failed", m->type);
                        continue;
                default:
                        return seat_error_set(ret_error, EPROTO, "seatd sent a request");
                }
        }
}

int ctl_client_fd(CtlClient *c) {
        return c->fd;
}

int ctl_params_add_data(json_object *params, const void *data, size_t n, bool eof) {
        _cleanup_free_ char *b64 = NULL;
        if (!params || base64_encode(data, n, &b64, NULL) < 0)
                return -ENOMEM;
        json_object_object_add(params, "data", json_object_new_string(b64));
        if (eof)
                json_object_object_add(params, "eof", json_object_new_boolean(true));
        return 0;
}

int ctl_send(CtlClient *c, const char *method, json_object *params, int64_t *ret_id, SeatError **ret_error) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int64_t id = c->next_id++;
        int r = control_format_request(id, method, params, &line, &len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot send '%s': %s", method, strerror(-r));
        r = loop_send(c->fd, line, len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "write to seatd: %s", strerror(-r));
        if (ret_id)
                *ret_id = id;
        return 0;
}

int ctl_next(CtlClient *c, bool read, ControlMsg **ret, SeatError **ret_error) {
        for (;;) {
                const char *frame;
                size_t len;
                int r = frame_reader_next(c->reader, &frame, &len);
                if (r == -E2BIG)
                        return seat_error_set(ret_error, EPROTO, "seatd sent a line over 1 MiB");
                if (r > 0) {
                        ControlParseError err;
                        if (control_msg_parse_reply(frame, len, ret, &err) < 0)
                                return seat_error_set(ret_error, EPROTO, "seatd sent a bad line: %s", err.message);
                        return 1;
                }
                if (!read)
                        return 0;
                read = false;
                ssize_t n = frame_reader_fill(c->reader, c->fd);
                if (n == 0)
                        return seat_error_set(ret_error, ECONNRESET, "seatd closed the connection");
                if (n == -EINTR || n == -EAGAIN)
                        return 0;
                if (n < 0)
                        return seat_error_set(ret_error, (int) -n, "read from seatd: %s", strerror((int) -n));
        }
}

/* A participant talks to the participant socket: $SEATD_PARTICIPANT_SOCKET, else the one
 * beside the operator socket (seatd's default: participant.sock in the same directory). */
static char *participant_socket_of(const char *operator_path) {
        const char *env = getenv("SEATD_PARTICIPANT_SOCKET");
        char *p = NULL;
        if (env && *env)
                return strdup(env);
        const char *slash = strrchr(operator_path, '/');
        int dirlen = slash ? (int) (slash - operator_path) : 1;
        if (asprintf(&p, "%.*s/" PARTICIPANT_SOCKET_NAME, dirlen, slash ? operator_path : ".") < 0)
                return NULL;
        return p;
}

int ctl_connect_as(const char *path, bool participant, CtlClient **ret, SeatError **ret_error) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_(ctl_client_freep) CtlClient *c = calloc(1, sizeof(*c));
        _cleanup_free_ char *ppath = NULL;

        if (!c)
                return -ENOMEM;
        c->fd = -EBADF;
        c->next_id = 1;
        if (!path)
                path = getenv("SEATD_SOCKET") ?: DEFAULT_SOCKET;
        if (participant) {
                ppath = participant_socket_of(path);
                if (!ppath)
                        return -ENOMEM;
                path = ppath;
        }
        if (strlen(path) >= sizeof(sa.sun_path))
                return seat_error_set(ret_error, ENAMETOOLONG, "socket path '%s' is too long", path);
        strcpy(sa.sun_path, path);
        c->reader = frame_reader_new(CONTROL_MAX_FRAME);
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (!c->reader || c->fd < 0)
                return seat_error_set(ret_error, ENOMEM, "cannot create a socket");
        if (connect(c->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int e = errno;
                if (e == ENOENT || e == ECONNREFUSED)
                        return seat_error_set(ret_error, e, "seatd is not running at '%s' (start it, or set SEATD_SOCKET or --socket)", path);
                if (e == EACCES && !participant)
                        return seat_error_set(ret_error, e, "no permission to talk to seatd at '%s' (run as root or as a member of seatd's admin group; a participant gives its seat token with --token-file or $SEATD_TOKEN)", path);
                return seat_error_set(ret_error, e, "connect to seatd at '%s': %s", path, strerror(e));
        }

        _cleanup_json_ json_object *params = json_object_new_object(), *result = NULL;
        if (!params)
                return -ENOMEM;
        json_object_object_add(params, "version", json_object_new_int(CONTROL_PROTO_VERSION));
        int r = ctl_call(c, "hello", params, NULL, NULL, &result, NULL, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

int ctl_connect(const char *path, CtlClient **ret, SeatError **ret_error) {
        return ctl_connect_as(path, false, ret, ret_error);
}

int ctl_output_event(json_object *body, const char **ret_stream, void **ret_bytes, size_t *ret_len) {
        const char *data = NULL;
        if (json_get_string(body, "stream", true, 8, ret_stream) < 0 || json_get_string(body, "data", true, 1 << 20, &data) < 0 ||
            base64_decode(data, strlen(data), 1 << 20, ret_bytes, ret_len) < 0)
                return -EPROTO;
        return 0;
}

int ctl_write_output(json_object *body) {
        const char *stream = NULL;
        _cleanup_free_ void *bytes = NULL;
        size_t n = 0;
        if (ctl_output_event(body, &stream, &bytes, &n) < 0)
                return -EPROTO;
        return loop_write(!strcmp(stream, "stderr") ? STDERR_FILENO : STDOUT_FILENO, bytes, n);
}

static bool bar_shown;

int ctl_progress_bar(const char *type, json_object *body, void *userdata) {
        const char *what = "";
        int64_t done = 0, total = 0;

        if (strcmp(type, "progress") || !isatty(STDERR_FILENO))
                return 0;
        (void) json_get_string(body, "what", false, 200, &what);
        (void) json_get_int64(body, "done", false, 0, INT64_MAX - 1, &done);
        (void) json_get_int64(body, "total", false, 0, INT64_MAX - 1, &total);
        _cleanup_free_ char *safe = log_escape(what, strlen(what), 48);
        int pct = total > 0 ? (int) (done * 100 / total) : 0;
        char bar[31];
        for (int i = 0; i < 30; i++)
                bar[i] = i < pct * 30 / 100 ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r%-48s [%s] %3d%% %6.1f/%.1f MiB", safe ? safe : "", bar, pct, done / 1048576.0,
                total / 1048576.0);
        bar_shown = true;
        return 0;
}

void ctl_progress_end(void) {
        if (bar_shown)
                fputc('\n', stderr);
        bar_shown = false;
}
