/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/bench-qga DOMAIN [POLL_MS]: the peer of bench-agent, measured as a user of
 * libvirt's agent API runs commands in a guest through Debian's qemu-guest-agent: one open
 * connection, virDomainQemuAgentCommand() with guest-exec, then guest-exec-status polled
 * until the process has exited, POLL_MS (default 0: back to back) between polls; its
 * output (capture-output) comes base64 in the last status reply. On one TCG vCPU, back
 * to back polls take guest time from the command itself, so bench-qga.sh runs both.
 * Waits for guest-ping first. Medians of repeated runs; asserts nothing about time.
 * tests/bench/bench-qga.sh boots the guest (images/recipes/qga-bench) and prints ratios.
 */
#include <inttypes.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/base64.h"
#include "common/jsonframe.h"
#include "common/macro.h"
#include "bench-stats.h"

#define CMD_TIMEOUT_S 60
#define PING_WAIT_S 300
#define TRUE_RUNS 30
#define MIB_RUNS 5
#define ONE_MIB (1 << 20)

DEFINE_TRIVIAL_CLEANUP_FUNC(virDomainPtr, virDomainFree)
DEFINE_TRIVIAL_CLEANUP_FUNC(virConnectPtr, virConnectClose)

static _Noreturn void die(const char *what) {
        const char *e = virGetLastErrorMessage();
        fprintf(stderr, "bench-qga: %s: %s\n", what, e ? e : "failed");
        exit(1);
}

/* One agent command; the reply's "return" member (owned by the caller). */
static json_object *agent_call(virDomainPtr dom, const char *cmd) {
        _cleanup_free_ char *reply = virDomainQemuAgentCommand(dom, cmd, CMD_TIMEOUT_S, 0);
        if (!reply)
                die(cmd);
        _cleanup_json_ json_object *j = json_tokener_parse(reply);
        json_object *ret;
        if (!j || !json_object_object_get_ex(j, "return", &ret)) {
                fprintf(stderr, "bench-qga: no 'return' in the reply to %s: '%.200s'\n", cmd, reply);
                exit(1);
        }
        return json_object_get(ret);
}

typedef struct Exec {
        int64_t us;
        size_t out_bytes;
        unsigned polls;
} Exec;

/* guest-exec ARGV_JSON (the guest-exec arguments), then guest-exec-status until exited. */
static Exec exec_poll(virDomainPtr dom, const char *args, long poll_ms) {
        char cmd[512], status[128];
        Exec e = {};
        snprintf(cmd, sizeof(cmd), "{\"execute\":\"guest-exec\",\"arguments\":%s}", args);

        int64_t t = now_us();
        _cleanup_json_ json_object *started = agent_call(dom, cmd);
        json_object *pid;
        if (!json_object_object_get_ex(started, "pid", &pid) || !json_object_is_type(pid, json_type_int))
                die("guest-exec returned no pid");
        snprintf(status, sizeof(status), "{\"execute\":\"guest-exec-status\",\"arguments\":{\"pid\":%" PRId64 "}}",
                 json_object_get_int64(pid));
        for (;;) {
                _cleanup_json_ json_object *st = agent_call(dom, status);
                json_object *exited, *code, *out;
                e.polls++;
                if (!json_object_object_get_ex(st, "exited", &exited) || !json_object_get_boolean(exited)) {
                        if (now_us() - t > (int64_t) CMD_TIMEOUT_S * 1000000)
                                die("the command did not exit within 60 s");
                        struct timespec ts = { poll_ms / 1000, (poll_ms % 1000) * 1000000 };
                        if (poll_ms > 0)
                                nanosleep(&ts, NULL);
                        continue;
                }
                e.us = now_us() - t;
                if (!json_object_object_get_ex(st, "exitcode", &code) || json_object_get_int(code) != 0)
                        die("the command exited non-zero");
                if (json_object_object_get_ex(st, "out-data", &out)) {
                        _cleanup_free_ void *data = NULL;
                        if (base64_decode(json_object_get_string(out), (size_t) json_object_get_string_len(out),
                                          2 * ONE_MIB, &data, &e.out_bytes) < 0)
                                die("out-data is not base64");
                }
                return e;
        }
}

