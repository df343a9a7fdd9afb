/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "netdef.h"
#include "nft.h"

static bool id_valid(const char *id) {
        size_t n = id ? strlen(id) : 0;
        if (n == 0 || n > NETDEF_SEAT_ID_MAX || id[0] == '-')
                return false;
        for (const char *c = id; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
                        return false;
        return true;
}

static uint32_t mask_of(unsigned len) {
        return len == 0 ? 0 : (uint32_t) (0xffffffffu << (32 - len));
}

static bool within(uint32_t addr, unsigned len, uint32_t net, unsigned netlen) {
        return len >= netlen && (addr & mask_of(netlen)) == net;
}

int netdef_pool_parse(const char *s, unsigned subnet_len, NetPool *ret, SeatError **ret_error) {
        char host[INET_ADDRSTRLEN];
        struct in_addr a;
        const char *slash = s ? strchr(s, '/') : NULL;
        unsigned len = 0;

        if (subnet_len != 29 && subnet_len != 30)
                return seat_error_set(ret_error, EINVAL, "seat subnets are /29 or /30, not /%u", subnet_len);
        if (!slash || (size_t) (slash - s) >= sizeof(host) || sscanf(slash + 1, "%2u", &len) != 1 ||
            strspn(slash + 1, "0123456789") != strlen(slash + 1))
                return seat_error_set(ret_error, EINVAL, "network pool '%s' is not ADDRESS/LEN", s ? s : "");
        memcpy(host, s, (size_t) (slash - s));
        host[slash - s] = 0;
        if (inet_pton(AF_INET, host, &a) != 1 || len < 8 || len >= subnet_len)
                return seat_error_set(ret_error, EINVAL, "network pool '%s' is not an IPv4 prefix of /8 to /%u", s,
                                      subnet_len - 1);
        uint32_t net = ntohl(a.s_addr);
        if (net & ~mask_of(len))
                return seat_error_set(ret_error, EINVAL, "network pool '%s' has host bits set", s);
        if (!within(net, len, 0x0a000000u, 8) && !within(net, len, 0xac100000u, 12) &&
            !within(net, len, 0xc0a80000u, 16))
                return seat_error_set(ret_error, EINVAL,
                                      "network pool '%s' is not private (10/8, 172.16/12, 192.168/16)", s);
        *ret = (NetPool) { .base = a, .prefixlen = len, .subnet_len = subnet_len };
        return 0;
}

unsigned netdef_pool_size(const NetPool *pool) {
        unsigned bits = pool->subnet_len - pool->prefixlen;
        return bits >= 16 ? NETDEF_MAX_SUBNETS : 1u << bits;
}

/* FNV-1a, 64 bit: only to shorten long ids into interface names. */
static uint64_t fnv1a(const char *s) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (; *s; s++)
                h = (h ^ (uint8_t) *s) * 0x100000001b3ull;
        return h;
}

int netdef_bridge_name(const char *id, char ret[static NETDEF_IFNAME_MAX + 1]) {
        if (!id_valid(id))
                return -EINVAL;
        if (strlen(NETDEF_BRIDGE_PREFIX) + strlen(id) <= NETDEF_IFNAME_MAX)
                (void) snprintf(ret, NETDEF_IFNAME_MAX + 1, NETDEF_BRIDGE_PREFIX "%s", id);
        else /* "seath" never begins a short-id name: no collision between the two forms */
                (void) snprintf(ret, NETDEF_IFNAME_MAX + 1, "seath%010llx",
                                (unsigned long long) (fnv1a(id) & 0xffffffffffull));
        return 0;
}

int netdef_seat(const NetPool *pool, const char *id, unsigned index, bool dhcp, bool dns, NetSeat *ret,
                SeatError **ret_error) {
        NetSeat s = { .dhcp = dhcp, .dns = dns, .prefixlen = pool->subnet_len };

        if (netdef_bridge_name(id, s.bridge) < 0)
                return seat_error_set(ret_error, EINVAL, "seat id is not 1-32 bytes of a-z, 0-9, '-'");
        if (index >= netdef_pool_size(pool))
                return seat_error_set(ret_error, ENOSPC, "seat '%s': network index %u is beyond the pool's %u subnets",
                                      id, index, netdef_pool_size(pool));
        (void) snprintf(s.id, sizeof(s.id), "%s", id);
        (void) snprintf(s.network, sizeof(s.network), NETDEF_NETWORK_PREFIX "%s", id);
        uint32_t net = ntohl(pool->base.s_addr) + (index << (32 - pool->subnet_len));
        s.subnet.s_addr = htonl(net);
        s.host.s_addr = htonl(net + 1);
        s.guest.s_addr = htonl(net + 2);
        s.guest_mac[0] = 0x52;
        s.guest_mac[1] = 0x54;
        s.guest_mac[2] = 0x00;
        s.guest_mac[3] = 0xd5;
        s.guest_mac[4] = (uint8_t) (index >> 8);
        s.guest_mac[5] = (uint8_t) index;
        *ret = s;
        return 0;
}

