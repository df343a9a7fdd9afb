/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * forward.c: the seat's web pages, GET, HEAD and POST under /seat/ID/port/N/ (docs/seat-web.md,
 * "The seat's web pages"). Each request is one exchange with the server in the seat over
 * seatd's seat.forward, made with the session's token by a worker (forward-link.c): seatd
 * decides whether the token opens the seat and records the connection in its audit log.
 *
 * Both directions are filtered here. To the guest goes a new request (HTTP/1.0, so that no
 * server answers chunked; Connection: close) with the path under the prefix, the Host the
 * guest knows, and only the browser's headers a page needs: never seat-web's session cookie
 * (the guest is hostile and must not hold the participant's session). From the guest comes
 * a response read by the bounded parser (forward-parse.c): a bad or oversized one is 502,
 * and only an allowlist of its headers passes, its cookies scoped to this port's prefix.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/log.h"
#include "forward-parse.h"
#include "forward.h"

#define SESSION_COOKIE "__Host-seatweb"
#define RESPONSE_HEADERS_MAX (WEB_FORWARD_HEAD_MAX + 2048)

typedef struct ForwardReq {
        char prefix[WEB_FORWARD_PREFIX_MAX + 1];
        unsigned port;
        bool head_only;
        unsigned char *req;  /* head, then the body as it comes */
        size_t len, want;    /* want: head + Content-Length */
} ForwardReq;

bool forward_port_allowed(const WebConfig *conf, unsigned port) {
        for (size_t i = 0; i < conf->n_forward_ports; i++)
                if (conf->forward_port_list[i] == port)
                        return true;
        return false;
}

/* Appends "Name: value\r\n" to the head when the browser sent that header. */
static int copy_header(struct lws *wsi, enum lws_token_indexes tok, const char *name, char *head, size_t *o, size_t size) {
        char v[2048];
        int n = lws_hdr_total_length(wsi, tok);
        if (n <= 0)
                return 0;
        if ((size_t) n >= sizeof(v) || lws_hdr_copy(wsi, v, sizeof(v), tok) < 0)
                return -E2BIG;
        int k = snprintf(head + *o, size - *o, "%s: %s\r\n", name, v);
        if (k < 0 || (size_t) k >= size - *o)
                return -E2BIG;
        *o += (size_t) k;
        return 0;
}

/* The request target: the path under the prefix and the query, both encoded again
 * (libwebsockets hands them decoded). */
int forward_request_target(struct lws *wsi, const char *rest, char *out, size_t size) {
        int r = web_forward_url_encode(rest, false, out, size);
        if (r < 0)
                return r;
        size_t o = strlen(out);
        for (int i = 0;; i++) {
                char frag[WEB_FORWARD_PATH_MAX], enc[WEB_FORWARD_PATH_MAX];
                if (lws_hdr_copy_fragment(wsi, frag, sizeof(frag), WSI_TOKEN_HTTP_URI_ARGS, i) < 0)
                        break;
                if ((r = web_forward_url_encode(frag, true, enc, sizeof(enc))) < 0)
                        return r;
                int k = snprintf(out + o, size - o, "%c%s", i == 0 ? '?' : '&', enc);
                if (k < 0 || (size_t) k >= size - o)
                        return -E2BIG;
                o += (size_t) k;
        }
        return 0;
}

/* What goes to the guest before the body: a request of our own making. */
static int build_head(struct lws *wsi, Web *w, ForwardReq *f, const char *method, const char *rest, uint64_t body_len,
                      char *head, size_t size) {
        char target[WEB_FORWARD_PATH_MAX * 3 + 1], cookies[WEB_COOKIE_HEADER_MAX + 1];
        const char *host = w->conf->forward_host;
        bool v6 = strchr(host, ':');
        int r = forward_request_target(wsi, rest, target, sizeof(target));
        if (r < 0)
                return r;
        int k = snprintf(head, size,
                         "%s %s HTTP/1.0\r\nHost: %s%s%s:%u\r\nConnection: close\r\nX-Forwarded-Proto: %s\r\n"
                         "X-Forwarded-Prefix: %s\r\n",
                         method, target, v6 ? "[" : "", host, v6 ? "]" : "", f->port, w->tls ? "https" : "http", f->prefix);
        if (k < 0 || (size_t) k >= size)
                return -E2BIG;
        size_t o = (size_t) k;
        static const struct {
                enum lws_token_indexes tok;
                const char *name;
        } pass[] = {
                { WSI_TOKEN_HTTP_ACCEPT, "Accept" },
                { WSI_TOKEN_HTTP_ACCEPT_LANGUAGE, "Accept-Language" },
                { WSI_TOKEN_HTTP_USER_AGENT, "User-Agent" },
                { WSI_TOKEN_HTTP_IF_MODIFIED_SINCE, "If-Modified-Since" },
                { WSI_TOKEN_HTTP_IF_NONE_MATCH, "If-None-Match" },
                { WSI_TOKEN_HTTP_CONTENT_TYPE, "Content-Type" },
        };
        for (size_t i = 0; i < ELEMENTSOF(pass); i++)
                if ((r = copy_header(wsi, pass[i].tok, pass[i].name, head, &o, size)) < 0)
                        return r;
        /* The browser's cookies for this path, but seat-web's own session. */
        int n = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_COOKIE);
        if (n > 0) {
                char raw[WEB_COOKIE_HEADER_MAX + 1];
                if (n > WEB_COOKIE_HEADER_MAX || lws_hdr_copy(wsi, raw, sizeof(raw), WSI_TOKEN_HTTP_COOKIE) < 0 ||
                    web_forward_cookie_strip(raw, strlen(raw), SESSION_COOKIE, cookies, sizeof(cookies)) < 0)
                        return -EBADMSG;
                if (cookies[0]) {
                        k = snprintf(head + o, size - o, "Cookie: %s\r\n", cookies);
                        if (k < 0 || (size_t) k >= size - o)
                                return -E2BIG;
                        o += (size_t) k;
                }
        }
        k = body_len || !strcmp(method, "POST") ? snprintf(head + o, size - o, "Content-Length: %llu\r\n\r\n", (unsigned long long) body_len)
                                                 : snprintf(head + o, size - o, "\r\n");
        if (k < 0 || (size_t) k >= size - o)
                return -E2BIG;
        return (int) (o + (size_t) k);
}

