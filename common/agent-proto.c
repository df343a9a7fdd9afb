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

AgentMsg *agent_msg_free(AgentMsg *m) {
        if (!m)
                return NULL;
        switch (m->type) {
        case AGENT_MSG_HELLO:
                free(m->hello.agent);
                strv_free(m->hello.capabilities);
                break;
        case AGENT_MSG_CONFIGURE:
                free(m->configure.hostname);
                free(m->configure.seat_id);
                free(m->configure.machine_id);
                free(m->configure.entropy);
                for (size_t i = 0; i < m->configure.n_addresses; i++) {
                        free(m->configure.addresses[i].ifname);
                        free(m->configure.addresses[i].address);
                        free(m->configure.addresses[i].gateway);
                }
                free(m->configure.addresses);
                break;
        case AGENT_MSG_EXEC:
                strv_free(m->exec.argv);
                strv_free(m->exec.env);
                free(m->exec.cwd);
                free(m->exec.stdin_data);
                break;
        case AGENT_MSG_STDIN:
                free(m->stdin_msg.data);
                break;
        case AGENT_MSG_CONNECT:
                free(m->connect.host);
                break;
        case AGENT_MSG_FILE_PUT:
                free(m->file_put.path);
                free(m->file_put.data);
                break;
        case AGENT_MSG_FILE_GET:
                free(m->file_get.path);
                break;
        case AGENT_MSG_SHUTDOWN:
                free(m->shutdown.action);
                break;
        case AGENT_MSG_ERROR:
                free(m->error.code);
                free(m->error.message);
                break;
        case AGENT_MSG_OUTPUT:
                free(m->output.data);
                break;
        case AGENT_MSG_EXIT:
                free(m->exit.error);
                break;
        case AGENT_MSG_DATA:
                free(m->data.data);
                break;
        default:
                break;
        }
        free(m);
        return NULL;
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

static bool hostname_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > HOSTNAME_MAX || s[0] == '-' || s[0] == '.')
                return false;
        for (const char *p = s; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.", *p))
                        return false;
        return true;
}

static bool machine_id_valid(const char *s) {
        if (strlen(s) != 32)
                return false;
        for (const char *p = s; *p; p++)
                if (!strchr("0123456789abcdef", *p))
                        return false;
        return true;
}

static bool printable(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

static int parse_hello(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_int(c, "version", true, 0, 1000000, &m->hello.version)) < 0 ||
            (r = get_str(c, "agent", false, 256, &m->hello.agent)) < 0 ||
            (r = get_strv(c, "capabilities", false, AGENT_CAPS_MAX, 64, &m->hello.capabilities)) < 0 ||
            (r = get_int(c, "boot_ms", false, 0, INT_FIELD_MAX, &m->hello.boot_ms)) < 0 ||
            (r = get_int(c, "uptime_ms", false, 0, INT_FIELD_MAX, &m->hello.uptime_ms)) < 0 ||
            (r = get_int(c, "max_frame", false, 0, INT_FIELD_MAX, &m->hello.max_frame)) < 0 ||
            (r = get_int(c, "max_execs", false, 0, INT_FIELD_MAX, &m->hello.max_execs)) < 0 ||
            (r = get_int(c, "max_output", false, 0, INT_FIELD_MAX, &m->hello.max_output)) < 0 ||
            (r = get_int(c, "max_file", false, 0, INT_FIELD_MAX, &m->hello.max_file)) < 0)
                return r;
        return 0;
}

static int parse_address(ParseCtx *c, json_object *a, AgentAddress *ret) {
        ParseCtx sub = { .o = a, .err = c->err, .id = c->id };
        int r;
        if (!json_object_is_type(a, json_type_object))
                return field_fail(c, "addresses", -EINVAL);
        if ((r = get_str(&sub, "ifname", true, IFNAME_MAX, &ret->ifname)) < 0 ||
            (r = get_str(&sub, "address", true, ADDRESS_MAX, &ret->address)) < 0 ||
            (r = get_str(&sub, "gateway", false, ADDRESS_MAX, &ret->gateway)) < 0)
                return r;
        if (!printable(ret->ifname) || !printable(ret->address) || (ret->gateway && !printable(ret->gateway)))
                return field_fail(c, "addresses", -EINVAL);
        return 0;
}

