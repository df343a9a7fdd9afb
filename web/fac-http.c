/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The facilitator's side of seat-web over HTTP:
 *   GET  /facilitator/login, POST /facilitator/login (name, password), POST /facilitator/logout
 *   GET  /facilitator/               the dashboard (dashboard.html, .js, .css)
 *   GET  /facilitator/api/session    {name, csrf}: the page's CSRF token
 *   GET  /facilitator/api/call/M     seat.list, pool.status, host.check, evidence.list, metrics
 *   POST /facilitator/api/seat/ID/reset, .../release
 *   GET  /facilitator/api/seat/ID/audit?offset=N, .../console?offset=N
 *   POST /facilitator/handout        (form: csrf, image, names) starts provisioning: 303 to
 *   GET  /facilitator/handout/ID     how far it got (the page reloads itself), then the
 *                                    printable links (fac-handouts.h)
 *   GET  /facilitator/evidence/NAME  a sealed archive, streamed from evidence.read
 *   GET  /metrics                    Prometheus text (loopback, or a facilitator)
 * Every POST needs seat-web's own Origin and the session's CSRF token (header
 * X-CSRF-Token or form field csrf); the login needs the Origin.
 */
#include <errno.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "fac-events.h"
#include "fac-handout-make.h"
#include "fac-handout.h"
#include "fac-handouts.h"
#include "fac-http.h"
#include "fac-internal.h"
#include "fac-metrics.h"
#include "fac-parse.h"
#include "fac-session.h"
#include "facilitators.h"
#include "links.h"
#include "seatd-link.h"

#define FAC_COOKIE WEB_FAC_COOKIE
#define CSRF_HEADER "x-csrf-token:"
#define ASSET_MAX (512u * 1024u)
#define EVIDENCE_CHUNK (512u * 1024u)
#define AUDIT_CHUNK (64u * 1024u)
#define HANDOUT_KEEP_MS (3600 * 1000) /* a made handout, for reloads and printing */

typedef enum FacRoute {
        FR_NONE,
        FR_LOGIN_PAGE,
        FR_LOGIN,
        FR_LOGOUT,
        FR_DASHBOARD,
        FR_STATIC,
        FR_SESSION,
        FR_CALL,
        FR_RESET,
        FR_RELEASE,
        FR_AUDIT,
        FR_CONSOLE,
        FR_HANDOUT,
        FR_HANDOUT_PAGE,
        FR_EVIDENCE,
        FR_METRICS,
} FacRoute;



/* The read-only calls the dashboard makes as they are. */
static const char *const read_methods[] = { "seat.list", "pool.status", "host.check", "evidence.list", "metrics" };

bool fac_http_match(const char *path) {
        return !strcmp(path, "/metrics") || !strcmp(path, "/facilitator") || !strncmp(path, "/facilitator/", 13);
}

/* ---------------------------------------------------------------- helpers */

static const Asset *fac_asset(Fac *f, const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(f->assets); i++)
                if (f->assets[i].name && !strcmp(f->assets[i].name, name))
                        return &f->assets[i];
        return NULL;
}

static int serve(struct lws *wsi, Web *w, Conn *c, const char *name) {
        const Asset *a = fac_asset(w->fac, name);
        if (!a)
                return web_respond_text(wsi, w, c, 404, "Not found.\n");
        return web_respond(wsi, w, c, 200, a->mime, a->data, a->len, NULL, NULL);
}

static int redirect(struct lws *wsi, Web *w, Conn *c, const char *to, const char *cookie) {
        return web_respond(wsi, w, c, 303, "text/plain; charset=utf-8", to, strlen(to), cookie, to);
}

static const char *clear_cookie(void) {
        return FAC_COOKIE "=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict";
}

/* The facilitator session of the request's cookie (only the facilitator's cookie: a
 * participant's opens nothing here), or NULL. */
FacSession *fac_request_session(struct lws *wsi, Web *w) {
        char id[WEB_SESSION_ID_LEN + 1];
        if (web_request_cookie(wsi, FAC_COOKIE, id, sizeof(id)) < 0)
                return NULL;
        return fac_session_find(w->fac->sessions, id, now_monotonic_ms());
}

/* A request with both a facilitator's cookie and a participant's: the browser holds a
 * seat's session too, and a seat's forwarded pages run the seat's own scripts under
 * seat-web's address, where they could read the dashboard's CSRF token and act as the
 * facilitator. forward.c refuses those pages to a browser with a facilitator session;
 * this refuses the dashboard to a browser with a seat's session, for a page of the seat
 * opened before the facilitator logged in. */
static bool cookie_there(int r) { /* a web_request_cookie() result: set (too long or twice too) */
        return r == 0 || r == -E2BIG || r == -ENOTUNIQ;
}

