/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What seat-web renders for a facilitator: /metrics from seatd's metrics (checked by
 * promtool when it is installed), the handout's QR codes and page. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/jsonframe.h"
#include "fac-handout.h"
#include "fac-metrics.h"

/* As seatd's metrics answers (seatd/facilitator-methods.c), with a hostile pool name. */
static const char *const sample =
        "{\"seats_by_state\":{\"ready\":2,\"faulted\":0},"
        "\"latency\":{\"provision\":{\"buckets\":[[0.5,0],[1.0,1],[5.0,3],[\"+Inf\",4]],\"sum\":12.5,\"count\":4},"
        "\"reset\":{\"buckets\":[[1.0,1]],\"sum\":0.25,\"count\":1},"
        "\"claim\":{\"buckets\":[[1.0,2],[0.5,3]],\"sum\":1,\"count\":3}},"
        "\"calls_total\":17,\"egress_denied_packets\":{\"s0a1b2c3d\":5},"
        "\"seal\":{\"queue\":1,\"failed\":0,\"failures\":2},"
        "\"pools\":{\"test-image\":{\"ready\":1,\"target\":2},\"we\\\"ird\\n\":{\"ready\":0,\"target\":1}},"
        "\"host\":{\"mem_total_bytes\":4294967296,\"mem_available_bytes\":1073741824,\"disk_total_bytes\":1e10,\"disk_free_bytes\":5000000000}}";

static char *render(const char *json) {
        _cleanup_json_ json_object *o = json_tokener_parse(json);
        char *text = NULL;
        size_t len;
        assert_non_null(o);
        assert_int_equal(fac_metrics_render(o, &text, &len), 0);
        assert_int_equal(strlen(text), len);
        return text;
}

static void has(const char *text, const char *line) {
        if (!strstr(text, line))
                fail_msg("no '%s' in:\n%s", line, text);
}

TEST(metrics) {
        _cleanup_free_ char *t = render(sample);
        has(t, "# TYPE seatd_seats gauge\n");
        has(t, "seatd_seats{state=\"ready\"} 2\n");
        has(t, "# TYPE seatd_provision_seconds histogram\n");
        has(t, "seatd_provision_seconds_bucket{le=\"1\"} 1\n");
        has(t, "seatd_provision_seconds_bucket{le=\"+Inf\"} 4\n");
        has(t, "seatd_provision_seconds_sum 12.5\nseatd_provision_seconds_count 4\n");
        /* +Inf added when seatd's list stops short */
        has(t, "seatd_reset_seconds_bucket{le=\"+Inf\"} 1\n");
        /* buckets out of order: the histogram is left out rather than wrong */
        assert_null(strstr(t, "seatd_claim_seconds"));
        has(t, "seatd_exec_total 17\n");
        has(t, "seatd_egress_denied_packets_total{seat=\"s0a1b2c3d\"} 5\n");
        has(t, "seatd_seal_queue 1\n");
        has(t, "seatd_seal_failures_total 2\n");
        has(t, "seatd_pool_ready{pool=\"test-image\"} 1\n");
        has(t, "seatd_pool_target{pool=\"we\\\"ird\\n\"} 1\n");
        has(t, "seatd_host_memory_total_bytes 4294967296\n");
        has(t, "# HELP seatd_host_disk_free_bytes ");
        /* Every family's HELP and TYPE come once. */
        const char *once = strstr(t, "# TYPE seatd_pool_ready");
        assert_non_null(once);
        assert_null(strstr(once + 1, "# TYPE seatd_pool_ready"));

        /* promtool, where it is installed, accepts it (the web suite checks seatd's own). */
        if (access("/usr/bin/promtool", X_OK) == 0) {
                FILE *p = popen("/usr/bin/promtool check metrics >/dev/null 2>&1", "w");
                assert_non_null(p);
                fputs(t, p);
                assert_int_equal(pclose(p), 0);
        }
}

TEST(metrics_bad_input) {
        _cleanup_free_ char *a = render("{}"), *b = render("[]"),
                            *c = render("{\"seats_by_state\":{\"ready\":\"x\"},\"calls_total\":\"7\",\"latency\":5}");
        assert_string_equal(a, "");
        assert_string_equal(b, "");
        assert_string_equal(c, "");
}

TEST(qr_and_handout) {
        _cleanup_free_ char *svg = NULL, *page = NULL;
        size_t len;
        assert_int_equal(fac_qr_svg("https://127.0.0.1:8443/l/abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ", &svg), 0);
        assert_true(strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"qr\" viewBox=\"0 0 ", 60) == 0);
        assert_non_null(strstr(svg, "<path fill=\"#000\" d=\"M4 4h7v1h-7z")); /* the finder pattern's top row */
        HandoutEntry e[2] = { { .participant = "alice", .seat = "s1", .url = "https://h/l/X1" },
                              { .participant = "<b>bob", .problem = "no \"room\" & more" } };
        assert_int_equal(fac_handout_render(e, 2, &page, &len), 0);
        has(page, "<h2>alice</h2><svg");
        has(page, "href=\"https://h/l/X1\"");
        has(page, "<h2>&lt;b&gt;bob</h2><p class=\"warn\">No seat: no &quot;room&quot; &amp; more</p>");
        assert_null(strstr(page, "<b>"));
        assert_null(strstr(page, "<script"));
}

TEST(handout_progress) {
        _cleanup_free_ char *page = NULL;
        size_t len;
        assert_int_equal(fac_handout_progress_render(3, 30, &page, &len), 0);
        assert_int_equal(strlen(page), len);
        has(page, "<meta http-equiv=\"refresh\" content=\"2\">");
        has(page, "data-done=\"3\" data-total=\"30\"");
        has(page, "3 of 30 seats made");
        assert_null(strstr(page, "<script"));
}

TEST_MAIN("web-fac-render")
