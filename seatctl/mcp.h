/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * seatctl mcp: a Model Context Protocol server on stdio for one seat (docs/mcp.md).
 *
 * mcp-rpc.c   parses and checks one JSON-RPC message from the client, formats replies
 * mcp.c       the verb: the stdio loop, the session (initialize, ping, cancellation) and
 *             one thread per tool call
 * mcp-tools.c the tools: their schemas and what each asks seatd
 * mcp-text.c  guest bytes made into JSON text (UTF-8 repaired, capped)
 */
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "common/error.h"

/* The newest revision first; the client's choice is taken when it is one of these. The
 * official TypeScript SDK (tests/mcp) speaks 2025-11-25. */
#define MCP_PROTOCOL_LATEST "2025-11-25"
extern const char *const mcp_protocol_versions[];

#define MCP_MESSAGE_MAX (4u * 1024u * 1024u) /* one line from the client */
#define MCP_CALLS_MAX 8                       /* tool calls in flight at once */

/* JSON-RPC error codes. */
#define MCP_PARSE_ERROR (-32700)
#define MCP_INVALID_REQUEST (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS (-32602)
#define MCP_INTERNAL_ERROR (-32603)
#define MCP_SERVER_BUSY (-32000) /* implementation-defined: MCP_CALLS_MAX calls run */

typedef enum McpKind {
        MCP_REQUEST,      /* method and id */
        MCP_NOTIFICATION, /* method, no id */
        MCP_RESPONSE,     /* result or error: the server sends no requests, so ignored */
} McpKind;

typedef struct McpMessage {
        McpKind kind;
        json_object *root;   /* owns everything below */
        json_object *id;     /* string or integer; NULL for a notification */
        const char *method;
        json_object *params; /* object, or NULL */
} McpMessage;

void mcp_message_done(McpMessage *m);

/* A parse failure: the JSON-RPC error to answer with (id may be NULL: answer with null). */
typedef struct McpRpcError {
        int code;
        char message[256];
        json_object *id; /* borrowed from the message when it had a usable one; else NULL */
} McpRpcError;

/* One line from the client. -EBADMSG with *err filled when it must be answered with an
 * error; -ENOMEM. A response from the client returns 0 with kind MCP_RESPONSE. Whatever
 * the outcome the caller ends with mcp_message_done(ret), after answering: err->id points
 * into ret. */
int mcp_message_parse(const char *line, size_t len, McpMessage *ret, McpRpcError *err);

/* Replies, formatted as one line (with '\n'). id is not consumed (NULL → null). */
int mcp_format_result(json_object *id, json_object *result, char **ret, size_t *ret_len);
int mcp_format_error(json_object *id, int code, const char *message, char **ret, size_t *ret_len);
int mcp_format_notification(const char *method, json_object *params, char **ret, size_t *ret_len);
/* The id as a key for matching a cancellation: "s:TEXT" or "n:NUMBER". */
int mcp_id_key(json_object *id, char *buf, size_t size);

/* ---- the session ---- */

typedef struct McpServer McpServer;

/* One tools/call, run on a thread of its own. */
typedef struct McpCall {
        McpServer *srv;
        json_object *id;             /* the request's id (a copy: the call's thread owns it) */
        char id_key[96];
        json_object *progress_token; /* a copy, or NULL: no progress notifications asked */
        const char *tool;            /* from the tool table */
        json_object *arguments;      /* a copy: an object */
        double progress;             /* last progress sent: increases with every notification */
        bool cancelled;              /* under srv->lock */
        CtlClient *client;           /* under srv->lock: the connection cancellation shuts */
        struct McpCall *next;
} McpCall;

struct McpServer {
        const char *seat;
        const char *token_file;
        bool have_uid;
        int64_t uid, gid;         /* the guest user tools run as */
        char client_info[160];    /* "name/version" from initialize */
        char protocol[16];
        bool initialized;
        pthread_mutex_t lock;     /* the calls */
        pthread_cond_t idle;      /* signalled when a call ends */
        McpCall *calls;
        unsigned n_calls;
        /* Every write to out_fd, a whole line at a time (so lines keep their order and
         * never interleave). Never taken with lock held, nor lock under it: a write that
         * waits on a client not reading must not stop the reader from taking a
         * cancellation, nor the calls from checking theirs. */
        pthread_mutex_t out_lock;
        int out_fd;
        bool out_broken;          /* under out_lock: the client went away, nothing more is written */
};

/* Writes one formatted line to the client, under srv->out_lock. */
int mcp_send(McpServer *srv, const char *line, size_t len);
int mcp_send_result(McpServer *srv, json_object *id, json_object *result);
int mcp_send_error(McpServer *srv, json_object *id, int code, const char *fmt, ...) _printf_(4, 5);
/* notifications/progress for the call, when the client asked for them. */
void mcp_call_progress(McpCall *call, double amount, const char *message);
/* Registers the call's seatd connection (it can then be shut by a cancellation): false
 * when the call was cancelled already. */
bool mcp_call_attach(McpCall *call, CtlClient *c);
void mcp_call_detach(McpCall *call);
/* Whether a cancellation (or the client going away) ended the call. */
bool mcp_call_cancelled(McpCall *call);

/* ---- the tools ---- */

typedef struct McpTool McpTool;
/* The tool of that name, or NULL. */
const McpTool *mcp_tool_find(const char *name);
const char *mcp_tool_name(const McpTool *t);
/* tools/list's result. */
json_object *mcp_tools_list(void);
/* Checks the arguments against the tool's schema: -EINVAL with a message naming the
 * argument. Runs on the reading thread, so bad input is answered at once. */
int mcp_tool_check(const McpTool *t, json_object *arguments, char *msg, size_t size);
/* Runs the call (on its thread). Returns the CallToolResult to send, or NULL after a
 * cancellation (nothing is sent then). */
json_object *mcp_tool_run(const McpTool *t, McpCall *call);

int verb_mcp(int argc, char *argv[], SeatError **ret_error);
