/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Concurrent requests on one agent connection (issue 15 #3): handles opened on it run
 * their requests side by side and each gets its own replies, against the real guest-init
 * (--unix, on this host) and against a scripted agent that answers out of order, sends a
 * frame for an id nobody asked for, or loses its channel.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "seatd/agent-client.h"
#include "common/fileio.h"

static const char *guest_init;

/* ---- the real agent ---- */

typedef struct Agent {
        pid_t pid;
        char dir[64], sock[96];
        AgentClient *client;
} Agent;

static void agent_start(Agent *a) {
        _cleanup_error_ SeatError *err = NULL;
        snprintf(a->dir, sizeof(a->dir), "/tmp/test-agent-mux.XXXXXX");
        assert_non_null(mkdtemp(a->dir));
        snprintf(a->sock, sizeof(a->sock), "%s/agent.sock", a->dir);
        a->pid = fork();
        assert_true(a->pid >= 0);
        if (a->pid == 0) {
                execl(guest_init, guest_init, "--unix", a->sock, (char *) NULL);
                _exit(127);
        }
        assert_int_equal(agent_client_connect_unix(a->sock, 10000, &a->client, &err), 0);
        assert_int_equal(agent_client_hello(a->client, 10000, NULL, &err), 0);
}

static void agent_stop(Agent *a) {
        a->client = agent_client_free(a->client);
        (void) kill(a->pid, SIGTERM);
        (void) waitpid(a->pid, NULL, 0);
        (void) unlink(a->sock);
        (void) rmdir(a->dir);
}

typedef struct Out {
        char buf[256];
        size_t len;
} Out;

static int collect(bool is_stderr, const uint8_t *data, size_t len, void *userdata) {
        Out *o = userdata;
        size_t n = MIN(len, sizeof(o->buf) - 1 - o->len);
        memcpy(o->buf + o->len, data, n);
        o->len += n;
        return 0;
}

/* sh -c script on its own handle; its stdout. */
static int run_sh(AgentClient *first, const char *script, Out *out) {
        _cleanup_agent_client_ AgentClient *h = NULL;
        _cleanup_error_ SeatError *err = NULL;
        AgentExecResult res = {};
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) script, NULL };
        AgentMsg req = { .type = AGENT_MSG_EXEC, .exec = { .argv = argv, .stdin_eof = true } };
        int r = agent_client_open(first, &h);
        if (r < 0)
                return r;
        r = agent_client_exec(h, &req, collect, out, 30000, &res, &err);
        if (r >= 0 && res.code != 0)
                r = -EIO;
        agent_exec_result_done(&res);
        return r;
}

typedef struct Job {
        AgentClient *first;
        char script[128];
        Out out;
        int r;
        int64_t done_ms;
} Job;

static void *job_thread(void *p) {
        Job *j = p;
        j->r = run_sh(j->first, j->script, &j->out);
        j->done_ms = now_monotonic_ms();
        return NULL;
}

/* A slow command does not hold the channel: quick ones on other handles finish first. */
TEST(slow_exec_does_not_block_others) {
        Agent a;
        agent_start(&a);
        Job slow = { .first = a.client };
        snprintf(slow.script, sizeof(slow.script), "sleep 2; echo slow");
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, job_thread, &slow), 0);
        (void) usleep(300 * 1000);

        Out fast = {};
        int64_t t0 = now_monotonic_ms();
        assert_int_equal(run_sh(a.client, "echo fast", &fast), 0);
        _cleanup_error_ SeatError *err = NULL;
        assert_int_equal(agent_client_ping(a.client, 5000, &err), 0);
        int64_t fast_done = now_monotonic_ms();
        assert_int_equal(pthread_join(t, NULL), 0);

        assert_string_equal(fast.buf, "fast\n");
        assert_int_equal(slow.r, 0);
        assert_string_equal(slow.out.buf, "slow\n");
        /* The quick calls ended while the slow one was still sleeping. */
        if (fast_done >= slow.done_ms)
                fail_msg("the quick exec (%lld ms) waited for the slow one", (long long) (fast_done - t0));
        agent_stop(&a);
}

/* Many at once, each its own output. */
TEST(many_execs_each_their_own_output) {
        enum { N = 12 };
        Agent a;
        Job jobs[N] = {};
        pthread_t t[N];
        agent_start(&a);
        for (int i = 0; i < N; i++) {
                jobs[i].first = a.client;
                snprintf(jobs[i].script, sizeof(jobs[i].script), "sleep 0.%d; echo job-%d", i % 5, i);
                assert_int_equal(pthread_create(&t[i], NULL, job_thread, &jobs[i]), 0);
        }
        for (int i = 0; i < N; i++) {
                char want[32];
                assert_int_equal(pthread_join(t[i], NULL), 0);
                snprintf(want, sizeof(want), "job-%d\n", i);
                assert_int_equal(jobs[i].r, 0);
                assert_string_equal(jobs[i].out.buf, want);
        }
        agent_stop(&a);
}

/* ---- a scripted agent ---- */

typedef struct Scripted {
        AgentClient *client;
        int guest;
} Scripted;

static void scripted_open(Scripted *p) {
        int fds[2];
        _cleanup_error_ SeatError *err = NULL;
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        assert_int_equal(agent_client_new_fd(fds[0], AGENT_MAX_FRAME_DEFAULT, &p->client), 0);
        p->guest = fds[1];
        const char *h = "{\"type\":\"hello\",\"id\":1,\"version\":1,\"agent\":\"scripted\"}\n";
        assert_int_equal(write(p->guest, h, strlen(h)), (ssize_t) strlen(h));
        assert_int_equal(agent_client_hello_fresh(p->client, 5000, NULL, &err), 0);
        /* The host's hello, read here so that read_ids() sees only what follows. */
        char c;
        do
                assert_int_equal(read(p->guest, &c, 1), 1);
        while (c != '\n');
}

