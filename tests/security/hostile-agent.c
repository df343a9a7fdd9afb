/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hostile-agent: a guest agent that misbehaves on purpose, for tests/security. It boots
 * like guest-init (PID 1 duties from guest-init's own code), greets the host properly so
 * a seat can be provisioned, then answers each exec according to argv[0]:
 *   echo     behave (started, output, exit): the positive control
 *   flood    endless bytes without a newline (stops at 256 MiB or when the host leaves)
 *   giant    one 8 MiB frame (the cap is 1 MiB)
 *   badjson  a line that is not JSON
 *   wrongid  an exit for an id the host never sent
 *   stall    half a frame, then nothing
 *   newer    a hello reply claiming protocol version 2, unasked
 *   hold     started, then nothing: the exec stays open (beside another request)
 * With seatd.hostile_hello=MODE on the kernel command line it never greets: it answers
 * every hello with MODE's violation instead, then says nothing more:
 *   giant    one 8 MiB frame
 *   badjson  a line that is not JSON
 *   badutf8  a hello reply whose agent name is not valid UTF-8
 *   request  an exec request (an agent only ever sends replies)
 *   wrongid  a well-formed hello reply for an id the host never sent
 * Never part of an image anyone boots for real.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/agent-proto.h"
#include "guest-init/agent.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "guest-init/pid1.h"
#include "guest-init/transport.h"

#define FLOOD_MAX (256u << 20)

static int out_fd = -1;

static int write_all(const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(out_fd, p, len);
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        struct pollfd pfd = { .fd = out_fd, .events = POLLOUT };
                        if (poll(&pfd, 1, 5000) <= 0 || (pfd.revents & (POLLHUP | POLLERR)))
                                return -EPIPE; /* the host left */
                        continue;
                }
                if (n <= 0)
                        return -EPIPE;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

static void send_msg(const AgentMsg *m) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        if (agent_msg_format(m, AGENT_MAX_FRAME_DEFAULT, &line, &len) >= 0)
                (void) write_all(line, len);
}

static void hello_reply(int64_t id, int64_t version) {
        char *caps[] = { (char *) "exec", NULL };
        AgentMsg m = { .type = AGENT_MSG_HELLO, .id = id,
                       .hello = { .version = version, .agent = (char *) "hostile-agent", .capabilities = caps,
                                  .boot_ms = 1, .uptime_ms = now_boottime_ms(), .max_frame = AGENT_MAX_FRAME_DEFAULT,
                                  .max_execs = 1, .max_output = 1 << 20, .max_file = 1 << 20 } };
        send_msg(&m);
}

static void write_giant(void) {
        static char big[64 * 1024];
        memset(big, 'x', sizeof(big));
        (void) write_all("{\"type\":\"output\",\"id\":1,\"data\":\"", 32);
        for (int i = 0; i < 128; i++)
                if (write_all(big, sizeof(big)) < 0)
                        return;
        (void) write_all("\"}\n", 3);
}

/* seatd.hostile_hello=MODE from the kernel command line, or NULL. */
static char *hello_mode(void) {
        _cleanup_free_ char *cmdline = NULL;
        size_t len;
        if (read_file_capped("/proc/cmdline", 4096, &cmdline, &len) < 0)
                return NULL;
        const char *p = strstr(cmdline, "seatd.hostile_hello=");
        if (!p)
                return NULL;
        p += strlen("seatd.hostile_hello=");
        return strndup(p, strcspn(p, " \t\n"));
}

static void hello_misbehave(const char *mode, int64_t id) {
        char line[256];
        if (!strcmp(mode, "giant"))
                write_giant();
        else if (!strcmp(mode, "badjson"))
                (void) write_all("{this is not json]\n", 19);
        else if (!strcmp(mode, "badutf8")) {
                int n = snprintf(line, sizeof(line), "{\"type\":\"hello\",\"id\":%lld,\"version\":1,\"agent\":\"bad\xc3\x28\"}\n",
                                 (long long) id);
                (void) write_all(line, (size_t) n);
        } else if (!strcmp(mode, "request")) {
                int n = snprintf(line, sizeof(line), "{\"type\":\"exec\",\"id\":%lld,\"argv\":[\"/bin/sh\"]}\n", (long long) id);
                (void) write_all(line, (size_t) n);
        } else if (!strcmp(mode, "wrongid"))
                hello_reply(id + 1000, AGENT_PROTO_VERSION);
}

