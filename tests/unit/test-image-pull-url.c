/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image_pull_check_url(): which URLs a pull accepts, and what its messages show of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "images/pull.h"

static void accepted(const char *url, bool allow_plain_http, const char *display) {
        _cleanup_free_ char *shown = NULL;
        _cleanup_error_ SeatError *err = NULL;
        if (image_pull_check_url(url, allow_plain_http, &shown, &err) < 0)
                fail_msg("'%s' refused: %s", url, err ? err->message : "?");
        assert_string_equal(shown, display);
}

static void refused(const char *url, bool allow_plain_http, int code, const char *in_message) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ char *shown = NULL;
        assert_int_equal(image_pull_check_url(url, allow_plain_http, &shown, &err), -code);
        assert_null(shown);
        assert_non_null(err);
        if (!strstr(err->message, in_message))
                fail_msg("'%s' does not mention '%s'", err->message, in_message);
}

TEST(schemes) {
        accepted("https://mirror.example/img/manifest.json", false, "https://mirror.example/img/manifest.json");
        accepted("HTTPS://Mirror.Example:8443/manifest.json", false, "https://Mirror.Example:8443/manifest.json");
        accepted("http://127.0.0.1:8080/b/manifest.json", true, "http://127.0.0.1:8080/b/manifest.json");
        refused("http://127.0.0.1/b/manifest.json", false, EPERM, "allow_plain_http = true");
        refused("file:///etc/passwd", true, EINVAL, "only https://");
        refused("ftp://mirror.example/manifest.json", true, EINVAL, "only https://");
        refused("gopher://mirror.example/manifest.json", true, EINVAL, "only https://");
        refused("mirror.example/manifest.json", true, EINVAL, "not a valid URL");
}

TEST(shape) {
        refused("https://mirror.example/img/", false, EINVAL, "does not name a file");
        refused("https://mirror.example", false, EINVAL, "does not name a file");
        refused("https://mirror.example/a b.json", false, EINVAL, "no spaces");
        refused("https://mirror.example/\x1b[31m.json", false, EINVAL, "not a valid URL");
        char big[PULL_URL_MAX + 64] = "https://mirror.example/";
        memset(big + strlen(big), 'a', sizeof(big) - strlen(big) - 1);
        big[sizeof(big) - 1] = '\0';
        refused(big, false, EINVAL, "at most");
}

TEST(no_credentials_shown) {
        accepted("https://user:secret@mirror.example/img/manifest.json?token=secret#frag", false,
                 "https://mirror.example/img/manifest.json");
        refused("http://user:secret@mirror.example/img/manifest.json?token=secret", false, EPERM,
                "'http://mirror.example/img/manifest.json' is plain HTTP");
        _cleanup_error_ SeatError *err = NULL;
        assert_true(image_pull_check_url("https://user:secret@mirror.example/a b?token=secret", false, NULL, &err) < 0);
        assert_null(strstr(err->message, "secret"));
}

TEST_MAIN("image-pull-url")
