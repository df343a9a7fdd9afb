/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The libvirt side of a seat: its domain XML (built from the verified manifest, every
 * value escaped), the seat record kept in the domain's <metadata>, and the calls seatd
 * makes. libvirt is the source of truth for what runs: seats are transient domains
 * named "seatd-<seat id>".
 */

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "images/manifest.h"

#define SEAT_DOMAIN_PREFIX "seatd-"
#define SEAT_METADATA_URI "urn:seatd:seat:1"
#define SEAT_ID_MAX 32

DEFINE_TRIVIAL_CLEANUP_FUNC(virDomainPtr, virDomainFree)
DEFINE_TRIVIAL_CLEANUP_FUNC(virConnectPtr, virConnectClose)

/* What seatd writes into <metadata> and reads back after a restart. */
typedef struct SeatRecord {
        char id[SEAT_ID_MAX];
        char image[IMAGE_NAME_MAX + 1];
        int64_t image_version;
        char image_digest[SEAT_HASH_HEX_LEN + 1];
        char participant[65];
        char token_hash[65]; /* hex BLAKE2b-256 of the participant token */
        char state[16];
        int64_t generation;
        int64_t created;     /* seconds since the epoch */
        int64_t net_index;   /* the seat's subnet in the pool; -1: no network */
        char egress[33];     /* its egress profile's name ("" without a network) */
        bool pooled;         /* kept ready in a pool, not handed out yet (docs/pools.md) */
        int64_t qemu_uid;    /* the slot's first QEMU uid (its identity g1; g2 runs as the next); 0: none yet */
} SeatRecord;

typedef struct DomainSpec {
        const char *name;
        bool kvm;            /* type='kvm', else 'qemu' (TCG) */
        const ImageManifest *manifest;
        const char *kernel, *initrd; /* verified blob paths (direct boot) */
        const char *base;            /* verified blob path of the disk */
        const char *overlay;         /* the seat's qcow2 overlay */
        const char *console_log;
        const SeatRecord *record;
        const char *interface_xml;   /* the seat network's <interface>, or NULL: no NIC */
        const char *uuid;            /* NULL: libvirt picks one; a restore names the saved one */
        /* The uid (and gid of the same number) QEMU runs as, through a static DAC label
         * (docs/security.md). Never 0. libvirt chowns the overlay, the kernel and the initrd
         * to it: kernel and initrd must be the machine's own copies (domain_boot_copies()),
         * never the shared blobs; the base is never relabelled. */
        uid_t qemu_uid;
} DomainSpec;

int domain_open(const char *uri, virConnectPtr *ret, SeatError **ret_error);
char *domain_xml(const DomainSpec *spec);
int domain_create(virConnectPtr conn, const DomainSpec *spec, virDomainPtr *ret, SeatError **ret_error);
/* Save a running domain's memory state to path (the domain stops), and restore one under
 * spec's XML: libvirt allows only source paths to differ from the saved definition.
 * paused: the restored domain is left paused (virDomainResume() starts it). */
int domain_save(virDomainPtr dom, const char *path, SeatError **ret_error);
int domain_restore(virConnectPtr conn, const char *path, const DomainSpec *spec, bool paused, virDomainPtr *ret,
                   SeatError **ret_error);
/* The unix socket libvirt made for the agent channel. */
int domain_agent_socket(virDomainPtr dom, char **ret);
int domain_set_record(virDomainPtr dom, const SeatRecord *rec, SeatError **ret_error);
int domain_get_record(virDomainPtr dom, SeatRecord *ret);
/* Stops QEMU (destroy). Gone already is fine. */
int domain_stop(virDomainPtr dom);
/* Gives the domain grace_ms to power off by itself, then stops it. */
int domain_stop_after(virDomainPtr dom, int grace_ms);
/* Every running domain named seatd-*: NULL-terminated array (free each, then the array). */
int domain_list_seats(virConnectPtr conn, virDomainPtr **ret, size_t *ret_n);
/* libvirt's last error text, escaped, for messages. */
const char *domain_last_error(void);
/* qemu-img create -f qcow2 -F <format> -b <base> <overlay> (backing format pinned). */
int overlay_create(const char *base, const char *base_format, const char *overlay, SeatError **ret_error);
/* A machine's own copies of the verified kernel and initrd, "<prefix>.kernel" and
 * "<prefix>.initrd" (0400): libvirt's DAC driver chowns <kernel> and <initrd> to the
 * machine's uid while it runs, with no per-file exception, and turning relabelling off
 * for the domain leaves QEMU without libvirt's own per-domain files (its master key).
 * QEMU reads them once, as it starts: domain_boot_copies_done() removes them as soon as
 * the domain runs (or failed to). */
typedef struct DomainBootCopies {
        char *kernel, *initrd; /* NULL: none */
} DomainBootCopies;
int domain_boot_copies(const char *kernel, const char *initrd, const char *prefix, DomainBootCopies *ret,
                       SeatError **ret_error);
void domain_boot_copies_done(DomainBootCopies *b);

/* The overlay belongs to the QEMU that runs on it and nobody else: uid:uid, 0600. */
int overlay_give(const char *overlay, uid_t uid, SeatError **ret_error);

/* How a running seat's QEMU is confined (docs/security.md): the user it runs as, whether
 * QEMU's seccomp sandbox is on, and the MAC model of its label (apparmor, selinux; ""
 * when none). Read from libvirt's pid file and /proc, and the domain's security label. */
typedef struct DomainConfinement {
        bool known;          /* the process was found */
        uid_t uid;
        bool seccomp;        /* -sandbox on */
        char mac[16];
} DomainConfinement;
int domain_confinement(virDomainPtr dom, const char *run_dir, DomainConfinement *ret);
