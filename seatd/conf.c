/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatd.conf, driven by one table (systemd's ConfigTableItem and config_parse_* are the
 * model): each key names its parser, its field in SeatConfig, its default and what it
 * means. The table is what parses a line, sets the defaults, frees the strings, prints
 * --check-config, and what the unit tests hold the documentation to.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "common/conffile.h"
#include "common/fileio.h"

#define LINE_MAX_BYTES 4096

typedef struct ConfItem ConfItem;

/* Parses a value's text into the field (of the parser's type); -EINVAL: not valid. */
typedef int (*ConfParser)(const ConfItem *item, const char *value, void *field);

/* A default made from other settings once the file is read, from the item's def. */
typedef int (*ConfDerive)(const SeatConfig *c, const char *def, char **ret);

/* The C type of a field: how it is printed and freed. */
typedef enum ConfKind {
        CONF_STRING, /* char *, NULL: unset */
        CONF_BOOL,   /* bool */
        CONF_LONG,   /* long, within [min, max] */
        CONF_BYTES,  /* unsigned long long */
        CONF_ACCEL,  /* SeatAccel */
} ConfKind;

struct ConfItem {
        const char *key;
        ConfParser parse;
        ConfKind kind;
        size_t offset;      /* of the field in SeatConfig */
        const char *def;    /* the default, as the file would say it; NULL: unset */
        ConfDerive derive;  /* def is not a value but what derive() makes one from */
        long min, max;      /* conf_parse_long's range */
        const char *unset;  /* what unset means, for --check-config */
        const char *doc;
};

/* ---- parsers ---- */

static int set_string(char **field, const char *value) {
        char *s = strdup(value);
        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

/* Any text but the empty one. */
static int conf_parse_string(const ConfItem *item, const char *v, void *field) {
        return *v ? set_string(field, v) : -EINVAL;
}

static int conf_parse_path(const ConfItem *item, const char *v, void *field) {
        return v[0] == '/' ? set_string(field, v) : -EINVAL;
}

/* An interface name as the kernel takes it; not "all"/"default" (sysctl directories). */
static int conf_parse_ifname(const ConfItem *item, const char *v, void *field) {
        size_t n = strlen(v);
        bool ok = n > 0 && n < 16 &&
                  strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n &&
                  strcmp(v, "all") != 0 && strcmp(v, "default") != 0 && strcmp(v, ".") != 0 && strcmp(v, "..") != 0;
        return ok ? set_string(field, v) : -EINVAL;
}

static int conf_parse_ipv4(const ConfItem *item, const char *v, void *field) {
        struct in_addr a;
        return inet_pton(AF_INET, v, &a) == 1 ? set_string(field, v) : -EINVAL;
}

/* An egress profile's name: it becomes a file name. */
static int conf_parse_profile(const ConfItem *item, const char *v, void *field) {
        size_t n = strlen(v);
        return n > 0 && n <= 32 && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n ? set_string(field, v)
                                                                                              : -EINVAL;
}

static int conf_parse_confinement(const ConfItem *item, const char *v, void *field) {
        return !strcmp(v, "dac") || !strcmp(v, "mac") || !strcmp(v, "none") ? set_string(field, v) : -EINVAL;
}

/* "FIRST-LAST": numeric uids (and the same gids) seatd gives seat QEMUs, one a machine. */
static int conf_parse_uid_range(const ConfItem *item, const char *v, void *field) {
        uid_t first = 0, last = 0;
        return seat_config_parse_uid_range(v, &first, &last) < 0 ? -EINVAL : set_string(field, v);
}

static int conf_parse_bool(const ConfItem *item, const char *v, void *field) {
        bool *b = field;
        if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
                *b = true;
        else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
                *b = false;
        else
                return -EINVAL;
        return 0;
}

static int conf_parse_long(const ConfItem *item, const char *v, void *field) {
        char *end = NULL;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < item->min || n > item->max)
                return -EINVAL;
        *(long *) field = n;
        return 0;
}

/* A size in bytes, 0 allowed. */
static int conf_parse_size(const ConfItem *item, const char *v, void *field) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || !end || *end || v[0] == '-' || end == v)
                return -EINVAL;
        *(unsigned long long *) field = n;
        return 0;
}

