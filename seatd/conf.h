/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/error.h"

/* seatd.conf: "key = value" lines, '#' comments, values optionally in double quotes.
 * Every path seatd touches comes from here, so tests run a private seatd beside any
 * other. An unknown key is an error (a typo must not silently weaken a setting). Each
 * key is a row of the table in conf.c (parser, field, default, meaning); a new setting
 * is a field here, a row there, and a line in docs/seatd.conf.md, docs/man/seatd.conf.5.scd
 * and debian/conf/seatd.conf (the unit test checks all three). */
typedef enum SeatAccel {
        SEAT_ACCEL_AUTO,
        SEAT_ACCEL_KVM,
        SEAT_ACCEL_TCG,
} SeatAccel;

typedef struct SeatConfig {
        char *state_dir;        /* /var/lib/seatd: images/, seats/, evidence/, trust/ */
        char *socket_path;      /* operator socket, /run/seatd/control.sock (0660, admin_group) */
        /* Participant socket: any local user may connect; it serves only the token-scoped
         * methods (default: participant.sock beside socket_path). */
        char *participant_socket_path;
        /* Facilitator socket: 0660 root:facilitator_group (seat-web's group). It serves the
         * dashboard's methods on every seat without a token, and nothing that runs code in a
         * seat (default: facilitator.sock beside socket_path). */
        char *facilitator_socket_path;
        char *facilitator_group;          /* default "seat-web" */
        long participant_max_connections; /* per uid on the participant socket (default 16) */
        long participant_idle_timeout;    /* seconds a participant connection may sit idle (default 600) */
        long exec_max_timeout;            /* seconds: the longest timeout an exec may ask for (default 3600) */
        long ready_timeout;               /* seconds an image's readiness check may take to pass (default 300) */
        long seat_max_calls;              /* agent calls at once on one seat (default 16) */
        long participant_max_calls;       /* ... on all of one participant's seats (default 32) */
        long forward_max_connections;     /* TCP connections forwarded into one seat at once (default 16) */
        long forward_idle_timeout;        /* seconds a forwarded connection may carry nothing (default 600) */
        char *trusted_keys_dir; /* default: <state_dir>/trust/keys */
        char *admin_group;      /* members are operators; default "seatd" */
        char *libvirt_uri;      /* default qemu:///system */
        bool allow_plain_http;  /* image pulls over http:// (local mirrors only) */
        char *ca_file;          /* extra CA bundle for HTTPS pulls; NULL: system store */
        char *host_key;         /* seatd's signing key for evidence; default <state_dir>/trust/host.key, made if missing */
        char *facilitator_key;  /* the facilitator's box public key: archives are sealed to it; NULL: not sealed */
        SeatAccel accel;
        bool allow_tcg;
        unsigned long long max_image_bytes; /* cap on one disk image, default 64 GiB */
        bool inspect_images;    /* libguestfs inspection at import (default true) */
        /* image.pull: a transfer slower than pull_low_speed_limit bytes/s for
         * pull_low_speed_time seconds is a stall (defaults 1 and 30); connecting may take
         * pull_connect_timeout seconds (default 30). */
        long pull_low_speed_limit;
        long pull_low_speed_time;
        long pull_connect_timeout;
        /* Seat networks (docs/egress.md). network = false: seats get no NIC at all. */
        bool network;
        char *net_pool;         /* private IPv4 pool, default 10.213.0.0/16 */
        long net_subnet_len;    /* each seat's subnet: 29 or 30 (default) */
        char *uplink;           /* the only interface seat traffic may leave by; NULL: none */
        char *uplink_gateway;   /* next hop on the uplink; NULL: on-link */
        bool masquerade;        /* source NAT to the uplink's address (default true) */
        long route_table;       /* policy routing table for seat traffic (default 5213) */
        long route_priority;    /* priority of the "iif <bridge>" rules (default 5213) */
        char *egress_dir;       /* <name>.profile files, default /etc/seatd/egress */
        char *default_egress;   /* profile when provision names none: default "none" */
        long egress_check_interval; /* seconds between full read-backs (default 10) */
        long deny_log_group;    /* nfnetlink_log group of the deny log (default 5213; 0: kernel log) */
        long deny_summary_interval; /* seconds between denied-flow summaries (default 10) */
        bool forwarding_lockdown; /* IPv4 forwarding only on seat bridges + uplink (default true) */
        bool tamper_resume;     /* after tampering: restore rules and resume (default), or stay paused */
        /* Disk: free space seatd never promises to seats (default 1 GiB). */
        unsigned long long disk_reserve_bytes;
        /* Warm reset (docs/warm-reset.md): each seat slot keeps saved machine states and
         * a reset restores one instead of booting (default true). */
        bool warm_reset;
        /* Confinement every seat's QEMU must have, checked on the running process
         * (docs/security.md): "dac" (default: not root), "mac" (also an AppArmor or
         * SELinux label), "none"; and QEMU's seccomp sandbox (default required). */
        char *require_confinement;
        bool require_seccomp;
        char *qemu_run_dir;     /* where libvirt keeps <domain>.pid (default /run/libvirt/qemu) */
        /* "FIRST-LAST" (default 70000-70999): each seat machine's QEMU runs under a uid
         * (and the gid of the same number) of its own from here, through a static DAC
         * <seclabel>, so one QEMU's escape reaches no other seat's files.
         * The first is the host check's probe guest; each seat slot takes the next free
         * pair (its two machine identities, docs/warm-reset.md). */
        char *qemu_uid_range;
        /* Evidence: where archives go (default <state_dir>/evidence/archives), and the caps
         * on what is taken from the guest's evidence_paths (docs/seatd.conf.md). */
        char *evidence_archive_dir;
        unsigned long long evidence_max_bytes;      /* all guest files of a session */
        unsigned long long evidence_max_file_bytes; /* one guest file (cut there) */
        long evidence_max_files;                    /* guest files and links taken */
        unsigned long long recording_max_bytes;     /* one PTY session's asciicast file */
        bool record_input;                          /* "i" events in recordings */
        /* Who reads the guest files (seatd/collect.c: never root), and for how long at most. */
        char *evidence_collect_user;
        long evidence_collect_timeout;              /* seconds */
        /* Pools (docs/pools.md): what their background refill may fill the host up to, counting
         * every seat it runs: seats (default 16; also the facilitator socket's provisions, and
         * seats still booting count) and machine memory in MiB (0, the default: half of the
         * host's RAM). */
        long pool_max_seats;
        long pool_max_memory_mib;
} SeatConfig;

