/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <inttypes.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <string.h>

#include "jsonframe.h"
#include "log.h"
#include "nft.h"

/* Read-back of the whole table is capped: far beyond what 64 seats produce. */
#define NFT_LIST_MAX (16u * 1024u * 1024u)
#define CHAIN_NAME_MAX (NFT_IFNAME_MAX + 8)

struct NftContext {
        struct nft_ctx *ctx;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nft_ctx *, nft_ctx_free)

static const char *const state_names[] = {
        [NFT_SEAT_OK] = "ok",
        [NFT_SEAT_CHANGED] = "changed",
        [NFT_SEAT_MISSING] = "missing",
};

const char *nft_seat_state_to_string(NftSeatState s) {
        return (size_t) s < ELEMENTSOF(state_names) ? state_names[s] : NULL;
}

int nft_context_new(NftContext **ret, SeatError **ret_error) {
        _cleanup_(nft_ctx_freep) struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
        if (!ctx)
                return seat_error_set(ret_error, ENOMEM, "cannot create an nftables context");
        /* JSON output also makes nft_run_cmd_from_buffer() parse its input as JSON. */
        nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON);
        if (nft_ctx_buffer_output(ctx) < 0 || nft_ctx_buffer_error(ctx) < 0)
                return seat_error_set(ret_error, ENOMEM, "cannot buffer nftables output");
        NftContext *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->ctx = TAKE_PTR(ctx);
        *ret = c;
        return 0;
}

NftContext *nft_context_free(NftContext *c) {
        if (!c)
                return NULL;
        nft_ctx_free(c->ctx);
        free(c);
        return NULL;
}

/* ---- names ---------------------------------------------------------------------- */

static bool ifname_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > NFT_IFNAME_MAX)
                return false;
        for (const char *c = s; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      *c == '-' || *c == '_' || *c == '.'))
                        return false;
        return true;
}

static bool seat_name_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > NFT_SEAT_NAME_MAX)
                return false;
        for (const char *c = s; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      *c == '-' || *c == '_'))
                        return false;
        return true;
}

typedef enum ChainKind {
        CHAIN_FWD,
        CHAIN_IN,
        CHAIN_NAT,
        CHAIN_OUT,
        CHAIN_TO,
        CHAIN_HOST,
        CHAIN_ING,
        _CHAIN_MAX,
} ChainKind;

static const char *const chain_prefix[_CHAIN_MAX] = {
        [CHAIN_FWD] = "fwd-", [CHAIN_IN] = "in-",  [CHAIN_NAT] = "nat-",
        [CHAIN_OUT] = "out-", [CHAIN_TO] = "to-",  [CHAIN_HOST] = "host-", [CHAIN_ING] = "ing-",
};

static bool chain_is_base(ChainKind k) {
        return k == CHAIN_FWD || k == CHAIN_IN || k == CHAIN_NAT || k == CHAIN_ING;
}

static void chain_name(ChainKind k, const char *bridge, char buf[static CHAIN_NAME_MAX + 1]) {
        (void) snprintf(buf, CHAIN_NAME_MAX + 1, "%s%s", chain_prefix[k], bridge);
}

/* Which of the seat's chains a listed chain name is, or -1. */
static int chain_kind_of(const char *name, const char *bridge) {
        char buf[CHAIN_NAME_MAX + 1];
        for (int k = 0; k < _CHAIN_MAX; k++) {
                chain_name((ChainKind) k, bridge, buf);
                if (strcmp(buf, name) == 0)
                        return k;
        }
        return -1;
}

int nft_seat_spec_validate(const NftSeatSpec *spec, SeatError **ret_error) {
        if (!seat_name_valid(spec->seat))
                return seat_error_set(ret_error, EINVAL, "invalid seat name for the egress filter");
        if (!ifname_valid(spec->bridge))
                return seat_error_set(ret_error, EINVAL, "invalid bridge name for seat '%s'", spec->seat);
        if (spec->uplink && !ifname_valid(spec->uplink))
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
        if ((spec->profile->dhcp || spec->profile->dns_host) &&
            (spec->host.s_addr == htonl(INADDR_ANY) || spec->host.s_addr == htonl(INADDR_BROADCAST) ||
             spec->host.s_addr == spec->guest.s_addr))
                return seat_error_set(ret_error, EINVAL,
                                      "seat '%s': 'dhcp on' and 'dns host' need the host's address on the bridge", spec->seat);
        if (egress_profile_has_names(spec->profile))
                return seat_error_set(ret_error, EOPNOTSUPP,
                                      "seat '%s': 'allow name' rules are not enforced yet; use addresses",
                                      spec->seat);
        return 0;
}

/* ---- JSON building blocks (nft's canonical output form) ---------------------------- */

