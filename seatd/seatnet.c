/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "network/conntrack.h"
#include "dnsguard-run.h"
#include "domain.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "network/netdef.h"
#include "common/netlink.h"
#include "network/nftwatch.h"
#include "network/profile.h"
#include "seat-log.h"
#include "seatnet-internal.h"

#define SEATNET_STANDBY_NETWORK "seatd-standby"
#define SEATNET_STANDBY_BRIDGE "seat-standby"
#define CREATE_TRIES 256      /* subnets tried when another network holds one */
#define UPLINK_METRIC 100
#define BLACKHOLE_METRIC 0xffffffffu

DEFINE_TRIVIAL_CLEANUP_FUNC(virNetworkPtr, virNetworkFree)
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

/* ---- host forwarding ---- */

static int sysctl_forwarding(const char *ifname, bool on) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "/proc/sys/net/ipv4/conf/%s/forwarding", ifname) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write(fd, on ? "1" : "0", 1) == 1 ? 0 : -errno;
}

static bool is_seat_bridge(const char *name) {
        return strncmp(name, NETDEF_BRIDGE_PREFIX, strlen(NETDEF_BRIDGE_PREFIX)) == 0 ||
               strncmp(name, "seath", 5) == 0;
}

/* libvirt switches on IPv4 forwarding for the whole host when it starts a network with a
 * <forward> element (every interface then forwards, eth0 included). Unless the config
 * says the host routes for others too (forwarding_lockdown = false), switch it off again
 * for everything but the seat bridges and the uplink: forwarding is a per-input-interface
 * setting, so this leaves exactly the paths the egress filter governs. */
static void forwarding_lockdown(SeatNetManager *nm) {
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_strv_free_ char **uplinks = NULL;
        struct dirent *de;

        if (!nm->lockdown || !(d = opendir("/proc/sys/net/ipv4/conf")))
                return;
        /* Every seat's uplink in the table (another seatd's too: its seats keep working). */
        (void) nft_seat_uplinks(nm->nft, &uplinks, NULL);
        while ((de = readdir(d))) {
                const char *n = de->d_name;
                if (n[0] == '.' || !strcmp(n, "all") || is_seat_bridge(n) ||
                    (nm->config->uplink && !strcmp(n, nm->config->uplink)) || strv_contains(uplinks, n))
                        continue;
                (void) sysctl_forwarding(n, false); /* "default" too: new interfaces start off */
        }
}

/* ---- the manager ---- */

static void on_tamper(const NftSeatSpec *spec, NftSeatState state, void *userdata) {
        SeatNetManager *nm = userdata;
        if (nm->n_pending >= ELEMENTSOF(nm->pending))
                return;
        Pending *p = &nm->pending[nm->n_pending++];
        (void) snprintf(p->seat, sizeof(p->seat), "%s", spec->seat);
        p->state = state;
}

/* The standby network: a bridge with no address, no forwarding and no DHCP/DNS, shared by
 * every seatd on this libvirtd (made when missing, never removed). Spare machines of warm
 * resets boot on it: they must not sit on a seat's own bridge beside its guest. */
static int standby_network(virConnectPtr conn, SeatError **ret_error) {
        _cleanup_(virNetworkFreep) virNetworkPtr net = virNetworkLookupByName(conn, SEATNET_STANDBY_NETWORK);
        if (net && virNetworkIsActive(net) == 1)
                return 0;
        virNetworkPtr made = virNetworkCreateXML(conn, "<network>\n"
                                                       "  <name>" SEATNET_STANDBY_NETWORK "</name>\n"
                                                       "  <bridge name='" SEATNET_STANDBY_BRIDGE "' stp='off' delay='0'/>\n"
                                                       "  <port isolated='yes'/>\n"
                                                       "</network>\n");
        if (!made) {
                /* Another seatd made it meanwhile? */
                _cleanup_(virNetworkFreep) virNetworkPtr again = virNetworkLookupByName(conn, SEATNET_STANDBY_NETWORK);
                if (again && virNetworkIsActive(again) == 1)
                        return 0;
                return seat_error_set(ret_error, EIO, "create the standby network '%s': %s", SEATNET_STANDBY_NETWORK,
                                      domain_last_error());
        }
        virNetworkFree(made);
        return 0;
}