static void misbehave(const AgentMsg *req) {
        const char *mode = req->exec.argv[0];
        int64_t id = req->id;
        AgentMsg started = { .type = AGENT_MSG_STARTED, .id = id, .started = { .pid = 2 } };

        if (!strcmp(mode, "echo")) {
                AgentMsg out = { .type = AGENT_MSG_OUTPUT, .id = id, .output = { .data = (uint8_t *) "fine\n", .len = 5 } };
                AgentMsg ex = { .type = AGENT_MSG_EXIT, .id = id };
                send_msg(&started);
                send_msg(&out);
                send_msg(&ex);
        } else if (!strcmp(mode, "flood")) {
                static char junk[64 * 1024];
                memset(junk, 'A', sizeof(junk));
                for (size_t sent = 0; sent < FLOOD_MAX; sent += sizeof(junk))
                        if (write_all(junk, sizeof(junk)) < 0)
                                break;
        } else if (!strcmp(mode, "giant"))
                write_giant();
        else if (!strcmp(mode, "badjson"))
                (void) write_all("{this is not json]\n", 19);
        else if (!strcmp(mode, "wrongid")) {
                AgentMsg ex = { .type = AGENT_MSG_EXIT, .id = id + 1000 };
                send_msg(&ex);
        } else if (!strcmp(mode, "stall"))
                (void) write_all("{\"type\":\"started\",\"id\":", 23);
        else if (!strcmp(mode, "newer"))
                hello_reply(id, 2);
        else if (!strcmp(mode, "hold"))
                send_msg(&started);
}

static void serve(int fd) {
        _cleanup_(frame_reader_freep) FrameReader *r = frame_reader_new(AGENT_MAX_FRAME_DEFAULT);
        _cleanup_free_ char *broken_hello = hello_mode();
        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                if (poll(&pfd, 1, 1000) <= 0)
                        continue;
                if (!(pfd.revents & POLLIN)) {
                        /* No host connected (POLLHUP): wait, without spinning. */
                        (void) nanosleep(&(struct timespec) { .tv_nsec = 200 * 1000 * 1000 }, NULL);
                        continue;
                }
                ssize_t n = frame_reader_fill(r, fd);
                if (n == 0)
                        (void) nanosleep(&(struct timespec) { .tv_nsec = 200 * 1000 * 1000 }, NULL);
                const char *frame;
                size_t len;
                int k;
                while ((k = frame_reader_next(r, &frame, &len)) != 0) {
                        _cleanup_agent_msg_ AgentMsg *m = NULL;
                        if (k < 0 || agent_msg_parse(frame, len, &m, NULL) < 0)
                                continue;
                        if (m->type == AGENT_MSG_HELLO && broken_hello)
                                hello_misbehave(broken_hello, m->id);
                        else if (m->type == AGENT_MSG_HELLO)
                                hello_reply(m->id, AGENT_PROTO_VERSION);
                        else if (m->type == AGENT_MSG_EXEC)
                                misbehave(m);
                        else if (m->type == AGENT_MSG_PING) {
                                AgentMsg p = { .type = AGENT_MSG_PONG, .id = m->id };
                                send_msg(&p);
                        } else {
                                _cleanup_free_ char *ok = NULL;
                                size_t ol;
                                if (agent_format_ok(m->id, -1, AGENT_MAX_FRAME_DEFAULT, &ok, &ol) >= 0)
                                        (void) write_all(ok, ol);
                        }
                }
        }
}

int main(int argc, char *argv[]) {
        Transport t;

        log_set_ident("hostile-agent");
        signal(SIGIO, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        if (getpid() == 1) {
                std_fds_ensure_open();
                (void) pid1_mount_api_filesystems();
                (void) pid1_log_to_kmsg();
                (void) pid1_load_modules("/etc/guest-init/modules");
                (void) pid1_switch_root();
        }
        transport_init(&t);
        for (;;) {
                if (transport_open_virtio(&t, 30000) >= 0)
                        break;
                if (getpid() != 1)
                        return 1;
        }
        out_fd = t.fd;
        serve(t.fd);
        return 0;
}
