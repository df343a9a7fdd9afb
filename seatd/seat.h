/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Seats: the state machine (PROVISIONING -> READY -> RESETTING -> READY ... -> released,
 * and FAULTED), each transition a short list of steps that undo themselves on failure,
 * and the table seatd keeps. libvirt holds each seat's record; a restarted seatd adopts
 * the healthy seats and removes everything half-made.
 */

#include <json-c/json.h>
#include <stdbool.h>

#include "agent-client.h"
#include "conf.h"
#include "recording.h"
#include "domain.h"
#include "common/error.h"
#include "signing/minisign.h"
#include "images/store.h"

typedef enum SeatState {
        SEAT_PROVISIONING,
        SEAT_READY,
        SEAT_RESETTING,
        SEAT_FAULTED,
        SEAT_RELEASED,
} SeatState;

typedef struct Seat Seat;
typedef struct SeatManager SeatManager;

#define SEAT_TOKEN_HEX 64 /* a participant token: 32 random bytes, hex */

int seat_manager_new(const SeatConfig *config, ImageStore *store, SeatManager **ret, SeatError **ret_error);
SeatManager *seat_manager_free(SeatManager *m);
/* Adopt running seats after a restart; remove orphans (domains, overlays) of half-done work. */
int seat_manager_adopt(SeatManager *m, SeatError **ret_error);
/* The egress watch (netlink) for the event loop: -1 when networks are off; process it
 * when readable. seat_manager_tick() every seat_manager_tick_ms(): the periodic read-back
 * of every seat's filter and the denied-packet records. */
int seat_manager_net_fd(SeatManager *m);
void seat_manager_net_process(SeatManager *m);
/* The seats' DNS guards: readable when one exited or is due for a restart (-1: no networks). */
int seat_manager_guard_fd(SeatManager *m);
void seat_manager_guard_process(SeatManager *m);
unsigned seat_manager_tick_ms(SeatManager *m);
void seat_manager_tick(SeatManager *m);
/* Whether seats run under KVM (false: TCG), or why not at all. */
int seat_manager_accel(SeatManager *m, bool *ret_kvm, SeatError **ret_error);

/* Long operations: run them on worker threads. */
bool seat_egress_name_valid(const char *name);
/* egress: the egress profile's name, NULL for the config's default. */
/* How a boot the calling thread runs goes (the readiness wait): a job sets it around
 * seat_provision() and seat_reset(), and clears it (NULL) after. */
typedef struct SeatBootProgress {
        void (*report)(void *userdata, const char *what);
        bool (*cancelled)(void *userdata);
        void *userdata;
} SeatBootProgress;
void seat_boot_progress_set(const SeatBootProgress *p);

/* capped (the facilitator socket): a seat booted new only within pool_max_seats, counting
 * the seats still booting (-EDQUOT past it); a claim from a pool adds no seat and always goes. */
int seat_provision(SeatManager *m, const char *image, const char *participant, const char *egress, bool capped,
                   Seat **ret, char **ret_token, SeatError **ret_error);
/* cold: boot from the image even where the slot's saved state could be restored. */
/* control (may be NULL): who asked, appended to the ending session's audit log as a
 * "control" record once the request passed its checks (a refused one leaves none). */
int seat_reset(SeatManager *m, Seat *s, bool cold, json_object *control, char **ret_token, SeatError **ret_error);
int seat_release(SeatManager *m, Seat *s, json_object *control, SeatError **ret_error);

/* ---- pools (seatd/pool.c keeps them filled; docs/pools.md) ----
 * seat_provision() claims a pooled seat of its image and egress profile when there is one
 * whose agent answers a ping (new token, participant bound); else it boots one. */
