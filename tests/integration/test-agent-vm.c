/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Boots the test image in a real libvirt domain and drives guest-init over the virtio
 * channel with seatd's agent client. One VM is shared by every case (TCG is slow);
 * shutdown comes last. Needs libvirtd and a built test image ($SEATD_TEST_IMAGE_DIR).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "seatd/agent-client.h"
#include "common/fileio.h"
#include "testvm.h"

#define WAIT_MS 60000

typedef struct Fixture {
        TestVm *vm;
        AgentClient *client;
} Fixture;

static Fixture fx;

static int setup(void **state) {
        _cleanup_error_ SeatError *err = NULL;
        const char *image = getenv("SEATD_TEST_IMAGE_DIR");
        char name[64];

        if (!image) {
                fprintf(stderr, "SEATD_TEST_IMAGE_DIR is not set\n");
                return -1;
        }
        snprintf(name, sizeof(name), "seatd-test-agent-%d", (int) getpid());
        if (testvm_boot(NULL, image, name, &fx.vm, &err) < 0) {
                fprintf(stderr, "boot failed: %s\n", err ? err->message : "?");
                return -1;
        }
        if (agent_client_connect_unix(fx.vm->agent_socket, WAIT_MS, &fx.client, &err) < 0) {
                fprintf(stderr, "%s\n", err->message);
                return -1;
        }
        agent_client_set_single(fx.client); /* this test reads every frame itself, malformed ones' errors too */
        return 0;
}

static int teardown(void **state) {
        fx.client = agent_client_free(fx.client);
        if (getenv("SEATD_TEST_VERBOSE"))
                testvm_dump_console(fx.vm);
        fx.vm = testvm_free(fx.vm);
        return 0;
}

/* err by address: it is read after the call has filled it in. */
static void check(int r, SeatError **err) {
        if (r < 0) {
                testvm_dump_console(fx.vm);
                fail_msg("%s", err && *err ? (*err)->message : strerror(-r));
        }
}

typedef struct Output {
        char *buf;
        size_t len, cap;
        size_t chunks;
} Output;

static int collect(bool is_stderr, const uint8_t *data, size_t len, void *userdata) {
        Output *o = userdata;
        o->chunks++;
        if (o->len + len > o->cap) {
                size_t cap = MAX(o->cap * 2, o->len + len + 1);
                char *n = realloc(o->buf, cap + 1);
                if (!n)
                        return -ENOMEM;
                o->buf = n;
                o->cap = cap;
        }
        memcpy(o->buf + o->len, data, len);
        o->len += len;
        o->buf[o->len] = '\0';
        return 0;
}

static void output_done(Output *o) {
        free(o->buf);
}

/* Runs argv (NULL-terminated) and returns the result; stdout+stderr go to out. */
static void run(char **argv, const char *stdin_data, int64_t timeout_ms, int64_t max_output, Output *out,
                AgentExecResult *res) {
        _cleanup_error_ SeatError *err = NULL;
        AgentMsg req = {
                .type = AGENT_MSG_EXEC,
                .exec = { .argv = argv, .stdin_eof = true, .timeout_ms = timeout_ms, .max_output = max_output,
                          .stdin_data = (uint8_t *) stdin_data, .stdin_len = stdin_data ? strlen(stdin_data) : 0 },
        };
        check(agent_client_exec(fx.client, &req, collect, out, WAIT_MS, res, &err), &err);
}

#define ARGV(...) ((char *[]) { __VA_ARGS__, NULL })

TEST(hello) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_agent_msg_ AgentMsg *h = NULL;
        bool exec_cap = false;

        check(agent_client_hello(fx.client, WAIT_MS, &h, &err), &err);
        assert_int_equal(h->hello.version, 1);
        assert_non_null(strstr(h->hello.agent, "guest-init"));
        for (char **c = h->hello.capabilities; c && *c; c++)
                exec_cap = exec_cap || !strcmp(*c, "exec");
        assert_true(exec_cap);
        assert_true(h->hello.boot_ms > 0);
        assert_true(h->hello.max_frame >= AGENT_MAX_FRAME_MIN);
        print_message("# guest-init ready %lld ms after kernel start; boot to hello took %lld ms on the host\n",
                      (long long) h->hello.boot_ms, (long long) (now_monotonic_ms() - fx.vm->started_ms));
}

