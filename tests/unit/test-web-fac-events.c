/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The dashboards' event stream (web/fac-events.c) against a scripted seatd on a Unix
 * socket: one subscription, tokens stripped, the latest snapshot kept (older ones
 * dropped), a new subscription after seatd went away, and a stop that does not hang. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/macro.h"
#include "fake-seatd.h"
#include "fac-events.h"

typedef struct Fake {
        char path[108];
        int listen_fd;
        pthread_t thread;
        int connections;     /* subscriptions seen */
        char subscribe_line[512];
        int go;              /* 0: first connection streams then closes; the second holds */
        pthread_mutex_t lock;
} Fake;

static void snapshot(int fd, const char *seat, const char *state) {
        char line[512];
        snprintf(line, sizeof(line),
                 "{\"id\":2,\"type\":\"snapshot\",\"snapshot\":{\"seats\":[{\"id\":\"%s\",\"state\":\"%s\",\"token\":\"secret\"}],"
                 "\"seal\":{\"queue\":0}}}\n", seat, state);
        fake_say(fd, "%s", line);
}

static void *fake_thread(void *p) {
        Fake *f = p;
        char line[512];
        for (int c = 0; c < 2; c++) {
                int fd = accept(f->listen_fd, NULL, NULL);
                if (fd < 0)
                        return NULL;
                if (fake_read_line(fd, line, sizeof(line)) < 0 || !strstr(line, "\"hello\"")) {
                        close(fd);
                        return NULL;
                }
                fake_say(fd, "{\"id\":1,\"type\":\"result\",\"result\":{\"version\":1,\"facilitator\":true}}\n");
                if (fake_read_line(fd, line, sizeof(line)) < 0) {
                        close(fd);
                        return NULL;
                }
                pthread_mutex_lock(&f->lock);
                snprintf(f->subscribe_line, sizeof(f->subscribe_line), "%s", line);
                f->connections++;
                pthread_mutex_unlock(&f->lock);
                if (c == 0) {
                        /* Three at once: a reader that is behind keeps only the last. */
                        snapshot(fd, "s1", "provisioning");
                        snapshot(fd, "s1", "booting");
                        snapshot(fd, "s1", "ready");
                        usleep(300 * 1000);
                        close(fd); /* seatd goes away */
                        continue;
                }
                snapshot(fd, "s2", "ready");
                /* Hold until the client closes (its stop). */
                while (read(fd, line, sizeof(line)) > 0)
                        ;
                close(fd);
        }
        return NULL;
}

static char *latest(FacEvents *e, uint64_t *seq, bool *up) {
        char *msg = NULL;
        size_t len = 0;
        if (fac_events_latest(e, &msg, &len, seq, up) < 0)
                return NULL;
        char *s = strndup(msg + LWS_PRE, len);
        free(msg);
        return s;
}

static char *wait_for(FacEvents *e, const char *want, uint64_t *seq, bool *up) {
        for (int i = 0; i < 1000; i++) {
                char *s = latest(e, seq, up);
                if (s && strstr(s, want))
                        return s;
                free(s);
                usleep(10 * 1000);
        }
        return NULL;
}

TEST(stream) {
        Fake f = { .lock = PTHREAD_MUTEX_INITIALIZER };
        f.listen_fd = fake_listen(f.path, "fac-events", 2);
        assert_true(f.listen_fd >= 0);
        assert_int_equal(pthread_create(&f.thread, NULL, fake_thread, &f), 0);

        FacEvents *e = fac_events_new(f.path, NULL);
        assert_non_null(e);
        uint64_t seq = 0, seq1 = 0;
        bool up = false;
        /* The last of the three, as a message for the dashboards, without the token. */
        _cleanup_free_ char *first = wait_for(e, "\"ready\"", &seq1, &up);
        assert_non_null(first);
        assert_true(up);
        assert_non_null(strstr(first, "{\"type\":\"snapshot\",\"snapshot\":{\"seats\":[{\"id\":\"s1\""));
        assert_null(strstr(first, "secret"));
        assert_null(strstr(first, "token"));
        pthread_mutex_lock(&f.lock);
        assert_non_null(strstr(f.subscribe_line, "\"method\":\"events.subscribe\""));
        pthread_mutex_unlock(&f.lock);
        /* seatd went away: the stream says so (seq moves, not up), and subscribes again. */
        _cleanup_free_ char *second = wait_for(e, "\"s2\"", &seq, &up);
        assert_non_null(second);
        assert_true(up);
        assert_true(seq > seq1);
        pthread_mutex_lock(&f.lock);
        assert_int_equal(f.connections, 2);
        pthread_mutex_unlock(&f.lock);
        /* Stopping closes the subscription (the fake sees its end) and joins the thread. */
        fac_events_free(e);
        pthread_join(f.thread, NULL);
        fake_unlisten(f.listen_fd, f.path);
}

TEST(no_seatd) {
        /* Nothing listens: no snapshot, and freeing it while it retries returns at once. */
        FacEvents *e = fac_events_new("/tmp/test-web-fac-events-nobody.sock", NULL);
        char *msg = NULL;
        size_t len;
        uint64_t seq;
        bool up = true;
        assert_non_null(e);
        usleep(200 * 1000);
        assert_int_equal(fac_events_latest(e, &msg, &len, &seq, &up), -ENODATA);
        assert_false(up);
        fac_events_free(e);
}

TEST_MAIN("web-fac-events")