bool fac_participant_too(struct lws *wsi) {
        char id[128];
        /* A malformed header (another service's cookie made it) says nothing of a session. */
        return cookie_there(web_request_cookie(wsi, FAC_COOKIE, id, sizeof(id))) &&
               cookie_there(web_request_cookie(wsi, WEB_PARTICIPANT_COOKIE, id, sizeof(id)));
}

static const char participant_too_text[] =
        "This browser is also logged in to a seat. A seat's pages run the seat's own scripts, which must not reach "
        "the dashboard: use another browser profile for the dashboard, or log out of the seat first.\n";

/* A state-changing request must carry seat-web's own Origin: unlike a participant's
 * POST, a missing one is refused too (every browser sends it on a POST). */
bool fac_same_origin(struct lws *wsi, Web *w) {
        return lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) > 0 && !web_cross_origin(wsi, w);
}

/* The CSRF token of the request: the X-CSRF-Token header, else the form's csrf field. */
static bool csrf_ok(struct lws *wsi, Conn *c, const FacSession *s) {
        char header[300], token[FAC_CSRF_LEN + 1] = "";
        int n = lws_hdr_custom_length(wsi, CSRF_HEADER, (int) strlen(CSRF_HEADER));
        if (n > 0) {
                if (n >= (int) sizeof(header) ||
                    lws_hdr_custom_copy(wsi, header, sizeof(header), CSRF_HEADER, (int) strlen(CSRF_HEADER)) < 0 ||
                    fac_csrf_get(header, strlen(header), token) < 0)
                        return false;
        } else if (fac_form_get(c->body, c->body_len, "csrf", token, sizeof(token)) < 0)
                return false;
        return fac_session_csrf_ok(s, token);
}

