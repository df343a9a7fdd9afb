/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-web's HTTP side on libwebsockets: routes, the login, the session check and the
 * status relay. What it decides alone is only who holds which session; everything about
 * a seat is asked of seatd, with the session's token, on every request (seatd-link.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libwebsockets.h>
#include <openssl/ssl.h>
#include <sodium.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "fac-events.h"
#include "fac-http.h"
#include "files.h"
#include "forward-parse.h"
#include "forward.h"
#include "http-parse.h"
#include "jobs.h"
#include "links.h"
#include "mcp-http.h"
#include "ratelimit.h"
#include "server.h"
#include "session.h"
#include "ws-proxy.h"
#include "ws-terminal.h"
#include "web.h"

#define COOKIE_NAME WEB_PARTICIPANT_COOKIE
#define ASSET_MAX (1024u * 1024u)
#define HEADERS_MAX 2048
/* TCP keepalive on every connection (see web_server_run()): seconds idle, probes, seconds
 * between them. */
#define WEB_KA_TIME 60
#define WEB_KA_PROBES 4
#define WEB_KA_INTERVAL 15

static volatile sig_atomic_t stopping;
static struct lws_context *the_context;

static void on_signal(int sig) {
        stopping = 1;
        if (the_context)
                lws_cancel_service(the_context);
}

static const Asset *asset(const Web *w, const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(w->assets); i++)
                if (w->assets[i].name && !strcmp(w->assets[i].name, name))
                        return &w->assets[i];
        return NULL;
}

/* The client's address as the rate limit keys it: IPv4 whole, IPv6 by its /64 (one
 * machine usually holds a whole /64). */
void web_peer_key(struct lws *wsi, char *out, size_t size) {
        char buf[64] = "";
        struct in6_addr a6;
        lws_get_peer_simple(wsi, buf, sizeof(buf));
        if (inet_pton(AF_INET6, buf, &a6) == 1 && !IN6_IS_ADDR_V4MAPPED(&a6)) {
                memset(a6.s6_addr + 8, 0, 8);
                char p[INET6_ADDRSTRLEN];
                inet_ntop(AF_INET6, &a6, p, sizeof(p));
                snprintf(out, size, "%s/64", p);
                return;
        }
        snprintf(out, size, "%s", buf[0] ? buf : "?");
}

int web_add_security_headers(struct lws *wsi, Web *w, unsigned char **p, unsigned char *end) {
        static const char *const security[][2] = {
                /* No inline script, nothing from elsewhere, no framing. Inline style only
                 * because xterm.js's renderer writes its row sizes and colours into <style>
                 * elements it makes; no page here shows HTML that is not ours (terminal
                 * output is text to xterm.js), so style cannot be injected. */
                { "content-security-policy:", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                              "connect-src 'self'; img-src 'self'; form-action 'self'; "
                                              "frame-ancestors 'none'; base-uri 'none'" },
                { "x-content-type-options:", "nosniff" },
                { "x-frame-options:", "DENY" },
                { "referrer-policy:", "same-origin" }, /* no-referrer would make Origin "null" */
                { "cache-control:", "no-store" },
                { "cross-origin-opener-policy:", "same-origin" },
        };
        for (size_t i = 0; i < ELEMENTSOF(security); i++)
                if (lws_add_http_header_by_name(wsi, (const unsigned char *) security[i][0],
                                                (const unsigned char *) security[i][1], (int) strlen(security[i][1]), p, end))
                        return -1;
        if (w->tls && lws_add_http_header_by_name(wsi, (const unsigned char *) "strict-transport-security:",
                                                  (const unsigned char *) "max-age=31536000", 16, p, end))
                return -1;
        return 0;
}

/* A response with a length leaves the connection open for the client's next request, until
 * libwebsockets closes it after keepalive_timeout (idle_timeout) seconds. Saying when lets
 * a client stop reusing it a little before (undici: a second early), instead of sending a
 * request into our close as it happens: a POST that meets a closed connection is not sent
 * again, and an agent's tool call would fail with "fetch failed" rather than be answered. */
int web_add_keepalive_header(struct lws *wsi, Web *w, unsigned char **p, unsigned char *end) {
        char v[32];
        int n = snprintf(v, sizeof(v), "timeout=%ld", w->conf->idle_timeout);
        return lws_add_http_header_by_name(wsi, (const unsigned char *) "keep-alive:", (const unsigned char *) v, n, p, end);
}

