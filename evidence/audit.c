/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "audit.h"
#include "common/fileio.h"
#include "signing/hash.h"
#include "common/jsonframe.h"
#include "signing/sodium-cleanup.h"

#define AUDIT_DOMAIN "seatd-audit-v1\n"
#define AUDIT_MAC_SUFFIX ",\"mac\":\""
#define AUDIT_MAC_SUFFIX_LEN (sizeof(AUDIT_MAC_SUFFIX) - 1)
/* ,"mac":" + 64 hex + "} */
#define AUDIT_TAIL_LEN (AUDIT_MAC_SUFFIX_LEN + 2 * AUDIT_MAC_BYTES + 2)
#define AUDIT_JSON_DEPTH 16
/* How many later epochs a failed MAC is tried against, to name a re-keyed record. */
#define AUDIT_REKEY_PROBE 4096U

enum { KDF_ID_MAC = 1, KDF_ID_NEXT = 2 };

struct AuditLog {
        int fd;
        unsigned flags;
        bool broken;
        uint64_t seq;                   /* of the next record */
        uint8_t prev[AUDIT_HASH_BYTES]; /* hash of the last line written */
        uint8_t *key;                   /* sodium_malloc'd: k_seq */
};

void audit_key_generate(uint8_t key[AUDIT_KEY_BYTES]) {
        (void) signing_init();
        randombytes_buf(key, AUDIT_KEY_BYTES);
}

int audit_key_evolve(const uint8_t key[AUDIT_KEY_BYTES], uint8_t ret_next[AUDIT_KEY_BYTES]) {
        if (signing_init() < 0)
                return -EIO;
        if (crypto_kdf_derive_from_key(ret_next, AUDIT_KEY_BYTES, KDF_ID_NEXT, AUDIT_KDF_CONTEXT, key) != 0)
                return -EIO;
        return 0;
}

int audit_record_mac(const uint8_t key[AUDIT_KEY_BYTES], uint64_t seq, const uint8_t prev[AUDIT_HASH_BYTES],
                     const char *body, size_t body_len, uint8_t ret_mac[AUDIT_MAC_BYTES]) {
        /* m_i lives on the stack for the length of one hash and is wiped at once. */
        uint8_t mkey[AUDIT_KEY_BYTES];
        crypto_generichash_state st;
        uint8_t le[8];
        int r = 0;

        if (signing_init() < 0)
                return -EIO;
        if (crypto_kdf_derive_from_key(mkey, AUDIT_KEY_BYTES, KDF_ID_MAC, AUDIT_KDF_CONTEXT, key) != 0)
                return -EIO;
        for (unsigned i = 0; i < 8; i++)
                le[i] = (uint8_t) (seq >> (8 * i));
        if (crypto_generichash_init(&st, mkey, AUDIT_KEY_BYTES, AUDIT_MAC_BYTES) != 0)
                r = -EIO;
        sodium_memzero(mkey, sizeof(mkey));
        if (r < 0)
                return r;
        crypto_generichash_update(&st, (const uint8_t *) AUDIT_DOMAIN, strlen(AUDIT_DOMAIN));
        crypto_generichash_update(&st, le, sizeof(le));
        crypto_generichash_update(&st, prev, AUDIT_HASH_BYTES);
        crypto_generichash_update(&st, (const uint8_t *) body, body_len);
        crypto_generichash_final(&st, ret_mac, AUDIT_MAC_BYTES);
        sodium_memzero(&st, sizeof(st));
        return 0;
}

static void line_hash(const char *line, size_t len, uint8_t out[AUDIT_HASH_BYTES]) {
        crypto_generichash(out, AUDIT_HASH_BYTES, (const uint8_t *) line, len, NULL, 0);
}

