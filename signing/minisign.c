/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base64.h"
#include "common/fileio.h"
#include "hash.h"
#include "common/log.h"
#include "minisign.h"
#include "sodium-cleanup.h"

/* Tags and prefixes, as in minisign.h of minisign. */
#define SIG_ALG "Ed"
#define SIG_ALG_HASHED "ED"
#define KDF_ALG "Sc"
#define CHK_ALG "B2"
#define COMMENT_PREFIX "untrusted comment: "
#define TRUSTED_COMMENT_PREFIX "trusted comment: "
#define DEFAULT_SIG_COMMENT "signature from seat-sign secret key"
#define DEFAULT_PK_COMMENT_FMT "seat-sign public key %016" PRIX64
#define DEFAULT_SK_COMMENT "seat-sign secret key"
#define DEFAULT_SK_COMMENT_ENCRYPTED "seat-sign encrypted secret key"

#define TAG_BYTES 2U
#define SALT_BYTES crypto_pwhash_scryptsalsa208sha256_SALTBYTES /* 32 */
#define SK_BYTES crypto_sign_SECRETKEYBYTES                     /* 64 */
#define CHK_BYTES crypto_generichash_BYTES                      /* 32 */

/* Byte layouts (offsets into the decoded base64 line). */
#define PK_BLOB_BYTES (TAG_BYTES + SEAT_KEY_ID_BYTES + SEAT_PUBLIC_KEY_BYTES)  /* 42 */
#define SIG_BLOB_BYTES (TAG_BYTES + SEAT_KEY_ID_BYTES + SEAT_SIGNATURE_BYTES) /* 74 */
#define SK_OFF_KDF TAG_BYTES
#define SK_OFF_CHKALG (2 * TAG_BYTES)
#define SK_OFF_SALT (3 * TAG_BYTES)
#define SK_OFF_OPS (SK_OFF_SALT + SALT_BYTES)
#define SK_OFF_MEM (SK_OFF_OPS + 8)
#define SK_OFF_KEYNUM (SK_OFF_MEM + 8) /* start of the part the KDF stream covers */
#define SK_OFF_SK (SK_OFF_KEYNUM + SEAT_KEY_ID_BYTES)
#define SK_OFF_CHK (SK_OFF_SK + SK_BYTES)
#define SK_BLOB_BYTES (SK_OFF_CHK + CHK_BYTES)                   /* 158 */
#define SK_KEYNUM_PART_BYTES (SK_BLOB_BYTES - SK_OFF_KEYNUM)     /* 104 */

/* Base64 line caps: the encoded blob plus slack for nothing else. */
#define B64_LEN(n) (((n) + 2) / 3 * 4)

struct SeatSecretKey {
        uint8_t key_id[SEAT_KEY_ID_BYTES];
        uint8_t sk[SK_BYTES]; /* Ed25519: seed (32) | public key (32) */
        bool was_protected;
};

/* ---- small helpers -------------------------------------------------------------- */

