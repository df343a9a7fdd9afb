/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-web: participants reach their seat from a browser (docs/seat-web.md). It holds no
 * privilege over seats: it speaks to seatd's participant socket like any local user, with
 * the token each participant logged in with.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "conf.h"
#include "config.h"
#include "server.h"
#include "tls-self.h"

static void usage(FILE *f) {
        fputs("usage: seat-web [--config FILE] [--log-level LEVEL]   serve (as the seat-web user)\n"
              "       seat-web --self-signed [--renew] [--config FILE]\n"
              "                 make a self-signed certificate in state_dir/tls (if none) and print\n"
              "                 its SHA-256 fingerprint and public key pin\n"
              "       seat-web --check-config [--config FILE]   print the settings in effect\n"
              "See seat-web(8).\n",
              f);
}

static int parse_level(const char *s, LogLevel *ret) {
        static const struct {
                const char *name;
                LogLevel level;
        } levels[] = { { "err", LOG_LEVEL_ERR }, { "warning", LOG_LEVEL_WARNING }, { "notice", LOG_LEVEL_NOTICE },
                       { "info", LOG_LEVEL_INFO }, { "debug", LOG_LEVEL_DEBUG } };
        for (size_t i = 0; i < ELEMENTSOF(levels); i++)
                if (!strcmp(s, levels[i].name)) {
                        *ret = levels[i].level;
                        return 0;
                }
        return -EINVAL;
}

static int self_signed(const WebConfig *c, bool renew, SeatError **ret_error) {
        char cert[4096], key[4096], dir[4096], host[256] = "localhost";
        TlsFingerprint fp;
        bool made = false;

        if (c->tls_cert)
                return seat_error_set(ret_error, EINVAL,
                                      "the config names tls_cert '%s': --self-signed makes the pair used when it "
                                      "names none",
                                      c->tls_cert);
        web_config_tls_paths(c, cert, sizeof(cert), key, sizeof(key));
        snprintf(dir, sizeof(dir), "%s/tls", c->state_dir);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "cannot make '%s': %s", dir, strerror(errno));
        if (geteuid() == 0) {
                /* Made by root for the daemon's user: the directory is the state dir's
                 * owner's, as the files in it will be. */
                struct stat st;
                if (stat(c->state_dir, &st) == 0 && chown(dir, st.st_uid, st.st_gid) < 0)
                        return seat_error_set(ret_error, errno, "cannot give '%s' to uid %u", dir, (unsigned) st.st_uid);
        }
        (void) gethostname(host, sizeof(host) - 1);
        int r = tls_self_signed(cert, key, host, 365, renew, &made, ret_error);
        if (r < 0)
                return r;
        r = tls_fingerprint_file(cert, &fp, ret_error);
        if (r < 0)
                return r;
        printf("certificate: %s (%s)\n", cert, made ? "new" : "kept");
        printf("sha256-fingerprint: %s\n", fp.sha256);
        printf("spki-sha256: %s\n", fp.spki_sha256);
        return 0;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "log-level", required_argument, NULL, 'l' },
                { "self-signed", no_argument, NULL, 'S' },
                { "renew", no_argument, NULL, 'R' },
                { "check-config", no_argument, NULL, 'C' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        const char *config = WEB_CONFIG_PATH;
        bool want_self = false, renew = false, check = false;
        LogLevel level = LOG_LEVEL_INFO;
        int o;

        log_set_ident("seat-web");
        while ((o = getopt_long(argc, argv, "c:l:h", options, NULL)) >= 0) {
                switch (o) {
                case 'c':
                        config = optarg;
                        break;
                case 'l':
                        if (parse_level(optarg, &level) < 0) {
                                fprintf(stderr, "seat-web: unknown log level '%s' (err, warning, notice, info, debug)\n", optarg);
                                return 2;
                        }
                        break;
                case 'S':
                        want_self = true;
                        break;
                case 'R':
                        renew = true;
                        break;
                case 'C':
                        check = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        puts("seat-web " SEATD_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc || (renew && !want_self)) {
                usage(stderr);
                return 2;
        }
        log_set_max_level(level);

        _cleanup_error_ SeatError *err = NULL;
        _cleanup_(web_config_freep) WebConfig *c = NULL;
        if (web_config_load(config, &c, &err) < 0) {
                log_error("%s", err->message);
                return 1;
        }
        if (check)
                return web_config_print(c, stdout) < 0 ? 1 : 0;
        if (want_self) {
                if (self_signed(c, renew, &err) < 0) {
                        log_error("%s", err->message);
                        return 1;
                }
                return 0;
        }
        /* Root could open seatd's operator socket: the web side never holds that. */
        if (geteuid() == 0 || getegid() == 0) {
                log_error("refusing to serve as root: run seat-web as its own user (User=seat-web in seat-web.service)");
                return 1;
        }
        if (!c->plain_http) {
                char cert[4096], key[4096];
                TlsFingerprint fp;
                web_config_tls_paths(c, cert, sizeof(cert), key, sizeof(key));
                if (tls_fingerprint_file(cert, &fp, NULL) == 0)
                        log_info("certificate '%s': sha256 %s", cert, fp.sha256);
        }
        if (web_server_run(c, &err) < 0) {
                log_error("%s", err->message);
                return 1;
        }
        return 0;
}
