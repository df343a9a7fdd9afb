/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image_pull(): a signed bundle over HTTPS into the verified store (see pull.h). */
#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "signing/hash.h"
#include "signing/minisign.h"
#include "pull.h"

#define REHASH_BUF (1024u * 1024u)
#define STAGING_ENTRIES_MAX 4096
#define PULL_DIR_PREFIX "pull-"

DEFINE_TRIVIAL_CLEANUP_FUNC(CURL *, curl_easy_cleanup)
DEFINE_TRIVIAL_CLEANUP_FUNC(CURLU *, curl_url_cleanup)
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

static void curl_strp(char **p) {
        curl_free(*p);
        *p = NULL;
}
#define _cleanup_curl_str_ _cleanup_(curl_strp)

typedef struct Pull {
        ImageStore *store;
        const StoreCallbacks *cb;
        const char *ca_file;
        const char *staging;
        CURLU *url;         /* the manifest's URL, as given */
        CURLU *display_url; /* the same without credentials, query and fragment */
        char *display;
        bool https;
        long low_speed_limit, low_speed_time, connect_timeout;
        uint64_t max_file_bytes;
} Pull;

static void pull_done(Pull *p) {
        curl_url_cleanup(TAKE_PTR(p->url));
        curl_url_cleanup(TAKE_PTR(p->display_url));
        free(TAKE_PTR(p->display));
}

/* ---- once per process ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;

static void curl_init_once(void) {
        curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int pull_global_init(SeatError **ret_error) {
        int r = signing_init();
        if (r < 0)
                return seat_error_set(ret_error, -r, "initialise libsodium: %s", strerror(-r));
        pthread_once(&curl_once, curl_init_once);
        if (curl_init_result != CURLE_OK)
                return seat_error_set(ret_error, EIO, "initialise libcurl: %s", curl_easy_strerror(curl_init_result));
        return 0;
}

/* ---- URLs ---- */

/* For a URL that does not even parse: no query, no user info, printable, short. */
static char *naive_redact(const char *url) {
        char *s = strndup(url, 200);
        if (!s)
                return NULL;
        s[strcspn(s, "?#")] = '\0';
        char *scheme_end = strstr(s, "://");
        char *host = scheme_end ? scheme_end + 3 : s;
        char *at = strchr(host, '@'), *slash = strchr(host, '/');
        if (at && (!slash || at < slash))
                memmove(host, at + 1, strlen(at + 1) + 1);
        for (char *c = s; *c; c++)
                if ((unsigned char) *c <= 0x20 || (unsigned char) *c >= 0x7f)
                        *c = '?';
        return s;
}

static bool url_chars_valid(const char *url) {
        for (const unsigned char *c = (const unsigned char *) url; *c; c++)
                if (*c <= 0x20 || *c >= 0x7f)
                        return false;
        return true;
}

static int url_make_display(CURLU *u, CURLU **ret_display_url, char **ret_display) {
        _cleanup_(curl_url_cleanupp) CURLU *d = curl_url_dup(u);
        _cleanup_curl_str_ char *s = NULL;
        if (!d || curl_url_set(d, CURLUPART_USER, NULL, 0) != CURLUE_OK ||
            curl_url_set(d, CURLUPART_PASSWORD, NULL, 0) != CURLUE_OK ||
            curl_url_set(d, CURLUPART_OPTIONS, NULL, 0) != CURLUE_OK ||
            curl_url_set(d, CURLUPART_QUERY, NULL, 0) != CURLUE_OK ||
            curl_url_set(d, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK || curl_url_get(d, CURLUPART_URL, &s, 0) != CURLUE_OK)
                return -ENOMEM;
        char *copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        *ret_display = copy;
        if (ret_display_url)
                *ret_display_url = TAKE_PTR(d);
        return 0;
}

/* Parses and checks url; the parsed URL and its display form on success. */
static int url_parse(const char *url, bool allow_plain_http, CURLU **ret_url, CURLU **ret_display_url,
                     char **ret_display, bool *ret_https, SeatError **ret_error) {
        _cleanup_(curl_url_cleanupp) CURLU *u = curl_url(), *du = NULL;
        _cleanup_curl_str_ char *scheme = NULL, *host = NULL, *path = NULL;
        _cleanup_free_ char *display = NULL;
        bool https;

        if (!u)
                return -ENOMEM;
        if (strlen(url) > PULL_URL_MAX || !url_chars_valid(url) ||
            curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
                _cleanup_free_ char *shown = naive_redact(url);
                return seat_error_set(ret_error, EINVAL,
                                      "'%s' is not a valid URL (want https://HOST/PATH/manifest.json, at most %u characters, no spaces)",
                                      shown ? shown : "?", PULL_URL_MAX);
        }
        if (url_make_display(u, ret_display_url ? &du : NULL, &display) < 0)
                return -ENOMEM;
        if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK)
                return seat_error_set(ret_error, EINVAL, "'%s' has no scheme: use an https:// URL", display);
        https = !strcmp(scheme, "https");
        if (!https && strcmp(scheme, "http") != 0)
                return seat_error_set(ret_error, EINVAL,
                                      "'%s': only https:// URLs are pulled (http:// only when allow_plain_http is set in seatd.conf); not %s://",
                                      display, scheme);
        if (!https && !allow_plain_http)
                return seat_error_set(ret_error, EPERM,
                                      "'%s' is plain HTTP, which seatd.conf does not allow: use an https:// URL, or set 'allow_plain_http = true' in seatd.conf for a trusted local mirror (the signature is checked either way)",
                                      display);
        if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0])
                return seat_error_set(ret_error, EINVAL, "'%s' names no host", display);
        if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK || !path[0] || path[strlen(path) - 1] == '/')
                return seat_error_set(ret_error, EINVAL,
                                      "'%s' does not name a file: give the URL of the manifest (e.g. .../manifest.json)", display);
        if (ret_url)
                *ret_url = TAKE_PTR(u);
        if (ret_display_url)
                *ret_display_url = TAKE_PTR(du);
        if (ret_display)
                *ret_display = TAKE_PTR(display);
        if (ret_https)
                *ret_https = https;
        return 0;
}

