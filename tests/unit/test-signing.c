/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "../lib/seat-test.h"
#include <sodium.h>

#include "common/base64.h"
#include "common/error.h"
#include "signing/hash.h"
#include "common/macro.h"
#include "signing/minisign.h"
#include "unit-source.h"

/* Real minisign 0.11 output (minisign -G -W; -S; -S -l) over "hello\n". */
static const char MS_PUB[] = "untrusted comment: minisign public key 70357A20CB3ADB78\n"
                             "RWR42zrLIHo1cMdF5dtTOqIhugYGlcAdwVg6MnKS+/qq2Ee9UdJXlLLR\n";
static const char MS_KEY_W[] =
        "untrusted comment: minisign encrypted secret key\n"
        "RWQAAEIyAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAeNs6yyB6NXDrBzgfcMLbXhfk"
        "V9lr6GcqYltsG6funENTaqDZc1la6cdF5dtTOqIhugYGlcAdwVg6MnKS+/qq2Ee9UdJXlLLRAAAAAAAAAAAAAAAAAAAAAAAA"
        "AAAAAAAAAAAAAAAAAAA=\n";
static const char MS_SIG[] =
        "untrusted comment: signature from minisign secret key\n"
        "RUR42zrLIHo1cEXTg+XfgLgwM3tAPJXNT8aBX79bESj9aQPSK6Y89MX3Vr6h6Yso8SKHqhmOe1PVS6e2lXXI9qmLgGLT6GMgGA8=\n"
        "trusted comment: timestamp:1796014853\tfile:f\thashed\n"
        "F2C5R5x/6aUArD6WLrfhnrKTrydWLBxqExN08GW2DcSX7OjOAT1PJAAYQLFD3y5ZxjflXzQU1YPKWD9bPtXCCA==\n";
static const char MS_SIG_LEGACY[] =
        "untrusted comment: signature from minisign secret key\n"
        "RWR42zrLIHo1cFIV12OnrbMr6EqpTY034KWB1CS7/7XRzF9l0h/IhDO70suq9YKjag77g01GDmJPnRFcAwyc34eMGCeiGKajOgs=\n"
        "trusted comment: legacy vector\n"
        "TPYFaWnBZnRkC3eiut0epr2YFCMFndmIIlB/l2D6BU8khiNfB78EzWO+uxuSPDPZ4lM/VP69cRwhENj9YZZJCw==\n";
static const char HELLO[] = "hello\n";

static const SeatKdfLimits fast_kdf = {
        .opslimit = crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_MIN,
        .memlimit = crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_MIN,
};

static char dir[] = "/tmp/seatd-test-signing-XXXXXX";

static int setup(void **state) {
        return mkdtemp(dir) && signing_init() == 0 ? 0 : -1;
}

static int teardown(void **state) {
        return unit_remove_tree(dir);
}

/* The failure's code and that its message contains `needle`. */
static void expect_error(int r, SeatError **ep, int code, const char *needle) {
        SeatError *e = *ep; /* read after the call (argument order is unspecified) */
        assert_int_equal(r, -code);
        assert_non_null(e);
        assert_int_equal(e->code, code);
        if (!strstr(e->message, needle))
                fail_msg("message '%s' lacks '%s'", e->message, needle);
}

/* ---- hashing -------------------------------------------------------------------- */

static void check_hex(const uint8_t *d, const char *hex) {
        char buf[SEAT_HASH_HEX_LEN + 1];
        assert_int_equal(digest_to_hex(d, SEAT_HASH_BYTES, buf, sizeof(buf)), 0);
        assert_string_equal(buf, hex);
}

TEST(blake2b_vectors) {
        uint8_t d[SEAT_HASH_BYTES], back[SEAT_HASH_BYTES];
        static const char empty[] = "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419"
                                    "d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce";
        static const char abc[] = "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                                  "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923";

        assert_int_equal(blake2b_buffer("", 0, d), 0);
        check_hex(d, empty);
        assert_int_equal(blake2b_buffer("abc", 3, d), 0);
        check_hex(d, abc);
        assert_int_equal(digest_from_hex(abc, strlen(abc), back, sizeof(back)), 0);
        assert_memory_equal(back, d, sizeof(d));
        assert_int_equal(digest_from_hex(abc, strlen(abc) - 1, back, sizeof(back)), -EINVAL);
        assert_int_equal(digest_from_hex("zz", 2, back, 1), -EINVAL);
        char small[10];
        assert_int_equal(digest_to_hex(d, sizeof(d), small, sizeof(small)), -ENOBUFS);
}

