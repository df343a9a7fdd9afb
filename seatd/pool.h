/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Pools (docs/pools.md): for an image and egress profile, N seats kept READY for nobody,
 * so that provision hands one out in milliseconds instead of booting (seat.c claims them).
 * One worker thread keeps every pool at its size, one boot at a time, within the config's
 * host limits (pool_max_seats, pool_max_memory_mib); it releases seats that failed their
 * health check at a claim, and the surplus when a pool shrinks. The pools' sizes are saved
 * in <state_dir>/pools (pool-state.h), so they survive a restart, and adopted pooled seats
 * go back to their pool.
 */

#include <json-c/json.h>

#include "conf.h"
#include "common/error.h"
#include "seat.h"
#include "images/store.h"

typedef struct PoolManager PoolManager;

/* Loads the saved pools and starts the worker (after seat_manager_adopt()). */
int pool_manager_new(const SeatConfig *config, SeatManager *seats, ImageStore *store, PoolManager **ret,
                     SeatError **ret_error);
/* Stops the worker (a boot under way finishes first). Pooled seats keep running. */
PoolManager *pool_manager_free(PoolManager *p);
/* Size the pool of image and egress (NULL: the default profile) to ready seats; 0 removes
 * it (its seats are released). Saved before it returns. *ret: the pool's status. */
int pool_manager_set(PoolManager *p, const char *image, const char *egress, int64_t ready, json_object **ret,
                     SeatError **ret_error);
/* Every pool (size, seats ready, claims, what holds it back) and the host's usage. */
int pool_manager_status(PoolManager *p, json_object **ret);