static json_object *j_obj1(const char *key, json_object *val) {
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

static json_object *j_str(const char *s) {
        return json_object_new_string(s);
}

static json_object *j_payload(const char *proto, const char *field) {
        json_object *p = json_object_new_object();
        if (!p)
                return NULL;
        json_object_object_add(p, "protocol", j_str(proto));
        json_object_object_add(p, "field", j_str(field));
        return j_obj1("payload", p);
}

static json_object *j_keyed(const char *what, const char *key) {
        return j_obj1(what, j_obj1("key", j_str(key)));
}

static json_object *j_match(const char *op, json_object *left, json_object *right) {
        json_object *m = json_object_new_object();
        if (!m || !left || !right) {
                json_object_put(m);
                json_object_put(left);
                json_object_put(right);
                return NULL;
        }
        json_object_object_add(m, "op", j_str(op));
        json_object_object_add(m, "left", left);
        json_object_object_add(m, "right", right);
        return j_obj1("match", m);
}

static json_object *j_addr(const EgressAddr *a) {
        char host[INET6_ADDRSTRLEN];
        if (!inet_ntop(a->family, a->addr, host, sizeof(host)))
                return NULL;
        if (a->prefixlen == (a->family == AF_INET ? 32u : 128u))
                return j_str(host);
        json_object *p = json_object_new_object();
        if (!p)
                return NULL;
        json_object_object_add(p, "addr", j_str(host));
        json_object_object_add(p, "len", json_object_new_int((int) a->prefixlen));
        return j_obj1("prefix", p);
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
        return j_obj1("set", arr);
}

static json_object *j_ports(uint16_t lo, uint16_t hi) {
        if (lo == hi)
                return json_object_new_int(lo);
        json_object *r = json_object_new_array();
        if (!r)
                return NULL;
        json_object_array_add(r, json_object_new_int(lo));
        json_object_array_add(r, json_object_new_int(hi));
        return j_obj1("range", r);
}

static json_object *j_ct_state(const char *a, const char *b) {
        json_object *r = json_object_new_array();
        if (!r)
                return NULL;
        json_object_array_add(r, j_str(a));
        json_object_array_add(r, j_str(b));
        return j_match("in", j_keyed("ct", "state"), r);
}

static json_object *j_verdict(const char *v) {
        return j_obj1(v, NULL);
}

static json_object *j_counter(void) {
        return j_obj1("counter", NULL);
}

static json_object *j_mac(const uint8_t mac[6]) {
        char buf[18];
        (void) snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                        mac[4], mac[5]);
        return j_str(buf);
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

static json_object *j_log(const char *seat) {
        char prefix[sizeof(NFT_LOG_PREFIX) + NFT_SEAT_NAME_MAX + 2];
        (void) snprintf(prefix, sizeof(prefix), NFT_LOG_PREFIX "%s ", seat);
        return j_obj1("log", j_obj1("prefix", j_str(prefix)));
}

/* limit; counter; log — then a counted drop: the tail of every deny path. */
static int add_deny_tail(json_object *rules, const char *seat) {
        json_object *lim = json_object_new_object();
        if (!lim)
                return -ENOMEM;
        json_object_object_add(lim, "rate", json_object_new_int(5));
        json_object_object_add(lim, "burst", json_object_new_int(10));
        json_object_object_add(lim, "per", j_str("second"));
        int r = RULE(rules, j_log(seat), j_obj1("limit", lim));
        if (r < 0)
                return r;
        return RULE0(rules, j_verdict("drop"));
}

static json_object *j_ipv4(struct in_addr a) {
        char buf[INET_ADDRSTRLEN];
        if (!inet_ntop(AF_INET, &a, buf, sizeof(buf)))
                return NULL;
        return j_str(buf);
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
        return j_obj1("set", arr);
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
                            j_match("==", j_keyed("meta", "l4proto"), j_str(v4 ? "icmp" : "ipv6-icmp")));
        return RULE(rules, j_verdict("accept"), dst,
                    j_match("==", j_payload(egress_proto_to_string(er->proto), "dport"),
                            j_ports(er->port_lo, er->port_hi)));
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
                r = RULE(rules, j_verdict("drop"), j_match("==", j_keyed("meta", "nfproto"), j_str("ipv6")));
        /* Only through the uplink: never to another seat's bridge or any other interface.
         * Without an uplink nothing is forwarded at all. */
        if (r >= 0 && spec->uplink)
                r = RULE(rules, j_verdict("drop"), j_match("!=", j_keyed("meta", "oifname"), j_str(spec->uplink)));
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
        for (size_t i = 0; i < p->n_dns && r >= 0; i++)
                r = add_dns_rules(rules, &p->dns[i]);
        for (size_t i = 0; i < p->n_rules && r >= 0; i++)
                r = add_allow_rule(rules, &p->rules[i]);
        return r < 0 ? r : add_deny_tail(rules, spec->seat);
}

