/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "common/log.h"
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

/* Status shows each rule as nftables itself writes it: the table listed once more in
 * nft's text form, with handles, and each rule's line found by the handle its JSON
 * listing carries. The counter statement is cut out of the text: its numbers are reported
 * beside it. */

#define RULE_TEXT_MAX 255

typedef struct RuleText {
        uint64_t handle;
        char text[RULE_TEXT_MAX + 1];
} RuleText;

typedef struct RuleTexts {
        RuleText *v;
        size_t n;
} RuleTexts;

static void rule_texts_done(RuleTexts *t) {
        free(t->v);
}

/* " counter packets N bytes M" out of a rule's text, in place. */
static void cut_counter(char *s) {
        char *c = strstr(s, " counter packets ");
        if (!c)
                return;
        char *bytes = strstr(c, " bytes ");
        if (!bytes)
                return;
        char *end = bytes + strlen(" bytes ");
        end += strspn(end, "0123456789");
        memmove(c, end, strlen(end) + 1);
}

/* One line of the text listing: a rule ends in "# handle N"; chain and table lines end in
 * "{ # handle N" and are not rules. */
static int rule_line(const char *line, size_t len, RuleTexts *t) {
        static const char mark[] = " # handle ";
        const char *h = NULL;
        for (const char *p = line; p + sizeof(mark) - 1 <= line + len; p++)
                if (!memcmp(p, mark, sizeof(mark) - 1))
                        h = p;
        if (!h || (h > line && h[-1] == '{'))
                return 0;
        const char *num = h + sizeof(mark) - 1;
        if (num >= line + len || !(*num >= '0' && *num <= '9'))
                return 0;
        uint64_t handle = strtoull(num, NULL, 10);
        size_t skip = strspn(line, "\t ");
        size_t n = (size_t) (h - line) - MIN(skip, (size_t) (h - line));
        RuleText *v = reallocarray(t->v, t->n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        t->v = v;
        RuleText *rt = &v[t->n++];
        rt->handle = handle;
        if (n > RULE_TEXT_MAX) {
                memcpy(rt->text, line + skip, RULE_TEXT_MAX - 3);
                memcpy(rt->text + RULE_TEXT_MAX - 3, "...", 4);
        } else {
                memcpy(rt->text, line + skip, n);
                rt->text[n] = 0;
        }
        cut_counter(rt->text);
        return 0;
}

static int list_rule_texts(NftContext *c, RuleTexts *ret, SeatError **ret_error) {
        unsigned flags = nft_ctx_output_get_flags(c->ctx);
        nft_ctx_output_set_flags(c->ctx, NFT_CTX_OUTPUT_HANDLE);
        int r = nft_run_cmd_from_buffer(c->ctx, "list table " NFT_TABLE_FAMILY " " NFT_TABLE_NAME);
        nft_ctx_output_set_flags(c->ctx, flags);
        if (r != 0)
                return seat_error_set(ret_error, EIO, "nftables could not list table inet seatd as text");
        const char *text = nft_ctx_get_output_buffer(c->ctx);
        size_t n = strlen(text);
        if (n > NFT_LIST_MAX)
                return seat_error_set(ret_error, E2BIG, "table inet seatd lists as more than %u bytes", NFT_LIST_MAX);
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                if ((r = rule_line(p, len, ret)) < 0)
                        return r;
                p += len + (nl ? 1 : 0);
        }
        return 0;
}

static const char *rule_text_of(const RuleTexts *t, json_object *rule) {
        json_object *h;
        if (!json_object_object_get_ex(rule, "handle", &h))
                return "?";
        uint64_t handle = (uint64_t) json_object_get_int64(h);
        for (size_t i = 0; i < t->n; i++)
                if (t->v[i].handle == handle)
                        return t->v[i].text;
        return "?"; /* changed between the two listings: the watch reports it */
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

static int counter_entry(json_object *arr, const char *chain, const char *text, json_object *expr) {
        uint64_t packets, bytes;
        counter_values(expr, &packets, &bytes);
        json_object *o = json_object_new_object();
        if (json_append(arr, o) < 0)
                return -ENOMEM;
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
        _cleanup_(rule_texts_done) RuleTexts texts = {};
        int r = nft_list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (items && (r = list_rule_texts(c, &texts, ret_error)) < 0)
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
                        r = counter_entry(out, label, rule_text_of(&texts, o), json_object_object_get(o, "expr"));
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