/* "time": {"sec": S, "nsec": N}: the host's wall clock, for the guest to take. */
static int parse_time(ParseCtx *c, AgentMsg *m) {
        json_object *t = NULL;
        int r = json_get_object(c->o, "time", false, &t);
        if (r < 0)
                return field_fail(c, "time", r);
        if (!t)
                return 0;
        ParseCtx sub = { .o = t, .err = c->err, .id = c->id };
        if ((r = get_int(&sub, "sec", true, 0, AGENT_TIME_SEC_MAX, &m->configure.time_sec)) < 0 ||
            (r = get_int(&sub, "nsec", true, 0, 999999999, &m->configure.time_nsec)) < 0)
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID,
                                  "field 'time' must be {\"sec\": 0..%" PRId64 ", \"nsec\": 0..999999999}", AGENT_TIME_SEC_MAX);
        m->configure.has_time = true;
        return 0;
}

static int parse_configure(ParseCtx *c, AgentMsg *m) {
        json_object *a = NULL;
        int r;
        if ((r = get_str(c, "hostname", false, HOSTNAME_MAX, &m->configure.hostname)) < 0 ||
            (r = get_str(c, "seat_id", false, 128, &m->configure.seat_id)) < 0 ||
            (r = get_str(c, "machine_id", false, 32, &m->configure.machine_id)) < 0 ||
            (r = get_b64(c, "entropy", false, AGENT_ENTROPY_MAX, &m->configure.entropy, &m->configure.entropy_len)) < 0)
                return r;
        if (m->configure.hostname && !hostname_valid(m->configure.hostname))
                return field_fail(c, "hostname", -EINVAL);
        if (m->configure.seat_id && !printable(m->configure.seat_id))
                return field_fail(c, "seat_id", -EINVAL);
        if (m->configure.machine_id && !machine_id_valid(m->configure.machine_id))
                return field_fail(c, "machine_id", -EINVAL);
        if ((r = parse_time(c, m)) < 0)
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

/* "pty": {"rows": R, "cols": C}: the exec runs on a pseudo-terminal of that size. */
static int parse_pty(ParseCtx *c, AgentMsg *m) {
        json_object *p = NULL;
        int r = json_get_object(c->o, "pty", false, &p);
        if (r < 0)
                return field_fail(c, "pty", r);
        if (!p)
                return 0;
        ParseCtx sub = { .o = p, .err = c->err, .id = c->id };
        if (get_int(&sub, "rows", true, 1, AGENT_PTY_DIM_MAX, &m->exec.pty_rows) < 0 ||
            get_int(&sub, "cols", true, 1, AGENT_PTY_DIM_MAX, &m->exec.pty_cols) < 0)
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'pty' must be {\"rows\": 1..%d, \"cols\": 1..%d}",
                                  AGENT_PTY_DIM_MAX, AGENT_PTY_DIM_MAX);
        m->exec.has_pty = true;
        return 0;
}

static int parse_resize(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_int(c, "exec", true, 1, AGENT_ID_MAX, &m->resize.exec)) < 0 ||
            (r = get_int(c, "rows", true, 1, AGENT_PTY_DIM_MAX, &m->resize.rows)) < 0 ||
            (r = get_int(c, "cols", true, 1, AGENT_PTY_DIM_MAX, &m->resize.cols)) < 0)
                return r;
        return 0;
}

