/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What status shows of a seat's "allow name" rules: each name's set members as nftables
 * lists them now (with the seconds left before they expire) and the counters of the
 * accept rules that use its sets. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "nft-internal.h"

/* The members of a listed set, appended to arr as {"address", "expires_s"}. */
static int add_members(json_object *arr, json_object *set) {
        json_object *elems;
        if (!json_object_object_get_ex(set, "elem", &elems) || !json_object_is_type(elems, json_type_array))
                return 0;
        for (size_t i = 0; i < json_object_array_length(elems); i++) {
                json_object *e = json_object_array_get_idx(elems, i), *inner, *val = e, *exp = NULL;
                if (json_object_object_get_ex(e, "elem", &inner)) {
                        val = json_object_object_get(inner, "val");
                        (void) json_object_object_get_ex(inner, "expires", &exp);
                }
                if (!json_object_is_type(val, json_type_string))
                        continue;
                json_object *m = json_object_new_object();
                if (json_append(arr, m) < 0)
                        return -ENOMEM;
                json_object_object_add(m, "address", json_object_new_string(json_object_get_string(val)));
                json_object_object_add(m, "expires_s", exp ? json_object_new_int64(json_object_get_int64(exp)) : NULL);
        }
        return 0;
}

/* Does the rule's expr match against one of the two sets? */
static bool rule_uses(json_object *expr, const char *set4, const char *set6) {
        for (size_t i = 0; i < json_object_array_length(expr); i++) {
                json_object *m, *right;
                if (json_object_object_get_ex(json_object_array_get_idx(expr, i), "match", &m) &&
                    json_object_object_get_ex(m, "right", &right) && json_object_is_type(right, json_type_string)) {
                        const char *s = json_object_get_string(right);
                        if (s[0] == '@' && (!strcmp(s + 1, set4) || !strcmp(s + 1, set6)))
                                return true;
                }
        }
        return false;
}

static void add_counters(json_object *expr, uint64_t *packets, uint64_t *bytes) {
        for (size_t i = 0; i < json_object_array_length(expr); i++) {
                json_object *c, *v;
                if (!json_object_object_get_ex(json_object_array_get_idx(expr, i), "counter", &c))
                        continue;
                if (json_object_object_get_ex(c, "packets", &v))
                        *packets += (uint64_t) json_object_get_int64(v);
                if (json_object_object_get_ex(c, "bytes", &v))
                        *bytes += (uint64_t) json_object_get_int64(v);
        }
}

static int name_entry(json_object *items, const NftSeatSpec *spec, size_t rule, json_object **ret) {
        const EgressProfile *p = spec->profile;
        char set4[NFT_SET_NAME_MAX + 1], set6[NFT_SET_NAME_MAX + 1];
        uint64_t packets = 0, bytes = 0;
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *addrs = json_object_new_array(), *ports = json_object_new_array();

        if (!o || !addrs || !ports) {
                json_object_put(addrs);
                json_object_put(ports);
                return -ENOMEM;
        }
        json_object_object_add(o, "name", json_object_new_string(p->rules[rule].name));
        json_object_object_add(o, "ports", ports);
        json_object_object_add(o, "addresses", addrs);
        for (size_t j = rule; j < p->n_rules; j++) {
                char buf[32];
                const EgressRule *er = &p->rules[j];
                if (egress_profile_name_index(p, j) != (int) rule)
                        continue;
                if (er->port_lo == er->port_hi)
                        (void) snprintf(buf, sizeof(buf), "%s %u", egress_proto_to_string(er->proto), er->port_lo);
                else
                        (void) snprintf(buf, sizeof(buf), "%s %u-%u", egress_proto_to_string(er->proto), er->port_lo,
                                        er->port_hi);
                json_object_array_add(ports, json_object_new_string(buf));
        }
        nft_name_set_name(AF_INET, (int) rule, spec->bridge, set4);
        nft_name_set_name(AF_INET6, (int) rule, spec->bridge, set6);
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                json_object *it = json_object_array_get_idx(items, i), *x, *name;
                if (json_object_object_get_ex(it, "set", &x) && json_object_object_get_ex(x, "name", &name) &&
                    (!strcmp(json_object_get_string(name), set4) || !strcmp(json_object_get_string(name), set6))) {
                        int r = add_members(addrs, x);
                        if (r < 0)
                                return r;
                } else if (json_object_object_get_ex(it, "rule", &x) && json_object_object_get_ex(x, "chain", &name) &&
                           nft_chain_kind_of(json_object_get_string(name), spec->bridge) == CHAIN_OUT &&
                           rule_uses(json_object_object_get(x, "expr"), set4, set6))
                        add_counters(json_object_object_get(x, "expr"), &packets, &bytes);
        }
        json_object_object_add(o, "packets", json_object_new_int64((int64_t) packets));
        json_object_object_add(o, "bytes", json_object_new_int64((int64_t) bytes));
        *ret = TAKE_PTR(o);
        return 0;
}

int nft_seat_names(NftContext *c, const NftSeatSpec *spec, json_object **ret, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL, *arr = json_object_new_array();
        if (!arr)
                return -ENOMEM;
        if (!nft_ifname_valid(spec->bridge) || !spec->profile)
                return seat_error_set(ret_error, EINVAL, "invalid seat for the names' sets");
        if (egress_profile_has_names(spec->profile)) {
                int r = nft_list_table(c, &items, ret_error);
                if (r < 0)
                        return r;
                if (!items)
                        return seat_error_set(ret_error, ENOENT, "table inet seatd does not exist");
        }
        for (size_t i = 0; i < spec->profile->n_rules; i++) {
                json_object *e = NULL;
                if (egress_profile_name_index(spec->profile, i) != (int) i)
                        continue;
                int r = name_entry(items, spec, i, &e);
                if (r >= 0)
                        r = json_append(arr, e);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "seat '%s': cannot list the names' sets", spec->seat);
        }
        *ret = TAKE_PTR(arr);
        return 0;
}
