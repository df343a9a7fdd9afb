/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/agent: exec round trip of `true`, ping, and output streaming throughput over
 * the real virtio-serial channel of a booted test guest, beside the same client talking to
 * the same agent code over a host unix socket (guest-init-host --unix). Medians of
 * repeated runs; prints numbers and asserts nothing about time.
 *
 * The peer, Debian's qemu-guest-agent through libvirt's agent API, is measured in the
 * same run by tests/bench/bench-qga.sh (scripts/bench qga), which boots one guest with
 * both agents and points this bench at its seatd agent channel (SEATD_BENCH_AGENT_SOCKET:
 * measure over that socket instead of booting the test image), then prints the ratios.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "seatd/agent-client.h"
#include "common/fileio.h"
#include "testvm.h"
#include "bench-stats.h"

#define WAIT_MS 120000

static int count_bytes(bool is_stderr, const uint8_t *data, size_t len, void *userdata) {
        *(size_t *) userdata += len;
        return 0;
}

static void die(const char *what, SeatError *err) {
        fprintf(stderr, "bench-agent: %s: %s\n", what, err ? err->message : "failed");
        exit(1);
}

static int64_t exec_us(AgentClient *c, char **argv, size_t *ret_bytes) {
        _cleanup_error_ SeatError *err = NULL;
        AgentExecResult res = {};
        size_t bytes = 0;
        AgentMsg req = { .type = AGENT_MSG_EXEC, .exec = { .argv = argv, .stdin_eof = true, .max_output = (int64_t) 1 << 30 } };

        int64_t t = now_us();
        if (agent_client_exec(c, &req, count_bytes, &bytes, WAIT_MS, &res, &err) < 0)
                die("exec", err);
        t = now_us() - t;
        if (res.code != 0)
                die("exec exited non-zero", NULL);
        agent_exec_result_done(&res);
        if (ret_bytes)
                *ret_bytes = bytes;
        return t;
}

typedef struct Figures {
        int64_t rtt_p50_us, rtt_p90_us, ping_p50_us, one_mib_ms;
        double stream_mib_s;
} Figures;

#define RTT_RUNS 60
#define STREAM_RUNS 5
#define STREAM_MIB 8

static void measure(const char *label, AgentClient *c, const char *true_path, const char *sh_path, Figures *f) {
        _cleanup_error_ SeatError *err = NULL;
        int64_t v[RTT_RUNS];
        char *true_argv[] = { (char *) true_path, NULL };
        char stream_cmd[64], one_cmd[64];
        snprintf(stream_cmd, sizeof(stream_cmd), "dd if=/dev/zero bs=65536 count=%d 2>/dev/null", STREAM_MIB * 16);
        snprintf(one_cmd, sizeof(one_cmd), "dd if=/dev/zero bs=65536 count=16 2>/dev/null");
        char *stream_argv[] = { (char *) sh_path, (char *) "-c", stream_cmd, NULL };
        char *one_argv[] = { (char *) sh_path, (char *) "-c", one_cmd, NULL };

        for (int i = 0; i < 5; i++) /* warm up */
                (void) exec_us(c, true_argv, NULL);
        for (int i = 0; i < RTT_RUNS; i++)
                v[i] = exec_us(c, true_argv, NULL);
        f->rtt_p50_us = percentile(v, RTT_RUNS, 50);
        f->rtt_p90_us = percentile(v, RTT_RUNS, 90);

        for (int i = 0; i < RTT_RUNS; i++) {
                int64_t t = now_us();
                if (agent_client_ping(c, WAIT_MS, &err) < 0)
                        die("ping", err);
                v[i] = now_us() - t;
        }
        f->ping_p50_us = percentile(v, RTT_RUNS, 50);

        for (int i = 0; i < STREAM_RUNS; i++) {
                size_t bytes = 0;
                v[i] = exec_us(c, one_argv, &bytes);
                if (bytes != 1 << 20)
                        die("1 MiB output came back short", NULL);
        }
        f->one_mib_ms = percentile(v, STREAM_RUNS, 50) / 1000;

        for (int i = 0; i < STREAM_RUNS; i++) {
                size_t bytes = 0;
                v[i] = exec_us(c, stream_argv, &bytes);
                if (bytes != (size_t) STREAM_MIB << 20)
                        die("stream came back short", NULL);
        }
        f->stream_mib_s = STREAM_MIB / (percentile(v, STREAM_RUNS, 50) / 1e6);

        printf("%-8s exec true: p50 %6" PRId64 " us  p90 %6" PRId64 " us | ping p50 %6" PRId64
               " us | 1 MiB output: %4" PRId64 " ms | %d MiB stream: %7.1f MiB/s\n",
               label, f->rtt_p50_us, f->rtt_p90_us, f->ping_p50_us, f->one_mib_ms, STREAM_MIB, f->stream_mib_s);
}