/* Headers, then the body on the next writable callback. */
int web_respond(struct lws *wsi, Web *w, Conn *c, unsigned status, const char *ctype, const char *body, size_t len,
                const char *set_cookie, const char *location) {
        unsigned char buf[LWS_PRE + HEADERS_MAX], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
        if (len == 0) {
                body = "\n";
                len = 1;
        }
        if (lws_add_http_common_headers(wsi, status, ctype, len, &p, end) || web_add_security_headers(wsi, w, &p, end) ||
            web_add_keepalive_header(wsi, w, &p, end))
                return -1;
        if (status == 401 && c->route == WEB_ROUTE_MCP &&
            lws_add_http_header_by_name(wsi, (const unsigned char *) "www-authenticate:",
                                        (const unsigned char *) "Bearer realm=\"seat-web\"", 22, &p, end))
                return -1;
        if (set_cookie && lws_add_http_header_by_name(wsi, (const unsigned char *) "set-cookie:",
                                                      (const unsigned char *) set_cookie, (int) strlen(set_cookie), &p, end))
                return -1;
        if (location && lws_add_http_header_by_name(wsi, (const unsigned char *) "location:",
                                                    (const unsigned char *) location, (int) strlen(location), &p, end))
                return -1;
        if (lws_finalize_write_http_header(wsi, start, &p, end))
                return -1;
        free(c->resp);
        c->resp = malloc(LWS_PRE + len);
        if (!c->resp)
                return -1;
        memcpy(c->resp + LWS_PRE, body, len);
        c->resp_len = len;
        lws_callback_on_writable(wsi);
        return 0;
}

int web_body_append(void *buf, size_t want, size_t *len, const void *in, size_t n) {
        if (!buf || n > want - *len)
                return -1;
        memcpy((char *) buf + *len, in, n);
        *len += n;
        return 0;
}

int web_respond_text(struct lws *wsi, Web *w, Conn *c, unsigned status, const char *text) {
        return web_respond(wsi, w, c, status, "text/plain; charset=utf-8", text, strlen(text), NULL, NULL);
}

int web_respond_json(struct lws *wsi, Web *w, Conn *c, unsigned status, json_object *o, const char *set_cookie) {
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        return web_respond(wsi, w, c, status, "application/json", s, strlen(s), set_cookie, NULL);
}

int web_respond_error_json(struct lws *wsi, Web *w, Conn *c, unsigned status, const char *message) {
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return -1;
        json_object_object_add(o, "error", json_object_new_string(message));
        return web_respond_json(wsi, w, c, status, o, NULL);
}

static int redirect(struct lws *wsi, Web *w, Conn *c, const char *to, const char *set_cookie) {
        return web_respond(wsi, w, c, 303, "text/plain; charset=utf-8", to, strlen(to), set_cookie, to);
}

static const char *clear_cookie(void) {
        return COOKIE_NAME "=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict";
}

/* The session the request's cookie names, or NULL (none, unknown, expired, malformed:
 * all the same to the caller). */
int web_request_cookie(struct lws *wsi, const char *name, char *out, size_t size) {
        char header[WEB_COOKIE_HEADER_MAX + 1];
        int n = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_COOKIE);
        if (n <= 0)
                return -ENOENT;
        if (n > WEB_COOKIE_HEADER_MAX || lws_hdr_copy(wsi, header, sizeof(header), WSI_TOKEN_HTTP_COOKIE) < 0)
                return -EBADMSG;
        return web_cookie_get(header, strlen(header), name, out, size);
}

WebSession *web_request_session(struct lws *wsi, Web *w) {
        char id[WEB_SESSION_ID_LEN + 1];
        if (web_request_cookie(wsi, COOKIE_NAME, id, sizeof(id)) < 0)
                return NULL;
        return session_find(w->sessions, id, now_monotonic_ms());
}

/* A POST from another site's page: its Origin is not ours. (SameSite=Strict keeps the
 * cookie off such requests too; this also covers the login form itself.) */
bool web_cross_origin(struct lws *wsi, Web *w) {
        char origin[256], host[256], want[300];
        if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0)
                return false;
        if (lws_hdr_copy(wsi, origin, sizeof(origin), WSI_TOKEN_ORIGIN) < 0 ||
            lws_hdr_copy(wsi, host, sizeof(host), WSI_TOKEN_HOST) < 0)
                return true;
        snprintf(want, sizeof(want), "%s://%s", w->tls ? "https" : "http", host);
        if (strcmp(origin, want) == 0)
                return false;
        _cleanup_free_ char *esc = log_escape(origin, strlen(origin), 128);
        log_debug("Origin '%s' is not '%s'", esc ? esc : "?", want);
        return true;
}

void web_log_refusal(struct lws *wsi, const char *what, const char *seat) {
        char peer[64];
        web_peer_key(wsi, peer, sizeof(peer));
        _cleanup_free_ char *esc = seat ? log_escape(seat, strlen(seat), 64) : NULL;
        log_warning("refused: %s (seat '%s', from %s)", what, esc ? esc : "-", peer);
}

/* The fields of a seat record a participant's page shows; the rest stays with seatd. */
static json_object *public_record(json_object *rec) {
        static const char *const keep[] = { "id", "state", "image", "image_version", "participant", "generation",
                                            "created", "fault" };
        json_object *o = json_object_new_object();
        for (size_t i = 0; o && i < ELEMENTSOF(keep); i++) {
                json_object *v;
                if (json_object_object_get_ex(rec, keep[i], &v))
                        json_object_object_add(o, keep[i], json_object_get(v));
        }
        return o;
}

