/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What a seat tried to reach (docs/egress.md "Denied flows"). Every deny path of a seat's chains logs,
 * rate-limited, to nfnetlink_log group N (network/nft.h, "log prefix "seatd-deny <seat> "
 * group N snaplen 64"); this reads that group: one raw NETLINK_NETFILTER socket bound to
 * the group with a small copy range, and a parser for its NFULNL_MSG_PACKET messages.
 *
 * Plain netlink, no library (like network/conntrack.c). The parser is a pure function of a
 * buffer, bounds-checked on every attribute, so it is unit-tested and fuzzed.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nft.h"

/* Bytes of each logged packet the kernel copies to us: IPv4/IPv6 header and the ports. */
#define NFLOG_COPY_RANGE NFT_LOG_SNAPLEN
/* The receive buffer one recv() reads into (the kernel batches several packets). */
#define NFLOG_RECV_BUF_SIZE (64 * 1024)

/* One denied packet, as far as the log tells. */
typedef struct NflogPacket {
        char seat[NFT_SEAT_NAME_MAX + 1]; /* from the prefix "seatd-deny <seat> " */
        int family;                       /* AF_INET, AF_INET6; AF_UNSPEC: not IP (or cut short) */
        uint8_t daddr[16];                /* the destination (4 bytes for AF_INET) */
        uint8_t proto;                    /* IPPROTO_*; 0 when unknown */
        uint16_t dport;                   /* TCP/UDP/SCTP/UDP-Lite destination port, host order; 0: none or unknown */
} NflogPacket;

/*
 * One netlink message (from its nlmsghdr on, len bytes): 1 and *ret filled when it is an
 * nfnetlink_log packet with a "seatd-deny <seat> " prefix (a valid seat id), 0 when it is
 * anything else (another message type, another prefix or none), -EBADMSG when it is
 * malformed. Pure.
 */
int nflog_packet_parse(const void *msg, size_t len, NflogPacket *ret);

/* The IP header (and what follows) of a logged packet: fills family, daddr, proto, dport
 * of *ret; AF_UNSPEC when it is neither IPv4 nor IPv6 or too short. Pure. */
void nflog_payload_parse(const uint8_t *p, size_t len, NflogPacket *ret);

/*
 * A socket bound to nfnetlink_log group `group` (1..65535), copying the first
 * NFLOG_COPY_RANGE bytes of each packet, with a receive timeout of timeout_ms. -EPERM: the
 * group is another socket's (or no CAP_NET_ADMIN); other -errno: no nfnetlink_log in the
 * kernel. Closing the fd unbinds.
 */
int nflog_open(uint16_t group, int timeout_ms, int *ret_fd);

typedef void (*NflogFn)(const NflogPacket *p, void *userdata);

/*
 * Reads one datagram into buf (size bytes, NFLOG_RECV_BUF_SIZE is enough) and calls fn for
 * each denied packet in it. Returns how many there were; -ETIMEDOUT when nothing came
 * within the timeout; -ENOBUFS when the kernel dropped messages for us (we were too slow:
 * the socket stays usable); -EBADMSG when a message was malformed (the rest of the
 * datagram is skipped); other -errno.
 */
int nflog_receive(int fd, uint8_t *buf, size_t size, NflogFn fn, void *userdata);