/* A cap in bytes: 0 is not one. */
static int conf_parse_cap(const ConfItem *item, const char *v, void *field) {
        unsigned long long n = 0;
        if (conf_parse_size(item, v, &n) < 0 || n == 0)
                return -EINVAL;
        *(unsigned long long *) field = n;
        return 0;
}

static int conf_parse_accel(const ConfItem *item, const char *v, void *field) {
        SeatAccel *a = field;
        if (!strcmp(v, "auto"))
                *a = SEAT_ACCEL_AUTO;
        else if (!strcmp(v, "kvm"))
                *a = SEAT_ACCEL_KVM;
        else if (!strcmp(v, "tcg"))
                *a = SEAT_ACCEL_TCG;
        else
                return -EINVAL;
        return 0;
}

/* ---- derived defaults ---- */

static int in_state_dir(const SeatConfig *c, const char *def, char **ret) {
        return asprintf(ret, "%s/%s", c->state_dir, def) < 0 ? -ENOMEM : 0;
}

/* Beside the operator socket, so a private seatd (tests, a second instance) gets its own
 * pair from one key. */
static int beside_socket(const SeatConfig *c, const char *def, char **ret) {
        const char *slash = strrchr(c->socket_path, '/');
        int dirlen = slash ? (int) (slash - c->socket_path) : 0;
        return asprintf(ret, "%.*s/%s", dirlen, c->socket_path, def) < 0 ? -ENOMEM : 0;
}

/* ---- the table ---- */

