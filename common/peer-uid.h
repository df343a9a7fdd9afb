/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Which local user made a TCP connection: the owner of the peer's socket, asked of the
 * kernel with sock_diag (NETLINK_SOCK_DIAG, one inet_diag_req_v2 for the peer's 4-tuple).
 * A TCP port on 127.0.0.1 is open to every user of the host; a listener that acts with
 * its own user's authority (seatctl forward) must accept that user's connections only.
 * SO_PEERCRED answers this for Unix sockets only.
 *
 * The reply's parser is a pure function of the datagram (fuzzed by
 * tests/fuzz/fuzz-peer-uid.c); peer_uid_tcp() is the socket around it.
 */

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* One request to the kernel: the message peer_uid_tcp() sends. */
typedef struct PeerUidRequest {
        struct nlmsghdr h;
        struct inet_diag_req_v2 r;
} PeerUidRequest;

/* The request for the socket at the other end of a connection whose own end is local,
 * whose other end is peer (both AF_INET or AF_INET6; an IPv4-mapped IPv6 pair is asked
 * as IPv4, the family of the socket that made it). -EAFNOSUPPORT for any other family. */
int peer_uid_request(const struct sockaddr_storage *local, const struct sockaddr_storage *peer, uint32_t seq,
                     PeerUidRequest *ret);

/* The kernel's reply to req (buf: one datagram, n bytes, 4-byte aligned): the owner of
 * the socket it describes, once the reply is checked to be for req (its sequence number,
 * family, ports and addresses). Returns 0, or:
 *   -ENOMSG    nothing in buf answers req (read the next datagram);
 *   -ESRCH     the socket is owned by no process any more (closed: a TIME_WAIT or
 *              orphaned socket, whose uid the kernel reports as 0);
 *   -EBADMSG   malformed, or it describes another socket;
 *   the kernel's error (-ENOENT: no socket of this host has that 4-tuple). */
int peer_uid_parse_reply(const void *buf, size_t n, const PeerUidRequest *req, uid_t *ret_uid);

/* The uid that owns the peer's socket of fd, an accepted TCP connection, when the peer is
 * a socket of this host in this network namespace (loopback, or a local address). 0, or
 * -errno: -ENOENT when no such local socket is there (another host, or it closed at once),
 * -ESRCH (above), -ETIMEDOUT, or the error of the netlink socket (no sock_diag). Callers
 * that guard something refuse the connection on any error. */
int peer_uid_tcp(int fd, uid_t *ret_uid);
