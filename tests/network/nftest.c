/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nftest: drives network/nft.c and network/nftwatch.c for one seat, for tests (egress.sh)
 * and for the integrator's VM version of them.
 *
 *   nftest install|verify|remove|denied|counters|watch --seat S --bridge B --uplink U --guest IP
 *          [--host IP] [--mac MAC] [--masquerade] [--profile FILE] [--timeout-ms N]
 *          [--interval-ms N] [--log-group N] [--count N]
 *
 * --host is the host's address on the bridge (needed by "dhcp on", "dns host" and "allow
 * name"); --name-timeout S sets the names' set timeout (default NFT_NAME_SET_TIMEOUT_S);
 * --log-group N: the deny rules log to nfnetlink_log group N (0, default: the kernel log).
 *
 * install  installs, reads back, compares; exit 0 or 1 with the reason on stderr
 * verify   prints ok|changed|missing; exit 0 only for ok
 * remove   removes the seat's chains
 * denied   prints the packets counted by the seat's drop rules
 * counters prints what status shows: each rule of the seat as nftables writes it, with
 *          its counter, as JSON
 * names    prints what status shows of the names: their set members and counters, as JSON
 * dnsmasq  prints the options libvirt's dnsmasq gets for the profile's names
 *          (netdef_dnsmasq_options()), one a line: a dnsmasq --conf-file
 * dnsguard prints the seat's DNS guard's arguments (netdef_guard_argv()), one a line
 * watch    prints "ready", then waits (netlink + a periodic check every --interval-ms) for
 *          the seat's rules to change and prints
 *          "detected seat=S state=changed|missing via=netlink|periodic at_ms=<CLOCK_REALTIME ms>";
 *          exit 0, or 1 after --timeout-ms without a detection
 * nflog    binds nfnetlink_log group --log-group (network/nflog.c), prints "ready", then
 *          one line per denied packet of any seat it reads ("seat=S family=ipv4|ipv6|other
 *          dst=ADDR proto=N dport=N") until --count of them came (exit 0) or --timeout-ms
 *          passed (exit 1)
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <poll.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "network/netdef.h"
#include "network/nflog.h"
#include "network/nft.h"
#include "network/nftwatch.h"

typedef struct Options {
        const char *verb, *profile_path;
        NftSeatSpec spec;
        int64_t timeout_ms, interval_ms;
        long count;
} Options;

typedef struct WatchState {
        bool detected;
        const char *via;
} WatchState;

static int parse_mac(const char *s, uint8_t mac[6]) {
        unsigned v[6];
        char end;
        if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &end) != 6)
                return -EINVAL;
        for (int i = 0; i < 6; i++)
                mac[i] = (uint8_t) v[i];
        return 0;
}

static int parse_args(int argc, char *argv[], Options *o) {
        static const struct option opts[] = {
                { "seat", required_argument, NULL, 's' },     { "bridge", required_argument, NULL, 'b' },
                { "uplink", required_argument, NULL, 'u' },   { "guest", required_argument, NULL, 'g' },
                { "mac", required_argument, NULL, 'm' },      { "masquerade", no_argument, NULL, 'M' },
                { "profile", required_argument, NULL, 'p' },  { "timeout-ms", required_argument, NULL, 't' },
                { "interval-ms", required_argument, NULL, 'i' }, { "host", required_argument, NULL, 'H' },
                { "name-timeout", required_argument, NULL, 'N' }, { "log-group", required_argument, NULL, 'G' },
                { "count", required_argument, NULL, 'C' }, {},
        };
        int c;

        *o = (Options) { .timeout_ms = 10000, .interval_ms = 1000, .count = 1 };
        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 's': o->spec.seat = optarg; break;
                case 'b': o->spec.bridge = optarg; break;
                case 'u': o->spec.uplink = optarg; break;
                case 'g':
                        if (inet_pton(AF_INET, optarg, &o->spec.guest) != 1)
                                return -EINVAL;
                        break;
                case 'H':
                        if (inet_pton(AF_INET, optarg, &o->spec.host) != 1)
                                return -EINVAL;
                        break;
                case 'm':
                        if (parse_mac(optarg, o->spec.guest_mac) < 0)
                                return -EINVAL;
                        o->spec.has_mac = true;
                        break;
                case 'M': o->spec.masquerade = true; break;
                case 'p': o->profile_path = optarg; break;
                case 't': o->timeout_ms = strtoll(optarg, NULL, 10); break;
                case 'i': o->interval_ms = strtoll(optarg, NULL, 10); break;
                case 'G': o->spec.log_group = (uint16_t) strtoul(optarg, NULL, 10); break;
                case 'C': o->count = strtol(optarg, NULL, 10); break;
                case 'N': o->spec.name_timeout_s = (unsigned) strtoul(optarg, NULL, 10); break;
                default: return -EINVAL;
                }
        if (optind != argc - 1 || o->timeout_ms <= 0 || o->interval_ms <= 0)
                return -EINVAL;
        o->verb = argv[optind];
        return 0;
}