static int tmpfile_with(const void *data, size_t len) {
        char path[64];
        snprintf(path, sizeof(path), "%s/tmp.XXXXXX", dir);
        int fd = mkostemp(path, O_CLOEXEC);
        assert_true(fd >= 0);
        (void) unlink(path);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        return fd;
}

TEST(blake2b_fd) {
        uint8_t d[SEAT_HASH_BYTES], want[SEAT_HASH_BYTES];
        uint64_t size = 0;
        _cleanup_free_ uint8_t *big = malloc(200000);

        assert_non_null(big);
        for (size_t i = 0; i < 200000; i++)
                big[i] = (uint8_t) (i * 7);
        assert_int_equal(blake2b_buffer(big, 200000, want), 0);

        _cleanup_close_ int fd = tmpfile_with(big, 200000);
        assert_int_equal(blake2b_fd(fd, 200000, d, &size), 0);
        assert_int_equal(size, 200000);
        assert_memory_equal(d, want, sizeof(d));
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        assert_int_equal(blake2b_fd(fd, 199999, d, NULL), -EFBIG);
}

static void hash_in_splits(const uint8_t *data, size_t len, size_t chunk, const size_t *splits, ChunkDigests *ret) {
        _cleanup_(chunk_hasher_freep) ChunkHasher *h = NULL;
        size_t pos = 0;

        assert_int_equal(chunk_hasher_new(chunk, len, &h), 0);
        for (size_t i = 0; pos < len; i++) {
                size_t n = splits[i % 5] == 0 ? len - pos : MIN(splits[i % 5], len - pos);
                assert_int_equal(chunk_hasher_update(h, data + pos, n), 0);
                pos += n;
        }
        assert_int_equal(chunk_hasher_finish(h, ret), 0);
        assert_int_equal(chunk_hasher_update(h, "x", 1), -ESTALE);
}

TEST(chunked_identity) {
        static const size_t splits_a[] = { 0, 0, 0, 0, 0 };     /* all at once */
        static const size_t splits_b[] = { 1, 999, 1000, 1, 3 }; /* odd splits */
        static const size_t splits_c[] = { 4096, 17, 1, 2500, 333 };
        uint8_t data[10001], concat[11 * SEAT_HASH_BYTES], want[SEAT_HASH_BYTES];
        ChunkDigests a = {}, b = {}, c = {};

        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (uint8_t) (i ^ (i >> 8));
        hash_in_splits(data, sizeof(data), 1000, splits_a, &a);
        hash_in_splits(data, sizeof(data), 1000, splits_b, &b);
        hash_in_splits(data, sizeof(data), 1000, splits_c, &c);

        assert_int_equal(a.n_chunks, 11); /* 10 full, 1 of one byte */
        assert_int_equal(a.total_size, sizeof(data));
        assert_memory_equal(a.identity, b.identity, SEAT_HASH_BYTES);
        assert_memory_equal(a.identity, c.identity, SEAT_HASH_BYTES);
        assert_memory_equal(a.chunks, c.chunks, 11 * SEAT_HASH_BYTES);

        /* Definition: each chunk's BLAKE2b-512, identity over their concatenation. */
        for (size_t i = 0; i < 11; i++) {
                uint8_t d[SEAT_HASH_BYTES];
                assert_int_equal(blake2b_buffer(data + i * 1000, MIN(1000, sizeof(data) - i * 1000), d), 0);
                assert_memory_equal(d, a.chunks[i], SEAT_HASH_BYTES);
                memcpy(concat + i * SEAT_HASH_BYTES, d, SEAT_HASH_BYTES);
        }
        assert_int_equal(blake2b_buffer(concat, sizeof(concat), want), 0);
        assert_memory_equal(want, a.identity, SEAT_HASH_BYTES);

        /* Another chunk size gives another identity. */
        ChunkDigests other = {};
        hash_in_splits(data, sizeof(data), 4096, splits_b, &other);
        assert_int_equal(other.n_chunks, 3);
        assert_memory_not_equal(other.identity, a.identity, SEAT_HASH_BYTES);

        /* The fd helper agrees. */
        ChunkDigests f = {};
        _cleanup_close_ int fd = tmpfile_with(data, sizeof(data));
        assert_int_equal(chunk_hash_fd(fd, 1000, sizeof(data), &f), 0);
        assert_memory_equal(f.identity, a.identity, SEAT_HASH_BYTES);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        ChunkDigests capped = {};
        assert_int_equal(chunk_hash_fd(fd, 1000, sizeof(data) - 1, &capped), -EFBIG);

        chunk_digests_done(&a);
        chunk_digests_done(&b);
        chunk_digests_done(&c);
        chunk_digests_done(&other);
        chunk_digests_done(&f);
        chunk_digests_done(&f); /* harmless twice */
}