static int parse_exec(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_strv(c, "argv", true, AGENT_ARGV_MAX, AGENT_STR_MAX, &m->exec.argv)) < 0 ||
            (r = get_strv(c, "env", false, AGENT_ENV_MAX, AGENT_STR_MAX, &m->exec.env)) < 0 ||
            (r = get_str(c, "cwd", false, AGENT_STR_MAX, &m->exec.cwd)) < 0 ||
            (r = get_b64(c, "stdin", false, AGENT_CHUNK_MAX, &m->exec.stdin_data, &m->exec.stdin_len)) < 0 ||
            (r = get_bool(c, "stdin_eof", false, &m->exec.stdin_eof)) < 0 ||
            (r = get_int(c, "timeout_ms", false, 0, TIMEOUT_MAX_MS, &m->exec.timeout_ms)) < 0 ||
            (r = get_int(c, "max_output", false, 0, OUTPUT_CAP_MAX, &m->exec.max_output)) < 0 ||
            (r = get_int(c, "uid", false, 0, ID_MAX_U32, &m->exec.uid)) < 0 ||
            (r = get_int(c, "gid", false, 0, ID_MAX_U32, &m->exec.gid)) < 0)
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
        return parse_pty(c, m);
}

static int parse_stdin(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_int(c, "exec", true, 1, AGENT_ID_MAX, &m->stdin_msg.exec)) < 0 ||
            (r = get_b64(c, "data", false, AGENT_CHUNK_MAX, &m->stdin_msg.data, &m->stdin_msg.len)) < 0 ||
            (r = get_bool(c, "eof", false, &m->stdin_msg.eof)) < 0)
                return r;
        return 0;
}

/* A host name or an address, as the guest's resolver takes it: letters, digits and
 * ".-_:" (an IPv6 address has colons), nothing a resolver could read as something else. */
static bool connect_host_valid(const char *h) {
        size_t n = strlen(h);
        if (n == 0 || n > AGENT_CONNECT_HOST_MAX)
                return false;
        for (const char *p = h; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
                      *p == '-' || *p == '_' || *p == ':'))
                        return false;
        return true;
}

static int parse_connect(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_str(c, "host", true, AGENT_CONNECT_HOST_MAX, &m->connect.host)) < 0 ||
            (r = get_int(c, "port", true, 1, 65535, &m->connect.port)) < 0 ||
            (r = get_int(c, "timeout_ms", false, 0, AGENT_CONNECT_TIMEOUT_MAX_MS, &m->connect.timeout_ms)) < 0)
                return r;
        if (!connect_host_valid(m->connect.host))
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID,
                                  "field 'host' must be a host name or an address (letters, digits, '.-_:')");
        return 0;
}

static int parse_kill(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_int(c, "exec", true, 1, AGENT_ID_MAX, &m->kill.exec)) < 0 ||
            (r = get_int(c, "signal", false, 1, 64, &m->kill.signal)) < 0)
                return r;
        return 0;
}

static int check_path(ParseCtx *c, const char *path) {
        if (path[0] != '/')
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'path' must be an absolute path");
        return 0;
}

static int parse_file_put(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_str(c, "path", true, AGENT_STR_MAX, &m->file_put.path)) < 0 ||
            (r = get_int(c, "offset", false, 0, INT_FIELD_MAX, &m->file_put.offset)) < 0 ||
            (r = get_b64(c, "data", false, AGENT_CHUNK_MAX, &m->file_put.data, &m->file_put.len)) < 0 ||
            (r = get_int(c, "mode", false, 0, 07777, &m->file_put.mode)) < 0 ||
            (r = get_bool(c, "final", false, &m->file_put.final)) < 0)
                return r;
        return check_path(c, m->file_put.path);
}

static int parse_file_get(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_str(c, "path", true, AGENT_STR_MAX, &m->file_get.path)) < 0 ||
            (r = get_int(c, "offset", false, 0, INT_FIELD_MAX, &m->file_get.offset)) < 0 ||
            (r = get_int(c, "length", false, 0, AGENT_CHUNK_MAX, &m->file_get.length)) < 0)
                return r;
        return check_path(c, m->file_get.path);
}

static int parse_shutdown(ParseCtx *c, AgentMsg *m) {
        int r = get_str(c, "action", true, 16, &m->shutdown.action);
        if (r < 0)
                return r;
        if (!strcmp(m->shutdown.action, "poweroff") || !strcmp(m->shutdown.action, "reboot"))
                return 0;
        return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "field 'action' must be \"poweroff\" or \"reboot\"");
}