static int submit(struct lws *wsi, Web *w, Conn *c, WebSession *s) {
        ForwardReq *f = c->fwd;
        Job *job = job_new(JOB_FORWARD, wsi, s->seat, s->token);
        if (!job)
                return -1;
        snprintf(job->session, sizeof(job->session), "%s", s->id);
        snprintf(job->host, sizeof(job->host), "%s", w->conf->forward_host);
        job->port = f->port;
        job->max_response = (size_t) w->conf->forward_max_response;
        job->data = f->req;
        job->len = f->len;
        f->req = NULL;
        if (jobs_submit(w->fwd_jobs, job) < 0) {
                job_free(job);
                return web_respond_text(wsi, w, c, 503, "seat-web is busy: try again in a moment.\n");
        }
        c->job = job;
        /* The exchange may take forward_timeout_ms, longer than idle_timeout: the
         * connection waits for it (a little more, for a queue of exchanges before it). */
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK,
                        (int) (w->conf->forward_timeout_ms / 1000 + 1 + w->conf->idle_timeout));
        return 0;
}

/* A seat's pages run the seat's own scripts under seat-web's origin, where the dashboard's
 * API is same-origin: a browser that holds a facilitator session is not given them (the
 * guest's script could read the CSRF token and reset or release any seat). Malformed or
 * repeated cookies count as present: refused, never guessed at. */
bool forward_facilitator_present(struct lws *wsi) {
        char id[128];
        return web_request_cookie(wsi, WEB_FAC_COOKIE, id, sizeof(id)) != -ENOENT;
}