#define ITEM(field, parser, kind_, def_, ...) \
        { .key = #field, .parse = (parser), .kind = (kind_), .offset = offsetof(SeatConfig, field), .def = (def_), __VA_ARGS__ }
#define STRING(field, parser, def_, ...) ITEM(field, parser, CONF_STRING, def_, __VA_ARGS__)
#define PATH(field, def_, ...) ITEM(field, conf_parse_path, CONF_STRING, def_, __VA_ARGS__)
#define BOOL(field, def_, ...) ITEM(field, conf_parse_bool, CONF_BOOL, def_, __VA_ARGS__)
#define LONG(field, min_, max_, def_, ...) \
        ITEM(field, conf_parse_long, CONF_LONG, def_, .min = (min_), .max = (max_), __VA_ARGS__)
#define BYTES(field, parser, def_, ...) ITEM(field, parser, CONF_BYTES, def_, __VA_ARGS__)

/* In the order of debian/conf/seatd.conf; --check-config prints them so. */
static const ConfItem items[] = {
        /* Paths and access */
        PATH(state_dir, "/var/lib/seatd", .doc = "images, seats, warm states, evidence and trust live here"),
        PATH(socket_path, "/run/seatd/control.sock", .doc = "the operator socket (0660, group admin_group): every method"),
        PATH(participant_socket_path, "participant.sock", .derive = beside_socket,
             .doc = "the participant socket (any local user): only a token's own seat's methods"),
        PATH(facilitator_socket_path, "facilitator.sock", .derive = beside_socket,
             .doc = "the facilitator socket (0660, group facilitator_group): the dashboard's methods, no token (seat-web)"),
        STRING(facilitator_group, conf_parse_string, "seat-web",
               .doc = "its members reach the facilitator socket: list, provision, reset and release seats, read logs, events, metrics"),
        LONG(participant_max_connections, 1, 256, "16", .doc = "connections one uid may hold on the participant socket"),
        LONG(participant_idle_timeout, 1, 86400, "600",
             .doc = "seconds a participant connection may sit idle before it is closed"),
        LONG(exec_max_timeout, 1, 7 * 86400, "3600",
             .doc = "seconds: the longest timeout an exec may ask for (reset and release cancel it anyway)"),
        LONG(seat_max_calls, 1, 64, "16",
             .doc = "agent calls (execs, terminals, file transfers, forward tunnels) running at once on one seat"),
        LONG(participant_max_calls, 1, 1024, "32",
             .doc = "agent calls running at once on all the seats of one participant"),
        LONG(forward_max_connections, 1, 64, "16", .doc = "TCP connections 'seatctl forward' may hold open into one seat at once"),
        LONG(forward_idle_timeout, 1, 86400, "600",
             .doc = "seconds a forwarded TCP connection may carry no bytes either way before it is closed"),
        PATH(trusted_keys_dir, "trust/keys", .derive = in_state_dir,
             .doc = "the minisign public keys (*.pub) image manifests must be signed by"),
        STRING(admin_group, conf_parse_string, "seatd", .doc = "its members (and root) are operators"),

        /* Virtual machines */
        STRING(libvirt_uri, conf_parse_string, "qemu:///system", .doc = "the libvirt connection seats run on"),
        ITEM(accel, conf_parse_accel, CONF_ACCEL, "auto", .doc = "kvm, tcg or auto"),
        BOOL(allow_tcg, "false", .doc = "let seats run under software emulation where KVM is unusable"),
        LONG(ready_timeout, 1, 86400, "300",
             .doc = "seconds a booting seat's image may take to pass its readiness check; then the boot fails with the check's last output"),
        BOOL(warm_reset, "true", .doc = "a reset restores a saved ready state of the seat's machine instead of booting"),

        /* Confinement of every seat's QEMU */
        STRING(require_confinement, conf_parse_confinement, "dac",
               .doc = "dac (not root), mac (also an AppArmor or SELinux label) or none"),
        BOOL(require_seccomp, "true", .doc = "QEMU must run with its seccomp sandbox"),
        PATH(qemu_run_dir, "/run/libvirt/qemu", .doc = "where libvirt keeps <domain>.pid"),
        STRING(qemu_uid_range, conf_parse_uid_range, "70000-70999",
               .doc = "uids (gids alike) of seat QEMUs: the first for the host check's probe, two for each seat"),

        /* Images */
        BYTES(max_image_bytes, conf_parse_cap, "68719476736",
              .doc = "the largest file of an image, in bytes; also the download cap of a pull"),
        BOOL(inspect_images, "true", .doc = "inspect the disk holding guest-init with libguestfs at import"),
        BOOL(allow_plain_http, "false", .doc = "also allow http:// for image pulls (a trusted local mirror)"),
        PATH(ca_file, NULL, .unset = "(system CA store)",
             .doc = "a PEM CA bundle used instead of the system's for HTTPS pulls"),
        LONG(pull_low_speed_limit, 1, 1L << 30, "1",
             .doc = "a pull slower than this many bytes/s for pull_low_speed_time seconds is a stall"),
        LONG(pull_low_speed_time, 1, 3600, "30", .doc = "seconds below pull_low_speed_limit that make a stall"),
        LONG(pull_connect_timeout, 1, 600, "30", .doc = "seconds connecting (TCP and TLS) may take"),

        /* Disk */
        BYTES(disk_reserve_bytes, conf_parse_size, "1073741824",
              .doc = "free space in state_dir no seat is ever promised, in bytes"),

        /* Pools */
        LONG(pool_max_seats, 1, 4096, "16", .doc = "the pools' refill and the facilitator socket's provisions boot no seat past this many seats (booting ones counted)"),
        LONG(pool_max_memory_mib, 0, 1L << 30, "0",
             .doc = "nor past this much memory of all seats' machines, in MiB (0: half of the host's RAM)"),

        /* Seat networks and egress */
        BOOL(network, "true", .doc = "each seat gets a network of its own; false: seats have no NIC at all"),
        STRING(net_pool, conf_parse_string, "10.213.0.0/16", .doc = "the private IPv4 pool seat subnets come from"),
        LONG(net_subnet_len, 29, 30, "30", .doc = "each seat's subnet: 30 or 29"),
        STRING(uplink, conf_parse_ifname, NULL, .unset = "(none: nothing is forwarded)",
               .doc = "the one interface seat traffic may leave by"),
        STRING(uplink_gateway, conf_parse_ipv4, NULL, .unset = "(none: on-link)", .doc = "the next hop on the uplink"),
        BOOL(masquerade, "true", .doc = "source-NAT seat traffic to the uplink's address"),
        LONG(route_table, 1, 0x7fffffffL, "5213", .doc = "the policy routing table seat traffic is looked up in"),
        LONG(route_priority, 1, 32765, "5213", .doc = "the priority of the 'iif <bridge>' rules"),
        PATH(egress_dir, "/etc/seatd/egress", .doc = "egress profiles, <name>.profile"),
        STRING(default_egress, conf_parse_profile, "none", .doc = "the profile of a seat provisioned without --egress"),
        LONG(egress_check_interval, 1, 3600, "10", .doc = "seconds between full read-backs of every seat's rules"),
        LONG(deny_log_group, 0, 65535, "5213",
             .doc = "nfnetlink_log group of the deny log, read for the egress.denied summaries; 0: kernel log, no summaries"),
        LONG(deny_summary_interval, 1, 3600, "10", .doc = "seconds between egress.denied summaries of denied flows"),
        BOOL(tamper_resume, "true", .doc = "after tampering: restore the rules and resume; false: stay paused"),
        BOOL(forwarding_lockdown, "true", .doc = "IPv4 forwarding only on seat bridges and the uplink"),

        /* Evidence */
        PATH(host_key, "trust/host.key", .derive = in_state_dir,
             .doc = "seatd's signing key for evidence archives, made at first start when missing"),
        PATH(facilitator_key, NULL, .unset = "(none: sessions stay unsealed in the quarantine)",
             .doc = "the facilitator's box public key finished sessions are sealed to"),
        PATH(evidence_archive_dir, "evidence/archives", .derive = in_state_dir, .doc = "where sealed archives go"),
        BYTES(evidence_max_bytes, conf_parse_cap, "268435456", .doc = "bytes of guest files taken per session"),
        BYTES(evidence_max_file_bytes, conf_parse_cap, "67108864", .doc = "bytes taken of one guest file"),
        LONG(evidence_max_files, 1, 4000, "1000", .doc = "guest files and links taken per session"),
        BYTES(recording_max_bytes, conf_parse_cap, "16777216",
              .doc = "bytes of one terminal session's recording (asciicast); the rest is counted, not kept"),
        BOOL(record_input, "false", .doc = "recordings also hold what was typed into terminals (passwords too)"),
        STRING(evidence_collect_user, conf_parse_string, "seatd-collect",
               .doc = "the unprivileged user the guest files are read as (the libguestfs appliance's QEMU included)"),
        LONG(evidence_collect_timeout, 10, 86400, "1800",
             .doc = "seconds one session's guest files may take to read; then the appliance is killed and the archive marked incomplete"),
};

static const ConfItem *item_find(const char *key) {
        for (size_t i = 0; i < ELEMENTSOF(items); i++)
                if (!strcmp(items[i].key, key))
                        return &items[i];
        return NULL;
}

static void *item_field(const ConfItem *item, const SeatConfig *c) {
        return (void *) ((const uint8_t *) c + item->offset);
}

const char *seat_config_key(size_t i) {
        return i < ELEMENTSOF(items) ? items[i].key : NULL;
}

int seat_config_parse_uid_range(const char *v, uid_t *ret_first, uid_t *ret_last) {
        char *end = NULL;
        if (!v || v[0] < '0' || v[0] > '9')
                return -EINVAL;
        errno = 0;
        unsigned long a = strtoul(v, &end, 10);
        if (errno || *end != '-' || end[1] < '0' || end[1] > '9')
                return -EINVAL;
        const char *b_text = end + 1;
        unsigned long b = strtoul(b_text, &end, 10);
        if (errno || *end)
                return -EINVAL;
        /* Never root or a system or login user's id; at least the probe and one seat; a cap
         * on the table of slots; below the ids that mean "none" ((uid_t) -1, 65534 aside,
         * which is nobody's and must not be a seat's). */
        if (a < SEATD_QEMU_UID_MIN || b > SEATD_QEMU_UID_MAX || b < a + 2 || b - a + 1 > SEATD_QEMU_UIDS_MAX ||
            (a <= 65534 && b >= 65534))
                return -EINVAL;
        *ret_first = (uid_t) a;
        *ret_last = (uid_t) b;
        return 0;
}

/* ---- reading the file ---- */

/* The built-in defaults, before the file: what it sets replaces them. */
static int set_defaults(SeatConfig *c) {
        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                const ConfItem *item = &items[i];
                if (!item->def || item->derive)
                        continue;
                int r = item->parse(item, item->def, item_field(item, c));
                if (r < 0)
                        return r == -EINVAL ? -EBADMSG : r; /* a bad default is a bug: the unit test says which */
        }
        return 0;
}