static bool type_valid(const char *type) {
        size_t n = type ? strlen(type) : 0;
        if (n == 0 || n > AUDIT_TYPE_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789._-", type[i]))
                        return false;
        return true;
}

AuditLog *audit_log_free(AuditLog *log) {
        if (!log)
                return NULL;
        safe_close(log->fd);
        sodium_free(log->key);
        sodium_memzero(log, sizeof(*log));
        return mfree(log);
}

uint64_t audit_log_count(const AuditLog *log) {
        return log ? log->seq : 0;
}

/* Build body || tail || '\n' for the current epoch; evolves nothing. */
static int record_format(AuditLog *log, const char *type, json_object *data, char **ret, size_t *ret_len,
                         SeatError **ret_error) {
        char prev_hex[2 * AUDIT_HASH_BYTES + 1], mac_hex[2 * AUDIT_MAC_BYTES + 1];
        uint8_t mac[AUDIT_MAC_BYTES];
        _cleanup_free_ char *body = NULL;
        const char *data_text = "{}";
        int r;

        if (data) {
                if (!json_object_is_type(data, json_type_object))
                        return seat_error_set(ret_error, EINVAL, "audit record '%s': data must be a JSON object",
                                              type);
                data_text = json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN |
                                                                         JSON_C_TO_STRING_NOSLASHESCAPE);
                if (!data_text)
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
        }
        (void) digest_to_hex(log->prev, AUDIT_HASH_BYTES, prev_hex, sizeof(prev_hex));
        int n = asprintf(&body, "{\"seq\":%" PRIu64 ",\"time\":%" PRId64 ",\"type\":\"%s\",\"data\":%s,\"prev\":\"%s\"",
                         log->seq, now_realtime_ms(), type, data_text, prev_hex);
        if (n < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        if ((size_t) n + AUDIT_TAIL_LEN > AUDIT_RECORD_MAX)
                return seat_error_set(ret_error, EFBIG, "audit record '%s' would be %zu bytes, over the cap of %u",
                                      type, (size_t) n + AUDIT_TAIL_LEN, AUDIT_RECORD_MAX);
        r = audit_record_mac(log->key, log->seq, log->prev, body, (size_t) n, mac);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot compute the MAC of audit record %" PRIu64, log->seq);
        (void) digest_to_hex(mac, AUDIT_MAC_BYTES, mac_hex, sizeof(mac_hex));

        char *line = NULL;
        int m = asprintf(&line, "%s" AUDIT_MAC_SUFFIX "%s\"}\n", body, mac_hex);
        if (m < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        *ret = line;
        *ret_len = (size_t) m;
        return 0;
}

/* Advance k_i → k_{i+1} in place; the old key is overwritten (and the temporary wiped). */
static int log_evolve(AuditLog *log) {
        _cleanup_(sodium_freep) uint8_t *next = sodium_malloc(AUDIT_KEY_BYTES);
        if (!next)
                return -ENOMEM;
        int r = audit_key_evolve(log->key, next);
        if (r < 0)
                return r;
        memcpy(log->key, next, AUDIT_KEY_BYTES);
        sodium_memzero(next, AUDIT_KEY_BYTES);
        return 0;
}

static int log_append_any(AuditLog *log, const char *type, json_object *data, bool sync, SeatError **ret_error) {
        _cleanup_free_ char *line = NULL;
        size_t len = 0;
        int r;

        if (!log)
                return seat_error_set(ret_error, EINVAL, "no audit log");
        if (log->broken)
                return seat_error_set(ret_error, ESTALE,
                                      "the audit log is broken by an earlier write failure: no more records");
        if (log->seq >= AUDIT_RECORDS_MAX)
                return seat_error_set(ret_error, EFBIG, "the audit log is full (%" PRIu64 " records)", log->seq);
        r = record_format(log, type, data, &line, &len, ret_error);
        if (r < 0)
                return r;

        /* The key evolves before the record reaches the disk: once it is written, nothing
         * held in memory can authenticate it again. */
        r = log_evolve(log);
        if (r < 0) {
                log->broken = true;
                return seat_error_set(ret_error, -r, "cannot evolve the audit key");
        }
        r = loop_write(log->fd, line, len);
        if (r >= 0 && sync && fdatasync(log->fd) < 0)
                r = negative_errno();
        if (r < 0) {
                log->broken = true;
                return seat_error_set(ret_error, -r, "cannot write audit record %" PRIu64 " ('%s'): %s", log->seq,
                                      type, strerror(-r));
        }
        line_hash(line, len - 1, log->prev);
        log->seq++;
        return 0;
}

int audit_log_append(AuditLog *log, const char *type, json_object *data, SeatError **ret_error) {
        if (!type_valid(type) || strcmp(type, "start") == 0 || strcmp(type, "end") == 0)
                return seat_error_set(ret_error, EINVAL,
                                      "audit record type '%s' is invalid: 1-%u of [a-z0-9._-], not start/end",
                                      type ? type : "(null)", AUDIT_TYPE_MAX);
        return log_append_any(log, type, data, !log || !(log->flags & AUDIT_LOG_NO_SYNC), ret_error);
}

int audit_log_open(const char *path, const uint8_t initial_key[AUDIT_KEY_BYTES], unsigned flags,
                   AuditLog **ret, SeatError **ret_error) {
        _cleanup_(audit_log_freep) AuditLog *log = NULL;
        int r;

        if (!path || !initial_key || !ret)
                return seat_error_set(ret_error, EINVAL, "audit_log_open: missing argument");
        r = signing_init();
        if (r < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        log = calloc(1, sizeof(*log));
        if (!log)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        log->fd = -EBADF;
        log->flags = flags;
        log->key = sodium_malloc(AUDIT_KEY_BYTES);
        if (!log->key)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        memcpy(log->key, initial_key, AUDIT_KEY_BYTES);

        log->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (log->fd < 0) {
                r = negative_errno();
                return seat_error_set(ret_error, -r, "cannot create audit log '%s': %s", path, strerror(-r));
        }
        r = fsync_parent_dir(path);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot fsync the directory of audit log '%s': %s", path,
                                      strerror(-r));

        _cleanup_json_ json_object *data = json_object_new_object();
        if (!data || json_object_object_add(data, "version", json_object_new_int(1)) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        r = log_append_any(log, "start", data, true, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "audit log '%s'", path);
        *ret = TAKE_PTR(log);
        return 0;
}

int audit_log_close(AuditLog *log, SeatError **ret_error) {
        _cleanup_(audit_log_freep) AuditLog *l = log;
        if (!l)
                return 0;
        _cleanup_json_ json_object *data = json_object_new_object();
        if (!data || json_object_object_add(data, "records", json_object_new_int64((int64_t) l->seq)) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        int r = log_append_any(l, "end", data, false, ret_error);
        if (r < 0)
                return r;
        if (fsync(l->fd) < 0) {
                r = negative_errno();
                return seat_error_set(ret_error, -r, "cannot fsync the audit log: %s", strerror(-r));
        }
        int fd = TAKE_FD(l->fd);
        if (close(fd) < 0 && errno != EINTR) {
                r = negative_errno();
                return seat_error_set(ret_error, -r, "cannot close the audit log: %s", strerror(-r));
        }
        return 0;
}

/* ---- parsing -------------------------------------------------------------------- */

void audit_record_done(AuditRecord *rec) {
        if (!rec)
                return;
        json_object_put(rec->data);
        memset(rec, 0, sizeof(*rec));
}

static int parse_fail(SeatError **ret_error, int code, const char *what) {
        return seat_error_set(ret_error, code, "malformed audit record: %s", what);
}

int audit_record_parse(const char *line, size_t len, AuditRecord *ret, SeatError **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *copy = NULL;
        json_object *data = NULL;
        const char *type = NULL, *prev = NULL;
        int64_t seq = 0, t = 0;
        AuditRecord rec = {};
        int r;

        if (len > AUDIT_RECORD_MAX)
                return parse_fail(ret_error, EFBIG, "longer than the cap");
        if (len <= AUDIT_TAIL_LEN || line[0] != '{')
                return parse_fail(ret_error, EBADMSG, "too short or not a JSON object");
        size_t body_len = len - AUDIT_TAIL_LEN;
        const char *tail = line + body_len;
        if (memcmp(tail, AUDIT_MAC_SUFFIX, AUDIT_MAC_SUFFIX_LEN) != 0 || memcmp(line + len - 2, "\"}", 2) != 0)
                return parse_fail(ret_error, EBADMSG, "does not end with the \"mac\" field");
        if (digest_from_hex(tail + AUDIT_MAC_SUFFIX_LEN, 2 * AUDIT_MAC_BYTES, rec.mac, AUDIT_MAC_BYTES) < 0)
                return parse_fail(ret_error, EBADMSG, "\"mac\" is not 64 hex digits");
        if (memchr(line, '\n', len) || memchr(line, '\0', len))
                return parse_fail(ret_error, EBADMSG, "contains a newline or NUL byte");

        /* The body as an object of its own: body || "}". */
        copy = malloc(body_len + 2);
        if (!copy)
                return parse_fail(ret_error, ENOMEM, "out of memory");
        memcpy(copy, line, body_len);
        copy[body_len] = '}';
        copy[body_len + 1] = '\0';
        r = json_frame_parse(copy, body_len + 1, AUDIT_JSON_DEPTH, &o);
        if (r < 0)
                return parse_fail(ret_error, EBADMSG, r == -ELOOP ? "nested too deep" : "not valid JSON");
        if (json_object_object_length(o) != 5)
                return parse_fail(ret_error, EBADMSG, "wants exactly seq, time, type, data, prev and mac");
        if (json_get_int64(o, "seq", true, 0, (int64_t) AUDIT_RECORDS_MAX, &seq) < 0)
                return parse_fail(ret_error, EBADMSG, "\"seq\" missing or out of range");
        if (json_get_int64(o, "time", true, 0, INT64_MAX, &t) < 0)
                return parse_fail(ret_error, EBADMSG, "\"time\" missing or out of range");
        if (json_get_string(o, "type", true, AUDIT_TYPE_MAX, &type) < 0 || !type_valid(type))
                return parse_fail(ret_error, EBADMSG, "\"type\" missing or invalid");
        if (json_get_object(o, "data", true, &data) < 0)
                return parse_fail(ret_error, EBADMSG, "\"data\" missing or not an object");
        if (json_get_string(o, "prev", true, 2 * AUDIT_HASH_BYTES, &prev) < 0 ||
            digest_from_hex(prev, strlen(prev), rec.prev, AUDIT_HASH_BYTES) < 0)
                return parse_fail(ret_error, EBADMSG, "\"prev\" missing or not 64 hex digits");
        if (strncmp(line, "{\"seq\":", 7) != 0)
                return parse_fail(ret_error, EBADMSG, "does not start with \"seq\"");

        rec.seq = (uint64_t) seq;
        rec.time_ms = t;
        strcpy(rec.type, type);
        rec.data = json_object_get(data);
        rec.body_len = body_len;
        *ret = rec;
        return 0;
}

/* ---- verification --------------------------------------------------------------- */

typedef struct LineReader {
        int fd;
        char *buf;       /* AUDIT_RECORD_MAX + 2 */
        size_t start, end;
        uint64_t total, max;
        bool eof;
} LineReader;

/* 1 with a line, 0 at a clean EOF, -EPIPE for an incomplete last line, -EFBIG, -errno. */
static int line_reader_next(LineReader *lr, const char **ret, size_t *ret_len) {
        const size_t cap = AUDIT_RECORD_MAX + 1;
        for (;;) {
                char *nl = memchr(lr->buf + lr->start, '\n', lr->end - lr->start);
                if (nl) {
                        *ret = lr->buf + lr->start;
                        *ret_len = (size_t) (nl - (lr->buf + lr->start));
                        lr->start += *ret_len + 1;
                        return 1;
                }
                if (lr->end - lr->start >= cap)
                        return -EFBIG;
                if (lr->eof)
                        return lr->end > lr->start ? -EPIPE : 0;
                if (lr->start > 0) {
                        memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
                        lr->end -= lr->start;
                        lr->start = 0;
                }
                ssize_t n = read(lr->fd, lr->buf + lr->end, cap + 1 - lr->end);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        lr->eof = true;
                lr->end += (size_t) n;
                lr->total += (uint64_t) n;
                if (lr->total > lr->max)
                        return -E2BIG;
        }
}

/* A MAC that failed with its own epoch's key: does a later epoch's key make it verify? */
static int probe_later_epoch(const uint8_t *key_i, uint64_t seq, const uint8_t prev[AUDIT_HASH_BYTES],
                             const char *body, size_t body_len, const uint8_t mac[AUDIT_MAC_BYTES],
                             uint64_t *ret_epoch) {
        _cleanup_(sodium_freep) uint8_t *k = sodium_malloc(2 * AUDIT_KEY_BYTES);
        uint8_t m[AUDIT_MAC_BYTES];
        if (!k)
                return -ENOMEM;
        memcpy(k, key_i, AUDIT_KEY_BYTES);
        for (uint64_t j = 1; j <= AUDIT_REKEY_PROBE; j++) {
                if (audit_key_evolve(k, k + AUDIT_KEY_BYTES) < 0)
                        return -EIO;
                memcpy(k, k + AUDIT_KEY_BYTES, AUDIT_KEY_BYTES);
                /* The forger may have kept the seq or used the epoch's own number. */
                if ((audit_record_mac(k, seq, prev, body, body_len, m) == 0 && sodium_memcmp(m, mac, sizeof(m)) == 0) ||
                    (audit_record_mac(k, seq + j, prev, body, body_len, m) == 0 &&
                     sodium_memcmp(m, mac, sizeof(m)) == 0)) {
                        *ret_epoch = seq + j;
                        return 1;
                }
        }
        return 0;
}

typedef struct VerifyState {
        uint8_t *key; /* sodium_malloc'd, 2 * AUDIT_KEY_BYTES: current and scratch */
        uint8_t prev[AUDIT_HASH_BYTES];
        uint64_t seq;
        bool ended;
} VerifyState;

static int verify_record(VerifyState *vs, const char *line, size_t len, SeatError **ret_error) {
        AuditRecord rec = {};
        uint8_t mac[AUDIT_MAC_BYTES];
        uint64_t line_no = vs->seq + 1, epoch;
        int r;

        if (vs->ended)
                return seat_error_set(ret_error, EILSEQ,
                                      "audit log line %" PRIu64 ": a record after the end record (appended later)",
                                      line_no);
        r = audit_record_parse(line, len, &rec, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "audit log line %" PRIu64 " (record %" PRIu64 " expected)", line_no,
                                       vs->seq);
        if (rec.seq != vs->seq) {
                uint64_t got = rec.seq;
                audit_record_done(&rec);
                if (got < vs->seq)
                        return seat_error_set(ret_error, EILSEQ,
                                              "audit log line %" PRIu64 ": record %" PRIu64 " where record %" PRIu64
                                              " was expected: a record was duplicated or reordered",
                                              line_no, got, vs->seq);
                return seat_error_set(ret_error, EILSEQ,
                                      "audit log line %" PRIu64 ": record %" PRIu64 " where record %" PRIu64
                                      " was expected: record(s) %" PRIu64 "..%" PRIu64 " were dropped or reordered",
                                      line_no, got, vs->seq, vs->seq, got - 1);
        }

        r = audit_record_mac(vs->key, rec.seq, rec.prev, line, rec.body_len, mac);
        if (r < 0) {
                audit_record_done(&rec);
                return seat_error_set(ret_error, -r, "cannot compute a MAC");
        }
        if (sodium_memcmp(mac, rec.mac, sizeof(mac)) != 0) {
                r = probe_later_epoch(vs->key, rec.seq, rec.prev, line, rec.body_len, rec.mac, &epoch);
                audit_record_done(&rec);
                if (r > 0)
                        return seat_error_set(ret_error, EKEYREJECTED,
                                              "audit record %" PRIu64 " (line %" PRIu64 ") is authenticated with the key "
                                              "of the later epoch %" PRIu64 ", not its own: it was rewritten after "
                                              "the key evolved (host compromise)",
                                              vs->seq, line_no, epoch);
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "audit record %" PRIu64 " (line %" PRIu64 "): the MAC does not verify with the "
                                      "key of its epoch: the record was edited",
                                      vs->seq, line_no);
        }
        if (memcmp(rec.prev, vs->prev, AUDIT_HASH_BYTES) != 0) {
                audit_record_done(&rec);
                return seat_error_set(ret_error, EILSEQ,
                                      "audit record %" PRIu64 " (line %" PRIu64 "): \"prev\" is not the hash of "
                                      "record %" PRIu64 ": the chain is broken",
                                      vs->seq, line_no, vs->seq - 1);
        }

        bool is_start = strcmp(rec.type, "start") == 0, is_end = strcmp(rec.type, "end") == 0;
        if (is_start != (vs->seq == 0)) {
                audit_record_done(&rec);
                return seat_error_set(ret_error, EBADMSG,
                                      "audit record %" PRIu64 " (line %" PRIu64 "): %s", vs->seq, line_no,
                                      is_start ? "a second start record" : "the first record is not \"start\"");
        }
        if (is_end) {
                int64_t n = -1;
                (void) json_get_int64(rec.data, "records", true, 0, INT64_MAX, &n);
                if (n != (int64_t) vs->seq) {
                        audit_record_done(&rec);
                        return seat_error_set(ret_error, EBADMSG,
                                              "audit end record %" PRIu64 " counts %" PRId64 " records", vs->seq, n);
                }
                vs->ended = true;
        }
        audit_record_done(&rec);

        line_hash(line, len, vs->prev);
        if (audit_key_evolve(vs->key, vs->key + AUDIT_KEY_BYTES) < 0)
                return seat_error_set(ret_error, EIO, "cannot evolve the audit key");
        memcpy(vs->key, vs->key + AUDIT_KEY_BYTES, AUDIT_KEY_BYTES);
        sodium_memzero(vs->key + AUDIT_KEY_BYTES, AUDIT_KEY_BYTES);
        vs->seq++;
        return 0;
}

int audit_log_verify_fd(int fd, const uint8_t initial_key[AUDIT_KEY_BYTES], unsigned flags, uint64_t max_bytes,
                        uint64_t *ret_count, SeatError **ret_error) {
        _cleanup_(sodium_freep) uint8_t *key = NULL;
        _cleanup_free_ char *buf = NULL;
        VerifyState vs = {};
        int r;

        if (fd < 0 || !initial_key)
                return seat_error_set(ret_error, EINVAL, "audit_log_verify: missing argument");
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        key = sodium_malloc(2 * AUDIT_KEY_BYTES);
        buf = malloc(AUDIT_RECORD_MAX + 2);
        if (!key || !buf)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        memcpy(key, initial_key, AUDIT_KEY_BYTES);
        vs.key = key;

        LineReader lr = { .fd = fd, .buf = buf, .max = max_bytes };
        for (;;) {
                const char *line;
                size_t len;
                r = line_reader_next(&lr, &line, &len);
                if (r == 0)
                        break;
                if (r == -EPIPE)
                        return seat_error_set(ret_error, EPIPE,
                                              "audit log line %" PRIu64 " is incomplete (no final newline): the log "
                                              "was truncated in the middle of record %" PRIu64,
                                              vs.seq + 1, vs.seq);
                if (r == -EFBIG)
                        return seat_error_set(ret_error, EFBIG, "audit log line %" PRIu64 " is over the cap of %u bytes",
                                              vs.seq + 1, AUDIT_RECORD_MAX);
                if (r == -E2BIG)
                        return seat_error_set(ret_error, EFBIG, "the audit log is larger than %" PRIu64 " bytes",
                                              max_bytes);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "cannot read the audit log: %s", strerror(-r));
                r = verify_record(&vs, line, len, ret_error);
                if (r < 0)
                        return r;
        }
        if (vs.seq == 0)
                return seat_error_set(ret_error, EPIPE, "the audit log is empty: not even its start record");
        if (!vs.ended && !(flags & AUDIT_VERIFY_SESSION_OPEN))
                return seat_error_set(ret_error, EPIPE,
                                      "the audit log ends after record %" PRIu64 " without an end record: it was "
                                      "truncated (or its session never closed)",
                                      vs.seq - 1);
        if (ret_count)
                *ret_count = vs.seq;
        return 0;
}

int audit_log_verify(const char *path, const uint8_t initial_key[AUDIT_KEY_BYTES], unsigned flags,
                     uint64_t *ret_count, SeatError **ret_error) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        struct stat st;
        if (fd < 0) {
                int r = negative_errno();
                return seat_error_set(ret_error, -r, "cannot open audit log '%s': %s", path, strerror(-r));
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return seat_error_set(ret_error, EBADFD, "audit log '%s' is not a regular file", path);
        int r = audit_log_verify_fd(fd, initial_key, flags, UINT64_MAX, ret_count, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "audit log '%s'", path);
        return 0;
}