int forward_request(struct lws *wsi, Web *w, Conn *c, const char *path) {
        char seat[WEB_SEAT_ID_MAX + 1], clen[32] = "";
        const char *rest = NULL, *method;
        unsigned port = 0;
        uint64_t body_len = 0;

        forward_closed(c); /* (what an earlier request on this kept-alive connection left) */
        c->route = WEB_ROUTE_SEAT_FORWARD;
        if (web_forward_path(path, seat, sizeof(seat), &port, &rest) < 0)
                return web_respond_text(wsi, w, c, 400, "A seat's page is /seat/ID/port/N/PATH.\n");
        snprintf(c->arg, sizeof(c->arg), "%s", seat);
        if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0)
                method = "GET";
        else if (lws_hdr_total_length(wsi, WSI_TOKEN_HEAD_URI) > 0)
                method = "HEAD";
        else if (lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0)
                method = "POST";
        else
                return web_respond_text(wsi, w, c, 405, "A seat's pages take GET, HEAD and POST.\n");
        if (forward_facilitator_present(wsi)) {
                web_log_refusal(wsi, "a seat's forwarded page to a browser with a facilitator session", seat);
                return web_respond_text(wsi, w, c, 403,
                                        "This browser is logged in to the facilitator dashboard. A seat's pages run the seat's own "
                                        "scripts, which must not reach the dashboard: open them in another browser profile, or log "
                                        "out of the dashboard first.\n");
        }
        WebSession *s = web_request_session(wsi, w);
        if (!s)
                return web_respond_text(wsi, w, c, 401, "Log in to this seat first.\n");
        if (strcmp(s->seat, seat) != 0) {
                web_log_refusal(wsi, "a session cookie of another seat on its forwarded pages", seat);
                return web_respond_text(wsi, w, c, 403, "This session is not for this seat.\n");
        }
        if (!forward_port_allowed(w->conf, port)) {
                char what[96];
                snprintf(what, sizeof(what), "forwarding to port %u, which is not in forward_ports", port);
                web_log_refusal(wsi, what, seat);
                return web_respond_text(wsi, w, c, 403, "seat-web does not forward to this port (forward_ports).\n");
        }
        /* A form posted to the guest from another site's page: refused like every
         * cross-site POST here (the cookie is SameSite=Strict too). */
        if (!strcmp(method, "POST") && web_cross_origin(wsi, w)) {
                web_log_refusal(wsi, "a POST to a forwarded page from another origin", seat);
                return web_respond_text(wsi, w, c, 403, "Cross-site request refused.\n");
        }
        _cleanup_free_ ForwardReq *f = calloc(1, sizeof(*f));
        if (!f)
                return -1;
        snprintf(f->prefix, sizeof(f->prefix), "/seat/%s/port/%u", seat, port);
        f->port = port;
        f->head_only = !strcmp(method, "HEAD");
        if (!*rest) {
                /* The page's relative links need the prefix to end in '/'. */
                char to[sizeof(f->prefix) + 1];
                snprintf(to, sizeof(to), "%s/", f->prefix);
                return web_respond(wsi, w, c, 308, "text/plain; charset=utf-8", to, strlen(to), NULL, to);
        }
        if (!strcmp(method, "POST")) {
                if (lws_hdr_copy(wsi, clen, sizeof(clen), WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0)
                        return web_respond_text(wsi, w, c, 411, "Content-Length required.\n");
                if (web_parse_u64(clen, (uint64_t) w->conf->forward_max_body, &body_len) < 0)
                        return web_respond_text(wsi, w, c, 413, "The body is larger than seat-web's forward_max_body.\n");
        }
        char head[WEB_FORWARD_HEAD_MAX];
        int n = build_head(wsi, w, f, method, rest, body_len, head, sizeof(head));
        if (n < 0)
                return web_respond_text(wsi, w, c, n == -E2BIG ? 431 : 400,
                                        "The request's headers or path are too large or malformed to forward.\n");
        f->req = malloc((size_t) n + body_len + 1);
        if (!f->req)
                return -1;
        memcpy(f->req, head, (size_t) n);
        f->len = (size_t) n;
        f->want = (size_t) n + body_len;
        c->fwd = TAKE_PTR(f);
        if (body_len > 0) {
                /* The body must follow promptly: a trickle is dropped. */
                lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, (int) w->conf->idle_timeout);
                return 0;
        }
        return submit(wsi, w, c, s);
}