int image_pull_check_url(const char *url, bool allow_plain_http, char **ret_display, SeatError **ret_error) {
        if (!url)
                return -EINVAL;
        return url_parse(url, allow_plain_http, NULL, NULL, ret_display, NULL, ret_error);
}

/* The URL of a file beside the manifest (sibling) or of the manifest plus a suffix. */
static int url_derive(CURLU *u, const char *name, bool sibling, char **ret) {
        _cleanup_(curl_url_cleanupp) CURLU *d = curl_url_dup(u);
        _cleanup_curl_str_ char *path = NULL, *s = NULL;
        _cleanup_free_ char *new_path = NULL;

        if (!d || curl_url_get(d, CURLUPART_PATH, &path, 0) != CURLUE_OK)
                return -ENOMEM;
        if (sibling) {
                const char *slash = strrchr(path, '/');
                int dir_len = slash ? (int) (slash - path + 1) : 0;
                if (asprintf(&new_path, "%.*s%s", dir_len, path, name) < 0)
                        return -ENOMEM;
        } else if (asprintf(&new_path, "%s%s", path, name) < 0)
                return -ENOMEM;
        if (curl_url_set(d, CURLUPART_PATH, new_path, 0) != CURLUE_OK ||
            curl_url_set(d, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK || curl_url_get(d, CURLUPART_URL, &s, 0) != CURLUE_OK)
                return -ENOMEM;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* ---- one transfer ---- */

typedef struct Transfer {
        Pull *pull;
        CURL *curl;
        const char *display; /* this transfer's URL, for messages */
        char errbuf[CURL_ERROR_SIZE];
        SeatError *error;    /* why a callback stopped the transfer */
        bool fatal;          /* ... because of the bytes, not the connection */
        bool interrupted;    /* the failure leaves a resumable verified prefix */
        bool started;
        int64_t range_start; /* Content-Range of the last response; -1: none */
        uint64_t range_total;
        /* into memory */
        char *buf;
        size_t len, alloc, cap;
        /* into a file, hashing each chunk as it completes */
        const ImageFile *f;
        int fd;
        uint64_t offset; /* bytes of the file written, all hashed */
        size_t chunk, chunk_fill;
        crypto_generichash_state state;
        char what[IMAGE_FILE_NAME_MAX + 32];
} Transfer;

static size_t chunk_len(const ImageFile *f, size_t i) {
        return (size_t) MIN((uint64_t) f->chunk_size, f->size - (uint64_t) i * f->chunk_size);
}

static size_t header_cb(char *data, size_t size, size_t nmemb, void *userdata) {
        static const char key[] = "content-range:";
        Transfer *t = userdata;
        size_t n = size * nmemb;

        if (n >= 5 && !strncmp(data, "HTTP/", 5)) {
                /* A new response (after a redirect): forget the last one's range. */
                t->range_start = -1;
                t->range_total = 0;
        } else if (n > sizeof(key) - 1 && !strncasecmp(data, key, sizeof(key) - 1)) {
                char line[128];
                unsigned long long first = 0, last = 0, total = 0;
                size_t k = MIN(n - (sizeof(key) - 1), sizeof(line) - 1);
                memcpy(line, data + sizeof(key) - 1, k);
                line[k] = '\0';
                int got = sscanf(line, " bytes %llu-%llu/%llu", &first, &last, &total);
                if (got >= 2) {
                        t->range_start = first <= INT64_MAX ? (int64_t) first : -1;
                        t->range_total = got == 3 ? total : 0;
                }
        }
        return n;
}

static int xferinfo_cb(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        Transfer *t = userdata;
        const StoreCallbacks *cb = t->pull->cb;
        return cb && cb->cancelled && cb->cancelled(cb->userdata) ? 1 : 0;
}

static size_t memory_write_cb(char *data, size_t size, size_t nmemb, void *userdata) {
        Transfer *t = userdata;
        size_t n = size * nmemb;

        if (n > t->cap - t->len) {
                t->fatal = true;
                (void) seat_error_set(&t->error, EFBIG,
                                      "'%s' is larger than %zu bytes: stopped there (is this the URL of an image manifest?)",
                                      t->display, t->cap);
                return 0;
        }
        if (t->len + n + 1 > t->alloc) {
                size_t want = MIN(MAX(t->alloc * 2, t->len + n + 1), t->cap + 1);
                char *b = realloc(t->buf, want);
                if (!b) {
                        t->fatal = true;
                        (void) seat_error_set(&t->error, ENOMEM, "download of '%s': out of memory", t->display);
                        return 0;
                }
                t->buf = b;
                t->alloc = want;
        }
        memcpy(t->buf + t->len, data, n);
        t->len += n;
        t->buf[t->len] = '\0';
        return n;
}

/* The first body bytes of a file: is this the range we asked for? */
static int file_transfer_begin(Transfer *t) {
        long code = 0;
        (void) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        t->fatal = true;
        if (code == 206) {
                if (t->range_start != (int64_t) t->offset || (t->range_total && t->range_total != t->f->size))
                        return seat_error_set(&t->error, EPROTO,
                                              "'%s' answered the request for bytes %" PRIu64 "- with another range: the server is broken (ask its operator)",
                                              t->display, t->offset);
        } else if (code != 200)
                return seat_error_set(&t->error, EPROTO, "'%s' answered with HTTP status %ld, not 200 or 206", t->display,
                                      code);
        else if (t->offset > 0) {
                /* The server ignored the Range request and sends the whole file: start over. */
                if (ftruncate(t->fd, 0) < 0)
                        return seat_error_set(&t->error, errno, "truncate the download of '%s': %m", t->f->name);
                t->offset = 0;
                t->chunk = 0;
                t->chunk_fill = 0;
                crypto_generichash_init(&t->state, NULL, 0, SEAT_HASH_BYTES);
        }
        t->fatal = false;
        t->started = true;
        return 0;
}

/* Hashes data into the current chunk; compares each chunk as soon as it is complete. */
static int chunks_feed(Transfer *t, const uint8_t *data, size_t n) {
        const ImageFile *f = t->f;
        while (n > 0) {
                size_t want = chunk_len(f, t->chunk) - t->chunk_fill, k = MIN(n, want);
                crypto_generichash_update(&t->state, data, k);
                t->chunk_fill += k;
                data += k;
                n -= k;
                if (t->chunk_fill < chunk_len(f, t->chunk))
                        continue;
                uint8_t d[SEAT_HASH_BYTES];
                crypto_generichash_final(&t->state, d, SEAT_HASH_BYTES);
                if (memcmp(d, f->chunks[t->chunk], SEAT_HASH_BYTES) != 0) {
                        t->fatal = true;
                        return seat_error_set(&t->error, EBADMSG,
                                              "chunk %zu of '%s' (bytes %" PRIu64 "..%" PRIu64 ") from '%s' does not match its signed digest: download stopped and discarded (the server sent corrupted or altered data)",
                                              t->chunk, f->name, (uint64_t) t->chunk * f->chunk_size,
                                              (uint64_t) t->chunk * f->chunk_size + chunk_len(f, t->chunk) - 1, t->display);
                }
                t->chunk++;
                t->chunk_fill = 0;
                crypto_generichash_init(&t->state, NULL, 0, SEAT_HASH_BYTES);
        }
        return 0;
}

static int pwrite_all(int fd, const char *data, size_t n, uint64_t offset) {
        while (n > 0) {
                ssize_t k = pwrite(fd, data, n, (off_t) offset);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? negative_errno() : -EIO;
                data += k;
                n -= (size_t) k;
                offset += (uint64_t) k;
        }
        return 0;
}

static size_t file_write_cb(char *data, size_t size, size_t nmemb, void *userdata) {
        Transfer *t = userdata;
        const StoreCallbacks *cb = t->pull->cb;
        size_t n = size * nmemb;

        if (!t->started && file_transfer_begin(t) < 0)
                return 0;
        if (n > t->f->size - t->offset) {
                /* The signed size is the hard cap: not one byte more reaches the disk. */
                t->fatal = true;
                (void) seat_error_set(&t->error, EFBIG,
                                      "'%s' sent more than the %" PRIu64 " bytes the signed manifest declares for '%s': stopped at the cap and discarded (the server is broken or hostile)",
                                      t->display, t->f->size, t->f->name);
                return 0;
        }
        if (chunks_feed(t, (const uint8_t *) data, n) < 0)
                return 0;
        int r = pwrite_all(t->fd, data, n, t->offset);
        if (r < 0) {
                t->fatal = true;
                (void) seat_error_set(&t->error, -r, "write the download of '%s' to the staging directory '%s': %s",
                                      t->f->name, t->pull->staging, strerror(-r));
                return 0;
        }
        t->offset += n;
        if (cb && cb->progress)
                cb->progress(cb->userdata, t->what, t->offset, t->f->size);
        return n;
}

static int transfer_setup(Transfer *t, const char *url, uint64_t max_bytes, curl_write_callback write_cb) {
        Pull *p = t->pull;
        CURL *c = t->curl;
        CURLcode rc = CURLE_OK;
        /* From https:// nothing but https:// is followed: no downgrade by redirect. */
        const char *protocols = p->https ? "https" : "http,https";

#define SET(opt, val)                                          \
        do {                                                   \
                if (rc == CURLE_OK)                            \
                        rc = curl_easy_setopt(c, opt, val);    \
        } while (0)
        SET(CURLOPT_URL, url);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_PROTOCOLS_STR, protocols);
        SET(CURLOPT_REDIR_PROTOCOLS_STR, protocols);
        SET(CURLOPT_FOLLOWLOCATION, 1L);
        SET(CURLOPT_MAXREDIRS, PULL_MAX_REDIRECTS);
        SET(CURLOPT_FAILONERROR, 1L);
        SET(CURLOPT_SSL_VERIFYPEER, 1L);
        SET(CURLOPT_SSL_VERIFYHOST, 2L);
        SET(CURLOPT_SSLVERSION, (long) CURL_SSLVERSION_TLSv1_2);
        if (p->ca_file)
                SET(CURLOPT_CAINFO, p->ca_file);
        SET(CURLOPT_CONNECTTIMEOUT, p->connect_timeout);
        SET(CURLOPT_LOW_SPEED_LIMIT, p->low_speed_limit);
        SET(CURLOPT_LOW_SPEED_TIME, p->low_speed_time);
        SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) MIN(max_bytes, (uint64_t) INT64_MAX));
        SET(CURLOPT_USERAGENT, "seatd/" SEATD_VERSION);
        SET(CURLOPT_ERRORBUFFER, t->errbuf);
        SET(CURLOPT_WRITEFUNCTION, write_cb);
        SET(CURLOPT_WRITEDATA, t);
        SET(CURLOPT_HEADERFUNCTION, header_cb);
        SET(CURLOPT_HEADERDATA, t);
        SET(CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
        SET(CURLOPT_XFERINFODATA, t);
        SET(CURLOPT_NOPROGRESS, 0L);
#undef SET
        return rc == CURLE_OK ? 0 : rc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
}

