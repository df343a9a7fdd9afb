/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat.* methods: provision, list, status, exec, file_put, file_get, console, reset, release. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/control-proto.h"
#include "common/fileio.h"
#include "signing/hash.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "exec-record.h"
#include "exec-tool.h"
#include "methods.h"
#include "metrics.h"
#include "seat.h"
#include "seat-log.h"

#include <sodium.h>

/* Tokens leave seatd once, in the reply; the copy here is wiped. */
static void sodium_memzero_token(char *t) {
        if (t)
                sodium_memzero(t, strlen(t));
}

#define EXEC_DEFAULT_TIMEOUT_MS 600000
#define EXEC_TIMEOUT_TYPE_MAX_MS ((int64_t) 7 * 24 * 3600 * 1000) /* what the parameter may say at all */
/* What of a command the audit log keeps verbatim (raw bytes; JSON may escape a byte into
 * six): with the digests of the whole, no record comes near AUDIT_RECORD_MAX. */
#define AUDIT_ARGV_KEEP (64u * 1024u)
#define AUDIT_ENV_NAMES_KEEP (16u * 1024u)
#define EXEC_HOST_GRACE_MS 10000 /* after the tool's own timeout: the agent kills, drains (≤ 1 s), reports */
#define CONSOLE_CHUNK_MAX (64u * 1024u)
#define AUDIT_CHUNK_MAX (256u * 1024u)
/* One seat.exec.stdin: small, so that keystrokes never wait behind a paste for long; with
 * the cap of requests in flight per connection it bounds what seatd holds per client. */
#define EXEC_STDIN_CHUNK_MAX (64u * 1024u)
#define PROVISION_COUNT_MAX 64


/* ---- common parameter handling ---- */

typedef struct SeatArgs {
        Seat *seat;
        SeatTicket ticket; /* what the request was authorised for, checked again at the seat */
        json_object *params;
} SeatArgs;

static void seat_args_free(void *p) {
        SeatArgs *a = p;
        if (!a)
                return;
        seat_unref(a->seat);
        json_object_put(a->params);
        free(a);
}

/* The seat named by params.seat, if the caller may touch it: operators may touch every
 * seat; anyone else must present that seat's token. *ret_ticket: the session (and token)
 * this was authorised for. Replies on refusal. */
static int seat_param(Request *req, Seat **ret, SeatTicket *ret_ticket) {
        const char *id = NULL, *token = NULL;
        if (json_get_string(req->params, "seat", true, SEAT_ID_MAX, &id) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "'%s' needs 'seat', a seat id", req->method), -EINVAL;
        (void) json_get_string(req->params, "token", false, 256, &token);
        _cleanup_(seat_unrefp) Seat *s = seat_manager_get(request_manager(req)->seats, id);
        SeatTicket t = {};
        if (!req->operator && (!s || seat_authorize(s, token, false, &t) < 0))
                /* Same answer whether the seat exists or not: a token reveals nothing else. */
                return request_reply_error(req, CONTROL_ERR_DENIED, "this token does not open seat '%s'", id), -EPERM;
        if (!s) {
                _cleanup_free_ char *e = log_escape(id, strlen(id), 64);
                return request_reply_error(req, CONTROL_ERR_NOT_FOUND, "no seat '%s' (see 'seatctl list')", e ? e : "?"),
                       -ENOENT;
        }
        if (req->operator)
                (void) seat_authorize(s, NULL, true, &t);
        *ret = TAKE_PTR(s);
        *ret_ticket = t;
        return 0;
}

static int start_seat_job(Request *req, JobFn fn) {
        _cleanup_(seat_unrefp) Seat *s = NULL;
        SeatTicket t;
        if (seat_param(req, &s, &t) < 0)
                return 0; /* answered */
        SeatArgs *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->seat = TAKE_PTR(s);
        a->ticket = t;
        a->params = json_object_get(req->params);
        return request_start_job(req, fn, a, seat_args_free);
}

static char *argv_for_log(char **argv) {
        size_t cap = 1024, n = 0;
        char *out = malloc(cap + 4);
        if (!out)
                return NULL;
        for (char **a = argv; *a && n < cap; a++) {
                _cleanup_free_ char *e = log_escape(*a, strlen(*a), 256);
                int k = snprintf(out + n, cap - n, "%s\"%s\"", n ? " " : "", e ? e : "?");
                if (k < 0)
                        break;
                n = MIN(cap, n + (size_t) k);
        }
        out[n] = '\0';
        return out;
}

/* ---- provision ---- */

typedef struct ProvisionArgs {
        char *image, *participant, *egress;
        int64_t count;
        bool capped; /* asked on the facilitator socket: within pool_max_seats */
} ProvisionArgs;

static void provision_args_free(void *p) {
        ProvisionArgs *a = p;
        if (!a)
                return;
        FREE_MANY(a->image, a->participant, a->egress, a);
}

/* What a boot waits for (the image's readiness check) reaches the client as progress. */
static void boot_progress_report(void *userdata, const char *what) {
        job_progress(userdata, what, 0, 1);
}
static bool boot_progress_cancelled(void *userdata) {
        return job_cancelled(userdata);
}