static void scripted_close(Scripted *p) {
        p->client = agent_client_free(p->client);
        p->guest = safe_close(p->guest);
}

static void says(Scripted *p, const char *s) {
        assert_int_equal(write(p->guest, s, strlen(s)), (ssize_t) strlen(s));
}

/* The ids of the next n requests the host sent (one frame each, in order). */
static void read_ids(Scripted *p, int n, long long *ids) {
        char buf[4096];
        size_t len = 0;
        int got = 0;
        while (got < n) {
                ssize_t k = read(p->guest, buf + len, sizeof(buf) - 1 - len);
                assert_true(k > 0);
                len += (size_t) k;
                buf[len] = 0;
                got = 0;
                for (char *s = buf; (s = strstr(s, "\"id\":")); s++)
                        ids[got < n ? got : n - 1] = strtoll(s + 5, NULL, 10), got++;
        }
}

typedef struct Ping {
        AgentClient *h;
        int r;
        char message[256];
} Ping;

static void *ping_thread(void *p) {
        Ping *g = p;
        _cleanup_error_ SeatError *err = NULL;
        g->r = agent_client_ping(g->h, 10000, &err);
        snprintf(g->message, sizeof(g->message), "%s", err ? err->message : "");
        return NULL;
}

/* A scripted agent and one ping on a handle of its own, in its thread. */
typedef struct OnePing {
        Scripted p;
        Ping a;
        pthread_t t;
        long long id; /* the ping's, as the agent read it */
} OnePing;

static void ping_sent(OnePing *o) {
        scripted_open(&o->p);
        assert_int_equal(agent_client_open(o->p.client, &o->a.h), 0);
        assert_int_equal(pthread_create(&o->t, NULL, ping_thread, &o->a), 0);
        read_ids(&o->p, 1, &o->id);
}

TEST(replies_out_of_order) {
        Scripted p;
        Ping a = {}, b = {};
        pthread_t ta, tb;
        scripted_open(&p);
        a.h = p.client;
        assert_int_equal(agent_client_open(p.client, &b.h), 0);
        assert_int_equal(pthread_create(&ta, NULL, ping_thread, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, ping_thread, &b), 0);
        long long ids[2];
        read_ids(&p, 2, ids);
        char reply[256];
        snprintf(reply, sizeof(reply), "{\"type\":\"pong\",\"id\":%lld,\"uptime_ms\":1}\n{\"type\":\"pong\",\"id\":%lld,\"uptime_ms\":2}\n",
                 ids[1], ids[0]);
        says(&p, reply);
        assert_int_equal(pthread_join(ta, NULL), 0);
        assert_int_equal(pthread_join(tb, NULL), 0);
        assert_int_equal(a.r, 0);
        assert_int_equal(b.r, 0);
        agent_client_free(b.h);
        scripted_close(&p);
}

/* A frame for an id nobody waits for: every waiter learns the agent broke the protocol. */
TEST(unknown_id_ends_the_connection) {
        Scripted p;
        Ping a = {}, b = {};
        pthread_t ta, tb;
        scripted_open(&p);
        assert_int_equal(agent_client_open(p.client, &a.h), 0);
        assert_int_equal(agent_client_open(p.client, &b.h), 0);
        assert_int_equal(pthread_create(&ta, NULL, ping_thread, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, ping_thread, &b), 0);
        long long ids[2];
        read_ids(&p, 2, ids);
        says(&p, "{\"type\":\"output\",\"id\":777,\"stream\":\"stdout\",\"data\":\"eA==\"}\n");
        assert_int_equal(pthread_join(ta, NULL), 0);
        assert_int_equal(pthread_join(tb, NULL), 0);
        assert_int_equal(a.r, -EPROTO);
        assert_int_equal(b.r, -EPROTO);
        assert_non_null(strstr(agent_client_violation(a.h), "id 777, which no request is waiting for"));
        agent_client_free(a.h);
        agent_client_free(b.h);
        scripted_close(&p);
}

/* A second final reply for the same id is as unknown as any. */
TEST(second_reply_ends_the_connection) {
        OnePing o = {};
        ping_sent(&o);
        char reply[256];
        snprintf(reply, sizeof(reply), "{\"type\":\"pong\",\"id\":%lld,\"uptime_ms\":1}\n", o.id);
        says(&o.p, reply);
        assert_int_equal(pthread_join(o.t, NULL), 0);
        assert_int_equal(o.a.r, 0);
        says(&o.p, reply);
        _cleanup_error_ SeatError *err = NULL;
        assert_int_equal(agent_client_ping(o.a.h, 5000, &err), -EPROTO);
        agent_client_free(o.a.h);
        scripted_close(&o.p);
}

/* The connection's first handle goes: the others' waits end at once. */
TEST(closing_ends_other_waits) {
        OnePing o = {};
        ping_sent(&o);
        int64_t t0 = now_monotonic_ms();
        o.p.client = agent_client_free(o.p.client);
        assert_int_equal(pthread_join(o.t, NULL), 0);
        assert_true(o.a.r < 0);
        assert_true(now_monotonic_ms() - t0 < 5000);
        agent_client_free(o.a.h);
        scripted_close(&o.p);
}

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: %s GUEST-INIT\n", argv[0]);
                return 2;
        }
        guest_init = argv[1];
        return seat_tests_run("agent-mux", NULL, NULL);
}