/* to-B: forwarded towards the guest: replies only. */
static int build_to(json_object *rules, const NftSeatSpec *spec) {
        int r = RULE(rules, j_verdict("accept"), j_ct_state("established", "related"));
        return r < 0 ? r : add_deny_tail(rules, spec->seat);
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
        if (r >= 0 && p->dns_host)
                r = RULE(rules, j_verdict("accept"), j_match("==", j_payload("ip", "daddr"), j_host_ip(spec)),
                         j_match("==", j_payload("udp", "dport"), json_object_new_int(53)));
        if (r >= 0 && p->dns_host)
                r = RULE(rules, j_verdict("accept"), j_match("==", j_payload("ip", "daddr"), j_host_ip(spec)),
                         j_match("==", j_payload("tcp", "dport"), json_object_new_int(53)));
        return r < 0 ? r : add_deny_tail(rules, spec->seat);
}

/* ing-B: every frame that reaches the bridge device, before any IP processing: only IPv4
 * and ARP (and IPv6 when allowed) go on. IPv6 (the bridge has it disabled, so the stack
 * would drop it unseen), VLAN-tagged and any other frames are counted and dropped here. */
static int build_ingress(json_object *rules, const NftSeatSpec *spec) {
        json_object *protos = json_object_new_array();
        if (!protos)
                return -ENOMEM;
        json_object_array_add(protos, j_str("ip"));
        json_object_array_add(protos, j_str("arp"));
        if (spec->profile->ipv6)
                json_object_array_add(protos, j_str("ip6"));
        /* The kernel takes a VLAN tag off before this hook (and meta protocol is then the
         * inner one); nftables puts it back for matches on the link-layer header. */
        int r = RULE(rules, j_verdict("drop"), j_match("==", j_payload("ether", "type"), j_str("8021q")));
        if (r >= 0)
                r = RULE(rules, j_verdict("drop"), j_match("==", j_payload("ether", "type"), j_str("8021ad")));
        if (r >= 0)
                r = RULE(rules, j_verdict("accept"), j_match("==", j_keyed("meta", "protocol"), j_obj1("set", protos)));
        return r < 0 ? r : add_deny_tail(rules, spec->seat);
}

static int build_jumps(json_object *rules, ChainKind k, const NftSeatSpec *spec) {
        char target[CHAIN_NAME_MAX + 1];
        int r;

        switch (k) {
        case CHAIN_FWD:
                chain_name(CHAIN_OUT, spec->bridge, target);
                r = RULE(rules, j_obj1("jump", j_obj1("target", j_str(target))),
                         j_match("==", j_keyed("meta", "iifname"), j_str(spec->bridge)));
                if (r < 0)
                        return r;
                chain_name(CHAIN_TO, spec->bridge, target);
                return RULE(rules, j_obj1("jump", j_obj1("target", j_str(target))),
                            j_match("==", j_keyed("meta", "oifname"), j_str(spec->bridge)));
        case CHAIN_IN:
                chain_name(CHAIN_HOST, spec->bridge, target);
                return RULE(rules, j_obj1("jump", j_obj1("target", j_str(target))),
                            j_match("==", j_keyed("meta", "iifname"), j_str(spec->bridge)));
        case CHAIN_NAT:
                return RULE(rules, j_verdict("masquerade"), j_match("==", j_payload("ip", "saddr"), j_guest_ip(spec)),
                            j_match("==", j_keyed("meta", "oifname"), j_str(spec->uplink)));
        default:
                return -EINVAL;
        }
}

static json_object *chain_object(ChainKind k, const char *bridge) {
        char name[CHAIN_NAME_MAX + 1];
        json_object *c = json_object_new_object();
        if (!c)
                return NULL;
        chain_name(k, bridge, name);
        json_object_object_add(c, "family", j_str(NFT_TABLE_FAMILY));
        json_object_object_add(c, "table", j_str(NFT_TABLE_NAME));
        json_object_object_add(c, "name", j_str(name));
        if (chain_is_base(k)) {
                json_object_object_add(c, "type", j_str(k == CHAIN_NAT ? "nat" : "filter"));
                json_object_object_add(c, "hook", j_str(k == CHAIN_FWD  ? "forward"
                                                        : k == CHAIN_IN ? "input"
                                                        : k == CHAIN_ING ? "ingress"
                                                                         : "postrouting"));
                if (k == CHAIN_ING) /* nft 1.0.6 does not list it back: not compared */
                        json_object_object_add(c, "dev", j_str(bridge));
                json_object_object_add(c, "prio", json_object_new_int(k == CHAIN_NAT ? 100 : 0));
                json_object_object_add(c, "policy", j_str("accept"));
        }
        return c;
}

/* Names a chain for flush/delete: no hook data. */
static json_object *chain_ref(ChainKind k, const char *bridge) {
        json_object *c = chain_object(k, bridge);
        if (c) {
                json_object_object_del(c, "type");
                json_object_object_del(c, "hook");
                json_object_object_del(c, "prio");
                json_object_object_del(c, "policy");
        }
        return c;
}

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
        switch (k) {
        case CHAIN_OUT:
                r = build_out(rules, spec);
                break;
        case CHAIN_TO:
                r = build_to(rules, spec);
                break;
        case CHAIN_HOST:
                r = build_host(rules, spec);
                break;
        case CHAIN_ING:
                r = build_ingress(rules, spec);
                break;
        default:
                r = build_jumps(rules, k, spec);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(entry);
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
        for (size_t i = 0; i < ELEMENTSOF(chain_order); i++) {
                json_object *entry = NULL;
                if (chain_order[i] == CHAIN_NAT && !spec->masquerade)
                        continue;
                r = build_chain(chain_order[i], spec, &entry);
                if (r >= 0 && json_object_array_add(chains, entry) < 0) {
                        json_object_put(entry);
                        r = -ENOMEM;
                }
                if (r < 0)
                        return seat_error_set(ret_error, -r, "seat '%s': cannot build the egress rules", spec->seat);
        }
        *ret = TAKE_PTR(chains);
        return 0;
}

