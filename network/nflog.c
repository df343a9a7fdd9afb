/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* glibc's <netinet/in.h> (through nflog.h) before the kernel headers that include
 * <linux/in.h>. */
#include "nflog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>

#include "nlattr.h"

#include "common/macro.h"

/* Room for bursts between two reads; beyond it the kernel drops and says ENOBUFS. */
#define NFLOG_SOCKET_RCVBUF (1024 * 1024)
/* The kernel batches logged packets: hand them over after at most this long (1/100 s). */
#define NFLOG_FLUSH_TIMEOUT_CS 10
/* IPv6 extension headers walked to find the transport header. */
#define IPV6_EXT_MAX 4

/* ---- the parser ---- */

/* Collects the attributes of one message by type (the first of each); false when one's
 * length does not fit. */
static bool attrs_collect(const uint8_t *buf, size_t len, const struct nlattr *tb[static NFULA_MAX + 1]) {
        const struct nlattr *a;
        size_t off = 0;
        int r;
        for (int i = 0; i <= NFULA_MAX; i++)
                tb[i] = NULL;
        while ((r = nlattr_next(buf, len, &off, &a)) > 0)
                if (nlattr_type(a) <= NFULA_MAX && !tb[nlattr_type(a)])
                        tb[nlattr_type(a)] = a;
        return r == 0;
}


static bool has_ports(uint8_t proto) {
        return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP || proto == IPPROTO_UDPLITE;
}

static uint16_t get_be16(const uint8_t *p) {
        return (uint16_t) ((p[0] << 8) | p[1]);
}

static void transport(const uint8_t *p, size_t len, size_t off, uint8_t proto, NflogPacket *ret) {
        ret->proto = proto;
        if (has_ports(proto) && off <= len && len - off >= 4)
                ret->dport = get_be16(p + off + 2);
}

void nflog_payload_parse(const uint8_t *p, size_t len, NflogPacket *ret) {
        ret->family = AF_UNSPEC;
        ret->proto = 0;
        ret->dport = 0;
        memset(ret->daddr, 0, sizeof(ret->daddr));
        if (len < 1)
                return;
        if ((p[0] >> 4) == 4) {
                size_t ihl = (size_t) (p[0] & 0x0f) * 4;
                if (len < 20 || ihl < 20)
                        return;
                ret->family = AF_INET;
                memcpy(ret->daddr, p + 16, 4);
                /* A later fragment has no transport header. */
                bool later_fragment = (get_be16(p + 6) & 0x1fff) != 0;
                if (later_fragment)
                        ret->proto = p[9];
                else
                        transport(p, len, ihl, p[9], ret);
                return;
        }
        if ((p[0] >> 4) == 6) {
                if (len < 40)
                        return;
                ret->family = AF_INET6;
                memcpy(ret->daddr, p + 24, 16);
                uint8_t nh = p[6];
                size_t off = 40;
                for (int i = 0; i < IPV6_EXT_MAX; i++) {
                        if (nh != IPPROTO_HOPOPTS && nh != IPPROTO_ROUTING && nh != IPPROTO_DSTOPTS)
                                break;
                        if (len - off < 2) {
                                nh = 0;
                                break;
                        }
                        size_t ext = ((size_t) p[off + 1] + 1) * 8;
                        nh = p[off];
                        if (ext > len - off) {
                                off = len;
                                break;
                        }
                        off += ext;
                }
                if (nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING || nh == IPPROTO_DSTOPTS)
                        nh = 0; /* more extension headers than walked: unknown */
                transport(p, len, off, nh, ret);
        }
}

/* "seatd-deny <seat> " with a valid seat id: copies it. */
static bool prefix_seat(const struct nlattr *a, char seat[static NFT_SEAT_NAME_MAX + 1]) {
        const char *s = (const char *) nlattr_data(a);
        size_t n = strnlen(s, nlattr_len(a)), plen = strlen(NFT_LOG_PREFIX);
        if (n <= plen + 1 || strncmp(s, NFT_LOG_PREFIX, plen) != 0 || s[n - 1] != ' ')
                return false;
        size_t id = n - plen - 1;
        if (id > NFT_SEAT_NAME_MAX)
                return false;
        for (size_t i = 0; i < id; i++) {
                char c = s[plen + i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
                        return false;
        }
        memcpy(seat, s + plen, id);
        seat[id] = '\0';
        return true;
}

int nflog_packet_parse(const void *msg, size_t len, NflogPacket *ret) {
        const struct nlmsghdr *h = msg;
        if (len < NLMSG_HDRLEN || h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > len)
                return -EBADMSG;
        if (h->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET))
                return 0;
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg)))
                return -EBADMSG;
        const uint8_t *attrs = (const uint8_t *) NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(struct nfgenmsg));
        size_t n = h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct nfgenmsg)));

        const struct nlattr *tb[NFULA_MAX + 1];
        if (!attrs_collect(attrs, n, tb))
                return -EBADMSG;
        NflogPacket p = {};
        if (!tb[NFULA_PREFIX] || !prefix_seat(tb[NFULA_PREFIX], p.seat))
                return 0;
        uint16_t hw_protocol = 0;
        if (tb[NFULA_PACKET_HDR]) {
                if (nlattr_len(tb[NFULA_PACKET_HDR]) < sizeof(struct nfulnl_msg_packet_hdr))
                        return -EBADMSG;
                hw_protocol = get_be16(nlattr_data(tb[NFULA_PACKET_HDR]));
        }
        /* The link layer says what the payload is when it knows (at the ingress hook an
         * ARP or a VLAN-tagged frame is no IP packet, whatever its first nibble). */
        if (tb[NFULA_PAYLOAD] && (hw_protocol == 0 || hw_protocol == 0x0800 || hw_protocol == 0x86dd))
                nflog_payload_parse(nlattr_data(tb[NFULA_PAYLOAD]), nlattr_len(tb[NFULA_PAYLOAD]), &p);
        if ((hw_protocol == 0x0800 && p.family != AF_INET) || (hw_protocol == 0x86dd && p.family != AF_INET6)) {
                p.family = AF_UNSPEC;
                p.proto = 0;
                p.dport = 0;
                memset(p.daddr, 0, sizeof(p.daddr));
        }
        *ret = p;
        return 1;
}

