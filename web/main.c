/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-web: participants reach their seat from a browser (docs/seat-web.md). It holds no
 * privilege over seats: it speaks to seatd's participant socket like any local user, with
 * the token each participant logged in with.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "conf.h"
#include "config.h"
#include "fac-passwd.h"
#include "links.h"
#include "seatd-link.h"
#include "server.h"
#include "state-owner.h"
#include "tls-self.h"

#define LINK_EXPIRES_DEFAULT_S (12 * 3600) /* a workshop day */

static void usage(FILE *f) {
        fputs("usage: seat-web [--config FILE] [--log-level LEVEL]   serve (as the seat-web user)\n"
              "       seat-web --self-signed [--renew] [--config FILE]\n"
              "                 make a self-signed certificate in state_dir/tls (if none) and print\n"
              "                 its SHA-256 fingerprint and public key pin\n"
              "       seat-web --check-config [--config FILE]   print the settings in effect\n"
              "       seat-web --link SEAT --token-file FILE [--expires SECONDS] [--url BASE] [--json]\n"
              "                 a one-time login link for the seat (as root; the token is checked\n"
              "                 with seatd first); it expires on first use or after SECONDS (12 h)\n"
              "       seat-web passwd [--config FILE] [--file FACILITATORS] NAME\n"
              "                 set a facilitator's password (read twice from a terminal, once from stdin)\n"
              "See seat-web(8).\n",
              f);
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
        /* The directory and the pair are the daemon's: made as its user (state-owner.h). */
        int r = web_become_state_owner(c->state_dir, ret_error);
        if (r < 0)
                return r;
        snprintf(dir, sizeof(dir), "%s/tls", c->state_dir);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "cannot make '%s': %s", dir, strerror(errno));
        (void) gethostname(host, sizeof(host) - 1);
        r = tls_self_signed(cert, key, host, 365, renew, &made, ret_error);
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

/* BASE/l/ID: BASE from --url, else this seat-web's own address and port. */
static void link_url(const WebConfig *c, const char *base, const char *id, char *out, size_t size) {
        char host[256] = "localhost";
        if (base) {
                size_t n = strlen(base);
                snprintf(out, size, "%.*s/l/%s", (int) (n > 0 && base[n - 1] == '/' ? n - 1 : n), base, id);
                return;
        }
        /* A wildcard address names no host a browser can reach: the machine's name then. */
        if (strcmp(c->listen_address, "0.0.0.0") != 0 && strcmp(c->listen_address, "::") != 0)
                snprintf(host, sizeof(host), strchr(c->listen_address, ':') ? "[%s]" : "%s", c->listen_address);
        else
                (void) gethostname(host, sizeof(host) - 1);
        snprintf(out, size, "%s://%s:%d/l/%s", c->plain_http ? "http" : "https", host, c->listen_port, id);
}

static int make_link(const WebConfig *c, const char *seat, const char *token_file, long expires_s, const char *base,
                     bool json, SeatError **ret_error) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        WebLink l = {};
        char id[WEB_SESSION_ID_LEN + 1], url[600], code[32] = "";

        if (!web_seat_id_valid(seat))
                return seat_error_set(ret_error, EINVAL, "'%s' is not a seat id", seat);
        int r = read_file_capped(token_file, 256, &text, &len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read the token file '%s': %s", token_file, strerror(-r));
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
                text[--len] = '\0';
        if (!web_token_valid(text))
                return seat_error_set(ret_error, EINVAL, "'%s' does not hold a seat token (64 hex digits)", token_file);
        snprintf(l.seat, sizeof(l.seat), "%s", seat);
        snprintf(l.token, sizeof(l.token), "%s", text);
        sodium_memzero(text, len);
        l.expires = now_realtime_ms() / 1000 + expires_s;

        /* A link to a token seatd refuses would only disappoint a participant at 8 am. */
        _cleanup_json_ json_object *params = json_object_new_object();
        if (!params)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        json_object_object_add(params, "seat", json_object_new_string(l.seat));
        json_object_object_add(params, "token", json_object_new_string(l.token));
        r = seatd_call(c->participant_socket, c->seatd_timeout_ms, "seat.status", params, NULL, code);
        if (r == -EREMOTEIO)
                r = seat_error_set(ret_error, EACCES, "seatd does not accept this token for seat '%s' (%s): no link made", seat, code);
        else if (r < 0)
                r = seat_error_set(ret_error, -r, "cannot ask seatd at '%s' about the token: %s", c->participant_socket, strerror(-r));
        /* The token file was read as root; the link is written as the daemon's user
         * (state-owner.h), who reads it. */
        if (r >= 0)
                r = web_become_state_owner(c->state_dir, ret_error);
        if (r >= 0)
                r = web_link_issue(c, &l, id, ret_error);
        sodium_memzero(&l, sizeof(l));
        if (r < 0)
                return r;
        link_url(c, base, id, url, sizeof(url));
        if (json) {
                _cleanup_json_ json_object *o = json_object_new_object();
                if (!o)
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
                json_object_object_add(o, "seat", json_object_new_string(seat));
                json_object_object_add(o, "url", json_object_new_string(url));
                json_object_object_add(o, "expires_s", json_object_new_int64(expires_s));
                puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        } else
                printf("%s\n", url);
        return 0;
}

