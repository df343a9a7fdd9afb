/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What every libguestfs user in images/ shares (inspect.c, guest-files.c): a handle set up
 * the one way seatd opens guest disks (direct backend, force_tcg where KVM is unusable,
 * no network, no environment, no printing), read-only drives with the format pinned, and
 * libguestfs errors as escaped one-line SeatErrors. Only built with libguestfs.
 */

#include <guestfs.h>

#include "common/error.h"
#include "inspect.h"
#include "common/macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(guestfs_h *, guestfs_close)

/* QEMU's seccomp sandbox as libvirt turns it on for seat QEMUs (qemu.conf seccomp_sandbox). */
#define IMAGE_GUESTFS_QEMU_SANDBOX "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"

/* The appliance's CPU under TCG. libguestfs asks for "-cpu max", which TCG emulates
 * feature by feature (AVX-512 and the rest) and which boots the appliance about 5 s slower
 * than qemu64 on the 2-core test machines (19 s against 14 s, guestfish run on an empty
 * disk); the appliance's kernel and tools need nothing beyond x86-64. Seat domains use
 * qemu64 under TCG for the same reason (images/recipes/README.md). Under KVM libguestfs'
 * own choice stands. */
#define IMAGE_GUESTFS_TCG_CPU "qemu64"

/* context names the work in messages ("inspect image 'x'", "collect evidence of seat 's1'"). */
int image_guestfs_error(guestfs_h *g, const char *context, int fallback_errno, const char *what, SeatError **ret_error);
int image_guestfs_new(const char *context, const ImageInspectOptions *opts, guestfs_h **ret, SeatError **ret_error);
/* Add disk read-only (libguestfs writes to an overlay of its own) as format (never
 * probed), then launch the appliance. */
int image_guestfs_add_and_launch(guestfs_h *g, const char *context, const char *disk, const char *format,
                                 const ImageInspectOptions *opts, SeatError **ret_error);
