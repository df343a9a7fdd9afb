/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonframe.h"
#include "common/log.h"
#include "nft-internal.h"

/* ---- names ---------------------------------------------------------------------- */

/* Interface and seat names share one alphabet (ASCII letters, digits, '-', '_'); only an
 * interface name may also hold a '.'. */
static bool name_valid(const char *s, size_t max, bool dot) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > max)
                return false;
        for (const char *c = s; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      *c == '-' || *c == '_' || (dot && *c == '.')))
                        return false;
        return true;
}

bool nft_ifname_valid(const char *s) {
        return name_valid(s, NFT_IFNAME_MAX, true);
}

static bool seat_name_valid(const char *s) {
        return name_valid(s, NFT_SEAT_NAME_MAX, false);
}

const char *const nft_chain_prefix[_CHAIN_MAX] = {
        [CHAIN_FWD] = "fwd-", [CHAIN_IN] = "in-",  [CHAIN_NAT] = "nat-",
        [CHAIN_OUT] = "out-", [CHAIN_TO] = "to-",  [CHAIN_HOST] = "host-", [CHAIN_ING] = "ing-",
};

bool nft_chain_is_base(ChainKind k) {
        return k == CHAIN_FWD || k == CHAIN_IN || k == CHAIN_NAT || k == CHAIN_ING;
}

void nft_chain_name(ChainKind k, const char *bridge, char buf[static CHAIN_NAME_MAX + 1]) {
        (void) snprintf(buf, CHAIN_NAME_MAX + 1, "%s%s", nft_chain_prefix[k], bridge);
}

/* Which of the seat's chains a listed chain name is, or -1. */
int nft_chain_kind_of(const char *name, const char *bridge) {
        char buf[CHAIN_NAME_MAX + 1];
        for (int k = 0; k < _CHAIN_MAX; k++) {
                nft_chain_name((ChainKind) k, bridge, buf);
                if (strcmp(buf, name) == 0)
                        return k;
        }
        return -1;
}

static bool profile_serves_dns(const EgressProfile *p) {
        return p->dns_host || egress_profile_has_names(p);
}

int nft_set_kind_of(const char *name, const char *bridge, int *ret_index) {
        if (!name || name[0] != 'n' || (name[1] != '4' && name[1] != '6'))
                return -1;
        const char *p = name + 2;
        size_t digits = strspn(p, "0123456789");
        if (digits == 0 || digits > 4 || p[digits] != '-' || strcmp(p + digits + 1, bridge) != 0)
                return -1;
        *ret_index = atoi(p);
        return name[1] == '6' ? AF_INET6 : AF_INET;
}

int nft_seat_spec_validate(const NftSeatSpec *spec, SeatError **ret_error) {
        if (!seat_name_valid(spec->seat))
                return seat_error_set(ret_error, EINVAL, "invalid seat name for the egress filter");
        if (!nft_ifname_valid(spec->bridge))
                return seat_error_set(ret_error, EINVAL, "invalid bridge name for seat '%s'", spec->seat);
        if (spec->uplink && !nft_ifname_valid(spec->uplink))
                return seat_error_set(ret_error, EINVAL, "invalid uplink name for seat '%s'", spec->seat);
        if (!spec->uplink && spec->masquerade)
                return seat_error_set(ret_error, EINVAL, "seat '%s': masquerade needs an uplink", spec->seat);
        if (spec->uplink && strcmp(spec->uplink, spec->bridge) == 0)
                return seat_error_set(ret_error, EINVAL, "seat '%s': the uplink cannot be the seat's bridge '%s'",
                                      spec->seat, spec->bridge);
        if (spec->guest.s_addr == htonl(INADDR_ANY))
                return seat_error_set(ret_error, EINVAL, "seat '%s' has no guest address", spec->seat);
        if (!spec->profile)
                return seat_error_set(ret_error, EINVAL, "seat '%s' has no egress profile", spec->seat);
        if ((spec->profile->dhcp || profile_serves_dns(spec->profile)) &&
            (spec->host.s_addr == htonl(INADDR_ANY) || spec->host.s_addr == htonl(INADDR_BROADCAST) ||
             spec->host.s_addr == spec->guest.s_addr))
                return seat_error_set(ret_error, EINVAL,
                                      "seat '%s': 'dhcp on' and 'dns host' need the host's address on the bridge", spec->seat);
        if (spec->name_timeout_s > 86400)
                return seat_error_set(ret_error, EINVAL, "seat '%s': a name's set timeout is at most a day", spec->seat);
        if (egress_profile_has_names(spec->profile)) {
                /* The seat's resolver forwards the allowed names to the profile's servers,
                 * and only them: "dns host" would forward every name to the host's. */
                if (spec->profile->dns_host)
                        return seat_error_set(ret_error, EINVAL,
                                              "seat '%s': 'allow name' and 'dns host' cannot be combined: with names the seat's resolver answers only them (name the upstream with 'dns ADDRESS')",
                                              spec->seat);
                if (spec->profile->n_dns == 0)
                        return seat_error_set(ret_error, EINVAL,
                                              "seat '%s': 'allow name' needs a 'dns ADDRESS' line: the server the seat's resolver asks",
                                              spec->seat);
                if (spec->host.s_addr == htonl(INADDR_ANY) || spec->host.s_addr == spec->guest.s_addr)
                        return seat_error_set(ret_error, EINVAL,
                                              "seat '%s': 'allow name' needs the host's address on the bridge (the seat's resolver)",
                                              spec->seat);
        }
        return 0;
}

