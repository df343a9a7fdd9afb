/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <inttypes.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "common/log.h"
#include "nft-internal.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nft_ctx *, nft_ctx_free)

static const char *const state_names[] = {
        [NFT_SEAT_OK] = "ok",
        [NFT_SEAT_CHANGED] = "changed",
        [NFT_SEAT_MISSING] = "missing",
};

const char *nft_seat_state_to_string(NftSeatState s) {
        return (size_t) s < ELEMENTSOF(state_names) ? state_names[s] : NULL;
}

int nft_context_new(NftContext **ret, SeatError **ret_error) {
        _cleanup_(nft_ctx_freep) struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
        if (!ctx)
                return seat_error_set(ret_error, ENOMEM, "cannot create an nftables context");
        /* JSON output also makes nft_run_cmd_from_buffer() parse its input as JSON. */
        nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON);
        if (nft_ctx_buffer_output(ctx) < 0 || nft_ctx_buffer_error(ctx) < 0)
                return seat_error_set(ret_error, ENOMEM, "cannot buffer nftables output");
        NftContext *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->ctx = TAKE_PTR(ctx);
        *ret = c;
        return 0;
}

NftContext *nft_context_free(NftContext *c) {
        if (!c)
                return NULL;
        nft_ctx_free(c->ctx);
        return mfree(c);
}

/* ---- running commands --------------------------------------------------------------- */

/* The first line of libnftables' error text, escaped, for messages. */
static char *nft_error_text(NftContext *c) {
        const char *e = nft_ctx_get_error_buffer(c->ctx);
        if (!e || !*e)
                return strdup("no error text");
        return log_escape(e, strcspn(e, "\n"), 200);
}

static int run_json(NftContext *c, json_object *cmds, const char *what, SeatError **ret_error) {
        _cleanup_json_ json_object *top = nft_j_obj1("nftables", json_object_get(cmds));
        if (!top)
                return -ENOMEM;
        const char *text = json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN);
        if (!text)
                return -ENOMEM;
        if (nft_run_cmd_from_buffer(c->ctx, text) != 0) {
                _cleanup_free_ char *err = nft_error_text(c);
                return seat_error_set(ret_error, EIO, "nftables refused to %s: %s", what, err ? err : "(no memory)");
        }
        return 0;
}

static int add_cmd(json_object *cmds, const char *verb, const char *type, json_object *val) {
        return json_append(cmds, nft_j_obj1(verb, nft_j_obj1(type, val)));
}

static json_object *table_object(void) {
        json_object *t = json_object_new_object();
        if (!t)
                return NULL;
        json_object_object_add(t, "family", nft_j_str(NFT_TABLE_FAMILY));
        json_object_object_add(t, "name", nft_j_str(NFT_TABLE_NAME));
        return t;
}

/* Does table inet seatd exist? */
static int table_exists(NftContext *c, bool *ret, SeatError **ret_error) {
        _cleanup_json_ json_object *cmds = json_object_new_array();
        json_object *fam = json_object_new_object();
        if (!cmds || !fam) {
                json_object_put(fam);
                return -ENOMEM;
        }
        json_object_object_add(fam, "family", nft_j_str(NFT_TABLE_FAMILY));
        int r = add_cmd(cmds, "list", "tables", fam);
        if (r < 0)
                return r;
        r = run_json(c, cmds, "list its tables", ret_error);
        if (r < 0)
                return r;
        _cleanup_json_ json_object *out = NULL;
        const char *text = nft_ctx_get_output_buffer(c->ctx);
        r = json_frame_parse(text, strlen(text), 16, &out);
        if (r < 0)
                return seat_error_set(ret_error, EBADMSG, "nftables listed its tables in a form seatd cannot read");
        json_object *items;
        *ret = false;
        if (!json_object_object_get_ex(out, "nftables", &items) || !json_object_is_type(items, json_type_array))
                return seat_error_set(ret_error, EBADMSG, "nftables listed its tables in a form seatd cannot read");
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                json_object *t, *name;
                if (json_object_object_get_ex(json_object_array_get_idx(items, i), "table", &t) &&
                    json_object_object_get_ex(t, "name", &name) &&
                    strcmp(json_object_get_string(name), NFT_TABLE_NAME) == 0)
                        *ret = true;
        }
        return 0;
}