/* seat-web passwd [--config FILE] [--file F] NAME */
static int passwd_main(int argc, char **argv) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "file", required_argument, NULL, 'f' },
                {},
        };
        const char *config = WEB_CONFIG_PATH, *file = NULL;
        int o;
        while ((o = getopt_long(argc, argv, "c:f:", options, NULL)) >= 0) {
                if (o == 'c')
                        config = optarg;
                else if (o == 'f')
                        file = optarg;
                else {
                        usage(stderr);
                        return 2;
                }
        }
        if (optind != argc - 1) {
                usage(stderr);
                return 2;
        }
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_(web_config_freep) WebConfig *c = NULL;
        /* --file alone needs no config (a first password before seat-web.conf exists). */
        int r = file && access(config, F_OK) < 0 ? web_config_parse("", 0, "defaults", &c, &err)
                                                  : web_config_load(config, &c, &err);
        if (r < 0) {
                log_error("%s", err->message);
                return 1;
        }
        if (fac_passwd(c, file, argv[optind], &err) < 0) {
                log_error("%s", err->message);
                return 1;
        }
        fprintf(stderr, "password of '%s' set in %s\n", argv[optind], file ? file : c->facilitators_file);
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
                { "link", required_argument, NULL, 'L' },
                { "token-file", required_argument, NULL, 'T' },
                { "expires", required_argument, NULL, 'E' },
                { "url", required_argument, NULL, 'U' },
                { "json", no_argument, NULL, 'J' },
                {},
        };
        const char *config = WEB_CONFIG_PATH, *link_seat = NULL, *token_file = NULL, *base_url = NULL;
        long expires_s = LINK_EXPIRES_DEFAULT_S;
        bool want_self = false, renew = false, check = false, json = false;
        LogLevel level = LOG_LEVEL_INFO;
        int o;

        log_set_ident("seat-web");
        if (argc >= 2 && !strcmp(argv[1], "passwd"))
                return passwd_main(argc - 1, argv + 1);
        while ((o = getopt_long(argc, argv, "c:l:h", options, NULL)) >= 0) {
                switch (o) {
                case 'c':
                        config = optarg;
                        break;
                case 'l':
                        if (log_level_from_string_syslog(optarg, &level) < 0) {
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
                case 'L':
                        link_seat = optarg;
                        break;
                case 'T':
                        token_file = optarg;
                        break;
                case 'U':
                        base_url = optarg;
                        break;
                case 'J':
                        json = true;
                        break;
                case 'E': {
                        uint64_t v;
                        if (web_parse_u64(optarg, 30 * 24 * 3600, &v) < 0 || v == 0) {
                                fprintf(stderr, "seat-web: --expires takes seconds, 1 to 2592000 (30 days)\n");
                                return 2;
                        }
                        expires_s = (long) v;
                        break;
                }
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
        if (optind < argc || (renew && !want_self) || (link_seat && !token_file) || (token_file && !link_seat)) {
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
        if (link_seat) {
                if (make_link(c, link_seat, token_file, expires_s, base_url, json, &err) < 0) {
                        log_error("%s", err->message);
                        return 1;
                }
                return 0;
        }
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