const char *const nft_name_refused_ipv4[] = {
        "10.0.0.0/8", "100.64.0.0/10", "172.16.0.0/12", "192.168.0.0/16", NULL,
};
/* IPv6: unique-local (fc00::/7, where clouds put their IPv6 metadata service,
 * fd00:ec2::254) and the deprecated site-local fec0::/10; the unspecified address; and
 * prefixes that carry an IPv4 address, so that an AAAA answer cannot smuggle a private or
 * metadata IPv4 destination past the IPv4 lists: IPv4-mapped (::ffff:0:0/96) and the
 * NAT64 prefixes (64:ff9b::/96, 64:ff9b:1::/48). Written as nft prints them ("::ffff:
 * 0.0.0.0"), since the rules are read back and compared as text. */
const char *const nft_name_refused_ipv6[] = {
        "::", "::ffff:0.0.0.0/96", "64:ff9b::/96", "64:ff9b:1::/48", "fc00::/7", "fec0::/10", NULL,
};

void nft_name_set_name(int family, int index, const char *bridge, char buf[static NFT_SET_NAME_MAX + 1]) {
        (void) snprintf(buf, NFT_SET_NAME_MAX + 1, "n%c%d-%s", family == AF_INET6 ? '6' : '4', index, bridge);
}

/* ---- JSON building blocks (nft's canonical output form) ---------------------------- */

json_object *nft_j_obj1(const char *key, json_object *val) {
        json_object *o = json_object_new_object();
        if (!o) {
                json_object_put(val);
                return NULL;
        }
        if (json_object_object_add(o, key, val) < 0) {
                json_object_put(o);
                json_object_put(val);
                return NULL;
        }
        return o;
}

json_object *nft_j_str(const char *s) {
        return json_object_new_string(s);
}

static json_object *j_payload(const char *proto, const char *field) {
        json_object *p = json_object_new_object();
        if (!p)
                return NULL;
        json_object_object_add(p, "protocol", nft_j_str(proto));
        json_object_object_add(p, "field", nft_j_str(field));
        return nft_j_obj1("payload", p);
}

static json_object *j_keyed(const char *what, const char *key) {
        return nft_j_obj1(what, nft_j_obj1("key", nft_j_str(key)));
}

static json_object *j_match(const char *op, json_object *left, json_object *right) {
        json_object *m = json_object_new_object();
        if (!m || !left || !right) {
                json_object_put(m);
                json_object_put(left);
                json_object_put(right);
                return NULL;
        }
        json_object_object_add(m, "op", nft_j_str(op));
        json_object_object_add(m, "left", left);
        json_object_object_add(m, "right", right);
        return nft_j_obj1("match", m);
}