static int provision_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        ProvisionArgs *a = data;
        _cleanup_json_ json_object *seats = json_object_new_array();
        if (!seats)
                return -ENOMEM;
        for (int64_t i = 0; i < a->count; i++) {
                _cleanup_(seat_unrefp) Seat *s = NULL;
                _cleanup_free_ char *token = NULL;
                json_object *o = NULL;
                if (job_cancelled(req))
                        return seat_error_set(ret_error, ECANCELED, "provision cancelled after %" PRId64 " seats", i);
                job_progress(req, "provision", (uint64_t) i, (uint64_t) a->count);
                seat_boot_progress_set(&(SeatBootProgress) { .report = boot_progress_report,
                                                             .cancelled = boot_progress_cancelled, .userdata = req });
                /* A facilitator (or a compromised seat-web) fills the host no further than the
                 * pools may (capped); past that is an operator's decision. */
                int64_t started = now_monotonic_ms();
                int r = seat_provision(request_manager(req)->seats, a->image, a->participant, a->egress, a->capped, &s,
                                       &token, ret_error);
                seat_boot_progress_set(NULL);
                if (r >= 0)
                        metrics_observe(seat_manager_metrics(request_manager(req)->seats),
                                        seat_from_pool(s) ? METRIC_CLAIM : METRIC_PROVISION, now_monotonic_ms() - started);
                if (r >= 0 && job_cancelled(req)) {
                        /* Nobody will ever see its token: a seat made for a request that went
                         * away is released again, not left running for nobody. */
                        _cleanup_error_ SeatError *rel = NULL;
                        log_seat_notice(seat_id(s), "provision cancelled by its client: releasing seat '%s' again",
                                        seat_id(s));
                        if (seat_release(request_manager(req)->seats, s, NULL, &rel) < 0)
                                log_seat_warning(seat_id(s), "releasing seat '%s' of a cancelled provision: %s",
                                                 seat_id(s), rel ? rel->message : "?");
                        sodium_memzero_token(token);
                        r = seat_error_set(ret_error, ECANCELED, "provision cancelled: seat '%s' was released again",
                                           seat_id(s));
                }
                if (r < 0) {
                        if (i > 0)
                                (void) seat_error_wrap(ret_error, "%" PRId64 " of %" PRId64 " seats were provisioned before",
                                                       i, a->count);
                        return r;
                }
                if (seat_to_json(s, &o) < 0)
                        return -ENOMEM;
                json_object_object_add(o, "token", json_object_new_string(token));
                sodium_memzero_token(token);
                json_object_array_add(seats, o);
        }
        job_progress(req, "provision", (uint64_t) a->count, (uint64_t) a->count);
        json_object *res = json_object_new_object();
        json_object_object_add(res, "seats", TAKE_PTR(seats));
        *ret_result = res;
        return 0;
}

static int seat_provision_method(Request *req) {
        const char *image = NULL, *participant = "", *egress = NULL;
        int64_t count = 1;
        if (json_get_string(req->params, "image", true, IMAGE_NAME_MAX, &image) < 0 ||
            json_get_string(req->params, "participant", false, 64, &participant) < 0 ||
            json_get_string(req->params, "egress", false, 32, &egress) < 0 ||
            json_get_int64(req->params, "count", false, 1, PROVISION_COUNT_MAX, &count) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID,
                                           "seat.provision needs 'image', and takes 'participant' (≤ 64 characters), 'egress' (a profile name) and 'count' (1..%d)",
                                           PROVISION_COUNT_MAX);
        if (egress && req->facilitator)
                return request_reply_error(req, CONTROL_ERR_DENIED,
                                           "'egress' is not taken on the facilitator socket: seats made there get seatd.conf's default profile (an operator chooses others)");
        if (egress && !seat_egress_name_valid(egress))
                return request_reply_error(req, CONTROL_ERR_INVALID,
                                           "'egress' is a profile name: 1-32 of a-z, 0-9, '_' and '-' (files in egress_dir)");
        ProvisionArgs *a = calloc(1, sizeof(*a));
        if (!a || !(a->image = strdup(image)) || !(a->participant = strdup(participant)) ||
            (egress && !(a->egress = strdup(egress)))) {
                provision_args_free(a);
                return -ENOMEM;
        }
        a->count = count;
        a->capped = req->facilitator;
        return request_start_job(req, provision_job, a, provision_args_free);
}

/* ---- list, status ---- */

static int seat_list_method(Request *req) {
        json_object *arr = seat_manager_list_json(request_manager(req)->seats), *res = json_object_new_object();
        if (!arr || !res) {
                json_object_put(arr);
                json_object_put(res);
                return -ENOMEM;
        }
        json_object_object_add(res, "seats", arr);
        return request_reply_result(req, res);
}

static int seat_status_method(Request *req) {
        _cleanup_(seat_unrefp) Seat *s = NULL;
        _cleanup_json_ json_object *tool = NULL;
        _cleanup_error_ SeatError *err = NULL;
        SeatTicket t;
        json_object *o = NULL;
        /* The dashboard reads status; it never records a tool call (that record says an agent
         * of the seat's session asked, and it is sealed as evidence). */
        if (req->facilitator && json_object_object_get_ex(req->params, "tool", NULL))
                return request_reply_error(req, CONTROL_ERR_DENIED,
                                           "'tool' (an agent's tool call, recorded in the seat's audit log) is not taken on the facilitator socket");
        if (seat_param(req, &s, &t) < 0)
                return 0;
        /* Asked for an agent's tool call (seatctl mcp's seat_status): recorded like every
         * other tool call, with the session it was authorised for. */
        if (exec_tool_record(req->params, &tool, &err) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "%s", err ? err->message : "bad 'tool'");
        if (seat_to_json(s, &o) < 0)
                return -ENOMEM;
        if (tool) {
                json_object *rec = exec_tool_call_record(tool, req->uid, req->operator, t.generation, "seat.status");
                if (!rec || seat_audit(s, "tool.call", rec) < 0) {
                        json_object_put(rec);
                        json_object_put(o);
                        return request_reply_error(req, CONTROL_ERR_IO, "this tool call cannot be recorded in seat '%s''s audit log: it was not answered", seat_id(s));
                }
                json_object_put(rec);
        }
        return request_reply_result(req, o);
}