/* The listed table, as the array under "nftables"; *ret = NULL when there is no table. */
int nft_list_table(NftContext *c, json_object **ret, SeatError **ret_error) {
        bool exists;
        int r = table_exists(c, &exists, ret_error);
        if (r < 0)
                return r;
        if (!exists) {
                *ret = NULL;
                return 0;
        }
        _cleanup_json_ json_object *cmds = json_object_new_array();
        if (!cmds)
                return -ENOMEM;
        r = add_cmd(cmds, "list", "table", table_object());
        if (r < 0)
                return r;
        r = run_json(c, cmds, "list table inet seatd", ret_error);
        if (r < 0)
                return r;
        const char *text = nft_ctx_get_output_buffer(c->ctx);
        size_t n = strlen(text);
        if (n > NFT_LIST_MAX)
                return seat_error_set(ret_error, E2BIG, "table inet seatd lists as more than %u bytes", NFT_LIST_MAX);
        _cleanup_json_ json_object *out = NULL;
        json_object *items;
        if (json_frame_parse(text, n, 32, &out) < 0 || !json_object_object_get_ex(out, "nftables", &items) ||
            !json_object_is_type(items, json_type_array))
                return seat_error_set(ret_error, EBADMSG, "nftables listed table inet seatd in a form seatd cannot read");
        *ret = json_object_get(items);
        return 0;
}

/* Commands that delete whatever of the seat's chains exist in the listing. */
static int add_remove_cmds(json_object *cmds, json_object *items, const char *bridge) {
        bool present[_CHAIN_MAX] = {};
        size_t n = items ? json_object_array_length(items) : 0;
        int r = 0;

        for (size_t i = 0; i < n; i++) {
                json_object *ch, *name;
                if (json_object_object_get_ex(json_object_array_get_idx(items, i), "chain", &ch) &&
                    json_object_object_get_ex(ch, "name", &name)) {
                        int k = nft_chain_kind_of(json_object_get_string(name), bridge);
                        if (k >= 0)
                                present[k] = true;
                }
        }
        /* Flush all (drops the jumps), then delete base chains before regular ones. */
        for (int pass = 0; pass < 3 && r >= 0; pass++)
                for (int k = 0; k < _CHAIN_MAX && r >= 0; k++) {
                        if (!present[k] || (pass == 1 && !nft_chain_is_base(k)) || (pass == 2 && nft_chain_is_base(k)))
                                continue;
                        r = add_cmd(cmds, pass == 0 ? "flush" : "delete", "chain", nft_chain_ref((ChainKind) k, bridge));
                }
        /* Then the names' sets, which no rule uses any more. Deleting a set announces no
         * element deletions, so the watch does not take this for a flushed set. */
        for (size_t i = 0; i < n && r >= 0; i++) {
                json_object *st, *name;
                int index, fam;
                if (json_object_object_get_ex(json_object_array_get_idx(items, i), "set", &st) &&
                    json_object_object_get_ex(st, "name", &name) &&
                    (fam = nft_set_kind_of(json_object_get_string(name), bridge, &index)) > 0)
                        r = add_cmd(cmds, "delete", "set", nft_set_object(fam, index, bridge, 0));
        }
        return r;
}

static int add_install_cmds(json_object *cmds, json_object *expected) {
        int r = 0;
        size_t n = json_object_array_length(expected);
        for (size_t i = 0; i < n && r >= 0; i++) {
                json_object *e = json_object_array_get_idx(expected, i), *o;
                if (json_object_object_get_ex(e, "set", &o))
                        r = add_cmd(cmds, "add", "set", json_object_get(o));
                else
                        r = add_cmd(cmds, "add", "chain", json_object_get(json_object_object_get(e, "chain")));
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                json_object *e = json_object_array_get_idx(expected, i);
                json_object *chain = json_object_object_get(e, "chain");
                if (!chain)
                        continue;
                json_object *rules = json_object_object_get(e, "rules");
                for (size_t j = 0; j < json_object_array_length(rules) && r >= 0; j++) {
                        json_object *rule = json_object_new_object();
                        if (!rule)
                                return -ENOMEM;
                        json_object_object_add(rule, "family", nft_j_str(NFT_TABLE_FAMILY));
                        json_object_object_add(rule, "table", nft_j_str(NFT_TABLE_NAME));
                        json_object_object_add(rule, "chain", json_object_get(json_object_object_get(chain, "name")));
                        json_object_object_add(rule, "expr", json_object_get(json_object_array_get_idx(rules, j)));
                        r = add_cmd(cmds, "add", "rule", rule);
                }
        }
        return r;
}

