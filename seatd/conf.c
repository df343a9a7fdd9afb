/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "fileio.h"

#define LINE_MAX_BYTES 4096

static int set_string(char **field, const char *value) {
        char *s = strdup(value);
        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

static int parse_bool(const char *v, bool *ret) {
        if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
                *ret = true;
        else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

static int parse_long_range(const char *v, long min, long max, long *ret) {
        char *end = NULL;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < min || n > max)
                return -EINVAL;
        *ret = n;
        return 0;
}

static int parse_path(char **field, const char *v) {
        if (v[0] != '/')
                return -EINVAL;
        return set_string(field, v);
}

/* An interface name as the kernel takes it; not "all"/"default" (sysctl directories). */
static bool ifname_ok(const char *v) {
        size_t n = strlen(v);
        return n > 0 && n < 16 && strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n &&
               strcmp(v, "all") != 0 && strcmp(v, "default") != 0 && strcmp(v, ".") != 0 && strcmp(v, "..") != 0;
}

static int parse_bytes(const char *v, unsigned long long *ret) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || !end || *end || n == 0 || v[0] == '-')
                return -EINVAL;
        *ret = n;
        return 0;
}

static int apply(SeatConfig *c, const char *key, const char *v) {
        if (!strcmp(key, "state_dir"))
                return parse_path(&c->state_dir, v);
        if (!strcmp(key, "socket_path"))
                return parse_path(&c->socket_path, v);
        if (!strcmp(key, "participant_socket_path"))
                return parse_path(&c->participant_socket_path, v);
        if (!strcmp(key, "participant_max_connections"))
                return parse_long_range(v, 1, 256, &c->participant_max_connections);
        if (!strcmp(key, "participant_idle_timeout"))
                return parse_long_range(v, 1, 86400, &c->participant_idle_timeout);
        if (!strcmp(key, "exec_max_timeout"))
                return parse_long_range(v, 1, 7 * 86400, &c->exec_max_timeout);
        if (!strcmp(key, "trusted_keys_dir"))
                return parse_path(&c->trusted_keys_dir, v);
        if (!strcmp(key, "ca_file"))
                return parse_path(&c->ca_file, v);
        if (!strcmp(key, "host_key"))
                return parse_path(&c->host_key, v);
        if (!strcmp(key, "facilitator_key"))
                return parse_path(&c->facilitator_key, v);
        if (!strcmp(key, "admin_group"))
                return *v ? set_string(&c->admin_group, v) : -EINVAL;
        if (!strcmp(key, "libvirt_uri"))
                return *v ? set_string(&c->libvirt_uri, v) : -EINVAL;
        if (!strcmp(key, "allow_plain_http"))
                return parse_bool(v, &c->allow_plain_http);
        if (!strcmp(key, "allow_tcg"))
                return parse_bool(v, &c->allow_tcg);
        if (!strcmp(key, "inspect_images"))
                return parse_bool(v, &c->inspect_images);
        if (!strcmp(key, "warm_reset"))
                return parse_bool(v, &c->warm_reset);
        if (!strcmp(key, "pool_max_seats"))
                return parse_long_range(v, 1, 4096, &c->pool_max_seats);
        if (!strcmp(key, "pool_max_memory_mib"))
                return parse_long_range(v, 0, 1L << 30, &c->pool_max_memory_mib);
        if (!strcmp(key, "accel")) {
                if (!strcmp(v, "auto"))
                        c->accel = SEAT_ACCEL_AUTO;
                else if (!strcmp(v, "kvm"))
                        c->accel = SEAT_ACCEL_KVM;
                else if (!strcmp(v, "tcg"))
                        c->accel = SEAT_ACCEL_TCG;
                else
                        return -EINVAL;
                return 0;
        }
        if (!strcmp(key, "pull_low_speed_limit"))
                return parse_long_range(v, 1, 1L << 30, &c->pull_low_speed_limit);
        if (!strcmp(key, "pull_low_speed_time"))
                return parse_long_range(v, 1, 3600, &c->pull_low_speed_time);
        if (!strcmp(key, "pull_connect_timeout"))
                return parse_long_range(v, 1, 600, &c->pull_connect_timeout);
        if (!strcmp(key, "network"))
                return parse_bool(v, &c->network);
        if (!strcmp(key, "net_pool"))
                return *v ? set_string(&c->net_pool, v) : -EINVAL;
        if (!strcmp(key, "net_subnet_len"))
                return parse_long_range(v, 29, 30, &c->net_subnet_len);
        if (!strcmp(key, "uplink"))
                return ifname_ok(v) ? set_string(&c->uplink, v) : -EINVAL;
        if (!strcmp(key, "uplink_gateway")) {
                struct in_addr a;
                return inet_pton(AF_INET, v, &a) == 1 ? set_string(&c->uplink_gateway, v) : -EINVAL;
        }
        if (!strcmp(key, "masquerade"))
                return parse_bool(v, &c->masquerade);
        if (!strcmp(key, "route_table"))
                return parse_long_range(v, 1, 0x7fffffffL, &c->route_table);
        if (!strcmp(key, "route_priority"))
                return parse_long_range(v, 1, 32765, &c->route_priority);
        if (!strcmp(key, "egress_dir"))
                return parse_path(&c->egress_dir, v);
        if (!strcmp(key, "default_egress"))
                return *v && strlen(v) <= 32 && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen(v)
                               ? set_string(&c->default_egress, v)
                               : -EINVAL;
        if (!strcmp(key, "egress_check_interval"))
                return parse_long_range(v, 1, 3600, &c->egress_check_interval);
        if (!strcmp(key, "require_confinement"))
                return !strcmp(v, "dac") || !strcmp(v, "mac") || !strcmp(v, "none") ? set_string(&c->require_confinement, v)
                                                                                      : -EINVAL;
        if (!strcmp(key, "require_seccomp"))
                return parse_bool(v, &c->require_seccomp);
        if (!strcmp(key, "qemu_run_dir"))
                return parse_path(&c->qemu_run_dir, v);
        if (!strcmp(key, "forwarding_lockdown"))
                return parse_bool(v, &c->forwarding_lockdown);
        if (!strcmp(key, "tamper_resume"))
                return parse_bool(v, &c->tamper_resume);
        if (!strcmp(key, "disk_reserve_bytes")) {
                char *end = NULL;
                errno = 0;
                unsigned long long n = strtoull(v, &end, 10);
                if (errno || !end || *end || v[0] == '-' || end == v)
                        return -EINVAL;
                c->disk_reserve_bytes = n;
                c->disk_reserve_set = true;
                return 0;
        }
        if (!strcmp(key, "max_image_bytes")) {
                char *end = NULL;
                errno = 0;
                unsigned long long n = strtoull(v, &end, 10);
                if (errno || !end || *end || n == 0 || v[0] == '-')
                        return -EINVAL;
                c->max_image_bytes = n;
                return 0;
        }
        if (!strcmp(key, "max_image_bytes"))
                return parse_bytes(v, &c->max_image_bytes);
        if (!strcmp(key, "evidence_archive_dir"))
                return parse_path(&c->evidence_archive_dir, v);
        if (!strcmp(key, "evidence_max_bytes"))
                return parse_bytes(v, &c->evidence_max_bytes);
        if (!strcmp(key, "evidence_max_file_bytes"))
                return parse_bytes(v, &c->evidence_max_file_bytes);
        if (!strcmp(key, "evidence_max_files"))
                return parse_long_range(v, 1, 4000, &c->evidence_max_files);
        return -ENOKEY;
}

