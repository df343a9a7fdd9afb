/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* For unit tests that hold documents to the code: the file at $SEATD_SOURCE_DIR/path
 * (set by meson test), NULL when that is unset (the caller skips), a failed test when it
 * cannot be read. free() the result. Needs <cmocka.h> included first. */
char *unit_read_source(const char *path);