/* Maps the outcome of a transfer to an error a person can act on; sets t->interrupted
 * when the failure leaves a verified prefix worth resuming. */
static int transfer_result(Transfer *t, CURLcode rc, SeatError **ret_error) {
        Pull *p = t->pull;
        const char *detail = t->errbuf[0] ? t->errbuf : curl_easy_strerror(rc);
        long code = 0;

        (void) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        t->interrupted = false;
        if (t->error) {
                /* A callback stopped it and said why. */
                SeatError *e = TAKE_PTR(t->error);
                int r = -e->code;
                t->interrupted = !t->fatal;
                if (ret_error && !*ret_error)
                        *ret_error = e;
                else
                        seat_error_free(e);
                return r;
        }
        switch (rc) {
        case CURLE_OK:
                if (code != 200 && code != 206)
                        return seat_error_set(ret_error, EPROTO, "'%s' answered with HTTP status %ld, not 200", t->display,
                                              code);
                return 0;
        case CURLE_ABORTED_BY_CALLBACK:
                t->interrupted = true;
                return seat_error_set(ret_error, ECANCELED, "pull of '%s' cancelled (pull again to resume)", t->display);
        case CURLE_OPERATION_TIMEDOUT:
                t->interrupted = true;
                return seat_error_set(ret_error, ETIMEDOUT,
                                      "download of '%s' stalled or timed out: %s (pull again to resume from the verified part; check the server if it keeps happening)",
                                      t->display, detail);
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
                t->interrupted = true;
                return seat_error_set(ret_error, EIO, "the transfer of '%s' broke off: %s (pull again to resume from the verified part)",
                                      t->display, detail);
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_CONNECT:
                t->interrupted = true;
                return seat_error_set(ret_error, EHOSTUNREACH, "cannot reach '%s': %s (check the URL, the network and that the server runs)",
                                      t->display, detail);
        case CURLE_PEER_FAILED_VERIFICATION:
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "the TLS certificate of '%s' was not accepted: %s (set ca_file in seatd.conf to the CA that signed the server's certificate; verification is never turned off)",
                                      t->display, detail);
        case CURLE_SSL_CACERT_BADFILE:
                return seat_error_set(ret_error, EKEYREJECTED, "cannot use the CA bundle '%s' for '%s': %s (set ca_file in seatd.conf to a readable PEM file)",
                                      p->ca_file ? p->ca_file : "(system)", t->display, detail);
        case CURLE_SSL_CONNECT_ERROR:
                return seat_error_set(ret_error, EPROTO, "TLS handshake with '%s' failed: %s (is it an HTTPS server?)", t->display,
                                      detail);
        case CURLE_UNSUPPORTED_PROTOCOL:
                return seat_error_set(ret_error, EPROTONOSUPPORT,
                                      "'%s' redirected to a URL seatd does not follow: %s (from https:// only https:// is followed; fix the URL or the server)",
                                      t->display, detail);
        case CURLE_TOO_MANY_REDIRECTS:
                return seat_error_set(ret_error, ELOOP, "'%s' redirected more than %ld times: fix the URL or the server",
                                      t->display, PULL_MAX_REDIRECTS);
        case CURLE_FILESIZE_EXCEEDED:
                if (t->f)
                        return seat_error_set(ret_error, EFBIG,
                                              "'%s' announced more than the %" PRIu64 " bytes the signed manifest declares for '%s': refused before the body (the server is broken or hostile)",
                                              t->display, t->f->size, t->f->name);
                return seat_error_set(ret_error, EFBIG, "'%s' announced more than %zu bytes: refused (is this the URL of an image manifest?)",
                                      t->display, t->cap);
        case CURLE_HTTP_RETURNED_ERROR:
                if (code >= 500 || code == 408 || code == 429) {
                        t->interrupted = true;
                        return seat_error_set(ret_error, EIO, "'%s': HTTP %ld from the server (pull again later to resume)",
                                              t->display, code);
                }
                return seat_error_set(ret_error, code == 404 || code == 410 ? ENOENT : EIO,
                                      "'%s': HTTP %ld (check the URL: the manifest, its .minisig and its files must be side by side)",
                                      t->display, code);
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return seat_error_set(ret_error, EIO, "download of '%s' failed: %s", t->display, detail);
        }
}