/* The defaults made from other settings, once the file has set those. */
static int set_derived(SeatConfig *c) {
        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                const ConfItem *item = &items[i];
                char **field = item_field(item, c);
                if (item->derive && !*field) {
                        int r = item->derive(c, item->def, field);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

typedef struct ParseState {
        SeatConfig *config;
        const char *origin;
} ParseState;

static int parse_setting(const char *key, char *value, unsigned lineno, void *userdata, SeatError **ret_error) {
        ParseState *st = userdata;
        const char *origin = st->origin;
        size_t vlen = strlen(value);
        if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
                value[vlen - 1] = '\0';
                value++;
        }
        for (const unsigned char *p = (const unsigned char *) value; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return seat_error_set(ret_error, EINVAL, "%s:%u: control character in the value of '%s'",
                                              origin, lineno, key);
        const ConfItem *item = item_find(key);
        if (!item)
                return seat_error_set(ret_error, EINVAL, "%s:%u: unknown setting '%s' (see docs/seatd.conf.md)",
                                      origin, lineno, key);
        int r = item->parse(item, value, item_field(item, st->config));
        if (r == -EINVAL)
                return seat_error_set(ret_error, EINVAL, "%s:%u: invalid value '%s' for '%s'", origin, lineno, value, key);
        return r;
}

int seat_config_parse(const char *text, size_t len, const char *origin, SeatConfig **ret, SeatError **ret_error) {
        _cleanup_(seat_config_freep) SeatConfig *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        r = set_defaults(c);
        if (r < 0)
                return seat_error_set(ret_error, -r, "%s: a built-in default is invalid", origin);
        ParseState st = { .config = c, .origin = origin };
        r = conf_file_parse(text, len, SEATD_CONFIG_MAX_BYTES, LINE_MAX_BYTES, origin, parse_setting, &st, ret_error);
        if (r < 0)
                return r;
        r = set_derived(c);
        if (r < 0)
                return r;
        if (!strcmp(c->socket_path, c->participant_socket_path))
                return seat_error_set(ret_error, EINVAL,
                                      "%s: participant_socket_path and socket_path are both '%s': the participant "
                                      "socket is open to every local user and must be a path of its own",
                                      origin, c->socket_path);
        if (!strcmp(c->facilitator_socket_path, c->socket_path) || !strcmp(c->facilitator_socket_path, c->participant_socket_path))
                return seat_error_set(ret_error, EINVAL,
                                      "%s: facilitator_socket_path '%s' is also socket_path or participant_socket_path: "
                                      "each socket has a path of its own",
                                      origin, c->facilitator_socket_path);
        *ret = TAKE_PTR(c);
        return 0;
}

int seat_config_load(const char *path, SeatConfig **ret, SeatError **ret_error) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_file_capped(path, SEATD_CONFIG_MAX_BYTES, &text, &len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "read config '%s': %s", path, strerror(-r));
        return seat_config_parse(text, len, path, ret, ret_error);
}

SeatConfig *seat_config_free(SeatConfig *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(items); i++)
                if (items[i].kind == CONF_STRING)
                        free(*(char **) item_field(&items[i], c));
        return mfree(c);
}

