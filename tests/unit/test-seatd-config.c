/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "seatd/conf.h"
#include "unit-source.h"

static SeatConfig *parse(const char *s) {
        SeatConfig *c = NULL;
        _cleanup_error_ SeatError *err = NULL;
        if (seat_config_parse(s, strlen(s), "test.conf", &c, &err) < 0)
                fail_msg("%s", err->message);
        return c;
}

static void refused(const char *s, const char *in_message) {
        SeatConfig *c = NULL;
        _cleanup_error_ SeatError *err = NULL;
        assert_true(seat_config_parse(s, strlen(s), "test.conf", &c, &err) < 0);
        assert_null(c);
        if (!strstr(err->message, in_message))
                fail_msg("'%s' does not mention '%s'", err->message, in_message);
}

TEST(defaults) {
        _cleanup_(seat_config_freep) SeatConfig *c = parse("");
        assert_string_equal(c->state_dir, "/var/lib/seatd");
        assert_string_equal(c->socket_path, "/run/seatd/control.sock");
        assert_string_equal(c->trusted_keys_dir, "/var/lib/seatd/trust/keys");
        assert_string_equal(c->libvirt_uri, "qemu:///system");
        assert_int_equal(c->accel, SEAT_ACCEL_AUTO);
        assert_false(c->allow_tcg);
        assert_false(c->allow_plain_http);
        assert_true(c->inspect_images);
        assert_null(c->ca_file);
        assert_int_equal(c->max_image_bytes, 64ULL << 30);
        assert_int_equal(c->pull_low_speed_limit, 1);
        assert_int_equal(c->pull_low_speed_time, 30);
        assert_int_equal(c->pull_connect_timeout, 30);
        assert_string_equal(c->evidence_archive_dir, "/var/lib/seatd/evidence/archives");
        assert_int_equal(c->evidence_max_bytes, 256ULL << 20);
        assert_int_equal(c->evidence_max_file_bytes, 64ULL << 20);
        assert_int_equal(c->evidence_max_files, 1000);
        assert_string_equal(c->evidence_collect_user, "seatd-collect");
        assert_int_equal(c->evidence_collect_timeout, 1800);
        assert_int_equal(c->exec_max_timeout, 3600);
        assert_int_equal(c->ready_timeout, 300);
}

TEST(values) {
        _cleanup_(seat_config_freep) SeatConfig *c = parse(
                "# a comment\n"
                "  state_dir = /tmp/s  \n"
                "socket_path=\"/tmp/s/c.sock\"\r\n"
                "\n"
                "accel = tcg\nallow_tcg = yes\nallow_plain_http = true\nmax_image_bytes = 1024\n"
                "admin_group = wheel\nlibvirt_uri = test:///default\n"
                "ca_file = /tmp/ca.pem\npull_low_speed_limit = 1024\npull_low_speed_time = 3\npull_connect_timeout = 5\n");
        assert_string_equal(c->state_dir, "/tmp/s");
        assert_string_equal(c->socket_path, "/tmp/s/c.sock");
        assert_string_equal(c->trusted_keys_dir, "/tmp/s/trust/keys");
        assert_int_equal(c->accel, SEAT_ACCEL_TCG);
        assert_true(c->allow_tcg);
        assert_true(c->allow_plain_http);
        assert_int_equal(c->max_image_bytes, 1024);
        assert_string_equal(c->admin_group, "wheel");
        assert_string_equal(c->libvirt_uri, "test:///default");
        assert_string_equal(c->ca_file, "/tmp/ca.pem");
        assert_int_equal(c->pull_low_speed_limit, 1024);
        assert_int_equal(c->pull_low_speed_time, 3);
        assert_int_equal(c->pull_connect_timeout, 5);
        _cleanup_(seat_config_freep) SeatConfig *ev = parse(
                "evidence_archive_dir = /mnt/ev\nevidence_max_bytes = 4096\nevidence_max_file_bytes = 512\nevidence_max_files = 7\n");
        assert_string_equal(ev->evidence_archive_dir, "/mnt/ev");
        assert_int_equal(ev->evidence_max_bytes, 4096);
        assert_int_equal(ev->evidence_max_file_bytes, 512);
        assert_int_equal(ev->evidence_max_files, 7);
        _cleanup_(seat_config_freep) SeatConfig *off = parse("inspect_images = false\n");
        assert_false(off->inspect_images);
        _cleanup_(seat_config_freep) SeatConfig *ex = parse("exec_max_timeout = 604800\n");
        assert_int_equal(ex->exec_max_timeout, 604800);
}