/* ---- the manifest and its signature, into memory ---- */

static int fetch_to_memory(Pull *p, const char *suffix, size_t cap, char **ret, size_t *ret_len, SeatError **ret_error) {
        _cleanup_free_ char *url = NULL, *display = NULL;
        _cleanup_(curl_easy_cleanupp) CURL *c = curl_easy_init();
        int r;

        if (!c || url_derive(p->url, suffix, false, &url) < 0 || url_derive(p->display_url, suffix, false, &display) < 0)
                return -ENOMEM;
        Transfer t = { .pull = p, .curl = c, .display = display, .cap = cap, .range_start = -1, .fd = -EBADF };
        r = transfer_setup(&t, url, cap, memory_write_cb);
        if (r >= 0)
                r = transfer_result(&t, curl_easy_perform(c), ret_error);
        if (r >= 0 && !t.buf)
                r = seat_error_set(ret_error, EBADMSG, "'%s' is empty", display);
        if (r < 0) {
                free(t.buf);
                return r;
        }
        *ret = t.buf;
        *ret_len = t.len;
        return 0;
}

/* ---- files: resume, download, verify ---- */

static int part_path(Pull *p, const ImageFile *f, char **ret) {
        char hex[SEAT_HASH_HEX_LEN + 1];
        if (digest_to_hex(f->identity, SEAT_HASH_BYTES, hex, sizeof(hex)) < 0 ||
            asprintf(ret, "%s/%s.part", p->staging, hex) < 0)
                return -ENOMEM;
        return 0;
}