/* ---- running commands --------------------------------------------------------------- */

/* The first line of libnftables' error text, escaped, for messages. */
static char *nft_error_text(NftContext *c) {
        const char *e = nft_ctx_get_error_buffer(c->ctx);
        if (!e || !*e)
                return strdup("no error text");
        return log_escape(e, strcspn(e, "\n"), 200);
}

static int run_json(NftContext *c, json_object *cmds, const char *what, SeatError **ret_error) {
        _cleanup_json_ json_object *top = j_obj1("nftables", json_object_get(cmds));
        if (!top)
                return -ENOMEM;
        const char *text = json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN);
        if (!text)
                return -ENOMEM;
        if (nft_run_cmd_from_buffer(c->ctx, text) != 0) {
                _cleanup_free_ char *err = nft_error_text(c);
                return seat_error_set(ret_error, EIO, "nftables refused to %s: %s", what, err ? err : "(no memory)");
        }
        return 0;
}

static int add_cmd(json_object *cmds, const char *verb, const char *type, json_object *val) {
        json_object *cmd = j_obj1(verb, j_obj1(type, val));
        if (!cmd || json_object_array_add(cmds, cmd) < 0) {
                json_object_put(cmd);
                return -ENOMEM;
        }
        return 0;
}

static json_object *table_object(void) {
        json_object *t = json_object_new_object();
        if (!t)
                return NULL;
        json_object_object_add(t, "family", j_str(NFT_TABLE_FAMILY));
        json_object_object_add(t, "name", j_str(NFT_TABLE_NAME));
        return t;
}

/* Does table inet seatd exist? */
static int table_exists(NftContext *c, bool *ret, SeatError **ret_error) {
        _cleanup_json_ json_object *cmds = json_object_new_array();
        json_object *fam = json_object_new_object();
        if (!cmds || !fam) {
                json_object_put(fam);
                return -ENOMEM;
        }
        json_object_object_add(fam, "family", j_str(NFT_TABLE_FAMILY));
        int r = add_cmd(cmds, "list", "tables", fam);
        if (r < 0)
                return r;
        r = run_json(c, cmds, "list its tables", ret_error);
        if (r < 0)
                return r;
        _cleanup_json_ json_object *out = NULL;
        const char *text = nft_ctx_get_output_buffer(c->ctx);
        r = json_frame_parse(text, strlen(text), 16, &out);
        if (r < 0)
                return seat_error_set(ret_error, EBADMSG, "nftables listed its tables in a form seatd cannot read");
        json_object *items;
        *ret = false;
        if (!json_object_object_get_ex(out, "nftables", &items) || !json_object_is_type(items, json_type_array))
                return seat_error_set(ret_error, EBADMSG, "nftables listed its tables in a form seatd cannot read");
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                json_object *t, *name;
                if (json_object_object_get_ex(json_object_array_get_idx(items, i), "table", &t) &&
                    json_object_object_get_ex(t, "name", &name) &&
                    strcmp(json_object_get_string(name), NFT_TABLE_NAME) == 0)
                        *ret = true;
        }
        return 0;
}

/* The listed table, as the array under "nftables"; *ret = NULL when there is no table. */
static int list_table(NftContext *c, json_object **ret, SeatError **ret_error) {
        bool exists;
        int r = table_exists(c, &exists, ret_error);
        if (r < 0)
                return r;
        if (!exists) {
                *ret = NULL;
                return 0;
        }
        _cleanup_json_ json_object *cmds = json_object_new_array();
        if (!cmds)
                return -ENOMEM;
        r = add_cmd(cmds, "list", "table", table_object());
        if (r < 0)
                return r;
        r = run_json(c, cmds, "list table inet seatd", ret_error);
        if (r < 0)
                return r;
        const char *text = nft_ctx_get_output_buffer(c->ctx);
        size_t n = strlen(text);
        if (n > NFT_LIST_MAX)
                return seat_error_set(ret_error, E2BIG, "table inet seatd lists as more than %u bytes", NFT_LIST_MAX);
        _cleanup_json_ json_object *out = NULL;
        json_object *items;
        if (json_frame_parse(text, n, 32, &out) < 0 || !json_object_object_get_ex(out, "nftables", &items) ||
            !json_object_is_type(items, json_type_array))
                return seat_error_set(ret_error, EBADMSG, "nftables listed table inet seatd in a form seatd cannot read");
        *ret = json_object_get(items);
        return 0;
}