int nft_seat_remove(NftContext *c, const char *bridge, SeatError **ret_error) {
        _cleanup_json_ json_object *items = NULL, *cmds = NULL;
        if (!nft_ifname_valid(bridge))
                return seat_error_set(ret_error, EINVAL, "invalid bridge name");
        int r = nft_list_table(c, &items, ret_error);
        if (r < 0 || !items)
                return r;
        cmds = json_object_new_array();
        if (!cmds)
                return -ENOMEM;
        r = add_remove_cmds(cmds, items, bridge);
        if (r < 0)
                return r;
        if (json_object_array_length(cmds) == 0)
                return 0;
        r = run_json(c, cmds, "remove the seat's chains", ret_error);
        return r < 0 ? seat_error_wrap(ret_error, "bridge '%s'", bridge) : 0;
}

/* ---- read-back -------------------------------------------------------------------- */

/* A listed rule's expr with counters' values blanked, so it compares with the meant one. */
static json_object *normalize_expr(json_object *expr) {
        json_object *copy = NULL;
        if (!json_object_is_type(expr, json_type_array) || json_object_deep_copy(expr, &copy, NULL) < 0)
                return NULL;
        for (size_t i = 0; i < json_object_array_length(copy); i++) {
                json_object *st = json_object_array_get_idx(copy, i);
                if (json_object_is_type(st, json_type_object) && json_object_object_get_ex(st, "counter", NULL))
                        json_object_object_add(st, "counter", NULL);
        }
        return copy;
}

static bool chain_attrs_equal(json_object *meant, json_object *listed) {
        static const char *const keys[] = { "type", "hook", "prio", "policy" };
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                json_object *a = NULL, *b = NULL;
                bool ha = json_object_object_get_ex(meant, keys[i], &a);
                bool hb = json_object_object_get_ex(listed, keys[i], &b);
                if (ha != hb || (ha && !json_object_equal(a, b)))
                        return false;
        }
        return true;
}

#define LISTED_SETS_MAX (2 * EGRESS_PROFILE_MAX_RULES + 1) /* one more than a profile makes */

typedef struct Listed {
        bool table_flags;
        json_object *set[LISTED_SETS_MAX]; /* borrowed from the listing */
        size_t n_sets;
        json_object *chain[_CHAIN_MAX];
        json_object *rules[_CHAIN_MAX]; /* arrays of normalized exprs */
} Listed;

static void listed_done(Listed *l) {
        for (int k = 0; k < _CHAIN_MAX; k++)
                json_object_put(l->rules[k]);
}

