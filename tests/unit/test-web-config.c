/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web.conf: defaults, values, refusals (plain HTTP off loopback), and the docs. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "unit-source.h"
#include "conf.h"

static WebConfig *parse(const char *text) {
        WebConfig *c = NULL;
        _cleanup_error_ SeatError *err = NULL;
        if (web_config_parse(text, strlen(text), "test.conf", &c, &err) < 0)
                fail_msg("refused: %s", err ? err->message : "?");
        return c;
}

static void refused_len(const char *text, size_t len, const char *msg) {
        _cleanup_(web_config_freep) WebConfig *c = NULL;
        _cleanup_error_ SeatError *err = NULL;
        assert_true(web_config_parse(text, len, "test.conf", &c, &err) < 0);
        assert_null(c);
        assert_non_null(err);
        if (!strstr(err->message, msg))
                fail_msg("'%s' does not say '%s'", err->message, msg);
}

static void refused(const char *text, const char *msg) {
        refused_len(text, strlen(text), msg);
}

TEST(defaults) {
        _cleanup_(web_config_freep) WebConfig *c = parse("");
        assert_string_equal(c->listen_address, "127.0.0.1");
        assert_int_equal(c->listen_port, 8443);
        assert_false(c->plain_http);
        assert_null(c->tls_cert);
        assert_string_equal(c->state_dir, "/var/lib/seat-web");
        assert_string_equal(c->participant_socket, "/run/seatd/participant.sock");
        char cert[256], key[256];
        web_config_tls_paths(c, cert, sizeof(cert), key, sizeof(key));
        assert_string_equal(cert, "/var/lib/seat-web/tls/cert.pem");
        assert_string_equal(key, "/var/lib/seat-web/tls/key.pem");
}

TEST(values) {
        _cleanup_(web_config_freep) WebConfig *c = parse("# comment\n  listen_address = ::1 \nlisten_port=443\n"
                                                         "plain_http = yes\ntls_cert = /e/c.pem\ntls_key = /e/k.pem\n"
                                                         "login_rate_per_address = 3\nidle_timeout = 5\n\r\n");
        assert_string_equal(c->listen_address, "::1");
        assert_int_equal(c->listen_port, 443);
        assert_true(c->plain_http);
        assert_int_equal(c->login_rate_per_address, 3);
        assert_int_equal(c->idle_timeout, 5);
        char cert[256], key[256];
        web_config_tls_paths(c, cert, sizeof(cert), key, sizeof(key));
        assert_string_equal(cert, "/e/c.pem");
        _cleanup_(web_config_freep) WebConfig *lo = parse("listen_address = 127.3.4.5\nplain_http = true\n");
        assert_true(lo->plain_http);
}

TEST(refusals) {
        refused("listen_address = 0.0.0.0\nplain_http = true\n", "needs a loopback listen_address");
        refused("plain_http = true\nlisten_address = 192.0.2.10\n", "needs a loopback");
        refused("listen_address = ::\nplain_http = true\n", "needs a loopback");
        refused("listen_address = ::ffff:127.0.0.1\nplain_http = true\n", "needs a loopback");
        refused("listen_address = localhost\n", "test.conf:1: listen_address = 'localhost' is not valid");
        refused("listen_port = 0\n", "not a number in 1..65535");
        refused("listen_port = 65536\n", "not a number");
        refused("listen_port = -1\n", "not a number");
        refused("listen_port = 1x\n", "not a number");
        refused("plain_http = maybe\n", "is not valid");
        refused("state_dir = relative\n", "is not valid");
        refused("state_dir = /a/../b\n", "is not valid");
        refused("tls_cert = /c.pem\n", "set both tls_cert and tls_key");
        refused("\nlisten = 1\n", "test.conf:2: unknown key 'listen'");
        refused("listen_port\n", "expected 'key = value'");
        refused_len("listen_port = 1\0\n", 17, "NUL");
        char *big = malloc(WEB_CONFIG_MAX_BYTES + 2);
        memset(big, '#', WEB_CONFIG_MAX_BYTES + 1);
        big[WEB_CONFIG_MAX_BYTES + 1] = '\0';
        refused(big, "larger than");
        big[2000] = '\0';
        refused(big, "line longer than");
        free(big);
        assert_true(web_address_is_loopback("127.0.0.1"));
        assert_true(web_address_is_loopback("::1"));
        assert_false(web_address_is_loopback("128.0.0.1"));
        assert_false(web_address_is_loopback("::"));
}

/* Every key has its row in docs/seat-web.md, its entry in seat-web.8, and its line in
 * the shipped debian/conf/seat-web.conf, which parses. */
TEST(docs_list_every_key) {
        _cleanup_free_ char *md = unit_read_source("docs/seat-web.md"), *man = unit_read_source("docs/man/seat-web.8.scd"),
                            *deb = unit_read_source("debian/conf/seat-web.conf");
        if (!md || !man || !deb)
                skip();
        for (size_t i = 0; web_config_keys[i]; i++) {
                _cleanup_free_ char *row = NULL, *entry = NULL, *line = NULL;
                assert_true(asprintf(&row, "\n| `%s` |", web_config_keys[i]) > 0);
                assert_true(asprintf(&entry, "\n*%s* (default", web_config_keys[i]) > 0);
                assert_true(asprintf(&line, "\n#%s = ", web_config_keys[i]) > 0);
                if (!strstr(md, row))
                        fail_msg("docs/seat-web.md has no row for '%s'", web_config_keys[i]);
                if (!strstr(man, entry))
                        fail_msg("docs/man/seat-web.8.scd has no entry for '%s'", web_config_keys[i]);
                if (!strstr(deb, line))
                        fail_msg("debian/conf/seat-web.conf has no line '#%s = ...'", web_config_keys[i]);
        }
        _cleanup_(web_config_freep) WebConfig *c = parse(deb);
}

TEST_MAIN("web-config")
