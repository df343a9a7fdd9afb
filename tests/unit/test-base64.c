/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "common/base64.h"
#include "common/macro.h"

static void check_roundtrip(const char *plain, const char *encoded) {
        _cleanup_free_ char *e = NULL;
        _cleanup_free_ void *d = NULL;
        size_t n, m;

        assert_int_equal(base64_encode(plain, strlen(plain), &e, &n), 0);
        assert_string_equal(e, encoded);
        assert_int_equal(n, strlen(encoded));
        assert_int_equal(base64_decode(encoded, strlen(encoded), 1024, &d, &m), 0);
        assert_int_equal(m, strlen(plain));
        assert_memory_equal(d, plain, m);
}

TEST(rfc4648_vectors) {
        check_roundtrip("", "");
        check_roundtrip("f", "Zg==");
        check_roundtrip("fo", "Zm8=");
        check_roundtrip("foo", "Zm9v");
        check_roundtrip("foob", "Zm9vYg==");
        check_roundtrip("fooba", "Zm9vYmE=");
        check_roundtrip("foobar", "Zm9vYmFy");
}

TEST(rejects_bad_input) {
        void *d = NULL;
        size_t n;
        const char *bad[] = { "Zg=", "Zg", "Z===", "Zh==", "Zm9=", "Zm 9v", "Zm9v\n", "Zm-v", "=Zm9", "Zg==Zg==" };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(base64_decode(bad[i], strlen(bad[i]), 1024, &d, &n), -EINVAL);
        assert_null(d);
}

TEST(cap) {
        _cleanup_free_ void *d = NULL;
        void *none = NULL;
        size_t n;

        assert_int_equal(base64_decode("Zm9vYmFy", 8, 5, &none, &n), -E2BIG);
        assert_null(none);
        assert_int_equal(base64_decode("Zm9vYmFy", 8, 6, &d, &n), 0);
        assert_int_equal(n, 6);
}

TEST(binary) {
        uint8_t buf[256];
        _cleanup_free_ char *e = NULL;
        _cleanup_free_ void *d = NULL;
        size_t n, m;

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (uint8_t) i;
        for (size_t len = 0; len <= sizeof(buf); len += 37) {
                assert_int_equal(base64_encode(buf, len, &e, &n), 0);
                assert_int_equal(n, base64_encoded_len(len));
                assert_int_equal(base64_decode(e, n, len, &d, &m), 0);
                assert_int_equal(m, len);
                assert_memory_equal(d, buf, len);
                freep(&e);
                freep(&d);
        }
}

TEST_MAIN("base64")
