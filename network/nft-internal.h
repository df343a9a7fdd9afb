/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the parts of the nftables module share (nft.h is the public side):
 *   nft-rules.c   names, validation, and the seat's chains as meant (pure JSON building)
 *   nft.c         the libnftables context, running commands, install, read-back, compare
 *   nft-status.c  what status shows: denied packets, per-rule counters, bridges, uplinks */

#include <nftables/libnftables.h>

#include "nft.h"

/* Read-back of the whole table is capped: far beyond what 64 seats produce. */
#define NFT_LIST_MAX (16u * 1024u * 1024u)
#define CHAIN_NAME_MAX (NFT_IFNAME_MAX + 8)

struct NftContext {
        struct nft_ctx *ctx;
};

typedef enum ChainKind {
        CHAIN_FWD,
        CHAIN_IN,
        CHAIN_NAT,
        CHAIN_OUT,
        CHAIN_TO,
        CHAIN_HOST,
        CHAIN_ING,
        _CHAIN_MAX,
} ChainKind;

extern const char *const nft_chain_prefix[_CHAIN_MAX];

bool nft_ifname_valid(const char *s);
bool nft_chain_is_base(ChainKind k);
void nft_chain_name(ChainKind k, const char *bridge, char buf[static CHAIN_NAME_MAX + 1]);
/* Which of the seat's chains a listed chain name is, or -1. */
int nft_chain_kind_of(const char *name, const char *bridge);
/* Names a chain for flush/delete: no hook data. */
json_object *nft_chain_ref(ChainKind k, const char *bridge);

/* A name's set: family AF_INET or AF_INET6; timeout_s > 0 adds type, flags and that
 * timeout (to create and compare), 0 only names it (to delete). */
json_object *nft_set_object(int family, int index, const char *bridge, unsigned timeout_s);
/* Which seat's name set a listed set name is: its family (AF_INET/AF_INET6) and index, for
 * this bridge; -1 when it is not one. */
int nft_set_kind_of(const char *name, const char *bridge, int *ret_index);

/* JSON building blocks: {key: val} (takes val), a string. NULL on no memory. */
json_object *nft_j_obj1(const char *key, json_object *val);
json_object *nft_j_str(const char *s);

/* The listed table, as the array under "nftables"; *ret = NULL when there is no table. */
int nft_list_table(NftContext *c, json_object **ret, SeatError **ret_error);