/* ---- exec ---- */

typedef struct ExecStream {
        Request *req;
        Seat *seat;
        bool pty;                          /* output is the terminal's: stream "pty" */
        /* A terminal session's recording, opened by its first event (the seat is held
         * then): none when it could not be made, with why in the exec.end record. */
        RecordingSpec rec_spec;
        Recording *rec;
        char *rec_name;
        int rec_error;                     /* 0, or why there is no recording */
        bool rec_tried;
        int64_t in_bytes;                  /* live stdin passed on */
        crypto_generichash_state out, err; /* BLAKE2b-512 of what the tool printed, for the audit log */
        int64_t out_bytes, err_bytes;      /* as they reached seatd */
} ExecStream;

static Recording *exec_recording(ExecStream *st) {
        if (!st->pty || st->rec_tried)
                return st->rec;
        st->rec_tried = true;
        st->rec_error = seat_recording_open(st->seat, &st->rec_spec, &st->rec, &st->rec_name);
        if (st->rec_error < 0)
                log_seat_warning(seat_id(st->seat), "seat '%s': this terminal session is not recorded: %s",
                                 seat_id(st->seat), strerror(-st->rec_error));
        return st->rec;
}

static int exec_output(bool is_stderr, const uint8_t *data, size_t len, void *userdata) {
        ExecStream *st = userdata;
        recording_output(exec_recording(st), data, len);
        crypto_generichash_update(is_stderr ? &st->err : &st->out, data, len);
        *(is_stderr ? &st->err_bytes : &st->out_bytes) += (int64_t) len;
        _cleanup_free_ char *b64 = NULL;
        if (base64_encode(data, len, &b64, NULL) < 0)
                return -ENOMEM;
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "stream", json_object_new_string(st->pty ? "pty" : is_stderr ? "stderr" : "stdout"));
        json_object_object_add(o, "data", json_object_new_string(b64));
        job_event(st->req, "output", o);
        return job_cancelled(st->req) ? -ECANCELED : 0;
}

/* The client went away (Ctrl-C, SIGTERM, a closed socket): the exec is cancelled. */
static bool exec_cancelled(void *userdata) {
        ExecStream *st = userdata;
        return job_cancelled(st->req);
}

/* ---- live input: seat.exec.stdin, seat.exec.resize, seat.exec.signal ---- */

typedef struct ExecInput {
        Request *req; /* the follow-up, answered in exec_input_done() */
        void *data;
} ExecInput;

/* The follow-ups were checked on arrival (exec_follow_method); they are read again here
 * only to build the agent's message. */
static int exec_input_next(void *userdata, AgentMsg *msg, void **ret_token) {
        ExecStream *st = userdata;
        Request *f = job_inbox_pop(st->req);
        if (!f)
                return 0;
        ExecInput *in = calloc(1, sizeof(*in));
        if (!in) {
                job_reply_error(f, CONTROL_ERR_INTERNAL, "out of memory");
                return 0;
        }
        in->req = f;
        if (!strcmp(f->method, "seat.exec.stdin")) {
                size_t len = 0;
                bool eof = false;
                (void) json_get_base64(f->params, "data", false, EXEC_STDIN_CHUNK_MAX, &in->data, &len);
                (void) json_get_bool(f->params, "eof", false, &eof);
                *msg = (AgentMsg) { .type = AGENT_MSG_STDIN, .stdin_msg = { .data = in->data, .len = len, .eof = eof } };
                st->in_bytes += (int64_t) len;
                recording_input(exec_recording(st), in->data, len);
        } else if (!strcmp(f->method, "seat.exec.resize")) {
                *msg = (AgentMsg) { .type = AGENT_MSG_RESIZE };
                (void) json_get_int64(f->params, "rows", true, 1, AGENT_PTY_DIM_MAX, &msg->resize.rows);
                (void) json_get_int64(f->params, "cols", true, 1, AGENT_PTY_DIM_MAX, &msg->resize.cols);
                recording_resize(exec_recording(st), msg->resize.cols, msg->resize.rows);
        } else {
                *msg = (AgentMsg) { .type = AGENT_MSG_KILL };
                (void) json_get_int64(f->params, "signal", true, 1, 64, &msg->kill.signal);
        }
        *ret_token = in;
        return 1;
}

static const char *exec_input_code(const char *agent_code) {
        if (!strcmp(agent_code, AGENT_ERR_INVALID))
                return CONTROL_ERR_INVALID;
        if (!strcmp(agent_code, CONTROL_ERR_CANCELLED))
                return CONTROL_ERR_CANCELLED;
        if (!strcmp(agent_code, AGENT_ERR_NOT_FOUND) || !strcmp(agent_code, AGENT_ERR_STATE) ||
            !strcmp(agent_code, AGENT_ERR_LIMIT))
                return CONTROL_ERR_STATE;
        return CONTROL_ERR_IO;
}