TEST(echo) {
        _cleanup_(output_done) Output out = {};
        AgentExecResult res = {};

        run(ARGV("/bin/echo", "hello", "seat"), NULL, 0, 0, &out, &res);
        assert_int_equal(res.code, 0);
        assert_int_equal(res.signal, 0);
        assert_false(res.timed_out);
        assert_false(res.truncated);
        assert_string_equal(out.buf, "hello seat\n");
        assert_int_equal(res.stdout_bytes, 11);
        assert_true(res.pid > 1);
        agent_exec_result_done(&res);
}

TEST(exit_codes_and_signals) {
        _cleanup_(output_done) Output out = {};
        AgentExecResult res = {};

        run(ARGV("/bin/sh", "-c", "echo oops >&2; exit 3"), NULL, 0, 0, &out, &res);
        assert_int_equal(res.code, 3);
        assert_int_equal(res.stderr_bytes, 5);
        agent_exec_result_done(&res);

        run(ARGV("/bin/sh", "-c", "kill -TERM $$"), NULL, 0, 0, &out, &res);
        assert_int_equal(res.code, -1);
        assert_int_equal(res.signal, 15);
        agent_exec_result_done(&res);

        run(ARGV("/no/such/program"), NULL, 0, 0, &out, &res);
        assert_int_equal(res.code, 127);
        assert_non_null(res.error);
        agent_exec_result_done(&res);
}

TEST(stdin) {
        _cleanup_(output_done) Output out = {};
        AgentExecResult res = {};

        run(ARGV("/bin/cat"), "line one\nline two\n", 0, 0, &out, &res);
        assert_int_equal(res.code, 0);
        assert_string_equal(out.buf, "line one\nline two\n");
        agent_exec_result_done(&res);
}

/* Receives the next message for id (skipping nothing: the test drives one exec at a time). */
static AgentMsg *recv_msg(void) {
        AgentMsg *m = NULL;
        int r = agent_client_recv(fx.client, WAIT_MS, &m);
        if (r < 0)
                fail_msg("recv: %s", strerror(-r));
        return m;
}

static void send_msg(AgentMsg *m) {
        int r = agent_client_send(fx.client, m, WAIT_MS);
        if (r < 0)
                fail_msg("send: %s", strerror(-r));
}

/* Output must arrive while the tool still runs: the tool prints, then waits for stdin
 * that the test sends only after it has seen the output. Without streaming this hangs. */
TEST(output_streams_before_exit) {
        int64_t id = agent_client_next_id(fx.client);
        AgentMsg req = { .type = AGENT_MSG_EXEC, .id = id,
                         .exec = { .argv = ARGV("/bin/sh", "-c", "echo ready; read x; echo got $x"),
                                   .stdin_eof = false, .timeout_ms = 30000 } };
        send_msg(&req);

        _cleanup_agent_msg_ AgentMsg *started = recv_msg();
        assert_int_equal(started->type, AGENT_MSG_STARTED);
        _cleanup_agent_msg_ AgentMsg *first = recv_msg();
        assert_int_equal(first->type, AGENT_MSG_OUTPUT);
        assert_int_equal(first->id, id);
        assert_int_equal(first->output.len, 6);
        assert_memory_equal(first->output.data, "ready\n", 6);

        AgentMsg in = { .type = AGENT_MSG_STDIN, .id = agent_client_next_id(fx.client),
                        .stdin_msg = { .exec = id, .data = (uint8_t *) "42\n", .len = 3, .eof = true } };
        send_msg(&in);

        bool ok_seen = false, exit_seen = false;
        _cleanup_(output_done) Output out = {};
        while (!exit_seen) {
                _cleanup_agent_msg_ AgentMsg *m = recv_msg();
                if (m->id == in.id) {
                        assert_int_equal(m->type, AGENT_MSG_OK);
                        ok_seen = true;
                } else if (m->type == AGENT_MSG_OUTPUT) {
                        collect(false, m->output.data, m->output.len, &out);
                } else {
                        assert_int_equal(m->type, AGENT_MSG_EXIT);
                        assert_int_equal(m->exit.code, 0);
                        exit_seen = true;
                }
        }
        assert_true(ok_seen);
        assert_string_equal(out.buf, "got 42\n");
}