static json_object *j_addr(const EgressAddr *a) {
        char host[INET6_ADDRSTRLEN];
        if (!inet_ntop(a->family, a->addr, host, sizeof(host)))
                return NULL;
        if (a->prefixlen == (a->family == AF_INET ? 32u : 128u))
                return nft_j_str(host);
        json_object *p = json_object_new_object();
        if (!p)
                return NULL;
        json_object_object_add(p, "addr", nft_j_str(host));
        json_object_object_add(p, "len", json_object_new_int((int) a->prefixlen));
        return nft_j_obj1("prefix", p);
}

static json_object *j_addr_set(const char *const *list) {
        json_object *arr = json_object_new_array();
        for (; arr && *list; list++) {
                EgressAddr a;
                if (egress_addr_parse(*list, &a) < 0 || json_object_array_add(arr, j_addr(&a)) < 0) {
                        json_object_put(arr);
                        return NULL;
                }
        }
        return nft_j_obj1("set", arr);
}

static json_object *j_ports(uint16_t lo, uint16_t hi) {
        if (lo == hi)
                return json_object_new_int(lo);
        json_object *r = json_object_new_array();
        if (!r)
                return NULL;
        json_object_array_add(r, json_object_new_int(lo));
        json_object_array_add(r, json_object_new_int(hi));
        return nft_j_obj1("range", r);
}

static json_object *j_ct_state(const char *a, const char *b) {
        json_object *r = json_object_new_array();
        if (!r)
                return NULL;
        json_object_array_add(r, nft_j_str(a));
        json_object_array_add(r, nft_j_str(b));
        return j_match("in", j_keyed("ct", "state"), r);
}

static json_object *j_verdict(const char *v) {
        return nft_j_obj1(v, NULL);
}

static json_object *j_counter(void) {
        return nft_j_obj1("counter", NULL);
}

static json_object *j_mac(const uint8_t mac[6]) {
        char buf[18];
        (void) snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                        mac[4], mac[5]);
        return nft_j_str(buf);
}

/* A rule is an array of statements; any NULL among them (allocation failure) fails the
 * whole rule, so builders can nest calls freely. Ends with a counter and the verdict. */
static int add_rule(json_object *rules, json_object *const *stmts, size_t n, json_object *verdict) {
        json_object *expr = json_object_new_array();
        bool ok = expr && verdict;
        for (size_t i = 0; i < n; i++) {
                if (!stmts[i] || !ok) {
                        ok = false;
                        json_object_put(stmts[i]);
                        continue;
                }
                json_object_array_add(expr, stmts[i]);
        }
        if (ok) {
                json_object *c = j_counter();
                ok = c && json_object_array_add(expr, c) == 0 && json_object_array_add(expr, verdict) == 0;
                verdict = NULL;
        }
        json_object_put(verdict);
        if (!ok || json_object_array_add(rules, expr) < 0) {
                json_object_put(expr);
                return -ENOMEM;
        }
        return 0;
}

#define RULE(rules, verdict, ...)                                                               \
        ({                                                                                     \
                json_object *_s_[] = { __VA_ARGS__ };                                         \
                add_rule((rules), _s_, ELEMENTSOF(_s_), (verdict));                           \
        })
#define RULE0(rules, verdict) add_rule((rules), NULL, 0, (verdict))

/* As nft lists it back: {"log": {"prefix": P, "group": G, "snaplen": S}}. */
static json_object *j_log(const NftSeatSpec *spec) {
        char prefix[sizeof(NFT_LOG_PREFIX) + NFT_SEAT_NAME_MAX + 2];
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        (void) snprintf(prefix, sizeof(prefix), NFT_LOG_PREFIX "%s ", spec->seat);
        json_object_object_add(o, "prefix", nft_j_str(prefix));
        if (spec->log_group > 0) {
                json_object_object_add(o, "group", json_object_new_int(spec->log_group));
                json_object_object_add(o, "snaplen", json_object_new_int(NFT_LOG_SNAPLEN));
        }
        return nft_j_obj1("log", o);
}

/* limit; counter; log — then a counted drop: the tail of every deny path. */
static int add_deny_tail(json_object *rules, const NftSeatSpec *spec) {
        json_object *lim = json_object_new_object();
        if (!lim)
                return -ENOMEM;
        json_object_object_add(lim, "rate", json_object_new_int(NFT_LOG_RATE));
        json_object_object_add(lim, "burst", json_object_new_int(NFT_LOG_BURST));
        json_object_object_add(lim, "per", nft_j_str("second"));
        int r = RULE(rules, j_log(spec), nft_j_obj1("limit", lim));
        if (r < 0)
                return r;
        return RULE0(rules, j_verdict("drop"));
}

