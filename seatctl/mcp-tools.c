/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The MCP tools: one table gives each tool's arguments, from which both its input schema
 * (tools/list) and the check of every call are made, so the two cannot drift apart. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "mcp-tools.h"

static const char *const encodings[] = { "text", "base64", NULL };

/* Written as the seat is, for the model reading it: what runs where, and that it is seen. */
#define SEAT_NOTE                                                                                        \
        " It runs inside the seat: an isolated, disposable virtual machine on a network whose egress " \
        "is filtered (default deny), wiped at every reset; nothing runs on the host. Every call is "   \
        "recorded in the seat's audit log with its arguments and result, and sealed as evidence."

static const ArgSpec exec_args[] = {
        { "argv", ARG_STRINGS, false, 1, 1024, NULL, "the program and its arguments (no shell); give argv or command" },
        { "command", ARG_STRING, false, 0, 256 * 1024, NULL, "a shell command line, run as /bin/sh -c COMMAND; give argv or command" },
        { "cwd", ARG_PATH, false, 0, 4096, NULL, "the working directory in the seat (absolute; default /)" },
        { "env", ARG_STRING_MAP, false, 0, 256, NULL, "environment variables (default: PATH only)" },
        { "stdin", ARG_STRING, false, 0, MCP_STDIN_MAX, NULL, "text given to the command on its standard input (at most 512 KiB)" },
        { "timeout_ms", ARG_INTEGER, false, 1, 7 * 24 * 3600 * 1000LL, NULL,
          "kill the command's process group after this many milliseconds (default 600000; the host caps it)" },
};

static const ArgSpec read_args[] = {
        { "path", ARG_PATH, true, 1, 4096, NULL, "the file's absolute path in the seat" },
        { "encoding", ARG_STRING, false, 0, 16, encodings, "text (UTF-8; default) or base64 (any bytes)" },
        { "max_bytes", ARG_INTEGER, false, 1, MCP_READ_MAX, NULL, "read at most this many bytes (default and most: 1048576)" },
};

static const ArgSpec write_args[] = {
        { "path", ARG_PATH, true, 1, 4096, NULL, "the file's absolute path in the seat (created or replaced)" },
        { "content", ARG_STRING, true, 0, MCP_WRITE_MAX * 2, NULL, "what the file holds afterwards (at most 512 KiB)" },
        { "encoding", ARG_STRING, false, 0, 16, encodings, "how content is given: text (default) or base64" },
        { "mode", ARG_MODE, false, 0, 8, NULL, "permissions in octal, such as \"0644\" (default: the umask's, or the file's own)" },
};

static const ArgSpec list_args[] = {
        { "path", ARG_PATH, true, 1, 4096, NULL, "the directory's absolute path in the seat" },
};

static const ArgSpec forward_args[] = {
        { "host", ARG_STRING, true, 1, 253, NULL, "the service's address as the seat sees it: an IP address (IPv6 without brackets) or localhost" },
        { "port", ARG_INTEGER, true, 1, 65535, NULL, "its TCP port" },
        { "local_port", ARG_INTEGER, false, 0, 65535, NULL, "the port on the agent's host (127.0.0.1); default 0: any free one" },
};

static const ArgSpec upload_args[] = {
        { "host_path", ARG_STRING, true, 1, 4096, NULL, "the file on the agent's host, relative to the transfer directory seatctl mcp was given" },
        { "seat_path", ARG_PATH, true, 1, 4096, NULL, "where it goes in the seat (absolute; created or replaced)" },
};

static const ArgSpec download_args[] = {
        { "seat_path", ARG_PATH, true, 1, 4096, NULL, "the file in the seat (absolute)" },
        { "host_path", ARG_STRING, true, 1, 4096, NULL, "where it goes on the agent's host, relative to the transfer directory (never replaces a file)" },
};

