/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-web.conf: one table of keys (seatd/conf.c's model, smaller). Every value is
 * checked here, so the daemon never starts on a half-understood file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "forward-parse.h"
#include "common/conffile.h"
#include "common/fileio.h"
#include "common/log.h"

#define LINE_MAX_BYTES 1024

typedef enum Kind { K_STRING, K_PATH, K_BOOL, K_LONG, K_ADDRESS } Kind;

typedef struct Item {
        const char *key;
        Kind kind;
        size_t offset;
        const char *def; /* NULL: unset */
        long min, max;
} Item;

_Static_assert(sizeof(((WebConfig *) NULL)->forward_port_list) / sizeof(uint16_t) == WEB_FORWARD_PORTS_MAX,
               "forward_port_list holds WEB_FORWARD_PORTS_MAX ports");

#define F(x) offsetof(WebConfig, x)
static const Item items[] = {
        { "listen_address", K_ADDRESS, F(listen_address), "127.0.0.1", 0, 0 },
        { "listen_port", K_LONG, F(listen_port), "8443", 1, 65535 },
        { "plain_http", K_BOOL, F(plain_http), "false", 0, 0 },
        { "tls_cert", K_PATH, F(tls_cert), NULL, 0, 0 },
        { "tls_key", K_PATH, F(tls_key), NULL, 0, 0 },
        { "state_dir", K_PATH, F(state_dir), "/var/lib/seat-web", 0, 0 },
        { "assets_dir", K_PATH, F(assets_dir), "/usr/share/seat-web/assets", 0, 0 },
        { "participant_socket", K_PATH, F(participant_socket), "/run/seatd/participant.sock", 0, 0 },
        { "seatd_timeout_ms", K_LONG, F(seatd_timeout_ms), "5000", 100, 60000 },
        { "session_idle_timeout", K_LONG, F(session_idle_timeout), "3600", 10, 7 * 86400 },
        { "session_max_age", K_LONG, F(session_max_age), "43200", 10, 30 * 86400 },
        { "max_sessions", K_LONG, F(max_sessions), "1024", 1, 65536 },
        { "login_rate_per_address", K_LONG, F(login_rate_per_address), "10", 1, 10000 },
        { "login_rate_per_seat", K_LONG, F(login_rate_per_seat), "20", 1, 10000 },
        { "rate_table_size", K_LONG, F(rate_table_size), "1024", 16, 65536 },
        { "max_connections", K_LONG, F(max_connections), "256", 8, 16384 },
        { "idle_timeout", K_LONG, F(idle_timeout), "10", 1, 600 },
        { "mcp", K_BOOL, F(mcp), "true", 0, 0 },
        { "seatctl", K_PATH, F(seatctl), "/usr/bin/seatctl", 0, 0 },
        { "mcp_user", K_STRING, F(mcp_user), NULL, 0, 0 },
        { "mcp_max_sessions", K_LONG, F(mcp_max_sessions), "8", 1, 1024 },
        { "mcp_sessions_per_seat", K_LONG, F(mcp_sessions_per_seat), "2", 1, 64 },
        { "mcp_idle_timeout", K_LONG, F(mcp_idle_timeout), "600", 10, 86400 },
        { "mcp_max_body", K_LONG, F(mcp_max_body), "1048576", 1024, 4194304 },
        { "mcp_unauthenticated_rate_per_address", K_LONG, F(mcp_unauthenticated_rate_per_address), "30", 1, 10000 },
        { "max_terminals", K_LONG, F(max_terminals), "12", 0, 1024 },
        { "terminals_per_session", K_LONG, F(terminals_per_session), "4", 1, 16 },
        { "max_file_bytes", K_LONG, F(max_file_bytes), "67108864", 0, 1073741824 },
        { "forward_ports", K_STRING, F(forward_ports), "80,8080", 0, 0 },
        { "forward_host", K_ADDRESS, F(forward_host), "127.0.0.1", 0, 0 },
        { "forward_max_body", K_LONG, F(forward_max_body), "1048576", 0, 16777216 },
        { "forward_max_response", K_LONG, F(forward_max_response), "8388608", 65536, 67108864 },
        { "forward_timeout_ms", K_LONG, F(forward_timeout_ms), "30000", 1000, 600000 },
        { "forward_workers", K_LONG, F(forward_workers), "4", 1, 16 },
        /* the facilitator's side (fac-*.c) */
        { "facilitators_file", K_PATH, F(facilitators_file), "/etc/seat-web/facilitators", 0, 0 },
        { "facilitator_socket", K_PATH, F(facilitator_socket), "/run/seatd/facilitator.sock", 0, 0 },
        { "facilitator_login_rate_per_address", K_LONG, F(facilitator_login_rate_per_address), "5", 1, 10000 },
        { "facilitator_login_rate_per_name", K_LONG, F(facilitator_login_rate_per_name), "5", 1, 10000 },
        { "facilitator_session_idle_timeout", K_LONG, F(facilitator_session_idle_timeout), "1800", 10, 86400 },
        { "facilitator_session_max_age", K_LONG, F(facilitator_session_max_age), "43200", 10, 7 * 86400 },
        { "max_dashboards", K_LONG, F(max_dashboards), "8", 0, 64 },
        { "handout_parallel", K_LONG, F(handout_parallel), "4", 1, WEB_HANDOUT_PARALLEL_MAX },
        { "metrics_loopback", K_BOOL, F(metrics_loopback), "true", 0, 0 },
};
#undef F

const char *const web_config_keys[] = {
        "listen_address", "listen_port", "plain_http", "tls_cert", "tls_key", "state_dir", "assets_dir",
        "participant_socket", "seatd_timeout_ms", "session_idle_timeout", "session_max_age", "max_sessions",
        "login_rate_per_address", "login_rate_per_seat", "rate_table_size", "max_connections", "idle_timeout", "mcp",
        "seatctl", "mcp_user", "mcp_max_sessions", "mcp_sessions_per_seat", "mcp_idle_timeout", "mcp_max_body",
        "mcp_unauthenticated_rate_per_address", "max_terminals", "terminals_per_session", "max_file_bytes",
        "forward_ports", "forward_host", "forward_max_body",
        "forward_max_response", "forward_timeout_ms", "forward_workers",
        "max_terminals", "terminals_per_session", "max_file_bytes", "facilitators_file", "facilitator_socket",
        "facilitator_login_rate_per_address", "facilitator_login_rate_per_name", "facilitator_session_idle_timeout",
        "facilitator_session_max_age", "max_dashboards", "metrics_loopback", NULL,
};

bool web_address_is_loopback(const char *address) {
        struct in_addr a4;
        struct in6_addr a6;
        if (inet_pton(AF_INET, address, &a4) == 1)
                return (ntohl(a4.s_addr) >> 24) == 127;
        if (inet_pton(AF_INET6, address, &a6) == 1)
                return IN6_IS_ADDR_LOOPBACK(&a6);
        return false;
}

static int set_value(WebConfig *c, const Item *it, const char *v) {
        void *field = (char *) c + it->offset;
        switch (it->kind) {
        case K_PATH:
                /* Absolute, no "..": these are opened by a daemon that trusts its config, but
                 * a typo should not point it somewhere surprising. */
                if (v[0] != '/' || strstr(v, "/../") || strlen(v) >= PATH_MAX - 32 ||
                    (strlen(v) >= 3 && !strcmp(v + strlen(v) - 3, "/..")))
                        return -EINVAL;
                __attribute__((fallthrough));
        case K_STRING:
        case K_ADDRESS: {
                struct in_addr a4;
                struct in6_addr a6;
                if (!*v)
                        return -EINVAL;
                if (!strcmp(it->key, "mcp_user") && (strspn(v, "0123456789:") != strlen(v) || strlen(v) > 21 ||
                                                     v[0] == ':' || strchr(v, ':') != strrchr(v, ':')))
                        return -EINVAL;
                /* Parsed here so that a bad list stops seat-web at start. */
                if (!strcmp(it->key, "forward_ports") &&
                    web_forward_ports_parse(v, c->forward_port_list, &c->n_forward_ports) < 0)
                        return -EINVAL;
                if (it->kind == K_ADDRESS && inet_pton(AF_INET, v, &a4) != 1 && inet_pton(AF_INET6, v, &a6) != 1)
                        return -EINVAL;
                char *s = strdup(v);
                if (!s)
                        return -ENOMEM;
                free(*(char **) field);
                *(char **) field = s;
                return 0;
        }
        case K_BOOL:
                if (!strcmp(v, "true") || !strcmp(v, "yes"))
                        *(bool *) field = true;
                else if (!strcmp(v, "false") || !strcmp(v, "no"))
                        *(bool *) field = false;
                else
                        return -EINVAL;
                return 0;
        case K_LONG: {
                char *end = NULL;
                if (v[0] < '0' || v[0] > '9')
                        return -EINVAL;
                errno = 0;
                long n = strtol(v, &end, 10);
                if (errno || *end || n < it->min || n > it->max)
                        return -ERANGE;
                if (!strcmp(it->key, "listen_port"))
                        *(int *) field = (int) n;
                else
                        *(long *) field = n;
                return 0;
        }
        }
        return -EINVAL;
}

WebConfig *web_config_free(WebConfig *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(items); i++)
                if (items[i].kind == K_PATH || items[i].kind == K_STRING || items[i].kind == K_ADDRESS)
                        free(*(char **) ((char *) c + items[i].offset));
        return mfree(c);
}