/* Hand the seatd call to the workers; the request is finished in finish_job(). */
int web_submit(struct lws *wsi, Web *w, Conn *c, Job *job) {
        if (!job)
                return -1;
        if (jobs_submit(w->jobs, job) < 0) {
                job_free(job);
                return web_respond_text(wsi, w, c, 503, "seat-web is busy: try again in a moment.\n");
        }
        c->job = job;
        return 0;
}

bool web_login_failed(const Job *job) {
        return job->r == -EACCES || job->r == -EREMOTEIO;
}

static int do_login(struct lws *wsi, Web *w, Conn *c) {
        char peer[64], seat[WEB_SEAT_ID_MAX + 1], token[WEB_TOKEN_HEX + 2];
        int64_t now = now_monotonic_ms();

        web_peer_key(wsi, peer, sizeof(peer));
        if (web_form_get(c->body, c->body_len, "seat", seat, sizeof(seat)) < 0 || !web_seat_id_valid(seat))
                return web_respond_text(wsi, w, c, 400, "The form needs a seat id (letters, digits, '-').\n");
        int r = web_form_get(c->body, c->body_len, "token", token, sizeof(token));
        if (r < 0 && r != -E2BIG)
                return web_respond_text(wsi, w, c, 400, "The form needs the seat's token.\n");
        /* Charged now, given back in finish_login() unless seatd refuses the token. */
        int k = login_limit_take(w->per_address, w->per_seat, LOGIN_TOKEN, peer, seat, now, &c->login);
        if (k == -EAGAIN) {
                web_log_refusal(wsi, "login over the rate limit for this address", NULL);
                return web_respond_text(wsi, w, c, 429, "Too many login attempts from this address: wait a minute.\n");
        }
        if (k < 0) {
                web_log_refusal(wsi, "login over the rate limit for this seat", seat);
                return web_respond_text(wsi, w, c, 429, "Too many login attempts for this seat: wait a minute.\n");
        }
        /* A token of the wrong shape is refused like a wrong one, without asking seatd. */
        if (r < 0 || !web_token_valid(token)) {
                login_limit_settle(&c->login, true, now);
                web_log_refusal(wsi, "login with a malformed token", seat);
                return web_respond_text(wsi, w, c, 403, "This token does not open this seat.\n");
        }
        Job *job = job_new(JOB_LOGIN, wsi, seat, token);
        sodium_memzero(token, sizeof(token));
        if (job)
                snprintf(job->peer, sizeof(job->peer), "%s", peer);
        r = web_submit(wsi, w, c, job);
        if (!c->job)
                login_limit_settle(&c->login, false, now); /* not tried */
        return r;
}

/* GET /l/ID: a one-time link logs in as its token would (finish_login()), once. */
static int do_link(struct lws *wsi, Web *w, Conn *c) {
        char peer[64];
        WebLink l;
        web_peer_key(wsi, peer, sizeof(peer));
        /* Ids are 256 random bits: the limit only keeps a prober off the disk, so only a
         * link that is not there costs. */
        if (!rate_limit_take(w->per_address, peer, 1, now_monotonic_ms())) {
                web_log_refusal(wsi, "a link over the rate limit for this address", NULL);
                return web_respond_text(wsi, w, c, 429, "Too many login attempts from this address: wait a minute.\n");
        }
        int r = web_link_take(w->conf, c->arg, now_realtime_ms() / 1000, &l);
        if (r >= 0)
                rate_limit_give_back(w->per_address, peer, 1, now_monotonic_ms());
        if (r == -ETIME) {
                web_log_refusal(wsi, "an expired one-time link", NULL);
                return web_respond_text(wsi, w, c, 410, "This link has expired: ask the facilitator for a new one.\n");
        }
        if (r < 0) {
                web_log_refusal(wsi, "a one-time link that was used already or never made", NULL);
                return web_respond_text(wsi, w, c, 410,
                                        "This link has been used already (each works once), or it never existed: ask the facilitator for a new one.\n");
        }
        log_info("one-time link of seat '%s' used from %s", l.seat, peer);
        Job *job = job_new(JOB_LOGIN, wsi, l.seat, l.token);
        if (job) {
                snprintf(job->peer, sizeof(job->peer), "%s", peer);
                snprintf(job->link_id, sizeof(job->link_id), "%.*s", WEB_SESSION_ID_LEN, c->arg); /* taken: valid */
                job->link_expires = l.expires;
        }
        sodium_memzero(&l, sizeof(l));
        return web_submit(wsi, w, c, job);
}

