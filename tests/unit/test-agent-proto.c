/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "common/agent-proto.h"

static AgentMsg *parse_ok(const char *s) {
        AgentMsg *m = NULL;
        AgentParseError err;
        int r = agent_msg_parse(s, strlen(s), &m, &err);
        if (r < 0)
                fail_msg("parse of '%s' failed: %d %s: %s", s, r, err.code, err.message);
        return m;
}

static void parse_fails(const char *s, int expect_r, int64_t expect_id, const char *expect_code,
                        const char *expect_in_message) {
        AgentMsg *m = NULL;
        AgentParseError err;
        int r = agent_msg_parse(s, strlen(s), &m, &err);
        assert_int_equal(r, expect_r);
        assert_null(m);
        assert_int_equal(err.id, expect_id);
        assert_string_equal(err.code, expect_code);
        if (expect_in_message && !strstr(err.message, expect_in_message))
                fail_msg("message '%s' does not mention '%s'", err.message, expect_in_message);
}

TEST(exec_request) {
        _cleanup_agent_msg_ AgentMsg *m = parse_ok(
                "{\"type\":\"exec\",\"id\":7,\"argv\":[\"/bin/sh\",\"-c\",\"cat\"],\"env\":[\"A=1\"],"
                "\"cwd\":\"/tmp\",\"stdin\":\"aGk=\",\"stdin_eof\":false,\"timeout_ms\":1000,"
                "\"max_output\":4096,\"uid\":65534,\"gid\":65534,\"unknown\":{\"x\":1}}");
        assert_int_equal(m->type, AGENT_MSG_EXEC);
        assert_int_equal(m->id, 7);
        assert_string_equal(m->exec.argv[2], "cat");
        assert_null(m->exec.argv[3]);
        assert_string_equal(m->exec.env[0], "A=1");
        assert_string_equal(m->exec.cwd, "/tmp");
        assert_int_equal(m->exec.stdin_len, 2);
        assert_memory_equal(m->exec.stdin_data, "hi", 2);
        assert_false(m->exec.stdin_eof);
        assert_int_equal(m->exec.timeout_ms, 1000);
        assert_int_equal(m->exec.max_output, 4096);
        assert_int_equal(m->exec.uid, 65534);
}

TEST(exec_defaults) {
        _cleanup_agent_msg_ AgentMsg *m = parse_ok("{\"type\":\"exec\",\"id\":1,\"argv\":[\"true\"]}");
        assert_true(m->exec.stdin_eof);
        assert_null(m->exec.env);
        assert_null(m->exec.cwd);
        assert_null(m->exec.stdin_data);
        assert_int_equal(m->exec.timeout_ms, 0);
}

