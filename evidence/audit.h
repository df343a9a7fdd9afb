/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The per-session audit log: append-only JSON lines, hash-chained, each line authenticated
 * with a forward-secure key (docs/evidence-format.md, "Audit log").
 *
 *   k_0            the session's initial key (AUDIT_KEY_BYTES random bytes)
 *   m_i = KDF(k_i, id 1, "seataudt")      MAC key of record i
 *   k_{i+1} = KDF(k_i, id 2, "seataudt")  then k_i is wiped
 *   mac_i = BLAKE2b-256 keyed with m_i over
 *           "seatd-audit-v1\n" || le64(i) || prev_i || body_i
 *   prev_i = BLAKE2b-256 of line i-1 (without its '\n'); 32 zero bytes for i = 0
 *   body_i = the line's bytes up to (not including) ',"mac":"'
 *
 * (KDF = crypto_kdf_derive_from_key, i.e. BLAKE2b keyed with k_i, personalised.)
 *
 * Record 0 is "start" (written by audit_log_open), the last one "end" (audit_log_close);
 * a log without "end" is truncated unless the caller says the session is still open.
 *
 * What a caller may touch: everything declared here. AuditLog is opaque; its key lives in
 * sodium_malloc'd memory and only the current epoch's key is ever held. Nothing here
 * prints.
 *
 * Error codes: -EINVAL (caller argument), -EBADMSG (malformed record), -EKEYREJECTED (a MAC
 * does not verify), -EILSEQ (records dropped, duplicated or reordered; chain broken),
 * -EPIPE (truncated: no end record, or an incomplete last line), -EFBIG (record over
 * AUDIT_RECORD_MAX), -ESTALE (the log is closed or broken by an earlier write failure),
 * -errno from file access.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"

#define AUDIT_KEY_BYTES 32U
#define AUDIT_MAC_BYTES 32U
#define AUDIT_HASH_BYTES 32U
/* One line, without its '\n'. */
#define AUDIT_RECORD_MAX (1024U * 1024U)
#define AUDIT_TYPE_MAX 32U
/* Records in one log (a session making more is refused). */
#define AUDIT_RECORDS_MAX (1ULL << 32)
#define AUDIT_KDF_CONTEXT "seataudt"

typedef struct AuditLog AuditLog;

typedef enum AuditLogFlags {
        AUDIT_LOG_NO_SYNC = 1 << 0, /* no fdatasync per append (benchmarks only) */
} AuditLogFlags;

/* Fills key with fresh random bytes. */
void audit_key_generate(uint8_t key[AUDIT_KEY_BYTES]);

/*
 * Create path (O_EXCL: never appends to an existing file, mode 0600) and write record 0,
 * "start" with {"version":1}. The key is copied; the caller should wipe its copy as soon
 * as it has sealed it for the facilitator (archive_seal_audit_key()).
 */
int audit_log_open(const char *path, const uint8_t initial_key[AUDIT_KEY_BYTES], unsigned flags,
                   AuditLog **ret, SeatError **ret_error);
/*
 * Append one record. type: 1..AUDIT_TYPE_MAX of [a-z0-9._-]; "start" and "end" are
 * reserved. data: a JSON object (NULL = {}), not consumed. The line is written with one
 * write(2) on an O_APPEND fd, then fdatasync'ed (unless AUDIT_LOG_NO_SYNC); the key has
 * already evolved by then. A failed write leaves the log broken (-ESTALE afterwards).
 */
int audit_log_append(AuditLog *log, const char *type, json_object *data, SeatError **ret_error);
/* Records written so far (start included). */
uint64_t audit_log_count(const AuditLog *log);
/* Write the "end" record ({"records":N}), fsync, close, wipe, free. NULL is fine.
 * Returns 0 or -errno; log is freed in every case. */
int audit_log_close(AuditLog *log, SeatError **ret_error);
/* Free without writing "end" (a crash-like close: the log reads as truncated). */
AuditLog *audit_log_free(AuditLog *log);
DEFINE_TRIVIAL_CLEANUP_FUNC(AuditLog *, audit_log_free)

/* One parsed line (pointers into the caller's buffer or owned json). */
typedef struct AuditRecord {
        uint64_t seq;
        int64_t time_ms;
        char type[AUDIT_TYPE_MAX + 1];
        json_object *data;                 /* owned: release with audit_record_done() */
        uint8_t prev[AUDIT_HASH_BYTES];
        uint8_t mac[AUDIT_MAC_BYTES];
        size_t body_len;                   /* bytes of the line the MAC covers */
} AuditRecord;

void audit_record_done(AuditRecord *rec);
/*
 * Parse one line (without '\n'): strict layout, every field type-checked. Pure function
 * of the buffer, no key needed (fuzzed). Returns 0 or -EBADMSG/-EFBIG with a reason.
 */
int audit_record_parse(const char *line, size_t len, AuditRecord *ret, SeatError **ret_error);

/* The key schedule, exposed for tests and tools. */
int audit_key_evolve(const uint8_t key[AUDIT_KEY_BYTES], uint8_t ret_next[AUDIT_KEY_BYTES]);
int audit_record_mac(const uint8_t key[AUDIT_KEY_BYTES], uint64_t seq, const uint8_t prev[AUDIT_HASH_BYTES],
                     const char *body, size_t body_len, uint8_t ret_mac[AUDIT_MAC_BYTES]);

typedef enum AuditVerifyFlags {
        AUDIT_VERIFY_SESSION_OPEN = 1 << 0, /* no "end" record yet is fine */
} AuditVerifyFlags;

/*
 * Verify a whole log: every line parses, seq i on line i+1, each MAC with the key of its
 * own epoch, each prev the hash of the line before, "start" first, "end" last (unless
 * AUDIT_VERIFY_SESSION_OPEN), nothing after "end". The error names the record.
 * *ret_count (may be NULL) gets the number of records.
 */
int audit_log_verify(const char *path, const uint8_t initial_key[AUDIT_KEY_BYTES], unsigned flags,
                     uint64_t *ret_count, SeatError **ret_error);
/* Same, from fd's current offset to EOF (at most max_bytes). */
int audit_log_verify_fd(int fd, const uint8_t initial_key[AUDIT_KEY_BYTES], unsigned flags, uint64_t max_bytes,
                        uint64_t *ret_count, SeatError **ret_error);