TEST(big_output_is_capped) {
        _cleanup_(output_done) Output out = {};
        AgentExecResult res = {};

        run(ARGV("/bin/sh", "-c", "head -c 5242880 /dev/zero"), NULL, 0, 1 << 20, &out, &res);
        assert_int_equal(res.code, 0);
        assert_true(res.truncated);
        assert_int_equal(out.len, 1 << 20);
        assert_int_equal(res.stdout_bytes, 5 << 20);
        assert_true(out.chunks > 1);
        agent_exec_result_done(&res);
}

TEST(timeout_kills_the_process_group) {
        _cleanup_(output_done) Output out = {}, ps = {};
        AgentExecResult res = {};

        /* The background child keeps stdout open; the timeout must still end the exec. */
        run(ARGV("/bin/sh", "-c", "sleep 1001 & echo started; sleep 1002"), NULL, 1500, 0, &out, &res);
        assert_true(res.timed_out);
        assert_int_equal(res.signal, 9);
        assert_string_equal(out.buf, "started\n");
        agent_exec_result_done(&res);

        /* The main process exits while its child holds the pipe: the exec ends, the child dies. */
        run(ARGV("/bin/sh", "-c", "sleep 1003 & echo parent done"), NULL, 20000, 0, &out, &res);
        assert_false(res.timed_out);
        assert_int_equal(res.code, 0);
        agent_exec_result_done(&res);

        run(ARGV("/bin/sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o 'sleep 100[0-9]' || true"),
            NULL, 0, 0, &ps, &res);
        assert_int_equal(res.code, 0);
        if (ps.len > 0)
                fail_msg("processes survived their exec: %s", ps.buf);
        agent_exec_result_done(&res);
}

TEST(kill_and_concurrent_execs) {
        int64_t slow = agent_client_next_id(fx.client), fast = agent_client_next_id(fx.client);
        AgentMsg a = { .type = AGENT_MSG_EXEC, .id = slow, .exec = { .argv = ARGV("/bin/sleep", "1000"), .stdin_eof = true } };
        AgentMsg b = { .type = AGENT_MSG_EXEC, .id = fast, .exec = { .argv = ARGV("/bin/echo", "fast"), .stdin_eof = true } };
        send_msg(&a);
        send_msg(&b);

        /* The fast one finishes while the slow one runs. */
        bool fast_done = false, slow_started = false;
        while (!fast_done || !slow_started) {
                _cleanup_agent_msg_ AgentMsg *m = recv_msg();
                if (m->id == slow) {
                        assert_int_equal(m->type, AGENT_MSG_STARTED);
                        slow_started = true;
                } else {
                        assert_int_equal(m->id, fast);
                        fast_done = m->type == AGENT_MSG_EXIT;
                }
        }

        int64_t kid = agent_client_next_id(fx.client);
        AgentMsg k = { .type = AGENT_MSG_KILL, .id = kid, .kill = { .exec = slow, .signal = 9 } };
        send_msg(&k);
        bool ok = false, exited = false;
        while (!ok || !exited) {
                _cleanup_agent_msg_ AgentMsg *m = recv_msg();
                if (m->id == kid) {
                        assert_int_equal(m->type, AGENT_MSG_OK);
                        ok = true;
                } else {
                        assert_int_equal(m->id, slow);
                        assert_int_equal(m->type, AGENT_MSG_EXIT);
                        assert_int_equal(m->exit.signal, 9);
                        exited = true;
                }
        }

        /* Killing what is no longer running is refused. */
        _cleanup_error_ SeatError *err = NULL;
        AgentMsg k2 = { .type = AGENT_MSG_KILL, .kill = { .exec = slow, .signal = 9 } };
        assert_int_equal(agent_client_call(fx.client, &k2, WAIT_MS, NULL, &err), -EREMOTEIO);
        assert_non_null(strstr(err->message, "not_found"));
}

