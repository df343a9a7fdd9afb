/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The facilitator's handouts being made and made: one at a time, each its facilitator's
 * only, kept for a while then gone; a worker reports while the loop reads. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "fac-handouts.h"

#define KEEP 1000

static char *dup_page(const char *s) {
        char *p = strdup(s);
        assert_non_null(p);
        return p;
}

/* n handouts of alice's, made at 0, 1, ...: kept from then on */
static void make_kept(FacHandouts *h, int n) {
        char id[WEB_SESSION_ID_LEN + 1];
        for (int i = 0; i < n; i++) {
                assert_int_equal(fac_handouts_start(h, "alice", 1, i, id), 0);
                fac_handouts_finish(h, id, dup_page("p"), 1, i);
        }
}

TEST(made_then_kept_then_gone) {
        _cleanup_(fac_handouts_freep) FacHandouts *h = fac_handouts_new(KEEP);
        char id[WEB_SESSION_ID_LEN + 1], other[WEB_SESSION_ID_LEN + 1];
        FacHandoutView v;
        assert_non_null(h);
        assert_int_equal(fac_handouts_start(h, "alice", 3, 0, id), 0);
        assert_true(web_session_id_valid(id));
        /* being made: how far, for alice only */
        assert_int_equal(fac_handouts_get(h, id, "alice", 10, &v), 0);
        assert_false(v.made);
        assert_int_equal(v.done, 0);
        assert_int_equal(v.total, 3);
        assert_null(v.page);
        fac_handouts_progress(h, id, 2);
        assert_int_equal(fac_handouts_get(h, id, "alice", 20, &v), 0);
        assert_int_equal(v.done, 2);
        fac_handouts_progress(h, id, 99); /* (never past the total) */
        assert_int_equal(fac_handouts_get(h, id, "alice", 20, &v), 0);
        assert_int_equal(v.done, 3);
        assert_int_equal(fac_handouts_get(h, id, "bob", 20, &v), -ENOENT);
        assert_int_equal(fac_handouts_get(h, id, NULL, 20, &v), -ENOENT);
        /* one at a time, whoever asks; a made one is never expired while being made */
        assert_int_equal(fac_handouts_start(h, "bob", 1, 5000, other), -EBUSY);
        assert_int_equal(fac_handouts_get(h, id, "alice", 5000, &v), 0);
        /* made: the page, a copy each time */
        fac_handouts_finish(h, id, dup_page("<html>links</html>"), 18, 5000);
        assert_int_equal(fac_handouts_get(h, id, "alice", 5100, &v), 0);
        assert_true(v.made);
        assert_int_equal(v.done, 3);
        assert_int_equal(v.len, 18);
        assert_memory_equal(v.page, "<html>links</html>", 18);
        free(v.page);
        /* a second finish changes nothing (and frees what it was given) */
        fac_handouts_finish(h, id, dup_page("<html>other</html>"), 18, 5200);
        assert_int_equal(fac_handouts_get(h, id, "alice", 5300, &v), 0);
        assert_memory_equal(v.page, "<html>links</html>", 18);
        free(v.page);
        /* the next one may start; the first is kept until KEEP after it was made */
        assert_int_equal(fac_handouts_start(h, "bob", 1, 5400, other), 0);
        assert_string_not_equal(id, other);
        assert_int_equal(fac_handouts_get(h, id, "alice", 5000 + KEEP - 1, &v), 0);
        free(v.page);
        assert_int_equal(fac_handouts_get(h, id, "alice", 5000 + KEEP, &v), -ENOENT);
        /* one that could not be made says so */
        fac_handouts_finish(h, other, NULL, 0, 6100);
        assert_int_equal(fac_handouts_get(h, other, "bob", 6200, &v), 0);
        assert_true(v.made);
        assert_null(v.page);
}