static void on_change(const NftSeatSpec *spec, NftSeatState state, void *userdata) {
        WatchState *w = userdata;
        if (w->detected)
                return;
        w->detected = true;
        printf("detected seat=%s state=%s via=%s at_ms=%lld\n", spec->seat, nft_seat_state_to_string(state), w->via,
               (long long) now_realtime_ms());
        fflush(stdout);
}

static int do_watch(const Options *o, SeatError **err) {
        _cleanup_nft_monitor_ NftMonitor *m = NULL;
        WatchState w = { .via = "netlink" };
        int r = nft_monitor_new(on_change, &w, &m, err);
        if (r < 0)
                return r;
        r = nft_monitor_add(m, &o->spec);
        if (r < 0)
                return seat_error_set(err, -r, "cannot watch seat '%s'", o->spec.seat);
        /* The rules must be intact when the watch starts. */
        w.via = "initial";
        r = nft_monitor_check(m, err);
        if (r != 0)
                return r < 0 ? r : seat_error_set(err, EPROTO, "seat '%s' is not intact when the watch starts", o->spec.seat);
        printf("ready\n");
        fflush(stdout);

        int64_t deadline = now_monotonic_ms() + o->timeout_ms, next_check = now_monotonic_ms() + o->interval_ms;
        while (!w.detected) {
                int64_t now = now_monotonic_ms();
                if (now >= deadline)
                        return seat_error_set(err, ETIMEDOUT, "no change detected within %lld ms", (long long) o->timeout_ms);
                struct pollfd p = { .fd = nft_monitor_fd(m), .events = POLLIN };
                int n = poll(&p, 1, (int) MIN(deadline, next_check) - (int) now);
                if (n < 0 && errno != EINTR)
                        return seat_error_set(err, errno, "poll: %m");
                if (n > 0) {
                        w.via = "netlink";
                        r = nft_monitor_process(m, err);
                } else if (now_monotonic_ms() >= next_check) {
                        w.via = "periodic";
                        r = nft_monitor_check(m, err);
                        next_check = now_monotonic_ms() + o->interval_ms;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static void print_lines(char *const *l) {
        for (; *l; l++)
                printf("%s\n", *l);
}

static int print_dnsmasq(const Options *o, SeatError **err) {
        _cleanup_strv_free_ char **l = NULL;
        NetSeat ns = { .names = o->spec.profile, .host = o->spec.host };
        (void) snprintf(ns.bridge, sizeof(ns.bridge), "%s", o->spec.bridge ? o->spec.bridge : "");
        int r = netdef_dnsmasq_options(&ns, &l);
        if (r < 0)
                return seat_error_set(err, -r, "cannot make the resolver's options");
        print_lines(l);
        return 0;
}

/* The DNS guard's arguments for the seat (netdef_guard_argv()), one a line. */
static int print_dnsguard(const Options *o, SeatError **err) {
        _cleanup_strv_free_ char **l = NULL;
        NetSeat ns = { .names = o->spec.profile, .host = o->spec.host };
        int r = netdef_guard_argv(&ns, &l);
        if (r < 0)
                return seat_error_set(err, -r, "cannot make the DNS guard's arguments (a profile with names?)");
        print_lines(l);
        return 0;
}

typedef struct NflogState {
        long seen;
} NflogState;

static void on_nflog(const NflogPacket *p, void *userdata) {
        NflogState *st = userdata;
        char dst[INET6_ADDRSTRLEN] = "-";
        if (p->family != AF_UNSPEC)
                (void) inet_ntop(p->family, p->daddr, dst, sizeof(dst));
        printf("seat=%s family=%s dst=%s proto=%u dport=%u\n", p->seat,
               p->family == AF_INET ? "ipv4" : p->family == AF_INET6 ? "ipv6" : "other", dst, p->proto, p->dport);
        fflush(stdout);
        st->seen++;
}

static int do_nflog(const Options *o, SeatError **err) {
        _cleanup_close_ int fd = -EBADF;
        NflogState st = {};
        int r = nflog_open(o->spec.log_group, 200, &fd);
        if (r < 0)
                return seat_error_set(err, -r, "cannot bind nfnetlink_log group %u: %s", o->spec.log_group, strerror(-r));
        printf("ready\n");
        fflush(stdout);
        _cleanup_free_ uint8_t *buf = malloc(NFLOG_RECV_BUF_SIZE);
        if (!buf)
                return -ENOMEM;
        int64_t deadline = now_monotonic_ms() + o->timeout_ms;
        while (st.seen < o->count) {
                if (now_monotonic_ms() >= deadline)
                        return seat_error_set(err, ETIMEDOUT, "%ld of %ld denied packets within %lld ms", st.seen, o->count,
                                              (long long) o->timeout_ms);
                r = nflog_receive(fd, buf, NFLOG_RECV_BUF_SIZE, on_nflog, &st);
                if (r < 0 && r != -ETIMEDOUT && r != -ENOBUFS)
                        return seat_error_set(err, -r, "reading group %u: %s", o->spec.log_group, strerror(-r));
        }
        return 0;
}

static int run(const Options *o, SeatError **err) {
        _cleanup_nft_context_ NftContext *c = NULL;
        if (strcmp(o->verb, "dnsmasq") == 0)
                return print_dnsmasq(o, err);
        if (strcmp(o->verb, "dnsguard") == 0)
                return print_dnsguard(o, err);
        if (strcmp(o->verb, "nflog") == 0)
                return do_nflog(o, err);
        int r = nft_context_new(&c, err);
        if (r < 0)
                return r;
        if (strcmp(o->verb, "remove") == 0)
                return nft_seat_remove(c, o->spec.bridge, err);
        if (strcmp(o->verb, "denied") == 0) {
                uint64_t n;
                r = nft_seat_denied(c, o->spec.bridge, &n, err);
                if (r >= 0)
                        printf("%llu\n", (unsigned long long) n);
                return r;
        }
        if (strcmp(o->verb, "counters") == 0) {
                _cleanup_json_ json_object *j = NULL;
                r = nft_seat_counters(c, o->spec.bridge, &j, err);
                if (r >= 0)
                        printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
                return r;
        }
        if (strcmp(o->verb, "names") == 0) {
                _cleanup_json_ json_object *j = NULL;
                r = nft_seat_names(c, &o->spec, &j, err);
                if (r >= 0)
                        printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
                return r;
        }
        if (strcmp(o->verb, "install") == 0)
                return nft_seat_install(c, &o->spec, err);
        if (strcmp(o->verb, "verify") == 0) {
                NftSeatState s;
                r = nft_seat_verify(c, &o->spec, &s, err);
                if (r < 0)
                        return r;
                printf("%s\n", nft_seat_state_to_string(s));
                return s == NFT_SEAT_OK ? 0 : -EPROTO;
        }
        if (strcmp(o->verb, "watch") == 0)
                return do_watch(o, err);
        return seat_error_set(err, EINVAL, "unknown verb '%s'", o->verb);
}

int main(int argc, char *argv[]) {
        _cleanup_egress_profile_ EgressProfile *profile = NULL;
        _cleanup_error_ SeatError *err = NULL;
        Options o;

        if (parse_args(argc, argv, &o) < 0) {
                fprintf(stderr, "usage: nftest install|verify|remove|denied|watch --seat S --bridge B --uplink U "
                                "--guest IP [--host IP] [--mac MAC] [--masquerade] [--profile FILE] [--timeout-ms N] "
                                "[--interval-ms N] [--log-group N] [--count N]\n");
                return 2;
        }
        /* nflog reads every seat's log: no seat, no profile */
        int r = strcmp(o.verb, "nflog") == 0 ? 0
                                               : egress_profile_load(o.profile_path ? o.profile_path : "/dev/null", &profile, &err);
        if (r >= 0) {
                o.spec.profile = profile;
                r = run(&o, &err);
        }
        if (r < 0) {
                fprintf(stderr, "nftest %s: %s\n", o.verb, err ? err->message : strerror(-r));
                return 1;
        }
        return 0;
}