static uint64_t le64_load(const uint8_t *p) {
        uint64_t v = 0;
        for (unsigned i = 0; i < 8; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}

static void le64_store(uint8_t *p, uint64_t v) {
        for (unsigned i = 0; i < 8; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

uint64_t seat_key_id_value(const uint8_t key_id[SEAT_KEY_ID_BYTES]) {
        return le64_load(key_id);
}

/* An algorithm tag, quoted safely for a message: 'ED', 'E\x00'. */
typedef struct TagText {
        char s[16];
} TagText;

static TagText tag_text(const uint8_t *tag) {
        TagText t = {};
        size_t n = 0;
        for (unsigned i = 0; i < TAG_BYTES; i++) {
                if (tag[i] >= 0x20 && tag[i] < 0x7f && tag[i] != '\'' && tag[i] != '\\')
                        t.s[n++] = (char) tag[i];
                else
                        n += (size_t) snprintf(t.s + n, sizeof(t.s) - n, "\\x%02x", tag[i]);
        }
        return t;
}

/* A line reader over a buffer: '\n' ends a line, one '\r' before it is dropped (minisign
 * trims both), the last line may lack its '\n'. */
typedef struct LineReader {
        const char *buf;
        size_t len;
        size_t pos;
        unsigned line_no;
} LineReader;

static int line_next(LineReader *lr, size_t max, const char **ret, size_t *ret_len, SeatError **ret_error,
                     const char *what) {
        if (lr->pos >= lr->len)
                return seat_error_set(ret_error, EBADMSG, "line %u (%s) is missing: the file is truncated",
                                      lr->line_no + 1, what);

        const char *start = lr->buf + lr->pos;
        size_t avail = lr->len - lr->pos;
        const char *nl = memchr(start, '\n', avail);
        size_t n = nl ? (size_t) (nl - start) : avail;

        lr->line_no++;
        lr->pos += n + (nl ? 1 : 0);
        if (n > 0 && start[n - 1] == '\r')
                n--;
        if (n > max)
                return seat_error_set(ret_error, EFBIG, "line %u (%s) is %zu bytes long, more than the %zu allowed",
                                      lr->line_no, what, n, max);
        *ret = start;
        *ret_len = n;
        return 0;
}

static int line_expect_end(const LineReader *lr, const char *what, SeatError **ret_error) {
        if (lr->pos < lr->len)
                return seat_error_set(ret_error, EBADMSG,
                                      "unexpected data after line %u (%s): a %s file has exactly %u lines",
                                      lr->line_no, "the last one", what, lr->line_no);
        return 0;
}

static bool has_prefix(const char *s, size_t n, const char *prefix) {
        size_t p = strlen(prefix);
        return n >= p && memcmp(s, prefix, p) == 0;
}

static int check_text_file(const char *buf, size_t len, size_t max, const char *what, SeatError **ret_error) {
        if (!buf && len > 0)
                return seat_error_set(ret_error, EINVAL, "no %s given", what);
        if (len > max)
                return seat_error_set(ret_error, EFBIG, "%s is %zu bytes, more than the %zu allowed", what, len, max);
        if (len == 0)
                return seat_error_set(ret_error, EBADMSG, "%s is empty", what);
        if (memchr(buf, '\0', len))
                return seat_error_set(ret_error, EBADMSG, "%s contains a NUL byte: it is not a text file", what);
        return 0;
}

/* "untrusted comment: ..." line, text after the prefix at most SEAT_COMMENT_MAX. */
static int read_comment_line(LineReader *lr, const char *what, SeatError **ret_error) {
        const char *line;
        size_t n;
        int r = line_next(lr, strlen(COMMENT_PREFIX) + SEAT_COMMENT_MAX, &line, &n, ret_error, "untrusted comment");
        if (r < 0)
                return r;
        if (!has_prefix(line, n, COMMENT_PREFIX))
                return seat_error_set(ret_error, EBADMSG, "%s does not start with \"" COMMENT_PREFIX
                                      "\": is it a minisign %s?", what, what);
        return 0;
}

/* Every minisign file starts alike: text under its cap, then the untrusted comment line. */
static int text_file_start(LineReader *lr, size_t max, const char *what, SeatError **ret_error) {
        int r = check_text_file(lr->buf, lr->len, max, what, ret_error);
        if (r < 0)
                return r;
        return read_comment_line(lr, what, ret_error);
}

/* Decode one base64 line into exactly `want` bytes (malloc'd). */
static int read_b64_line(LineReader *lr, size_t want, const char *what, void **ret, SeatError **ret_error) {
        const char *line;
        size_t n;
        void *d = NULL;
        size_t dn = 0;
        int r = line_next(lr, B64_LEN(want), &line, &n, ret_error, what);
        if (r < 0)
                return r;
        r = base64_decode(line, n, want, &d, &dn);
        if (r == -ENOMEM)
                return seat_error_set(ret_error, ENOMEM, "out of memory decoding the %s", what);
        if (r < 0 || dn != want) {
                free(d);
                return seat_error_set(ret_error, EBADMSG, "line %u (%s) is not base64 of %zu bytes", lr->line_no,
                                      what, want);
        }
        *ret = d;
        return 0;
}

static int check_comment_arg(const char *s, size_t max, const char *what, SeatError **ret_error) {
        size_t n = strnlen(s, max + 1);
        if (n > max)
                return seat_error_set(ret_error, EINVAL, "%s is longer than %zu bytes: shorten it", what, max);
        if (strpbrk(s, "\r\n"))
                return seat_error_set(ret_error, EINVAL, "%s contains a line break: it must be one line", what);
        return 0;
}

/* ---- public keys ---------------------------------------------------------------- */

static int public_key_from_blob(const uint8_t *b, SeatPublicKey *ret, SeatError **ret_error) {
        if (memcmp(b, SIG_ALG, TAG_BYTES) != 0)
                return seat_error_set(ret_error, EPROTONOSUPPORT,
                                      "unknown public key algorithm '%s' (expected 'Ed')", tag_text(b).s);
        memcpy(ret->key_id, b + TAG_BYTES, SEAT_KEY_ID_BYTES);
        memcpy(ret->pk, b + TAG_BYTES + SEAT_KEY_ID_BYTES, SEAT_PUBLIC_KEY_BYTES);
        return 0;
}

int seat_public_key_from_base64(const char *text, size_t len, SeatPublicKey *ret, SeatError **ret_error) {
        _cleanup_free_ void *d = NULL;
        size_t dn = 0;

        if (!text || !ret)
                return seat_error_set(ret_error, EINVAL, "no public key given");
        if (len > B64_LEN(PK_BLOB_BYTES))
                return seat_error_set(ret_error, EBADMSG, "public key is %zu characters, a minisign public key is %u",
                                      len, (unsigned) B64_LEN(PK_BLOB_BYTES));
        int r = base64_decode(text, len, PK_BLOB_BYTES, &d, &dn);
        if (r < 0 || dn != PK_BLOB_BYTES)
                return seat_error_set(ret_error, EBADMSG,
                                      "public key is not base64 of %u bytes: is it a minisign public key?",
                                      (unsigned) PK_BLOB_BYTES);
        return public_key_from_blob(d, ret, ret_error);
}

int seat_public_key_parse(const char *buf, size_t len, SeatPublicKey *ret, SeatError **ret_error) {
        LineReader lr = { .buf = buf, .len = len };
        _cleanup_free_ void *d = NULL;
        SeatPublicKey pk;
        int r;

        if (!ret)
                return seat_error_set(ret_error, EINVAL, "no place for the public key");
        r = text_file_start(&lr, SEAT_KEY_FILE_MAX, "public key file", ret_error);
        if (r < 0)
                return r;
        r = read_b64_line(&lr, PK_BLOB_BYTES, "public key", &d, ret_error);
        if (r < 0)
                return r;
        r = line_expect_end(&lr, "public key", ret_error);
        if (r < 0)
                return r;
        r = public_key_from_blob(d, &pk, ret_error);
        if (r < 0)
                return r;
        *ret = pk;
        return 0;
}

int seat_sign_file_read(const char *path, const char *what, const char *kind, size_t max, char **ret, size_t *ret_len,
                        SeatError **ret_error) {
        int r = read_file_capped(path, max, ret, ret_len);
        if (r == -EFBIG)
                return seat_error_set(ret_error, EFBIG, "%s file '%s' is larger than %zu bytes: not a %s", what, path, max,
                                      kind);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read %s file '%s': %s", what, path, strerror(-r));
        return 0;
}

int seat_public_key_load(const char *path, SeatPublicKey *ret, SeatError **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = seat_sign_file_read(path, "public key", "key", SEAT_KEY_FILE_MAX, &buf, &n, ret_error);
        if (r < 0)
                return r;
        r = seat_public_key_parse(buf, n, ret, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "public key file '%s'", path);
        return 0;
}

int seat_public_key_to_base64(const SeatPublicKey *pk, char **ret) {
        uint8_t blob[PK_BLOB_BYTES];

        if (!pk || !ret)
                return -EINVAL;
        memcpy(blob, SIG_ALG, TAG_BYTES);
        memcpy(blob + TAG_BYTES, pk->key_id, SEAT_KEY_ID_BYTES);
        memcpy(blob + TAG_BYTES + SEAT_KEY_ID_BYTES, pk->pk, SEAT_PUBLIC_KEY_BYTES);
        return base64_encode(blob, sizeof(blob), ret, NULL);
}

int seat_public_key_format(const SeatPublicKey *pk, const char *comment, char **ret_text) {
        _cleanup_free_ char *b64 = NULL, *def = NULL;
        int r;

        if (!ret_text)
                return -EINVAL;
        if (!comment) {
                if (asprintf(&def, DEFAULT_PK_COMMENT_FMT, seat_key_id_value(pk->key_id)) < 0)
                        return -ENOMEM;
                comment = def;
        }
        if (check_comment_arg(comment, SEAT_COMMENT_MAX, "public key comment", NULL) < 0)
                return -EINVAL;
        r = seat_public_key_to_base64(pk, &b64);
        if (r < 0)
                return r;
        if (asprintf(ret_text, COMMENT_PREFIX "%s\n%s\n", comment, b64) < 0)
                return -ENOMEM;
        return 0;
}

int seat_public_key_save(const SeatPublicKey *pk, const char *path, SeatError **ret_error) {
        _cleanup_free_ char *text = NULL;
        int r = seat_public_key_format(pk, NULL, &text);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot format the public key: %s", strerror(-r));
        r = write_file_atomic(path, text, strlen(text), 0644);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write public key file '%s': %s", path, strerror(-r));
        return 0;
}

/* ---- secret keys ---------------------------------------------------------------- */

SeatSecretKey *seat_secret_key_free(SeatSecretKey *sk) {
        sodium_free(sk); /* makes it writable, wipes, unmaps */
        return NULL;
}

bool seat_secret_key_was_protected(const SeatSecretKey *sk) {
        return sk && sk->was_protected;
}

void seat_secret_key_public(const SeatSecretKey *sk, SeatPublicKey *ret) {
        memcpy(ret->key_id, sk->key_id, SEAT_KEY_ID_BYTES);
        memcpy(ret->pk, sk->sk + 32, SEAT_PUBLIC_KEY_BYTES);
}

static int secret_key_new(const uint8_t *key_id, const uint8_t *sk_bytes, bool was_protected,
                          SeatSecretKey **ret) {
        SeatSecretKey *sk = sodium_malloc(sizeof(SeatSecretKey));
        if (!sk)
                return -ENOMEM;
        memcpy(sk->key_id, key_id, SEAT_KEY_ID_BYTES);
        memcpy(sk->sk, sk_bytes, SK_BYTES);
        sk->was_protected = was_protected;
        (void) sodium_mprotect_readonly(sk);
        *ret = sk;
        return 0;
}

int seat_secret_key_generate(SeatSecretKey **ret) {
        _cleanup_sodium_ uint8_t *tmp = NULL;
        uint8_t pk[crypto_sign_PUBLICKEYBYTES], key_id[SEAT_KEY_ID_BYTES];

        if (!ret)
                return -EINVAL;
        if (signing_init() < 0)
                return -EIO;
        tmp = sodium_malloc(SK_BYTES);
        if (!tmp)
                return -ENOMEM;
        randombytes_buf(key_id, sizeof(key_id));
        if (crypto_sign_keypair(pk, tmp) != 0)
                return -EIO;
        return secret_key_new(key_id, tmp, true, ret);
}

/* BLAKE2b-256 over sig_alg | key id | sk, as minisign's seckey_compute_chk(). */
static void secret_key_checksum(const uint8_t *blob, uint8_t out[CHK_BYTES]) {
        crypto_generichash_state st;
        crypto_generichash_init(&st, NULL, 0, CHK_BYTES);
        crypto_generichash_update(&st, blob, TAG_BYTES);
        crypto_generichash_update(&st, blob + SK_OFF_KEYNUM, SEAT_KEY_ID_BYTES);
        crypto_generichash_update(&st, blob + SK_OFF_SK, SK_BYTES);
        crypto_generichash_final(&st, out, CHK_BYTES);
        sodium_memzero(&st, sizeof(st));
}

static int check_kdf_limits(uint64_t ops, uint64_t mem, SeatError **ret_error) {
        if (ops > SEAT_KDF_OPSLIMIT_MAX || mem > SEAT_KDF_MEMLIMIT_MAX)
                return seat_error_set(ret_error, EFBIG,
                                      "secret key asks for scrypt opslimit %" PRIu64 " and memlimit %" PRIu64
                                      ", more than the %llu and %llu allowed: re-protect the key with "
                                      "default settings", ops, mem, SEAT_KDF_OPSLIMIT_MAX, SEAT_KDF_MEMLIMIT_MAX);
        if (ops < crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_MIN ||
            mem < crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_MIN)
                return seat_error_set(ret_error, EBADMSG,
                                      "secret key has scrypt opslimit %" PRIu64 " and memlimit %" PRIu64
                                      ", below libsodium's minimum (%u, %u): the key file is corrupt", ops, mem,
                                      crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_MIN,
                                      crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_MIN);
        return 0;
}

/* XOR the key id | sk | checksum part of blob with the scrypt stream of password. */
static int secret_key_kdf_xor(uint8_t *blob, const char *password, SeatError **ret_error) {
        uint64_t ops = le64_load(blob + SK_OFF_OPS), mem = le64_load(blob + SK_OFF_MEM);
        _cleanup_sodium_ uint8_t *stream = sodium_malloc(SK_KEYNUM_PART_BYTES);

        if (!stream)
                return seat_error_set(ret_error, ENOMEM, "out of memory for the key derivation");
        if (crypto_pwhash_scryptsalsa208sha256(stream, SK_KEYNUM_PART_BYTES, password, strlen(password),
                                               blob + SK_OFF_SALT, ops, (size_t) mem) != 0)
                return seat_error_set(ret_error, ENOMEM,
                                      "scrypt key derivation failed (memlimit %" PRIu64 " bytes): "
                                      "not enough memory?", mem);
        for (size_t i = 0; i < SK_KEYNUM_PART_BYTES; i++)
                blob[SK_OFF_KEYNUM + i] ^= stream[i];
        return 0;
}

static int secret_key_ask_password(SeatPasswordFn get_password, void *userdata, char **ret, SeatError **ret_error) {
        _cleanup_sodium_ char *pw = NULL;

        if (!get_password)
                return seat_error_set(ret_error, ENOKEY,
                                      "secret key is password-protected and no password was given");
        pw = sodium_malloc(SEAT_PASSWORD_MAX + 1);
        if (!pw)
                return seat_error_set(ret_error, ENOMEM, "out of memory for the password");
        memset(pw, 0, SEAT_PASSWORD_MAX + 1);
        int r = get_password(pw, SEAT_PASSWORD_MAX + 1, userdata);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot get the password of the secret key: %s", strerror(-r));
        if (strnlen(pw, SEAT_PASSWORD_MAX + 1) > SEAT_PASSWORD_MAX)
                return seat_error_set(ret_error, EINVAL, "password is longer than %u bytes", SEAT_PASSWORD_MAX);
        *ret = TAKE_PTR(pw);
        return 0;
}

/* The secret key's public half must be what its seed gives: catches corrupt keys,
 * including minisign -W keys, which carry no checksum. */
static int secret_key_check_consistent(const uint8_t *sk_bytes, SeatError **ret_error) {
        uint8_t pk[crypto_sign_PUBLICKEYBYTES];
        _cleanup_sodium_ uint8_t *sk2 = sodium_malloc(SK_BYTES);

        if (!sk2)
                return seat_error_set(ret_error, ENOMEM, "out of memory checking the secret key");
        if (crypto_sign_seed_keypair(pk, sk2, sk_bytes) != 0)
                return seat_error_set(ret_error, EIO, "cannot derive a key pair from the secret key");
        if (sodium_memcmp(pk, sk_bytes + 32, sizeof(pk)) != 0)
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "secret key is corrupt: its public half does not match its seed");
        return 0;
}

static int secret_key_decode_line(LineReader *lr, uint8_t *blob, SeatError **ret_error) {
        const char *line;
        size_t n, bin_len = 0;
        int r = line_next(lr, B64_LEN(SK_BLOB_BYTES), &line, &n, ret_error, "secret key");
        if (r < 0)
                return r;
        if (sodium_base642bin(blob, SK_BLOB_BYTES, line, n, NULL, &bin_len, NULL,
                              sodium_base64_VARIANT_ORIGINAL) != 0 ||
            bin_len != SK_BLOB_BYTES)
                return seat_error_set(ret_error, EBADMSG, "line %u (secret key) is not base64 of %u bytes",
                                      lr->line_no, (unsigned) SK_BLOB_BYTES);
        return 0;
}

static int secret_key_check_tags(const uint8_t *blob, bool *ret_protected, SeatError **ret_error) {
        static const uint8_t kdf_none[TAG_BYTES] = { 0, 0 };

        if (memcmp(blob, SIG_ALG, TAG_BYTES) != 0)
                return seat_error_set(ret_error, EPROTONOSUPPORT,
                                      "unknown secret key algorithm '%s' (expected 'Ed')", tag_text(blob).s);
        if (memcmp(blob + SK_OFF_CHKALG, CHK_ALG, TAG_BYTES) != 0)
                return seat_error_set(ret_error, EPROTONOSUPPORT,
                                      "unknown secret key checksum algorithm '%s' (expected 'B2')",
                                      tag_text(blob + SK_OFF_CHKALG).s);
        if (memcmp(blob + SK_OFF_KDF, KDF_ALG, TAG_BYTES) == 0)
                *ret_protected = true;
        else if (memcmp(blob + SK_OFF_KDF, kdf_none, TAG_BYTES) == 0)
                *ret_protected = false;
        else
                return seat_error_set(ret_error, EPROTONOSUPPORT,
                                      "unknown key derivation algorithm '%s' (expected 'Sc' or none)",
                                      tag_text(blob + SK_OFF_KDF).s);
        return 0;
}

static int secret_key_verify_checksum(const uint8_t *blob, bool was_protected, SeatError **ret_error) {
        static const uint8_t zero[CHK_BYTES] = {};
        uint8_t chk[CHK_BYTES];

        /* minisign -G -W leaves the checksum of an unprotected key all zero. */
        if (!was_protected && sodium_memcmp(blob + SK_OFF_CHK, zero, CHK_BYTES) == 0)
                return 0;
        secret_key_checksum(blob, chk);
        int eq = sodium_memcmp(chk, blob + SK_OFF_CHK, CHK_BYTES);
        sodium_memzero(chk, sizeof(chk));
        if (eq != 0)
                return seat_error_set(ret_error, EKEYREJECTED,
                                      was_protected
                                              ? "wrong password for the secret key (checksum mismatch)"
                                              : "secret key checksum mismatch: the key file is corrupt");
        return 0;
}

int seat_secret_key_parse(const char *buf, size_t len, SeatPasswordFn get_password, void *userdata,
                          SeatSecretKey **ret, SeatError **ret_error) {
        LineReader lr = { .buf = buf, .len = len };
        _cleanup_sodium_ uint8_t *blob = NULL;
        bool was_protected = false;
        int r;

        if (!ret)
                return seat_error_set(ret_error, EINVAL, "no place for the secret key");
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        r = text_file_start(&lr, SEAT_KEY_FILE_MAX, "secret key file", ret_error);
        if (r < 0)
                return r;
        blob = sodium_malloc(SK_BLOB_BYTES);
        if (!blob)
                return seat_error_set(ret_error, ENOMEM, "out of memory for the secret key");
        r = secret_key_decode_line(&lr, blob, ret_error);
        if (r < 0)
                return r;
        r = line_expect_end(&lr, "secret key", ret_error);
        if (r < 0)
                return r;
        r = secret_key_check_tags(blob, &was_protected, ret_error);
        if (r < 0)
                return r;

        if (was_protected) {
                _cleanup_sodium_ char *pw = NULL;

                r = check_kdf_limits(le64_load(blob + SK_OFF_OPS), le64_load(blob + SK_OFF_MEM), ret_error);
                if (r < 0)
                        return r;
                r = secret_key_ask_password(get_password, userdata, &pw, ret_error);
                if (r < 0)
                        return r;
                r = secret_key_kdf_xor(blob, pw, ret_error);
                if (r < 0)
                        return r;
        }
        r = secret_key_verify_checksum(blob, was_protected, ret_error);
        if (r < 0)
                return r;
        r = secret_key_check_consistent(blob + SK_OFF_SK, ret_error);
        if (r < 0)
                return r;
        r = secret_key_new(blob + SK_OFF_KEYNUM, blob + SK_OFF_SK, was_protected, ret);
        if (r < 0)
                return seat_error_set(ret_error, -r, "out of memory for the secret key");
        return 0;
}

int seat_secret_key_load(const char *path, SeatPasswordFn get_password, void *userdata, SeatSecretKey **ret,
                         SeatError **ret_error) {
        char *buf = NULL;
        size_t n = 0;
        int r = seat_sign_file_read(path, "secret key", "key", SEAT_KEY_FILE_MAX, &buf, &n, ret_error);
        if (r < 0)
                return r;
        r = seat_secret_key_parse(buf, n, get_password, userdata, ret, ret_error);
        sodium_memzero(buf, n); /* an unprotected key file is the secret itself */
        free(buf);
        if (r < 0)
                return seat_error_wrap(ret_error, "secret key file '%s'", path);
        return 0;
}

int seat_password_from_string(char *buf, size_t size, void *userdata) {
        const char *pw = userdata;
        if (!pw)
                return -ENOKEY;
        size_t n = strlen(pw);
        if (n >= size)
                return -E2BIG;
        memcpy(buf, pw, n + 1);
        return 0;
}

static int secret_key_build_blob(const SeatSecretKey *sk, const char *password, const SeatKdfLimits *limits,
                                 uint8_t *blob, SeatError **ret_error) {
        memset(blob, 0, SK_BLOB_BYTES);
        memcpy(blob, SIG_ALG, TAG_BYTES);
        memcpy(blob + SK_OFF_CHKALG, CHK_ALG, TAG_BYTES);
        memcpy(blob + SK_OFF_KEYNUM, sk->key_id, SEAT_KEY_ID_BYTES);
        memcpy(blob + SK_OFF_SK, sk->sk, SK_BYTES);
        if (!password) {
                /* kdf 0x0000, salt and limits zero as minisign -W writes them; the checksum
                 * is written (minisign ignores it for unprotected keys, we check it). */
                secret_key_checksum(blob, blob + SK_OFF_CHK);
                return 0;
        }

        uint64_t ops = limits ? limits->opslimit : crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_SENSITIVE;
        uint64_t mem = limits ? limits->memlimit : crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_SENSITIVE;
        if (ops > SEAT_KDF_OPSLIMIT_MAX || mem > SEAT_KDF_MEMLIMIT_MAX ||
            ops < crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_MIN ||
            mem < crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_MIN)
                return seat_error_set(ret_error, EINVAL,
                                      "scrypt opslimit %" PRIu64 " / memlimit %" PRIu64 " out of range "
                                      "(%u..%llu / %u..%llu)", ops, mem,
                                      crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_MIN, SEAT_KDF_OPSLIMIT_MAX,
                                      crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_MIN, SEAT_KDF_MEMLIMIT_MAX);
        if (strlen(password) > SEAT_PASSWORD_MAX)
                return seat_error_set(ret_error, EINVAL, "password is longer than %u bytes", SEAT_PASSWORD_MAX);
        memcpy(blob + SK_OFF_KDF, KDF_ALG, TAG_BYTES);
        randombytes_buf(blob + SK_OFF_SALT, SALT_BYTES);
        le64_store(blob + SK_OFF_OPS, ops);
        le64_store(blob + SK_OFF_MEM, mem);
        secret_key_checksum(blob, blob + SK_OFF_CHK);
        return secret_key_kdf_xor(blob, password, ret_error);
}

int seat_secret_key_encode(const SeatSecretKey *sk, const char *password, const SeatKdfLimits *limits,
                           const char *comment, char **ret_text, size_t *ret_len, SeatError **ret_error) {
        _cleanup_sodium_ uint8_t *blob = NULL;
        int r;

        if (!sk || !ret_text)
                return seat_error_set(ret_error, EINVAL, "no secret key given");
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        if (!comment)
                comment = password ? DEFAULT_SK_COMMENT_ENCRYPTED : DEFAULT_SK_COMMENT;
        r = check_comment_arg(comment, SEAT_COMMENT_MAX, "secret key comment", ret_error);
        if (r < 0)
                return r;
        blob = sodium_malloc(SK_BLOB_BYTES);
        if (!blob)
                return seat_error_set(ret_error, ENOMEM, "out of memory for the secret key");
        r = secret_key_build_blob(sk, password, limits, blob, ret_error);
        if (r < 0)
                return r;

        size_t b64_size = sodium_base64_ENCODED_LEN(SK_BLOB_BYTES, sodium_base64_VARIANT_ORIGINAL);
        size_t size = strlen(COMMENT_PREFIX) + strlen(comment) + 1 + b64_size + 1;
        char *text = sodium_malloc(size);
        if (!text)
                return seat_error_set(ret_error, ENOMEM, "out of memory for the secret key");
        int n = snprintf(text, size, COMMENT_PREFIX "%s\n", comment);
        sodium_bin2base64(text + n, b64_size, blob, SK_BLOB_BYTES, sodium_base64_VARIANT_ORIGINAL);
        size_t total = strlen(text);
        text[total++] = '\n';
        text[total] = '\0';
        *ret_text = text;
        if (ret_len)
                *ret_len = total;
        return 0;
}

void seat_secret_text_free(char *text) {
        sodium_free(text);
}

int seat_secret_key_save(const SeatSecretKey *sk, const char *path, const char *password,
                         const SeatKdfLimits *limits, SeatError **ret_error) {
        _cleanup_sodium_ char *text = NULL;
        size_t n;
        int r = seat_secret_key_encode(sk, password, limits, NULL, &text, &n, ret_error);
        if (r < 0)
                return r;
        r = write_file_atomic(path, text, n, 0600);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write secret key file '%s': %s", path, strerror(-r));
        return 0;
}

/* ---- signing -------------------------------------------------------------------- */

/* Ed25519 over sig || trusted comment. */
static int global_message(const uint8_t *sig, const char *tc, uint8_t **ret, size_t *ret_len) {
        size_t tn = strlen(tc);
        uint8_t *m = malloc(SEAT_SIGNATURE_BYTES + tn + 1);
        if (!m)
                return -ENOMEM;
        memcpy(m, sig, SEAT_SIGNATURE_BYTES);
        memcpy(m + SEAT_SIGNATURE_BYTES, tc, tn);
        *ret = m;
        *ret_len = SEAT_SIGNATURE_BYTES + tn;
        return 0;
}

static int sign_message(const SeatSecretKey *sk, const char *alg, const uint8_t *msg, size_t msg_len,
                        const char *trusted_comment, const char *untrusted_comment, char **ret_sig_text,
                        SeatError **ret_error) {
        uint8_t blob[SIG_BLOB_BYTES], global[SEAT_SIGNATURE_BYTES];
        _cleanup_free_ uint8_t *gm = NULL;
        _cleanup_free_ char *b64_sig = NULL, *b64_global = NULL;
        size_t gm_len;
        int r;

        if (!sk || !ret_sig_text)
                return seat_error_set(ret_error, EINVAL, "no secret key given");
        if (!trusted_comment)
                return seat_error_set(ret_error, EINVAL, "no trusted comment given");
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        if (!untrusted_comment)
                untrusted_comment = DEFAULT_SIG_COMMENT;
        r = check_comment_arg(trusted_comment, SEAT_TRUSTED_COMMENT_MAX, "trusted comment", ret_error);
        if (r < 0)
                return r;
        r = check_comment_arg(untrusted_comment, SEAT_COMMENT_MAX, "untrusted comment", ret_error);
        if (r < 0)
                return r;

        memcpy(blob, alg, TAG_BYTES);
        memcpy(blob + TAG_BYTES, sk->key_id, SEAT_KEY_ID_BYTES);
        uint8_t *sig = blob + TAG_BYTES + SEAT_KEY_ID_BYTES;
        if (crypto_sign_detached(sig, NULL, msg, msg_len, sk->sk) != 0)
                return seat_error_set(ret_error, EIO, "Ed25519 signing failed");
        if (global_message(sig, trusted_comment, &gm, &gm_len) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory signing");
        if (crypto_sign_detached(global, NULL, gm, gm_len, sk->sk) != 0)
                return seat_error_set(ret_error, EIO, "Ed25519 signing failed");
        /* Check what we are about to hand out (as minisign does with -p). */
        if (crypto_sign_verify_detached(sig, msg, msg_len, sk->sk + 32) != 0 ||
            crypto_sign_verify_detached(global, gm, gm_len, sk->sk + 32) != 0)
                return seat_error_set(ret_error, EIO, "a fresh signature does not verify: the secret key is corrupt");

        if (base64_encode(blob, sizeof(blob), &b64_sig, NULL) < 0 ||
            base64_encode(global, sizeof(global), &b64_global, NULL) < 0 ||
            asprintf(ret_sig_text, COMMENT_PREFIX "%s\n%s\n" TRUSTED_COMMENT_PREFIX "%s\n%s\n", untrusted_comment,
                     b64_sig, trusted_comment, b64_global) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory formatting the signature");
        return 0;
}

int seat_sign_digest(const SeatSecretKey *sk, const uint8_t data_digest[64], const char *trusted_comment,
                     const char *untrusted_comment, char **ret_sig_text, SeatError **ret_error) {
        if (!data_digest)
                return seat_error_set(ret_error, EINVAL, "no digest given");
        return sign_message(sk, SIG_ALG_HASHED, data_digest, SEAT_HASH_BYTES, trusted_comment, untrusted_comment,
                            ret_sig_text, ret_error);
}

int seat_sign_buffer(const SeatSecretKey *sk, const void *data, size_t len, const char *trusted_comment,
                     const char *untrusted_comment, char **ret_sig_text, SeatError **ret_error) {
        uint8_t digest[SEAT_HASH_BYTES];

        if (!data && len > 0)
                return seat_error_set(ret_error, EINVAL, "no data given");
        if (blake2b_buffer(data ? data : "", len, digest) < 0)
                return seat_error_set(ret_error, EIO, "cannot hash the data");
        return seat_sign_digest(sk, digest, trusted_comment, untrusted_comment, ret_sig_text, ret_error);
}

int seat_sign_fd(const SeatSecretKey *sk, int fd, const char *trusted_comment, const char *untrusted_comment,
                 char **ret_sig_text, SeatError **ret_error) {
        uint8_t digest[SEAT_HASH_BYTES];
        int r = blake2b_fd(fd, UINT64_MAX, digest, NULL);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read the data to sign: %s", strerror(-r));
        return seat_sign_digest(sk, digest, trusted_comment, untrusted_comment, ret_sig_text, ret_error);
}

int seat_sign_file(const SeatSecretKey *sk, const char *path, const char *trusted_comment,
                   const char *untrusted_comment, char **ret_sig_text, SeatError **ret_error) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                int e = errno;
                return seat_error_set(ret_error, e, "cannot open '%s' to sign it: %s", path, strerror(e));
        }
        int r = seat_sign_fd(sk, fd, trusted_comment, untrusted_comment, ret_sig_text, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "sign '%s'", path);
        return 0;
}

/* ---- verifying ------------------------------------------------------------------ */

typedef struct ParsedSignature {
        bool prehashed;
        uint8_t key_id[SEAT_KEY_ID_BYTES];
        uint8_t sig[SEAT_SIGNATURE_BYTES];
        uint8_t global[SEAT_SIGNATURE_BYTES];
        char *trusted_comment; /* NOT verified until verify_finish() says so */
} ParsedSignature;

static void parsed_signature_done(ParsedSignature *ps) {
        free(ps->trusted_comment);
        *ps = (ParsedSignature) {};
}

static int signature_parse_alg(const uint8_t *blob, ParsedSignature *ps, SeatError **ret_error) {
        if (memcmp(blob, SIG_ALG_HASHED, TAG_BYTES) == 0)
                ps->prehashed = true;
        else if (memcmp(blob, SIG_ALG, TAG_BYTES) == 0)
                ps->prehashed = false;
        else
                return seat_error_set(ret_error, EPROTONOSUPPORT,
                                      "unknown signature algorithm '%s' (expected 'ED', or the legacy 'Ed')",
                                      tag_text(blob).s);
        memcpy(ps->key_id, blob + TAG_BYTES, SEAT_KEY_ID_BYTES);
        memcpy(ps->sig, blob + TAG_BYTES + SEAT_KEY_ID_BYTES, SEAT_SIGNATURE_BYTES);
        return 0;
}

static int signature_parse_trusted_comment(LineReader *lr, ParsedSignature *ps, SeatError **ret_error) {
        const char *line;
        size_t n, p = strlen(TRUSTED_COMMENT_PREFIX);
        int r = line_next(lr, p + SEAT_TRUSTED_COMMENT_MAX, &line, &n, ret_error, "trusted comment");
        if (r < 0)
                return r;
        if (!has_prefix(line, n, TRUSTED_COMMENT_PREFIX))
                return seat_error_set(ret_error, EBADMSG,
                                      "line 3 of the signature does not start with \"" TRUSTED_COMMENT_PREFIX "\"");
        ps->trusted_comment = strndup(line + p, n - p);
        if (!ps->trusted_comment)
                return seat_error_set(ret_error, ENOMEM, "out of memory for the trusted comment");
        return 0;
}

static int signature_parse(const char *buf, size_t len, ParsedSignature *ret, SeatError **ret_error) {
        LineReader lr = { .buf = buf, .len = len };
        _cleanup_(parsed_signature_done) ParsedSignature ps = {};
        _cleanup_free_ void *blob = NULL, *global = NULL;
        int r;

        r = text_file_start(&lr, SEAT_SIG_FILE_MAX, "signature", ret_error);
        if (r < 0)
                return r;
        r = read_b64_line(&lr, SIG_BLOB_BYTES, "signature", &blob, ret_error);
        if (r < 0)
                return r;
        r = signature_parse_alg(blob, &ps, ret_error);
        if (r < 0)
                return r;
        r = signature_parse_trusted_comment(&lr, &ps, ret_error);
        if (r < 0)
                return r;
        r = read_b64_line(&lr, SEAT_SIGNATURE_BYTES, "global signature", &global, ret_error);
        if (r < 0)
                return r;
        r = line_expect_end(&lr, "signature", ret_error);
        if (r < 0)
                return r;
        memcpy(ps.global, global, SEAT_SIGNATURE_BYTES);
        *ret = ps;
        ps = (ParsedSignature) {};
        return 0;
}

/* Everything that needs no data: parse, key id, algorithm policy. */
static int verify_prepare(const SeatPublicKey *pk, const char *sig_text, size_t sig_len, unsigned flags,
                          ParsedSignature *ret, SeatError **ret_error) {
        _cleanup_(parsed_signature_done) ParsedSignature ps = {};
        int r;

        if (!pk)
                return seat_error_set(ret_error, EINVAL, "no trusted public key given");
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        r = signature_parse(sig_text, sig_len, &ps, ret_error);
        if (r < 0)
                return r;
        if (memcmp(ps.key_id, pk->key_id, SEAT_KEY_ID_BYTES) != 0)
                return seat_error_set(ret_error, ENOKEY,
                                      "signature was made by key %016" PRIX64 " but the trusted key is %016" PRIX64,
                                      seat_key_id_value(ps.key_id), seat_key_id_value(pk->key_id));
        if (!ps.prehashed && (flags & SEAT_VERIFY_REQUIRE_PREHASHED))
                return seat_error_set(ret_error, EPROTONOSUPPORT,
                                      "signature uses the legacy 'Ed' algorithm and only prehashed 'ED' "
                                      "signatures are accepted: sign again with a current minisign or seat-sign");
        *ret = ps;
        ps = (ParsedSignature) {};
        return 0;
}

static int verify_finish(const SeatPublicKey *pk, ParsedSignature *ps, const uint8_t *msg, size_t msg_len,
                         char **ret_trusted_comment, SeatError **ret_error) {
        _cleanup_free_ uint8_t *gm = NULL;
        size_t gm_len;

        if (global_message(ps->sig, ps->trusted_comment, &gm, &gm_len) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory verifying");
        bool data_ok = crypto_sign_verify_detached(ps->sig, msg, msg_len, pk->pk) == 0;
        bool global_ok = crypto_sign_verify_detached(ps->global, gm, gm_len, pk->pk) == 0;

        if (!data_ok && !global_ok)
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "signature does not verify with the trusted key %016" PRIX64
                                      ": the signature was altered, or another key with the same key id made it",
                                      seat_key_id_value(pk->key_id));
        if (!data_ok)
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "file does not match its signature: it was changed after it was signed");
        if (!global_ok)
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "trusted comment does not match its global signature: the trusted comment "
                                      "or the global signature was altered");
        if (ret_trusted_comment)
                *ret_trusted_comment = TAKE_PTR(ps->trusted_comment);
        return 0;
}