typedef enum SeatPoolEvent {
        SEAT_POOL_CLAIMED, /* a pooled seat was handed out */
        SEAT_POOL_BROKEN,  /* a pooled seat failed at its claim (or was released): replace it */
        SEAT_POOL_CHANGED, /* some seat went away: there may be room now */
} SeatPoolEvent;
typedef void (*SeatPoolFn)(SeatPoolEvent ev, const char *image, const char *egress, void *userdata);
void seat_manager_set_pool_fn(SeatManager *m, SeatPoolFn fn, void *userdata);
/* The egress profile a seat provisioned with egress (NULL: the default) gets; "" without networks. */
const char *seat_manager_egress_name(SeatManager *m, const char *egress);
/* Boot a seat into the pool of image and egress: READY, no participant, a token nobody knows. */
int seat_provision_pooled(SeatManager *m, const char *image, const char *egress, SeatError **ret_error);
typedef struct SeatPoolEntry {
        char image[IMAGE_NAME_MAX + 1];
        char egress[33];
} SeatPoolEntry;
/* Image and egress of every pooled READY seat (free() the array). */
int seat_manager_pooled(SeatManager *m, SeatPoolEntry **ret, size_t *ret_n);
/* Seats in the table or booting new, and the memory the table's machines were given. */
void seat_manager_usage(SeatManager *m, unsigned *ret_seats, uint64_t *ret_memory_mib);
/* Take the oldest pooled seat of image and egress out of its pool (a reference), or NULL. */
Seat *seat_pool_take(SeatManager *m, const char *image, const char *egress);
/* A seat that failed its health check when claimed (a reference, faulted), or NULL. */
Seat *seat_pool_take_broken(SeatManager *m);
bool seat_pooled(Seat *s);

/* Look up a seat (a reference: seat_unref() it). */
Seat *seat_manager_get(SeatManager *m, const char *id);
/* References to every seat, NULL-terminated. */
Seat **seat_manager_all(SeatManager *m);
/* Every seat's record (seat_to_json), as seat.list and the dashboard's snapshots show them. */
json_object *seat_manager_list_json(SeatManager *m);
void seat_unref(Seat *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Seat *, seat_unref)
bool seat_image_in_use(SeatManager *m, const char *image);

const char *seat_id(const Seat *s);
SeatState seat_state(Seat *s);
const char *seat_state_to_string(SeatState st);
/* What a request was authorised for: the seat's session (generation) and, for a
 * participant, the digest of the token it presented. A request waits for the seat's lock
 * on a worker thread; the seat may be reset meanwhile, so every agent call checks the
 * ticket again under that lock and refuses one from an earlier session. */
typedef struct SeatTicket {
        int64_t generation;
        bool operator;                 /* no token: an operator may reach every session */
        char token_hash[65];           /* hex BLAKE2b-256 of the token it presented */
} SeatTicket;
/* Authorise a request now: operators always, anyone else only with the seat's current
 * token (compared in constant time). 0 with *ret filled, or -EPERM. */
int seat_authorize(Seat *s, const char *token, bool operator, SeatTicket *ret);
/* What status shows: from any thread, without waiting for a reset or release of the seat
 * (it reads what the seat last published, never fields being replaced). */
int seat_to_json(Seat *s, json_object **ret);
/* A copy of the path of the seat's current serial console log (free() it; NULL while it
 * has none), read the same way. */
int seat_console_path(Seat *s, char **ret);
/* The current session's audit log (a copy of its path; a reset starts another). */
int seat_audit_path(Seat *s, char **ret);
/* This participant's seat was claimed from a pool (a provision answered without a boot). */
bool seat_from_pool(Seat *s);

/*
 * Agent calls on a READY seat, side by side (each on its own handle on the agent channel,
 * at most seat_max_calls per seat and participant_max_calls per participant at once:
 * -EBUSY beyond), each for the session its ticket was authorised for (-EPERM for a
 * participant's, -EBUSY for an operator's ticket of an earlier session; -EBUSY too while a
 * reset or release waits for the seat). The seat's lock is not held while a call runs.
 *
 * An exec is recorded in the session's audit log before it reaches the guest ("exec.start",
 * data audit_start, not consumed) and after it ("exec.end": end_record(r, result or NULL,
 * error or NULL, userdata) plus "start", the seq of its start record, and "status"). When
 * the start cannot be recorded the exec is not run (-EIO). A reset or release cancels a
 * running exec: its process group is killed in the guest and -ECANCELED returned with
 * "cancelled: ..." in ret_error.
 */