TEST(chunked_edges) {
        _cleanup_(chunk_hasher_freep) ChunkHasher *h = NULL;
        ChunkDigests d = {};
        uint8_t empty[SEAT_HASH_BYTES];
        ChunkHasher *bad = NULL;

        assert_int_equal(chunk_hasher_new(0, 10, &bad), -EINVAL);
        assert_int_equal(chunk_hasher_new(SEAT_CHUNK_SIZE_MAX + 1, 10, &bad), -EINVAL);
        assert_null(bad);

        assert_int_equal(chunk_hasher_new(SEAT_CHUNK_SIZE_DEFAULT, 4, &h), 0);
        assert_int_equal(chunk_hasher_update(h, "abcde", 5), -EFBIG); /* nothing consumed */
        assert_int_equal(chunk_hasher_finish(h, &d), 0);
        assert_int_equal(d.n_chunks, 0);
        assert_null(d.chunks);
        assert_int_equal(blake2b_buffer("", 0, empty), 0);
        assert_memory_equal(d.identity, empty, SEAT_HASH_BYTES);
        assert_int_equal(chunk_hasher_finish(h, &d), -ESTALE);
        chunk_digests_done(&d);
}

/* ---- keys ----------------------------------------------------------------------- */

TEST(public_key_parse) {
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *text = NULL, *b64 = NULL;
        SeatPublicKey pk, again;

        assert_int_equal(seat_public_key_parse(MS_PUB, strlen(MS_PUB), &pk, &e), 0);
        assert_true(seat_key_id_value(pk.key_id) == UINT64_C(0x70357A20CB3ADB78));
        assert_int_equal(seat_public_key_to_base64(&pk, &b64), 0);
        assert_string_equal(b64, "RWR42zrLIHo1cMdF5dtTOqIhugYGlcAdwVg6MnKS+/qq2Ee9UdJXlLLR");
        assert_int_equal(seat_public_key_from_base64(b64, strlen(b64), &again, &e), 0);
        assert_memory_equal(&pk, &again, sizeof(pk));
        assert_int_equal(seat_public_key_format(&pk, NULL, &text), 0);
        assert_string_equal(text, "untrusted comment: seat-sign public key 70357A20CB3ADB78\n"
                                  "RWR42zrLIHo1cMdF5dtTOqIhugYGlcAdwVg6MnKS+/qq2Ee9UdJXlLLR\n");

        /* No final newline, CRLF: fine. Anything else: refused with a reason. */
        assert_int_equal(seat_public_key_parse(MS_PUB, strlen(MS_PUB) - 1, &again, &e), 0);
        static const char crlf[] = "untrusted comment: x\r\nRWR42zrLIHo1cMdF5dtTOqIhugYGlcAdwVg6MnKS+/qq2Ee9UdJXlLLR\r\n";
        assert_int_equal(seat_public_key_parse(crlf, strlen(crlf), &again, &e), 0);

        static const char wrong_alg[] = "untrusted comment: x\nRVh42zrLIHo1cMdF5dtTOqIhugYGlcAdwVg6MnKS+/qq2Ee9UdJXlLLR\n";
        expect_error(seat_public_key_parse(wrong_alg, strlen(wrong_alg), &again, &e), &e, EPROTONOSUPPORT,
                     "unknown public key algorithm 'EX'");
        e = seat_error_free(e);
        static const char no_comment[] = "RWR42zrLIHo1cMdF5dtTOqIhugYGlcAdwVg6MnKS+/qq2Ee9UdJXlLLR\n";
        expect_error(seat_public_key_parse(no_comment, strlen(no_comment), &again, &e), &e, EBADMSG,
                     "does not start with");
        e = seat_error_free(e);
        expect_error(seat_public_key_parse(MS_PUB, 30, &again, &e), &e, EBADMSG, "line 2 (public key) is missing");
        e = seat_error_free(e);
        expect_error(seat_public_key_from_base64("RWR42zrL", 8, &again, &e), &e, EBADMSG, "not base64 of 42 bytes");
        e = seat_error_free(e);
        _cleanup_free_ char *trailing = NULL;
        assert_true(asprintf(&trailing, "%sextra\n", MS_PUB) > 0);
        expect_error(seat_public_key_parse(trailing, strlen(trailing), &again, &e), &e, EBADMSG, "unexpected data");
        e = seat_error_free(e);
}