static void exec_input_done(void *userdata, void *token, const char *code, const char *message) {
        ExecInput *in = token;
        if (!code)
                job_reply(in->req, NULL);
        else
                job_reply_error(in->req, exec_input_code(code), "not delivered: %s (%s)", message, code);
        free(in->data);
        free(in);
}

/* The "exec.start" record: who asked what, with what, before it runs. Whatever of argv and
 * the env names is cut for size is still bound by the digest and the counts. */
static json_object *exec_start_record(Request *req, char **argv, char **env, const char *cwd, const void *stdin_data,
                                      size_t stdin_len, int64_t timeout_ms, int64_t max_output, const AgentMsg *msg) {
        json_object *rec = json_object_new_object();
        bool argv_cut = false, env_cut = false;
        if (!rec)
                return NULL;
        json_object_object_add(rec, "uid", json_object_new_int64(req->uid));
        json_object_object_add(rec, "operator", json_object_new_boolean(req->operator));
        json_object_object_add(rec, "argv", exec_record_strv_capped(argv, false, AUDIT_ARGV_KEEP, &argv_cut));
        json_object_object_add(rec, "argv_truncated", json_object_new_boolean(argv_cut));
        json_object_object_add(rec, "argc", json_object_new_int64((int64_t) exec_record_strv_count(argv)));
        json_object_object_add(rec, "argv_bytes", json_object_new_int64(exec_record_strv_bytes(argv)));
        json_object_object_add(rec, "argv_blake2b", exec_record_strv_digest(argv));
        json_object_object_add(rec, "cwd", json_object_new_string(cwd ? cwd : "/"));
        json_object_object_add(rec, "env_names", exec_record_strv_capped(env, true, AUDIT_ENV_NAMES_KEEP, &env_cut));
        if (env_cut)
                json_object_object_add(rec, "env_names_truncated", json_object_new_boolean(true));
        json_object_object_add(rec, "stdin_bytes", json_object_new_int64((int64_t) stdin_len));
        json_object_object_add(rec, "stdin_blake2b", exec_record_bytes_digest(stdin_data, stdin_len));
        json_object_object_add(rec, "timeout_ms", json_object_new_int64(timeout_ms));
        if (max_output)
                json_object_object_add(rec, "max_output", json_object_new_int64(max_output));
        if (msg->exec.has_pty) {
                json_object_object_add(rec, "pty_rows", json_object_new_int64(msg->exec.pty_rows));
                json_object_object_add(rec, "pty_cols", json_object_new_int64(msg->exec.pty_cols));
        }
        if (!msg->exec.stdin_eof)
                json_object_object_add(rec, "stdin_live", json_object_new_boolean(true));
        return rec;
}

/* The "exec.end" record (seat_exec() adds "start" and "status"): how it ended. */
static json_object *exec_end_record(int r, const AgentExecResult *res, const SeatError *error, void *userdata) {
        ExecStream *st = userdata;
        json_object *rec = json_object_new_object();
        if (!rec)
                return NULL;
        if (r < 0) {
                json_object_object_add(rec, "error", json_object_new_string(error ? error->message : strerror(-r)));
                json_object_object_add(rec, "stdout_bytes", json_object_new_int64(st->out_bytes));
                json_object_object_add(rec, "stderr_bytes", json_object_new_int64(st->err_bytes));
        } else {
                json_object_object_add(rec, "code", json_object_new_int64(res->code));
                json_object_object_add(rec, "signal", json_object_new_int64(res->signal));
                json_object_object_add(rec, "duration_ms", json_object_new_int64(res->duration_ms));
                json_object_object_add(rec, "timed_out", json_object_new_boolean(res->timed_out));
                json_object_object_add(rec, "truncated", json_object_new_boolean(res->truncated));
                json_object_object_add(rec, "stdout_bytes", json_object_new_int64(res->stdout_bytes));
                json_object_object_add(rec, "stderr_bytes", json_object_new_int64(res->stderr_bytes));
        }
        if (st->in_bytes > 0)
                json_object_object_add(rec, "stdin_live_bytes", json_object_new_int64(st->in_bytes));
        /* The recording ends with the exec, while the seat is still held: a reset moves it
         * to the quarantine only after this. Every terminal is recorded, one that printed
         * nothing and was cancelled too. */
        if (st->pty) {
                (void) exec_recording(st);
                if (st->rec) {
                        uint64_t dropped = recording_close(TAKE_PTR(st->rec));
                        json_object_object_add(rec, "recording", json_object_new_string(st->rec_name ? st->rec_name : "?"));
                        if (dropped)
                                json_object_object_add(rec, "recording_dropped_bytes", json_object_new_int64((int64_t) dropped));
                } else
                        json_object_object_add(rec, "recording_error", json_object_new_string(strerror(-st->rec_error)));
        }
        json_object_object_add(rec, "stdout_blake2b", exec_record_digest(&st->out));
        json_object_object_add(rec, "stderr_blake2b", exec_record_digest(&st->err));
        return rec;
}

