/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One nfnetlink_log message (issue 18, item 6: what a seat tried to reach). Never reads
 * outside it; a packet it accepts names a valid seat and a known family. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "network/nflog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        NflogPacket p;

        if (size > 65536)
                return 0;
        /* netlink messages are 4-byte aligned in the receive buffer */
        uint32_t *msg = malloc(size ? (size + 3) & ~(size_t) 3 : 4);
        if (!msg)
                return 0;
        memcpy(msg, data, size);
        int r = nflog_packet_parse(msg, size, &p);
        if (r != 0 && r != 1 && r != -EBADMSG)
                abort();
        if (r == 1) {
                size_t n = strnlen(p.seat, sizeof(p.seat));
                if (n == 0 || n > NFT_SEAT_NAME_MAX || strspn(p.seat, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != n)
                        abort();
                if (p.family != AF_UNSPEC && p.family != AF_INET && p.family != AF_INET6)
                        abort();
                if (p.family == AF_UNSPEC && (p.proto != 0 || p.dport != 0))
                        abort();
        }
        free(msg);
        return 0;
}