static void secret_blob(const char *text, uint8_t blob[158]) {
        const char *line = strchr(text, '\n') + 1;
        _cleanup_free_ void *d = NULL;
        size_t n;
        assert_int_equal(base64_decode(line, strcspn(line, "\n"), 158, &d, &n), 0);
        assert_int_equal(n, 158);
        memcpy(blob, d, 158);
}

static char *secret_text(const uint8_t blob[158]) {
        _cleanup_free_ char *b64 = NULL;
        char *t = NULL;
        assert_int_equal(base64_encode(blob, 158, &b64, NULL), 0);
        assert_true(asprintf(&t, "untrusted comment: test\n%s\n", b64) > 0);
        return t;
}

/* MS_KEY_W's secret key with tag written at offset at (NULL: one bit flipped there) is
 * refused with code and a message holding needle, and no key comes back. */
static void expect_blob_refused(size_t at, const char *tag, int code, const char *needle) {
        _cleanup_error_ SeatError *e = NULL;
        SeatSecretKey *none = NULL;
        uint8_t blob[158];
        secret_blob(MS_KEY_W, blob);
        if (tag)
                memcpy(blob + at, tag, strlen(tag));
        else
                blob[at] ^= 1;
        _cleanup_free_ char *text = secret_text(blob);
        expect_error(seat_secret_key_parse(text, strlen(text), NULL, NULL, &none, &e), &e, code, needle);
        assert_null(none);
}

TEST(secret_key_minisign_unprotected) {
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        _cleanup_error_ SeatError *e = NULL;
        SeatPublicKey pk, want;

        /* minisign -W: kdf 0x0000, salt/limits/checksum zero; no password asked. */
        assert_int_equal(seat_secret_key_parse(MS_KEY_W, strlen(MS_KEY_W), NULL, NULL, &sk, &e), 0);
        assert_false(seat_secret_key_was_protected(sk));
        seat_secret_key_public(sk, &pk);
        assert_int_equal(seat_public_key_parse(MS_PUB, strlen(MS_PUB), &want, &e), 0);
        assert_memory_equal(&pk, &want, sizeof(pk));

        /* One flipped bit in the secret part: the seed no longer gives the public half. */
        expect_blob_refused(70, NULL, EKEYREJECTED, "secret key is corrupt");
        /* Unknown KDF and checksum tags. */
        expect_blob_refused(2, "Zz", EPROTONOSUPPORT, "unknown key derivation algorithm 'Zz'");
        expect_blob_refused(4, "B3", EPROTONOSUPPORT, "unknown secret key checksum algorithm 'B3'");
}

