/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The tool table (mcp-tools.c) and the tools' work (mcp-run.c). */
#include "mcp.h"

#define MCP_STDIN_MAX (512u * 1024u)        /* seat.exec's stdin cap */
#define MCP_WRITE_MAX (512u * 1024u)        /* write_file's content, decoded */
#define MCP_READ_MAX (1024u * 1024u)        /* read_file */
#define MCP_OUTPUT_KEEP (256u * 1024u)      /* exec: what of stdout and of stderr the result keeps */
#define MCP_STRING_MAX (128u * 1024u)       /* one argv word or env value */
#define MCP_LIST_MAX 10000                  /* list_directory's entries */
#define MCP_TRANSFER_MAX (64u * 1024u * 1024u) /* upload, download */

typedef enum ArgType {
        ARG_STRING,     /* max: bytes */
        ARG_PATH,       /* a string starting with '/' */
        ARG_MODE,       /* "0644" */
        ARG_INTEGER,    /* min..max */
        ARG_STRINGS,    /* min..max items */
        ARG_STRING_MAP, /* at most max keys, variable names to strings */
} ArgType;

typedef struct ArgSpec {
        const char *name;
        ArgType type;
        bool required;
        int64_t min, max;
        const char *const *choices; /* a string's allowed values, NULL-terminated */
        const char *doc;
} ArgSpec;

struct McpTool {
        const char *name, *title, *description;
        const ArgSpec *args;
        size_t n_args;
        const char *output_schema; /* JSON text */
        bool read_only;
        /* What the table cannot say (exec: argv or command, not both). */
        int (*check)(json_object *arguments, char *msg, size_t size);
        json_object *(*run)(McpCall *call);
        bool transfer; /* offered only with --transfer-dir */
        bool forward;  /* not offered with --no-forward-port */
};

int mcp_check_exec(json_object *arguments, char *msg, size_t size);
int mcp_check_write_file(json_object *arguments, char *msg, size_t size);
json_object *mcp_run_exec(McpCall *call);
json_object *mcp_run_read_file(McpCall *call);
json_object *mcp_run_write_file(McpCall *call);
json_object *mcp_run_list_directory(McpCall *call);
json_object *mcp_run_seat_status(McpCall *call);
json_object *mcp_run_upload(McpCall *call);
json_object *mcp_run_download(McpCall *call);
json_object *mcp_run_forward_port(McpCall *call);

/* mcp-forward.c: forward_port, its forwards (at most MCP_FORWARDS_MAX, on threads until
 * the session ends: mcp_forwards_stop()), and --no-forward-port. */
#define MCP_FORWARDS_MAX 4
void mcp_forward_disable(void);
bool mcp_forward_enabled(void);
void mcp_forwards_stop(void);
/* The call as seatd records it ("tool": name, client, request id, arguments). */
json_object *mcp_tool_record(const McpCall *call);

/* Shared by the tools (mcp-run.c). */
const char *mcp_arg_str(json_object *args, const char *key);
/* A result with structured content (consumed), and the same as text. */
json_object *mcp_tool_ok(json_object *structured);
/* A tool execution error whose text the model reads. */
json_object *mcp_tool_fail(const char *fmt, ...) _printf_(1, 2);
/* Write (create: replace, else append) data to path in the seat, as the session's user.
 * -ECANCELED after a cancellation; else 0, with *ret_result the tool error when it failed. */
int mcp_seat_write(McpCall *call, const char *path, bool create, const void *data, size_t len, json_object **ret_result);
/* The seat's file into fd, at most max bytes (more is a tool error), as for mcp_seat_write. */
int mcp_seat_read_to_fd(McpCall *call, const char *path, int fd, uint64_t max, uint64_t *ret_bytes, json_object **ret_result);
/* mcp-transfer.c: --transfer-dir. */
int mcp_transfer_enable(const char *dir);
bool mcp_transfer_enabled(void);

#define MCP_FORWARD_OUTPUT_SCHEMA                                                                           \
        "{\"type\":\"object\",\"properties\":{"                                                             \
        "\"local_address\":{\"type\":\"string\",\"description\":\"where to connect on the agent's host\"}," \
        "\"local_port\":{\"type\":\"integer\"},"                                                             \
        "\"host\":{\"type\":\"string\"},\"port\":{\"type\":\"integer\"},"                                \
        "\"until\":{\"type\":\"string\"}},"                                                                 \
        "\"required\":[\"local_address\",\"local_port\",\"host\",\"port\"]}"

#define MCP_EXEC_OUTPUT_SCHEMA                                                                              \
        "{\"type\":\"object\",\"properties\":{"                                                             \
        "\"exit_code\":{\"type\":\"integer\",\"description\":\"the exit status; -1 when a signal ended it\"}," \
        "\"signal\":{\"type\":\"integer\",\"description\":\"the signal that ended it, else 0\"},"             \
        "\"timed_out\":{\"type\":\"boolean\"},"                                                              \
        "\"duration_ms\":{\"type\":\"integer\"},"                                                            \
        "\"stdout\":{\"type\":\"string\"},\"stdout_truncated\":{\"type\":\"boolean\"},"                      \
        "\"stdout_bytes\":{\"type\":\"integer\"},"                                                           \
        "\"stderr\":{\"type\":\"string\"},\"stderr_truncated\":{\"type\":\"boolean\"},"                      \
        "\"stderr_bytes\":{\"type\":\"integer\"},"                                                           \
        "\"error\":{\"type\":\"string\",\"description\":\"why the program could not be run\"}},"             \
        "\"required\":[\"exit_code\",\"signal\",\"timed_out\",\"duration_ms\",\"stdout\",\"stdout_truncated\"," \
        "\"stderr\",\"stderr_truncated\"]}"

#define MCP_READ_OUTPUT_SCHEMA                                                                      \
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"                      \
        "\"encoding\":{\"type\":\"string\",\"enum\":[\"text\",\"base64\"]},"                        \
        "\"content\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"                       \
        "\"truncated\":{\"type\":\"boolean\",\"description\":\"the file holds more than was read\"}}," \
        "\"required\":[\"path\",\"encoding\",\"content\",\"bytes\",\"truncated\"]}"

#define MCP_WRITE_OUTPUT_SCHEMA                                                             \
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"              \
        "\"bytes\":{\"type\":\"integer\",\"description\":\"bytes written\"}},"              \
        "\"required\":[\"path\",\"bytes\"]}"

#define MCP_LIST_OUTPUT_SCHEMA                                                                          \
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"                          \
        "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"               \
        "\"name\":{\"type\":\"string\"},"                                                               \
        "\"type\":{\"type\":\"string\",\"enum\":[\"file\",\"directory\",\"symlink\",\"other\"]}},"      \
        "\"required\":[\"name\",\"type\"]}},"                                                           \
        "\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"path\",\"entries\",\"truncated\"]}"

#define MCP_TRANSFER_OUTPUT_SCHEMA                                                              \
        "{\"type\":\"object\",\"properties\":{\"host_path\":{\"type\":\"string\"},"        \
        "\"seat_path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},"             \
        "\"required\":[\"host_path\",\"seat_path\",\"bytes\"]}"

#define MCP_STATUS_OUTPUT_SCHEMA                                                               \
        "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},"                   \
        "\"state\":{\"type\":\"string\"},\"image\":{\"type\":\"string\"}},\"required\":[\"id\",\"state\"]}"