TEST(file_round_trip) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ uint8_t *data = malloc(1536 * 1024);
        _cleanup_free_ void *back = NULL;
        size_t n = 0;
        uint32_t x = 2463534242u;

        assert_non_null(data);
        for (size_t i = 0; i < 1536 * 1024; i++) {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                data[i] = (uint8_t) x;
        }
        check(agent_client_file_put(fx.client, "/tmp/round-trip.bin", data, 1536 * 1024, 0600, WAIT_MS, &err), &err);
        check(agent_client_file_get(fx.client, "/tmp/round-trip.bin", 4 << 20, WAIT_MS, &back, &n, &err), &err);
        assert_int_equal(n, 1536 * 1024);
        assert_memory_equal(back, data, n);

        _cleanup_(output_done) Output out = {};
        AgentExecResult res = {};
        run(ARGV("/bin/sh", "-c", "stat -c '%s %a' /tmp/round-trip.bin"), NULL, 0, 0, &out, &res);
        assert_string_equal(out.buf, "1572864 600\n");
        agent_exec_result_done(&res);

        assert_int_equal(agent_client_file_get(fx.client, "/tmp/missing", 100, WAIT_MS, &back, &n, NULL), -EREMOTEIO);
}

TEST(configure) {
        _cleanup_error_ SeatError *err = NULL;
        uint8_t entropy[64];
        for (size_t i = 0; i < sizeof(entropy); i++)
                entropy[i] = (uint8_t) (i * 31 + 7);
        AgentMsg req = { .type = AGENT_MSG_CONFIGURE,
                         .configure = { .hostname = (char *) "seat-test-1", .seat_id = (char *) "s-test-1",
                                        .machine_id = (char *) "00112233445566778899aabbccddeeff",
                                        .entropy = entropy, .entropy_len = sizeof(entropy) } };
        check(agent_client_call(fx.client, &req, WAIT_MS, NULL, &err), &err);

        _cleanup_(output_done) Output out = {};
        AgentExecResult res = {};
        run(ARGV("/bin/sh", "-c", "hostname; cat /etc/machine-id"), NULL, 0, 0, &out, &res);
        assert_string_equal(out.buf, "seat-test-1\n00112233445566778899aabbccddeeff\n");
        agent_exec_result_done(&res);
}

static void expect_error(const char *raw, size_t len, int64_t id, const char *code) {
        _cleanup_agent_msg_ AgentMsg *m = NULL;
        int r = agent_client_send_raw(fx.client, raw, len, WAIT_MS);
        if (r < 0)
                fail_msg("send: %s", strerror(-r));
        r = agent_client_recv(fx.client, WAIT_MS, &m);
        if (r < 0)
                fail_msg("no answer to a %zu-byte frame starting '%.40s' (expected %s): %s", len, raw, code, strerror(-r));
        assert_int_equal(m->type, AGENT_MSG_ERROR);
        assert_int_equal(m->id, id);
        if (strcmp(m->error.code, code) != 0)
                fail_msg("expected error '%s', got '%s': %s", code, m->error.code, m->error.message);
}

static void expect_error_s(const char *raw, int64_t id, const char *code) {
        expect_error(raw, strlen(raw), id, code);
}

