/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/base64.h"
#include "boxkey.h"
#include "common/fileio.h"
#include "hash.h"
#include "minisign.h"
#include "sodium-cleanup.h"

#define BOX_TAG "BX"
#define BOX_TAG_BYTES 2U
#define BOX_FILE_MAX 4096U
#define BOX_PK_BLOB (BOX_TAG_BYTES + SEAT_BOX_KEY_ID_BYTES + SEAT_BOX_PUBLIC_KEY_BYTES)
#define BOX_CHECKSUM_BYTES 32U
#define BOX_SK_BLOB                                                                                   \
        (BOX_TAG_BYTES + 2U + SEAT_BOX_KEY_ID_BYTES + SEAT_BOX_SECRET_KEY_BYTES + SEAT_BOX_PUBLIC_KEY_BYTES + \
         BOX_CHECKSUM_BYTES)
#define PK_COMMENT "untrusted comment: seatd facilitator box public key "
#define SK_COMMENT "untrusted comment: seatd facilitator box secret key"

struct SeatBoxSecretKey {
        uint8_t key_id[SEAT_BOX_KEY_ID_BYTES];
        uint8_t sk[SEAT_BOX_SECRET_KEY_BYTES];
        uint8_t pk[SEAT_BOX_PUBLIC_KEY_BYTES];
};

static uint64_t key_id_value(const uint8_t id[SEAT_BOX_KEY_ID_BYTES]) {
        uint64_t v = 0;
        for (unsigned i = 0; i < SEAT_BOX_KEY_ID_BYTES; i++)
                v |= (uint64_t) id[i] << (8 * i);
        return v;
}

SeatBoxSecretKey *seat_box_secret_key_free(SeatBoxSecretKey *sk) {
        sodium_free(sk);
        return NULL;
}

int seat_box_key_generate(SeatBoxSecretKey **ret) {
        if (signing_init() < 0)
                return -EIO;
        _cleanup_(seat_box_secret_key_freep) SeatBoxSecretKey *sk = sodium_malloc(sizeof(*sk));
        if (!sk)
                return -ENOMEM;
        randombytes_buf(sk->key_id, sizeof(sk->key_id));
        if (crypto_box_keypair(sk->pk, sk->sk) != 0)
                return -EIO;
        *ret = TAKE_PTR(sk);
        return 0;
}

void seat_box_key_public(const SeatBoxSecretKey *sk, SeatBoxPublicKey *ret) {
        memcpy(ret->key_id, sk->key_id, sizeof(ret->key_id));
        memcpy(ret->pk, sk->pk, sizeof(ret->pk));
}

/* "comment line\nbase64 line\n?" → decoded blob of exactly want bytes. */
static int parse_two_lines(const char *buf, size_t len, const char *comment_prefix, size_t want, void **ret,
                           const char *what, SeatError **ret_error) {
        if (len > BOX_FILE_MAX || memchr(buf, '\0', len))
                return seat_error_set(ret_error, EBADMSG, "%s: not a key file (too large or binary)", what);
        const char *nl = memchr(buf, '\n', len);
        if (!nl || (size_t) (nl - buf) < strlen(comment_prefix) ||
            strncmp(buf, comment_prefix, strlen(comment_prefix)) != 0)
                return seat_error_set(ret_error, EBADMSG, "%s: the first line is not '%s…'", what, comment_prefix);
        const char *b = nl + 1, *end = buf + len;
        size_t blen = (size_t) (end - b);
        if (blen > 0 && b[blen - 1] == '\n')
                blen--;
        if (blen > 0 && b[blen - 1] == '\r')
                blen--;
        if (memchr(b, '\n', blen))
                return seat_error_set(ret_error, EBADMSG, "%s: more than two lines", what);
        void *d = NULL;
        size_t dlen = 0;
        int r = base64_decode(b, blen, want, &d, &dlen);
        if (r < 0 || dlen != want) {
                if (d)
                        sodium_memzero(d, dlen);
                free(d);
                return seat_error_set(ret_error, EBADMSG, "%s: the key line is not base64 of %zu bytes", what, want);
        }
        if (memcmp(d, BOX_TAG, BOX_TAG_BYTES) != 0) {
                char tag[3] = { ((char *) d)[0], ((char *) d)[1], 0 };
                bool printable = tag[0] >= 0x20 && tag[0] < 0x7f && tag[1] >= 0x20 && tag[1] < 0x7f;
                sodium_memzero(d, dlen);
                free(d);
                return seat_error_set(ret_error, EPROTONOSUPPORT, "%s: tag '%s' is not a box key's 'BX'%s", what,
                                      printable ? tag : "??",
                                      strcmp(tag, "Ed") == 0 ? " (this is a signing key)" : "");
        }
        *ret = d;
        return 0;
}

