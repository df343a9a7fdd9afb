/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent-proto.h"
#include "base64.h"
#include "jsonframe.h"

#define INT_FIELD_MAX ((int64_t) 1 << 53)
#define TIMEOUT_MAX_MS ((int64_t) 7 * 24 * 3600 * 1000)
#define OUTPUT_CAP_MAX ((int64_t) 1 << 40)
#define ID_MAX_U32 ((int64_t) 4294967294LL)
#define MESSAGE_MAX 4096
#define CODE_MAX 64
#define HOSTNAME_MAX 64
#define IFNAME_MAX 15
#define ADDRESS_MAX 64

static const char *const type_names[_AGENT_MSG_MAX] = {
        [AGENT_MSG_HELLO] = "hello",
        [AGENT_MSG_CONFIGURE] = "configure",
        [AGENT_MSG_EXEC] = "exec",
        [AGENT_MSG_STDIN] = "stdin",
        [AGENT_MSG_KILL] = "kill",
        [AGENT_MSG_FILE_PUT] = "file_put",
        [AGENT_MSG_FILE_GET] = "file_get",
        [AGENT_MSG_PING] = "ping",
        [AGENT_MSG_SHUTDOWN] = "shutdown",
        [AGENT_MSG_RESIZE] = "resize",
        [AGENT_MSG_CONNECT] = "connect",
        [AGENT_MSG_OK] = "ok",
        [AGENT_MSG_ERROR] = "error",
        [AGENT_MSG_STARTED] = "started",
        [AGENT_MSG_OUTPUT] = "output",
        [AGENT_MSG_EXIT] = "exit",
        [AGENT_MSG_DATA] = "data",
        [AGENT_MSG_PONG] = "pong",
};

const char *agent_msg_type_to_string(AgentMsgType t) {
        if ((unsigned) t >= _AGENT_MSG_MAX)
                return NULL;
        return type_names[t];
}

int agent_msg_type_from_string(const char *s) {
        for (unsigned i = 0; i < _AGENT_MSG_MAX; i++)
                if (strcmp(type_names[i], s) == 0)
                        return (int) i;
        return -EINVAL;
}

bool agent_msg_type_is_request(AgentMsgType t) {
        return t <= AGENT_MSG_CONNECT;
}

AgentMsg *agent_msg_new(AgentMsgType type, int64_t id) {
        AgentMsg *m = calloc(1, sizeof(*m));
        if (!m)
                return NULL;
        m->type = type;
        m->id = id;
        switch (type) {
        case AGENT_MSG_EXEC:
                m->exec.stdin_eof = true;
                break;
        case AGENT_MSG_KILL:
                m->kill.signal = 9;
                break;
        case AGENT_MSG_FILE_PUT:
                m->file_put.mode = 0644;
                break;
        case AGENT_MSG_FILE_GET:
                m->file_get.length = AGENT_CHUNK_MAX;
                break;
        case AGENT_MSG_OK:
                m->ok.size = -1;
                break;
        case AGENT_MSG_DATA:
                m->data.size = -1;
                break;
        default:
                break;
        }
        return m;
}

/* ---- parsing ---- */

typedef struct ParseCtx {
        json_object *o;
        AgentParseError *err;
        int64_t id;
} ParseCtx;

