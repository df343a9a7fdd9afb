/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * minisign-compatible keys and signatures (byte layouts in docs/signing.md).
 *
 * What a caller may touch:
 *  - SeatPublicKey: plain data (key id + Ed25519 public key), copy it freely.
 *  - SeatSecretKey: opaque, lives in sodium_malloc'd memory, read-only while held;
 *    free with seat_secret_key_free() (wipes it).
 *  - seat_sign_*() write "ED" signatures (Ed25519 over the BLAKE2b-512 of the data).
 *  - seat_verify_*() accept "ED" and, unless SEAT_VERIFY_REQUIRE_PREHASHED, the legacy
 *    "Ed" (Ed25519 over the data itself). The trusted comment is handed back only after
 *    the data signature and the global signature (over signature || trusted comment)
 *    both verified.
 * Parsers are pure functions of a buffer, every size capped; every rejection comes with
 * a SeatError saying what failed. Nothing here prints.
 *
 * Error codes (negative return values):
 *   -EINVAL           a caller argument is invalid (e.g. a comment with a newline)
 *   -EBADMSG          a key or signature file is malformed
 *   -EFBIG            a file, line or comment is over its cap
 *   -EPROTONOSUPPORT  unknown algorithm tag (signature, KDF, checksum)
 *   -ENOKEY           the signature was made by another key id than the trusted one
 *   -EKEYREJECTED     a signature does not verify (data, trusted comment), or a secret
 *                     key's checksum does not match (wrong password or corrupt key)
 *   -ENOMEM, -EIO, and -errno from file access
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"

#define SEAT_KEY_ID_BYTES 8U
#define SEAT_PUBLIC_KEY_BYTES 32U   /* Ed25519 */
#define SEAT_SIGNATURE_BYTES 64U    /* Ed25519 */
/* Untrusted comment text (after "untrusted comment: ") */
#define SEAT_COMMENT_MAX 1024U
/* Trusted comment text (after "trusted comment: "): minisign's own limit, so every
 * signature minisign writes verifies here. */
#define SEAT_TRUSTED_COMMENT_MAX 8192U
/* Key and signature files as a whole. */
#define SEAT_KEY_FILE_MAX (64U * 1024U)
#define SEAT_SIG_FILE_MAX (64U * 1024U)
/* Password bytes (minisign: PASSWORDMAXBYTES - 1). */
#define SEAT_PASSWORD_MAX 1023U
/* Legacy "Ed" signatures need the whole data in memory: capped. */
#define SEAT_LEGACY_DATA_MAX (1ULL << 30)

/* A key or signature file read whole, for every loader of signing/ and seat-sign: one
 * larger than max is refused as "<what> file 'PATH' is larger than MAX bytes: not a
 * <kind>" (what: "public key", kind: "key"). 0 or -errno with ret_error set. */
int seat_sign_file_read(const char *path, const char *what, const char *kind, size_t max, char **ret, size_t *ret_len,
                        SeatError **ret_error);

typedef struct SeatPublicKey {
        uint8_t key_id[SEAT_KEY_ID_BYTES];
        uint8_t pk[SEAT_PUBLIC_KEY_BYTES];
} SeatPublicKey;

/* The key id as minisign prints it: the 8 bytes read little-endian, "%016" PRIX64. */
uint64_t seat_key_id_value(const uint8_t key_id[SEAT_KEY_ID_BYTES]);

/* base64 of "Ed" | key id | pk (56 characters), as `minisign -P` takes it. */
int seat_public_key_from_base64(const char *text, size_t len, SeatPublicKey *ret, SeatError **ret_error);
/* A public key file: "untrusted comment: ..." line, base64 line, optional final newline. */
int seat_public_key_parse(const char *buf, size_t len, SeatPublicKey *ret, SeatError **ret_error);
int seat_public_key_load(const char *path, SeatPublicKey *ret, SeatError **ret_error);
/* Newly allocated strings: the bare base64, or the whole file (comment line included,
 * "minisign public key <ID>" style, comment NULL for the default). */
int seat_public_key_to_base64(const SeatPublicKey *pk, char **ret);
int seat_public_key_format(const SeatPublicKey *pk, const char *comment, char **ret_text);
int seat_public_key_save(const SeatPublicKey *pk, const char *path, SeatError **ret_error);

typedef struct SeatSecretKey SeatSecretKey;

/*
 * Asked for the password of a protected secret key (only then). Write a NUL-terminated
 * password of at most size-1 bytes into buf (sodium_malloc'd by the library, wiped after
 * use) and return 0, or return -errno (e.g. -ENOKEY: no password available) to abort
 * the load with that code.
 */
typedef int (*SeatPasswordFn)(char *buf, size_t size, void *userdata);
/* A SeatPasswordFn whose userdata is a NUL-terminated password string. */
int seat_password_from_string(char *buf, size_t size, void *userdata);

