/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Just enough rtnetlink to bring a link up, add an IPv4 address and a default route (the
 * guest), and policy-routing rules and per-table defaults (the host): one request, one
 * ACK, on a short-lived socket with a receive timeout.
 */

#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "macro.h"
#include "netlink.h"
#include "nlmsg.h"

typedef struct NetlinkRequest {
        struct nlmsghdr h;
        union {
                struct ifinfomsg ifi;
                struct ifaddrmsg ifa;
                struct rtmsg rtm;
                struct fib_rule_hdr frh;
        };
        char attrs[256];
} NetlinkRequest;

static int netlink_add_attr(NetlinkRequest *req, unsigned short type, const void *data, size_t len) {
        size_t off = NLMSG_ALIGN(req->h.nlmsg_len);
        struct rtattr *rta;

        if (off + RTA_SPACE(len) > sizeof(*req))
                return -ENOBUFS;
        rta = (struct rtattr *) ((char *) req + off);
        rta->rta_type = type;
        rta->rta_len = (unsigned short) RTA_LENGTH(len);
        memcpy(RTA_DATA(rta), data, len);
        req->h.nlmsg_len = (uint32_t) (off + RTA_SPACE(len));
        return 0;
}

static int netlink_talk(NetlinkRequest *req) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        struct timeval tv = { .tv_sec = 2 };
        static uint32_t seq = 1;
        union {
                struct nlmsghdr h;
                char buf[8192];
        } resp;

        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;

        req->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
        req->h.nlmsg_seq = ++seq;
        if (sendto(fd, req, req->h.nlmsg_len, 0, (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
                return -errno;

        for (;;) {
                ssize_t n = recv(fd, &resp, sizeof(resp), 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EAGAIN ? -ETIMEDOUT : -errno;
                }
                ssize_t left = n; /* nlmsg.h */
                for (const struct nlmsghdr *h = &resp.h; nlmsg_ok(h, left); h = nlmsg_next(h, &left)) {
                        if (h->nlmsg_seq != req->h.nlmsg_seq)
                                continue;
                        if (h->nlmsg_type == NLMSG_ERROR) {
                                const struct nlmsgerr *e = NLMSG_DATA(h);
                                if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
                                        return -EBADMSG;
                                return e->error; /* 0 (the ACK) or -errno */
                        }
                        if (h->nlmsg_type == NLMSG_DONE)
                                return 0;
                }
        }
}

static int netlink_link_set_up(int ifindex, bool up) {
        NetlinkRequest req = {};

        req.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
        req.h.nlmsg_type = RTM_NEWLINK;
        req.ifi.ifi_family = AF_UNSPEC;
        req.ifi.ifi_index = ifindex;
        req.ifi.ifi_flags = up ? IFF_UP : 0;
        req.ifi.ifi_change = IFF_UP;
        return netlink_talk(&req);
}

int netlink_link_up(int ifindex) {
        return netlink_link_set_up(ifindex, true);
}

int netlink_link_down(int ifindex) {
        return netlink_link_set_up(ifindex, false);
}

int netlink_add_ipv4_address(int ifindex, struct in_addr addr, unsigned prefixlen) {
        NetlinkRequest req = {};
        int r;

        req.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
        req.h.nlmsg_type = RTM_NEWADDR;
        req.h.nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
        req.ifa.ifa_family = AF_INET;
        req.ifa.ifa_prefixlen = (unsigned char) prefixlen;
        req.ifa.ifa_scope = RT_SCOPE_UNIVERSE;
        req.ifa.ifa_index = (unsigned) ifindex;

        r = netlink_add_attr(&req, IFA_LOCAL, &addr, sizeof(addr));
        if (r < 0)
                return r;
        r = netlink_add_attr(&req, IFA_ADDRESS, &addr, sizeof(addr));
        if (r < 0)
                return r;
        if (prefixlen < 31) {
                struct in_addr brd = {
                        .s_addr = addr.s_addr | htonl(prefixlen == 0 ? 0xffffffffu : (0xffffffffu >> prefixlen)),
                };
                r = netlink_add_attr(&req, IFA_BROADCAST, &brd, sizeof(brd));
                if (r < 0)
                        return r;
        }
        return netlink_talk(&req);
}

int netlink_add_ipv4_default_route(int ifindex, struct in_addr gateway) {
        NetlinkRequest req = {};
        uint32_t oif = (uint32_t) ifindex;
        int r;

        req.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
        req.h.nlmsg_type = RTM_NEWROUTE;
        req.h.nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
        req.rtm.rtm_family = AF_INET;
        req.rtm.rtm_dst_len = 0;
        req.rtm.rtm_table = RT_TABLE_MAIN;
        req.rtm.rtm_protocol = RTPROT_BOOT;
        req.rtm.rtm_scope = RT_SCOPE_UNIVERSE;
        req.rtm.rtm_type = RTN_UNICAST;

        r = netlink_add_attr(&req, RTA_GATEWAY, &gateway, sizeof(gateway));
        if (r < 0)
                return r;
        r = netlink_add_attr(&req, RTA_OIF, &oif, sizeof(oif));
        if (r < 0)
                return r;
        return netlink_talk(&req);
}

int netlink_ipv4_rule(bool add, const char *iifname, uint32_t table, uint32_t priority) {
        NetlinkRequest req = {};
        size_t n = iifname ? strlen(iifname) : 0;
        int r;

        if (n == 0 || n >= IFNAMSIZ || table == 0)
                return -EINVAL;
        req.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct fib_rule_hdr));
        req.h.nlmsg_type = add ? RTM_NEWRULE : RTM_DELRULE;
        req.h.nlmsg_flags = add ? NLM_F_CREATE | NLM_F_EXCL : 0;
        req.frh.family = AF_INET;
        req.frh.action = FR_ACT_TO_TBL;
        req.frh.table = table < 256 ? (unsigned char) table : RT_TABLE_UNSPEC;
        r = netlink_add_attr(&req, FRA_IFNAME, iifname, n + 1);
        if (r >= 0)
                r = netlink_add_attr(&req, FRA_TABLE, &table, sizeof(table));
        if (r >= 0)
                r = netlink_add_attr(&req, FRA_PRIORITY, &priority, sizeof(priority));
        if (r < 0)
                return r;
        r = netlink_talk(&req);
        if (add && r == -EEXIST)
                return 0;
        if (!add && r == -ENOENT)
                return 0;
        return r;
}