int seatnet_ensure_standby(SeatNetManager *nm, virConnectPtr conn, SeatError **ret_error) {
        return nm->config->network ? standby_network(conn, ret_error) : 0;
}

static int uplink_routes(const SeatConfig *c, SeatError **ret_error) {
        struct in_addr gw;
        unsigned ifindex = if_nametoindex(c->uplink);
        if (ifindex == 0)
                return seat_error_set(ret_error, ENODEV,
                                      "uplink '%s' (seatd.conf) is not an interface on this host: create it or fix the setting",
                                      c->uplink);
        if (c->uplink_gateway && inet_pton(AF_INET, c->uplink_gateway, &gw) != 1)
                return seat_error_set(ret_error, EINVAL, "uplink_gateway '%s' is not an IPv4 address", c->uplink_gateway);
        /* Table route_table: the uplink, else a blackhole: a seat's traffic never falls
         * through to the host's main table and its default route. */
        int r = netlink_ipv4_table_default(true, (uint32_t) c->route_table, true, 0, NULL, BLACKHOLE_METRIC);
        if (r >= 0)
                r = netlink_ipv4_table_default(true, (uint32_t) c->route_table, false, (int) ifindex,
                                               c->uplink_gateway ? &gw : NULL, UPLINK_METRIC);
        if (r < 0)
                return seat_error_set(ret_error, -r, "routing table %ld towards uplink '%s': %s", c->route_table, c->uplink,
                                      strerror(-r));
        r = sysctl_forwarding(c->uplink, true);
        if (r < 0)
                return seat_error_set(ret_error, -r, "switch on forwarding for uplink '%s': %s", c->uplink, strerror(-r));
        return 0;
}

/* Chains of seat bridges that no longer exist (a seatd killed with its seats, then the
 * networks removed): nothing can use them; they only clutter the table. A bridge that
 * exists may be another seatd's and is left alone. */
static void sweep_stale_chains(SeatNetManager *nm) {
        _cleanup_strv_free_ char **bridges = NULL;
        if (nft_seat_bridges(nm->nft, &bridges, NULL) < 0)
                return;
        for (char **b = bridges; *b; b++)
                if (is_seat_bridge(*b) && if_nametoindex(*b) == 0 && nft_seat_remove(nm->nft, *b, NULL) >= 0)
                        log_info("removed the egress chains of '%s', a seat bridge that is gone", *b);
}

int seatnet_manager_new(const SeatConfig *config, SeatNetTamperFn fn, void *userdata, SeatNetManager **ret,
                        SeatError **ret_error) {
        _cleanup_(seatnet_manager_freep) SeatNetManager *nm = calloc(1, sizeof(*nm));
        if (!nm)
                return -ENOMEM;
        pthread_mutex_init(&nm->lock, NULL);
        pthread_mutex_init(&nm->guard_lock, NULL);
        nm->guard_epfd = nm->guard_timer = -EBADF;
        nm->config = config;
        nm->fn = fn;
        nm->userdata = userdata;
        if (!config->network) {
                *ret = TAKE_PTR(nm);
                return 0;
        }
        int r = netdef_pool_parse(config->net_pool, (unsigned) config->net_subnet_len, &nm->pool, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "net_pool in seatd.conf");
        nm->pool_size = netdef_pool_size(&nm->pool);
        if (!(nm->used = calloc(nm->pool_size, 1)))
                return -ENOMEM;
        nm->lockdown = config->forwarding_lockdown;
        r = nft_context_new(&nm->nft, ret_error);
        if (r >= 0)
                r = nft_monitor_new(on_tamper, nm, &nm->mon, ret_error);
        if (r >= 0 && config->uplink)
                r = uplink_routes(config, ret_error);
        if (r >= 0)
                forwarding_lockdown(nm);
        if (r >= 0)
                sweep_stale_chains(nm);
        if (r >= 0) {
                struct epoll_event ev = { .events = EPOLLIN, .data.u64 = GUARD_TIMER_KEY };
                nm->guard_epfd = epoll_create1(EPOLL_CLOEXEC);
                nm->guard_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
                if (nm->guard_epfd < 0 || nm->guard_timer < 0 ||
                    epoll_ctl(nm->guard_epfd, EPOLL_CTL_ADD, nm->guard_timer, &ev) < 0)
                        r = seat_error_set(ret_error, errno, "the DNS guards' supervision (epoll, timerfd): %m");
        }
        if (r < 0)
                return seat_error_wrap(ret_error, "seat networks (set network = false in seatd.conf to run seats without a NIC)");
        *ret = TAKE_PTR(nm);
        return 0;
}

