/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* glibc's <netinet/in.h> (through nftwatch.h) before the kernel headers that include
 * <linux/in.h>. */
#include "nftwatch.h"
#include "nft-internal.h"
#include "nlattr.h"

#include <string.h>
#include <sys/socket.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#define RCVBUF_SIZE (4 * 1024 * 1024)
/* Upper bound on reads per process() call: a flood cannot pin the caller; what is left is
 * read next time (the fd stays readable). */
#define MAX_READS 256

struct NftMonitor {
        int fd;
        NftContext *nft;
        NftMonitorCallback cb;
        void *userdata;
        NftSeatSpec seats[NFT_MONITOR_MAX_SEATS];
        size_t n_seats;
};

int nft_monitor_new(NftMonitorCallback cb, void *userdata, NftMonitor **ret, SeatError **ret_error) {
        _cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_NETFILTER);
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
        int group = NFNLGRP_NFTABLES, size = RCVBUF_SIZE;

        if (fd < 0)
                return seat_error_set(ret_error, errno, "cannot open a netfilter netlink socket: %m");
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return seat_error_set(ret_error, errno, "cannot bind the netfilter netlink socket: %m");
        if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0)
                return seat_error_set(ret_error, errno, "cannot listen to nftables changes: %m");
        /* Best effort: a larger buffer makes overflow (handled anyway) rarer. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));

        _cleanup_(nft_monitor_freep) NftMonitor *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->fd = TAKE_FD(fd);
        m->cb = cb;
        m->userdata = userdata;
        int r = nft_context_new(&m->nft, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

NftMonitor *nft_monitor_free(NftMonitor *m) {
        if (!m)
                return NULL;
        safe_close(m->fd);
        nft_context_free(m->nft);
        return mfree(m);
}

static ssize_t find_seat(const NftMonitor *m, const char *bridge) {
        for (size_t i = 0; i < m->n_seats; i++)
                if (strcmp(m->seats[i].bridge, bridge) == 0)
                        return (ssize_t) i;
        return -1;
}

int nft_monitor_add(NftMonitor *m, const NftSeatSpec *spec) {
        int r = nft_seat_spec_validate(spec, NULL);
        if (r < 0)
                return r;
        ssize_t i = find_seat(m, spec->bridge);
        if (i >= 0) {
                m->seats[i] = *spec;
                return 0;
        }
        if (m->n_seats >= NFT_MONITOR_MAX_SEATS)
                return -E2BIG;
        m->seats[m->n_seats++] = *spec;
        return 0;
}

int nft_monitor_remove(NftMonitor *m, const char *bridge) {
        ssize_t i = find_seat(m, bridge);
        if (i < 0)
                return -ENOENT;
        m->seats[i] = m->seats[--m->n_seats];
        return 0;
}

int nft_monitor_fd(const NftMonitor *m) {
        return m->fd;
}

/* flushed: seats whose name sets lost elements (NULL: none). The resolver only adds and
 * the kernel lets elements expire without a word, so a deletion is someone else's. */
static int check_seats(NftMonitor *m, const bool *flushed) {
        int reported = 0;
        for (size_t i = 0; i < m->n_seats; i++) {
                NftSeatState state;
                _cleanup_error_ SeatError *err = NULL;
                /* Fail closed: rules that cannot be read back are not known to be intact
                 * (nft 1.0.6 cannot even list a table someone made dormant). */
                if (nft_seat_verify(m->nft, &m->seats[i], &state, &err) < 0)
                        state = NFT_SEAT_CHANGED;
                if (state == NFT_SEAT_OK && flushed && flushed[i])
                        state = NFT_SEAT_CHANGED;
                if (state == NFT_SEAT_OK)
                        continue;
                reported++;
                if (m->cb)
                        m->cb(&m->seats[i], state, m->userdata);
        }
        return reported;
}

/* The table an nf_tables event is about: attribute 1 is the table name in every message
 * type that has one (NFTA_TABLE_NAME, NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE, …). */
int nft_monitor_check(NftMonitor *m, SeatError **ret_error) {
        return check_seats(m, NULL);
}

/* The first attribute of type in an event whose attributes start hdr bytes in (the caller
 * checked that many are there): 1 with *ret, 0 when there is none, -EBADMSG when an
 * attribute's length does not fit. Both event readers below walk them this way. */