/* qemu_uid_range's bounds: above every system and login user, below (uid_t) -1, and at
 * most this many ids. */
#define SEATD_QEMU_UID_MIN 1000u
#define SEATD_QEMU_UID_MAX 0x7fffffffu
#define SEATD_QEMU_UIDS_MAX 65536u

#define SEATD_CONFIG_MAX_BYTES (64u * 1024u)
#define SEATD_CONFIG_DEFAULT "/etc/seatd/seatd.conf"

int seat_config_parse(const char *text, size_t len, const char *origin, SeatConfig **ret, SeatError **ret_error);
/* qemu_uid_range's text into its first and last uid; -EINVAL when it is not one. */
int seat_config_parse_uid_range(const char *v, uid_t *ret_first, uid_t *ret_last);
int seat_config_load(const char *path, SeatConfig **ret, SeatError **ret_error);
SeatConfig *seat_config_free(SeatConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(SeatConfig *, seat_config_free)
const char *seat_accel_to_string(SeatAccel a);

/* The keys seatd.conf knows, in the order --check-config prints them: the i-th, NULL
 * past the last. */
const char *seat_config_key(size_t i);
/* The value of key in c as seatd.conf would say it; an unset one as what that means, in
 * parentheses. -ENOKEY for no such key. */
int seat_config_format(const SeatConfig *c, const char *key, char **ret);
/* "key = value", every key, one a line: seatd --check-config. */
int seat_config_print(const SeatConfig *c, FILE *f);