static int parse_fail(ParseCtx *c, int r, const char *code, const char *fmt, ...) _printf_(4, 5);
static int parse_fail(ParseCtx *c, int r, const char *code, const char *fmt, ...) {
        if (c->err) {
                va_list ap;
                c->err->id = c->id;
                c->err->code = code;
                va_start(ap, fmt);
                (void) vsnprintf(c->err->message, sizeof(c->err->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

static int field_fail(ParseCtx *c, const char *key, int r) {
        if (r == -ENOMEM)
                return parse_fail(c, -ENOMEM, AGENT_ERR_IO, "out of memory");
        if (r == -ENOENT)
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "missing required field '%s'", key);
        if (r == -E2BIG)
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field '%s' is too large", key);
        return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field '%s' has the wrong type or an invalid value", key);
}

static int get_str(ParseCtx *c, const char *key, bool required, size_t max, char **ret) {
        const char *s = NULL;
        int r = json_get_string(c->o, key, required, max, &s);
        if (r < 0)
                return field_fail(c, key, r);
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : field_fail(c, key, -ENOMEM);
}

static int get_int(ParseCtx *c, const char *key, bool required, int64_t min, int64_t max, int64_t *ret) {
        int r = json_get_int64(c->o, key, required, min, max, ret);
        return r < 0 ? field_fail(c, key, r) : 0;
}

static int get_bool(ParseCtx *c, const char *key, bool required, bool *ret) {
        int r = json_get_bool(c->o, key, required, ret);
        return r < 0 ? field_fail(c, key, r) : 0;
}

static int get_b64(ParseCtx *c, const char *key, bool required, size_t max, uint8_t **ret, size_t *ret_len) {
        void *p = NULL;
        size_t n = 0;
        int r = json_get_base64(c->o, key, required, max, &p, &n);
        if (r < 0)
                return field_fail(c, key, r);
        if (p) {
                *ret = p;
                *ret_len = n;
        }
        return 0;
}

static int get_strv(ParseCtx *c, const char *key, bool required, size_t max_items, size_t max_len, char ***ret) {
        int r = json_get_strv(c->o, key, required, max_items, max_len, ret);
        return r < 0 ? field_fail(c, key, r) : 0;
}

#define ALNUM_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

static bool only_chars(const char *s, const char *set) {
        return s[strspn(s, set)] == '\0';
}

static bool hostname_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > HOSTNAME_MAX || s[0] == '-' || s[0] == '.')
                return false;
        return only_chars(s, ALNUM_CHARS "-.");
}

static bool machine_id_valid(const char *s) {
        return strlen(s) == 32 && only_chars(s, "0123456789abcdef");
}

static bool printable(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

/* ---- the fields ---- */

/* One field of a message as it stands on the wire: its key, its type and bounds, and where
 * it lives in its struct. The parser and the formatter walk the same list, so a field's key,
 * its bounds and its place in the frame are written once and the two sides cannot drift. */
typedef enum FieldKind {
        FIELD_INT,  /* int64_t, min..max */
        FIELD_BOOL, /* bool */
        FIELD_STR,  /* char *, at most max bytes */
        FIELD_STRV, /* char **, at most max items of item_max bytes */
        FIELD_B64,  /* uint8_t * and its size_t length at len_offset, at most max bytes */
} FieldKind;

typedef struct Field {
        const char *key;
        FieldKind kind;
        bool required;
        bool omit_empty; /* formatting: a NULL buffer or a false flag stays out of the frame */
        int64_t min, max;
        size_t item_max;
        size_t offset;
        size_t len_offset;
} Field;

#define INT_FIELD(T, k, req, lo, hi, f) \
        { .key = k, .kind = FIELD_INT, .required = req, .min = lo, .max = hi, .offset = offsetof(T, f) }
#define BOOL_FIELD(T, k, f, ...) { .key = k, .kind = FIELD_BOOL, .offset = offsetof(T, f), __VA_ARGS__ }
#define STR_FIELD(T, k, req, n, f) { .key = k, .kind = FIELD_STR, .required = req, .max = n, .offset = offsetof(T, f) }
#define STRV_FIELD(T, k, req, items, n, f) \
        { .key = k, .kind = FIELD_STRV, .required = req, .max = items, .item_max = n, .offset = offsetof(T, f) }
#define B64_FIELD(T, k, req, n, f, len, ...)                                                   \
        { .key = k, .kind = FIELD_B64, .required = req, .max = n, .offset = offsetof(T, f),    \
          .len_offset = offsetof(T, len), __VA_ARGS__ }
#define FIELDS(t) t, ELEMENTSOF(t)
/* (the same in a MsgSpec: designated, as clang wants every member of a positional one) */
#define SPEC_FIELDS(t) .fields = t, .n_fields = ELEMENTSOF(t)

static const Field hello_fields[] = {
        INT_FIELD(AgentMsg, "version", true, 0, 1000000, hello.version),
        /* The rest is the reply's: a request carries the version only. */
        STR_FIELD(AgentMsg, "agent", false, 256, hello.agent),
        STRV_FIELD(AgentMsg, "capabilities", false, AGENT_CAPS_MAX, 64, hello.capabilities),
        INT_FIELD(AgentMsg, "boot_ms", false, 0, INT_FIELD_MAX, hello.boot_ms),
        INT_FIELD(AgentMsg, "uptime_ms", false, 0, INT_FIELD_MAX, hello.uptime_ms),
        INT_FIELD(AgentMsg, "max_frame", false, 0, INT_FIELD_MAX, hello.max_frame),
        INT_FIELD(AgentMsg, "max_execs", false, 0, INT_FIELD_MAX, hello.max_execs),
        INT_FIELD(AgentMsg, "max_output", false, 0, INT_FIELD_MAX, hello.max_output),
        INT_FIELD(AgentMsg, "max_file", false, 0, INT_FIELD_MAX, hello.max_file),
};

static const Field configure_fields[] = {
        STR_FIELD(AgentMsg, "hostname", false, HOSTNAME_MAX, configure.hostname),
        STR_FIELD(AgentMsg, "seat_id", false, 128, configure.seat_id),
        STR_FIELD(AgentMsg, "machine_id", false, 32, configure.machine_id),
        B64_FIELD(AgentMsg, "entropy", false, AGENT_ENTROPY_MAX, configure.entropy, configure.entropy_len,
                  .omit_empty = true),
};

/* "time": {"sec": S, "nsec": N}: the host's wall clock, for the guest to take. */
static const Field time_fields[] = {
        INT_FIELD(AgentMsg, "sec", true, 0, AGENT_TIME_SEC_MAX, configure.time_sec),
        INT_FIELD(AgentMsg, "nsec", true, 0, 999999999, configure.time_nsec),
};

static const Field address_fields[] = {
        STR_FIELD(AgentAddress, "ifname", true, IFNAME_MAX, ifname),
        STR_FIELD(AgentAddress, "address", true, ADDRESS_MAX, address),
        STR_FIELD(AgentAddress, "gateway", false, ADDRESS_MAX, gateway),
};

static const Field exec_fields[] = {
        STRV_FIELD(AgentMsg, "argv", true, AGENT_ARGV_MAX, AGENT_STR_MAX, exec.argv),
        STRV_FIELD(AgentMsg, "env", false, AGENT_ENV_MAX, AGENT_STR_MAX, exec.env),
        STR_FIELD(AgentMsg, "cwd", false, AGENT_STR_MAX, exec.cwd),
        B64_FIELD(AgentMsg, "stdin", false, AGENT_CHUNK_MAX, exec.stdin_data, exec.stdin_len, .omit_empty = true),
        BOOL_FIELD(AgentMsg, "stdin_eof", exec.stdin_eof),
        INT_FIELD(AgentMsg, "timeout_ms", false, 0, TIMEOUT_MAX_MS, exec.timeout_ms),
        INT_FIELD(AgentMsg, "max_output", false, 0, OUTPUT_CAP_MAX, exec.max_output),
        INT_FIELD(AgentMsg, "uid", false, 0, ID_MAX_U32, exec.uid),
        INT_FIELD(AgentMsg, "gid", false, 0, ID_MAX_U32, exec.gid),
};

/* "pty": {"rows": R, "cols": C}: the exec runs on a pseudo-terminal of that size. */
static const Field pty_fields[] = {
        INT_FIELD(AgentMsg, "rows", true, 1, AGENT_PTY_DIM_MAX, exec.pty_rows),
        INT_FIELD(AgentMsg, "cols", true, 1, AGENT_PTY_DIM_MAX, exec.pty_cols),
};

static const Field resize_fields[] = {
        INT_FIELD(AgentMsg, "exec", true, 1, AGENT_ID_MAX, resize.exec),
        INT_FIELD(AgentMsg, "rows", true, 1, AGENT_PTY_DIM_MAX, resize.rows),
        INT_FIELD(AgentMsg, "cols", true, 1, AGENT_PTY_DIM_MAX, resize.cols),
};

static const Field stdin_fields[] = {
        INT_FIELD(AgentMsg, "exec", true, 1, AGENT_ID_MAX, stdin_msg.exec),
        B64_FIELD(AgentMsg, "data", false, AGENT_CHUNK_MAX, stdin_msg.data, stdin_msg.len),
        BOOL_FIELD(AgentMsg, "eof", stdin_msg.eof),
};

static const Field connect_fields[] = {
        STR_FIELD(AgentMsg, "host", true, AGENT_CONNECT_HOST_MAX, connect.host),
        INT_FIELD(AgentMsg, "port", true, 1, 65535, connect.port),
        INT_FIELD(AgentMsg, "timeout_ms", false, 0, AGENT_CONNECT_TIMEOUT_MAX_MS, connect.timeout_ms),
};

static const Field kill_fields[] = {
        INT_FIELD(AgentMsg, "exec", true, 1, AGENT_ID_MAX, kill.exec),
        INT_FIELD(AgentMsg, "signal", false, 1, 64, kill.signal),
};

static const Field file_put_fields[] = {
        STR_FIELD(AgentMsg, "path", true, AGENT_STR_MAX, file_put.path),
        INT_FIELD(AgentMsg, "offset", false, 0, INT_FIELD_MAX, file_put.offset),
        B64_FIELD(AgentMsg, "data", false, AGENT_CHUNK_MAX, file_put.data, file_put.len),
        INT_FIELD(AgentMsg, "mode", false, 0, 07777, file_put.mode),
        BOOL_FIELD(AgentMsg, "final", file_put.final),
};

static const Field file_get_fields[] = {
        STR_FIELD(AgentMsg, "path", true, AGENT_STR_MAX, file_get.path),
        INT_FIELD(AgentMsg, "offset", false, 0, INT_FIELD_MAX, file_get.offset),
        INT_FIELD(AgentMsg, "length", false, 0, AGENT_CHUNK_MAX, file_get.length),
};

static const Field shutdown_fields[] = {
        STR_FIELD(AgentMsg, "action", true, 16, shutdown.action),
};

static const Field ok_fields[] = {
        INT_FIELD(AgentMsg, "size", false, -1, INT_FIELD_MAX, ok.size),
};

static const Field error_fields[] = {
        STR_FIELD(AgentMsg, "code", true, CODE_MAX, error.code),
        STR_FIELD(AgentMsg, "message", false, MESSAGE_MAX, error.message),
};

static const Field started_fields[] = {
        INT_FIELD(AgentMsg, "pid", true, 0, INT32_MAX, started.pid),
};

/* After "stream", which is not a field of its own (two flags). */
static const Field output_fields[] = {
        B64_FIELD(AgentMsg, "data", true, AGENT_CHUNK_MAX, output.data, output.len),
        /* Only when true: byte for byte what agent_format_output() writes otherwise. */
        BOOL_FIELD(AgentMsg, "eof", output.eof, .omit_empty = true),
};

static const Field exit_fields[] = {
        INT_FIELD(AgentMsg, "code", true, -1, 255, exit.code),
        INT_FIELD(AgentMsg, "signal", false, 0, 64, exit.signal),
        INT_FIELD(AgentMsg, "duration_ms", false, 0, INT_FIELD_MAX, exit.duration_ms),
        BOOL_FIELD(AgentMsg, "timed_out", exit.timed_out),
        BOOL_FIELD(AgentMsg, "truncated", exit.truncated),
        INT_FIELD(AgentMsg, "stdout_bytes", false, 0, INT_FIELD_MAX, exit.stdout_bytes),
        INT_FIELD(AgentMsg, "stderr_bytes", false, 0, INT_FIELD_MAX, exit.stderr_bytes),
        STR_FIELD(AgentMsg, "error", false, MESSAGE_MAX, exit.error),
};

static const Field data_fields[] = {
        B64_FIELD(AgentMsg, "data", true, AGENT_CHUNK_MAX, data.data, data.len),
        BOOL_FIELD(AgentMsg, "eof", data.eof),
        INT_FIELD(AgentMsg, "size", false, -1, INT_FIELD_MAX, data.size),
};

static const Field pong_fields[] = {
        INT_FIELD(AgentMsg, "uptime_ms", false, 0, INT_FIELD_MAX, pong.uptime_ms),
};

static int parse_field(ParseCtx *c, void *base, const Field *f) {
        void *p = (uint8_t *) base + f->offset;
        switch (f->kind) {
        case FIELD_INT:
                return get_int(c, f->key, f->required, f->min, f->max, p);
        case FIELD_BOOL:
                return get_bool(c, f->key, f->required, p);
        case FIELD_STR:
                return get_str(c, f->key, f->required, (size_t) f->max, p);
        case FIELD_STRV:
                return get_strv(c, f->key, f->required, (size_t) f->max, f->item_max, p);
        case FIELD_B64:
                return get_b64(c, f->key, f->required, (size_t) f->max, p, (size_t *) ((uint8_t *) base + f->len_offset));
        }
        return -EINVAL;
}

/* In the table's order: the first bad field is the one the error names. */
static int parse_fields(ParseCtx *c, void *base, const Field *fields, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int r = parse_field(c, base, &fields[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_address(ParseCtx *c, json_object *a, AgentAddress *ret) {
        ParseCtx sub = { .o = a, .err = c->err, .id = c->id };
        int r;
        if (!json_object_is_type(a, json_type_object))
                return field_fail(c, "addresses", -EINVAL);
        if ((r = parse_fields(&sub, ret, FIELDS(address_fields))) < 0)
                return r;
        if (!printable(ret->ifname) || !printable(ret->address) || (ret->gateway && !printable(ret->gateway)))
                return field_fail(c, "addresses", -EINVAL);
        return 0;
}

/* An optional object of two bounded integers ("time", "pty"): one message for anything
 * wrong inside it, naming both bounds. */
static int parse_int_pair(ParseCtx *c, AgentMsg *m, const char *key, const Field pair[static 2], bool *ret_has) {
        json_object *t = NULL;
        int r = json_get_object(c->o, key, false, &t);
        if (r < 0)
                return field_fail(c, key, r);
        if (!t)
                return 0;
        ParseCtx sub = { .o = t, .err = c->err, .id = c->id };
        if (parse_fields(&sub, m, pair, 2) < 0)
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID,
                                  "field '%s' must be {\"%s\": %" PRId64 "..%" PRId64 ", \"%s\": %" PRId64 "..%" PRId64 "}", key,
                                  pair[0].key, pair[0].min, pair[0].max, pair[1].key, pair[1].min, pair[1].max);
        *ret_has = true;
        return 0;
}

static int parse_configure(ParseCtx *c, AgentMsg *m) {
        json_object *a = NULL;
        int r;
        if ((r = parse_fields(c, m, FIELDS(configure_fields))) < 0)
                return r;
        if (m->configure.hostname && !hostname_valid(m->configure.hostname))
                return field_fail(c, "hostname", -EINVAL);
        if (m->configure.seat_id && !printable(m->configure.seat_id))
                return field_fail(c, "seat_id", -EINVAL);
        if (m->configure.machine_id && !machine_id_valid(m->configure.machine_id))
                return field_fail(c, "machine_id", -EINVAL);
        if ((r = parse_int_pair(c, m, "time", time_fields, &m->configure.has_time)) < 0)
                return r;

        r = json_get_array(c->o, "addresses", false, AGENT_ADDR_MAX, &a);
        if (r < 0)
                return field_fail(c, "addresses", r);
        if (!a)
                return 0;
        size_t n = json_object_array_length(a);
        m->configure.addresses = calloc(n ? n : 1, sizeof(AgentAddress));
        if (!m->configure.addresses)
                return field_fail(c, "addresses", -ENOMEM);
        for (size_t i = 0; i < n; i++) {
                m->configure.n_addresses = i + 1;
                r = parse_address(c, json_object_array_get_idx(a, i), &m->configure.addresses[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_exec(ParseCtx *c, AgentMsg *m) {
        int r = parse_fields(c, m, FIELDS(exec_fields));
        if (r < 0)
                return r;
        if (!m->exec.argv[0] || m->exec.argv[0][0] == '\0')
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'argv' must hold at least one non-empty string");
        for (char **e = m->exec.env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq || eq == *e)
                        return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'env' entries must be NAME=VALUE");
        }
        if (m->exec.cwd && m->exec.cwd[0] != '/')
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'cwd' must be an absolute path");
        return parse_int_pair(c, m, "pty", pty_fields, &m->exec.has_pty);
}

/* A host name or an address, as the guest's resolver takes it: letters, digits and
 * ".-_:" (an IPv6 address has colons), nothing a resolver could read as something else. */
static bool connect_host_valid(const char *h) {
        size_t n = strlen(h);
        if (n == 0 || n > AGENT_CONNECT_HOST_MAX)
                return false;
        return only_chars(h, ALNUM_CHARS ".-_:");
}

static int parse_connect(ParseCtx *c, AgentMsg *m) {
        int r = parse_fields(c, m, FIELDS(connect_fields));
        if (r < 0)
                return r;
        if (!connect_host_valid(m->connect.host))
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID,
                                  "field 'host' must be a host name or an address (letters, digits, '.-_:')");
        return 0;
}

static int check_path(ParseCtx *c, const char *path) {
        if (path[0] != '/')
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'path' must be an absolute path");
        return 0;
}

/* file_put and file_get: the path each names must be absolute. */
static int parse_file(ParseCtx *c, AgentMsg *m) {
        bool put = m->type == AGENT_MSG_FILE_PUT;
        int r = put ? parse_fields(c, m, FIELDS(file_put_fields)) : parse_fields(c, m, FIELDS(file_get_fields));
        if (r < 0)
                return r;
        return check_path(c, put ? m->file_put.path : m->file_get.path);
}

static int parse_shutdown(ParseCtx *c, AgentMsg *m) {
        int r = parse_fields(c, m, FIELDS(shutdown_fields));
        if (r < 0)
                return r;
        if (!strcmp(m->shutdown.action, "poweroff") || !strcmp(m->shutdown.action, "reboot"))
                return 0;
        return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'action' must be \"poweroff\" or \"reboot\"");
}

static int parse_output(ParseCtx *c, AgentMsg *m) {
        char *stream = NULL;
        int r;
        if ((r = get_str(c, "stream", true, 8, &stream)) < 0)
                return r;
        bool ok = !strcmp(stream, "stdout") || !strcmp(stream, "stderr") || !strcmp(stream, "pty");
        m->output.is_stderr = !strcmp(stream, "stderr");
        m->output.is_pty = !strcmp(stream, "pty");
        free(stream);
        if (!ok)
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'stream' must be \"stdout\", \"stderr\" or \"pty\"");
        return parse_fields(c, m, FIELDS(output_fields));
}

static int parse_exit(ParseCtx *c, AgentMsg *m) {
        int r = parse_fields(c, m, FIELDS(exit_fields));
        if (r < 0)
                return r;
        if ((m->exit.code == -1) != (m->exit.signal != 0))
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "fields 'code' and 'signal' disagree");
        return 0;
}

/* ---- formatting ---- */

static int add_int(json_object *o, const char *key, int64_t v) {
        return json_add(o, key, json_object_new_int64(v));
}

static int add_bool(json_object *o, const char *key, bool v) {
        return json_add(o, key, json_object_new_boolean(v));
}

static int add_str(json_object *o, const char *key, const char *s) {
        if (!s)
                return 0;
        return json_add(o, key, json_object_new_string(s));
}

static int add_b64(json_object *o, const char *key, const uint8_t *data, size_t len) {
        _cleanup_free_ char *s = NULL;
        size_t n;
        if (len > AGENT_CHUNK_MAX)
                return -EINVAL;
        int r = base64_encode(data ? data : (const uint8_t *) "", len, &s, &n);
        if (r < 0)
                return r;
        return json_add(o, key, json_object_new_string_len(s, (int) n));
}

static int add_strv(json_object *o, const char *key, char **l) {
        if (!l)
                return 0;
        json_object *a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        for (char **i = l; *i; i++)
                if (json_object_array_add(a, json_object_new_string(*i)) < 0) {
                        json_object_put(a);
                        return -ENOMEM;
                }
        return json_add(o, key, a);
}

static int format_field(json_object *o, const void *base, const Field *f) {
        const void *p = (const uint8_t *) base + f->offset;
        switch (f->kind) {
        case FIELD_INT:
                return add_int(o, f->key, *(const int64_t *) p);
        case FIELD_BOOL:
                if (f->omit_empty && !*(const bool *) p)
                        return 0;
                return add_bool(o, f->key, *(const bool *) p);
        case FIELD_STR:
                return add_str(o, f->key, *(char *const *) p);
        case FIELD_STRV:
                return add_strv(o, f->key, *(char **const *) p);
        case FIELD_B64:
                if (f->omit_empty && !*(uint8_t *const *) p)
                        return 0;
                return add_b64(o, f->key, *(uint8_t *const *) p, *(const size_t *) ((const uint8_t *) base + f->len_offset));
        }
        return -EINVAL;
}

static int format_fields(json_object *o, const void *base, const Field *fields, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int r = format_field(o, base, &fields[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The other side of parse_int_pair(): out of bounds is refused, not sent. */
static int format_int_pair(json_object *o, const AgentMsg *m, const char *key, const Field pair[static 2]) {
        for (size_t i = 0; i < 2; i++) {
                int64_t v = *(const int64_t *) ((const uint8_t *) m + pair[i].offset);
                if (v < pair[i].min || v > pair[i].max)
                        return -EINVAL;
        }
        json_object *t = json_object_new_object();
        int r = json_add(o, key, t);
        if (r < 0)
                return r;
        return format_fields(t, m, pair, 2);
}

static int format_hello(json_object *o, const AgentMsg *m) {
        /* A request (no agent): the version only. */
        return format_fields(o, m, hello_fields, m->hello.agent ? ELEMENTSOF(hello_fields) : 1);
}

static int format_configure(json_object *o, const AgentMsg *m) {
        int r;
        if ((r = format_fields(o, m, FIELDS(configure_fields))) < 0)
                return r;
        if (m->configure.has_time && (r = format_int_pair(o, m, "time", time_fields)) < 0)
                return r;
        if (!m->configure.addresses)
                return 0;
        json_object *a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        if ((r = json_add(o, "addresses", a)) < 0)
                return r;
        for (size_t i = 0; i < m->configure.n_addresses; i++) {
                const AgentAddress *ad = &m->configure.addresses[i];
                json_object *e = json_object_new_object();
                if (json_append(a, e) < 0)
                        return -ENOMEM;
                if ((r = format_fields(e, ad, FIELDS(address_fields))) < 0)
                        return r;
        }
        return 0;
}

static int format_exec(json_object *o, const AgentMsg *m) {
        int r;
        if (!m->exec.argv || !m->exec.argv[0])
                return -EINVAL;
        if ((r = format_fields(o, m, FIELDS(exec_fields))) < 0)
                return r;
        if (m->exec.has_pty)
                return format_int_pair(o, m, "pty", pty_fields);
        return 0;
}

static int format_resize(json_object *o, const AgentMsg *m) {
        if (m->resize.exec < 1 || m->resize.rows < 1 || m->resize.rows > AGENT_PTY_DIM_MAX || m->resize.cols < 1 ||
            m->resize.cols > AGENT_PTY_DIM_MAX)
                return -EINVAL;
        return format_fields(o, m, FIELDS(resize_fields));
}

static int format_connect(json_object *o, const AgentMsg *m) {
        if (!m->connect.host || !connect_host_valid(m->connect.host) || m->connect.port < 1 || m->connect.port > 65535 ||
            m->connect.timeout_ms < 0 || m->connect.timeout_ms > AGENT_CONNECT_TIMEOUT_MAX_MS)
                return -EINVAL;
        return format_fields(o, m, FIELDS(connect_fields));
}

static int format_file(json_object *o, const AgentMsg *m) {
        if (m->type == AGENT_MSG_FILE_PUT)
                return m->file_put.path ? format_fields(o, m, FIELDS(file_put_fields)) : -EINVAL;
        return m->file_get.path ? format_fields(o, m, FIELDS(file_get_fields)) : -EINVAL;
}

static int format_shutdown(json_object *o, const AgentMsg *m) {
        return m->shutdown.action ? format_fields(o, m, FIELDS(shutdown_fields)) : -EINVAL;
}

static int format_ok(json_object *o, const AgentMsg *m) {
        /* -1: no size to tell. */
        return m->ok.size >= 0 ? format_fields(o, m, FIELDS(ok_fields)) : 0;
}

static int format_error(json_object *o, const AgentMsg *m) {
        return m->error.code ? format_fields(o, m, FIELDS(error_fields)) : -EINVAL;
}

static int format_output(json_object *o, const AgentMsg *m) {
        int r = add_str(o, "stream", m->output.is_pty ? "pty" : m->output.is_stderr ? "stderr" : "stdout");
        if (r < 0)
                return r;
        return format_fields(o, m, FIELDS(output_fields));
}

/* Each type's fields (what it carries and owns), and where the fields alone do not make the
 * message, the function that reads or writes it whole (checks across fields, nested objects,
 * a request's shorter form). */
typedef struct MsgSpec {
        const Field *fields;
        size_t n_fields;
        int (*parse)(ParseCtx *c, AgentMsg *m);           /* NULL: the fields */
        int (*format)(json_object *o, const AgentMsg *m); /* NULL: the fields */
} MsgSpec;

static const MsgSpec specs[_AGENT_MSG_MAX] = {
        [AGENT_MSG_HELLO] = { SPEC_FIELDS(hello_fields), .format = format_hello },
        [AGENT_MSG_CONFIGURE] = { SPEC_FIELDS(configure_fields), .parse = parse_configure, .format = format_configure },
        [AGENT_MSG_EXEC] = { SPEC_FIELDS(exec_fields), .parse = parse_exec, .format = format_exec },
        [AGENT_MSG_STDIN] = { SPEC_FIELDS(stdin_fields) },
        [AGENT_MSG_KILL] = { SPEC_FIELDS(kill_fields) },
        [AGENT_MSG_FILE_PUT] = { SPEC_FIELDS(file_put_fields), .parse = parse_file, .format = format_file },
        [AGENT_MSG_FILE_GET] = { SPEC_FIELDS(file_get_fields), .parse = parse_file, .format = format_file },
        [AGENT_MSG_PING] = {},
        [AGENT_MSG_SHUTDOWN] = { SPEC_FIELDS(shutdown_fields), .parse = parse_shutdown, .format = format_shutdown },
        [AGENT_MSG_RESIZE] = { SPEC_FIELDS(resize_fields), .format = format_resize },
        [AGENT_MSG_CONNECT] = { SPEC_FIELDS(connect_fields), .parse = parse_connect, .format = format_connect },
        [AGENT_MSG_OK] = { SPEC_FIELDS(ok_fields), .format = format_ok },
        [AGENT_MSG_ERROR] = { SPEC_FIELDS(error_fields), .format = format_error },
        [AGENT_MSG_STARTED] = { SPEC_FIELDS(started_fields) },
        [AGENT_MSG_OUTPUT] = { SPEC_FIELDS(output_fields), .parse = parse_output, .format = format_output },
        [AGENT_MSG_EXIT] = { SPEC_FIELDS(exit_fields), .parse = parse_exit },
        [AGENT_MSG_DATA] = { SPEC_FIELDS(data_fields) },
        [AGENT_MSG_PONG] = { SPEC_FIELDS(pong_fields) },
};

/* The buffers and string lists among the fields are the message's own. */
static void free_fields(void *base, const Field *fields, size_t n) {
        for (size_t i = 0; i < n; i++) {
                void *p = (uint8_t *) base + fields[i].offset;
                if (fields[i].kind == FIELD_STRV)
                        strv_free(*(char ***) p);
                else if (fields[i].kind == FIELD_STR || fields[i].kind == FIELD_B64)
                        free(*(void **) p);
        }
}

AgentMsg *agent_msg_free(AgentMsg *m) {
        if (!m)
                return NULL;
        if ((unsigned) m->type < _AGENT_MSG_MAX)
                free_fields(m, specs[m->type].fields, specs[m->type].n_fields);
        if (m->type == AGENT_MSG_CONFIGURE) {
                for (size_t i = 0; i < m->configure.n_addresses; i++)
                        free_fields(&m->configure.addresses[i], FIELDS(address_fields));
                free(m->configure.addresses);
        }
        return mfree(m);
}

int agent_msg_parse(const char *frame, size_t len, AgentMsg **ret, AgentParseError *err) {
        _cleanup_json_ json_object *o = NULL;
        ParseCtx c = { .err = err };
        const char *type = NULL;
        int r;

        if (err)
                *err = (AgentParseError) { .code = AGENT_ERR_MALFORMED };

        static const JsonFrameLimits limits = {
                .max_depth = AGENT_MAX_DEPTH, .max_containers = AGENT_MAX_CONTAINERS, .max_values = AGENT_MAX_VALUES,
        };
        r = json_frame_parse_limited(frame, len, &limits, &o);
        if (r == -ELOOP)
                return parse_fail(&c, -EBADMSG, AGENT_ERR_MALFORMED, "JSON nested deeper than %d", AGENT_MAX_DEPTH);
        if (r == -E2BIG)
                return parse_fail(&c, -E2BIG, AGENT_ERR_TOO_LARGE, "frame holds more than %d JSON objects and arrays or %d values",
                                  AGENT_MAX_CONTAINERS, AGENT_MAX_VALUES);
        if (r < 0)
                return parse_fail(&c, -EBADMSG, AGENT_ERR_MALFORMED, "frame is not one JSON object in valid UTF-8");
        c.o = o;

        /* The id first, so that every later error can be answered to the right request. */
        if (json_get_string(o, "type", true, 32, &type) < 0)
                type = NULL;
        int t = type ? agent_msg_type_from_string(type) : -EINVAL;
        int64_t id = 0;
        r = json_get_int64(o, "id", true, t == AGENT_MSG_ERROR ? 0 : 1, AGENT_ID_MAX, &id);
        if (r < 0)
                return field_fail(&c, "id", r);
        c.id = id;
        if (!type)
                return field_fail(&c, "type", json_get_string(o, "type", true, 32, &type));
        if (t < 0)
                return parse_fail(&c, -EOPNOTSUPP, AGENT_ERR_UNKNOWN_TYPE, "unknown message type");

        _cleanup_agent_msg_ AgentMsg *m = agent_msg_new((AgentMsgType) t, id);
        if (!m)
                return parse_fail(&c, -ENOMEM, AGENT_ERR_IO, "out of memory");
        const MsgSpec *s = &specs[t];
        r = s->parse ? s->parse(&c, m) : parse_fields(&c, m, s->fields, s->n_fields);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int agent_msg_format(const AgentMsg *m, size_t max_frame, char **ret, size_t *ret_len) {
        int r;

        if ((unsigned) m->type >= _AGENT_MSG_MAX || m->id < 0 || m->id > AGENT_ID_MAX ||
            (m->id == 0 && m->type != AGENT_MSG_ERROR))
                return -EINVAL;

        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        if ((r = add_str(o, "type", type_names[m->type])) < 0 || (r = add_int(o, "id", m->id)) < 0)
                return r;
        const MsgSpec *s = &specs[m->type];
        r = s->format ? s->format(o, m) : format_fields(o, m, s->fields, s->n_fields);
        if (r < 0)
                return r;
        return json_frame_format(o, max_frame, ret, ret_len);
}

int agent_format_error(int64_t id, const char *code, const char *message, size_t max_frame,
                       char **ret, size_t *ret_len) {
        AgentMsg m = {
                .type = AGENT_MSG_ERROR,
                .id = id,
                .error = { .code = (char *) code, .message = (char *) message },
        };
        return agent_msg_format(&m, max_frame, ret, ret_len);
}

int agent_format_ok(int64_t id, int64_t size, size_t max_frame, char **ret, size_t *ret_len) {
        AgentMsg m = { .type = AGENT_MSG_OK, .id = id, .ok = { .size = size } };
        return agent_msg_format(&m, max_frame, ret, ret_len);
}

static int format_output_stream(int64_t id, const char *stream, const uint8_t *data, size_t len, size_t max_frame,
                                char **ret, size_t *ret_len) {
        char head[96];

        if (id < 1 || id > AGENT_ID_MAX || len > AGENT_CHUNK_MAX)
                return -EINVAL;
        int h = snprintf(head, sizeof(head), "{\"type\":\"output\",\"id\":%lld,\"stream\":\"%s\",\"data\":\"",
                         (long long) id, stream);
        if (h < 0 || (size_t) h >= sizeof(head))
                return -EINVAL;
        size_t b64 = base64_encoded_len(len), total = (size_t) h + b64 + 2; /* '"}' */
        if (total > max_frame)
                return -E2BIG;
        char *out = malloc(total + 2), *o = out;
        if (!out)
                return -ENOMEM;
        memcpy(o, head, (size_t) h);
        o += h;
        base64_encode_to(data ? data : (const uint8_t *) "", len, o);
        o += b64;
        memcpy(o, "\"}\n", 4);
        *ret = out;
        if (ret_len)
                *ret_len = total + 1;
        return 0;
}

int agent_format_output(int64_t id, bool is_stderr, const uint8_t *data, size_t len, size_t max_frame,
                        char **ret, size_t *ret_len) {
        return format_output_stream(id, is_stderr ? "stderr" : "stdout", data, len, max_frame, ret, ret_len);
}

int agent_format_output_pty(int64_t id, const uint8_t *data, size_t len, size_t max_frame, char **ret, size_t *ret_len) {
        return format_output_stream(id, "pty", data, len, max_frame, ret, ret_len);
}
