/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The agent protocol, version 1 (docs/protocol-agent.md): seatd <-> guest-init over the
 * virtio-serial port org.seatd.agent.0. One JSON object per line. This codec is a pure
 * function of a buffer: agent_msg_parse() validates every field (types, ranges, sizes) and
 * agent_msg_format() writes any message. Both sides use both directions, so a message can
 * be parsed, formatted and parsed again (the fuzz target checks exactly that).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define AGENT_PROTO_VERSION 1
#define AGENT_PORT_NAME "org.seatd.agent.0"

#define AGENT_MAX_FRAME_DEFAULT (1024u * 1024u) /* bytes of one line, without '\n' */
#define AGENT_MAX_FRAME_MIN (64u * 1024u)
#define AGENT_MAX_DEPTH 8
/* What one frame may hold (jsonframe.h JsonFrameLimits), checked before json-c allocates
 * anything: the largest message, an exec with AGENT_ARGV_MAX + AGENT_ENV_MAX strings, has
 * about 2100 values; a configure with AGENT_ADDR_MAX addresses about 20 containers. A frame
 * at both caps costs json-c well under 1 MiB beside its own bytes. */
#define AGENT_MAX_CONTAINERS 64
#define AGENT_MAX_VALUES (2 * (AGENT_ARGV_MAX + AGENT_ENV_MAX))
#define AGENT_CHUNK_MAX (512u * 1024u)   /* raw bytes in one output/stdin/file chunk */
#define AGENT_ARGV_MAX 1024
#define AGENT_ENV_MAX 1024
#define AGENT_STR_MAX 4096               /* one argv/env entry, a path, a hostname */
#define AGENT_ENTROPY_MAX 512
#define AGENT_ADDR_MAX 16
#define AGENT_CAPS_MAX 64
#define AGENT_PTY_DIM_MAX 10000           /* rows or columns of a PTY */
#define AGENT_CAP_PTY "pty"              /* exec.pty, resize, output stream "pty" */
/* The image has a readiness check: the host runs /bin/sh AGENT_READY_CHECK_PATH with exec
 * until it exits 0 before the seat is READY (docs/protocol-agent.md, "Readiness"). */
#define AGENT_CAP_READY_CHECK "ready-check"
#define AGENT_READY_CHECK_PATH "/etc/seatd/ready-check"
#define AGENT_CAP_TCP "tcp"              /* connect: a TCP stream from inside the guest */
#define AGENT_CONNECT_HOST_MAX 253       /* a DNS name, or an address */
#define AGENT_CONNECT_TIMEOUT_MAX_MS 60000
#define AGENT_ID_MAX ((int64_t) 1 << 53) /* ids are integers JSON represents exactly */
#define AGENT_TIME_SEC_MAX INT64_C(253402300799) /* configure.time: 9999-12-31T23:59:59Z */

typedef enum AgentMsgType {
        /* host -> agent requests */
        AGENT_MSG_HELLO,     /* also the agent's reply to hello */
        AGENT_MSG_CONFIGURE,
        AGENT_MSG_EXEC,
        AGENT_MSG_STDIN,
        AGENT_MSG_KILL,
        AGENT_MSG_FILE_PUT,
        AGENT_MSG_FILE_GET,
        AGENT_MSG_PING,
        AGENT_MSG_SHUTDOWN,
        AGENT_MSG_RESIZE,    /* v1.1, capability "pty": a PTY exec's window size */
        AGENT_MSG_CONNECT,   /* v1.2, capability "tcp": a TCP connection made in the guest */
        /* agent -> host replies and events */
        AGENT_MSG_OK,
        AGENT_MSG_ERROR,
        AGENT_MSG_STARTED,
        AGENT_MSG_OUTPUT,
        AGENT_MSG_EXIT,
        AGENT_MSG_DATA,
        AGENT_MSG_PONG,
        _AGENT_MSG_MAX,
} AgentMsgType;

