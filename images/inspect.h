/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Import-time inspection of a verified disk blob (docs/image-format.md, "Inspection"):
 * libguestfs opens the blob read-only, with the manifest's format pinned, in its own
 * appliance (never mounted on the host), and checks that the filesystem the manifest's
 * guest_init names is there and mounts read-only, and that guest-init is a regular ELF
 * executable there carrying the agent protocol marker of the manifest's agent_protocol.
 */

#include <stdbool.h>

#include "common/error.h"
#include "manifest.h"

/* What guest-init carries (guest-init/main.c), followed by the decimal protocol version. */
#define IMAGE_AGENT_PROTOCOL_MARKER "SEATD_AGENT_PROTOCOL="
/* The largest guest-init read into memory to look for the marker. */
#define IMAGE_INSPECT_GUEST_INIT_MAX (16u * 1024u * 1024u)

typedef struct ImageInspectOptions {
        const char *cache_dir; /* libguestfs appliance cache (built once); NULL: libguestfs' default */
        bool force_tcg;        /* software emulation: /dev/kvm absent or unusable */
        bool qemu_sandbox;     /* the appliance's QEMU with its seccomp sandbox, as libvirt starts seat QEMUs */
} ImageInspectOptions;

/* blob_path: the store's verified copy (never the caller's file); the disk that the
 * appliance sees as /dev/sda. A manifest without guest_init needs no inspection (its
 * guest-init lives in the initramfs, covered by the initramfs digest): returns 0.
 * Refusals: ENODEV (filesystem missing or unmountable), ENOENT (guest-init missing),
 * ENOEXEC (not a regular ELF executable), EPROTO (protocol marker missing or different),
 * EFBIG (guest-init too large to read); libguestfs failures with its own message. */
int image_inspect(const char *blob_path, ImageFormat format, const ImageManifest *m, const ImageInspectOptions *opts,
                  SeatError **ret_error);

/* Pure: the protocol version after the marker in buf. All occurrences must agree.
 * 0 and *ret set; -ENOENT when there is no marker; -EPROTO when occurrences disagree or
 * no digits follow. */
int image_inspect_find_protocol(const void *buf, size_t len, int64_t *ret);