static int event_find_attr(const struct nlmsghdr *h, size_t hdr, unsigned type, const struct nlattr **ret) {
        const uint8_t *buf = (const uint8_t *) h + hdr;
        size_t len = h->nlmsg_len - hdr, off = 0;
        const struct nlattr *a;
        int r;
        while ((r = nlattr_next(buf, len, &off, &a)) > 0)
                if (nlattr_type(a) == type) {
                        *ret = a;
                        return 1;
                }
        return r;
}

/* The string attribute of that type in an nftables event, or NULL. */
static const char *event_attr(const struct nlmsghdr *h, unsigned type, char buf[static 257]) {
        size_t hdr = NLMSG_ALIGN(NLMSG_LENGTH(sizeof(struct nfgenmsg)));
        const struct nlattr *a;
        if (h->nlmsg_len < hdr || event_find_attr(h, hdr, type, &a) <= 0)
                return NULL;
        size_t n = strnlen((const char *) nlattr_data(a), nlattr_len(a));
        if (n > 256)
                return NULL;
        memcpy(buf, nlattr_data(a), n);
        buf[n] = 0;
        return buf;
}

/* Element deletions in one of a watched seat's name sets mark that seat. */
static void note_flush(const NftMonitor *m, const struct nlmsghdr *h, bool *flushed) {
        char set[257];
        int index;
        if (NFNL_MSG_TYPE(h->nlmsg_type) != NFT_MSG_DELSETELEM || !event_attr(h, NFTA_SET_ELEM_LIST_SET, set))
                return;
        for (size_t i = 0; i < m->n_seats; i++)
                if (nft_set_kind_of(set, m->seats[i].bridge, &index) > 0)
                        flushed[i] = true;
}

static bool event_touches_seatd(const struct nlmsghdr *h) {
        if (NFNL_SUBSYS_ID(h->nlmsg_type) != NFNL_SUBSYS_NFTABLES)
                return false;
        if (NFNL_MSG_TYPE(h->nlmsg_type) == NFT_MSG_NEWGEN)
                return false;
        size_t hdr = NLMSG_LENGTH(sizeof(struct nfgenmsg));
        if (h->nlmsg_len < hdr)
                return true; /* cannot tell: verify */
        const struct nfgenmsg *g = NLMSG_DATA(h);
        if (g->nfgen_family != NFPROTO_INET)
                return false;
        const struct nlattr *a;
        if (h->nlmsg_len < NLMSG_ALIGN(hdr) || event_find_attr(h, NLMSG_ALIGN(hdr), 1, &a) <= 0)
                return true; /* no table name, or a malformed one: verify */
        const char *name = (const char *) nlattr_data(a);
        return strnlen(name, nlattr_len(a)) == strlen(NFT_TABLE_NAME) &&
               memcmp(name, NFT_TABLE_NAME, strlen(NFT_TABLE_NAME)) == 0;
}

int nft_monitor_process(NftMonitor *m, SeatError **ret_error) {
        _Alignas(struct nlmsghdr) uint8_t buf[65536];
        bool dirty = false, flushed[NFT_MONITOR_MAX_SEATS] = {};

        for (int reads = 0; reads < MAX_READS; reads++) {
                ssize_t n = recv(m->fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        if (errno == ENOBUFS) { /* events lost: assume the worst */
                                dirty = true;
                                continue;
                        }
                        return seat_error_set(ret_error, errno, "cannot read nftables events: %m");
                }
                if (n == 0)
                        break;
                for (size_t off = 0, len = (size_t) n; len - off >= sizeof(struct nlmsghdr);) {
                        const struct nlmsghdr *h = (const struct nlmsghdr *) (buf + off);
                        if (h->nlmsg_len < sizeof(*h) || h->nlmsg_len > len - off) {
                                dirty = true; /* truncated or malformed: cannot tell, verify */
                                break;
                        }
                        /* The resolver adding a name's address changes no rule: no
                         * read-back for each answer. */
                        if (h->nlmsg_type >= NLMSG_MIN_TYPE && event_touches_seatd(h) &&
                            NFNL_MSG_TYPE(h->nlmsg_type) != NFT_MSG_NEWSETELEM) {
                                dirty = true;
                                note_flush(m, h, flushed);
                        }
                        off += NLMSG_ALIGN(h->nlmsg_len);
                        if (off >= len)
                                break;
                }
        }
        return dirty ? check_seats(m, flushed) : 0;
}