void seatnet_set_log_group(SeatNetManager *nm, uint16_t group) {
        nm->log_group = group;
}

SeatNetManager *seatnet_manager_free(SeatNetManager *nm) {
        if (!nm)
                return NULL;
        /* (every SeatNet was freed before: none is listed) */
        safe_close(nm->guard_timer);
        safe_close(nm->guard_epfd);
        pthread_mutex_destroy(&nm->guard_lock);
        nft_monitor_free(nm->mon);
        nft_context_free(nm->nft);
        free(nm->used);
        pthread_mutex_destroy(&nm->lock);
        return mfree(nm);
}

int seatnet_fd(SeatNetManager *nm) {
        return nm && nm->mon ? nft_monitor_fd(nm->mon) : -1;
}

/* Hand the queued reports to the daemon, outside the lock (it may call back into us). */
static void deliver(SeatNetManager *nm) {
        Pending p[NFT_MONITOR_MAX_SEATS];
        size_t n = nm->n_pending;
        memcpy(p, nm->pending, n * sizeof(p[0]));
        nm->n_pending = 0;
        pthread_mutex_unlock(&nm->lock);
        for (size_t i = 0; i < n; i++)
                nm->fn(p[i].seat, p[i].state, nm->userdata);
}

/* Reading the monitor's events and the periodic check both run one monitor step under
 * the lock, then hand what it found to the callback (what: the warning's subject). */
static void monitor_step(SeatNetManager *nm, int (*step)(NftMonitor *m, SeatError **ret_error), const char *what) {
        _cleanup_error_ SeatError *err = NULL;
        if (!nm->mon)
                return;
        pthread_mutex_lock(&nm->lock);
        if (step(nm->mon, &err) < 0)
                log_warning("%s: %s", what, err ? err->message : "?");
        deliver(nm);
}

void seatnet_process(SeatNetManager *nm) {
        monitor_step(nm, nft_monitor_process, "watching table inet seatd");
}

void seatnet_check(SeatNetManager *nm) {
        monitor_step(nm, nft_monitor_check, "checking table inet seatd");
}

/* ---- one seat ---- */

bool seatnet_profile_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        return n > 0 && n <= SEATNET_PROFILE_NAME_MAX && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static int load_profile(SeatNetManager *nm, SeatNet *n, const char *saved, SeatError **ret_error) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (saved)
                r = egress_profile_parse(saved, strlen(saved), &n->profile, ret_error);
        else if (!strcmp(n->profile_name, SEATNET_PROFILE_NONE))
                r = egress_profile_parse("", 0, &n->profile, ret_error);
        else if (asprintf(&path, "%s/%s.profile", nm->config->egress_dir, n->profile_name) < 0)
                return -ENOMEM;
        else if (access(path, F_OK) < 0 && errno == ENOENT)
                return seat_error_set(ret_error, ENOENT, "no egress profile '%s' (looked for '%s'; see docs/egress.md)",
                                      n->profile_name, path);
        else
                r = egress_profile_load(path, &n->profile, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "egress profile '%s'", n->profile_name);
        if (egress_profile_format(n->profile, &n->profile_text) < 0)
                return -ENOMEM;
        if (!nm->config->uplink && (n->profile->n_rules > 0 || n->profile->n_dns > 0))
                return seat_error_set(ret_error, EINVAL,
                                      "egress profile '%s' allows traffic out, but seatd.conf names no uplink: set 'uplink = IFNAME' (and uplink_gateway) or use a profile without allow/dns rules",
                                      n->profile_name);
        return 0;
}

