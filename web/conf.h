/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* seat-web.conf (docs/seat-web.md, seat-web.8): key = value lines, '#' comments. A pure
 * parser of a buffer (fuzzed: tests/fuzz/fuzz-web-config.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "common/macro.h"

#define WEB_CONFIG_MAX_BYTES (64u * 1024u)
#define WEB_CONFIG_PATH "/etc/seat-web/seat-web.conf"

#define WEB_HANDOUT_PARALLEL_MAX 16 /* handout_parallel at most */

typedef struct WebConfig {
        char *listen_address;      /* an IPv4 or IPv6 literal */
        int listen_port;
        bool plain_http;           /* only with a loopback listen_address */
        char *tls_cert;            /* NULL: state_dir/tls/cert.pem (seat-web --self-signed) */
        char *tls_key;
        char *state_dir;
        char *assets_dir;
        char *participant_socket;
        long seatd_timeout_ms;
        long session_idle_timeout; /* seconds */
        long session_max_age;      /* seconds */
        long max_sessions;
        long login_rate_per_address; /* attempts per minute */
        long login_rate_per_seat;
        long rate_table_size;
        long max_connections;
        long idle_timeout;         /* seconds a connection may sit idle or trickle a request */
        bool mcp;                  /* serve /mcp/SEAT (mcp-http.c) */
        char *seatctl;             /* the 'seatctl mcp' each MCP session runs */
        char *mcp_user;            /* its --user (UID or UID:GID), or NULL */
        long mcp_max_sessions;
        long mcp_sessions_per_seat;
        long mcp_idle_timeout;     /* seconds */
        long mcp_max_body;         /* bytes of one POST */
        long mcp_unauthenticated_rate_per_address; /* requests without a bearer token, per minute */
        long max_terminals;        /* browser terminals at once, in all (0: none) */
        long terminals_per_session;
        long max_file_bytes;       /* a file uploaded or downloaded through the page (0: none) */
        /* The seat's web pages through seat.forward (forward.c): the guest ports a page may
         * reach, parsed from forward_ports ("none": the proxy is off), on forward_host as
         * the guest sees it. */
        char *forward_ports;
        uint16_t forward_port_list[16];
        size_t n_forward_ports;
        char *forward_host;
        long forward_max_body;     /* bytes of a request's body to the guest */
        long forward_max_response; /* bytes of the guest's response, head and body */
        long forward_timeout_ms;   /* one proxied exchange, from connect to the guest's end */
        long forward_workers;      /* proxied exchanges at once (each one seatd connection) */
        /* the facilitator's side (fac-*.c) */
        char *facilitators_file;   /* NAME:argon2id lines (seat-web passwd) */
        char *facilitator_socket;  /* seatd's facilitator socket */
        long facilitator_login_rate_per_address; /* attempts per minute */
        long facilitator_login_rate_per_name;
        long facilitator_session_idle_timeout;   /* seconds */
        long facilitator_session_max_age;        /* seconds */
        long max_dashboards;       /* dashboards' event WebSockets at once (0: none) */
        long handout_parallel;     /* a handout's provisions at once (fac-handout-make.c) */
        bool metrics_loopback;     /* /metrics for loopback clients without a login */
} WebConfig;

WebConfig *web_config_free(WebConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(WebConfig *, web_config_free)

/* origin names the text in messages (a path). */
int web_config_parse(const char *text, size_t len, const char *origin, WebConfig **ret, SeatError **ret_error);
int web_config_load(const char *path, WebConfig **ret, SeatError **ret_error);
/* Whether an address literal is loopback (127.0.0.0/8, ::1): where plain HTTP may listen. */
bool web_address_is_loopback(const char *address);
/* The certificate and key seat-web serves: the configured ones, else the self-signed pair
 * in state_dir. Strings owned by c or written to the buffers. */
void web_config_tls_paths(const WebConfig *c, char *cert, size_t cert_size, char *key, size_t key_size);
int web_config_print(const WebConfig *c, FILE *f);
/* The keys the parser knows, NULL-terminated (the unit test holds the docs to them). */
extern const char *const web_config_keys[];