static json_object *j_ipv4(struct in_addr a) {
        char buf[INET_ADDRSTRLEN];
        if (!inet_ntop(AF_INET, &a, buf, sizeof(buf)))
                return NULL;
        return nft_j_str(buf);
}

static json_object *j_guest_ip(const NftSeatSpec *spec) {
        return j_ipv4(spec->guest);
}

static json_object *j_host_ip(const NftSeatSpec *spec) {
        return j_ipv4(spec->host);
}

/* An anonymous set of two IPv4 addresses, in the order nft lists them (ascending). */
static json_object *j_ipv4_pair(struct in_addr a, struct in_addr b) {
        json_object *arr = json_object_new_array();
        bool swap = ntohl(a.s_addr) > ntohl(b.s_addr);
        if (!arr)
                return NULL;
        if (json_object_array_add(arr, j_ipv4(swap ? b : a)) < 0 || json_object_array_add(arr, j_ipv4(swap ? a : b)) < 0) {
                json_object_put(arr);
                return NULL;
        }
        return nft_j_obj1("set", arr);
}

static int add_mac_rule(json_object *rules, const NftSeatSpec *spec) {
        if (!spec->has_mac)
                return 0;
        return RULE(rules, j_verdict("drop"), j_match("!=", j_payload("ether", "saddr"), j_mac(spec->guest_mac)));
}

static int add_ip_source_rule(json_object *rules, const NftSeatSpec *spec) {
        return RULE(rules, j_verdict("drop"), j_match("!=", j_payload("ip", "saddr"), j_guest_ip(spec)));
}

static int add_spoof_rules(json_object *rules, const NftSeatSpec *spec) {
        int r = add_mac_rule(rules, spec);
        return r < 0 ? r : add_ip_source_rule(rules, spec);
}

static int add_allow_rule(json_object *rules, const EgressRule *er) {
        const bool v4 = er->dest.family == AF_INET;
        json_object *dst = j_match("==", j_payload(v4 ? "ip" : "ip6", "daddr"), j_addr(&er->dest));

        if (er->proto == EGRESS_PROTO_ICMP)
                return RULE(rules, j_verdict("accept"), dst,
                            j_match("==", j_keyed("meta", "l4proto"), nft_j_str(v4 ? "icmp" : "ipv6-icmp")));
        return RULE(rules, j_verdict("accept"), dst,
                    j_match("==", j_payload(egress_proto_to_string(er->proto), "dport"),
                            j_ports(er->port_lo, er->port_hi)));
}

/* "allow name": the name's set, never one of the refused ranges (a member there was put in
 * by someone else than the resolver, which turns such answers into NXDOMAIN), the ports. */
static int add_name_rules(json_object *rules, const NftSeatSpec *spec, size_t i) {
        const EgressRule *er = &spec->profile->rules[i];
        int index = egress_profile_name_index(spec->profile, i), r = 0;
        for (int v6 = 0; v6 <= (spec->profile->ipv6 ? 1 : 0) && r >= 0; v6++) {
                char set[NFT_SET_NAME_MAX + 2];
                set[0] = '@';
                nft_name_set_name(v6 ? AF_INET6 : AF_INET, index, spec->bridge, set + 1);
                const char *ip = v6 ? "ip6" : "ip";
                r = RULE(rules, j_verdict("accept"), j_match("==", j_payload(ip, "daddr"), nft_j_str(set)),
                         j_match("!=", j_payload(ip, "daddr"),
                                 j_addr_set(v6 ? nft_name_refused_ipv6 : nft_name_refused_ipv4)),
                         j_match("==", j_payload(egress_proto_to_string(er->proto), "dport"),
                                 j_ports(er->port_lo, er->port_hi)));
        }
        return r;
}