static bool pull_cancelled(Pull *p) {
        return p->cb && p->cb->cancelled && p->cb->cancelled(p->cb->userdata);
}

static int hash_range(int fd, uint64_t offset, size_t len, uint8_t *buf, uint8_t out[SEAT_HASH_BYTES]) {
        crypto_generichash_state st;
        crypto_generichash_init(&st, NULL, 0, SEAT_HASH_BYTES);
        while (len > 0) {
                ssize_t n = pread(fd, buf, MIN(len, (size_t) REHASH_BUF), (off_t) offset);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? negative_errno() : -EIO;
                crypto_generichash_update(&st, buf, (size_t) n);
                offset += (uint64_t) n;
                len -= (size_t) n;
        }
        crypto_generichash_final(&st, out, SEAT_HASH_BYTES);
        return 0;
}

/* The complete chunks at the start of a .part file that match their signed digests;
 * the rest (a torn chunk, or anything after a chunk that does not match) is cut off. */
static int part_verified_prefix(Pull *p, int fd, const ImageFile *f, uint64_t *ret, SeatError **ret_error) {
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t ok = 0;
        struct stat st;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return seat_error_set(ret_error, EINVAL, "the partial download of '%s' in '%s' is not a regular file: remove it",
                                      f->name, p->staging);
        for (size_t i = 0; i < f->n_chunks; i++) {
                size_t len = chunk_len(f, i);
                uint8_t d[SEAT_HASH_BYTES];
                if (ok + len > (uint64_t) st.st_size)
                        break;
                if (pull_cancelled(p))
                        return seat_error_set(ret_error, ECANCELED, "pull of '%s' cancelled (pull again to resume)", p->display);
                if (!buf && !(buf = malloc(REHASH_BUF)))
                        return -ENOMEM;
                int r = hash_range(fd, ok, len, buf, d);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "read the partial download of '%s': %s", f->name, strerror(-r));
                if (memcmp(d, f->chunks[i], SEAT_HASH_BYTES) != 0)
                        break;
                ok += len;
        }
        if ((uint64_t) st.st_size != ok && ftruncate(fd, (off_t) ok) < 0)
                return seat_error_set(ret_error, errno, "truncate the partial download of '%s': %m", f->name);
        *ret = ok;
        return 0;
}

