/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A handout's seats made (web/fac-handout-make.c) against a scripted seatd on a Unix
 * socket, one connection per provision as seatd's facilitator socket takes them: each call
 * says hello, then seat.provision with count 1, the image, the participant and the
 * facilitator; at most handout_parallel calls run at once (and more than one when it
 * allows more); the cards keep the order of the names although the seats come back in
 * another; a name seatd refuses gets seatd's message on its card and the others their
 * seats; every made seat gets a one-time link under state_dir, on the browser's base URL;
 * when seat-web stops mid-way, the calls running give up and close their connections before
 * seatd answers (seatd then releases those seats) and no further name is asked for. Run
 * under TSan too.
 */
#include <dirent.h>
#include <poll.h>
#include <stdatomic.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/macro.h"
#include "fac-handout-make.h"
#include "fake-seatd.h"
#include "unit-source.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define MAX_CONNS 32
#define REFUSED "nobody-room" /* the participant seatd refuses */
#define ODD "odd-answer"      /* the participant whose seat seatd's answer does not name */

typedef struct FakeSeatd {
        char path[FAKE_SEATD_PATH_MAX];
        int listen_fd;
        pthread_t acceptor;
        pthread_t conns[MAX_CONNS];
        int fds[MAX_CONNS];
        size_t n_conns;
        pthread_mutex_t lock;
        unsigned active, max_active, bad_requests;
        unsigned left; /* calls whose client closed before the answer */
        unsigned stop_at;      /* seat-web "stops" once this many calls run at once (0: never) */
        unsigned together;     /* no call is answered before this many ran at once (once) */
        bool met;              /* they did */
        atomic_bool stopping;
} FakeSeatd;

typedef struct Conn {
        FakeSeatd *f;
        int fd;
} Conn;

/* Once the calls met, p1 answers last, the last name first: the order of the answers is
 * not that of the names. */
static unsigned delay_ms(const char *participant) {
        unsigned k = 0;
        if (sscanf(participant, "p%u", &k) == 1 && k <= 9)
                return 60 * (10 - k);
        return 300;
}

/* One connection as seatd's facilitator socket answers it; false: not what seat-web sends. */
static bool serve(FakeSeatd *f, int fd) {
        char line[4096];
        if (fake_read_line(fd, line, sizeof(line)) < 0 || !strstr(line, "\"hello\""))
                return false;
        fake_say(fd, "{\"id\":1,\"type\":\"result\",\"result\":{\"version\":1}}\n");
        if (fake_read_line(fd, line, sizeof(line)) < 0)
                return false;
        _cleanup_json_ json_object *o = json_tokener_parse(line);
        json_object *params = json_object_object_get(o, "params");
        const char *method = json_object_get_string(json_object_object_get(o, "method"));
        const char *image = json_object_get_string(json_object_object_get(params, "image"));
        const char *who = json_object_get_string(json_object_object_get(params, "facilitator"));
        const char *participant = json_object_get_string(json_object_object_get(params, "participant"));
        if (!method || strcmp(method, "seat.provision") || !image || strcmp(image, "range") || !who || strcmp(who, "frida") ||
            !participant || json_object_get_int(json_object_object_get(params, "count")) != 1)
                return false;

        pthread_mutex_lock(&f->lock);
        if (++f->active > f->max_active)
                f->max_active = f->active;
        if (f->active >= f->together)
                f->met = true;
        if (f->stop_at && f->active >= f->stop_at)
                atomic_store(&f->stopping, true);
        pthread_mutex_unlock(&f->lock);
        /* The boot: the client may only wait, or leave (seatd then releases the seat). No
         * answer before the calls that should run at once did (a fixed boot time let a slow
         * client finish one before the next began: a count then read by chance); none at
         * all once seat-web stopped, so that its calls leave however slowly it notices.
         * The bound only ends a hang: the counts then say what went wrong. */
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int k = 0;
        for (int64_t until = now_monotonic_ms() + 60000; now_monotonic_ms() < until;) {
                pthread_mutex_lock(&f->lock);
                bool met = f->met;
                pthread_mutex_unlock(&f->lock);
                if (met && !atomic_load(&f->stopping))
                        break;
                if ((k = poll(&pfd, 1, 10)) != 0)
                        break;
        }
        if (k == 0)
                k = poll(&pfd, 1, (int) delay_ms(participant));
        pthread_mutex_lock(&f->lock);
        f->active--;
        pthread_mutex_unlock(&f->lock);
        if (k > 0) {
                /* The client's end: EOF, or ECONNRESET when it closed with our hello answer
                 * still unread (Linux resets a Unix stream whose closer left data unread). A
                 * client that gives up before reading the answer to its hello does exactly
                 * that: 1 run in 4 under ASan took it for a bad request. */
                char c;
                ssize_t n = read(fd, &c, 1);
                if (n > 0 || (n < 0 && errno != ECONNRESET))
                        return false;
                pthread_mutex_lock(&f->lock);
                f->left++;
                pthread_mutex_unlock(&f->lock);
                return true;
        }

        if (!strcmp(participant, ODD))
                fake_say(fd, "{\"id\":2,\"type\":\"result\",\"result\":{\"seats\":[{\"id\":7}]}}\n");
        else if (!strcmp(participant, REFUSED))
                fake_say(fd, "{\"id\":2,\"type\":\"error\",\"error\":{\"code\":\"io\",\"message\":\"the host runs 3 seats and pool_max_seats is 3\"}}\n");
        else
                fake_say(fd, "{\"id\":2,\"type\":\"result\",\"result\":{\"seats\":[{\"id\":\"s-%s\",\"token\":\"%s\"}]}}\n",
                         participant, TOKEN);
        (void) fake_read_line(fd, line, sizeof(line)); /* until the client closes */
        return true;
}

