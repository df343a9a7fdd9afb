/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * guest-init's agent core: one single-threaded poll() loop serving the agent protocol
 * (docs/protocol-agent.md) over a transport (virtio-serial port, unix socket, stdio).
 * Internal to guest-init; every module below adds its own handlers.
 */

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/agent-proto.h"
#include "common/jsonframe.h"
#include "common/macro.h"

#define AGENT_OUT_HIGH_WATER (4u * 1024u * 1024u) /* queued bytes: stop reading pipes/host */
#define AGENT_STDIN_PENDING_MAX (1024u * 1024u)   /* pending stdin per exec */
/* A stdin beyond this much pending is acknowledged only once the tool has read below it:
 * a host that waits for each `ok` never has more than this (plus one chunk) queued here. */
#define AGENT_STDIN_ACK_WATER (64u * 1024u)
#define AGENT_STDIN_ACKS_MAX 64u                  /* deferred acks per exec; more: `limit` */
#define AGENT_PIPE_READ_MAX (64u * 1024u)         /* one read() from a tool's pipe */
/* Output of one exec or connection waiting in the queue: beyond it that stream's pipe or
 * socket is not read until the host took some, so one flood never holds more than this
 * (plus one read) ahead of another stream's keystroke echo. */
#define AGENT_STREAM_QUEUED_MAX (192u * 1024u)

/* The stdin requests of one exec or connection not yet acknowledged: their data is pending
 * above AGENT_STDIN_ACK_WATER; each gets its `ok` once the reader has taken it below. */
typedef struct AgentAcks {
        int64_t ids[AGENT_STDIN_ACKS_MAX];
        unsigned n;
} AgentAcks;
#define AGENT_EXEC_GRACE_MS 1000                  /* drain pipes after the main process exits */
#define AGENT_BACKSTOP_MS 1000                    /* re-probe a disconnected virtio port */
#define AGENT_SHUTDOWN_FLUSH_MS 1000              /* flush the queue before poweroff */
#define AGENT_WRITE_BUDGET (1024u * 1024u)        /* bytes written per loop iteration */
#define AGENT_FRAME_OVERHEAD 512u                 /* JSON around a base64 chunk, generous */

#define AGENT_MAX_OUTPUT_DEFAULT (16u * 1024u * 1024u)
#define AGENT_MAX_FILE_DEFAULT (64u * 1024u * 1024u)
#define AGENT_MAX_EXECS_DEFAULT 16u
#define AGENT_FORWARDS_MAX 64u                   /* open `connect`s */
#define AGENT_CONNECT_TIMEOUT_DEFAULT_MS 10000
#define AGENT_DEFAULT_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

typedef struct AgentLimits {
        size_t max_frame;
        unsigned max_execs;
        uint64_t max_output;
        uint64_t max_file;
        int64_t default_timeout_ms; /* 0: none */
} AgentLimits;

typedef enum TransportMode {
        TRANSPORT_VIRTIO,
        TRANSPORT_UNIX,
        TRANSPORT_STDIO,
} TransportMode;

typedef struct Transport {
        TransportMode mode;
        int fd;        /* where frames are read: port, accepted socket, stdin */
        int out_fd;    /* where frames are written: the same, or stdout */
        int listen_fd; /* unix mode */
        char *path;    /* port device or socket path */
        bool connected;
        bool input_eof; /* stdio: stdin reached EOF */
} Transport;

typedef struct OutFrame OutFrame;
typedef struct Exec Exec;
typedef struct Forward Forward;

typedef struct PollSet {
        struct pollfd *fds;
        size_t n, allocated;
} PollSet;

typedef struct Agent {
        AgentLimits limits;
        bool pid1;
        Transport transport;
        int signal_fd;
        FrameReader *reader;

        /* Outgoing lines, oldest first; dropped while no host is connected. */
        OutFrame *out_head, *out_tail;
        size_t out_bytes;
        struct {
                int64_t id;
                size_t bytes;
        } *stream_queued; /* output bytes queued per exec or connection */
        size_t n_stream_queued, allocated_stream_queued;

        bool hello_done; /* per connection */
        int64_t ready_boottime_ms;
        int64_t next_probe_ms; /* virtio backstop while disconnected */

        Exec *execs;
        unsigned n_execs;

        Forward *forwards; /* forward.c: TCP connections made for the host */
        unsigned n_forwards;

        bool shutdown_pending;
        bool shutdown_reboot;
        int64_t shutdown_deadline_ms;

        bool quit;
        int exit_status;

        /* Indexes into the current PollSet, -1 when not polled. */
        int pfd_signal, pfd_transport, pfd_listen;
} Agent;