static int fetch_file(Pull *p, const ImageFile *f, int fd, uint64_t offset, bool *ret_interrupted, SeatError **ret_error) {
        _cleanup_free_ char *url = NULL, *display = NULL;
        _cleanup_(curl_easy_cleanupp) CURL *c = curl_easy_init();
        char range[32];
        int r;

        *ret_interrupted = false;
        if (!c || url_derive(p->url, f->name, true, &url) < 0 || url_derive(p->display_url, f->name, true, &display) < 0)
                return -ENOMEM;
        Transfer t = { .pull = p, .curl = c, .display = display, .f = f, .fd = fd, .offset = offset,
                       .chunk = (size_t) (offset / f->chunk_size), .range_start = -1 };
        crypto_generichash_init(&t.state, NULL, 0, SEAT_HASH_BYTES);
        snprintf(t.what, sizeof(t.what), "download '%s'", f->name);

        r = transfer_setup(&t, url, f->size, file_write_cb);
        if (r >= 0 && offset > 0) {
                snprintf(range, sizeof(range), "%" PRIu64 "-", offset);
                if (curl_easy_setopt(c, CURLOPT_RANGE, range) != CURLE_OK)
                        r = -ENOMEM;
        }
        if (r < 0)
                return r;
        r = transfer_result(&t, curl_easy_perform(c), ret_error);
        *ret_interrupted = t.interrupted;
        if (r < 0)
                return r;
        if (t.offset != f->size) {
                *ret_interrupted = true;
                return seat_error_set(ret_error, EIO, "'%s' ended after %" PRIu64 " of %" PRIu64 " bytes (pull again to resume from the verified part)",
                                      display, t.offset, f->size);
        }
        return 0;
}

static bool in_store(Pull *p, const ImageFile *f) {
        _cleanup_free_ char *blob = image_store_blob_path(p->store, f);
        return blob && access(blob, F_OK) == 0;
}

/* One file into STAGING/IDENTITY.part, complete and verified chunk by chunk. On failure
 * ret_keep says whether the staged prefixes stay (interrupted, cancelled, busy). */