static int parse_ok(ParseCtx *c, AgentMsg *m) {
        return get_int(c, "size", false, -1, INT_FIELD_MAX, &m->ok.size);
}

static int parse_error(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_str(c, "code", true, CODE_MAX, &m->error.code)) < 0 ||
            (r = get_str(c, "message", false, MESSAGE_MAX, &m->error.message)) < 0)
                return r;
        return 0;
}

static int parse_started(ParseCtx *c, AgentMsg *m) {
        return get_int(c, "pid", true, 0, INT32_MAX, &m->started.pid);
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
        if ((r = get_b64(c, "data", true, AGENT_CHUNK_MAX, &m->output.data, &m->output.len)) < 0)
                return r;
        return get_bool(c, "eof", false, &m->output.eof);
}

static int parse_exit(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_int(c, "code", true, -1, 255, &m->exit.code)) < 0 ||
            (r = get_int(c, "signal", false, 0, 64, &m->exit.signal)) < 0 ||
            (r = get_int(c, "duration_ms", false, 0, INT_FIELD_MAX, &m->exit.duration_ms)) < 0 ||
            (r = get_bool(c, "timed_out", false, &m->exit.timed_out)) < 0 ||
            (r = get_bool(c, "truncated", false, &m->exit.truncated)) < 0 ||
            (r = get_int(c, "stdout_bytes", false, 0, INT_FIELD_MAX, &m->exit.stdout_bytes)) < 0 ||
            (r = get_int(c, "stderr_bytes", false, 0, INT_FIELD_MAX, &m->exit.stderr_bytes)) < 0 ||
            (r = get_str(c, "error", false, MESSAGE_MAX, &m->exit.error)) < 0)
                return r;
        if ((m->exit.code == -1) != (m->exit.signal != 0))
                return parse_fail(c, -EINVAL, AGENT_ERR_INVALID, "fields 'code' and 'signal' disagree");
        return 0;
}

static int parse_data(ParseCtx *c, AgentMsg *m) {
        int r;
        if ((r = get_b64(c, "data", true, AGENT_CHUNK_MAX, &m->data.data, &m->data.len)) < 0 ||
            (r = get_bool(c, "eof", false, &m->data.eof)) < 0 ||
            (r = get_int(c, "size", false, -1, INT_FIELD_MAX, &m->data.size)) < 0)
                return r;
        return 0;
}

static int parse_pong(ParseCtx *c, AgentMsg *m) {
        return get_int(c, "uptime_ms", false, 0, INT_FIELD_MAX, &m->pong.uptime_ms);
}

static int parse_none(ParseCtx *c, AgentMsg *m) {
        return 0;
}