/* Stable error codes carried in "error" replies. */
#define AGENT_ERR_MALFORMED "malformed"     /* not JSON, not an object, bad UTF-8 */
#define AGENT_ERR_TOO_LARGE "too_large"     /* frame over the cap */
#define AGENT_ERR_UNKNOWN_TYPE "unknown_type"
#define AGENT_ERR_INVALID "invalid"         /* missing field, wrong type, out of range */
#define AGENT_ERR_VERSION "unsupported_version"
#define AGENT_ERR_NOT_FOUND "not_found"     /* no such exec id, no such file */
#define AGENT_ERR_LIMIT "limit"             /* too many execs, file too large, buffer full */
#define AGENT_ERR_IO "io"                   /* the operation failed in the guest */
#define AGENT_ERR_STATE "state"             /* e.g. hello not done, duplicate id */

typedef struct AgentAddress {
        char *ifname;  /* "eth0" */
        char *address; /* "10.77.0.2/24" */
        char *gateway; /* may be NULL */
} AgentAddress;

typedef struct AgentMsg {
        AgentMsgType type;
        int64_t id; /* 1..AGENT_ID_MAX; 0 only in an error about an unparseable request */
        union {
                struct { /* HELLO: request has version only; the reply has everything */
                        int64_t version;
                        char *agent;           /* reply: "guest-init 0.1.0" */
                        char **capabilities;   /* reply: NULL-terminated */
                        int64_t boot_ms;       /* reply: kernel start -> agent ready */
                        int64_t uptime_ms;     /* reply */
                        int64_t max_frame, max_execs, max_output, max_file; /* reply */
                } hello;
                struct {
                        char *hostname;        /* may be NULL: unchanged */
                        char *seat_id;         /* may be NULL */
                        char *machine_id;      /* 32 lowercase hex, may be NULL */
                        uint8_t *entropy;      /* mixed into the kernel RNG, then reseed */
                        size_t entropy_len;
                        AgentAddress *addresses;
                        size_t n_addresses;
                        bool has_time;         /* set the wall clock (CLOCK_REALTIME) to: */
                        int64_t time_sec;      /* 0..AGENT_TIME_SEC_MAX, seconds since the epoch */
                        int64_t time_nsec;     /* 0..999999999 */
                } configure;
                struct {
                        char **argv;           /* NULL-terminated, at least one entry */
                        char **env;            /* NULL-terminated "K=V", may be NULL */
                        char *cwd;             /* may be NULL: "/" */
                        uint8_t *stdin_data;   /* may be NULL */
                        size_t stdin_len;
                        bool stdin_eof;        /* default true: no stdin messages follow */
                        int64_t timeout_ms;    /* 0: the agent's default */
                        int64_t max_output;    /* 0: the agent's default; stdout+stderr */
                        int64_t uid, gid;      /* default 0 */
                        bool has_pty;          /* "pty": {rows, cols}: run on a pseudo-terminal */
                        int64_t pty_rows, pty_cols; /* 1..AGENT_PTY_DIM_MAX */
                } exec;
                struct {
                        char *host;            /* resolved in the guest; 1..AGENT_CONNECT_HOST_MAX */
                        int64_t port;          /* 1..65535 */
                        int64_t timeout_ms;    /* of the connect; 0: the agent's default */
                } connect;
                struct {
                        int64_t exec;          /* a running PTY exec */
                        int64_t rows, cols;    /* 1..AGENT_PTY_DIM_MAX */
                } resize;
                struct {
                        int64_t exec;          /* id of the exec it belongs to */
                        uint8_t *data;
                        size_t len;
                        bool eof;
                } stdin_msg;
                struct {
                        int64_t exec;
                        int64_t signal;        /* default SIGKILL */
                } kill;
                struct {
                        char *path;
                        int64_t offset;        /* 0 creates/truncates; else == current size */
                        uint8_t *data;
                        size_t len;
                        int64_t mode;          /* default 0644, applied on the first chunk */
                        bool final;            /* fsync after this chunk */
                } file_put;
                struct {
                        char *path;
                        int64_t offset;
                        int64_t length;        /* at most AGENT_CHUNK_MAX */
                } file_get;
                struct {
                        char *action;          /* "poweroff" | "reboot" */
                } shutdown;
                struct {
                        int64_t size;          /* -1 when absent (file_put: size so far) */
                } ok;
                struct {
                        char *code;            /* AGENT_ERR_* */
                        char *message;
                } error;
                struct {
                        int64_t pid;           /* 0 for a connect: no process */
                } started;
                struct {
                        bool is_stderr;        /* "stream": "stdout" | "stderr" | "pty" */
                        bool is_pty;           /* the terminal of a PTY exec (is_stderr false) */
                        uint8_t *data;
                        size_t len;
                        bool eof;              /* connect: the peer will send no more (written only when true) */
                } output;
                struct {
                        int64_t code;          /* -1 when killed by a signal */
                        int64_t signal;        /* 0 when exited normally */
                        int64_t duration_ms;
                        bool timed_out;
                        bool truncated;        /* output over max_output was dropped */
                        int64_t stdout_bytes;  /* produced, including dropped bytes */
                        int64_t stderr_bytes;
                        char *error;           /* could not start: strerror text, else NULL */
                } exit;
                struct {
                        uint8_t *data;
                        size_t len;
                        bool eof;
                        int64_t size;          /* the file's size */
                } data;
                struct {
                        int64_t uptime_ms;
                } pong;
        };
} AgentMsg;