static int alloc_index(SeatNetManager *nm, int from) {
        pthread_mutex_lock(&nm->lock);
        int r = -ENOSPC;
        for (unsigned i = (unsigned) from; i < nm->pool_size; i++)
                if (!nm->used[i]) {
                        nm->used[i] = 1;
                        r = (int) i;
                        break;
                }
        pthread_mutex_unlock(&nm->lock);
        return r;
}

static void free_index(SeatNetManager *nm, int i) {
        if (i < 0 || (unsigned) i >= nm->pool_size)
                return;
        pthread_mutex_lock(&nm->lock);
        nm->used[i] = 0;
        pthread_mutex_unlock(&nm->lock);
}

/* A network of that name that runs already (adoption) is taken as it is. */
static int create_network(virConnectPtr conn, const NetSeat *ns, SeatError **ret_error) {
        _cleanup_free_ char *xml = NULL;
        _cleanup_(virNetworkFreep) virNetworkPtr net = virNetworkLookupByName(conn, ns->network);
        if (net && virNetworkIsActive(net) == 1)
                return 0;
        if (netdef_network_xml(ns, &xml) < 0)
                return -ENOMEM;
        virNetworkPtr made = virNetworkCreateXML(conn, xml);
        if (!made)
                return seat_error_set(ret_error, EADDRINUSE, "create network '%s': %s", ns->network, domain_last_error());
        virNetworkFree(made);
        return 0;
}

static void destroy_network(virConnectPtr conn, const char *seat_id, const char *name) {
        _cleanup_(virNetworkFreep) virNetworkPtr net = conn ? virNetworkLookupByName(conn, name) : NULL;
        if (net && virNetworkDestroy(net) < 0)
                log_seat_warning(seat_id, "destroy network '%s': %s", name, domain_last_error());
}

static int make_network(SeatNetManager *nm, virConnectPtr conn, SeatNet *n, int index, SeatError **ret_error) {
        const EgressProfile *p = n->profile;
        int from = 0;

        for (int tries = 0;; tries++) {
                _cleanup_error_ SeatError *err = NULL;
                int i = index >= 0 ? index : alloc_index(nm, from);
                if (i < 0)
                        return seat_error_set(ret_error, ENOSPC, "the seat network pool %s is full (%u subnets)",
                                              nm->config->net_pool, nm->pool_size);
                if (index >= 0) {
                        pthread_mutex_lock(&nm->lock);
                        nm->used[i] = 1;
                        pthread_mutex_unlock(&nm->lock);
                }
                n->index = i;
                int r = netdef_seat(&nm->pool, n->seat_id, (unsigned) i, p->dhcp, p->dns_host, &n->ns, ret_error);
                n->ns.names = p; /* with "allow name": the seat's resolver serves only them */
                if (r >= 0)
                        r = create_network(conn, &n->ns, &err);
                if (r >= 0)
                        return 0;
                /* Another network (another seatd, the host) holds that subnet: try the next,
                 * keeping this one marked so nobody here tries it again. */
                if (r != -EADDRINUSE || index >= 0 || tries + 1 >= CREATE_TRIES) {
                        if (err)
                                *ret_error = TAKE_PTR(err);
                        n->index = -1;
                        if (index >= 0)
                                free_index(nm, i);
                        return r;
                }
                log_debug("subnet %d of the seat pool is taken elsewhere, trying the next: %s", i, err->message);
                from = i + 1;
        }
}

static void fill_spec(SeatNetManager *nm, SeatNet *n) {
        char a[INET_ADDRSTRLEN];
        n->spec = (NftSeatSpec) { .seat = n->seat_id, .bridge = n->ns.bridge, .uplink = nm->config->uplink,
                                  .guest = n->ns.guest, .host = n->ns.host, .has_mac = true, .masquerade = nm->config->uplink && nm->config->masquerade,
                                  .log_group = nm->log_group, .profile = n->profile };
        memcpy(n->spec.guest_mac, n->ns.guest_mac, 6);
        (void) inet_ntop(AF_INET, &n->ns.guest, a, sizeof(a));
        (void) snprintf(n->guest_cidr, sizeof(n->guest_cidr), "%s/%u", a, n->ns.prefixlen);
        (void) inet_ntop(AF_INET, &n->ns.host, n->gateway, sizeof(n->gateway));
}

