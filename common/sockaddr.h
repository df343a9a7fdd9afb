/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/socket.h>

/* A numeric IPv4 or IPv6 address and a port as a socket address (*ret zeroed first, its
 * length in *ret_len). No name is resolved: guest-init, seat-dnsguard and seatctl forward
 * each take addresses only. 0, or -EINVAL when ip is neither family's address. */
int sockaddr_from_ip(const char *ip, uint16_t port, struct sockaddr_storage *ret, socklen_t *ret_len);