static int add_dns_rules(json_object *rules, const EgressAddr *dns) {
        int r = 0;
        for (EgressProto p = EGRESS_PROTO_TCP; p <= EGRESS_PROTO_UDP && r >= 0; p++) {
                EgressRule er = { .proto = p, .dest = *dns, .port_lo = 53, .port_hi = 53 };
                r = add_allow_rule(rules, &er);
        }
        return r;
}

/* out-B: everything the guest sends that the host would forward. */
static int build_out(json_object *rules, const NftSeatSpec *spec) {
        const EgressProfile *p = spec->profile;
        int r = add_spoof_rules(rules, spec);
        if (r >= 0 && !p->ipv6)
                r = RULE(rules, j_verdict("drop"), j_match("==", j_keyed("meta", "nfproto"), nft_j_str("ipv6")));
        /* Only through the uplink: never to another seat's bridge or any other interface.
         * Without an uplink nothing is forwarded at all. */
        if (r >= 0 && spec->uplink)
                r = RULE(rules, j_verdict("drop"), j_match("!=", j_keyed("meta", "oifname"), nft_j_str(spec->uplink)));
        else if (r >= 0)
                r = RULE0(rules, j_verdict("drop"));
        if (r >= 0)
                r = RULE(rules, j_verdict("drop"),
                         j_match("==", j_payload("ip", "daddr"), j_addr_set(egress_blocked_ipv4)));
        if (r >= 0 && p->ipv6)
                r = RULE(rules, j_verdict("drop"),
                         j_match("==", j_payload("ip6", "daddr"), j_addr_set(egress_blocked_ipv6)));
        if (r >= 0)
                r = RULE(rules, j_verdict("accept"), j_ct_state("established", "related"));
        /* With names the "dns" servers are the seat resolver's upstreams: the guest asks
         * its resolver (host-B), never them. */
        for (size_t i = 0; i < p->n_dns && r >= 0 && !egress_profile_has_names(p); i++)
                r = add_dns_rules(rules, &p->dns[i]);
        for (size_t i = 0; i < p->n_rules && r >= 0; i++)
                r = p->rules[i].name ? add_name_rules(rules, spec, i) : add_allow_rule(rules, &p->rules[i]);
        return r < 0 ? r : add_deny_tail(rules, spec);
}

/* to-B: forwarded towards the guest: replies only. */
static int build_to(json_object *rules, const NftSeatSpec *spec) {
        int r = RULE(rules, j_verdict("accept"), j_ct_state("established", "related"));
        return r < 0 ? r : add_deny_tail(rules, spec);
}

/* host-B: the guest talking to the host itself. */
static int build_host(json_object *rules, const NftSeatSpec *spec) {
        const EgressProfile *p = spec->profile;
        const struct in_addr any = { .s_addr = htonl(INADDR_ANY) }, bcast = { .s_addr = htonl(INADDR_BROADCAST) };
        /* The MAC first: nothing, DHCP included, is accepted from another one. */
        int r = add_mac_rule(rules, spec);
        /* DHCP comes from 0.0.0.0 until the guest has its address (then from it, to renew),
         * so it goes before the IP source check, and is accepted from those two sources only,
         * to the broadcast address or the host's address on this bridge. */
        if (r >= 0 && p->dhcp)
                r = RULE(rules, j_verdict("accept"), j_match("==", j_payload("ip", "saddr"), j_ipv4_pair(any, spec->guest)),
                         j_match("==", j_payload("ip", "daddr"), j_ipv4_pair(spec->host, bcast)),
                         j_match("==", j_payload("udp", "sport"), json_object_new_int(68)),
                         j_match("==", j_payload("udp", "dport"), json_object_new_int(67)));
        if (r >= 0)
                r = add_ip_source_rule(rules, spec);
        if (r >= 0)
                r = RULE(rules, j_verdict("accept"), j_ct_state("established", "related"));
        /* DNS on the host's address on this bridge, where libvirt's dnsmasq listens: not on
         * any other address of the host (its uplink, other seats' bridges, a resolver). */
        if (r >= 0 && profile_serves_dns(p))
                r = RULE(rules, j_verdict("accept"), j_match("==", j_payload("ip", "daddr"), j_host_ip(spec)),
                         j_match("==", j_payload("udp", "dport"), json_object_new_int(53)));
        if (r >= 0 && profile_serves_dns(p))
                r = RULE(rules, j_verdict("accept"), j_match("==", j_payload("ip", "daddr"), j_host_ip(spec)),
                         j_match("==", j_payload("tcp", "dport"), json_object_new_int(53)));
        return r < 0 ? r : add_deny_tail(rules, spec);
}