static int pull_one_file(Pull *p, const ImageFile *f, bool *ret_keep, SeatError **ret_error) {
        _cleanup_free_ char *path = NULL;
        uint64_t have = 0;
        bool interrupted = false;
        int r;

        *ret_keep = true;
        if (in_store(p, f))
                return 0; /* the same verified bytes are stored already */
        if (part_path(p, f, &path) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                return seat_error_set(ret_error, errno, "create '%s': %m (seatd must be able to write its state directory)",
                                      path);
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return seat_error_set(ret_error, EBUSY, "another pull is downloading '%s' for '%s' right now: wait for it to end",
                                      f->name, p->display);
        r = part_verified_prefix(p, fd, f, &have, ret_error);
        if (r >= 0 && have < f->size)
                r = fetch_file(p, f, fd, have, &interrupted, ret_error);
        /* Kept for a resume: whole chunks only, each verified as it came (a chunk that did
         * not match is fatal above); the unfinished one's bytes were never checked, and
         * docs/image-format.md promises none are kept. */
        struct stat st;
        if (r < 0 && interrupted && fstat(fd, &st) == 0)
                (void) ftruncate(fd, (off_t) (((uint64_t) st.st_size / f->chunk_size) * f->chunk_size));
        if (r < 0 && !interrupted && r != -ECANCELED) {
                (void) unlink(path); /* still locked by us */
                *ret_keep = false;
        }
        return r;
}

/* Removes the .part file of f unless another pull holds it. */
static void part_remove(Pull *p, const ImageFile *f) {
        _cleanup_free_ char *path = NULL;
        if (part_path(p, f, &path) < 0)
                return;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
                (void) unlink(path);
}

static void parts_remove(Pull *p, const ImageManifest *m) {
        for (size_t i = 0; i < m->n_files; i++)
                part_remove(p, &m->files[i]);
}

/* ---- handing the staged files to the store ---- */

static int pull_dir_remove(const char *dir) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : negative_errno();
        struct dirent *de;
        for (size_t n = 0; n < STAGING_ENTRIES_MAX && (de = readdir(d)); n++)
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        (void) unlinkat(dirfd(d), de->d_name, 0);
        return rmdir(dir) < 0 ? negative_errno() : 0;
}

