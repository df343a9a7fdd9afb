/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* guest-probe's DNS reply parser (tests/network/probe-dns.c) on hostile replies. The query
 * it answers is fixed (id 0x1234, "allowed.test"), as the probe's own would be; every
 * name in the message also goes through dns_read_name at every offset. Whatever parses
 * must be within the parser's stated bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe-dns.h"
#include "fuzz-dns-names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char name[DNS_NAME_MAX + 1];
        DnsReply reply;

        /* both query types: the AAAA side collects into its own array */
        if (dns_parse_reply(data, size, 0x1234, "allowed.test", DNS_TYPE_A, &reply) == 0) {
                if (reply.n_a > DNS_MAX_A || reply.n_aaaa != 0 || reply.n_answers > DNS_MAX_RECORDS || reply.rcode > 15)
                        abort();
        }
        if (dns_parse_reply(data, size, 0x1234, "allowed.test", DNS_TYPE_AAAA, &reply) == 0) {
                if (reply.n_aaaa > DNS_MAX_A || reply.n_a != 0 || reply.n_answers > DNS_MAX_RECORDS || reply.rcode > 15)
                        abort();
        }
        fuzz_dns_names(data, size, DNS_NAME_MAX, dns_read_name);

        /* the query side: any text as a name either encodes within bounds or is refused */
        char text[300];
        size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
        memcpy(text, data, n);
        text[n] = 0;
        uint8_t q[DNS_UDP_MAX];
        size_t qlen;
        if (dns_build_query(0x1234, text, size & 1 ? DNS_TYPE_AAAA : DNS_TYPE_A, q, sizeof(q), &qlen) == 0) {
                size_t o = 12;
                if (qlen > sizeof(q) || dns_read_name(q, qlen, &o, name) < 0 || o + 4 != qlen)
                        abort();
        }
        return 0;
}