static const McpTool tools[] = {
        { "exec", "Run a command in the seat",
          "Runs a command (argv, or a shell command line) in the seat and returns its exit status, stdout and "
          "stderr (each kept up to 256 KiB, with a flag when cut) and its duration. Output is streamed as "
          "progress notifications while it runs when the client asks for progress; a cancellation kills the "
          "command's whole process group." SEAT_NOTE,
          exec_args, ELEMENTSOF(exec_args), MCP_EXEC_OUTPUT_SCHEMA, false, mcp_check_exec, mcp_run_exec, false, false },
        { "read_file", "Read a file in the seat",
          "Reads a file of the seat, as text (UTF-8) or base64, up to 1 MiB; says why when it is refused "
          "(missing, a directory, no permission, not UTF-8)." SEAT_NOTE,
          read_args, ELEMENTSOF(read_args), MCP_READ_OUTPUT_SCHEMA, true, NULL, mcp_run_read_file, false, false },
        { "write_file", "Write a file in the seat",
          "Creates or replaces a file of the seat with the given content (text or base64, at most 512 KiB), "
          "with the permissions of the user the tools run as." SEAT_NOTE,
          write_args, ELEMENTSOF(write_args), MCP_WRITE_OUTPUT_SCHEMA, false, mcp_check_write_file, mcp_run_write_file, false, false },
        { "list_directory", "List a directory in the seat",
          "Lists the entries of a directory of the seat with their types (file, directory, symlink, other), "
          "at most 10000." SEAT_NOTE,
          list_args, ELEMENTSOF(list_args), MCP_LIST_OUTPUT_SCHEMA, true, NULL, mcp_run_list_directory, false, false },
        { "seat_status", "The seat's state",
          "Returns the seat's record from seatd: its state, image, network and egress profile, and how long "
          "it has run." SEAT_NOTE,
          NULL, 0, MCP_STATUS_OUTPUT_SCHEMA, true, NULL, mcp_run_seat_status, false, false },
        { "forward_port", "Reach a service inside the seat",
          "Opens a TCP port on the agent's host (127.0.0.1) whose connections reach HOST:PORT as the seat sees it "
          "(a web UI or API of the range), carried over the seat's agent channel, not its network: the seat's egress "
          "policy is unchanged. Only connections made by the local user running this server are carried (any other "
          "user's are closed at once). It lasts until this MCP session ends; at most 4 at once. Returns the local port." SEAT_NOTE,
          forward_args, ELEMENTSOF(forward_args), MCP_FORWARD_OUTPUT_SCHEMA, false, NULL, mcp_run_forward_port, .forward = true },
        { "upload", "Copy a file from the agent's host into the seat",
          "Copies a file (at most 64 MiB) from the transfer directory on the agent's host into the seat. Offered only "
          "when the operator started seatctl mcp with --transfer-dir; nothing outside that directory is reachable." SEAT_NOTE,
          upload_args, ELEMENTSOF(upload_args), MCP_TRANSFER_OUTPUT_SCHEMA, false, NULL, mcp_run_upload, .transfer = true },
        { "download", "Copy a file from the seat to the agent's host",
          "Copies a file (at most 64 MiB) from the seat into the transfer directory on the agent's host, as a new file "
          "(an existing one is never replaced). Offered only with --transfer-dir." SEAT_NOTE,
          download_args, ELEMENTSOF(download_args), MCP_TRANSFER_OUTPUT_SCHEMA, false, NULL, mcp_run_download, .transfer = true },
};

const McpTool *mcp_tool_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (!strcmp(tools[i].name, name) && (!tools[i].transfer || mcp_transfer_enabled()) &&
                    (!tools[i].forward || mcp_forward_enabled()))
                        return &tools[i];
        return NULL;
}

const char *mcp_tool_name(const McpTool *t) {
        return t->name;
}

/* The JSON Schema type each kind of argument takes. */
static const char *const arg_json_type[] = {
        [ARG_STRING] = "string",   [ARG_PATH] = "string",  [ARG_MODE] = "string",
        [ARG_INTEGER] = "integer", [ARG_STRINGS] = "array", [ARG_STRING_MAP] = "object",
};

/* {"type": "string"}: the items of a list, the values of a map. */
static json_object *string_schema(void) {
        json_object *o = json_object_new_object();
        if (o)
                json_object_object_add(o, "type", json_object_new_string("string"));
        return o;
}

