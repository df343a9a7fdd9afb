/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The pools seatd keeps filled, as saved in <state_dir>/pools so that they survive a
 * restart (docs/pools.md). One pool per image and egress profile:
 *
 *   seatd-pools 1
 *   pool image=<image name> egress=<profile name, or "-" without networks> ready=<1..64>
 *   ...
 *
 * At most POOLS_MAX pools, POOL_STATE_MAX bytes, lines in exactly this form; a file that
 * does not parse is refused as a whole (seatd starts without pools and says why).
 */

#include <stddef.h>
#include <stdint.h>

#include "images/manifest.h"

#define POOL_STATE_MAX 16384U
#define POOLS_MAX 64U
#define POOL_READY_MAX 64
#define POOL_EGRESS_MAX 32U

typedef struct PoolSpec {
        char image[IMAGE_NAME_MAX + 1];
        char egress[POOL_EGRESS_MAX + 1]; /* "" when seats have no network */
        int64_t ready;                    /* 1..POOL_READY_MAX */
} PoolSpec;

/* The same rule as seatnet_profile_name_valid(): [a-z0-9_-]{1,32}. */
bool pool_egress_name_valid(const char *name);
/* 0 with a malloc'd array (n may be 0), or -EBADMSG. */
int pool_state_parse(const char *text, size_t len, PoolSpec **ret, size_t *ret_n);
/* -EINVAL when a spec would not parse back. */
int pool_state_format(const PoolSpec *specs, size_t n, char **ret, size_t *ret_len);