typedef struct ParseState {
        WebConfig *config;
        const char *origin;
} ParseState;

static int parse_setting(const char *key, char *value, unsigned lineno, void *userdata, SeatError **ret_error) {
        ParseState *st = userdata;
        WebConfig *c = st->config;
        const char *origin = st->origin;
        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                if (strcmp(items[i].key, key) != 0)
                        continue;
                int r = set_value(c, &items[i], value);
                if (r == -ENOMEM)
                        return seat_error_set(ret_error, ENOMEM, "%s:%u: out of memory", origin, lineno);
                if (r < 0) {
                        _cleanup_free_ char *esc = log_escape(value, strlen(value), 128);
                        if (items[i].kind == K_LONG)
                                return seat_error_set(ret_error, EINVAL, "%s:%u: %s = '%s': not a number in %ld..%ld",
                                                      origin, lineno, key, esc ? esc : "?", items[i].min, items[i].max);
                        return seat_error_set(ret_error, EINVAL, "%s:%u: %s = '%s' is not valid", origin, lineno, key,
                                              esc ? esc : "?");
                }
                return 0;
        }
        _cleanup_free_ char *esc = log_escape(key, strlen(key), 64);
        return seat_error_set(ret_error, EINVAL, "%s:%u: unknown key '%s' (see seat-web(8))", origin, lineno,
                              esc ? esc : "?");
}