/* scrypt cost for protecting a key; NULL anywhere means minisign's defaults
 * (OPSLIMIT_SENSITIVE = 33554432, MEMLIMIT_SENSITIVE = 1 GiB). */
typedef struct SeatKdfLimits {
        uint64_t opslimit;
        uint64_t memlimit;
} SeatKdfLimits;
/* Limits a loaded key file may ask for; more is refused before any derivation. */
#define SEAT_KDF_OPSLIMIT_MAX (4ULL * 33554432ULL)
#define SEAT_KDF_MEMLIMIT_MAX (2ULL << 30)

int seat_secret_key_generate(SeatSecretKey **ret);
/*
 * A secret key file: "untrusted comment: ..." line and base64 line. kdf "Sc" asks
 * get_password (which may be NULL: then -ENOKEY); kdf 0x0000 (unprotected) never asks.
 */
int seat_secret_key_parse(const char *buf, size_t len, SeatPasswordFn get_password, void *userdata,
                          SeatSecretKey **ret, SeatError **ret_error);
int seat_secret_key_load(const char *path, SeatPasswordFn get_password, void *userdata,
                         SeatSecretKey **ret, SeatError **ret_error);
/* Whether the key came from (or will by default be saved as) a password-protected file. */
bool seat_secret_key_was_protected(const SeatSecretKey *sk);
void seat_secret_key_public(const SeatSecretKey *sk, SeatPublicKey *ret);
/*
 * Encode as a minisign secret key file. password NULL: unprotected (kdf 0x0000).
 * *ret_text is sodium_malloc'd (it holds the key): release it with seat_secret_text_free().
 */
int seat_secret_key_encode(const SeatSecretKey *sk, const char *password, const SeatKdfLimits *limits,
                           const char *comment, char **ret_text, size_t *ret_len, SeatError **ret_error);
void seat_secret_text_free(char *text);
/* Atomic write, mode 0600. */
int seat_secret_key_save(const SeatSecretKey *sk, const char *path, const char *password,
                         const SeatKdfLimits *limits, SeatError **ret_error);
SeatSecretKey *seat_secret_key_free(SeatSecretKey *sk);
DEFINE_TRIVIAL_CLEANUP_FUNC(SeatSecretKey *, seat_secret_key_free)

/*
 * Sign: *ret_sig_text is a complete .minisig file (malloc'd). trusted_comment must be
 * given (no default here: the tool builds minisign's "timestamp:…\tfile:…\thashed");
 * untrusted_comment NULL means "signature from seat-sign secret key". Neither may
 * contain '\r', '\n' or be over its cap (-EINVAL).
 */
int seat_sign_buffer(const SeatSecretKey *sk, const void *data, size_t len, const char *trusted_comment,
                     const char *untrusted_comment, char **ret_sig_text, SeatError **ret_error);
/* data_digest = BLAKE2b-512 of the data, e.g. computed while copying it. */
int seat_sign_digest(const SeatSecretKey *sk, const uint8_t data_digest[64], const char *trusted_comment,
                     const char *untrusted_comment, char **ret_sig_text, SeatError **ret_error);
int seat_sign_fd(const SeatSecretKey *sk, int fd, const char *trusted_comment, const char *untrusted_comment,
                 char **ret_sig_text, SeatError **ret_error);
int seat_sign_file(const SeatSecretKey *sk, const char *path, const char *trusted_comment,
                   const char *untrusted_comment, char **ret_sig_text, SeatError **ret_error);

typedef enum SeatVerifyFlags {
        SEAT_VERIFY_REQUIRE_PREHASHED = 1 << 0, /* refuse legacy "Ed" signatures */
} SeatVerifyFlags;

/*
 * Verify sig_text (a .minisig file's bytes, sig_len of them) over the data. On success
 * *ret_trusted_comment (may be NULL) gets the verified trusted comment (malloc'd).
 * Order: parse (caps, algorithm tag) → key id against pk → Ed25519 over the data →
 * global signature over signature || trusted comment.
 */
int seat_verify_buffer(const SeatPublicKey *pk, const void *data, size_t len, const char *sig_text,
                       size_t sig_len, unsigned flags, char **ret_trusted_comment, SeatError **ret_error);
/* Only for "ED" signatures (a legacy one needs the data: -EPROTONOSUPPORT). */
int seat_verify_digest(const SeatPublicKey *pk, const uint8_t data_digest[64], const char *sig_text,
                       size_t sig_len, unsigned flags, char **ret_trusted_comment, SeatError **ret_error);
int seat_verify_fd(const SeatPublicKey *pk, int fd, const char *sig_text, size_t sig_len, unsigned flags,
                   char **ret_trusted_comment, SeatError **ret_error);
int seat_verify_file(const SeatPublicKey *pk, const char *path, const char *sig_text, size_t sig_len,
                     unsigned flags, char **ret_trusted_comment, SeatError **ret_error);
