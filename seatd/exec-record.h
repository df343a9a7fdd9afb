/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>
#include <sodium.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What seat.exec's audit records say of a command: its argv and environment names kept up
 * to a budget (cut at a UTF-8 boundary), and BLAKE2b-512 digests that bind the whole of
 * what was cut, with its count and size. Pure functions of their arguments (unit-tested).
 */

/* The digest st holds, finished, as lower-case hex ("" if it cannot be made). */
json_object *exec_record_digest(crypto_generichash_state *st);
/* BLAKE2b-512 of each string with its terminating NUL, as /proc/PID/cmdline holds an argv. */
json_object *exec_record_strv_digest(char **l);
json_object *exec_record_bytes_digest(const void *data, size_t len);
/* The first up to budget bytes of the strings (of their names, before '=', when
 * names_only), the last one kept cut at a UTF-8 character boundary; *ret_truncated when
 * anything was left out. */
json_object *exec_record_strv_capped(char **l, bool names_only, size_t budget, bool *ret_truncated);
/* How many strings, and their bytes with a NUL each. */
size_t exec_record_strv_count(char **l);
int64_t exec_record_strv_bytes(char **l);