/* Commands that delete whatever of the seat's chains exist in the listing. */
static int add_remove_cmds(json_object *cmds, json_object *items, const char *bridge) {
        bool present[_CHAIN_MAX] = {};
        size_t n = items ? json_object_array_length(items) : 0;
        int r = 0;

        for (size_t i = 0; i < n; i++) {
                json_object *ch, *name;
                if (json_object_object_get_ex(json_object_array_get_idx(items, i), "chain", &ch) &&
                    json_object_object_get_ex(ch, "name", &name)) {
                        int k = chain_kind_of(json_object_get_string(name), bridge);
                        if (k >= 0)
                                present[k] = true;
                }
        }
        /* Flush all (drops the jumps), then delete base chains before regular ones. */
        for (int pass = 0; pass < 3 && r >= 0; pass++)
                for (int k = 0; k < _CHAIN_MAX && r >= 0; k++) {
                        if (!present[k] || (pass == 1 && !chain_is_base(k)) || (pass == 2 && chain_is_base(k)))
                                continue;
                        r = add_cmd(cmds, pass == 0 ? "flush" : "delete", "chain", chain_ref((ChainKind) k, bridge));
                }
        return r;
}

static int add_install_cmds(json_object *cmds, json_object *expected) {
        int r = 0;
        size_t n = json_object_array_length(expected);
        for (size_t i = 0; i < n && r >= 0; i++)
                r = add_cmd(cmds, "add", "chain",
                            json_object_get(json_object_object_get(json_object_array_get_idx(expected, i), "chain")));
        for (size_t i = 0; i < n && r >= 0; i++) {
                json_object *e = json_object_array_get_idx(expected, i);
                json_object *chain = json_object_object_get(e, "chain");
                json_object *rules = json_object_object_get(e, "rules");
                for (size_t j = 0; j < json_object_array_length(rules) && r >= 0; j++) {
                        json_object *rule = json_object_new_object();
                        if (!rule)
                                return -ENOMEM;
                        json_object_object_add(rule, "family", j_str(NFT_TABLE_FAMILY));
                        json_object_object_add(rule, "table", j_str(NFT_TABLE_NAME));
                        json_object_object_add(rule, "chain", json_object_get(json_object_object_get(chain, "name")));
                        json_object_object_add(rule, "expr", json_object_get(json_object_array_get_idx(rules, j)));
                        r = add_cmd(cmds, "add", "rule", rule);
                }
        }
        return r;
}

int nft_seat_remove(NftContext *c, const char *bridge, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL, *cmds = NULL;
        if (!ifname_valid(bridge))
                return seat_error_set(ret_error, EINVAL, "invalid bridge name");
        int r = list_table(c, &items, ret_error);
        if (r < 0 || !items)
                return r;
        cmds = json_object_new_array();
        if (!cmds)
                return -ENOMEM;
        r = add_remove_cmds(cmds, items, bridge);
        if (r < 0)
                return r;
        if (json_object_array_length(cmds) == 0)
                return 0;
        r = run_json(c, cmds, "remove the seat's chains", ret_error);
        return r < 0 ? seat_error_wrap(ret_error, "bridge '%s'", bridge) : 0;
}

/* ---- read-back -------------------------------------------------------------------- */

/* A listed rule's expr with counters' values blanked, so it compares with the meant one. */
static json_object *normalize_expr(json_object *expr) {
        json_object *copy = NULL;
        if (!json_object_is_type(expr, json_type_array) || json_object_deep_copy(expr, &copy, NULL) < 0)
                return NULL;
        for (size_t i = 0; i < json_object_array_length(copy); i++) {
                json_object *st = json_object_array_get_idx(copy, i);
                if (json_object_is_type(st, json_type_object) && json_object_object_get_ex(st, "counter", NULL))
                        json_object_object_add(st, "counter", NULL);
        }
        return copy;
}

static bool chain_attrs_equal(json_object *meant, json_object *listed) {
        static const char *const keys[] = { "type", "hook", "prio", "policy" };
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                json_object *a = NULL, *b = NULL;
                bool ha = json_object_object_get_ex(meant, keys[i], &a);
                bool hb = json_object_object_get_ex(listed, keys[i], &b);
                if (ha != hb || (ha && !json_object_equal(a, b)))
                        return false;
        }
        return true;
}

typedef struct Listed {
        bool table_flags;
        json_object *chain[_CHAIN_MAX];
        json_object *rules[_CHAIN_MAX]; /* arrays of normalized exprs */
} Listed;

static void listed_done(Listed *l) {
        for (int k = 0; k < _CHAIN_MAX; k++)
                json_object_put(l->rules[k]);
}