int web_config_parse(const char *text, size_t len, const char *origin, WebConfig **ret, SeatError **ret_error) {
        _cleanup_(web_config_freep) WebConfig *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(items); i++)
                if (items[i].def && set_value(c, &items[i], items[i].def) < 0)
                        return seat_error_set(ret_error, EINVAL, "built-in default of '%s' is invalid", items[i].key);
        ParseState st = { .config = c, .origin = origin };
        r = conf_file_parse(text, len, WEB_CONFIG_MAX_BYTES, LINE_MAX_BYTES, origin, parse_setting, &st, ret_error);
        if (r < 0)
                return r;
        /* Plain HTTP carries the token and the session cookie in the clear: only where no
         * one else can listen. */
        if (c->plain_http && !web_address_is_loopback(c->listen_address))
                return seat_error_set(ret_error, EINVAL,
                                      "%s: plain_http = true needs a loopback listen_address (127.0.0.0/8 or ::1), "
                                      "not '%s': anything else is served over TLS only",
                                      origin, c->listen_address);
        if (!c->tls_cert != !c->tls_key)
                return seat_error_set(ret_error, EINVAL, "%s: set both tls_cert and tls_key, or neither (then the "
                                                         "self-signed pair of 'seat-web --self-signed' is used)",
                                      origin);
        *ret = TAKE_PTR(c);
        return 0;
}

int web_config_load(const char *path, WebConfig **ret, SeatError **ret_error) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_file_capped(path, WEB_CONFIG_MAX_BYTES, &text, &len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read config '%s': %s", path, strerror(-r));
        return web_config_parse(text, len, path, ret, ret_error);
}

void web_config_tls_paths(const WebConfig *c, char *cert, size_t cert_size, char *key, size_t key_size) {
        if (c->tls_cert) {
                snprintf(cert, cert_size, "%s", c->tls_cert);
                snprintf(key, key_size, "%s", c->tls_key);
        } else {
                snprintf(cert, cert_size, "%s/tls/cert.pem", c->state_dir);
                snprintf(key, key_size, "%s/tls/key.pem", c->state_dir);
        }
}

int web_config_print(const WebConfig *c, FILE *f) {
        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                const void *field = (const char *) c + items[i].offset;
                switch (items[i].kind) {
                case K_PATH:
                case K_STRING:
                case K_ADDRESS: {
                        const char *s = *(char *const *) field;
                        fprintf(f, "%s = %s\n", items[i].key, s ? s : "");
                        break;
                }
                case K_BOOL:
                        fprintf(f, "%s = %s\n", items[i].key, *(const bool *) field ? "true" : "false");
                        break;
                case K_LONG:
                        if (!strcmp(items[i].key, "listen_port"))
                                fprintf(f, "%s = %d\n", items[i].key, *(const int *) field);
                        else
                                fprintf(f, "%s = %ld\n", items[i].key, *(const long *) field);
                        break;
                }
        }
        return 0;
}