/* ---- printing ---- */

const char *seat_accel_to_string(SeatAccel a) {
        return a == SEAT_ACCEL_KVM ? "kvm" : a == SEAT_ACCEL_TCG ? "tcg" : "auto";
}

int seat_config_format(const SeatConfig *c, const char *key, char **ret) {
        const ConfItem *item = item_find(key);
        if (!item)
                return -ENOKEY;
        const void *field = item_field(item, c);
        int n = 0;
        switch (item->kind) {
        case CONF_STRING: {
                const char *s = *(char *const *) field;
                n = asprintf(ret, "%s", s ? s : item->unset ? item->unset : "");
                break;
        }
        case CONF_BOOL:
                n = asprintf(ret, "%s", *(const bool *) field ? "true" : "false");
                break;
        case CONF_LONG:
                n = asprintf(ret, "%ld", *(const long *) field);
                break;
        case CONF_BYTES:
                n = asprintf(ret, "%llu", *(const unsigned long long *) field);
                break;
        case CONF_ACCEL:
                n = asprintf(ret, "%s", seat_accel_to_string(*(const SeatAccel *) field));
                break;
        }
        return n < 0 ? -ENOMEM : 0;
}

int seat_config_print(const SeatConfig *c, FILE *f) {
        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                _cleanup_free_ char *v = NULL;
                int r = seat_config_format(c, items[i].key, &v);
                if (r < 0)
                        return r;
                fprintf(f, "%s = %s\n", items[i].key, v);
        }
        return 0;
}