static int collect(json_object *items, const char *bridge, Listed *l) {
        for (int k = 0; k < _CHAIN_MAX; k++)
                if (!(l->rules[k] = json_object_new_array()))
                        return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                json_object *it = json_object_array_get_idx(items, i), *o, *name;
                /* A table with flags (dormant: no rule applies) is not ours as meant. */
                if (json_object_object_get_ex(it, "table", &o) && json_object_object_get_ex(o, "flags", NULL))
                        l->table_flags = true;
                else if (json_object_object_get_ex(it, "chain", &o) && json_object_object_get_ex(o, "name", &name)) {
                        int k = chain_kind_of(json_object_get_string(name), bridge);
                        if (k >= 0)
                                l->chain[k] = o;
                } else if (json_object_object_get_ex(it, "rule", &o) && json_object_object_get_ex(o, "chain", &name)) {
                        int k = chain_kind_of(json_object_get_string(name), bridge);
                        if (k < 0)
                                continue;
                        json_object *e = normalize_expr(json_object_object_get(o, "expr"));
                        if (!e || json_object_array_add(l->rules[k], e) < 0) {
                                json_object_put(e);
                                return -ENOMEM;
                        }
                }
        }
        return 0;
}

static int compare(json_object *expected, json_object *items, const char *bridge, NftSeatState *ret) {
        _cleanup_(listed_done) Listed l = {};
        bool any = false, differs = false;
        bool meant[_CHAIN_MAX] = {};

        int r = collect(items, bridge, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(expected); i++) {
                json_object *e = json_object_array_get_idx(expected, i);
                json_object *chain = json_object_object_get(e, "chain");
                int k = chain_kind_of(json_object_get_string(json_object_object_get(chain, "name")), bridge);
                if (k < 0)
                        return -EINVAL;
                meant[k] = true;
                if (!l.chain[k]) {
                        differs = true;
                        continue;
                }
                any = true;
                if (!chain_attrs_equal(chain, l.chain[k]) ||
                    !json_object_equal(json_object_object_get(e, "rules"), l.rules[k]))
                        differs = true;
        }
        for (int k = 0; k < _CHAIN_MAX; k++)
                if (l.chain[k] && !meant[k])
                        any = differs = true;
        if (l.table_flags)
                differs = true;
        *ret = !any ? NFT_SEAT_MISSING : differs ? NFT_SEAT_CHANGED : NFT_SEAT_OK;
        return 0;
}

int nft_seat_verify(NftContext *c, const NftSeatSpec *spec, NftSeatState *ret_state, SeatError **ret_error) {
        _cleanup_json_ json_object *expected = NULL, *items = NULL;
        int r = nft_seat_expected(spec, &expected, ret_error);
        if (r < 0)
                return r;
        r = list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (!items) {
                *ret_state = NFT_SEAT_MISSING;
                return 0;
        }
        r = compare(expected, items, spec->bridge, ret_state);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s': cannot compare the egress rules", spec->seat);
        return 0;
}

int nft_seat_install(NftContext *c, const NftSeatSpec *spec, SeatError **ret_error) {
        _cleanup_json_ json_object *expected = NULL, *items = NULL, *cmds = NULL;
        NftSeatState state;

        int r = nft_seat_expected(spec, &expected, ret_error);
        if (r < 0)
                return r;
        r = list_table(c, &items, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "seat '%s'", spec->seat);
        cmds = json_object_new_array();
        if (!cmds)
                return -ENOMEM;
        r = add_cmd(cmds, "add", "table", table_object());
        if (r >= 0)
                r = add_remove_cmds(cmds, items, spec->bridge);
        if (r >= 0)
                r = add_install_cmds(cmds, expected);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s': cannot build the nftables transaction", spec->seat);
        r = run_json(c, cmds, "install the egress filter", ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "seat '%s'", spec->seat);

        r = nft_seat_verify(c, spec, &state, ret_error);
        if (r >= 0 && state != NFT_SEAT_OK)
                r = seat_error_set(ret_error, EPROTO,
                                   "seat '%s': the egress filter read back from nftables is not what was installed (%s)",
                                   spec->seat, nft_seat_state_to_string(state));
        if (r < 0)
                (void) nft_seat_remove(c, spec->bridge, NULL);
        return r;
}

/* ---- counters ---------------------------------------------------------------------- */

static uint64_t rule_drop_packets(json_object *expr) {
        uint64_t packets = 0;
        bool drop = false;
        for (size_t i = 0; i < json_object_array_length(expr); i++) {
                json_object *st = json_object_array_get_idx(expr, i), *cnt, *pk;
                if (json_object_object_get_ex(st, "drop", NULL))
                        drop = true;
                if (json_object_object_get_ex(st, "counter", &cnt) && json_object_object_get_ex(cnt, "packets", &pk))
                        packets = (uint64_t) json_object_get_int64(pk);
        }
        return drop ? packets : 0;
}