static int exec_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        SeatArgs *a = data;
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        _cleanup_free_ void *stdin_data = NULL;
        _cleanup_free_ char *cwd = NULL, *argv_log = NULL;
        _cleanup_json_ json_object *start = NULL;
        const char *cwd_s = NULL;
        size_t stdin_len = 0;
        int64_t timeout_ms = 0, max_output = 0, rows = 0, cols = 0;
        bool stdin_live = false;
        json_object *pty = NULL;
        AgentExecResult res = {};
        const int64_t exec_max_timeout_ms = (int64_t) request_manager(req)->config->exec_max_timeout * 1000;

        if (json_get_strv(a->params, "argv", true, AGENT_ARGV_MAX, AGENT_STR_MAX, &argv) < 0 || !argv[0] ||
            json_get_strv(a->params, "env", false, AGENT_ENV_MAX, AGENT_STR_MAX, &env) < 0 ||
            json_get_string(a->params, "cwd", false, AGENT_STR_MAX, &cwd_s) < 0 ||
            json_get_base64(a->params, "stdin", false, AGENT_CHUNK_MAX, &stdin_data, &stdin_len) < 0 ||
            json_get_int64(a->params, "timeout_ms", false, 0, EXEC_TIMEOUT_TYPE_MAX_MS, &timeout_ms) < 0 ||
            json_get_int64(a->params, "max_output", false, 0, (int64_t) 1 << 30, &max_output) < 0 ||
            json_get_bool(a->params, "stdin_live", false, &stdin_live) < 0 ||
            json_get_object(a->params, "pty", false, &pty) < 0 ||
            (pty && (json_get_int64(pty, "rows", true, 1, AGENT_PTY_DIM_MAX, &rows) < 0 ||
                     json_get_int64(pty, "cols", true, 1, AGENT_PTY_DIM_MAX, &cols) < 0)))
                return seat_error_set(ret_error, EINVAL,
                                      "seat.exec needs 'argv' (strings) and takes 'env', 'cwd', 'stdin' (base64, ≤ 512 KiB), 'timeout_ms', "
                                      "'max_output', 'stdin_live' (bool), 'pty' ({\"rows\", \"cols\"}: 1..%d)", AGENT_PTY_DIM_MAX);
        if (timeout_ms > exec_max_timeout_ms)
                return seat_error_set(ret_error, EINVAL,
                                      "'timeout_ms' %" PRId64 " is over this host's cap of %" PRId64
                                      " ms (exec_max_timeout = %" PRId64 " in seatd.conf)",
                                      timeout_ms, exec_max_timeout_ms, exec_max_timeout_ms / 1000);
        int64_t guest_uid, guest_gid;
        _cleanup_json_ json_object *tool = NULL;
        int r = exec_guest_user(a->params, &guest_uid, &guest_gid, ret_error);
        if (r < 0 || (r = exec_tool_record(a->params, &tool, ret_error)) < 0)
                return r;
        if (cwd_s && !(cwd = strdup(cwd_s)))
                return -ENOMEM;
        /* A session someone types into lasts as long as the host allows by default. */
        if (timeout_ms == 0)
                timeout_ms = stdin_live ? exec_max_timeout_ms : MIN(EXEC_DEFAULT_TIMEOUT_MS, exec_max_timeout_ms);

        AgentMsg msg = { .type = AGENT_MSG_EXEC,
                         .exec = { .argv = argv, .env = env, .cwd = cwd, .stdin_data = stdin_data, .stdin_len = stdin_len,
                                   .stdin_eof = !stdin_live, .timeout_ms = timeout_ms, .max_output = max_output,
                                   .uid = guest_uid, .gid = guest_gid,
                                   .has_pty = pty != NULL, .pty_rows = rows, .pty_cols = cols } };
        const SeatConfig *conf = request_manager(req)->config;
        _cleanup_free_ char *title = argv_for_log(argv);
        ExecStream st = { .req = req, .seat = a->seat, .pty = pty != NULL,
                          .rec_spec = { .cols = cols, .rows = rows, .command = title,
                                        .max_bytes = conf->recording_max_bytes, .record_input = conf->record_input } };
        const AgentExecInput input = { .fd = job_inbox_fd(req), .next = exec_input_next, .done = exec_input_done };
        crypto_generichash_init(&st.out, NULL, 0, 64);
        crypto_generichash_init(&st.err, NULL, 0, 64);
        argv_log = argv_for_log(argv);
        /* Every tool call is logged: who, where, what, and how it ended — to the session's
         * audit log (evidence: its start before it runs, its end after) and as a line for
         * operators. */
        start = exec_start_record(req, argv, env, cwd, stdin_data, stdin_len, timeout_ms, max_output, &msg);
        if (!start)
                return -ENOMEM;
        if (guest_uid || guest_gid) {
                json_object_object_add(start, "guest_uid", json_object_new_int64(guest_uid));
                json_object_object_add(start, "guest_gid", json_object_new_int64(guest_gid));
        }
        if (tool)
                json_object_object_add(start, "tool", json_object_get(tool));
        r = seat_exec(a->seat, &a->ticket, &msg, start, exec_end_record, exec_output, exec_cancelled,
                      stdin_live ? &input : NULL, &st, (int) MIN(timeout_ms + EXEC_HOST_GRACE_MS, (int64_t) INT32_MAX),
                      &res, ret_error);
        job_inbox_close(req); /* what is still queued is answered when this request ends */
        (void) recording_close(TAKE_PTR(st.rec)); /* (not opened, or closed by exec_end_record) */
        free(st.rec_name);
        if (r < 0) {
                log_notice("exec seat=%s uid=%u argv=[%s] cwd=%s stdin=%zu failed: %s", seat_id(a->seat), (unsigned) req->uid,
                           argv_log ? argv_log : "?", cwd ? cwd : "/", stdin_len, *ret_error ? (*ret_error)->message : strerror(-r));
                return r;
        }
        log_notice("exec seat=%s uid=%u argv=[%s] cwd=%s stdin=%zu code=%" PRId64 " signal=%" PRId64 " ms=%" PRId64
                   " out=%" PRId64 " err=%" PRId64 "%s%s",
                   seat_id(a->seat), (unsigned) req->uid, argv_log ? argv_log : "?", cwd ? cwd : "/", stdin_len, res.code,
                   res.signal, res.duration_ms, res.stdout_bytes, res.stderr_bytes, res.timed_out ? " timed_out" : "",
                   res.truncated ? " truncated" : "");
        json_object *o = json_object_new_object();
        json_object_object_add(o, "code", json_object_new_int64(res.code));
        json_object_object_add(o, "signal", json_object_new_int64(res.signal));
        json_object_object_add(o, "duration_ms", json_object_new_int64(res.duration_ms));
        json_object_object_add(o, "timed_out", json_object_new_boolean(res.timed_out));
        json_object_object_add(o, "truncated", json_object_new_boolean(res.truncated));
        json_object_object_add(o, "stdout_bytes", json_object_new_int64(res.stdout_bytes));
        json_object_object_add(o, "stderr_bytes", json_object_new_int64(res.stderr_bytes));
        if (res.error)
                json_object_object_add(o, "error", json_object_new_string(res.error));
        agent_exec_result_done(&res);
        *ret_result = o;
        return 0;
}