int main(int argc, char *argv[]) {
        char *end = NULL;
        long poll_ms = argc > 2 ? strtol(argv[2], &end, 10) : 0;
        if (argc < 2 || argc > 3 || (end && (*end || end == argv[2])) || poll_ms < 0 || poll_ms > 1000) {
                fprintf(stderr, "usage: bench-qga DOMAIN [POLL_MS] (a running domain with qemu-guest-agent; "
                                "see bench-qga.sh; POLL_MS 0..1000)\n");
                return 2;
        }
        _cleanup_(virConnectClosep) virConnectPtr conn = virConnectOpen("qemu:///system");
        if (!conn)
                die("qemu:///system");
        _cleanup_(virDomainFreep) virDomainPtr dom = virDomainLookupByName(conn, argv[1]);
        if (!dom)
                die(argv[1]);

        /* Up when guest-ping answers (libvirt reports an agent that is not connected yet). */
        int64_t t0 = now_us();
        for (;;) {
                _cleanup_free_ char *r = virDomainQemuAgentCommand(dom, "{\"execute\":\"guest-ping\"}", 5, 0);
                if (r)
                        break;
                if (now_us() - t0 > (int64_t) PING_WAIT_S * 1000000)
                        die("guest-ping did not answer within 300 s");
                struct timespec ts = { 0, 200 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        printf("qga      guest-ping answered %" PRId64 " ms after the bench started\n", (now_us() - t0) / 1000);

        const char *true_args = "{\"path\":\"/bin/true\"}";
        const char *mib_args = "{\"path\":\"/usr/bin/head\",\"arg\":[\"-c\",\"1048576\",\"/dev/zero\"],"
                               "\"capture-output\":true}";
        int64_t v[TRUE_RUNS];
        unsigned polls = 0;

        /* The transport alone: guest-ping through libvirt to the agent and back. */
        for (int i = 0; i < TRUE_RUNS; i++) {
                int64_t t = now_us();
                _cleanup_json_ json_object *r = agent_call(dom, "{\"execute\":\"guest-ping\"}");
                v[i] = now_us() - t;
        }
        int64_t ping_p50 = percentile(v, TRUE_RUNS, 50);

        for (int i = 0; i < 3; i++) /* warm up */
                (void) exec_poll(dom, true_args, poll_ms);
        for (int i = 0; i < TRUE_RUNS; i++) {
                Exec e = exec_poll(dom, true_args, poll_ms);
                v[i] = e.us;
                polls += e.polls;
        }
        int64_t true_p50 = percentile(v, TRUE_RUNS, 50), true_p90 = percentile(v, TRUE_RUNS, 90);

        for (int i = 0; i < MIB_RUNS; i++) {
                Exec e = exec_poll(dom, mib_args, poll_ms);
                if (e.out_bytes != ONE_MIB) {
                        fprintf(stderr, "bench-qga: 1 MiB output came back as %zu bytes\n", e.out_bytes);
                        return 1;
                }
                v[i] = e.us;
        }
        int64_t mib_ms = percentile(v, MIB_RUNS, 50) / 1000;

        printf("qga      exec true: p50 %6" PRId64 " us  p90 %6" PRId64 " us (poll every %ld ms: %.1f status polls each)"
               " | ping p50 %6" PRId64 " us | 1 MiB output: %4" PRId64 " ms\n",
               true_p50, true_p90, poll_ms, (double) polls / TRUE_RUNS, ping_p50, mib_ms);
        printf("qga-run: poll_ms=%ld exec_true_p50_us=%" PRId64 " exec_true_p90_us=%" PRId64 " one_mib_ms=%" PRId64
               " ping_p50_us=%" PRId64 "\n",
               poll_ms, true_p50, true_p90, mib_ms, ping_p50);
        return 0;
}
