/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's sock_diag reply to seatctl forward's question "whose is this connection?"
 * (common/peer-uid.c): the first bytes are the request that was sent, the rest the reply
 * datagram. Never reads outside it; answers 0 only for a message about the very socket
 * asked for, with an owner; any error is an errno. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/peer-uid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PeerUidRequest req;
        uid_t uid = 4242;

        if (size < sizeof(req) || size > 65536)
                return 0;
        memcpy(&req, data, sizeof(req));
        size -= sizeof(req);
        /* netlink messages are 4-byte aligned in the receive buffer; exactly size bytes are
         * the datagram (the rest of the last word is never read: ASan would say) */
        uint32_t *msg = malloc(size ? size : 1);
        if (!msg)
                return 0;
        memcpy(msg, data + sizeof(req), size);
        int r = peer_uid_parse_reply(msg, size, &req, &uid);
        if (r > 0 || r <= -4096)
                abort();
        if (r < 0 && uid != 4242)
                abort(); /* written only on success */
        free(msg);
        return 0;
}