typedef int (*ParseFn)(ParseCtx *c, AgentMsg *m);
static const ParseFn parsers[_AGENT_MSG_MAX] = {
        [AGENT_MSG_HELLO] = parse_hello,
        [AGENT_MSG_CONFIGURE] = parse_configure,
        [AGENT_MSG_EXEC] = parse_exec,
        [AGENT_MSG_STDIN] = parse_stdin,
        [AGENT_MSG_KILL] = parse_kill,
        [AGENT_MSG_FILE_PUT] = parse_file_put,
        [AGENT_MSG_FILE_GET] = parse_file_get,
        [AGENT_MSG_PING] = parse_none,
        [AGENT_MSG_SHUTDOWN] = parse_shutdown,
        [AGENT_MSG_RESIZE] = parse_resize,
        [AGENT_MSG_CONNECT] = parse_connect,
        [AGENT_MSG_OK] = parse_ok,
        [AGENT_MSG_ERROR] = parse_error,
        [AGENT_MSG_STARTED] = parse_started,
        [AGENT_MSG_OUTPUT] = parse_output,
        [AGENT_MSG_EXIT] = parse_exit,
        [AGENT_MSG_DATA] = parse_data,
        [AGENT_MSG_PONG] = parse_pong,
};

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
        r = parsers[t](&c, m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* ---- formatting ---- */

static int add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add_int(json_object *o, const char *key, int64_t v) {
        return add(o, key, json_object_new_int64(v));
}

static int add_bool(json_object *o, const char *key, bool v) {
        return add(o, key, json_object_new_boolean(v));
}

static int add_str(json_object *o, const char *key, const char *s) {
        if (!s)
                return 0;
        return add(o, key, json_object_new_string(s));
}

static int add_b64(json_object *o, const char *key, const uint8_t *data, size_t len) {
        _cleanup_free_ char *s = NULL;
        size_t n;
        if (len > AGENT_CHUNK_MAX)
                return -EINVAL;
        int r = base64_encode(data ? data : (const uint8_t *) "", len, &s, &n);
        if (r < 0)
                return r;
        return add(o, key, json_object_new_string_len(s, (int) n));
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
        return add(o, key, a);
}

static int format_hello(json_object *o, const AgentMsg *m) {
        int r;
        if ((r = add_int(o, "version", m->hello.version)) < 0)
                return r;
        if (!m->hello.agent) /* a request */
                return 0;
        if ((r = add_str(o, "agent", m->hello.agent)) < 0 ||
            (r = add_strv(o, "capabilities", m->hello.capabilities)) < 0 ||
            (r = add_int(o, "boot_ms", m->hello.boot_ms)) < 0 ||
            (r = add_int(o, "uptime_ms", m->hello.uptime_ms)) < 0 ||
            (r = add_int(o, "max_frame", m->hello.max_frame)) < 0 ||
            (r = add_int(o, "max_execs", m->hello.max_execs)) < 0 ||
            (r = add_int(o, "max_output", m->hello.max_output)) < 0 ||
            (r = add_int(o, "max_file", m->hello.max_file)) < 0)
                return r;
        return 0;
}

static int format_configure(json_object *o, const AgentMsg *m) {
        int r;
        if ((r = add_str(o, "hostname", m->configure.hostname)) < 0 ||
            (r = add_str(o, "seat_id", m->configure.seat_id)) < 0 ||
            (r = add_str(o, "machine_id", m->configure.machine_id)) < 0)
                return r;
        if (m->configure.entropy && (r = add_b64(o, "entropy", m->configure.entropy, m->configure.entropy_len)) < 0)
                return r;
        if (m->configure.has_time) {
                if (m->configure.time_sec < 0 || m->configure.time_sec > AGENT_TIME_SEC_MAX || m->configure.time_nsec < 0 ||
                    m->configure.time_nsec > 999999999)
                        return -EINVAL;
                json_object *t = json_object_new_object();
                if ((r = add(o, "time", t)) < 0 || (r = add_int(t, "sec", m->configure.time_sec)) < 0 ||
                    (r = add_int(t, "nsec", m->configure.time_nsec)) < 0)
                        return r;
        }
        if (!m->configure.addresses)
                return 0;
        json_object *a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        if ((r = add(o, "addresses", a)) < 0)
                return r;
        for (size_t i = 0; i < m->configure.n_addresses; i++) {
                const AgentAddress *ad = &m->configure.addresses[i];
                json_object *e = json_object_new_object();
                if (!e || json_object_array_add(a, e) < 0) {
                        json_object_put(e);
                        return -ENOMEM;
                }
                if ((r = add_str(e, "ifname", ad->ifname)) < 0 ||
                    (r = add_str(e, "address", ad->address)) < 0 ||
                    (r = add_str(e, "gateway", ad->gateway)) < 0)
                        return r;
        }
        return 0;
}

static int format_exec(json_object *o, const AgentMsg *m) {
        int r;
        if (!m->exec.argv || !m->exec.argv[0])
                return -EINVAL;
        if ((r = add_strv(o, "argv", m->exec.argv)) < 0 ||
            (r = add_strv(o, "env", m->exec.env)) < 0 ||
            (r = add_str(o, "cwd", m->exec.cwd)) < 0)
                return r;
        if (m->exec.stdin_data && (r = add_b64(o, "stdin", m->exec.stdin_data, m->exec.stdin_len)) < 0)
                return r;
        if ((r = add_bool(o, "stdin_eof", m->exec.stdin_eof)) < 0 ||
            (r = add_int(o, "timeout_ms", m->exec.timeout_ms)) < 0 ||
            (r = add_int(o, "max_output", m->exec.max_output)) < 0 ||
            (r = add_int(o, "uid", m->exec.uid)) < 0 ||
            (r = add_int(o, "gid", m->exec.gid)) < 0)
                return r;
        if (m->exec.has_pty) {
                if (m->exec.pty_rows < 1 || m->exec.pty_rows > AGENT_PTY_DIM_MAX || m->exec.pty_cols < 1 ||
                    m->exec.pty_cols > AGENT_PTY_DIM_MAX)
                        return -EINVAL;
                json_object *p = json_object_new_object();
                if ((r = add(o, "pty", p)) < 0 || (r = add_int(p, "rows", m->exec.pty_rows)) < 0 ||
                    (r = add_int(p, "cols", m->exec.pty_cols)) < 0)
                        return r;
        }
        return 0;
}

static int format_resize(json_object *o, const AgentMsg *m) {
        int r;
        if (m->resize.exec < 1 || m->resize.rows < 1 || m->resize.rows > AGENT_PTY_DIM_MAX || m->resize.cols < 1 ||
            m->resize.cols > AGENT_PTY_DIM_MAX)
                return -EINVAL;
        if ((r = add_int(o, "exec", m->resize.exec)) < 0 || (r = add_int(o, "rows", m->resize.rows)) < 0 ||
            (r = add_int(o, "cols", m->resize.cols)) < 0)
                return r;
        return 0;
}

static int format_stdin(json_object *o, const AgentMsg *m) {
        int r;
        if ((r = add_int(o, "exec", m->stdin_msg.exec)) < 0 ||
            (r = add_b64(o, "data", m->stdin_msg.data, m->stdin_msg.len)) < 0 ||
            (r = add_bool(o, "eof", m->stdin_msg.eof)) < 0)
                return r;
        return 0;
}

static int format_connect(json_object *o, const AgentMsg *m) {
        int r;
        if (!m->connect.host || !connect_host_valid(m->connect.host) || m->connect.port < 1 || m->connect.port > 65535 ||
            m->connect.timeout_ms < 0 || m->connect.timeout_ms > AGENT_CONNECT_TIMEOUT_MAX_MS)
                return -EINVAL;
        if ((r = add_str(o, "host", m->connect.host)) < 0 || (r = add_int(o, "port", m->connect.port)) < 0 ||
            (r = add_int(o, "timeout_ms", m->connect.timeout_ms)) < 0)
                return r;
        return 0;
}

static int format_kill(json_object *o, const AgentMsg *m) {
        int r;
        if ((r = add_int(o, "exec", m->kill.exec)) < 0 || (r = add_int(o, "signal", m->kill.signal)) < 0)
                return r;
        return 0;
}

static int format_file_put(json_object *o, const AgentMsg *m) {
        int r;
        if (!m->file_put.path)
                return -EINVAL;
        if ((r = add_str(o, "path", m->file_put.path)) < 0 ||
            (r = add_int(o, "offset", m->file_put.offset)) < 0 ||
            (r = add_b64(o, "data", m->file_put.data, m->file_put.len)) < 0 ||
            (r = add_int(o, "mode", m->file_put.mode)) < 0 ||
            (r = add_bool(o, "final", m->file_put.final)) < 0)
                return r;
        return 0;
}

static int format_file_get(json_object *o, const AgentMsg *m) {
        int r;
        if (!m->file_get.path)
                return -EINVAL;
        if ((r = add_str(o, "path", m->file_get.path)) < 0 ||
            (r = add_int(o, "offset", m->file_get.offset)) < 0 ||
            (r = add_int(o, "length", m->file_get.length)) < 0)
                return r;
        return 0;
}

static int format_shutdown(json_object *o, const AgentMsg *m) {
        return m->shutdown.action ? add_str(o, "action", m->shutdown.action) : -EINVAL;
}

static int format_ok(json_object *o, const AgentMsg *m) {
        return m->ok.size >= 0 ? add_int(o, "size", m->ok.size) : 0;
}

static int format_error(json_object *o, const AgentMsg *m) {
        int r;
        if (!m->error.code)
                return -EINVAL;
        if ((r = add_str(o, "code", m->error.code)) < 0 || (r = add_str(o, "message", m->error.message)) < 0)
                return r;
        return 0;
}

static int format_started(json_object *o, const AgentMsg *m) {
        return add_int(o, "pid", m->started.pid);
}

static int format_output(json_object *o, const AgentMsg *m) {
        int r;
        if ((r = add_str(o, "stream", m->output.is_pty ? "pty" : m->output.is_stderr ? "stderr" : "stdout")) < 0 ||
            (r = add_b64(o, "data", m->output.data, m->output.len)) < 0)
                return r;
        /* Only when true: byte for byte what agent_format_output() writes otherwise. */
        if (m->output.eof && (r = add_bool(o, "eof", true)) < 0)
                return r;
        return 0;
}

static int format_exit(json_object *o, const AgentMsg *m) {
        int r;
        if ((r = add_int(o, "code", m->exit.code)) < 0 ||
            (r = add_int(o, "signal", m->exit.signal)) < 0 ||
            (r = add_int(o, "duration_ms", m->exit.duration_ms)) < 0 ||
            (r = add_bool(o, "timed_out", m->exit.timed_out)) < 0 ||
            (r = add_bool(o, "truncated", m->exit.truncated)) < 0 ||
            (r = add_int(o, "stdout_bytes", m->exit.stdout_bytes)) < 0 ||
            (r = add_int(o, "stderr_bytes", m->exit.stderr_bytes)) < 0 ||
            (r = add_str(o, "error", m->exit.error)) < 0)
                return r;
        return 0;
}

static int format_data(json_object *o, const AgentMsg *m) {
        int r;
        if ((r = add_b64(o, "data", m->data.data, m->data.len)) < 0 ||
            (r = add_bool(o, "eof", m->data.eof)) < 0 ||
            (r = add_int(o, "size", m->data.size)) < 0)
                return r;
        return 0;
}

static int format_pong(json_object *o, const AgentMsg *m) {
        return add_int(o, "uptime_ms", m->pong.uptime_ms);
}

static int format_none(json_object *o, const AgentMsg *m) {
        return 0;
}

typedef int (*FormatFn)(json_object *o, const AgentMsg *m);
static const FormatFn formatters[_AGENT_MSG_MAX] = {
        [AGENT_MSG_HELLO] = format_hello,
        [AGENT_MSG_CONFIGURE] = format_configure,
        [AGENT_MSG_EXEC] = format_exec,
        [AGENT_MSG_STDIN] = format_stdin,
        [AGENT_MSG_KILL] = format_kill,
        [AGENT_MSG_FILE_PUT] = format_file_put,
        [AGENT_MSG_FILE_GET] = format_file_get,
        [AGENT_MSG_PING] = format_none,
        [AGENT_MSG_SHUTDOWN] = format_shutdown,
        [AGENT_MSG_RESIZE] = format_resize,
        [AGENT_MSG_CONNECT] = format_connect,
        [AGENT_MSG_OK] = format_ok,
        [AGENT_MSG_ERROR] = format_error,
        [AGENT_MSG_STARTED] = format_started,
        [AGENT_MSG_OUTPUT] = format_output,
        [AGENT_MSG_EXIT] = format_exit,
        [AGENT_MSG_DATA] = format_data,
        [AGENT_MSG_PONG] = format_pong,
};

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
        r = formatters[m->type](o, m);
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
