/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What agent-client.c (the protocol's requests) and agent-mux.c (sorting the agent's frames
 * among concurrent callers) share: one connection to an agent, and the handles on it.
 *
 * Until the first successful hello a connection has one handle, which reads the channel
 * itself. From then on a reader thread owns the read side: it parses every frame and
 * delivers it to the handle that allocated its id (agent_client_next_id()), so that any
 * number of handles, each used by one thread, run requests at the same time. The agent
 * is hostile: a frame for an id no handle waits for ends the connection (-EPROTO) for all
 * its handles, and a handle whose caller does not read is fed no more than
 * AGENT_MUX_QUEUE_MAX: the reader waits for it then, and the agent's own flow control
 * stops its tools.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-client.h"
#include "common/jsonframe.h"

#define AGENT_MUX_QUEUE_MAX (8u * 1024u * 1024u) /* bytes of messages waiting for one handle */

typedef enum AgentViolation {
        VIOLATION_NONE,
        VIOLATION_OVERSIZE,
        VIOLATION_BAD_FRAME,
        VIOLATION_REQUEST,
        VIOLATION_UNKNOWN_ID,
} AgentViolation;

typedef struct AgentQueued {
        struct AgentQueued *next;
        AgentMsg *msg;
        size_t bytes; /* its payload and some: what the queue cap counts */
} AgentQueued;

typedef struct AgentRoute {
        int64_t id;
        AgentClient *to;
} AgentRoute;

typedef struct AgentConn {
        pthread_mutex_t lock; /* refs, next_id, routes, queues, dead, stopping */
        unsigned refs;
        int fd;
        size_t max_frame;
        int64_t next_id;

        /* The read side: the first handle's thread before the mux starts, the reader
         * thread after. violation is written there and read once dead is set. */
        FrameReader *reader;
        bool eof;
        AgentViolation violation_kind;
        char violation[224];

        pthread_mutex_t send_lock; /* one frame on the channel at a time, whole */
        bool wire_cut;             /* under send_lock: a send stopped mid-frame */

        /* From the last hello; not changed once the mux runs. */
        char **capabilities;
        char *agent_name; /* escaped */
        uint64_t max_output; /* the agent's default cap on an exec's output, as seatd holds it */

        bool single; /* agent_client_set_single(): no mux, ever */
        int mux; /* atomic (an int: GCC warns wrongly on 1-byte atomics under ASan): set by the first hello, never cleared */
        pthread_t reader_thread;
        int stop_fd; /* eventfd: the connection's first handle is going */
        bool stopping;
        int dead;             /* the reader's end: -EPROTO, -ECONNRESET, -errno; 0 while it reads */
        pthread_cond_t space; /* a handle's queue shrank, or stopping */
        AgentRoute *routes;
        size_t n_routes, allocated_routes;
} AgentConn;

struct AgentClient {
        AgentConn *conn;
        bool first; /* made with the connection: freeing it closes the channel */
        int efd;    /* eventfd: something was queued here, or the reader ended */
        AgentQueued *head, **tail;
        size_t queued;
};

/* agent-mux.c */
/* The next whole frame already read, parsed and checked: 1 and *ret, 0 when none is
 * buffered, -EPROTO (k->violation says why). */
int agent_conn_parse_next(AgentConn *k, AgentMsg **ret);
/* After the first hello: start the reader thread. */
int agent_mux_start(AgentClient *c);
/* Stop the reader thread (the channel is shut first, so it ends promptly). */
void agent_mux_stop(AgentConn *k);
/* Under k->lock: replies to id go to c. */
int agent_mux_route_add(AgentConn *k, int64_t id, AgentClient *c);
/* A handle goes: its routes and what was queued for it. */
void agent_mux_forget(AgentClient *c);
/* The next frame for c: the recv of a handle once the mux runs. */
int agent_mux_recv(AgentClient *c, int timeout_ms, int wake_fd, AgentMsg **ret);