/* ing-B: every frame that reaches the bridge device, before any IP processing: only IPv4
 * and ARP (and IPv6 when allowed) go on. IPv6 (the bridge has it disabled, so the stack
 * would drop it unseen), VLAN-tagged and any other frames are counted and dropped here. */
static int build_ingress(json_object *rules, const NftSeatSpec *spec) {
        json_object *protos = json_object_new_array();
        if (!protos)
                return -ENOMEM;
        json_object_array_add(protos, nft_j_str("ip"));
        json_object_array_add(protos, nft_j_str("arp"));
        if (spec->profile->ipv6)
                json_object_array_add(protos, nft_j_str("ip6"));
        /* The kernel takes a VLAN tag off before this hook (and meta protocol is then the
         * inner one); nftables puts it back for matches on the link-layer header. */
        int r = RULE(rules, j_verdict("drop"), j_match("==", j_payload("ether", "type"), nft_j_str("8021q")));
        if (r >= 0)
                r = RULE(rules, j_verdict("drop"), j_match("==", j_payload("ether", "type"), nft_j_str("8021ad")));
        if (r >= 0)
                r = RULE(rules, j_verdict("accept"), j_match("==", j_keyed("meta", "protocol"), nft_j_obj1("set", protos)));
        return r < 0 ? r : add_deny_tail(rules, spec);
}

/* "jump to the seat's chain `to` when the packet's iface_key ("iifname", "oifname") is the bridge". */
static int add_jump(json_object *rules, ChainKind to, const char *iface_key, const NftSeatSpec *spec) {
        char target[CHAIN_NAME_MAX + 1];
        nft_chain_name(to, spec->bridge, target);
        return RULE(rules, nft_j_obj1("jump", nft_j_obj1("target", nft_j_str(target))),
                    j_match("==", j_keyed("meta", iface_key), nft_j_str(spec->bridge)));
}

static int build_jumps(json_object *rules, ChainKind k, const NftSeatSpec *spec) {
        int r;

        switch (k) {
        case CHAIN_FWD:
                r = add_jump(rules, CHAIN_OUT, "iifname", spec);
                if (r < 0)
                        return r;
                return add_jump(rules, CHAIN_TO, "oifname", spec);
        case CHAIN_IN:
                return add_jump(rules, CHAIN_HOST, "iifname", spec);
        case CHAIN_NAT:
                return RULE(rules, j_verdict("masquerade"), j_match("==", j_payload("ip", "saddr"), j_guest_ip(spec)),
                            j_match("==", j_keyed("meta", "oifname"), nft_j_str(spec->uplink)));
        default:
                return -EINVAL;
        }
}

static json_object *chain_object(ChainKind k, const char *bridge) {
        char name[CHAIN_NAME_MAX + 1];
        json_object *c = json_object_new_object();
        if (!c)
                return NULL;
        nft_chain_name(k, bridge, name);
        json_object_object_add(c, "family", nft_j_str(NFT_TABLE_FAMILY));
        json_object_object_add(c, "table", nft_j_str(NFT_TABLE_NAME));
        json_object_object_add(c, "name", nft_j_str(name));
        if (nft_chain_is_base(k)) {
                json_object_object_add(c, "type", nft_j_str(k == CHAIN_NAT ? "nat" : "filter"));
                json_object_object_add(c, "hook", nft_j_str(k == CHAIN_FWD  ? "forward"
                                                        : k == CHAIN_IN ? "input"
                                                        : k == CHAIN_ING ? "ingress"
                                                                         : "postrouting"));
                if (k == CHAIN_ING) /* nft 1.0.6 does not list it back: not compared */
                        json_object_object_add(c, "dev", nft_j_str(bridge));
                json_object_object_add(c, "prio", json_object_new_int(k == CHAIN_NAT ? 100 : 0));
                json_object_object_add(c, "policy", nft_j_str("accept"));
        }
        return c;
}