TEST(errors_name_the_field_and_keep_the_id) {
        static const struct {
                const char *frame;
                int ret;
                int64_t id;
                const char *code;
                const char *field; /* the message names it (NULL: not checked) */
        } cases[] = {
                { "not json", -EBADMSG, 0, AGENT_ERR_MALFORMED, NULL },
                { "{\"type\":\"exec\",\"id\":3}", -EINVAL, 3, AGENT_ERR_INVALID, "'argv'" },
                { "{\"type\":\"exec\",\"id\":3,\"argv\":\"ls\"}", -EINVAL, 3, AGENT_ERR_INVALID, "'argv'" },
                { "{\"type\":\"exec\",\"id\":3,\"argv\":[]}", -EINVAL, 3, AGENT_ERR_INVALID, "'argv'" },
                { "{\"type\":\"exec\",\"id\":3,\"argv\":[\"a\"],\"env\":[\"NOEQ\"]}", -EINVAL, 3, AGENT_ERR_INVALID, "'env'" },
                { "{\"type\":\"exec\",\"id\":3,\"argv\":[\"a\"],\"cwd\":\"rel\"}", -EINVAL, 3, AGENT_ERR_INVALID, "'cwd'" },
                { "{\"type\":\"exec\",\"id\":3,\"argv\":[\"a\"],\"timeout_ms\":-1}", -EINVAL, 3, AGENT_ERR_INVALID, "'timeout_ms'" },
                { "{\"type\":\"exec\",\"id\":3,\"argv\":[\"a\"],\"stdin\":\"!!!!\"}", -EINVAL, 3, AGENT_ERR_INVALID, "'stdin'" },
                { "{\"type\":\"frobnicate\",\"id\":9}", -EOPNOTSUPP, 9, AGENT_ERR_UNKNOWN_TYPE, NULL },
                { "{\"type\":\"ping\"}", -EINVAL, 0, AGENT_ERR_INVALID, "'id'" },
                { "{\"type\":\"ping\",\"id\":0}", -EINVAL, 0, AGENT_ERR_INVALID, "'id'" },
                { "{\"type\":\"ping\",\"id\":\"1\"}", -EINVAL, 0, AGENT_ERR_INVALID, "'id'" },
                { "{\"type\":\"ping\",\"id\":9007199254740993}", -EINVAL, 0, AGENT_ERR_INVALID, "'id'" },
                { "{\"type\":5,\"id\":4}", -EINVAL, 4, AGENT_ERR_INVALID, "'type'" },
                { "{\"id\":4}", -EINVAL, 4, AGENT_ERR_INVALID, "'type'" },
                { "{\"type\":\"hello\",\"id\":1,\"version\":1.5}", -EINVAL, 1, AGENT_ERR_INVALID, "'version'" },
                { "{\"type\":\"configure\",\"id\":2,\"hostname\":\"a b\"}", -EINVAL, 2, AGENT_ERR_INVALID, "'hostname'" },
                { "{\"type\":\"configure\",\"id\":2,\"machine_id\":\"XYZ\"}", -EINVAL, 2, AGENT_ERR_INVALID, "'machine_id'" },
                { "{\"type\":\"configure\",\"id\":2,\"time\":1796000000}", -EINVAL, 2, AGENT_ERR_INVALID, "'time'" },
                { "{\"type\":\"configure\",\"id\":2,\"time\":{\"sec\":1796000000}}", -EINVAL, 2, AGENT_ERR_INVALID, "'time'" },
                { "{\"type\":\"configure\",\"id\":2,\"time\":{\"sec\":-1,\"nsec\":0}}", -EINVAL, 2, AGENT_ERR_INVALID, "'time'" },
                { "{\"type\":\"configure\",\"id\":2,\"time\":{\"sec\":1,\"nsec\":1000000000}}", -EINVAL, 2, AGENT_ERR_INVALID, "'time'" },
                { "{\"type\":\"configure\",\"id\":2,\"time\":{\"sec\":253402300800,\"nsec\":0}}", -EINVAL, 2, AGENT_ERR_INVALID, "'time'" },
                { "{\"type\":\"file_get\",\"id\":2,\"path\":\"etc/passwd\"}", -EINVAL, 2, AGENT_ERR_INVALID, "'path'" },
                { "{\"type\":\"file_get\",\"id\":2,\"path\":\"/x\",\"length\":999999999}", -EINVAL, 2, AGENT_ERR_INVALID, "'length'" },
                { "{\"type\":\"shutdown\",\"id\":2,\"action\":\"explode\"}", -EINVAL, 2, AGENT_ERR_INVALID, "'action'" },
                { "{\"type\":\"exit\",\"id\":2,\"code\":-1,\"signal\":0}", -EINVAL, 2, AGENT_ERR_INVALID, "'signal'" },
                { "{\"type\":\"output\",\"id\":2,\"stream\":\"stdfoo\",\"data\":\"\"}", -EINVAL, 2, AGENT_ERR_INVALID, "'stream'" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                parse_fails(cases[i].frame, cases[i].ret, cases[i].id, cases[i].code, cases[i].field);
}

TEST(error_may_have_id_zero) {
        _cleanup_agent_msg_ AgentMsg *m = parse_ok("{\"type\":\"error\",\"id\":0,\"code\":\"too_large\"}");
        assert_int_equal(m->id, 0);
        assert_string_equal(m->error.code, "too_large");
}

static AgentMsg *roundtrip(const AgentMsg *m) {
        _cleanup_free_ char *s = NULL;
        size_t n;
        AgentMsg *back = NULL;

        assert_int_equal(agent_msg_format(m, AGENT_MAX_FRAME_DEFAULT, &s, &n), 0);
        assert_int_equal(s[n - 1], '\n');
        assert_null(memchr(s, '\n', n - 1));
        assert_int_equal(agent_msg_parse(s, n - 1, &back, NULL), 0);
        assert_int_equal(back->type, m->type);
        assert_int_equal(back->id, m->id);
        return back;
}

TEST(roundtrips) {
        char *argv[] = { (char *) "/bin/echo", (char *) "h\xc3\xa9llo\n\"", NULL };
        AgentMsg exec = { .type = AGENT_MSG_EXEC, .id = 5, .exec = { .argv = argv, .stdin_eof = true, .timeout_ms = 10 } };
        _cleanup_agent_msg_ AgentMsg *e = roundtrip(&exec);
        assert_string_equal(e->exec.argv[1], argv[1]);
        assert_int_equal(e->exec.timeout_ms, 10);

        uint8_t bin[300];
        for (size_t i = 0; i < sizeof(bin); i++)
                bin[i] = (uint8_t) (i * 7);
        AgentMsg out = { .type = AGENT_MSG_OUTPUT, .id = 5, .output = { .is_stderr = true, .data = bin, .len = sizeof(bin) } };
        _cleanup_agent_msg_ AgentMsg *o = roundtrip(&out);
        assert_true(o->output.is_stderr);
        assert_int_equal(o->output.len, sizeof(bin));
        assert_memory_equal(o->output.data, bin, sizeof(bin));

        AgentMsg ex = { .type = AGENT_MSG_EXIT, .id = 5, .exit = { .code = -1, .signal = 9, .timed_out = true, .stdout_bytes = 5 << 20 } };
        _cleanup_agent_msg_ AgentMsg *x = roundtrip(&ex);
        assert_int_equal(x->exit.signal, 9);
        assert_true(x->exit.timed_out);
        assert_int_equal(x->exit.stdout_bytes, 5 << 20);

        char *caps[] = { (char *) "exec", NULL };
        AgentMsg hello = { .type = AGENT_MSG_HELLO, .id = 1, .hello = { .version = 1, .agent = (char *) "guest-init 0", .capabilities = caps, .max_frame = 1 << 20 } };
        _cleanup_agent_msg_ AgentMsg *h = roundtrip(&hello);
        assert_string_equal(h->hello.capabilities[0], "exec");
        assert_int_equal(h->hello.max_frame, 1 << 20);

        AgentAddress addr = { .ifname = (char *) "eth0", .address = (char *) "10.0.0.2/24" };
        uint8_t ent[32] = { 1, 2, 3 };
        AgentMsg conf = { .type = AGENT_MSG_CONFIGURE, .id = 2, .configure = { .hostname = (char *) "seat-1",
                .machine_id = (char *) "0123456789abcdef0123456789abcdef", .entropy = ent, .entropy_len = 32,
                .addresses = &addr, .n_addresses = 1 } };
        _cleanup_agent_msg_ AgentMsg *c = roundtrip(&conf);
        assert_string_equal(c->configure.addresses[0].address, "10.0.0.2/24");
        assert_null(c->configure.addresses[0].gateway);
        assert_int_equal(c->configure.entropy_len, 32);
        assert_false(c->configure.has_time);

        AgentMsg timed = { .type = AGENT_MSG_CONFIGURE, .id = 3,
                           .configure = { .has_time = true, .time_sec = 1796026523, .time_nsec = 999999999 } };
        _cleanup_agent_msg_ AgentMsg *t = roundtrip(&timed);
        assert_true(t->configure.has_time);
        assert_int_equal(t->configure.time_sec, 1796026523);
        assert_int_equal(t->configure.time_nsec, 999999999);
        char *none = NULL;
        size_t n;
        timed.configure.time_nsec = 1000000000;
        assert_int_equal(agent_msg_format(&timed, AGENT_MAX_FRAME_DEFAULT, &none, &n), -EINVAL);
}

TEST(format_refuses_what_parse_refuses) {
        char *none = NULL;
        size_t n;
        AgentMsg noargv = { .type = AGENT_MSG_EXEC, .id = 1 };
        assert_int_equal(agent_msg_format(&noargv, AGENT_MAX_FRAME_DEFAULT, &none, &n), -EINVAL);
        AgentMsg id0 = { .type = AGENT_MSG_PING, .id = 0 };
        assert_int_equal(agent_msg_format(&id0, AGENT_MAX_FRAME_DEFAULT, &none, &n), -EINVAL);

        static uint8_t big[AGENT_CHUNK_MAX];
        AgentMsg out = { .type = AGENT_MSG_OUTPUT, .id = 1, .output = { .data = big, .len = sizeof(big) } };
        assert_int_equal(agent_msg_format(&out, 1000, &none, &n), -E2BIG);
        _cleanup_free_ char *ok = NULL;
        assert_int_equal(agent_msg_format(&out, AGENT_MAX_FRAME_DEFAULT, &ok, &n), 0);
        assert_null(none);
}

TEST(reply_helpers) {
        _cleanup_free_ char *e = NULL, *o = NULL;
        size_t n;
        assert_int_equal(agent_format_error(0, AGENT_ERR_TOO_LARGE, "frame over 1048576 bytes", 4096, &e, &n), 0);
        assert_string_equal(e, "{\"type\":\"error\",\"id\":0,\"code\":\"too_large\",\"message\":\"frame over 1048576 bytes\"}\n");
        assert_int_equal(agent_format_ok(3, 12, 4096, &o, &n), 0);
        assert_string_equal(o, "{\"type\":\"ok\",\"id\":3,\"size\":12}\n");
}

TEST(fast_output_matches_generic) {
        static uint8_t data[70000];
        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (uint8_t) (i * 131 + 7);
        size_t lens[] = { 0, 1, 2, 3, 4, 1000, sizeof(data) };
        for (size_t k = 0; k < ELEMENTSOF(lens); k++)
                for (int err = 0; err < 2; err++) {
                        _cleanup_free_ char *a = NULL, *b = NULL;
                        size_t na, nb;
                        AgentMsg m = { .type = AGENT_MSG_OUTPUT, .id = 9007199254740992LL - k,
                                       .output = { .is_stderr = err, .data = data, .len = lens[k] } };
                        assert_int_equal(agent_msg_format(&m, AGENT_MAX_FRAME_DEFAULT, &a, &na), 0);
                        assert_int_equal(agent_format_output(m.id, err, data, lens[k], AGENT_MAX_FRAME_DEFAULT, &b, &nb), 0);
                        assert_int_equal(na, nb);
                        assert_memory_equal(a, b, na);
                }
        char *none = NULL;
        size_t n;
        assert_int_equal(agent_format_output(1, false, data, sizeof(data), 1000, &none, &n), -E2BIG);
        assert_int_equal(agent_format_output(0, false, data, 1, 1000, &none, &n), -EINVAL);
        assert_null(none);
}

/* v1.1: exec.pty, resize and the "pty" stream; what an old host never sends changes nothing. */
TEST(pty) {
        _cleanup_agent_msg_ AgentMsg *e = parse_ok("{\"type\":\"exec\",\"id\":4,\"argv\":[\"sh\"],\"pty\":{\"rows\":24,\"cols\":80}}");
        assert_true(e->exec.has_pty);
        assert_int_equal(e->exec.pty_rows, 24);
        assert_int_equal(e->exec.pty_cols, 80);
        _cleanup_agent_msg_ AgentMsg *plain = parse_ok("{\"type\":\"exec\",\"id\":4,\"argv\":[\"sh\"]}");
        assert_false(plain->exec.has_pty);

        parse_fails("{\"type\":\"exec\",\"id\":4,\"argv\":[\"sh\"],\"pty\":{\"rows\":0,\"cols\":80}}", -EINVAL, 4,
                    AGENT_ERR_INVALID, "pty");
        parse_fails("{\"type\":\"exec\",\"id\":4,\"argv\":[\"sh\"],\"pty\":{\"rows\":24}}", -EINVAL, 4, AGENT_ERR_INVALID,
                    "pty");
        parse_fails("{\"type\":\"exec\",\"id\":4,\"argv\":[\"sh\"],\"pty\":{\"rows\":24,\"cols\":10001}}", -EINVAL, 4,
                    AGENT_ERR_INVALID, "pty");
        parse_fails("{\"type\":\"exec\",\"id\":4,\"argv\":[\"sh\"],\"pty\":true}", -EINVAL, 4, AGENT_ERR_INVALID, "pty");

        _cleanup_agent_msg_ AgentMsg *r = parse_ok("{\"type\":\"resize\",\"id\":5,\"exec\":4,\"rows\":50,\"cols\":132}");
        assert_int_equal(r->type, AGENT_MSG_RESIZE);
        assert_true(agent_msg_type_is_request(r->type));
        assert_int_equal(r->resize.exec, 4);
        assert_int_equal(r->resize.rows, 50);
        assert_int_equal(r->resize.cols, 132);
        parse_fails("{\"type\":\"resize\",\"id\":5,\"exec\":4,\"rows\":50}", -EINVAL, 5, AGENT_ERR_INVALID, "cols");
        parse_fails("{\"type\":\"resize\",\"id\":5,\"exec\":0,\"rows\":50,\"cols\":1}", -EINVAL, 5, AGENT_ERR_INVALID, "exec");

        _cleanup_agent_msg_ AgentMsg *o = parse_ok("{\"type\":\"output\",\"id\":4,\"stream\":\"pty\",\"data\":\"aGk=\"}");
        assert_true(o->output.is_pty);
        assert_false(o->output.is_stderr);
        parse_fails("{\"type\":\"output\",\"id\":4,\"stream\":\"ptyx\",\"data\":\"\"}", -EINVAL, 4, AGENT_ERR_INVALID, "stream");

        char *argv[] = { (char *) "sh", NULL };
        AgentMsg exec = { .type = AGENT_MSG_EXEC, .id = 6, .exec = { .argv = argv, .has_pty = true, .pty_rows = 10000, .pty_cols = 1 } };
        _cleanup_agent_msg_ AgentMsg *x = roundtrip(&exec);
        assert_true(x->exec.has_pty);
        assert_int_equal(x->exec.pty_rows, 10000);
        AgentMsg rs = { .type = AGENT_MSG_RESIZE, .id = 7, .resize = { .exec = 6, .rows = 1, .cols = 2 } };
        _cleanup_agent_msg_ AgentMsg *y = roundtrip(&rs);
        assert_int_equal(y->resize.cols, 2);

        char *none = NULL;
        size_t n;
        exec.exec.pty_cols = 0;
        assert_int_equal(agent_msg_format(&exec, AGENT_MAX_FRAME_DEFAULT, &none, &n), -EINVAL);
        rs.resize.rows = 10001;
        assert_int_equal(agent_msg_format(&rs, AGENT_MAX_FRAME_DEFAULT, &none, &n), -EINVAL);
        assert_null(none);

        /* The fast path writes what the generic formatter does. */
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t na, nb;
        AgentMsg out = { .type = AGENT_MSG_OUTPUT, .id = 4, .output = { .is_pty = true, .data = (uint8_t *) "\r\n$ ", .len = 4 } };
        assert_int_equal(agent_msg_format(&out, AGENT_MAX_FRAME_DEFAULT, &a, &na), 0);
        assert_int_equal(agent_format_output_pty(4, (const uint8_t *) "\r\n$ ", 4, AGENT_MAX_FRAME_DEFAULT, &b, &nb), 0);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
}

static char *repeated(const char *elem, size_t count) {
        size_t el = strlen(elem), n = 0;
        char *s = malloc(count * (el + 1) + 1);
        assert_non_null(s);
        for (size_t k = 0; k < count; k++) {
                if (k)
                        s[n++] = ',';
                memcpy(s + n, elem, el);
                n += el;
        }
        s[n] = '\0';
        return s;
}

/* A guest's frame is parsed in seatd before anything in it is checked: a 1 MiB line of
 * "{}," would cost json-c some 270 MiB. Refused unparsed, with too_large. */
TEST(amplification) {
        size_t count = 1024 * 1024 / 3 - 16;
        _cleanup_free_ char *objects = repeated("{}", count), *zeros = repeated("0", count / 2 * 3 - 16);
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        assert_true(asprintf(&a, "{\"type\":\"pong\",\"id\":1,\"x\":[%s]}", objects) > 0);
        assert_true(asprintf(&b, "{\"type\":\"exit\",\"id\":1,\"x\":[%s]}", zeros) > 0);
        assert_true(strlen(a) < AGENT_MAX_FRAME_DEFAULT && strlen(b) < AGENT_MAX_FRAME_DEFAULT);
        parse_fails(a, -E2BIG, 0, AGENT_ERR_TOO_LARGE, "more than 64 JSON objects and arrays or 4096 values");
        parse_fails(b, -E2BIG, 0, AGENT_ERR_TOO_LARGE, "4096 values");

        /* The largest messages still parse: an exec with AGENT_ARGV_MAX argv and AGENT_ENV_MAX
         * env strings, a configure with AGENT_ADDR_MAX addresses. */
        _cleanup_free_ char *argv = repeated("\"x\"", AGENT_ARGV_MAX), *env = repeated("\"A=1\"", AGENT_ENV_MAX);
        assert_true(asprintf(&c, "{\"type\":\"exec\",\"id\":2,\"argv\":[%s],\"env\":[%s],\"cwd\":\"/\",\"stdin\":\"\","
                                 "\"stdin_eof\":true,\"timeout_ms\":1,\"max_output\":1,\"uid\":0,\"gid\":0}",
                             argv, env) > 0);
        _cleanup_agent_msg_ AgentMsg *m = parse_ok(c);
        assert_string_equal(m->exec.argv[AGENT_ARGV_MAX - 1], "x");
        assert_string_equal(m->exec.env[AGENT_ENV_MAX - 1], "A=1");
        _cleanup_free_ char *addrs = repeated("{\"ifname\":\"eth0\",\"address\":\"10.0.0.2/24\",\"gateway\":\"10.0.0.1\"}",
                                              AGENT_ADDR_MAX);
        _cleanup_free_ char *d = NULL;
        assert_true(asprintf(&d, "{\"type\":\"configure\",\"id\":3,\"hostname\":\"h\",\"time\":{\"sec\":1,\"nsec\":2},"
                                 "\"addresses\":[%s]}", addrs) > 0);
        _cleanup_agent_msg_ AgentMsg *cfg = parse_ok(d);
        assert_int_equal(cfg->configure.n_addresses, AGENT_ADDR_MAX);
}

/* v1.2 "tcp": connect, its started with pid 0, output with eof. */
TEST(connect) {
        _cleanup_agent_msg_ AgentMsg *c = parse_ok("{\"type\":\"connect\",\"id\":8,\"host\":\"fd00::5\",\"port\":80}");
        assert_int_equal(c->type, AGENT_MSG_CONNECT);
        assert_true(agent_msg_type_is_request(c->type));
        assert_string_equal(c->connect.host, "fd00::5");
        assert_int_equal(c->connect.port, 80);
        assert_int_equal(c->connect.timeout_ms, 0);
        parse_fails("{\"type\":\"connect\",\"id\":8,\"host\":\"a\",\"port\":0}", -EINVAL, 8, AGENT_ERR_INVALID, "port");
        parse_fails("{\"type\":\"connect\",\"id\":8,\"host\":\"a\",\"port\":65536}", -EINVAL, 8, AGENT_ERR_INVALID, "port");
        parse_fails("{\"type\":\"connect\",\"id\":8,\"port\":80}", -EINVAL, 8, AGENT_ERR_INVALID, "host");
        parse_fails("{\"type\":\"connect\",\"id\":8,\"host\":\"\",\"port\":80}", -EINVAL, 8, AGENT_ERR_INVALID, "host");
        parse_fails("{\"type\":\"connect\",\"id\":8,\"host\":\"a b\",\"port\":80}", -EINVAL, 8, AGENT_ERR_INVALID, "host");
        parse_fails("{\"type\":\"connect\",\"id\":8,\"host\":\"a/../b\",\"port\":80}", -EINVAL, 8, AGENT_ERR_INVALID, "host");
        parse_fails("{\"type\":\"connect\",\"id\":8,\"host\":\"a\",\"port\":80,\"timeout_ms\":60001}", -EINVAL, 8,
                    AGENT_ERR_INVALID, "timeout_ms");

        AgentMsg m = { .type = AGENT_MSG_CONNECT, .id = 9, .connect = { .host = (char *) "10.0.0.5", .port = 443, .timeout_ms = 500 } };
        _cleanup_agent_msg_ AgentMsg *x = roundtrip(&m);
        assert_string_equal(x->connect.host, "10.0.0.5");
        assert_int_equal(x->connect.port, 443);
        assert_int_equal(x->connect.timeout_ms, 500);
        char *none = NULL;
        size_t n;
        m.connect.host = (char *) "bad host";
        assert_int_equal(agent_msg_format(&m, AGENT_MAX_FRAME_DEFAULT, &none, &n), -EINVAL);
        assert_null(none);

        _cleanup_agent_msg_ AgentMsg *st = parse_ok("{\"type\":\"started\",\"id\":9,\"pid\":0}");
        assert_int_equal(st->started.pid, 0);
        _cleanup_agent_msg_ AgentMsg *e = parse_ok("{\"type\":\"output\",\"id\":9,\"stream\":\"stdout\",\"data\":\"\",\"eof\":true}");
        assert_true(e->output.eof);
        assert_int_equal(e->output.len, 0);
        AgentMsg eof = { .type = AGENT_MSG_OUTPUT, .id = 9, .output = { .eof = true } };
        _cleanup_agent_msg_ AgentMsg *y = roundtrip(&eof);
        assert_true(y->output.eof);
        _cleanup_agent_msg_ AgentMsg *plain = parse_ok("{\"type\":\"output\",\"id\":9,\"stream\":\"stdout\",\"data\":\"aGk=\"}");
        assert_false(plain->output.eof);
}

TEST_MAIN("agent-proto")