TEST(ids_and_bounds) {
        _cleanup_(fac_handouts_freep) FacHandouts *h = fac_handouts_new(KEEP);
        char id[WEB_SESSION_ID_LEN + 1], wrong[WEB_SESSION_ID_LEN + 1];
        FacHandoutView v;
        assert_non_null(h);
        char long_name[64];
        memset(long_name, 'n', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        assert_int_equal(fac_handouts_start(h, long_name, 1, 0, id), -EINVAL);
        assert_int_equal(fac_handouts_start(h, NULL, 1, 0, id), -EINVAL);
        /* FAC_HANDOUTS_KEPT made ones kept: no more until one is no longer kept */
        make_kept(h, FAC_HANDOUTS_KEPT);
        assert_int_equal(fac_handouts_start(h, "alice", 1, 100, wrong), -ENOSPC);
        assert_int_equal(fac_handouts_start(h, "alice", 1, KEEP, wrong), 0); /* the first made at 0 is gone */
        /* IDs: the whole ID, nothing shorter or longer, nothing alike */
        assert_int_equal(fac_handouts_get(h, wrong, "alice", KEEP, &v), 0);
        char shorter[WEB_SESSION_ID_LEN];
        memcpy(shorter, wrong, sizeof(shorter) - 1);
        shorter[sizeof(shorter) - 1] = '\0';
        assert_int_equal(fac_handouts_get(h, shorter, "alice", KEEP, &v), -ENOENT);
        char flipped[WEB_SESSION_ID_LEN + 1];
        memcpy(flipped, wrong, sizeof(flipped));
        flipped[5] = flipped[5] == 'A' ? 'B' : 'A';
        assert_int_equal(fac_handouts_get(h, flipped, "alice", KEEP, &v), -ENOENT);
        assert_int_equal(fac_handouts_get(h, NULL, "alice", KEEP, &v), -ENOENT);
        /* reports for unknown IDs change nothing and lose nothing */
        fac_handouts_progress(h, flipped, 1);
        fac_handouts_finish(h, flipped, dup_page("x"), 1, KEEP);
        assert_int_equal(fac_handouts_get(h, wrong, "alice", KEEP, &v), 0);
        assert_false(v.made);
}

/* A handout whose worker never ran (seat-web's job queue was full): dropped at once, it
 * holds no kept slot for an hour, and the next one may start. */
TEST(dropped_when_never_started) {
        _cleanup_(fac_handouts_freep) FacHandouts *h = fac_handouts_new(KEEP);
        char id[WEB_SESSION_ID_LEN + 1], next[WEB_SESSION_ID_LEN + 1];
        FacHandoutView v;
        assert_non_null(h);
        make_kept(h, FAC_HANDOUTS_KEPT - 1);
        assert_int_equal(fac_handouts_start(h, "alice", 2, 100, id), 0);
        fac_handouts_drop(h, id);
        assert_int_equal(fac_handouts_get(h, id, "alice", 100, &v), -ENOENT);
        /* its slot is free: one more is made and kept, the last of FAC_HANDOUTS_KEPT */
        assert_int_equal(fac_handouts_start(h, "alice", 1, 101, next), 0);
        fac_handouts_finish(h, next, dup_page("q"), 1, 101);
        assert_int_equal(fac_handouts_start(h, "alice", 1, 102, id), -ENOSPC);
        /* an unknown ID drops nothing */
        fac_handouts_drop(h, id);
        fac_handouts_drop(h, NULL);
        assert_int_equal(fac_handouts_get(h, next, "alice", 103, &v), 0);
        assert_true(v.made);
        free(v.page);
}

/* A worker reporting while the loop reads (run under ThreadSanitizer in CI). */
typedef struct Race {
        FacHandouts *h;
        char id[WEB_SESSION_ID_LEN + 1];
} Race;

static void *worker(void *p) {
        Race *r = p;
        for (size_t i = 0; i <= 2000; i++)
                fac_handouts_progress(r->h, r->id, i);
        char *page = malloc(4);
        memcpy(page, "done", 4);
        fac_handouts_finish(r->h, r->id, page, 4, 1);
        return NULL;
}

TEST(worker_and_loop) {
        _cleanup_(fac_handouts_freep) FacHandouts *h = fac_handouts_new(KEEP);
        Race r = { .h = h };
        assert_int_equal(fac_handouts_start(h, "alice", 2000, 0, r.id), 0);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, worker, &r), 0);
        size_t last = 0;
        for (;;) {
                FacHandoutView v;
                assert_int_equal(fac_handouts_get(h, r.id, "alice", 1, &v), 0);
                assert_true(v.done >= last); /* progress only goes forward */
                last = v.done;
                if (v.made) {
                        assert_int_equal(v.len, 4);
                        free(v.page);
                        break;
                }
        }
        pthread_join(t, NULL);
}

TEST_MAIN("web-handouts")