static int seat_exec_method(Request *req) {
        bool live = false;
        /* Before the job starts: a follow-up may arrive right after this request. */
        if (json_get_bool(req->params, "stdin_live", false, &live) >= 0 && live) {
                int r = request_open_inbox(req);
                if (r < 0)
                        return r;
        }
        return start_seat_job(req, exec_job);
}

/* seat.exec.stdin / .resize / .signal: input for a running seat.exec with stdin_live on the
 * same connection, which was authorised for its seat when it arrived; these reach nothing
 * else. Checked here, passed on by the exec's job one at a time (exec_input_next). */
static int exec_follow_method(Request *req) {
        int64_t target = 0, v = 0;
        bool b = false;
        if (json_get_int64(req->params, "exec", true, 1, (int64_t) 1 << 53, &target) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "'%s' needs 'exec', the id of a running seat.exec "
                                                                     "with 'stdin_live' on this connection", req->method);
        if (!strcmp(req->method, "seat.exec.stdin")) {
                _cleanup_free_ void *data = NULL;
                size_t len = 0;
                if (json_get_base64(req->params, "data", false, EXEC_STDIN_CHUNK_MAX, &data, &len) < 0 ||
                    json_get_bool(req->params, "eof", false, &b) < 0)
                        return request_reply_error(req, CONTROL_ERR_INVALID,
                                                   "seat.exec.stdin takes 'data' (base64, ≤ %u bytes) and 'eof' (bool)",
                                                   EXEC_STDIN_CHUNK_MAX);
        } else if (!strcmp(req->method, "seat.exec.resize")) {
                if (json_get_int64(req->params, "rows", true, 1, AGENT_PTY_DIM_MAX, &v) < 0 ||
                    json_get_int64(req->params, "cols", true, 1, AGENT_PTY_DIM_MAX, &v) < 0)
                        return request_reply_error(req, CONTROL_ERR_INVALID, "seat.exec.resize needs 'rows' and 'cols' (1..%d)",
                                                   AGENT_PTY_DIM_MAX);
        } else if (json_get_int64(req->params, "signal", true, 1, 64, &v) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "seat.exec.signal needs 'signal' (a number, 1..64)");
        return request_forward(req, target);
}

/* ---- files ---- */

/* A file transfer's record, written before the chunk reaches the guest: file_put's
 * "bytes" are the bytes sent, file_get's the most asked for. */
static json_object *file_op_record(Request *req, const char *path, int64_t offset, int64_t len) {
        json_object *rec = json_object_new_object();
        if (!rec)
                return NULL;
        json_object_object_add(rec, "uid", json_object_new_int64(req->uid));
        json_object_object_add(rec, "path", json_object_new_string(path));
        json_object_object_add(rec, "offset", json_object_new_int64(offset));
        json_object_object_add(rec, "bytes", json_object_new_int64(len));
        return rec;
}

