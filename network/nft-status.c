/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jsonframe.h"
#include "log.h"
#include "nft-internal.h"

/* ---- counters ---------------------------------------------------------------------- */

static uint64_t rule_drop_packets(json_object *expr) {
        uint64_t packets = 0;
        bool drop = false;
        for (size_t i = 0; i < json_object_array_length(expr); i++) {
                json_object *st = json_object_array_get_idx(expr, i), *cnt, *pk;
                if (json_object_object_get_ex(st, "drop", NULL))
                        drop = true;
                if (json_object_object_get_ex(st, "counter", &cnt) && json_object_object_get_ex(cnt, "packets", &pk))
                        packets = (uint64_t) json_object_get_int64(pk);
        }
        return drop ? packets : 0;
}

int nft_seat_denied(NftContext *c, const char *bridge, uint64_t *ret_packets, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL;
        uint64_t sum = 0;

        if (!nft_ifname_valid(bridge))
                return seat_error_set(ret_error, EINVAL, "invalid bridge name");
        int r = nft_list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (!items)
                return seat_error_set(ret_error, ENOENT, "table inet seatd does not exist");
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                json_object *o, *name;
                if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "rule", &o) ||
                    !json_object_object_get_ex(o, "chain", &name))
                        continue;
                int k = nft_chain_kind_of(json_object_get_string(name), bridge);
                if (k == CHAIN_OUT || k == CHAIN_TO || k == CHAIN_HOST || k == CHAIN_ING)
                        sum += rule_drop_packets(json_object_object_get(o, "expr"));
        }
        *ret_packets = sum;
        return 0;
}

/* ---- rule text for status -------------------------------------------------------------- */

typedef struct Text {
        char *buf;
        size_t size, len;
} Text;

static void text_add(Text *t, const char *s) {
        size_t n = strlen(s);
        if (t->len + n + 1 >= t->size) { /* truncated: mark it once */
                if (t->size > 4)
                        memcpy(t->buf + t->size - 4, "...", 4);
                t->len = t->size;
                return;
        }
        memcpy(t->buf + t->len, s, n + 1);
        t->len += n;
}

static void text_word(Text *t, const char *s) {
        if (t->len > 0 && t->len < t->size)
                text_add(t, " ");
        if (t->len < t->size)
                text_add(t, s);
}

/* One operand of a match: a string, number, payload/meta/ct key, prefix, range or set. */
static void describe_value(Text *t, json_object *v, int depth) {
        json_object *o, *a, *b;
        char num[32];

        if (depth > 4)
                return text_word(t, "...");
        switch (json_object_get_type(v)) {
        case json_type_string:
                return text_word(t, json_object_get_string(v));
        case json_type_int:
                (void) snprintf(num, sizeof(num), "%" PRId64, json_object_get_int64(v));
                return text_word(t, num);
        case json_type_array:
                text_word(t, "{");
                for (size_t i = 0; i < json_object_array_length(v) && i < 16; i++)
                        describe_value(t, json_object_array_get_idx(v, i), depth + 1);
                return text_word(t, "}");
        case json_type_object:
                break;
        default:
                return text_word(t, "?");
        }
        if (json_object_object_get_ex(v, "payload", &o)) {
                text_word(t, json_object_get_string(json_object_object_get(o, "protocol")));
                return text_word(t, json_object_get_string(json_object_object_get(o, "field")));
        }
        if (json_object_object_get_ex(v, "meta", &o) || json_object_object_get_ex(v, "ct", &o)) {
                if (json_object_object_get_ex(v, "ct", NULL))
                        text_word(t, "ct");
                return text_word(t, json_object_get_string(json_object_object_get(o, "key")));
        }
        if (json_object_object_get_ex(v, "prefix", &o)) {
                describe_value(t, json_object_object_get(o, "addr"), depth + 1);
                (void) snprintf(num, sizeof(num), "/%d", json_object_get_int(json_object_object_get(o, "len")));
                return text_add(t, num);
        }
        if (json_object_object_get_ex(v, "range", &o) && json_object_array_length(o) == 2) {
                a = json_object_array_get_idx(o, 0);
                b = json_object_array_get_idx(o, 1);
                (void) snprintf(num, sizeof(num), "%" PRId64 "-%" PRId64, json_object_get_int64(a),
                                json_object_get_int64(b));
                return text_word(t, num);
        }
        if (json_object_object_get_ex(v, "set", &o))
                return describe_value(t, o, depth + 1);
        text_word(t, "?");
}

static void describe_statement(Text *t, json_object *st) {
        json_object *o;
        static const char *const verdicts[] = { "accept", "drop", "masquerade", "return" };

        if (json_object_object_get_ex(st, "match", &o)) {
                const char *op = json_object_get_string(json_object_object_get(o, "op"));
                describe_value(t, json_object_object_get(o, "left"), 0);
                if (op && strcmp(op, "==") != 0 && strcmp(op, "in") != 0)
                        text_word(t, op);
                return describe_value(t, json_object_object_get(o, "right"), 0);
        }
        if (json_object_object_get_ex(st, "jump", &o)) {
                text_word(t, "jump");
                return text_word(t, json_object_get_string(json_object_object_get(o, "target")));
        }
        if (json_object_object_get_ex(st, "log", NULL))
                return text_word(t, "log");
        if (json_object_object_get_ex(st, "limit", NULL))
                return text_word(t, "limit");
        for (size_t i = 0; i < ELEMENTSOF(verdicts); i++)
                if (json_object_object_get_ex(st, verdicts[i], NULL))
                        return text_word(t, verdicts[i]);
        /* counters are reported as numbers beside the text */
}

