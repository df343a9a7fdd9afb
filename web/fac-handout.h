/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The facilitator's printable handout: one card per participant with the seat, the
 * one-time link and its QR code (libqrencode, drawn as SVG here: no image file, nothing
 * from elsewhere, prints sharp). */

#include <stddef.h>

#include "fac-parse.h"
#include "http-parse.h"

typedef struct HandoutEntry {
        char participant[FAC_PARTICIPANT_MAX + 1];
        char seat[WEB_SEAT_ID_MAX + 1];
        char url[600];     /* the one-time link; "" when the seat could not be made */
        char problem[256]; /* why not */
} HandoutEntry;

/* text as a QR code (error correction M) in an SVG element, 4 modules of quiet zone. */
int fac_qr_svg(const char *text, char **ret);
/* The page of a handout being made: done of total seats so far; it reloads itself. */
int fac_handout_progress_render(size_t done, size_t total, char **ret, size_t *ret_len);
/* The handout page (HTML, every value escaped). */
int fac_handout_render(const HandoutEntry *e, size_t n, char **ret, size_t *ret_len);