TEST(secret_key_password_roundtrip) {
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL, *back = NULL, *none = NULL;
        _cleanup_error_ SeatError *e = NULL;
        char *text = NULL;
        size_t n;
        SeatPublicKey a, b;

        assert_int_equal(seat_secret_key_generate(&sk), 0);
        assert_int_equal(seat_secret_key_encode(sk, "correct horse", &fast_kdf, NULL, &text, &n, &e), 0);
        assert_int_equal(strlen(text), n);
        assert_non_null(strstr(text, "untrusted comment: seat-sign encrypted secret key\n"));
        uint8_t blob[158];
        secret_blob(text, blob);
        assert_memory_equal(blob, "EdScB2", 6);

        assert_int_equal(seat_secret_key_parse(text, n, seat_password_from_string, (void *) "correct horse", &back, &e), 0);
        assert_true(seat_secret_key_was_protected(back));
        seat_secret_key_public(sk, &a);
        seat_secret_key_public(back, &b);
        assert_memory_equal(&a, &b, sizeof(a));

        expect_error(seat_secret_key_parse(text, n, seat_password_from_string, (void *) "wrong horse", &none, &e), &e,
                     EKEYREJECTED, "wrong password for the secret key (checksum mismatch)");
        e = seat_error_free(e);
        expect_error(seat_secret_key_parse(text, n, NULL, NULL, &none, &e), &e, ENOKEY, "password-protected");
        e = seat_error_free(e);
        assert_null(none);

        /* A key asking for absurd scrypt memory is refused before any derivation. */
        blob[46 + 7] = 0x7f; /* memlimit (LE, bytes 46..53): top byte */
        _cleanup_free_ char *greedy = secret_text(blob);
        expect_error(seat_secret_key_parse(greedy, strlen(greedy), seat_password_from_string, (void *) "x", &none, &e), &e, EFBIG, "memlimit");
        e = seat_error_free(e);
        seat_secret_text_free(text);

        /* Unprotected encoding writes a real checksum, which is checked. */
        assert_int_equal(seat_secret_key_encode(sk, NULL, NULL, NULL, &text, &n, &e), 0);
        secret_blob(text, blob);
        assert_memory_equal(blob, "Ed\0\0B2", 6);
        seat_secret_text_free(text);
        blob[157] ^= 0x80; /* checksum byte */
        _cleanup_free_ char *badchk = secret_text(blob);
        expect_error(seat_secret_key_parse(badchk, strlen(badchk), NULL, NULL, &none, &e), &e, EKEYREJECTED,
                     "checksum mismatch");
        e = seat_error_free(e);
}

