/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * seatd's side of the agent protocol (docs/protocol-agent.md): a blocking client with a
 * timeout on every wait. The agent is hostile: every frame goes through the bounded codec,
 * replies must carry an id the client is waiting for, and whatever it accumulates is
 * capped by the caller. A protocol violation returns -EPROTO: the caller faults the seat.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/agent-proto.h"
#include "common/error.h"

typedef struct AgentClient AgentClient;

/* Connect to a unix socket (libvirt's end of the virtio channel, or guest-init --unix),
 * retrying until timeout_ms passes (the socket appears when QEMU starts). */
int agent_client_connect_unix(const char *path, int timeout_ms, AgentClient **ret, SeatError **ret_error);
/* Take over a connected fd (non-blocking is set). */
int agent_client_new_fd(int fd, size_t max_frame, AgentClient **ret);
/* Another handle on c's connection, for one thread. After the first successful hello,
 * requests made through different handles run at the same time: a reader thread gives
 * each handle the frames for the ids it allocated (agent_client_next_id()), and frames
 * go onto the channel whole, one at a time. A frame for an id that no handle waits for
 * breaks the protocol and ends the connection for every handle (-EPROTO). The
 * connection closes when the handle it was made with is freed; other handles then get
 * -ECONNRESET, and may still be freed. */
int agent_client_open(AgentClient *c, AgentClient **ret);
/* Before hello: never start the reader thread. The one handle then reads every frame
 * itself, whatever its id (agent_client_recv()): for tests of the protocol that send
 * their own ids and malformed frames. */