TEST(errors_name_the_line) {
        refused("allow_tcg = maybe\n", "test.conf:1: invalid value 'maybe' for 'allow_tcg'");
        refused("\nstate_dir = relative\n", "test.conf:2: invalid value");
        refused("alow_tcg = true\n", "unknown setting 'alow_tcg'");
        refused("just words\n", "expected 'key = value'");
        refused("max_image_bytes = -1\n", "max_image_bytes");
        refused("accel = xen\n", "accel");
        refused("inspect_images = sometimes\n", "invalid value 'sometimes' for 'inspect_images'");
        refused("pull_low_speed_time = 0\n", "invalid value '0' for 'pull_low_speed_time'");
        refused("pull_low_speed_time = 3s\n", "pull_low_speed_time");
        refused("pull_low_speed_limit = -1\n", "pull_low_speed_limit");
        refused("pull_connect_timeout = 601\n", "pull_connect_timeout");
        refused("ca_file = relative.pem\n", "ca_file");
        refused("evidence_archive_dir = archives\n", "evidence_archive_dir");
        refused("evidence_max_bytes = 0\n", "evidence_max_bytes");
        refused("evidence_max_files = 4001\n", "evidence_max_files");
        refused("exec_max_timeout = 0\n", "invalid value '0' for 'exec_max_timeout'");
        refused("exec_max_timeout = 604801\n", "exec_max_timeout");
        refused("ready_timeout = 0\n", "invalid value '0' for 'ready_timeout'");
        refused("ready_timeout = 86401\n", "ready_timeout");
        refused("admin_group = a\x1b[31m\n", "control character");
        char big[5000];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        refused(big, "longer than");
}

TEST(network) {
        _cleanup_(seat_config_freep) SeatConfig *d = parse("");
        assert_true(d->network);
        assert_string_equal(d->net_pool, "10.213.0.0/16");
        assert_int_equal(d->net_subnet_len, 30);
        assert_null(d->uplink);
        assert_true(d->masquerade);
        assert_int_equal(d->route_table, 5213);
        assert_string_equal(d->egress_dir, "/etc/seatd/egress");
        assert_string_equal(d->default_egress, "none");
        assert_int_equal(d->egress_check_interval, 10);
        assert_int_equal(d->deny_log_group, 5213);
        assert_int_equal(d->deny_summary_interval, 10);
        assert_true(d->tamper_resume);
        assert_true(d->forwarding_lockdown);
        _cleanup_(seat_config_freep) SeatConfig *c = parse(
                "network = true\nnet_pool = 10.50.0.0/24\nnet_subnet_len = 29\nuplink = sdw-up0\n"
                "uplink_gateway = 10.255.0.2\nmasquerade = false\nroute_table = 300\nroute_priority = 1000\n"
                "egress_dir = /tmp/eg\ndefault_egress = web_1\negress_check_interval = 2\ntamper_resume = false\n"
                "forwarding_lockdown = false\n");
        assert_string_equal(c->uplink, "sdw-up0");
        assert_string_equal(c->uplink_gateway, "10.255.0.2");
        assert_false(c->masquerade);
        assert_int_equal(c->route_table, 300);
        assert_string_equal(c->default_egress, "web_1");
        assert_false(c->tamper_resume);
        assert_false(c->forwarding_lockdown);
        refused("uplink = all\n", "uplink");
        refused("uplink = ../eth0\n", "uplink");
        refused("uplink = abcdefghijklmnop\n", "uplink");
        refused("uplink_gateway = 10.0.0\n", "uplink_gateway");
        refused("net_subnet_len = 24\n", "net_subnet_len");
        refused("default_egress = ../x\n", "default_egress");
        refused("egress_dir = rel\n", "egress_dir");
        refused("route_priority = 0\n", "route_priority");
        assert_string_equal(d->require_confinement, "dac");
        assert_true(d->require_seccomp);
        assert_string_equal(d->qemu_run_dir, "/run/libvirt/qemu");
        refused("require_confinement = some\n", "require_confinement");
        refused("qemu_run_dir = run\n", "qemu_run_dir");
        /* Per-seat QEMU uids (issue 13 #8): the default, a valid range, and each refusal. */
        uid_t first = 0, last = 0;
        assert_string_equal(d->qemu_uid_range, "70000-70999");
        assert_int_equal(seat_config_parse_uid_range(d->qemu_uid_range, &first, &last), 0);
        assert_int_equal(first, 70000);
        assert_int_equal(last, 70999);
        _cleanup_(seat_config_freep) SeatConfig *u = parse("qemu_uid_range = 200000-200002\n");
        assert_string_equal(u->qemu_uid_range, "200000-200002");
        refused("qemu_uid_range = 0-999\n", "qemu_uid_range");          /* root, system users */
        refused("qemu_uid_range = 70000-70001\n", "qemu_uid_range");    /* no room for the probe and a pair */
        refused("qemu_uid_range = 65000-66000\n", "qemu_uid_range");    /* nobody (65534) inside */
        refused("qemu_uid_range = 70000-200000\n", "qemu_uid_range");   /* over 65536 ids */
        refused("qemu_uid_range = 70000\n", "qemu_uid_range");
        refused("qemu_uid_range = 70000-\n", "qemu_uid_range");
        refused("qemu_uid_range = 70000-70999x\n", "qemu_uid_range");
        refused("qemu_uid_range = -5-70999\n", "qemu_uid_range");
        refused("qemu_uid_range = 70999-70000\n", "qemu_uid_range");
        refused("qemu_uid_range = 4294967294-4294967295\n", "qemu_uid_range");
}

