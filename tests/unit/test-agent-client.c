/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatd's first hello over a socketpair (the guest's end played here): an agent that
 * breaks the protocol before its reply fails the wait at once, naming what it sent; only
 * silence waits the whole timeout (issue 13 #14). A reconnect to a running agent still
 * drops the previous connection's leftovers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "seatd/agent-client.h"
#include "common/fileio.h"

#define LONG_MS 60000 /* the boot timeout a violation must not wait for */

typedef struct Pair {
        AgentClient *client;
        int guest; /* the agent's end */
} Pair;

static void pair_open(Pair *p) {
        int fds[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        assert_int_equal(agent_client_new_fd(fds[0], AGENT_MAX_FRAME_DEFAULT, &p->client), 0);
        p->guest = fds[1];
}

static void pair_close(Pair *p) {
        p->client = agent_client_free(p->client);
        p->guest = safe_close(p->guest);
}

static void guest_says(Pair *p, const char *s) {
        assert_int_equal(write(p->guest, s, strlen(s)), (ssize_t) strlen(s));
}

/* hello (fresh or not) against what the guest already said; its error and time taken. */
static int hello_ms(Pair *p, bool fresh, int timeout_ms, char **ret_message, int64_t *ret_ms) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_agent_msg_ AgentMsg *h = NULL;
        int64_t t0 = now_monotonic_ms();
        int r = fresh ? agent_client_hello_fresh(p->client, timeout_ms, &h, &err)
                      : agent_client_hello(p->client, timeout_ms, &h, &err);
        *ret_ms = now_monotonic_ms() - t0;
        *ret_message = err ? strdup(err->message) : NULL;
        return r;
}

/* hello_ms() on a new pair after the guest said guest (NULL: nothing). */
static int hello_after(const char *guest, bool fresh, int timeout_ms, char **ret_message, int64_t *ret_ms) {
        Pair p;
        pair_open(&p);
        if (guest)
                guest_says(&p, guest);
        int r = hello_ms(&p, fresh, timeout_ms, ret_message, ret_ms);
        pair_close(&p);
        return r;
}

static void expect_fresh_violation(const char *guest, const char *why) {
        _cleanup_free_ char *msg = NULL;
        int64_t ms;
        int r = hello_after(guest, true, LONG_MS, &msg, &ms);
        if (r != -EPROTO)
                fail_msg("'%s' (wanted '%s'): %d %s", guest, why, r, msg ? msg : "");
        if (!strstr(msg, "broke the protocol before answering hello") || !strstr(msg, why))
                fail_msg("wanted '%s' in: %s", why, msg);
        assert_true(ms < 5000); /* at once, not after LONG_MS */
}

TEST(fresh_violations_fail_at_once) {
        expect_fresh_violation("{this is not json]\n", "malformed JSON");
        expect_fresh_violation("\n", "malformed JSON");
        expect_fresh_violation("{\"type\":\"hello\",\"id\":1,\"version\":1,\"agent\":\"bad\xc3\x28\"}\n", "not valid UTF-8");
        expect_fresh_violation("{\"type\":\"exec\",\"id\":1,\"argv\":[\"/bin/sh\"]}\n", "'exec' request, which an agent never sends");
        expect_fresh_violation("{\"type\":\"exit\",\"id\":7,\"code\":0}\n", "for id 7, which seatd never asked for");
        expect_fresh_violation("{\"type\":\"hello\",\"id\":1001,\"version\":1,\"agent\":\"x\"}\n", "for id 1001");
        /* The guest's bytes are quoted, escaped. */
        expect_fresh_violation("{\"\x1b[2J\":1\n", "'{\\\"\\x1b[2J\\\":1'");
}

TEST(fresh_oversize_fails_at_once) {
        Pair p;
        _cleanup_free_ char *msg = NULL;
        int64_t ms;
        pair_open(&p);
        /* More than the socket holds: a child writes it while the client reads. */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                static char big[64 * 1024];
                for (int fd = 3; fd < 256; fd++) /* the client's end too: its hang-up ends us */
                        if (fd != p.guest)
                                (void) close(fd);
                memset(big, 'x', sizeof(big));
                for (int i = 0; i < 32; i++)
                        if (write(p.guest, big, sizeof(big)) < 0)
                                _exit(0); /* the client hung up: done */
                _exit(0);
        }
        assert_int_equal(hello_ms(&p, true, LONG_MS, &msg, &ms), -EPROTO);
        if (!strstr(msg, "a frame over the 1048576-byte cap"))
                fail_msg("%s", msg);
        assert_true(ms < 5000);
        pair_close(&p);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* Silence is a slow boot: the whole timeout, then a timeout error, nothing sooner. */
TEST(fresh_silence_waits_the_timeout) {
        _cleanup_free_ char *msg = NULL;
        int64_t ms;
        assert_int_equal(hello_after(NULL, true, 1500, &msg, &ms), -ETIMEDOUT);
        assert_non_null(strstr(msg, "did not answer hello in time"));
        assert_true(ms >= 1400);
}

TEST(fresh_good_reply) {
        _cleanup_free_ char *msg = NULL;
        int64_t ms;
        assert_int_equal(hello_after("{\"type\":\"hello\",\"id\":1,\"version\":1,\"agent\":\"guest-init\"}\n", true, LONG_MS,
                                     &msg, &ms),
                         0);
}

/* A reconnect may see the tail of a frame cut by it, then whole stale replies. */
TEST(reconnect_drops_leftovers) {
        _cleanup_free_ char *msg = NULL;
        int64_t ms;
        assert_int_equal(hello_after("a\":\"b3V0cHV0\"}\n{\"type\":\"exit\",\"id\":41,\"code\":0}\n"
                                     "{\"type\":\"hello\",\"id\":1,\"version\":1,\"agent\":\"guest-init\"}\n",
                                     false, LONG_MS, &msg, &ms),
                         0);
}

/* ... but only one cut tail, and never a request: those are the agent's own doing. */
TEST(reconnect_violations_fail) {
        _cleanup_free_ char *msg = NULL;
        int64_t ms;
        assert_int_equal(hello_after("cut tail\n{still not json\n", false, LONG_MS, &msg, &ms), -EPROTO);
        assert_non_null(strstr(msg, "malformed JSON"));
        assert_true(ms < 5000);
        free(msg);
        msg = NULL;

        assert_int_equal(hello_after("{\"type\":\"file_get\",\"id\":3,\"path\":\"/etc/passwd\"}\n", false, LONG_MS, &msg, &ms),
                         -EPROTO);
        assert_non_null(strstr(msg, "'file_get' request"));
}

static size_t seen_output;

static int count_output(bool is_stderr, const uint8_t *data, size_t len, void *userdata) {
        (void) is_stderr;
        (void) data;
        (void) userdata;
        seen_output += len;
        return 0;
}

/* A pair past its first hello (one reader: the replies in order), the hello's reply with
 * extra (JSON members, "" for none). */
static void pair_after_hello(Pair *p, const char *extra) {
        char hello[256];
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_agent_msg_ AgentMsg *h = NULL;
        pair_open(p);
        agent_client_set_single(p->client);
        snprintf(hello, sizeof(hello), "{\"type\":\"hello\",\"id\":1,\"version\":1,\"agent\":\"guest-init\"%s}\n", extra);
        guest_says(p, hello);
        assert_int_equal(agent_client_hello_fresh(p->client, LONG_MS, &h, &err), 0);
}

/* An agent that ignores max_output (a replaced guest-init) and says nothing was cut: seatd
 * passes on no more than the cap, and the result says truncated. */
TEST(output_cap_held_by_seatd) {
        Pair p;
        _cleanup_error_ SeatError *err = NULL;
        pair_after_hello(&p, ",\"max_output\":1099511627776");
        /* 1500 bytes of base64 "eHh4..." = 3 frames of 1125 bytes: 3375 in all */
        char data[1501];
        memset(data, 'x', 1500);
        data[1500] = '\0';
        for (int i = 0; i < 1500; i += 4)
                memcpy(data + i, "eHh4", 4);
        guest_says(&p, "{\"type\":\"started\",\"id\":2,\"pid\":7}\n");
        for (int i = 0; i < 3; i++) {
                char line[1700];
                snprintf(line, sizeof(line), "{\"type\":\"output\",\"id\":2,\"stream\":\"stdout\",\"data\":\"%s\"}\n", data);
                guest_says(&p, line);
        }
        guest_says(&p, "{\"type\":\"exit\",\"id\":2,\"code\":0,\"signal\":0,\"duration_ms\":1,\"timed_out\":false,"
                       "\"truncated\":false,\"stdout_bytes\":3375,\"stderr_bytes\":0}\n");
        char *argv[] = { "yes", NULL };
        AgentMsg req = { .type = AGENT_MSG_EXEC, .exec = { .argv = argv, .stdin_eof = true, .max_output = 2000 } };
        AgentExecResult res = {};
        seen_output = 0;
        assert_int_equal(agent_client_exec_cancellable(p.client, &req, count_output, NULL, NULL, LONG_MS, &res, &err), 0);
        assert_int_equal(seen_output, 2000);
        assert_true(res.truncated);
        agent_exec_result_done(&res);

        /* No max_output in the request: the agent's hello said 1 TiB, seatd holds 1 GiB at
         * most; here the cap is not reached and nothing is cut. */
        guest_says(&p, "{\"type\":\"started\",\"id\":3,\"pid\":8}\n");
        char line[1700];
        snprintf(line, sizeof(line), "{\"type\":\"output\",\"id\":3,\"stream\":\"stdout\",\"data\":\"%s\"}\n", data);
        guest_says(&p, line);
        guest_says(&p, "{\"type\":\"exit\",\"id\":3,\"code\":0,\"signal\":0,\"duration_ms\":1,\"timed_out\":false,"
                       "\"truncated\":false,\"stdout_bytes\":1125,\"stderr_bytes\":0}\n");
        req.exec.max_output = 0;
        seen_output = 0;
        assert_int_equal(agent_client_exec_cancellable(p.client, &req, count_output, NULL, NULL, LONG_MS, &res, &err), 0);
        assert_int_equal(seen_output, 1125);
        assert_false(res.truncated);
        agent_exec_result_done(&res);
        pair_close(&p);
}

/* A call takes only its own kind of reply: "started" for a configure or a shutdown is a
 * protocol violation (it was taken as success, and its stream then piled up unread). */
TEST(call_takes_only_its_reply) {
        Pair p;
        _cleanup_error_ SeatError *err = NULL;
        pair_after_hello(&p, "");
        guest_says(&p, "{\"type\":\"started\",\"id\":2,\"pid\":0}\n");
        AgentMsg req = { .type = AGENT_MSG_SHUTDOWN, .shutdown = { .action = (char *) "poweroff" } };
        int r = agent_client_call(p.client, &req, LONG_MS, NULL, &err);
        if (r != -EPROTO)
                fail_msg("%d: %s", r, err ? err->message : "");
        assert_non_null(strstr(err->message, "answered shutdown 2 with 'started'"));
        pair_close(&p);

        err = seat_error_free(err);
        pair_after_hello(&p, "");
        guest_says(&p, "{\"type\":\"ok\",\"id\":2}\n");
        assert_int_equal(agent_client_call(p.client, &req, LONG_MS, NULL, &err), 0);
        pair_close(&p);
}

TEST_MAIN("agent-client")