static json_object *arg_schema(const ArgSpec *a) {
        json_object *s = json_object_new_object();
        if (!s)
                return NULL;
        json_object_object_add(s, "type", json_object_new_string(arg_json_type[a->type]));
        switch (a->type) {
        case ARG_STRING:
        case ARG_PATH:
        case ARG_MODE:
                if (a->choices) {
                        json_object *e = json_object_new_array();
                        for (const char *const *c = a->choices; *c; c++)
                                json_object_array_add(e, json_object_new_string(*c));
                        json_object_object_add(s, "enum", e);
                }
                if (a->type == ARG_PATH)
                        json_object_object_add(s, "pattern", json_object_new_string("^/"));
                if (a->type == ARG_MODE)
                        json_object_object_add(s, "pattern", json_object_new_string("^[0-7]{3,4}$"));
                break;
        case ARG_INTEGER:
                json_object_object_add(s, "minimum", json_object_new_int64(a->min));
                json_object_object_add(s, "maximum", json_object_new_int64(a->max));
                break;
        case ARG_STRINGS:
                json_object_object_add(s, "items", string_schema());
                json_object_object_add(s, "minItems", json_object_new_int64(a->min));
                json_object_object_add(s, "maxItems", json_object_new_int64(a->max));
                break;
        case ARG_STRING_MAP:
                json_object_object_add(s, "additionalProperties", string_schema());
                json_object_object_add(s, "maxProperties", json_object_new_int64(a->max));
                break;
        }
        json_object_object_add(s, "description", json_object_new_string(a->doc));
        return s;
}

static json_object *input_schema(const McpTool *t) {
        json_object *s = json_object_new_object(), *props = json_object_new_object(), *req = json_object_new_array();
        if (!s || !props || !req) {
                json_object_put(s);
                json_object_put(props);
                json_object_put(req);
                return NULL;
        }
        json_object_object_add(s, "type", json_object_new_string("object"));
        for (size_t i = 0; i < t->n_args; i++) {
                json_object_object_add(props, t->args[i].name, arg_schema(&t->args[i]));
                if (t->args[i].required)
                        json_object_array_add(req, json_object_new_string(t->args[i].name));
        }
        json_object_object_add(s, "properties", props);
        if (json_object_array_length(req) > 0)
                json_object_object_add(s, "required", req);
        else
                json_object_put(req);
        json_object_object_add(s, "additionalProperties", json_object_new_boolean(false));
        return s;
}

json_object *mcp_tools_list(void) {
        _cleanup_json_ json_object *r = json_object_new_object();
        json_object *list = json_object_new_array();
        if (!r || !list) {
                json_object_put(list);
                return NULL;
        }
        json_object_object_add(r, "tools", list);
        for (size_t i = 0; i < ELEMENTSOF(tools); i++) {
                const McpTool *t = &tools[i];
                if ((t->transfer && !mcp_transfer_enabled()) || (t->forward && !mcp_forward_enabled()))
                        continue;
                json_object *o = json_object_new_object(), *ann = json_object_new_object();
                json_object *out = json_tokener_parse(t->output_schema);
                if (!o || !ann || !out) {
                        json_object_put(o);
                        json_object_put(ann);
                        json_object_put(out);
                        return NULL;
                }
                json_object_object_add(o, "name", json_object_new_string(t->name));
                json_object_object_add(o, "title", json_object_new_string(t->title));
                json_object_object_add(o, "description", json_object_new_string(t->description));
                json_object_object_add(o, "inputSchema", input_schema(t));
                json_object_object_add(o, "outputSchema", out);
                json_object_object_add(ann, "title", json_object_new_string(t->title));
                json_object_object_add(ann, "readOnlyHint", json_object_new_boolean(t->read_only));
                /* The seat is a closed world: nothing a tool does reaches beyond it (but the
                 * transfers, which reach the transfer directory). */
                json_object_object_add(ann, "openWorldHint", json_object_new_boolean(t->transfer));
                json_object_object_add(o, "annotations", ann);
                json_object_array_add(list, o);
        }
        return TAKE_PTR(r);
}

/* The message names the argument; a literal format, checked by the compiler. */
#define arg_fail(msg, size, fmt, ...) (snprintf(msg, size, fmt, __VA_ARGS__), -EINVAL)