int seat_verify_buffer(const SeatPublicKey *pk, const void *data, size_t len, const char *sig_text,
                       size_t sig_len, unsigned flags, char **ret_trusted_comment, SeatError **ret_error) {
        _cleanup_(parsed_signature_done) ParsedSignature ps = {};
        uint8_t digest[SEAT_HASH_BYTES];
        int r;

        if (!data && len > 0)
                return seat_error_set(ret_error, EINVAL, "no data given");
        if (!data)
                data = "";
        r = verify_prepare(pk, sig_text, sig_len, flags, &ps, ret_error);
        if (r < 0)
                return r;
        if (!ps.prehashed)
                return verify_finish(pk, &ps, data, len, ret_trusted_comment, ret_error);
        if (blake2b_buffer(data, len, digest) < 0)
                return seat_error_set(ret_error, EIO, "cannot hash the data");
        return verify_finish(pk, &ps, digest, sizeof(digest), ret_trusted_comment, ret_error);
}

int seat_verify_digest(const SeatPublicKey *pk, const uint8_t data_digest[64], const char *sig_text,
                       size_t sig_len, unsigned flags, char **ret_trusted_comment, SeatError **ret_error) {
        _cleanup_(parsed_signature_done) ParsedSignature ps = {};

        if (!data_digest)
                return seat_error_set(ret_error, EINVAL, "no digest given");
        int r = verify_prepare(pk, sig_text, sig_len, flags | SEAT_VERIFY_REQUIRE_PREHASHED, &ps, ret_error);
        if (r < 0)
                return r;
        return verify_finish(pk, &ps, data_digest, SEAT_HASH_BYTES, ret_trusted_comment, ret_error);
}