static bool arg_valid(const char *s) {
        size_t n = strlen(s);
        return n > 0 && n < 150 && s[0] != '.' && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* Path → route; the seat id or archive name in c->fac_arg. */
static FacRoute route(const char *path, bool post, Conn *c) {
        static const struct {
                const char *suffix;
                FacRoute get, post;
        } seat_routes[] = { { "/reset", FR_NONE, FR_RESET },
                            { "/release", FR_NONE, FR_RELEASE },
                            { "/audit", FR_AUDIT, FR_NONE },
                            { "/console", FR_CONSOLE, FR_NONE } };
        c->fac_arg[0] = '\0';
        if (!strcmp(path, "/metrics"))
                return FR_METRICS;
        if (!strcmp(path, "/facilitator") || !strcmp(path, "/facilitator/"))
                return FR_DASHBOARD;
        if (!strcmp(path, "/facilitator/login"))
                return post ? FR_LOGIN : FR_LOGIN_PAGE;
        if (!strcmp(path, "/facilitator/logout"))
                return FR_LOGOUT;
        if (!strcmp(path, "/facilitator/handout"))
                return FR_HANDOUT;
        if (!strncmp(path, "/facilitator/handout/", 21) && web_session_id_valid(path + 21)) {
                snprintf(c->fac_arg, sizeof(c->fac_arg), "%s", path + 21);
                return FR_HANDOUT_PAGE;
        }
        if (!strcmp(path, "/facilitator/api/session"))
                return FR_SESSION;
        if (!strncmp(path, "/facilitator/static/", 20) && arg_valid(path + 20)) {
                snprintf(c->fac_arg, sizeof(c->fac_arg), "%s", path + 20);
                return FR_STATIC;
        }
        if (!strncmp(path, "/facilitator/evidence/", 22) && arg_valid(path + 22)) {
                snprintf(c->fac_arg, sizeof(c->fac_arg), "%s", path + 22);
                return FR_EVIDENCE;
        }
        if (!strncmp(path, "/facilitator/api/call/", 22)) {
                for (size_t i = 0; i < ELEMENTSOF(read_methods); i++)
                        if (!strcmp(path + 22, read_methods[i])) {
                                snprintf(c->fac_arg, sizeof(c->fac_arg), "%s", read_methods[i]);
                                return FR_CALL;
                        }
                return FR_NONE;
        }
        if (!strncmp(path, "/facilitator/api/seat/", 22)) {
                const char *id = path + 22, *slash = strchr(id, '/');
                if (!slash || (size_t) (slash - id) > WEB_SEAT_ID_MAX)
                        return FR_NONE;
                snprintf(c->fac_arg, sizeof(c->fac_arg), "%.*s", (int) (slash - id), id);
                if (!web_seat_id_valid(c->fac_arg))
                        return FR_NONE;
                for (size_t i = 0; i < ELEMENTSOF(seat_routes); i++)
                        if (!strcmp(slash, seat_routes[i].suffix))
                                return post ? seat_routes[i].post : seat_routes[i].get;
        }
        return FR_NONE;
}

/* ---------------------------------------------------------------- work on the workers */

static void call_work(Job *job) {
        Fac *f = job->ctx;
        int timeout = job->fac_route == FR_RESET || job->fac_route == FR_RELEASE ? FAC_LONG_CALL_MS
                                                                                  : (int) f->w->conf->seatd_timeout_ms;
        job->r = seatd_call_message(f->w->conf->facilitator_socket, timeout, job->method, job->params, &job->rec, job->code,
                                    job->message, sizeof(job->message));
        if (job->r < 0 && job->r != -EREMOTEIO)
                log_warning("seatd's facilitator socket '%s' did not answer %s: %s", f->w->conf->facilitator_socket,
                            job->method, strerror(-job->r));
}

static void verify_work(Job *job) {
        Fac *f = job->ctx;
        FacUsers *users = sodium_malloc(sizeof(*users));
        if (!users) {
                job->r = -ENOMEM;
                return;
        }
        int r = fac_users_load(f->w->conf->facilitators_file, users);
        if (r < 0 && r != -ENOENT) {
                log_error("cannot read the facilitators file '%s': %s", f->w->conf->facilitators_file, strerror(-r));
                memset(users, 0, sizeof(*users));
        }
        const FacUser *u = fac_users_find(users, job->path);
        pthread_mutex_lock(&f->verify_lock);
        bool ok = fac_password_verify(u, job->secret, strlen(job->secret));
        pthread_mutex_unlock(&f->verify_lock);
        sodium_free(users);
        sodium_memzero(job->secret, sizeof(job->secret));
        job->r = ok ? 0 : -EACCES;
}

static Jobs *pool_of(Fac *f, const Job *job) {
        return job->fac_route == FR_LOGIN ? f->login_jobs : f->jobs;
}

static int submit(struct lws *wsi, Web *w, Conn *c, Job *job) {
        if (!job)
                return -1;
        if (jobs_submit(pool_of(w->fac, job), job) < 0) {
                bool login = job->fac_route == FR_LOGIN;
                job_free(job);
                return login ? web_respond_text(wsi, w, c, 429, "Too many facilitator logins at once: try again in a moment.\n")
                             : web_respond_text(wsi, w, c, 503, "seat-web is busy: try again in a moment.\n");
        }
        /* seatd may take minutes (a provision under TCG): no timeout while it works. */
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
        c->job = job;
        return 0;
}

static Job *new_job(struct lws *wsi, Web *w, FacRoute r, void (*work)(Job *), const char *method) {
        _cleanup_(job_freep) Job *job = job_new(JOB_FAC, wsi, "", "");
        if (!job)
                return NULL;
        job->work = work;
        job->ctx = w->fac;
        job->fac_route = r;
        if (method)
                snprintf(job->method, sizeof(job->method), "%s", method);
        job->params = json_object_new_object();
        if (!job->params)
                return NULL;
        return TAKE_PTR(job);
}

/* The handout (fac-handout-make.c); the base URL (job->path) is the one the facilitator's
 * browser used. No connection waits for this job. */
static bool handout_stopping(void *userdata) {
        return jobs_stopping(userdata);
}

static void handout_work(Job *job) {
        Fac *f = job->ctx;
        fac_handout_make(&(HandoutRequest) {
                .conf = f->w->conf,
                .stop = { handout_stopping, f->jobs },
                .handouts = f->handouts,
                .id = job->link_id,
                .base_url = job->path,
                .image = json_object_get_string(json_object_object_get(job->params, "image")),
                .facilitator = json_object_get_string(json_object_object_get(job->params, "facilitator")),
                .names = json_object_object_get(job->params, "names"),
        });
}

/* ---------------------------------------------------------------- requests */

static int do_login(struct lws *wsi, Web *w, Conn *c) {
        Fac *f = w->fac;
        char peer[64], name[FAC_NAME_MAX + 2], key[RATE_KEY_MAX];
        int64_t now = now_monotonic_ms();
        web_peer_key(wsi, peer, sizeof(peer));
        if (fac_form_get(c->body, c->body_len, "name", name, sizeof(name)) < 0 || !fac_name_valid(name))
                return web_respond_text(wsi, w, c, 400, "The form needs a facilitator name (a-z, 0-9, '.', '_', '-').\n");
        snprintf(key, sizeof(key), "fac:%s", name);
        /* Charged now (a verify takes 0.3 s: the ones waiting count), given back in
         * finish_login() when the password is right. */
        int k = login_limit_take(f->per_address, f->per_name, LOGIN_PASSWORD, peer, key, now, &c->login);
        if (k == -EAGAIN) {
                web_log_refusal(wsi, "facilitator login over the rate limit for this address", NULL);
                return web_respond_text(wsi, w, c, 429, "Too many facilitator logins from this address: wait a minute.\n");
        }
        if (k < 0) {
                _cleanup_free_ char *esc = log_escape(name, strlen(name), 64);
                log_warning("refused: facilitator login over the rate limit for the name '%s' (from %s)", esc ? esc : "?", peer);
                return web_respond_text(wsi, w, c, 429, "Too many logins for this facilitator name: wait a minute.\n");
        }
        _cleanup_(job_freep) Job *job = new_job(wsi, w, FR_LOGIN, verify_work, NULL);
        if (!job) {
                login_limit_settle(&c->login, false, now);
                return -1;
        }
        snprintf(job->path, sizeof(job->path), "%s", name); /* the name travels in the path field */
        snprintf(job->peer, sizeof(job->peer), "%s", peer);
        int r = fac_form_get(c->body, c->body_len, "password", job->secret, sizeof(job->secret));
        if (r < 0 && r != -ENOENT && r != -E2BIG) {
                login_limit_settle(&c->login, false, now);
                return web_respond_text(wsi, w, c, 400, "Malformed form.\n");
        }
        if (r < 0)
                job->secret[0] = '\0'; /* verified all the same: an empty password fails like a wrong one */
        sodium_memzero(c->body, sizeof(c->body));
        r = submit(wsi, w, c, TAKE_PTR(job));
        if (!c->job)
                login_limit_settle(&c->login, false, now); /* not tried */
        return r;
}

static int finish_login(struct lws *wsi, Web *w, Conn *c, Job *job) {
        login_limit_settle(&c->login, job->r < 0, now_monotonic_ms());
        if (job->r < 0) {
                log_warning("refused: facilitator login of '%s' with a wrong password or an unknown name (from %s)",
                            job->path, job->peer);
                return web_respond_text(wsi, w, c, 403, "Wrong name or password.\n");
        }
        char id[WEB_SESSION_ID_LEN + 1], cookie[256];
        if (fac_session_open(w->fac->sessions, job->path, now_monotonic_ms(), id) < 0)
                return web_respond_text(wsi, w, c, 503, "Too many facilitator sessions.\n");
        /* __Host-: Secure, no Domain, Path=/ forced by the browser, so no sibling host can
         * plant or shadow it. */
        snprintf(cookie, sizeof(cookie), FAC_COOKIE "=%s; Path=/; Max-Age=%ld; HttpOnly; Secure; SameSite=Strict", id,
                 w->conf->facilitator_session_max_age);
        log_info("facilitator '%s' logged in from %s", job->path, job->peer);
        int r = redirect(wsi, w, c, "/facilitator/", cookie);
        sodium_memzero(cookie, sizeof(cookie));
        sodium_memzero(id, sizeof(id));
        return r;
}

static int do_seat_call(struct lws *wsi, Web *w, Conn *c, FacSession *s, FacRoute r) {
        const char *method = r == FR_RESET ? "seat.reset" : r == FR_RELEASE ? "seat.release" : r == FR_AUDIT ? "seat.audit" : "seat.console";
        _cleanup_(job_freep) Job *job = new_job(wsi, w, r, call_work, method);
        if (!job)
                return -1;
        json_object_object_add(job->params, "seat", json_object_new_string(c->fac_arg));
        if (r == FR_RESET || r == FR_RELEASE) {
                /* seatd records it as the client's word: which facilitator pressed it. */
                json_object_object_add(job->params, "facilitator", json_object_new_string(s->name));
                log_info("facilitator '%s': %s of seat '%s'", s->name, method, c->fac_arg);
        } else {
                char buf[32];
                uint64_t off = 0;
                const char *v = lws_get_urlarg_by_name(wsi, "offset=", buf, (int) sizeof(buf));
                if (v && web_parse_u64(v, INT64_MAX, &off) < 0)
                        return web_respond_text(wsi, w, c, 400, "'offset' must be a byte count.\n");
                json_object_object_add(job->params, "offset", json_object_new_int64((int64_t) off));
                if (r == FR_AUDIT)
                        json_object_object_add(job->params, "max_bytes", json_object_new_int64(AUDIT_CHUNK));
        }
        return submit(wsi, w, c, TAKE_PTR(job));
}

static int do_evidence_chunk(struct lws *wsi, Web *w, Conn *c) {
        Job *job = new_job(wsi, w, FR_EVIDENCE, call_work, "evidence.read");
        if (!job)
                return -1;
        json_object_object_add(job->params, "archive", json_object_new_string(c->fac_arg));
        json_object_object_add(job->params, "offset", json_object_new_int64((int64_t) c->fac_offset));
        json_object_object_add(job->params, "max_bytes", json_object_new_int64(EVIDENCE_CHUNK));
        return submit(wsi, w, c, job);
}

/* The base of the handout's links: what the facilitator's browser called this server. */
static int base_url(struct lws *wsi, Web *w, char *out, size_t size) {
        char host[256];
        if (lws_hdr_copy(wsi, host, sizeof(host), WSI_TOKEN_HOST) <= 0 ||
            strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-:[]") != strlen(host))
                return -EINVAL;
        snprintf(out, size, "%s://%s", w->tls ? "https" : "http", host);
        return 0;
}

static int do_handout(struct lws *wsi, Web *w, Conn *c, FacSession *s) {
        char image[128], names_text[WEB_FORM_MAX + 1];
        static char names[FAC_HANDOUT_MAX][FAC_PARTICIPANT_MAX + 1]; /* loop thread only */
        size_t n = 0;
        if (fac_form_get(c->body, c->body_len, "image", image, sizeof(image)) < 0 || !arg_valid(image))
                return web_respond_text(wsi, w, c, 400, "Name the image the seats boot (letters, digits, '.', '_', '-').\n");
        if (fac_form_get(c->body, c->body_len, "names", names_text, sizeof(names_text)) < 0 ||
            fac_names_parse(names_text, strlen(names_text), names, &n) < 0 || n == 0)
                return web_respond_text(wsi, w, c, 400,
                                        "List the participants, one per line (at most 64, each at most 64 letters, digits, "
                                        "spaces and @._+-, no name twice).\n");
        /* (no connection waits for it: the answer is the 303 below) */
        _cleanup_(job_freep) Job *job = new_job(NULL, w, FR_HANDOUT, handout_work, "seat.provision");
        if (!job)
                return -1;
        if (base_url(wsi, w, job->path, sizeof(job->path)) < 0)
                return web_respond_text(wsi, w, c, 400, "The request names no usable Host.\n");
        json_object *arr = json_object_new_array();
        for (size_t i = 0; arr && i < n; i++)
                json_object_array_add(arr, json_object_new_string(names[i]));
        json_object_object_add(job->params, "names", arr);
        json_object_object_add(job->params, "image", json_object_new_string(image));
        json_object_object_add(job->params, "facilitator", json_object_new_string(s->name));
        int r = fac_handouts_start(w->fac->handouts, s->name, n, now_monotonic_ms(), job->link_id);
        if (r < 0) {
                if (r == -EBUSY)
                        return web_respond_text(wsi, w, c, 409,
                                                "A handout is being made: its seats are being provisioned. "
                                                "Make this one once it is done.\n");
                return web_respond_text(wsi, w, c, 503,
                                        r == -ENOSPC ? "Too many handouts are kept (each for an hour after it is made): "
                                                       "try again later.\n"
                                                     : "The handout could not be started.\n");
        }
        char to[sizeof("/facilitator/handout/") + WEB_SESSION_ID_LEN];
        snprintf(to, sizeof(to), "/facilitator/handout/%s", job->link_id);
        if (jobs_submit(w->fac->jobs, job) < 0) {
                fac_handouts_drop(w->fac->handouts, job->link_id);
                return web_respond_text(wsi, w, c, 503, "seat-web is busy: try again in a moment.\n");
        }
        TAKE_PTR(job); /* the pool's now */
        log_info("facilitator '%s': a handout of %zu seats of image '%s'", s->name, n, image);
        return redirect(wsi, w, c, to, NULL);
}

/* A handout's page: how far it got while it is made (the page reloads itself), then the
 * handout. Only the facilitator who made it finds it. */
static int do_handout_page(struct lws *wsi, Web *w, Conn *c, FacSession *s) {
        FacHandoutView v;
        int r = fac_handouts_get(w->fac->handouts, c->fac_arg, s->name, now_monotonic_ms(), &v);
        if (r == -ENOENT)
                return web_respond_text(wsi, w, c, 404,
                                        "No such handout: a handout is kept for an hour after it is made, for the "
                                        "facilitator who made it.\n");
        if (r < 0)
                return -1;
        _cleanup_free_ char *page = NULL;
        size_t len = 0;
        if (!v.made)
                r = fac_handout_progress_render(v.done, v.total, &page, &len);
        else if (!v.page)
                return web_respond_text(wsi, w, c, 500, "The handout could not be made.\n");
        else {
                page = v.page;
                len = v.len;
        }
        if (r < 0)
                return -1;
        r = web_respond(wsi, w, c, 200, "text/html; charset=utf-8", page, len, NULL, NULL);
        if (v.made)
                sodium_memzero(page, len); /* (one-time links) */
        return r;
}

static bool loopback_peer(struct lws *wsi) {
        char buf[64] = "";
        lws_get_peer_simple(wsi, buf, sizeof(buf));
        return web_address_is_loopback(buf) || !strncmp(buf, "::ffff:127.", 11);
}

/* After the session and CSRF checks of a POST. */
static int dispatch_post(struct lws *wsi, Web *w, Conn *c) {
        FacSession *s = fac_request_session(wsi, w);
        if (!s)
                return web_respond_text(wsi, w, c, 401, "Log in as a facilitator first.\n");
        if (!csrf_ok(wsi, c, s)) {
                web_log_refusal(wsi, "a facilitator POST without its session's CSRF token", c->fac_arg[0] ? c->fac_arg : NULL);
                return web_respond_text(wsi, w, c, 403, "Missing or wrong CSRF token: reload the dashboard.\n");
        }
        switch (c->fac_route) {
        case FR_LOGOUT:
                log_info("facilitator '%s' logged out", s->name);
                fac_session_close(w->fac->sessions, s);
                return redirect(wsi, w, c, "/facilitator/login", clear_cookie());
        case FR_RESET:
        case FR_RELEASE:
                return do_seat_call(wsi, w, c, s, (FacRoute) c->fac_route);
        case FR_HANDOUT:
                return do_handout(wsi, w, c, s);
        default:
                return web_respond_text(wsi, w, c, 404, "Not found.\n");
        }
}

int fac_http_body_done(struct lws *wsi, Web *w, Conn *c) {
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
        if (c->fac_route == FR_LOGIN)
                return do_login(wsi, w, c);
        return dispatch_post(wsi, w, c);
}

static int begin_post(struct lws *wsi, Web *w, Conn *c) {
        char clen[32] = "", ctype[128] = "";
        if (!fac_same_origin(wsi, w)) {
                web_log_refusal(wsi, "a facilitator POST without seat-web's own Origin", NULL);
                return web_respond_text(wsi, w, c, 403, "Cross-site request refused.\n");
        }
        if (lws_hdr_copy(wsi, clen, sizeof(clen), WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0)
                return fac_http_body_done(wsi, w, c); /* no body: the CSRF token must be in the header */
        uint64_t n;
        if (web_parse_u64(clen, UINT64_MAX >> 1, &n) < 0 || n > WEB_FORM_MAX)
                return web_respond_text(wsi, w, c, 413, "The form is too large.\n");
        if (n > 0 && (lws_hdr_copy(wsi, ctype, sizeof(ctype), WSI_TOKEN_HTTP_CONTENT_TYPE) <= 0 ||
                      strncmp(ctype, "application/x-www-form-urlencoded", 33) != 0 || (ctype[33] && ctype[33] != ';')))
                return web_respond_text(wsi, w, c, 415, "Send a form (application/x-www-form-urlencoded).\n");
        if (n == 0)
                return fac_http_body_done(wsi, w, c);
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, (int) w->conf->idle_timeout);
        return 0; /* server.c gathers the body into c->body */
}

int fac_http_request(struct lws *wsi, Web *w, Conn *c, const char *path, bool get, bool post) {
        c->route = WEB_ROUTE_FAC;
        c->fac_route = route(path, post, c);
        if (c->fac_route == FR_NONE)
                return web_respond_text(wsi, w, c, 404, "Not found.\n");
        /* (the logout still works: it ends the facilitator's session in that browser) */
        if (c->fac_route != FR_LOGOUT && fac_participant_too(wsi)) {
                web_log_refusal(wsi, "a facilitator request from a browser that holds a seat's session too", NULL);
                return web_respond_text(wsi, w, c, 403, participant_too_text);
        }
        if (post) {
                if (c->fac_route != FR_LOGIN && c->fac_route != FR_LOGOUT && c->fac_route != FR_RESET &&
                    c->fac_route != FR_RELEASE && c->fac_route != FR_HANDOUT)
                        return web_respond_text(wsi, w, c, 405, "Use GET.\n");
                return begin_post(wsi, w, c);
        }
        if (!get)
                return web_respond_text(wsi, w, c, 405, "Use GET or POST.\n");
        switch (c->fac_route) {
        case FR_LOGIN_PAGE:
                return serve(wsi, w, c, "login.html");
        case FR_STATIC:
                if (!strcmp(c->fac_arg, "login.html") || !strcmp(c->fac_arg, "dashboard.html"))
                        return web_respond_text(wsi, w, c, 404, "Not found.\n");
                return serve(wsi, w, c, c->fac_arg);
        case FR_METRICS:
                if (!(w->conf->metrics_loopback && loopback_peer(wsi)) && !fac_request_session(wsi, w)) {
                        web_log_refusal(wsi, "/metrics without a facilitator session, not from loopback", NULL);
                        return web_respond_text(wsi, w, c, 403, "/metrics is for facilitators (or this host's own Prometheus).\n");
                }
                return submit(wsi, w, c, new_job(wsi, w, FR_METRICS, call_work, "metrics"));
        default:
                break;
        }
        FacSession *s = fac_request_session(wsi, w);
        if (!s) {
                if (c->fac_route == FR_DASHBOARD)
                        return redirect(wsi, w, c, "/facilitator/login", NULL);
                return web_respond(wsi, w, c, 401, "application/json", "{\"login\":true}", 14, NULL, NULL);
        }
        switch (c->fac_route) {
        case FR_DASHBOARD:
                return serve(wsi, w, c, "dashboard.html");
        case FR_SESSION: {
                _cleanup_json_ json_object *o = json_object_new_object();
                if (!o)
                        return -1;
                json_object_object_add(o, "name", json_object_new_string(s->name));
                json_object_object_add(o, "csrf", json_object_new_string(s->csrf));
                return web_respond_json(wsi, w, c, 200, o, NULL);
        }
        case FR_CALL:
                return submit(wsi, w, c, new_job(wsi, w, FR_CALL, call_work, c->fac_arg));
        case FR_AUDIT:
        case FR_CONSOLE:
                return do_seat_call(wsi, w, c, s, (FacRoute) c->fac_route);
        case FR_HANDOUT_PAGE:
                return do_handout_page(wsi, w, c, s);
        case FR_EVIDENCE:
                /* all three: a keep-alive connection's second download starts afresh */
                c->fac_offset = 0;
                c->fac_size = 0;
                c->fac_eof = false;
                return do_evidence_chunk(wsi, w, c);
        default:
                return web_respond_text(wsi, w, c, 405, "Use POST.\n");
        }
}

/* ---------------------------------------------------------------- answers */

static int finish_call(struct lws *wsi, Web *w, Conn *c, Job *job) {
        if (job->r == -EREMOTEIO) {
                char msg[400];
                snprintf(msg, sizeof(msg), "seatd refused %s (%s): %s", job->method, job->code, job->message);
                return web_respond_error_json(wsi, w, c, !strcmp(job->code, "not_found") ? 404 : 422, msg);
        }
        if (job->r < 0)
                return web_respond_error_json(wsi, w, c, 503, "seatd's facilitator socket cannot be reached now");
        if (job->fac_route == FR_METRICS) {
                _cleanup_free_ char *text = NULL;
                size_t len;
                if (fac_metrics_render(job->rec, &text, &len) < 0)
                        return -1;
                return web_respond(wsi, w, c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL, NULL);
        }
        if (!job->rec)
                job->rec = json_object_new_object();
        fac_strip_tokens(job->rec);
        return web_respond_json(wsi, w, c, 200, job->rec, NULL);
}

static int evidence_headers(struct lws *wsi, Web *w, Conn *c) {
        unsigned char buf[LWS_PRE + 2048], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
        char disp[256];
        snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", c->fac_arg);
        if (lws_add_http_common_headers(wsi, 200, "application/octet-stream", c->fac_size, &p, end) ||
            web_add_security_headers(wsi, w, &p, end) || web_add_keepalive_header(wsi, w, &p, end) ||
            lws_add_http_header_by_name(wsi, (const unsigned char *) "content-disposition:", (const unsigned char *) disp,
                                        (int) strlen(disp), &p, end) ||
            lws_finalize_write_http_header(wsi, start, &p, end))
                return -1;
        return 0;
}

/* A chunk of an archive: the first sets the length and sends the headers. */
static int finish_evidence(struct lws *wsi, Web *w, Conn *c, Job *job) {
        bool first = c->fac_offset == 0 && !c->fac_size;
        json_object *data = NULL, *size = NULL, *eof = NULL;
        if (job->r < 0 || !json_object_object_get_ex(job->rec, "data", &data) || !json_object_is_type(data, json_type_string) ||
            !json_object_object_get_ex(job->rec, "size", &size) || !json_object_is_type(size, json_type_int) ||
            !json_object_object_get_ex(job->rec, "eof", &eof)) {
                if (!first)
                        return -1; /* mid-stream: the length promised cannot be kept, close */
                return finish_call(wsi, w, c, job);
        }
        _cleanup_free_ void *raw = NULL;
        size_t n;
        const char *b64 = json_object_get_string(data);
        if (base64_decode(b64, strlen(b64), EVIDENCE_CHUNK, &raw, &n) < 0)
                return first ? web_respond_error_json(wsi, w, c, 502, "seatd sent a malformed chunk") : -1;
        int64_t sz = json_object_get_int64(size);
        if (first) {
                if (sz <= 0)
                        return web_respond_error_json(wsi, w, c, 502, "the archive is empty");
                c->fac_size = (uint64_t) sz;
                if (evidence_headers(wsi, w, c) < 0)
                        return -1;
        } else if ((uint64_t) sz != c->fac_size)
                return -1; /* the archive changed under us */
        if (c->fac_offset + n > c->fac_size || (n == 0 && !json_object_get_boolean(eof)))
                return -1;
        c->fac_chunk = malloc(LWS_PRE + (n ? n : 1));
        if (!c->fac_chunk)
                return -1;
        memcpy(c->fac_chunk + LWS_PRE, raw, n);
        c->fac_chunk_len = n;
        c->fac_offset += n;
        c->fac_eof = json_object_get_boolean(eof) || c->fac_offset >= c->fac_size;
        lws_callback_on_writable(wsi);
        return 0;
}

int fac_http_writeable(struct lws *wsi, Web *w, Conn *c) {
        if (!c->fac_chunk)
                return 0;
        bool last = c->fac_eof;
        int n = lws_write(wsi, c->fac_chunk + LWS_PRE, c->fac_chunk_len, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP);
        free(c->fac_chunk);
        c->fac_chunk = NULL;
        if (n < 0)
                return -1;
        if (last) {
                if (c->fac_offset != c->fac_size)
                        return -1;
                return lws_http_transaction_completed(wsi) ? -1 : 0;
        }
        return do_evidence_chunk(wsi, w, c);
}

static int finish(struct lws *wsi, Web *w, Conn *c, Job *job) {
        switch (job->fac_route) {
        case FR_LOGIN:
                return finish_login(wsi, w, c, job);
        case FR_EVIDENCE:
                return finish_evidence(wsi, w, c, job);
        default:
                return finish_call(wsi, w, c, job);
        }
}

void fac_service(Web *w) {
        if (!w->fac || !w->fac->jobs)
                return;
        if (w->fac->events && w->fac->n_dash > 0) {
                uint64_t seq = fac_events_seq(w->fac->events);
                struct lws_vhost *vh = lws_get_vhost_by_name(w->fac->ctx, "seat-web");
                const struct lws_protocols *p = vh ? lws_vhost_name_to_protocol(vh, "seat-dashboard") : NULL;
                if (seq != w->fac->seq_seen && p)
                        lws_callback_on_writable_all_protocol(w->fac->ctx, p);
                w->fac->seq_seen = seq;
        }
        Job *l = jobs_done(w->fac->jobs), **tail = &l;
        while (*tail)
                tail = &(*tail)->next;
        *tail = jobs_done(w->fac->login_jobs);
        while (l) {
                Job *job = l;
                l = l->next;
                if (!job->abandoned && job->wsi) { /* (a handout's has none) */
                        Conn *c = lws_wsi_user(job->wsi);
                        c->job = NULL;
                        if (finish(job->wsi, w, c, job) < 0)
                                lws_set_timeout(job->wsi, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
                }
                job_free(job);
        }
}

void fac_http_closed(Web *w, Conn *c) {
        if (c->route != WEB_ROUTE_FAC)
                return;
        if (c->job && w->fac && w->fac->jobs) {
                jobs_abandon(pool_of(w->fac, c->job), c->job);
                c->job = NULL;
        }
        free(c->fac_chunk);
        c->fac_chunk = NULL;
}

/* ---------------------------------------------------------------- setup */

int fac_init(Web *w, struct lws_context *ctx, SeatError **ret_error) {
        static const char *const names[][2] = {
                { "login.html", "text/html; charset=utf-8" },
                { "dashboard.html", "text/html; charset=utf-8" },
                { "dashboard.js", "text/javascript; charset=utf-8" },
                { "dashboard.css", "text/css; charset=utf-8" },
        };
        Fac *f = calloc(1, sizeof(*f));
        if (!f)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        w->fac = f;
        f->w = w;
        pthread_mutex_init(&f->verify_lock, NULL);
        _Static_assert(ELEMENTSOF(names) == ELEMENTSOF(((Fac *) NULL)->assets), "one asset a name");
        int r = web_assets_load(w->conf->assets_dir, "facilitator/", names, ELEMENTSOF(names), ASSET_MAX, f->assets, ret_error);
        if (r < 0)
                return r;
        f->sessions = fac_sessions_new(64, w->conf->facilitator_session_idle_timeout * 1000,
                                       w->conf->facilitator_session_max_age * 1000);
        f->per_address = rate_limit_new(w->conf->facilitator_login_rate_per_address, (size_t) w->conf->rate_table_size);
        f->per_name = rate_limit_new(w->conf->facilitator_login_rate_per_name, (size_t) w->conf->rate_table_size);
        /* Two workers: a long provision or reset does not hold up the dashboard's reads. */
        f->jobs = jobs_new(w->conf->facilitator_socket, (int) w->conf->seatd_timeout_ms, 2, 64, ctx);
        f->login_jobs = jobs_new(w->conf->facilitator_socket, (int) w->conf->seatd_timeout_ms, 1, 8, ctx);
        f->handouts = fac_handouts_new(HANDOUT_KEEP_MS);
        if (!f->sessions || !f->per_address || !f->per_name || !f->jobs || !f->login_jobs || !f->handouts)
                return seat_error_set(ret_error, ENOMEM, "cannot set up the facilitator's side (sessions, rate limits, workers)");
        f->ctx = ctx;
        if (w->conf->max_dashboards > 0 && !(f->events = fac_events_new(w->conf->facilitator_socket, ctx)))
                return seat_error_set(ret_error, ENOMEM, "cannot start the dashboards' event stream");
        return 0;
}

void fac_done(Web *w) {
        Fac *f = w->fac;
        if (!f)
                return;
        fac_events_free(f->events);
        f->events = NULL;
        jobs_free(f->jobs);
        f->jobs = NULL;
        jobs_free(f->login_jobs);
        f->login_jobs = NULL;
        f->handouts = fac_handouts_free(f->handouts); /* (after the workers: one may be making one) */
        for (size_t i = 0; i < ELEMENTSOF(f->assets); i++)
                free(f->assets[i].data);
        fac_sessions_free(f->sessions);
        rate_limit_free(f->per_address);
        rate_limit_free(f->per_name);
        pthread_mutex_destroy(&f->verify_lock);
        free(f);
        w->fac = NULL;
}
