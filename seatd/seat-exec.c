/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-exec.c: tool calls into a seat's guest: who may call, the audit records around a
 * call, and faulting a seat whose agent channel broke. */
#include <string.h>

#include "seat-internal.h"


static int agent_failed(Seat *s, int r, SeatError **ret_error) {
        /* A broken protocol or a dead channel: this seat's agent cannot be trusted now. */
        /* A timeout too: the agent stalled (maybe mid-frame) past the tool's own timeout
         * and its grace, and what it sends next could belong to anything. */
        if (r == -EPROTO || r == -ECONNRESET || r == -EPIPE || r == -ETIMEDOUT)
                seat_fault(s, *ret_error ? (*ret_error)->message : "agent channel failed");
        return r;
}

/* A seat stopped because its egress filter changed takes no calls until it is restored. */
static bool refuse_paused(Seat *s, int *r, SeatError **ret_error) {
        if (!__atomic_load_n(&s->net_paused, __ATOMIC_ACQUIRE))
                return false;
        *r = seat_error_set(ret_error, EAGAIN,
                            "seat '%s' is paused: its egress rules were changed behind seatd's back, or its DNS guard failed (see 'seatctl status'); reset it to restore them",
                            s->rec.id);
        return true;
}

/* Under s->lock: may a call for ticket reach the guest now? */
static int call_allowed(Seat *s, const SeatTicket *ticket, SeatError **ret_error) {
        int r;
        if (refuse_paused(s, &r, ret_error))
                return r;
        if (seat_state(s) != SEAT_READY || !s->agent)
                return seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(seat_state(s)));
        r = ticket_check(s, ticket, ret_error);
        if (r < 0)
                return r;
        if (preempted(s))
                return seat_error_set(ret_error, EBUSY, "seat '%s' is being reset or released: not run", s->rec.id);
        return 0;
}

/* Under s->lock: how many calls the participant of s runs on all its seats. */
static unsigned participant_calls_locked(SeatManager *m, const Seat *s) {
        unsigned n = 0;
        for (size_t i = 0; i < m->n_seats; i++)
                if (!strcmp(m->seats[i]->rec.participant, s->rec.participant))
                        n += __atomic_load_n(&m->seats[i]->calls, __ATOMIC_ACQUIRE);
        return n;
}

/* Under s->lock: one more call into the guest, within the seat's and its participant's
 * limits; then a handle of its own on the agent channel, so that it runs beside the
 * others (agent_client_open()). Reset and release wait for every call to leave. */