int nft_seat_denied(NftContext *c, const char *bridge, uint64_t *ret_packets, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL;
        uint64_t sum = 0;

        if (!ifname_valid(bridge))
                return seat_error_set(ret_error, EINVAL, "invalid bridge name");
        int r = list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (!items)
                return seat_error_set(ret_error, ENOENT, "table inet seatd does not exist");
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                json_object *o, *name;
                if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "rule", &o) ||
                    !json_object_object_get_ex(o, "chain", &name))
                        continue;
                int k = chain_kind_of(json_object_get_string(name), bridge);
                if (k == CHAIN_OUT || k == CHAIN_TO || k == CHAIN_HOST || k == CHAIN_ING)
                        sum += rule_drop_packets(json_object_object_get(o, "expr"));
        }
        *ret_packets = sum;
        return 0;
}

/* ---- rule text for status -------------------------------------------------------------- */

typedef struct Text {
        char *buf;
        size_t size, len;
} Text;

static void text_add(Text *t, const char *s) {
        size_t n = strlen(s);
        if (t->len + n + 1 >= t->size) { /* truncated: mark it once */
                if (t->size > 4)
                        memcpy(t->buf + t->size - 4, "...", 4);
                t->len = t->size;
                return;
        }
        memcpy(t->buf + t->len, s, n + 1);
        t->len += n;
}

static void text_word(Text *t, const char *s) {
        if (t->len > 0 && t->len < t->size)
                text_add(t, " ");
        if (t->len < t->size)
                text_add(t, s);
}

/* One operand of a match: a string, number, payload/meta/ct key, prefix, range or set. */
static void describe_value(Text *t, json_object *v, int depth) {
        json_object *o, *a, *b;
        char num[32];

        if (depth > 4)
                return text_word(t, "...");
        switch (json_object_get_type(v)) {
        case json_type_string:
                return text_word(t, json_object_get_string(v));
        case json_type_int:
                (void) snprintf(num, sizeof(num), "%" PRId64, json_object_get_int64(v));
                return text_word(t, num);
        case json_type_array:
                text_word(t, "{");
                for (size_t i = 0; i < json_object_array_length(v) && i < 16; i++)
                        describe_value(t, json_object_array_get_idx(v, i), depth + 1);
                return text_word(t, "}");
        case json_type_object:
                break;
        default:
                return text_word(t, "?");
        }
        if (json_object_object_get_ex(v, "payload", &o)) {
                text_word(t, json_object_get_string(json_object_object_get(o, "protocol")));
                return text_word(t, json_object_get_string(json_object_object_get(o, "field")));
        }
        if (json_object_object_get_ex(v, "meta", &o) || json_object_object_get_ex(v, "ct", &o)) {
                if (json_object_object_get_ex(v, "ct", NULL))
                        text_word(t, "ct");
                return text_word(t, json_object_get_string(json_object_object_get(o, "key")));
        }
        if (json_object_object_get_ex(v, "prefix", &o)) {
                describe_value(t, json_object_object_get(o, "addr"), depth + 1);
                (void) snprintf(num, sizeof(num), "/%d", json_object_get_int(json_object_object_get(o, "len")));
                return text_add(t, num);
        }
        if (json_object_object_get_ex(v, "range", &o) && json_object_array_length(o) == 2) {
                a = json_object_array_get_idx(o, 0);
                b = json_object_array_get_idx(o, 1);
                (void) snprintf(num, sizeof(num), "%" PRId64 "-%" PRId64, json_object_get_int64(a),
                                json_object_get_int64(b));
                return text_word(t, num);
        }
        if (json_object_object_get_ex(v, "set", &o))
                return describe_value(t, o, depth + 1);
        text_word(t, "?");
}

static void describe_statement(Text *t, json_object *st) {
        json_object *o;
        static const char *const verdicts[] = { "accept", "drop", "masquerade", "return" };

        if (json_object_object_get_ex(st, "match", &o)) {
                const char *op = json_object_get_string(json_object_object_get(o, "op"));
                describe_value(t, json_object_object_get(o, "left"), 0);
                if (op && strcmp(op, "==") != 0 && strcmp(op, "in") != 0)
                        text_word(t, op);
                return describe_value(t, json_object_object_get(o, "right"), 0);
        }
        if (json_object_object_get_ex(st, "jump", &o)) {
                text_word(t, "jump");
                return text_word(t, json_object_get_string(json_object_object_get(o, "target")));
        }
        if (json_object_object_get_ex(st, "log", NULL))
                return text_word(t, "log");
        if (json_object_object_get_ex(st, "limit", NULL))
                return text_word(t, "limit");
        for (size_t i = 0; i < ELEMENTSOF(verdicts); i++)
                if (json_object_object_get_ex(st, verdicts[i], NULL))
                        return text_word(t, verdicts[i]);
        /* counters are reported as numbers beside the text */
}

static void counter_values(json_object *expr, uint64_t *packets, uint64_t *bytes) {
        *packets = *bytes = 0;
        for (size_t i = 0; i < json_object_array_length(expr); i++) {
                json_object *cnt;
                if (json_object_object_get_ex(json_object_array_get_idx(expr, i), "counter", &cnt) &&
                    json_object_is_type(cnt, json_type_object)) {
                        *packets = (uint64_t) json_object_get_int64(json_object_object_get(cnt, "packets"));
                        *bytes = (uint64_t) json_object_get_int64(json_object_object_get(cnt, "bytes"));
                }
        }
}

