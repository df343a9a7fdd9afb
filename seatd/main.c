/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatd: the seat manager daemon. Reads its config, listens on its control socket and
 * serves seatctl. Runs in the foreground (systemd runs it so, see seatd.service).
 */
#include "config.h"
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "conf.h"
#include "event.h"
#include "common/log.h"
#include "sandbox.h"
#include "methods.h"
#include "notify.h"
#include "server.h"

static void usage(FILE *f) {
        fprintf(f,
                "usage: seatd [--config FILE] [--log-level LEVEL]\n"
                "\n"
                "The seat manager daemon: verifies signed guest images, runs seats (disposable VMs)\n"
                "under libvirt and serves seatctl on its control socket. It stays in the foreground\n"
                "and logs to stderr (journald under systemd).\n"
                "\n"
                "  -c, --config FILE      configuration (default " SEATD_CONFIG_DEFAULT ");\n"
                "                         see docs/seatd.conf.md for every setting\n"
                "  -l, --log-level LEVEL  error, warning, notice, info (default) or debug\n"
                "      --check-config     parse the configuration, print it, and exit\n"
                "  -h, --help             this text\n"
                "      --version          print the version\n"
                "\n"
                "SIGTERM or SIGINT stop it after running operations have finished.\n");
}

static int on_signal(EventSource *src, int fd, uint32_t revents, void *userdata) {
        struct signalfd_siginfo si;
        if (read(fd, &si, sizeof(si)) == sizeof(si)) {
                log_info("signal %u: stopping", si.ssi_signo);
                event_loop_exit(userdata, 0);
        }
        return 0;
}

static int make_state_dirs(const SeatConfig *c, SeatError **ret_error) {
        const char *subdirs[] = { "", "/images", "/seats", "/evidence", "/trust" };
        for (size_t i = 0; i < ELEMENTSOF(subdirs); i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s%s", c->state_dir, subdirs[i]) < 0)
                        return -ENOMEM;
                if (mkdir(p, 0711) < 0 && errno != EEXIST)
                        return seat_error_set(ret_error, errno, "create state directory '%s': %m", p);
        }
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "log-level", required_argument, NULL, 'l' },
                { "check-config", no_argument, NULL, 'C' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        const char *config_path = SEATD_CONFIG_DEFAULT;
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_(seat_config_freep) SeatConfig *config = NULL;
        bool check_only = false;
        LogLevel level = LOG_LEVEL_INFO;
        int c, r;

        log_set_ident("seatd");
        while ((c = getopt_long(argc, argv, "c:l:h", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case 'l':
                        if (log_level_from_string(optarg, &level) < 0) {
                                fprintf(stderr, "seatd: unknown log level '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 'C':
                        check_only = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("seatd " SEATD_VERSION "\n");
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        if (optind < argc) {
                usage(stderr);
                return 2;
        }
        log_set_max_level(level);

        if (seat_config_load(config_path, &config, &err) < 0) {
                log_error("%s", err->message);
                return 1;
        }
        if (check_only) {
                if (seat_config_print(config, stdout) < 0)
                        return log_error("out of memory"), 1;
                return 0;
        }

        /* Before any thread, any library, any child. */
        r = sandbox_seatd();
        if (r < 0)
                log_warning("no seccomp filter for seatd: %s", strerror(-r));
        else
                log_debug("seccomp filter installed");
        r = sandbox_seatd_proc();
        if (r < 0)
                log_warning("/proc stays writable for seatd (no Landlock ruleset): %s",
                            r == -EOPNOTSUPP ? "the kernel has no Landlock ABI 2 (Linux 5.19 and later)" : strerror(-r));
        else
                log_debug("Landlock ruleset installed: nothing under /proc is written but /proc/sys/net/ipv4/conf");

        if (make_state_dirs(config, &err) < 0) {
                log_error("%s", err ? err->message : "out of memory");
                return 1;
        }

        _cleanup_(event_loop_freep) EventLoop *loop = NULL;
        r = event_loop_new(&loop);
        if (r < 0)
                return log_error_errno(r, "event loop: %m"), 1;

        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        _cleanup_close_ int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        EventSource *sig_src = NULL;
        if (sfd < 0 || event_add_io(loop, sfd, EPOLLIN, on_signal, loop, &sig_src) < 0)
                return log_error("cannot watch signals: %m"), 1;

        _cleanup_(server_freep) Server *server = NULL;
        Manager manager = { .config = config, .tick_fd = -EBADF };
        if (server_new(config, loop, &server, &err) < 0)
                return log_error("%s", err ? err->message : "out of memory"), 1;
        manager.server = server;
        server_set_userdata(server, &manager);
        if (seatd_methods_init(&manager, &err) < 0 || server_listen(server, &err) < 0) {
                log_error("%s", err ? err->message : "out of memory");
                return 1;
        }
        log_info("seatd " SEATD_VERSION " listening on %s (operators) and %s (participants), state in %s",
                 config->socket_path, config->participant_socket_path, config->state_dir);
        /* Both sockets listening, running seats adopted: what needs seatd may start (Type=notify). */
        if ((r = notify_send("READY=1")) < 0)
                log_warning_errno(r, "cannot tell the service manager that seatd is ready: %m");

        r = event_loop_run(loop);
        (void) notify_send("STOPPING=1");
        server_shutdown(server);
        server = server_free(server);
        seatd_methods_done(&manager);
        event_source_free(sig_src);
        if (r < 0)
                return log_error_errno(r, "event loop failed: %m"), 1;
        log_info("stopped");
        return 0;
}