/* Legacy signatures sign the data itself: read it whole, capped. */
static int read_fd_capped(int fd, uint64_t max, uint8_t **ret, size_t *ret_len) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = 0, used = 0;

        for (;;) {
                if (used == size) {
                        if (size > max)
                                return -EFBIG;
                        size_t nsize = size ? size * 2 : 64 * 1024;
                        if (nsize > max + 1)
                                nsize = (size_t) max + 1;
                        uint8_t *p = realloc(buf, nsize);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        size = nsize;
                }
                ssize_t n = loop_read(fd, buf + used, size - used);
                if (n < 0)
                        return (int) n;
                used += (size_t) n;
                if (used > max)
                        return -EFBIG;
                if ((size_t) n == 0 || used < size)
                        break;
        }
        *ret = TAKE_PTR(buf);
        *ret_len = used;
        return 0;
}

int seat_verify_fd(const SeatPublicKey *pk, int fd, const char *sig_text, size_t sig_len, unsigned flags,
                   char **ret_trusted_comment, SeatError **ret_error) {
        _cleanup_(parsed_signature_done) ParsedSignature ps = {};
        int r;

        r = verify_prepare(pk, sig_text, sig_len, flags, &ps, ret_error);
        if (r < 0)
                return r;
        if (ps.prehashed) {
                uint8_t digest[SEAT_HASH_BYTES];
                r = blake2b_fd(fd, UINT64_MAX, digest, NULL);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "cannot read the signed data: %s", strerror(-r));
                return verify_finish(pk, &ps, digest, sizeof(digest), ret_trusted_comment, ret_error);
        }

        _cleanup_free_ uint8_t *data = NULL;
        size_t len = 0;
        r = read_fd_capped(fd, SEAT_LEGACY_DATA_MAX, &data, &len);
        if (r == -EFBIG)
                return seat_error_set(ret_error, EFBIG,
                                      "legacy 'Ed' signatures need the whole file in memory and it is larger "
                                      "than %llu bytes: sign it again (prehashed 'ED')", SEAT_LEGACY_DATA_MAX);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read the signed data: %s", strerror(-r));
        return verify_finish(pk, &ps, data, len, ret_trusted_comment, ret_error);
}

int seat_verify_file(const SeatPublicKey *pk, const char *path, const char *sig_text, size_t sig_len,
                     unsigned flags, char **ret_trusted_comment, SeatError **ret_error) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                int e = errno;
                return seat_error_set(ret_error, e, "cannot open '%s' to verify it: %s", path, strerror(e));
        }
        /* The caller adds context (it knows which signature file this was). */
        return seat_verify_fd(pk, fd, sig_text, sig_len, flags, ret_trusted_comment, ret_error);
}