/* ---- the socket ---- */

typedef struct ConfigRequest {
        struct nlmsghdr h;
        struct nfgenmsg g;
        struct nlattr cmd_a;
        struct nfulnl_msg_config_cmd cmd;
        uint8_t pad1[3];
        struct nlattr mode_a;
        struct nfulnl_msg_config_mode mode;
        uint8_t pad2[2];
        struct nlattr timeout_a;
        uint32_t timeout; /* big-endian */
} ConfigRequest;

static int wait_ack(int fd, uint32_t seq) {
        uint8_t buf[4096];
        for (;;) {
                ssize_t n = recv(fd, buf, sizeof(buf), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
                int err, k = nlmsg_find_ack(buf, (size_t) n, seq, &err);
                if (k != 0)
                        return k < 0 ? k : err;
        }
}

int nflog_open(uint16_t group, int timeout_ms, int *ret_fd) {
        if (group == 0 || timeout_ms <= 0)
                return -EINVAL;
        _cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
        if (fd < 0)
                return -errno;
        struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
        int rcvbuf = NFLOG_SOCKET_RCVBUF;
        struct sockaddr_nl local = { .nl_family = AF_NETLINK };
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0 ||
            bind(fd, (const struct sockaddr *) &local, sizeof(local)) < 0)
                return -errno;

        ConfigRequest req = {
                .h = { .nlmsg_len = sizeof(ConfigRequest),
                       .nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG,
                       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
                       .nlmsg_seq = 1 },
                .g = { .nfgen_family = AF_UNSPEC, .version = NFNETLINK_V0, .res_id = htons(group) },
                .cmd_a = { .nla_len = NLA_HDRLEN + sizeof(struct nfulnl_msg_config_cmd), .nla_type = NFULA_CFG_CMD },
                .cmd = { .command = NFULNL_CFG_CMD_BIND },
                .mode_a = { .nla_len = NLA_HDRLEN + sizeof(struct nfulnl_msg_config_mode), .nla_type = NFULA_CFG_MODE },
                .mode = { .copy_range = htonl(NFLOG_COPY_RANGE), .copy_mode = NFULNL_COPY_PACKET },
                .timeout_a = { .nla_len = NLA_HDRLEN + sizeof(uint32_t), .nla_type = NFULA_CFG_TIMEOUT },
                .timeout = htonl(NFLOG_FLUSH_TIMEOUT_CS),
        };
        _Static_assert(offsetof(ConfigRequest, mode_a) == NLMSG_HDRLEN + sizeof(struct nfgenmsg) + NLA_ALIGN(NLA_HDRLEN + 1),
                       "config attributes aligned");
        _Static_assert(offsetof(ConfigRequest, timeout_a) == offsetof(ConfigRequest, mode_a) + NLA_ALIGN(NLA_HDRLEN + 6),
                       "config attributes aligned");
        _Static_assert(sizeof(ConfigRequest) == offsetof(ConfigRequest, timeout_a) + NLA_HDRLEN + 4, "config request size");
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(fd, &req, sizeof(req), 0, (const struct sockaddr *) &kernel, sizeof(kernel)) < 0)
                return -errno;
        int r = wait_ack(fd, 1);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int nflog_receive(int fd, uint8_t *buf, size_t size, NflogFn fn, void *userdata) {
        ssize_t n;
        for (;;) {
                n = recv(fd, buf, size, MSG_TRUNC);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
                break;
        }
        if ((size_t) n > size) /* cut: read what fits */
                n = (ssize_t) size;
        int count = 0;
        ssize_t left = n; /* common/nlmsg.h */
        for (const struct nlmsghdr *h = (const struct nlmsghdr *) buf; nlmsg_ok(h, left); h = nlmsg_next(h, &left)) {
                if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_NOOP || h->nlmsg_type == NLMSG_ERROR)
                        continue;
                NflogPacket p;
                int r = nflog_packet_parse(h, h->nlmsg_len, &p);
                if (r < 0)
                        return count > 0 ? count : r;
                if (r > 0) {
                        fn(&p, userdata);
                        count++;
                }
        }
        return count;
}