static void seatnet_free(SeatNetManager *nm, SeatNet *n) {
        if (!n)
                return;
        /* A deliberate stop: off the list first, under the lock the restarts take, so none
         * follows it. */
        pthread_mutex_lock(&nm->guard_lock);
        DnsGuardProc g = seatnet_guard_unwatch(nm, n);
        pthread_mutex_unlock(&nm->guard_lock);
        dnsguard_run_stop(&g);
        egress_profile_free(n->profile);
        free(n->profile_text);
        free(n);
}

static int install_and_watch(SeatNetManager *nm, SeatNet *n, SeatError **ret_error) {
        pthread_mutex_lock(&nm->lock);
        forwarding_lockdown(nm);
        int r = sysctl_forwarding(n->ns.bridge, nm->config->uplink != NULL);
        if (r < 0)
                r = seat_error_set(ret_error, -r, "forwarding on bridge '%s': %s", n->ns.bridge, strerror(-r));
        if (r >= 0)
                r = nft_seat_install(nm->nft, &n->spec, ret_error);
        n->rules = r >= 0;
        if (r >= 0 && nm->config->uplink) {
                r = netlink_ipv4_rule(true, n->ns.bridge, (uint32_t) nm->config->route_table,
                                      (uint32_t) nm->config->route_priority);
                if (r < 0)
                        r = seat_error_set(ret_error, -r, "route seat bridge '%s' to table %ld: %s", n->ns.bridge,
                                           nm->config->route_table, strerror(-r));
                n->routed = r >= 0;
        }
        if (r >= 0)
                r = nft_monitor_add(nm->mon, &n->spec);
        n->watched = r >= 0;
        pthread_mutex_unlock(&nm->lock);
        return r;
}

int seatnet_up(SeatNetManager *nm, virConnectPtr conn, const char *seat_id, const char *profile_name, int index,
               const char *saved_profile, SeatNet **ret, SeatError **ret_error) {
        if (!nm->config->network) {
                *ret = NULL;
                return 0;
        }
        if (!profile_name)
                profile_name = nm->config->default_egress;
        if (!seatnet_profile_name_valid(profile_name))
                return seat_error_set(ret_error, EINVAL, "'%s' is not an egress profile name ([a-z0-9_-], at most %d)",
                                      profile_name, SEATNET_PROFILE_NAME_MAX);
        SeatNet *n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        n->index = -1;
        n->guard = DNSGUARD_PROC_NONE;
        (void) snprintf(n->seat_id, sizeof(n->seat_id), "%s", seat_id);
        (void) snprintf(n->profile_name, sizeof(n->profile_name), "%s", profile_name);
        int r = load_profile(nm, n, saved_profile, ret_error);
        if (r >= 0)
                r = make_network(nm, conn, n, index, ret_error);
        if (r >= 0) {
                fill_spec(nm, n);
                r = install_and_watch(nm, n, ret_error);
        }
        /* The resolver's upstream for the names (a new one when adopting: the last seatd's
         * went with it), before the machine can ask. */
        if (r >= 0 && egress_profile_has_names(n->profile))
                r = seatnet_guard_start(nm, n, false, ret_error);
        /* A new seat on this subnet: nothing tracked for its address may date from a seat
         * that had it before (released, or left by a seatd that was killed). An adopted seat
         * (index >= 0) keeps its own flows. */
        if (r >= 0 && index < 0)
                r = seatnet_forget_flows(n, ret_error);
        if (r < 0) {
                if (n->index >= 0)
                        seatnet_down(nm, conn, n);
                else
                        seatnet_free(nm, n);
                return seat_error_wrap(ret_error, "network of seat '%s'", seat_id);
        }
        *ret = n;
        return 0;
}

