/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* For unit tests that hold documents to the code: the file at $SEATD_SOURCE_DIR/path
 * (set by meson test), NULL when that is unset (the caller skips), a failed test when it
 * cannot be read. free() the result. Needs <cmocka.h> included first. */
char *unit_read_source(const char *path);

/* Removes dir and all below it, as rm -rf does (links are removed, not followed): 0, or -1
 * when something stayed. For a test's scratch directory from mkdtemp(). */
int unit_remove_tree(const char *dir);
