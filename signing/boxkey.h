/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Facilitator box keys: X25519 key pairs for crypto_box_seal (evidence archives are sealed
 * to the facilitator). Files look like minisign's (docs/evidence-format.md, "Facilitator
 * keys") but carry their own tag "BX", so a signing key is never taken for a box key or the
 * other way round:
 *
 *   public:  "untrusted comment: seatd facilitator box public key <ID>\n"
 *            base64("BX" || key id (8) || X25519 pk (32)) "\n"
 *   secret:  "untrusted comment: seatd facilitator box secret key\n"
 *            base64("BX" || kdf (2, "\0\0" = unprotected) || key id (8) || sk (32) ||
 *                   pk (32) || BLAKE2b-256("BX" || key id || sk || pk)) "\n"
 *
 * Only unprotected secret keys exist for now (kdf 0x0000, mode 0600); other kdf values
 * are refused with -EPROTONOSUPPORT. SeatBoxSecretKey lives in sodium_malloc'd memory.
 */

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"

#define SEAT_BOX_KEY_ID_BYTES 8U
#define SEAT_BOX_PUBLIC_KEY_BYTES 32U
#define SEAT_BOX_SECRET_KEY_BYTES 32U
#define SEAT_BOX_SEAL_OVERHEAD 48U /* crypto_box_SEALBYTES */

typedef struct SeatBoxPublicKey {
        uint8_t key_id[SEAT_BOX_KEY_ID_BYTES];
        uint8_t pk[SEAT_BOX_PUBLIC_KEY_BYTES];
} SeatBoxPublicKey;

typedef struct SeatBoxSecretKey SeatBoxSecretKey;

int seat_box_key_generate(SeatBoxSecretKey **ret);
void seat_box_key_public(const SeatBoxSecretKey *sk, SeatBoxPublicKey *ret);
SeatBoxSecretKey *seat_box_secret_key_free(SeatBoxSecretKey *sk);
DEFINE_TRIVIAL_CLEANUP_FUNC(SeatBoxSecretKey *, seat_box_secret_key_free)

int seat_box_public_key_parse(const char *buf, size_t len, SeatBoxPublicKey *ret, SeatError **ret_error);
int seat_box_public_key_load(const char *path, SeatBoxPublicKey *ret, SeatError **ret_error);
int seat_box_public_key_save(const SeatBoxPublicKey *pk, const char *path, SeatError **ret_error);
int seat_box_secret_key_parse(const char *buf, size_t len, SeatBoxSecretKey **ret, SeatError **ret_error);
int seat_box_secret_key_load(const char *path, SeatBoxSecretKey **ret, SeatError **ret_error);
/* Atomic write, mode 0600, unprotected. */
int seat_box_secret_key_save(const SeatBoxSecretKey *sk, const char *path, SeatError **ret_error);

/* crypto_box_seal: out has len + SEAT_BOX_SEAL_OVERHEAD bytes. */
int seat_box_seal(const SeatBoxPublicKey *pk, const void *data, size_t len, uint8_t *out);
/* crypto_box_seal_open: out has len - SEAT_BOX_SEAL_OVERHEAD bytes. -EBADMSG if it does
 * not open (another recipient, or tampered). */
int seat_box_seal_open(const SeatBoxSecretKey *sk, const uint8_t *sealed, size_t len, uint8_t *out);