void seatnet_down(SeatNetManager *nm, virConnectPtr conn, SeatNet *n) {
        _cleanup_error_ SeatError *err = NULL;
        if (!n)
                return;
        pthread_mutex_lock(&nm->lock);
        if (n->watched)
                (void) nft_monitor_remove(nm->mon, n->ns.bridge);
        if (n->routed)
                (void) netlink_ipv4_rule(false, n->ns.bridge, (uint32_t) nm->config->route_table,
                                         (uint32_t) nm->config->route_priority);
        if (n->ns.bridge[0] && nft_seat_remove(nm->nft, n->ns.bridge, &err) < 0)
                log_seat_warning(n->seat_id, "seat '%s': removing its egress rules: %s", n->seat_id, err->message);
        pthread_mutex_unlock(&nm->lock);
        if (n->ns.network[0])
                destroy_network(conn, n->seat_id, n->ns.network);
        /* Its address goes back to the pool: the next seat given it starts without its flows. */
        _cleanup_error_ SeatError *ct_err = NULL;
        if (n->ns.bridge[0] && seatnet_forget_flows(n, &ct_err) < 0)
                log_seat_warning(n->seat_id, "%s", ct_err ? ct_err->message : "removing its connection tracking entries failed");
        /* The index last: its guard's address is free only once seatnet_free() stopped it
         * (up to its grace), and a seat given the index next binds that address. */
        int index = n->index;
        seatnet_free(nm, n);
        free_index(nm, index);
}

void seatnet_forget(SeatNetManager *nm, SeatNet *n) {
        if (!n)
                return;
        if (n->watched && nm->mon) {
                pthread_mutex_lock(&nm->lock);
                (void) nft_monitor_remove(nm->mon, n->ns.bridge);
                pthread_mutex_unlock(&nm->lock);
        }
        seatnet_free(nm, n);
}

void seatnet_remove_orphan(SeatNetManager *nm, virConnectPtr conn, const char *seat_id) {
        char bridge[NETDEF_IFNAME_MAX + 1], network[sizeof(NETDEF_NETWORK_PREFIX) + NETDEF_SEAT_ID_MAX];
        if (!nm || !nm->config->network || netdef_bridge_name(seat_id, bridge) < 0)
                return;
        (void) snprintf(network, sizeof(network), NETDEF_NETWORK_PREFIX "%s", seat_id);
        pthread_mutex_lock(&nm->lock);
        (void) nft_monitor_remove(nm->mon, bridge);
        (void) netlink_ipv4_rule(false, bridge, (uint32_t) nm->config->route_table, (uint32_t) nm->config->route_priority);
        (void) nft_seat_remove(nm->nft, bridge, NULL);
        pthread_mutex_unlock(&nm->lock);
        destroy_network(conn, seat_id, network);
}

int seatnet_reinstall(SeatNetManager *nm, SeatNet *n, SeatError **ret_error) {
        if (!n)
                return 0;
        pthread_mutex_lock(&nm->lock);
        int r = nft_seat_install(nm->nft, &n->spec, ret_error);
        pthread_mutex_unlock(&nm->lock);
        /* The seat's network as its profile says includes its guard: one that failed for
         * good is started again, with a fresh budget of restarts. */
        if (r >= 0 && egress_profile_has_names(n->profile))
                r = seatnet_guard_start(nm, n, true, ret_error);
        return r;
}

int seatnet_index(const SeatNet *n) {
        return n ? n->index : -1;
}

const char *seatnet_profile_name(const SeatNet *n) {
        return n ? n->profile_name : NULL;
}

const char *seatnet_bridge(const SeatNet *n) {
        return n ? n->ns.bridge : NULL;
}

bool seatnet_capture(const SeatNet *n, unsigned *ret_snaplen, unsigned *ret_max_mib) {
        if (!n || !n->profile || !n->profile->capture)
                return false;
        *ret_snaplen = n->profile->capture_snaplen;
        *ret_max_mib = n->profile->capture_max_mib;
        return true;
}

const char *seatnet_profile_text(const SeatNet *n) {
        return n ? n->profile_text : NULL;
}

int seatnet_interface_xml(const SeatNet *n, char **ret) {
        return netdef_interface_xml(&n->ns, ret);
}

int seatnet_standby_interface_xml(const SeatNet *n, char **ret) {
        NetSeat standby = n->ns;
        (void) snprintf(standby.network, sizeof(standby.network), SEATNET_STANDBY_NETWORK);
        return netdef_interface_xml(&standby, ret);
}