static int file_put_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        SeatArgs *a = data;
        const char *path = NULL;
        _cleanup_free_ void *bytes = NULL;
        size_t len = 0;
        int64_t offset = 0, mode = 0644;
        bool final = false;
        _cleanup_agent_msg_ AgentMsg *reply = NULL;

        if (json_get_string(a->params, "path", true, AGENT_STR_MAX, &path) < 0 || path[0] != '/' ||
            json_get_base64(a->params, "data", false, AGENT_CHUNK_MAX, &bytes, &len) < 0 ||
            json_get_int64(a->params, "offset", false, 0, (int64_t) 1 << 53, &offset) < 0 ||
            json_get_int64(a->params, "mode", false, 0, 07777, &mode) < 0 || json_get_bool(a->params, "final", false, &final) < 0)
                return seat_error_set(ret_error, EINVAL, "seat.file_put needs an absolute 'path' and takes 'data' (base64, ≤ 512 KiB), 'offset', 'mode', 'final'");
        AgentMsg msg = { .type = AGENT_MSG_FILE_PUT,
                         .file_put = { .path = (char *) path, .offset = offset, .data = bytes, .len = len, .mode = mode, .final = final } };
        _cleanup_json_ json_object *rec = file_op_record(req, path, offset, (int64_t) len);
        if (!rec)
                return -ENOMEM;
        int r = seat_agent_call(a->seat, &a->ticket, &msg, 60000, "file_put", rec, &reply, ret_error);
        if (r < 0)
                return r;
        if (offset == 0)
                log_notice("file_put seat=%s uid=%u path=%s", seat_id(a->seat), (unsigned) req->uid, path);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "size", json_object_new_int64(reply->type == AGENT_MSG_OK ? reply->ok.size : -1));
        *ret_result = o;
        return 0;
}

static int file_get_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        SeatArgs *a = data;
        const char *path = NULL;
        int64_t offset = 0, length = AGENT_CHUNK_MAX;
        _cleanup_agent_msg_ AgentMsg *reply = NULL;
        _cleanup_free_ char *b64 = NULL;

        if (json_get_string(a->params, "path", true, AGENT_STR_MAX, &path) < 0 || path[0] != '/' ||
            json_get_int64(a->params, "offset", false, 0, (int64_t) 1 << 53, &offset) < 0 ||
            json_get_int64(a->params, "length", false, 0, AGENT_CHUNK_MAX, &length) < 0)
                return seat_error_set(ret_error, EINVAL, "seat.file_get needs an absolute 'path' and takes 'offset', 'length' (≤ 512 KiB)");
        AgentMsg msg = { .type = AGENT_MSG_FILE_GET, .file_get = { .path = (char *) path, .offset = offset, .length = length } };
        _cleanup_json_ json_object *rec = file_op_record(req, path, offset, length);
        if (!rec)
                return -ENOMEM;
        int r = seat_agent_call(a->seat, &a->ticket, &msg, 60000, "file_get", rec, &reply, ret_error);
        if (r < 0)
                return r;
        if (reply->type != AGENT_MSG_DATA)
                return seat_error_set(ret_error, EPROTO, "agent answered file_get with '%s'", agent_msg_type_to_string(reply->type));
        if (offset == 0)
                log_notice("file_get seat=%s uid=%u path=%s", seat_id(a->seat), (unsigned) req->uid, path);
        if (base64_encode(reply->data.data, reply->data.len, &b64, NULL) < 0)
                return -ENOMEM;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "data", json_object_new_string(b64));
        json_object_object_add(o, "eof", json_object_new_boolean(reply->data.eof));
        json_object_object_add(o, "size", json_object_new_int64(reply->data.size));
        *ret_result = o;
        return 0;
}

static int seat_file_put_method(Request *req) {
        return start_seat_job(req, file_put_job);
}

static int seat_file_get_method(Request *req) {
        return start_seat_job(req, file_get_job);
}

/* ---- console ---- */

static int seat_console_method(Request *req) {
        _cleanup_(seat_unrefp) Seat *s = NULL;
        SeatTicket t;
        int64_t offset = 0;
        if (seat_param(req, &s, &t) < 0)
                return 0;
        if (json_get_int64(req->params, "offset", false, 0, INT64_MAX - 1, &offset) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "'offset' must be a byte offset");
        /* A copy of the path: a reset replaces (and frees) the seat's own while this runs. */
        _cleanup_free_ char *path = NULL;
        if (seat_console_path(s, &path) < 0)
                return -ENOMEM;
        return request_reply_file_chunk(req, path, offset, CONSOLE_CHUNK_MAX);
}

/* ---- the audit log (operators and facilitators: every seat) ---- */

static int seat_audit_method(Request *req) {
        _cleanup_(seat_unrefp) Seat *s = NULL;
        SeatTicket t;
        int64_t offset = 0, max = AUDIT_CHUNK_MAX;
        if (json_get_int64(req->params, "offset", false, 0, INT64_MAX - 1, &offset) < 0 ||
            json_get_int64(req->params, "max_bytes", false, 1, AUDIT_CHUNK_MAX, &max) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID,
                                           "seat.audit takes 'seat', 'offset' (a byte offset) and 'max_bytes' (1..%u)",
                                           AUDIT_CHUNK_MAX);
        if (seat_param(req, &s, &t) < 0)
                return 0;
        _cleanup_free_ char *path = NULL;
        if (seat_audit_path(s, &path) < 0)
                return -ENOMEM;
        return request_reply_file_chunk(req, path, offset, (size_t) max);
}

/* ---- reset, release ---- */

/* Who asks to end this session, for its own log before it is sealed (seat_reset() and
 * seat_release() append it once the request passed their checks): the uid and the socket
 * are seatd's knowledge; the facilitator's name is seat-web's word, kept as such. */
static json_object *control_record(Request *req, Seat *s) {
        const char *who = NULL;
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        json_object_object_add(o, "method", json_object_new_string(req->method));
        json_object_object_add(o, "uid", json_object_new_int64((int64_t) req->uid));
        json_object_object_add(o, "via", json_object_new_string(req->facilitator ? "facilitator socket" : "operator socket"));
        if (json_get_string(req->params, "facilitator", false, 64, &who) >= 0 && who && *who) {
                _cleanup_free_ char *e = log_escape(who, strlen(who), 64);
                json_object_object_add(o, "facilitator", json_object_new_string(e ? e : "?"));
                log_seat_notice(seat_id(s), "%s of seat '%s' asked by facilitator '%s' (uid %u)", req->method, seat_id(s),
                                e ? e : "?", (unsigned) req->uid);
        }
        return o;
}