void agent_client_set_single(AgentClient *c);
AgentClient *agent_client_free(AgentClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(AgentClient *, agent_client_free)
#define _cleanup_agent_client_ _cleanup_(agent_client_freep)

int64_t agent_client_next_id(AgentClient *c);

/* Send one message / raw bytes (tests send malformed frames), waiting at most timeout_ms
 * for the channel to take them. */
int agent_client_send(AgentClient *c, const AgentMsg *m, int timeout_ms);
int agent_client_send_raw(AgentClient *c, const void *buf, size_t len, int timeout_ms);
/* The next message from the agent, whatever its id. -ETIMEDOUT, -ECONNRESET at EOF,
 * -EPROTO for a frame that does not parse, is over the cap or is a request;
 * agent_client_violation() then says which, for a person (the guest's bytes escaped). */
int agent_client_recv(AgentClient *c, int timeout_ms, AgentMsg **ret);
const char *agent_client_violation(const AgentClient *c);
/* agent_client_recv(), or -EAGAIN as soon as wake_fd is readable (a job's inbox) while
 * nothing from the agent is there. */
int agent_client_recv_or_wake(AgentClient *c, int timeout_ms, int wake_fd, AgentMsg **ret);

/* hello: sends version 1, expects a hello reply of version 1.
 * agent_client_hello_fresh: for a machine that has just booted or been restored, whose
 * channel can hold nothing but the reply: any other frame (over the cap, not JSON, not
 * UTF-8, a request, a reply for another id) fails at once with -EPROTO, naming it; only
 * silence waits the whole timeout_ms (a slow boot).
 * agent_client_hello: for a new connection to an agent that was already running (seatd
 * restarted, the same connection after a refused hello), whose channel may still deliver
 * the previous connection's frames: the first frame may be the tail of one cut by the
 * reconnect, and whole replies for other ids are dropped (at most 4096). */
int agent_client_hello(AgentClient *c, int timeout_ms, AgentMsg **ret_hello, SeatError **ret_error);
int agent_client_hello_fresh(AgentClient *c, int timeout_ms, AgentMsg **ret_hello, SeatError **ret_error);
/* One request, one reply (not for exec). An `error` reply becomes -EREMOTEIO with the
 * agent's code and message (escaped) in ret_error; the reply itself is returned otherwise. */
int agent_client_call(AgentClient *c, AgentMsg *req, int timeout_ms, AgentMsg **ret_reply, SeatError **ret_error);
int agent_client_ping(AgentClient *c, int timeout_ms, SeatError **ret_error);
/* What the agent said in its last hello: whether it lists capability cap, and its name
 * ("guest-init 0.1.0", escaped; "an agent" before any hello). */
bool agent_client_has_capability(const AgentClient *c, const char *cap);
const char *agent_client_agent_name(const AgentClient *c);

/* An exec's output cap when the request names none: guest-init's own default
 * (guest-init/agent.h), unless its hello says another; what a hello may say is held to
 * AGENT_EXEC_OUTPUT_HOST_MAX. seatd drops output past the cap itself, whatever the agent
 * does, and reports it as truncated. */
#define AGENT_EXEC_OUTPUT_DEFAULT (16u * 1024u * 1024u)
#define AGENT_EXEC_OUTPUT_HOST_MAX (1024u * 1024u * 1024u)

typedef struct AgentExecResult {
        int64_t pid;
        int64_t code;   /* -1 when killed by a signal */
        int64_t signal;
        int64_t duration_ms;
        bool timed_out;
        bool truncated;
        int64_t stdout_bytes, stderr_bytes;
        char *error;    /* could not start: the agent's reason, escaped */
} AgentExecResult;
void agent_exec_result_done(AgentExecResult *r);

/* Called for each output chunk as it arrives; a negative return aborts the wait. */
typedef int (*AgentOutputFn)(bool is_stderr, const uint8_t *data, size_t len, void *userdata);

/* Run req (an AGENT_MSG_EXEC; its id is assigned here) and stream its output to
 * on_output until `exit`. timeout_ms bounds the whole wait on the host side and should be
 * above the exec's own timeout_ms. */
int agent_client_exec(AgentClient *c, AgentMsg *req, AgentOutputFn on_output, void *userdata,
                      int timeout_ms, AgentExecResult *ret, SeatError **ret_error);

/* The same, with cancellation: cancelled(userdata) is asked before every wait and at least
 * every 250 ms, and an output handler may return -ECANCELED; then the exec's process group
 * is killed in the guest, its remaining frames drained (for at most 5 s, else -ETIMEDOUT),
 * and -ECANCELED returned with the channel in step. */
int agent_client_exec_cancellable(AgentClient *c, AgentMsg *req, AgentOutputFn on_output, bool (*cancelled)(void *),
                                  void *userdata, int timeout_ms, AgentExecResult *ret, SeatError **ret_error);

/* Live input of an exec (stdin, resize, signal) that the caller hands over while it runs.
 * One input is in flight to the agent at a time: the next is taken only once the agent
 * answered the last (a stdin is answered once the tool has nearly read it), so nothing
 * queues up on the host beyond what the caller holds. */
typedef struct AgentExecInput {
        int fd; /* readable when next() may have something: polled beside the channel */
        /* Fill msg (type AGENT_MSG_STDIN, _RESIZE or _KILL and its fields; the client sets
         * id and exec) and *ret_token, return 1; 0 when there is nothing. msg's data stays
         * the caller's until done(). */
        int (*next)(void *userdata, AgentMsg *msg, void **ret_token);
        /* The agent's answer: code NULL for ok, else its error code and message (escaped),
         * or "cancelled" when the exec ended first. Called exactly once per token. */
        void (*done)(void *userdata, void *token, const char *code, const char *message);
} AgentExecInput;

/* agent_client_exec_cancellable() with live input (input may be NULL). */
int agent_client_exec_live(AgentClient *c, AgentMsg *req, AgentOutputFn on_output, bool (*cancelled)(void *),
                           const AgentExecInput *input, void *userdata, int timeout_ms, AgentExecResult *ret,
                           SeatError **ret_error);

/* Whole-file transfer in AGENT_CHUNK_MAX chunks. get refuses files over max bytes. */
int agent_client_file_put(AgentClient *c, const char *path, const void *data, size_t len, mode_t mode,
                          int timeout_ms, SeatError **ret_error);
int agent_client_file_get(AgentClient *c, const char *path, size_t max, int timeout_ms, void **ret,
                          size_t *ret_len, SeatError **ret_error);