TEST(secret_key_save_load) {
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL, *back = NULL;
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *path = NULL, *pub = NULL;
        struct stat st;
        SeatPublicKey a, b;

        assert_true(asprintf(&path, "%s/k.key", dir) > 0);
        assert_true(asprintf(&pub, "%s/k.pub", dir) > 0);
        assert_int_equal(seat_secret_key_generate(&sk), 0);
        assert_int_equal(seat_secret_key_save(sk, path, "pw", &fast_kdf, &e), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(seat_secret_key_load(path, seat_password_from_string, (void *) "pw", &back, &e), 0);
        seat_secret_key_public(sk, &a);
        assert_int_equal(seat_public_key_save(&a, pub, &e), 0);
        assert_int_equal(seat_public_key_load(pub, &b, &e), 0);
        assert_memory_equal(&a, &b, sizeof(a));

        SeatSecretKey *none = NULL;
        expect_error(seat_secret_key_load("/nonexistent/k", NULL, NULL, &none, &e), &e, ENOENT, "'/nonexistent/k'");
        e = seat_error_free(e);
}

/* ---- signatures ----------------------------------------------------------------- */

static void new_key(SeatSecretKey **sk, SeatPublicKey *pk) {
        assert_int_equal(seat_secret_key_generate(sk), 0);
        seat_secret_key_public(*sk, pk);
}

TEST(sign_verify_roundtrip) {
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *sig = NULL, *tc = NULL, *tc2 = NULL, *tc3 = NULL;
        SeatPublicKey pk;
        uint8_t digest[SEAT_HASH_BYTES];

        new_key(&sk, &pk);
        assert_int_equal(seat_sign_buffer(sk, HELLO, strlen(HELLO), "manifest v1\tseat", NULL, &sig, &e), 0);
        assert_true(strncmp(sig, "untrusted comment: signature from seat-sign secret key\nRUQ", 57) == 0);
        assert_non_null(strstr(sig, "\ntrusted comment: manifest v1\tseat\n"));
        assert_int_equal(seat_verify_buffer(&pk, HELLO, strlen(HELLO), sig, strlen(sig), 0, &tc, &e), 0);
        assert_string_equal(tc, "manifest v1\tseat");

        /* The digest and fd variants agree. */
        assert_int_equal(blake2b_buffer(HELLO, strlen(HELLO), digest), 0);
        assert_int_equal(seat_verify_digest(&pk, digest, sig, strlen(sig), 0, &tc2, &e), 0);
        _cleanup_close_ int fd = tmpfile_with(HELLO, strlen(HELLO));
        assert_int_equal(seat_verify_fd(&pk, fd, sig, strlen(sig), SEAT_VERIFY_REQUIRE_PREHASHED, &tc3, &e), 0);
        assert_string_equal(tc3, "manifest v1\tseat");

        /* Empty data signs and verifies too. */
        freep(&sig);
        assert_int_equal(seat_sign_buffer(sk, NULL, 0, "", "c", &sig, &e), 0);
        assert_int_equal(seat_verify_buffer(&pk, "", 0, sig, strlen(sig), 0, NULL, &e), 0);

        /* Comments must be one line and within caps. */
        char *none = NULL;
        expect_error(seat_sign_buffer(sk, "x", 1, "two\nlines", NULL, &none, &e), &e, EINVAL, "line break");
        e = seat_error_free(e);
        _cleanup_free_ char *huge = malloc(SEAT_TRUSTED_COMMENT_MAX + 2);
        memset(huge, 'a', SEAT_TRUSTED_COMMENT_MAX + 1);
        huge[SEAT_TRUSTED_COMMENT_MAX + 1] = '\0';
        expect_error(seat_sign_buffer(sk, "x", 1, huge, NULL, &none, &e), &e, EINVAL, "longer than 8192");
        e = seat_error_free(e);
        assert_null(none);
}

TEST(minisign_vectors) {
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *tc = NULL, *tc2 = NULL;
        SeatPublicKey pk;

        assert_int_equal(seat_public_key_parse(MS_PUB, strlen(MS_PUB), &pk, &e), 0);
        assert_int_equal(seat_verify_buffer(&pk, HELLO, strlen(HELLO), MS_SIG, strlen(MS_SIG), 0, &tc, &e), 0);
        assert_string_equal(tc, "timestamp:1796014853\tfile:f\thashed");
        assert_int_equal(seat_verify_buffer(&pk, HELLO, strlen(HELLO), MS_SIG_LEGACY, strlen(MS_SIG_LEGACY), 0,
                                            &tc2, &e), 0);
        assert_string_equal(tc2, "legacy vector");

        /* Legacy refused on request, and by the digest variant (it needs the data). */
        uint8_t digest[SEAT_HASH_BYTES];
        assert_int_equal(blake2b_buffer(HELLO, strlen(HELLO), digest), 0);
        expect_error(seat_verify_buffer(&pk, HELLO, strlen(HELLO), MS_SIG_LEGACY, strlen(MS_SIG_LEGACY),
                                        SEAT_VERIFY_REQUIRE_PREHASHED, NULL, &e), &e, EPROTONOSUPPORT, "legacy 'Ed'");
        e = seat_error_free(e);
        expect_error(seat_verify_digest(&pk, digest, MS_SIG_LEGACY, strlen(MS_SIG_LEGACY), 0, NULL, &e), &e,
                     EPROTONOSUPPORT, "legacy 'Ed'");
        e = seat_error_free(e);

        /* The legacy one through an fd too (whole-data path). */
        _cleanup_close_ int fd = tmpfile_with(HELLO, strlen(HELLO));
        assert_int_equal(seat_verify_fd(&pk, fd, MS_SIG_LEGACY, strlen(MS_SIG_LEGACY), 0, NULL, &e), 0);

        /* Our signer, given minisign's key, writes exactly what minisign -S -t writes. */
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        _cleanup_free_ char *ours = NULL;
        assert_int_equal(seat_secret_key_parse(MS_KEY_W, strlen(MS_KEY_W), NULL, NULL, &sk, &e), 0);
        assert_int_equal(seat_sign_buffer(sk, HELLO, strlen(HELLO), "timestamp:1796014853\tfile:f\thashed",
                                          "signature from minisign secret key", &ours, &e), 0);
        assert_string_equal(ours, MS_SIG);
}

/* Replace line `line` (0-based) of a signature: flip bit `bit` of byte `byte` of its
 * base64-decoded content, or of the text itself when the line is not base64. */
static char *tamper(const char *sig, unsigned line, size_t byte, unsigned bit, bool decode) {
        const char *start = sig;
        for (unsigned i = 0; i < line; i++)
                start = strchr(start, '\n') + 1;
        size_t len = strcspn(start, "\n");
        _cleanup_free_ char *repl = NULL;

        if (decode) {
                _cleanup_free_ uint8_t *d = NULL;
                size_t n;
                assert_int_equal(base64_decode(start, len, 1024, (void **) &d, &n), 0);
                assert_true(byte < n);
                d[byte] ^= (uint8_t) (1u << bit);
                assert_int_equal(base64_encode(d, n, &repl, NULL), 0);
        } else {
                repl = strndup(start, len);
                repl[byte] ^= (char) (1u << bit);
        }
        char *out = NULL;
        assert_true(asprintf(&out, "%.*s%s%s", (int) (start - sig), sig, repl, start + len) > 0);
        return out;
}

TEST(tamper_cases) {
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL, *other = NULL;
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *sig = NULL;
        SeatPublicKey pk, other_pk;
        char *tc = NULL;
        char data[] = "the image manifest";

        new_key(&sk, &pk);
        new_key(&other, &other_pk);
        assert_int_equal(seat_sign_buffer(sk, data, strlen(data), "trusted", "untrusted", &sig, &e), 0);

        /* One bit of the data. */
        data[3] ^= 1;
        expect_error(seat_verify_buffer(&pk, data, strlen(data), sig, strlen(sig), 0, &tc, &e), &e, EKEYREJECTED,
                     "file does not match its signature");
        e = seat_error_free(e);
        data[3] ^= 1;

        /* One bit of the Ed25519 signature (bytes 10..73 of line 2). */
        for (size_t byte = 10; byte < 74; byte += 21) {
                _cleanup_free_ char *t = tamper(sig, 1, byte, byte % 8, true);
                expect_error(seat_verify_buffer(&pk, data, strlen(data), t, strlen(t), 0, &tc, &e), &e,
                             EKEYREJECTED, "signature does not verify with the trusted key");
                e = seat_error_free(e);
        }

        /* One bit of the trusted comment text. */
        _cleanup_free_ char *t_tc = tamper(sig, 2, strlen("trusted comment: ") + 2, 0, false);
        expect_error(seat_verify_buffer(&pk, data, strlen(data), t_tc, strlen(t_tc), 0, &tc, &e), &e, EKEYREJECTED,
                     "trusted comment does not match its global signature");
        e = seat_error_free(e);

        /* One bit of the global signature. */
        _cleanup_free_ char *t_g = tamper(sig, 3, 40, 5, true);
        expect_error(seat_verify_buffer(&pk, data, strlen(data), t_g, strlen(t_g), 0, &tc, &e), &e, EKEYREJECTED,
                     "trusted comment does not match its global signature");
        e = seat_error_free(e);

        /* The untrusted comment is not covered: changing it changes nothing. */
        _cleanup_free_ char *t_u = tamper(sig, 0, strlen("untrusted comment: ") + 1, 0, false);
        assert_int_equal(seat_verify_buffer(&pk, data, strlen(data), t_u, strlen(t_u), 0, NULL, &e), 0);

        /* Another key: refused on the key id, before any verification. */
        expect_error(seat_verify_buffer(&other_pk, data, strlen(data), sig, strlen(sig), 0, &tc, &e), &e, ENOKEY,
                     "signature was made by key");
        assert_non_null(strstr(e->message, "but the trusted key is"));
        e = seat_error_free(e);

        /* Same key id, another public key. */
        SeatPublicKey impostor = other_pk;
        memcpy(impostor.key_id, pk.key_id, SEAT_KEY_ID_BYTES);
        expect_error(seat_verify_buffer(&impostor, data, strlen(data), sig, strlen(sig), 0, &tc, &e), &e,
                     EKEYREJECTED, "another key with the same key id");
        e = seat_error_free(e);

        /* Unknown algorithm tag. */
        _cleanup_free_ char *t1 = tamper(sig, 1, 0, 4, true); /* 'E' ^ 0x10 = 'U' */
        _cleanup_free_ char *t2 = tamper(t1, 1, 1, 4, true);  /* 'D' ^ 0x10 = 'T' */
        expect_error(seat_verify_buffer(&pk, data, strlen(data), t2, strlen(t2), 0, &tc, &e), &e, EPROTONOSUPPORT,
                     "unknown signature algorithm 'UT'");
        e = seat_error_free(e);
        assert_null(tc);
}

TEST(malformed_signatures) {
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *sig = NULL;
        SeatPublicKey pk;

        new_key(&sk, &pk);
        assert_int_equal(seat_sign_buffer(sk, "d", 1, "tc", NULL, &sig, &e), 0);
        size_t len = strlen(sig);

        /* Every truncation fails (except dropping the final newline), and says why. */
        for (size_t n = 0; n + 1 < len; n++) {
                int r = seat_verify_buffer(&pk, "d", 1, sig, n, 0, NULL, &e);
                assert_true(r < 0);
                assert_non_null(e);
                e = seat_error_free(e);
        }
        assert_int_equal(seat_verify_buffer(&pk, "d", 1, sig, len - 1, 0, NULL, &e), 0);
        expect_error(seat_verify_buffer(&pk, "d", 1, sig, 60, 0, NULL, &e), &e, EBADMSG, "not base64 of 74 bytes");
        e = seat_error_free(e);
        expect_error(seat_verify_buffer(&pk, "d", 1, sig, 0, 0, NULL, &e), &e, EBADMSG, "empty");
        e = seat_error_free(e);

        /* CRLF line ends are accepted (minisign trims them). */
        _cleanup_free_ char *crlf = malloc(2 * len + 1);
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                if (sig[i] == '\n')
                        crlf[o++] = '\r';
                crlf[o++] = sig[i];
        }
        assert_int_equal(seat_verify_buffer(&pk, "d", 1, crlf, o, 0, NULL, &e), 0);

        /* Oversized file, oversized comment lines, trailing data, NUL, garbage. */
        _cleanup_free_ char *big = malloc(SEAT_SIG_FILE_MAX + 1);
        memset(big, 'A', SEAT_SIG_FILE_MAX + 1);
        expect_error(seat_verify_buffer(&pk, "d", 1, big, SEAT_SIG_FILE_MAX + 1, 0, NULL, &e), &e, EFBIG,
                     "more than the 65536 allowed");
        e = seat_error_free(e);
        _cleanup_free_ char *longuc = NULL;
        assert_true(asprintf(&longuc, "untrusted comment: %01025d\n%s", 0, strchr(sig, '\n') + 1) > 0);
        expect_error(seat_verify_buffer(&pk, "d", 1, longuc, strlen(longuc), 0, NULL, &e), &e, EFBIG,
                     "line 1 (untrusted comment)");
        e = seat_error_free(e);
        _cleanup_free_ char *trailing = NULL;
        assert_true(asprintf(&trailing, "%sx\n", sig) > 0);
        expect_error(seat_verify_buffer(&pk, "d", 1, trailing, strlen(trailing), 0, NULL, &e), &e, EBADMSG,
                     "unexpected data after line 4");
        e = seat_error_free(e);
        _cleanup_free_ char *nul = strdup(sig);
        nul[5] = '\0';
        expect_error(seat_verify_buffer(&pk, "d", 1, nul, len, 0, NULL, &e), &e, EBADMSG, "NUL byte");
        e = seat_error_free(e);
        static const char garbage[] = "hello\nworld\n";
        expect_error(seat_verify_buffer(&pk, "d", 1, garbage, strlen(garbage), 0, NULL, &e), &e, EBADMSG,
                     "does not start with \"untrusted comment: \"");
        e = seat_error_free(e);
        _cleanup_free_ char *no_tc = tamper(sig, 2, 0, 5, false); /* "trusted" -> "Trusted" */
        expect_error(seat_verify_buffer(&pk, "d", 1, no_tc, strlen(no_tc), 0, NULL, &e), &e, EBADMSG,
                     "line 3 of the signature does not start with");
        e = seat_error_free(e);
}

TEST_MAIN_FIXTURE("signing", setup, teardown)