static int reset_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        SeatArgs *a = data;
        _cleanup_free_ char *token = NULL;
        json_object *o = NULL;
        bool cold = false;
        if (json_get_bool(a->params, "cold", false, &cold) < 0)
                return seat_error_set(ret_error, EINVAL, "seat.reset takes 'seat' and 'cold' (a boolean)");
        job_progress(req, "reset", 0, 1);
        _cleanup_json_ json_object *control = control_record(req, a->seat);
        int64_t started = now_monotonic_ms();
        /* (no cancel: a reset half done is worse than one that finishes) */
        seat_boot_progress_set(&(SeatBootProgress) { .report = boot_progress_report, .userdata = req });
        int r = seat_reset(request_manager(req)->seats, a->seat, cold, control, &token, ret_error);
        seat_boot_progress_set(NULL);
        if (r < 0)
                return r;
        metrics_observe(seat_manager_metrics(request_manager(req)->seats), METRIC_RESET, now_monotonic_ms() - started);
        if (seat_to_json(a->seat, &o) < 0)
                return -ENOMEM;
        json_object_object_add(o, "token", json_object_new_string(token));
        sodium_memzero_token(token);
        *ret_result = o;
        return 0;
}

static int release_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        SeatArgs *a = data;
        _cleanup_json_ json_object *control = control_record(req, a->seat);
        int r = seat_release(request_manager(req)->seats, a->seat, control, ret_error);
        if (r < 0)
                return r;
        *ret_result = json_object_new_object();
        return 0;
}

static int seat_reset_method(Request *req) {
        return start_seat_job(req, reset_job);
}

static int seat_release_method(Request *req) {
        return start_seat_job(req, release_job);
}

static const Method seat_methods[] = {
        { "seat.provision", seat_provision_method, true, true },
        { "seat.list", seat_list_method, true, true },
        { "seat.status", seat_status_method, false, true },
        { "seat.exec", seat_exec_method, false, false },
        { "seat.exec.stdin", exec_follow_method, false, false },
        { "seat.exec.resize", exec_follow_method, false, false },
        { "seat.exec.signal", exec_follow_method, false, false },
        { "seat.file_put", seat_file_put_method, false, false },
        { "seat.file_get", seat_file_get_method, false, false },
        { "seat.console", seat_console_method, false, true },
        { "seat.audit", seat_audit_method, true, true },
        { "seat.reset", seat_reset_method, true, true },
        { "seat.release", seat_release_method, true, true },
};

static int on_net_event(EventSource *src, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        seat_manager_net_process(m->seats);
        return 0;
}

static int on_guard_event(EventSource *src, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        seat_manager_guard_process(m->seats);
        return 0;
}

static int on_tick(EventSource *src, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        uint64_t n;
        (void) !read(fd, &n, sizeof(n)); /* a timerfd: the count does not matter */
        seat_manager_tick(m->seats);
        return 0;
}

/* The egress watch and its periodic backstop, on the loop. */
static int watch_networks(Manager *m, SeatError **ret_error) {
        int fd = seat_manager_net_fd(m->seats);
        if (fd < 0)
                return 0;
        unsigned ms = seat_manager_tick_ms(m->seats);
        struct itimerspec its = { .it_interval = { ms / 1000, (ms % 1000) * 1000000L } };
        its.it_value = its.it_interval;
        m->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (m->tick_fd < 0 || timerfd_settime(m->tick_fd, 0, &its, NULL) < 0 ||
            event_add_io(server_loop(m->server), fd, EPOLLIN, on_net_event, m, &m->net_src) < 0 ||
            event_add_io(server_loop(m->server), m->tick_fd, EPOLLIN, on_tick, m, &m->tick_src) < 0)
                return seat_error_set(ret_error, errno ?: EIO, "watch the egress rules: %m");
        int gfd = seat_manager_guard_fd(m->seats);
        if (gfd >= 0 && event_add_io(server_loop(m->server), gfd, EPOLLIN, on_guard_event, m, &m->guard_src) < 0)
                return seat_error_set(ret_error, errno ?: EIO, "watch the DNS guards: %m");
        /* Guards of adopted seats that exited before the loop ran are seen at its first turn
         * (their pidfds are readable already). */
        return 0;
}

int seat_methods_init(Manager *m, SeatError **ret_error) {
        int r = seat_manager_new(m->config, m->store, &m->seats, ret_error);
        if (r < 0)
                return r;
        r = seat_manager_adopt(m->seats, ret_error);
        if (r < 0)
                return r;
        r = watch_networks(m, ret_error);
        if (r < 0)
                return r;
        return server_add_methods(m->server, seat_methods, ELEMENTSOF(seat_methods));
}

void seat_methods_done(Manager *m) {
        m->net_src = event_source_free(m->net_src);
        m->tick_src = event_source_free(m->tick_src);
        m->guard_src = event_source_free(m->guard_src);
        m->tick_fd = safe_close(m->tick_fd);
        m->seats = seat_manager_free(m->seats);
}