static pid_t spawn_unix_agent(const char *exe, const char *path) {
        pid_t pid = fork();
        if (pid == 0) {
                execl(exe, exe, "--unix", path, "--log-level", "warning", (char *) NULL);
                _exit(127);
        }
        return pid;
}

int main(int argc, char *argv[]) {
        _cleanup_error_ SeatError *err = NULL;
        const char *image = getenv("SEATD_TEST_IMAGE_DIR");
        const char *host_agent = getenv("SEATD_GUEST_INIT_HOST");
        Figures vmf = {}, unixf = {};

        const char *guest_socket = getenv("SEATD_BENCH_AGENT_SOCKET");

        if ((!image && !guest_socket) || !host_agent) {
                fprintf(stderr, "bench-agent: set SEATD_TEST_IMAGE_DIR (or SEATD_BENCH_AGENT_SOCKET) and SEATD_GUEST_INIT_HOST "
                                "(scripts/bench does)\n");
                return 2;
        }

        /* The same client against the same agent code on a host unix socket. */
        char sock[] = "/tmp/seatd-bench-XXXXXX";
        if (!mkdtemp(sock))
                die("mkdtemp", NULL);
        char path[64];
        snprintf(path, sizeof(path), "%s/agent.sock", sock);
        pid_t pid = spawn_unix_agent(host_agent, path);
        {
                _cleanup_agent_client_ AgentClient *c = NULL;
                if (agent_client_connect_unix(path, 10000, &c, &err) < 0 || agent_client_hello(c, WAIT_MS, NULL, &err) < 0)
                        die("host agent", err);
                measure("unix", c, "/bin/true", "/bin/sh", &unixf);
        }
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        unlink(path);
        rmdir(sock);

        /* The real thing: a guest under libvirt, over virtio-serial: the test image booted
         * here, or the agent channel of a guest bench-qga.sh booted. */
        _cleanup_(testvm_freep) TestVm *vm = NULL;
        if (!guest_socket) {
                char name[64];
                snprintf(name, sizeof(name), "seatd-bench-agent-%d", (int) getpid());
                if (testvm_boot(NULL, image, name, &vm, &err) < 0)
                        die("boot", err);
                guest_socket = vm->agent_socket;
        }
        _cleanup_agent_client_ AgentClient *c = NULL;
        if (agent_client_connect_unix(guest_socket, WAIT_MS, &c, &err) < 0 ||
            agent_client_hello(c, WAIT_MS, NULL, &err) < 0)
                die("guest agent", err);
        measure("virtio", c, "/bin/true", "/bin/sh", &vmf);

        printf("ratios: virtio/unix rtt %.2f (the peer qemu-guest-agent: scripts/bench qga)\n",
               (double) vmf.rtt_p50_us / (double) unixf.rtt_p50_us);
        printf("agent: rtt_p50_us=%" PRId64 " stream_mib_s=%.1f unix_rtt_p50_us=%" PRId64 " one_mib_ms=%" PRId64
               " ping_p50_us=%" PRId64 " unix_stream_mib_s=%.1f\n",
               vmf.rtt_p50_us, vmf.stream_mib_s, unixf.rtt_p50_us, vmf.one_mib_ms, vmf.ping_p50_us, unixf.stream_mib_s);
        return 0;
}