/* agent.c */
int agent_new(const AgentLimits *limits, bool pid1, Agent **ret);
Agent *agent_free(Agent *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(Agent *, agent_free)
/* Runs until quit (stdio EOF, shutdown outside PID 1, SIGTERM). Returns the exit status. */
int agent_run(Agent *a);
bool agent_backpressured(const Agent *a);
/* Is the queue too full for more output of this exec or connection (its own share, or
 * the whole queue)? Streams are read in turn while each is under its share: fair. */
bool agent_stream_backpressured(Agent *a, int64_t id);
/* Raw bytes that fit in one output/data chunk given max_frame (≤ AGENT_CHUNK_MAX). */
size_t agent_chunk_max(const Agent *a);
typedef enum AgentStream { AGENT_STREAM_STDOUT, AGENT_STREAM_STDERR, AGENT_STREAM_PTY } AgentStream;
/* An output frame of an exec, formatted on the fast path. */
int agent_send_output(Agent *a, int64_t id, AgentStream stream, const uint8_t *data, size_t len);
/* Queue a message for the host; silently dropped while disconnected. */
int agent_send(Agent *a, const AgentMsg *m);
int agent_send_ok(Agent *a, int64_t id, int64_t size);
/* Answer every held-back stdin request of exec or connection `id`: `ok` when code is NULL,
 * else that error, "<what> <id> <message>". A detached one answers nothing: its host is gone. */
void agent_acks_flush(Agent *a, AgentAcks *acks, bool detached, const char *what, int64_t id, const char *code,
                      const char *message);
int agent_send_error(Agent *a, int64_t id, const char *code, const char *fmt, ...) _printf_(4, 5);
/* Add an fd to the poll set; returns its index. */
int poll_set_add(PollSet *s, int fd, short events);

/* exec.c */
/* Bytes waiting for a process's stdin or a connection's peer: buf[off..len). Appends data,
 * keeping what is pending; -ENOBUFS past AGENT_STDIN_PENDING_MAX (the host broke the flow
 * control). */
int agent_pending_append(uint8_t **buf, size_t *off, size_t *len, const uint8_t *data, size_t n);
int exec_handle_exec(Agent *a, const AgentMsg *m);
int exec_handle_stdin(Agent *a, const AgentMsg *m);
int exec_handle_kill(Agent *a, const AgentMsg *m);
int exec_handle_resize(Agent *a, const AgentMsg *m);
void exec_reap_children(Agent *a);
int exec_add_pollfds(Agent *a, PollSet *s);
void exec_dispatch_pollfds(Agent *a, const PollSet *s);
int64_t exec_next_deadline(const Agent *a); /* monotonic ms, INT64_MAX when none */
void exec_process_timers(Agent *a);
void exec_kill_all(Agent *a);
/* A new hello starts a new host session: earlier execs are killed and never reported. */
void exec_detach_all(Agent *a);
void exec_free_all(Agent *a);

/* forward.c: `connect` (capability "tcp"); stdin and kill for a connection's id */
int forward_handle_connect(Agent *a, const AgentMsg *m);
bool forward_owns(Agent *a, int64_t id);
int forward_handle_stdin(Agent *a, const AgentMsg *m);
int forward_handle_kill(Agent *a, const AgentMsg *m);
int forward_add_pollfds(Agent *a, PollSet *s);
void forward_dispatch_pollfds(Agent *a, const PollSet *s);
int64_t forward_next_deadline(const Agent *a);
void forward_process_timers(Agent *a);
/* A new hello: connections of the earlier host are closed, never reported. */
void forward_detach_all(Agent *a);
void forward_free_all(Agent *a);

/* files.c */
int files_handle_put(Agent *a, const AgentMsg *m);
int files_handle_get(Agent *a, const AgentMsg *m);

/* configure.c */
int configure_handle(Agent *a, const AgentMsg *m);