TEST(bad_frames_get_errors_and_the_agent_keeps_serving) {
        _cleanup_error_ SeatError *err = NULL;

        expect_error_s("garbage\n", 0, AGENT_ERR_MALFORMED);
        expect_error_s("{\"type\":\"frobnicate\",\"id\":77}\n", 77, AGENT_ERR_UNKNOWN_TYPE);
        expect_error_s("{\"type\":\"exec\",\"id\":78,\"argv\":\"ls\"}\n", 78, AGENT_ERR_INVALID);
        expect_error_s("{\"type\":\"exec\",\"id\":79,\"argv\":[\"ls\"],\"timeout_ms\":\"x\"}\n", 79, AGENT_ERR_INVALID);
        expect_error_s("{\"a\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}\n", 0, AGENT_ERR_MALFORMED);
        expect_error_s("{\"type\":\"ping\",\"id\":80,\"x\":\"\xc3\x28\"}\n", 0, AGENT_ERR_MALFORMED);
        expect_error("{\"type\":\"ping\",\"id\":81}\0\n", 25, 0, AGENT_ERR_MALFORMED);
        expect_error_s("{\"type\":\"hello\",\"id\":82,\"version\":2}\n", 82, AGENT_ERR_VERSION);

        /* A frame over the cap (1 MiB) is dropped up to its newline: one error, id 0. */
        size_t big = AGENT_MAX_FRAME_DEFAULT + 4096;
        _cleanup_free_ char *raw = malloc(big + 1);
        assert_non_null(raw);
        memset(raw, 'x', big);
        raw[0] = '{';
        raw[big] = '\n';
        expect_error(raw, big + 1, 0, AGENT_ERR_TOO_LARGE);

        /* A refused hello leaves the connection without one: say hello again. */
        check(agent_client_hello(fx.client, WAIT_MS, NULL, &err), &err);
        check(agent_client_ping(fx.client, WAIT_MS, &err), &err);
        _cleanup_(output_done) Output out = {};
        AgentExecResult res = {};
        run(ARGV("/bin/echo", "still serving"), NULL, 0, 0, &out, &res);
        assert_string_equal(out.buf, "still serving\n");
        agent_exec_result_done(&res);
}

TEST(reconnect) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_(output_done) Output ps = {};
        AgentExecResult res = {};

        /* A tool still runs when the host goes away (a seatd restart) ... */
        int64_t id = agent_client_next_id(fx.client);
        AgentMsg req = { .type = AGENT_MSG_EXEC, .id = id,
                         .exec = { .argv = ARGV("/bin/sleep", "1004"), .stdin_eof = true } };
        send_msg(&req);
        _cleanup_agent_msg_ AgentMsg *started = recv_msg();
        assert_int_equal(started->type, AGENT_MSG_STARTED);

        /* ... and a new host connects and says hello: a new session. The old session's
         * exec is killed and nothing of it reaches the new host, even under reused ids. */
        fx.client = agent_client_free(fx.client);
        check(agent_client_connect_unix(fx.vm->agent_socket, WAIT_MS, &fx.client, &err), &err);
        agent_client_set_single(fx.client); /* this test reads every frame itself, malformed ones' errors too */
        check(agent_client_hello(fx.client, WAIT_MS, NULL, &err), &err);
        check(agent_client_ping(fx.client, WAIT_MS, &err), &err);
        run(ARGV("/bin/sh", "-c", "sleep 0.5; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o 'sleep 100[4]' || true"),
            NULL, 0, 0, &ps, &res);
        if (ps.len > 0)
                fail_msg("the old session's exec survived the new hello: %s", ps.buf);
        agent_exec_result_done(&res);
        check(agent_client_ping(fx.client, WAIT_MS, &err), &err);
}

TEST(shutdown) {
        _cleanup_error_ SeatError *err = NULL;
        AgentMsg req = { .type = AGENT_MSG_SHUTDOWN, .shutdown = { .action = (char *) "poweroff" } };

        check(agent_client_call(fx.client, &req, WAIT_MS, NULL, &err), &err);
        if (!testvm_wait_shutoff(fx.vm, WAIT_MS)) {
                testvm_dump_console(fx.vm);
                fail_msg("the guest did not power off");
        }
}

TEST_MAIN_FIXTURE("agent-vm", setup, teardown)
