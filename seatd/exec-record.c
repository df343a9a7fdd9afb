/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* exec-record.c: the digests and capped lists of seat.exec's audit records (exec-record.h). */
#include <string.h>

#include "common/utf8.h"
#include "exec-record.h"
#include "signing/hash.h"

json_object *exec_record_digest(crypto_generichash_state *st) {
        uint8_t d[64];
        char hex[129];
        if (crypto_generichash_final(st, d, sizeof(d)) < 0 || digest_to_hex(d, sizeof(d), hex, sizeof(hex)) < 0)
                return json_object_new_string("");
        return json_object_new_string(hex);
}

json_object *exec_record_strv_digest(char **l) {
        crypto_generichash_state st;
        crypto_generichash_init(&st, NULL, 0, 64);
        for (char **i = l; i && *i; i++)
                crypto_generichash_update(&st, (const uint8_t *) *i, strlen(*i) + 1);
        return exec_record_digest(&st);
}

json_object *exec_record_bytes_digest(const void *data, size_t len) {
        crypto_generichash_state st;
        crypto_generichash_init(&st, NULL, 0, 64);
        crypto_generichash_update(&st, data, len);
        return exec_record_digest(&st);
}

json_object *exec_record_strv_capped(char **l, bool names_only, size_t budget, bool *ret_truncated) {
        json_object *a = json_object_new_array();
        *ret_truncated = false;
        for (char **i = l; a && i && *i; i++) {
                const char *eq = names_only ? strchr(*i, '=') : NULL;
                size_t n = eq ? (size_t) (eq - *i) : strlen(*i);
                if (n > budget) {
                        *ret_truncated = true;
                        n = utf8_cut(*i, n, budget);
                        if (n > 0)
                                json_object_array_add(a, json_object_new_string_len(*i, (int) n));
                        break;
                }
                json_object_array_add(a, json_object_new_string_len(*i, (int) n));
                budget -= n;
        }
        return a;
}

size_t exec_record_strv_count(char **l) {
        size_t n = 0;
        while (l && l[n])
                n++;
        return n;
}

int64_t exec_record_strv_bytes(char **l) {
        int64_t n = 0;
        for (char **i = l; i && *i; i++)
                n += (int64_t) strlen(*i) + 1;
        return n;
}