/* The host end of the domain's NIC with that MAC, from its live XML: "<target dev='vnetN'/>"
 * inside the <interface> that has "<mac address='MAC'/>". -ENOENT when there is none. */
static int find_tap(const char *xml, const char *mac, char ret[static IF_NAMESIZE]) {
        _cleanup_free_ char *want = NULL;
        if (asprintf(&want, "<mac address='%s'/>", mac) < 0)
                return -ENOMEM;
        for (const char *p = xml; (p = strstr(p, "<interface ")); p++) {
                const char *end = strstr(p, "</interface>");
                if (!end)
                        return -EBADMSG;
                const char *m = strstr(p, want), *t = strstr(p, "<target dev='");
                if (!m || m > end || !t || t > end)
                        continue;
                t += strlen("<target dev='");
                size_t len = strcspn(t, "'");
                if (len == 0 || len >= IF_NAMESIZE || t[len] != '\'' ||
                    strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") < len)
                        return -EBADMSG;
                memcpy(ret, t, len);
                ret[len] = 0;
                return 0;
        }
        return -ENOENT;
}

/* Set the tap down, if it is still a port of the seat's bridge (a name libvirt freed may
 * have been given to another machine's tap meanwhile: that one is left alone). */
static int tap_down(const SeatNet *n, const char *tap) {
        char path[PATH_MAX], master[PATH_MAX];
        (void) snprintf(path, sizeof(path), "/sys/class/net/%s/master", tap);
        ssize_t l = readlink(path, master, sizeof(master) - 1);
        if (l < 0)
                return errno == ENOENT ? 0 : -errno; /* gone, or on no bridge */
        master[l] = 0;
        if (strcmp(basename(master), n->ns.bridge) != 0)
                return 0;
        unsigned ifindex = if_nametoindex(tap);
        if (ifindex == 0)
                return errno == ENODEV ? 0 : -errno;
        int r = netlink_link_down((int) ifindex);
        return r == -ENODEV ? 0 : r;
}

int seatnet_unplug(SeatNet *n, virDomainPtr dom, SeatError **ret_error) {
        _cleanup_free_ char *down = NULL, *xml = NULL;
        char mac[18], tap[IF_NAMESIZE];
        if (!n || !dom)
                return 0;
        netdef_mac_string(&n->ns, mac);
        /* The tap's name first: the live XML still has it. */
        xml = virDomainGetXMLDesc(dom, 0);
        if (!xml)
                return virDomainIsActive(dom) == 1
                               ? seat_error_set(ret_error, EIO, "seat '%s': read the old machine's definition: %s",
                                                n->seat_id, domain_last_error())
                               : 0;
        int r = find_tap(xml, mac, tap);
        if (r == -ENOENT)
                tap[0] = 0; /* no NIC (already gone), or no tap */
        else if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s': no tap name for MAC %s in the old machine's definition",
                                      n->seat_id, mac);
        if (netdef_interface_down_xml(&n->ns, &down) < 0)
                return -ENOMEM;
        if (virDomainUpdateDeviceFlags(dom, down, VIR_DOMAIN_AFFECT_LIVE) < 0 && virDomainIsActive(dom) == 1)
                return seat_error_set(ret_error, EIO, "seat '%s': set the old machine's link down: %s", n->seat_id,
                                      domain_last_error());
        if (tap[0] && (r = tap_down(n, tap)) < 0)
                return seat_error_set(ret_error, -r, "seat '%s': set the old machine's tap '%s' down: %s", n->seat_id,
                                      tap, strerror(-r));
        return 0;
}

int seatnet_forget_flows(SeatNet *n, SeatError **ret_error) {
        char a[INET_ADDRSTRLEN];
        if (!n)
                return 0;
        (void) inet_ntop(AF_INET, &n->ns.guest, a, sizeof(a));
        int r = conntrack_flush_ipv4(n->ns.guest);
        if (r < 0)
                return seat_error_set(ret_error, -r,
                                      "seat '%s': remove the connection tracking entries of guest address %s: %s%s",
                                      n->seat_id, a, strerror(-r),
                                      r == -EPROTONOSUPPORT ? " (load the nf_conntrack_netlink module)" : "");
        if (r > 0)
                log_seat_info(n->seat_id, "seat '%s': %d connection tracking entries of guest address %s removed",
                              n->seat_id, r, a);
        return r;
}