int seat_box_public_key_parse(const char *buf, size_t len, SeatBoxPublicKey *ret, SeatError **ret_error) {
        _cleanup_free_ uint8_t *d = NULL;
        int r = parse_two_lines(buf, len, "untrusted comment: ", BOX_PK_BLOB, (void **) &d, "box public key",
                                ret_error);
        if (r < 0)
                return r;
        memcpy(ret->key_id, d + BOX_TAG_BYTES, SEAT_BOX_KEY_ID_BYTES);
        memcpy(ret->pk, d + BOX_TAG_BYTES + SEAT_BOX_KEY_ID_BYTES, SEAT_BOX_PUBLIC_KEY_BYTES);
        return 0;
}

static void checksum(const uint8_t *key_id, const uint8_t *sk, const uint8_t *pk, uint8_t out[BOX_CHECKSUM_BYTES]) {
        crypto_generichash_state st;
        crypto_generichash_init(&st, NULL, 0, BOX_CHECKSUM_BYTES);
        crypto_generichash_update(&st, (const uint8_t *) BOX_TAG, BOX_TAG_BYTES);
        crypto_generichash_update(&st, key_id, SEAT_BOX_KEY_ID_BYTES);
        crypto_generichash_update(&st, sk, SEAT_BOX_SECRET_KEY_BYTES);
        crypto_generichash_update(&st, pk, SEAT_BOX_PUBLIC_KEY_BYTES);
        crypto_generichash_final(&st, out, BOX_CHECKSUM_BYTES);
        sodium_memzero(&st, sizeof(st));
}

int seat_box_secret_key_parse(const char *buf, size_t len, SeatBoxSecretKey **ret, SeatError **ret_error) {
        uint8_t *d = NULL;
        uint8_t sum[BOX_CHECKSUM_BYTES], derived[SEAT_BOX_PUBLIC_KEY_BYTES];
        int r;

        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        r = parse_two_lines(buf, len, "untrusted comment: ", BOX_SK_BLOB, (void **) &d, "box secret key",
                            ret_error);
        if (r < 0)
                return r;
        const uint8_t *p = d + BOX_TAG_BYTES;
        if (p[0] != 0 || p[1] != 0) {
                r = seat_error_set(ret_error, EPROTONOSUPPORT,
                                   "box secret key: protection (kdf 0x%02x%02x) is not supported", p[0], p[1]);
                goto out;
        }
        p += 2;
        const uint8_t *id = p, *sk = p + SEAT_BOX_KEY_ID_BYTES, *pk = sk + SEAT_BOX_SECRET_KEY_BYTES,
                      *cs = pk + SEAT_BOX_PUBLIC_KEY_BYTES;
        checksum(id, sk, pk, sum);
        crypto_scalarmult_base(derived, sk);
        if (sodium_memcmp(sum, cs, sizeof(sum)) != 0 || sodium_memcmp(derived, pk, sizeof(derived)) != 0) {
                r = seat_error_set(ret_error, EKEYREJECTED, "box secret key: checksum mismatch (corrupt key)");
                goto out;
        }
        SeatBoxSecretKey *k = sodium_malloc(sizeof(*k));
        if (!k) {
                r = seat_error_set(ret_error, ENOMEM, "out of memory");
                goto out;
        }
        memcpy(k->key_id, id, sizeof(k->key_id));
        memcpy(k->sk, sk, sizeof(k->sk));
        memcpy(k->pk, pk, sizeof(k->pk));
        *ret = k;
        r = 0;
out:
        sodium_memzero(d, BOX_SK_BLOB);
        free(d);
        return r;
}