static char *strip(char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
                s[--n] = '\0';
        return s;
}

static int set_defaults(SeatConfig *c) {
        if ((!c->state_dir && set_string(&c->state_dir, "/var/lib/seatd") < 0) ||
            (!c->socket_path && set_string(&c->socket_path, "/run/seatd/control.sock") < 0) ||
            (!c->admin_group && set_string(&c->admin_group, "seatd") < 0) ||
            (!c->libvirt_uri && set_string(&c->libvirt_uri, "qemu:///system") < 0))
                return -ENOMEM;
        if (!c->participant_socket_path) {
                /* Beside the operator socket, so a private seatd (tests, a second instance)
                 * gets its own pair from one key. */
                const char *slash = strrchr(c->socket_path, '/');
                int dirlen = slash ? (int) (slash - c->socket_path) : 0;
                if (asprintf(&c->participant_socket_path, "%.*s/participant.sock", dirlen, c->socket_path) < 0)
                        return -ENOMEM;
        }
        if (!c->participant_max_connections)
                c->participant_max_connections = 16;
        if (!c->participant_idle_timeout)
                c->participant_idle_timeout = 600;
        if (!c->exec_max_timeout)
                c->exec_max_timeout = 3600;
        if (!c->trusted_keys_dir && asprintf(&c->trusted_keys_dir, "%s/trust/keys", c->state_dir) < 0)
                return -ENOMEM;
        if (!c->host_key && asprintf(&c->host_key, "%s/trust/host.key", c->state_dir) < 0)
                return -ENOMEM;
        if (!c->max_image_bytes)
                c->max_image_bytes = 64ULL << 30;
        if (!c->evidence_archive_dir && asprintf(&c->evidence_archive_dir, "%s/evidence/archives", c->state_dir) < 0)
                return -ENOMEM;
        if (!c->evidence_max_bytes)
                c->evidence_max_bytes = 256ULL << 20;
        if (!c->evidence_max_file_bytes)
                c->evidence_max_file_bytes = 64ULL << 20;
        if (!c->evidence_max_files)
                c->evidence_max_files = 1000;
        if (!c->pull_low_speed_limit)
                c->pull_low_speed_limit = 1;
        if (!c->pull_low_speed_time)
                c->pull_low_speed_time = 30;
        if (!c->pull_connect_timeout)
                c->pull_connect_timeout = 30;
        if ((!c->net_pool && set_string(&c->net_pool, "10.213.0.0/16") < 0) ||
            (!c->egress_dir && set_string(&c->egress_dir, "/etc/seatd/egress") < 0) ||
            (!c->default_egress && set_string(&c->default_egress, "none") < 0) ||
            (!c->require_confinement && set_string(&c->require_confinement, "dac") < 0) ||
            (!c->qemu_run_dir && set_string(&c->qemu_run_dir, "/run/libvirt/qemu") < 0))
                return -ENOMEM;
        if (!c->net_subnet_len)
                c->net_subnet_len = 30;
        if (!c->route_table)
                c->route_table = 5213;
        if (!c->route_priority)
                c->route_priority = 5213;
        if (!c->disk_reserve_set)
                c->disk_reserve_bytes = 1ULL << 30;
        if (!c->egress_check_interval)
                c->egress_check_interval = 10;
        if (!c->pool_max_seats)
                c->pool_max_seats = 16;
        return 0;
}

