/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The saved pool sizes (seatd/pool-state.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/seat-test.h"

#include "seatd/pool-state.h"

static void refused(const char *text) {
        PoolSpec *specs = NULL;
        size_t n = 0;
        assert_int_equal(pool_state_parse(text, strlen(text), &specs, &n), -EBADMSG);
}

TEST(roundtrip) {
        const char *text = "seatd-pools 1\npool image=test-image egress=none ready=2\npool image=debian-12.4 egress=- ready=64\n";
        _cleanup_free_ PoolSpec *specs = NULL;
        _cleanup_free_ char *out = NULL;
        size_t n = 0, len = 0;
        assert_int_equal(pool_state_parse(text, strlen(text), &specs, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(specs[0].image, "test-image");
        assert_string_equal(specs[0].egress, "none");
        assert_int_equal(specs[0].ready, 2);
        assert_string_equal(specs[1].egress, ""); /* "-": seats without a network */
        assert_int_equal(pool_state_format(specs, n, &out, &len), 0);
        assert_int_equal(len, strlen(text));
        assert_memory_equal(out, text, len);
        _cleanup_free_ PoolSpec *none = NULL;
        assert_int_equal(pool_state_parse("seatd-pools 1\n", 14, &none, &n), 0);
        assert_int_equal(n, 0);
}

TEST(refused) {
        refused("");
        refused("seatd-pools 2\n");
        refused("seatd-pools 1\npool image=a egress=none ready=1");             /* no final newline */
        refused("seatd-pools 1\npool image=a egress=none ready=0\n");           /* an empty pool is not saved */
        refused("seatd-pools 1\npool image=a egress=none ready=65\n");
        refused("seatd-pools 1\npool image=a egress=none ready=02\n");
        refused("seatd-pools 1\npool image=A egress=none ready=1\n");
        refused("seatd-pools 1\npool image=a egress=../x ready=1\n");
        refused("seatd-pools 1\npool egress=none image=a ready=1\n");
        refused("seatd-pools 1\npool image=a egress=none ready=1 extra=1\n");
        refused("seatd-pools 1\npool image=a egress=none ready=1\npool image=a egress=none ready=2\n");
        PoolSpec bad = { .image = "a", .egress = "none", .ready = 65 };
        char *out = NULL;
        size_t len;
        assert_int_equal(pool_state_format(&bad, 1, &out, &len), -EINVAL);
}

TEST_MAIN("pool-state")
