/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* `seatctl forward`'s argument, [ADDR:]LPORT:GUEST_HOST:GPORT: a pure parser (fuzzed by
 * tests/fuzz/fuzz-forward-spec.c). An IPv6 address is written in brackets. */

#include <stdint.h>

#define FORWARD_SPEC_HOST_MAX 253

typedef struct ForwardSpec {
        char bind[64];                          /* the local address; default 127.0.0.1 */
        uint16_t lport;                         /* 0: any free port (printed when listening) */
        char host[FORWARD_SPEC_HOST_MAX + 1];   /* as the guest sees it, without brackets */
        uint16_t gport;                         /* 1..65535 */
} ForwardSpec;

/* 0, or -EINVAL with *ret_why (static text) saying what is wrong. */
int forward_spec_parse(const char *s, ForwardSpec *ret, const char **ret_why);