static void counter_values(json_object *expr, uint64_t *packets, uint64_t *bytes) {
        *packets = *bytes = 0;
        for (size_t i = 0; i < json_object_array_length(expr); i++) {
                json_object *cnt;
                if (json_object_object_get_ex(json_object_array_get_idx(expr, i), "counter", &cnt) &&
                    json_object_is_type(cnt, json_type_object)) {
                        *packets = (uint64_t) json_object_get_int64(json_object_object_get(cnt, "packets"));
                        *bytes = (uint64_t) json_object_get_int64(json_object_object_get(cnt, "bytes"));
                }
        }
}

static int counter_entry(json_object *arr, const char *chain, json_object *expr) {
        char text[256];
        Text t = { .buf = text, .size = sizeof(text) };
        uint64_t packets, bytes;

        text[0] = 0;
        for (size_t i = 0; i < json_object_array_length(expr); i++)
                describe_statement(&t, json_object_array_get_idx(expr, i));
        counter_values(expr, &packets, &bytes);
        json_object *o = json_object_new_object();
        if (!o || json_object_array_add(arr, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        json_object_object_add(o, "chain", nft_j_str(chain));
        json_object_object_add(o, "rule", nft_j_str(text));
        json_object_object_add(o, "packets", json_object_new_int64((int64_t) packets));
        json_object_object_add(o, "bytes", json_object_new_int64((int64_t) bytes));
        return 0;
}

int nft_seat_counters(NftContext *c, const char *bridge, json_object **ret, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL, *out = NULL;

        if (!nft_ifname_valid(bridge))
                return seat_error_set(ret_error, EINVAL, "invalid bridge name");
        int r = nft_list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (!(out = json_object_new_array()))
                return -ENOMEM;
        static const ChainKind shown[] = { CHAIN_ING, CHAIN_OUT, CHAIN_TO, CHAIN_HOST };
        for (size_t k = 0; k < ELEMENTSOF(shown) && items; k++)
                for (size_t i = 0; i < json_object_array_length(items); i++) {
                        json_object *o, *name;
                        if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "rule", &o) ||
                            !json_object_object_get_ex(o, "chain", &name) ||
                            nft_chain_kind_of(json_object_get_string(name), bridge) != (int) shown[k])
                                continue;
                        char label[8];
                        (void) snprintf(label, sizeof(label), "%.*s", (int) strlen(nft_chain_prefix[shown[k]]) - 1,
                                        nft_chain_prefix[shown[k]]);
                        r = counter_entry(out, label, json_object_object_get(o, "expr"));
                        if (r < 0)
                                return r;
                }
        *ret = TAKE_PTR(out);
        return 0;
}

int nft_seat_bridges(NftContext *c, char ***ret, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL;
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;
        int r = nft_list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (!(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        for (size_t i = 0; items && i < json_object_array_length(items); i++) {
                json_object *ch, *name;
                if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "chain", &ch) ||
                    !json_object_object_get_ex(ch, "name", &name))
                        continue;
                const char *nm = json_object_get_string(name), *dash = strchr(nm, '-');
                if (!dash || !nft_ifname_valid(dash + 1) || nft_chain_kind_of(nm, dash + 1) < 0)
                        continue;
                bool seen = false;
                for (size_t k = 0; k < n && !seen; k++)
                        seen = !strcmp(l[k], dash + 1);
                if (seen)
                        continue;
                char **m = reallocarray(l, n + 2, sizeof(char *));
                if (!m)
                        return -ENOMEM;
                l = m;
                if (!(l[n] = strdup(dash + 1)))
                        return -ENOMEM;
                l[++n] = NULL;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int strv_add_unique(char ***l, size_t *n, const char *v) {
        for (size_t k = 0; k < *n; k++)
                if (!strcmp((*l)[k], v))
                        return 0;
        char **m = reallocarray(*l, *n + 2, sizeof(char *));
        if (!m)
                return -ENOMEM;
        *l = m;
        if (!(m[*n] = strdup(v)))
                return -ENOMEM;
        m[++*n] = NULL;
        return 0;
}

int nft_seat_uplinks(NftContext *c, char ***ret, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL;
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        size_t n = 0;
        if (!l)
                return -ENOMEM;
        int r = nft_list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; items && i < json_object_array_length(items); i++) {
                json_object *o, *name, *expr;
                if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "rule", &o) ||
                    !json_object_object_get_ex(o, "chain", &name) || !json_object_object_get_ex(o, "expr", &expr) ||
                    strncmp(json_object_get_string(name), nft_chain_prefix[CHAIN_OUT], strlen(nft_chain_prefix[CHAIN_OUT])) != 0)
                        continue;
                /* "oifname != U drop": U is that seat's uplink */
                for (size_t k = 0; k < json_object_array_length(expr); k++) {
                        json_object *m, *op, *left, *meta, *key, *right;
                        if (json_object_object_get_ex(json_object_array_get_idx(expr, k), "match", &m) &&
                            json_object_object_get_ex(m, "op", &op) && !strcmp(json_object_get_string(op), "!=") &&
                            json_object_object_get_ex(m, "left", &left) && json_object_object_get_ex(left, "meta", &meta) &&
                            json_object_object_get_ex(meta, "key", &key) && !strcmp(json_object_get_string(key), "oifname") &&
                            json_object_object_get_ex(m, "right", &right) && json_object_is_type(right, json_type_string) &&
                            nft_ifname_valid(json_object_get_string(right)) &&
                            (r = strv_add_unique(&l, &n, json_object_get_string(right))) < 0)
                                return r;
                }
        }
        *ret = TAKE_PTR(l);
        return 0;
}