TEST(pools) {
        _cleanup_(seat_config_freep) SeatConfig *d = parse("");
        assert_int_equal(d->pool_max_seats, 16);
        assert_int_equal(d->pool_max_memory_mib, 0);
        _cleanup_(seat_config_freep) SeatConfig *c = parse("pool_max_seats = 3\npool_max_memory_mib = 2048\n");
        assert_int_equal(c->pool_max_seats, 3);
        assert_int_equal(c->pool_max_memory_mib, 2048);
        refused("pool_max_seats = 0\n", "pool_max_seats");
        refused("pool_max_memory_mib = -1\n", "pool_max_memory_mib");
}

/* ---- the table of keys, and the documents held to it ---- */

static bool has_line_starting(const char *text, const char *start) {
        size_t n = strlen(start);
        for (const char *l = text; l; l = strchr(l, '\n')) {
                if (*l == '\n')
                        l++;
                if (!strncmp(l, start, n))
                        return true;
        }
        return false;
}

TEST(keys) {
        _cleanup_(seat_config_freep) SeatConfig *d = parse("");
        _cleanup_free_ char *all = NULL;
        size_t n = 0;
        for (const char *key; (key = seat_config_key(n)); n++) {
                _cleanup_free_ char *v = NULL, *line = NULL;
                for (size_t j = 0; j < n; j++)
                        if (!strcmp(seat_config_key(j), key))
                                fail_msg("'%s' is in the table twice", key);
                /* Each key is printed, and what is printed for it reads back the same. */
                assert_int_equal(seat_config_format(d, key, &v), 0);
                if (v[0] == '(')
                        continue; /* unset: what that means, not a value */
                assert_true(asprintf(&line, "%s = %s\n", key, v) > 0);
                _cleanup_(seat_config_freep) SeatConfig *again = parse(line);
                _cleanup_free_ char *v2 = NULL;
                assert_int_equal(seat_config_format(again, key, &v2), 0);
                assert_string_equal(v, v2);
        }
        assert_int_equal(seat_config_format(d, "no_such_key", &all), -ENOKEY);
        /* --check-config prints every key */
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        assert_non_null(f);
        assert_int_equal(seat_config_print(d, f), 0);
        fclose(f);
        all = out;
        for (size_t i = 0; seat_config_key(i); i++) {
                _cleanup_free_ char *head = NULL;
                assert_true(asprintf(&head, "%s = ", seat_config_key(i)) > 0);
                if (!has_line_starting(all, head))
                        fail_msg("--check-config does not print '%s'", seat_config_key(i));
        }
}