/* seatd answered the login's seat.status. */
static int finish_login(struct lws *wsi, Web *w, Conn *c, Job *job) {
        login_limit_settle(&c->login, web_login_failed(job), now_monotonic_ms());
        if (job->r == -EACCES) {
                web_log_refusal(wsi, "login with a token seatd refused", job->seat);
                return web_respond_text(wsi, w, c, 403, "This token does not open this seat.\n");
        }
        if (job->r < 0 && job->link_id[0]) {
                /* The link was taken before seatd was asked: it never opened the seat, so
                 * it is put back, and works once still. */
                WebLink l = { .expires = job->link_expires };
                snprintf(l.seat, sizeof(l.seat), "%s", job->seat);
                snprintf(l.token, sizeof(l.token), "%s", job->token);
                _cleanup_error_ SeatError *err = NULL;
                int k = web_link_put(w->conf, job->link_id, &l, &err);
                sodium_memzero(&l, sizeof(l));
                if (k < 0)
                        log_warning("a one-time link of seat '%s' could not be put back: %s", job->seat, err->message);
                return web_respond_text(wsi, w, c, 503, k < 0 ? "seatd cannot be reached now, and this link could not be kept: ask the facilitator for a new one.\n"
                                                              : "seatd cannot be reached now: open this link again in a moment (it still works once).\n");
        }
        if (job->r < 0)
                return web_respond_text(wsi, w, c, 503, "seatd cannot be reached now: try again in a moment.\n");
        char id[WEB_SESSION_ID_LEN + 1], cookie[256], to[64];
        int r = session_open(w->sessions, job->seat, job->token, now_monotonic_ms(), id);
        if (r < 0)
                return web_respond_text(wsi, w, c, 503, "Too many sessions: try again later.\n");
        snprintf(cookie, sizeof(cookie), COOKIE_NAME "=%s; Path=/; Max-Age=%ld; HttpOnly; Secure; SameSite=Strict", id,
                 w->conf->session_max_age);
        snprintf(to, sizeof(to), "/seat/%s", job->seat);
        log_info("login: seat '%s' from %s (%zu sessions)", job->seat, job->peer, session_count(w->sessions));
        r = redirect(wsi, w, c, to, cookie);
        sodium_memzero(cookie, sizeof(cookie));
        sodium_memzero(id, sizeof(id));
        return r;
}

static int do_status(struct lws *wsi, Web *w, Conn *c, WebSession *s) {
        Job *job = job_new(JOB_STATUS, wsi, s->seat, s->token);
        if (job)
                snprintf(job->session, sizeof(job->session), "%s", s->id);
        return web_submit(wsi, w, c, job);
}

int web_job_session(Web *w, const Job *job, WebSession **ret) {
        /* The session may have ended while seatd was asked (a logout, another request
         * that saw the reset). */
        WebSession *s = session_find(w->sessions, job->session, now_monotonic_ms());
        if (!s || strcmp(s->seat, job->seat) != 0)
                return -ENOENT;
        if (job->r == -EACCES) {
                /* The token no longer opens the seat: it was reset (a new token) or
                 * released. The session ends here. */
                log_info("session of seat '%s' ended: seatd no longer accepts its token (reset or released)", s->seat);
                session_close(w->sessions, s);
                return -EACCES;
        }
        *ret = s;
        return 0;
}

/* seatd answered a status page's seat.status. */
static int finish_status(struct lws *wsi, Web *w, Conn *c, Job *job) {
        _cleanup_json_ json_object *out = NULL;
        WebSession *s;
        int r = web_job_session(w, job, &s);
        if (r == -ENOENT)
                return web_respond(wsi, w, c, 401, "application/json", "{\"login\":true}", 14, NULL, NULL);
        if (r == -EACCES) {
                out = json_object_new_object();
                if (!out)
                        return -1;
                json_object_object_add(out, "ended", json_object_new_boolean(1));
                json_object_object_add(out, "message",
                                       json_object_new_string("This seat was reset or released: your session has "
                                                              "ended. Ask the facilitator for a new token."));
                return web_respond_json(wsi, w, c, 401, out, clear_cookie());
        }
        if (job->r < 0) {
                out = json_object_new_object();
                if (!out)
                        return -1;
                json_object_object_add(out, "error", json_object_new_string("seatd cannot be reached now"));
                return web_respond_json(wsi, w, c, 503, out, NULL);
        }
        out = public_record(job->rec);
        /* The page offers as many terminals as this session may open. */
        if (out)
                json_object_object_add(out, "terminals_per_session", json_object_new_int64(w->conf->terminals_per_session));
        /* and links to the seat's web pages on the ports seat-web forwards to */
        json_object *ports = out ? json_object_new_array() : NULL;
        for (size_t i = 0; ports && i < w->conf->n_forward_ports; i++)
                json_object_array_add(ports, json_object_new_int(w->conf->forward_port_list[i]));
        if (ports)
                json_object_object_add(out, "forward_ports", ports);
        return out ? web_respond_json(wsi, w, c, 200, out, NULL) : -1;
}