static void count_bad(FakeSeatd *f) {
        pthread_mutex_lock(&f->lock);
        f->bad_requests++;
        pthread_mutex_unlock(&f->lock);
}

/* (no cmocka asserts off the test's own thread: what goes wrong here is counted, and the
 * client gets its end at once rather than waiting out its timeout) */
static void *conn_thread(void *p) {
        Conn *c = p;
        if (!serve(c->f, c->fd)) {
                count_bad(c->f);
                (void) shutdown(c->fd, SHUT_RDWR);
        }
        free(c);
        return NULL;
}

/* Every connection, until script_stop() shuts the socket: as many as the client makes (the
 * test counts them), not as many as it should. */
static void *acceptor_thread(void *p) {
        FakeSeatd *f = p;
        for (;;) {
                int fd = accept(f->listen_fd, NULL, NULL);
                if (fd < 0)
                        return NULL;
                Conn *c = f->n_conns < MAX_CONNS ? calloc(1, sizeof(*c)) : NULL;
                if (c)
                        *c = (Conn) { .f = f, .fd = fd };
                if (!c || pthread_create(&f->conns[f->n_conns], NULL, conn_thread, c) != 0) {
                        free(c);
                        count_bad(f);
                        close(fd);
                        continue;
                }
                f->fds[f->n_conns++] = fd;
        }
}

static void script_start(FakeSeatd *f, unsigned stop_at, unsigned together) {
        memset(f, 0, sizeof(*f));
        pthread_mutex_init(&f->lock, NULL);
        f->stop_at = stop_at; /* (before the acceptor starts: its threads read them) */
        f->together = together;
        f->listen_fd = fake_listen(f->path, "handout", MAX_CONNS);
        assert_true(f->listen_fd >= 0);
        assert_int_equal(pthread_create(&f->acceptor, NULL, acceptor_thread, f), 0);
}

static void script_stop(FakeSeatd *f) {
        (void) shutdown(f->listen_fd, SHUT_RDWR); /* wakes the acceptor's accept() */
        assert_int_equal(pthread_join(f->acceptor, NULL), 0);
        for (size_t i = 0; i < f->n_conns; i++) {
                assert_int_equal(pthread_join(f->conns[i], NULL), 0);
                close(f->fds[i]);
        }
        fake_unlisten(f->listen_fd, f->path);
        pthread_mutex_destroy(&f->lock);
}

