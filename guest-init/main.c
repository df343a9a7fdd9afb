/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guest-init: the agent inside a seat. As PID 1 it sets the guest up (API filesystems,
 * modules, root switch) and then serves the agent protocol on the virtio port; it can
 * also run as a service (--agent) or for host-side tests (--unix PATH, --stdio).
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <net/if.h>

#include "agent.h"
#include "config.h"
#include "common/log.h"
#include "common/netlink.h"
#include "pid1.h"
#include "transport.h"

#define MODULES_LIST "/etc/guest-init/modules"
#define PORT_WAIT_MS 10000
static const char agent_protocol_marker[] __attribute__((used)) = "SEATD_AGENT_PROTOCOL=1"; /* = AGENT_PROTO_VERSION; images/inspect.c */

typedef enum Mode {
        MODE_DEFAULT,
        MODE_PID1,
        MODE_AGENT,
        MODE_UNIX,
        MODE_STDIO,
} Mode;

typedef struct Args {
        Mode mode;
        const char *unix_path;
        AgentLimits limits;
        LogLevel log_level;
} Args;

static void help(void) {
        printf("guest-init " SEATD_VERSION ": the seatd agent inside a seat\n\n"
               "Usage: guest-init [MODE] [OPTIONS]\n\n"
               "Modes (PID 1 is detected; default otherwise --agent):\n"
               "  --pid1                  act as PID 1: mounts, modules, root switch, virtio port\n"
               "  --agent                 serve the virtio port org.seatd.agent.0 under another init\n"
               "  --unix PATH             listen on a unix socket (one host at a time)\n"
               "  --stdio                 frames on stdin, replies on stdout; exits after EOF\n\n"
               "Options:\n"
               "  --max-frame N           longest frame in bytes (default %u, at least %u)\n"
               "  --max-execs N           execs running at once (default %u)\n"
               "  --max-output N          default output cap per exec in bytes (default %u)\n"
               "  --max-file N            largest file file_put may write (default %u)\n"
               "  --default-timeout-ms N  exec timeout when the host gives none (default 0: none)\n"
               "  --log-level LEVEL       err, warning, notice, info, debug\n"
               "  --help                  this text\n",
               AGENT_MAX_FRAME_DEFAULT, AGENT_MAX_FRAME_MIN, AGENT_MAX_EXECS_DEFAULT,
               AGENT_MAX_OUTPUT_DEFAULT, AGENT_MAX_FILE_DEFAULT);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

/* Returns 1 to run, 0 to exit successfully (--help), -EINVAL on bad arguments. As PID 1
 * the kernel may pass words from its command line: unknown arguments are ignored there. */
static int parse_args(int argc, char *argv[], bool pid1, Args *args) {
        enum {
                ARG_PID1 = 0x100,
                ARG_AGENT,
                ARG_UNIX,
                ARG_STDIO,
                ARG_MAX_FRAME,
                ARG_MAX_EXECS,
                ARG_MAX_OUTPUT,
                ARG_MAX_FILE,
                ARG_DEFAULT_TIMEOUT,
                ARG_LOG_LEVEL,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "pid1", no_argument, NULL, ARG_PID1 },
                { "agent", no_argument, NULL, ARG_AGENT },
                { "unix", required_argument, NULL, ARG_UNIX },
                { "stdio", no_argument, NULL, ARG_STDIO },
                { "max-frame", required_argument, NULL, ARG_MAX_FRAME },
                { "max-execs", required_argument, NULL, ARG_MAX_EXECS },
                { "max-output", required_argument, NULL, ARG_MAX_OUTPUT },
                { "max-file", required_argument, NULL, ARG_MAX_FILE },
                { "default-timeout-ms", required_argument, NULL, ARG_DEFAULT_TIMEOUT },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                {}
        };
        int c;

        opterr = !pid1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                uint64_t v;
                int r = 0;

                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_PID1:
                        args->mode = MODE_PID1;
                        break;
                case ARG_AGENT:
                        args->mode = MODE_AGENT;
                        break;
                case ARG_UNIX:
                        args->mode = MODE_UNIX;
                        args->unix_path = optarg;
                        break;
                case ARG_STDIO:
                        args->mode = MODE_STDIO;
                        break;
                case ARG_MAX_FRAME:
                        r = parse_u64(optarg, AGENT_MAX_FRAME_MIN, 256u * 1024u * 1024u, &v);
                        if (r >= 0)
                                args->limits.max_frame = (size_t) v;
                        break;
                case ARG_MAX_EXECS:
                        r = parse_u64(optarg, 1, 4096, &v);
                        if (r >= 0)
                                args->limits.max_execs = (unsigned) v;
                        break;
                case ARG_MAX_OUTPUT:
                        r = parse_u64(optarg, 0, (uint64_t) AGENT_ID_MAX, &v);
                        if (r >= 0)
                                args->limits.max_output = v;
                        break;
                case ARG_MAX_FILE:
                        r = parse_u64(optarg, 0, (uint64_t) AGENT_ID_MAX, &v);
                        if (r >= 0)
                                args->limits.max_file = v;
                        break;
                case ARG_DEFAULT_TIMEOUT:
                        r = parse_u64(optarg, 0, (uint64_t) INT32_MAX * 1000, &v);
                        if (r >= 0)
                                args->limits.default_timeout_ms = (int64_t) v;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string_syslog(optarg, &args->log_level);
                        break;
                case '?':
                        if (pid1)
                                continue;
                        return -EINVAL;
                default:
                        return -EINVAL;
                }
                if (r < 0) {
                        if (pid1) {
                                log_warning("Ignoring bad value '%s' for an option", optarg);
                                continue;
                        }
                        for (const struct option *o = options; o->name; o++)
                                if (o->val == c)
                                        fprintf(stderr, "guest-init: bad value '%s' for --%s\n", optarg, o->name);
                        return -EINVAL;
                }
        }
        if (optind < argc && !pid1) {
                fprintf(stderr, "guest-init: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static void pid1_setup(void) {
        /* Each step logs its own failure; none stops the agent from coming up. */
        (void) pid1_mount_api_filesystems();
        std_fds_ensure_open();
        (void) pid1_log_to_kmsg();
        (void) pid1_load_modules(MODULES_LIST);
        if (pid1_switch_root() > 0)
                (void) pid1_exec_init(); /* returns only when there is none, or it failed */
        /* guest-init stays PID 1: the loopback is its to bring up, as systemd does in the
         * images it boots (a service on 127.0.0.1, a forwarded port to it, need it). */
        unsigned lo = if_nametoindex("lo");
        int r = lo > 0 ? netlink_link_up((int) lo) : -ENODEV;
        if (r < 0)
                log_warning("cannot bring up the loopback interface: %s", strerror(-r));
}

static int open_transport(Agent *a, const Args *args) {
        switch (args->mode) {
        case MODE_UNIX:
                return transport_open_unix(&a->transport, args->unix_path);
        case MODE_STDIO:
                return transport_open_stdio(&a->transport);
        default:
                return transport_open_virtio(&a->transport, PORT_WAIT_MS);
        }
}

/* PID 1 must never exit (the kernel panics): wait, reap, try again. */
static _Noreturn void pid1_run_forever(const Args *args) {
        for (;;) {
                _cleanup_(agent_freep) Agent *a = NULL;
                int r;

                r = agent_new(&args->limits, true, &a);
                if (r >= 0)
                        r = open_transport(a, args);
                if (r >= 0)
                        r = agent_run(a);
                log_error_errno(r < 0 ? r : EIO, "The agent stopped (%d); restarting it in 1 s", r);

                a = agent_free(a);
                (void) nanosleep(&(struct timespec) { .tv_sec = 1 }, NULL);
        }
}

int main(int argc, char *argv[]) {
        _cleanup_(agent_freep) Agent *a = NULL;
        bool pid1 = getpid() == 1;
        Args args = {
                .mode = MODE_DEFAULT,
                .limits = {
                        .max_frame = AGENT_MAX_FRAME_DEFAULT,
                        .max_execs = AGENT_MAX_EXECS_DEFAULT,
                        .max_output = AGENT_MAX_OUTPUT_DEFAULT,
                        .max_file = AGENT_MAX_FILE_DEFAULT,
                },
                .log_level = LOG_LEVEL_INFO,
        };
        int r;

        log_set_ident("guest-init");
        /* json-c seeds its string hash from the kernel RNG, which may block for a second
         * early in boot before the crng is ready; a fixed hash needs no seed, and every
         * frame is bounded anyway. */
        (void) json_global_set_string_hash(JSON_C_STR_HASH_PERLLIKE);

        r = parse_args(argc, argv, pid1, &args);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (args.mode == MODE_PID1)
                pid1 = true;
        if (pid1)
                args.mode = MODE_PID1;
        else if (args.mode == MODE_DEFAULT)
                args.mode = MODE_AGENT;
        log_set_max_level(args.log_level);

        /* A write to a tool's closed stdin is an EPIPE, not a death. */
        (void) signal(SIGPIPE, SIG_IGN);

        if (pid1) {
                pid1_setup();
                pid1_run_forever(&args);
        }

        std_fds_ensure_open();
        /* Orphans of our execs come back to us and are reaped, as under PID 1. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                log_debug_errno(errno, "PR_SET_CHILD_SUBREAPER failed, ignoring: %m");

        r = agent_new(&args.limits, false, &a);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the agent: %m");
                return EXIT_FAILURE;
        }
        r = open_transport(a, &args);
        if (r < 0)
                return EXIT_FAILURE;
        r = agent_run(a);
        return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
