/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatctl mcp's forward_port: a port on the agent's host (127.0.0.1 only) whose TCP
 * connections reach a service inside the seat (a range's web UI, a database), carried by
 * seatd over the seat's agent channel (forward.c), not its network, so the egress policy is
 * untouched. Each forward runs on a thread of its own until the MCP session ends; seatd
 * records the call (a "tool.call") and every connection (forward.start / forward.end).
 * The port carries this process's own user's connections only (forward.c): another local
 * user's would act with this session's token.
 * Not offered with --no-forward-port (seat-web: its children run on seat-web's host, which
 * is not the remote agent's).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonframe.h"
#include "forward.h"
#include "mcp-tools.h"

typedef struct McpForward {
        Forwarder *f;
        pthread_t thread;
        char host[FORWARD_SPEC_HOST_MAX + 1];
        unsigned gport, lport;
        struct McpForward *next;
} McpForward;

static bool forward_disabled;
static pthread_mutex_t forwards_lock = PTHREAD_MUTEX_INITIALIZER;
static McpForward *forwards;
static unsigned n_forwards;

void mcp_forward_disable(void) {
        forward_disabled = true;
}

bool mcp_forward_enabled(void) {
        return !forward_disabled;
}

static void *forward_thread(void *p) {
        McpForward *x = p;
        _cleanup_error_ SeatError *err = NULL;
        if (forwarder_run(x->f, &err) < 0)
                fprintf(stderr, "seatctl mcp: the forward of 127.0.0.1:%u to %s:%u in the seat ended: %s\n", x->lport,
                        x->host, x->gport, err ? err->message : "?");
        return NULL;
}

json_object *mcp_run_forward_port(McpCall *call) {
        McpServer *srv = call->srv;
        const char *host = mcp_arg_str(call->arguments, "host"), *why = NULL;
        int64_t port = 0, lport = 0;
        (void) json_get_int64(call->arguments, "port", true, 1, 65535, &port);
        (void) json_get_int64(call->arguments, "local_port", false, 0, 65535, &lport);
        /* The same rules as `seatctl forward`'s argument: one parser for both. */
        char text[FORWARD_SPEC_HOST_MAX + 64];
        ForwardSpec spec;
        bool v6 = strchr(host, ':');
        snprintf(text, sizeof(text), "127.0.0.1:%u:%s%s%s:%u", (unsigned) lport, v6 ? "[" : "", host, v6 ? "]" : "",
                 (unsigned) port);
        if (forward_spec_parse(text, &spec, &why) < 0)
                return mcp_tool_fail("host '%s' cannot be forwarded to: %s", host, why);

        pthread_mutex_lock(&forwards_lock);
        bool full = n_forwards >= MCP_FORWARDS_MAX;
        if (!full)
                n_forwards++; /* (a place held while it opens) */
        pthread_mutex_unlock(&forwards_lock);
        if (full)
                return mcp_tool_fail("this session has %d forwards open already (they last until it ends)", MCP_FORWARDS_MAX);

        _cleanup_free_ char *token = NULL;
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_json_ json_object *tool = mcp_tool_record(call);
        McpForward *x = calloc(1, sizeof(*x));
        unsigned got = 0;
        int r = !x || !tool ? -ENOMEM : ctl_load_token(srv->token_file, &token, &err);
        if (r >= 0)
                r = forwarder_open(srv->seat, &spec, token, tool, &x->f, &got, &err);
        if (r >= 0) {
                snprintf(x->host, sizeof(x->host), "%s", spec.host);
                x->gport = spec.gport;
                x->lport = got;
                r = -pthread_create(&x->thread, NULL, forward_thread, x);
        }
        pthread_mutex_lock(&forwards_lock);
        if (r < 0) {
                n_forwards--;
        } else {
                x->next = forwards;
                forwards = x;
        }
        pthread_mutex_unlock(&forwards_lock);
        if (r < 0) {
                if (x)
                        forwarder_free(x->f);
                free(x);
                return mcp_tool_fail("cannot forward to %s:%u in the seat: %s", spec.host, spec.gport,
                                     err ? err->message : strerror(-r));
        }
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        json_object_object_add(o, "local_address", json_object_new_string("127.0.0.1"));
        json_object_object_add(o, "local_port", json_object_new_int((int) got));
        json_object_object_add(o, "host", json_object_new_string(spec.host));
        json_object_object_add(o, "port", json_object_new_int(spec.gport));
        json_object_object_add(o, "until", json_object_new_string("the end of this MCP session"));
        return mcp_tool_ok(o);
}

void mcp_forwards_stop(void) {
        pthread_mutex_lock(&forwards_lock);
        McpForward *l = forwards;
        forwards = NULL;
        n_forwards = 0;
        pthread_mutex_unlock(&forwards_lock);
        for (McpForward *x = l; x; x = x->next)
                forwarder_stop(x->f);
        while (l) {
                McpForward *x = l;
                l = l->next;
                (void) pthread_join(x->thread, NULL);
                forwarder_free(x->f);
                free(x);
        }
}