int image_pull_clean_staging(const char *staging_dir) {
        _cleanup_(closedirp) DIR *d = opendir(staging_dir);
        if (!d)
                return errno == ENOENT ? 0 : negative_errno();
        struct dirent *de;
        int r = 0;
        for (size_t n = 0; n < STAGING_ENTRIES_MAX && (de = readdir(d)); n++) {
                _cleanup_free_ char *path = NULL;
                if (strncmp(de->d_name, PULL_DIR_PREFIX, strlen(PULL_DIR_PREFIX)) != 0)
                        continue;
                if (asprintf(&path, "%s/%s", staging_dir, de->d_name) < 0)
                        return -ENOMEM;
                int k = pull_dir_remove(path);
                if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}

static void import_progress_cb(void *userdata, const char *what, uint64_t done, uint64_t total) {
        Pull *p = userdata;
        char label[IMAGE_FILE_NAME_MAX + 32];
        snprintf(label, sizeof(label), "verify and store '%s'", what);
        p->cb->progress(p->cb->userdata, label, done, total);
}

static bool import_cancelled_cb(void *userdata) {
        return pull_cancelled(userdata);
}

/* The complete .part files, linked by their names into a fresh STAGING/pull-XXXXXX,
 * imported from there; that directory is gone afterwards, whatever happened. */
static int pull_import(Pull *p, const ImageManifest *m, const char *manifest, size_t len, const char *sig, size_t sig_len,
                       ImageManifest **ret, SeatError **ret_error) {
        _cleanup_free_ char *dir = NULL;
        StoreCallbacks cb = {
                .progress = p->cb && p->cb->progress ? import_progress_cb : NULL,
                .cancelled = import_cancelled_cb,
                .userdata = p,
        };
        int r = 0;

        if (asprintf(&dir, "%s/" PULL_DIR_PREFIX "XXXXXX", p->staging) < 0)
                return -ENOMEM;
        if (!mkdtemp(dir))
                return seat_error_set(ret_error, errno, "create a directory in '%s': %m", p->staging);
        for (size_t i = 0; i < m->n_files && r >= 0; i++) {
                const ImageFile *f = &m->files[i];
                _cleanup_free_ char *part = NULL, *name = NULL;
                if (in_store(p, f))
                        continue;
                if (part_path(p, f, &part) < 0 || asprintf(&name, "%s/%s", dir, f->name) < 0)
                        r = -ENOMEM;
                else if (link(part, name) < 0)
                        r = seat_error_set(ret_error, errno, "stage '%s' for import: %m (pull again)", f->name);
        }
        if (r >= 0)
                r = image_store_import_from(p->store, manifest, len, sig, sig_len, dir, &cb, ret, ret_error);
        (void) pull_dir_remove(dir);
        return r;
}

/* ---- the whole pull, in order ---- */

/* Prefixes the URL to an error that does not name it yet; keeps r. */
static int wrap_url(Pull *p, int r, SeatError **ret_error) {
        if (ret_error && *ret_error && !strstr((*ret_error)->message, p->display))
                (void) seat_error_wrap(ret_error, "pull '%s'", p->display);
        return r;
}

static int pull_init(Pull *p, const char *url, const PullOptions *opts, SeatError **ret_error) {
        struct stat st;
        int r = url_parse(url, opts->allow_plain_http, &p->url, &p->display_url, &p->display, &p->https, ret_error);
        if (r < 0)
                return r;
        p->ca_file = opts->ca_file;
        p->staging = opts->staging_dir;
        p->max_file_bytes = opts->max_file_bytes;
        p->low_speed_limit = opts->low_speed_limit > 0 ? opts->low_speed_limit : PULL_LOW_SPEED_LIMIT_DEFAULT;
        p->low_speed_time = opts->low_speed_time > 0 ? opts->low_speed_time : PULL_LOW_SPEED_TIME_DEFAULT;
        p->connect_timeout = opts->connect_timeout > 0 ? opts->connect_timeout : PULL_CONNECT_TIMEOUT_DEFAULT;
        if (mkdir(p->staging, 0700) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "create the staging directory '%s': %m", p->staging);
        if (lstat(p->staging, &st) < 0 || !S_ISDIR(st.st_mode))
                return seat_error_set(ret_error, ENOTDIR, "the staging directory '%s' is not a directory: remove it", p->staging);
        return 0;
}

static int pull_files(Pull *p, const ImageManifest *m, SeatError **ret_error) {
        for (size_t i = 0; i < m->n_files; i++) {
                const ImageFile *f = &m->files[i];
                if (p->max_file_bytes && f->size > p->max_file_bytes)
                        return seat_error_set(ret_error, EFBIG, "'%s': file '%s' declares %" PRIu64 " bytes, more than max_image_bytes (%" PRIu64 ")",
                                              p->display, f->name, f->size, p->max_file_bytes);
        }
        for (size_t i = 0; i < m->n_files; i++) {
                bool keep = true;
                int r = pull_one_file(p, &m->files[i], &keep, ret_error);
                if (r < 0) {
                        /* Only a resumable, verified prefix is kept, and only after an
                         * interrupted transfer. */
                        if (!keep)
                                parts_remove(p, m);
                        return r;
                }
        }
        return 0;
}

int image_pull(ImageStore *s, const char *url, const PullOptions *opts, const StoreCallbacks *cb, ImageManifest **ret,
               SeatError **ret_error) {
        _cleanup_(pull_done) Pull p = { .store = s, .cb = cb };
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL, *stored = NULL;
        _cleanup_free_ char *manifest = NULL, *sig = NULL;
        size_t len = 0, sig_len = 0;
        int r;

        if (!s || !url || !opts || !opts->staging_dir)
                return -EINVAL;
        r = pull_global_init(ret_error);
        if (r < 0)
                return r;
        r = pull_init(&p, url, opts, ret_error);
        if (r < 0)
                return p.display ? wrap_url(&p, r, ret_error) : r;

        /* 1. The manifest and its signature, capped, into memory. */
        r = fetch_to_memory(&p, "", IMAGE_MANIFEST_MAX, &manifest, &len, ret_error);
        if (r >= 0)
                r = fetch_to_memory(&p, ".minisig", MIN(PULL_SIG_MAX, SEAT_SIG_FILE_MAX), &sig, &sig_len, ret_error);
        if (r < 0)
                return r;

        /* 2. Signature, trusted key, expiry, rollback: before any file byte is fetched. */
        r = image_store_check_manifest(s, manifest, len, sig, sig_len, &m, ret_error);
        if (r < 0)
                return wrap_url(&p, r, ret_error);

        /* 3. The files, each capped at its signed size, each chunk checked on arrival. */
        r = pull_files(&p, m, ret_error);
        if (r < 0)
                return wrap_url(&p, r, ret_error);

        /* 4. The store copies and checks them once more, then the staged copies go. */
        r = pull_import(&p, m, manifest, len, sig, sig_len, &stored, ret_error);
        if (r != -ECANCELED)
                parts_remove(&p, m);
        if (r < 0)
                return wrap_url(&p, r, ret_error);
        if (ret)
                *ret = TAKE_PTR(stored);
        return 0;
}
