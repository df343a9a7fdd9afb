/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A seat slot's saved machine state (warm reset): libvirt's save file, the qcow2 overlay
 * as it was at the save, and a sidecar that binds both to the slot, the domain identity
 * they restore as, and the image digest. The sidecar carries the BLAKE2b-512 of both files
 * and a keyed BLAKE2b-256 MAC (seatd's warm key, <state_dir>/warm/key, 0600) over every
 * line before it, so a state of another slot, another image or another host is refused,
 * and so is a damaged one. Format (docs/warm-reset.md):
 *
 *   seatd-warm-state 1
 *   slot=<seat id>
 *   domain=<domain name>
 *   uuid=<domain uuid>
 *   image=<image name>
 *   image_digest=<128 hex>
 *   state_blake2b=<128 hex>
 *   state_size=<bytes>
 *   overlay_blake2b=<128 hex>
 *   overlay_size=<bytes>
 *   created=<seconds since the epoch>
 *   mac=<64 hex>
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "signing/hash.h"

#define WARM_KEY_BYTES 32U
#define WARM_MAC_BYTES 32U
#define WARM_META_MAX 4096U
#define WARM_SLOT_MAX 32U
#define WARM_DOMAIN_MAX 64U
#define WARM_IMAGE_MAX 128U
#define WARM_UUID_LEN 36U

typedef struct WarmMeta {
        char slot[WARM_SLOT_MAX];
        char domain[WARM_DOMAIN_MAX];
        char uuid[WARM_UUID_LEN + 1];
        char image[WARM_IMAGE_MAX];
        char image_digest[SEAT_HASH_HEX_LEN + 1];
        char state_hash[SEAT_HASH_HEX_LEN + 1];
        uint64_t state_size;
        char overlay_hash[SEAT_HASH_HEX_LEN + 1];
        uint64_t overlay_size;
        int64_t created;
} WarmMeta;

/* The sidecar's text, MAC'ed with key. Returns 0, -EINVAL (a field out of its syntax) or -ENOMEM. */
int warm_meta_format(const WarmMeta *m, const uint8_t key[WARM_KEY_BYTES], char **ret, size_t *ret_len);
/* Parses and checks the MAC. -EBADMSG: not a sidecar (damaged); -EKEYREJECTED: the MAC is
 * not seatd's (another host, or edited). Bounded: at most WARM_META_MAX bytes. */
int warm_meta_parse(const char *text, size_t len, const uint8_t key[WARM_KEY_BYTES], WarmMeta *ret);
/* Whether m belongs here: the slot, the domain identity and the image digest must match.
 * Returns 0, or -ESTALE with a reason a person can read in *ret_why (static text). */
int warm_meta_matches(const WarmMeta *m, const char *slot, const char *domain, const char *image_digest,
                      const char **ret_why);
/* BLAKE2b-512 of a whole file, lower-case hex, and its size. */
int warm_file_hash(const char *path, char hex[SEAT_HASH_HEX_LEN + 1], uint64_t *ret_size);
/* seatd's warm key: read, or made (0600) when missing. */
int warm_key_load(const char *path, uint8_t key[WARM_KEY_BYTES], SeatError **ret_error);