typedef json_object *(*SeatExecEndFn)(int r, const AgentExecResult *res, const SeatError *error, void *userdata);
/* input (may be NULL): live stdin, resize and signals while it runs (agent-client.h); its
 * callbacks get userdata. An exec with a terminal (req->exec.has_pty) on an agent that did
 * not say "pty" in its hello is refused with -EOPNOTSUPP, naming the image and the agent. */
int seat_exec(Seat *s, const SeatTicket *ticket, AgentMsg *req, json_object *audit_start, SeatExecEndFn end_record,
              AgentOutputFn on_output, bool (*cancelled)(void *), const AgentExecInput *input, void *userdata,
              int timeout_ms, AgentExecResult *ret, SeatError **ret_error);
/* From an exec's callbacks (the seat is held): a new recording of this session's terminal
 * in the seat's directory, "rec-gGEN-K.cast", moved to the quarantine with the session.
 * -ENOSPC when the session has RECORDINGS_MAX already. *ret_name: "rec-K.cast", the
 * member's name in the archive. */
int seat_recording_open(Seat *s, const RecordingSpec *spec, Recording **ret, char **ret_name);
/* One request, one reply; recorded first as audit_type with audit_data (not consumed; NULL
 * audit_type: not recorded). Not sent when the record cannot be written (-EIO). */
int seat_agent_call(Seat *s, const SeatTicket *ticket, AgentMsg *req, int timeout_ms, const char *audit_type,
                    json_object *audit_data, AgentMsg **ret_reply, SeatError **ret_error);
/* The agent channel itself, for a caller that drives several requests at once (port
 * forwarding, server-forward.c): a call like the others, for ticket's session, on an agent
 * that lists capability cap (else -EOPNOTSUPP naming the image and the agent), fn runs
 * with a handle of its own on the seat's agent channel. fn must return soon once seat_preempted() (a reset or
 * release waits) and must keep the channel in step; a -EPROTO, -ECONNRESET, -EPIPE or
 * -ETIMEDOUT from it faults the seat. */
typedef int (*SeatAgentFn)(Seat *s, AgentClient *agent, void *userdata, SeatError **ret_error);
int seat_agent_session(Seat *s, const SeatTicket *ticket, const char *cap, SeatAgentFn fn, void *userdata,
                       SeatError **ret_error);
bool seat_preempted(Seat *s);
/* Under seat_agent_session(): a record that must be written before what it records
 * happens (-EIO when it cannot be, then it must not happen); ret_seq its seq. */
int seat_audit_required(Seat *s, const char *type, json_object *data, uint64_t *ret_seq, SeatError **ret_error);
/* One record in the seat's session audit log (forward-secure, hash-chained). */
int seat_audit(Seat *s, const char *type, json_object *data);

/* Evidence: where archives go, where unsealed sessions wait, the key archives are signed with. */
const char *seat_manager_archives_dir(SeatManager *m);
/* What the dashboard waits on and /metrics reads (seatd/changes.h, seatd/metrics.h). */
typedef struct Changes Changes;
typedef struct Metrics Metrics;
Changes *seat_manager_changes(SeatManager *m);
Metrics *seat_manager_metrics(SeatManager *m);
const char *seat_manager_quarantine_dir(SeatManager *m);
void seat_manager_host_public_key(SeatManager *m, SeatPublicKey *ret);
/* Seal the sessions of seat_id (NULL: of every seat) still in the quarantine, now, one
 * after another. When all are stored, a seat FAULTED only for that is READY again.
 * Result: {"sealed": [archive paths], "seat": record}. */
int seat_evidence_retry(SeatManager *m, const char *seat_id, json_object **ret_result, SeatError **ret_error);