int forward_body(Conn *c, const void *in, size_t len) {
        ForwardReq *f = c->fwd;
        return f ? web_body_append(f->req, f->want, &f->len, in, len) : -1;
}

int forward_body_done(struct lws *wsi, Web *w, Conn *c) {
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
        ForwardReq *f = c->fwd;
        if (!f || !f->req || f->len != f->want)
                return web_respond_text(wsi, w, c, 400, "The body is shorter than its Content-Length.\n");
        WebSession *s = web_request_session(wsi, w);
        if (!s || strcmp(s->seat, c->arg) != 0)
                return web_respond_text(wsi, w, c, 401, "Log in to this seat first.\n");
        return submit(wsi, w, c, s);
}

static int bad_gateway(struct lws *wsi, Web *w, Conn *c, const Job *job, const char *why) {
        _cleanup_free_ char *esc = log_escape(why, strlen(why), 256);
        log_warning("forward to seat '%s' port %u: %s", job->seat, job->port, esc ? esc : "?");
        char text[512];
        snprintf(text, sizeof(text), "The server in the seat (port %u) did not give a response seat-web passes on: %s\n",
                 job->port, esc ? esc : "?");
        return web_respond_text(wsi, w, c, 502, text);
}

/* One of the guest's headers, filtered and rewritten, into the response. */
static int add_guest_header(struct lws *wsi, ForwardReq *f, const Job *job, const WebForwardHeader *h, const char *host,
                            unsigned char **p, unsigned char *end) {
        char name[64], value[WEB_COOKIE_HEADER_MAX + 256];
        if (!web_forward_response_header_allowed(h->name, h->name_len) || h->name_len + 2 > sizeof(name))
                return 0;
        for (size_t i = 0; i < h->name_len; i++)
                name[i] = (char) (h->name[i] >= 'A' && h->name[i] <= 'Z' ? h->name[i] + 32 : h->name[i]);
        name[h->name_len] = ':';
        name[h->name_len + 1] = '\0';
        int r = 0;
        if (!strcmp(name, "set-cookie:"))
                r = web_forward_set_cookie(h->value, h->value_len, f->prefix, value, sizeof(value));
        else if (!strcmp(name, "location:"))
                r = web_forward_location(h->value, h->value_len, f->prefix, host, job->port, value, sizeof(value));
        else if (h->value_len < sizeof(value)) {
                memcpy(value, h->value, h->value_len);
                value[h->value_len] = '\0';
        } else
                r = -E2BIG;
        if (r < 0) {
                log_debug("forward to seat '%s' port %u: dropped the guest's %s header", job->seat, job->port, name);
                return 0;
        }
        return lws_add_http_header_by_name(wsi, (const unsigned char *) name, (const unsigned char *) value,
                                           (int) strlen(value), p, end)
                       ? -1
                       : 0;
}

static int add_own_headers(struct lws *wsi, Web *w, unsigned char **p, unsigned char *end) {
        /* Not seat-web's page policy (the guest's page loads its own scripts): only what
         * keeps it from being framed elsewhere, cached, or its URLs leaking. No CORS. */
        static const char *const own[][2] = {
                { "x-content-type-options:", "nosniff" },
                { "x-frame-options:", "SAMEORIGIN" },
                { "referrer-policy:", "same-origin" },
                { "cache-control:", "no-store" },
                { "cross-origin-opener-policy:", "same-origin" },
        };
        for (size_t i = 0; i < ELEMENTSOF(own); i++)
                if (lws_add_http_header_by_name(wsi, (const unsigned char *) own[i][0], (const unsigned char *) own[i][1],
                                                (int) strlen(own[i][1]), p, end))
                        return -1;
        if (w->tls && lws_add_http_header_by_name(wsi, (const unsigned char *) "strict-transport-security:",
                                                  (const unsigned char *) "max-age=31536000", 16, p, end))
                return -1;
        return 0;
}