static int counter_entry(json_object *arr, const char *chain, json_object *expr) {
        char text[256];
        Text t = { .buf = text, .size = sizeof(text) };
        uint64_t packets, bytes;

        text[0] = 0;
        for (size_t i = 0; i < json_object_array_length(expr); i++)
                describe_statement(&t, json_object_array_get_idx(expr, i));
        counter_values(expr, &packets, &bytes);
        json_object *o = json_object_new_object();
        if (!o || json_object_array_add(arr, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        json_object_object_add(o, "chain", j_str(chain));
        json_object_object_add(o, "rule", j_str(text));
        json_object_object_add(o, "packets", json_object_new_int64((int64_t) packets));
        json_object_object_add(o, "bytes", json_object_new_int64((int64_t) bytes));
        return 0;
}

int nft_seat_counters(NftContext *c, const char *bridge, json_object **ret, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL, *out = NULL;

        if (!ifname_valid(bridge))
                return seat_error_set(ret_error, EINVAL, "invalid bridge name");
        int r = list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (!(out = json_object_new_array()))
                return -ENOMEM;
        static const ChainKind shown[] = { CHAIN_ING, CHAIN_OUT, CHAIN_TO, CHAIN_HOST };
        for (size_t k = 0; k < ELEMENTSOF(shown) && items; k++)
                for (size_t i = 0; i < json_object_array_length(items); i++) {
                        json_object *o, *name;
                        if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "rule", &o) ||
                            !json_object_object_get_ex(o, "chain", &name) ||
                            chain_kind_of(json_object_get_string(name), bridge) != (int) shown[k])
                                continue;
                        char label[8];
                        (void) snprintf(label, sizeof(label), "%.*s", (int) strlen(chain_prefix[shown[k]]) - 1,
                                        chain_prefix[shown[k]]);
                        r = counter_entry(out, label, json_object_object_get(o, "expr"));
                        if (r < 0)
                                return r;
                }
        *ret = TAKE_PTR(out);
        return 0;
}

int nft_seat_bridges(NftContext *c, char ***ret, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL;
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;
        int r = list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (!(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        for (size_t i = 0; items && i < json_object_array_length(items); i++) {
                json_object *ch, *name;
                if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "chain", &ch) ||
                    !json_object_object_get_ex(ch, "name", &name))
                        continue;
                const char *nm = json_object_get_string(name), *dash = strchr(nm, '-');
                if (!dash || !ifname_valid(dash + 1) || chain_kind_of(nm, dash + 1) < 0)
                        continue;
                bool seen = false;
                for (size_t k = 0; k < n && !seen; k++)
                        seen = !strcmp(l[k], dash + 1);
                if (seen)
                        continue;
                char **m = reallocarray(l, n + 2, sizeof(char *));
                if (!m)
                        return -ENOMEM;
                l = m;
                if (!(l[n] = strdup(dash + 1)))
                        return -ENOMEM;
                l[++n] = NULL;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int strv_add_unique(char ***l, size_t *n, const char *v) {
        for (size_t k = 0; k < *n; k++)
                if (!strcmp((*l)[k], v))
                        return 0;
        char **m = reallocarray(*l, *n + 2, sizeof(char *));
        if (!m)
                return -ENOMEM;
        *l = m;
        if (!(m[*n] = strdup(v)))
                return -ENOMEM;
        m[++*n] = NULL;
        return 0;
}

int nft_seat_uplinks(NftContext *c, char ***ret, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL;
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        size_t n = 0;
        if (!l)
                return -ENOMEM;
        int r = list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; items && i < json_object_array_length(items); i++) {
                json_object *o, *name, *expr;
                if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "rule", &o) ||
                    !json_object_object_get_ex(o, "chain", &name) || !json_object_object_get_ex(o, "expr", &expr) ||
                    strncmp(json_object_get_string(name), chain_prefix[CHAIN_OUT], strlen(chain_prefix[CHAIN_OUT])) != 0)
                        continue;
                /* "oifname != U drop": U is that seat's uplink */
                for (size_t k = 0; k < json_object_array_length(expr); k++) {
                        json_object *m, *op, *left, *meta, *key, *right;
                        if (json_object_object_get_ex(json_object_array_get_idx(expr, k), "match", &m) &&
                            json_object_object_get_ex(m, "op", &op) && !strcmp(json_object_get_string(op), "!=") &&
                            json_object_object_get_ex(m, "left", &left) && json_object_object_get_ex(left, "meta", &meta) &&
                            json_object_object_get_ex(meta, "key", &key) && !strcmp(json_object_get_string(key), "oifname") &&
                            json_object_object_get_ex(m, "right", &right) && json_object_is_type(right, json_type_string) &&
                            ifname_valid(json_object_get_string(right)) &&
                            (r = strv_add_unique(&l, &n, json_object_get_string(right))) < 0)
                                return r;
                }
        }
        *ret = TAKE_PTR(l);
        return 0;
}