/* Why a frame was refused: enough to answer with an error reply to the right id. */
typedef struct AgentParseError {
        int64_t id;        /* the request's id when it could be read, else 0 */
        const char *code;  /* AGENT_ERR_* */
        char message[192]; /* names the field, e.g. "field 'argv' must be an array of strings" */
} AgentParseError;

AgentMsg *agent_msg_new(AgentMsgType type, int64_t id);
AgentMsg *agent_msg_free(AgentMsg *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(AgentMsg *, agent_msg_free)
#define _cleanup_agent_msg_ _cleanup_(agent_msg_freep)

const char *agent_msg_type_to_string(AgentMsgType t);
int agent_msg_type_from_string(const char *s); /* -EINVAL if unknown */
bool agent_msg_type_is_request(AgentMsgType t);

/*
 * Parse one frame (without its '\n'). Returns 0 and a message whose every field has been
 * checked, or -EBADMSG (malformed), -E2BIG (more JSON containers or values than
 * AGENT_MAX_CONTAINERS / AGENT_MAX_VALUES: code too_large, refused before json-c
 * allocates), -EOPNOTSUPP (unknown type), -EINVAL (bad field), with *err filled in (err
 * may be NULL).
 */
int agent_msg_parse(const char *frame, size_t len, AgentMsg **ret, AgentParseError *err);
/* Format m as one line ending in '\n'. -E2BIG when longer than max_frame, -EINVAL when a
 * field is out of range (the same rules parse applies). */
int agent_msg_format(const AgentMsg *m, size_t max_frame, char **ret, size_t *ret_len);

/* Convenience builders for the common replies (formatted line, ready to write). */
int agent_format_error(int64_t id, const char *code, const char *message, size_t max_frame,
                       char **ret, size_t *ret_len);
int agent_format_ok(int64_t id, int64_t size, size_t max_frame, char **ret, size_t *ret_len);
/* The hot path of streaming: an `output` frame written straight into one buffer, byte for
 * byte what agent_msg_format() writes for the same message, without a JSON tree. */
int agent_format_output(int64_t id, bool is_stderr, const uint8_t *data, size_t len, size_t max_frame,
                        char **ret, size_t *ret_len);
/* The same for the terminal of a PTY exec: stream "pty". */
int agent_format_output_pty(int64_t id, const uint8_t *data, size_t len, size_t max_frame, char **ret, size_t *ret_len);
