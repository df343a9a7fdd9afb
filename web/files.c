/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* files.c: a participant's uploads and downloads, one chunk per request, so that the page
 * drives them and shows their progress and seat-web never holds more than a chunk:
 *   POST /api/seat/ID/file?path=P&offset=N[&final=1]  the chunk's bytes as the body
 *        (application/octet-stream, at most WEB_FILE_CHUNK_MAX): {"size": bytes now}
 *   GET  /api/seat/ID/file?path=P&offset=N            {"data": base64, "eof", "size"}
 * seatd does the work (seat.file_put, seat.file_get with the session's token, each
 * recorded in the seat's audit log); seat-web checks the session, the shape of the
 * request and max_file_bytes first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "files.h"

/* The query's path and offset (and final), checked. 0, or an answer was sent (< 0 only
 * when even that failed). */
static int read_query(struct lws *wsi, Web *w, Conn *c, bool *ret_ok) {
        char buf[WEB_FILE_PATH_MAX + 16];
        const char *v;
        *ret_ok = false;
        v = lws_get_urlarg_by_name(wsi, "path=", buf, (int) sizeof(buf));
        if (!v || !web_guest_path_valid(v))
                return web_respond_text(wsi, w, c, 400,
                                        "Name the file in the seat with 'path': an absolute path, without '..' or '//'.\n");
        snprintf(c->fpath, sizeof(c->fpath), "%s", v);
        v = lws_get_urlarg_by_name(wsi, "offset=", buf, (int) sizeof(buf));
        if (!v || web_parse_u64(v, (uint64_t) w->conf->max_file_bytes, &c->foffset) < 0)
                return web_respond_text(wsi, w, c, 400, "'offset' must be a byte count within max_file_bytes.\n");
        v = lws_get_urlarg_by_name(wsi, "final=", buf, (int) sizeof(buf));
        c->ffinal = v && !strcmp(v, "1");
        *ret_ok = true;
        return 0;
}

/* An upload's headers: from this origin, a body of our type and size. */
static int begin_upload(struct lws *wsi, Web *w, Conn *c) {
        char ctype[64] = "", clen[32] = "";
        uint64_t n;
        /* A cross-site form cannot send this type without asking first (CORS), and the
         * session cookie is SameSite=Strict: with the Origin check, three locks on a
         * forged upload. */
        if (lws_hdr_copy(wsi, ctype, sizeof(ctype), WSI_TOKEN_HTTP_CONTENT_TYPE) <= 0 ||
            strcmp(ctype, "application/octet-stream") != 0)
                return web_respond_text(wsi, w, c, 415, "Send the chunk's bytes as application/octet-stream.\n");
        /* A keep-alive connection may still hold the body of an upload refused earlier
         * (its 400 or 401 kept it): not leaked under the new one. */
        files_closed(c);
        if (lws_hdr_copy(wsi, clen, sizeof(clen), WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0)
                return web_respond_text(wsi, w, c, 411, "Content-Length required.\n");
        if (web_parse_u64(clen, WEB_FILE_CHUNK_MAX, &n) < 0)
                return web_respond_text(wsi, w, c, 413, "A chunk is at most 512 KiB.\n");
        if (c->foffset + n > (uint64_t) w->conf->max_file_bytes)
                return web_respond_text(wsi, w, c, 413, "The file would be larger than seat-web's max_file_bytes.\n");
        c->fbody = malloc(n ? n : 1);
        if (!c->fbody)
                return -1;
        c->fbody_want = n;
        c->fbody_len = 0;
        /* The body must follow promptly: a trickle is dropped. */
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, (int) w->conf->idle_timeout);
        return n == 0 ? files_body_done(wsi, w, c) : 0;
}

static Job *file_job(struct lws *wsi, Conn *c, WebSession *s, JobKind kind) {
        Job *job = job_new(kind, wsi, s->seat, s->token);
        if (!job)
                return NULL;
        snprintf(job->session, sizeof(job->session), "%s", s->id);
        snprintf(job->path, sizeof(job->path), "%s", c->fpath);
        job->offset = c->foffset;
        job->final = c->ffinal;
        return job;
}

int files_request(struct lws *wsi, Web *w, Conn *c, bool post, bool get) {
        if (!post && !get)
                return web_respond_text(wsi, w, c, 405, "Use GET to download, POST to upload.\n");
        if (post && web_cross_origin(wsi, w)) {
                web_log_refusal(wsi, "an upload from another origin", c->arg);
                return web_respond_text(wsi, w, c, 403, "Cross-site request refused.\n");
        }
        WebSession *s = web_request_session(wsi, w);
        if (!s)
                return web_respond(wsi, w, c, 401, "application/json", "{\"login\":true}", 14, NULL, NULL);
        if (strcmp(s->seat, c->arg) != 0) {
                web_log_refusal(wsi, "a session cookie of another seat", c->arg);
                return web_respond_text(wsi, w, c, 403, "This session is not for this seat.\n");
        }
        if (w->conf->max_file_bytes == 0)
                return web_respond_text(wsi, w, c, 403, "File transfers are off (max_file_bytes = 0).\n");
        bool ok;
        int r = read_query(wsi, w, c, &ok);
        if (!ok)
                return r;
        if (post)
                return begin_upload(wsi, w, c);
        return web_submit(wsi, w, c, file_job(wsi, c, s, JOB_FILE_GET));
}

int files_body(Conn *c, const void *in, size_t len) {
        return web_body_append(c->fbody, c->fbody_want, &c->fbody_len, in, len);
}

int files_body_done(struct lws *wsi, Web *w, Conn *c) {
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
        if (!c->fbody || c->fbody_len != c->fbody_want) {
                files_closed(c);
                return web_respond_text(wsi, w, c, 400, "The body is shorter than its Content-Length.\n");
        }
        /* The session may have ended while the body came. */
        WebSession *s = web_request_session(wsi, w);
        if (!s || strcmp(s->seat, c->arg) != 0) {
                files_closed(c);
                return web_respond(wsi, w, c, 401, "application/json", "{\"login\":true}", 14, NULL, NULL);
        }
        Job *job = file_job(wsi, c, s, JOB_FILE_PUT);
        if (job) {
                job->data = c->fbody;
                job->len = c->fbody_len;
                c->fbody = NULL;
        }
        return web_submit(wsi, w, c, job);
}

int files_finish(struct lws *wsi, Web *w, Conn *c, Job *job) {
        WebSession *s;
        int r = web_job_session(w, job, &s);
        if (r == -ENOENT)
                return web_respond(wsi, w, c, 401, "application/json", "{\"login\":true}", 14, NULL, NULL);
        if (r == -EACCES)
                return web_respond_error_json(wsi, w, c, 401, "This seat was reset or released: your session has ended.");
        if (job->r == -EREMOTEIO)
                /* The guest's or seatd's reason (no such file, a limit, a busy seat). */
                return web_respond_error_json(wsi, w, c, !strcmp(job->code, "invalid") ? 400 : 422,
                                     job->message[0] ? job->message : job->code);
        if (job->r < 0)
                return web_respond_error_json(wsi, w, c, 503, "seatd cannot be reached now: try again.");
        json_object *v;
        int64_t size = json_object_object_get_ex(job->rec, "size", &v) ? json_object_get_int64(v) : -1;
        if (job->kind == JOB_FILE_GET && size > w->conf->max_file_bytes)
                return web_respond_error_json(wsi, w, c, 413, "The file is larger than seat-web's max_file_bytes.");
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return -1;
        json_object_object_add(o, "size", json_object_new_int64(size));
        if (job->kind == JOB_FILE_GET) {
                /* The guest's bytes, passed on as seatd checked them (base64, ≤ 512 KiB). */
                const char *data = json_object_object_get_ex(job->rec, "data", &v) ? json_object_get_string(v) : NULL;
                json_object_object_add(o, "data", json_object_new_string(data ? data : ""));
                json_object_object_add(o, "eof", json_object_new_boolean(
                                                          json_object_object_get_ex(job->rec, "eof", &v) && json_object_get_boolean(v)));
        }
        return web_respond_json(wsi, w, c, 200, o, NULL);
}

void files_closed(Conn *c) {
        free(c->fbody);
        c->fbody = NULL;
        c->fbody_len = c->fbody_want = 0;
}