/* The workers woke the loop: finish the requests whose seatd calls are done. */
static void finish_jobs(Web *w) {
        Job *l = jobs_done(w->jobs);
        if (w->fwd_jobs) {
                /* the proxied exchanges' pool after the other's */
                Job **tail = &l;
                while (*tail)
                        tail = &(*tail)->next;
                *tail = jobs_done(w->fwd_jobs);
        }
        while (l) {
                Job *job = l;
                l = l->next;
                if (job->kind == JOB_MCP_CHECK) {
                        if (w->mcp)
                                mcp_http_checked(w, job);
                } else if (!job->abandoned) {
                        Conn *c = lws_wsi_user(job->wsi);
                        c->job = NULL;
                        int r = job->kind == JOB_LOGIN    ? finish_login(job->wsi, w, c, job)
                                : job->kind == JOB_MCP ? mcp_http_finish(job->wsi, w, c, job)
                                : job->kind == JOB_FILE_PUT || job->kind == JOB_FILE_GET ? files_finish(job->wsi, w, c, job)
                                : job->kind == JOB_FORWARD ? forward_finish(job->wsi, w, c, job)
                                                       : finish_status(job->wsi, w, c, job);
                        if (r < 0)
                                lws_set_timeout(job->wsi, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
                }
                job_free(job);
        }
}

static int serve_asset(struct lws *wsi, Web *w, Conn *c, const char *name) {
        const Asset *a = asset(w, name);
        if (!a)
                return web_respond_text(wsi, w, c, 404, "Not found.\n");
        return web_respond(wsi, w, c, 200, a->mime, a->data, a->len, NULL, NULL);
}

static int on_body_done(struct lws *wsi, Web *w, Conn *c) {
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
        if (c->route == WEB_ROUTE_FAC)
                return fac_http_body_done(wsi, w, c);
        if (c->route == WEB_ROUTE_LOGIN)
                return do_login(wsi, w, c);
        if (c->route == WEB_ROUTE_LOGOUT) {
                WebSession *s = web_request_session(wsi, w);
                if (s) {
                        log_info("logout: seat '%s'", s->seat);
                        session_close(w->sessions, s);
                }
                return redirect(wsi, w, c, "/", clear_cookie());
        }
        return web_respond_text(wsi, w, c, 400, "Unexpected body.\n");
}

/* A request's headers are in: route it. Returns 0, or -1 to close the connection. */
static int on_request(struct lws *wsi, Web *w, Conn *c, const char *path) {
        bool get = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0;
        bool post = lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0;
        const char *mime = NULL;

        /* The seat's web pages first: their paths are longer than web_route takes. */
        char fseat[WEB_SEAT_ID_MAX + 1];
        const char *frest;
        unsigned fport;
        if (web_forward_path(path, fseat, sizeof(fseat), &fport, &frest) != -ENOENT)
                return forward_request(wsi, w, c, path);
        if (fac_http_match(path))
                return fac_http_request(wsi, w, c, path, get, post);
        c->route = web_route(path, c->arg, sizeof(c->arg), &mime);
        switch (c->route) {
        case WEB_ROUTE_NONE:
                if (!strcmp(path, "/mcp") || !strcmp(path, "/mcp/"))
                        return web_respond_text(wsi, w, c, 404, "Not found: a seat's MCP endpoint is /mcp/SEAT.\n");
                return web_respond_text(wsi, w, c, 404, "Not found.\n");
        case WEB_ROUTE_MCP:
                return mcp_http_request(wsi, w, c);
        case WEB_ROUTE_SEAT_FILE:
                return files_request(wsi, w, c, post, get);
        case WEB_ROUTE_LOGIN:
        case WEB_ROUTE_LOGOUT: {
                char ctype[128] = "", clen[32] = "";
                if (!post)
                        return web_respond_text(wsi, w, c, 405, "Use POST.\n");
                if (web_cross_origin(wsi, w)) {
                        web_log_refusal(wsi, "a POST from another origin", NULL);
                        return web_respond_text(wsi, w, c, 403, "Cross-site request refused.\n");
                }
                if (lws_hdr_copy(wsi, clen, sizeof(clen), WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0)
                        return c->route == WEB_ROUTE_LOGOUT ? on_body_done(wsi, w, c)
                                                            : web_respond_text(wsi, w, c, 411, "Content-Length required.\n");
                char *end = NULL;
                errno = 0;
                unsigned long n = strtoul(clen, &end, 10);
                if (errno || *end || clen[0] < '0' || clen[0] > '9' || n > WEB_FORM_MAX)
                        return web_respond_text(wsi, w, c, 413, "The form is too large.\n");
                if (c->route == WEB_ROUTE_LOGIN &&
                    (lws_hdr_copy(wsi, ctype, sizeof(ctype), WSI_TOKEN_HTTP_CONTENT_TYPE) <= 0 ||
                     strncmp(ctype, "application/x-www-form-urlencoded", 33) != 0 || (ctype[33] && ctype[33] != ';')))
                        return web_respond_text(wsi, w, c, 415, "Send the login form (application/x-www-form-urlencoded).\n");
                /* The body must follow promptly: a trickle is dropped. */
                lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, (int) w->conf->idle_timeout);
                if (n == 0)
                        return c->route == WEB_ROUTE_LOGIN ? web_respond_text(wsi, w, c, 400, "The form is empty.\n")
                                                           : on_body_done(wsi, w, c);
                return 0; /* wait for the body */
        }
        default:
                break;
        }
        if (!get)
                return web_respond_text(wsi, w, c, 405, "Use GET.\n");
        switch (c->route) {
        case WEB_ROUTE_LOGIN_PAGE:
                return serve_asset(wsi, w, c, "login.html");
        case WEB_ROUTE_LINK:
                return do_link(wsi, w, c);
        case WEB_ROUTE_STATIC:
                return serve_asset(wsi, w, c, c->arg);
        case WEB_ROUTE_SEAT_PAGE:
        case WEB_ROUTE_SEAT_STATUS: {
                WebSession *s = web_request_session(wsi, w);
                if (!s) {
                        if (c->route == WEB_ROUTE_SEAT_PAGE)
                                return redirect(wsi, w, c, "/", NULL);
                        return web_respond(wsi, w, c, 401, "application/json", "{\"login\":true}", 14, NULL, NULL);
                }
                if (strcmp(s->seat, c->arg) != 0) {
                        /* A cookie of one seat opens nothing of another. */
                        web_log_refusal(wsi, "a session cookie of another seat", c->arg);
                        return web_respond_text(wsi, w, c, 403, "This session is not for this seat.\n");
                }
                if (c->route == WEB_ROUTE_SEAT_PAGE)
                        return serve_asset(wsi, w, c, "seat.html");
                return do_status(wsi, w, c, s);
        }
        default:
                return web_respond_text(wsi, w, c, 404, "Not found.\n");
        }
}


static int callback_http(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
        Conn *c = user;
        Web *w = lws_context_user(lws_get_context(wsi));

        switch (reason) {
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        case LWS_CALLBACK_ESTABLISHED:
        case LWS_CALLBACK_RECEIVE:
        case LWS_CALLBACK_SERVER_WRITEABLE:
        case LWS_CALLBACK_CLOSED:
                /* A WebSocket without a subprotocol lands on this first protocol: only a
                 * seat's forwarded page may have one (ws-proxy.c). */
                return c ? ws_proxy_callback(wsi, reason, &c->wsp, in, len) : -1;
        case LWS_CALLBACK_HTTP:
                return on_request(wsi, w, c, in ? (const char *) in : "") < 0 ? -1 : 0;
        case LWS_CALLBACK_HTTP_BODY:
                if (c->resp || c->job) /* already answered (an error before the body) */
                        return 0;
                if (c->route == WEB_ROUTE_MCP)
                        return mcp_http_body(c, in, len);
                if (c->route == WEB_ROUTE_SEAT_FILE)
                        return files_body(c, in, len);
                if (c->route == WEB_ROUTE_SEAT_FORWARD)
                        return forward_body(c, in, len);
                if (len > WEB_FORM_MAX - c->body_len)
                        return -1; /* more than its Content-Length said: close */
                memcpy(c->body + c->body_len, in, len);
                c->body_len += len;
                return 0;
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
                if (c->resp || c->job)
                        return 0;
                if (c->route == WEB_ROUTE_MCP)
                        return mcp_http_body_done(wsi, w, c) < 0 ? -1 : 0;
                if (c->route == WEB_ROUTE_SEAT_FILE)
                        return files_body_done(wsi, w, c) < 0 ? -1 : 0;
                if (c->route == WEB_ROUTE_SEAT_FORWARD)
                        return forward_body_done(wsi, w, c) < 0 ? -1 : 0;
                return on_body_done(wsi, w, c) < 0 ? -1 : 0;
        case LWS_CALLBACK_HTTP_WRITEABLE: {
                if (!c->resp && c->route == WEB_ROUTE_FAC)
                        return fac_http_writeable(wsi, w, c) < 0 ? -1 : 0;
                if (!c->resp)
                        return c->route == WEB_ROUTE_MCP ? mcp_http_writeable(wsi, w, c) : 0;
                /* (a proxied response may have no body: its headers were all) */
                int n = c->resp_len ? lws_write(wsi, c->resp + LWS_PRE, c->resp_len, LWS_WRITE_HTTP_FINAL) : 0;
                free(c->resp);
                c->resp = NULL;
                memset(c->body, 0, sizeof(c->body));
                c->body_len = 0;
                if (n < 0)
                        return -1;
                return lws_http_transaction_completed(wsi) ? -1 : 0;
        }
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
                if (w && w->jobs)
                        finish_jobs(w);
                if (w)
                        fac_service(w); /* the facilitator's calls */
                if (w)
                        ws_terminal_service(w); /* a terminal's thread has output, room or its end */
                if (w)
                        ws_proxy_service(w);    /* and a relayed WebSocket's */
                return 0;
        case LWS_CALLBACK_CLOSED_HTTP:
        case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
                if (c) {
                        fac_http_closed(w, c); /* its calls run on the facilitator's workers */
                        if (c->job) {
                                jobs_abandon(c->job->kind == JOB_FORWARD ? w->fwd_jobs : w->jobs, c->job);
                                c->job = NULL;
                        }
                        free(c->resp);
                        c->resp = NULL;
                        sodium_memzero(c->body, sizeof(c->body));
                        files_closed(c);
                        forward_closed(c);
                        mcp_http_closed(w, c); /* also after the MCP table is gone (shutdown) */
                }
                return 0;
        default:
                break;
        }
        return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {
        { .name = "http", .callback = callback_http, .per_session_data_size = sizeof(Conn) },
        /* the stdout of each MCP session's seatctl mcp (mcp-http.c) */
        { .name = "mcp-child", .callback = mcp_child_callback, .per_session_data_size = 0 },
        /* the browser terminal (ws-terminal.c): the WebSocket subprotocol "seat-terminal" */
        { .name = "seat-terminal", .callback = ws_terminal_callback, .per_session_data_size = sizeof(TermConn), .rx_buffer_size = 16384 },
        /* the facilitator's dashboard (fac-events.c): snapshots of the room, down only */
        { .name = "seat-dashboard", .callback = fac_ws_callback, .per_session_data_size = sizeof(DashConn), .rx_buffer_size = 512 },
        { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static void lws_log(int level, const char *line) {
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == '\n')
                n--;
        log_full_errno(level == LLL_ERR ? LOG_LEVEL_ERR : level == LLL_WARN ? LOG_LEVEL_WARNING : LOG_LEVEL_DEBUG, 0,
                       "libwebsockets: %.*s", (int) n, line);
}

int web_assets_load(const char *assets_dir, const char *sub, const char *const (*names)[2], size_t n, size_t max,
                    Asset *assets, SeatError **ret_error) {
        for (size_t i = 0; i < n; i++) {
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s%s", assets_dir, sub, names[i][0]);
                int r = read_file_capped(path, max, &assets[i].data, &assets[i].len);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "cannot read asset '%s': %s (assets_dir)", path, strerror(-r));
                const char *slash = strrchr(names[i][0], '/');
                assets[i].name = slash ? slash + 1 : names[i][0]; /* "vendor/xterm.js" is /static/xterm.js */
                assets[i].mime = names[i][1];
        }
        return 0;
}

static int load_assets(Web *w, SeatError **ret_error) {
        static const char *const names[][2] = {
                { "login.html", "text/html; charset=utf-8" },
                { "seat.html", "text/html; charset=utf-8" },
                { "seat.js", "text/javascript; charset=utf-8" },
                { "style.css", "text/css; charset=utf-8" },
                /* xterm.js (web/xterm/package-lock.json, copied by scripts/update-web-vendor) */
                { "vendor/xterm.js", "text/javascript; charset=utf-8" },
                { "vendor/xterm.css", "text/css; charset=utf-8" },
                { "vendor/addon-fit.js", "text/javascript; charset=utf-8" },
        };
        _Static_assert(ELEMENTSOF(names) == ELEMENTSOF(((Web *) NULL)->assets), "one asset a name");
        return web_assets_load(w->conf->assets_dir, "", names, ELEMENTSOF(names), ASSET_MAX, w->assets, ret_error);
}

static void web_done(Web *w) {
        fac_done(w);
        jobs_free(w->jobs);
        jobs_free(w->fwd_jobs);
        mcp_table_free(w->mcp);
        for (size_t i = 0; i < ELEMENTSOF(w->assets); i++)
                free(w->assets[i].data);
        session_table_free(w->sessions);
        rate_limit_free(w->per_address);
        rate_limit_free(w->per_seat);
        rate_limit_free(w->mcp_unauthenticated);
}

/* A failed start: the facilitator side, the job pools and the context go again (web_done
 * frees the rest). */
static void unstart(Web *w) {
        fac_done(w);
        jobs_free(w->jobs);
        w->jobs = NULL;
        jobs_free(w->fwd_jobs);
        w->fwd_jobs = NULL;
        lws_context_destroy(the_context);
        the_context = NULL;
}

int web_server_run(const WebConfig *conf, SeatError **ret_error) {
        _cleanup_(web_done) Web w = { .conf = conf, .tls = !conf->plain_http };
        struct lws_context_creation_info info;
        char cert[4096], key[4096];
        int r;

        r = load_assets(&w, ret_error);
        if (r < 0)
                return r;
        w.sessions = session_table_new((size_t) conf->max_sessions, conf->session_idle_timeout * 1000,
                                       conf->session_max_age * 1000);
        w.per_address = rate_limit_new(conf->login_rate_per_address, (size_t) conf->rate_table_size);
        w.per_seat = rate_limit_new(conf->login_rate_per_seat, (size_t) conf->rate_table_size);
        w.mcp_unauthenticated = rate_limit_new(conf->mcp_unauthenticated_rate_per_address, (size_t) conf->rate_table_size);
        if (!w.sessions || !w.per_address || !w.per_seat || !w.mcp_unauthenticated)
                return seat_error_set(ret_error, ENOMEM, "cannot allocate the session and rate tables");

        lws_set_log_level(LLL_ERR | LLL_WARN | (log_get_max_level() >= LOG_LEVEL_DEBUG ? LLL_NOTICE : 0), lws_log);
        memset(&info, 0, sizeof(info));
        info.protocols = protocols;
        info.user = &w;
        info.iface = conf->listen_address;
        info.port = conf->listen_port;
        info.vhost_name = "seat-web";
        /* HTTP/1.1 only: one small code path to harden. */
        info.alpn = "http/1.1";
        /* Caps and timeouts on everything a client controls: header bytes, header slots,
         * connections, idle and trickling connections (slow-loris). */
        info.max_http_header_data = 4096;
        info.max_http_header_pool = 64;
        info.fd_limit_per_thread = (unsigned) conf->max_connections;
        info.timeout_secs = (unsigned) conf->idle_timeout;
        info.timeout_secs_ah_idle = (unsigned) conf->idle_timeout;
        info.keepalive_timeout = (int) conf->idle_timeout;
        /* Terminals, relayed WebSockets and dashboards have no idle timeout (a person may
         * sit idle as long as they like): TCP keepalive finds the peers that are gone
         * without a word (a laptop closed or off the Wi-Fi), whose slots otherwise stayed
         * taken until seat-web restarted. Dead after about WEB_KA_TIME + WEB_KA_PROBES *
         * WEB_KA_INTERVAL seconds; an idle browser that is there answers the probes from
         * its kernel. */
        info.ka_time = WEB_KA_TIME;
        info.ka_probes = WEB_KA_PROBES;
        info.ka_interval = WEB_KA_INTERVAL;
        info.options = LWS_SERVER_OPTION_VALIDATE_UTF8;
        if (strchr(conf->listen_address, ':') == NULL)
                info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
        if (w.tls) {
                web_config_tls_paths(conf, cert, sizeof(cert), key, sizeof(key));
                info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
                info.ssl_cert_filepath = cert;
                info.ssl_private_key_filepath = key;
                info.ssl_options_set = SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
                if (access(cert, R_OK) < 0 || access(key, R_OK) < 0)
                        return seat_error_set(ret_error, ENOENT,
                                              "no TLS certificate and key readable at '%s' and '%s': set tls_cert and "
                                              "tls_key, or run 'seat-web --self-signed' once",
                                              cert, key);
        }
        the_context = lws_create_context(&info);
        if (!the_context)
                return seat_error_set(ret_error, EADDRNOTAVAIL,
                                      "cannot listen on %s port %d%s (in use? a certificate libwebsockets refused?)",
                                      conf->listen_address, conf->listen_port, w.tls ? " with TLS" : "");
        /* Four calls to seatd at once at most (its participant socket allows 16 per uid);
         * as many waiting as there are connections. */
        w.jobs = jobs_new(conf->participant_socket, (int) conf->seatd_timeout_ms, 4, (size_t) conf->max_connections,
                          the_context);
        if (!w.jobs) {
                lws_context_destroy(the_context);
                the_context = NULL;
                return seat_error_set(ret_error, ENOMEM, "cannot start the threads that call seatd");
        }
        /* The proxied exchanges with the seats' servers: a pool of their own, so that a slow
         * guest holds up only its own pages. */
        w.fwd_jobs = jobs_new(conf->participant_socket, (int) conf->forward_timeout_ms, (size_t) conf->forward_workers,
                              (size_t) conf->max_connections, the_context);
        /* ...which needs a share per seat: one seat's server that never answers holds at
         * most half the workers, its other pages queue behind it. */
        if (w.fwd_jobs)
                jobs_set_per_seat_max(w.fwd_jobs, conf->forward_workers > 1 ? (size_t) conf->forward_workers / 2 : 1);
        r = fac_init(&w, the_context, ret_error);
        if (r < 0) {
                unstart(&w);
                return r;
        }
        w.mcp = w.fwd_jobs ? mcp_table_new(&w, the_context) : NULL;
        if (!w.mcp) {
                unstart(&w);
                return seat_error_set(ret_error, ENOMEM, "cannot allocate the MCP session table");
        }
        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        log_info("listening on %s%s%s port %d (%s)", strchr(conf->listen_address, ':') ? "[" : "", conf->listen_address,
                 strchr(conf->listen_address, ':') ? "]" : "", conf->listen_port,
                 w.tls ? "https" : "plain http, loopback only");
        while (!stopping)
                if (lws_service(the_context, 0) < 0)
                        break;
        /* The terminals and the workers first: they wake the context, which must still be there. */
        ws_terminal_close_all(&w);
        ws_proxy_close_all(&w);
        jobs_free(w.jobs);
        w.jobs = NULL;
        jobs_free(w.fwd_jobs);
        w.fwd_jobs = NULL;
        fac_done(&w);
        /* The MCP children next: none outlives seat-web. */
        mcp_table_free(w.mcp);
        w.mcp = NULL;
        lws_context_destroy(the_context);
        the_context = NULL;
        log_info("stopped");
        return 0;
}