TEST(derived_defaults) {
        _cleanup_(seat_config_freep) SeatConfig *c = parse("state_dir = /srv/s\nsocket_path = /run/x/ctl.sock\n");
        assert_string_equal(c->participant_socket_path, "/run/x/participant.sock");
        assert_string_equal(c->facilitator_socket_path, "/run/x/facilitator.sock");
        assert_string_equal(c->trusted_keys_dir, "/srv/s/trust/keys");
        assert_string_equal(c->host_key, "/srv/s/trust/host.key");
        assert_string_equal(c->evidence_archive_dir, "/srv/s/evidence/archives");
        _cleanup_(seat_config_freep) SeatConfig *d = parse("");
        assert_int_equal(d->participant_max_connections, 16);
        assert_int_equal(d->participant_idle_timeout, 600);
        assert_int_equal(d->disk_reserve_bytes, 1ULL << 30);
        _cleanup_(seat_config_freep) SeatConfig *z = parse("disk_reserve_bytes = 0\n");
        assert_int_equal(z->disk_reserve_bytes, 0);
        refused("socket_path = /run/x/participant.sock\n", "must be a path of its own");
        refused("participant_max_connections = 0\n", "participant_max_connections");
        refused("participant_idle_timeout = 86401\n", "participant_idle_timeout");
}

TEST(docs_list_every_key) {
        _cleanup_free_ char *md = unit_read_source("docs/seatd.conf.md"), *man = unit_read_source("docs/man/seatd.conf.5.scd");
        if (!md || !man)
                skip(); /* SEATD_SOURCE_DIR unset: run by meson test */
        for (size_t i = 0; seat_config_key(i); i++) {
                _cleanup_free_ char *row = NULL, *entry = NULL;
                assert_true(asprintf(&row, "| `%s` |", seat_config_key(i)) > 0);
                assert_true(asprintf(&entry, "*%s* (default", seat_config_key(i)) > 0);
                if (!has_line_starting(md, row))
                        fail_msg("docs/seatd.conf.md has no row for '%s'", seat_config_key(i));
                if (!has_line_starting(man, entry))
                        fail_msg("docs/man/seatd.conf.5.scd has no entry for '%s'", seat_config_key(i));
        }
}

/* debian/conf/seatd.conf lists every key commented out with its default, and an
 * example for those unset by default: uncommented, the whole file is a valid config. */
TEST(debian_conf_lists_every_key) {
        _cleanup_free_ char *deb = unit_read_source("debian/conf/seatd.conf");
        if (!deb)
                skip();
        _cleanup_(seat_config_freep) SeatConfig *d = parse("");
        for (size_t i = 0; seat_config_key(i); i++) {
                const char *key = seat_config_key(i);
                _cleanup_free_ char *v = NULL, *start = NULL, *want = NULL;
                assert_int_equal(seat_config_format(d, key, &v), 0);
                assert_true(asprintf(&start, "#%s = ", key) > 0);
                assert_true(asprintf(&want, "#%s = %s\n", key, v) > 0);
                if (!has_line_starting(deb, start))
                        fail_msg("debian/conf/seatd.conf does not list '%s'", key);
                if (v[0] != '(' && !has_line_starting(deb, want))
                        fail_msg("debian/conf/seatd.conf does not give '%s' its default '%s'", key, v);
        }
        /* Uncommented: every "#key = value" line becomes "key = value". */
        for (char *l = deb; l; l = strchr(l, '\n')) {
                if (*l == '\n')
                        l++;
                if (l[0] == '#' && l[1] >= 'a' && l[1] <= 'z' && strstr(l, " = ") &&
                    strstr(l, " = ") < (strchr(l, '\n') ? strchr(l, '\n') : l + strlen(l)))
                        l[0] = ' ';
        }
        _cleanup_(seat_config_freep) SeatConfig *all = parse(deb);
        assert_non_null(all);
}

TEST_MAIN("seatd-config")