static int check_arg(const ArgSpec *a, json_object *v, char *msg, size_t size) {
        char range[96];
        switch (a->type) {
        case ARG_STRING:
        case ARG_PATH:
        case ARG_MODE: {
                if (!json_object_is_type(v, json_type_string))
                        return arg_fail(msg, size, "'%s' must be a string%s", a->name, "");
                size_t len = (size_t) json_object_get_string_len(v);
                const char *s = json_object_get_string(v);
                snprintf(range, sizeof(range), " (at most %" PRId64 " bytes)", a->max);
                if ((int64_t) len > a->max || (int64_t) len < a->min)
                        return arg_fail(msg, size, "'%s' is too long or empty%s", a->name, range);
                if (memchr(s, '\0', len))
                        return arg_fail(msg, size, "'%s' holds a NUL character%s", a->name, "");
                if (a->type == ARG_PATH && s[0] != '/')
                        return arg_fail(msg, size, "'%s' must be an absolute path (it starts with '/')%s", a->name, "");
                if (a->type == ARG_MODE && (len < 3 || len > 4 || strspn(s, "01234567") != len))
                        return arg_fail(msg, size, "'%s' must be an octal mode such as \"0644\"%s", a->name, "");
                if (a->choices) {
                        bool ok = false;
                        for (const char *const *c = a->choices; *c && !ok; c++)
                                ok = !strcmp(*c, s);
                        if (!ok)
                                return arg_fail(msg, size, "'%s' must be \"text\" or \"base64\"%s", a->name, "");
                }
                return 0;
        }
        case ARG_INTEGER: {
                snprintf(range, sizeof(range), " in %" PRId64 "..%" PRId64, a->min, a->max);
                if (!json_object_is_type(v, json_type_int))
                        return arg_fail(msg, size, "'%s' must be an integer%s", a->name, range);
                errno = 0;
                int64_t n = json_object_get_int64(v);
                if (errno || n < a->min || n > a->max)
                        return arg_fail(msg, size, "'%s' must be an integer%s", a->name, range);
                return 0;
        }
        case ARG_STRINGS: {
                snprintf(range, sizeof(range), " (%" PRId64 "..%" PRId64 " of them)", a->min, a->max);
                if (!json_object_is_type(v, json_type_array))
                        return arg_fail(msg, size, "'%s' must be an array of strings%s", a->name, range);
                size_t n = json_object_array_length(v);
                if ((int64_t) n < a->min || (int64_t) n > a->max)
                        return arg_fail(msg, size, "'%s' must be an array of strings%s", a->name, range);
                for (size_t i = 0; i < n; i++) {
                        json_object *e = json_object_array_get_idx(v, i);
                        if (!json_object_is_type(e, json_type_string) || (size_t) json_object_get_string_len(e) > MCP_STRING_MAX ||
                            memchr(json_object_get_string(e), '\0', (size_t) json_object_get_string_len(e)))
                                return arg_fail(msg, size, "'%s' must hold strings (each at most 128 KiB, no NUL)%s", a->name, "");
                }
                return 0;
        }
        case ARG_STRING_MAP: {
                if (!json_object_is_type(v, json_type_object) || json_object_object_length(v) > (int) a->max)
                        return arg_fail(msg, size, "'%s' must be an object of at most 256 string values%s", a->name, "");
                json_object_object_foreach(v, key, val) {
                        bool name_ok = *key && !(*key >= '0' && *key <= '9') && strlen(key) <= 128;
                        for (const char *k = key; *k && name_ok; k++)
                                name_ok = (*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_';
                        if (!name_ok)
                                return arg_fail(msg, size, "'%s' keys must be variable names (letters, digits, '_')%s", a->name, "");
                        if (!json_object_is_type(val, json_type_string) || (size_t) json_object_get_string_len(val) > MCP_STRING_MAX ||
                            memchr(json_object_get_string(val), '\0', (size_t) json_object_get_string_len(val)))
                                return arg_fail(msg, size, "'%s' values must be strings (at most 128 KiB, no NUL)%s", a->name, "");
                }
                return 0;
        }
        }
        return -EINVAL;
}

int mcp_tool_check(const McpTool *t, json_object *arguments, char *msg, size_t size) {
        json_object_object_foreach(arguments, key, val) {
                (void) val;
                bool known = false;
                for (size_t i = 0; i < t->n_args && !known; i++)
                        known = !strcmp(t->args[i].name, key);
                if (!known) {
                        char names[256] = "";
                        for (size_t i = 0; i < t->n_args; i++)
                                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "", t->args[i].name);
                        snprintf(msg, size, "unknown argument '%.64s' (%s takes %s)", key, t->name, *names ? names : "none");
                        return -EINVAL;
                }
        }
        for (size_t i = 0; i < t->n_args; i++) {
                json_object *v = NULL;
                if (!json_object_object_get_ex(arguments, t->args[i].name, &v)) {
                        if (t->args[i].required) {
                                snprintf(msg, size, "'%s' is required", t->args[i].name);
                                return -EINVAL;
                        }
                        continue;
                }
                if (check_arg(&t->args[i], v, msg, size) < 0)
                        return -EINVAL;
        }
        return t->check ? t->check(arguments, msg, size) : 0;
}

json_object *mcp_tool_run(const McpTool *t, McpCall *call) {
        return t->run(call);
}