int netlink_ipv4_table_default(bool add, uint32_t table, bool blackhole, int ifindex, const struct in_addr *gateway,
                               uint32_t metric) {
        NetlinkRequest req = {};
        uint32_t oif = (uint32_t) ifindex;
        int r;

        if (table == 0 || (!blackhole && ifindex <= 0))
                return -EINVAL;
        req.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
        req.h.nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
        req.h.nlmsg_flags = add ? NLM_F_CREATE | NLM_F_REPLACE : 0;
        req.rtm.rtm_family = AF_INET;
        req.rtm.rtm_table = table < 256 ? (unsigned char) table : RT_TABLE_UNSPEC;
        req.rtm.rtm_protocol = RTPROT_STATIC;
        req.rtm.rtm_type = blackhole ? RTN_BLACKHOLE : RTN_UNICAST;
        req.rtm.rtm_scope = blackhole || gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
        r = netlink_add_attr(&req, RTA_TABLE, &table, sizeof(table));
        if (r >= 0)
                r = netlink_add_attr(&req, RTA_PRIORITY, &metric, sizeof(metric));
        if (r >= 0 && !blackhole && gateway)
                r = netlink_add_attr(&req, RTA_GATEWAY, gateway, sizeof(*gateway));
        if (r >= 0 && !blackhole)
                r = netlink_add_attr(&req, RTA_OIF, &oif, sizeof(oif));
        if (r < 0)
                return r;
        r = netlink_talk(&req);
        if (!add && r == -ESRCH)
                return 0;
        return r;
}