static int call_enter(Seat *s, AgentClient **ret_handle, SeatError **ret_error) {
        SeatManager *m = s->m;
        const SeatConfig *conf = m->config;
        unsigned here = __atomic_load_n(&s->calls, __ATOMIC_ACQUIRE);
        if (here >= (unsigned) conf->seat_max_calls)
                return seat_error_set(ret_error, EBUSY,
                                      "seat '%s' runs %u calls already (seat_max_calls in seatd.conf): wait for one to end",
                                      s->rec.id, here);
        int r = agent_client_open(s->agent, ret_handle);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s': cannot open an agent stream: %s", s->rec.id, strerror(-r));
        /* Counted under the manager's lock: two seats of one participant admit in turn. */
        pthread_mutex_lock(&m->lock);
        unsigned theirs = participant_calls_locked(m, s);
        if (theirs < (unsigned) conf->participant_max_calls)
                __atomic_add_fetch(&s->calls, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_unlock(&m->lock);
        if (theirs >= (unsigned) conf->participant_max_calls) {
                *ret_handle = agent_client_free(*ret_handle);
                return seat_error_set(ret_error, EBUSY,
                                      "participant '%s' runs %u calls already on their seats (participant_max_calls in seatd.conf): wait for one to end",
                                      s->rec.participant, theirs);
        }
        /* For the dashboard (last call) and /metrics (calls started). */
        __atomic_store_n(&s->last_call, (int64_t) time(NULL), __ATOMIC_RELEASE);
        atomic_fetch_add(&m->metrics.calls, 1);
        changes_bump(&m->changes);
        return 0;
}

/* Under s->lock. */
static void call_leave(Seat *s, AgentClient **handle) {
        *handle = agent_client_free(*handle);
        __atomic_sub_fetch(&s->calls, 1, __ATOMIC_ACQ_REL);
        pthread_cond_broadcast(&s->calls_done);
}

/* Under s->lock: record type in this session's audit log, or say why not. ret_seq: the
 * record's seq. A call that must be recorded first is not made without it. */
static int audit_locked(Seat *s, const char *type, json_object *data, uint64_t *ret_seq, SeatError **ret_error) {
        _cleanup_error_ SeatError *err = NULL;
        int r;
        pthread_mutex_lock(&s->audit_lock);
        uint64_t seq = audit_log_count(s->audit);
        if (!s->audit)
                r = seat_error_set(&err, ESTALE, "this session has no audit log");
        else
                r = audit_log_append(s->audit, type, data, &err);
        pthread_mutex_unlock(&s->audit_lock);
        if (r < 0) {
                log_seat_error(s->rec.id, "seat '%s': cannot append '%s' to the audit log: %s", s->rec.id, type,
                               err ? err->message : "?");
                return seat_error_set(ret_error, EIO, "seat '%s': the audit log cannot record this call (%s): it was not run",
                                      s->rec.id, err ? err->message : "?");
        }
        if (ret_seq)
                *ret_seq = seq;
        return 0;
}

/* Between the agent client and the caller of seat_exec(): the caller's output handler and
 * cancellation, and the seat's preemption by a reset or release. */
typedef struct ExecRelay {
        Seat *s;
        AgentOutputFn on_output;
        bool (*cancelled)(void *);
        const AgentExecInput *input;
        void *userdata;
        bool preempted;
} ExecRelay;

static int exec_relay_next(void *p, AgentMsg *msg, void **ret_token) {
        ExecRelay *c = p;
        return c->input->next(c->userdata, msg, ret_token);
}

static void exec_relay_done(void *p, void *token, const char *code, const char *message) {
        ExecRelay *c = p;
        c->input->done(c->userdata, token, code, message);
}

static int exec_relay_output(bool is_stderr, const uint8_t *data, size_t len, void *p) {
        ExecRelay *c = p;
        return c->on_output ? c->on_output(is_stderr, data, len, c->userdata) : 0;
}

static bool exec_relay_cancelled(void *p) {
        ExecRelay *c = p;
        if (!c->preempted && preempted(c->s))
                c->preempted = true;
        return c->preempted || (c->cancelled && c->cancelled(c->userdata));
}

static const char *exec_status(int r, const AgentExecResult *res) {
        if (r == -ECANCELED)
                return "cancelled";
        if (r < 0)
                return "error";
        return res->timed_out ? "timed_out" : "exited";
}

int seat_exec(Seat *s, const SeatTicket *ticket, AgentMsg *req, json_object *audit_start, SeatExecEndFn end_record,
              AgentOutputFn on_output, bool (*cancelled)(void *), const AgentExecInput *input, void *userdata,
              int timeout_ms, AgentExecResult *ret, SeatError **ret_error) {
        ExecRelay relay = { .s = s, .on_output = on_output, .cancelled = cancelled, .input = input, .userdata = userdata };
        AgentExecInput relay_input = { .fd = input ? input->fd : -EBADF, .next = exec_relay_next, .done = exec_relay_done };
        AgentExecResult res = {};
        AgentClient *h = NULL;
        uint64_t start_seq = 0;
        pthread_mutex_lock(&s->lock);
        int r = call_allowed(s, ticket, ret_error);
        /* A terminal needs an agent that has one: an older guest-init would run the tool
         * on pipes (it ignores fields it does not know), which is not what was asked. */
        if (r >= 0 && req->exec.has_pty && !agent_client_has_capability(s->agent, AGENT_CAP_PTY))
                r = seat_error_set(ret_error, EOPNOTSUPP,
                                   "seat '%s': the guest agent of image '%s' version %" PRId64 " (%s) has no terminal support "
                                   "(capability '" AGENT_CAP_PTY "'): rebuild the image with a newer guest-init",
                                   s->rec.id, s->rec.image, s->rec.image_version, agent_client_agent_name(s->agent));
        if (r >= 0)
                r = call_enter(s, &h, ret_error);
        if (r >= 0) {
                r = audit_locked(s, "exec.start", audit_start, &start_seq, ret_error);
                if (r < 0)
                        call_leave(s, &h);
        }
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                return r;
        /* The seat's lock is not held while the command runs: other calls, status, a
         * capture switched on, all go on meanwhile; a reset or release preempts it. */
        r = agent_client_exec_live(h, req, exec_relay_output, exec_relay_cancelled, input ? &relay_input : NULL,
                                   &relay, timeout_ms, &res, ret_error);
        if (r == -ECANCELED && relay.preempted) {
                *ret_error = seat_error_free(*ret_error);
                r = seat_error_set(ret_error, ECANCELED,
                                   "cancelled: an operator resets or releases seat '%s'; the command's process group was killed in the guest",
                                   s->rec.id);
        }
        pthread_mutex_lock(&s->lock);
        /* The end goes to the same session's log as the start, before anyone else gets the
         * seat: a reset waits for this call to leave. */
        _cleanup_json_ json_object *end = end_record ? end_record(r, r >= 0 ? &res : NULL, r < 0 ? *ret_error : NULL, userdata)
                                                     : json_object_new_object();
        if (end) {
                json_object_object_add(end, "start", json_object_new_int64((int64_t) start_seq));
                json_object_object_add(end, "status", json_object_new_string(exec_status(r, &res)));
                if (r == -ECANCELED)
                        json_object_object_add(end, "cancelled_by",
                                               json_object_new_string(relay.preempted ? "reset or release" : "client"));
        }
        if (!end || audit_locked(s, "exec.end", end, NULL, NULL) < 0)
                log_seat_error(s->rec.id, "seat '%s': the end of exec record %" PRIu64 " is not in the audit log",
                               s->rec.id, start_seq);
        if (r < 0 && r != -ECANCELED)
                r = agent_failed(s, r, ret_error);
        call_leave(s, &h);
        pthread_mutex_unlock(&s->lock);
        if (r < 0) {
                agent_exec_result_done(&res);
                return r;
        }
        *ret = res;
        return 0;
}

int seat_agent_call(Seat *s, const SeatTicket *ticket, AgentMsg *req, int timeout_ms, const char *audit_type,
                    json_object *audit_data, AgentMsg **ret_reply, SeatError **ret_error) {
        AgentClient *h = NULL;
        pthread_mutex_lock(&s->lock);
        int r = call_allowed(s, ticket, ret_error);
        if (r >= 0)
                r = call_enter(s, &h, ret_error);
        if (r >= 0 && audit_type && (r = audit_locked(s, audit_type, audit_data, NULL, ret_error)) < 0)
                call_leave(s, &h);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                return r;
        r = agent_client_call(h, req, timeout_ms, ret_reply, ret_error);
        pthread_mutex_lock(&s->lock);
        if (r < 0 && r != -EREMOTEIO)
                r = agent_failed(s, r, ret_error);
        call_leave(s, &h);
        pthread_mutex_unlock(&s->lock);
        return r;
}

bool seat_preempted(Seat *s) {
        return preempted(s);
}

int seat_audit_required(Seat *s, const char *type, json_object *data, uint64_t *ret_seq, SeatError **ret_error) {
        return audit_locked(s, type, data, ret_seq, ret_error);
}

int seat_agent_session(Seat *s, const SeatTicket *ticket, const char *cap, SeatAgentFn fn, void *userdata,
                       SeatError **ret_error) {
        AgentClient *h = NULL;
        pthread_mutex_lock(&s->lock);
        int r = call_allowed(s, ticket, ret_error);
        if (r >= 0 && cap && !agent_client_has_capability(s->agent, cap))
                r = seat_error_set(ret_error, EOPNOTSUPP,
                                   "seat '%s': the guest agent of image '%s' version %" PRId64 " (%s) lacks capability '%s': "
                                   "rebuild the image with a newer guest-init",
                                   s->rec.id, s->rec.image, s->rec.image_version, agent_client_agent_name(s->agent), cap);
        if (r >= 0)
                r = call_enter(s, &h, ret_error);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                return r;
        r = fn(s, h, userdata, ret_error);
        pthread_mutex_lock(&s->lock);
        if (r < 0)
                r = agent_failed(s, r, ret_error);
        call_leave(s, &h);
        pthread_mutex_unlock(&s->lock);
        return r;
}