void seatnet_guest_address(const SeatNet *n, AgentAddress *ret) {
        *ret = (AgentAddress) { .ifname = (char *) SEATNET_GUEST_IFNAME, .address = (char *) n->guest_cidr,
                                .gateway = (char *) n->gateway };
}

uint64_t seatnet_denied_delta(SeatNetManager *nm, SeatNet *n) {
        uint64_t now = 0;
        if (!n)
                return 0;
        pthread_mutex_lock(&nm->lock);
        int r = nft_seat_denied(nm->nft, n->ns.bridge, &now, NULL);
        pthread_mutex_unlock(&nm->lock);
        if (r < 0 || now < n->denied_seen) { /* rules re-installed: counters start again */
                n->denied_seen = r < 0 ? n->denied_seen : now;
                return r < 0 ? 0 : now;
        }
        uint64_t d = now - n->denied_seen;
        n->denied_seen = now;
        return d;
}

int seatnet_to_json(SeatNetManager *nm, const SeatNet *n, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *rules = NULL;
        _cleanup_error_ SeatError *err = NULL;
        char host[INET_ADDRSTRLEN];
        uint64_t denied = 0;

        if (!o)
                return -ENOMEM;
        (void) inet_ntop(AF_INET, &n->ns.host, host, sizeof(host));
        json_object_object_add(o, "profile", json_object_new_string(n->profile_name));
        json_object_object_add(o, "network", json_object_new_string(n->ns.network));
        json_object_object_add(o, "bridge", json_object_new_string(n->ns.bridge));
        json_object_object_add(o, "guest", json_object_new_string(n->guest_cidr));
        json_object_object_add(o, "host", json_object_new_string(host));
        json_object_object_add(o, "uplink", nm->config->uplink ? json_object_new_string(nm->config->uplink) : NULL);
        pthread_mutex_lock(&nm->lock);
        int r = nft_seat_counters(nm->nft, n->ns.bridge, &rules, &err);
        if (r >= 0)
                r = nft_seat_denied(nm->nft, n->ns.bridge, &denied, &err);
        pthread_mutex_unlock(&nm->lock);
        if (r < 0)
                json_object_object_add(o, "rules_error", json_object_new_string(err ? err->message : strerror(-r)));
        json_object_object_add(o, "rules", rules);
        if (egress_profile_has_names(n->profile)) {
                char addr[INET_ADDRSTRLEN];
                json_object *g = json_object_new_object();
                if (!g)
                        return -ENOMEM;
                netdef_guard_address(&n->ns, addr);
                pthread_mutex_lock(&nm->guard_lock);
                json_object_object_add(g, "address", json_object_new_string(addr));
                json_object_object_add(g, "pid", json_object_new_int64(n->guard.pid));
                json_object_object_add(g, "state", json_object_new_string(seatnet_guard_state_to_string(n->guard_state)));
                json_object_object_add(g, "restarts", json_object_new_int64(n->guard_restarts));
                if (n->guard_last_exit[0])
                        json_object_object_add(g, "last_exit", json_object_new_string(n->guard_last_exit));
                if (n->guard_error[0])
                        json_object_object_add(g, "error", json_object_new_string(n->guard_error));
                pthread_mutex_unlock(&nm->guard_lock);
                json_object_object_add(o, "dnsguard", g);
                json_object *names = NULL;
                _cleanup_error_ SeatError *nerr = NULL;
                pthread_mutex_lock(&nm->lock);
                int k = nft_seat_names(nm->nft, &n->spec, &names, &nerr);
                pthread_mutex_unlock(&nm->lock);
                if (k < 0)
                        json_object_object_add(o, "names_error", json_object_new_string(nerr ? nerr->message : strerror(-k)));
                json_object_object_add(o, "names", names);
        }
        json_object_object_add(o, "denied_packets", json_object_new_int64((int64_t) denied));
        *ret = TAKE_PTR(o);
        return 0;
}