/* Names a chain for flush/delete: no hook data. */
json_object *nft_chain_ref(ChainKind k, const char *bridge) {
        json_object *c = chain_object(k, bridge);
        if (c) {
                json_object_object_del(c, "type");
                json_object_object_del(c, "hook");
                json_object_object_del(c, "prio");
                json_object_object_del(c, "policy");
        }
        return c;
}

/* The chains with rules of their own; the others (fwd, in, nat) only jump to them. */
typedef int (*RulesBuilder)(json_object *rules, const NftSeatSpec *spec);
static const RulesBuilder rules_builders[_CHAIN_MAX] = {
        [CHAIN_OUT] = build_out, [CHAIN_TO] = build_to, [CHAIN_HOST] = build_host, [CHAIN_ING] = build_ingress,
};

static int build_chain(ChainKind k, const NftSeatSpec *spec, json_object **ret) {
        _cleanup_json_ json_object *entry = json_object_new_object();
        json_object *rules = json_object_new_array();
        int r;

        if (!entry || !rules || json_object_object_add(entry, "rules", rules) < 0) {
                json_object_put(rules);
                return -ENOMEM;
        }
        json_object *c = chain_object(k, spec->bridge);
        if (!c || json_object_object_add(entry, "chain", c) < 0) {
                json_object_put(c);
                return -ENOMEM;
        }
        r = rules_builders[k] ? rules_builders[k](rules, spec) : build_jumps(rules, k, spec);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(entry);
        return 0;
}

json_object *nft_set_object(int family, int index, const char *bridge, unsigned timeout_s) {
        char name[NFT_SET_NAME_MAX + 1];
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        nft_name_set_name(family, index, bridge, name);
        json_object_object_add(o, "family", nft_j_str(NFT_TABLE_FAMILY));
        json_object_object_add(o, "table", nft_j_str(NFT_TABLE_NAME));
        json_object_object_add(o, "name", nft_j_str(name));
        if (timeout_s > 0) {
                json_object *flags = json_object_new_array();
                if (flags)
                        json_object_array_add(flags, nft_j_str("timeout"));
                json_object_object_add(o, "type", nft_j_str(family == AF_INET6 ? "ipv6_addr" : "ipv4_addr"));
                json_object_object_add(o, "flags", flags);
                json_object_object_add(o, "timeout", json_object_new_int((int) timeout_s));
        }
        return o;
}

/* {"set": {...}} for each distinct name (and family), before the chains that use them. */
static int add_name_sets(json_object *arr, const NftSeatSpec *spec) {
        const EgressProfile *p = spec->profile;
        for (size_t i = 0; i < p->n_rules; i++) {
                if (egress_profile_name_index(p, i) != (int) i)
                        continue;
                for (int v6 = 0; v6 <= (p->ipv6 ? 1 : 0); v6++) {
                        json_object *e = nft_j_obj1("set", nft_set_object(v6 ? AF_INET6 : AF_INET, (int) i, spec->bridge,
                                                                                  spec->name_timeout_s ? spec->name_timeout_s
                                                                                                       : NFT_NAME_SET_TIMEOUT_S));
                        if (json_append(arr, e) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* Regular chains first: the base chains jump to them. */
static const ChainKind chain_order[] = { CHAIN_OUT, CHAIN_TO, CHAIN_HOST, CHAIN_FWD, CHAIN_IN, CHAIN_NAT, CHAIN_ING };

int nft_seat_expected(const NftSeatSpec *spec, json_object **ret, SeatError **ret_error) {
        int r = nft_seat_spec_validate(spec, ret_error);
        if (r < 0)
                return r;
        _cleanup_json_ json_object *chains = json_object_new_array();
        if (!chains)
                return -ENOMEM;
        r = add_name_sets(chains, spec);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s': cannot build the egress sets", spec->seat);
        for (size_t i = 0; i < ELEMENTSOF(chain_order); i++) {
                json_object *entry = NULL;
                if (chain_order[i] == CHAIN_NAT && !spec->masquerade)
                        continue;
                r = build_chain(chain_order[i], spec, &entry);
                if (r >= 0)
                        r = json_append(chains, entry);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "seat '%s': cannot build the egress rules", spec->seat);
        }
        *ret = TAKE_PTR(chains);
        return 0;
}