static int parse_line(SeatConfig *c, char *line, const char *origin, unsigned lineno, SeatError **ret_error) {
        char *s = strip(line);
        if (!*s || *s == '#')
                return 0;
        char *eq = strchr(s, '=');
        if (!eq)
                return seat_error_set(ret_error, EINVAL, "%s:%u: expected 'key = value'", origin, lineno);
        *eq = '\0';
        char *key = strip(s), *value = strip(eq + 1);
        size_t vlen = strlen(value);
        if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
                value[vlen - 1] = '\0';
                value++;
        }
        for (const unsigned char *p = (const unsigned char *) value; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return seat_error_set(ret_error, EINVAL, "%s:%u: control character in the value of '%s'",
                                              origin, lineno, key);
        int r = apply(c, key, value);
        if (r == -ENOKEY)
                return seat_error_set(ret_error, EINVAL, "%s:%u: unknown setting '%s' (see docs/seatd.conf.md)",
                                      origin, lineno, key);
        if (r == -EINVAL)
                return seat_error_set(ret_error, EINVAL, "%s:%u: invalid value '%s' for '%s'", origin, lineno, value, key);
        return r;
}

int seat_config_parse(const char *text, size_t len, const char *origin, SeatConfig **ret, SeatError **ret_error) {
        _cleanup_(seat_config_freep) SeatConfig *c = calloc(1, sizeof(*c));
        unsigned lineno = 0;
        int r;

        if (!c)
                return -ENOMEM;
        c->inspect_images = true;
        c->network = true;
        c->masquerade = true;
        c->tamper_resume = true;
        c->forwarding_lockdown = true;
        c->require_seccomp = true;
        c->warm_reset = true;
        if (len > SEATD_CONFIG_MAX_BYTES)
                return seat_error_set(ret_error, EFBIG, "%s: larger than %u bytes", origin, SEATD_CONFIG_MAX_BYTES);
        if (memchr(text, '\0', len))
                return seat_error_set(ret_error, EINVAL, "%s: contains a NUL byte", origin);

        for (size_t off = 0; off < len;) {
                const char *nl = memchr(text + off, '\n', len - off);
                size_t n = nl ? (size_t) (nl - (text + off)) : len - off;
                char line[LINE_MAX_BYTES];
                lineno++;
                if (n >= sizeof(line))
                        return seat_error_set(ret_error, EINVAL, "%s:%u: line longer than %d bytes", origin, lineno,
                                              LINE_MAX_BYTES - 1);
                memcpy(line, text + off, n);
                line[n] = '\0';
                r = parse_line(c, line, origin, lineno, ret_error);
                if (r < 0)
                        return r;
                off += n + 1;
        }
        r = set_defaults(c);
        if (r < 0)
                return r;
        if (!strcmp(c->socket_path, c->participant_socket_path))
                return seat_error_set(ret_error, EINVAL,
                                      "%s: participant_socket_path and socket_path are both '%s': the participant "
                                      "socket is open to every local user and must be a path of its own",
                                      origin, c->socket_path);
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
        free(c->state_dir);
        free(c->socket_path);
        free(c->participant_socket_path);
        free(c->trusted_keys_dir);
        free(c->admin_group);
        free(c->libvirt_uri);
        free(c->ca_file);
        free(c->host_key);
        free(c->facilitator_key);
        free(c->net_pool);
        free(c->uplink);
        free(c->uplink_gateway);
        free(c->egress_dir);
        free(c->default_egress);
        free(c->require_confinement);
        free(c->qemu_run_dir);
        free(c->evidence_archive_dir);
        free(c);
        return NULL;
}

const char *seat_accel_to_string(SeatAccel a) {
        return a == SEAT_ACCEL_KVM ? "kvm" : a == SEAT_ACCEL_TCG ? "tcg" : "auto";
}