static void format_mac(const uint8_t m[6], char buf[static 18]) {
        (void) snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static int push(char ***l, size_t *n, char *s) {
        if (!s)
                return -ENOMEM;
        char **m = reallocarray(*l, *n + 2, sizeof(char *));
        if (!m) {
                free(s);
                return -ENOMEM;
        }
        m[(*n)++] = s;
        m[*n] = NULL;
        *l = m;
        return 0;
}

static int push_ranges(char ***l, size_t *n, const char *const *ranges) {
        int r = 0;
        for (; *ranges && r >= 0; ranges++) {
                char *o = NULL;
                r = asprintf(&o, "bogus-nxdomain=%s", *ranges) < 0 ? -ENOMEM : push(l, n, o);
        }
        return r;
}

/* server= and nftset= for the name of rule i (its first rule). */
static int push_name(char ***l, size_t *n, const NetSeat *s, size_t i) {
        const EgressProfile *p = s->names;
        const char *name = p->rules[i].name;
        char set4[NFT_SET_NAME_MAX + 1], set6[NFT_SET_NAME_MAX + 1], up[INET_ADDRSTRLEN];
        char *o = NULL;
        int r = 0;

        /* The seat's DNS guard, never the upstreams themselves: dnsmasq would pass a CNAME
         * into a name not allowed, with its addresses (netdef_guard_argv()). */
        netdef_guard_address(s, up);
        r = asprintf(&o, "server=/%s/%s", name, up) < 0 ? -ENOMEM : push(l, n, o);
        nft_name_set_name(AF_INET, (int) i, s->bridge, set4);
        nft_name_set_name(AF_INET6, (int) i, s->bridge, set6);
        /* server= takes "*.x" (every name below x), but nftset= matches its domain as a
         * plain suffix and never matches "*.x": a wildcard's set would stay empty and its
         * names resolve yet never connect. Its set is keyed on x itself then, which also
         * covers x (never answered: server= for "*.x" leaves x to address=/#/). */
        const char *set_domain = name[0] == '*' && name[1] == '.' ? name + 2 : name;
        if (r >= 0 && p->ipv6)
                r = asprintf(&o, "nftset=/%s/4#" NFT_TABLE_FAMILY "#" NFT_TABLE_NAME "#%s,6#" NFT_TABLE_FAMILY
                                 "#" NFT_TABLE_NAME "#%s", set_domain, set4, set6) < 0 ? -ENOMEM : push(l, n, o);
        else if (r >= 0)
                r = asprintf(&o, "nftset=/%s/4#" NFT_TABLE_FAMILY "#" NFT_TABLE_NAME "#%s", set_domain, set4) < 0
                            ? -ENOMEM
                            : push(l, n, o);
        return r;
}

void netdef_guard_address(const NetSeat *s, char ret[static INET_ADDRSTRLEN]) {
        uint32_t h = ntohl(s->host.s_addr);
        (void) snprintf(ret, INET_ADDRSTRLEN, "127.%u.%u.%u", (h >> 16) & 0xff, (h >> 8) & 0xff, h & 0xff);
}

int netdef_guard_argv(const NetSeat *s, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        const EgressProfile *p = s->names;
        char a[INET6_ADDRSTRLEN + 2], up[INET6_ADDRSTRLEN];
        size_t n = 0;
        int r;

        if (!p || !egress_profile_has_names(p) || p->n_dns == 0)
                return -EINVAL;
        netdef_guard_address(s, a);
        r = push(&l, &n, strdup("--listen"));
        if (r >= 0)
                r = push(&l, &n, strdup(a));
        for (size_t d = 0; d < p->n_dns && r >= 0; d++) {
                if (!inet_ntop(p->dns[d].family, p->dns[d].addr, up, sizeof(up)))
                        return -EINVAL;
                r = push(&l, &n, strdup("--upstream"));
                if (r >= 0) {
                        bool v6 = p->dns[d].family == AF_INET6;
                        (void) snprintf(a, sizeof(a), v6 ? "[%s]" : "%s", up);
                        r = push(&l, &n, strdup(a));
                }
        }
        for (size_t i = 0; i < p->n_rules && r >= 0; i++)
                if (egress_profile_name_index(p, i) == (int) i) {
                        r = push(&l, &n, strdup("--allow"));
                        if (r >= 0)
                                r = push(&l, &n, strdup(p->rules[i].name));
                }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

int netdef_dnsmasq_options(const NetSeat *s, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;
        char *o = NULL;
        int r = 0;

        if (!s->names || !egress_profile_has_names(s->names)) {
                *ret = calloc(1, sizeof(char *));
                return *ret ? 0 : -ENOMEM;
        }
        if (s->names->n_dns == 0)
                return -EINVAL;
        /* Never the host's resolv.conf; no cache, so every answer goes through nftset= (a
         * flushed set fills again at the guest's next lookup). */
        r = push(&l, &n, strdup("no-resolv"));
        if (r >= 0)
                r = push(&l, &n, strdup("cache-size=0"));
        if (r >= 0)
                r = asprintf(&o, "max-ttl=%d", NFT_NAME_MAX_TTL_S) < 0 ? -ENOMEM : push(&l, &n, o);
        /* Every name no more specific server= line covers: NXDOMAIN. */
        if (r >= 0)
                r = push(&l, &n, strdup("address=/#/"));
        /* Rebinding: an answer with any such address becomes NXDOMAIN and adds nothing. */
        if (r >= 0)
                r = push_ranges(&l, &n, egress_blocked_ipv4);
        if (r >= 0)
                r = push_ranges(&l, &n, nft_name_refused_ipv4);
        if (r >= 0)
                r = push_ranges(&l, &n, egress_blocked_ipv6);
        if (r >= 0)
                r = push_ranges(&l, &n, nft_name_refused_ipv6);
        for (size_t i = 0; i < s->names->n_rules && r >= 0; i++)
                if (egress_profile_name_index(s->names, i) == (int) i)
                        r = push_name(&l, &n, s, i);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

/* Every value written below is either validated (id: a-z0-9-) or formatted by us, so
 * nothing needs XML escaping. */
int netdef_network_xml(const NetSeat *s, char **ret) {
        char host[INET_ADDRSTRLEN], guest[INET_ADDRSTRLEN], mac[18];
        _cleanup_free_ char *dhcp = NULL;
        char *xml = NULL;

        if (!id_valid(s->id) || !inet_ntop(AF_INET, &s->host, host, sizeof(host)) ||
            !inet_ntop(AF_INET, &s->guest, guest, sizeof(guest)))
                return -EINVAL;
        format_mac(s->guest_mac, mac);
        _cleanup_strv_free_ char **opts = NULL;
        _cleanup_free_ char *dnsmasq = NULL;
        size_t dsize = 0;
        if (netdef_dnsmasq_options(s, &opts) < 0)
                return -ENOMEM;
        if (opts[0]) {
                FILE *f = open_memstream(&dnsmasq, &dsize);
                if (!f)
                        return -ENOMEM;
                fputs("  <dnsmasq:options>\n", f);
                for (char **x = opts; *x; x++) /* names, addresses, set names: no XML specials */
                        fprintf(f, "    <dnsmasq:option value='%s'/>\n", *x);
                fputs("  </dnsmasq:options>\n", f);
                if (fclose(f) != 0)
                        return -ENOMEM;
        }
        const bool dns = s->dns || opts[0];
        if (s->dhcp && asprintf(&dhcp,
                                "    <dhcp>\n"
                                "      <range start='%s' end='%s'/>\n"
                                "      <host mac='%s' ip='%s'/>\n"
                                "    </dhcp>\n",
                                guest, guest, mac, guest) < 0)
                return -ENOMEM;
        if (asprintf(&xml,
                     "<network%s>\n"
                     "  <name>%s</name>\n"
                     "  <forward mode='open'/>\n"
                     "  <bridge name='%s' stp='off' delay='0'/>\n"
                     "  <port isolated='yes'/>\n"
                     "  <dns enable='%s'/>\n"
                     "  <ip address='%s' prefix='%u'>\n"
                     "%s"
                     "  </ip>\n"
                     "%s"
                     "</network>\n",
                     dnsmasq ? " xmlns:dnsmasq='http://libvirt.org/schemas/network/dnsmasq/1.0'" : "", s->network,
                     s->bridge, dns ? "yes" : "no", host, s->prefixlen, dhcp ? dhcp : "", dnsmasq ? dnsmasq : "") < 0)
                return -ENOMEM;
        *ret = xml;
        return 0;
}

/* event_idx='off': with virtio's used-event index, a TCG guest's TX queue could stall for good
 * under load. After a burst (egress-vm's 65535-port scan, with the host's CPUs busy) QEMU had
 * taken and completed every buffer the guest offered (used == avail, nothing in use), yet the
 * guest's driver never woke its stopped queue: the NETDEV watchdog fired every 5 s, and the seat
 * had no network until reset. 4 of 12 such runs stalled with it, none of 12 without. Plain
 * interrupt flags cost a few more notifications, not a seat. */
static int interface_xml(const NetSeat *s, bool link_down, char **ret) {
        char mac[18];
        char *xml = NULL;

        if (!id_valid(s->id))
                return -EINVAL;
        format_mac(s->guest_mac, mac);
        if (asprintf(&xml,
                     "<interface type='network'>\n"
                     "  <source network='%s'/>\n"
                     "  <mac address='%s'/>\n"
                     "  <model type='virtio'/>\n"
                     "  <driver event_idx='off'/>\n"
                     "%s"
                     "</interface>\n",
                     s->network, mac, link_down ? "  <link state='down'/>\n" : "") < 0)
                return -ENOMEM;
        *ret = xml;
        return 0;
}

int netdef_interface_xml(const NetSeat *s, char **ret) {
        return interface_xml(s, false, ret);
}

int netdef_interface_down_xml(const NetSeat *s, char **ret) {
        return interface_xml(s, true, ret);
}

void netdef_mac_string(const NetSeat *s, char ret[static 18]) {
        format_mac(s->guest_mac, ret);
}
