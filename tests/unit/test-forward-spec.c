/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatctl forward's [ADDR:]LPORT:GUEST_HOST:GPORT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "forward-spec.h"

static void ok(const char *s, const char *bind, unsigned lport, const char *host, unsigned gport) {
        ForwardSpec f;
        const char *why = NULL;
        if (forward_spec_parse(s, &f, &why) < 0)
                fail_msg("'%s' refused: %s", s, why);
        if (strcmp(f.bind, bind) || f.lport != lport || strcmp(f.host, host) || f.gport != gport)
                fail_msg("'%s': got %s %u %s %u", s, f.bind, f.lport, f.host, f.gport);
}

static void bad(const char *s, const char *why_part) {
        ForwardSpec f;
        const char *why = NULL;
        if (forward_spec_parse(s, &f, &why) >= 0)
                fail_msg("'%s' accepted", s);
        if (!why || !strstr(why, why_part))
                fail_msg("'%s': reason '%s' does not say '%s'", s, why ? why : "(none)", why_part);
}

TEST(forward_spec) {
        ok("8080:10.0.0.5:80", "127.0.0.1", 8080, "10.0.0.5", 80);
        ok("0:localhost:22", "127.0.0.1", 0, "localhost", 22);
        ok("127.0.0.2:9000:web.range:443", "127.0.0.2", 9000, "web.range", 443);
        ok("localhost:1:h:65535", "127.0.0.1", 1, "h", 65535);
        ok("[::1]:8080:[fd00::5]:80", "::1", 8080, "fd00::5", 80);
        ok("8080:[::1]:80", "127.0.0.1", 8080, "::1", 80);
        bad("", "empty");
        bad("8080:80", "expected");
        bad("1:2:3:4:5", "too many");
        bad("8080:10.0.0.5:0", "GPORT");
        bad("8080:10.0.0.5:65536", "GPORT");
        bad("65536:h:1", "LPORT");
        bad("-1:h:1", "LPORT");
        bad("80a:h:1", "LPORT");
        bad("8080::80", "GUEST_HOST");
        bad("8080:a b:80", "GUEST_HOST");
        bad("8080:a/../b:80", "GUEST_HOST");
        bad("host.example:8080:h:80", "ADDR");
        bad("[::1:8080:h:80", "unclosed");
        bad("[::1]x:8080:h:80", "unclosed");
        bad("8080:h:80:", "':'");
        char longhost[300];
        memset(longhost, 'a', sizeof(longhost));
        memcpy(longhost, "1:", 2);
        strcpy(longhost + 260, ":80");
        bad(longhost, "GUEST_HOST");
}

TEST_MAIN("forward-spec")