int seat_box_public_key_load(const char *path, SeatBoxPublicKey *ret, SeatError **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = seat_sign_file_read(path, "box public key", "key", BOX_FILE_MAX, &buf, &n, ret_error);
        if (r < 0)
                return r;
        r = seat_box_public_key_parse(buf, n, ret, ret_error);
        return r < 0 ? seat_error_wrap(ret_error, "'%s'", path) : 0;
}

int seat_box_secret_key_load(const char *path, SeatBoxSecretKey **ret, SeatError **ret_error) {
        char *buf = NULL;
        size_t n = 0;
        int r = seat_sign_file_read(path, "box secret key", "key", BOX_FILE_MAX, &buf, &n, ret_error);
        if (r < 0)
                return r;
        r = seat_box_secret_key_parse(buf, n, ret, ret_error);
        sodium_memzero(buf, n);
        free(buf);
        return r < 0 ? seat_error_wrap(ret_error, "'%s'", path) : 0;
}

int seat_box_public_key_save(const SeatBoxPublicKey *pk, const char *path, SeatError **ret_error) {
        uint8_t blob[BOX_PK_BLOB];
        _cleanup_free_ char *b64 = NULL, *text = NULL;

        memcpy(blob, BOX_TAG, BOX_TAG_BYTES);
        memcpy(blob + BOX_TAG_BYTES, pk->key_id, SEAT_BOX_KEY_ID_BYTES);
        memcpy(blob + BOX_TAG_BYTES + SEAT_BOX_KEY_ID_BYTES, pk->pk, SEAT_BOX_PUBLIC_KEY_BYTES);
        if (base64_encode(blob, sizeof(blob), &b64, NULL) < 0 ||
            asprintf(&text, PK_COMMENT "%016" PRIX64 "\n%s\n", key_id_value(pk->key_id), b64) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        int r = write_file_atomic(path, text, strlen(text), 0644);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write box public key file '%s': %s", path, strerror(-r));
        return 0;
}

int seat_box_secret_key_save(const SeatBoxSecretKey *sk, const char *path, SeatError **ret_error) {
        const size_t b64_len = base64_encoded_len(BOX_SK_BLOB);
        const size_t text_len = strlen(SK_COMMENT) + 1 + b64_len + 1;
        _cleanup_sodium_ uint8_t *blob = sodium_malloc(BOX_SK_BLOB);
        _cleanup_sodium_ char *text = sodium_malloc(text_len);

        if (!blob || !text)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        uint8_t *p = blob;
        memcpy(p, BOX_TAG, BOX_TAG_BYTES), p += BOX_TAG_BYTES;
        *p++ = 0, *p++ = 0;
        memcpy(p, sk->key_id, SEAT_BOX_KEY_ID_BYTES), p += SEAT_BOX_KEY_ID_BYTES;
        memcpy(p, sk->sk, SEAT_BOX_SECRET_KEY_BYTES), p += SEAT_BOX_SECRET_KEY_BYTES;
        memcpy(p, sk->pk, SEAT_BOX_PUBLIC_KEY_BYTES), p += SEAT_BOX_PUBLIC_KEY_BYTES;
        checksum(sk->key_id, sk->sk, sk->pk, p);
        memcpy(text, SK_COMMENT "\n", strlen(SK_COMMENT) + 1);
        base64_encode_to(blob, BOX_SK_BLOB, text + strlen(SK_COMMENT) + 1);
        text[text_len - 1] = '\n';
        int r = write_file_atomic(path, text, text_len, 0600);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write box secret key file '%s': %s", path, strerror(-r));
        return 0;
}

int seat_box_seal(const SeatBoxPublicKey *pk, const void *data, size_t len, uint8_t *out) {
        if (signing_init() < 0)
                return -EIO;
        return crypto_box_seal(out, data, len, pk->pk) == 0 ? 0 : -EIO;
}

int seat_box_seal_open(const SeatBoxSecretKey *sk, const uint8_t *sealed, size_t len, uint8_t *out) {
        if (len < SEAT_BOX_SEAL_OVERHEAD)
                return -EBADMSG;
        return crypto_box_seal_open(out, sealed, len, sk->pk, sk->sk) == 0 ? 0 : -EBADMSG;
}
