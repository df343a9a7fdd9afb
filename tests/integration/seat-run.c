/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-run: boot the test image in a throwaway libvirt domain, run one command in it over
 * the agent channel with its output streamed here, then power the guest off. The demo's
 * driver until seatd/seatctl take over; exits with the tool's exit code (128+signal).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "seatd/agent-client.h"
#include "common/fileio.h"
#include "common/log.h"
#include "testvm.h"

#define WAIT_MS 120000

static int forward(bool is_stderr, const uint8_t *data, size_t len, void *userdata) {
        return loop_write(is_stderr ? STDERR_FILENO : STDOUT_FILENO, data, len);
}

static void usage(FILE *f) {
        fprintf(f,
                "usage: seat-run --image DIR [--timeout-ms N] -- COMMAND [ARG...]\n"
                "\n"
                "Boots the image in DIR (as built by images/recipes/test-image) in a transient\n"
                "libvirt domain on a fresh overlay, waits for guest-init, runs COMMAND in the guest\n"
                "with its stdout and stderr streamed here, and powers the guest off again.\n"
                "\n"
                "  --image DIR        image directory with image.json\n"
                "  --timeout-ms N     kill the command's process group after N ms (default: none)\n"
                "  --uri URI          libvirt URI (default: $SEATD_LIBVIRT_URI or qemu:///system)\n"
                "\n"
                "Exit status: the command's, 128+N when it was killed by signal N, 1 on errors.\n");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "image", required_argument, NULL, 'i' },
                { "timeout-ms", required_argument, NULL, 't' },
                { "uri", required_argument, NULL, 'u' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_(testvm_freep) TestVm *vm = NULL;
        _cleanup_agent_client_ AgentClient *client = NULL;
        _cleanup_agent_msg_ AgentMsg *hello = NULL;
        const char *image = NULL, *uri = NULL;
        long long timeout_ms = 0;
        int c;

        log_set_ident("seat-run");
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'i':
                        image = optarg;
                        break;
                case 't':
                        timeout_ms = atoll(optarg);
                        break;
                case 'u':
                        uri = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        if (!image || optind >= argc) {
                usage(stderr);
                return 2;
        }

        char name[64];
        snprintf(name, sizeof(name), "seat-run-%d", (int) getpid());
        int64_t t0 = now_monotonic_ms();
        if (testvm_boot(uri, image, name, &vm, &err) < 0 ||
            agent_client_connect_unix(vm->agent_socket, WAIT_MS, &client, &err) < 0 ||
            agent_client_hello(client, WAIT_MS, &hello, &err) < 0) {
                log_error("%s", err ? err->message : "out of memory");
                testvm_dump_console(vm);
                return 1;
        }
        int64_t t_ready = now_monotonic_ms();
        fprintf(stderr, "seat-run: %s ready in %" PRId64 " ms (%s, guest boot %" PRId64 " ms)\n", name,
                t_ready - t0, hello->hello.agent, hello->hello.boot_ms);

        AgentMsg conf = { .type = AGENT_MSG_CONFIGURE, .configure = { .hostname = name, .seat_id = name } };
        if (agent_client_call(client, &conf, WAIT_MS, NULL, &err) < 0) {
                log_error("%s", err->message);
                return 1;
        }

        AgentExecResult res = {};
        AgentMsg req = { .type = AGENT_MSG_EXEC,
                         .exec = { .argv = argv + optind, .stdin_eof = true, .timeout_ms = timeout_ms } };
        if (agent_client_exec(client, &req, forward, NULL, WAIT_MS + (int) MIN(timeout_ms, 3600000LL), &res, &err) < 0) {
                log_error("%s", err->message);
                return 1;
        }
        fprintf(stderr, "seat-run: exit code %" PRId64 ", signal %" PRId64 ", %" PRId64 " ms%s%s%s%s\n", res.code,
                res.signal, res.duration_ms, res.timed_out ? ", timed out" : "", res.truncated ? ", output truncated" : "",
                res.error ? ", " : "", res.error ? res.error : "");

        AgentMsg off = { .type = AGENT_MSG_SHUTDOWN, .shutdown = { .action = (char *) "poweroff" } };
        if (agent_client_call(client, &off, WAIT_MS, NULL, &err) < 0 || !testvm_wait_shutoff(vm, 30000))
                log_warning("guest did not power off cleanly%s%s; destroying it", err ? ": " : "", err ? err->message : "");
        int status = res.signal ? 128 + (int) res.signal : (int) res.code;
        agent_exec_result_done(&res);
        return status;
}