static int collect(json_object *items, const char *bridge, Listed *l) {
        for (int k = 0; k < _CHAIN_MAX; k++)
                if (!(l->rules[k] = json_object_new_array()))
                        return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                json_object *it = json_object_array_get_idx(items, i), *o, *name;
                int index;
                /* A table with flags (dormant: no rule applies) is not ours as meant. */
                if (json_object_object_get_ex(it, "table", &o) && json_object_object_get_ex(o, "flags", NULL))
                        l->table_flags = true;
                else if (json_object_object_get_ex(it, "set", &o) && json_object_object_get_ex(o, "name", &name)) {
                        /* More than a profile can make: the count then differs, "changed". */
                        if (nft_set_kind_of(json_object_get_string(name), bridge, &index) > 0 && l->n_sets < LISTED_SETS_MAX)
                                l->set[l->n_sets++] = o;
                } else if (json_object_object_get_ex(it, "chain", &o) && json_object_object_get_ex(o, "name", &name)) {
                        int k = nft_chain_kind_of(json_object_get_string(name), bridge);
                        if (k >= 0)
                                l->chain[k] = o;
                } else if (json_object_object_get_ex(it, "rule", &o) && json_object_object_get_ex(o, "chain", &name)) {
                        int k = nft_chain_kind_of(json_object_get_string(name), bridge);
                        if (k < 0)
                                continue;
                        json_object *e = normalize_expr(json_object_object_get(o, "expr"));
                        if (json_append(l->rules[k], e) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

static bool set_listed(const Listed *l, json_object *meant) {
        static const char *const keys[] = { "type", "flags", "timeout" };
        const char *name = json_object_get_string(json_object_object_get(meant, "name"));
        for (size_t i = 0; i < l->n_sets; i++) {
                if (strcmp(json_object_get_string(json_object_object_get(l->set[i], "name")), name) != 0)
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                        json_object *a = NULL, *b = NULL;
                        if (!json_object_object_get_ex(meant, keys[k], &a) || !json_object_object_get_ex(l->set[i], keys[k], &b) ||
                            !json_object_equal(a, b))
                                return false;
                }
                return true;
        }
        return false;
}

static int compare(json_object *expected, json_object *items, const char *bridge, NftSeatState *ret) {
        _cleanup_(listed_done) Listed l = {};
        bool any = false, differs = false;
        bool meant[_CHAIN_MAX] = {};

        int r = collect(items, bridge, &l);
        if (r < 0)
                return r;
        size_t sets_meant = 0;
        for (size_t i = 0; i < json_object_array_length(expected); i++) {
                json_object *e = json_object_array_get_idx(expected, i);
                json_object *chain = json_object_object_get(e, "chain"), *set;
                if (json_object_object_get_ex(e, "set", &set)) {
                        /* A name's set: there, with its type, flags and timeout (its
                         * elements are the resolver's; a flush is seen by the watch). */
                        sets_meant++;
                        if (!set_listed(&l, set))
                                differs = true;
                        continue;
                }
                int k = nft_chain_kind_of(json_object_get_string(json_object_object_get(chain, "name")), bridge);
                if (k < 0)
                        return -EINVAL;
                meant[k] = true;
                if (!l.chain[k]) {
                        differs = true;
                        continue;
                }
                any = true;
                if (!chain_attrs_equal(chain, l.chain[k]) ||
                    !json_object_equal(json_object_object_get(e, "rules"), l.rules[k]))
                        differs = true;
        }
        for (int k = 0; k < _CHAIN_MAX; k++)
                if (l.chain[k] && !meant[k])
                        any = differs = true;
        if (l.table_flags || l.n_sets != sets_meant)
                differs = true;
        *ret = !any ? NFT_SEAT_MISSING : differs ? NFT_SEAT_CHANGED : NFT_SEAT_OK;
        return 0;
}

int nft_seat_verify(NftContext *c, const NftSeatSpec *spec, NftSeatState *ret_state, SeatError **ret_error) {
        _cleanup_json_ json_object *expected = NULL, *items = NULL;
        int r = nft_seat_expected(spec, &expected, ret_error);
        if (r < 0)
                return r;
        r = nft_list_table(c, &items, ret_error);
        if (r < 0)
                return r;
        if (!items) {
                *ret_state = NFT_SEAT_MISSING;
                return 0;
        }
        r = compare(expected, items, spec->bridge, ret_state);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s': cannot compare the egress rules", spec->seat);
        return 0;
}

int nft_seat_install(NftContext *c, const NftSeatSpec *spec, SeatError **ret_error) {
        _cleanup_json_ json_object *expected = NULL, *items = NULL, *cmds = NULL;
        NftSeatState state;

        int r = nft_seat_expected(spec, &expected, ret_error);
        if (r < 0)
                return r;
        r = nft_list_table(c, &items, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "seat '%s'", spec->seat);
        cmds = json_object_new_array();
        if (!cmds)
                return -ENOMEM;
        r = add_cmd(cmds, "add", "table", table_object());
        if (r >= 0)
                r = add_remove_cmds(cmds, items, spec->bridge);
        if (r >= 0)
                r = add_install_cmds(cmds, expected);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s': cannot build the nftables transaction", spec->seat);
        r = run_json(c, cmds, "install the egress filter", ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "seat '%s'", spec->seat);

        r = nft_seat_verify(c, spec, &state, ret_error);
        if (r >= 0 && state != NFT_SEAT_OK)
                r = seat_error_set(ret_error, EPROTO,
                                   "seat '%s': the egress filter read back from nftables is not what was installed (%s)",
                                   spec->seat, nft_seat_state_to_string(state));
        if (r < 0)
                (void) nft_seat_remove(c, spec->bridge, NULL);
        return r;
}