static size_t count_links(const char *state_dir) {
        char dir[256];
        snprintf(dir, sizeof(dir), "%s/links", state_dir);
        DIR *d = opendir(dir);
        size_t n = 0;
        if (!d)
                return 0;
        for (struct dirent *e; (e = readdir(d));)
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

/* One handout of names with handout_parallel = parallel: the made page as a string (free()
 * it), and what
 * the scripted seatd saw. */
static bool fake_stopping(void *userdata) {
        FakeSeatd *f = userdata;
        return atomic_load(&f->stopping);
}

static char *make(const char *const *names, size_t n, long parallel, bool stop, FakeSeatd *f, char state_dir[64]) {
        snprintf(state_dir, 64, "/tmp/test-web-handout-XXXXXX"); /* mkdtemp()'s template */
        assert_non_null(mkdtemp(state_dir));
        script_start(f, stop ? (unsigned) parallel : 0, (unsigned) MIN((size_t) parallel, n));
        WebConfig conf = { .facilitator_socket = f->path, .state_dir = state_dir, .handout_parallel = parallel };
        _cleanup_(fac_handouts_freep) FacHandouts *h = fac_handouts_new(3600 * 1000);
        assert_non_null(h);
        char id[WEB_SESSION_ID_LEN + 1];
        assert_int_equal(fac_handouts_start(h, "frida", n, 1, id), 0);
        _cleanup_json_ json_object *arr = json_object_new_array();
        for (size_t i = 0; i < n; i++)
                json_object_array_add(arr, json_object_new_string(names[i]));

        fac_handout_make(&(HandoutRequest) { .conf = &conf, .stop = { fake_stopping, f }, .handouts = h, .id = id,
                                             .base_url = "https://room.example:8443", .image = "range",
                                             .facilitator = "frida", .names = arr });
        script_stop(f);
        FacHandoutView v = {};
        assert_int_equal(fac_handouts_get(h, id, "frida", 2, &v), 0);
        assert_true(v.made);
        assert_int_equal(v.total, n);
        assert_non_null(v.page);
        /* (the page is len bytes, not a C string) */
        char *page = strndup(v.page, v.len);
        assert_non_null(page);
        assert_int_equal(strlen(page), v.len);
        free(v.page);
        return page;
}

/* The cards in the page, in order: "participant=seat" or "participant!" for a refused one. */
static void cards(const char *page, char *out, size_t size) {
        out[0] = '\0';
        for (const char *p = page; (p = strstr(p, "data-participant=\""));) {
                p += strlen("data-participant=\"");
                const char *q = strchr(p, '"');
                assert_non_null(q);
                const char *next = strstr(q, "data-participant=\""), *seat = strstr(q, "class=\"seat\">");
                size_t len = strlen(out);
                if (seat && (!next || seat < next)) {
                        seat += strlen("class=\"seat\">");
                        snprintf(out + len, size - len, "%s%.*s=%.*s", len ? " " : "", (int) (q - p), p,
                                 (int) strcspn(seat, "<"), seat);
                } else
                        snprintf(out + len, size - len, "%s%.*s!", len ? " " : "", (int) (q - p), p);
                p = q;
        }
}

/* One handout and what must come of it. */
typedef struct HandoutCase {
        const char *names[8];
        long parallel;        /* handout_parallel */
        bool stop;            /* seat-web stops once parallel calls run */
        size_t calls;         /* the calls seatd saw */
        unsigned at_once;     /* the most at once; 0: more than one, at most parallel */
        unsigned left;        /* calls given up before seatd's answer */
        const char *cards;    /* cards() of the page */
        size_t links;         /* link records written */
        const char *says[2];  /* on the page too */
} HandoutCase;

static void check(const HandoutCase *c) {
        size_t n = 0;
        while (n < ELEMENTSOF(c->names) && c->names[n])
                n++;
        FakeSeatd f;
        char state_dir[64], got[1024];
        _cleanup_free_ char *page = make(c->names, n, c->parallel, c->stop, &f, state_dir);
        assert_int_equal(f.bad_requests, 0);
        assert_int_equal(f.n_conns, c->calls);
        if (c->at_once)
                assert_int_equal(f.max_active, c->at_once);
        else
                assert_true(f.max_active >= 2 && f.max_active <= c->parallel);
        assert_int_equal(f.left, c->left);
        cards(page, got, sizeof(got));
        assert_string_equal(got, c->cards);
        for (size_t i = 0; i < ELEMENTSOF(c->says) && c->says[i]; i++)
                if (!strstr(page, c->says[i]))
                        fail_msg("the page does not say '%s'", c->says[i]);
        assert_null(strstr(page, TOKEN)); /* the token is in the link's record, never on the page */
        assert_int_equal(count_links(state_dir), c->links);
        assert_int_equal(unit_remove_tree(state_dir), 0);
}

/* 3 at once: never more, and more than one (none is answered before three run). */
TEST(parallel_keeps_the_order_of_the_names) {
        check(&(HandoutCase) { .names = { "p1", "p2", "p3", "p4", "p5", "p6", "p7" }, .parallel = 3, .calls = 7,
                               .cards = "p1=s-p1 p2=s-p2 p3=s-p3 p4=s-p4 p5=s-p5 p6=s-p6 p7=s-p7", .links = 7,
                               .says = { "href=\"https://room.example:8443/l/" } });
}

TEST(one_after_the_other) {
        check(&(HandoutCase) { .names = { "p1", "p2", "p3" }, .parallel = 1, .calls = 3, .at_once = 1,
                               .cards = "p1=s-p1 p2=s-p2 p3=s-p3", .links = 3 });
}

/* 16 allowed, 4 names: all at once. An answer without a seat's id and token is no seat. */
TEST(a_refused_name_gets_seatds_reason_and_the_others_their_seats) {
        check(&(HandoutCase) { .names = { "p1", REFUSED, "p3", ODD }, .parallel = 16, .calls = 4, .at_once = 4,
                               .cards = "p1=s-p1 " REFUSED "! p3=s-p3 " ODD "!", .links = 2,
                               .says = { "No seat: the host runs 3 seats and pool_max_seats is 3",
                                         "No seat: seatd&#39;s answer names no seat and token" } });
}

/* The two running leave before their answers (none comes once seat-web stopped). */
TEST(seat_web_stopping_gives_up_the_calls_running_and_asks_no_more) {
        check(&(HandoutCase) { .names = { "p1", "p2", "p3", "p4" }, .parallel = 2, .stop = true, .calls = 2, .at_once = 2,
                               .left = 2, .cards = "p1! p2! p3! p4!",
                               .says = { "No seat: seat-web stopped while this seat was made: seatd releases it",
                                         "No seat: seat-web stopped before this seat was made" } });
}

TEST_MAIN("web-handout-make")
