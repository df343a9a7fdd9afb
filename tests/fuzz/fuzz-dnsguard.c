/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seat DNS guard's parser (network/dnsguard-parse.c) on hostile upstream answers to a
 * fixed query ("cname-in.allowed.test", type A), the upstream id taken from the input so
 * that the fuzzer gets past it. Whatever passes must pass again unchanged (the output is
 * a well-formed answer of its own), never be longer than the input, and carry the
 * asker's id; every name read at any offset stays within its bounds; the input as a
 * query parses within bounds or not at all. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/macro.h"
#include "network/dnsguard-parse.h"
#include "fuzz-dns-names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const allowed[] = { "allowed.test", "*.wild.test" };
static const DnsgPolicy policy = { .names = allowed, .n_names = ELEMENTSOF(allowed) };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const uint8_t query[] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
                                         8, 'c', 'n', 'a', 'm', 'e', '-', 'i', 'n',
                                         7, 'a', 'l', 'l', 'o', 'w', 'e', 'd', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1 };
        static uint8_t out[DNSG_MSG_MAX], again[DNSG_MSG_MAX];
        DnsgQuery q, q2;
        size_t len = 0, len2 = 0;
        uint8_t rcode = 0;
        const char *why = NULL;

        if (dnsg_parse_query(query, sizeof(query), &q) < 0)
                abort();
        uint16_t up = size >= 2 ? (uint16_t) (data[0] << 8 | data[1]) : 0;
        DnsgVerdict v = dnsg_check_answer(&policy, &q, up, data, size, out, &len, &rcode, &why);
        if (v == DNSG_PASS) {
                if (len > size || len < q.question_end || (out[0] << 8 | out[1]) != 0x1234)
                        abort();
                if (dnsg_check_answer(&policy, &q, 0x1234, out, len, again, &len2, &rcode, &why) != DNSG_PASS ||
                    len2 != len || memcmp(again, out, len) != 0)
                        abort();
        } else if (v != DNSG_RCODE && !why)
                abort();
        fuzz_dns_names(data, size, DNSG_NAME_MAX, dnsg_read_name);
        if (dnsg_parse_query(data, size, &q2) == 0) {
                if (q2.question_end > size || q2.udp_size < 512 || q2.udp_size > DNSG_UDP_MAX)
                        abort();
                uint8_t e[DNSG_QUERY_MAX];
                if (dnsg_error_reply(&q2, data, DNSG_RCODE_SERVFAIL, true, e) != q2.question_end)
                        abort();
        }
        return 0;
}