int forward_finish(struct lws *wsi, Web *w, Conn *c, Job *job) {
        ForwardReq *f = c->fwd;
        WebSession *s;
        char why[400];
        int r = web_job_session(w, job, &s);
        if (r == -ENOENT || !f)
                return web_respond_text(wsi, w, c, 401, "Log in to this seat first.\n");
        if (r == -EACCES)
                return web_respond_text(wsi, w, c, 401, "This seat was reset or released: your session has ended.\n");
        switch (job->r) {
        case 0:
                break;
        case -ECONNREFUSED:
                snprintf(why, sizeof(why), "nothing answers there (%s)", job->message);
                return bad_gateway(wsi, w, c, job, why);
        case -EFBIG:
                return bad_gateway(wsi, w, c, job, "the response is larger than forward_max_response");
        case -ETIMEDOUT:
                log_warning("forward to seat '%s' port %u: no complete response within forward_timeout_ms", job->seat, job->port);
                return web_respond_text(wsi, w, c, 504, "The server in the seat did not answer in time.\n");
        case -EREMOTEIO:
                snprintf(why, sizeof(why), "seatd refused the forward: %s (%s)", job->message, job->code);
                return bad_gateway(wsi, w, c, job, why);
        default:
                return web_respond_text(wsi, w, c, 503, "seatd cannot be reached now: try again in a moment.\n");
        }
        WebForwardResponse resp;
        r = web_forward_response_parse((const char *) job->resp, job->resp_len, &resp);
        if (r == -EAGAIN)
                return bad_gateway(wsi, w, c, job, "it ended before its headers did");
        if (r == -E2BIG)
                return bad_gateway(wsi, w, c, job, "its headers are too large");
        if (r < 0)
                return bad_gateway(wsi, w, c, job, "a malformed status line or header");
        if (resp.chunked)
                return bad_gateway(wsi, w, c, job, "a Transfer-Encoding to an HTTP/1.0 request");
        size_t body_len = job->resp_len - resp.head_len;
        if (resp.content_length >= 0 && !f->head_only) {
                if ((uint64_t) resp.content_length > body_len)
                        return bad_gateway(wsi, w, c, job, "it ended before its Content-Length");
                body_len = (size_t) resp.content_length; /* what follows is not part of it */
        }
        if (f->head_only || resp.status == 204 || resp.status == 304)
                body_len = 0;

        _cleanup_free_ unsigned char *buf = malloc(LWS_PRE + RESPONSE_HEADERS_MAX);
        if (!buf)
                return -1;
        unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + LWS_PRE + RESPONSE_HEADERS_MAX - 1;
        if (lws_add_http_header_status(wsi, resp.status, &p, end))
                return -1;
        for (size_t i = 0; i < resp.n_headers; i++)
                if (add_guest_header(wsi, f, job, &resp.headers[i], w->conf->forward_host, &p, end) < 0)
                        return bad_gateway(wsi, w, c, job, "its headers do not fit");
        if (add_own_headers(wsi, w, &p, end) || lws_add_http_header_content_length(wsi, body_len, &p, end) ||
            lws_finalize_write_http_header(wsi, start, &p, end))
                return -1;
        free(c->resp);
        c->resp = malloc(LWS_PRE + body_len + 1);
        if (!c->resp)
                return -1;
        memcpy(c->resp + LWS_PRE, job->resp + resp.head_len, body_len);
        c->resp_len = body_len;
        lws_callback_on_writable(wsi);
        return 0;
}

void forward_closed(Conn *c) {
        if (!c->fwd)
                return;
        free(c->fwd->req);
        free(c->fwd);
        c->fwd = NULL;
}
